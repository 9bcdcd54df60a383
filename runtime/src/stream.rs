//! The CUDA stream a call queues its kernels on, and the scratch buffers each stream's calls reuse.
//!
//! A call runs on the `Flash`'s own stream or on the caller's (PyTorch's current stream, candle's): its
//! kernels are queued there in order and nothing waits on the host. Buffers the runtime needs between a
//! call's kernels (Δ, the converted row statistics, the persistent kernel's tile counter, the fused
//! backward's dQ partial sums and locks) are kept per stream, so that calls on one stream reuse them in
//! stream order and calls on two streams never share one.

use crate::view::BufferViewMut;
use crate::{Gpu, RuntimeError};
use cudarc::driver::{sys, CudaSlice};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A CUDA stream of the `Flash`'s context, by its raw handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Stream(usize);

impl Stream {
    /// The caller's stream `raw` (a `CUstream`/`cudaStream_t`; 0 is the legacy default stream).
    ///
    /// # Safety
    /// `raw` is a stream of the device's primary context (the one PyTorch, candle and `Flash` use), and it
    /// stays alive while work queued on it runs.
    pub unsafe fn from_raw(raw: sys::CUstream) -> Stream {
        Stream(raw as usize)
    }

    /// The raw handle.
    pub fn raw(self) -> sys::CUstream {
        self.0 as sys::CUstream
    }
}

/// One stream's scratch: grown to what the largest call so far needed, reused by the next call in stream
/// order.
#[derive(Default)]
pub struct Scratch {
    /// The backward's Δ = rowsum(dO ⊙ O).
    pub delta: Option<CudaSlice<f32>>,
    /// Base-2 row statistics: converted from a caller's natural-log LSE (backward), or a forward's that no
    /// caller wants (StatsOut::Discard).
    pub m: Option<CudaSlice<f32>>,
    /// fwd_ws_persistent's tile counter: two u32 words, zero between launches (each launch's last program
    /// resets them).
    pub tile_counter: Option<CudaSlice<u32>>,
    /// The fused backward's dQ partial sums and locks.
    pub dq_partial: Option<CudaSlice<f32>>,
    pub locks: Option<CudaSlice<u32>>,
    /// The split decode's partial O and base-2 log-sum-exps, and its LSE when the caller wants none.
    pub decode_o: Option<CudaSlice<f32>>,
    pub decode_m: Option<CudaSlice<f32>>,
    pub decode_lse: Option<CudaSlice<f32>>,
    /// The split decode's counts of the splits done per row tile (merged in the kernel): zero between calls.
    pub decode_counters: Option<CudaSlice<u32>>,
}

/// The scratch of every stream calls have used, made on first use.
#[derive(Default)]
pub struct ScratchPool {
    by_stream: Mutex<HashMap<Stream, Arc<Mutex<Scratch>>>>,
}

impl ScratchPool {
    /// The scratch of `stream` (a call holds its lock while it queues its kernels).
    pub fn of(&self, stream: Stream) -> Arc<Mutex<Scratch>> {
        self.by_stream.lock().unwrap_or_else(|p| p.into_inner()).entry(stream).or_default().clone()
    }
}

/// At least `len` elements of `slot`, zeroed when first made, as a view: a buffer too small is replaced.
/// The buffers are made on the GPU's own stream; for another stream that one is synchronized first, so
/// the memory is ready before work on `stream` uses it, and before an old buffer is freed, `stream` is, so
/// nothing queued there still uses it.
pub fn grow<'s, T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    stream: Stream,
    slot: &'s mut Option<CudaSlice<T>>,
    len: usize,
) -> Result<BufferViewMut<'s, T>, RuntimeError> {
    let own = stream.raw() == gpu.stream.cu_stream();
    if slot.as_ref().is_none_or(|b| b.len() < len) {
        if slot.is_some() && !own {
            gpu.ctx.bind_to_thread()?;
            // SAFETY: `stream` is a live stream of this context (Stream::from_raw's contract)
            unsafe { cudarc::driver::result::stream::synchronize(stream.raw()) }?;
        }
        *slot = Some(gpu.stream.alloc_zeros::<T>(len.max(1))?);
        if !own {
            gpu.stream.synchronize()?;
        }
    }
    match slot.as_mut() {
        Some(buffer) => Ok(BufferViewMut::of(buffer)),
        None => Err(RuntimeError::Device("scratch buffer missing after allocation".into())),
    }
}
