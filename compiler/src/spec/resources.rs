//! The resource model: shared-memory layouts, register estimates and budgets, derived from a spec's
//! parameters and schedule. The rules (rules.rs) hold every admitted spec to its target's limits with these.

use super::types::*;
use super::KernelSpec;

/// Registers the estimate reserves for addresses, loop counters, masks and softmax temporaries.
const REGISTER_OVERHEAD: u32 = 40;
/// The backward kernels' share of it: their per-row terms are fitted with the temporaries included.
const BACKWARD_REGISTER_OVERHEAD: u32 = 24;

/// Where the fused backward's parts start in shared memory, from the 1024-aligned tile base, and where its
/// memory ends (see `KernelSpec::fused_layout`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FusedLayout {
    pub ds_tile: u32,
    pub staging: u32,
    pub mbarriers: u32,
    pub end: u32,
}

/// Registers per thread of a kernel's warpgroups (see `KernelSpec::registers`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Registers {
    pub launch: u32,
    pub producer: u32,
    pub consumer: u32,
}

impl KernelSpec {
    /// Consumer warpgroups of a warp-specialized kernel (fwd_ws's consumers, the fused backward's MMA
    /// warpgroups; 0 for the others).
    pub fn consumer_warpgroups(&self) -> u32 {
        if self.params.kind.helper_warps() > 0 {
            self.params.num_warps / 4 - 1
        } else {
            0
        }
    }

    /// Registers per thread: at launch (what ptxas is held to), and after setmaxnreg for the producer and the
    /// consumer warpgroups of fwd_ws. The CTA's pool, launch × threads, must cover producer × 128 +
    /// consumer × 128 per consumer warpgroup: 2 consumers: 168 at launch, 24 / 240 (FA3's split);
    /// 3: 128, 24 / 160; 4: 96, 24 / 112. Other kernels keep their launch count throughout.
    pub fn registers(&self) -> Registers {
        match self.consumer_warpgroups() {
            0 | 1 => Registers { launch: MAX_REGISTERS, producer: 0, consumer: MAX_REGISTERS },
            2 => Registers { launch: 168, producer: 24, consumer: 240 },
            3 => Registers { launch: 128, producer: 24, consumer: 160 },
            _ => Registers { launch: 96, producer: 24, consumer: 112 },
        }
    }

    /// Resident tiles whose mma A fragments the loop reads: Q (forward), Q and dO (dQ), K and V (dK/dV).
    fn a_operands(&self) -> u32 {
        match self.params.kind {
            _ if self.params.kind.uses_wgmma() => 0, // read through descriptors
            KernelKind::Fwd => 1,
            _ => 2,
        }
    }

    /// Whether a dK/dV loop carries its steps' place in the group of query heads as a cursor (block
    /// position, head and, in the cp.async stream, the head's Q/dO pointers and statistics row: phis, a
    /// wrap test a step, the head moved on once per head; lib/seqinfo.ll.tera `group_cursor`) instead of
    /// dividing the step by the block count twice a step (`group_step`: ~20 SASS instructions each, which
    /// cost the causal wgmma kinds 8-12% more instructions a step than before the geometry seam). The
    /// cursor holds ~4-8 more registers: the mma.sync kind keeps dividing where its estimate leaves less
    /// room than that (HEAD_DIM 128 with 32 streamed rows, 248 of 255: the cursor made it spill).
    pub fn step_cursor(&self) -> bool {
        self.params.kind.uses_wgmma() || self.register_estimate() + 8 <= MAX_REGISTERS
    }

    /// Whether the resident tiles' A fragments stay in registers across the loop: yes while they take at
    /// most 32 registers (forward: 16 rows × HEAD_DIM 128 or 32 rows × 64; backward: 16 rows × 64 for
    /// both operands); beyond that they are re-read from shared memory each block, which frees the
    /// registers for the accumulators (and in the forward lets one K/V fragment feed two m16 tiles).
    /// A forward computing a feature (`Features`: a packed sequence's length and offsets, or the diagonal
    /// of rows without keys, held in registers) re-reads them where a block has 128 keys: its S and packed
    /// P take 96 registers a tile, and with Q's fragments it spilled (tests/ptxas.rs).
    pub fn q_in_registers(&self) -> bool {
        let fits = self.a_operands() > 0 && self.a_operands() * (self.rows_per_warp() / 16) * self.params.tile_dim() / 4 <= 32;
        let wide_featured = self.params.kind == KernelKind::Fwd && !self.features().is_none() && self.streamed_rows() >= 128;
        fits && !wide_featured
    }

    /// Dynamic shared memory: the resident tiles plus num_stages slots of streamed tiles (dK/dV's slots
    /// also carry the block's M and Δ, one f32 each per row). wgmma kernels: every slot a multiple of
    /// 1024 B, and 1 KB more, with which the kernel aligns its tiles to 1024 B itself (128B-swizzle atoms).
    pub fn shared_memory_bytes(&self) -> u32 {
        if self.params.kind.decodes() {
            return self.decode_shared_memory_bytes();
        }
        let row = self.params.tile_dim() * self.params.dtype.bytes();
        let (res, strm, ns) = (self.resident_rows(), self.streamed_rows(), self.params.num_stages);
        let (resident, slot) = match self.params.kind.role() {
            KernelKind::Fwd => (res * row, 2 * strm * row),
            KernelKind::BwdDq => (2 * res * row, 2 * strm * row),
            KernelKind::BwdDkdv => (2 * res * row, 2 * strm * row + 8 * strm),
            _ => return 0,
        };
        if self.params.kind.warp_specialized_forward() {
            // and the mbarriers: Q full (persistent: full and empty per Q buffer), then K/V full and empty per slot
            // (persistent: and the two tiles the producer publishes to the consumers, two words each)
            // (split ring: K's and V's full and empty per slot)
            let q_barriers = if self.params.kind.persistent() { 4 + 2 } else { 1 };
            let slot_barriers = if self.split_kv_ring() { 4 } else { 2 };
            self.q_buffers() * resident + ns * slot.next_multiple_of(1024) + 1024 + 8 * (q_barriers + slot_barriers * ns)
        } else if self.params.kind.fuses_dq() {
            // and the 1 KB the kernel aligns its tile base with
            self.fused_layout().end + 1024
        } else if self.params.kind.uses_wgmma() {
            resident + ns * slot.next_multiple_of(1024) + 1024 + self.column_exchange_bytes()
        } else {
            resident + ns * slot
        }
    }

    /// The column warpgroups' exchange after the ring (`KernelSpec::column_warpgroups`): P in f32 and dS
    /// packed, each thread's fragments of the 64 keys × the block's queries in a row of its own; with
    /// softcap or a score_mod the f32 is P times dS's factor and P follows packed (0 without).
    pub fn column_exchange_bytes(&self) -> u32 {
        let factored = self.features.softcap || self.features.modifiers.is_some_and(|m| m.score().is_some());
        let e = self.params.dtype.bytes();
        match self.column_warpgroups() {
            1 => 0,
            _ => 64 * self.streamed_rows() * (4 + e + if factored { e } else { 0 }),
        }
    }

    /// The fused backward's shared memory (`KernelSpec::fused_layout`) with `buffers` staging buffers.
    fn fused_layout_with(&self, buffers: u32) -> FusedLayout {
        let row = self.params.tile_dim() * self.params.dtype.bytes();
        let (res, ns) = (self.resident_rows(), self.params.num_stages);
        let ds_tile = 2 * res * row + ns * self.slot_bytes();
        // dSᵀ: a 128-byte row per key for every 64 queries (128B-swizzle panels of the block's queries)
        let staging = ds_tile + res * self.streamed_rows() * self.params.dtype.bytes();
        // a 64×64 f32 piece per MMA warpgroup (its part of dQ's block)
        let mbarriers = staging + buffers * self.dq_pieces() * 16384;
        FusedLayout { ds_tile, staging, mbarriers, end: mbarriers + 8 * ns }
    }

    /// The fused backward's shared memory, in bytes from the 1024-aligned tile base: the resident K and V,
    /// the ring, the dSᵀ tile (one 128-byte row of 64 queries per key row and 64 queries), per staging buffer
    /// a 64×64 f32 piece per MMA warpgroup (its part of a block of dQ: the bulk reductions' source), and the Q/dO ring's mbarriers
    /// (lib/tma.ll.tera, `ring_*`), one per slot.
    pub fn fused_layout(&self) -> FusedLayout {
        self.fused_layout_with(self.staging_buffers())
    }

    /// The fused backward's staging buffers: two where they fit (the MMA warpgroups fill one while the
    /// writer adds the other, so that a late turn on a lock does not stall them), else one (at HEAD_DIM 128
    /// with three stages: the writer has a step to read it before the MMA warpgroups write it again).
    pub fn staging_buffers(&self) -> u32 {
        if self.fused_layout_with(2).end + 1024 <= self.params.arch.shared_memory_limit() {
            2
        } else {
            1
        }
    }

    /// Whether the kernel keeps S of the next K/V block in flight during the softmax of the current one
    /// (FA3's intra-warpgroup overlap): fwd_wgmma with at least 3 stages (blocks j and j+1 resident while
    /// block j+2 loads); with 2 stages it runs S, softmax and P·V in turn.
    pub fn overlaps_softmax(&self) -> bool {
        self.params.kind == KernelKind::FwdWgmma && self.params.num_stages >= 3
    }

    /// Bytes of one ring slot (see `shared_memory_bytes`).
    pub fn slot_bytes(&self) -> u32 {
        let row = self.params.tile_dim() * self.params.dtype.bytes();
        let strm = self.streamed_rows();
        let slot = if self.params.kind.role() == KernelKind::BwdDkdv { 2 * strm * row + 8 * strm } else { 2 * strm * row };
        if self.params.kind.uses_wgmma() {
            slot.next_multiple_of(1024)
        } else {
            slot
        }
    }

    /// The shared-memory layout in words, for error messages.
    pub(crate) fn shared_memory_layout(&self) -> String {
        if self.params.kind.decodes() {
            return self.decode_shared_memory_layout();
        }
        let (d, res, strm, ns) = (self.params.tile_dim(), self.resident_rows(), self.streamed_rows(), self.params.num_stages);
        match self.params.kind.role() {
            KernelKind::Fwd if self.params.kind.persistent() => format!("{} × Q {res}×{d} + num_stages={ns} × K/V {strm}×{d}", self.q_buffers()),
            KernelKind::Fwd => format!("Q {res}×{d} + num_stages={ns} × K/V {strm}×{d}"),
            KernelKind::BwdDq => format!("Q and dO {res}×{d} + num_stages={ns} × K/V {strm}×{d}"),
            KernelKind::BwdDkdv if self.params.kind.fuses_dq() => format!("K and V {res}×{d} + num_stages={ns} × (Q/dO {strm}×{d} + M/Δ {strm}) + dSᵀ {res}×{strm} + dQ staging 2 × {strm}×{d} f32"),
            KernelKind::BwdDkdv if self.column_warpgroups() > 1 => format!("K and V {res}×{d} + num_stages={ns} × (Q/dO {strm}×{d} + M/Δ {strm}) + P (f32) and dS {res}×{strm}"),
            KernelKind::BwdDkdv => format!("K and V {res}×{d} + num_stages={ns} × (Q/dO {strm}×{d} + M/Δ {strm})"),
            _ => "none".into(),
        }
    }

    /// Registers per thread held across the loop, per m16 tile of resident rows, plus the fragments in
    /// flight (streamed rows·D/256) and the overhead. Forward: the f32 accumulator (D/2) and scores
    /// (BLOCK_N/2). Backward, fitted to ptxas rather than counted (scores, dP, their packed copies and
    /// dK/dV's per-column M and Δ all grow with the streamed rows): dQ D/2 + 2·BLOCK_N, dK/dV
    /// D + 2·BLOCK_M, with a smaller fixed overhead. The A fragments (D/4 per tile and operand) when they
    /// stay in registers, else 16 for the ones in flight. Calibrated on ptxas 12.9 over the whole admitted
    /// space (tests/ptxas.rs sweeps it: everything this admits assembles without spills).
    pub fn register_estimate(&self) -> u32 {
        if self.params.kind.decodes() {
            return self.decode_register_estimate();
        }
        let m_tiles = self.rows_per_warp() / 16;
        let (d, strm) = (self.params.tile_dim(), self.streamed_rows());
        let a_fragments = if self.q_in_registers() {
            self.a_operands() * m_tiles * d / 4
        } else if self.a_operands() == 0 {
            0
        } else {
            16
        };
        let (per_tile, overhead) = match self.params.kind {
            KernelKind::Fwd => (d / 2 + strm / 2, REGISTER_OVERHEAD),
            // Q is read through a descriptor: no fragments; S (BLOCK_N/2, twice when the next block's S is
            // in flight), O (D/2) and packed P (BLOCK_N/4)
            KernelKind::FwdWgmma => (d / 2 + strm / 2 + strm / 4 + if self.overlaps_softmax() { strm / 2 } else { 0 }, REGISTER_OVERHEAD),
            // fitted to ptxas 12.9 (consumer code; its largest register index + 1): D/2 + 3·BLOCK_N/4 + 17
            // without ping-pong (D128×128: 177, D64×64: 97), up to 29 with it (D64×128: 157, P of the
            // previous block stays live): overheads 24 and 32 bound them (tests/ptxas.rs sweeps the space)
            // (the persistent kind's consumers read their tile from shared memory: no more than fwd_ws's)
            // (and Q's fragments, D/4, when the ping-pong tile holds them: q_from_registers)
            KernelKind::FwdWs | KernelKind::FwdWsPersistent => {
                let q = if self.q_from_registers() { d / 4 } else { 0 };
                (d / 2 + strm / 2 + strm / 4 + q, if self.ping_pong() { 32 } else { 24 })
            }
            KernelKind::BwdDq => (d / 2 + 2 * strm, BACKWARD_REGISTER_OVERHEAD),
            KernelKind::BwdDkdv => (self.output_columns() + 2 * strm, BACKWARD_REGISTER_OVERHEAD),
            // wgmma backward: the accumulators, S (or Sᵀ) and dP (BLOCK/2 each) and their packed copies
            KernelKind::BwdDqWgmma => (d / 2 + strm + strm / 2 + 4, REGISTER_OVERHEAD),
            // (ptxas 12.9 packs the widest accumulators tighter than the narrow ones: 16 under the common
            // overhead, D192 16×64 unsplit uses 240 and D256 64×64 in halves 255, tests/ptxas.rs's sweep)
            KernelKind::BwdDkdvWgmma => (self.output_columns() + strm + strm / 2, REGISTER_OVERHEAD - 16),
            // dK, dV, Sᵀ and dPᵀ, then its 64-column chunk of dQ (32), less what the writer warpgroup holds
            // (locks, chains, the final dQ): fitted to ptxas 12.9
            KernelKind::BwdFused | KernelKind::BwdFusedAtomic | KernelKind::BwdFusedUp => (d + strm + 24, BACKWARD_REGISTER_OVERHEAD),
            KernelKind::BwdPre => (0, 0),
            // (decode_register_estimate, above)
            KernelKind::Decode | KernelKind::DecodeCombine => (0, 0),
        };
        let in_flight = if self.params.kind.uses_wgmma() { 0 } else { strm * d / 256 };
        m_tiles * per_tile + a_fragments + in_flight + overhead
    }
}
