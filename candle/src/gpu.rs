//! The calls on candle's CUDA storage: views of q, k, v (and the backward's tensors) where candle keeps them,
//! outputs allocated through candle's device, the runtime's calls queued on candle's stream.

use super::{err, Attention, FlashAttn, Keep, KvCache};
use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::{CudaDType, CudaDevice};
use candle_core::op::BackpropOp;
use candle_core::{CudaStorage, DType, Layout as CandleLayout, Result, Shape, Storage, Tensor};
use flashgen::mods::builtins;
use flashgen_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};
use flashgen_runtime::{
    BackwardCall, BlockTable, BufferView, BufferViewMut, CallModifiers, CausalAlign, Flash, ForwardCall, Gpu, KernelCache, KvCacheCall, Layout, ModTensor, StatsIn, StatsOut, Stream, TensorView, TensorViewMut, VarLen,
    Window,
};
use std::sync::{Arc, Mutex};

/// One `Flash` per device ordinal, shared by every op on that device (its calls take `&self`).
static FLASHES: Mutex<Vec<Option<Arc<Flash>>>> = Mutex::new(Vec::new());

/// The name ALiBi's slopes go by in the score_mod it becomes.
const ALIBI: &str = "alibi_slopes";

fn flash_for(ordinal: usize) -> Result<Arc<Flash>> {
    let mut flashes = FLASHES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Some(f)) = flashes.get(ordinal) {
        return Ok(f.clone());
    }
    let flash = Arc::new(Flash::new(Gpu::open(ordinal).map_err(|e| err(e.to_string()))?, KernelCache::from_env()));
    if flashes.len() <= ordinal {
        flashes.resize(ordinal + 1, None);
    }
    flashes[ordinal] = Some(flash.clone());
    Ok(flash)
}

/// `keep_freed_memory` on one CUDA device: the release threshold of the pool its stream allocates from.
pub fn keep_freed_memory(dev: &CudaDevice) -> Result<()> {
    use flashgen_runtime::cudarc::driver::{result, sys};
    let ctx = dev.cuda_stream().context().clone();
    ctx.bind_to_thread().map_err(|e| err(e.to_string()))?;
    let mut threshold = u64::MAX;
    // SAFETY: the device of a live context, bound above; the attribute takes a u64 (cuMemPoolSetAttribute)
    unsafe {
        let pool = result::device::get_default_mem_pool(ctx.cu_device()).map_err(|e| err(e.to_string()))?;
        result::mem_pool::set_attribute(pool, sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, (&mut threshold as *mut u64).cast())
    }
    .map_err(|e| err(e.to_string()))
}

fn flashgen_dtype(dtype: DType) -> Result<flashgen::DType> {
    match dtype {
        DType::BF16 => Ok(flashgen::DType::Bf16),
        DType::F16 => Ok(flashgen::DType::F16),
        other => Err(err(format!("{other:?}: flashgen takes bf16 or f16"))),
    }
}

/// candle's (B, N, H, D) layout, or a packed (total, H, D) one as B = 1, as the runtime's [Z, H, N, D]; a
/// size-1 dimension's stride (which addresses nothing) is replaced by one the kernels accept.
fn layout_of(l: &CandleLayout) -> Layout {
    let (d, s) = (l.dims(), l.stride());
    let (d, mut s) = match d.len() {
        3 => ([1, d[0], d[1], d[2]], [d[0] * s[0], s[0], s[1], s[2]]),
        _ => ([d[0], d[1], d[2], d[3]], [s[0], s[1], s[2], s[3]]),
    };
    let reach = d.iter().zip(&s).map(|(&n, &st)| n * st).max().unwrap_or(1);
    for i in 0..3 {
        if d[i] == 1 && s[i] % 8 != 0 {
            s[i] = reach.div_ceil(8) * 8;
        }
    }
    Layout { shape: [d[0], d[2], d[1], d[3]], strides: [s[0], s[2], s[1], s[3]] }
}

/// A slice's device address and its length past `offset` elements, read on `stream` (cudarc records the
/// read when the guard drops: keep it until the launch is queued).
fn addr<'a, T: DeviceRepr>(slice: &'a CudaSlice<T>, offset: usize, stream: &'a Arc<CudaStream>) -> Result<(u64, usize, impl Drop + 'a)> {
    let available = slice.len().checked_sub(offset).ok_or_else(|| err(format!("offset {offset} past a {}-element buffer", slice.len())))?;
    let (ptr, guard) = slice.device_ptr(stream);
    Ok((ptr + (offset * std::mem::size_of::<T>()) as u64, available, guard))
}

fn view<'a>(name: &'static str, addr: u64, available: usize, dtype: flashgen::DType, layout: Layout) -> Result<TensorView<'a>> {
    // SAFETY: `addr` is inside candle's allocation of `available` elements, on the device whose primary
    // context the Flash uses, and the storage outlives the call (its guard is held by the caller).
    unsafe { TensorView::from_raw_parts(name, addr, available, dtype, layout) }.map_err(|e| err(e.to_string()))
}

fn view_mut<'a>(name: &'static str, addr: u64, available: usize, dtype: flashgen::DType, layout: Layout) -> Result<TensorViewMut<'a>> {
    // SAFETY: as `view`; the slice was allocated for this call and nothing else uses it yet.
    unsafe { TensorViewMut::from_raw_parts(name, addr, available, dtype, layout) }.map_err(|e| err(e.to_string()))
}

fn device_of(s: &CudaStorage) -> (CudaDevice, Arc<CudaStream>) {
    let dev = s.device().clone();
    let stream = dev.cuda_stream();
    (dev, stream)
}

fn cuda<'a>(name: &str, s: &'a Storage) -> Result<&'a CudaStorage> {
    match s {
        Storage::Cuda(c) => Ok(c),
        _ => Err(err(format!("{name} is not on a CUDA device"))),
    }
}

/// A contiguous tensor of `T` (ALiBi's slopes, the packed sequences' offsets, a cache's lengths and block
/// table) as (address, elements, the read's guard), from its held storage.
fn contiguous<'a, T: CudaDType + DeviceRepr + 'a>(name: &str, s: &'a Storage, l: &CandleLayout, stream: &'a Arc<CudaStream>) -> Result<(u64, usize, impl Drop + 'a)> {
    if !l.is_contiguous() {
        return Err(err(format!("{name} has strides {:?}: a contiguous tensor is expected", l.stride())));
    }
    let (a, available, guard) = addr(cuda(name, s)?.as_cuda_slice::<T>()?, l.start_offset(), stream)?;
    Ok((a, available.min(l.shape().elem_count()), guard))
}

/// `contiguous`, called with the address and length while the storage is held.
fn with_buffer<T: CudaDType + DeviceRepr, R>(name: &str, t: &Tensor, stream: &Arc<CudaStream>, f: impl FnOnce(u64, usize) -> Result<R>) -> Result<R> {
    let (s, l) = t.storage_and_layout();
    let (a, n, _guard) = contiguous::<T>(name, &s, l, stream)?;
    f(a, n)
}

/// The call's extras as the runtime takes them (the packed sequences' offsets, ALiBi's slopes as a score_mod),
/// alive while `f` queues the call. `offset` is N_kv − N_q of a fixed-length batch (ALiBi centres on it).
fn with_extras<R>(call: &Attention, offset: i64, stream: &Arc<CudaStream>, f: impl FnOnce(Option<VarLen<'_>>, Option<CallModifiers<'_>>) -> Result<R>) -> Result<R> {
    let with_slopes = |f: &mut dyn FnMut(Option<CallModifiers<'_>>) -> Result<R>| -> Result<R> {
        let Some(slopes) = &call.alibi_slopes else {
            return f(None);
        };
        let score = builtins::alibi_symmetric(ALIBI, offset).map_err(|e| err(e.to_string()))?;
        with_buffer::<f32, R>(ALIBI, slopes, stream, |a, n| {
            // SAFETY: `n` f32 of the slopes' storage, held by `with_buffer` while the call is queued
            let slopes = ModTensor::F32(unsafe { BufferView::from_raw_parts(a, n) });
            f(Some(CallModifiers { score: Some(score.clone()), mask: None, tensors: vec![(ALIBI, slopes)] }))
        })
    };
    let mut f = Some(f);
    let Some(var) = &call.varlen else {
        return with_slopes(&mut |mods| (f.take().expect("called once"))(None, mods));
    };
    // u32 offsets read as the kernels' i32 (equal below 2^31 tokens, which the runtime's row count bounds)
    with_buffer::<u32, R>("seqlens_q", &var.seqlens_q, stream, |qa, qn| {
        with_buffer::<u32, R>("seqlens_k", &var.seqlens_k, stream, |ka, kn| {
            // SAFETY: the offsets' storages, held by `with_buffer` while the call is queued
            let (cu_seqlens_q, cu_seqlens_k) = unsafe { (BufferView::from_raw_parts(qa, qn), BufferView::from_raw_parts(ka, kn)) };
            let varlen = VarLen { cu_seqlens_q, cu_seqlens_k, max_seqlen_q: var.max_seqlen_q, max_seqlen_k: var.max_seqlen_k, host_cu_seqlens_q: None, host_cu_seqlens_k: None };
            let mut varlen = Some(varlen);
            with_slopes(&mut |mods| (f.take().expect("called once"))(varlen.take(), mods))
        })
    })
}

fn window_of(call: &Attention) -> Window {
    Window { left: call.window_left, right: call.window_right }
}

/// N_kv − N_q of a fixed-length batch (its causal diagonal's and ALiBi's offset); 0 when packed.
fn offset_of(q: &Layout, k: &Layout, packed: bool) -> i64 {
    if packed {
        0
    } else {
        k.shape[2] as i64 - q.shape[2] as i64
    }
}

pub fn forward(op: &FlashAttn, q: (&CudaStorage, &CandleLayout), k: (&CudaStorage, &CandleLayout), v: (&CudaStorage, &CandleLayout)) -> Result<((CudaStorage, Shape), Option<Tensor>)> {
    match q.0.dtype() {
        DType::BF16 => forward_typed::<half::bf16>(op, q, k, v),
        DType::F16 => forward_typed::<half::f16>(op, q, k, v),
        other => Err(err(format!("q is {other:?}: flashgen takes bf16 or f16"))),
    }
}

fn forward_typed<T: CudaDType + DeviceRepr>(
    op: &FlashAttn,
    (q, lq): (&CudaStorage, &CandleLayout),
    (k, lk): (&CudaStorage, &CandleLayout),
    (v, lv): (&CudaStorage, &CandleLayout),
) -> Result<((CudaStorage, Shape), Option<Tensor>)> {
    let dtype = flashgen_dtype(q.dtype())?;
    let (dev, stream) = device_of(q);
    let flash = flash_for(stream.context().ordinal())?;
    let (qs, ks, vs) = (q.as_cuda_slice::<T>()?, k.as_cuda_slice::<T>()?, v.as_cuda_slice::<T>()?);
    let (qa, qn, _g1) = addr(qs, lq.start_offset(), &stream)?;
    let (ka, kn, _g2) = addr(ks, lk.start_offset(), &stream)?;
    let (va, vn, _g3) = addr(vs, lv.start_offset(), &stream)?;
    let (layout_q, layout_k, layout_v) = (layout_of(lq), layout_of(lk), layout_of(lv));
    // out is q's shape with v's head dim; the statistics one f32 per query row and head
    let ([b, h, n, _], dv) = (layout_q.shape, layout_v.shape[3]);
    let packed = op.call.varlen.is_some();
    let (out_shape, lse_shape) = if packed { (Shape::from((n, h, dv)), Shape::from((h, n))) } else { (Shape::from((b, n, h, dv)), Shape::from((b, h, n))) };
    // SAFETY: written in full by the kernel before anything reads it
    let o: CudaSlice<T> = unsafe { dev.alloc::<T>((b * n * h * dv).max(1)) }?;
    // SAFETY: written in full by the kernel before anything reads it
    let lse: Option<CudaSlice<f32>> = if op.keep == Keep::Nothing { None } else { Some(unsafe { dev.alloc::<f32>((b * h * n).max(1)) }?) };
    {
        let (oa, on, _g4) = addr(&o, 0, &stream)?;
        let lse_addr = lse.as_ref().map(|l| addr(l, 0, &stream)).transpose()?;
        let stats = match &lse_addr {
            // SAFETY: the f32 slice just allocated, `ln` >= B·H·N floats
            Some((la, ln, _g5)) => {
                let view = unsafe { BufferViewMut::from_raw_parts(*la, *ln) };
                if op.keep == Keep::M {
                    StatsOut::M(view)
                } else {
                    StatsOut::Lse(view)
                }
            }
            None => StatsOut::Discard,
        };
        let (q, k, v) = (view("q", qa, qn, dtype, layout_q)?, view("k", ka, kn, dtype, layout_k)?, view("v", va, vn, dtype, layout_v)?);
        let o = view_mut("out", oa, on, dtype, Layout::bshd(b, h, n, dv))?;
        let call = &op.call;
        with_extras(call, offset_of(&layout_q, &layout_k, packed), &stream, |varlen, modifiers| {
            let call = ForwardCall {
                q,
                k,
                v,
                o,
                stats,
                causal: call.causal,
                align: CausalAlign::BottomRight,
                sm_scale: Some(call.softmax_scale),
                varlen,
                window: window_of(call),
                softcap: call.softcap,
                modifiers,
            };
            // SAFETY: candle's stream of this device (the primary context), alive while the device is
            let s = unsafe { Stream::from_raw(stream.cu_stream()) };
            flash.forward(call, s).map_err(|e| err(e.to_string()))
        })?;
    }
    let lse = lse.map(|l| Tensor::from_storage(Storage::Cuda(CudaStorage::wrap_cuda_slice(l, dev.clone())), lse_shape, BackpropOp::none(), false));
    Ok(((CudaStorage::wrap_cuda_slice(o, dev), out_shape), lse))
}

pub fn backward(op: &FlashAttn, q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, grad_out: &Tensor, lse: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    // dO arrives in whatever layout the graph made it (broadcast from a sum, say): the kernels need
    // 16-byte chunks, so a layout they cannot read is copied once
    let grad_out = grad_out.contiguous()?;
    let grad_out = if grad_out.layout().start_offset() % 8 != 0 { grad_out.copy()? } else { grad_out };
    let lse = lse.contiguous()?;
    match q.dtype() {
        DType::BF16 => backward_typed::<half::bf16>(op, q, k, v, out, &grad_out, &lse),
        DType::F16 => backward_typed::<half::f16>(op, q, k, v, out, &grad_out, &lse),
        other => Err(err(format!("q is {other:?}: flashgen takes bf16 or f16"))),
    }
}

fn backward_typed<T: CudaDType + DeviceRepr>(op: &FlashAttn, q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, d_o: &Tensor, lse: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let dtype = flashgen_dtype(q.dtype())?;
    let (sq, lq) = q.storage_and_layout();
    let (sk, lk) = k.storage_and_layout();
    let (sv, lv) = v.storage_and_layout();
    let (so, lo) = out.storage_and_layout();
    let (sd, ld) = d_o.storage_and_layout();
    let (sl, ll) = lse.storage_and_layout();
    let (cq, ck, cv, co, cd, cl) = (cuda("q", &sq)?, cuda("k", &sk)?, cuda("v", &sv)?, cuda("out", &so)?, cuda("dout", &sd)?, cuda("lse", &sl)?);
    let (dev, stream) = device_of(cq);
    let flash = flash_for(stream.context().ordinal())?;
    let (qa, qn, _g1) = addr(cq.as_cuda_slice::<T>()?, lq.start_offset(), &stream)?;
    let (ka, kn, _g2) = addr(ck.as_cuda_slice::<T>()?, lk.start_offset(), &stream)?;
    let (va, vn, _g3) = addr(cv.as_cuda_slice::<T>()?, lv.start_offset(), &stream)?;
    let (oa, on, _g4) = addr(co.as_cuda_slice::<T>()?, lo.start_offset(), &stream)?;
    let (da, dn, _g5) = addr(cd.as_cuda_slice::<T>()?, ld.start_offset(), &stream)?;
    let (la, ln, _g6) = addr(cl.as_cuda_slice::<f32>()?, ll.start_offset(), &stream)?;
    let (layout_q, layout_k, layout_v) = (layout_of(lq), layout_of(lk), layout_of(lv));
    let alloc = |l: &Layout| -> Result<CudaSlice<T>> {
        let [b, h, n, d] = l.shape;
        // SAFETY: written in full by the backward kernels
        unsafe { dev.alloc::<T>((b * h * n * d).max(1)) }
    };
    let (gq, gk, gv) = (alloc(&layout_q)?, alloc(&layout_k)?, alloc(&layout_v)?);
    {
        let (gqa, gqn, _g7) = addr(&gq, 0, &stream)?;
        let (gka, gkn, _g8) = addr(&gk, 0, &stream)?;
        let (gva, gvn, _g9) = addr(&gv, 0, &stream)?;
        let bshd = |l: &Layout| Layout::bshd(l.shape[0], l.shape[1], l.shape[2], l.shape[3]);
        // SAFETY: the forward's f32 statistics, `ln` floats from the tensor's start, held alive by the caller
        let stats = unsafe { BufferView::from_raw_parts(la, ln.min(lse.elem_count())) };
        let stats = if op.keep == Keep::M { StatsIn::M(stats) } else { StatsIn::Lse(stats) };
        let (q_view, k_view, v_view) = (view("q", qa, qn, dtype, layout_q)?, view("k", ka, kn, dtype, layout_k)?, view("v", va, vn, dtype, layout_v)?);
        let (o_view, d_o_view) = (view("out", oa, on, dtype, layout_of(lo))?, view("dout", da, dn, dtype, layout_of(ld))?);
        let (dq, dk, dv) = (view_mut("dq", gqa, gqn, dtype, bshd(&layout_q))?, view_mut("dk", gka, gkn, dtype, bshd(&layout_k))?, view_mut("dv", gva, gvn, dtype, bshd(&layout_v))?);
        let call = &op.call;
        with_extras(call, offset_of(&layout_q, &layout_k, call.varlen.is_some()), &stream, |varlen, modifiers| {
            let call = BackwardCall {
                q: q_view,
                k: k_view,
                v: v_view,
                o: o_view,
                d_o: d_o_view,
                stats,
                dq,
                dk,
                dv,
                causal: call.causal,
                align: CausalAlign::BottomRight,
                sm_scale: Some(call.softmax_scale),
                varlen,
                window: window_of(call),
                softcap: call.softcap,
                modifiers,
            };
            // SAFETY: candle's stream of this device, as in the forward
            let s = unsafe { Stream::from_raw(stream.cu_stream()) };
            flash.backward(call, s).map_err(|e| err(e.to_string()))
        })?;
    }
    let wrap = |slice: CudaSlice<T>, dims: &[usize]| Tensor::from_storage(Storage::Cuda(CudaStorage::wrap_cuda_slice(slice, dev.clone())), dims, BackpropOp::none(), false);
    Ok((wrap(gq, q.dims()), wrap(gk, k.dims()), wrap(gv, v.dims())))
}

pub fn with_kvcache(call: &Attention, q: &Tensor, cache: &KvCache, new: Option<(&Tensor, &Tensor)>) -> Result<Tensor> {
    match q.dtype() {
        DType::BF16 => with_kvcache_typed::<half::bf16>(call, q, cache, new),
        DType::F16 => with_kvcache_typed::<half::f16>(call, q, cache, new),
        other => Err(err(format!("q is {other:?}: flashgen takes bf16 or f16"))),
    }
}

/// The decode call on candle's storages. The caches are written through the addresses of their (shared)
/// storages: candle has no in-place op over two tensors, and the new tokens' rows are the only ones written
/// (device memory that no Rust reference covers; candle's one stream per device orders it with every other use).
fn with_kvcache_typed<T: CudaDType + DeviceRepr>(call: &Attention, q: &Tensor, cache: &KvCache, new: Option<(&Tensor, &Tensor)>) -> Result<Tensor> {
    let dtype = flashgen_dtype(q.dtype())?;
    let (sq, lq) = q.storage_and_layout();
    let (skc, lkc) = cache.k_cache.storage_and_layout();
    let (svc, lvc) = cache.v_cache.storage_and_layout();
    let cq = cuda("q", &sq)?;
    let (dev, stream) = device_of(cq);
    let flash = flash_for(stream.context().ordinal())?;
    let (qa, qn, _g1) = addr(cq.as_cuda_slice::<T>()?, lq.start_offset(), &stream)?;
    let (kca, kcn, _g2) = addr(cuda("k_cache", &skc)?.as_cuda_slice::<T>()?, lkc.start_offset(), &stream)?;
    let (vca, vcn, _g3) = addr(cuda("v_cache", &svc)?.as_cuda_slice::<T>()?, lvc.start_offset(), &stream)?;
    let layout_q = layout_of(lq);
    let [b, h, n, d] = layout_q.shape;
    // SAFETY: written in full by the kernels before anything reads it
    let o: CudaSlice<T> = unsafe { dev.alloc::<T>((b * n * h * d).max(1)) }?;
    {
        let (oa, on, _g4) = addr(&o, 0, &stream)?;
        let new_storages = new.map(|(k, v)| (k.storage_and_layout(), v.storage_and_layout()));
        let new_addrs = match &new_storages {
            Some(((sk, lk), (sv, lv))) => Some((
                addr(cuda("k", sk)?.as_cuda_slice::<T>()?, lk.start_offset(), &stream)?,
                addr(cuda("v", sv)?.as_cuda_slice::<T>()?, lv.start_offset(), &stream)?,
                layout_of(lk),
                layout_of(lv),
            )),
            None => None,
        };
        let (k_new, v_new) = match &new_addrs {
            Some(((ka, kn, _), (va, vn, _), lk, lv)) => (Some(view("k", *ka, *kn, dtype, *lk)?), Some(view("v", *va, *vn, dtype, *lv)?)),
            None => (None, None),
        };
        // the lengths and the table: u32 storages read as the kernels' i32 (a value past 2^31 reads negative and
        // is clamped like any other lie: to the cache, to the pool)
        let (ls, ll) = cache.cache_seqlens.storage_and_layout();
        let (la, ln, _g5) = contiguous::<u32>("cache_seqlens", &ls, ll, &stream)?;
        let table_storage = cache.block_table.as_ref().map(|t| (t.dims()[1], t.storage_and_layout()));
        let table = match &table_storage {
            Some((max_pages, (ts, tl))) => Some((*max_pages, contiguous::<u32>("block_table", ts, tl, &stream)?)),
            None => None,
        };
        let decode = KvCacheCall {
            q: view("q", qa, qn, dtype, layout_q)?,
            k_cache: view_mut("k_cache", kca, kcn, dtype, layout_of(lkc))?,
            v_cache: view_mut("v_cache", vca, vcn, dtype, layout_of(lvc))?,
            // SAFETY (the lengths and the table): their storages, held above until the call is queued
            cache_seqlens: unsafe { BufferView::from_raw_parts(la, ln) },
            host_cache_seqlens: None,
            block_table: table.as_ref().map(|(max_pages, (ta, tn, _))| BlockTable { table: unsafe { BufferView::from_raw_parts(*ta, *tn) }, max_pages: *max_pages, host: None }),
            k_new,
            v_new,
            o: view_mut("out", oa, on, dtype, Layout::bshd(b, h, n, d))?,
            lse: None,
            causal: call.causal,
            window: window_of(call),
            softcap: call.softcap,
            sm_scale: Some(call.softmax_scale),
            num_splits: None,
        };
        // SAFETY: candle's stream of this device, as in the forward
        let s = unsafe { Stream::from_raw(stream.cu_stream()) };
        flash.attention_with_kvcache(decode, s).map_err(|e| err(e.to_string()))?;
    }
    Ok(Tensor::from_storage(Storage::Cuda(CudaStorage::wrap_cuda_slice(o, dev)), (b, n, h, d), BackpropOp::none(), false))
}
