//! GPU tests: they need an NVIDIA GPU and its driver, so they are #[ignore]d here and run on the device
//! machine (`cargo test --release -p flashgen-tests --test gpu -- --ignored`, or `flashgen check`, whose
//! results are committed under bench/results/). Run without a GPU, they fail: they never pass silently.

use flashgen::{compile, CompileOptions, DType, KernelSpec};
use flashgen_runtime::{ForwardArgs, ForwardKernel, Gpu, Layout};

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn default_forward_kernels_write_every_output() {
    let gpu = Gpu::open(0).expect("a CUDA GPU is required for this test");
    for causal in [false, true] {
        let spec = KernelSpec::default_for(gpu.arch, DType::Bf16, 64, causal).unwrap();
        let kernel = ForwardKernel::load(&gpu, &compile(&spec, CompileOptions::default()).unwrap()).unwrap();
        let l = Layout::contiguous(1, 2, 300, 64);
        let x: Vec<u16> = (0..l.extent()).map(|i| half::bf16::from_f32(((i * 7919) % 1000) as f32 / 1000.0 - 0.5).to_bits()).collect();
        let q = gpu.stream.clone_htod(&x).unwrap();
        let mut o = gpu.stream.clone_htod(&vec![0x7FC0u16; l.extent()]).unwrap();
        let mut m = gpu.stream.clone_htod(&vec![f32::NAN; 600]).unwrap();
        kernel.launch(&gpu, ForwardArgs { q: (&q, l), k: (&q, l), v: (&q, l), o: (&mut o, l), m: &mut m, sm_scale: 0.125 }).unwrap();
        let o: Vec<u16> = gpu.stream.clone_dtoh(&o).unwrap();
        let m: Vec<f32> = gpu.stream.clone_dtoh(&m).unwrap();
        assert!(o.iter().all(|&b| half::bf16::from_bits(b).to_f32().is_finite()));
        assert!(m.iter().all(|x| x.is_finite()));
    }
}
