//! `flashgen bench --decode`: the KV-cache decode (issue 33) in fa4_bench.py's decode shapes — one query
//! per sequence, 32 query heads on 8 K/V heads, D 128, B 1/16/64, cache 8192/32768, contiguous and paged
//! (pages of 256 in a random order, as fa4_bench.py's randperm table) — rows kind "decode" with its keys
//! (B, H, HKV, N, NK, D, causal, paged, page) and ms, gb_s (K and V bytes read / time, its count), plus a
//! latency row (batch 1, cache 8192, one token appended): the step's time by the bench's timer, back to back
//! on a stream (events around 1000 calls: what a serving loop sees, host overhead included when it is
//! the bound), replayed from a CUDA graph of the step (decode + combine), replayed from a graph of 8 steps
//! on 8 caches (a model's layers: each step's cache out of L2, L2 clean), and the host's enqueue time.

use super::timing::time_launches;
use super::{list, BenchArgs};
use cudarc::driver::sys::{CUevent_flags, CUgraphInstantiate_flags, CUstreamCaptureMode};
use flashgen::numeric::SplitMix;
use flashgen::plan::{DecodePlan, SplitMerge};
use flashgen::{DType, KernelSpec, SpecParams};
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::{cudarc, BlockTable, BufferView, BufferViewMut, Flash, Gpu, KernelCache, KvCacheCall, Layout, RuntimeError, Stream, TensorView, TensorViewMut};
use std::io::Write;

/// Device buffers of one (B, NK) shape; the paged variant views the same cache memory as a pool of pages
/// (fa4_bench.py reshapes its cache the same way) with a permuted table.
struct Buffers {
    q: CudaSlice<u16>,
    k: CudaSlice<u16>,
    v: CudaSlice<u16>,
    k_new: CudaSlice<u16>,
    v_new: CudaSlice<u16>,
    o: CudaSlice<u16>,
    lse: CudaSlice<f32>,
    lens: CudaSlice<i32>,
    lens_minus_one: CudaSlice<i32>,
    table: CudaSlice<i32>,
    host_table: Vec<i32>,
}

/// `len` random normal bf16 values on the device: a 64 MB random block repeated (the values do not matter
/// for the time; generating 4 G values on the host would).
fn random_device(gpu: &Gpu, len: usize, seed: u64) -> Result<CudaSlice<u16>, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let block = super::random_bf16(len.min(32 << 20), seed);
    let mut out = gpu.stream.alloc_zeros::<u16>(len.max(1)).map_err(dr)?;
    let mut at = 0;
    while at < len {
        let n = block.len().min(len - at);
        let mut dst = out.slice_mut(at..at + n);
        gpu.stream.memcpy_htod(&block[..n], &mut dst).map_err(dr)?;
        at += n;
    }
    Ok(out)
}

struct Shape {
    b: usize,
    h: usize,
    hkv: usize,
    nk: usize,
    d: usize,
    page: usize,
}

impl Buffers {
    fn new(gpu: &Gpu, s: &Shape, rng: &mut SplitMix) -> Result<Buffers, String> {
        let dr = |x: cudarc::driver::DriverError| x.to_string();
        let st = &gpu.stream;
        let cache = s.b * s.nk * s.hkv * s.d;
        let pages = s.b * s.nk / s.page;
        let mut perm: Vec<i32> = (0..pages as i32).collect();
        for i in (1..pages).rev() {
            perm.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        Ok(Buffers {
            q: random_device(gpu, s.b * s.h * s.d, rng.next_u64())?,
            k: random_device(gpu, cache, rng.next_u64())?,
            v: random_device(gpu, cache, rng.next_u64())?,
            k_new: random_device(gpu, s.b * s.hkv * s.d, rng.next_u64())?,
            v_new: random_device(gpu, s.b * s.hkv * s.d, rng.next_u64())?,
            o: st.alloc_zeros::<u16>(s.b * s.h * s.d).map_err(dr)?,
            lse: st.alloc_zeros::<f32>(s.b * s.h).map_err(dr)?,
            lens: st.clone_htod(&vec![s.nk as i32; s.b]).map_err(dr)?,
            lens_minus_one: st.clone_htod(&vec![s.nk as i32 - 1; s.b]).map_err(dr)?,
            table: st.clone_htod(&perm).map_err(dr)?,
            host_table: perm,
        })
    }

    /// One call: contiguous or paged, with or without one appended token (then the cache holds NK − 1).
    fn call<'a>(&'a mut self, s: &Shape, paged: bool, append: bool, splits: Option<usize>) -> Result<KvCacheCall<'a>, String> {
        let le = |x: flashgen_runtime::LayoutError| x.to_string();
        let cache = if paged { Layout::bshd(s.b * s.nk / s.page, s.hkv, s.page, s.d) } else { Layout::bshd(s.b, s.hkv, s.nk, s.d) };
        let new = Layout::bshd(s.b, s.hkv, 1, s.d);
        Ok(KvCacheCall {
            q: TensorView::of_slice("q", &self.q, 0, DType::Bf16, Layout::bshd(s.b, s.h, 1, s.d)).map_err(le)?,
            k_cache: TensorViewMut::of_slice("k_cache", &mut self.k, 0, DType::Bf16, cache).map_err(le)?,
            v_cache: TensorViewMut::of_slice("v_cache", &mut self.v, 0, DType::Bf16, cache).map_err(le)?,
            cache_seqlens: BufferView::of(if append { &self.lens_minus_one } else { &self.lens }),
            host_cache_seqlens: None,
            block_table: paged.then(|| BlockTable { table: BufferView::of(&self.table), max_pages: s.nk / s.page, host: None }),
            k_new: if append { Some(TensorView::of_slice("k_new", &self.k_new, 0, DType::Bf16, new).map_err(le)?) } else { None },
            v_new: if append { Some(TensorView::of_slice("v_new", &self.v_new, 0, DType::Bf16, new).map_err(le)?) } else { None },
            o: TensorViewMut::of_slice("o", &mut self.o, 0, DType::Bf16, Layout::bshd(s.b, s.h, 1, s.d)).map_err(le)?,
            lse: Some(BufferViewMut::of(&mut self.lse)),
            causal: false,
            window: flashgen_runtime::Window::UNBOUNDED,
            softcap: None,
            sm_scale: None,
            num_splits: splits,
        })
    }
}

/// `--decode-merge`: the plan's merge, or the one the flag names.
fn merge_of(a: &BenchArgs, plan: DecodePlan) -> Result<DecodePlan, String> {
    let merge = match a.decode_merge.as_deref() {
        None => plan.merge,
        Some("in_kernel") => SplitMerge::InKernel,
        Some("combine") => SplitMerge::Combine,
        Some(m) => return Err(format!("--decode-merge {m}: use in_kernel or combine")),
    };
    Ok(DecodePlan { merge, ..plan })
}

/// `--decode-schedule`, parsed.
fn schedule_of(a: &BenchArgs) -> Result<Option<flashgen::ScheduleOverrides>, String> {
    a.decode_schedule.as_deref().map(flashgen::ScheduleOverrides::parse).transpose().map_err(|e| format!("--decode-schedule: {e}"))
}

/// The variants a shape is timed with: the default plan (its merge as `--decode-merge` says) with the
/// heuristic's splits, `--decode-schedule`'s kernel, `--decode-splits` counts (of both), and
/// `--decode-configs` tiles ("bn,warps,stages").
fn variants(a: &BenchArgs, default: &DecodePlan, scheduled: Option<(String, DecodePlan)>) -> Result<Vec<(String, DecodePlan, Option<usize>)>, String> {
    let default = &merge_of(a, *default)?;
    let mut out = vec![("default".to_string(), *default, None)];
    let scheduled = scheduled.map(|(label, plan)| merge_of(a, plan).map(|plan| (label, plan))).transpose()?;
    if let Some((label, plan)) = &scheduled {
        out.push((label.clone(), *plan, None));
    }
    for s in a.decode_splits.as_deref().map(list).transpose()?.unwrap_or_default() {
        out.push((format!("splits={s}"), *default, Some(s as usize)));
        if let Some((label, plan)) = &scheduled {
            out.push((format!("splits={s}{label}"), *plan, Some(s as usize)));
        }
    }
    for cfg in a.decode_configs.iter().flat_map(|c| c.split(';')).filter(|c| !c.trim().is_empty()) {
        let f = list(cfg)?;
        if f.len() != 3 {
            return Err(format!("decode config `{cfg}` must be bn,warps,stages"));
        }
        match KernelSpec::new(SpecParams { block_n: f[0], num_warps: f[1], num_stages: f[2], ..*default.kernel.params() }) {
            Ok(kernel) => out.push((format!("bn{},w{},ns{}", f[0], f[1], f[2]), DecodePlan { kernel, ..*default }, None)),
            Err(e) => println!("skip decode config {cfg}: {e}"),
        }
    }
    Ok(out)
}

fn emit(line: String, json: &mut Option<std::fs::File>) -> Result<(), String> {
    println!("{line}");
    if let Some(f) = json.as_mut() {
        writeln!(f, "{line}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Mean µs per step of `n` steps queued back to back on `stream` (events around them).
fn back_to_back(gpu: &Gpu, stream: &std::sync::Arc<cudarc::driver::CudaStream>, n: usize, mut step: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    for _ in 0..20 {
        step()?;
    }
    stream.synchronize().map_err(dr)?;
    let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
    let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
    start.record(stream).map_err(dr)?;
    for _ in 0..n {
        step()?;
    }
    end.record(stream).map_err(dr)?;
    end.synchronize().map_err(dr)?;
    Ok(start.elapsed_ms(&end).map_err(dr)? as f64 * 1e3 / n as f64)
}

/// Caches the `us_layers` graph steps through, one after another: 8 of 33.5 MB (batch 1, cache 8192) is
/// 5× L2, so each step finds its cache out of L2 and L2 clean, as a model's layers leave it for each other.
const LATENCY_LAYERS: usize = 8;

/// One decode step as a caller makes it on `bufs`: its plan from the call (`attention_with_kvcache`), under
/// `schedule`'s overrides, the merge as --decode-merge says.
fn step_on(flash: &Flash, a: &BenchArgs, s: &Shape, bufs: &mut Buffers, schedule: Option<flashgen::ScheduleOverrides>, stream: Stream) -> Result<flashgen_runtime::DecodeRun, String> {
    let rt = |x: RuntimeError| x.to_string();
    let call = bufs.call(s, false, true, None)?;
    let g = flashgen_runtime::DecodeGeometry::of(&call).map_err(rt)?;
    let plan = flash.decode_plan_under(DType::Bf16, &g, false, flashgen_runtime::Window::UNBOUNDED, false, schedule.unwrap_or(flashgen::ScheduleOverrides::NONE)).map_err(rt)?;
    flash.attention_with_kvcache_plan(&merge_of(a, plan)?, call, stream).map_err(rt)
}

/// The latency row: batch 1, cache 8192 (8191 cached + 1 appended), contiguous.
fn latency(flash: &Flash, a: &BenchArgs, s: &Shape, bufs: &mut Buffers, layers: &mut [Buffers], schedule: Option<flashgen::ScheduleOverrides>, json: &mut Option<std::fs::File>) -> Result<(), String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let gpu = &flash.gpu;
    let own = flash.own_stream();
    let mut step = |stream: Stream| step_on(flash, a, s, bufs, schedule, stream);
    let run = step(own)?;
    // the bench's timer (do-bench: each step after an L2 flush)
    let timed = time_launches(gpu, a, || step(own).map(|_| ()))?;
    // back to back on the Flash's stream, and the host's enqueue time per call
    let t0 = std::time::Instant::now();
    let stream_us = back_to_back(gpu, &gpu.stream, 1000, || step(own).map(|_| ()))?;
    let host_us = t0.elapsed().as_secs_f64() * 1e6 / 1020.0;
    // a CUDA graph of the step on a stream of its own (its scratch made by a first call there)
    let side = gpu.ctx.new_stream().map_err(dr)?;
    // SAFETY: `side` is a stream of the Flash's context and lives until the end of this function
    let side_raw = unsafe { Stream::from_raw(side.cu_stream()) };
    step(side_raw)?;
    side.synchronize().map_err(dr)?;
    side.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).map_err(dr)?;
    let captured = step(side_raw);
    let graph = side.end_capture(CUgraphInstantiate_flags(0)).map_err(dr)?;
    captured?;
    let graph = graph.ok_or("stream capture gave no graph")?;
    graph.upload().map_err(dr)?;
    let graph_us = back_to_back(gpu, &side, 1000, || graph.launch().map_err(dr))?;
    // a graph of LATENCY_LAYERS steps, each on a cache of its own (a model's layers: no flush, and no cache
    // still in L2 when its step comes), replayed back to back: µs per step
    for layer in layers.iter_mut() {
        step_on(flash, a, s, layer, schedule, side_raw)?;
    }
    side.synchronize().map_err(dr)?;
    side.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).map_err(dr)?;
    let captured: Result<(), String> = layers.iter_mut().try_for_each(|layer| step_on(flash, a, s, layer, schedule, side_raw).map(|_| ()));
    let layers_graph = side.end_capture(CUgraphInstantiate_flags(0)).map_err(dr)?;
    captured?;
    let layers_graph = layers_graph.ok_or("stream capture gave no graph")?;
    layers_graph.upload().map_err(dr)?;
    let layers_us = back_to_back(gpu, &side, 1000 / layers.len(), || layers_graph.launch().map_err(dr))? / layers.len() as f64;
    let line = format!(
        "{{\"kind\": \"decode_latency\", \"impl\": \"flashgen\", \"B\": {}, \"H\": {}, \"HKV\": {}, \"N\": 1, \"NK\": {}, \"D\": {}, \"append\": 1, \"paged\": false, \"splits\": {}, \"spec\": \"{}{}\", \"merge\": \"{:?}\", \"config\": \"{}\", \"us\": {:.2}, \"timing\": \"{}\", \"us_back_to_back\": {stream_us:.2}, \"us_graph\": {graph_us:.2}, \"us_layers\": {layers_us:.2}, \"layers\": {LATENCY_LAYERS}, \"us_host_enqueue\": {host_us:.2}}}",
        s.b, s.h, s.hkv, s.nk, s.d, run.splits, run.plan.kernel.name(), if run.splits > 1 && run.plan.merge == SplitMerge::Combine { format!("+{}", run.plan.combine.name()) } else { String::new() }, run.plan.merge, schedule.map_or("default".to_string(), |s| format!("@{s}")), timed.ms * 1e3, a.timing
    );
    emit(line, json)
}

pub fn run(a: &BenchArgs) -> Result<(), String> {
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("bench needs a GPU: {e}"))?, KernelCache::from_env());
    let gpu = &flash.gpu;
    let rt = |x: RuntimeError| x.to_string();
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let (h, hkv) = (a.heads.unwrap_or(32), a.kv_heads.unwrap_or(8));
    let stream = flash.own_stream();
    let mut rng = SplitMix(33);
    let mut table = Vec::new();
    println!("GPU: {} ({}), {} SMs", gpu.name, gpu.arch, gpu.sm_count);
    for d in list(&a.decode_d)? {
        for nk in list(&a.decode_nk)? {
            for b in list(&a.decode_batch)? {
                let s = Shape { b: b as usize, h, hkv, nk: nk as usize, d: d as usize, page: a.page };
                if !s.nk.is_multiple_of(s.page) {
                    return Err(format!("cache {} is not a multiple of the page {}", s.nk, s.page));
                }
                let mut bufs = Buffers::new(gpu, &s, &mut rng)?;
                let kv_bytes = 2.0 * (s.b * s.nk * s.hkv * s.d * 2) as f64;
                for paged in [false, true] {
                    let g = flashgen_runtime::DecodeGeometry::of(&bufs.call(&s, paged, false, None)?).map_err(rt)?;
                    let default = flash.decode_plan(DType::Bf16, &g, false, flashgen_runtime::Window::UNBOUNDED, false).map_err(rt)?;
                    let scheduled = match schedule_of(a)? {
                        Some(schedule) => Some((format!("@{schedule}"), flash.decode_plan_under(DType::Bf16, &g, false, flashgen_runtime::Window::UNBOUNDED, false, schedule).map_err(rt)?)),
                        None => None,
                    };
                    for (label, plan, splits) in variants(a, &default, scheduled)? {
                        let run = flash.attention_with_kvcache_plan(&plan, bufs.call(&s, paged, false, splits)?, stream).map_err(rt)?;
                        let timed = time_launches(gpu, a, || flash.attention_with_kvcache_plan(&plan, bufs.call(&s, paged, false, splits)?, stream).map(|_| ()).map_err(rt))?;
                        let (ms, t) = (timed.ms, &timed.sorted);
                        let gb_s = kv_bytes / ms / 1e6;
                        let page = if paged { format!("{}", s.page) } else { "null".into() };
                        let line = format!(
                            "{{\"kind\": \"decode\", \"impl\": \"flashgen\", \"B\": {}, \"H\": {}, \"HKV\": {}, \"N\": 1, \"NK\": {}, \"D\": {}, \"causal\": false, \"dtype\": \"bf16\", \"paged\": {paged}, \"page\": {page}, \"ms\": {ms:.5}, \"gb_s\": {gb_s:.1}, \"config\": \"{label}\", \"splits\": {}, \"spec\": \"{}\", \"merge\": \"{:?}\", \"timing\": \"{}\", \"p20_ms\": {:.5}, \"p80_ms\": {:.5}}}",
                            s.b, s.h, s.hkv, s.nk, s.d, run.splits, run.plan.kernel.name(), run.plan.merge, a.timing, t[t.len() / 5], t[t.len() * 4 / 5]
                        );
                        emit(line, &mut json)?;
                        table.push(format!("decode flashgen B={:2} NK={:5} D={} {} {gb_s:8.1} GB/s {:8.2} us splits {:3}  {label}", s.b, s.nk, s.d, if paged { "paged" } else { "contig" }, ms * 1e3, run.splits));
                    }
                }
                if !a.no_latency && s.b == 1 && s.nk == 8192 {
                    let mut layers = (0..LATENCY_LAYERS).map(|_| Buffers::new(gpu, &s, &mut rng)).collect::<Result<Vec<_>, _>>()?;
                    latency(&flash, a, &s, &mut bufs, &mut layers, None, &mut json)?;
                    if let Some(schedule) = schedule_of(a)? {
                        latency(&flash, a, &s, &mut bufs, &mut layers, Some(schedule), &mut json)?;
                    }
                }
                let _ = bufs.host_table.len();
            }
        }
    }
    println!("\n=== flashgen decode (K and V GB/s) ===");
    for row in table {
        println!("{row}");
    }
    Ok(())
}
