//! The defaults, as tables: which kernel kinds a problem runs (`FORWARD_KINDS`, `BACKWARD_KINDS`, read by
//! crate::plan) and each kind's default tiles (`TILES`). A row names the result under bench/results that
//! chose it (docs/DECISIONS.md says what it measured; a test checks that each result exists). There are no
//! catch-all rows: a head dim, target or length no row covers is an error that says where to add one.

use super::schedule::ScheduleOverrides;
use super::types::*;
use super::KernelSpec;
use std::ops::RangeInclusive;

/// Every target; the mma.sync kernels run on all of them (on sm_90a when the wgmma kernels are turned off).
const EVERY: &[Arch] = &Arch::ALL;
/// Hopper with its architecture-specific instructions: wgmma, TMA, setmaxnreg, bulk reductions.
const HOPPER: &[Arch] = &[Arch::Sm90a];
/// Any sequence length.
const ANY: RangeInclusive<usize> = 0..=usize::MAX;

/// BLOCK_M, BLOCK_N, num_warps, num_stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiles {
    pub block_m: u32,
    pub block_n: u32,
    pub num_warps: u32,
    pub num_stages: u32,
}

const fn t(block_m: u32, block_n: u32, num_warps: u32, num_stages: u32) -> Tiles {
    Tiles { block_m, block_n, num_warps, num_stages }
}

/// What a row applies to: targets, head dims, causality (None: both) and sequence lengths (tokens).
#[derive(Debug)]
pub struct Applies {
    pub targets: &'static [Arch],
    pub head_dims: &'static [u32],
    pub causal: Option<bool>,
    pub tokens: RangeInclusive<usize>,
}

impl Applies {
    fn covers(&self, arch: Arch, head_dim: u32, causal: bool, tokens: usize) -> bool {
        self.targets.contains(&arch) && self.head_dims.contains(&head_dim) && self.causal.is_none_or(|c| c == causal) && self.tokens.contains(&tokens)
    }
}

const fn on(targets: &'static [Arch], head_dims: &'static [u32], causal: Option<bool>, tokens: RangeInclusive<usize>) -> Applies {
    Applies { targets, head_dims, causal, tokens }
}

/// Head dims that run on another's tiles, padded to whole 64-column panels (`SpecParams::tile_dim`): 32 on
/// 64's, 96 on 128's (unmeasured: the rows of the head dim whose tiles they are).
const D64: &[u32] = &[32, 64];
const D128: &[u32] = &[96, 128];

/// One default: a kind's tiles and schedule where `applies`, and the result that chose them.
#[derive(Debug)]
pub struct TileRow {
    pub kind: KernelKind,
    pub applies: Applies,
    pub tiles: Tiles,
    pub schedule: ScheduleOverrides,
    pub result: &'static str,
}

const fn row(kind: KernelKind, applies: Applies, tiles: Tiles, result: &'static str) -> TileRow {
    TileRow { kind, applies, tiles, schedule: ScheduleOverrides::NONE, result }
}

use KernelKind::*;

/// The fused backward's programs running tile after tile (`Schedule::persistent_tiles`), each loading its next
/// tile's K/V under its staged dK/dV (`Schedule::early_next_tile`), on a ring of three Q/dO stages (room made
/// by one dQ staging buffer).
const PERSISTENT_RING3: ScheduleOverrides = ScheduleOverrides { persistent_tiles: Some(true), early_next_tile: Some(true), ..ScheduleOverrides::NONE };

/// Each kind's default tiles; the first row that applies wins. Why each one (the numbers are in
/// docs/DECISIONS.md under the result id):
/// - fwd (mma.sync): HEAD_DIM 64 128×64 with 4 warps of 32 rows; HEAD_DIM 128 32 rows per warp with Q
///   re-read from shared memory and BLOCK_N 32: 8 warps non-causal (K/V tiles shared by 256 rows), 4 causal
///   (the diagonal's short programs balance better) and on the 99 KB targets, where 256 rows do not fit.
/// - fwd_wgmma: two warpgroups, 2 stages (the 3-stage overlap measured slower), BLOCK_N 64 at HEAD_DIM 64
///   and 128 at 128.
/// - fwd_ws: ping-pong on two consumers at HEAD_DIM 128, FA3's 192×128 on three at 64 with a fourth slot.
/// - fwd_ws_persistent: HEAD_DIM 64 non-causal four consumers on 64-row blocks to 1024 tokens (1024 rows are
///   four whole tiles), then 192×128; causal 256×64 whose consumers run their own blocks, with 8 slots to
///   2048 tokens, then 4; HEAD_DIM 128 fwd_ws's 128×128 (one Q buffer: Q is read into registers).
/// - the backward kinds: the autotuner's most frequent winners (mma.sync: bwd-v2; wgmma: hopper-v2).
/// - HEAD_DIM 192 and 256 (hdim-v1): the forward on fwd_ws 128×64, ping-pong on 3 stages at 192, at 256 on the
///   two that fit, by the split ring (`Schedule::split_kv_ring`: 1.16-1.36× the tile without it, kvsplit;
///   128×32 on 4 had read 0.96-1.04× of that one, hdim-v1); the backward on the wgmma pair, dK/dV on the column
///   warpgroups (`KernelSpec::column_warpgroups`: 8 warps on 64 keys, each warpgroup half of the columns, Sᵀ and
///   dPᵀ computed once): 1.50-1.56× the two column slices at 256 (colwg), 1.07-1.10× 16-row query blocks
///   unsplit at 192 (colwg192); their dQ kernel on 128 query rows (two warpgroups sharing each K/V block),
///   with 64-key blocks at 192: the backward 1.05-1.11× (192/128) and 1.08-1.14× (256) the 64×32 tile on
///   one warpgroup (packed-window, H100).
/// - the fused backward: query blocks of 64 rows, one MMA warpgroup per 64 key rows and dQ columns, two
///   stages (the writer's double-buffered staging leaves no room for a third at HEAD_DIM 128; the persistent
///   grid's three, below, stage dQ in one buffer); at HEAD_DIM
///   64 FA3's 128×128 tile: two MMA warpgroups of 64 keys on 128-row query blocks, each 64 rows of dQ (one
///   warpgroup of 64 keys and 64 queries left the tensor cores idle: 0.53-0.92× the pair, bwd64-sweep).
///   Non-causal to 4096 tokens its programs run tile after tile (`Schedule::persistent_tiles`, ptiles;
///   problems with packed sequences or a window run one program per tile: `plan`).
pub static TILES: &[TileRow] = &[
    row(Fwd, on(EVERY, D64, None, ANY), t(128, 64, 4, 3), "fwd-mma-v5"),
    row(Fwd, on(&[Arch::Sm86, Arch::Sm89], D128, None, ANY), t(128, 32, 4, 3), "fwd-mma-v5"),
    row(Fwd, on(&[Arch::Sm80, Arch::Sm90, Arch::Sm90a], D128, Some(true), ANY), t(128, 32, 4, 3), "fwd-mma-v5"),
    row(Fwd, on(&[Arch::Sm80, Arch::Sm90, Arch::Sm90a], D128, Some(false), ANY), t(256, 32, 8, 3), "fwd-mma-v5"),
    row(Fwd, on(EVERY, &[192, 256], None, ANY), t(64, 32, 4, 2), "hdim-v1"),
    row(FwdWgmma, on(HOPPER, D64, None, ANY), t(128, 64, 8, 2), "wgmma-v1"),
    row(FwdWgmma, on(HOPPER, D128, None, ANY), t(128, 128, 8, 2), "wgmma-v1"),
    row(FwdWgmma, on(HOPPER, &[192, 256], None, ANY), t(128, 64, 8, 2), "hdim-v1"),
    row(FwdWs, on(HOPPER, D64, None, ANY), t(192, 128, 16, 4), "verify-v9"),
    row(FwdWs, on(HOPPER, D128, None, ANY), t(128, 128, 12, 3), "wholeprog-v8"),
    row(FwdWs, on(HOPPER, &[192], None, ANY), t(128, 64, 12, 3), "hdim-v1"),
    // (ping-pong on two stages by the split ring: 1.16-1.36× the same tile without it, kvsplit)
    TileRow { schedule: ScheduleOverrides { split_kv_ring: Some(true), ..ScheduleOverrides::NONE }, ..row(FwdWs, on(HOPPER, &[256], None, ANY), t(128, 64, 12, 2), "kvsplit") },
    row(FwdWsPersistent, on(HOPPER, D64, Some(false), 0..=1024), t(256, 64, 20, 6), "persistent-w20"),
    row(FwdWsPersistent, on(HOPPER, D64, Some(false), 1025..=usize::MAX), t(192, 128, 16, 4), "dyn-ab"),
    row(FwdWsPersistent, on(HOPPER, D64, Some(true), 0..=2048), t(256, 64, 20, 8), "stages8-ab"),
    row(FwdWsPersistent, on(HOPPER, D64, Some(true), 2049..=usize::MAX), t(256, 64, 20, 4), "mask-ab2"),
    row(FwdWsPersistent, on(HOPPER, D128, None, ANY), t(128, 128, 12, 3), "order-ab"),
    // the backward: BLOCK_M is the query block, BLOCK_N the key block (dK/dV owns BLOCK_N, streams BLOCK_M)
    row(BwdDkdv, on(EVERY, D64, Some(false), ANY), t(16, 128, 4, 3), "bwd-v2"),
    row(BwdDkdv, on(EVERY, D64, Some(true), ANY), t(32, 64, 4, 3), "bwd-v2"),
    row(BwdDkdv, on(EVERY, D128, None, ANY), t(32, 64, 4, 3), "bwd-v2"),
    row(BwdDkdv, on(EVERY, &[192, 256], None, ANY), t(16, 64, 4, 2), "hdim-v1"),
    row(BwdDq, on(EVERY, D64, Some(false), ANY), t(128, 32, 4, 3), "bwd-v2"),
    row(BwdDq, on(EVERY, D64, Some(true), ANY), t(64, 64, 4, 3), "bwd-v2"),
    row(BwdDq, on(EVERY, D128, None, ANY), t(64, 32, 4, 3), "bwd-v2"),
    row(BwdDq, on(EVERY, &[192, 256], None, ANY), t(64, 16, 4, 2), "hdim-v1"),
    row(BwdDkdvWgmma, on(HOPPER, D64, None, ANY), t(64, 64, 4, 2), "hopper-v2"),
    row(BwdDkdvWgmma, on(HOPPER, D128, None, ANY), t(32, 64, 4, 2), "hopper-v2"),
    row(BwdDkdvWgmma, on(HOPPER, &[192], None, ANY), t(64, 64, 8, 2), "colwg192"),
    row(BwdDkdvWgmma, on(HOPPER, &[256], None, ANY), t(64, 64, 8, 2), "colwg"),
    row(BwdDqWgmma, on(HOPPER, D64, None, ANY), t(64, 64, 4, 2), "hopper-v2"),
    row(BwdDqWgmma, on(HOPPER, D128, Some(true), ANY), t(64, 64, 4, 2), "hopper-v2"),
    row(BwdDqWgmma, on(HOPPER, D128, Some(false), ANY), t(128, 64, 8, 3), "hopper-v2"),
    row(BwdDqWgmma, on(HOPPER, &[192], None, ANY), t(128, 64, 8, 2), "packed-window"),
    row(BwdDqWgmma, on(HOPPER, &[256], None, ANY), t(128, 32, 8, 2), "packed-window"),
    // (programs that run tile after tile: 1.04-1.13× at HEAD_DIM 64, 1.00-1.03× at 128 to 4096 tokens, 0.97-0.99×
    // at 16384 (ptiles, H100); GQA 64/8 1.00× at 4096, 0.86× at 16384; on three stages with the next tile
    // early, over those: +4.0% / +1.5% at HEAD_DIM 64 N 1024 / 4096, +3.8% / +1.8% at 128; at 16384 -0.5% (64),
    // and +2.0% at 128 but 0.89× on GQA 64/8 (ring3-ab, H100))
    TileRow { schedule: PERSISTENT_RING3, ..row(BwdFused, on(HOPPER, &[64], Some(false), 0..=4096), t(128, 128, 12, 3), "ring3-ab") },
    TileRow { schedule: PERSISTENT_RING3, ..row(BwdFused, on(HOPPER, &[128], Some(false), 0..=4096), t(64, 128, 12, 3), "ring3-ab") },
    row(BwdFused, on(HOPPER, D64, None, ANY), t(128, 128, 12, 2), "fused64-v1"),
    row(BwdFused, on(HOPPER, D128, None, ANY), t(64, 128, 12, 2), "fused-tma-v2"),
    row(BwdFusedAtomic, on(HOPPER, D64, None, ANY), t(128, 128, 12, 2), "fused64-v1"),
    row(BwdFusedAtomic, on(HOPPER, D128, None, ANY), t(64, 128, 12, 2), "fused-tma-v2"),
    row(BwdFusedUp, on(HOPPER, D64, Some(true), ANY), t(128, 128, 12, 2), "fused64-v1"),
    row(BwdFusedUp, on(HOPPER, D128, Some(true), ANY), t(64, 128, 12, 2), "up-v1"),
];

/// Which forward kernel a problem runs, by the implementation family the plan asks for.
#[derive(Debug)]
pub struct KindRow {
    pub applies: Applies,
    pub kinds: &'static [KernelKind],
    pub result: &'static str,
}

const fn kinds(applies: Applies, kinds: &'static [KernelKind], result: &'static str) -> KindRow {
    KindRow { applies, kinds, result }
}

/// The forward on Hopper: the warp-specialized kernel, persistent for the shorter sequences, where a tile's
/// prologue and epilogue hide under the other tiles' products and no program idles while another has
/// several tiles left (HEAD_DIM 64 to 4096 tokens: 448-455 against 393-401 TFLOP/s non-causal at 1024,
/// persistent-w20, persistent-l2; HEAD_DIM 128 to 2048: 1.02-1.06× fwd_ws, order-ab; at 4096 within the
/// call's drift, qbufs-ab).
pub static FORWARD_KINDS: &[KindRow] = &[
    kinds(on(HOPPER, D64, None, 0..=4096), &[FwdWsPersistent], "persistent-w20"),
    kinds(on(HOPPER, D64, None, 4097..=usize::MAX), &[FwdWs], "verify-v9"),
    kinds(on(HOPPER, D128, None, 0..=2048), &[FwdWsPersistent], "order-ab"),
    kinds(on(HOPPER, D128, None, 2049..=usize::MAX), &[FwdWs], "qbufs-ab"),
    kinds(on(HOPPER, &[192, 256], None, ANY), &[FwdWs], "hdim-v1"),
];

/// The default backward on Hopper (after Δ): at HEAD_DIM 128 from 1024 tokens the fused kernel (dQ inside
/// dK/dV; causal bwd_fused_up, whose programs add in the order they visit), 1.30-1.62× the three wgmma
/// kernels (landed-v2, sumpass-v1); at HEAD_DIM 64 from 1024 tokens too, on its 128×128 tile (two MMA
/// warpgroups on 128-row query blocks): 1.05-1.38× the pair (fused64-v1; its first tile, one warpgroup of
/// 64 keys, reached 0.53-0.92×, bwd64-sweep). Below 1024 tokens the three-kernel pass.
/// HEAD_DIM 96 (128's tiles, padded) as 128: bwd_fused / bwd_fused_up 1.41-1.58× the pair at 4096 and 16384
/// tokens (hdim-v3; 1024-4095 follow 128's rows unmeasured); 32 (64's 128×128 tile, padded) as 64:
/// 1.11-1.40× the pair non-causal, 1.03-1.41× causal from 1024 tokens (fused-mods-v1; hdim-v3's 0.52-0.75×
/// was the first, 64-row fused tile).
pub static BACKWARD_KINDS: &[KindRow] = &[
    kinds(on(HOPPER, &[128], Some(false), 1024..=usize::MAX), &[BwdFused], "landed-v2"),
    kinds(on(HOPPER, &[96], Some(false), 1024..=usize::MAX), &[BwdFused], "hdim-v3"),
    kinds(on(HOPPER, &[128], Some(true), 1024..=usize::MAX), &[BwdFusedUp], "sumpass-v1"),
    kinds(on(HOPPER, &[96], Some(true), 1024..=usize::MAX), &[BwdFusedUp], "hdim-v3"),
    kinds(on(HOPPER, &[64], Some(false), 1024..=usize::MAX), &[BwdFused], "fused64-v1"),
    kinds(on(HOPPER, &[64], Some(true), 1024..=usize::MAX), &[BwdFusedUp], "fused64-v1"),
    kinds(on(HOPPER, &[32], Some(false), 1024..=usize::MAX), &[BwdFused], "fused-mods-v1"),
    kinds(on(HOPPER, &[32], Some(true), 1024..=usize::MAX), &[BwdFusedUp], "fused-mods-v1"),
    kinds(on(HOPPER, D128, None, 0..=1023), &[BwdDkdvWgmma, BwdDqWgmma], "hopper-v2"),
    kinds(on(HOPPER, &[64], None, 0..=1023), &[BwdDkdvWgmma, BwdDqWgmma], "bwd64-sweep"),
    kinds(on(HOPPER, &[32], None, 0..=1023), &[BwdDkdvWgmma, BwdDqWgmma], "hdim-v3"),
    kinds(on(HOPPER, &[192, 256], None, ANY), &[BwdDkdvWgmma, BwdDqWgmma], "hdim-v1"),
];

/// Tiles for the problems with a window, softcap or score/mask modifiers where `TILES`' row cannot take
/// them:
/// - on Hopper they are built into fwd_ws's ping-pong consumer, which HEAD_DIM 256's row is since kvsplit (two
///   stages on the split ring): its modified problems (Gemma: softcap and sliding windows at 256) take it
///   (softcap 30 1.04-1.07×, a 1024-key window 1.10× the 128×32 on four stages they ran before; kvsplit);
/// - the mma.sync kernels at HEAD_DIM 128: the forward on 32 rows a warp spills 32 B with softcap on causal
///   packed sequences (128×32 on 4 warps, 255 registers) and with ALiBi on non-causal ones (256×32 on 8), on
///   16 rows a warp (128×32 on 8 warps: 193-197 registers) none;
///   bwd_dkdv's 32-row query blocks 8-12 B, 16-row ones none; bwd_dkdv non-causal with a score_mod (ALiBi)
///   on 32-row blocks 4 B, on 16-row ones none. Not timed.
/// - the wgmma pair's dQ kernel at 192: its 128×64 tile on two warpgroups spills 4-8 B at 192/128 with a
///   window, softcap or a score_mod (255 registers); every modified 192 problem (V 128 or 192 wide) keeps
///   the 64×32 tile on one warpgroup (hdim-v1).
pub static MODIFIED_TILES: &[TileRow] = &[
    row(Fwd, on(EVERY, D128, None, ANY), t(128, 32, 8, 3), "fwd-mma-v5"),
    row(BwdDkdv, on(EVERY, D128, None, ANY), t(16, 64, 4, 3), "bwd-v2"),
    row(BwdDqWgmma, on(HOPPER, &[192], None, ANY), t(64, 32, 4, 2), "hdim-v1"),
];

/// Every result id the tables cite (a test checks that each is under bench/results).
pub fn cited_results() -> Vec<&'static str> {
    let mut ids: Vec<&str> = TILES.iter().chain(MODIFIED_TILES).map(|r| r.result).chain(FORWARD_KINDS.iter().chain(BACKWARD_KINDS).map(|r| r.result)).collect();
    ids.sort();
    ids.dedup();
    ids
}

fn describe(what: &str, arch: Arch, head_dim: u32, causal: bool, tokens: usize, table: &str) -> SpecError {
    let mask = if causal { "causal" } else { "non-causal" };
    SpecError(format!(
        "no {what} is tabled for HEAD_DIM={head_dim}, {mask}, {tokens} tokens on {arch}: add a row to {table} in compiler/src/spec/defaults.rs (or give the tiles explicitly)"
    ))
}

/// The default spec of `kind` for a problem (the backward preprocess has one fixed form).
pub fn spec(kind: KernelKind, arch: Arch, dtype: DType, head_dim: u32, causal: bool, tokens: usize) -> Result<KernelSpec, SpecError> {
    if kind == BwdPre {
        return KernelSpec::new(*KernelSpec::backward_preprocess(arch, dtype, head_dim).params());
    }
    let row = TILES
        .iter()
        .find(|r| r.kind == kind && r.applies.covers(arch, head_dim, causal, tokens))
        .ok_or_else(|| describe(&format!("{} tile row", kind.name()), arch, head_dim, causal, tokens, "TILES"))?;
    spec_of_row(row, arch, dtype, head_dim, causal)
}

/// The spec of `kind` for a problem with a window, softcap or modifiers: `MODIFIED_TILES`' row where one
/// applies, else `spec`'s.
pub fn modified_spec(kind: KernelKind, arch: Arch, dtype: DType, head_dim: u32, causal: bool, tokens: usize) -> Result<KernelSpec, SpecError> {
    match MODIFIED_TILES.iter().find(|r| r.kind == kind && r.applies.covers(arch, head_dim, causal, tokens)) {
        Some(row) => spec_of_row(row, arch, dtype, head_dim, causal),
        None => spec(kind, arch, dtype, head_dim, causal, tokens),
    }
}

fn spec_of_row(row: &TileRow, arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<KernelSpec, SpecError> {
    let Tiles { block_m, block_n, num_warps, num_stages } = row.tiles;
    let params = SpecParams { kind: row.kind, dtype, head_dim, block_m, block_n, stage: if causal { 3 } else { 1 }, num_warps, num_stages, arch };
    KernelSpec::with_schedule(params, row.schedule)
}

/// The kinds a `table` row gives for a problem.
pub fn kinds_for(table: &'static [KindRow], what: &str, arch: Arch, head_dim: u32, causal: bool, tokens: usize) -> Result<&'static [KernelKind], SpecError> {
    let name = if std::ptr::eq(table, FORWARD_KINDS) { "FORWARD_KINDS" } else { "BACKWARD_KINDS" };
    table
        .iter()
        .find(|r| r.applies.covers(arch, head_dim, causal, tokens))
        .map(|r| r.kinds)
        .ok_or_else(|| describe(what, arch, head_dim, causal, tokens, name))
}

/// The lengths at which some row's range starts: one problem per range covers every default.
pub fn length_boundaries() -> Vec<usize> {
    let mut out: Vec<usize> = TILES
        .iter()
        .map(|r| &r.applies)
        .chain(FORWARD_KINDS.iter().chain(BACKWARD_KINDS).map(|r| &r.applies))
        .flat_map(|a| [*a.tokens.start(), a.tokens.end().saturating_add(1)])
        .filter(|&n| n > 0 && n < usize::MAX)
        .collect();
    out.push(1);
    out.sort();
    out.dedup();
    out
}

// ---------------------------------------------------------------------------------------------------------
// The KV-cache decode kernels (issue 33; spec/decode.rs)

/// One decode default: the tiles of `decode` on some targets at a head dim. BLOCK_M is not tabled: the plan
/// takes the query rows of one K/V head (G·N_q) padded to 16 or 32 (`plan::decode`).
#[derive(Debug)]
pub struct DecodeRow {
    pub targets: &'static [Arch],
    pub head_dim: u32,
    pub block_n: u32,
    pub num_warps: u32,
    pub num_stages: u32,
    /// Why (no bench/results run has timed the decode kernels yet: these rows are the design's, to be
    /// replaced by measured ones).
    pub result: &'static str,
}

const fn decode_row(targets: &'static [Arch], head_dim: u32, block_n: u32, num_warps: u32, num_stages: u32, result: &'static str) -> DecodeRow {
    DecodeRow { targets, head_dim, block_n, num_warps, num_stages, result }
}

/// 228 KB of shared memory per SM (sm_90, sm_90a), 164 KB (sm_80), 100 KB (sm_86, sm_89).
const BIG_SMEM: &[Arch] = &[Arch::Sm90, Arch::Sm90a];
const A100: &[Arch] = &[Arch::Sm80];
const SMALL_SMEM: &[Arch] = &[Arch::Sm86, Arch::Sm89];

/// The decode tiles. Memory-bound: a program needs enough bytes in flight, an SM two or three programs
/// (the split heuristic counts the programs the driver fits per SM). HEAD_DIM 128: blocks of 64 keys
/// (32 KB of K and V), 4 warps of 16 keys; 3 slots on Hopper (100 KB: two programs per SM, 64 KB in flight
/// each), 2 elsewhere (68 KB: two per A100 SM). HEAD_DIM 64: 64 keys (16 KB), 4 slots (66 KB: three per
/// Hopper SM). Chosen by design; `flashgen bench --decode --decode-configs` times the alternatives.
pub static DECODE_TILES: &[DecodeRow] = &[
    decode_row(BIG_SMEM, 128, 64, 4, 3, "design: 2 programs per SM, 64 KB in flight each (unmeasured)"),
    decode_row(A100, 128, 64, 4, 2, "design: 2 programs per SM (unmeasured)"),
    decode_row(SMALL_SMEM, 128, 64, 4, 2, "design: 1 program per SM (unmeasured)"),
    decode_row(BIG_SMEM, 64, 64, 4, 4, "design: 3 programs per SM (unmeasured)"),
    decode_row(A100, 64, 64, 4, 4, "design: 2 programs per SM (unmeasured)"),
    decode_row(SMALL_SMEM, 64, 64, 4, 2, "design: 2 programs per SM (unmeasured)"),
    // HEAD_DIM 256 (Gemma): two column groups of 128 (spec/decode.rs), 64 KB of K and V a block; not on
    // sm_86/89, whose 99 KB hold no ring of two such blocks (8 warps, the fewest whose copy rows share a swizzle)
    decode_row(BIG_SMEM, 256, 64, 8, 3, "design: 8 warps (4 key warps × 2 column groups), 1 program per SM, 192 KB in flight (unmeasured)"),
    decode_row(A100, 256, 64, 8, 2, "design: 8 warps (4 key warps × 2 column groups), 1 program per SM (unmeasured)"),
];

/// The default decode spec for a target, dtype, head dim, causality and BLOCK_M.
pub fn decode_spec(arch: Arch, dtype: DType, head_dim: u32, causal: bool, block_m: u32) -> Result<KernelSpec, SpecError> {
    let row = DECODE_TILES
        .iter()
        // rows by the tiles' width: 32 and 96 run on 64's and 128's tiles
        .find(|r| r.targets.contains(&arch) && r.head_dim == tile_width(head_dim))
        .ok_or_else(|| SpecError(format!("no decode tile row is tabled for HEAD_DIM={head_dim} on {arch} (a ring of two K/V blocks must fit its shared memory): run the new tokens through the prefill kernels (a ForwardCall with N_q = the new tokens against the cache), or add a row to DECODE_TILES in compiler/src/spec/defaults.rs")))?;
    let params = SpecParams { kind: Decode, dtype, head_dim, block_m, block_n: row.block_n, stage: if causal { 3 } else { 1 }, num_warps: row.num_warps, num_stages: row.num_stages, arch };
    KernelSpec::new(params)
}
