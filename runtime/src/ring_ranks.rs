//! Ring attention as P ranks, each holding only its own chunks (issue 35): what one GPU of a context-parallel
//! ring runs. A rank keeps its queries (the zig-zag split's chunks r and 2P − 1 − r, or chunk r) and passes
//! the K/V slice it holds to the right at every step, over a `RingLink`, on a stream of its own while its
//! blocks compute on another; the backward passes each slice's dK/dV accumulators along with it (after the
//! step's blocks have added to them) and home after the last step. The blocks, their order and the merges
//! are `VirtualRing`'s, so P ranks compute the same bits as the virtual ring on one GPU.
//!
//! Links: `LocalLink` joins P ranks that are threads of one process on one GPU (device-to-device copies,
//! the ranks meeting at each hand-over; what tests the protocol here), and `NcclLink` (feature `nccl`)
//! joins one rank per GPU through NCCL's send/recv. A rank that fails aborts its link, and every other
//! rank's next hand-over (or its final wait) fails with that rank's error instead of waiting for it.

use crate::ring::{addr_of, check_view, wait_on, Merges, RankState, RingShape};
use crate::view::{TensorView, TensorViewMut};
use crate::{Flash, Layout, RuntimeError, Stream};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
use flashgen::ring::Ring;
use flashgen::DType;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One buffer to hand over: `bytes` from `send` (this rank's) to the right neighbour's `recv`, while the left
/// neighbour's arrive in this rank's `recv`.
#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    pub send: u64,
    pub recv: u64,
    pub bytes: usize,
}

/// How the ranks of a ring hand their buffers to the right. Every rank calls `shift` the same number of times
/// with the same sizes; the transfers are queued on `stream` and complete in its order.
pub trait RingLink: Send + Sync {
    /// Queue this rank's hand-over: each `Transfer`'s `send` to the right neighbour, its `recv` filled from
    /// the left (the same count of bytes). Returns once it is queued (an error if a peer has failed).
    fn shift(&self, rank: usize, transfers: &[Transfer], stream: &CudaStream) -> Result<(), RuntimeError>;
    /// This rank failed with `why`: the other ranks' hand-overs and waits fail instead of waiting for it.
    fn abort(&self, rank: usize, why: &str);
    /// The failure a peer reported, if one did.
    fn failure(&self) -> Option<String>;
}

/// P ranks met at a barrier that a failure (or a timeout) breaks for all of them (`LocalLink`'s hand-overs;
/// the ranks' host-side barrier where they time a step together).
pub struct Meeting {
    state: Mutex<(u64, usize, Option<String>)>,
    turn: Condvar,
    ranks: usize,
    timeout: Duration,
}

impl Meeting {
    /// A barrier of `ranks` ranks; one that not every rank reaches within `timeout` fails for all.
    pub fn new(ranks: usize, timeout: Duration) -> Meeting {
        Meeting { state: Mutex::new((0, 0, None)), turn: Condvar::new(), ranks, timeout }
    }

    /// Wait until every rank has come (or fail with the first failure reported).
    pub fn wait(&self) -> Result<(), RuntimeError> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = &s.2 {
            return Err(RuntimeError::Device(why.clone()));
        }
        let generation = s.0;
        s.1 += 1;
        if s.1 == self.ranks {
            s.0 += 1;
            s.1 = 0;
            self.turn.notify_all();
            return Ok(());
        }
        let deadline = Instant::now() + self.timeout;
        while s.0 == generation && s.2.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let why = format!("ring: a meeting of the ranks waited {:?} for the others (a rank stopped without reporting)", self.timeout);
                s.2 = Some(why.clone());
                self.turn.notify_all();
                return Err(RuntimeError::Device(why));
            }
            s = self.turn.wait_timeout(s, left).unwrap_or_else(|p| p.into_inner()).0;
        }
        match &s.2 {
            Some(why) if s.0 == generation => Err(RuntimeError::Device(why.clone())),
            _ => Ok(()),
        }
    }

    /// Fail this meeting, and every later one, for all ranks with `why`.
    pub fn abort(&self, why: String) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.2.get_or_insert(why);
        self.turn.notify_all();
    }

    pub fn failure(&self) -> Option<String> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).2.clone()
    }
}

/// What each rank of a `LocalLink` publishes for a hand-over: where its buffers receive, and events that
/// say when they are free and when its sends are done.
#[derive(Default)]
struct Post {
    recv: Vec<u64>,
    free: Option<CudaEvent>,
    sent: Option<CudaEvent>,
}

/// P ranks as threads of one process on one GPU: a hand-over is a device-to-device copy into the right
/// neighbour's buffer, queued on the sender's stream once the neighbour's buffer is free (an event), and the
/// receiver's stream waits for the copy's event. The ranks meet twice per hand-over (to publish their
/// buffers, then their copies); a failed rank breaks the meeting for all.
pub struct LocalLink {
    posts: Vec<Mutex<Post>>,
    meeting: Meeting,
}

impl LocalLink {
    /// A link of `ranks` ranks; a meeting no rank completes within `timeout` fails for all.
    pub fn new(ranks: usize, timeout: Duration) -> Arc<LocalLink> {
        Arc::new(LocalLink { posts: (0..ranks).map(|_| Mutex::new(Post::default())).collect(), meeting: Meeting::new(ranks, timeout) })
    }
}

impl RingLink for LocalLink {
    fn shift(&self, rank: usize, transfers: &[Transfer], stream: &CudaStream) -> Result<(), RuntimeError> {
        let p = self.posts.len();
        let (right, left) = ((rank + 1) % p, (rank + p - 1) % p);
        {
            let mut post = self.posts[rank].lock().unwrap_or_else(|e| e.into_inner());
            post.recv = transfers.iter().map(|t| t.recv).collect();
            // (the stream's work so far includes its wait for the blocks that last read these buffers)
            post.free = Some(stream.record_event(None)?);
        }
        self.meeting.wait()?;
        {
            let target = self.posts[right].lock().unwrap_or_else(|e| e.into_inner());
            if target.recv.len() != transfers.len() {
                let why = format!("ring: rank {rank} hands over {} buffers but rank {right} receives {}", transfers.len(), target.recv.len());
                drop(target);
                self.abort(rank, &why);
                return Err(RuntimeError::Device(why));
            }
            if let Some(free) = &target.free {
                stream.wait(free)?;
            }
            for (t, &dst) in transfers.iter().zip(&target.recv) {
                // SAFETY: `t.send` is this rank's buffer of `t.bytes` and `dst` the right neighbour's of as many
                // (every rank hands over the same shapes), both in this context; the neighbour does not read
                // `dst` until it waits on this copy's event, and wrote it last before the `free` event waited on above
                unsafe { cudarc::driver::result::memcpy_dtod_async(dst, t.send, t.bytes, stream.cu_stream()) }?;
            }
            let sent = stream.record_event(None)?;
            drop(target);
            self.posts[rank].lock().unwrap_or_else(|e| e.into_inner()).sent = Some(sent);
        }
        self.meeting.wait()?;
        let from = self.posts[left].lock().unwrap_or_else(|e| e.into_inner());
        if let Some(sent) = &from.sent {
            stream.wait(sent)?;
        }
        Ok(())
    }

    fn abort(&self, rank: usize, why: &str) {
        self.meeting.abort(format!("ring rank {rank} failed: {why}"));
    }

    fn failure(&self) -> Option<String> {
        self.meeting.failure()
    }
}

/// One rank of a ring of P over one shape (the whole sequence's `RingShape`): its `RankState` (accumulators,
/// partial results), the visiting K/V slices' buffers, its two streams.
pub struct RankRing {
    state: RankState,
    merges: Merges,
    /// Steps compute here; hand-overs run on `comm` beside them.
    compute: Arc<CudaStream>,
    comm: Arc<CudaStream>,
    /// The visiting K/V slices (K [B, H_kv, T, D] then V [B, H_kv, T, D_v], T = this rank's tokens), two
    /// buffers: one computing, one receiving.
    kv: [CudaSlice<u16>; 2],
    /// The visiting slice's dK and dV accumulators (f32), two buffers (backward).
    acc_kv: Option<[CudaSlice<f32>; 2]>,
}

fn is_contiguous(v: &TensorView<'_>) -> bool {
    let [b, h, n, d] = v.layout.shape;
    v.layout == Layout::contiguous(b, h, n, d)
}

impl RankRing {
    /// Rank `rank` of a ring of `ranks` over attention of `shape` (the whole sequence), on `flash`'s device.
    pub fn new(flash: &Flash, ranks: usize, rank: usize, causal: bool, shape: RingShape, dtype: DType) -> Result<RankRing, RuntimeError> {
        let ring = Ring::new(ranks, shape.tokens, causal).map_err(RuntimeError::Argument)?;
        if rank >= ranks {
            return Err(RuntimeError::Argument(format!("rank {rank} of a ring of {ranks}: ranks count from 0")));
        }
        shape.check()?;
        let merges = Merges::load(flash, dtype)?;
        let state = RankState::new(flash, ring, rank, shape, dtype)?;
        let ctx = &flash.gpu.ctx;
        let (compute, comm) = (ctx.new_stream()?, ctx.new_stream()?);
        let st = &flash.gpu.stream;
        let slice = shape.batch * shape.kv_heads * state.tokens() * (shape.head_dim + shape.head_dim_v);
        let kv = [st.alloc_zeros::<u16>(slice)?, st.alloc_zeros::<u16>(slice)?];
        st.synchronize()?;
        Ok(RankRing { state, merges, compute, comm, kv, acc_kv: None })
    }

    pub fn rank(&self) -> usize {
        self.state.rank
    }

    /// This rank's tokens (its chunks, in sequence order).
    pub fn local_tokens(&self) -> usize {
        self.state.tokens()
    }

    /// The stream the steps run on: the local inputs must be ready before the call, and the outputs are when
    /// this stream's work is done (`finish`).
    pub fn stream(&self) -> Stream {
        // SAFETY: the stream belongs to the Flash's context and lives as long as this rank
        unsafe { Stream::from_raw(self.compute.cu_stream()) }
    }

    fn kv_bytes(&self) -> (usize, usize) {
        let rows = self.state.shape.batch * self.state.shape.kv_heads * self.local_tokens();
        (2 * rows * self.state.shape.head_dim, 2 * rows * self.state.shape.head_dim_v)
    }

    /// The visiting slice's K and V: this rank's own (`None`) or buffer `b`'s.
    fn visiting<'a>(&self, own: (&TensorView<'a>, &TensorView<'a>), buf: Option<usize>) -> Result<(TensorView<'a>, TensorView<'a>), RuntimeError> {
        match buf {
            None => Ok((*own.0, *own.1)),
            Some(b) => {
                let RingShape { batch, kv_heads, head_dim: d, head_dim_v: dv, .. } = self.state.shape;
                let t = self.local_tokens();
                let base = addr_of(&self.kv[b]);
                let (k_bytes, v_bytes) = self.kv_bytes();
                // SAFETY: buffer `b` holds K then V of the slice (k_bytes + v_bytes), allocated by this rank and
                // alive as long as it; the steps only read it, and the hand-overs write it only after the
                // steps that read it (events)
                let k = unsafe { TensorView::from_raw_parts("visiting K", base, k_bytes / 2, self.state.dtype, Layout::contiguous(batch, kv_heads, t, d)) }?;
                let v = unsafe { TensorView::from_raw_parts("visiting V", base + k_bytes as u64, v_bytes / 2, self.state.dtype, Layout::contiguous(batch, kv_heads, t, dv)) }?;
                Ok((k, v))
            }
        }
    }

    /// Hand the slice being computed on (this rank's own K/V, or buffer `computing`) to the right, on the
    /// hand-over stream, while the steps compute: it receives into the other buffer once the step that last
    /// read it is `done`. Returns that buffer and the event of its arrival.
    fn hand_over_kv(&self, link: &dyn RingLink, computing: Option<usize>, (k, v): (&TensorView<'_>, &TensorView<'_>), done: &CudaEvent) -> Result<(usize, CudaEvent), RuntimeError> {
        let (k_bytes, v_bytes) = self.kv_bytes();
        let recv = computing.map_or(0, |b| 1 - b);
        self.comm.wait(done)?;
        let (ks, vs) = match computing {
            None => (k.addr(), v.addr()),
            Some(b) => (addr_of(&self.kv[b]), addr_of(&self.kv[b]) + k_bytes as u64),
        };
        let dst = addr_of(&self.kv[recv]);
        link.shift(self.rank(), &[Transfer { send: ks, recv: dst, bytes: k_bytes }, Transfer { send: vs, recv: dst + k_bytes as u64, bytes: v_bytes }], &self.comm)?;
        Ok((recv, self.comm.record_event(None)?))
    }

    fn check_local(&self, name: &str, v: &TensorView<'_>, heads: usize, cols: usize) -> Result<(), RuntimeError> {
        check_view(name, v, self.state.dtype, [self.state.shape.batch, heads, self.local_tokens(), cols])
    }

    /// The forward of this rank's queries over the whole sequence: `q` [B, H, T, D], `k`/`v` [B, H_kv, T, ·]
    /// (contiguous: they are handed over as they are) and `o` [B, H, T, D_v] hold this rank's chunks in
    /// sequence order (`Ring::gather`). Queued on `stream()`; the hand-overs meet the other ranks' (`link`).
    #[allow(clippy::too_many_arguments)]
    pub fn forward(&mut self, flash: &Flash, link: &dyn RingLink, q: TensorView<'_>, k: TensorView<'_>, v: TensorView<'_>, mut o: TensorViewMut<'_>, sm_scale: Option<f32>) -> Result<(), RuntimeError> {
        let result = self.forward_steps(flash, link, q, k, v, &mut o, sm_scale);
        if let Err(e) = &result {
            link.abort(self.rank(), &e.to_string());
        }
        result
    }

    #[allow(clippy::too_many_arguments)]
    fn forward_steps(&mut self, flash: &Flash, link: &dyn RingLink, q: TensorView<'_>, k: TensorView<'_>, v: TensorView<'_>, o: &mut TensorViewMut<'_>, sm_scale: Option<f32>) -> Result<(), RuntimeError> {
        let RingShape { heads, kv_heads, head_dim: d, head_dim_v: dv, .. } = self.state.shape;
        self.check_local("Q", &q, heads, d)?;
        self.check_local("K", &k, kv_heads, d)?;
        self.check_local("V", &v, kv_heads, dv)?;
        self.check_local("O", &o.as_view(), heads, dv)?;
        if !is_contiguous(&k) || !is_contiguous(&v) {
            return Err(RuntimeError::Argument("a ring rank hands its K and V over as they are: give them contiguous [B, H_kv, T, D]".into()));
        }
        let sm_scale = sm_scale.unwrap_or(1.0 / (d as f32).sqrt());
        let stream = self.stream();
        let mut computing: Option<usize> = None; // None: this rank's own K/V; Some(b): buffer b
        let mut done = self.compute.record_event(None)?;
        for step in 0..self.state.ring.ranks {
            let arrived = if step + 1 < self.state.ring.ranks { Some(self.hand_over_kv(link, computing, (&k, &v), &done)?) } else { None };
            let (kc, vc) = self.visiting((&k, &v), computing)?;
            self.state.forward_step(flash, &self.merges, step, &q, (&kc, &vc), sm_scale, stream)?;
            done = self.compute.record_event(None)?;
            if let Some((recv, arrived)) = arrived {
                self.compute.wait(&arrived)?;
                computing = Some(recv);
            }
        }
        let t = self.local_tokens();
        self.merges.store(flash, o.tokens(0..t)?, addr_of(&self.state.acc_q), heads, t, 0, stream)?;
        self.state.has_forward = true;
        Ok(())
    }

    /// The backward of this rank's last forward: `[q, k, v, o, d_o]` and `[dq, dk, dv]` are its local tensors
    /// (K, V contiguous). dQ stays; the slices' dK/dV accumulators travel with them and come home after the
    /// last step.
    pub fn backward(&mut self, flash: &Flash, link: &dyn RingLink, inputs: [TensorView<'_>; 5], grads: [TensorViewMut<'_>; 3], sm_scale: Option<f32>) -> Result<(), RuntimeError> {
        let result = self.backward_steps(flash, link, inputs, grads, sm_scale);
        if let Err(e) = &result {
            link.abort(self.rank(), &e.to_string());
        }
        result
    }

    fn backward_steps(&mut self, flash: &Flash, link: &dyn RingLink, [q, k, v, o, d_o]: [TensorView<'_>; 5], [mut dq, mut dk, mut dv]: [TensorViewMut<'_>; 3], sm_scale: Option<f32>) -> Result<(), RuntimeError> {
        if !self.state.has_forward {
            return Err(RuntimeError::Argument("the ring's backward reads its forward's statistics: run RankRing::forward on these inputs first".into()));
        }
        let RingShape { batch, heads, kv_heads, head_dim: d, head_dim_v: d_v, .. } = self.state.shape;
        for (name, view, h, cols) in [("Q", &q, heads, d), ("K", &k, kv_heads, d), ("V", &v, kv_heads, d_v), ("O", &o, heads, d_v), ("dO", &d_o, heads, d_v)] {
            self.check_local(name, view, h, cols)?;
        }
        for (name, view, h, cols) in [("dQ", &dq, heads, d), ("dK", &dk, kv_heads, d), ("dV", &dv, kv_heads, d_v)] {
            self.check_local(name, &view.as_view(), h, cols)?;
        }
        if !is_contiguous(&k) || !is_contiguous(&v) {
            return Err(RuntimeError::Argument("a ring rank hands its K and V over as they are: give them contiguous [B, H_kv, T, D]".into()));
        }
        let sm_scale = sm_scale.unwrap_or(1.0 / (d as f32).sqrt());
        let (ranks, t) = (self.state.ring.ranks, self.local_tokens());
        let floats = self.state.kv_acc_floats();
        if self.acc_kv.is_none() {
            let st = &flash.gpu.stream;
            self.acc_kv = Some([st.alloc_zeros::<f32>(floats)?, st.alloc_zeros::<f32>(floats)?]);
            st.synchronize()?;
        }
        let acc_kv = self.acc_kv.as_ref().map(|[a, b]| [addr_of(a), addr_of(b)]).expect("made above");
        let stream = self.stream();
        let mut computing: Option<usize> = None;
        let mut acc_arrival: Option<CudaEvent> = None;
        let mut done = self.compute.record_event(None)?;
        for step in 0..ranks {
            let arrived = if step + 1 < ranks { Some(self.hand_over_kv(link, computing, (&k, &v), &done)?) } else { None };
            let (kc, vc) = self.visiting((&k, &v), computing)?;
            // the visiting slice's accumulators arrive in acc_kv[step % 2] (step 0: this rank's own, written
            // by the step) while the step's kernels compute: its merges wait for them, not its kernels
            let arrival = acc_arrival.take();
            self.state.backward_step(flash, &self.merges, step, [&q, &o, &d_o], (&kc, &vc), acc_kv[step % 2], arrival.as_ref(), sm_scale, stream)?;
            done = self.compute.record_event(None)?;
            // the accumulators go on to the right (home after the last step) once this step has added to them
            if ranks > 1 {
                self.comm.wait(&done)?;
                link.shift(self.rank(), &[Transfer { send: acc_kv[step % 2], recv: acc_kv[(step + 1) % 2], bytes: 4 * floats }], &self.comm)?;
                acc_arrival = Some(self.comm.record_event(None)?);
            }
            if let Some((recv, arrived)) = arrived {
                self.compute.wait(&arrived)?;
                computing = Some(recv);
            }
        }
        if let Some(arrival) = acc_arrival.take() {
            wait_on(stream, &arrival)?;
        }
        // this rank's own slice's accumulators are home: in acc_kv[P % 2] (with one rank, where step 0 left them)
        let home = acc_kv[if ranks > 1 { ranks % 2 } else { 0 }];
        let dv_at = home + 4 * (batch * kv_heads * t * d) as u64;
        self.merges.store(flash, dq.tokens(0..t)?, addr_of(&self.state.acc_q), heads, t, 0, stream)?;
        self.merges.store(flash, dk.tokens(0..t)?, home, kv_heads, t, 0, stream)?;
        self.merges.store(flash, dv.tokens(0..t)?, dv_at, kv_heads, t, 0, stream)
    }

    /// The last forward's log-sum-exps (natural log) of this rank's rows, [B, H, T] in its chunks' order.
    pub fn lse(&self, flash: &Flash) -> Result<Vec<f32>, RuntimeError> {
        self.state.lse(flash)
    }

    /// Wait for this rank's queued work, or fail as soon as a peer reports a failure (never waiting forever
    /// for a rank that stopped).
    pub fn finish(&self, link: &dyn RingLink) -> Result<(), RuntimeError> {
        let end = self.compute.record_event(None)?;
        loop {
            if end.try_is_complete()? {
                return Ok(());
            }
            if let Some(why) = link.failure() {
                return Err(RuntimeError::Device(why));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// One rank's NCCL link (feature `nccl`): a hand-over is a group of ncclSend to the right neighbour and
/// ncclRecv from the left, on the rank's hand-over stream. Ranks that are threads of one process share a
/// `RankFailure`; a rank that fails aborts its communicator and marks it, and the others abort theirs when
/// they see the mark (in `shift` or `RankRing::finish`), so that no GPU waits forever on a dead peer.
/// Written against NCCL's API; not yet run with more than one rank (no multi-GPU machine has been lent).
#[cfg(feature = "nccl")]
pub mod nccl {
    use super::{RingLink, Transfer};
    use crate::RuntimeError;
    use cudarc::driver::CudaStream;
    use cudarc::nccl::{result, sys};
    use std::sync::{Arc, Mutex};

    /// The first failure of any rank of a process's ring.
    #[derive(Default)]
    pub struct RankFailure(Mutex<Option<String>>);

    pub struct NcclLink {
        rank: usize,
        ranks: usize,
        comm: Mutex<Option<sys::ncclComm_t>>,
        failure: Arc<RankFailure>,
    }

    // SAFETY: the communicator is used by one thread at a time (behind the mutex); NCCL allows a
    // communicator to be used from any thread that has its device current
    unsafe impl Send for NcclLink {}
    unsafe impl Sync for NcclLink {}

    fn nccl_error(what: &str, e: result::NcclError) -> RuntimeError {
        RuntimeError::Device(format!("NCCL {what}: {e:?}"))
    }

    impl NcclLink {
        /// NCCL's id for a new ring (made by one rank, given to all).
        pub fn unique_id() -> Result<sys::ncclUniqueId, RuntimeError> {
            // SAFETY: as in `join`
            if !unsafe { sys::is_culib_present() } {
                return Err(RuntimeError::Device("NCCL (libnccl.so) could not be loaded: put its folder on LD_LIBRARY_PATH (pip's nvidia-nccl-cu12 ships nvidia/nccl/lib/libnccl.so.2; link it as libnccl.so)".into()));
            }
            result::get_uniqueid().map_err(|e| nccl_error("get_uniqueid", e))
        }

        /// Rank `rank` of `ranks` joins the ring `id`, on the device current on this thread (every rank calls
        /// this at once: it waits for all of them).
        pub fn join(rank: usize, ranks: usize, id: sys::ncclUniqueId, failure: Arc<RankFailure>) -> Result<NcclLink, RuntimeError> {
            // SAFETY: only looks the library up (cudarc loads it on first use and panics when it is missing)
            if !unsafe { sys::is_culib_present() } {
                return Err(RuntimeError::Device("NCCL (libnccl.so) could not be loaded: put its folder on LD_LIBRARY_PATH (pip's nvidia-nccl-cu12 ships nvidia/nccl/lib/libnccl.so.2; link it as libnccl.so)".into()));
            }
            let mut comm = std::mem::MaybeUninit::uninit();
            let (n, r) = (i32::try_from(ranks).map_err(|_| RuntimeError::Argument("too many ranks".into()))?, rank as i32);
            // SAFETY: comm_init_rank writes the communicator into `comm` when it succeeds
            let comm = unsafe {
                result::comm_init_rank(comm.as_mut_ptr(), n, id, r).map_err(|e| nccl_error("comm_init_rank", e))?;
                comm.assume_init()
            };
            Ok(NcclLink { rank, ranks, comm: Mutex::new(Some(comm)), failure })
        }

        fn abort_own(&self) {
            if let Some(comm) = self.comm.lock().unwrap_or_else(|p| p.into_inner()).take() {
                // SAFETY: the communicator is ours and is not used after this
                let _ = unsafe { result::comm_abort(comm) };
            }
        }
    }

    impl Drop for NcclLink {
        fn drop(&mut self) {
            if let Some(comm) = self.comm.lock().unwrap_or_else(|p| p.into_inner()).take() {
                // SAFETY: no operation of this rank is queued past its `finish`
                let _ = unsafe { result::comm_destroy(comm) };
            }
        }
    }

    impl RingLink for NcclLink {
        fn shift(&self, rank: usize, transfers: &[Transfer], stream: &CudaStream) -> Result<(), RuntimeError> {
            debug_assert_eq!(rank, self.rank);
            if let Some(why) = self.failure() {
                return Err(RuntimeError::Device(why));
            }
            let guard = self.comm.lock().unwrap_or_else(|p| p.into_inner());
            let comm = guard.ok_or_else(|| RuntimeError::Device("ring: this rank's NCCL communicator was aborted".into()))?;
            let (right, left) = (((self.rank + 1) % self.ranks) as i32, ((self.rank + self.ranks - 1) % self.ranks) as i32);
            result::group_start().map_err(|e| nccl_error("group_start", e))?;
            for t in transfers {
                // SAFETY: `t.send` and `t.recv` are this rank's device buffers of `t.bytes`, alive until the
                // stream has run the transfers (RankRing keeps them); the peers post the same sizes
                unsafe {
                    result::send(t.send as *const _, t.bytes, sys::ncclDataType_t::ncclUint8, right, comm, stream.cu_stream() as _).map_err(|e| nccl_error("send", e))?;
                    result::recv(t.recv as *mut _, t.bytes, sys::ncclDataType_t::ncclUint8, left, comm, stream.cu_stream() as _).map_err(|e| nccl_error("recv", e))?;
                }
            }
            result::group_end().map_err(|e| nccl_error("group_end", e))?;
            Ok(())
        }

        fn abort(&self, rank: usize, why: &str) {
            self.failure.0.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| format!("ring rank {rank} failed: {why}"));
            self.abort_own();
        }

        fn failure(&self) -> Option<String> {
            let why = self.failure.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
            if why.is_some() {
                // a peer failed: stop this rank's transfers too (they would wait for it forever)
                self.abort_own();
            }
            why
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Meeting;
    use std::time::{Duration, Instant};

    #[test]
    fn ranks_meet_again_and_again() {
        let m = Meeting::new(3, Duration::from_secs(10));
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..3).map(|_| s.spawn(|| (0..50).try_for_each(|_| m.wait()))).collect();
            for h in hs {
                h.join().unwrap().unwrap();
            }
        });
        assert!(m.failure().is_none());
    }

    #[test]
    fn a_failure_breaks_the_meeting_for_everyone_at_once() {
        let m = Meeting::new(3, Duration::from_secs(60));
        let t0 = Instant::now();
        let errors: Vec<String> = std::thread::scope(|s| {
            let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| m.wait().unwrap_err().to_string())).collect();
            std::thread::sleep(Duration::from_millis(50));
            m.abort("ring rank 2 failed: out of memory".into());
            waiting.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
        for e in errors {
            assert!(e.contains("ring rank 2 failed: out of memory"), "{e}");
        }
        // and every later meeting fails the same way, at once
        assert!(m.wait().unwrap_err().to_string().contains("ring rank 2 failed"));
    }

    #[test]
    fn a_rank_that_never_comes_times_the_meeting_out() {
        let m = Meeting::new(3, Duration::from_millis(200));
        let errors: Vec<String> = std::thread::scope(|s| {
            let waiting: Vec<_> = (0..2).map(|_| s.spawn(|| m.wait().unwrap_err().to_string())).collect();
            waiting.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for e in errors {
            assert!(e.contains("waited 200ms for the others"), "{e}");
        }
        assert!(m.failure().is_some());
    }
}
