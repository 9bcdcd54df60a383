//! `flashgen._native.kvcache`: decoding against a KV cache (flash-attn's `flash_attn_with_kvcache`), on the
//! runtime's `Flash::attention_with_kvcache`. The tensors come as DLPack capsules in flash-attn's layouts and
//! are checked here, in the order `forward` checks its own (features, dtypes, shapes, views, devices), before
//! anything touches a GPU:
//! - q (B, N_q, H, D) and out like it; k_cache, v_cache (B, capacity, H_kv, D), or with a block table a page
//!   pool (pages, page_size, H_kv, D); k_new, v_new (B, N_new, H_kv, D), appended to the cache at each
//!   sequence's length (both or neither); lse f32 (B, H, N_q), natural log, or None.
//! - cache_seqlens int32 (B,), the tokens in each sequence's cache before the call, on the GPU; with
//!   `host_cache_seqlens` (the wrapper has it when the caller gave an int) the lengths are also checked on
//!   the host against the capacity or the pages. block_table int32 (B, max_pages), contiguous.
//!
//! What only the GPU holds (the lengths, the table) the kernels clamp: lying values give wrong numbers for
//! that sequence, never a read or write outside the cache, the pool or the tensors.

use crate::dlpack::{self, Operand, DL_FLOAT, DL_INT};
use crate::{check_devices, check_scale, check_variant, dims, dtype_of, flash_for, layout_of, py_err, same_dtype, value_err, view, view_mut, Form, RestoreContext};
use flashgen_runtime::{BlockTable, BufferView, BufferViewMut, KvCacheCall, Stream};
use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;

/// An int32 tensor of `rank` dimensions, contiguous, 4-byte aligned; its element count.
fn int32_array(op: &Operand, rank: usize, what: &str) -> PyResult<usize> {
    if (op.dtype.code, op.dtype.bits, op.dtype.lanes) != (DL_INT, 32, 1) {
        return Err(value_err(format!("tensor {} is {}: it must be int32 (torch.int32), as flash-attn takes it", op.name, op.dtype.describe())));
    }
    let shape = dims(op, rank, what)?;
    let mut expected = 1i64;
    for i in (0..rank).rev() {
        if shape[i] > 1 && op.strides[i] != expected {
            return Err(value_err(format!("tensor {} has strides {:?}: it must be contiguous", op.name, op.strides)));
        }
        expected *= shape[i] as i64;
    }
    let count = shape.iter().product::<usize>();
    if count > 0 && !op.addr.is_multiple_of(4) {
        return Err(value_err(format!("tensor {}: base address {:#x} is not 4-byte aligned", op.name, op.addr)));
    }
    Ok(count)
}

/// Attention of q's new queries against each sequence's cached tokens and the new ones (appended to the
/// cache in place), into `out` (and `lse`), queued on `stream`; see the module's doc for the layouts.
/// Returns the number of splits the call ran with (0 when there was nothing to compute).
#[pyfunction]
#[pyo3(signature = (q, k_cache, v_cache, cache_seqlens, out, lse=None, k_new=None, v_new=None, block_table=None, host_cache_seqlens=None, softmax_scale=None, causal=false, window_size_left=-1, window_size_right=-1, softcap=0.0, alibi_slopes=None, num_splits=0, stream=0))]
#[allow(clippy::too_many_arguments)]
pub fn kvcache(
    py: Python<'_>,
    q: &Bound<'_, PyAny>,
    k_cache: &Bound<'_, PyAny>,
    v_cache: &Bound<'_, PyAny>,
    cache_seqlens: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    lse: Option<&Bound<'_, PyAny>>,
    k_new: Option<&Bound<'_, PyAny>>,
    v_new: Option<&Bound<'_, PyAny>>,
    block_table: Option<&Bound<'_, PyAny>>,
    host_cache_seqlens: Option<Vec<i32>>,
    softmax_scale: Option<f64>,
    causal: bool,
    window_size_left: i64,
    window_size_right: i64,
    softcap: f64,
    alibi_slopes: Option<&Bound<'_, PyAny>>,
    num_splits: i64,
    stream: usize,
) -> PyResult<usize> {
    let variant = check_variant(causal, (window_size_left, window_size_right), softcap, 0.0)?;
    if alibi_slopes.is_some() {
        return Err(PyNotImplementedError::new_err("alibi_slopes: the decode kernels have no ALiBi yet; pass alibi_slopes=None"));
    }
    let sm_scale = check_scale(softmax_scale)?;
    let num_splits = match usize::try_from(num_splits) {
        Ok(0) => None,
        Ok(n) => Some(n),
        Err(_) => return Err(value_err(format!("num_splits={num_splits}: 0 (the heuristic's) or a positive count"))),
    };
    // the capsules stay alive (bound here) until the launch is queued
    let read = |name, obj| dlpack::read(name, obj);
    let ((q, _c1), (kc, _c2), (vc, _c3), (lens, _c4), (o, _c5)) = (read("q", q)?, read("k_cache", k_cache)?, read("v_cache", v_cache)?, read("cache_seqlens", cache_seqlens)?, read("out", out)?);
    let l = lse.map(|x| read("softmax_lse", x)).transpose()?;
    let new = match (k_new, v_new) {
        (None, None) => None,
        (Some(k), Some(v)) => Some((read("k", k)?, read("v", v)?)),
        _ => return Err(value_err("k and v (the new tokens) come together: both to append them to the cache, neither to read it only")),
    };
    let table = block_table.map(|x| read("block_table", x)).transpose()?;

    let dtype = dtype_of(&q)?;
    let mut same: Vec<&Operand> = vec![&kc, &vc, &o];
    same.extend(new.iter().flat_map(|((k, _), (v, _))| [k, v]));
    same_dtype(&q, dtype, &same)?;
    let (lq, lo, lkc, lvc) = (layout_of(&q, Form::Batched)?, layout_of(&o, Form::Batched)?, layout_of(&kc, Form::Batched)?, layout_of(&vc, Form::Batched)?);
    let [b, h, nq, _] = lq.shape;
    if lo.shape != lq.shape {
        return Err(value_err(format!("tensor out has shape {:?} but q has {:?}: they must match", o.shape, q.shape)));
    }
    let batch = int32_array(&lens, 1, "(batch,)")?;
    if batch != b {
        return Err(value_err(format!("cache_seqlens holds {batch} lengths but q has batch {b}: one length per sequence")));
    }
    if let Some(host) = &host_cache_seqlens {
        if host.len() != b {
            return Err(value_err(format!("host_cache_seqlens holds {} lengths but q has batch {b}", host.len())));
        }
    }
    let rows = match &l {
        Some((l, _)) => {
            if (l.dtype.code, l.dtype.bits, l.dtype.lanes) != (DL_FLOAT, 32, 1) {
                return Err(value_err(format!("tensor softmax_lse is {}: the log-sum-exp is float32", l.dtype.describe())));
            }
            let shape = dims(l, 3, "(batch, heads, seqlen_q)")?;
            if shape != [b, h, nq] || (b * h * nq > 0 && (l.strides[2] != 1 || (nq > 1 && l.strides[1] != nq as i64))) {
                return Err(value_err(format!("tensor softmax_lse has shape {shape:?} strides {:?}: it must be a contiguous (batch, heads, seqlen_q) = {:?}", l.strides, [b, h, nq])));
            }
            Some(b * h * nq)
        }
        None => None,
    };
    let table_len = match &table {
        Some((t, _)) => {
            let count = int32_array(t, 2, "(batch, max_pages)")?;
            if t.shape[0] as usize != b {
                return Err(value_err(format!("block_table has {} rows but q has batch {b}: one row of pages per sequence", t.shape[0])));
            }
            Some((count, t.shape[1] as usize))
        }
        None => None,
    };
    let mut operands: Vec<&Operand> = vec![&q, &kc, &vc, &lens, &o];
    operands.extend(l.iter().map(|(l, _)| l));
    operands.extend(new.iter().flat_map(|((k, _), (v, _))| [k, v]));
    operands.extend(table.iter().map(|(t, _)| t));
    let device = check_devices(&operands)?;
    let new_views = match &new {
        Some(((k, _), (v, _))) => {
            let (lk, lv) = (layout_of(k, Form::Batched)?, layout_of(v, Form::Batched)?);
            Some((view(k, dtype, lk)?, view(v, dtype, lv)?))
        }
        None => None,
    };
    let (k_new, v_new) = match new_views {
        Some((k, v)) => (Some(k), Some(v)),
        None => (None, None),
    };
    let flash = flash_for(device).map_err(py_err)?;
    // SAFETY (the raw buffer views): int32 / float32 tensors checked above (dtype, shape, contiguity,
    // alignment, device), held alive by the caller across the call; the lengths and the table are only read.
    let cache_seqlens = unsafe { BufferView::<i32>::from_raw_parts(lens.addr, b) };
    let block_table = table_len.zip(table.as_ref()).map(|((count, max_pages), (t, _))| BlockTable { table: unsafe { BufferView::<i32>::from_raw_parts(t.addr, count) }, max_pages, host: None });
    let lse = rows.zip(l.as_ref()).map(|(rows, (l, _))| unsafe { BufferViewMut::<f32>::from_raw_parts(l.addr, rows) });
    let call = KvCacheCall {
        q: view(&q, dtype, lq)?,
        k_cache: view_mut(&kc, dtype, lkc)?,
        v_cache: view_mut(&vc, dtype, lvc)?,
        cache_seqlens,
        host_cache_seqlens: host_cache_seqlens.as_deref(),
        block_table,
        k_new,
        v_new,
        o: view_mut(&o, dtype, lo)?,
        lse,
        causal: variant.causal,
        window: variant.window,
        softcap: variant.softcap,
        sm_scale,
        num_splits,
    };
    // SAFETY (Stream::from_raw): the wrapper passes the current stream of the tensors' device, a stream of
    // the primary context; this call's contract.
    let stream = unsafe { Stream::from_raw(stream as flashgen_runtime::cudarc::driver::sys::CUstream) };
    let _restore = RestoreContext::save();
    let run = py.detach(|| flash.attention_with_kvcache(call, stream)).map_err(py_err)?;
    Ok(run.splits)
}
