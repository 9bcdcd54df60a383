//! The types a kernel specialization is made of: target, element type, kernel kind, the raw parameters,
//! and the limits the rules check them against.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Which kernel of the FA2 family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    /// The forward pass: O and the base-2 log-sum-exp M.
    Fwd,
    /// The same forward (same ABI and outputs) on Hopper's wgmma (sm_90a only): one warpgroup per 64 query
    /// rows, S = Q·Kᵀ and O += P·V from shared-memory descriptors. The sm_90a forward at HEAD_DIM 64 up to
    /// 2048 tokens, and what fwd_ws falls back to where TMA cannot describe a layout.
    FwdWgmma,
    /// The wgmma forward, warp-specialized (sm_90a only; its ABI appends three TMA descriptors): a producer
    /// warpgroup loads Q and a ring of K/V blocks with TMA, signalling mbarriers; 2 or 3 consumer warpgroups
    /// (64 query rows each) compute as soon as a block lands and hand its slot back through another
    /// mbarrier, with no CTA-wide barrier; setmaxnreg moves registers from the producer to the consumers.
    /// The default forward on sm_90a (`plan::forward_kind`, from `spec::defaults::FORWARD_KINDS`).
    FwdWs,
    /// fwd_ws made persistent (sm_90a only; fwd_ws's ABI plus a tile counter, same tiles, ping-pong only):
    /// one program per SM takes tile (head, BLOCK_M rows) c, then the next one a global counter hands out;
    /// causal tiles in L2-sized groups of heads, each group's heaviest first. The forward at HEAD_DIM 64 up
    /// to 4096 tokens and at 128 up to 2048. Its producer runs on across tiles, so the K/V ring never
    /// drains, and the next tile's Q loads while this one runs (`Schedule::q_buffers`): a tile's prologue
    /// and epilogue hide under the other tiles' products, which is what the short sequences lose (at N =
    /// 1024 a tile runs 8 K/V blocks).
    FwdWsPersistent,
    /// Backward preprocess: Δ_i = rowsum(dO_i ⊙ O_i) in f32.
    BwdPre,
    /// Backward dK/dV: a program owns BLOCK_N rows of K/V and streams the Q/dO blocks of BLOCK_M rows.
    BwdDkdv,
    /// Backward dQ: a program owns BLOCK_M rows of Q/dO and streams the K/V blocks of BLOCK_N rows.
    BwdDq,
    /// bwd_dkdv on Hopper's wgmma (sm_90a only; same ABI): one warpgroup per 64 key rows. Default on sm_90a.
    BwdDkdvWgmma,
    /// bwd_dq on Hopper's wgmma (sm_90a only; same ABI): one warpgroup per 64 query rows. Default on sm_90a.
    BwdDqWgmma,
    /// bwd_dkdv_wgmma that also computes dQ (sm_90a only; five matrix products per block pair instead of
    /// the three-kernel pass's seven): each step's dSᵀ goes to shared memory and dQ_partial = dS·K is
    /// added, in program order (deterministic), into an f32 buffer; its module's second entry, the dQ sum
    /// pass (`KernelSpec::dq_sum_entry`), launched after it, writes dQ. Its ABI appends dQ, the f32 buffer
    /// and the locks to bwd_dkdv's (docs/ABI.md). Query blocks of 64 rows.
    BwdFused,
    /// bwd_fused with dQ's partial sums added by bulk reductions in whatever order they arrive: no program
    /// waits for another, but dQ's last bits vary from run to run. Opt-in only
    /// (FLASHGEN_BACKWARD=fused-atomic); same ABI and dQ sum pass, the f32 buffer must be zero at launch.
    BwdFusedAtomic,
    /// bwd_fused for causal attention with the order of the dQ additions following the programs' visits
    /// (sm_90a only; same ABI, STAGE=3 only): each program streams its query blocks up from the diagonal,
    /// each block's additions go from its highest program down, and the grid runs the programs last first.
    /// No program then waits for a turn that a line of earlier programs holds (bwd_fused's causal short
    /// programs do). The default causal backward at HEAD_DIM 128 from 1024 tokens
    /// (`spec::defaults::BACKWARD_KINDS`).
    BwdFusedUp,
    /// Decoding against a KV cache (issue 33, FlashAttention's `flash_attn_with_kvcache`): a program owns one
    /// (sequence, K/V head, split of the cache) and computes all G·N_q query rows of that K/V head's G query
    /// heads (BLOCK_M rows, padded to m16 tiles), so K/V is read once; the cache (contiguous or paged: a
    /// block table into a pool, a runtime switch) streams through a cp.async ring of BLOCK_N-key blocks whose
    /// keys the warps share out; new K/V tokens are read from their own tensors and appended to the cache.
    /// One split writes O and the natural-log LSE; more write f32 partials that `decode_combine` merges, or
    /// the last split of each row tile itself (SPLIT_COUNTERS).
    Decode,
    /// The split-KV merge of `decode`'s partials (a warp per query row): O = Σ_s exp2(M_s − M)·O_s / Σ_s
    /// exp2(M_s − M), in a fixed order (deterministic); writes O and the natural-log LSE.
    DecodeCombine,
}

/// Element type of Q, K, V and O. Accumulation is always f32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Bf16,
    F16,
}

/// The GPU target. `Sm90a` is sm_90 with the architecture-specific Hopper instructions enabled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Sm80,
    Sm86,
    Sm89,
    Sm90,
    Sm90a,
}

/// Kernel-level STAGE, with Triton's tutorial meaning: `3 if causal else 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    /// STAGE=1: non-causal; runs inner stage 3 (every K/V block, no mask).
    NonCausal = 1,
    /// STAGE=3: causal; runs inner stage 1 (blocks left of the diagonal, no mask), then inner stage 2
    /// (the diagonal blocks, masked). Blocks right of the diagonal are never visited.
    Causal = 3,
}

/// The raw, unvalidated parameters of a specialization (what a CLI flag or a JSON file carries).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SpecParams {
    pub kind: KernelKind,
    pub dtype: DType,
    pub head_dim: u32,
    pub block_m: u32,
    pub block_n: u32,
    pub stage: u32,
    pub num_warps: u32,
    pub num_stages: u32,
    pub arch: Arch,
}


impl SpecParams {
    /// The width of the kernel's tiles: HEAD_DIM rounded up to whole 64-column panels (32 and 96 run on the
    /// 64- and 128-column tiles, their last columns zero: TMA and the cp.async copies fill what lies past
    /// HEAD_DIM with zeros, and the epilogues store only HEAD_DIM columns).
    pub fn tile_dim(&self) -> u32 {
        tile_width(self.head_dim)
    }

    /// The warp-specialized forward's consumers take turns on the tensor cores (ping-pong): from 3 ring
    /// stages, or on 2 with K and V on barriers of their own (`split_ring`: `Schedule::split_kv_ring`,
    /// derived for K/V blocks wider than 128 keys, `WS_WIDE_BLOCK_N`, which only it runs).
    pub fn ping_pong(&self, split_ring: bool) -> bool {
        self.kind.warp_specialized_forward() && (self.num_stages >= 3 || split_ring)
    }

    /// K/V blocks wider than `BLOCK_NS` (`WS_WIDE_BLOCK_N`): two stages fit, which only the split ring runs
    /// (derived on for them), and their S leaves no registers for Q's fragments.
    pub fn wide_kv_block(&self) -> bool {
        self.block_n > 128
    }
}

/// The tiles' width for a head dim (`SpecParams::tile_dim`): whole 64-column panels.
pub fn tile_width(head_dim: u32) -> u32 {
    head_dim.next_multiple_of(64)
}

/// A rejected spec: the rule it breaks, in words that say how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid kernel spec: {0}")]
pub struct SpecError(pub String);

/// Head dims the kernels take. Tiles are whole 64-column panels (8 chunks of 16 bytes a row, the 128B swizzle
/// wgmma reads): 32 and 96 run padded to 64 and 128 (`SpecParams::tile_dim`).
pub const HEAD_DIMS: [u32; 6] = [32, 64, 96, 128, 192, 256];
/// Head dims of the decode kernels: 32 and 96 on the 64- and 128-column tiles, padded as the prefill's
/// (`SpecParams::tile_dim`); at 256 the warps split O's columns in two groups (spec/decode.rs). Their copy
/// lanes split the threads into whole rows of chunks, which 192's 24 do not.
pub const DECODE_HEAD_DIMS: [u32; 5] = [32, 64, 96, 128, 256];
/// Warps per program. 1 and 2 warps leave each thread so many copy addresses that ptxas spills.
pub const NUM_WARPS: [u32; 2] = [4, 8];
pub const MAX_ROWS_PER_WARP: u32 = 32;
/// K/V tile heights. ptxas spilled at 96 rows with only 168 registers in use (docs/DECISIONS.md), so only
/// the powers of two that the CI sweep assembles spill-free are admitted.
pub const BLOCK_NS: [u32; 4] = [16, 32, 64, 128];
/// The warp-specialized forward's one wider K/V block (FA3's non-causal HEAD_DIM 128 tile, 128×176): 11 k16
/// steps of P·V, two ring stages of K and V (212 KB with Q), ping-pong on the split ring
/// (`Schedule::split_kv_ring`).
pub const WS_WIDE_BLOCK_N: u32 = 176;
pub const NUM_STAGES: std::ops::RangeInclusive<u32> = 2..=6;
/// The warp-specialized forward's TMA ring: up to 8 slots where shared memory holds them (64-row K/V blocks;
/// HEAD_DIM 64 causal to 2048 tokens is 1.5-3% faster on 8 than on 6, stages8-ab).
pub const WS_NUM_STAGES: std::ops::RangeInclusive<u32> = 2..=8;
/// Warps of fwd_ws: the producer warpgroup and 2, 3 or 4 consumer warpgroups, which take turns on the
/// tensor cores (ping-pong). One consumer (8 warps, two CTAs per SM) ran 10× slower on the H200 (ws-v1).
pub const WS_NUM_WARPS: [u32; 3] = [12, 16, 20];
/// The K and V bytes of the heads a persistent causal forward works on at once (fwd_ws_persistent's tile
/// order): half the H200's 50 MB L2, so a group's K and V stay there while its tiles run.
pub const L2_GROUP_BYTES: u32 = 24 << 20;
/// The ping-pong forward's lazy rescaling (FA4's): a row's running max m_i moves only when a block's
/// max exceeds it by more than this (log2 units), so P stays below 2^8 (exact in bf16/f16's exponent range,
/// and the fp32 sums have room for it) and in most blocks no row moves and acc·alpha is skipped.
pub const LAZY_RESCALE_LOG2: u32 = 8;
/// Threads per block of the fused backward's dQ sum pass (`KernelSpec::dq_sum_entry`; the template's
/// maxntidx, and the runtime's launch).
pub const DQ_SUM_THREADS: u32 = 256;


/// Warps of the fused backward: 1 or 2 MMA warpgroups (HEAD_DIM 64 or 128), then the dQ writer warpgroup.
pub const FUSED_NUM_WARPS: [u32; 2] = [8, 12];
/// Registers a thread may use (the architectural limit of every supported target).
pub const MAX_REGISTERS: u32 = 255;
impl Arch {
    pub const ALL: [Arch; 5] = [Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90, Arch::Sm90a];

    pub fn name(self) -> &'static str {
        match self {
            Arch::Sm80 => "sm_80",
            Arch::Sm86 => "sm_86",
            Arch::Sm89 => "sm_89",
            Arch::Sm90 => "sm_90",
            Arch::Sm90a => "sm_90a",
        }
    }

    /// Compute capability as Triton's metadata writes it (90 for sm_90 and sm_90a).
    pub fn capability(self) -> u32 {
        match self {
            Arch::Sm80 => 80,
            Arch::Sm86 => 86,
            Arch::Sm89 => 89,
            Arch::Sm90 | Arch::Sm90a => 90,
        }
    }

    /// Whether the target runs Hopper's wgmma (sm_90a): its default kernels are then the wgmma kinds.
    pub fn has_wgmma(self) -> bool {
        self == Arch::Sm90a
    }

    /// Largest dynamic shared memory one block may opt into, in bytes.
    pub fn shared_memory_limit(self) -> u32 {
        match self {
            Arch::Sm80 => 166_912,
            Arch::Sm86 | Arch::Sm89 => 101_376,
            Arch::Sm90 | Arch::Sm90a => 232_448,
        }
    }

    /// The lowest PTX ISA version that knows this target (and everything the templates use on it:
    /// mma.sync bf16, ldmatrix and cp.async all arrived in PTX 7.0 for sm_80).
    pub fn ptx_version(self) -> (u32, u32) {
        match self {
            Arch::Sm80 => (7, 0),
            Arch::Sm86 => (7, 1),
            Arch::Sm89 | Arch::Sm90 => (7, 8),
            Arch::Sm90a => (8, 0),
        }
    }

    pub fn parse(s: &str) -> Result<Arch, SpecError> {
        let key = s.trim().to_ascii_lowercase().replace('_', "");
        Arch::ALL
            .into_iter()
            .find(|a| a.name().replace('_', "") == key)
            .ok_or_else(|| SpecError(format!("arch `{s}` is unknown: use one of sm_80, sm_86, sm_89, sm_90, sm_90a")))
    }

    /// The arch of a device with this compute capability (sm_90 devices get sm_90a, which they run).
    pub fn from_capability(major: u32, minor: u32) -> Option<Arch> {
        match (major, minor) {
            (8, 0) => Some(Arch::Sm80),
            (8, 6) | (8, 7) => Some(Arch::Sm86),
            (8, 9) => Some(Arch::Sm89),
            (9, 0) => Some(Arch::Sm90a),
            _ => None,
        }
    }
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::Bf16 => "bf16",
            DType::F16 => "fp16",
        }
    }
    pub fn parse(s: &str) -> Result<DType, SpecError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bf16" | "bfloat16" => Ok(DType::Bf16),
            "fp16" | "f16" | "float16" | "half" => Ok(DType::F16),
            _ => Err(SpecError(format!("dtype `{s}` is unknown: use bf16 or fp16"))),
        }
    }
    pub fn bytes(self) -> u32 {
        2
    }
}

impl KernelKind {
    /// Every kind; a role's plain wgmma kind comes before bwd_fused (`wgmma_kind` takes the first).
    pub const ALL: [KernelKind; 14] = [
        KernelKind::Fwd,
        KernelKind::FwdWgmma,
        KernelKind::FwdWs,
        KernelKind::FwdWsPersistent,
        KernelKind::BwdPre,
        KernelKind::BwdDkdv,
        KernelKind::BwdDq,
        KernelKind::BwdDkdvWgmma,
        KernelKind::BwdDqWgmma,
        KernelKind::BwdFused,
        KernelKind::BwdFusedAtomic,
        KernelKind::BwdFusedUp,
        KernelKind::Decode,
        KernelKind::DecodeCombine,
    ];

    pub fn parse(s: &str) -> Result<KernelKind, SpecError> {
        KernelKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| SpecError(format!("kernel `{s}` is unknown: use one of fwd, fwd_wgmma, fwd_ws, fwd_ws_persistent, bwd_pre, bwd_dkdv, bwd_dq, bwd_dkdv_wgmma, bwd_dq_wgmma, bwd_fused, bwd_fused_atomic, bwd_fused_up, decode, decode_combine")))
    }
    pub fn name(self) -> &'static str {
        match self {
            KernelKind::Fwd => "fwd",
            KernelKind::FwdWgmma => "fwd_wgmma",
            KernelKind::FwdWs => "fwd_ws",
            KernelKind::FwdWsPersistent => "fwd_ws_persistent",
            KernelKind::BwdPre => "bwd_pre",
            KernelKind::BwdDkdv => "bwd_dkdv",
            KernelKind::BwdDq => "bwd_dq",
            KernelKind::BwdDkdvWgmma => "bwd_dkdv_wgmma",
            KernelKind::BwdDqWgmma => "bwd_dq_wgmma",
            KernelKind::BwdFused => "bwd_fused",
            KernelKind::BwdFusedAtomic => "bwd_fused_atomic",
            KernelKind::BwdFusedUp => "bwd_fused_up",
            KernelKind::Decode => "decode",
            KernelKind::DecodeCombine => "decode_combine",
        }
    }
    /// The kernel's role in the pass, whichever instructions implement it: a wgmma kind has the role (and
    /// the ABI, grid and tile meaning) of its mma.sync kind.
    pub fn role(self) -> KernelKind {
        match self {
            KernelKind::FwdWgmma | KernelKind::FwdWs | KernelKind::FwdWsPersistent => KernelKind::Fwd,
            KernelKind::BwdDkdvWgmma | KernelKind::BwdFused | KernelKind::BwdFusedAtomic | KernelKind::BwdFusedUp => KernelKind::BwdDkdv,
            KernelKind::BwdDqWgmma => KernelKind::BwdDq,
            k => k,
        }
    }
    /// Whether the kernel's matrix products are Hopper's wgmma (sm_90a).
    pub fn uses_wgmma(self) -> bool {
        self != self.role()
    }
    /// Whether the kernel computes dQ besides dK and dV (bwd_fused: no separate dQ kernel runs).
    pub fn fuses_dq(self) -> bool {
        matches!(self, KernelKind::BwdFused | KernelKind::BwdFusedAtomic | KernelKind::BwdFusedUp)
    }
    /// Warps beside the computing ones: fwd_ws's producer warpgroup (TMA loads), the fused backward's dQ
    /// writer warpgroup (bulk reductions, hand-overs, the final dQ); 0 for the other kinds.
    pub fn helper_warps(self) -> u32 {
        if self.warp_specialized_forward() || self.fuses_dq() {
            4
        } else {
            0
        }
    }
    /// Whether the kernel is a warp-specialized forward (fwd_ws, fwd_ws_persistent: TMA descriptors in the ABI).
    pub fn warp_specialized_forward(self) -> bool {
        matches!(self, KernelKind::FwdWs | KernelKind::FwdWsPersistent)
    }
    /// Whether a program takes tile after tile (fwd_ws_persistent: the grid is at most one program per SM).
    pub fn persistent(self) -> bool {
        self == KernelKind::FwdWsPersistent
    }
    /// Whether dQ's partial sums are added by atomics, in arrival order (not deterministic).
    pub fn dq_atomics(self) -> bool {
        self == KernelKind::BwdFusedAtomic
    }
    /// Whether the fused backward's causal programs visit their query blocks up from the diagonal and add
    /// to each block from its highest program down (bwd_fused_up).
    pub fn dq_up(self) -> bool {
        self == KernelKind::BwdFusedUp
    }
    /// Whether the kind is one of the KV-cache decoding kernels (`decode`, `decode_combine`; spec/decode.rs).
    pub fn decodes(self) -> bool {
        matches!(self, KernelKind::Decode | KernelKind::DecodeCombine)
    }
    /// The Hopper (wgmma) kind that plays this kind's role, if there is one (not for the preprocess).
    pub fn wgmma_kind(self) -> Option<KernelKind> {
        KernelKind::ALL.into_iter().find(|k| k.uses_wgmma() && k.role() == self.role())
    }
    /// The names of the block sizes of the rows a program owns (split over its warps) and of the rows it
    /// streams through the cp.async ring. dK/dV swaps them: it owns K/V rows (BLOCK_N) and streams Q (BLOCK_M).
    pub(crate) fn block_names(self) -> (&'static str, &'static str, &'static str) {
        match self.role() {
            KernelKind::BwdDkdv => ("BLOCK_N", "BLOCK_M", "key rows"),
            _ => ("BLOCK_M", "BLOCK_N", "query rows"),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
