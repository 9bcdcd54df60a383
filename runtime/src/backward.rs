//! Launching the backward pass: Δ = rowsum(dO ⊙ O), then dK/dV, then dQ, in order on one stream; or Δ,
//! then bwd_fused (dK, dV and dQ in one kernel, dQ's partial sums meeting in an f32 buffer), then its dQ
//! sum pass (the module's second entry) over that buffer.

use crate::kernel::{check_problem, expect_kind, launch_config, After, KernelArgs, KernelGeometry, LoadedKernel};
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use crate::{Gpu, RuntimeError, Stream};
use cudarc::driver::{sys, LaunchConfig};
use flashgen::abi::{self, Entry};
use flashgen::KernelKind;

/// The loaded kernels of one backward pass: `dq` is None when `dkdv` computes dQ too (bwd_fused).
pub struct BackwardKernels<'a> {
    pub preprocess: &'a LoadedKernel,
    pub dkdv: &'a LoadedKernel,
    pub dq: Option<&'a LoadedKernel>,
}

/// bwd_fused's scratch: per chain, the f32 partial sums of dQ (per block of BLOCK_M query rows of a head,
/// `FusedScratch::blocks` of them: [chains][blocks][BLOCK_M·D / 4096] pieces of 64×64 in the kernel's
/// fragment order, one per MMA warpgroup; bwd_fused's first addition to a piece stores it, so only
/// bwd_fused_atomic's is zeroed by the launch) and one lock per piece and chain
/// ([blocks][BLOCK_M·D / 4096][chains]), zeroed by the launch of the
/// ordered kinds (the atomic kind uses none). `chains` (≥ 1) independent orders of addition shorten the
/// wait of bwd_fused's programs (docs/ABI.md); bwd_fused_atomic has one.
pub struct FusedScratch<'a> {
    pub dq_partial: BufferViewMut<'a, f32>,
    pub locks: BufferViewMut<'a, u32>,
    pub chains: u32,
}

impl FusedScratch<'_> {
    /// The blocks of M = BLOCK_M query rows whose dQ a geometry's pieces hold: Z·H·cdiv(N_q, M) for fixed
    /// lengths (block i of head row z·H + h at (z·H + h)·cdiv(N_q, M) + i); packed sequences
    /// H·(total_q / M + B) (block i of head h of sequence b at h·(total_q / M + B) + cu_seqlens_q[b] / M +
    /// b + i: each sequence's cdiv(len, M) blocks lie after its predecessors').
    pub fn blocks(spec: &flashgen::KernelSpec, g: &KernelGeometry) -> usize {
        let m = spec.block_m() as usize;
        if g.is_packed() {
            g.heads * (g.total_q / m + g.batch)
        } else {
            g.batch * g.heads * g.seqlen_q.div_ceil(m)
        }
    }

    /// The lengths a problem needs: (f32 partial sums, locks).
    pub fn lengths(spec: &flashgen::KernelSpec, g: &KernelGeometry, chains: u32) -> (usize, usize) {
        let blocks = FusedScratch::blocks(spec, g);
        // (the kernel's dQ parts span its tiles' width: HEAD_DIM padded to whole 64-column panels)
        let pieces = spec.dq_pieces() as usize;
        let chains = chains.max(1) as usize;
        (chains * blocks * pieces * 4096, blocks * pieces * chains)
    }
}

/// Operands of one backward pass, against its `geometry`: inputs Q, K, V, O, dO and the forward's base-2 M
/// (f32, `KernelGeometry::stat_rows`); scratch Δ (as M); outputs dQ, dK, dV (any valid layouts). Q, O, dO
/// and dQ have the query side's shape, K, V, dK and dV the key side's (`KernelGeometry::query_shape`,
/// `key_shape`).
pub struct BackwardArgs<'a> {
    /// Batch, query and K/V heads, lengths, causal alignment, packed sequences' offsets (`KernelGeometry`).
    pub geometry: KernelGeometry,
    pub q: TensorView<'a>,
    pub k: TensorView<'a>,
    pub v: TensorView<'a>,
    pub o: TensorView<'a>,
    pub d_o: TensorView<'a>,
    pub m: BufferView<'a, f32>,
    pub delta: BufferViewMut<'a, f32>,
    pub dq: TensorViewMut<'a>,
    pub dk: TensorViewMut<'a>,
    pub dv: TensorViewMut<'a>,
    pub sm_scale: f32,
    /// The cap of softcap kernels (finite, > 0); others ignore it.
    pub softcap: f32,
    /// The addresses of the modifiers' tensors in the kernels' slots (`call::CallModifiers`), 0 where none.
    pub modifier_tensors: [u64; flashgen::spec::MOD_TENSORS],
    /// Needed exactly when dK/dV computes dQ (bwd_fused).
    pub fused: Option<FusedScratch<'a>>,
}

impl BackwardKernels<'_> {
    /// Check every operand against every kernel, then launch the three kernels.
    pub fn launch(&self, gpu: &Gpu, stream: Stream, mut a: BackwardArgs<'_>) -> Result<(), RuntimeError> {
        // (a `Stream`, not a raw CUstream: whoever made it vouched for it, `Stream::from_raw`)
        let stream = stream.raw();
        let problem = self.check(&a)?;
        gpu.ctx.bind_to_thread()?;
        self.launch_preprocess(stream, &mut a, problem)?;
        self.launch_dkdv(stream, &mut a, problem)?;
        match self.dq {
            Some(dq) => self.launch_dq(dq, stream, &mut a, problem),
            None => Ok(()),
        }
    }

    /// Check every operand, then launch only the kernel of `kind` (the autotuner times dK/dV and dQ alone,
    /// on a Δ computed once).
    pub fn launch_only(&self, gpu: &Gpu, stream: Stream, mut a: BackwardArgs<'_>, kind: KernelKind) -> Result<(), RuntimeError> {
        let stream = stream.raw();
        let problem = self.check(&a)?;
        gpu.ctx.bind_to_thread()?;
        match kind.role() {
            KernelKind::BwdPre => self.launch_preprocess(stream, &mut a, problem),
            KernelKind::BwdDkdv => self.launch_dkdv(stream, &mut a, problem),
            KernelKind::BwdDq => match self.dq {
                Some(dq) => self.launch_dq(dq, stream, &mut a, problem),
                None => Err(RuntimeError::Argument(format!("{} computes dQ itself: there is no dQ kernel to launch", self.dkdv.spec.name()))),
            },
            _ => Err(RuntimeError::Argument("the forward is not a backward kernel".into())),
        }
    }

    /// The kinds, then every operand against every kernel (`check_problem`). Returns the geometry.
    fn check(&self, a: &BackwardArgs<'_>) -> Result<KernelGeometry, RuntimeError> {
        expect_kind(self.preprocess, KernelKind::BwdPre)?;
        expect_kind(self.dkdv, KernelKind::BwdDkdv)?;
        let fused = self.dkdv.spec.kind().fuses_dq();
        match (self.dq, fused) {
            (Some(dq), false) => expect_kind(dq, KernelKind::BwdDq)?,
            (None, true) => {}
            (Some(dq), true) => return Err(RuntimeError::Argument(format!("{} computes dQ itself: launch it without the dQ kernel {}", self.dkdv.spec.name(), dq.spec.name()))),
            (None, false) => return Err(RuntimeError::Argument(format!("{} does not compute dQ: it needs a dQ kernel (BackwardSpecs::dq)", self.dkdv.spec.name()))),
        }
        if fused != a.fused.is_some() {
            let want = if fused { "needs FusedScratch (dQ's partial sums and locks)" } else { "takes no FusedScratch" };
            return Err(RuntimeError::Argument(format!("{} {want}", self.dkdv.spec.name())));
        }
        let g = a.geometry;
        let queries = [("Q", a.q.layout), ("O", a.o.layout), ("dO", a.d_o.layout), ("dQ", a.dq.layout)];
        let keys = [("K", a.k.layout), ("V", a.v.layout), ("dK", a.dk.layout), ("dV", a.dv.layout)];
        let rows = [("M", a.m.len()), ("Δ", a.delta.len())];
        for k in [Some(self.preprocess), Some(self.dkdv), self.dq].into_iter().flatten() {
            check_problem(&k.spec, &g, &queries, &keys, &rows, Some(a.sm_scale))?;
        }
        if let Some(f) = &a.fused {
            let one_chain = flashgen::plan::dq_chains(&self.dkdv.spec, Some(2)) == 1;
            if f.chains == 0 || (f.chains > 1 && one_chain) {
                return Err(RuntimeError::Argument(format!(
                    "{}: {} chains; it adds dQ in one (bwd_fused_atomic, and bwd_fused_up with fold_key_blocks or a window: flashgen::plan::dq_chains)",
                    self.dkdv.spec.name(),
                    f.chains
                )));
            }
            let (partial, locks) = FusedScratch::lengths(&self.dkdv.spec, &g, f.chains);
            // the kernel's piece and lock indices, and its buffer's rows, are 32-bit
            let (blocks, block_m) = (FusedScratch::blocks(&self.dkdv.spec, &g), self.dkdv.spec.block_m() as usize);
            if blocks * block_m > i32::MAX as usize || locks > i32::MAX as usize {
                return Err(crate::LayoutError { tensor: "dQ", rule: format!("{blocks} blocks of {block_m} rows overflow bwd_fused's 32-bit row indices: use the three-kernel backward") }.into());
            }
            if f.dq_partial.len() < partial || f.locks.len() < locks {
                return Err(crate::LayoutError {
                    tensor: "FusedScratch",
                    rule: format!("holds {} f32 and {} locks; the geometry {g:?} needs {partial} and {locks} (FusedScratch::lengths)", f.dq_partial.len(), f.locks.len()),
                }
                .into());
            }
        }
        Ok(g)
    }

    /// Δ = rowsum(dO ⊙ O).
    fn launch_preprocess(&self, stream: sys::CUstream, a: &mut BackwardArgs<'_>, g: KernelGeometry) -> Result<(), RuntimeError> {
        let k = self.preprocess;
        let mut args = KernelArgs::new();
        args.tensor("O", &a.o).tensor("DO", &a.d_o).f32s_mut("Delta", &mut a.delta).geometry(&g);
        // # Safety
        // 1. The arguments are the preprocess's parameter list (flashgen::abi, its `define` line's source;
        //    docs/ABI.md) in its order, each of its parameter's type (`launch_args` checks): O, dO, Delta,
        //    8 i64 strides, the geometry group.
        // 2. Every element read or written lies inside its buffer: `check` ran first (layouts against their
        //    buffers, Δ holds Z·H·N floats).
        // 3. The stream belongs to the context the kernels were loaded in, bound to this thread (`launch`).
        unsafe { args.launch(stream, &k.function, &k.name, abi::kernel_parameters(k.spec.kind()), launch_config(k, &g)) }
    }

    /// dK, dV (and with bwd_fused dQ: the locks are zeroed first, on the same stream).
    fn launch_dkdv(&self, stream: sys::CUstream, a: &mut BackwardArgs<'_>, g: KernelGeometry) -> Result<(), RuntimeError> {
        let fused = a.fused.is_some();
        if let Some(f) = a.fused.as_mut() {
            // with atomics every partial sum is added (a bulk reduction), so the buffer starts from zero, and
            // no lock is used; the ordered kernel's first addition to each piece stores it instead, and its
            // locks start from zero
            let (addr, bytes) = if self.dkdv.spec.kind().dq_atomics() { (f.dq_partial.addr(), 4 * f.dq_partial.len()) } else { (f.locks.addr(), 4 * f.locks.len()) };
            // SAFETY: the scratch view holds `len` words at `addr` (FusedScratch, checked in `check`), on this
            // stream's context
            unsafe { cudarc::driver::result::memset_d8_async(addr, 0, bytes, stream) }?;
        }
        let chains = a.fused.as_ref().map_or(1, |f| f.chains as i32);
        // bwd_fused loads Q and dO by TMA: their descriptors (boxes of 64 columns × BLOCK_M rows)
        let maps = if fused {
            let maps = crate::tma::fused_backward_maps(&self.dkdv.spec, &a.q, &a.d_o);
            Some(maps.map_err(|e| RuntimeError::Argument(format!("{}: {e}; run the three-kernel backward (FLASHGEN_BACKWARD=split)", self.dkdv.spec.name())))?)
        } else {
            None
        };
        let k = self.dkdv;
        let mut args = KernelArgs::new();
        let delta = a.delta.as_view();
        args.tensor("Q", &a.q).tensor("K", &a.k).tensor("V", &a.v).f32("sm_scale", a.sm_scale).f32("SOFTCAP", a.softcap);
        args.tensor("DO", &a.d_o).tensor_mut("DK", &mut a.dk).tensor_mut("DV", &mut a.dv);
        args.f32s("M", &a.m).f32s("Delta", &delta).geometry(&g).modifier_tensors(a.modifier_tensors);
        if let (Some(f), Some([map_q, map_do])) = (a.fused.as_mut(), maps) {
            args.tensor_mut("DQ", &mut a.dq).f32s_mut("DQ_PARTIAL", &mut f.dq_partial).u32s_mut("LOCKS", &mut f.locks).i32("CHAINS", chains);
            args.map("tmap_q", map_q).map("tmap_do", map_do);
        }
        // # Safety
        // 1. The arguments are the dK/dV kernel's parameter list (flashgen::abi, its `define` line's source;
        //    docs/ABI.md) in its order, each of its parameter's type (`launch_args` checks): Q, K, V,
        //    sm_scale, SOFTCAP, dO, dK, dV, M, Delta, 24 i64 strides, the geometry group; bwd_fused's: dQ, the f32 partial
        //    sums, the locks and the chains (i32) after Delta, dQ's 4 strides after dV's, and the TMA
        //    descriptors of Q and dO (built here over those same buffers and layouts) after it.
        // 2. As for the preprocess; block size and dynamic shared memory are the spec's own, raised at load;
        //    the scratch buffers hold `FusedScratch::lengths` (checked), the locks are zero.
        unsafe { args.launch(stream, &k.function, &k.name, abi::kernel_parameters(k.spec.kind()), launch_config(k, &g)) }?;
        drop(args);
        if let (Some(sum), Some(f)) = (&k.dq_sum, a.fused.as_mut()) {
            let partial = f.dq_partial.as_view();
            let locks = f.locks.as_view();
            let mut args = KernelArgs::new();
            // (a persistent grid's rounds: the sum pass may take its blocks in their order, `Schedule::dq_sum_rounds`)
            let round_heads = k.spec.round_heads(&g.grid(), k.programs) as i32;
            args.f32s("DQ_PARTIAL", &partial).tensor_mut("DQ", &mut a.dq).f32("sm_scale", a.sm_scale).i32("CHAINS", chains).u32s("LOCKS", &locks);
            args.i32("ROUND_HEADS", round_heads).geometry(&g);
            let entry = k.spec.dq_sum_entry().unwrap_or_default();
            // one CTA per block of BLOCK_M query rows (packed: of the longest sequence) and query head
            let grid = (g.seqlen_q.div_ceil(k.spec.block_m() as usize) as u32, (g.batch * g.heads) as u32, 1);
            // # Safety
            // 1. The arguments are the dQ sum pass's parameter list (flashgen::abi, its `define` line's
            //    source; docs/ABI.md) in its order, each of its parameter's type: the f32 partial sums, dQ,
            //    sm_scale, the chains (i32), the locks, the round's heads (i32), dQ's 4 i64 strides, the
            //    geometry group.
            // 2. It reads the partial sums the kernel before it on this stream wrote (every piece of every
            //    chain that holds a program up to the block's last), within `FusedScratch::lengths`, and
            //    writes dQ's rows below N, inside dQ's checked layout; DQ_SUM_THREADS threads (its maxntidx), no
            //    shared memory.
            // 3. Started on the kernel's trigger (`Schedule::dq_sum_follows`), it reads a block's partial sums
            //    only once the block's locks show every chain's count (acquire), and touches nothing else the
            //    kernel writes (dQ is the pass's alone).
            let block = (flashgen::spec::DQ_SUM_THREADS, 1, 1);
            let cfg = LaunchConfig { grid_dim: grid, block_dim: block, shared_mem_bytes: 0 };
            let after = if k.spec.schedule().dq_sum_follows { After::Trigger } else { After::Completion };
            unsafe { args.launch_after(stream, sum, &entry, abi::parameters(Entry::DqSum), cfg, after) }?;
        }
        Ok(())
    }

    /// dQ.
    fn launch_dq(&self, dq: &LoadedKernel, stream: sys::CUstream, a: &mut BackwardArgs<'_>, g: KernelGeometry) -> Result<(), RuntimeError> {
        let delta = a.delta.as_view();
        let mut args = KernelArgs::new();
        args.tensor("Q", &a.q).tensor("K", &a.k).tensor("V", &a.v).f32("sm_scale", a.sm_scale).f32("SOFTCAP", a.softcap);
        args.tensor("DO", &a.d_o).tensor_mut("DQ", &mut a.dq).f32s("M", &a.m).f32s("Delta", &delta).geometry(&g).modifier_tensors(a.modifier_tensors);
        // # Safety
        // 1. The arguments are the dQ kernel's parameter list (flashgen::abi, its `define` line's source;
        //    docs/ABI.md) in its order, each of its parameter's type (`launch_args` checks): Q, K, V,
        //    sm_scale, SOFTCAP, dO, dQ, M, Delta, 20 i64 strides, the geometry group.
        // 2. As for the preprocess.
        unsafe { args.launch(stream, &dq.function, &dq.name, abi::kernel_parameters(dq.spec.kind()), launch_config(dq, &g)) }
    }
}
