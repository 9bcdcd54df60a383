//! The backward half of `flashgen check`: dQ, dK, dV of the default backward kernels against the f64
//! reference on fresh random inputs, with poisoned outputs and guard zones, after our own forward.

use super::args::CheckArgs;
use super::common::{nan_bits, GRAD_TOL, GUARD};
use flashgen::reference::{backward_f64, Shape, SplitMix};
use flashgen::DType;
use flashgen_runtime::tensor::{decode, from_bits, to_bits};
use flashgen_runtime::{Flash, Gradients, Layout, RowStats, Tensor};
use std::io::Write;

/// Relative error bound of each gradient (the bar).

/// backward_f64 with the heads split over all cores (each head is independent).
fn reference_parallel(q: &[f32], k: &[f32], v: &[f32], d_o: &[f32], s: Shape, causal: bool, scale: f64) -> [Vec<f64>; 3] {
    let per_head = s.n * s.d;
    let one = Shape { z: 1, h: 1, n: s.n, d: s.d };
    let heads: Vec<_> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..s.heads())
            .map(|hz| {
                let r = hz * per_head..(hz + 1) * per_head;
                let (q, k, v, d_o) = (&q[r.clone()], &k[r.clone()], &v[r.clone()], &d_o[r]);
                sc.spawn(move || backward_f64(q, k, v, d_o, one, causal, scale))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("reference thread")).collect()
    });
    let cat = |f: &dyn Fn(&flashgen::reference::Gradients<f64>) -> &Vec<f64>| heads.iter().flat_map(|g| f(g).iter().copied()).collect::<Vec<f64>>();
    [cat(&|g| &g.dq), cat(&|g| &g.dk), cat(&|g| &g.dv)]
}

struct Case {
    z: usize,
    h: usize,
    n: usize,
    bshd: bool,
    /// Pass the natural-log LSE (converted by the runtime) instead of the base-2 M.
    lse: bool,
}

/// (errors of dQ, dK, dV; guard zones intact)
/// The backward kernels under test: the target's defaults (the long sequences' plan and, where they differ,
/// 1024 and 4096 tokens') and, on sm_90a, the three wgmma kernels (what runs where the default fused kernel cannot), or the mma.sync ones (check --mma-sync); with
/// --fused-backward on sm_90a, the fused kinds as well.
fn backward_spec_sets(arch: flashgen::Arch, dtype: DType, d: u32, causal: bool, a: &CheckArgs) -> Result<Vec<flashgen::BackwardSpecs>, String> {
    use flashgen::KernelKind::*;
    let e = |x: flashgen::SpecError| x.to_string();
    // the long sequences' plan (the fused backward at HEAD_DIM 128 on sm_90a)
    let problem = flashgen::Problem::new(dtype, d, causal, usize::MAX);
    let options = flashgen::PlanOptions { wgmma: !a.mma_sync, ..flashgen::PlanOptions::default() };
    let plan = flashgen::plan(arch, &problem, &options, &flashgen::plan::NoTuning).map_err(e)?;
    let mut sets = vec![plan.backward];
    let mut more = Vec::new();
    // (and the table's rows for shorter sequences, where they differ: the fused backward's persistent tiles to
    // 4096 tokens)
    for tokens in [1024, 4096] {
        more.push(flashgen::plan(arch, &flashgen::Problem::new(dtype, d, causal, tokens), &options, &flashgen::plan::NoTuning).map_err(e)?.backward);
    }
    if arch.has_wgmma() && !a.mma_sync {
        more.push(flashgen::plan::backward_family(BwdDkdvWgmma, arch, &problem).map_err(e)?);
    }
    if a.fused_backward && arch.has_wgmma() && flashgen::plan::BackwardPath::Fused.serves(d) {
        let mut fused = vec![BwdFused, BwdFusedAtomic];
        if causal {
            fused.push(BwdFusedUp);
        }
        for kind in fused {
            more.push(flashgen::plan::backward_family(kind, arch, &problem).map_err(e)?);
        }
    }
    // (`--bwd-configs`: where this head dim and mask admit them)
    let family = |kind| flashgen::plan::backward_family(kind, arch, &problem).map_err(e);
    for item in a.bwd_configs.iter().flat_map(|c| c.split(';')).filter(|c| !c.trim().is_empty()) {
        match crate::configs::backward_config(item, plan.backward, &family) {
            Ok(set) => more.push(set),
            Err(why) => println!("skip backward config {item} at {} D={d} causal={}: {why}", dtype.name(), causal as u8),
        }
    }
    for set in more {
        if !sets.contains(&set) {
            sets.push(set);
        }
    }
    Ok(match &a.backward_schedule {
        Some(overrides) => with_backward_schedule(sets, overrides),
        None => sets,
    })
}

/// `check --backward-schedule`: each set's dK/dV kernel with the overrides on top of its own, where its kind
/// takes them; the sets it refuses stay as they are (a switch of the fused kinds leaves the pair alone). The
/// kernels' names carry the switches (`_dshand1`), so the output shows which ran with them.
fn with_backward_schedule(sets: Vec<flashgen::BackwardSpecs>, overrides: &flashgen::ScheduleOverrides) -> Vec<flashgen::BackwardSpecs> {
    sets.into_iter()
        .map(|set| match flashgen::KernelSpec::with_features(*set.dkdv.params(), overrides.over(set.dkdv.schedule_overrides()), set.dkdv.features()) {
            Ok(dkdv) => flashgen::BackwardSpecs { dkdv, ..set },
            Err(_) => set,
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn run_case(flash: &Flash, dtype: DType, d: usize, causal: bool, specs: &flashgen::BackwardSpecs, c: &Case, seed: u64) -> Result<([f64; 3], bool), String> {
    let e = |x: flashgen_runtime::RuntimeError| x.to_string();
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let gpu = &flash.gpu;
    let s = Shape { z: c.z, h: c.h, n: c.n, d };
    let layout = if c.bshd { Layout::bshd(c.z, c.h, c.n, d) } else { Layout::contiguous(c.z, c.h, c.n, d) };
    let mut rng = SplitMix(seed);
    let mut gen = || -> Vec<f32> { (0..s.len()).map(|_| from_bits(dtype, to_bits(dtype, rng.normal()))).collect() };
    let (q, k, v, d_o) = (gen(), gen(), gen(), gen());
    let scale = 1.0 / (d as f64).sqrt();
    let up = |x: &[f32]| Tensor::from_f32(gpu, x, dtype, layout).map_err(e);
    let (tq, tk, tv, tdo) = (up(&q)?, up(&k)?, up(&v)?, up(&d_o)?);
    let problem = flashgen::Problem::new(dtype, d as u32, causal, c.n);
    let fwd = flashgen::plan(gpu.arch, &problem, &flashgen::PlanOptions::default(), &flashgen::plan::NoTuning).map_err(|x| x.to_string())?.forward;
    let out = flash.attention_forward_spec(&fwd, &tq, &tk, &tv, Some(scale as f32)).map_err(e)?;
    let poisoned = || -> Result<Tensor, String> { Ok(Tensor { data: gpu.stream.clone_htod(&vec![nan_bits(dtype); layout.extent() + GUARD]).map_err(dr)?, dtype, layout }) };
    let mut g = Gradients { dq: poisoned()?, dk: poisoned()?, dv: poisoned()? };
    let stats = if c.lse { RowStats::Lse(&out.lse) } else { RowStats::M(&out.m) };
    flash.backward_into(specs, &tq, &tk, &tv, &out.o, stats, &tdo, Some(scale as f32), &mut g).map_err(e)?;
    gpu.stream.synchronize().map_err(dr)?;
    let reference = reference_parallel(&q, &k, &v, &d_o, s, causal, scale);
    // dV's norm is the floor of every denominator: a gradient that is mathematically zero (N = 1: the
    // softmax of one key does not depend on the scores, so dQ = dK = 0) is then measured against the
    // scale of the gradients instead of against 0, where any rounding would be an "infinite" error
    let floor: f64 = reference[2].iter().map(|x| x * x).sum::<f64>().sqrt();
    let mut errors = [0f64; 3];
    let mut guards = true;
    for (i, t) in [&g.dq, &g.dk, &g.dv].into_iter().enumerate() {
        let mem: Vec<u16> = gpu.stream.clone_dtoh(&t.data).map_err(dr)?;
        guards &= mem[layout.extent()..].iter().all(|&b| b == nan_bits(dtype));
        errors[i] = gradient_error(&decode(&mem, dtype, layout), &reference[i], floor);
    }
    Ok((errors, guards))
}

/// ‖got − want‖ / max(‖want‖, floor); infinite when anything is not finite.
fn gradient_error(got: &[f32], want: &[f64], floor: f64) -> f64 {
    if got.len() != want.len() || got.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let diff = got.iter().zip(want).map(|(&x, &y)| (x as f64 - y) * (x as f64 - y)).sum::<f64>().sqrt();
    let norm = want.iter().map(|x| x * x).sum::<f64>().sqrt();
    diff / norm.max(floor).max(f64::MIN_POSITIVE)
}

/// Every (dtype, HEAD_DIM, causal) of the default backward kernels on ragged lengths, strided layouts and
/// both forms of the row statistics. Returns (passed, failed).
pub fn gpu_check(flash: &Flash, a: &CheckArgs, json: &mut Option<std::fs::File>) -> Result<(usize, usize), String> {
    let mut cases = vec![
        Case { z: 1, h: 1, n: 1, bshd: false, lse: false },
        Case { z: 1, h: 2, n: 17, bshd: false, lse: true },
        Case { z: 1, h: 2, n: 64, bshd: false, lse: false },
        Case { z: 1, h: 4, n: 127, bshd: false, lse: false },
        Case { z: 2, h: 3, n: 333, bshd: true, lse: true },
    ];
    if !a.quick {
        cases.push(Case { z: 1, h: 16, n: 1000, bshd: false, lse: false });
        cases.push(Case { z: 2, h: 8, n: 2047, bshd: false, lse: false });
    }
    let (mut passed, mut failed) = (0, 0);
    let mut seed = a.seed ^ 0xbacc;
    for dtype in [DType::Bf16, DType::F16] {
        for d in flashgen::spec::HEAD_DIMS {
            for causal in [false, true] {
                for specs in backward_spec_sets(flash.gpu.arch, dtype, d, causal, a)? {
                let names = specs.names();
                if !a.selects(&names) {
                    continue;
                }
                let mut worst = [0f64; 3];
                for c in &cases {
                    seed = seed.wrapping_add(0x9E37_79B9);
                    let (err, guards) = run_case(flash, dtype, d as usize, causal, &specs, c, seed)?;
                    let ok = err.iter().all(|&x| x <= GRAD_TOL) && guards;
                    for i in 0..3 {
                        worst[i] = worst[i].max(err[i]);
                    }
                    if ok { passed += 1 } else { failed += 1 }
                    let line = format!(
                        "{{\"kind\":\"check_bwd\",\"specs\":\"{names}\",\"Z\":{},\"H\":{},\"N\":{},\"layout\":\"{}\",\"stats\":\"{}\",\"rel_err_dq\":{:.3e},\"rel_err_dk\":{:.3e},\"rel_err_dv\":{:.3e},\"guards_intact\":{guards},\"pass\":{ok}}}",
                        c.z, c.h, c.n, if c.bshd { "bshd" } else { "bhsd" }, if c.lse { "lse" } else { "m" }, err[0], err[1], err[2]
                    );
                    if !ok {
                        println!("FAIL {line}");
                    }
                    if let Some(f) = json.as_mut() {
                        writeln!(f, "{line}").map_err(|e| e.to_string())?;
                    }
                }
                println!("backward {} d{d} causal={} ({}{}): {} cases, worst dQ {:.1e} dK {:.1e} dV {:.1e}", dtype.name(), causal as u8, specs.dkdv.kind().name(), specs.dkdv.schedule_overrides().name_suffix(), cases.len(), worst[0], worst[1], worst[2]);
                }
            }
        }
    }
    Ok((passed, failed))
}
