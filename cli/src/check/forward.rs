//! The forward kernels on the GPU against the CPU f64 reference: every forward a call can run, ragged
//! lengths, strided layouts, poisoned outputs and guard zones, growing keys (the lazy rescaling's update path).

use super::args::CheckArgs;
use super::common::{nan_bits, GUARD, M_TOL, O_TOL};
use crate::configs::parse_spec_list;
use flashgen::reference::{naive_f64_row, ramp_keys, relative_error, Shape, SplitMix};
use flashgen::{DType, KernelSpec};
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen_runtime::{Flash, Layout, Tensor};
use std::io::Write;

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

pub fn gpu_check(flash: &Flash, a: &CheckArgs, json: &mut Option<std::fs::File>) -> Result<(usize, usize), String> {
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
                let options = flashgen::PlanOptions { wgmma: hopper, ..flashgen::PlanOptions::default() };
                for n in (0..=16).map(|p| 1usize << p).chain([usize::MAX]) {
                    let problem = flashgen::Problem::new(dtype, d, causal, n);
                    let spec = flashgen::plan(gpu.arch, &problem, &options, &flashgen::plan::NoTuning).map_err(|e| e.to_string())?.forward;
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
                        // with BLOCK_N 64 where the default's wider block does not fit 3 stages (none where no
                        // 3-stage ring fits: HEAD_DIM 256's 128-row Q tile)
                        let mut kernels = vec![spec];
                        if spec.kind().warp_specialized_forward() {
                            let problem = flashgen::Problem::new(dtype, d, causal, 1024);
                            let fallback = flashgen::plan::without_tma(&spec, &problem).map_err(|e| e.to_string())?;
                            kernels.push(fallback);
                            specs.push(fallback);
                        }
                        for k in kernels {
                            let p = *k.params();
                            let three = KernelSpec::new(flashgen::SpecParams { num_stages: 3, ..p }).or_else(|_| KernelSpec::new(flashgen::SpecParams { num_stages: 3, block_n: 64, ..p }));
                            specs.extend(three.ok());
                        }
                    }
                }
            }
        }
    }
    if let Some(list) = &a.specs {
        specs.extend(parse_spec_list(list, gpu.arch)?);
    }
    // each kernel once (a fallback can be another length's default)
    let mut seen = std::collections::HashSet::new();
    specs.retain(|s| seen.insert(*s));
    specs.retain(|s| a.selects(&s.name()));
    defaults.retain(|s| a.selects(&s.name()));
    let lens: &[usize] = if a.quick { &[1, 77, 128, 1000] } else { &[1, 17, 64, 127, 128, 129, 255, 1000, 1024, 2047, 4096] };
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
    Ok((passed, failed))
}
