//! Launching one forward specialization.

use crate::kernel::{check_problem, expect_kind, launch_config, KernelArgs, KernelGeometry, LoadedKernel};
use crate::tma::ForwardMaps;
use crate::view::{BufferViewMut, TensorView, TensorViewMut};
use crate::{Gpu, RuntimeError, Stream};
use flashgen::abi;

/// Operands of one launch, against its `geometry`: Q and O [Z, H, N_q, D] (packed: [1, H, total_q, D]), K
/// and V [Z, H_kv, N_kv, D] (packed: [1, H_kv, total_k, D]) as views with their layouts, M f32 [Z·H·N_q]
/// (packed: [H·total_q]).
pub struct ForwardArgs<'a> {
    /// Batch, query and K/V heads, lengths, causal alignment, packed sequences' offsets (`KernelGeometry`).
    pub geometry: KernelGeometry,
    pub q: TensorView<'a>,
    pub k: TensorView<'a>,
    pub v: TensorView<'a>,
    pub o: TensorViewMut<'a>,
    pub m: BufferViewMut<'a, f32>,
    pub sm_scale: f32,
    /// The cap of softcap kernels (finite, > 0); others ignore it.
    pub softcap: f32,
    /// The addresses of the modifiers' tensors in the kernel's slots (`call::CallModifiers`), 0 where none.
    pub modifier_tensors: [u64; flashgen::spec::MOD_TENSORS],
    /// fwd_ws only: the TMA descriptors of Q, K and V (`tma::forward_maps`), over the same views.
    pub maps: Option<ForwardMaps>,
    /// fwd_ws_persistent only: its tile counter, two u32 words that are zero at launch (the kernel leaves
    /// them zero; launches on one stream may share it, launches on several may not).
    pub tile_counter: Option<BufferViewMut<'a, u32>>,
}

impl LoadedKernel {
    /// Check every operand, then launch the forward kernel on `stream` (of `gpu`'s context).
    pub fn launch(&self, gpu: &Gpu, stream: Stream, mut a: ForwardArgs<'_>) -> Result<(), RuntimeError> {
        // (a `Stream`, not a raw CUstream: whoever made it vouched for it, `Stream::from_raw`)
        let stream = stream.raw();
        expect_kind(self, flashgen::KernelKind::Fwd)?;
        let g = a.geometry;
        let (queries, keys) = ([("Q", a.q.layout), ("O", a.o.layout)], [("K", a.k.layout), ("V", a.v.layout)]);
        check_problem(&self.spec, &g, &queries, &keys, &[("M", a.m.len())], Some(a.sm_scale))?;
        let cfg = launch_config(self, &g);
        let kind = self.spec.kind();
        // (the builder refuses maps or a counter the kind does not take, and a missing one)
        if a.tile_counter.as_ref().is_some_and(|c| c.len() < 2) {
            return Err(RuntimeError::Argument(format!("{}: the tile counter must hold two zeroed u32 words", self.spec.name())));
        }
        let (q, k, v): (TensorView<'_>, TensorView<'_>, TensorView<'_>) = (a.q, a.k, a.v);
        let mut args = KernelArgs::new();
        args.tensor("Q", &q).tensor("K", &k).tensor("V", &v).f32("sm_scale", a.sm_scale).f32("SOFTCAP", a.softcap);
        args.f32s_mut("M", &mut a.m).tensor_mut("Out", &mut a.o).geometry(&g).modifier_tensors(a.modifier_tensors);
        if let Some(ForwardMaps([map_q, map_k, map_v])) = a.maps {
            args.map("tmap_q", map_q).map("tmap_k", map_k).map("tmap_v", map_v);
        }
        if let Some(counter) = a.tile_counter.as_mut() {
            args.u32s_mut("tile_counter", counter);
        }
        gpu.ctx.bind_to_thread()?;
        // # Safety
        // 1. The arguments are the kernel's parameter list (flashgen::abi, from which its `define` line was
        //    rendered; docs/ABI.md), in its order and each of its parameter's type and alignment (`launch`
        //    checks): Q, K, V, sm_scale, SOFTCAP, M, Out, their 16 i64 strides, the geometry group (Z, H, H_KV,
        //    N_Q, N_KV, ALIGN, the packed offsets, TOTAL_Q, TOTAL_K, WINDOW_LEFT, WINDOW_RIGHT), the modifiers' tensors
        //    (each checked by call.rs to hold the values its declaration indexes: H or Z), and for fwd_ws the TMA descriptors of Q, K, V
        //    built over those same views; for fwd_ws_persistent then its tile counter, two u32 words (the
        //    kernel reads and writes only those, and leaves them zero).
        // 2. Every element the kernel reads or writes lies inside memory the views hold: each view's layout
        //    was checked against its memory when it was made, the shapes are the geometry's and M holds its
        //    row statistics (check_problem); packed sequences' offsets, which only the GPU may hold, are
        //    clamped by the kernel to TOTAL_Q / TOTAL_K, the tensors' rows, and to the longest lengths.
        // 3. Block size and dynamic shared memory are the spec's own, raised on the function at load; the
        //    stream belongs to `gpu`'s context, bound to this thread above.
        unsafe { args.launch(stream, &self.function, &self.name, abi::kernel_parameters(kind), cfg) }
    }
}
