//! `flashgen bench`: forward (and with --backward, backward) TFLOP/s on the GPU, in the anchors' shapes (bf16, 16384 tokens per batch,
//! H·D = 2048), printed as JSON lines in anchor_bench.py's format and as a table.

use clap::Args;
use cudarc::driver::sys::CUevent_flags;
use flashgen::numeric::SplitMix;
use flashgen::plan::NoTuning;
use flashgen::{DType, KernelSpec, PlanOptions, Problem, SpecParams};
use flashgen_runtime::{Flash, Gpu, Gradients, KernelCache, Layout, RowStats, Tensor};
use std::io::Write;

#[derive(Args)]
pub struct BenchArgs {
    /// Head dims, comma-separated.
    #[arg(long, default_value = "64,128")]
    d: String,
    /// Sequence lengths, comma-separated.
    #[arg(long, default_value = "1024,4096,16384")]
    n: String,
    /// Which masks to time: "0" (non-causal), "1" (causal), or both, comma-separated.
    #[arg(long, default_value = "0,1")]
    causal: String,
    /// Tile configs to time besides the default, "bm,bn,warps,stages;..." (all shown; the JSON marks each);
    /// "w:", "ws:", "wsp:" prefixes name fwd_wgmma, fwd_ws, fwd_ws_persistent configs, and "@switch=on|off,..."
    /// after the tiles sets schedule switches (e.g. "wsp:256,64,20,8@own_blocks=off").
    #[arg(long)]
    configs: Option<String>,
    /// Write the JSON lines to this file too.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Also time the stored autotuned config of each key (`flashgen autotune` first), labelled "tuned".
    #[arg(long)]
    tuned: bool,
    /// On sm_90a, also time the mma.sync kernels (fwd; with --backward, bwd_dkdv and bwd_dq), labelled
    /// "mma.sync" (the defaults there are the wgmma kinds).
    #[arg(long)]
    mma_sync: bool,
    /// Also time the backward pass (the three default kernels, Δ included), kind "bwd".
    #[arg(long)]
    backward: bool,
    /// With --backward: time only the backward (the forward still runs, untimed, for its O and M).
    #[arg(long, requires = "backward")]
    backward_only: bool,
    /// With --fused: also time bwd_fused with these numbers of dQ chains (comma-separated, 1 to 8), labelled
    /// "fused-c<n>" (the plain "fused" row has FLASHGEN_DQ_CHAINS, default 2).
    #[arg(long, requires = "fused")]
    dq_chains: Option<String>,
    /// With --backward on sm_90a, also time bwd_pre + bwd_fused (dQ inside dK/dV), labelled "fused", with
    /// atomics, "fused-atomic", and causal, bwd_fused_up, "fused-up".
    #[arg(long)]
    fused: bool,
    /// Backward tile configs to time besides the default, "dkdv bm,bn,warps,stages|dq bm,bn,warps,stages;..."
    /// (dK/dV: BLOCK_M = streamed query rows, BLOCK_N = owned key rows); "w:dkdv|dq" varies the wgmma kernels;
    /// "f:bm,bn,warps,stages" the fused backward, "fa:..." the fused one with atomics.
    #[arg(long)]
    bwd_configs: Option<String>,
    /// Timed batches (median reported); each batch is 10 launches between two CUDA events.
    #[arg(long, default_value_t = 15)]
    reps: usize,
    /// How launches are timed: "batched" (`--reps` batches of 10 back-to-back launches, the median), or
    /// "do-bench", the anchors' method (triton.testing.do_bench: 25 ms of warm-up, then 200 ms of launches,
    /// each after a 256 MB memset that empties L2 and between its own two events, the mean).
    #[arg(long, default_value = "batched", value_parser = ["batched", "do-bench"])]
    timing: String,
    /// Keep warming up (launching, untimed, back to back) for at least this long before a row is timed.
    /// Batched: past the 5 warm-up launches. do-bench: before do_bench's own steps. Off by default: on the
    /// power-capped H200, 300 ms of back-to-back launches hold the chip at its cap, and the causal rows timed
    /// after read 8-10% low (bench/results/2026-12-01-warmup-ab), where do_bench's own warm-up, like the
    /// anchors' autotuner, leaves a memset between launches.
    #[arg(long, default_value_t = 0.0)]
    warmup_ms: f64,
}

fn list(s: &str) -> Result<Vec<u32>, String> {
    s.split(',').map(|x| x.trim().parse().map_err(|_| format!("`{x}` is not a number"))).collect()
}

/// Input sets rotated during timing.
const INPUT_SETS: usize = 3;

/// `len` standard normals as bf16 bits, generated on every core. Each chunk of elements has its own
/// generator, seeded from `seed` and the chunk's index, so the values depend on the seed alone, never on
/// the number of threads. A bench length needs up to 12 tensors of 33M elements: on one thread that took
/// ~1.6 s each, most of a device call's time (a whole-table call spent ~4 of its 6 minutes on it).
fn random_bf16(len: usize, seed: u64) -> Vec<u16> {
    const CHUNK: usize = 1 << 20;
    let mut out = vec![0u16; len];
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // each thread a slab of whole chunks; a chunk's generator is known by its index in the whole output
    let slab = CHUNK * len.div_ceil(CHUNK).div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (t, part) in out.chunks_mut(slab).enumerate() {
            s.spawn(move || {
                for (i, chunk) in part.chunks_mut(CHUNK).enumerate() {
                    let index = t * (slab / CHUNK) + i;
                    let mut rng = SplitMix(SplitMix(seed.wrapping_add(index as u64)).next_u64());
                    chunk.iter_mut().for_each(|x| *x = half::bf16::from_f32(rng.normal()).to_bits());
                }
            });
        }
    });
    out
}

/// The anchors' FLOP count: 4·Z·H·N²·D, ×0.5 causal, ×2.5 for the backward.
pub fn flops(kind: &str, z: usize, h: usize, n: usize, d: usize, causal: bool) -> f64 {
    4.0 * (z * h) as f64 * (n * n) as f64 * d as f64 * if causal { 0.5 } else { 1.0 } * if kind == "bwd" { 2.5 } else { 1.0 }
}

/// Per-launch times in ms, sorted, and the one reported (see `BenchArgs::timing`).
struct Timed {
    sorted: Vec<f64>,
    ms: f64,
}

/// Times `launch` the way `a.timing` names.
fn time_launches(gpu: &Gpu, a: &BenchArgs, launch: impl FnMut() -> Result<(), String>) -> Result<Timed, String> {
    let do_bench = a.timing == "do-bench";
    let mut sorted = if do_bench { time_like_do_bench(gpu, a.warmup_ms, launch)? } else { time_batches(gpu, a.reps, a.warmup_ms, launch)? };
    sorted.sort_by(f64::total_cmp);
    let ms = if do_bench { sorted.iter().sum::<f64>() / sorted.len() as f64 } else { sorted[sorted.len() / 2] };
    Ok(Timed { sorted, ms })
}

/// Launches, untimed, in groups of 5 until at least `warmup_ms` have passed (at least one group).
fn warm_up(gpu: &Gpu, warmup_ms: f64, launch: &mut impl FnMut() -> Result<(), String>) -> Result<(), String> {
    let warm = std::time::Instant::now();
    loop {
        for _ in 0..5 {
            launch()?;
        }
        gpu.stream.synchronize().map_err(|x| x.to_string())?;
        if warm.elapsed().as_secs_f64() * 1e3 >= warmup_ms {
            return Ok(());
        }
    }
}

/// 5 warm-up launches (and more for `warmup_ms`), then `reps` batches of 10 launches between two CUDA events
/// (reported: the median).
fn time_batches(gpu: &Gpu, reps: usize, warmup_ms: f64, mut launch: impl FnMut() -> Result<(), String>) -> Result<Vec<f64>, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    warm_up(gpu, warmup_ms, &mut launch)?;
    let mut times = Vec::new();
    for _ in 0..reps {
        let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
        let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
        start.record(&gpu.stream).map_err(dr)?;
        for _ in 0..10 {
            launch()?;
        }
        end.record(&gpu.stream).map_err(dr)?;
        end.synchronize().map_err(dr)?;
        times.push(start.elapsed_ms(&end).map_err(dr)? as f64 / 10.0);
    }
    Ok(times)
}

/// triton.testing.do_bench (Triton 3.6, the anchors' timer) step for step: one launch; 5 launches each
/// after emptying L2, timed together for an estimate; launches for 25 ms; then launches for 200 ms, each
/// after a 256 MB memset and between its own two events (reported: the mean). The memsets matter on a power-capped
/// chip: they are the low-power gaps between the timed launches. With `warmup_ms`, untimed launches for that
/// long come first.
fn time_like_do_bench(gpu: &Gpu, warmup_ms: f64, mut launch: impl FnMut() -> Result<(), String>) -> Result<Vec<f64>, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    if warmup_ms > 0.0 {
        warm_up(gpu, warmup_ms, &mut launch)?;
    }
    let st = &gpu.stream;
    let mut cache = st.alloc_zeros::<u32>(256_000_000 / 4).map_err(dr)?;
    let event = || gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr);
    launch()?;
    st.synchronize().map_err(dr)?;
    let (start, end) = (event()?, event()?);
    start.record(st).map_err(dr)?;
    for _ in 0..5 {
        st.memset_zeros(&mut cache).map_err(dr)?;
        launch()?;
    }
    end.record(st).map_err(dr)?;
    end.synchronize().map_err(dr)?;
    let estimate_ms = (start.elapsed_ms(&end).map_err(dr)? as f64 / 5.0).max(1e-6);
    let (warmup, repeat) = (((25.0 / estimate_ms) as usize).max(1), ((200.0 / estimate_ms) as usize).max(1));
    for _ in 0..warmup {
        launch()?;
    }
    let mut events = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        st.memset_zeros(&mut cache).map_err(dr)?;
        let (start, end) = (event()?, event()?);
        start.record(st).map_err(dr)?;
        launch()?;
        end.record(st).map_err(dr)?;
        events.push((start, end));
    }
    st.synchronize().map_err(dr)?;
    events.iter().map(|(s, e)| s.elapsed_ms(e).map(|t| t as f64)).collect::<Result<Vec<_>, _>>().map_err(dr)
}

/// "bm,bn,warps,stages" -> the fused backward `base` (bwd_fused or bwd_fused_atomic) with those tiles.
fn fused_variant(item: &str, base: &flashgen::BackwardSpecs) -> Result<flashgen::BackwardSpecs, String> {
    let f = list(item)?;
    if f.len() != 4 {
        return Err(format!("`{item}` must be bm,bn,warps,stages"));
    }
    let dkdv = KernelSpec::new(SpecParams { block_m: f[0], block_n: f[1], num_warps: f[2], num_stages: f[3], ..*base.dkdv.params() }).map_err(|e| e.to_string())?;
    Ok(flashgen::BackwardSpecs { dkdv, ..*base })
}

/// "bm,bn,warps,stages|bm,bn,warps,stages" -> the default backward specs with those dK/dV and dQ tiles.
fn backward_variant(item: &str, default: &flashgen::BackwardSpecs) -> Result<flashgen::BackwardSpecs, String> {
    let parts: Vec<&str> = item.split('|').collect();
    if parts.len() != 2 {
        return Err(format!("`{item}` must be dkdv|dq tiles: bm,bn,warps,stages|bm,bn,warps,stages"));
    }
    let tiles = |text: &str, base: &KernelSpec| -> Result<KernelSpec, String> {
        let f = list(text)?;
        if f.len() != 4 {
            return Err(format!("`{text}` must be bm,bn,warps,stages"));
        }
        KernelSpec::new(SpecParams { block_m: f[0], block_n: f[1], num_warps: f[2], num_stages: f[3], ..*base.params() }).map_err(|e| e.to_string())
    };
    let dq = default.dq.ok_or_else(|| format!("{} has no dQ kernel to vary", default.dkdv.name()))?;
    Ok(flashgen::BackwardSpecs { preprocess: default.preprocess, dkdv: tiles(parts[0], &default.dkdv)?, dq: Some(tiles(parts[1], &dq)?) })
}

/// One measured row, printed and written in anchor_bench.py's format.
struct Row<'a> {
    kind: &'static str,
    z: usize,
    h: usize,
    n: usize,
    d: usize,
    causal: bool,
    label: &'a str,
    spec: String,
}

impl Row<'_> {
    /// Print the JSON line (and write it), return the table line.
    fn emit(&self, timed: &Timed, timing: &str, json: &mut Option<&mut std::fs::File>) -> Result<String, String> {
        let Row { kind, z, h, n, d, causal, label, .. } = *self;
        let (ms, times) = (timed.ms, &timed.sorted);
        let tflops = flops(kind, z, h, n, d, causal) / ms / 1e9;
        let line = format!(
            "{{\"kind\": \"{kind}\", \"impl\": \"flashgen\", \"B\": {z}, \"H\": {h}, \"N\": {n}, \"D\": {d}, \"causal\": {causal}, \"dtype\": \"bf16\", \"ms\": {ms:.5}, \"tflops\": {tflops:.2}, \"config\": \"{label}\", \"spec\": \"{}\", \"timing\": \"{timing}\", \"p20_ms\": {:.5}, \"p80_ms\": {:.5}}}",
            self.spec, times[times.len() / 5], times[times.len() * 4 / 5]
        );
        println!("{line}");
        if let Some(f) = json.as_mut() {
            writeln!(f, "{line}").map_err(|e| e.to_string())?;
        }
        Ok(format!("{kind} flashgen D={d:3} N={n:5} causal={} {tflops:7.1}  {label}", causal as u8))
    }
}

pub fn run(a: &BenchArgs) -> Result<(), String> {
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("bench needs a GPU: {e}"))?, KernelCache::from_env());
    let gpu = &flash.gpu;
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let mut table = Vec::new();
    let mut rng = SplitMix(7);
    let masks = list(&a.causal)?;
    if masks.is_empty() || masks.iter().any(|&c| c > 1) {
        return Err(format!("--causal `{}`: give 0 (non-causal), 1 (causal) or 0,1", a.causal));
    }
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
                let mut random = || -> Result<Tensor, String> { tensor(&random_bf16(len, rng.next_u64())) };
                sets.push((random()?, random()?, random()?));
            }
            let mut o = tensor(&vec![0u16; len])?;
            let mut m = st.alloc_zeros::<f32>(z * h * n_us).map_err(dr)?;
            let mut json = json.as_mut();
            for causal in [false, true].into_iter().filter(|&c| masks.contains(&(c as u32))) {
                let problem = Problem::new(DType::Bf16, d, causal, n as usize);
                let planned = |options: PlanOptions| flashgen::plan(gpu.arch, &problem, &options, &NoTuning).map_err(|e| e.to_string());
                let family = |kind| flashgen::plan::backward_family(kind, gpu.arch, &problem).map_err(|e| e.to_string());
                let default = planned(PlanOptions::default())?;
                let default_fwd = default.forward;
                let mut specs = vec![("default".to_string(), default_fwd)];
                if a.tuned {
                    // the config attention_forward would pick for this shape: the stored winner, if any
                    let spec = flash.spec_for(&sets[0].0, causal).map_err(|e| e.to_string())?;
                    if spec != specs[0].1 {
                        specs.push(("tuned".to_string(), spec));
                    } else {
                        println!("tuned config for D={d} N={n} causal={causal} is the default");
                    }
                }
                if a.mma_sync && gpu.arch.has_wgmma() {
                    specs.push(("mma.sync".to_string(), planned(PlanOptions { wgmma: false, ..PlanOptions::default() })?.forward));
                }
                for cfg in a.configs.iter().flat_map(|c| c.split(';')).filter(|c| !c.trim().is_empty()) {
                    let (kind, tiles) = crate::configs::config_kind(cfg, flashgen::KernelKind::Fwd);
                    let (tiles, schedule) = crate::configs::split_schedule(tiles)?;
                    let f = list(tiles)?;
                    if f.len() != 4 {
                        return Err(format!("config `{cfg}` must be [w:|ws:|wsp:]bm,bn,warps,stages[@switch=on|off,...]"));
                    }
                    let p = SpecParams { kind, dtype: DType::Bf16, head_dim: d, block_m: f[0], block_n: f[1], stage: if causal { 3 } else { 1 }, num_warps: f[2], num_stages: f[3], arch: gpu.arch };
                    match KernelSpec::with_schedule(p, schedule) {
                        Ok(s) => specs.push((cfg.to_string(), s)),
                        Err(e) => println!("skip {cfg}: {e}"),
                    }
                }
                for (label, spec) in specs.into_iter().filter(|_| !a.backward_only) {
                    let mut turn = 0usize;
                    let times = time_launches(gpu, a, || {
                        let (q, k, v) = &sets[turn % INPUT_SETS];
                        turn += 1;
                        flash.forward_into(&spec, q, k, v, None, &mut o, &mut m).map_err(|e| e.to_string())
                    })?;
                    let row = Row { kind: "fwd", z, h, n: n_us, d: d_us, causal, label: &label, spec: spec.name() };
                    table.push(row.emit(&times, &a.timing, &mut json)?);
                }
                if a.backward {
                    // each input set's own forward O and M, and its own dO, rotated like the forward's inputs
                    let mut saved = Vec::new();
                    for (q, k, v) in &sets {
                        let out = flash.attention_forward_spec(&default_fwd, q, k, v, None).map_err(|e| e.to_string())?;
                        let d_o = tensor(&random_bf16(len, rng.next_u64()))?;
                        saved.push((out, d_o));
                    }
                    let mut g = Gradients { dq: tensor(&vec![0u16; len])?, dk: tensor(&vec![0u16; len])?, dv: tensor(&vec![0u16; len])? };
                    use flashgen::KernelKind::*;
                    let mut variants = vec![("default".to_string(), default.backward)];
                    let mut chained = Vec::new();
                    if a.mma_sync && gpu.arch.has_wgmma() {
                        variants.push(("mma.sync".to_string(), family(BwdDkdv)?));
                    }
                    if a.fused && gpu.arch.has_wgmma() {
                        variants.push(("split".to_string(), family(BwdDkdvWgmma)?));
                        variants.push(("fused".to_string(), family(BwdFused)?));
                        variants.push(("fused-atomic".to_string(), family(BwdFusedAtomic)?));
                        if causal {
                            variants.push(("fused-up".to_string(), family(BwdFusedUp)?));
                        }
                        for c in a.dq_chains.as_deref().map(list).transpose()?.unwrap_or_default() {
                            chained.push((format!("fused-c{c}"), c));
                            variants.push((format!("fused-c{c}"), family(BwdFused)?));
                        }
                    }
                    if a.tuned {
                        // the kernels attention_backward would pick for this shape: the stored winners, if any
                        let tuned = flash.backward_specs(&sets[0].0, causal).map_err(|e| e.to_string())?;
                        if tuned != variants[0].1 {
                            variants.push(("tuned".to_string(), tuned));
                        } else {
                            println!("tuned backward for D={d} N={n} causal={causal} is the default");
                        }
                    }
                    for item in a.bwd_configs.iter().flat_map(|c| c.split(';')).filter(|c| !c.trim().is_empty()) {
                        let variant = if let Some(tiles) = item.strip_prefix("f:").or_else(|| item.strip_prefix("fa:")) {
                            family(if item.starts_with("fa:") { BwdFusedAtomic } else { BwdFused }).and_then(|base| fused_variant(tiles, &base))
                        } else {
                            let base = if item.starts_with("w:") { family(BwdDkdvWgmma)? } else { variants[0].1 };
                            backward_variant(item.trim_start_matches("w:"), &base)
                        };
                        match variant {
                            Ok(v) => variants.push((format!("bwd:{item}"), v)),
                            Err(e) => println!("skip backward {item} at D={d}: {e}"),
                        }
                    }
                    let chains_default = flash.dq_chains();
                    for (label, specs) in variants {
                        let chains = chained.iter().find(|(l, _)| *l == label).map_or(chains_default, |&(_, c)| Some(c));
                        flash.set_dq_chains(chains).map_err(|e| e.to_string())?;
                        let mut turn = 0usize;
                        let times = time_launches(gpu, a, || {
                            let (q, k, v) = &sets[turn % INPUT_SETS];
                            let (out, d_o) = &saved[turn % INPUT_SETS];
                            turn += 1;
                            flash.backward_into(&specs, q, k, v, &out.o, RowStats::M(&out.m), d_o, None, &mut g).map_err(|e| e.to_string())
                        })?;
                        let names = specs.kernels().iter().map(|s| s.name()).collect::<Vec<_>>().join("+");
                        let row = Row { kind: "bwd", z, h, n: n_us, d: d_us, causal, label: &label, spec: names };
                        table.push(row.emit(&times, &a.timing, &mut json)?);
                    }
                }
            }
        }
    }
    println!("\n=== flashgen forward{} (TFLOP/s) ===", if a.backward { " and backward" } else { "" });
    for row in table {
        println!("{row}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::random_bf16;

    #[test]
    fn random_inputs_depend_on_the_seed_only_and_are_standard_normal() {
        // more than one chunk, and a ragged last one
        let len = (1 << 20) * 3 + 12345;
        let a = random_bf16(len, 42);
        assert_eq!(a, random_bf16(len, 42), "same seed, same values, whatever the threads");
        assert_ne!(a[..1000], random_bf16(len, 43)[..1000]);
        // chunks are not copies of each other
        assert_ne!(a[..1000], a[1 << 20..(1 << 20) + 1000]);
        let x: Vec<f64> = a.iter().map(|&b| half::bf16::from_bits(b).to_f64()).collect();
        let mean = x.iter().sum::<f64>() / len as f64;
        let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64;
        assert!(mean.abs() < 0.01 && (var - 1.0).abs() < 0.01, "mean {mean}, variance {var}");
    }
}
