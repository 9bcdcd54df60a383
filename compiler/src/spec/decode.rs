//! The KV-cache decoding kernels (issue 33): their rules, shared memory and register estimates.
//!
//! - `decode`: one program per (sequence b, K/V head, split of the cache, tile of BLOCK_M query rows). The
//!   G = H / H_kv query heads of the K/V head and the N_q new queries give G·N_q rows, packed row
//!   R = i·G + g and padded to m16 tiles, so the program reads its K/V once for all of them. K/V stream in
//!   blocks of BLOCK_N keys through a cp.async ring of NUM_STAGES slots; each of the key warps takes its own
//!   BLOCK_N / key warps keys of every block (`keys per warp`, 16 or 32: one or two k16 steps of P·V) with
//!   all the rows, keeping its own running max, sum and accumulator; at the end the key warps merge through
//!   shared memory in warp order (deterministic). Past 128 columns the warps also split O's columns in two
//!   column groups (`decode_column_groups`): warp w is key warp w % key warps of group w / key warps, both
//!   groups compute the same scores (Q·Kᵀ over all columns) and each accumulates half of P·V, so a warp
//!   holds 16 rows × 128 accumulators at HEAD_DIM 256 as at 128. Shared memory: [Q tile | ring], reused after the
//!   loop by the merge buffer (per warp BLOCK_M rows of HEAD_DIM + 8 f32, then each warp's row max and sum).
//! - `decode_combine`: a warp per query row, merging the splits' partials by their log-sum-exps; decode's
//!   last split of a row tile runs the same merge itself when the call counts its splits (SPLIT_COUNTERS).
//!
//! The spec's fields mean: BLOCK_M query rows per program (16, 32 or 64), BLOCK_N keys per block, STAGE 3
//! causal among the new queries (bottom-right by default) or 1, num_warps 4 or 8, num_stages the ring's slots.

use super::rules::{only_canonical, rule};
use super::types::*;
use super::{Features, KernelSpec, Schedule, ScheduleOverrides};

/// Query rows per program (G·N_q padded to m16 tiles; more rows run as several row tiles). 64 rows would
/// hold 4 m16 tiles of accumulators per warp: past the registers at HEAD_DIM 128, and spilling at 64.
pub const DECODE_BLOCK_MS: [u32; 2] = [16, 32];
/// Keys per block of the ring.
pub const DECODE_BLOCK_NS: [u32; 3] = [32, 64, 128];
/// Warps per program.
pub const DECODE_NUM_WARPS: [u32; 2] = [4, 8];
/// Keys of each block a warp computes: one or two k16 steps of P·V (more would hold S in too many registers).
pub const DECODE_KEYS_PER_WARP: [u32; 2] = [16, 32];
/// The most splits of one sequence's cache (the combine reads this many partials per row at most).
pub const DECODE_MAX_SPLITS: u32 = 128;
/// Warps of `decode_combine`: a program merges this many query rows, one a warp.
pub const DECODE_COMBINE_WARPS: u32 = 4;
/// f32 of padding per row of the merge buffer (rows 8 words apart modulo the 32 banks: the fragments'
/// float2 stores of 4 rows fill 32 distinct banks).
pub const DECODE_MERGE_PAD: u32 = 8;

impl KernelSpec {
    /// The split-KV combine for a target, dtype and head dim: a query row per warp, 4 warps; it has
    /// no tiles, so its other parameters are fixed (like the backward preprocess).
    pub fn decode_combine(arch: Arch, dtype: DType, head_dim: u32) -> KernelSpec {
        let params = SpecParams { kind: KernelKind::DecodeCombine, dtype, head_dim, block_m: 1, block_n: 0, stage: 1, num_warps: DECODE_COMBINE_WARPS, num_stages: 1, arch };
        KernelSpec { params, schedule: Schedule::PLAIN, overrides: ScheduleOverrides::NONE, features: Features::NONE }
    }

    /// The rules of the decode kinds (after the common ones on HEAD_DIM and STAGE).
    pub(crate) fn new_decode(p: SpecParams, overrides: ScheduleOverrides) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, block_m: bm, block_n: bn, num_warps: w, num_stages: ns, .. } = p;
        let kind = p.kind.name();
        // the tiles' width: 32 and 96 run on 64's and 128's tiles, their last chunks zero
        let t = p.tile_dim();
        let tma = overrides.tma_kv.unwrap_or(false) && p.kind == KernelKind::Decode;
        rule(ScheduleOverrides { tma_kv: None, ..overrides }.is_empty() && (p.kind == KernelKind::Decode || overrides.tma_kv.is_none()), || {
            format!("{kind}: schedule `{overrides}`: the decode kernel has one schedule switch, tma_kv, and decode_combine none")
        })?;
        rule(!tma || matches!(p.arch, Arch::Sm90 | Arch::Sm90a), || format!("{kind}: tma_kv=on needs sm_90 (TMA tensor copies and mbarrier transaction counts); {} has neither", p.arch))?;
        rule(DECODE_HEAD_DIMS.contains(&d), || format!("{kind}: HEAD_DIM={d} is not supported: use one of {DECODE_HEAD_DIMS:?} (the copy lanes take whole rows of 16-byte chunks)"))?;
        if p.kind == KernelKind::DecodeCombine {
            return only_canonical(p, KernelSpec::decode_combine(p.arch, p.dtype, d), "a query row per warp", "decode_combine");
        }
        rule(DECODE_BLOCK_MS.contains(&bm), || format!("{kind}: BLOCK_M={bm} is not supported: use one of {DECODE_BLOCK_MS:?} (the query rows G·N_q of one K/V head, padded to m16 tiles; more rows run as several row tiles)"))?;
        rule(DECODE_BLOCK_NS.contains(&bn), || format!("{kind}: BLOCK_N={bn} is not supported: use one of {DECODE_BLOCK_NS:?}"))?;
        rule(DECODE_NUM_WARPS.contains(&w), || format!("{kind}: num_warps={w} is not supported: use one of {DECODE_NUM_WARPS:?}"))?;
        // past 128 columns the warps split O's columns in two groups, each of w / 2 key warps
        let key_warps = w / decode_column_groups(t);
        rule(bn % key_warps == 0 && DECODE_KEYS_PER_WARP.contains(&(bn / key_warps)), || {
            format!("{kind}: BLOCK_N={bn} over {key_warps} key warps (num_warps={w} in {} column groups) gives each warp {} keys of a block: use BLOCK_N = 16 or 32 × the key warps (whole k16 steps of P·V; 32 at most, so S fits in registers)", decode_column_groups(t), bn as f64 / key_warps as f64)
        })?;
        rule(NUM_STAGES.contains(&ns), || format!("{kind}: num_stages={ns} must be in {}..={} (the depth of the cp.async ring of K/V blocks)", NUM_STAGES.start(), NUM_STAGES.end()))?;
        let (schedule, overrides) = (Schedule { tma_kv: tma, ..Schedule::PLAIN }, ScheduleOverrides { tma_kv: tma.then_some(true), ..ScheduleOverrides::NONE });
        let spec = KernelSpec { params: p, schedule, overrides, features: Features::NONE };
        let (threads, chunks) = (32 * w, t / 8);
        let step = threads / chunks;
        rule((bn * chunks) % threads == 0 && bn % step == 0, || format!("{kind}: BLOCK_N={bn} × the tile's {t} columns must be a multiple of 256 × num_warps={w} (each thread copies whole 16-byte chunks of every K/V tile)"))?;
        // a thread's copy rows are `step` apart and share one swizzle (chunk ^ row % 8)
        rule(step % 8 == 0, || format!("{kind}: num_warps={w} copy threads take {step} rows of the tile's {t} columns a pass; the swizzle needs a multiple of 8: use {} warps or more", 8 * chunks / 32))?;
        spec.fits_decode_shared_memory()?;
        let regs = spec.decode_register_estimate();
        rule(regs <= MAX_REGISTERS, || {
            format!("{kind}: an estimated {regs} registers per thread (the accumulators of BLOCK_M={bm} rows × {t} columns per warp, scores of {} keys) exceed {MAX_REGISTERS}: lower BLOCK_M (the plan runs more row tiles) or BLOCK_N", bn / w)
        })?;
        Ok(spec)
    }

    fn fits_decode_shared_memory(&self) -> Result<(), SpecError> {
        let (smem, limit) = (self.shared_memory_bytes(), self.params.arch.shared_memory_limit());
        rule(smem <= limit, || format!("shared memory {smem} B ({}) exceeds the {limit} B limit of {}: lower num_stages, BLOCK_N or BLOCK_M", self.decode_shared_memory_layout(), self.params.arch))
    }

    /// Keys of each K/V block one warp computes (BLOCK_N / key warps).
    pub fn decode_keys_per_warp(&self) -> u32 {
        self.params.block_n / self.decode_key_warps().max(1)
    }

    /// The groups of O's columns the warps split (2 past 128 columns, else 1) and the warps of each group,
    /// which split the keys of a block.
    pub fn decode_column_groups(&self) -> u32 {
        decode_column_groups(self.params.tile_dim())
    }
    pub fn decode_key_warps(&self) -> u32 {
        self.params.num_warps / self.decode_column_groups()
    }

    /// Whether the split-KV pair overlaps its launches (sm_90's programmatic dependent launch): the decode
    /// kernel triggers its dependent once its programs run, and the combine, launched to start on that
    /// trigger, waits in `griddepcontrol.wait` for the partials. The older targets have no such instructions.
    pub fn decode_programmatic_combine(&self) -> bool {
        matches!(self.params.arch, Arch::Sm90 | Arch::Sm90a)
    }

    /// m16 tiles of query rows (BLOCK_M / 16).
    pub fn decode_m_tiles(&self) -> u32 {
        self.params.block_m / 16
    }

    /// Whether the warps keep Q's fragments in registers for the whole loop (at most 32 registers: 16 rows
    /// at HEAD_DIM 128, 32 at 64), else re-read them from the Q tile per block.
    pub fn decode_q_in_registers(&self) -> bool {
        self.decode_m_tiles() * self.params.tile_dim() / 4 <= 32
    }

    /// Whether the full K/V blocks arrive by TMA boxes (`Schedule::tma_kv`).
    pub fn decode_tma_kv(&self) -> bool {
        self.schedule.tma_kv
    }

    /// Bytes from one K or V row of a slot to the next: the tile's row, swizzled in 16-byte chunks; with
    /// TMA boxes, a 128-byte row of a 64-column panel (128B swizzle), the tile's panels BLOCK_N rows apart.
    pub fn decode_kv_pitch(&self) -> u32 {
        if self.decode_tma_kv() {
            128
        } else {
            self.decode_kv_tile_row_bytes()
        }
    }

    /// Bytes of one tile row's columns (32 and 96 padded to 64 and 128).
    fn decode_kv_tile_row_bytes(&self) -> u32 {
        self.params.tile_dim() * self.params.dtype.bytes()
    }

    /// Bytes of one K or V tile of BLOCK_N rows (in either layout).
    pub fn decode_kv_tile_bytes(&self) -> u32 {
        self.params.block_n * self.decode_kv_tile_row_bytes()
    }

    /// Bytes of one ring slot: a K tile and a V tile of BLOCK_N rows.
    pub fn decode_slot_bytes(&self) -> u32 {
        2 * self.decode_kv_tile_bytes()
    }

    /// Rows of one TMA box (`Schedule::tma_kv`): a contiguous cache's block at once; a paged cache's run
    /// of rows that never crosses a page (PAGE_SIZE's largest power-of-two factor, at most BLOCK_N; pages
    /// are multiples of 16 tokens). The runtime's tensor maps and the kernel use this one rule.
    pub fn decode_box_rows(&self, page_size: u32) -> u32 {
        if page_size == 0 {
            self.params.block_n
        } else {
            (page_size & page_size.wrapping_neg()).min(self.params.block_n)
        }
    }

    /// Where the TMA boxes' mbarriers (8 bytes a slot) start: past everything else, so that the merge,
    /// which reuses the ring's memory after the loop, never overwrites a barrier.
    pub fn decode_barriers_offset(&self) -> u32 {
        self.decode_tiles_bytes().next_multiple_of(8)
    }

    /// The larger of [Q tile | ring] and the merge area (which reuses that memory after the loop).
    fn decode_tiles_bytes(&self) -> u32 {
        let main = self.decode_ring_offset() + self.params.num_stages * self.decode_slot_bytes();
        let merge = self.decode_stats_offset() + 2 * self.decode_key_warps() * self.params.block_m * 4;
        main.max(merge)
    }

    /// Bytes of the Q tile, and where the ring starts.
    pub fn decode_ring_offset(&self) -> u32 {
        self.params.block_m * self.params.tile_dim() * self.params.dtype.bytes()
    }

    /// Bytes of one warp's part of the merge buffer (BLOCK_M rows of HEAD_DIM + DECODE_MERGE_PAD f32), and
    /// where the row statistics (per warp BLOCK_M maxima, then BLOCK_M sums, f32) start after all of them.
    pub fn decode_merge_warp_bytes(&self) -> u32 {
        self.params.block_m * (self.params.tile_dim() + DECODE_MERGE_PAD) * 4
    }
    pub fn decode_stats_offset(&self) -> u32 {
        self.decode_key_warps() * self.decode_merge_warp_bytes()
    }

    /// Dynamic shared memory of the decode kinds: the larger of [Q tile | ring] and the merge area.
    pub(crate) fn decode_shared_memory_bytes(&self) -> u32 {
        match self.params.kind {
            // (and 1 KB to round the tiles' base up to the 128B swizzle's 1024-byte atoms)
            KernelKind::Decode if self.decode_tma_kv() => self.decode_barriers_offset() + 8 * self.params.num_stages + 1024,
            KernelKind::Decode => self.decode_tiles_bytes(),
            // a warp a row, in registers
            _ => 0,
        }
    }

    pub(crate) fn decode_shared_memory_layout(&self) -> String {
        let (d, bm, bn, ns, w) = (self.params.tile_dim(), self.params.block_m, self.params.block_n, self.params.num_stages, self.decode_key_warps());
        match self.params.kind {
            KernelKind::Decode => format!("Q {bm}×{d} + num_stages={ns} × K/V {bn}×{d}, or the merge of {w} key warps × {bm}×{d} f32"),
            _ => "none".into(),
        }
    }

    /// Registers per thread a spec needs: per m16 tile the f32 accumulator (HEAD_DIM / 2), the scores and
    /// packed P of the warp's keys (3·keys / 4) and the row statistics, Q's fragments when they stay in
    /// registers, and the overhead of addresses, the ring and the mask. ptxas 12.9 uses more where it has
    /// room (it keeps the copy rows' addresses: 141-254 over the admitted space, tests/decode.rs), never
    /// spilling; the rule only refuses what cannot fit (64 query rows per program).
    pub(crate) fn decode_register_estimate(&self) -> u32 {
        if self.params.kind == KernelKind::DecodeCombine {
            return 64;
        }
        let (m_tiles, d, kpw) = (self.decode_m_tiles(), self.params.tile_dim(), self.decode_keys_per_warp());
        let q = if self.decode_q_in_registers() { m_tiles * d / 4 } else { 16 };
        m_tiles * (d / self.decode_column_groups() / 2 + 3 * kpw / 4 + 8) + q + 48
    }
}

/// Column groups of a decode tile `tile_dim` wide: past 128 columns two (a warp's accumulators of 16 rows stay
/// 64 f32, as at 128; at 256 one warp's 128 spilled), else one.
fn decode_column_groups(tile_dim: u32) -> u32 {
    if tile_dim > 128 {
        2
    } else {
        1
    }
}
