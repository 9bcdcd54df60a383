//! `flashgen check`: generate the default kernels and check them. Without a GPU: every default spec
//! compiles, and the tiled CPU algorithm agrees with f64 attention. With one: every kernel runs against
//! the CPU f64 reference on fresh random inputs, with poisoned outputs and guard zones.

use clap::Args;
use flashgen::reference::{naive_f64_row, ramp_keys, relative_error, tiled_f32, LazyRescale, Shape, SplitMix};
use flashgen::{compile, CompileOptions, DType, KernelSpec};
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen_runtime::{Flash, Gpu, KernelCache, Layout, Tensor};
use std::io::Write;
use std::time::Instant;

#[derive(Args)]
pub struct CheckArgs {
    /// Fewer sequence lengths (a fast smoke test).
    #[arg(long)]
    pub quick: bool,
    /// Write one JSON line per case to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Random seed (each case derives its own).
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Only run on the CPU, even if a GPU is present.
    #[arg(long)]
    cpu_only: bool,
    /// Also write inputs and outputs of the default kernels (N = 1024) to DIR for bench/triton_parity.py.
    #[arg(long)]
    parity_dir: Option<std::path::PathBuf>,
    /// Only check the specs whose name contains this text.
    #[arg(long)]
    pub filter: Option<String>,
    /// Skip the backward checks.
    #[arg(long)]
    pub forward_only: bool,
    /// On sm_90a, check the mma.sync kernels (the kinds FLASHGEN_WGMMA=0 selects) instead of the default
    /// wgmma ones; elsewhere the mma.sync kernels are the defaults.
    #[arg(long)]
    pub mma_sync: bool,
    /// On sm_90a, also check the fused backward (bwd_pre + bwd_fused, and bwd_fused_atomic: dQ inside the
    /// dK/dV kernel).
    #[arg(long)]
    pub fused_backward: bool,
    /// Extra specs to check beside the defaults, as "[w:|ws:|wsp:]dtype,d,bm,bn,stage,warps,stages;..." (target = the GPU's; "w:" = fwd_wgmma, "ws:" = fwd_ws, "wsp:" = fwd_ws_persistent).
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
    let flash = Flash::new(gpu, KernelCache::from_env());
    let result = gpu_check(&flash, a);
    println!("kernel cache ({}): {}", flash.cache.dir().map(|d| d.display().to_string()).unwrap_or("memory only".into()), flash.cache.stats.summary());
    result
}

/// The kernels' tiled algorithm (f32) against naive f64 attention, at lengths that are not multiples of the
/// blocks: with the eager update, and with the ping-pong forward's lazy rescaling on ordinary keys and on keys
/// growing along the sequence (which force its update path).
fn cpu_algorithm_check(seed: u64) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let mut worst = 0f64;
    for (n, bm, bn, causal) in [(1, 64, 32, true), (77, 32, 16, true), (130, 64, 128, true), (130, 128, 64, false), (45, 16, 64, false), (600, 128, 64, true)] {
        let s = Shape { z: 1, h: 2, n, d: 32 };
        let (q, k, v) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
        let mut ramp = k.clone();
        ramp_keys(&mut ramp, s, 100.0);
        let lazy = Some(LazyRescale::KERNEL);
        for (how, keys, lazy) in [("eager", &k, None), ("lazy", &k, lazy), ("lazy, growing keys", &ramp, lazy)] {
            let t = tiled_f32(&q, keys, &v, s, causal, 0.3, bm, bn, lazy);
            let r = flashgen::reference::naive_f64(&q, keys, &v, s, causal, 0.3);
            let e = relative_error(&t.o, &r.o).max(relative_error(&t.m, &r.m));
            worst = worst.max(e);
            if e > 1e-5 {
                return Err(format!("tiled CPU algorithm ({how}) differs from f64 attention by {e:.2e} (N={n}, BLOCK_M={bm}, BLOCK_N={bn}, causal={causal})"));
            }
        }
    }
    println!("tiled CPU algorithm agrees with f64 attention: worst relative error {worst:.1e}");
    Ok(())
}

pub fn nan_bits(dtype: DType) -> u16 {
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

/// Above this length, or this much work (Z·H·N² scores), the f64 reference covers sampled rows only (a
/// full one would take minutes).
const SAMPLE_ABOVE: usize = 4096;
const SAMPLE_ABOVE_SCORES: usize = 1 << 26;
const SAMPLED_ROWS: usize = 512;

/// Relative errors of O and M over SAMPLED_ROWS rows: the first and last rows, the rows around every
/// 128-row boundary near the start and end, and random others; reference rows computed on all cores.
#[allow(clippy::too_many_arguments)]
fn sampled_rows_error(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, scale: f64, o: &[f32], m: &[f32], seed: u64) -> (f64, f64) {
    let rows = s.heads() * s.n;
    let mut rng = SplitMix(seed ^ 0x5a5a);
    let mut pick: Vec<usize> = vec![0, 1, 127, 128, 129, rows - 129, rows - 128, rows - 1];
    while pick.len() < SAMPLED_ROWS {
        pick.push((rng.next_u64() % rows as u64) as usize);
    }
    let d = s.d;
    let mut ref_o = vec![0f64; pick.len() * d];
    let mut ref_m = vec![0f64; pick.len()];
    let threads = std::thread::available_parallelism().map(|x| x.get()).unwrap_or(1);
    let per = pick.len().div_ceil(threads);
    std::thread::scope(|sc| {
        for ((rows_chunk, oc), mc) in pick.chunks(per).zip(ref_o.chunks_mut(per * d)).zip(ref_m.chunks_mut(per)) {
            sc.spawn(move || {
                for ((&r, orow), mr) in rows_chunk.iter().zip(oc.chunks_mut(d)).zip(mc.iter_mut()) {
                    *mr = naive_f64_row(q, k, v, s, causal, scale, r, orow);
                }
            });
        }
    });
    let got_o: Vec<f32> = pick.iter().flat_map(|&r| o[r * d..(r + 1) * d].iter().copied()).collect();
    let got_m: Vec<f32> = pick.iter().map(|&r| m[r]).collect();
    (relative_error(&got_o, &ref_o), relative_error(&got_m, &ref_m))
}

struct Case {
    spec: KernelSpec,
    z: usize,
    h: usize,
    n: usize,
    bshd: bool,
    /// Keys growing 100× along the sequence (`ramp_keys`): later blocks raise every row's max, so a lazily
    /// rescaling kernel must take its update path (normal inputs never do after the first block).
    ramp: bool,
}

pub const GUARD: usize = 4096;

fn run_case(flash: &Flash, c: &Case, seed: u64) -> Result<(f64, f64, bool), String> {
    let e = |x: flashgen_runtime::RuntimeError| x.to_string();
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let gpu = &flash.gpu;
    let dtype = c.spec.dtype();
    let d = c.spec.head_dim() as usize;
    let s = Shape { z: c.z, h: c.h, n: c.n, d };
    let layout = if c.bshd { Layout::bshd(c.z, c.h, c.n, d) } else { Layout::contiguous(c.z, c.h, c.n, d) };
    let mut rng = SplitMix(seed);
    // inputs rounded to the kernel's dtype; the reference sees exactly the same values
    let round = |x: f32| from_bits(dtype, to_bits(dtype, x));
    let mut gen = || -> Vec<f32> { (0..s.len()).map(|_| round(rng.normal())).collect() };
    let (q, mut k, v) = (gen(), gen(), gen());
    if c.ramp {
        ramp_keys(&mut k, s, 100.0);
        k.iter_mut().for_each(|x| *x = round(*x));
    }
    let scale = 1.0 / (d as f64).sqrt();
    let upload = |x: &[f32]| Tensor::from_f32(gpu, x, dtype, layout).map_err(e);
    let (dq, dk, dv) = (upload(&q)?, upload(&k)?, upload(&v)?);
    // poisoned outputs with a guard zone past the end: every element must be written, nothing past it
    let mut d_o = Tensor { data: gpu.stream.clone_htod(&vec![nan_bits(dtype); layout.extent() + GUARD]).map_err(dr)?, dtype, layout };
    let mut d_m = gpu.stream.clone_htod(&vec![f32::NAN; s.heads() * c.n + GUARD]).map_err(dr)?;
    flash.forward_into(&c.spec, &dq, &dk, &dv, Some(scale as f32), &mut d_o, &mut d_m).map_err(e)?;
    gpu.stream.synchronize().map_err(dr)?;
    let om: Vec<u16> = gpu.stream.clone_dtoh(&d_o.data).map_err(dr)?;
    let mm: Vec<f32> = gpu.stream.clone_dtoh(&d_m).map_err(dr)?;
    let o = flashgen_runtime::tensor::decode(&om, dtype, layout);
    let rows = s.heads() * c.n;
    let guards_intact = om[layout.extent()..].iter().all(|&b| b == nan_bits(dtype)) && mm[rows..].iter().all(|x| x.is_nan());
    if c.n > SAMPLE_ABOVE || s.heads() * c.n * c.n > SAMPLE_ABOVE_SCORES {
        // long sequences: every output must be written (finite), and sampled rows match f64 attention
        let written = o.iter().all(|x| x.is_finite()) && mm[..rows].iter().all(|x| x.is_finite());
        let (eo, em) = sampled_rows_error(&q, &k, &v, s, c.spec.causal(), scale, &o, &mm[..rows], seed);
        return Ok((if written { eo } else { f64::INFINITY }, em, guards_intact));
    }
    let (ro, rm) = reference_parallel(&q, &k, &v, s, c.spec.causal(), scale);
    Ok((relative_error(&o, &ro), relative_error(&mm[..rows], &rm), guards_intact))
}

/// The allocating API: attention_forward's natural-log LSE against the f64 reference (ragged N = 300).
fn lse_case(flash: &Flash, spec: &KernelSpec, seed: u64) -> Result<f64, String> {
    let e = |x: flashgen_runtime::RuntimeError| x.to_string();
    let d = spec.head_dim() as usize;
    let s = Shape { z: 1, h: 3, n: 300, d };
    let mut rng = SplitMix(seed ^ 0x15e);
    let mut gen = || -> Vec<f32> { (0..s.len()).map(|_| from_bits(spec.dtype(), to_bits(spec.dtype(), rng.normal()))).collect() };
    let (q, k, v) = (gen(), gen(), gen());
    let layout = Layout::contiguous(1, 3, 300, d);
    let up = |x: &[f32]| Tensor::from_f32(&flash.gpu, x, spec.dtype(), layout).map_err(e);
    let out = flash.attention_forward_spec(spec, &up(&q)?, &up(&k)?, &up(&v)?, None).map_err(e)?;
    let lse: Vec<f32> = flash.gpu.stream.clone_dtoh(&out.lse).map_err(|x| x.to_string())?;
    let (_, rm) = reference_parallel(&q, &k, &v, s, spec.causal(), 1.0 / (d as f64).sqrt());
    let natural: Vec<f64> = rm.iter().map(|m| m * std::f64::consts::LN_2).collect();
    Ok(relative_error(&lse, &natural))
}

/// Inputs and outputs of each spec on one N = 1024 problem, as raw little-endian files plus a JSON index,
/// for bench/triton_parity.py to rerun the seed's Triton kernel on the same inputs.
fn write_parity(flash: &Flash, specs: &[KernelSpec], dir: &std::path::Path) -> Result<(), String> {
    let e = |x: flashgen_runtime::RuntimeError| x.to_string();
    std::fs::create_dir_all(dir).map_err(|x| x.to_string())?;
    let mut index = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let (z, h, n, d) = (2, 4, 1024, spec.head_dim() as usize);
        let layout = Layout::contiguous(z, h, n, d);
        let mut rng = SplitMix(0xfa2 + i as u64);
        let mut tensors = Vec::new();
        for _ in 0..3 {
            let x: Vec<f32> = (0..z * h * n * d).map(|_| rng.normal()).collect();
            tensors.push(Tensor::from_f32(&flash.gpu, &x, spec.dtype(), layout).map_err(e)?);
        }
        let out = flash.attention_forward_spec(spec, &tensors[0], &tensors[1], &tensors[2], None).map_err(e)?;
        let stem = spec.name();
        for (tag, t) in [("q", &tensors[0]), ("k", &tensors[1]), ("v", &tensors[2]), ("o", &out.o)] {
            let bits: Vec<u16> = flash.gpu.stream.clone_dtoh(&t.data).map_err(|x| x.to_string())?;
            let bytes: Vec<u8> = bits.iter().flat_map(|b| b.to_le_bytes()).collect();
            std::fs::write(dir.join(format!("{stem}.{tag}.bin")), bytes).map_err(|x| x.to_string())?;
        }
        let m: Vec<f32> = flash.gpu.stream.clone_dtoh(&out.m).map_err(|x| x.to_string())?;
        let bytes: Vec<u8> = m.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::fs::write(dir.join(format!("{stem}.m.bin")), bytes).map_err(|x| x.to_string())?;
        index.push(format!(
            "{{\"name\": \"{stem}\", \"dtype\": \"{}\", \"Z\": {z}, \"H\": {h}, \"N\": {n}, \"D\": {d}, \"causal\": {}}}",
            spec.dtype().name(),
            spec.causal()
        ));
    }
    std::fs::write(dir.join("index.json"), format!("[{}]\n", index.join(",\n"))).map_err(|x| x.to_string())?;
    println!("wrote parity inputs/outputs of {} kernels to {}", specs.len(), dir.display());
    Ok(())
}

fn parse_specs(list: &str, gpu: &Gpu) -> Result<Vec<KernelSpec>, String> {
    parse_spec_list(list, gpu.arch)
}

/// A config's kernel kind and tiles: "w:bm,bn,warps,stages" is the Hopper (wgmma) kind of `role`; for the
/// forward "ws:" is fwd_ws and "wsp:" fwd_ws_persistent.
pub fn config_kind(cfg: &str, role: flashgen::KernelKind) -> (flashgen::KernelKind, &str) {
    let cfg = cfg.trim();
    if role.role() == flashgen::KernelKind::Fwd {
        if let Some(tiles) = cfg.strip_prefix("wsp:") {
            return (flashgen::KernelKind::FwdWsPersistent, tiles);
        }
        if let Some(tiles) = cfg.strip_prefix("ws:") {
            return (flashgen::KernelKind::FwdWs, tiles);
        }
    }
    match cfg.strip_prefix("w:") {
        Some(tiles) => (role.wgmma_kind().unwrap_or(role), tiles),
        None => (role, cfg),
    }
}

/// "[w:|ws:|wsp:]dtype,d,bm,bn,stage,warps,stages;..." for one target ("w:": the wgmma forward, "ws:" the
/// warp-specialized one, "wsp:" its persistent form).
pub fn parse_spec_list(list: &str, arch: flashgen::Arch) -> Result<Vec<KernelSpec>, String> {
    list.split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let (kind, item) = config_kind(item, flashgen::KernelKind::Fwd);
            let f: Vec<&str> = item.split(',').map(str::trim).collect();
            if f.len() != 7 {
                return Err(format!("spec `{item}` must have 7 fields: dtype,d,bm,bn,stage,warps,stages"));
            }
            let num = |i: usize| f[i].parse::<u32>().map_err(|_| format!("spec `{item}`: field {} is not a number", i + 1));
            KernelSpec::new(flashgen::SpecParams {
                kind,
                dtype: DType::parse(f[0]).map_err(|e| e.to_string())?,
                head_dim: num(1)?,
                block_m: num(2)?,
                block_n: num(3)?,
                stage: num(4)?,
                num_warps: num(5)?,
                num_stages: num(6)?,
                arch,
            })
            .map_err(|e| e.to_string())
        })
        .collect()
}

fn gpu_check(flash: &Flash, a: &CheckArgs) -> Result<(), String> {
    let gpu = &flash.gpu;
    println!("GPU: {} ({})", gpu.name, gpu.arch);
    let mut specs = Vec::new();
    let mut defaults = Vec::new();
    let hopper = !a.mma_sync && gpu.arch.has_wgmma();
    for dtype in [DType::Bf16, DType::F16] {
        for d in flashgen::spec::HEAD_DIMS {
            for causal in [false, true] {
                // the forward of every length (they differ with the length on sm_90a, at powers of two)
                let mut forwards = Vec::new();
                for n in (0..=16).map(|p| 1usize << p).chain([usize::MAX]) {
                    let spec = if hopper { KernelSpec::default_forward(gpu.arch, dtype, d, causal, n) } else { KernelSpec::default_of(flashgen::KernelKind::Fwd, gpu.arch, dtype, d, causal) };
                    let spec = spec.map_err(|e| e.to_string())?;
                    if !forwards.contains(&spec) {
                        forwards.push(spec);
                    }
                }
                for spec in forwards {
                    specs.push(spec);
                    defaults.push(spec);
                    if hopper {
                        // the other Hopper forwards calls can run: fwd_ws's (and fwd_ws_persistent's) fwd_wgmma
                        // fallback (layouts TMA cannot describe), and each one's 3-stage variant, the autotuner's to
                        // choose (fwd_wgmma: S of the next block in flight during the softmax; fwd_ws: ping-pong),
                        // with BLOCK_N 64 where the default's wider block does not fit 3 stages
                        let mut kernels = vec![spec];
                        if spec.kind().warp_specialized_forward() {
                            kernels.push(spec.without_warp_specialization());
                            specs.push(spec.without_warp_specialization());
                        }
                        for k in kernels {
                            let p = *k.params();
                            let three = KernelSpec::new(flashgen::SpecParams { num_stages: 3, ..p }).or_else(|_| KernelSpec::new(flashgen::SpecParams { num_stages: 3, block_n: 64, ..p }));
                            specs.push(three.map_err(|e| e.to_string())?);
                        }
                    }
                }
            }
        }
    }
    if let Some(list) = &a.specs {
        specs.extend(parse_specs(list, gpu)?);
    }
    // each kernel once (a fallback can be another length's default)
    let mut seen = std::collections::HashSet::new();
    specs.retain(|s| seen.insert(*s));
    if let Some(f) = &a.filter {
        specs.retain(|s| s.name().contains(f.as_str()));
        defaults.retain(|s| s.name().contains(f.as_str()));
    }
    let lens: &[usize] = if a.quick { &[1, 77, 128, 1000] } else { &[1, 17, 64, 127, 128, 129, 255, 1000, 1024, 2047, 4096] };
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let (mut passed, mut failed) = (0, 0);
    let mut seed = a.seed;
    for spec in &specs {
        let mut cases: Vec<Case> = lens.iter().map(|&n| Case { spec: *spec, z: 1, h: 2, n, bshd: false, ramp: false }).collect();
        cases.push(Case { spec: *spec, z: 2, h: 3, n: 333, bshd: true, ramp: false });
        cases.push(Case { spec: *spec, z: 1, h: 2, n: 1000, bshd: false, ramp: true });
        if !a.quick {
            // long sequences, Z·H = 1, reference on sampled rows
            cases.push(Case { spec: *spec, z: 1, h: 1, n: 8191, bshd: false, ramp: false });
            cases.push(Case { spec: *spec, z: 1, h: 1, n: 16384, bshd: false, ramp: false });
            // 128 heads of 1024 tokens: 512-1024 tiles, so that a persistent program runs several in a row
            // (the cross-tile path; the cases above give most programs one tile)
            cases.push(Case { spec: *spec, z: 4, h: 32, n: 1024, bshd: false, ramp: false });
        }
        cases.push(Case { spec: *spec, z: 4, h: 16, n: 200, bshd: false, ramp: false });
        for c in &cases {
            seed = seed.wrapping_add(0x9E37_79B9);
            let (eo, em, guards) = run_case(flash, c, seed)?;
            let ok = eo <= O_TOL && em <= M_TOL && guards;
            if ok { passed += 1 } else { failed += 1 }
            let line = format!(
                "{{\"kind\":\"check\",\"spec\":\"{}\",\"Z\":{},\"H\":{},\"N\":{},\"layout\":\"{}\",\"keys\":\"{}\",\"rel_err_o\":{:.3e},\"rel_err_m\":{:.3e},\"guards_intact\":{},\"pass\":{}}}",
                spec.name(), c.z, c.h, c.n, if c.bshd { "bshd" } else { "bhsd" }, if c.ramp { "ramp" } else { "normal" }, eo, em, guards, ok
            );
            if !ok {
                println!("FAIL {line}");
            }
            if let Some(f) = json.as_mut() {
                writeln!(f, "{line}").map_err(|e| e.to_string())?;
            }
        }
        let lse_err = lse_case(flash, spec, seed)?;
        let lse_ok = lse_err <= M_TOL;
        if lse_ok { passed += 1 } else { failed += 1; println!("FAIL natural-log LSE of {}: relative error {lse_err:.3e}", spec.name()) }
        println!("{:<48} {} cases + attention_forward LSE (rel. err. {lse_err:.1e})", spec.name(), cases.len());
    }
    if let Some(dir) = &a.parity_dir {
        write_parity(flash, &defaults, dir)?;
    }
    if !a.forward_only {
        let (p, f) = crate::check_backward::gpu_check(flash, a, &mut json)?;
        passed += p;
        failed += f;
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        return Err(format!("{failed} GPU check case(s) failed (tolerances: O {O_TOL:e}, M {M_TOL:e}, gradients {:e})", crate::check_backward::GRAD_TOL));
    }
    Ok(())
}
