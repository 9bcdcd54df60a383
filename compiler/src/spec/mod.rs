//! `KernelSpec`: the one type that names a kernel specialization. The module in parts, one concern each:
//!
//! - `types`: target (Arch), element type (DType), kernel kind, STAGE, the raw parameters and the limits;
//! - `schedule`: the switches that change a kernel's code without changing its tiles (`Schedule`), derived
//!   per spec and overridable (`ScheduleOverrides`);
//! - `rules`: `KernelSpec::new` / `with_schedule`, the one validation point: a spec that validates compiles
//!   and runs correctly;
//! - `resources`: the shared-memory layouts and register estimates the rules hold against the target;
//! - `defaults`: the table of default tiles per kernel kind and of which kinds the plan runs (crate::plan).

mod resources;
mod rules;
mod decode;
pub mod modifiers;
pub mod defaults;
pub mod schedule;
pub mod types;

pub use resources::{FusedLayout, Registers};
pub use decode::{DECODE_BLOCK_MS, DECODE_BLOCK_NS, DECODE_COMBINE_WARPS, DECODE_KEYS_PER_WARP, DECODE_MAX_SPLITS, DECODE_MERGE_PAD, DECODE_NUM_WARPS};
pub use modifiers::{Modifiers, MOD_TENSORS};
pub use schedule::{Schedule, ScheduleOverrides};
pub use types::*;

use serde::{Deserialize, Serialize};

/// A validated specialization: its parameters and its resolved schedule. Construct it with
/// [`KernelSpec::new`] or [`KernelSpec::with_schedule`]; its fields are read-only. Deserializing validates
/// too: a spec read from a file obeys the same rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "SpecRecord", into = "SpecRecord")]
pub struct KernelSpec {
    params: SpecParams,
    schedule: Schedule,
    /// The switches set explicitly that differ from their derived values (in the name and the record).
    overrides: ScheduleOverrides,
    features: Features,
}

/// What a kernel computes beyond softmax attention over fixed-length sequences: compile-time properties of
/// the problem (not of the schedule: they change the result's definition or its inputs), in the kernel's
/// name and cache key. Grouped-query heads and unequal lengths need none: they are runtime geometry
/// (flashgen::abi::geometry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Features {
    /// Packed variable-length sequences: each program reads its sequence's offsets and lengths from
    /// cu_seqlens (the ABI's CU_SEQLENS_Q/K); the row statistics are [H, total_q].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub varlen: bool,
    /// Rows may see no key (causal with more queries than keys aligned bottom-right, packed sequences): the
    /// online softmax guards a row maximum of −∞ (exp2 against 0, not −∞ − −∞), such rows write O = 0 and
    /// M = −∞, and the backward takes M = −∞ as +∞ (P = 0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub empty_rows: bool,
    /// A sliding window around the aligned diagonal (the ABI's WINDOW_LEFT, WINDOW_RIGHT): query i sees keys
    /// i + diag − left ..= i + diag + right. The right bound rides on the causal diagonal (a STAGE=3 kernel
    /// shifted by WINDOW_RIGHT; 0 is causal), the left one skips the tile's blocks before its first row's
    /// first key and masks those its rows straddle, so the cost grows with the window, not with N.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub window: bool,
    /// Softcap (Gemma 2, Grok): s ← cap · tanh(s / cap) on the scaled score before the softmax (the ABI's
    /// SOFTCAP), the tanh on the MUFU beside exp2.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub softcap: bool,
    /// A score_mod and/or mask_mod (`crate::mods`) compiled into the kernel, their tensors in the ABI's
    /// MOD_TENSOR slots. The mask_mod's key ranges decide the blocks a tile visits (blocks it proves
    /// fully masked are never visited, fully visible ones run without the mask).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modifiers: Option<Modifiers>,
    /// V's head dim (and O's, dO's, dV's) where it is narrower than Q's and K's (DeepSeek's 192/128): the
    /// tiles stay HEAD_DIM wide, V's columns past it read as zeros and O and dV are stored that wide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_dim: Option<u32>,
}

impl Features {
    /// Whether these give the fused backward's key blocks different numbers of steps (packed sequences, a
    /// window), which `Schedule::persistent_tiles` cannot take.
    pub fn vary_tile_steps(&self) -> bool {
        self.varlen || self.window
    }

    pub const NONE: Features = Features { varlen: false, empty_rows: false, window: false, softcap: false, modifiers: None, value_dim: None };

    pub fn is_none(&self) -> bool {
        *self == Features::NONE
    }

    /// "varlen,empty_rows,window,softcap,value_dim=128" (any of them, comma-separated; "" for none).
    pub fn parse(text: &str) -> Result<Features, SpecError> {
        let mut f = Features::NONE;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "varlen" => f.varlen = true,
                "empty_rows" => f.empty_rows = true,
                "window" => f.window = true,
                "softcap" => f.softcap = true,
                other => match other.strip_prefix("value_dim=").map(str::parse::<u32>) {
                    Some(Ok(dv)) => f.value_dim = Some(dv),
                    _ => return Err(SpecError(format!("feature `{other}` is unknown: use varlen, empty_rows, window, softcap or value_dim=N"))),
                },
            }
        }
        Ok(f)
    }

    /// `_varlen`, `_emptyrows`, `_window`, `_softcap`, `_m<hash>`, `_dv<value dim>` (empty for none).
    pub fn name_suffix(&self) -> String {
        let mut s = String::new();
        for (on, suffix) in [(self.varlen, "_varlen"), (self.empty_rows, "_emptyrows"), (self.window, "_window"), (self.softcap, "_softcap")] {
            if on {
                s.push_str(suffix);
            }
        }
        if let Some(m) = self.modifiers {
            s.push_str("_m");
            s.push_str(m.hash());
        }
        if let Some(dv) = self.value_dim {
            s.push_str(&format!("_dv{dv}"));
        }
        s
    }
}

/// A spec as files carry it: the parameters, and the schedule overrides and features when there are any.
#[derive(Clone, Serialize, Deserialize)]
struct SpecRecord {
    #[serde(flatten)]
    params: SpecParams,
    #[serde(default, skip_serializing_if = "ScheduleOverrides::is_empty")]
    schedule: ScheduleOverrides,
    #[serde(default, skip_serializing_if = "Features::is_none")]
    features: Features,
}

impl TryFrom<SpecRecord> for KernelSpec {
    type Error = SpecError;
    fn try_from(r: SpecRecord) -> Result<KernelSpec, SpecError> {
        KernelSpec::with_features(r.params, r.schedule, r.features)
    }
}

impl From<KernelSpec> for SpecRecord {
    fn from(s: KernelSpec) -> SpecRecord {
        SpecRecord { params: s.params, schedule: s.overrides, features: s.features }
    }
}

impl TryFrom<SpecParams> for KernelSpec {
    type Error = SpecError;
    fn try_from(p: SpecParams) -> Result<KernelSpec, SpecError> {
        KernelSpec::new(p)
    }
}

/// A piece of a column warpgroup's columns (`KernelSpec::column_pieces`): warpgroup w's `columns` from
/// column `first + w·stride` of dK and dV, accumulated in its n8 tiles from `first_tile`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnPiece {
    pub columns: u32,
    pub first: u32,
    pub stride: u32,
    pub first_tile: u32,
}

impl KernelSpec {
    pub fn params(&self) -> &SpecParams {
        &self.params
    }
    /// The resolved switches (derived, or as overridden).
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }
    /// The switches set explicitly that differ from their derived values.
    pub fn schedule_overrides(&self) -> &ScheduleOverrides {
        &self.overrides
    }
    /// What the kernel computes beyond fixed-length attention (`Features`).
    /// The head dim of V, O, dO and dV (`Features::value_dim`, else HEAD_DIM).
    pub fn value_dim(&self) -> u32 {
        self.features.value_dim.unwrap_or(self.params.head_dim)
    }

    pub fn features(&self) -> Features {
        self.features
    }
    pub fn kind(&self) -> KernelKind {
        self.params.kind
    }
    pub fn dtype(&self) -> DType {
        self.params.dtype
    }
    pub fn head_dim(&self) -> u32 {
        self.params.head_dim
    }
    pub fn block_m(&self) -> u32 {
        self.params.block_m
    }
    pub fn block_n(&self) -> u32 {
        self.params.block_n
    }
    pub fn stage(&self) -> Stage {
        if self.params.stage == 3 {
            Stage::Causal
        } else {
            Stage::NonCausal
        }
    }
    pub fn causal(&self) -> bool {
        self.stage() == Stage::Causal
    }
    pub fn num_warps(&self) -> u32 {
        self.params.num_warps
    }
    pub fn num_stages(&self) -> u32 {
        self.params.num_stages
    }
    pub fn arch(&self) -> Arch {
        self.params.arch
    }
    pub fn threads(&self) -> u32 {
        32 * self.params.num_warps
    }
    /// Rows a program owns, split over its warps: query rows (forward, dQ) or K/V rows (dK/dV).
    pub fn resident_rows(&self) -> u32 {
        match self.params.kind.role() {
            KernelKind::BwdDkdv => self.params.block_n,
            _ => self.params.block_m,
        }
    }
    /// Rows of each block streamed through the cp.async ring: K/V rows (forward, dQ) or Q/dO rows (dK/dV).
    pub fn streamed_rows(&self) -> u32 {
        match self.params.kind.role() {
            KernelKind::BwdDkdv => self.params.block_m,
            _ => self.params.block_n,
        }
    }
    /// Resident rows each computing warp owns (a multiple of 16; a helper warpgroup's warps own none; the
    /// column warpgroups of a dK/dV program each own all of its rows).
    pub fn rows_per_warp(&self) -> u32 {
        self.resident_rows() * self.column_warpgroups() / self.mma_warps()
    }
    /// The warpgroups that share a bwd_dkdv_wgmma program's 64 keys, each computing 1/n of dK's and dV's
    /// columns (the tile says it: num_warps = 8 on BLOCK_N = 64, else 1): warpgroup 0 computes Sᵀ and P,
    /// warpgroup 1 dPᵀ and dS, and they hand P and dS to each other through shared memory, so that past
    /// HEAD_DIM 128 neither product over the whole head is computed twice (column_splits recomputes both
    /// per slice). FA3's two MMA warpgroups on a key block at HEAD_DIM 256.
    pub fn column_warpgroups(&self) -> u32 {
        let p = &self.params;
        if p.kind == KernelKind::BwdDkdvWgmma && p.block_n == 64 && p.num_warps == 8 {
            2
        } else {
            1
        }
    }
    /// The warps that compute (all but a helper warpgroup: fwd_ws's producer, the fused backward's dQ writer).
    pub fn mma_warps(&self) -> u32 {
        self.params.num_warps - self.params.kind.helper_warps()
    }

    /// The fused backward's MMA warpgroups split dQ = dS·K by query rows (BLOCK_M 128 at HEAD_DIM 64: each
    /// warpgroup 64 rows, every column) rather than by columns (BLOCK_M 64: each warpgroup 64 columns).
    pub fn dq_splits_rows(&self) -> bool {
        self.params.kind.fuses_dq() && self.params.block_m > 64
    }

    /// The fused backward's 64×64 f32 pieces of a block of dQ (BLOCK_M rows × the tile's width): one per MMA
    /// warpgroup, each a staging buffer's part, a lock per chain and a bulk reduction of 16 KB.
    pub fn dq_pieces(&self) -> u32 {
        self.params.block_m * self.params.tile_dim() / 4096
    }

    /// Whether fwd_ws's consumers take turns on the tensor cores (FA3's ping-pong) with a software-pipelined
    /// loop: each turn issues S_j and then P_{j-1}·V_{j-1}, and the softmax of block j runs while that
    /// product does. Block j-1's slot is then held one step longer, so this needs 3+ stages (with 2 the
    /// producer could not load ahead), or 2 on the split ring (`split_kv_ring`, where K goes back a step
    /// before V); other 2-stage tiles run their consumers independently, one block at a time.
    pub fn ping_pong(&self) -> bool {
        self.params.ping_pong(self.schedule.split_kv_ring)
    }

    // The schedule's switches (see `Schedule` for what each does and what it measured).
    pub fn q_from_registers(&self) -> bool {
        self.schedule.q_from_registers
    }
    pub fn lazy_rescale(&self) -> bool {
        self.schedule.lazy_rescale
    }
    pub fn half_block_softmax(&self) -> bool {
        self.schedule.half_block_softmax
    }
    pub fn cross_tile(&self) -> bool {
        self.schedule.cross_tile
    }
    pub fn single_tail(&self) -> bool {
        self.schedule.single_tail
    }
    pub fn narrow_last_product(&self) -> bool {
        self.schedule.narrow_last_product
    }
    pub fn own_blocks(&self) -> bool {
        self.schedule.own_blocks
    }
    pub fn split_kv_ring(&self) -> bool {
        self.schedule.split_kv_ring
    }
    pub fn early_row_norm(&self) -> bool {
        self.schedule.early_row_norm
    }
    pub fn q_buffers(&self) -> u32 {
        self.schedule.q_buffers
    }
    /// The programs per SM ptxas leaves registers for (`.minnctapersm`; `Schedule::programs_per_sm`).
    pub fn programs_per_sm(&self) -> u32 {
        self.schedule.programs_per_sm
    }

    /// bwd_fused_up's programs run two key blocks each where the grid fits (`Schedule::fold_key_blocks`).
    pub fn fold_key_blocks(&self) -> bool {
        self.schedule.fold_key_blocks
    }

    /// Whether a launch over `g` folds its key blocks (`Schedule::fold_key_blocks`): the switch is on, the
    /// unfolded grid (Z·H_KV·P programs, P = cdiv(N_KV, BLOCK_N)) is under FOLD_BELOW_WAVES waves of
    /// `programs` (the SM count; one fused program per SM), and a head's folded programs, ceil(P / 2), fit
    /// on the GPU at once, since a program's heavy half waits on the light halves of programs launched
    /// after it. The kernel reads the choice from its grid (fewer than P programs).
    pub fn folds(&self, g: &GridGeometry, programs: u32) -> bool {
        let blocks = g.seqlen_k.div_ceil(self.resident_rows());
        let unfolded = u64::from(g.batch) * u64::from(g.kv_heads) * u64::from(blocks);
        let few_waves = unfolded < u64::from(FOLD_BELOW_WAVES) * u64::from(programs);
        self.fold_key_blocks() && blocks >= 2 && few_waves && blocks.div_ceil(2) <= programs
    }

    /// dK/dV's splits of HEAD_DIM into column slices, one program each (`Schedule::column_splits`).
    pub fn column_splits(&self) -> u32 {
        self.schedule.column_splits
    }

    /// A column warpgroup's columns of dK and dV as pieces, each one wgmma chain per product: its whole
    /// 64-column panels side by side (warpgroup w's from panel w·panels), then, where its share is half a
    /// panel more (HEAD_DIM 192: 96 columns each), the last panels in halves (warpgroup w's half from
    /// column 32·w of them: a chain of n 32 starting 64 bytes into the panel's 128-byte rows, which it never
    /// crosses). Empty without column warpgroups.
    pub fn column_pieces(&self) -> Vec<ColumnPiece> {
        let cw = self.column_warpgroups();
        if cw == 1 {
            return Vec::new();
        }
        let per = self.output_columns();
        let (panels, half) = (per / 64, per % 64);
        let mut pieces = Vec::new();
        if panels > 0 {
            pieces.push(ColumnPiece { columns: 64 * panels, first: 0, stride: 64 * panels, first_tile: 0 });
        }
        if half > 0 {
            pieces.push(ColumnPiece { columns: half, first: 64 * panels * cw, stride: half, first_tile: panels * 8 });
        }
        pieces
    }

    /// The columns of dK and dV one dK/dV warpgroup computes (the tile's HEAD_DIM / column_splits, shared
    /// by the program's column warpgroups).
    pub fn output_columns(&self) -> u32 {
        self.params.tile_dim() / self.schedule.column_splits / self.column_warpgroups()
    }

    /// The backward preprocess (Δ = rowsum(dO ⊙ O)) for a target, dtype and head dim: 64 rows per program,
    /// 4 warps; its other parameters are fixed (it has no tiles to tune and does not depend on causality).
    pub fn backward_preprocess(arch: Arch, dtype: DType, head_dim: u32) -> KernelSpec {
        let params = SpecParams { kind: KernelKind::BwdPre, dtype, head_dim, block_m: 64, block_n: 0, stage: 1, num_warps: 4, num_stages: 1, arch };
        KernelSpec { params, schedule: Schedule::PLAIN, overrides: ScheduleOverrides::NONE, features: Features::NONE }
    }

    /// The module's second entry, which the runtime launches after the kernel (the fused kinds: dQ =
    /// sm_scale · the chains' partial sums, docs/ABI.md), if the kind has one.
    pub fn dq_sum_entry(&self) -> Option<String> {
        self.kind().fuses_dq().then(|| format!("{}_dq_sum", self.name()))
    }

    /// The kernel's symbol, encoding every parameter and each schedule override:
    /// fa2_fwd_bf16_d128_st3_bm128_bn64_w8_ns3_sm90a, fa2_fwd_ws_..._sm90a_lazy0.
    pub fn name(&self) -> String {
        let p = &self.params;
        format!(
            "fa2_{}_{}_d{}_st{}_bm{}_bn{}_w{}_ns{}_{}{}",
            p.kind.name(),
            p.dtype.name(),
            p.head_dim,
            p.stage,
            p.block_m,
            p.block_n,
            p.num_warps,
            p.num_stages,
            p.arch.name().replace('_', ""),
            self.overrides.name_suffix()
        ) + &self.features.name_suffix()
    }

    /// The head rows (batch × K/V heads) one round of the persistent fused grid holds
    /// (`Schedule::persistent_tiles`: `grid` gives it whole heads' key blocks, up to `programs`), which a
    /// sum pass in rounds takes together (`Schedule::dq_sum_rounds`); 1 where one head's key blocks
    /// outnumber the programs (the grid then runs a program per tile, in waves of part of a head); 0 for
    /// grids that are not persistent.
    pub fn round_heads(&self, g: &GridGeometry, programs: u32) -> u32 {
        if self.params.kind.role() != KernelKind::BwdDkdv || !self.schedule.persistent_tiles {
            return 0;
        }
        self.whole_heads_a_round(g, programs).min(g.batch.saturating_mul(g.kv_heads)).max(1)
    }

    /// The whole heads' key blocks `programs` hold (0 where one head's blocks outnumber them): the persistent
    /// fused grid's round (`grid`) and the sum pass's (`round_heads`), which must agree.
    fn whole_heads_a_round(&self, g: &GridGeometry, programs: u32) -> u32 {
        programs / g.seqlen_k.div_ceil(self.resident_rows()).max(1)
    }

    /// Launch grid for a problem (`GridGeometry`): one program per block of resident rows of a sequence
    /// (the longest, for packed sequences: programs past their own sequence's end exit at once) and per
    /// head: (cdiv(N_Q, BLOCK_M), Z·H, 1) for the forward, preprocess and dQ kernels, and (cdiv(N_KV,
    /// BLOCK_N), Z·H_KV, column_splits) for dK/dV, whose programs each run every query head of their K/V head
    /// (bwd_fused_up folded, `folds`: cdiv(P, 2) programs of two key blocks each). A
    /// persistent kernel's programs take tiles in turn: one program per tile up to `programs` (the SM
    /// count: one resident program per SM), on grid x.
    pub fn grid(&self, g: &GridGeometry, programs: u32) -> (u32, u32, u32) {
        if self.params.kind.role() == KernelKind::BwdDkdv {
            let blocks = g.seqlen_k.div_ceil(self.resident_rows());
            let head_rows = g.batch.saturating_mul(g.kv_heads);
            if self.schedule.persistent_tiles {
                // a whole number of heads' key blocks per round (the kernel walks t = ctaid.x, + nctaid.x, ...),
                // so that a dQ chain waits only on programs of lower index in the same round, launched
                // before it, whether or not every program is resident; a head's blocks past the SMs' count
                // run one program per tile (the same kernel: each program's first tile is its last)
                let tiles = u64::from(blocks) * u64::from(head_rows);
                let rounds = u64::from(self.whole_heads_a_round(g, programs)) * u64::from(blocks);
                let grid = if rounds == 0 { tiles } else { tiles.min(rounds) };
                return (grid.clamp(1, u64::from(u32::MAX)) as u32, 1, self.column_splits());
            }
            let programs = if self.folds(g, programs) { blocks.div_ceil(2) } else { blocks };
            // (head rows saturate rather than wrap: the runtime refuses more than 65535 by name)
            return (programs, head_rows, self.column_splits());
        }
        let (blocks, heads) = (g.seqlen_q.div_ceil(self.resident_rows()), g.batch.saturating_mul(g.heads));
        if self.params.kind.persistent() {
            // (in u64: a long sequence's tiles times 65535 heads pass u32; the grid is at most `programs`)
            let tiles = u64::from(blocks) * u64::from(heads);
            (tiles.clamp(1, u64::from(programs.max(1))) as u32, 1, 1)
        } else {
            (blocks, heads, 1)
        }
    }
}

/// bwd_fused_up folds its grid (`KernelSpec::folds`) only below this many waves of unfolded programs: there
/// the grid's tail leaves SMs idle (list scheduling of the light-first grid: GQA H_KV 8 at N 4096, 256
/// programs, 60% busy), above it the folded kernel's own costs outweigh a tail that is already thin
/// (2026-12-03-fold-ab: folded +23% / +7% at 1.9 / 7.8 waves (GQA N 4096 / 16384), -1.5 to -4% at 15.5 (the
/// table's causal D128 rows) and -1.5% on the packed batch; 12 lies between the measured sides).
pub const FOLD_BELOW_WAVES: u32 = 12;

/// What a launch grid depends on (`KernelSpec::grid`): the batch (packed sequences: their number B), the
/// query and K/V heads, and the query and key lengths (packed sequences: the longest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridGeometry {
    pub batch: u32,
    pub heads: u32,
    pub kv_heads: u32,
    pub seqlen_q: u32,
    pub seqlen_k: u32,
}

impl GridGeometry {
    /// Z·H heads of N queries and as many keys (equal-length multi-head attention).
    pub fn square(z: u32, h: u32, n: u32) -> GridGeometry {
        GridGeometry { batch: z, heads: h, kv_heads: h, seqlen_q: n, seqlen_k: n }
    }
}

/// The kernels of one backward pass, launched in this order: Δ, dK/dV, and dQ unless dK/dV computes it
/// too (`dq` is None exactly when `dkdv.kind().fuses_dq()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BackwardSpecs {
    pub preprocess: KernelSpec,
    pub dkdv: KernelSpec,
    pub dq: Option<KernelSpec>,
}

impl BackwardSpecs {
    /// The kernels in launch order.
    pub fn kernels(&self) -> Vec<KernelSpec> {
        [Some(self.preprocess), Some(self.dkdv), self.dq].into_iter().flatten().collect()
    }
    /// "fa2_bwd_pre_.. + fa2_bwd_dkdv_.. + fa2_bwd_dq_..": the kernels' names in launch order.
    pub fn names(&self) -> String {
        self.kernels().iter().map(|s| s.name()).collect::<Vec<_>>().join(" + ")
    }
}
