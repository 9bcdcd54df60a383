//! flashgen's FlashAttention kernels as a candle op, with backward through candle's autograd.
//!
//! ```ignore
//! use flashgen_candle::{flash_attn, Attention};
//! // q (batch, seqlen_q, heads, head_dim), k and v (batch, seqlen_kv, kv_heads, head_dim), bf16 or f16
//! let out = flash_attn(&q, &k, &v, 1.0 / (64f32).sqrt(), /* causal */ true)?;
//! let grads = out.sum_all()?.backward()?; // dq, dk, dv by flashgen's backward kernels
//! // sliding window, softcap, ALiBi, packed sequences: one call description
//! let out = Attention::new(0.125).causal(true).window(Some(4096), Some(0)).softcap(50.0).forward(&q, &k, &v)?;
//! ```
//!
//! Serving: `Attention::with_kvcache` (and `flash_attn_with_kvcache`, flash-attn's name) runs the decode
//! kernels against a KV cache, contiguous or paged, appending the new tokens to it in place (no autograd).
//!
//! The functions keep candle-flash-attn's names and arguments (`flash_attn`, `flash_attn_windowed`,
//! `flash_attn_alibi`, `flash_attn_alibi_windowed`, `flash_attn_varlen`, `flash_attn_varlen_windowed`);
//! `Attention` takes every argument at once. Grouped-query attention (k and v with fewer heads), N_q ≠ N_kv
//! (the causal diagonal bottom-right, as flash-attn's), a V head dim narrower than q's (DeepSeek's 192/128)
//! and head dims 32 to 256 need nothing more than the tensors' shapes.
//!
//! The op reads candle's CUDA storage in place (the runtime's borrowed views: base alignment, strides and
//! extent checked, so a narrowed or transposed tensor works without a copy when the kernels can read it) and
//! queues its kernels on candle's stream of the device. When an input tracks gradients the forward keeps its
//! row statistics (the kernels' base-2 M, which the backward takes as it is) inside the op, which candle's graph
//! holds until the gradients are computed; otherwise it keeps none (an inference call allocates only its output).
//! The shapes are checked by the runtime, in one place, before any launch; this crate checks what it needs to
//! allocate the outputs (ranks and dtypes).
//!
//! candle-core and flashgen-runtime share one cudarc (0.19): candle's `CudaSlice`s and stream are used
//! directly. Without the `cuda` feature the crate builds and its checks run, and every call on a CPU tensor
//! is an error (flashgen has no CPU kernels).

use candle_core::{CpuStorage, CustomOp3, DType, Layout as CandleLayout, Result, Shape, Tensor};
use std::sync::{Arc, Mutex};

#[cfg(feature = "cuda")]
mod gpu;

/// Lets the CUDA memory pool candle allocates from keep the memory candle frees, for its next
/// allocations, instead of giving it back to the driver at every synchronization (the pool's release
/// threshold, 0 by default, set to unbounded: what PyTorch's caching allocator does). candle allocates
/// every op's output from that pool, so with the default a loop that synchronizes (reads a loss, times a
/// batch) has its outputs' memory mapped again after each synchronization: at N 1024 that cost the
/// candle op 5-8% over the runtime's own call (bench/results/2026-12-03-candle-alloc). The pool is the
/// device's, shared by the whole process; the memory stays with it until the process ends (or
/// cuMemPoolTrimTo). Not a CUDA device: an error.
pub fn keep_freed_memory(device: &candle_core::Device) -> Result<()> {
    #[cfg(feature = "cuda")]
    if let candle_core::Device::Cuda(d) = device {
        return gpu::keep_freed_memory(d);
    }
    Err(err(format!("keep_freed_memory: {device:?} is not a CUDA device (or flashgen-candle was built without the `cuda` feature)")))
}

/// Packed variable-length sequences (candle-flash-attn's `flash_attn_varlen`): q (total_q, heads, head_dim),
/// k and v (total_kv, kv_heads, head_dim), sequence i's queries rows `seqlens_q[i]..seqlens_q[i + 1]` of q and
/// its keys rows `seqlens_k[i]..seqlens_k[i + 1]` of k and v. The offsets are u32 (batch + 1,) tensors on the
/// same GPU; the kernels clamp what they read to the tensors, so offsets that lie cannot reach outside them.
#[derive(Clone, Debug)]
pub struct VarLen {
    pub seqlens_q: Tensor,
    pub seqlens_k: Tensor,
    /// The longest sequence's queries and keys (at least the real ones: the grid is sized by them).
    pub max_seqlen_q: usize,
    pub max_seqlen_k: usize,
}

/// A KV cache for `Attention::with_kvcache` (flash-attn's `flash_attn_with_kvcache`): k_cache and v_cache
/// (batch, capacity, kv_heads, head_dim), or with a block table a pool of pages (pages, page_size, kv_heads,
/// head_dim), page_size a multiple of 16; cache_seqlens u32 (batch,): the tokens each sequence's cache holds
/// before the call; block_table u32 (batch, max_pages): sequence i's token t is in page block_table[i][t /
/// page_size]. All on the GPU of q. The kernels clamp what only the GPU holds (lengths to the capacity or the
/// pages, table entries to the pool), so lying lengths or tables cannot reach outside the cache.
#[derive(Clone, Debug)]
pub struct KvCache {
    pub k_cache: Tensor,
    pub v_cache: Tensor,
    pub cache_seqlens: Tensor,
    pub block_table: Option<Tensor>,
}

impl KvCache {
    /// A contiguous cache.
    pub fn new(k_cache: &Tensor, v_cache: &Tensor, cache_seqlens: &Tensor) -> KvCache {
        KvCache { k_cache: k_cache.clone(), v_cache: v_cache.clone(), cache_seqlens: cache_seqlens.clone(), block_table: None }
    }

    /// A paged cache: k_cache and v_cache are the page pool, `block_table` each sequence's pages.
    pub fn paged(mut self, block_table: &Tensor) -> KvCache {
        self.block_table = Some(block_table.clone());
        self
    }
}

/// One attention call: softmax(Q·Kᵀ·softmax_scale [+ ALiBi] [softcap] [mask])·V with flash-attn's arguments.
#[derive(Clone, Debug)]
pub struct Attention {
    pub softmax_scale: f32,
    /// Query i sees key j only when j ≤ i + N_kv − N_q (flash-attn's bottom-right alignment; per sequence
    /// when packed). Rows that see no key give zeros.
    pub causal: bool,
    /// flash-attn's `window_size`: query i sees keys i + N_kv − N_q − left ..= i + N_kv − N_q + right; None
    /// is unbounded on that side (`right: Some(0)` alone is causal).
    pub window_left: Option<usize>,
    pub window_right: Option<usize>,
    /// The scaled score s becomes cap · tanh(s / cap) (Gemma 2's 50); finite and positive.
    pub softcap: Option<f32>,
    /// f32 (heads,): score − slope[h] · |i + N_kv − N_q − j| (flash-attn's ALiBi); not with packed sequences.
    pub alibi_slopes: Option<Tensor>,
    pub varlen: Option<VarLen>,
}

impl Attention {
    /// Plain attention with this scale (flash-attn's default is 1/√head_dim).
    pub fn new(softmax_scale: f32) -> Attention {
        Attention { softmax_scale, causal: false, window_left: None, window_right: None, softcap: None, alibi_slopes: None, varlen: None }
    }

    pub fn causal(mut self, causal: bool) -> Attention {
        self.causal = causal;
        self
    }

    pub fn window(mut self, left: Option<usize>, right: Option<usize>) -> Attention {
        (self.window_left, self.window_right) = (left, right);
        self
    }

    pub fn softcap(mut self, cap: f32) -> Attention {
        self.softcap = Some(cap);
        self
    }

    pub fn alibi(mut self, slopes: &Tensor) -> Attention {
        self.alibi_slopes = Some(slopes.clone());
        self
    }

    pub fn varlen(mut self, seqlens_q: &Tensor, seqlens_k: &Tensor, max_seqlen_q: usize, max_seqlen_k: usize) -> Attention {
        self.varlen = Some(VarLen { seqlens_q: seqlens_q.clone(), seqlens_k: seqlens_k.clone(), max_seqlen_q, max_seqlen_k });
        self
    }

    /// The output, (batch, seqlen_q, heads, v's head_dim) or (total_q, heads, v's head_dim); differentiable
    /// with respect to q, k and v.
    pub fn forward(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<Tensor> {
        // the row statistics only for a backward: candle records the op (and will call its backward) exactly
        // when one of q, k, v tracks gradients; otherwise the runtime's scratch takes them (no allocation, no
        // conversion kernel)
        let keep = if q.track_op() || k.track_op() || v.track_op() { Keep::M } else { Keep::Nothing };
        Ok(self.run(q, k, v, keep)?.0)
    }

    /// As `forward`, also returning the natural-log log-sum-exp of every row, f32 (batch, heads, seqlen_q)
    /// or (heads, total_q) for packed sequences.
    pub fn forward_lse(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let (out, lse) = self.run(q, k, v, Keep::Lse)?;
        let lse = lse.ok_or_else(|| err("the forward wrote no log-sum-exp".into()))?;
        Ok((out, lse))
    }

    /// The backward alone: dq, dk, dv (each shaped like its input; a K/V head's gradient summed over its query
    /// heads) of `forward_lse` given its out and lse and the output gradient dout (what candle's autograd
    /// calls; public for callers that keep their own graph, and for timing).
    pub fn backward(&self, q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, dout: &Tensor, lse: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
        self.check(q, k, v)?;
        same_dtype(q, &[("out", out), ("dout", dout)])?;
        if lse.dtype() != DType::F32 {
            return Err(err(format!("lse is {:?}: the forward's f32 log-sum-exp is expected", lse.dtype())));
        }
        if !q.device().is_cuda() {
            return Err(on_the_cpu());
        }
        #[cfg(feature = "cuda")]
        {
            let op = FlashAttn { call: self.clone(), keep: Keep::Lse, lse: Arc::new(Mutex::new(None)) };
            gpu::backward(&op, q, k, v, out, dout, lse)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(no_cuda_feature())
        }
    }

    /// Decoding against a KV cache: q (batch, seqlen_q, heads, head_dim) — one or a few new tokens per
    /// sequence — attends to each sequence's cached tokens and, when `new` gives them, its new keys and values
    /// (batch, seqlen_new, kv_heads, head_dim), which are first written into the cache after the cached ones
    /// (the caches change in place; nothing else of them does). Causal among the new tokens, a window and
    /// softcap as set on `self`; GQA by the heads' counts. The output is (batch, seqlen_q, heads, head_dim);
    /// no gradient flows through it (an inference call). The cache is split across the chip at run time
    /// (split-KV), so batch 1 reads it at memory speed.
    pub fn with_kvcache(&self, q: &Tensor, cache: &KvCache, new: Option<(&Tensor, &Tensor)>) -> Result<Tensor> {
        self.check_kvcache(q, cache, new)?;
        if !q.device().is_cuda() {
            return Err(on_the_cpu());
        }
        #[cfg(feature = "cuda")]
        {
            gpu::with_kvcache(self, q, cache, new)
        }
        #[cfg(not(feature = "cuda"))]
        {
            Err(no_cuda_feature())
        }
    }

    /// What `with_kvcache` needs to allocate its output and read the lengths and table: ranks, dtypes, and
    /// no argument the decode kernels do not take. The shapes' agreement is the runtime's check.
    fn check_kvcache(&self, q: &Tensor, cache: &KvCache, new: Option<(&Tensor, &Tensor)>) -> Result<()> {
        if self.alibi_slopes.is_some() || self.varlen.is_some() {
            return Err(err("with_kvcache takes no alibi_slopes or packed sequences: the decode kernels have neither (a batch of caches holds sequences of any length already)".into()));
        }
        let mut tensors = vec![("q", q), ("k_cache", &cache.k_cache), ("v_cache", &cache.v_cache)];
        if let Some((k, v)) = new {
            tensors.extend([("k", k), ("v", v)]);
        }
        for (name, t) in &tensors {
            if t.rank() != 4 {
                return Err(err(format!("{name} has shape {:?}: expected 4 dimensions (batch, seqlen, heads, head_dim){}", t.dims(), if name.ends_with("_cache") { ", or (pages, page_size, kv_heads, head_dim) with a block table" } else { "" })));
            }
        }
        half_dtype(q)?;
        same_dtype(q, &tensors[1..])?;
        let lens = &cache.cache_seqlens;
        if lens.dtype() != DType::U32 || lens.rank() != 1 {
            return Err(err(format!("cache_seqlens is {:?} {:?}: expected u32 (batch,), the tokens each sequence's cache holds", lens.dtype(), lens.dims())));
        }
        if let Some(table) = &cache.block_table {
            if table.dtype() != DType::U32 || table.rank() != 2 {
                return Err(err(format!("block_table is {:?} {:?}: expected u32 (batch, max_pages), each sequence's pages of the pool", table.dtype(), table.dims())));
            }
        }
        Ok(())
    }

    fn run(&self, q: &Tensor, k: &Tensor, v: &Tensor, keep: Keep) -> Result<(Tensor, Option<Tensor>)> {
        self.check(q, k, v)?;
        let op = FlashAttn { call: self.clone(), keep, lse: Arc::new(Mutex::new(None)) };
        let lse = op.lse.clone();
        let out = q.apply_op3_arc(k, v, Arc::new(Box::new(op)))?;
        let lse = lse.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok((out, lse))
    }

    /// What the outputs' allocation needs (ranks, dtypes) and the extra tensors' types; the shapes'
    /// agreement, the scale, the window and the softcap are the runtime's checks, made before any launch.
    fn check(&self, q: &Tensor, k: &Tensor, v: &Tensor) -> Result<()> {
        let (rank, form) = match self.varlen {
            None => (4, "(batch, seqlen, heads, head_dim)"),
            Some(_) => (3, "(total_tokens, heads, head_dim) for packed sequences"),
        };
        for (name, t) in [("q", q), ("k", k), ("v", v)] {
            if t.rank() != rank {
                return Err(err(format!("{name} has shape {:?}: expected {rank} dimensions {form}", t.dims())));
            }
        }
        half_dtype(q)?;
        same_dtype(q, &[("k", k), ("v", v)])?;
        if let Some(slopes) = &self.alibi_slopes {
            if self.varlen.is_some() {
                return Err(err(
                    "alibi_slopes with packed sequences: the bias centres on each sequence's own diagonal, which flashgen's ALiBi does not take per sequence; use fixed-length batches".into()
                ));
            }
            if slopes.dtype() != DType::F32 || slopes.rank() != 1 {
                return Err(err(format!("alibi_slopes is {:?} {:?}: expected f32 (heads,), one slope per query head", slopes.dtype(), slopes.dims())));
            }
        }
        if let Some(var) = &self.varlen {
            for (name, t) in [("seqlens_q", &var.seqlens_q), ("seqlens_k", &var.seqlens_k)] {
                if t.dtype() != DType::U32 || t.rank() != 1 {
                    return Err(err(format!("{name} is {:?} {:?}: expected u32 (batch + 1,) offsets, as candle-flash-attn's", t.dtype(), t.dims())));
                }
            }
            for (name, m) in [("max_seqlen_q", var.max_seqlen_q), ("max_seqlen_k", var.max_seqlen_k)] {
                if m == 0 {
                    return Err(err(format!("{name} = 0: the longest sequence's length is expected (the grid is sized by it)")));
                }
            }
        }
        Ok(())
    }
}

/// softmax(Q·Kᵀ·softmax_scale [causal])·V, as candle-flash-attn's `flash_attn`: q (batch, seqlen_q, heads,
/// head_dim), k and v (batch, seqlen_kv, kv_heads, head_dim), bf16 or f16. Differentiable with respect to q, k, v.
pub fn flash_attn(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, causal: bool) -> Result<Tensor> {
    Attention::new(softmax_scale).causal(causal).forward(q, k, v)
}

/// As `flash_attn`, also returning the natural-log log-sum-exp of every row, f32 (batch, heads, seqlen_q).
pub fn flash_attn_lse(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, causal: bool) -> Result<(Tensor, Tensor)> {
    Attention::new(softmax_scale).causal(causal).forward_lse(q, k, v)
}

/// The backward alone of `flash_attn_lse(q, k, v, softmax_scale, causal)` (`Attention::backward`).
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_bwd(q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, dout: &Tensor, lse: &Tensor, softmax_scale: f32, causal: bool) -> Result<(Tensor, Tensor, Tensor)> {
    Attention::new(softmax_scale).causal(causal).backward(q, k, v, out, dout, lse)
}

/// A sliding window (candle-flash-attn's `flash_attn_windowed`): `window_size_right: Some(0)` is causal.
pub fn flash_attn_windowed(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, window_size_left: Option<usize>, window_size_right: Option<usize>) -> Result<Tensor> {
    Attention::new(softmax_scale).window(window_size_left, window_size_right).forward(q, k, v)
}

/// ALiBi with f32 (heads,) slopes (candle-flash-attn's `flash_attn_alibi`).
pub fn flash_attn_alibi(q: &Tensor, k: &Tensor, v: &Tensor, alibi_slopes: &Tensor, softmax_scale: f32, causal: bool) -> Result<Tensor> {
    Attention::new(softmax_scale).causal(causal).alibi(alibi_slopes).forward(q, k, v)
}

/// ALiBi and a sliding window (candle-flash-attn's `flash_attn_alibi_windowed`).
pub fn flash_attn_alibi_windowed(q: &Tensor, k: &Tensor, v: &Tensor, alibi_slopes: &Tensor, softmax_scale: f32, window_size_left: Option<usize>, window_size_right: Option<usize>) -> Result<Tensor> {
    Attention::new(softmax_scale).alibi(alibi_slopes).window(window_size_left, window_size_right).forward(q, k, v)
}

/// Packed variable-length sequences (candle-flash-attn's `flash_attn_varlen`; `VarLen` says how).
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen(q: &Tensor, k: &Tensor, v: &Tensor, seqlens_q: &Tensor, seqlens_k: &Tensor, max_seqlen_q: usize, max_seqlen_k: usize, softmax_scale: f32, causal: bool) -> Result<Tensor> {
    Attention::new(softmax_scale).causal(causal).varlen(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k).forward(q, k, v)
}

/// Packed variable-length sequences with a sliding window (candle-flash-attn's `flash_attn_varlen_windowed`).
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_varlen_windowed(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    seqlens_q: &Tensor,
    seqlens_k: &Tensor,
    max_seqlen_q: usize,
    max_seqlen_k: usize,
    softmax_scale: f32,
    window_size_left: Option<usize>,
    window_size_right: Option<usize>,
) -> Result<Tensor> {
    Attention::new(softmax_scale).varlen(seqlens_q, seqlens_k, max_seqlen_q, max_seqlen_k).window(window_size_left, window_size_right).forward(q, k, v)
}

/// Attention against a KV cache (flash-attn's `flash_attn_with_kvcache`, its argument order): `k` and `v`
/// the new tokens to append (both or neither), `block_table` for a paged cache; `Attention::with_kvcache`
/// with `KvCache` takes windows and softcap too.
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_with_kvcache(
    q: &Tensor,
    k_cache: &Tensor,
    v_cache: &Tensor,
    k: Option<&Tensor>,
    v: Option<&Tensor>,
    cache_seqlens: &Tensor,
    block_table: Option<&Tensor>,
    softmax_scale: f32,
    causal: bool,
) -> Result<Tensor> {
    let new = match (k, v) {
        (Some(k), Some(v)) => Some((k, v)),
        (None, None) => None,
        _ => return Err(err("k and v (the new tokens) come together: both to append them to the cache, neither to read it only".into())),
    };
    let mut cache = KvCache::new(k_cache, v_cache, cache_seqlens);
    if let Some(t) = block_table {
        cache = cache.paged(t);
    }
    Attention::new(softmax_scale).causal(causal).with_kvcache(q, &cache, new)
}

/// The op itself, for `Tensor::apply_op3_arc`: one instance per call (it keeps that call's statistics for the
/// backward). Made by `Attention`'s calls, which check the arguments first.
pub struct FlashAttn {
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    call: Attention,
    /// The row statistics the forward keeps: none, the natural-log LSE, or the kernels' base-2 M.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    keep: Keep,
    /// The forward's statistics as `keep` says, f32 (batch, heads, seqlen_q) or (heads, total_q): written by
    /// the forward, read by the backward.
    lse: Arc<Mutex<Option<Tensor>>>,
}

/// The row statistics a forward keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// None: nothing will read them (no input tracks a gradient); the runtime's scratch takes them.
    Nothing,
    /// The natural-log LSE, for forward_lse's caller (and the backward, which converts it).
    Lse,
    /// The kernels' base-2 M = m + log2(l), for candle's backward alone: no conversion kernel either way.
    M,
}

/// q's dtype is one the kernels take.
fn half_dtype(q: &Tensor) -> Result<()> {
    if !matches!(q.dtype(), DType::BF16 | DType::F16) {
        return Err(err(format!("q is {:?}: flashgen takes bf16 or f16", q.dtype())));
    }
    Ok(())
}

/// Every named tensor has q's dtype.
fn same_dtype(q: &Tensor, others: &[(&str, &Tensor)]) -> Result<()> {
    for (name, t) in others {
        if t.dtype() != q.dtype() {
            return Err(err(format!("{name} is {:?} but q is {:?}: all must share one dtype", t.dtype(), q.dtype())));
        }
    }
    Ok(())
}

fn err(msg: String) -> candle_core::Error {
    candle_core::Error::Msg(format!("flashgen: {msg}"))
}

fn on_the_cpu() -> candle_core::Error {
    err("q, k, v are on the CPU: flashgen runs on CUDA tensors (Device::new_cuda)".into())
}

#[cfg(not(feature = "cuda"))]
fn no_cuda_feature() -> candle_core::Error {
    err("built without the `cuda` feature: enable flashgen-candle's `cuda` feature for the GPU".into())
}

impl CustomOp3 for FlashAttn {
    fn name(&self) -> &'static str {
        "flashgen-flash-attn"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &CandleLayout, _: &CpuStorage, _: &CandleLayout, _: &CpuStorage, _: &CandleLayout) -> Result<(CpuStorage, Shape)> {
        Err(on_the_cpu())
    }

    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        q: &candle_core::CudaStorage,
        lq: &CandleLayout,
        k: &candle_core::CudaStorage,
        lk: &CandleLayout,
        v: &candle_core::CudaStorage,
        lv: &CandleLayout,
    ) -> Result<(candle_core::CudaStorage, Shape)> {
        let (o, lse) = gpu::forward(self, (q, lq), (k, lk), (v, lv))?;
        *self.lse.lock().unwrap_or_else(|p| p.into_inner()) = lse;
        Ok(o)
    }

    fn bwd(&self, q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, grad_out: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        #[cfg(feature = "cuda")]
        {
            let lse = self.lse.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let lse = lse.ok_or_else(|| err("backward of a forward that kept no log-sum-exp (q, k and v tracked no gradient when it ran)".into()))?;
            let (dq, dk, dv) = gpu::backward(self, q, k, v, out, grad_out, &lse)?;
            Ok((Some(dq), Some(dk), Some(dv)))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (q, k, v, out, grad_out);
            Err(no_cuda_feature())
        }
    }
}
