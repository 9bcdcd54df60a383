//! `flashgen bench`: forward TFLOP/s on the GPU, in the anchors' shapes (bf16, 16384 tokens per batch,
//! H·D = 2048), printed as JSON lines in anchor_bench.py's format and as a table.

use clap::Args;
use cudarc::driver::sys::CUevent_flags;
use flashgen::reference::SplitMix;
use flashgen::{DType, KernelSpec, SpecParams};
use flashgen_runtime::{Flash, Gpu, KernelCache, Layout, Tensor};
use std::io::Write;

#[derive(Args)]
pub struct BenchArgs {
    /// Head dims, comma-separated.
    #[arg(long, default_value = "64,128")]
    d: String,
    /// Sequence lengths, comma-separated.
    #[arg(long, default_value = "1024,4096,16384")]
    n: String,
    /// Tile configs to time besides the default, "bm,bn,warps,stages;..." (all shown; the JSON marks each).
    #[arg(long)]
    configs: Option<String>,
    /// Write the JSON lines to this file too.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Also time the stored autotuned config of each key (`flashgen autotune` first), labelled "tuned".
    #[arg(long)]
    tuned: bool,
    /// Timed batches (median reported); each batch is 10 launches between two CUDA events.
    #[arg(long, default_value_t = 15)]
    reps: usize,
}

fn list(s: &str) -> Result<Vec<u32>, String> {
    s.split(',').map(|x| x.trim().parse().map_err(|_| format!("`{x}` is not a number"))).collect()
}

/// Input sets rotated during timing.
const INPUT_SETS: usize = 3;

pub fn flops(z: usize, h: usize, n: usize, d: usize, causal: bool) -> f64 {
    4.0 * (z * h) as f64 * (n * n) as f64 * d as f64 * if causal { 0.5 } else { 1.0 }
}

pub fn run(a: &BenchArgs) -> Result<(), String> {
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("bench needs a GPU: {e}"))?, KernelCache::from_env());
    let gpu = &flash.gpu;
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let mut table = Vec::new();
    let mut rng = SplitMix(7);
    for d in list(&a.d)? {
        for n in list(&a.n)? {
            let (z, h, n_us, d_us) = ((16384 / n) as usize, (2048 / d) as usize, n as usize, d as usize);
            let layout = Layout::contiguous(z, h, n_us, d_us);
            let len = layout.extent();
            let st = &gpu.stream;
            let tensor = |bits: &[u16]| -> Result<Tensor, String> { Ok(Tensor { data: st.clone_htod(bits).map_err(dr)?, dtype: DType::Bf16, layout }) };
            // INPUT_SETS independent (Q, K, V) sets of random normals, rotated launch by launch, so a set that
            // fits in L2 cannot flatter the small sizes
            let mut sets = Vec::new();
            for _ in 0..INPUT_SETS {
                let mut random = || -> Result<Tensor, String> { tensor(&(0..len).map(|_| half::bf16::from_f32(rng.normal()).to_bits()).collect::<Vec<u16>>()) };
                sets.push((random()?, random()?, random()?));
            }
            let mut o = tensor(&vec![0u16; len])?;
            let mut m = st.alloc_zeros::<f32>(z * h * n_us).map_err(dr)?;
            for causal in [false, true] {
                let mut specs = vec![("default".to_string(), KernelSpec::default_for(gpu.arch, DType::Bf16, d, causal).map_err(|e| e.to_string())?)];
                if a.tuned {
                    // the config attention_forward would pick for this shape: the stored winner, if any
                    let spec = flash.spec_for(&sets[0].0, causal).map_err(|e| e.to_string())?;
                    if spec != specs[0].1 {
                        specs.push(("tuned".to_string(), spec));
                    } else {
                        println!("tuned config for D={d} N={n} causal={causal} is the default");
                    }
                }
                for cfg in a.configs.iter().flat_map(|c| c.split(';')).filter(|c| !c.trim().is_empty()) {
                    let f = list(cfg)?;
                    if f.len() != 4 {
                        return Err(format!("config `{cfg}` must be bm,bn,warps,stages"));
                    }
                    let p = SpecParams { kind: flashgen::KernelKind::Fwd, dtype: DType::Bf16, head_dim: d, block_m: f[0], block_n: f[1], stage: if causal { 3 } else { 1 }, num_warps: f[2], num_stages: f[3], arch: gpu.arch };
                    match KernelSpec::new(p) {
                        Ok(s) => specs.push((cfg.to_string(), s)),
                        Err(e) => println!("skip {cfg}: {e}"),
                    }
                }
                for (label, spec) in specs {
                    let mut turn = 0usize;
                    let mut launch = |o: &mut Tensor, m: &mut cudarc::driver::CudaSlice<f32>| {
                        let (q, k, v) = &sets[turn % INPUT_SETS];
                        turn += 1;
                        flash.forward_into(&spec, q, k, v, None, o, m).map_err(|e| e.to_string())
                    };
                    for _ in 0..5 {
                        launch(&mut o, &mut m)?;
                    }
                    let mut times = Vec::new();
                    for _ in 0..a.reps {
                        let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
                        let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
                        start.record(st).map_err(dr)?;
                        for _ in 0..10 {
                            launch(&mut o, &mut m)?;
                        }
                        end.record(st).map_err(dr)?;
                        end.synchronize().map_err(dr)?;
                        times.push(start.elapsed_ms(&end).map_err(dr)? as f64 / 10.0);
                    }
                    times.sort_by(f64::total_cmp);
                    let ms = times[times.len() / 2];
                    let tflops = flops(z, h, n_us, d_us, causal) / ms / 1e9;
                    let line = format!(
                        "{{\"kind\": \"fwd\", \"impl\": \"flashgen\", \"B\": {z}, \"H\": {h}, \"N\": {n}, \"D\": {d}, \"causal\": {causal}, \"dtype\": \"bf16\", \"ms\": {ms:.5}, \"tflops\": {tflops:.2}, \"config\": \"{label}\", \"spec\": \"{}\", \"p20_ms\": {:.5}, \"p80_ms\": {:.5}}}",
                        spec.name(), times[times.len() / 5], times[times.len() * 4 / 5]
                    );
                    println!("{line}");
                    if let Some(f) = json.as_mut() {
                        writeln!(f, "{line}").map_err(|e| e.to_string())?;
                    }
                    table.push(format!("fwd flashgen D={d:3} N={n:5} causal={} {tflops:7.1}  {label}", causal as u8));
                }
            }
        }
    }
    println!("\n=== flashgen forward (TFLOP/s) ===");
    for row in table {
        println!("{row}");
    }
    Ok(())
}
