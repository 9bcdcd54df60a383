//! flashgen's Python extension (`flashgen._native`): the forward and backward on tensors the caller owns,
//! queued on the caller's CUDA stream. The torch-facing API (flash_attn_func, autograd, torch.compile) is
//! Python, in flashgen/_torch.py; this module takes DLPack capsules, checks everything it can before it
//! touches a GPU, and calls the runtime's view-based calls (`Flash::forward` / `Flash::backward`).
//!
//! Check order, each failure a Python exception that names the tensor: the features asked for (dropout:
//! NotImplementedError), the packed-sequence offsets
//! (cu_seqlens: int32, 1-D, B + 1 each), dtypes, ranks and shapes in flash-attn's (B, N, H, D) layout or
//! its packed (total, H, D) one (GQA/MQA: K/V with fewer heads; unequal query and key lengths), the views
//! (base alignment, head-dim stride, extent: the runtime's own checks and messages), the devices (CPU
//! memory and mixed GPUs refused), and only then the device's `Flash` and the launch. So a machine without
//! a GPU (CI) checks all of it through the real path.

mod dlpack;
mod kvcache;
mod mods;

use dlpack::{device_name, Operand, DL_BFLOAT, DL_CUDA, DL_FLOAT, DL_INT};
use flashgen::{BackwardPath, DType};
use flashgen_runtime::{
    BackwardCall, BufferView, BufferViewMut, CausalAlign, Flash, ForwardCall, Gpu, KernelCache, Layout, RuntimeError, StatsIn, StatsOut,
    Stream, TensorView, TensorViewMut, VarLen,
};
use flashgen_runtime::cudarc::driver::sys;
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

/// A `Flash` is shared by every thread that calls on its device: the runtime's calls take `&self`.
const _: () = {
    const fn shared_by_threads<T: Send + Sync>() {}
    shared_by_threads::<Flash>()
};

/// One `Flash` per device ordinal, made on the first call that reaches the device.
static FLASHES: Mutex<Vec<Option<Arc<Flash>>>> = Mutex::new(Vec::new());

fn flash_for(ordinal: i32) -> Result<Arc<Flash>, RuntimeError> {
    let index = usize::try_from(ordinal).map_err(|_| RuntimeError::Device(format!("device ordinal {ordinal}")))?;
    let mut flashes = FLASHES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Some(f)) = flashes.get(index) {
        return Ok(f.clone());
    }
    // opened under the lock: two threads' first calls on one device make one Flash
    let flash = Arc::new(Flash::new(Gpu::open(index)?, KernelCache::from_env()));
    if flashes.len() <= index {
        flashes.resize(index + 1, None);
    }
    flashes[index] = Some(flash.clone());
    Ok(flash)
}

/// Puts back the thread's CUDA context when dropped. The runtime makes its device's primary context current
/// to launch; PyTorch's current device follows the current context, so a call on cuda:1 from a thread whose
/// current device is cuda:0 would otherwise move torch there (flash-attn restores it with a device guard).
struct RestoreContext(Option<sys::CUcontext>);

impl RestoreContext {
    /// The current context, to restore (call once the driver is loaded: a Flash exists).
    fn save() -> RestoreContext {
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: writes one pointer; the driver is loaded (a Flash was opened before this is called)
        let ok = unsafe { sys::cuCtxGetCurrent(&mut ctx) } == sys::CUresult::CUDA_SUCCESS;
        RestoreContext(ok.then_some(ctx))
    }
}

impl Drop for RestoreContext {
    fn drop(&mut self) {
        if let Some(saved) = self.0 {
            let mut now: sys::CUcontext = std::ptr::null_mut();
            // SAFETY: as in `save`; `saved` was this thread's current context (or none) before the call
            unsafe {
                if sys::cuCtxGetCurrent(&mut now) == sys::CUresult::CUDA_SUCCESS && now != saved {
                    sys::cuCtxSetCurrent(saved);
                }
            }
        }
    }
}

/// The runtime's errors as Python's: what the caller passed (arguments, layouts) is a ValueError; the
/// device, the driver, a kernel or the cache failing is a RuntimeError. The message is the runtime's.
fn py_err(e: RuntimeError) -> PyErr {
    match e {
        RuntimeError::Argument(_) | RuntimeError::Layout(_) => PyValueError::new_err(e.to_string()),
        _ => PyRuntimeError::new_err(e.to_string()),
    }
}

fn value_err(msg: impl Into<String>) -> PyErr {
    PyValueError::new_err(msg.into())
}

/// The attention variants flash-attn's arguments ask for, checked for range, and refused while the
/// runtime cannot compute them (each becomes a runtime call argument when it lands).
struct Variant {
    causal: bool,
    /// flash-attn's window_size as the kernels take it (sm_90a: fwd_ws and the wgmma backward pair).
    window: flashgen_runtime::Window,
    /// softcap > 0 (sm_90a, as the window).
    softcap: Option<f32>,
}


fn check_variant(causal: bool, window: (i64, i64), softcap: f64, dropout_p: f64) -> PyResult<Variant> {
    if !(dropout_p.is_finite() && (0.0..1.0).contains(&dropout_p)) {
        return Err(value_err(format!("dropout_p={dropout_p}: a probability in [0, 1) is expected")));
    }
    if dropout_p != 0.0 {
        return Err(PyNotImplementedError::new_err(format!(
            "dropout_p={dropout_p}: flashgen has no attention dropout; pass dropout_p=0.0 (e.g. in eval mode, or drop out elsewhere)"
        )));
    }
    let (left, right) = window;
    if left < -1 || right < -1 {
        return Err(value_err(format!("window_size=({left}, {right}): each side is -1 (unbounded) or a number of keys >= 0")));
    }
    // (-1, 0) with causal=True is plain causal attention, as flash-attn treats it (the runtime's kernel_window)
    let window = flashgen_runtime::Window::from_fa(left, right);
    if !(softcap.is_finite() && softcap >= 0.0 && softcap <= f32::MAX as f64) {
        return Err(value_err(format!("softcap={softcap}: 0 (off) or a positive, finite cap is expected")));
    }
    // (the window as the kernels take it: none for a causal (-1, 0); the runtime derives the kernel's causality)
    let (_, window) = flashgen::plan::kernel_window(causal, window);
    Ok(Variant { causal, window, softcap: (softcap > 0.0).then_some(softcap as f32) })
}


fn dtype_of(op: &Operand) -> PyResult<DType> {
    match (op.dtype.code, op.dtype.bits, op.dtype.lanes) {
        (DL_BFLOAT, 16, 1) => Ok(DType::Bf16),
        (DL_FLOAT, 16, 1) => Ok(DType::F16),
        _ => Err(value_err(format!("tensor {} is {}: flashgen takes bfloat16 or float16 (torch.bfloat16, torch.float16)", op.name, op.dtype.describe()))),
    }
}

fn same_dtype(q: &Operand, dtype: DType, others: &[&Operand]) -> PyResult<()> {
    for o in others {
        if dtype_of(o).ok() != Some(dtype) {
            return Err(value_err(format!("tensor {} is {} but {} is {}: all must share one dtype", o.name, o.dtype.describe(), q.name, q.dtype.describe())));
        }
    }
    Ok(())
}

fn dims(op: &Operand, expected: usize, what: &str) -> PyResult<Vec<usize>> {
    if op.shape.len() != expected {
        return Err(value_err(format!("tensor {} has {} dimensions {:?}: expected {expected}, {what}", op.name, op.shape.len(), op.shape)));
    }
    op.shape.iter().map(|&s| usize::try_from(s).map_err(|_| value_err(format!("tensor {}: negative size {s}", op.name)))).collect()
}

/// How a call's tensors are shaped: flash-attn's batches (B, N, H, D), or packed variable-length sequences
/// (total_tokens, H, D) with cumulative lengths (flash_attn_varlen_func).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Batched,
    Packed,
}

/// A q, k, v, out (or gradient) tensor as the runtime's [Z, H, N, D] layout: flash-attn's (B, N, H, D) with
/// the N and H strides swapped, or a packed (total, H, D) as [1, H, total, D] (the runtime's form of packed
/// sequences). A size-1 dimension's stride addresses nothing, and torch leaves it arbitrary (a contiguous
/// (1, N, H, D) tensor may report any stride for B; a packed tensor has no Z at all): such a stride is
/// replaced by one the kernels accept.
fn layout_of(op: &Operand, form: Form) -> PyResult<Layout> {
    let given = match form {
        Form::Batched => dims(op, 4, "(batch, seqlen, heads, head_dim)")?,
        Form::Packed => dims(op, 3, "(total_tokens, heads, head_dim) for packed sequences")?,
    };
    let mut given_strides = Vec::with_capacity(given.len());
    for (i, &s) in op.strides.iter().enumerate() {
        given_strides.push(usize::try_from(s).map_err(|_| value_err(format!("tensor {}: negative stride {s} in dim {i}: flip a copy instead", op.name)))?);
    }
    // (Z, N, H, D) shape and strides; a packed tensor's Z (size 1) gets a stride the fix below replaces
    let (shape, mut strides) = match form {
        Form::Batched => ([given[0], given[1], given[2], given[3]], [given_strides[0], given_strides[1], given_strides[2], given_strides[3]]),
        Form::Packed => ([1, given[0], given[1], given[2]], [1, given_strides[0], given_strides[1], given_strides[2]]),
    };
    if !shape.contains(&0) {
        // (saturating: strides past the address space reach Layout::check, which refuses them by name)
        let reach = shape.iter().zip(&strides).map(|(&n, &s)| n.saturating_mul(s)).max().unwrap_or(1);
        for i in 0..3 {
            if shape[i] == 1 && strides[i] % 8 != 0 {
                strides[i] = reach.div_ceil(8).saturating_mul(8);
            }
        }
    }
    let [z, n, h, d] = shape;
    Ok(Layout { shape: [z, h, n, d], strides: [strides[0], strides[2], strides[1], strides[3]] })
}

/// A read-only view of `op`: the runtime checks the base's alignment, the strides and the extent.
fn view<'a>(op: &Operand, dtype: DType, layout: Layout) -> PyResult<TensorView<'a>> {
    // SAFETY (TensorView::from_raw_parts): the address and layout are the caller's tensor's, which the
    // wrapper keeps alive across the call; a device address is only dereferenced after `check_devices`
    // has found every operand in one GPU's memory (CUDA device memory lives in the primary context that
    // the device's Flash uses). The view covers exactly the layout's extent, all of which the tensor holds.
    unsafe { TensorView::from_raw_parts(op.name, op.addr, layout.extent(), dtype, layout) }.map_err(|e| py_err(e.into()))
}

fn view_mut<'a>(op: &Operand, dtype: DType, layout: Layout) -> PyResult<TensorViewMut<'a>> {
    if op.read_only {
        return Err(value_err(format!("tensor {} is read-only (its DLPack producer says so): outputs are written", op.name)));
    }
    // SAFETY: as `view`; the wrapper allocated the outputs for this call alone.
    unsafe { TensorViewMut::from_raw_parts(op.name, op.addr, layout.extent(), dtype, layout) }.map_err(|e| py_err(e.into()))
}

/// The row statistics: f32, contiguous, (B, H, N_q), or (H, total_q) for packed sequences.
fn rows_of(op: &Operand, form: Form, q: &Layout) -> PyResult<usize> {
    if (op.dtype.code, op.dtype.bits, op.dtype.lanes) != (DL_FLOAT, 32, 1) {
        return Err(value_err(format!("tensor {} is {}: the log-sum-exp is float32", op.name, op.dtype.describe())));
    }
    let [b, h, n, _] = q.shape;
    let (expected, what) = match form {
        Form::Batched => (vec![b, h, n], "(batch, heads, seqlen)"),
        Form::Packed => (vec![h, n], "(heads, total_q) for packed sequences"),
    };
    let shape = dims(op, expected.len(), what)?;
    if shape != expected {
        return Err(value_err(format!("tensor {} has shape {shape:?}: expected {what} = {expected:?}", op.name)));
    }
    let mut compact = vec![1i64; shape.len()];
    for i in (0..shape.len() - 1).rev() {
        compact[i] = compact[i + 1] * shape[i + 1] as i64;
    }
    let strides_ok = op.strides.iter().zip(&compact).zip(&shape).all(|((&s, &c), &len)| len <= 1 || s == c);
    if !strides_ok {
        return Err(value_err(format!("tensor {} has strides {:?}: the log-sum-exp must be contiguous", op.name, op.strides)));
    }
    let rows = shape.iter().product::<usize>();
    if rows > 0 && !op.addr.is_multiple_of(4) {
        return Err(value_err(format!("tensor {}: base address {:#x} is not 4-byte aligned", op.name, op.addr)));
    }
    Ok(rows)
}

/// Every operand in one GPU's memory; that GPU's ordinal.
fn check_devices(ops: &[&Operand]) -> PyResult<i32> {
    let first = ops[0];
    for op in ops {
        if op.device_type != DL_CUDA {
            return Err(value_err(format!(
                "tensor {} is on {}: flashgen runs on CUDA tensors (move it with .cuda() / .to(\"cuda\"))",
                op.name,
                device_name(op.device_type, op.device_id)
            )));
        }
        if op.device_id != first.device_id {
            return Err(value_err(format!(
                "tensor {} is on cuda:{} but {} is on cuda:{}: all tensors of one call must be on one GPU",
                op.name, op.device_id, first.name, first.device_id
            )));
        }
    }
    Ok(first.device_id)
}

fn check_scale(softmax_scale: Option<f64>) -> PyResult<Option<f32>> {
    match softmax_scale {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && (s as f32).is_normal() => Ok(Some(s as f32)),
        Some(s) => Err(value_err(format!("softmax_scale={s}: a finite positive float is expected (None: 1/sqrt(head_dim))"))),
    }
}

/// Q, K, V as layouts, after the shape rules, each a ValueError naming what disagrees: one batch (B, N, H, D
/// tensors), K and V of one shape, one head dim for Q and K, and the query heads a multiple of the K/V heads
/// (GQA/MQA: query head h reads K/V head h / (H / H_kv)). Query and key lengths may differ (a causal mask
/// then aligns the last query with the last key). V's head dim may be narrower than Q's (out takes it).
fn qkv_layouts(q: &Operand, k: &Operand, v: &Operand, form: Form) -> PyResult<(Layout, Layout, Layout)> {
    let (lq, lk, lv) = (layout_of(q, form)?, layout_of(k, form)?, layout_of(v, form)?);
    let ([b, h, _, d], [bk, hk, nk, dk], [bv, hv, nv, dv]) = (lq.shape, lk.shape, lv.shape);
    if bk != b || bv != b {
        return Err(value_err(format!("batch sizes differ: q has {b}, k {bk}, v {bv}")));
    }
    if (hk, nk) != (hv, nv) {
        return Err(value_err(format!("k has shape {:?} but v has {:?}: k and v share seqlen and heads", k.shape, v.shape)));
    }
    if dk != d {
        return Err(value_err(format!("q's head dim is {d} but k's is {dk}: they must agree")));
    }
    if hk == 0 || h % hk != 0 {
        return Err(value_err(format!("q has {h} heads, k and v {hk}: the query heads must be a multiple of the key/value heads")));
    }
    if dv > d || dv % 8 != 0 {
        return Err(value_err(format!("v's head dim is {dv} and q's {d}: v's is q's, or narrower and a multiple of 8 (DeepSeek's 192/128)")));
    }
    Ok((lq, lk, lv))
}

/// Packed sequences' arguments, checked: cu_seqlens_q and cu_seqlens_k (int32, 1-D, contiguous, B + 1
/// each; their device is checked with the other tensors'), the longest lengths. The capsules stay alive
/// with it. The offsets stay on the GPU (as flash-attn, nothing is copied or synchronized): the kernels
/// clamp every sequence to its packed tensor, so offsets that lie give wrong numbers for those sequences,
/// never a read or write outside the tensors.
struct Packed<'py> {
    cu_q: Operand,
    cu_k: Operand,
    max_q: usize,
    max_k: usize,
    _capsules: (Bound<'py, PyAny>, Bound<'py, PyAny>),
}

impl Packed<'_> {
    /// The runtime's VarLen over the offsets.
    fn varlen<'a>(&self) -> VarLen<'a> {
        let (nq, nk) = (self.cu_q.shape[0] as usize, self.cu_k.shape[0] as usize);
        // SAFETY (BufferView::from_raw_parts): int32 1-D contiguous tensors of these lengths, 4-byte aligned
        // (`offsets_of`), in the call's GPU's memory (`check_devices` before any launch), which the caller's
        // tensors keep alive across the call; the kernels only read them.
        let (cu_seqlens_q, cu_seqlens_k) = unsafe { (BufferView::<i32>::from_raw_parts(self.cu_q.addr, nq), BufferView::<i32>::from_raw_parts(self.cu_k.addr, nk)) };
        VarLen { cu_seqlens_q, cu_seqlens_k, max_seqlen_q: self.max_q, max_seqlen_k: self.max_k, host_cu_seqlens_q: None, host_cu_seqlens_k: None }
    }

    fn operands(&self) -> [&Operand; 2] {
        [&self.cu_q, &self.cu_k]
    }
}

/// One offsets tensor: int32, (B + 1,), contiguous, 4-byte aligned.
fn offsets_of(op: &Operand) -> PyResult<()> {
    if (op.dtype.code, op.dtype.bits, op.dtype.lanes) != (DL_INT, 32, 1) {
        return Err(value_err(format!("tensor {} is {}: the cumulative sequence lengths are int32 (torch.int32), as flash-attn takes them", op.name, op.dtype.describe())));
    }
    let shape = dims(op, 1, "(batch + 1,)")?;
    if shape[0] == 0 {
        return Err(value_err(format!("tensor {} is empty: it holds batch + 1 offsets, the first 0", op.name)));
    }
    if shape[0] > 1 && op.strides[0] != 1 {
        return Err(value_err(format!("tensor {} has stride {}: the offsets must be contiguous", op.name, op.strides[0])));
    }
    if op.addr == 0 || !op.addr.is_multiple_of(4) {
        return Err(value_err(format!("tensor {}: base address {:#x} is not a 4-byte aligned address", op.name, op.addr)));
    }
    Ok(())
}

/// The packed-sequence arguments of a forward or backward: both offsets or neither.
fn read_packed<'py>(cu_q: Option<&Bound<'py, PyAny>>, cu_k: Option<&Bound<'py, PyAny>>, max_q: i64, max_k: i64) -> PyResult<Option<Packed<'py>>> {
    let (cu_q, cu_k) = match (cu_q, cu_k) {
        (None, None) => return Ok(None),
        (Some(q), Some(k)) => (q, k),
        _ => return Err(value_err("cu_seqlens_q and cu_seqlens_k come together: both for packed sequences, neither for (batch, seqlen, heads, head_dim) tensors")),
    };
    let ((cu_q, c1), (cu_k, c2)) = (dlpack::read("cu_seqlens_q", cu_q)?, dlpack::read("cu_seqlens_k", cu_k)?);
    offsets_of(&cu_q)?;
    offsets_of(&cu_k)?;
    if cu_q.shape[0] != cu_k.shape[0] {
        return Err(value_err(format!(
            "cu_seqlens_q has {} offsets but cu_seqlens_k {}: both hold batch + 1 (one sequence of queries for each of keys)",
            cu_q.shape[0], cu_k.shape[0]
        )));
    }
    let positive = |name: &str, m: i64| match usize::try_from(m) {
        Ok(m) if m > 0 => Ok(m),
        _ => Err(value_err(format!("{name}={m}: the longest sequence's length, a positive int, is expected"))),
    };
    Ok(Some(Packed { max_q: positive("max_seqlen_q", max_q)?, max_k: positive("max_seqlen_k", max_k)?, cu_q, cu_k, _capsules: (c1, c2) }))
}

fn same_shape(o: &Operand, layout: &Layout, like: &Operand, like_layout: &Layout) -> PyResult<()> {
    if layout.shape != like_layout.shape {
        return Err(value_err(format!("tensor {} has shape {:?} but {} has {:?}: they must match", o.name, o.shape, like.name, like.shape)));
    }
    Ok(())
}

/// out and dout are shaped like q with v's head_dim (narrower than q's for DeepSeek's 192/128).
fn shaped_like_out(o: &Operand, layout: &Layout, q: &Operand, lq: &Layout, lv: &Layout) -> PyResult<()> {
    let [z, h, n, _] = lq.shape;
    if layout.shape != [z, h, n, lv.shape[3]] {
        return Err(value_err(format!(
            "tensor {} has shape {:?} but q has {:?} and v's head_dim is {}: {} is shaped like q with v's head_dim",
            o.name, o.shape, q.shape, lv.shape[3], o.name
        )));
    }
    Ok(())
}

/// The forward into the caller's `out` (shaped like q) and `lse` float32, on `stream` (a cudaStream_t of the
/// tensors' device; 0: the legacy default stream). q (B, N_q, H, D), k and v (B, N_kv, H_kv, D) with H a
/// multiple of H_kv, lse (B, H, N_q); or, with `cu_seqlens_q` and `cu_seqlens_k` (int32 (B + 1,) on the
/// GPU) and the longest lengths, packed sequences: q (total_q, H, D), k and v (total_k, H_kv, D), lse
/// (H, total_q). A causal mask aligns each sequence's last query with its last key (flash-attn 2's rule).
/// `lse` is the natural-log log-sum-exp, or with `base2` the kernels' own M = m + log2(l) (Triton's
/// convention), which saves the conversion kernel's launch here and in the backward, which takes M as it is;
/// None when nobody wants it (inference): the runtime's scratch takes it, one allocation less per call.
#[pyfunction]
#[pyo3(signature = (q, k, v, out, lse, softmax_scale=None, causal=false, window_size_left=-1, window_size_right=-1, softcap=0.0, alibi_slopes=None, dropout_p=0.0, stream=0, base2=false, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, score_mod=None, mask_mod=None, mod_names=None, mod_tensors=None))]
#[allow(clippy::too_many_arguments)]
fn forward(
    py: Python<'_>,
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    lse: Option<&Bound<'_, PyAny>>,
    softmax_scale: Option<f64>,
    causal: bool,
    window_size_left: i64,
    window_size_right: i64,
    softcap: f64,
    alibi_slopes: Option<&Bound<'_, PyAny>>,
    dropout_p: f64,
    stream: usize,
    base2: bool,
    cu_seqlens_q: Option<&Bound<'_, PyAny>>,
    cu_seqlens_k: Option<&Bound<'_, PyAny>>,
    max_seqlen_q: i64,
    max_seqlen_k: i64,
    score_mod: Option<String>,
    mask_mod: Option<String>,
    mod_names: Option<Vec<String>>,
    mod_tensors: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<()> {
    let variant = check_variant(causal, (window_size_left, window_size_right), softcap, dropout_p)?;
    let sm_scale = check_scale(softmax_scale)?;
    let packed = read_packed(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)?;
    let form = if packed.is_some() { Form::Packed } else { Form::Batched };
    // the capsules stay alive (bound here) until the launch is queued
    let ((q, _c1), (k, _c2), (v, _c3), (o, _c4)) = (dlpack::read("q", q)?, dlpack::read("k", k)?, dlpack::read("v", v)?, dlpack::read("out", out)?);
    let l = lse.map(|l| dlpack::read("softmax_lse", l)).transpose()?;
    let dtype = dtype_of(&q)?;
    same_dtype(&q, dtype, &[&k, &v, &o])?;
    let (lq, lk, lv) = qkv_layouts(&q, &k, &v, form)?;
    let lo = layout_of(&o, form)?;
    shaped_like_out(&o, &lo, &q, &lq, &lv)?;
    let rows = l.as_ref().map(|(l, _)| rows_of(l, form, &lq)).transpose()?;
    let (qv, kv, vv, ov) = (view(&q, dtype, lq)?, view(&k, dtype, lk)?, view(&v, dtype, lv)?, view_mut(&o, dtype, lo)?);
    let offset = packed.is_none().then(|| lk.shape[2] as i64 - lq.shape[2] as i64);
    let modifiers = mods::read(score_mod.as_deref(), mask_mod.as_deref(), mod_names, mod_tensors, alibi_slopes, offset)?;
    let mut operands = vec![&q, &k, &v, &o];
    operands.extend(l.as_ref().map(|(l, _)| l));
    operands.extend(packed.iter().flat_map(Packed::operands));
    operands.extend(modifiers.iter().flat_map(|m| m.operands()));
    let device = check_devices(&operands)?;
    let flash = flash_for(device).map_err(py_err)?;
    let stats = match (&l, rows) {
        (Some((l, _)), Some(rows)) => {
            // SAFETY: checked above to be float32 (B, H, N_q) or (H, total_q) in the same GPU's memory, held alive by the caller.
            let lse_view = unsafe { BufferViewMut::<f32>::from_raw_parts(l.addr, rows) };
            if base2 { StatsOut::M(lse_view) } else { StatsOut::Lse(lse_view) }
        }
        _ => StatsOut::Discard,
    };
    let varlen = packed.as_ref().map(Packed::varlen);
    let call = ForwardCall { q: qv, k: kv, v: vv, o: ov, stats, causal: variant.causal, align: CausalAlign::BottomRight, sm_scale, varlen, window: variant.window, softcap: variant.softcap, modifiers: modifiers.as_ref().map(|m| m.call()) };
    // SAFETY (Stream::from_raw): the wrapper passes the current stream of the tensors' device
    // (torch.cuda.current_stream(device)), a stream of the primary context; this call's contract.
    let stream = unsafe { Stream::from_raw(stream as flashgen_runtime::cudarc::driver::sys::CUstream) };
    let _restore = RestoreContext::save();
    // the GIL is released while the runtime plans, compiles (first call: LLVM and the driver, ~1 s) and queues
    py.detach(|| flash.forward(call, stream)).map_err(py_err)
}

/// The backward into the caller's dq, dk, dv (each shaped like its input: dk and dv like k and v, each K/V
/// head's gradient summed over its query heads), from the forward's out and lse (natural log; with `base2`
/// the kernels' M) and the output gradient dout, on `stream`; packed sequences as in `forward`.
#[pyfunction]
#[pyo3(signature = (dout, q, k, v, out, lse, dq, dk, dv, softmax_scale=None, causal=false, window_size_left=-1, window_size_right=-1, softcap=0.0, alibi_slopes=None, deterministic=false, stream=0, base2=false, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=0, max_seqlen_k=0, score_mod=None, mask_mod=None, mod_names=None, mod_tensors=None))]
#[allow(clippy::too_many_arguments)]
fn backward(
    py: Python<'_>,
    dout: &Bound<'_, PyAny>,
    q: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    lse: &Bound<'_, PyAny>,
    dq: &Bound<'_, PyAny>,
    dk: &Bound<'_, PyAny>,
    dv: &Bound<'_, PyAny>,
    softmax_scale: Option<f64>,
    causal: bool,
    window_size_left: i64,
    window_size_right: i64,
    softcap: f64,
    alibi_slopes: Option<&Bound<'_, PyAny>>,
    deterministic: bool,
    stream: usize,
    base2: bool,
    cu_seqlens_q: Option<&Bound<'_, PyAny>>,
    cu_seqlens_k: Option<&Bound<'_, PyAny>>,
    max_seqlen_q: i64,
    max_seqlen_k: i64,
    score_mod: Option<String>,
    mask_mod: Option<String>,
    mod_names: Option<Vec<String>>,
    mod_tensors: Option<Vec<Bound<'_, PyAny>>>,
) -> PyResult<()> {
    let variant = check_variant(causal, (window_size_left, window_size_right), softcap, 0.0)?;
    let sm_scale = check_scale(softmax_scale)?;
    let packed = read_packed(cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k)?;
    let form = if packed.is_some() { Form::Packed } else { Form::Batched };
    let (d_o, _c0) = dlpack::read("dout", dout)?;
    let ((q, _c1), (k, _c2), (v, _c3), (o, _c4), (l, _c5)) = (dlpack::read("q", q)?, dlpack::read("k", k)?, dlpack::read("v", v)?, dlpack::read("out", out)?, dlpack::read("softmax_lse", lse)?);
    let ((gq, _c6), (gk, _c7), (gv, _c8)) = (dlpack::read("dq", dq)?, dlpack::read("dk", dk)?, dlpack::read("dv", dv)?);
    let dtype = dtype_of(&q)?;
    same_dtype(&q, dtype, &[&k, &v, &o, &d_o, &gq, &gk, &gv])?;
    let (lq, lk, lv) = qkv_layouts(&q, &k, &v, form)?;
    let (lo, ldo, lgq, lgk, lgv) = (layout_of(&o, form)?, layout_of(&d_o, form)?, layout_of(&gq, form)?, layout_of(&gk, form)?, layout_of(&gv, form)?);
    for (op, layout) in [(&o, &lo), (&d_o, &ldo)] {
        shaped_like_out(op, layout, &q, &lq, &lv)?;
    }
    for (op, layout, like, like_layout) in [(&gq, &lgq, &q, &lq), (&gk, &lgk, &k, &lk), (&gv, &lgv, &v, &lv)] {
        same_shape(op, layout, like, like_layout)?;
    }
    let rows = rows_of(&l, form, &lq)?;
    let (qv, kv, vv, ov, dov) = (view(&q, dtype, lq)?, view(&k, dtype, lk)?, view(&v, dtype, lv)?, view(&o, dtype, lo)?, view(&d_o, dtype, ldo)?);
    let (dqv, dkv, dvv) = (view_mut(&gq, dtype, lgq)?, view_mut(&gk, dtype, lgk)?, view_mut(&gv, dtype, lgv)?);
    let offset = packed.is_none().then(|| lk.shape[2] as i64 - lq.shape[2] as i64);
    let modifiers = mods::read(score_mod.as_deref(), mask_mod.as_deref(), mod_names, mod_tensors, alibi_slopes, offset)?;
    let mut operands = vec![&q, &k, &v, &o, &l, &d_o, &gq, &gk, &gv];
    operands.extend(packed.iter().flat_map(Packed::operands));
    operands.extend(modifiers.iter().flat_map(|m| m.operands()));
    let device = check_devices(&operands)?;
    let flash = flash_for(device).map_err(py_err)?;
    if deterministic && flash.plan_options().backward == BackwardPath::FusedAtomic {
        return Err(value_err("deterministic=True, but FLASHGEN_BACKWARD=fused-atomic adds dQ in arrival order: unset it (every other backward is deterministic)"));
    }
    // SAFETY: float32 (B, H, N_q) or (H, total_q), checked above, alive for the call.
    let lse_view = unsafe { BufferView::<f32>::from_raw_parts(l.addr, rows) };
    let stats = if base2 { StatsIn::M(lse_view) } else { StatsIn::Lse(lse_view) };
    let varlen = packed.as_ref().map(Packed::varlen);
    let call = BackwardCall { q: qv, k: kv, v: vv, o: ov, d_o: dov, stats, dq: dqv, dk: dkv, dv: dvv, causal: variant.causal, align: CausalAlign::BottomRight, sm_scale, varlen, window: variant.window, softcap: variant.softcap, modifiers: modifiers.as_ref().map(|m| m.call()) };
    // SAFETY: as in `forward`.
    let stream = unsafe { Stream::from_raw(stream as flashgen_runtime::cudarc::driver::sys::CUstream) };
    let _restore = RestoreContext::save();
    py.detach(|| flash.backward(call, stream)).map_err(py_err)
}

/// The checks of flash-attn's variant arguments alone (what `forward` checks first), for the Python side
/// to raise the same errors before it allocates anything or enters torch's dispatcher.
#[pyfunction]
#[pyo3(signature = (causal=false, window_size_left=-1, window_size_right=-1, softcap=0.0, alibi_slopes=None, dropout_p=0.0, softmax_scale=None))]
fn check_arguments(causal: bool, window_size_left: i64, window_size_right: i64, softcap: f64, alibi_slopes: Option<&Bound<'_, PyAny>>, dropout_p: f64, softmax_scale: Option<f64>) -> PyResult<()> {
    let _ = alibi_slopes; // (checked with the tensors, where its shape and the lengths are known)
    check_variant(causal, (window_size_left, window_size_right), softcap, dropout_p)?;
    check_scale(softmax_scale)?;
    Ok(())
}

/// The GPU `ordinal` as flashgen sees it (opens its Flash): name, target, SMs, the kernel cache folder.
#[pyfunction]
fn device_info(py: Python<'_>, ordinal: i32) -> PyResult<Py<PyAny>> {
    let flash = flash_for(ordinal).map_err(py_err)?;
    let d = pyo3::types::PyDict::new(py);
    d.set_item("name", &flash.gpu.name)?;
    d.set_item("arch", flash.gpu.arch.name())?;
    d.set_item("capability", flash.gpu.capability)?;
    d.set_item("sm_count", flash.gpu.sm_count)?;
    d.set_item("cache_dir", flash.cache.dir().map(|p| p.display().to_string()))?;
    Ok(d.into_any().unbind())
}

/// The runtime's warnings so far on device `ordinal` (a kernel replaced by a fallback, a cache problem).
#[pyfunction]
fn warnings(ordinal: i32) -> PyResult<Vec<String>> {
    Ok(flash_for(ordinal).map_err(py_err)?.cache.warnings())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(forward, m)?)?;
    m.add_function(wrap_pyfunction!(backward, m)?)?;
    m.add_function(wrap_pyfunction!(kvcache::kvcache, m)?)?;
    m.add_function(wrap_pyfunction!(check_arguments, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(warnings, m)?)?;
    Ok(())
}
