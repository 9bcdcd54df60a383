//! Decoding against a KV cache (issue 33): `Flash::attention_with_kvcache`, FlashAttention's
//! `flash_attn_with_kvcache` on borrowed views and the caller's stream.
//!
//! Per sequence b, the N_q new queries attend to the cache's first cache_seqlens[b] tokens followed by the
//! N_new new ones (k_new / v_new), which the call also appends to the cache at cache_seqlens[b]; causal
//! masks among the new queries bottom-right (query i sees keys j ≤ cache_seqlens[b] + N_new − N_q + i).
//! Grouped-query heads: the G = H / H_kv query heads of a K/V head run in one program, so K/V is read once.
//! The cache is contiguous ([B, capacity, H_kv, D]) or paged (a pool [pages, page_size, H_kv, D] and a block
//! table [B, max_pages] of i32 page indices, page_size a multiple of 16, pages in any order).
//!
//! Split-KV: each sequence's keys are split over NUM_SPLITS programs so that every SM works even at batch 1
//! (`flashgen::plan::decode_splits`, from the shape, the SM count and the programs the driver fits per SM;
//! or the caller's count); the splits write f32 partials that `decode_combine` merges by their
//! log-sum-exps in a fixed order (deterministic), or, where the plan says (`SplitMerge::InKernel`: no
//! overlapped launch for the combine), the last split of each row tile merges them itself, counted through
//! the stream's zeroed split counters. One split writes O and the LSE directly.
//!
//! Tensors are [Z, H, N, D] views, as everywhere in this runtime: FlashAttention's [B, N, H, D] memory is
//! `Layout::bshd(B, H, N, D)`; a page pool [pages, page_size, H_kv, D] is `Layout::bshd(pages, H_kv,
//! page_size, D)`. What the host can check it checks before anything runs (shapes, dtypes, alignment, page
//! size, and with the host copies the caller gives, cache lengths against the capacity or the pages and
//! block-table entries against the pool). What only the GPU holds the kernels clamp: a cache length to
//! 0 ..= capacity − N_new, a table entry to the pool, so lying data gives wrong numbers for that sequence,
//! never a read or write outside the cache, the pool or the tensors.

use crate::kernel::{After, KernelArgs, KernelGeometry, LoadedKernel};
use crate::tma::TensorMap;
use crate::stream::{grow, Stream};
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use crate::{Flash, Layout, LayoutError, RuntimeError};
use cudarc::driver::LaunchConfig;
use flashgen::plan::{kernel_window, DecodePlan, DecodeProblem, SplitMerge};
use flashgen::reference::Window;
use flashgen::{abi, DType, KernelKind, KernelSpec, ScheduleOverrides};
use std::collections::HashMap;
use std::sync::Mutex;

/// A paged cache's block table: i32 [B, max_pages] on the GPU (row b lists sequence b's pages in order), and
/// when the caller has it, its host copy, which is then checked against the pool before anything runs.
#[derive(Clone, Copy)]
pub struct BlockTable<'a> {
    pub table: BufferView<'a, i32>,
    pub max_pages: usize,
    pub host: Option<&'a [i32]>,
}

/// One decode call. Views: q and o [B, H, N_q, D] (FlashAttention's [B, N_q, H, D] memory viewed with
/// `Layout::bshd`); k_cache and v_cache [B, H_kv, capacity, D] (contiguous) or [pages, H_kv, page_size, D]
/// (with `block_table`); k_new and v_new [B, H_kv, N_new, D] or absent; lse f32 [B, H, N_q] natural log.
pub struct KvCacheCall<'a> {
    pub q: TensorView<'a>,
    /// Written: the new tokens are appended (nothing else of the cache changes).
    pub k_cache: TensorViewMut<'a>,
    pub v_cache: TensorViewMut<'a>,
    /// i32 [B]: tokens in each sequence's cache before the call.
    pub cache_seqlens: BufferView<'a, i32>,
    /// The host copy of cache_seqlens, if the caller has one: checked against the capacity or the pages.
    pub host_cache_seqlens: Option<&'a [i32]>,
    /// Paged caches only.
    pub block_table: Option<BlockTable<'a>>,
    pub k_new: Option<TensorView<'a>>,
    pub v_new: Option<TensorView<'a>>,
    pub o: TensorViewMut<'a>,
    pub lse: Option<BufferViewMut<'a, f32>>,
    /// Causal among the new queries, aligned bottom-right (no effect with one query).
    pub causal: bool,
    /// A sliding window around each query's diagonal (FlashAttention's `window_size`: query i at position
    /// p = L − N_q + i sees keys p − left ..= p + right; `Window::UNBOUNDED` for none); with `causal` its
    /// right bound is 0. The splits cover only the keys the window lets a program's queries see.
    pub window: Window,
    /// Softcap (Gemma 2's 50): the scaled score s becomes cap · tanh(s / cap); finite, > 0.
    pub softcap: Option<f32>,
    /// Default 1/sqrt(D).
    pub sm_scale: Option<f32>,
    /// Splits of each sequence's keys (1 ..= flashgen::spec::DECODE_MAX_SPLITS); None: the heuristic's.
    pub num_splits: Option<usize>,
}

/// How a paged cache is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Paging {
    pub page_size: usize,
    pub pages: usize,
    pub max_pages: usize,
}

/// The validated shape of a decode call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeGeometry {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    /// New queries per sequence (N_q).
    pub queries: usize,
    pub head_dim: usize,
    /// New K/V tokens appended per sequence (N_new).
    pub new_tokens: usize,
    /// Tokens a sequence's cache holds: the contiguous cache's rows, or max_pages × page_size.
    pub capacity: usize,
    pub paging: Option<Paging>,
    /// Keys of the longest sequence, for the split heuristic: cache length + N_new from the host copy of the
    /// lengths when there is one, else the capacity.
    pub longest: usize,
}

impl DecodeGeometry {
    /// Query rows of the outputs: B·H·N_q.
    pub fn rows(&self) -> usize {
        self.batch * self.heads * self.queries
    }
    /// Nothing to compute (no sequence, head or query): the call launches nothing.
    pub fn is_empty(&self) -> bool {
        self.batch == 0 || self.heads == 0 || self.queries == 0
    }
    /// The kernel choice's view of a call: its causal flag and window as the kernels take them
    /// (`kernel_window`: a bounded right side rides on the causal diagonal), and whether it softcaps.
    pub fn problem(&self, dtype: DType, causal: bool, window: Window, softcap: bool) -> DecodeProblem {
        let (causal, window) = kernel_window(causal, window);
        DecodeProblem { dtype, head_dim: self.head_dim as u32, causal, window: !window.is_unbounded(), softcap, group: self.heads / self.kv_heads.max(1), queries: self.queries }
    }

    /// Keys one query can see at most: the longest sequence's, or the window's span.
    pub fn visible_keys(&self, window: Window) -> usize {
        match window.left {
            Some(left) => self.longest.min(left.saturating_add(self.queries).saturating_add(window.right.unwrap_or(0))),
            None => self.longest,
        }
    }

    /// Every rule the host can check, before anything is planned or launched.
    pub fn of(call: &KvCacheCall<'_>) -> Result<DecodeGeometry, RuntimeError> {
        let arg = |msg: String| Err(RuntimeError::Argument(msg));
        let q = &call.q;
        let [b, h, nq, d] = q.layout.shape;
        for (name, dtype) in [("k_cache", call.k_cache.dtype), ("v_cache", call.v_cache.dtype), ("o", call.o.dtype)].into_iter().chain(call.k_new.iter().map(|t| ("k_new", t.dtype))).chain(call.v_new.iter().map(|t| ("v_new", t.dtype))) {
            if dtype != q.dtype {
                return arg(format!("tensor {name} is {} but q is {}: every tensor of a decode call has one dtype", dtype.name(), q.dtype.name()));
            }
        }
        if call.o.layout.shape != q.layout.shape {
            return arg(format!("tensor o has shape {:?} but q has {:?}: o is shaped like q ([B, H, N_q, D])", call.o.layout.shape, q.layout.shape));
        }
        let kc = call.k_cache.layout.shape;
        if call.v_cache.layout.shape != kc {
            return arg(format!("v_cache has shape {:?} but k_cache {kc:?}: the caches have one shape", call.v_cache.layout.shape));
        }
        let [cz, hkv, rows, cd] = kc;
        if cd != d {
            return arg(format!("the caches have head dim {cd} but q has {d}"));
        }
        if hkv == 0 || h % hkv != 0 {
            return arg(format!("q has {h} heads and the caches {hkv}: the query heads must be a multiple of the K/V heads (query head h reads K/V head h / (H / H_kv))"));
        }
        let (capacity, paging) = match &call.block_table {
            None => {
                if cz != b {
                    return arg(format!("the contiguous caches hold {cz} sequences but q has batch {b} ([B, H_kv, capacity, D]; paged caches give a block_table)"));
                }
                (rows, None)
            }
            Some(t) => {
                let page_size = rows;
                if page_size == 0 || page_size % 16 != 0 {
                    return arg(format!("page size {page_size} (the pool's token axis) is not a positive multiple of 16"));
                }
                if t.max_pages == 0 {
                    return arg("block_table: max_pages is 0".into());
                }
                if t.table.len() < b * t.max_pages {
                    return Err(LayoutError { tensor: "block_table", rule: format!("holds {} entries, needs B × max_pages = {b} × {}", t.table.len(), t.max_pages) }.into());
                }
                if cz == 0 {
                    return arg("the page pool is empty (0 pages)".into());
                }
                (t.max_pages * page_size, Some(Paging { page_size, pages: cz, max_pages: t.max_pages }))
            }
        };
        let new_tokens = match (&call.k_new, &call.v_new) {
            (None, None) => 0,
            (Some(kn), Some(vn)) => {
                if kn.layout.shape != vn.layout.shape {
                    return arg(format!("v_new has shape {:?} but k_new {:?}", vn.layout.shape, kn.layout.shape));
                }
                let [nb, nh, nn, nd] = kn.layout.shape;
                if (nb, nh, nd) != (b, hkv, d) {
                    return arg(format!("k_new has shape {:?}: it must be [B, H_kv, N_new, D] = [{b}, {hkv}, N_new, {d}]", kn.layout.shape));
                }
                nn
            }
            _ => return arg("k_new and v_new come together (or neither)".into()),
        };
        if new_tokens > capacity {
            return arg(format!("{new_tokens} new tokens exceed the cache's {capacity} tokens per sequence"));
        }
        if call.cache_seqlens.len() < b {
            return Err(LayoutError { tensor: "cache_seqlens", rule: format!("holds {} lengths, needs one per sequence ({b})", call.cache_seqlens.len()) }.into());
        }
        let mut longest = capacity;
        if let Some(host) = call.host_cache_seqlens {
            check_lengths(host, b, new_tokens, capacity, paging)?;
            longest = host.iter().map(|&l| l as usize + new_tokens).max().unwrap_or(0);
            if let (Some(t), Some(p)) = (&call.block_table, paging) {
                if let Some(table) = t.host {
                    check_table(table, host, new_tokens, p)?;
                }
            }
        }
        if let Some(lse) = &call.lse {
            if lse.len() < b * h * nq {
                return Err(LayoutError { tensor: "lse", rule: format!("holds {} floats, needs B·H·N_q = {}", lse.len(), b * h * nq) }.into());
            }
        }
        if let Some(s) = call.sm_scale.filter(|s| !(s.is_finite() && *s > 0.0)) {
            return Err(LayoutError { tensor: "sm_scale", rule: format!("{s} must be finite and positive") }.into());
        }
        if let Some(s) = call.num_splits.filter(|&s| s == 0 || s > flashgen::spec::DECODE_MAX_SPLITS as usize) {
            return arg(format!("num_splits {s}: use 1 ..= {}", flashgen::spec::DECODE_MAX_SPLITS));
        }
        let fits = |x: usize| x <= i32::MAX as usize;
        if !(fits(b * h * nq * flashgen::spec::DECODE_MAX_SPLITS as usize) && fits(capacity + 128) && fits(b * paging.map_or(1, |p| p.max_pages))) {
            return arg(format!("B·H·N_q = {} rows or a capacity of {capacity} tokens overflow the kernels' 32-bit indices", b * h * nq));
        }
        if b > 65_535 {
            return arg(format!("batch {b} exceeds the 65535 grid rows of one launch"));
        }
        Ok(DecodeGeometry { batch: b, heads: h, kv_heads: hkv, queries: nq, head_dim: d, new_tokens, capacity, paging, longest })
    }
}

/// The host copy of cache_seqlens: one per sequence, none negative, each with its new tokens within the
/// capacity (contiguous) or the pages its block-table row gives.
pub fn check_lengths(host: &[i32], batch: usize, new_tokens: usize, capacity: usize, paging: Option<Paging>) -> Result<(), RuntimeError> {
    let err = |rule: String| Err(LayoutError { tensor: "cache_seqlens", rule }.into());
    if host.len() != batch {
        return err(format!("the host copy has {} lengths for batch {batch}", host.len()));
    }
    for (b, &len) in host.iter().enumerate() {
        if len < 0 {
            return err(format!("sequence {b} has length {len}: lengths are at least 0"));
        }
        let total = len as usize + new_tokens;
        if total > capacity {
            return match paging {
                Some(p) => err(format!("sequence {b}: {len} cached + {new_tokens} new tokens exceed its {} pages of {} tokens", p.max_pages, p.page_size)),
                None => err(format!("sequence {b}: {len} cached + {new_tokens} new tokens exceed the cache's capacity of {capacity}")),
            };
        }
    }
    Ok(())
}

/// The host copy of the block table: [B, max_pages], and every entry a sequence's tokens reach (its cache
/// length plus the new tokens) a page of the pool.
pub fn check_table(table: &[i32], lengths: &[i32], new_tokens: usize, p: Paging) -> Result<(), RuntimeError> {
    let err = |rule: String| Err(LayoutError { tensor: "block_table", rule }.into());
    if table.len() < lengths.len() * p.max_pages {
        return err(format!("the host copy has {} entries for [{}, {}]", table.len(), lengths.len(), p.max_pages));
    }
    for (b, &len) in lengths.iter().enumerate() {
        let used = (len.max(0) as usize + new_tokens).div_ceil(p.page_size);
        for (j, &page) in table[b * p.max_pages..][..used.min(p.max_pages)].iter().enumerate() {
            if page < 0 || page as usize >= p.pages {
                return err(format!("sequence {b}'s page {j} is {page}, outside the pool of {} pages", p.pages));
            }
        }
    }
    Ok(())
}

/// The scalars of a decode launch.
#[derive(Clone, Copy)]
struct Scalars {
    sm_scale: f32,
    /// 0 for kernels without softcap (they ignore it).
    softcap: f32,
    new_tokens: usize,
    splits: usize,
    paging: Paging,
}

/// decode's values by name: [Q, K_NEW, V_NEW], [K_CACHE, V_CACHE, Out], [LSE, O_PARTIAL, LSE_PARTIAL], SPLIT_COUNTERS,
/// [CACHE_SEQLENS, BLOCK_TABLE], [tmap_k, tmap_v], the scalars and the geometry (`KernelArgs::launch` orders them by the list).
fn decode_args<'a>(
    args: &mut KernelArgs<'a>,
    [q, k_new, v_new]: [&TensorView<'a>; 3],
    [k_cache, v_cache, o]: [&'a mut TensorViewMut<'_>; 3],
    [lse, partial_o, partial_m]: [&'a mut BufferViewMut<'_, f32>; 3],
    counters: &'a mut BufferViewMut<'_, u32>,
    [lens, table]: [&BufferView<'a, i32>; 2],
    [map_k, map_v]: [TensorMap; 2],
    s: Scalars,
    geometry: &KernelGeometry,
) {
    args.tensor("Q", q).tensor_mut("K_CACHE", k_cache).tensor_mut("V_CACHE", v_cache).tensor("K_NEW", k_new).tensor("V_NEW", v_new);
    args.f32("sm_scale", s.sm_scale).f32("SOFTCAP", s.softcap).tensor_mut("Out", o).f32s_mut("LSE", lse).f32s_mut("O_PARTIAL", partial_o).f32s_mut("LSE_PARTIAL", partial_m);
    args.u32s_mut("SPLIT_COUNTERS", counters).i32s("CACHE_SEQLENS", lens).i32s("BLOCK_TABLE", table);
    args.i32("N_NEW", s.new_tokens as i32).i32("NUM_SPLITS", s.splits as i32).i32("PAGE_SIZE", s.paging.page_size as i32);
    args.i32("MAX_PAGES", s.paging.max_pages as i32).i32("POOL_PAGES", s.paging.pages as i32).geometry(geometry);
    args.map("tmap_k", map_k).map("tmap_v", map_v);
}

/// decode_combine's values by name: [O_PARTIAL, LSE_PARTIAL], Out, LSE, NUM_SPLITS and the geometry.
fn combine_args<'a>(args: &mut KernelArgs<'a>, [partial_o, partial_m]: [&BufferView<'a, f32>; 2], o: &'a mut TensorViewMut<'_>, lse: &'a mut BufferViewMut<'_, f32>, splits: usize, geometry: &KernelGeometry) {
    args.f32s("O_PARTIAL", partial_o).f32s("LSE_PARTIAL", partial_m).tensor_mut("Out", o).f32s_mut("LSE", lse);
    args.i32("NUM_SPLITS", splits as i32).geometry(geometry);
}

/// What a decode call ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeRun {
    pub plan: DecodePlan,
    pub splits: usize,
}

/// Programs of a kernel the driver fits on one SM, by function (the split heuristic's slots).
static OCCUPANCY: Mutex<Option<HashMap<usize, u32>>> = Mutex::new(None);

fn programs_per_sm(k: &LoadedKernel) -> Result<u32, RuntimeError> {
    let f = k.function.cu_function();
    let key = f as usize;
    if let Some(&n) = OCCUPANCY.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashMap::new).get(&key) {
        return Ok(n);
    }
    // SAFETY: `f` is a loaded function of the current context (the caller bound it)
    let n = unsafe { cudarc::driver::result::occupancy::max_active_block_per_multiprocessor(f, k.spec.threads() as i32, k.shared_bytes as usize) }?.max(1) as u32;
    OCCUPANCY.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(HashMap::new).insert(key, n);
    Ok(n)
}

impl Flash {
    /// The decode kernels a call of this shape runs (`flashgen::plan::decode`).
    pub fn decode_plan(&self, dtype: DType, g: &DecodeGeometry, causal: bool, window: Window, softcap: bool) -> Result<DecodePlan, RuntimeError> {
        self.decode_plan_under(dtype, g, causal, window, softcap, ScheduleOverrides::NONE)
    }

    /// `decode_plan` with its decode kernel under `schedule`, a decode switch such as `tma_kv=on`
    /// (`DecodePlan::with_schedule`; none: the plan as it is): how `check` and `bench` try one. Without
    /// one, a call that splits its sequences reads its K/V by TMA boxes where the target has them
    /// (`flashgen::plan::decode_tma_for`).
    pub fn decode_plan_under(&self, dtype: DType, g: &DecodeGeometry, causal: bool, window: Window, softcap: bool, schedule: ScheduleOverrides) -> Result<DecodePlan, RuntimeError> {
        let err = |e: flashgen::SpecError| RuntimeError::Argument(format!("decode: {e}"));
        let problem = g.problem(dtype, causal, window, softcap);
        let plan = flashgen::plan::decode(self.gpu.arch, &problem).map_err(err)?;
        if !schedule.is_empty() {
            return plan.with_schedule(&problem, schedule).map_err(err);
        }
        let (_, kernel_window) = kernel_window(causal, window);
        if !g.is_empty() && flashgen::plan::decode_tma_for(self.gpu.arch, self.decode_splits(&plan, g, kernel_window)?) {
            let tma = ScheduleOverrides { tma_kv: Some(true), ..ScheduleOverrides::NONE };
            return plan.with_schedule(&problem, tma).map_err(err);
        }
        Ok(plan)
    }

    /// The splits the heuristic gives a call of this shape on this GPU with `plan`'s kernel (a window's
    /// programs split only the keys it lets them see).
    pub fn decode_splits(&self, plan: &DecodePlan, g: &DecodeGeometry, window: Window) -> Result<usize, RuntimeError> {
        let k = self.kernel(&plan.kernel)?;
        self.gpu.ctx.bind_to_thread()?;
        let (sms, per_sm) = (self.gpu.sm_count as usize, programs_per_sm(&k)? as usize);
        let units = g.batch * g.kv_heads * plan.row_tiles(&g.problem(plan.kernel.dtype(), plan.kernel.causal(), window, plan.kernel.features().softcap));
        // (+1: a window's span straddles one more block than it fills)
        let blocks = g.visible_keys(window).div_ceil(plan.kernel.block_n() as usize) + usize::from(window.left.is_some());
        Ok(flashgen::plan::decode_splits(units, blocks, sms, per_sm))
    }

    /// Attention of the new queries against the KV cache, appending the new tokens (see the module's doc),
    /// with the kernels the plan chooses, queued on `stream`.
    pub fn attention_with_kvcache(&self, call: KvCacheCall<'_>, stream: Stream) -> Result<DecodeRun, RuntimeError> {
        let g = DecodeGeometry::of(&call)?;
        let plan = self.decode_plan(call.q.dtype, &g, call.causal, call.window, call.softcap.is_some())?;
        self.attention_with_kvcache_plan(&plan, call, stream)
    }

    /// `attention_with_kvcache` with explicit kernels (a plan's kernel of other tiles, as the bench's).
    pub fn attention_with_kvcache_plan(&self, plan: &DecodePlan, call: KvCacheCall<'_>, stream: Stream) -> Result<DecodeRun, RuntimeError> {
        let g = DecodeGeometry::of(&call)?;
        let (spec, comb) = (plan.kernel, plan.combine);
        let problem = g.problem(call.q.dtype, call.causal, call.window, call.softcap.is_some());
        if let Some(cap) = call.softcap.filter(|c| !(c.is_finite() && *c > 0.0)) {
            return Err(RuntimeError::Argument(format!("softcap = {cap}: the cap must be finite and > 0 (None for no softcap)")));
        }
        let (_, window) = kernel_window(call.causal, call.window);
        plan_fits(plan, &problem, g.queries)?;
        if g.is_empty() {
            return Ok(DecodeRun { plan: *plan, splits: 0 });
        }
        let splits = match call.num_splits {
            Some(s) => s,
            None => self.decode_splits(plan, &g, window)?,
        };
        let row_tiles = plan.row_tiles(&problem);
        if g.kv_heads * row_tiles > 65_535 {
            return Err(RuntimeError::Argument(format!("{} K/V heads × {row_tiles} row tiles exceed the 65535 grid rows of one launch", g.kv_heads)));
        }
        // the TMA kernel (Schedule::tma_kv) reads the caches' full blocks through tensor maps, which the driver
        // encodes in the thread's current context; a layout it cannot describe runs the cp.async kernel of
        // the same tiles instead
        let (spec, maps) = if spec.decode_tma_kv() {
            self.gpu.ctx.bind_to_thread()?;
            let page_size = g.paging.map_or(0, |p| p.page_size);
            match crate::tma::decode_maps(&spec, &call.k_cache, &call.v_cache, page_size) {
                Ok(maps) => (spec, Some(maps)),
                Err(why) => {
                    let instead = KernelSpec::with_features(*spec.params(), ScheduleOverrides::NONE, spec.features()).map_err(|e| RuntimeError::Argument(e.to_string()))?;
                    self.cache.warn(format!("{}: {why}; running {} instead", spec.name(), instead.name()));
                    (instead, None)
                }
            }
        } else {
            (spec, None)
        };
        let kernel = self.kernel(&spec)?;
        // the partials merge in the decode kernel (its last split of each row tile) or in decode_combine
        let in_kernel = splits > 1 && plan.merge == SplitMerge::InKernel;
        let combine = if splits > 1 && !in_kernel { Some(self.kernel(&comb)?) } else { None };
        let KvCacheCall { q, mut k_cache, mut v_cache, cache_seqlens, block_table, k_new, v_new, mut o, lse, sm_scale, softcap, .. } = call;
        let sm_scale = sm_scale.unwrap_or(1.0 / (g.head_dim as f32).sqrt());
        let dtype = q.dtype;
        let rows = g.rows();
        let scratch = self.scratch.of(stream);
        let mut scratch = scratch.lock().unwrap_or_else(|p| p.into_inner());
        let scratch = &mut *scratch;
        let (mut partial_o, mut partial_m) = if splits > 1 {
            // a partial row is as wide as the kernels' tiles (32 and 96 padded to 64 and 128)
            let width = spec.params().tile_dim() as usize;
            (Some(grow(&self.gpu, stream, &mut scratch.decode_o, splits * rows * width)?), Some(grow(&self.gpu, stream, &mut scratch.decode_m, splits * rows)?))
        } else {
            (None, None)
        };
        // zero between calls: each call's last splits set their counts back to 0 (fresh buffers are zeroed)
        let mut counters = if in_kernel { Some(grow(&self.gpu, stream, &mut scratch.decode_counters, g.batch * g.kv_heads * row_tiles)?) } else { None };
        let mut lse = match lse {
            Some(l) => l,
            None => grow(&self.gpu, stream, &mut scratch.decode_lse, rows)?,
        };
        // absent operands: empty views at address 0 (never read: N_NEW = 0, PAGE_SIZE = 0; the partials
        // only with NUM_SPLITS > 1)
        let none_new = |name| {
            let layout = Layout { shape: [g.batch, g.kv_heads, 0, g.head_dim], strides: [0, 0, 0, 1] };
            // SAFETY: an empty view reaches no element; the kernel reads none (N_NEW = 0)
            unsafe { TensorView::from_raw_parts(name, 0, 0, dtype, layout) }
        };
        let (k_new, v_new) = match (k_new, v_new) {
            (Some(k), Some(v)) => (k, v),
            _ => (none_new("K_NEW")?, none_new("V_NEW")?),
        };
        // SAFETY: address 0, length 0: the kernel reads no table entry when PAGE_SIZE = 0
        let no_table = unsafe { BufferView::<i32>::from_raw_parts(0, 0) };
        let table = block_table.map_or(no_table, |t| t.table);
        // SAFETY: as above: written only with NUM_SPLITS > 1, when the scratch is given instead
        let mut no_partial = unsafe { BufferViewMut::<f32>::from_raw_parts(0, 0) };
        let mut no_partial_m = unsafe { BufferViewMut::<f32>::from_raw_parts(0, 0) };
        // SAFETY: address 0 (null): the kernel counts no split and leaves the partials to decode_combine
        let mut no_counters = unsafe { BufferViewMut::<u32>::from_raw_parts(0, 0) };
        let paging = g.paging.unwrap_or(Paging { page_size: 0, pages: 0, max_pages: 0 });
        let geometry = KernelGeometry { window, ..KernelGeometry::fixed(g.batch, g.heads, g.kv_heads, g.queries, g.capacity, true) };
        {
            let mut args = KernelArgs::new();
            let (po, pm) = (partial_o.as_mut().unwrap_or(&mut no_partial), partial_m.as_mut().unwrap_or(&mut no_partial_m));
            let scalars = Scalars { sm_scale, softcap: softcap.unwrap_or(0.0), new_tokens: g.new_tokens, splits, paging };
            let counters = counters.as_mut().unwrap_or(&mut no_counters);
            let maps = maps.unwrap_or_else(|| [TensorMap::unused(), TensorMap::unused()]);
            decode_args(&mut args, [&q, &k_new, &v_new], [&mut k_cache, &mut v_cache, &mut o], [&mut lse, po, pm], counters, [&cache_seqlens, &table], maps, scalars, &geometry);
            let cfg = LaunchConfig { grid_dim: (splits as u32, (g.kv_heads * row_tiles) as u32, g.batch as u32), block_dim: (spec.threads(), 1, 1), shared_mem_bytes: kernel.shared_bytes };
            self.gpu.ctx.bind_to_thread()?;
            // # Safety
            // 1. The arguments are decode's parameter list (flashgen::abi; docs/ABI.md) in its order and each
            //    of its parameter's type and alignment (`launch` checks them).
            // 2. Every element the kernel touches lies inside memory the views hold: Q, O, the caches and the
            //    new tokens by their checked layouts (DecodeGeometry::of: shapes agree), LSE B·H·N_q floats, the
            //    partials splits·B·H·N_q·(D + 1) floats (grown above), the split counters B·H_kv·row tiles
            //    words (grown above, or null: then the kernel reads none), cache_seqlens B lengths and the table
            //    B·max_pages entries; the kernel clamps every index it reads from them (the module's doc).
            // 3. Block size and dynamic shared memory are the spec's own, raised on the function at load; the
            //    stream belongs to this context, bound above.
            unsafe { args.launch(stream.raw(), &kernel.function, &kernel.name, abi::kernel_parameters(KernelKind::Decode), cfg) }?;
        }
        if let (Some(combine), Some(partial_o), Some(partial_m)) = (combine, partial_o, partial_m) {
            let (po, pm) = (partial_o.as_view(), partial_m.as_view());
            let mut args = KernelArgs::new();
            combine_args(&mut args, [&po, &pm], &mut o, &mut lse, splits, &geometry);
            let programs = rows.div_ceil(flashgen::spec::DECODE_COMBINE_WARPS as usize);
            let cfg = LaunchConfig { grid_dim: (programs as u32, 1, 1), block_dim: (comb.threads(), 1, 1), shared_mem_bytes: combine.shared_bytes };
            // # Safety
            // 1. decode_combine's parameter list, in order and type (checked by `launch`).
            // 2. It reads the splits·rows partials written above on this stream and writes O (its view's
            //    layout) and LSE (rows floats).
            // 3. As above.
            // 4. With the overlapped launch (sm_90), the combine waits for the decode kernel in
            //    griddepcontrol.wait before its first access (templates/fa2_decode_combine.ll.tera).
            let after = if comb.decode_programmatic_combine() { After::Trigger } else { After::Completion };
            unsafe { args.launch_after(stream.raw(), &combine.function, &combine.name, abi::kernel_parameters(KernelKind::DecodeCombine), cfg, after) }?;
        }
        Ok(DecodeRun { plan: *plan, splits })
    }
}

/// Whether `plan`'s kernels compute `problem` (a plan made for another call, as the bench's explicit ones,
/// is refused by name): its features, kinds, dtype and head dim, and its causality when more than one query
/// makes it matter.
fn plan_fits(plan: &DecodePlan, problem: &DecodeProblem, queries: usize) -> Result<(), RuntimeError> {
    let (spec, comb) = (plan.kernel, plan.combine);
    if spec.features().window != problem.window || spec.features().softcap != problem.softcap {
        return Err(RuntimeError::Argument(format!("the call has{}{} but kernel {} computes{}{}: plan it for this call (Flash::decode_plan)", if problem.window { " a window" } else { " no window" }, if problem.softcap { " and softcap" } else { "" }, spec.name(), if spec.features().window { " a window" } else { " no window" }, if spec.features().softcap { " and softcap" } else { "" })));
    }
    if spec.kind() != KernelKind::Decode || comb.kind() != KernelKind::DecodeCombine {
        return Err(RuntimeError::Argument(format!("{} + {} is not a decode plan (decode, then decode_combine)", spec.name(), comb.name())));
    }
    for s in [spec, comb] {
        if s.dtype() != problem.dtype || s.head_dim() != problem.head_dim {
            return Err(RuntimeError::Argument(format!("kernel {} takes {} with HEAD_DIM={}, the call has {} with {}", s.name(), s.dtype().name(), s.head_dim(), problem.dtype.name(), problem.head_dim)));
        }
    }
    // the kernel's causality is the call's as the kernels take it: a window bounded on the right masks
    // as a causal kernel does (kernel_window)
    if spec.causal() != problem.causal && queries > 1 {
        let is = |c: bool| if c { "causal" } else { "not causal" };
        return Err(RuntimeError::Argument(format!("the call is {} (its causal flag and window) but kernel {} is {}: plan it for this call (Flash::decode_plan)", is(problem.causal), spec.name(), is(spec.causal()))));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(name: &'static str, layout: Layout) -> TensorView<'static> {
        unsafe { TensorView::from_raw_parts(name, 0x10000, layout.extent(), DType::Bf16, layout) }.unwrap()
    }
    fn view_mut(name: &'static str, layout: Layout) -> TensorViewMut<'static> {
        unsafe { TensorViewMut::from_raw_parts(name, 0x10000, layout.extent(), DType::Bf16, layout) }.unwrap()
    }
    fn ints(n: usize) -> BufferView<'static, i32> {
        unsafe { BufferView::from_raw_parts(0x20000, n) }
    }

    /// A call on B = 2, H = 8 on H_kv = 2, N_q = 1, D = 128: contiguous (capacity 1024) or paged (pages of
    /// 256, 4 per sequence, a pool of 10).
    fn call(paged: bool, host_lens: Option<&'static [i32]>, host_table: Option<&'static [i32]>, new: usize) -> KvCacheCall<'static> {
        let cache = if paged { Layout::bshd(10, 2, 256, 128) } else { Layout::bshd(2, 2, 1024, 128) };
        KvCacheCall {
            q: view("q", Layout::bshd(2, 8, 1, 128)),
            k_cache: view_mut("k_cache", cache),
            v_cache: view_mut("v_cache", cache),
            cache_seqlens: ints(2),
            host_cache_seqlens: host_lens,
            block_table: paged.then(|| BlockTable { table: ints(8), max_pages: 4, host: host_table }),
            k_new: (new > 0).then(|| view("k_new", Layout::bshd(2, 2, new, 128))),
            v_new: (new > 0).then(|| view("v_new", Layout::bshd(2, 2, new, 128))),
            o: view_mut("o", Layout::bshd(2, 8, 1, 128)),
            lse: None,
            causal: true,
            window: Window::UNBOUNDED,
            softcap: None,
            sm_scale: None,
            num_splits: None,
        }
    }

    /// The values the launches give are exactly the kernels' parameter lists (flashgen::abi), so a name or
    /// kind that drifted fails here, not on the GPU.
    #[test]
    fn launch_values_are_the_parameter_lists() {
        use crate::kernel::argument_order;
        let mut c = call(true, None, None, 1);
        let geometry = KernelGeometry::fixed(2, 8, 2, 1, 1024, true);
        let f = |n| unsafe { BufferViewMut::<f32>::from_raw_parts(0x40000, n) };
        let (mut lse, mut po, mut pm) = (f(16), f(16 * 128 * 4), f(16 * 4));
        let mut counters = unsafe { BufferViewMut::<u32>::from_raw_parts(0x40000, 2 * 2) };
        let (kn, vn) = (c.k_new.unwrap(), c.v_new.unwrap());
        let (lens, table) = (ints(2), ints(8));
        let scalars = Scalars { sm_scale: 0.1, softcap: 0.0, new_tokens: 1, splits: 4, paging: Paging { page_size: 256, pages: 10, max_pages: 4 } };
        let mut args = KernelArgs::new();
        decode_args(&mut args, [&c.q, &kn, &vn], [&mut c.k_cache, &mut c.v_cache, &mut c.o], [&mut lse, &mut po, &mut pm], &mut counters, [&lens, &table], [TensorMap::unused(), TensorMap::unused()], scalars, &geometry);
        argument_order("decode", abi::kernel_parameters(KernelKind::Decode), &args.supplied()).unwrap();
        let (po, pm) = (po.as_view(), pm.as_view());
        let mut args = KernelArgs::new();
        combine_args(&mut args, [&po, &pm], &mut c.o, &mut lse, 4, &geometry);
        argument_order("decode_combine", abi::kernel_parameters(KernelKind::DecodeCombine), &args.supplied()).unwrap();
    }

    #[test]
    fn a_window_bounds_the_keys_the_splits_share() {
        let g = DecodeGeometry::of(&call(false, Some(&[100, 1023]), None, 1)).unwrap();
        assert_eq!(g.visible_keys(Window::UNBOUNDED), 1024);
        assert_eq!(g.visible_keys(Window { left: Some(256), right: None }), 257);
        assert_eq!(g.visible_keys(Window { left: Some(usize::MAX), right: Some(usize::MAX) }), 1024, "no overflow: a huge window is the whole cache");
        // the kernel's view: causal takes the right bound 0, a window the window kernels
        let p = g.problem(DType::Bf16, true, Window { left: Some(256), right: None }, true);
        assert!(p.causal && p.window && p.softcap);
        assert!(!g.problem(DType::Bf16, true, Window::UNBOUNDED, false).window);
    }

    #[test]
    fn a_plan_fits_the_call_as_the_kernels_take_it() {
        let g = DecodeGeometry::of(&call(false, Some(&[100, 1000]), None, 2)).unwrap();
        let plan = |p: &DecodeProblem| flashgen::plan::decode(flashgen::Arch::Sm90a, p).unwrap();
        // a window bounded on both sides of a non-causal call: the kernel is causal (the right bound rides
        // on the diagonal), and the plan made for the call fits it
        let both = g.problem(DType::Bf16, false, Window { left: Some(64), right: Some(8) }, false);
        assert!(both.causal && both.window);
        plan_fits(&plan(&both), &both, 2).unwrap();
        // plans made for another call are refused by name
        let plain = g.problem(DType::Bf16, false, Window::UNBOUNDED, false);
        let causal = g.problem(DType::Bf16, true, Window::UNBOUNDED, false);
        let e = plan_fits(&plan(&plain), &causal, 2).unwrap_err().to_string();
        assert!(e.contains("the call is causal (its causal flag and window) but kernel") && e.contains("is not causal"), "{e}");
        plan_fits(&plan(&plain), &causal, 1).unwrap(); // one query: causality changes nothing
        let e = plan_fits(&plan(&plain), &both, 2).unwrap_err().to_string();
        assert!(e.contains("the call has a window but kernel") && e.contains("computes no window"), "{e}");
        let e = plan_fits(&plan(&plain), &g.problem(DType::F16, false, Window::UNBOUNDED, false), 2).unwrap_err().to_string();
        assert!(e.contains("takes bf16 with HEAD_DIM=128, the call has fp16 with 128"), "{e}");
    }

    #[test]
    fn shapes_and_host_copies_are_checked_before_anything_runs() {
        let g = DecodeGeometry::of(&call(false, Some(&[100, 1023]), None, 1)).unwrap();
        assert_eq!((g.batch, g.heads, g.kv_heads, g.queries, g.new_tokens, g.capacity, g.longest, g.rows()), (2, 8, 2, 1, 1, 1024, 1024, 16));
        let g = DecodeGeometry::of(&call(true, Some(&[0, 1000]), Some(&[3, 9, 9, 9, 0, 1, 2, 4]), 2)).unwrap();
        assert_eq!((g.capacity, g.paging, g.longest), (1024, Some(Paging { page_size: 256, pages: 10, max_pages: 4 }), 1002));
        let e = |c: KvCacheCall<'static>| DecodeGeometry::of(&c).unwrap_err().to_string();
        // lengths past the capacity, past the pages, negative; table entries outside the pool
        assert!(e(call(false, Some(&[100, 1024]), None, 1)).contains("sequence 1: 1024 cached + 1 new tokens exceed the cache's capacity of 1024"));
        assert!(e(call(true, Some(&[0, 1023]), None, 2)).contains("sequence 1: 1023 cached + 2 new tokens exceed its 4 pages of 256 tokens"));
        assert!(e(call(false, Some(&[-1, 5]), None, 0)).contains("sequence 0 has length -1"));
        assert!(e(call(false, Some(&[5]), None, 0)).contains("1 lengths for batch 2"));
        assert!(e(call(true, Some(&[300, 10]), Some(&[3, 10, 0, 0, 1, 2, 3, 4]), 0)).contains("sequence 0's page 1 is 10, outside the pool of 10 pages"));
        assert!(e(call(true, Some(&[10, 10]), Some(&[3, 0, 0, 0, -1, 2, 3, 4]), 0)).contains("sequence 1's page 0 is -1"));
        // entries past a sequence's tokens are not read: any value is fine there
        DecodeGeometry::of(&call(true, Some(&[10, 10]), Some(&[3, -7, 99, 99, 4, 123, 0, 0]), 0)).unwrap();
        // page size, shapes, dtypes
        let mut c = call(true, None, None, 0);
        let bad = Layout::bshd(10, 2, 40, 128);
        c.k_cache = view_mut("k_cache", bad);
        c.v_cache = view_mut("v_cache", bad);
        assert!(e(c).contains("page size 40"));
        let mut c = call(false, None, None, 0);
        c.q = view("q", Layout::bshd(2, 7, 1, 128));
        c.o = view_mut("o", Layout::bshd(2, 7, 1, 128));
        assert!(e(c).contains("multiple of the K/V heads"));
        let mut c = call(false, None, None, 1);
        c.v_new = None;
        assert!(e(c).contains("k_new and v_new come together"));
        let mut c = call(false, None, None, 0);
        c.o = unsafe { TensorViewMut::from_raw_parts("o", 0x10000, 4096, DType::F16, Layout::bshd(2, 8, 1, 128)) }.unwrap();
        assert!(e(c).contains("tensor o is fp16 but q is bf16"));
        let mut c = call(true, None, None, 0);
        c.block_table = Some(BlockTable { table: ints(7), max_pages: 4, host: None });
        assert!(e(c).contains("holds 7 entries"));
        let mut c = call(false, None, None, 0);
        c.num_splits = Some(0);
        assert!(e(c).contains("num_splits 0"));
        let mut c = call(false, None, None, 0);
        c.cache_seqlens = ints(1);
        assert!(e(c).contains("cache_seqlens"));
        assert!(e(call(false, None, None, 1025)).contains("1025 new tokens exceed"));
    }
}
