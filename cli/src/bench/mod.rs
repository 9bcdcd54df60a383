//! `flashgen bench`: forward (and with --backward, backward) TFLOP/s on the GPU, in the anchors' shapes (bf16,
//! 16384 tokens per batch, H·D = 2048), fa4_bench.py's gqa shapes (--heads, --kv-heads, --batch) or its
//! varlen batch (--varlen SEED), printed as JSON lines in fa4_bench.py's format and as a table.

mod decode;
pub mod ring;
mod timing;
mod workload;

use clap::Args;
use flashgen::numeric::SplitMix;
use flashgen::plan::NoTuning;
use flashgen::{BackwardSpecs, DType, KernelSpec, PlanOptions, SpecParams};
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::{cudarc, BackwardCall, BufferView, BufferViewMut, CausalAlign, Flash, ForwardCall, Gpu, KernelCache, StatsIn, StatsOut, TensorView, TensorViewMut, VarLen};
use std::io::Write;
use timing::{time_launches, Timed};
use workload::Workload;

#[derive(Args)]
pub struct BenchArgs {
    /// Head dims, comma-separated.
    #[arg(long, default_value = "64,128")]
    d: String,
    /// V's head dim on every row (fa4_bench.py's hdim mode: 128 beside D 192); default: each row's D.
    #[arg(long)]
    dv: Option<usize>,
    /// Sequence lengths, comma-separated.
    #[arg(long, default_value = "1024,4096,16384")]
    n: String,
    /// Query heads: time fa4_bench.py's gqa shapes (B = --batch, H = --heads, H_kv = --kv-heads) instead of
    /// the anchors' table (B = 16384 / N, H = 2048 / D).
    #[arg(long)]
    heads: Option<usize>,
    /// K/V heads (default: --heads; with --varlen, the heads).
    #[arg(long)]
    kv_heads: Option<usize>,
    /// Batch of the gqa shapes (default 16384 / N).
    #[arg(long)]
    batch: Option<usize>,
    /// Time fa4_bench.py's varlen batch for this seed (its lengths 256..4096, 16384 tokens packed; H =
    /// --heads, default 16) instead of the table; --n is ignored.
    #[arg(long)]
    varlen: Option<u64>,
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
    /// (dK/dV: BLOCK_M = streamed query rows, BLOCK_N = owned key rows), each optionally with schedule
    /// switches after '@' ("64,64,4,2@programs_per_sm=3"); "w:dkdv|dq" varies the wgmma kernels;
    /// "f:bm,bn,warps,stages" the fused backward, "fa:..." the fused one with atomics, "fu:..." (causal)
    /// bwd_fused_up (e.g. "fu:64,128,12,2@fold_key_blocks=off").
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
    /// Time the KV-cache decode (issue 33) in fa4_bench.py's decode shapes instead (rows kind "decode", and
    /// a "decode_latency" row at batch 1, cache 8192); --heads and --kv-heads default to 32 and 8.
    #[arg(long)]
    decode: bool,
    /// Decode batches, comma-separated.
    #[arg(long, default_value = "1,16,64")]
    decode_batch: String,
    /// Decode cache lengths, comma-separated (multiples of --page).
    #[arg(long, default_value = "8192,32768")]
    decode_nk: String,
    /// Decode head dims, comma-separated.
    #[arg(long, default_value = "128")]
    decode_d: String,
    /// Tokens per page of the paged decode rows.
    #[arg(long, default_value_t = 256)]
    page: usize,
    /// Decode tiles to time besides the default, "bn,warps,stages;..." (labelled by them).
    #[arg(long)]
    decode_configs: Option<String>,
    /// Schedule overrides to time besides the default decode kernel, "switch=on|off,..." (`tma_kv=on`),
    /// in the decode rows (labelled by them) and in a second latency row.
    #[arg(long)]
    decode_schedule: Option<String>,
    /// Split counts to time besides the heuristic's, comma-separated (labelled "splits=N").
    #[arg(long)]
    decode_splits: Option<String>,
    /// Where a split decode's partials merge, for every decode row and the latency row: the plan's choice,
    /// `in_kernel` (decode's last split of a row tile) or `combine` (decode_combine, a second launch).
    #[arg(long)]
    decode_merge: Option<String>,
    /// Skip the decode latency row.
    #[arg(long)]
    no_latency: bool,
    /// A sliding window of this many keys left of the diagonal (fa4_bench.py's window mode: 1024 with
    /// --heads 16 --batch 1 --d 128 --n 16384 --causal 1); rows carry window_left and window_right, and their
    /// FLOPs are the visible band's.
    #[arg(long)]
    window_left: Option<usize>,
    /// Softcap (fa4_bench.py's window mode: 30); rows carry softcap.
    #[arg(long)]
    softcap: Option<f32>,
    /// The table's rows in flash-attn's layout, (B, N, H, D), as Python callers and the anchors hold their
    /// tensors (the table's own: (B, H, N, D); the --heads and --varlen rows are (B, N, H, D) already).
    #[arg(long)]
    bshd: bool,
    /// Forward rows with score_mod / mask_mod besides the default ones (labelled mods:NAME): `alibi` (the
    /// score_mod score + slope[h]·(kv_idx − q_idx), causal or not), `causal-mask` (causal written as the
    /// mask_mod kv_idx <= q_idx on a non-causal call; on the causal rows, to compare with the built-in
    /// causal), comma-separated.
    #[arg(long)]
    mods: Option<String>,
}

/// A bench's modifiers by name (`--mods`): the call's modifiers and whether the call itself is causal, for
/// a row of causality `causal`; None where the name has no row of that causality.
/// A bench row's modifiers and whether its call is causal (`bench_modifiers`).
type BenchModifiers = (Option<flashgen::mods::ScoreMod>, Option<flashgen::mods::MaskMod>, bool);

fn bench_modifiers(name: &str, causal: bool) -> Result<Option<BenchModifiers>, String> {
    use flashgen::mods::builtins;
    let e = |x: flashgen::mods::ModError| x.to_string();
    Ok(match name {
        "alibi" => Some((Some(builtins::alibi("slope").map_err(e)?), None, causal)),
        "causal-mask" => causal.then_some((None, Some(builtins::causal(0).map_err(e)?), false)),
        other => return Err(format!("--mods `{other}` is unknown: use alibi or causal-mask")),
    })
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

/// One measured row, printed and written in fa4_bench.py's format (its shape keys, `Workload::json_keys`)
/// with ours added: the config, the kernels, the timer, the 20th and 80th percentiles.
struct Row<'a> {
    kind: &'static str,
    w: &'a Workload,
    causal: bool,
    label: &'a str,
    spec: String,
}

impl Row<'_> {
    /// Print the JSON line (and write it), return the table line.
    fn emit(&self, timed: &Timed, timing: &str, json: &mut Option<&mut std::fs::File>) -> Result<String, String> {
        let Row { kind, w, causal, label, .. } = *self;
        let (ms, times) = (timed.ms, &timed.sorted);
        let tflops = w.flops(kind, causal) / ms / 1e9;
        let line = format!(
            "{{\"kind\": \"{kind}\", \"impl\": \"flashgen\", {}, \"dtype\": \"bf16\", \"ms\": {ms:.5}, \"tflops\": {tflops:.2}, \"config\": \"{label}\", \"spec\": \"{}\", \"timing\": \"{timing}\", \"p20_ms\": {:.5}, \"p80_ms\": {:.5}}}",
            w.json_keys(causal),
            self.spec,
            times[times.len() / 5],
            times[times.len() * 4 / 5]
        );
        println!("{line}");
        if let Some(f) = json.as_mut() {
            writeln!(f, "{line}").map_err(|e| e.to_string())?;
        }
        let gqa = if w.hkv != w.h { format!(" H={}/{}", w.h, w.hkv) } else { String::new() };
        let packed = if w.varlen.is_some() { " varlen" } else { "" };
        Ok(format!("{kind} flashgen D={:3} N={:5}{gqa}{packed} causal={} {tflops:7.1}  {label}", w.d, w.n, causal as u8))
    }
}

/// One forward call of a bench row: input set `set` into O and M.
fn forward_call<'a>(
    set: &'a [CudaSlice<u16>; 4],
    (o, m): (&'a mut CudaSlice<u16>, &'a mut CudaSlice<f32>),
    lay: &workload::Layouts,
    causal: bool,
    varlen: Option<VarLen<'a>>,
    (window, softcap): (flashgen_runtime::Window, Option<f32>),
    modifiers: Option<flashgen_runtime::CallModifiers<'a>>,
) -> Result<ForwardCall<'a>, String> {
    let le = |x: flashgen_runtime::LayoutError| x.to_string();
    Ok(ForwardCall {
        q: TensorView::of_slice("Q", &set[0], 0, DType::Bf16, lay.q).map_err(le)?,
        k: TensorView::of_slice("K", &set[1], 0, DType::Bf16, lay.k).map_err(le)?,
        v: TensorView::of_slice("V", &set[2], 0, DType::Bf16, lay.v).map_err(le)?,
        o: TensorViewMut::of_slice("O", o, 0, DType::Bf16, lay.o).map_err(le)?,
        stats: StatsOut::M(BufferViewMut::of(m)),
        causal,
        align: CausalAlign::BottomRight,
        sm_scale: None,
        varlen,
        window,
        softcap,
        modifiers,
    })
}

/// One backward call of a bench row: input set `set`, its forward's O and M, into `grads`.
#[allow(clippy::too_many_arguments)]
fn backward_call<'a>(
    set: &'a [CudaSlice<u16>; 4],
    (o, m): (&'a CudaSlice<u16>, &'a CudaSlice<f32>),
    grads: &'a mut [CudaSlice<u16>; 3],
    lay: &workload::Layouts,
    causal: bool,
    varlen: Option<VarLen<'a>>,
    (window, softcap): (flashgen_runtime::Window, Option<f32>),
    modifiers: Option<flashgen_runtime::CallModifiers<'a>>,
) -> Result<BackwardCall<'a>, String> {
    let le = |x: flashgen_runtime::LayoutError| x.to_string();
    let [gq, gk, gv] = grads;
    Ok(BackwardCall {
        q: TensorView::of_slice("Q", &set[0], 0, DType::Bf16, lay.q).map_err(le)?,
        k: TensorView::of_slice("K", &set[1], 0, DType::Bf16, lay.k).map_err(le)?,
        v: TensorView::of_slice("V", &set[2], 0, DType::Bf16, lay.v).map_err(le)?,
        o: TensorView::of_slice("O", o, 0, DType::Bf16, lay.o).map_err(le)?,
        d_o: TensorView::of_slice("dO", &set[3], 0, DType::Bf16, lay.o).map_err(le)?,
        stats: StatsIn::M(BufferView::of(m)),
        dq: TensorViewMut::of_slice("dQ", gq, 0, DType::Bf16, lay.q).map_err(le)?,
        dk: TensorViewMut::of_slice("dK", gk, 0, DType::Bf16, lay.k).map_err(le)?,
        dv: TensorViewMut::of_slice("dV", gv, 0, DType::Bf16, lay.v).map_err(le)?,
        causal,
        align: CausalAlign::BottomRight,
        sm_scale: None,
        varlen,
        window,
        softcap,
        modifiers,
    })
}

/// The shapes the flags name: the anchors' table, fa4_bench.py's gqa shapes, or its varlen batch.
fn workloads(a: &BenchArgs) -> Result<Vec<Workload>, String> {
    let (ds, ns) = (list(&a.d)?, list(&a.n)?);
    let mut out = Vec::new();
    for &d in &ds {
        let d = d as usize;
        if let Some(seed) = a.varlen {
            let h = a.heads.unwrap_or(16);
            out.push(Workload::packed(seed, crate::fa4_lengths::lengths(seed), h, a.kv_heads.unwrap_or(h), d));
            continue;
        }
        for &n in &ns {
            let n = n as usize;
            out.push(match a.heads {
                Some(h) => Workload::grouped(a.batch.unwrap_or(16384 / n).max(1), h, a.kv_heads.unwrap_or(h), n, d),
                None => Workload::table(n, d),
            });
        }
    }
    for w in &mut out {
        (w.window_left, w.softcap) = (a.window_left, a.softcap);
        w.bshd |= a.bshd;
        w.dv = a.dv.unwrap_or(w.d);
        // (fa4_bench.py's window rows carry no HKV: only its gqa rows do)
        if w.window_left.is_some() || w.softcap.is_some() {
            w.gqa_key = w.hkv != w.h;
        }
    }
    Ok(out)
}

/// A workload's device tensors: INPUT_SETS (Q, K, V, dO) sets, the outputs, and the packed offsets.
struct Buffers {
    sets: Vec<[CudaSlice<u16>; 4]>,
    o: CudaSlice<u16>,
    m: CudaSlice<f32>,
    grads: [CudaSlice<u16>; 3],
    cu: Option<(CudaSlice<i32>, CudaSlice<i32>, Vec<i32>)>,
}

impl Buffers {
    fn new(gpu: &Gpu, w: &Workload, rng: &mut SplitMix) -> Result<Buffers, String> {
        let dr = |x: cudarc::driver::DriverError| x.to_string();
        let lay = w.layouts();
        let st = &gpu.stream;
        let random = |len: usize, seed: u64| st.clone_htod(&random_bf16(len, seed)).map_err(dr);
        let mut sets = Vec::new();
        for _ in 0..INPUT_SETS {
            sets.push([random(lay.q.extent(), rng.next_u64())?, random(lay.k.extent(), rng.next_u64())?, random(lay.v.extent(), rng.next_u64())?, random(lay.o.extent(), rng.next_u64())?]);
        }
        let zeros = |n: usize| st.alloc_zeros::<u16>(n).map_err(dr);
        let cu = match w.cu_seqlens() {
            Some(host) => Some((st.clone_htod(&host).map_err(dr)?, st.clone_htod(&host).map_err(dr)?, host)),
            None => None,
        };
        Ok(Buffers { sets, o: zeros(lay.o.extent())?, m: st.alloc_zeros::<f32>(w.stat_rows().max(1)).map_err(dr)?, grads: [zeros(lay.q.extent())?, zeros(lay.k.extent())?, zeros(lay.v.extent())?], cu })
    }

}

/// The packed offsets (`Buffers::cu`) as the calls take them.
fn varlen_of<'b>(cu: &'b Option<(CudaSlice<i32>, CudaSlice<i32>, Vec<i32>)>, w: &Workload) -> Option<VarLen<'b>> {
    let (cq, ck, host) = cu.as_ref()?;
    let longest = w.varlen.as_ref().map_or(0, |(_, lens)| lens.iter().copied().max().unwrap_or(0));
    Some(VarLen { cu_seqlens_q: BufferView::of(cq), cu_seqlens_k: BufferView::of(ck), max_seqlen_q: longest, max_seqlen_k: longest, host_cu_seqlens_q: Some(host), host_cu_seqlens_k: Some(host) })
}

pub fn run(a: &BenchArgs) -> Result<(), String> {
    if a.decode {
        return decode::run(a);
    }
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("bench needs a GPU: {e}"))?, KernelCache::from_env());
    let gpu = &flash.gpu;
    let rt = |x: flashgen_runtime::RuntimeError| x.to_string();
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let mut table = Vec::new();
    let mut rng = SplitMix(7);
    let masks = list(&a.causal)?;
    if masks.is_empty() || masks.iter().any(|&c| c > 1) {
        return Err(format!("--causal `{}`: give 0 (non-causal), 1 (causal) or 0,1", a.causal));
    }
    let stream = flash.own_stream();
    for w in workloads(a)? {
        let d = w.d as u32;
        let lay = w.layouts();
        // INPUT_SETS independent input sets of random normals, rotated launch by launch, so a set that fits
        // in L2 cannot flatter the small sizes
        let Buffers { sets, mut o, mut m, mut grads, cu } = Buffers::new(gpu, &w, &mut rng)?;
        let mut json = json.as_mut();
        for causal in [false, true].into_iter().filter(|&c| masks.contains(&(c as u32))) {
            let problem = w.problem(causal);
            let features = problem.features();
            let planned = |options: PlanOptions| flashgen::plan(gpu.arch, &problem, &options, &NoTuning).map_err(|e| e.to_string());
            let family = |kind| flashgen::plan::backward_family(kind, gpu.arch, &problem).and_then(|b| Ok(BackwardSpecs { preprocess: flashgen::plan::with_features(&b.preprocess, features)?, dkdv: flashgen::plan::with_features(&b.dkdv, features)?, dq: b.dq.map(|s| flashgen::plan::with_features(&s, features)).transpose()? })).map_err(|e| e.to_string());
            let default = planned(PlanOptions::default())?;
            let default_fwd = default.forward;
            let mut specs = vec![("default".to_string(), default_fwd)];
            if a.tuned {
                // the kernels a call would pick for this shape: the stored winners, if any
                let tuned = flash.plan_problem(&problem, w.b * w.h).map_err(rt)?.forward;
                if tuned != specs[0].1 {
                    specs.push(("tuned".to_string(), tuned));
                } else {
                    println!("tuned config for D={d} N={} causal={causal} is the default", w.n);
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
                let p = SpecParams { kind, dtype: DType::Bf16, head_dim: d, block_m: f[0], block_n: f[1], stage: if problem.causal { 3 } else { 1 }, num_warps: f[2], num_stages: f[3], arch: gpu.arch };
                match KernelSpec::with_features(p, schedule, features) {
                    Ok(s) => specs.push((cfg.to_string(), s)),
                    Err(e) => println!("skip {cfg}: {e}"),
                }
            }
            let (window, softcap) = (w.mask(causal).window, w.softcap);
            let forward = |spec: &KernelSpec, set: &[CudaSlice<u16>; 4], o: &mut CudaSlice<u16>, m: &mut CudaSlice<f32>, varlen: Option<VarLen<'_>>| -> Result<(), String> {
                let call = forward_call(set, (o, m), &lay, causal, varlen, (window, softcap), None)?;
                flash.forward_with(spec, call, stream).map_err(rt)
            };
            for (label, spec) in specs.into_iter().filter(|_| !a.backward_only) {
                let mut turn = 0usize;
                let times = time_launches(gpu, a, || {
                    let set = &sets[turn % INPUT_SETS];
                    turn += 1;
                    forward(&spec, set, &mut o, &mut m, varlen_of(&cu, &w))
                })?;
                let row = Row { kind: "fwd", w: &w, causal, label: &label, spec: spec.name() };
                table.push(row.emit(&times, &a.timing, &mut json)?);
            }
            if a.backward {
                // each input set's own forward O and M, rotated like the forward's inputs
                let mut saved = Vec::new();
                for set in &sets {
                    let mut o = gpu.stream.alloc_zeros::<u16>(lay.o.extent()).map_err(|e| e.to_string())?;
                    let mut m = gpu.stream.alloc_zeros::<f32>(w.stat_rows().max(1)).map_err(|e| e.to_string())?;
                    forward(&default_fwd, set, &mut o, &mut m, varlen_of(&cu, &w))?;
                    saved.push((o, m));
                }
                use flashgen::KernelKind::*;
                let mut variants = vec![("default".to_string(), default.backward)];
                let mut chained = Vec::new();
                if a.mma_sync && gpu.arch.has_wgmma() {
                    variants.push(("mma.sync".to_string(), family(BwdDkdv)?));
                }
                if a.fused && gpu.arch.has_wgmma() {
                    // (the kinds that cannot take the problem's features, a window's or softcap's, are left out)
                    let mut kinds = vec![("split", BwdDkdvWgmma), ("fused", BwdFused), ("fused-atomic", BwdFusedAtomic)];
                    if causal {
                        kinds.push(("fused-up", BwdFusedUp));
                    }
                    for (label, kind) in kinds {
                        match family(kind) {
                            Ok(specs) => variants.push((label.to_string(), specs)),
                            Err(e) if problem.modified() => println!("skip {label}: {e}"),
                            Err(e) => return Err(e),
                        }
                    }
                    for c in a.dq_chains.as_deref().map(list).transpose()?.unwrap_or_default() {
                        chained.push((format!("fused-c{c}"), c));
                        variants.push((format!("fused-c{c}"), family(BwdFused)?));
                    }
                }
                if a.tuned {
                    let tuned = flash.plan_problem(&problem, w.b * w.h).map_err(rt)?.backward;
                    if tuned != variants[0].1 {
                        variants.push(("tuned".to_string(), tuned));
                    } else {
                        println!("tuned backward for D={d} N={} causal={causal} is the default", w.n);
                    }
                }
                for item in a.bwd_configs.iter().flat_map(|c| c.split(';')).filter(|c| !c.trim().is_empty()) {
                    let variant = crate::configs::backward_config(item, variants[0].1, &family);
                    match variant {
                        Ok(v) => variants.push((format!("bwd:{item}"), v)),
                        Err(e) => println!("skip backward {item} at D={d}: {e}"),
                    }
                }
                let chains_default = flash.dq_chains();
                for (label, specs) in variants {
                    let chains = chained.iter().find(|(l, _)| *l == label).map_or(chains_default, |&(_, c)| Some(c));
                    flash.set_dq_chains(chains).map_err(rt)?;
                    let mut turn = 0usize;
                    let times = time_launches(gpu, a, || {
                        let (set, (o, m)) = (&sets[turn % INPUT_SETS], &saved[turn % INPUT_SETS]);
                        turn += 1;
                        let call = backward_call(set, (o, m), &mut grads, &lay, causal, varlen_of(&cu, &w), (window, softcap), None)?;
                        flash.backward_with(&specs, call, stream).map_err(rt)
                    })?;
                    let names = specs.kernels().iter().map(|s| s.name()).collect::<Vec<_>>().join("+");
                    let row = Row { kind: "bwd", w: &w, causal, label: &label, spec: names };
                    table.push(row.emit(&times, &a.timing, &mut json)?);
                }
            }
            for name in a.mods.iter().flat_map(|m| m.split(',')).map(str::trim).filter(|m| !m.is_empty()) {
                let Some((score, mask, call_causal)) = bench_modifiers(name, causal)? else { continue };
                // ALiBi's slopes, 2^(-8(h+1)/H) (Press et al.), one per query head
                let slopes: Vec<f32> = (0..w.h).map(|h| 2f32.powf(-8.0 * (h + 1) as f32 / w.h as f32)).collect();
                let slopes = gpu.stream.clone_htod(&slopes).map_err(|e| e.to_string())?;
                let modifiers = || {
                    let tensors = if score.is_some() { vec![("slope", flashgen_runtime::ModTensor::F32(BufferView::of(&slopes)))] } else { vec![] };
                    Some(flashgen_runtime::CallModifiers { score: score.clone(), mask: mask.clone(), tensors })
                };
                let label = format!("mods:{name}");
                let forward_mods = |set: &[CudaSlice<u16>; 4], o: &mut CudaSlice<u16>, m: &mut CudaSlice<f32>, spec_name: &mut String| -> Result<(), String> {
                    let call = forward_call(set, (o, m), &lay, call_causal, varlen_of(&cu, &w), (window, softcap), modifiers())?;
                    if spec_name.is_empty() {
                        *spec_name = flash.forward_kernel(&call).map_err(rt)?.name();
                    }
                    flash.forward(call, stream).map_err(rt)
                };
                if !a.backward_only {
                    let (mut turn, mut spec_name) = (0usize, String::new());
                    let times = time_launches(gpu, a, || {
                        let set = &sets[turn % INPUT_SETS];
                        turn += 1;
                        forward_mods(set, &mut o, &mut m, &mut spec_name)
                    })?;
                    table.push(Row { kind: "fwd", w: &w, causal, label: &label, spec: spec_name }.emit(&times, &a.timing, &mut json)?);
                }
                if a.backward {
                    let mut saved = Vec::new();
                    for set in &sets {
                        let mut o = gpu.stream.alloc_zeros::<u16>(lay.o.extent()).map_err(|e| e.to_string())?;
                        let mut m = gpu.stream.alloc_zeros::<f32>(w.stat_rows().max(1)).map_err(|e| e.to_string())?;
                        forward_mods(set, &mut o, &mut m, &mut String::from("-"))?;
                        saved.push((o, m));
                    }
                    let (mut turn, mut spec_name) = (0usize, String::new());
                    let times = time_launches(gpu, a, || {
                        let (set, (o, m)) = (&sets[turn % INPUT_SETS], &saved[turn % INPUT_SETS]);
                        turn += 1;
                        let call = backward_call(set, (o, m), &mut grads, &lay, call_causal, varlen_of(&cu, &w), (window, softcap), modifiers())?;
                        if spec_name.is_empty() {
                            spec_name = flash.backward_plan(&call).map_err(rt)?.backward.kernels().iter().map(|s| s.name()).collect::<Vec<_>>().join("+");
                        }
                        flash.backward(call, stream).map_err(rt)
                    })?;
                    table.push(Row { kind: "bwd", w: &w, causal, label: &label, spec: spec_name }.emit(&times, &a.timing, &mut json)?);
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
