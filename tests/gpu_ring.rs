//! GPU tests of ring attention on virtual ranks (issue 35; runtime/src/ring.rs): #[ignore]d here, run on the
//! device machine with --ignored. P = 1-4 virtual ranks, causal (zig-zag) or not, MHA and GQA, both dtypes:
//! the ring's O, LSE and gradients against the f64 reference and against the one-GPU kernels on the same
//! inputs, and its backward bit for bit the same from run to run.

use flashgen::numeric::SplitMix;
use flashgen::reference::{backward, forward, relative_error, relative_error_lse, Qkv, RefProblem};
use flashgen::DType;
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen_runtime::{BackwardCall, BufferView, BufferViewMut, Flash, ForwardCall, Gpu, KernelCache, Layout, RingShape, StatsIn, StatsOut, TensorView, TensorViewMut, VirtualRing};

const O_TOL: f64 = 1e-2;
const LSE_TOL: f64 = 1e-3;
const GRAD_TOL: f64 = 2e-2;
const POISON: u16 = 0x7FC0;

fn flash() -> Flash {
    Flash::new(Gpu::open(0).expect("a CUDA GPU is required for this test"), KernelCache::new(None, flashgen_runtime::KernelSource::default_source()))
}

struct Outputs {
    o: CudaSlice<u16>,
    dq: CudaSlice<u16>,
    dk: CudaSlice<u16>,
    dv: CudaSlice<u16>,
}

impl Outputs {
    fn poisoned(f: &Flash, q_len: usize, kv_len: usize) -> Outputs {
        let st = &f.gpu.stream;
        let p = |n: usize| st.clone_htod(&vec![POISON; n]).unwrap();
        Outputs { o: p(q_len), dq: p(q_len), dk: p(kv_len), dv: p(kv_len) }
    }
    fn host(&self, f: &Flash, dt: DType) -> [Vec<f32>; 4] {
        let st = &f.gpu.stream;
        st.synchronize().unwrap();
        [&self.o, &self.dq, &self.dk, &self.dv].map(|x| st.clone_dtoh(x).unwrap().iter().map(|&b| from_bits(dt, b)).collect())
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn the_virtual_ring_matches_the_f64_reference_and_the_one_gpu_kernels() {
    let f = flash();
    let stream = f.own_stream();
    let mut rng = SplitMix(3535);
    let (batch, heads, tokens) = (2, 4, 768);
    let mut cases = 0;
    for (dt, d, kv_heads) in [(DType::Bf16, 64, 4), (DType::F16, 128, 2), (DType::Bf16, 128, 1)] {
        let (q_len, kv_len) = (batch * heads * tokens * d, batch * kv_heads * tokens * d);
        let mut gen = |n: usize| -> Vec<f32> { (0..n).map(|_| from_bits(dt, to_bits(dt, rng.normal()))).collect() };
        let (q, k, v, d_o) = (gen(q_len), gen(kv_len), gen(kv_len), gen(q_len));
        let st = &f.gpu.stream;
        let up = |x: &[f32]| st.clone_htod(&x.iter().map(|&y| to_bits(dt, y)).collect::<Vec<u16>>()).unwrap();
        let (dq_in, dk_in, dv_in, ddo) = (up(&q), up(&k), up(&v), up(&d_o));
        let (ql, kvl) = (Layout::contiguous(batch, heads, tokens, d), Layout::contiguous(batch, kv_heads, tokens, d));
        fn view<'a>(s: &'a CudaSlice<u16>, l: Layout, name: &'static str, dt: DType) -> TensorView<'a> {
            TensorView::of_slice(name, s, 0, dt, l).unwrap()
        }
        let view = |s, l, name| view(s, l, name, dt);
        for causal in [false, true] {
            let p = RefProblem::new(batch, heads, tokens, d).kv_heads(kv_heads).causal(causal);
            let x = Qkv { q: &q, k: &k, v: &v };
            let want = forward(&p, &x);
            let grads = backward(&p, &x, &d_o);
            // the one-GPU kernels on the same inputs
            let mut one = Outputs::poisoned(&f, q_len, kv_len);
            let mut lse = st.alloc_zeros::<f32>(batch * heads * tokens).unwrap();
            let call = ForwardCall {
                causal,
                ..ForwardCall::new(view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), TensorViewMut::of_slice("O", &mut one.o, 0, dt, ql).unwrap(), StatsOut::Lse(BufferViewMut::of(&mut lse)))
            };
            f.forward(call, stream).unwrap();
            let o_view = TensorView::of_slice("O", &one.o, 0, dt, ql).unwrap();
            let g = (TensorViewMut::of_slice("dQ", &mut one.dq, 0, dt, ql).unwrap(), TensorViewMut::of_slice("dK", &mut one.dk, 0, dt, kvl).unwrap(), TensorViewMut::of_slice("dV", &mut one.dv, 0, dt, kvl).unwrap());
            let call = BackwardCall { causal, ..BackwardCall::new(view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), o_view, view(&ddo, ql, "dO"), StatsIn::Lse(BufferView::of(&lse)), g) };
            f.backward(call, stream).unwrap();
            let one_host = one.host(&f, dt);
            let one_lse = st.clone_dtoh(&lse).unwrap();
            for ranks in 1..=4 {
                let shape = RingShape { batch, heads, kv_heads, tokens, head_dim: d, head_dim_v: d };
                let mut ring = VirtualRing::new(&f, ranks, causal, shape, dt).unwrap();
                let mut ours = Outputs::poisoned(&f, q_len, kv_len);
                ring.forward(&f, view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), TensorViewMut::of_slice("O", &mut ours.o, 0, dt, ql).unwrap(), None, stream).unwrap();
                let backward_into = |ring: &mut VirtualRing, out: &mut Outputs| {
                    let o_view = TensorView::of_slice("O", &out.o, 0, dt, ql).unwrap();
                    let inputs = [view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), o_view, view(&ddo, ql, "dO")];
                    let grads = [TensorViewMut::of_slice("dQ", &mut out.dq, 0, dt, ql).unwrap(), TensorViewMut::of_slice("dK", &mut out.dk, 0, dt, kvl).unwrap(), TensorViewMut::of_slice("dV", &mut out.dv, 0, dt, kvl).unwrap()];
                    ring.backward(&f, inputs, grads, None, stream).unwrap();
                };
                backward_into(&mut ring, &mut ours);
                let host = ours.host(&f, dt);
                let ring_lse = ring.lse(&f).unwrap();
                let label = format!("{dt:?} D{d} H{heads}/{kv_heads} causal={causal} P={ranks}");
                let errs = [
                    ("O", relative_error(&host[0], &want.o), relative_error(&host[0], &one_host[0]), O_TOL),
                    ("LSE", relative_error_lse(&ring_lse, &want.lse), relative_error_lse(&ring_lse, &one_lse), LSE_TOL),
                    ("dQ", relative_error(&host[1], &grads.dq), relative_error(&host[1], &one_host[1]), GRAD_TOL),
                    ("dK", relative_error(&host[2], &grads.dk), relative_error(&host[2], &one_host[2]), GRAD_TOL),
                    ("dV", relative_error(&host[3], &grads.dv), relative_error(&host[3], &one_host[3]), GRAD_TOL),
                ];
                for (name, to_ref, to_one, tol) in errs {
                    eprintln!("{label} {name}: {to_ref:.2e} against f64, {to_one:.2e} against one GPU");
                    assert!(to_ref <= tol && to_one <= tol, "{label} {name}: {to_ref:.2e} against f64, {to_one:.2e} against the one-GPU kernels (tolerance {tol:.0e})");
                }
                // the ring adds in one order: the same gradients, bit for bit, on a second run
                let mut again = Outputs::poisoned(&f, q_len, kv_len);
                st.memcpy_dtod(&ours.o, &mut again.o).unwrap();
                backward_into(&mut ring, &mut again);
                st.synchronize().unwrap();
                for (name, a, b) in [("dQ", &ours.dq, &again.dq), ("dK", &ours.dk, &again.dk), ("dV", &ours.dv, &again.dv)] {
                    assert_eq!(st.clone_dtoh(a).unwrap(), st.clone_dtoh(b).unwrap(), "{label} {name}: not bit-identical run to run");
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 24);
}

/// What the ring refuses before it launches anything: tokens that do not split into its chunks, heads that
/// do not share K/V heads evenly, tensors of another shape than the ring's, a backward before a forward.
#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn the_ring_refuses_what_it_cannot_run() {
    let f = flash();
    let shape = RingShape { batch: 1, heads: 4, kv_heads: 2, tokens: 1004, head_dim: 64, head_dim_v: 64 };
    let e = VirtualRing::new(&f, 4, true, shape, DType::Bf16).err().unwrap().to_string();
    assert!(e.contains("1004 tokens do not split into 8 equal chunks"), "{e}");
    let e = VirtualRing::new(&f, 2, false, RingShape { kv_heads: 3, tokens: 1024, ..shape }, DType::Bf16).err().unwrap().to_string();
    assert!(e.contains("H must be a multiple of H_kv"), "{e}");
    let shape = RingShape { tokens: 1024, ..shape };
    let mut ring = VirtualRing::new(&f, 2, true, shape, DType::Bf16).unwrap();
    let st = &f.gpu.stream;
    let buf = st.alloc_zeros::<u16>(4 * 2048 * 64).unwrap();
    let mut out = st.alloc_zeros::<u16>(4 * 2048 * 64).unwrap();
    let wrong = Layout::contiguous(1, 4, 2048, 64);
    let v = |l| TensorView::of_slice("Q", &buf, 0, DType::Bf16, l).unwrap();
    let e = ring.forward(&f, v(wrong), v(wrong), v(wrong), TensorViewMut::of_slice("O", &mut out, 0, DType::Bf16, wrong).unwrap(), None, f.own_stream()).unwrap_err().to_string();
    assert!(e.contains("tensor Q is bf16 [1, 4, 2048, 64] but this ring was made for bf16 [1, 4, 1024, 64]"), "{e}");
    let (ql, kvl) = (Layout::contiguous(1, 4, 1024, 64), Layout::contiguous(1, 2, 1024, 64));
    let mut g = [st.alloc_zeros::<u16>(4 * 1024 * 64).unwrap(), st.alloc_zeros::<u16>(2 * 1024 * 64).unwrap(), st.alloc_zeros::<u16>(2 * 1024 * 64).unwrap()];
    let [a, b, c] = &mut g;
    let grads = [TensorViewMut::of_slice("dQ", a, 0, DType::Bf16, ql).unwrap(), TensorViewMut::of_slice("dK", b, 0, DType::Bf16, kvl).unwrap(), TensorViewMut::of_slice("dV", c, 0, DType::Bf16, kvl).unwrap()];
    let e = ring.backward(&f, [v(ql), v(kvl), v(kvl), v(ql), v(ql)], grads, None, f.own_stream()).unwrap_err().to_string();
    assert!(e.contains("run VirtualRing::forward on these inputs first"), "{e}");
}
