//! flashgen's FlashAttention-2 kernels as a candle op, with backward through candle's autograd.
//!
//! ```ignore
//! use flashgen_candle::flash_attn;
//! // q, k, v: (batch, seqlen, heads, head_dim), bf16 or f16, on one CUDA device
//! let out = flash_attn(&q, &k, &v, 1.0 / (64f32).sqrt(), /* causal */ true)?;
//! let grads = out.sum_all()?.backward()?; // dq, dk, dv by flashgen's backward kernels
//! ```
//!
//! The op reads candle's CUDA storage in place (the runtime's borrowed views: base alignment, strides and
//! extent checked, so a narrowed or transposed tensor works without a copy when the kernels can read it) and
//! queues its kernels on candle's stream of the device. When an input tracks gradients the forward keeps its
//! row statistics (the kernels' base-2 M, which the backward takes as it is) inside the op, which candle's graph
//! holds until the gradients are computed; otherwise it keeps none (an inference call allocates only its output).
//!
//! candle-core and flashgen-runtime share one cudarc (0.19): candle's `CudaSlice`s and stream are used
//! directly. Without the `cuda` feature the crate builds and its checks run, and every call on a CPU tensor
//! is an error (flashgen has no CPU kernels).

use candle_core::{CpuStorage, CustomOp3, DType, Layout as CandleLayout, Result, Shape, Tensor};
use std::sync::{Arc, Mutex};

/// softmax(Q·Kᵀ·softmax_scale [causal])·V for q, k, v in flash-attn's (batch, seqlen, heads, head_dim)
/// layout, bf16 or f16 (as candle-flash-attn's `flash_attn`). Differentiable with respect to q, k and v.
pub fn flash_attn(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, causal: bool) -> Result<Tensor> {
    // the row statistics only for a backward: candle records the op (and will call its backward) exactly
    // when one of q, k, v tracks gradients; otherwise the runtime's scratch takes them (no allocation, no
    // conversion kernel)
    let keep = if q.track_op() || k.track_op() || v.track_op() { Keep::M } else { Keep::Nothing };
    Ok(attention(q, k, v, softmax_scale, causal, keep)?.0)
}

/// As `flash_attn`, also returning the natural-log log-sum-exp of every row, f32 (batch, heads, seqlen).
pub fn flash_attn_lse(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, causal: bool) -> Result<(Tensor, Tensor)> {
    let (out, lse) = attention(q, k, v, softmax_scale, causal, Keep::Lse)?;
    let lse = lse.ok_or_else(|| candle_core::Error::Msg("flashgen: the forward wrote no log-sum-exp".into()))?;
    Ok((out, lse))
}

fn attention(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32, causal: bool, keep: Keep) -> Result<(Tensor, Option<Tensor>)> {
    check(q, k, v, softmax_scale)?;
    let op = FlashAttn { softmax_scale, causal, keep, lse: Arc::new(Mutex::new(None)) };
    let lse = op.lse.clone();
    let out = q.apply_op3_arc(k, v, Arc::new(Box::new(op)))?;
    let lse = lse.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok((out, lse))
}

/// The backward alone: dq, dk, dv of `flash_attn_lse(q, k, v, softmax_scale, causal)` given its out and lse
/// and the output gradient dout (what candle's autograd calls; public for callers that keep their own graph,
/// and for timing).
#[allow(clippy::too_many_arguments)]
pub fn flash_attn_bwd(q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, dout: &Tensor, lse: &Tensor, softmax_scale: f32, causal: bool) -> Result<(Tensor, Tensor, Tensor)> {
    check(q, k, v, softmax_scale)?;
    for (name, t) in [("out", out), ("dout", dout)] {
        if t.dims() != q.dims() || t.dtype() != q.dtype() {
            return Err(err(format!("{name} is {:?} {:?} but q is {:?} {:?}: they must match", t.dtype(), t.dims(), q.dtype(), q.dims())));
        }
    }
    let (b, n, h, _) = q.dims4()?;
    if lse.dims() != [b, h, n] || lse.dtype() != DType::F32 {
        return Err(err(format!("lse is {:?} {:?}: expected F32 (batch, heads, seqlen) = {:?}", lse.dtype(), lse.dims(), [b, h, n])));
    }
    if !q.device().is_cuda() {
        return Err(err("q, k, v are on the CPU: flashgen runs on CUDA tensors (Device::new_cuda)".into()));
    }
    #[cfg(feature = "cuda")]
    {
        let op = FlashAttn { softmax_scale, causal, keep: Keep::Lse, lse: Arc::new(Mutex::new(None)) };
        gpu::backward(&op, q, k, v, out, dout, lse)
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = causal;
        Err(err("built without the `cuda` feature: no backward".into()))
    }
}

/// The op itself, for `Tensor::apply_op3_arc`: one instance per call (it keeps that call's LSE for the
/// backward). Use `flash_attn`, which checks the arguments first.
pub struct FlashAttn {
    pub softmax_scale: f32,
    pub causal: bool,
    /// The row statistics the forward keeps: none, the natural-log LSE, or the kernels' base-2 M.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    keep: Keep,
    /// The forward's statistics as `keep` says, f32 (batch, heads, seqlen): written by the forward, read by
    /// the backward.
    lse: Arc<Mutex<Option<Tensor>>>,
}

/// The row statistics a forward keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keep {
    /// None: nothing will read them (no input tracks a gradient); the runtime's scratch takes them.
    Nothing,
    /// The natural-log LSE, for flash_attn_lse's caller (and the backward, which converts it).
    Lse,
    /// The kernels' base-2 M = m + log2(l), for candle's backward alone: no conversion kernel either way.
    M,
}

fn err(msg: String) -> candle_core::Error {
    candle_core::Error::Msg(format!("flashgen: {msg}"))
}

/// What the runtime does not compute yet (GQA, unequal lengths, D_v != D) is refused here with the same
/// words as the Python package; everything else the runtime checks where the views are made.
fn check(q: &Tensor, k: &Tensor, v: &Tensor, softmax_scale: f32) -> Result<()> {
    for (name, t) in [("q", q), ("k", k), ("v", v)] {
        if t.rank() != 4 {
            return Err(err(format!("{name} has shape {:?}: expected 4 dimensions (batch, seqlen, heads, head_dim)", t.dims())));
        }
    }
    if !matches!(q.dtype(), DType::BF16 | DType::F16) {
        return Err(err(format!("q is {:?}: flashgen takes bf16 or f16", q.dtype())));
    }
    for (name, t) in [("k", k), ("v", v)] {
        if t.dtype() != q.dtype() {
            return Err(err(format!("{name} is {:?} but q is {:?}: all must share one dtype", t.dtype(), q.dtype())));
        }
    }
    let (qd, kd, vd) = (q.dims(), k.dims(), v.dims());
    if kd[0] != qd[0] || vd[0] != qd[0] {
        return Err(err(format!("batch sizes differ: q has {}, k {}, v {}", qd[0], kd[0], vd[0])));
    }
    if kd[1..3] != vd[1..3] {
        return Err(err(format!("k is {kd:?} but v is {vd:?}: k and v share seqlen and heads")));
    }
    if kd[3] != qd[3] {
        return Err(err(format!("q's head dim is {} but k's is {}: they must agree", qd[3], kd[3])));
    }
    if kd[2] != qd[2] {
        if kd[2] == 0 || qd[2] % kd[2] != 0 {
            return Err(err(format!("q has {} heads, k and v {}: the query heads must be a multiple of the key/value heads", qd[2], kd[2])));
        }
        return Err(err(format!("q has {} heads and k, v {} (GQA/MQA): grouped heads are not in flashgen's runtime yet", qd[2], kd[2])));
    }
    if vd[3] != qd[3] {
        return Err(err(format!("v's head dim {} differs from q's {}: not in flashgen's runtime yet", vd[3], qd[3])));
    }
    if kd[1] != qd[1] {
        return Err(err(format!("q has {} queries and k, v {} keys: unequal lengths are not in flashgen's runtime yet", qd[1], kd[1])));
    }
    if !(softmax_scale.is_finite() && softmax_scale > 0.0) {
        return Err(err(format!("softmax_scale {softmax_scale}: a finite positive number is expected")));
    }
    Ok(())
}

impl CustomOp3 for FlashAttn {
    fn name(&self) -> &'static str {
        "flashgen-flash-attn"
    }

    fn cpu_fwd(&self, _: &CpuStorage, _: &CandleLayout, _: &CpuStorage, _: &CandleLayout, _: &CpuStorage, _: &CandleLayout) -> Result<(CpuStorage, Shape)> {
        Err(err("q, k, v are on the CPU: flashgen runs on CUDA tensors (Device::new_cuda)".into()))
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

    fn bwd(&self, q: &Tensor, k: &Tensor, v: &Tensor, _out: &Tensor, grad_out: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        #[cfg(feature = "cuda")]
        {
            let lse = self.lse.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let lse = lse.ok_or_else(|| err("backward of a forward that kept no log-sum-exp (q, k and v tracked no gradient when it ran)".into()))?;
            let (dq, dk, dv) = gpu::backward(self, q, k, v, _out, grad_out, &lse)?;
            Ok((Some(dq), Some(dk), Some(dv)))
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (q, k, v, grad_out);
            Err(err("built without the `cuda` feature: no backward".into()))
        }
    }
}

#[cfg(feature = "cuda")]
mod gpu {
    //! The calls on candle's CUDA storage.

    use super::{err, FlashAttn, Keep};
    use candle_core::backend::BackendStorage;
    use candle_core::cuda_backend::{CudaDType, CudaDevice};
    use candle_core::op::BackpropOp;
    use candle_core::{CudaStorage, DType, Layout as CandleLayout, Result, Shape, Storage, Tensor};
    use flashgen_runtime::cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};
    use flashgen_runtime::{BackwardCall, BufferView, BufferViewMut, Flash, ForwardCall, Gpu, KernelCache, Layout, StatsIn, StatsOut, Stream, TensorView, TensorViewMut};
    use std::sync::{Arc, Mutex};

    /// One `Flash` per device ordinal, shared by every op on that device (its calls take `&self`).
    static FLASHES: Mutex<Vec<Option<Arc<Flash>>>> = Mutex::new(Vec::new());

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

    fn flashgen_dtype(dtype: DType) -> Result<flashgen::DType> {
        match dtype {
            DType::BF16 => Ok(flashgen::DType::Bf16),
            DType::F16 => Ok(flashgen::DType::F16),
            other => Err(err(format!("{other:?}: flashgen takes bf16 or f16"))),
        }
    }

    /// candle's (B, N, H, D) layout as the runtime's [Z, H, N, D]; a size-1 dimension's stride (which
    /// addresses nothing) is replaced by one the kernels accept.
    fn layout_of(l: &CandleLayout) -> Layout {
        let (d, mut s) = (l.dims(), [l.stride()[0], l.stride()[1], l.stride()[2], l.stride()[3]]);
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
        let [b, h, n, d] = layout_q.shape;
        // SAFETY: written in full by the kernel before anything reads it
        let o: CudaSlice<T> = unsafe { dev.alloc::<T>((b * n * h * d).max(1)) }?;
        // SAFETY: written in full by the kernel before anything reads it
        let lse: Option<CudaSlice<f32>> = if op.keep == Keep::Nothing { None } else { Some(unsafe { dev.alloc::<f32>((b * h * n).max(1)) }?) };
        {
            let (oa, on, _g4) = addr(&o, 0, &stream)?;
            let lse_addr = lse.as_ref().map(|l| addr(l, 0, &stream)).transpose()?;
            let stats = match &lse_addr {
                // SAFETY: the f32 slice just allocated, `ln` >= B·H·N floats
                Some((la, ln, _g5)) => {
                    let view = unsafe { BufferViewMut::from_raw_parts(*la, *ln) };
                    if op.keep == Keep::M { StatsOut::M(view) } else { StatsOut::Lse(view) }
                }
                None => StatsOut::Discard,
            };
            let call = ForwardCall {
                q: view("q", qa, qn, dtype, layout_q)?,
                k: view("k", ka, kn, dtype, layout_k)?,
                v: view("v", va, vn, dtype, layout_v)?,
                o: view_mut("out", oa, on, dtype, Layout::bshd(b, h, n, d))?,
                stats,
                causal: op.causal,
                align: flashgen_runtime::CausalAlign::BottomRight,
                sm_scale: Some(op.softmax_scale),
                varlen: None,
                window: flashgen_runtime::Window::UNBOUNDED,
                softcap: None,
                modifiers: None,
            };
            // SAFETY: candle's stream of this device (the primary context), alive while the device is
            let s = unsafe { Stream::from_raw(stream.cu_stream()) };
            flash.forward(call, s).map_err(|e| err(e.to_string()))?;
        }
        let lse = lse.map(|l| Tensor::from_storage(Storage::Cuda(CudaStorage::wrap_cuda_slice(l, dev.clone())), (b, h, n), BackpropOp::none(), false));
        Ok(((CudaStorage::wrap_cuda_slice(o, dev), Shape::from((b, n, h, d))), lse))
    }

    fn cuda<'a>(name: &str, s: &'a Storage) -> Result<&'a CudaStorage> {
        match s {
            Storage::Cuda(c) => Ok(c),
            _ => Err(err(format!("{name} is not on a CUDA device"))),
        }
    }

    pub fn backward(op: &FlashAttn, q: &Tensor, k: &Tensor, v: &Tensor, out: &Tensor, grad_out: &Tensor, lse: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
        // dO arrives in whatever layout the graph made it (broadcast from a sum, say): the kernels need
        // 16-byte chunks, so a layout they cannot read is copied once
        let grad_out = grad_out.contiguous()?;
        let grad_out = if grad_out.layout().start_offset() % 8 != 0 { grad_out.copy()? } else { grad_out };
        match q.dtype() {
            DType::BF16 => backward_typed::<half::bf16>(op, q, k, v, out, &grad_out, lse),
            DType::F16 => backward_typed::<half::f16>(op, q, k, v, out, &grad_out, lse),
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
            let call = BackwardCall {
                q: view("q", qa, qn, dtype, layout_q)?,
                k: view("k", ka, kn, dtype, layout_k)?,
                v: view("v", va, vn, dtype, layout_v)?,
                o: view("out", oa, on, dtype, layout_of(lo))?,
                d_o: view("dout", da, dn, dtype, layout_of(ld))?,
                // SAFETY: the forward's f32 LSE tensor, held by this op, `ln` floats from its start
                stats: if op.keep == Keep::M { StatsIn::M(unsafe { BufferView::from_raw_parts(la, ln) }) } else { StatsIn::Lse(unsafe { BufferView::from_raw_parts(la, ln) }) },
                dq: view_mut("dq", gqa, gqn, dtype, bshd(&layout_q))?,
                dk: view_mut("dk", gka, gkn, dtype, bshd(&layout_k))?,
                dv: view_mut("dv", gva, gvn, dtype, bshd(&layout_v))?,
                causal: op.causal,
                align: flashgen_runtime::CausalAlign::BottomRight,
                sm_scale: Some(op.softmax_scale),
                varlen: None,
                window: flashgen_runtime::Window::UNBOUNDED,
                softcap: None,
                modifiers: None,
            };
            // SAFETY: candle's stream of this device, as in the forward
            let s = unsafe { Stream::from_raw(stream.cu_stream()) };
            flash.backward(call, s).map_err(|e| err(e.to_string()))?;
        }
        let wrap = |slice: CudaSlice<T>, dims: &[usize]| Tensor::from_storage(Storage::Cuda(CudaStorage::wrap_cuda_slice(slice, dev.clone())), dims, BackpropOp::none(), false);
        Ok((wrap(gq, q.dims()), wrap(gk, k.dims()), wrap(gv, v.dims())))
    }
}
