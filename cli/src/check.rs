//! `flashgen check`: generate the default kernels and check them. Without a GPU: every default spec
//! compiles, and the tiled CPU algorithm agrees with f64 attention. With one: every kernel runs against
//! the CPU f64 reference on fresh random inputs, with poisoned outputs and guard zones.

use clap::Args;
use flashgen::reference::{naive_f64_row, relative_error, tiled_f32, Shape, SplitMix};
use flashgen::{compile, CompileOptions, DType, KernelSpec};
use flashgen_runtime::{ForwardArgs, ForwardKernel, Gpu, Layout};
use std::io::Write;
use std::time::Instant;

#[derive(Args)]
pub struct CheckArgs {
    /// Fewer sequence lengths (a fast smoke test).
    #[arg(long)]
    quick: bool,
    /// Write one JSON line per case to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Random seed (each case derives its own).
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// Only run on the CPU, even if a GPU is present.
    #[arg(long)]
    cpu_only: bool,
    /// Only check the specs whose name contains this text.
    #[arg(long)]
    filter: Option<String>,
    /// Extra specs to check beside the defaults, as "dtype,d,bm,bn,stage,warps,stages;..." (target = the GPU's).
    #[arg(long)]
    specs: Option<String>,
}

pub const O_TOL: f64 = 1e-2;
pub const M_TOL: f64 = 1e-3;

pub fn run(a: &CheckArgs) -> Result<(), String> {
    let t0 = Instant::now();
    let defaults = KernelSpec::default_set();
    for spec in &defaults {
        compile(spec, CompileOptions::default()).map_err(|e| e.to_string())?;
    }
    println!("generated {} default kernels in {:.2} s", defaults.len(), t0.elapsed().as_secs_f64());
    cpu_algorithm_check(a.seed)?;
    if a.cpu_only {
        return Ok(());
    }
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            println!("no GPU ({e}): kernels generated and the algorithm checked on the CPU; GPU checks not run");
            return Ok(());
        }
    };
    gpu_check(&gpu, a)
}

/// The kernels' tiled algorithm (f32) against naive f64 attention, at lengths that are not multiples of the blocks.
fn cpu_algorithm_check(seed: u64) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let mut worst = 0f64;
    for (n, bm, bn, causal) in [(1, 64, 32, true), (77, 32, 16, true), (130, 64, 128, true), (130, 128, 64, false), (45, 16, 64, false)] {
        let s = Shape { z: 1, h: 2, n, d: 32 };
        let (q, k, v) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
        let t = tiled_f32(&q, &k, &v, s, causal, 0.3, bm, bn);
        let r = flashgen::reference::naive_f64(&q, &k, &v, s, causal, 0.3);
        let e = relative_error(&t.o, &r.o).max(relative_error(&t.m, &r.m));
        worst = worst.max(e);
        if e > 1e-5 {
            return Err(format!("tiled CPU algorithm differs from f64 attention by {e:.2e} (N={n}, BLOCK_M={bm}, BLOCK_N={bn}, causal={causal})"));
        }
    }
    println!("tiled CPU algorithm agrees with f64 attention: worst relative error {worst:.1e}");
    Ok(())
}

fn to_bits(dtype: DType, x: f32) -> u16 {
    match dtype {
        DType::Bf16 => half::bf16::from_f32(x).to_bits(),
        DType::F16 => half::f16::from_f32(x).to_bits(),
    }
}
fn from_bits(dtype: DType, b: u16) -> f32 {
    match dtype {
        DType::Bf16 => half::bf16::from_bits(b).to_f32(),
        DType::F16 => half::f16::from_bits(b).to_f32(),
    }
}
fn nan_bits(dtype: DType) -> u16 {
    match dtype {
        DType::Bf16 => 0x7FC0,
        DType::F16 => 0x7E00,
    }
}

/// Naive f64 attention with its rows split over all cores.
fn reference_parallel(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, scale: f64) -> (Vec<f64>, Vec<f64>) {
    let rows = s.heads() * s.n;
    let mut o = vec![0f64; s.len()];
    let mut m = vec![0f64; rows];
    let threads = std::thread::available_parallelism().map(|x| x.get()).unwrap_or(1);
    let per = rows.div_ceil(threads).max(1);
    std::thread::scope(|sc| {
        for (c, (oc, mc)) in o.chunks_mut(per * s.d).zip(m.chunks_mut(per)).enumerate() {
            sc.spawn(move || {
                for (r, (orow, mr)) in oc.chunks_mut(s.d).zip(mc.iter_mut()).enumerate() {
                    *mr = naive_f64_row(q, k, v, s, causal, scale, c * per + r, orow);
                }
            });
        }
    });
    (o, m)
}

struct Case {
    spec: KernelSpec,
    z: usize,
    h: usize,
    n: usize,
    bshd: bool,
}

const GUARD: usize = 4096;

fn run_case(gpu: &Gpu, kernel: &ForwardKernel, c: &Case, seed: u64) -> Result<(f64, f64, bool), String> {
    let e = |x: flashgen_runtime::RuntimeError| x.to_string();
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let dtype = c.spec.dtype();
    let d = c.spec.head_dim() as usize;
    let s = Shape { z: c.z, h: c.h, n: c.n, d };
    let layout = if c.bshd { Layout::bshd(c.z, c.h, c.n, d) } else { Layout::contiguous(c.z, c.h, c.n, d) };
    let mut rng = SplitMix(seed);
    // inputs rounded to the kernel's dtype; the reference sees exactly the same values
    let mut gen = || -> (Vec<f32>, Vec<u16>) {
        let logical: Vec<f32> = (0..s.len()).map(|_| from_bits(dtype, to_bits(dtype, rng.normal()))).collect();
        let mut mem = vec![0u16; layout.extent()];
        for (i, x) in logical.iter().enumerate() {
            let (hz, row, col) = (i / (c.n * d), (i / d) % c.n, i % d);
            mem[layout.offset(hz / c.h, hz % c.h, row, col)] = to_bits(dtype, *x);
        }
        (logical, mem)
    };
    let (q, qm) = gen();
    let (k, km) = gen();
    let (v, vm) = gen();
    let scale = 1.0 / (d as f64).sqrt();
    let st = &gpu.stream;
    let dq = st.clone_htod(&qm).map_err(dr)?;
    let dk = st.clone_htod(&km).map_err(dr)?;
    let dv = st.clone_htod(&vm).map_err(dr)?;
    // poisoned outputs with a guard zone past the end: every element must be written, nothing past it
    let mut d_o = st.clone_htod(&vec![nan_bits(dtype); layout.extent() + GUARD]).map_err(dr)?;
    let mut d_m = st.clone_htod(&vec![f32::NAN; s.heads() * c.n + GUARD]).map_err(dr)?;
    kernel
        .launch(gpu, ForwardArgs { q: (&dq, layout), k: (&dk, layout), v: (&dv, layout), o: (&mut d_o, layout), m: &mut d_m, sm_scale: scale as f32 })
        .map_err(e)?;
    st.synchronize().map_err(dr)?;
    let om: Vec<u16> = st.clone_dtoh(&d_o).map_err(dr)?;
    let mm: Vec<f32> = st.clone_dtoh(&d_m).map_err(dr)?;
    let (ro, rm) = reference_parallel(&q, &k, &v, s, c.spec.causal(), scale);
    let o: Vec<f32> = (0..s.len())
        .map(|i| {
            let (hz, row, col) = (i / (c.n * d), (i / d) % c.n, i % d);
            from_bits(dtype, om[layout.offset(hz / c.h, hz % c.h, row, col)])
        })
        .collect();
    let rows = s.heads() * c.n;
    let guards_intact = om[layout.extent()..].iter().all(|&b| b == nan_bits(dtype)) && mm[rows..].iter().all(|x| x.is_nan());
    Ok((relative_error(&o, &ro), relative_error(&mm[..rows], &rm), guards_intact))
}

fn parse_specs(list: &str, gpu: &Gpu) -> Result<Vec<KernelSpec>, String> {
    list.split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let f: Vec<&str> = item.split(',').map(str::trim).collect();
            if f.len() != 7 {
                return Err(format!("spec `{item}` must have 7 fields: dtype,d,bm,bn,stage,warps,stages"));
            }
            let num = |i: usize| f[i].parse::<u32>().map_err(|_| format!("spec `{item}`: field {} is not a number", i + 1));
            KernelSpec::new(flashgen::SpecParams {
                kind: flashgen::KernelKind::Fwd,
                dtype: DType::parse(f[0]).map_err(|e| e.to_string())?,
                head_dim: num(1)?,
                block_m: num(2)?,
                block_n: num(3)?,
                stage: num(4)?,
                num_warps: num(5)?,
                num_stages: num(6)?,
                arch: gpu.arch,
            })
            .map_err(|e| e.to_string())
        })
        .collect()
}

fn gpu_check(gpu: &Gpu, a: &CheckArgs) -> Result<(), String> {
    println!("GPU: {} ({})", gpu.name, gpu.arch);
    let mut specs = Vec::new();
    for dtype in [DType::Bf16, DType::F16] {
        for d in flashgen::spec::HEAD_DIMS {
            for causal in [false, true] {
                specs.push(KernelSpec::default_for(gpu.arch, dtype, d, causal).map_err(|e| e.to_string())?);
            }
        }
    }
    if let Some(list) = &a.specs {
        specs.extend(parse_specs(list, gpu)?);
    }
    if let Some(f) = &a.filter {
        specs.retain(|s| s.name().contains(f.as_str()));
    }
    let lens: &[usize] = if a.quick { &[1, 77, 128, 1000] } else { &[1, 17, 64, 127, 128, 129, 255, 1000, 1024, 2047, 4096] };
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let (mut passed, mut failed) = (0, 0);
    let mut seed = a.seed;
    for spec in &specs {
        let kernel = ForwardKernel::load(gpu, &compile(spec, CompileOptions::default()).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let mut cases: Vec<Case> = lens.iter().map(|&n| Case { spec: *spec, z: 1, h: 2, n, bshd: false }).collect();
        cases.push(Case { spec: *spec, z: 2, h: 3, n: 333, bshd: true });
        cases.push(Case { spec: *spec, z: 4, h: 16, n: 200, bshd: false });
        for c in &cases {
            seed = seed.wrapping_add(0x9E37_79B9);
            let (eo, em, guards) = run_case(gpu, &kernel, c, seed)?;
            let ok = eo <= O_TOL && em <= M_TOL && guards;
            if ok { passed += 1 } else { failed += 1 }
            let line = format!(
                "{{\"kind\":\"check\",\"spec\":\"{}\",\"Z\":{},\"H\":{},\"N\":{},\"layout\":\"{}\",\"rel_err_o\":{:.3e},\"rel_err_m\":{:.3e},\"guards_intact\":{},\"pass\":{}}}",
                spec.name(), c.z, c.h, c.n, if c.bshd { "bshd" } else { "bhsd" }, eo, em, guards, ok
            );
            if !ok {
                println!("FAIL {line}");
            }
            if let Some(f) = json.as_mut() {
                writeln!(f, "{line}").map_err(|e| e.to_string())?;
            }
        }
        println!("{:<48} {} cases", spec.name(), cases.len());
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} GPU check case(s) failed (tolerances: O {O_TOL:e}, M {M_TOL:e})"));
    }
    Ok(())
}
