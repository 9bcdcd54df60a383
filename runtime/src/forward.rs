//! Launching one forward specialization.

use crate::kernel::{check_problem, expect_kind, launch_config, strides, LoadedKernel};
use crate::tma::ForwardMaps;
use crate::{Gpu, Layout, RuntimeError};
use cudarc::driver::{CudaSlice, PushKernelArg};

/// Operands of one launch: Q, K, V, O as 16-bit element buffers with their layouts, M as f32 [Z·H·N].
pub struct ForwardArgs<'a> {
    pub q: (&'a CudaSlice<u16>, Layout),
    pub k: (&'a CudaSlice<u16>, Layout),
    pub v: (&'a CudaSlice<u16>, Layout),
    pub o: (&'a mut CudaSlice<u16>, Layout),
    pub m: &'a mut CudaSlice<f32>,
    pub sm_scale: f32,
    /// fwd_ws only: the TMA descriptors of Q, K and V (`tma::forward_maps`).
    pub maps: Option<ForwardMaps>,
    /// fwd_ws_persistent only: its tile counter, two u32 words that are zero at launch (the kernel leaves
    /// them zero; launches on one stream may share it, launches on several may not).
    pub tile_counter: Option<&'a CudaSlice<u32>>,
}

impl LoadedKernel {
    /// Check every operand, then launch the forward kernel on the GPU's stream.
    pub fn launch(&self, gpu: &Gpu, a: ForwardArgs<'_>) -> Result<(), RuntimeError> {
        expect_kind(self, flashgen::KernelKind::Fwd)?;
        let tensors = [("Q", a.q.1, a.q.0.len()), ("K", a.k.1, a.k.0.len()), ("V", a.v.1, a.v.0.len()), ("O", a.o.1, a.o.0.len())];
        let (z, h, n) = check_problem(&self.spec, &tensors, &[("M", a.m.len())], Some(a.sm_scale))?;
        let cfg = launch_config(self, z, h, n);
        let (zi, hi, ni) = (z as i32, h as i32, n as i32);
        let mut b = gpu.stream.launch_builder(&self.function);
        b.arg(a.q.0).arg(a.k.0).arg(a.v.0).arg(&a.sm_scale).arg(&mut *a.m).arg(&mut *a.o.0);
        let all = [strides(&a.q.1), strides(&a.k.1), strides(&a.v.1), strides(&a.o.1)];
        for s in all.iter().flatten() {
            b.arg(s);
        }
        b.arg(&zi).arg(&hi).arg(&ni);
        let warp_specialized = self.spec.kind().warp_specialized_forward();
        match (&a.maps, warp_specialized) {
            (Some(ForwardMaps(maps)), true) => {
                for m in maps {
                    b.arg(m);
                }
            }
            (None, false) => {}
            _ => return Err(RuntimeError::Argument(format!("{}: TMA descriptors are passed exactly to fwd_ws kernels (tma::forward_maps)", self.spec.name()))),
        }
        match (a.tile_counter, self.spec.kind().persistent()) {
            (Some(counter), true) if counter.len() >= 2 => {
                b.arg(counter);
            }
            (None, false) => {}
            _ => return Err(RuntimeError::Argument(format!("{}: a tile counter of two zeroed u32 words is passed exactly to fwd_ws_persistent kernels", self.spec.name()))),
        }
        // # Safety
        // 1. The argument list matches the kernel ABI (docs/ABI.md): 3 input pointers, sm_scale, M, Out,
        //    16 i64 strides, Z, H, N_CTX, in that order, and for fwd_ws the TMA descriptors of Q, K, V
        //    built over those same buffers and layouts; for fwd_ws_persistent then its tile counter, two u32
        //    words on this stream (the kernel reads and writes only those).
        // 2. Every element the kernel reads or writes lies inside its buffer: each layout was checked
        //    against its buffer's length above, and M holds Z·H·N floats.
        // 3. Block size and dynamic shared memory are the spec's own, raised on the function at load.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
