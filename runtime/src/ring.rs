//! Ring (context-parallel) attention (issue 35) on one GPU: P virtual ranks, each holding its chunks of the
//! sequence as a rank of P GPUs would (gathered into its own buffers), running the ring's steps rank by rank,
//! step by step on one stream. A rank's step is one attention call (`flashgen::ring::Ring::step_call`: its
//! query tokens against the visiting K/V slice's, causal on step 0 of the zig-zag split), its partial results
//! merged in f32 by the ring's merge kernels (templates/ring_merge.ll.tera). The ranks of P GPUs
//! (ring_ranks.rs) run the same `RankState` steps in the same order, so they compute the same bits; without
//! the transfers, this ring's time over P bounds what P GPUs can reach.

use crate::call::{BackwardCall, ForwardCall, StatsIn, StatsOut};
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use crate::{Flash, Layout, RuntimeError, Stream};
use cudarc::driver::{CudaFunction, CudaSlice};
use flashgen::ring::{Ring, MERGE_THREADS, MERGE_WARPS};
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

impl RingShape {
    pub(crate) fn check(&self) -> Result<(), RuntimeError> {
        let RingShape { heads, kv_heads, head_dim, head_dim_v, .. } = *self;
        if kv_heads == 0 || heads % kv_heads != 0 {
            return Err(RuntimeError::Argument(format!("{heads} query heads do not share {kv_heads} K/V heads evenly: H must be a multiple of H_kv")));
        }
        if head_dim % 2 != 0 || head_dim_v % 2 != 0 {
            return Err(RuntimeError::Argument(format!("head dims {head_dim}/{head_dim_v}: the ring's merges take pairs of columns")));
        }
        Ok(())
    }
}

/// Where a partial's rows land among the accumulators: row r of B·H groups of `len` is the accumulators'
/// row (r / len)·acc_len + acc_start + r % len (a call's token range of a rank's acc_len tokens).
#[derive(Clone, Copy, Debug)]
pub struct RowsAt {
    pub len: usize,
    pub acc_len: usize,
    pub acc_start: usize,
}

pub(crate) fn check_view(name: &str, view: &TensorView<'_>, dtype: DType, shape: [usize; 4]) -> Result<(), RuntimeError> {
    if view.dtype != dtype || view.layout.shape != shape {
        return Err(RuntimeError::Argument(format!(
            "tensor {name} is {} {:?} but this ring was made for {} {shape:?}: make a ring for this shape",
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

/// `stream` waits for `event` (`stream` a raw stream: the steps' own).
pub(crate) fn wait_on(stream: Stream, event: &cudarc::driver::CudaEvent) -> Result<(), RuntimeError> {
    // SAFETY: both belong to the context bound on this thread
    unsafe { cudarc::driver::result::stream::wait_event(stream.raw(), event.cu_event(), cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }?;
    Ok(())
}

/// One rank's state: its accumulators and the buffers of a step's partial results. Its steps are the ring's
/// whole computation for this rank; what differs between ranks on one GPU and on P GPUs is only where the
/// visiting slice (and, in the backward, its dK/dV accumulators) comes from.
pub(crate) struct RankState {
    pub ring: Ring,
    pub rank: usize,
    pub shape: RingShape,
    pub dtype: DType,
    /// O's accumulators f32 [B·H·T, D_v] in the forward, dQ's [B·H·T, D] in the backward (T: the rank's tokens).
    pub acc_q: CudaSlice<f32>,
    /// M (base 2) [B·H·T]: the forward's result, the backward's statistics.
    pub m: CudaSlice<f32>,
    /// A call's statistics when its query tokens are not all the rank's: [B·H·len] gathered from `m`.
    m_call: CudaSlice<f32>,
    part_o: CudaSlice<u16>,
    part_m: CudaSlice<f32>,
    part_grads: Option<[CudaSlice<u16>; 3]>,
    pub has_forward: bool,
}

impl RankState {
    pub fn new(flash: &Flash, ring: Ring, rank: usize, shape: RingShape, dtype: DType) -> Result<RankState, RuntimeError> {
        let t = ring.chunk_len() * ring.chunks_of(rank).len();
        let q_rows = shape.batch * shape.heads * t;
        let st = &flash.gpu.stream;
        let state = RankState {
            ring,
            rank,
            shape,
            dtype,
            acc_q: st.alloc_zeros::<f32>(q_rows * shape.head_dim.max(shape.head_dim_v))?,
            m: st.alloc_zeros::<f32>(q_rows)?,
            m_call: st.alloc_zeros::<f32>(q_rows)?,
            part_o: st.alloc_zeros::<u16>(q_rows * shape.head_dim_v)?,
            part_m: st.alloc_zeros::<f32>(q_rows)?,
            part_grads: None,
            has_forward: false,
        };
        st.synchronize()?;
        Ok(state)
    }

    /// The rank's tokens (its chunks, in sequence order).
    pub fn tokens(&self) -> usize {
        self.ring.chunk_len() * self.ring.chunks_of(self.rank).len()
    }

    /// Floats of a slice's dK then dV accumulators ([B·H_kv·T, D] then [B·H_kv·T, D_v]).
    pub fn kv_acc_floats(&self) -> usize {
        self.shape.batch * self.shape.kv_heads * self.tokens() * (self.shape.head_dim + self.shape.head_dim_v)
    }

    /// The forward's step `step`: this rank's queries `q` [B, H, T, D] against the visiting slice `k`, `v`
    /// [B, H_kv, T, ·], merged into O's accumulators (the first step writes them).
    #[allow(clippy::too_many_arguments)]
    pub fn forward_step(&mut self, flash: &Flash, merges: &Merges, step: usize, q: &TensorView<'_>, (k, v): (&TensorView<'_>, &TensorView<'_>), sm_scale: f32, stream: Stream) -> Result<(), RuntimeError> {
        let call = self.ring.step_call(self.rank, step);
        let RingShape { batch, heads, head_dim_v: dv, .. } = self.shape;
        let (t, lq) = (self.tokens(), call.q.len());
        debug_assert!(step > 0 || call.q == (0..t), "the first step covers every query row");
        let part_o = TensorViewMut::of_slice("ring partial O", &mut self.part_o, 0, self.dtype, Layout::contiguous(batch, heads, lq, dv))?;
        let stats = StatsOut::M(BufferViewMut::of(&mut self.part_m));
        let fwd = ForwardCall { causal: call.causal, sm_scale: Some(sm_scale), ..ForwardCall::new(q.tokens(call.q.clone())?, k.tokens(call.kv.clone())?, v.tokens(call.kv)?, part_o, stats) };
        flash.forward(fwd, stream)?;
        let addrs = [addr_of(&self.acc_q), addr_of(&self.m), addr_of(&self.part_o), addr_of(&self.part_m)];
        merges.merge(flash, addrs, batch * heads * lq, dv, step == 0, RowsAt { len: lq, acc_len: t, acc_start: call.q.start }, stream)
    }

    /// The backward's step `step`: dQ of this rank's query tokens into its accumulators, dK and dV of the
    /// visiting slice into the slice's (`acc_kv`: dK then dV, `kv_acc_floats`; the slice's first step writes
    /// them), with the forward's statistics. `inputs` are this rank's [q, o, d_o]. The merges wait for
    /// `acc_arrival` (a travelling slice's accumulators arriving while the step's kernels compute).
    #[allow(clippy::too_many_arguments)]
    pub fn backward_step(&mut self, flash: &Flash, merges: &Merges, step: usize, [q, o, d_o]: [&TensorView<'_>; 3], (k, v): (&TensorView<'_>, &TensorView<'_>), acc_kv: u64, acc_arrival: Option<&cudarc::driver::CudaEvent>, sm_scale: f32, stream: Stream) -> Result<(), RuntimeError> {
        let call = self.ring.step_call(self.rank, step);
        let RingShape { batch, heads, kv_heads, head_dim: d, head_dim_v: dv, .. } = self.shape;
        let t = self.tokens();
        let (lq, lk) = (call.q.len(), call.kv.len());
        debug_assert!(step > 0 || (call.q == (0..t) && call.kv == (0..t)), "the first step covers every row");
        if self.part_grads.is_none() {
            let st = &flash.gpu.stream;
            self.part_grads = Some([st.alloc_zeros::<u16>(batch * heads * t * d)?, st.alloc_zeros::<u16>(batch * kv_heads * t * d)?, st.alloc_zeros::<u16>(batch * kv_heads * t * dv)?]);
            st.synchronize()?;
        }
        // the statistics of the call's query rows, contiguous as the kernels read them
        let stats_at = if call.q == (0..t) {
            addr_of(&self.m)
        } else {
            gather_rows(addr_of(&self.m_call), addr_of(&self.m), 4, batch * heads, t, call.q.clone(), stream)?;
            addr_of(&self.m_call)
        };
        let [p_dq, p_dk, p_dv] = self.part_grads.as_mut().expect("made above");
        let grads = (
            TensorViewMut::of_slice("ring partial dQ", p_dq, 0, self.dtype, Layout::contiguous(batch, heads, lq, d))?,
            TensorViewMut::of_slice("ring partial dK", p_dk, 0, self.dtype, Layout::contiguous(batch, kv_heads, lk, d))?,
            TensorViewMut::of_slice("ring partial dV", p_dv, 0, self.dtype, Layout::contiguous(batch, kv_heads, lk, dv))?,
        );
        let stats_slice = if stats_at == addr_of(&self.m) { &self.m } else { &self.m_call };
        let stats = StatsIn::M(BufferView::of(stats_slice));
        let bwd = BackwardCall {
            causal: call.causal,
            sm_scale: Some(sm_scale),
            ..BackwardCall::new(q.tokens(call.q.clone())?, k.tokens(call.kv.clone())?, v.tokens(call.kv.clone())?, o.tokens(call.q.clone())?, d_o.tokens(call.q.clone())?, stats, grads)
        };
        flash.backward(bwd, stream)?;
        if let Some(event) = acc_arrival {
            wait_on(stream, event)?;
        }
        let [p_dq, p_dk, p_dv] = self.part_grads.as_ref().map(|[a, b, c]| [addr_of(a), addr_of(b), addr_of(c)]).expect("made above");
        let dv_at = acc_kv + 4 * (batch * kv_heads * t * d) as u64;
        let (q_at, kv_at) = (RowsAt { len: lq, acc_len: t, acc_start: call.q.start }, RowsAt { len: lk, acc_len: t, acc_start: call.kv.start });
        merges.merge(flash, [addr_of(&self.acc_q), 0, p_dq, 0], batch * heads * lq, d, step == 0, q_at, stream)?;
        merges.merge(flash, [acc_kv, 0, p_dk, 0], batch * kv_heads * lk, d, step == 0, kv_at, stream)?;
        merges.merge(flash, [dv_at, 0, p_dv, 0], batch * kv_heads * lk, dv, step == 0, kv_at, stream)
    }

    /// The accumulators at `acc` ([B·heads·T, cols] f32) into `out`, a whole-sequence tensor [B, heads, N, cols]:
    /// each of this rank's chunks into its tokens.
    pub fn store_chunks(&self, flash: &Flash, merges: &Merges, out: &mut TensorViewMut<'_>, acc: u64, heads: usize, stream: Stream) -> Result<(), RuntimeError> {
        let (t, len) = (self.tokens(), self.ring.chunk_len());
        for (i, c) in self.ring.chunks_of(self.rank).into_iter().enumerate() {
            merges.store(flash, out.tokens(self.ring.chunk(c))?, acc, heads, t, i * len, stream)?;
        }
        Ok(())
    }

    /// The last forward's log-sum-exps (natural log) of this rank's rows, [B, H, T] in its chunks' order.
    pub fn lse(&self, flash: &Flash) -> Result<Vec<f32>, RuntimeError> {
        if !self.has_forward {
            return Err(RuntimeError::Argument("no forward has run on this ring yet".into()));
        }
        flash.gpu.ctx.synchronize()?;
        Ok(flash.gpu.stream.clone_dtoh(&self.m)?.into_iter().map(|m| m * std::f32::consts::LN_2).collect())
    }
}

/// Rows `range` of each of `groups` groups of `len` rows (of `elem` bytes) at `src`, packed at `dst`.
pub(crate) fn gather_rows(dst: u64, src: u64, elem: usize, groups: usize, len: usize, range: std::ops::Range<usize>, stream: Stream) -> Result<(), RuntimeError> {
    let width = range.len() * elem;
    gather_2d(dst, width, src + (range.start * elem) as u64, len * elem, width, groups, stream)
}

/// P virtual ranks on one GPU (see the module's comment), over one shape, with their accumulators.
pub struct VirtualRing {
    pub ring: Ring,
    pub shape: RingShape,
    pub dtype: DType,
    merges: Merges,
    ranks: Vec<RankState>,
    /// Each rank's Q, K, V (and for the backward O, dO) gathered from the whole tensors.
    local: Vec<[CudaSlice<u16>; 5]>,
    /// Each rank's own slice's dK and dV accumulators (they stay home: every visit merges there, in step order).
    acc_kv: Vec<CudaSlice<f32>>,
}

impl VirtualRing {
    /// A ring of `ranks` virtual ranks for attention of this shape and dtype (zig-zag chunks when causal),
    /// its merge kernels compiled and its buffers allocated on the Flash's device.
    pub fn new(flash: &Flash, ranks: usize, causal: bool, shape: RingShape, dtype: DType) -> Result<VirtualRing, RuntimeError> {
        let ring = Ring::new(ranks, shape.tokens, causal).map_err(RuntimeError::Argument)?;
        shape.check()?;
        let merges = Merges::load(flash, dtype)?;
        let states = (0..ranks).map(|r| RankState::new(flash, ring, r, shape, dtype)).collect::<Result<Vec<_>, _>>()?;
        let st = &flash.gpu.stream;
        let RingShape { batch, heads, kv_heads, head_dim: d, head_dim_v: dv, .. } = shape;
        let t = states[0].tokens();
        let local = (0..ranks)
            .map(|_| -> Result<[CudaSlice<u16>; 5], RuntimeError> {
                let z = |n: usize| st.alloc_zeros::<u16>(n);
                Ok([z(batch * heads * t * d)?, z(batch * kv_heads * t * d)?, z(batch * kv_heads * t * dv)?, z(batch * heads * t * dv)?, z(batch * heads * t * dv)?])
            })
            .collect::<Result<Vec<_>, _>>()?;
        let acc_kv = states.iter().map(|s| st.alloc_zeros::<f32>(s.kv_acc_floats())).collect::<Result<Vec<_>, _>>()?;
        st.synchronize()?;
        Ok(VirtualRing { ring, shape, dtype, merges, ranks: states, local, acc_kv })
    }

    fn q_shape(&self, cols: usize) -> [usize; 4] {
        [self.shape.batch, self.shape.heads, self.shape.tokens, cols]
    }

    fn kv_shape(&self, cols: usize) -> [usize; 4] {
        [self.shape.batch, self.shape.kv_heads, self.shape.tokens, cols]
    }

    /// Rank r's chunks of the whole contiguous tensor `x` into its local buffer `slot` (0 Q, 1 K, 2 V, 3 O, 4 dO).
    fn gather(&self, x: &TensorView<'_>, slot: usize, stream: Stream) -> Result<(), RuntimeError> {
        let [b, h, n, cols] = x.layout.shape;
        if x.layout != Layout::contiguous(b, h, n, cols) {
            return Err(RuntimeError::Argument("the virtual ring gathers each rank's chunks with row copies: give it contiguous [B, H, N, D] tensors".into()));
        }
        let len = self.ring.chunk_len();
        for (rank, local) in self.local.iter().enumerate() {
            let t = self.ranks[rank].tokens();
            for (i, c) in self.ring.chunks_of(rank).into_iter().enumerate() {
                // rows c·L.. of each (b, h) group of N, into rows i·L.. of each group of T
                let src = x.addr() + 2 * (c * len * cols) as u64;
                let dst = addr_of(&local[slot]) + 2 * (i * len * cols) as u64;
                gather_2d(dst, t * cols * 2, src, n * cols * 2, len * cols * 2, b * h, stream)?;
            }
        }
        Ok(())
    }

    /// The forward: O = attention(Q, K, V) over the whole sequence (contiguous [B, H, N, D] tensors), computed
    /// as the ranks' steps, into `o`; the row statistics stay here for `backward` (and `lse`).
    #[allow(clippy::too_many_arguments)]
    pub fn forward(&mut self, flash: &Flash, q: TensorView<'_>, k: TensorView<'_>, v: TensorView<'_>, mut o: TensorViewMut<'_>, sm_scale: Option<f32>, stream: Stream) -> Result<(), RuntimeError> {
        let (d, dv) = (self.shape.head_dim, self.shape.head_dim_v);
        check_view("Q", &q, self.dtype, self.q_shape(d))?;
        check_view("K", &k, self.dtype, self.kv_shape(d))?;
        check_view("V", &v, self.dtype, self.kv_shape(dv))?;
        check_view("O", &o.as_view(), self.dtype, self.q_shape(dv))?;
        let sm_scale = sm_scale.unwrap_or(1.0 / (d as f32).sqrt());
        for (slot, x) in [(0, &q), (1, &k), (2, &v)] {
            self.gather(x, slot, stream)?;
        }
        let ring = self.ring;
        for step in 0..ring.ranks {
            for rank in 0..ring.ranks {
                let source = ring.source(rank, step);
                let local = |r: usize, slot: usize| local_view(&self.local[r][slot], self.shape, self.dtype, self.ranks[r].tokens(), slot);
                let (lq, lk, lv) = (local(rank, 0)?, local(source, 1)?, local(source, 2)?);
                self.ranks[rank].forward_step(flash, &self.merges, step, &lq, (&lk, &lv), sm_scale, stream)?;
            }
        }
        for state in &mut self.ranks {
            state.store_chunks(flash, &self.merges, &mut o, addr_of(&state.acc_q), self.shape.heads, stream)?;
            state.has_forward = true;
        }
        Ok(())
    }

    /// The backward of the last `forward` (its O, and dO; contiguous like the forward's): dQ, dK, dV over the
    /// whole sequence, computed as the ranks' steps with the forward's statistics (dK and dV merged in the
    /// order the slice would travel), rounded once into `dq`, `dk`, `dv`.
    pub fn backward(&mut self, flash: &Flash, [q, k, v, o, d_o]: [TensorView<'_>; 5], [mut dq, mut dk, mut dv]: [TensorViewMut<'_>; 3], sm_scale: Option<f32>, stream: Stream) -> Result<(), RuntimeError> {
        if !self.ranks[0].has_forward {
            return Err(RuntimeError::Argument("the ring's backward reads its forward's statistics: run VirtualRing::forward on these inputs first".into()));
        }
        let (d, d_v) = (self.shape.head_dim, self.shape.head_dim_v);
        for (name, view, shape) in [("Q", &q, self.q_shape(d)), ("K", &k, self.kv_shape(d)), ("V", &v, self.kv_shape(d_v)), ("O", &o, self.q_shape(d_v)), ("dO", &d_o, self.q_shape(d_v))] {
            check_view(name, view, self.dtype, shape)?;
        }
        for (name, view, shape) in [("dQ", &dq, self.q_shape(d)), ("dK", &dk, self.kv_shape(d)), ("dV", &dv, self.kv_shape(d_v))] {
            check_view(name, &view.as_view(), self.dtype, shape)?;
        }
        let sm_scale = sm_scale.unwrap_or(1.0 / (d as f32).sqrt());
        for (slot, x) in [(0, &q), (1, &k), (2, &v), (3, &o), (4, &d_o)] {
            self.gather(x, slot, stream)?;
        }
        let ring = self.ring;
        for step in 0..ring.ranks {
            for rank in 0..ring.ranks {
                let source = ring.source(rank, step);
                let local = |r: usize, slot: usize| local_view(&self.local[r][slot], self.shape, self.dtype, self.ranks[r].tokens(), slot);
                let (lq, lo, ldo, lk, lv) = (local(rank, 0)?, local(rank, 3)?, local(rank, 4)?, local(source, 1)?, local(source, 2)?);
                let acc = addr_of(&self.acc_kv[source]);
                self.ranks[rank].backward_step(flash, &self.merges, step, [&lq, &lo, &ldo], (&lk, &lv), acc, None, sm_scale, stream)?;
            }
        }
        let RingShape { batch, heads, kv_heads, .. } = self.shape;
        for (rank, state) in self.ranks.iter().enumerate() {
            let acc = addr_of(&self.acc_kv[rank]);
            let dv_at = acc + 4 * (batch * kv_heads * state.tokens() * d) as u64;
            state.store_chunks(flash, &self.merges, &mut dq, addr_of(&state.acc_q), heads, stream)?;
            state.store_chunks(flash, &self.merges, &mut dk, acc, kv_heads, stream)?;
            state.store_chunks(flash, &self.merges, &mut dv, dv_at, kv_heads, stream)?;
        }
        Ok(())
    }

    /// The last forward's log-sum-exps (natural log) in [B, H, N] order, copied to the host after the
    /// device's work.
    pub fn lse(&self, flash: &Flash) -> Result<Vec<f32>, RuntimeError> {
        let bh = self.shape.batch * self.shape.heads;
        let mut out = vec![0.0f32; bh * self.shape.tokens];
        for state in &self.ranks {
            self.ring.scatter(state.rank, &state.lse(flash)?, &mut out, bh, 1);
        }
        Ok(out)
    }
}

/// A view of a rank's local buffer `slot` (0 Q, 1 K, 2 V, 3 O, 4 dO: [B, H or H_kv, T, D or D_v]).
fn local_view(buffer: &CudaSlice<u16>, shape: RingShape, dtype: DType, t: usize, slot: usize) -> Result<TensorView<'_>, RuntimeError> {
    let RingShape { batch, heads, kv_heads, head_dim: d, head_dim_v: dv, .. } = shape;
    let layout = match slot {
        0 => Layout::contiguous(batch, heads, t, d),
        1 => Layout::contiguous(batch, kv_heads, t, d),
        2 => Layout::contiguous(batch, kv_heads, t, dv),
        _ => Layout::contiguous(batch, heads, t, dv),
    };
    Ok(TensorView::of_slice("a rank's local tensor", buffer, 0, dtype, layout)?)
}

/// `height` rows of `width` bytes from `src` (rows `src_pitch` apart) to `dst` (rows `dst_pitch` apart).
fn gather_2d(dst: u64, dst_pitch: usize, src: u64, src_pitch: usize, width: usize, height: usize, stream: Stream) -> Result<(), RuntimeError> {
    use cudarc::driver::sys;
    let copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        srcHost: std::ptr::null(),
        srcDevice: src,
        srcArray: std::ptr::null_mut(),
        srcPitch: src_pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
        dstHost: std::ptr::null_mut(),
        dstDevice: dst,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst_pitch,
        WidthInBytes: width,
        Height: height,
    };
    // SAFETY: the callers' rows lie in their buffers (a whole tensor's chunk, a rank's local buffer), device
    // memory of the stream's context
    unsafe { sys::cuMemcpy2DAsync_v2(&copy, stream.raw()) }.result()?;
    Ok(())
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

    /// `merge_entry`'s launch: [acc_o, acc_m, part_o, part_m] (0 for null), `rows` of `cols`; the partial's
    /// rows are `at`'s rows of the accumulators.
    #[allow(clippy::too_many_arguments)]
    pub fn merge(&self, flash: &Flash, [mut acc_o, mut acc_m, mut part_o, mut part_m]: [u64; 4], rows: usize, cols: usize, first: bool, at: RowsAt, stream: Stream) -> Result<(), RuntimeError> {
        let (mut rows_arg, mut cols_arg, mut first_arg) = (as_u32(rows)?, as_u32(cols)?, first as u32);
        let (mut len, mut acc_len, mut acc_start) = (as_u32(at.len)?, as_u32(at.acc_len)?, as_u32(at.acc_start)?);
        let mut params: [*mut c_void; 10] = [
            param(&mut acc_o),
            param(&mut acc_m),
            param(&mut part_o),
            param(&mut part_m),
            param(&mut rows_arg),
            param(&mut cols_arg),
            param(&mut first_arg),
            param(&mut len),
            param(&mut acc_len),
            param(&mut acc_start),
        ];
        // SAFETY: the merge entry takes (ptr, ptr, ptr, ptr, i32 × 6), which `params` points at; the partial's
        // rows × cols and the accumulators' rows `at` maps them to are in the buffers the ring allocated for
        // its shape, and `stream` belongs to the Flash's context.
        unsafe { launch(flash, &self.merge, rows, &mut params, stream) }
    }

    /// `store_entry`'s launch: the accumulators at `acc` into `out` (a chunk of tokens of a tensor): out's
    /// token l of (b, h) is the accumulators' row (b·H + h)·acc_len + acc_start + l.
    #[allow(clippy::too_many_arguments)]
    pub fn store(&self, flash: &Flash, out: TensorViewMut<'_>, acc: u64, heads: usize, acc_len: usize, acc_start: usize, stream: Stream) -> Result<(), RuntimeError> {
        let [batch, _, len, cols] = out.layout.shape;
        let rows = batch * heads * len;
        let [sb, sh, sn, _] = out.layout.strides.map(|s| s as u64);
        let (mut out_addr, mut acc) = (out.addr(), acc);
        let (mut rows_arg, mut cols_arg, mut heads_arg, mut len_arg) = (as_u32(rows)?, as_u32(cols)?, as_u32(heads)?, as_u32(len)?);
        let (mut sb, mut sh, mut sn) = (sb, sh, sn);
        let (mut acc_len, mut acc_start) = (as_u32(acc_len)?, as_u32(acc_start)?);
        let mut params: [*mut c_void; 11] = [
            param(&mut out_addr),
            param(&mut acc),
            param(&mut rows_arg),
            param(&mut cols_arg),
            param(&mut heads_arg),
            param(&mut len_arg),
            param(&mut sb),
            param(&mut sh),
            param(&mut sn),
            param(&mut acc_len),
            param(&mut acc_start),
        ];
        // SAFETY: the store entry takes (ptr, ptr, i32 × 4, i64 × 3, i32 × 2), which `params` points at; it writes the
        // elements `out`'s layout reaches (a checked view, borrowed exclusively) and reads rows × cols
        // accumulators, which this ring allocated for its chunks.
        unsafe { launch(flash, &self.store, rows, &mut params, stream) }
    }
}

/// A launch parameter: the address of the value the kernel's parameter is copied from.
fn param<T>(value: &mut T) -> *mut c_void {
    value as *mut T as *mut c_void
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
