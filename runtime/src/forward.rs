//! Launching one forward specialization.

use crate::kernel::{check_problem, expect_kind, launch_config, KernelArgs, LoadedKernel};
use crate::tma::ForwardMaps;
use crate::{Gpu, Layout, RuntimeError};
use cudarc::driver::CudaSlice;
use flashgen::abi;

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
        let kind = self.spec.kind();
        // (the builder refuses maps or a counter the kind does not take, and a missing one)
        if a.tile_counter.is_some_and(|c| c.len() < 2) {
            return Err(RuntimeError::Argument(format!("{}: the tile counter must hold two zeroed u32 words", self.spec.name())));
        }
        let mut args = KernelArgs::new();
        args.tensor("Q", a.q.0, a.q.1).tensor("K", a.k.0, a.k.1).tensor("V", a.v.0, a.v.1).f32("sm_scale", a.sm_scale);
        args.f32s_mut("M", &mut *a.m).tensor_mut("Out", &mut *a.o.0, a.o.1).geometry((z, h, n));
        if let Some(ForwardMaps([map_q, map_k, map_v])) = a.maps {
            args.map("tmap_q", map_q).map("tmap_k", map_k).map("tmap_v", map_v);
        }
        if let Some(counter) = a.tile_counter {
            args.u32s("tile_counter", counter);
        }
        let mut b = args.launch_args(&gpu.stream, &self.function, &self.spec.name(), abi::kernel_parameters(kind))?;
        // # Safety
        // 1. The arguments are the kernel's parameter list (flashgen::abi, from which its `define` line was
        //    rendered; docs/ABI.md), in its order and each of its parameter's type (`launch_args` checks):
        //    Q, K, V, sm_scale, M, Out, their 16 i64 strides, Z, H, N_CTX, and for fwd_ws the TMA descriptors
        //    of Q, K, V built over those same buffers and layouts; for fwd_ws_persistent then its tile
        //    counter, two u32 words on this stream (the kernel reads and writes only those).
        // 2. Every element the kernel reads or writes lies inside its buffer: each layout was checked
        //    against its buffer's length above, and M holds Z·H·N floats.
        // 3. Block size and dynamic shared memory are the spec's own, raised on the function at load.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
