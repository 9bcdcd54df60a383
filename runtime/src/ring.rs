//! Ring (context-parallel) attention with P virtual ranks on one GPU (issue 35): the schedule of
//! `flashgen::ring` run block by block with this Flash's forward and backward kernels on chunk views of the
//! whole tensors, each block's partial results merged in f32 by the ring's merge kernels
//! (templates/ring_merge.ll.tera) in the order P GPUs would merge them: rank by rank within a step, step by
//! step. It is the multi-GPU ring without its transfers: the same blocks, masks and merges, so it computes
//! what P GPUs would (deterministically), and its time over P bounds what P GPUs can reach.
//!
//! The accumulators live in a `VirtualRing` made once per shape and reused (a benchmark's loop allocates
//! nothing): per query chunk O (then dQ) in f32 and M (base-2 log-sum-exp, what the backward reads back),
//! per key chunk dK and dV in f32, and one block's partial results in the tensors' dtype.

use crate::call::{BackwardCall, ForwardCall, StatsIn, StatsOut};
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use crate::{Flash, Layout, RuntimeError, Stream};
use cudarc::driver::{CudaFunction, CudaSlice};
use flashgen::ring::{Mask, Ring, MERGE_THREADS, MERGE_WARPS};
use flashgen::DType;
use std::ffi::c_void;

/// The shapes of one ring attention: Q and O [batch, heads, tokens, head_dim(_v)], K and V with kv_heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingShape {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub tokens: usize,
    pub head_dim: usize,
    pub head_dim_v: usize,
}

/// P virtual ranks' ring over one shape, with its accumulators (see the module's comment).
pub struct VirtualRing {
    pub ring: Ring,
    pub shape: RingShape,
    pub dtype: DType,
    merges: Merges,
    /// Per query chunk: O's accumulators f32 [B·H·L, D_v] in the forward, dQ's [B·H·L, D] in the backward.
    acc_q: Vec<CudaSlice<f32>>,
    /// Per query chunk: M (base 2) [B·H·L], the forward's result and the backward's statistics.
    m: Vec<CudaSlice<f32>>,
    /// Per key chunk: dK's and dV's accumulators f32 [B·H_kv·L, D or D_v] (made by the first backward).
    acc_k: Vec<CudaSlice<f32>>,
    acc_v: Vec<CudaSlice<f32>>,
    /// One block's partial results: O [B, H, L, D_v] and M; dQ, dK, dV.
    part_o: CudaSlice<u16>,
    part_m: CudaSlice<f32>,
    part_dq: Option<[CudaSlice<u16>; 3]>,
    /// Whether M holds a forward's statistics (the backward needs them).
    has_forward: bool,
}

pub(crate) fn check_view(name: &str, view: &TensorView<'_>, dtype: DType, shape: [usize; 4]) -> Result<(), RuntimeError> {
    if view.dtype != dtype || view.layout.shape != shape {
        return Err(RuntimeError::Argument(format!(
            "tensor {name} is {} {:?} but this ring was made for {} {shape:?}: make a VirtualRing for this shape",
            view.dtype.name(),
            view.layout.shape,
            dtype.name()
        )));
    }
    if view.layout.strides[3] != 1 || view.layout.strides.iter().take(3).any(|s| s % 2 != 0) {
        return Err(RuntimeError::Argument(format!("tensor {name} has strides {:?}: the ring's merges write pairs of elements, so its rows must be contiguous (last stride 1) and the other strides even", view.layout.strides)));
    }
    Ok(())
}

impl VirtualRing {
    /// A ring of `ranks` virtual ranks for attention of this shape and dtype (zig-zag chunks when causal),
    /// its merge kernels compiled and its accumulators allocated on the Flash's device.
    pub fn new(flash: &Flash, ranks: usize, causal: bool, shape: RingShape, dtype: DType) -> Result<VirtualRing, RuntimeError> {
        let ring = Ring::new(ranks, shape.tokens, causal).map_err(RuntimeError::Argument)?;
        let RingShape { batch, heads, kv_heads, head_dim, head_dim_v, .. } = shape;
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(RuntimeError::Argument(format!("{heads} query heads do not share {kv_heads} K/V heads evenly: H must be a multiple of H_kv")));
        }
        if head_dim % 2 != 0 || head_dim_v % 2 != 0 {
            return Err(RuntimeError::Argument(format!("head dims {head_dim}/{head_dim_v}: the ring's merges take pairs of columns")));
        }
        let merges = Merges::load(flash, dtype)?;
        let (chunks, len) = (ring.chunks(), ring.chunk_len());
        let q_rows = batch * heads * len;
        let st = &flash.gpu.stream;
        let acc_q = (0..chunks).map(|_| st.alloc_zeros::<f32>(q_rows * head_dim.max(head_dim_v))).collect::<Result<Vec<_>, _>>()?;
        let m = (0..chunks).map(|_| st.alloc_zeros::<f32>(q_rows)).collect::<Result<Vec<_>, _>>()?;
        let part_o = st.alloc_zeros::<u16>(q_rows * head_dim_v)?;
        let part_m = st.alloc_zeros::<f32>(q_rows)?;
        st.synchronize()?;
        Ok(VirtualRing { ring, shape, dtype, merges, acc_q, m, acc_k: Vec::new(), acc_v: Vec::new(), part_o, part_m, part_dq: None, has_forward: false })
    }

    fn q_shape(&self, cols: usize) -> [usize; 4] {
        [self.shape.batch, self.shape.heads, self.shape.tokens, cols]
    }

    fn kv_shape(&self, cols: usize) -> [usize; 4] {
        [self.shape.batch, self.shape.kv_heads, self.shape.tokens, cols]
    }

    /// The forward: O = attention(Q, K, V) over the whole sequence, computed as the ring's blocks, into `o`;
    /// the row statistics stay here for `backward` (and `lse`).
    #[allow(clippy::too_many_arguments)]
    pub fn forward(&mut self, flash: &Flash, q: TensorView<'_>, k: TensorView<'_>, v: TensorView<'_>, mut o: TensorViewMut<'_>, sm_scale: Option<f32>, stream: Stream) -> Result<(), RuntimeError> {
        let (d, dv) = (self.shape.head_dim, self.shape.head_dim_v);
        check_view("Q", &q, self.dtype, self.q_shape(d))?;
        check_view("K", &k, self.dtype, self.kv_shape(d))?;
        check_view("V", &v, self.dtype, self.kv_shape(dv))?;
        check_view("O", &o.as_view(), self.dtype, self.q_shape(dv))?;
        let sm_scale = Some(sm_scale.unwrap_or(1.0 / (d as f32).sqrt()));
        let ring = self.ring;
        let len = ring.chunk_len();
        let rows = self.shape.batch * self.shape.heads * len;
        let mut first = vec![true; ring.chunks()];
        for step in 0..ring.ranks {
            for rank in 0..ring.ranks {
                for block in ring.blocks(rank, step) {
                    let (qc, kc) = (ring.chunk(block.q), ring.chunk(block.kv));
                    let part_o = TensorViewMut::of_slice("ring partial O", &mut self.part_o, 0, self.dtype, Layout::contiguous(self.shape.batch, self.shape.heads, len, dv))?;
                    let stats = StatsOut::M(BufferViewMut::of(&mut self.part_m));
                    let call = ForwardCall { causal: block.mask == Mask::Diagonal, sm_scale, ..ForwardCall::new(q.tokens(qc)?, k.tokens(kc.clone())?, v.tokens(kc)?, part_o, stats) };
                    flash.forward(call, stream)?;
                    let (acc, m) = (addr_of(&self.acc_q[block.q]), addr_of(&self.m[block.q]));
                    self.merges.merge(flash, [acc, m, addr_of(&self.part_o), addr_of(&self.part_m)], rows, dv, first[block.q], stream)?;
                    first[block.q] = false;
                }
            }
        }
        for c in 0..ring.chunks() {
            let chunk = o.tokens(ring.chunk(c))?;
            self.merges.store(flash, chunk, addr_of(&self.acc_q[c]), self.shape.heads, stream)?;
        }
        self.has_forward = true;
        Ok(())
    }

    /// The backward of the last `forward` (its O, and dO): dQ, dK, dV over the whole sequence, computed as
    /// the ring's blocks with the forward's statistics (dK and dV summed as they would travel with their
    /// K/V chunk, dQ where its queries stay), rounded once into `dq`, `dk`, `dv`.
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &mut self,
        flash: &Flash,
        [q, k, v, o, d_o]: [TensorView<'_>; 5],
        [mut dq, mut dk, mut dv]: [TensorViewMut<'_>; 3],
        sm_scale: Option<f32>,
        stream: Stream,
    ) -> Result<(), RuntimeError> {
        if !self.has_forward {
            return Err(RuntimeError::Argument("the ring's backward reads its forward's statistics: run VirtualRing::forward on these inputs first".into()));
        }
        let (d, d_v) = (self.shape.head_dim, self.shape.head_dim_v);
        for (name, view, shape) in [("Q", &q, self.q_shape(d)), ("K", &k, self.kv_shape(d)), ("V", &v, self.kv_shape(d_v)), ("O", &o, self.q_shape(d_v)), ("dO", &d_o, self.q_shape(d_v))] {
            check_view(name, view, self.dtype, shape)?;
        }
        for (name, view, shape) in [("dQ", &dq, self.q_shape(d)), ("dK", &dk, self.kv_shape(d)), ("dV", &dv, self.kv_shape(d_v))] {
            check_view(name, &view.as_view(), self.dtype, shape)?;
        }
        let sm_scale = Some(sm_scale.unwrap_or(1.0 / (d as f32).sqrt()));
        let ring = self.ring;
        let RingShape { batch, heads, kv_heads, .. } = self.shape;
        let len = ring.chunk_len();
        let (q_rows, kv_rows) = (batch * heads * len, batch * kv_heads * len);
        if self.acc_k.is_empty() {
            let st = &flash.gpu.stream;
            self.acc_k = (0..ring.chunks()).map(|_| st.alloc_zeros::<f32>(kv_rows * d)).collect::<Result<Vec<_>, _>>()?;
            self.acc_v = (0..ring.chunks()).map(|_| st.alloc_zeros::<f32>(kv_rows * d_v)).collect::<Result<Vec<_>, _>>()?;
            self.part_dq = Some([st.alloc_zeros::<u16>(q_rows * d)?, st.alloc_zeros::<u16>(kv_rows * d)?, st.alloc_zeros::<u16>(kv_rows * d_v)?]);
            st.synchronize()?;
        }
        let mut first_q = vec![true; ring.chunks()];
        let mut first_kv = vec![true; ring.chunks()];
        for step in 0..ring.ranks {
            for rank in 0..ring.ranks {
                for block in ring.blocks(rank, step) {
                    let (qc, kc) = (ring.chunk(block.q), ring.chunk(block.kv));
                    let parts = self.part_dq.as_mut().expect("made above");
                    let [p_dq, p_dk, p_dv] = parts;
                    let grads = (
                        TensorViewMut::of_slice("ring partial dQ", p_dq, 0, self.dtype, Layout::contiguous(batch, heads, len, d))?,
                        TensorViewMut::of_slice("ring partial dK", p_dk, 0, self.dtype, Layout::contiguous(batch, kv_heads, len, d))?,
                        TensorViewMut::of_slice("ring partial dV", p_dv, 0, self.dtype, Layout::contiguous(batch, kv_heads, len, d_v))?,
                    );
                    let stats = StatsIn::M(BufferView::of(&self.m[block.q]));
                    let call = BackwardCall {
                        causal: block.mask == Mask::Diagonal,
                        sm_scale,
                        ..BackwardCall::new(q.tokens(qc.clone())?, k.tokens(kc.clone())?, v.tokens(kc)?, o.tokens(qc.clone())?, d_o.tokens(qc)?, stats, grads)
                    };
                    flash.backward(call, stream)?;
                    let [p_dq, p_dk, p_dv] = self.part_dq.as_ref().map(|[a, b, c]| [addr_of(a), addr_of(b), addr_of(c)]).expect("made above");
                    self.merges.merge(flash, [addr_of(&self.acc_q[block.q]), 0, p_dq, 0], q_rows, d, first_q[block.q], stream)?;
                    self.merges.merge(flash, [addr_of(&self.acc_k[block.kv]), 0, p_dk, 0], kv_rows, d, first_kv[block.kv], stream)?;
                    self.merges.merge(flash, [addr_of(&self.acc_v[block.kv]), 0, p_dv, 0], kv_rows, d_v, first_kv[block.kv], stream)?;
                    first_q[block.q] = false;
                    first_kv[block.kv] = false;
                }
            }
        }
        for c in 0..ring.chunks() {
            let range = ring.chunk(c);
            self.merges.store(flash, dq.tokens(range.clone())?, addr_of(&self.acc_q[c]), heads, stream)?;
            self.merges.store(flash, dk.tokens(range.clone())?, addr_of(&self.acc_k[c]), kv_heads, stream)?;
            self.merges.store(flash, dv.tokens(range)?, addr_of(&self.acc_v[c]), kv_heads, stream)?;
        }
        // (acc_q held O's accumulators; the statistics in M stay valid for another backward)
        Ok(())
    }

    /// The last forward's log-sum-exps (natural log) in [B, H, N] order, copied to the host after the
    /// device's work.
    pub fn lse(&self, flash: &Flash) -> Result<Vec<f32>, RuntimeError> {
        if !self.has_forward {
            return Err(RuntimeError::Argument("no forward has run on this ring yet".into()));
        }
        flash.gpu.ctx.synchronize()?;
        let (len, tokens) = (self.ring.chunk_len(), self.shape.tokens);
        let bh = self.shape.batch * self.shape.heads;
        let mut out = vec![0.0f32; bh * tokens];
        for (c, m) in self.m.iter().enumerate() {
            let host = flash.gpu.stream.clone_dtoh(m)?;
            let start = self.ring.chunk(c).start;
            for r in 0..bh {
                for l in 0..len {
                    out[r * tokens + start + l] = host[r * len + l] * std::f32::consts::LN_2;
                }
            }
        }
        Ok(out)
    }
}

/// The ring's merge kernels for one dtype (flashgen::ring: `merge_entry`, `store_entry`), loaded once.
pub struct Merges {
    merge: CudaFunction,
    store: CudaFunction,
}

impl Merges {
    /// Compile (LLVM, at run time) and load the merge module for `dtype` on the Flash's device.
    pub fn load(flash: &Flash, dtype: DType) -> Result<Merges, RuntimeError> {
        let ptx = merge_ptx(flash, dtype)?;
        flash.gpu.ctx.bind_to_thread()?;
        let module = flash.gpu.ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx))?;
        Ok(Merges { merge: module.load_function(&flashgen::ring::merge_entry(dtype))?, store: module.load_function(&flashgen::ring::store_entry(dtype))? })
    }

    /// `merge_entry`'s launch: [acc_o, acc_m, part_o, part_m] (0 for null), `rows` of `cols`.
    pub fn merge(&self, flash: &Flash, [mut acc_o, mut acc_m, mut part_o, mut part_m]: [u64; 4], rows: usize, cols: usize, first: bool, stream: Stream) -> Result<(), RuntimeError> {
        let (mut rows_arg, mut cols_arg, mut first_arg) = (as_u32(rows)?, as_u32(cols)?, first as u32);
        let mut params: [*mut c_void; 7] = [
            &mut acc_o as *mut u64 as *mut _,
            &mut acc_m as *mut u64 as *mut _,
            &mut part_o as *mut u64 as *mut _,
            &mut part_m as *mut u64 as *mut _,
            &mut rows_arg as *mut u32 as *mut _,
            &mut cols_arg as *mut u32 as *mut _,
            &mut first_arg as *mut u32 as *mut _,
        ];
        // SAFETY: the merge entry takes (ptr, ptr, ptr, ptr, i32, i32, i32), which `params` points at; its
        // rows × cols elements are those of the accumulators and partials this ring allocated for `rows`
        // rows of `cols` (its shape's), and `stream` belongs to the Flash's context.
        unsafe { launch(flash, &self.merge, rows, &mut params, stream) }
    }

    /// `store_entry`'s launch: the accumulators at `acc` into `out` (a chunk of tokens of a tensor).
    pub fn store(&self, flash: &Flash, out: TensorViewMut<'_>, acc: u64, heads: usize, stream: Stream) -> Result<(), RuntimeError> {
        let [batch, _, len, cols] = out.layout.shape;
        let rows = batch * heads * len;
        let [sb, sh, sn, _] = out.layout.strides.map(|s| s as u64);
        let (mut out_addr, mut acc) = (out.addr(), acc);
        let (mut rows_arg, mut cols_arg, mut heads_arg, mut len_arg) = (as_u32(rows)?, as_u32(cols)?, as_u32(heads)?, as_u32(len)?);
        let (mut sb, mut sh, mut sn) = (sb, sh, sn);
        let mut params: [*mut c_void; 9] = [
            &mut out_addr as *mut u64 as *mut _,
            &mut acc as *mut u64 as *mut _,
            &mut rows_arg as *mut u32 as *mut _,
            &mut cols_arg as *mut u32 as *mut _,
            &mut heads_arg as *mut u32 as *mut _,
            &mut len_arg as *mut u32 as *mut _,
            &mut sb as *mut u64 as *mut _,
            &mut sh as *mut u64 as *mut _,
            &mut sn as *mut u64 as *mut _,
        ];
        // SAFETY: the store entry takes (ptr, ptr, i32 × 4, i64 × 3), which `params` points at; it writes the
        // elements `out`'s layout reaches (a checked view, borrowed exclusively) and reads rows × cols
        // accumulators, which this ring allocated for its chunks.
        unsafe { launch(flash, &self.store, rows, &mut params, stream) }
    }
}

pub(crate) fn addr_of<T>(slice: &CudaSlice<T>) -> u64 {
    use cudarc::driver::DevicePtr;
    slice.device_ptr(slice.stream()).0
}

pub(crate) fn as_u32(n: usize) -> Result<u32, RuntimeError> {
    u32::try_from(n).map_err(|_| RuntimeError::Argument(format!("{n} rows or columns overflow the ring merge's u32 counts: use fewer tokens per chunk")))
}

/// One merge program per MERGE_WARPS rows.
///
/// # Safety
/// `params` matches `f`'s parameters and what it reaches is allocated.
unsafe fn launch(flash: &Flash, f: &CudaFunction, rows: usize, params: &mut [*mut c_void], stream: Stream) -> Result<(), RuntimeError> {
    if rows == 0 {
        return Ok(());
    }
    let programs = as_u32(rows.div_ceil(MERGE_WARPS as usize))?;
    flash.gpu.ctx.bind_to_thread()?;
    unsafe { cudarc::driver::result::launch_kernel(f.cu_function(), (programs, 1, 1), (MERGE_THREADS, 1, 1), 0, stream.raw(), params) }?;
    Ok(())
}

#[cfg(feature = "jit")]
fn merge_ptx(flash: &Flash, dtype: DType) -> Result<String, RuntimeError> {
    flashgen::ring::merge_module_ptx(flash.gpu.arch, dtype).map_err(|e| RuntimeError::Kernel { kernel: format!("ring_merge_{}", dtype.name()), detail: e.to_string() })
}

#[cfg(not(feature = "jit"))]
fn merge_ptx(_: &Flash, _: DType) -> Result<String, RuntimeError> {
    Err(RuntimeError::Argument("the ring's merge kernels are compiled at run time: build flashgen-runtime with its `jit` feature".into()))
}
