//! `KernelSpec`: the one type that names a kernel specialization. Every rule about which
//! specializations exist lives in [`KernelSpec::new`]; a spec that validates compiles and runs correctly.

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
    /// The default forward on sm_90a (`KernelSpec::forward_kind`).
    FwdWs,
    /// fwd_ws made persistent (sm_90a only; fwd_ws's ABI plus a tile counter, same tiles, ping-pong only):
    /// one program per SM takes tile (head, BLOCK_M rows) c, then the next one a global counter hands out;
    /// causal tiles in L2-sized groups of heads, each group's heaviest first. The forward at HEAD_DIM 64 up
    /// to 4096 tokens and at 128 up to 2048. Its producer runs on across tiles, so the K/V ring never
    /// drains, and the next tile's Q loads while this one runs (`KernelSpec::q_buffers`): a tile's prologue
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
    /// (`KernelSpec::backward_fused_for`).
    BwdFusedUp,
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

/// A validated specialization. Construct it with [`KernelSpec::new`]; its fields are read-only.
/// Deserializing validates too: a spec read from a file obeys the same rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "SpecParams", into = "SpecParams")]
pub struct KernelSpec(SpecParams);

impl TryFrom<SpecParams> for KernelSpec {
    type Error = SpecError;
    fn try_from(p: SpecParams) -> Result<KernelSpec, SpecError> {
        KernelSpec::new(p)
    }
}

impl From<KernelSpec> for SpecParams {
    fn from(s: KernelSpec) -> SpecParams {
        s.0
    }
}

/// A rejected spec: the rule it breaks, in words that say how to fix it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid kernel spec: {0}")]
pub struct SpecError(pub String);

/// Head dims the swizzled tile layout supports: a row must hold a multiple of 8 chunks of 16 bytes.
pub const HEAD_DIMS: [u32; 2] = [64, 128];
/// Warps per program. 1 and 2 warps leave each thread so many copy addresses that ptxas spills.
pub const NUM_WARPS: [u32; 2] = [4, 8];
pub const MAX_ROWS_PER_WARP: u32 = 32;
/// K/V tile heights. ptxas spilled at 96 rows with only 168 registers in use (bench/NOTES.md), so only
/// the powers of two that the CI sweep assembles spill-free are admitted.
pub const BLOCK_NS: [u32; 4] = [16, 32, 64, 128];
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

/// From this many tokens the default backward at HEAD_DIM 128 on sm_90a is the fused one
/// (`KernelSpec::default_backward`); below, the three wgmma kernels (shorter lengths are not measured).
pub const FUSED_BACKWARD_MIN_TOKENS: usize = 1024;

/// Warps of the fused backward: 1 or 2 MMA warpgroups (HEAD_DIM 64 or 128), then the dQ writer warpgroup.
pub const FUSED_NUM_WARPS: [u32; 2] = [8, 12];
/// Registers a thread may use (the architectural limit of every supported target).
pub const MAX_REGISTERS: u32 = 255;
/// Registers the estimate reserves for addresses, loop counters, masks and softmax temporaries.
const REGISTER_OVERHEAD: u32 = 40;
/// The backward kernels' share of it: their per-row terms are fitted with the temporaries included.
const BACKWARD_REGISTER_OVERHEAD: u32 = 24;

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
    pub const ALL: [KernelKind; 12] = [
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
    ];

    pub fn parse(s: &str) -> Result<KernelKind, SpecError> {
        KernelKind::ALL
            .into_iter()
            .find(|k| k.name() == s.trim())
            .ok_or_else(|| SpecError(format!("kernel `{s}` is unknown: use one of fwd, fwd_wgmma, fwd_ws, fwd_ws_persistent, bwd_pre, bwd_dkdv, bwd_dq, bwd_dkdv_wgmma, bwd_dq_wgmma, bwd_fused, bwd_fused_atomic, bwd_fused_up")))
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
    /// The Hopper (wgmma) kind that plays this kind's role, if there is one (not for the preprocess).
    pub fn wgmma_kind(self) -> Option<KernelKind> {
        KernelKind::ALL.into_iter().find(|k| k.uses_wgmma() && k.role() == self.role())
    }
    /// The names of the block sizes of the rows a program owns (split over its warps) and of the rows it
    /// streams through the cp.async ring. dK/dV swaps them: it owns K/V rows (BLOCK_N) and streams Q (BLOCK_M).
    fn block_names(self) -> (&'static str, &'static str, &'static str) {
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

fn rule(ok: bool, msg: impl FnOnce() -> String) -> Result<(), SpecError> {
    if ok {
        Ok(())
    } else {
        Err(SpecError(msg()))
    }
}

impl KernelSpec {
    /// The one validation point. Each rule names the parameter, the limit and why it exists.
    pub fn new(p: SpecParams) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, num_warps: w, num_stages: ns, .. } = p;
        rule(HEAD_DIMS.contains(&d), || {
            format!("HEAD_DIM={d} is not supported: use one of {HEAD_DIMS:?} (a tile row must be a multiple of 8 chunks of 16 bytes for the bank-conflict-free swizzle)")
        })?;
        rule(p.stage == 1 || p.stage == 3, || {
            format!("STAGE={} is not a kernel-level stage: use 1 (non-causal) or 3 (causal), as in Triton's tutorial", p.stage)
        })?;
        if p.kind.warp_specialized_forward() {
            return KernelSpec::new_warp_specialized(p);
        }
        if p.kind.fuses_dq() {
            return KernelSpec::new_fused(p);
        }
        rule(NUM_WARPS.contains(&w), || format!("num_warps={w} is not supported: use one of {NUM_WARPS:?}"))?;
        if p.kind == KernelKind::BwdPre {
            let canonical = KernelSpec::backward_preprocess(p.arch, p.dtype, d);
            rule(p == canonical.0, || {
                let c = canonical.0;
                format!(
                    "bwd_pre takes only dtype, HEAD_DIM and arch (Δ does not depend on tiles or causality): use BLOCK_M={} BLOCK_N={} STAGE={} num_warps={} num_stages={} (KernelSpec::backward_preprocess)",
                    c.block_m, c.block_n, c.stage, c.num_warps, c.num_stages
                )
            })?;
            return Ok(canonical);
        }
        let spec = KernelSpec(p);
        if p.kind.uses_wgmma() {
            let (kind, role) = (p.kind.name(), p.kind.role().name());
            rule(p.arch == Arch::Sm90a, || format!("{kind} needs sm_90a (wgmma is an sm_90a instruction): use kernel {role} on {}", p.arch))?;
            let (res_name, _, rows) = p.kind.block_names();
            let res = spec.resident_rows();
            rule(res == 16 * w, || {
                format!("{kind}: {res_name}={res} must be 16 × num_warps={w} = {} (one warpgroup of 4 warps per 64 {rows}, 16 per warp)", 16 * w)
            })?;
        }
        let (res, strm) = (spec.resident_rows(), spec.streamed_rows());
        let (res_name, strm_name, rows) = p.kind.block_names();
        rule(res > 0 && res % (16 * w) == 0, || {
            format!("{res_name}={res} must be a multiple of 16 × num_warps={w} = {} (each warp owns whole m16 tiles of {rows})", 16 * w)
        })?;
        rule(res / w <= MAX_ROWS_PER_WARP, || {
            format!("{res_name}={res} gives each of num_warps={w} warps {} {rows}; at most {MAX_ROWS_PER_WARP} fit in registers: raise num_warps or lower {res_name}", res / w)
        })?;
        rule(BLOCK_NS.contains(&strm), || {
            format!("{strm_name}={strm} is not supported: use one of {BLOCK_NS:?} (the streamed rows are consumed in k16 steps; other heights spill)")
        })?;
        let threads = 32 * w;
        rule((strm * d / 8) % threads == 0, || {
            format!("{strm_name}={strm} × HEAD_DIM={d} must be a multiple of 256 × num_warps={w} = {} (each of the {threads} threads copies whole 16-byte chunks of every streamed tile): raise {strm_name} or lower num_warps", 256 * w)
        })?;
        rule(NUM_STAGES.contains(&ns), || {
            format!("num_stages={ns} must be in {}..={} (the depth of the cp.async ring of streamed blocks; 1 would leave nothing in flight)", NUM_STAGES.start(), NUM_STAGES.end())
        })?;
        spec.fits_shared_memory(&format!("lower num_stages or {strm_name}"))?;
        let regs = spec.register_estimate();
        rule(regs <= MAX_REGISTERS, || {
            format!("an estimated {regs} registers per thread ({}: accumulators, scores and fragments of {} rows × HEAD_DIM={d}, {strm_name}={strm}) exceed {MAX_REGISTERS}: it would spill; lower {strm_name} or give each warp fewer rows (more num_warps)", p.kind.name(), res / w)
        })?;
        Ok(spec)
    }

    /// The shared-memory rule: the kernel's layout within its target's limit; `fix` says what to lower.
    fn fits_shared_memory(&self, fix: &str) -> Result<(), SpecError> {
        let (smem, limit) = (self.shared_memory_bytes(), self.0.arch.shared_memory_limit());
        rule(smem <= limit, || format!("shared memory {smem} B ({}) exceeds the {limit} B limit of {}: {fix}", self.shared_memory_layout(), self.0.arch))
    }

    /// The rules of fwd_ws (after the common ones on HEAD_DIM and STAGE): a producer warpgroup plus 2 or 3
    /// consumer warpgroups of 64 query rows each; the TMA ring in shared memory; and the
    /// registers each consumer thread needs within what setmaxnreg can give it.
    fn new_warp_specialized(p: SpecParams) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, block_m: bm, block_n: bn, num_warps: w, num_stages: ns, .. } = p;
        let kind = p.kind.name();
        rule(p.arch == Arch::Sm90a, || format!("{kind} needs sm_90a (wgmma, TMA and setmaxnreg are sm_90a instructions): use kernel fwd on {}", p.arch))?;
        rule(WS_NUM_WARPS.contains(&w), || {
            format!("{kind}: num_warps={w} is not supported: use one of {WS_NUM_WARPS:?} (one producer warpgroup plus 2, 3 or 4 consumer warpgroups of 4 warps)")
        })?;
        rule(bm == 16 * (w - 4), || {
            format!("{kind}: BLOCK_M={bm} must be 64 × the {} consumer warpgroups of num_warps={w} = {} (one producer warpgroup, then 64 query rows per consumer)", (w - 4) / 4, 16 * (w - 4))
        })?;
        rule(BLOCK_NS.contains(&bn), || format!("{kind}: BLOCK_N={bn} is not supported: use one of {BLOCK_NS:?}"))?;
        rule(WS_NUM_STAGES.contains(&ns), || format!("num_stages={ns} must be in {}..={} (the depth of the TMA ring of K/V blocks)", WS_NUM_STAGES.start(), WS_NUM_STAGES.end()))?;
        rule(!p.kind.persistent() || ns >= 3, || {
            format!("{kind}: num_stages={ns}: the persistent kernel runs the ping-pong schedule, which needs 3 or more stages (use num_stages=3, or fwd_ws for 2)")
        })?;
        let spec = KernelSpec(p);
        spec.fits_shared_memory("lower num_stages or BLOCK_N")?;
        let (regs, budget) = (spec.register_estimate(), spec.registers().consumer);
        rule(regs <= budget, || {
            format!("{kind}: an estimated {regs} registers per consumer thread (HEAD_DIM={d}, BLOCK_N={bn}) exceed the {budget} that setmaxnreg gives each of {} consumer warpgroups: lower BLOCK_N or use fewer consumer warpgroups", (w - 4) / 4)
        })?;
        Ok(spec)
    }

    /// The rules of the fused backward (bwd_fused, bwd_fused_atomic; after the common ones on HEAD_DIM and
    /// STAGE): 1 or 2 MMA warpgroups of 64 key rows, each computing 64 of dQ's columns, plus the dQ writer
    /// warpgroup (lib/dq_fused.ll.tera); query blocks of 64 rows by TMA; shared memory; and the registers each
    /// MMA thread needs within what setmaxnreg gives it.
    fn new_fused(p: SpecParams) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, block_m: bm, block_n: bn, num_warps: w, num_stages: ns, .. } = p;
        let kind = p.kind.name();
        rule(p.arch == Arch::Sm90a, || format!("{kind} needs sm_90a (wgmma, TMA and bulk reductions are sm_90a instructions): use kernel bwd_dkdv and bwd_dq on {}", p.arch))?;
        rule(!p.kind.dq_up() || p.stage == Stage::Causal as u32, || format!("{kind} orders the causal programs' additions (STAGE=3): use bwd_fused for STAGE={}", p.stage))?;
        rule(FUSED_NUM_WARPS.contains(&w), || {
            format!("{kind}: num_warps={w} is not supported: use one of {FUSED_NUM_WARPS:?} (1 or 2 MMA warpgroups of 4 warps, then the dQ writer warpgroup)")
        })?;
        let mma_groups = (w - 4) / 4;
        rule(bn == 64 * mma_groups, || format!("{kind}: BLOCK_N={bn} must be 64 × the {mma_groups} MMA warpgroups of num_warps={w} = {} (64 key rows each)", 64 * mma_groups))?;
        rule(d == 64 * mma_groups, || {
            format!("{kind}: HEAD_DIM={d} needs {} MMA warpgroup(s) (each computes 64 of dQ's columns, one wgmma chain): use num_warps={} and BLOCK_N={d}", d / 64, 4 * (d / 64 + 1))
        })?;
        rule(bm == 64, || format!("{kind}: BLOCK_M={bm} must be 64 (dQ = dS·K is one wgmma of 64 query rows per block)"))?;
        rule(NUM_STAGES.contains(&ns), || format!("num_stages={ns} must be in {}..={} (the depth of the TMA ring of Q/dO blocks)", NUM_STAGES.start(), NUM_STAGES.end()))?;
        let spec = KernelSpec(p);
        spec.fits_shared_memory("lower num_stages")?;
        let (regs, budget) = (spec.register_estimate(), spec.registers().consumer);
        rule(regs <= budget, || format!("{kind}: an estimated {regs} registers per MMA thread (HEAD_DIM={d}, BLOCK_M={bm}) exceed the {budget} that each of its {mma_groups} MMA warpgroups has"))?;
        Ok(spec)
    }

    /// The fwd_wgmma spec that computes what this fwd_ws spec does without TMA (the same tiles, one
    /// warpgroup fewer), or fwd_wgmma's default where those tiles do not validate there; other specs as they are.
    pub fn without_warp_specialization(&self) -> KernelSpec {
        if !self.0.kind.warp_specialized_forward() {
            return *self;
        }
        let p = SpecParams { kind: KernelKind::FwdWgmma, num_warps: self.0.num_warps - 4, ..self.0 };
        KernelSpec::new(p)
            .or_else(|_| KernelSpec::default_of(KernelKind::FwdWgmma, p.arch, p.dtype, p.head_dim, self.causal()))
            .unwrap_or(*self)
    }

    /// Whether fwd_ws's consumers take turns on the tensor cores (FA3's ping-pong) with a software-pipelined
    /// loop: each turn issues S_j and then P_{j-1}·V_{j-1}, and the softmax of block j runs while that
    /// product does. Block j-1's slot is then held one step longer, so this needs 3+ stages (with 2 the
    /// producer could not load ahead); with 2 stages the consumers run independently, one block at a time.
    pub fn ping_pong(&self) -> bool {
        self.0.kind.warp_specialized_forward() && self.0.num_stages >= 3
    }

    /// The ping-pong tile computes S = Q·Kᵀ with Q's fragments in registers (wgmma RS, read once a tile)
    /// rather than from shared memory: the product then reads only K there, a third less at BLOCK_N 64.
    /// Two consumers only: with 3-4 (160 / 112 registers) Q's HEAD_DIM / 4 registers make ptxas spill.
    pub fn q_from_registers(&self) -> bool {
        self.ping_pong() && self.consumer_warpgroups() == 2
    }

    /// The ping-pong tile rescales lazily (FA4's; `LAZY_RESCALE_LOG2`): a row's m_i moves only when a block
    /// raises it by more than 2^8, so most blocks skip the quad max's shuffles, alpha's exp2 and acc·alpha.
    /// Measured against the eager update, A B A B on the anchors' timer (lazy-v2, cfg-ab): +3.6-7.3% at
    /// HEAD_DIM 128 (two consumers) and +1-10% on three and four consumers at 64, but 0.95-0.98× on two
    /// consumers at 64 (every 128×128 config at N = 1024 and 2048), so those keep the eager update.
    pub fn lazy_rescale(&self) -> bool {
        self.ping_pong() && (self.consumer_warpgroups() >= 3 || self.0.head_dim >= 128)
    }

    /// A causal masked block's eager softmax runs on the first half of the block when every row of the warp
    /// has the second half all masked (a vote; templates/lib/fwd_block.ll.tera, `half_vote`): consumer 0's
    /// diagonal block in a 128×128 tile on two consumers, half its exp2s, maxima, sums and compares.
    /// Measured A B B A on the anchors' timer (half-ab): 1.015× at HEAD_DIM 64 causal N = 1024 (two
    /// consumers, eager), level at 2048; with lazy rescaling, where it could only serve a tile's first
    /// block, 0.986-0.989× at HEAD_DIM 128 causal 2048 and 4096, so eager configs only.
    pub fn half_block_softmax(&self) -> bool {
        self.ping_pong() && self.causal() && !self.lazy_rescale()
    }

    /// The persistent forward runs across tiles (templates/fa2_fwd_ws_persistent.ll.tera): a tile's last turn
    /// issues its last P·V with an S_0, the next tile's, and its epilogue runs under that S_0. Measured
    /// against tiles that start with their own S_0 turn (xtile-ab, one call): +0.5-3.1% at HEAD_DIM 64 causal
    /// 1024, +0.6-1.4% at 2048-4096, +1.2-5.6% at HEAD_DIM 128 up to 2048 tokens.
    pub fn cross_tile(&self) -> bool {
        self.0.kind.persistent()
    }

    /// The cross-tile kernel's program-last tile issues an unused S_0 in its last turn (on its own last K
    /// slot), so that one copy of the last turn and the epilogue serves every tile; otherwise that tile has a
    /// second copy without the S_0. With two copies the HEAD_DIM 128 kernels' generation went over the 100 ms
    /// bound on the CI machine (106-120 ms; with one, 64-73 ms here). Measured in one call, two rounds
    /// (bench/results/2026-12-01-tail-latepack-ab): at HEAD_DIM 128 this kernel against tiles that start with
    /// their own S_0, +1.3-2.7% at 1024 and 2048 tokens; at HEAD_DIM 64 against the two copies, 0.987× and
    /// 0.991× causal 1024 and 2048 (each round lower), +0.6-0.9% non-causal. So HEAD_DIM 64 keeps its copies.
    pub fn single_tail(&self) -> bool {
        self.cross_tile() && self.0.head_dim >= 128
    }

    /// The causal ping-pong tile's last P·V runs over the first half of the block only when no row of the
    /// consumer's warpgroup keeps a column of its second half (consumer 0's diagonal block in a 128×128
    /// tile on two consumers): P is 0 there. A uniform branch inside the product's asm (the same for Q·Kᵀ,
    /// at half its width, made ptxas serialize the products in flight in every form tried: bench/NOTES.md).
    /// Measured in one call, three rounds each ahead (narrow-ab): 128×128 tiles +0.8% at HEAD_DIM 64 causal
    /// 1024 (every round), +2.2% at 128 causal 1024, +0.3% at 2048; 256×64 on four consumers (HEAD_DIM 64
    /// causal 2048) 0.996×, where its consumers 0-2 only halve a block that is all masked for them. So square
    /// tiles only.
    pub fn narrow_last_product(&self) -> bool {
        self.ping_pong() && self.causal() && self.0.block_m == self.0.block_n
    }

    /// In a causal ping-pong tile taller than its K/V blocks, each consumer warpgroup runs only the blocks its
    /// own 64 rows reach (`own_blocks` in templates/lib/pingpong.ll.tera): consumers 0-2 of a 256×64 tile
    /// skip 3, 2 and 1 blocks that are all masked for them, handing their ring slots back as the loop ends
    /// and taking empty turns so the ping-pong order holds. The tile's last turn issues the next tile's S_0,
    /// whose slot the producer refills only once every consumer has handed back the slot NUM_STAGES before
    /// it: hence NUM_STAGES >= the most blocks a consumer skips + 2 (with fewer, a skipping consumer would
    /// wait for that slot before its own last release). Measured in one build, two rounds (own-ab): 256×64×6
    /// +5.7% at HEAD_DIM 64 causal 1024, +2.7% at 2048, +1.2% at 4096; ×5 +3.0 / +1.0 / −0.3%; ×8 a further
    /// +1.5-3% at 1024 and 2048 (stages8-ab).
    pub fn own_blocks(&self) -> bool {
        // (checked in this order: only a ping-pong spec has BLOCK_N > 0 for certain)
        self.ping_pong() && self.causal() && self.0.block_m > self.0.block_n && {
            let most_skipped = (self.0.block_m - 64).div_ceil(self.0.block_n);
            self.0.num_stages >= most_skipped + 2
        }
    }

    /// The ping-pong tile computes its epilogue's row sums l_i, 1/l_i and M = m_i + log2(l_i) under its last
    /// P·V (they do not need it), with the reciprocal and log2 approximate and flush-to-zero (l_i >= 1: no
    /// IEEE or subnormal paths). Measured together against main's epilogue, two calls (tileboundary-ab,
    /// epi-split): +2.2-2.7% at HEAD_DIM 128 causal 1024, +0.4-1.3% at 2048, ±1% non-causal; but 0.94-0.95×
    /// at HEAD_DIM 64 causal 1024 (cross-tile), and either half alone lost 1-2% at 128 causal. HEAD_DIM 128.
    pub fn early_row_norm(&self) -> bool {
        self.ping_pong() && self.0.head_dim >= 128
    }

    /// The forward's Q buffers in shared memory: a persistent kernel loads the next tile's Q during the
    /// current tile, into a second buffer, or into the one buffer once the consumers have read their Q
    /// into registers (`q_from_registers`: they release it at the tile's start). 1 otherwise.
    pub fn q_buffers(&self) -> u32 {
        if self.0.kind.persistent() && !self.q_from_registers() {
            2
        } else {
            1
        }
    }

    /// Consumer warpgroups of a warp-specialized kernel (fwd_ws's consumers, the fused backward's MMA
    /// warpgroups; 0 for the others).
    pub fn consumer_warpgroups(&self) -> u32 {
        if self.0.kind.helper_warps() > 0 {
            self.0.num_warps / 4 - 1
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

    pub fn params(&self) -> &SpecParams {
        &self.0
    }
    pub fn kind(&self) -> KernelKind {
        self.0.kind
    }
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }
    pub fn head_dim(&self) -> u32 {
        self.0.head_dim
    }
    pub fn block_m(&self) -> u32 {
        self.0.block_m
    }
    pub fn block_n(&self) -> u32 {
        self.0.block_n
    }
    pub fn stage(&self) -> Stage {
        if self.0.stage == 3 {
            Stage::Causal
        } else {
            Stage::NonCausal
        }
    }
    pub fn causal(&self) -> bool {
        self.stage() == Stage::Causal
    }
    pub fn num_warps(&self) -> u32 {
        self.0.num_warps
    }
    pub fn num_stages(&self) -> u32 {
        self.0.num_stages
    }
    pub fn arch(&self) -> Arch {
        self.0.arch
    }
    pub fn threads(&self) -> u32 {
        32 * self.0.num_warps
    }
    /// Rows a program owns, split over its warps: query rows (forward, dQ) or K/V rows (dK/dV).
    pub fn resident_rows(&self) -> u32 {
        match self.0.kind.role() {
            KernelKind::BwdDkdv => self.0.block_n,
            _ => self.0.block_m,
        }
    }
    /// Rows of each block streamed through the cp.async ring: K/V rows (forward, dQ) or Q/dO rows (dK/dV).
    pub fn streamed_rows(&self) -> u32 {
        match self.0.kind.role() {
            KernelKind::BwdDkdv => self.0.block_m,
            _ => self.0.block_n,
        }
    }
    /// Resident rows each computing warp owns (a multiple of 16; a helper warpgroup's warps own none).
    pub fn rows_per_warp(&self) -> u32 {
        self.resident_rows() / self.mma_warps()
    }
    /// The warps that compute (all but a helper warpgroup: fwd_ws's producer, the fused backward's dQ writer).
    pub fn mma_warps(&self) -> u32 {
        self.0.num_warps - self.0.kind.helper_warps()
    }

    /// Resident tiles whose mma A fragments the loop reads: Q (forward), Q and dO (dQ), K and V (dK/dV).
    fn a_operands(&self) -> u32 {
        match self.0.kind {
            _ if self.0.kind.uses_wgmma() => 0, // read through descriptors
            KernelKind::Fwd => 1,
            _ => 2,
        }
    }

    /// Whether the resident tiles' A fragments stay in registers across the loop: yes while they take at
    /// most 32 registers (forward: 16 rows × HEAD_DIM 128 or 32 rows × 64; backward: 16 rows × 64 for
    /// both operands); beyond that they are re-read from shared memory each block, which frees the
    /// registers for the accumulators (and in the forward lets one K/V fragment feed two m16 tiles).
    pub fn q_in_registers(&self) -> bool {
        self.a_operands() > 0 && self.a_operands() * (self.rows_per_warp() / 16) * self.0.head_dim / 4 <= 32
    }

    /// Dynamic shared memory: the resident tiles plus num_stages slots of streamed tiles (dK/dV's slots
    /// also carry the block's M and Δ, one f32 each per row). wgmma kernels: every slot a multiple of
    /// 1024 B, and 1 KB more, with which the kernel aligns its tiles to 1024 B itself (128B-swizzle atoms).
    pub fn shared_memory_bytes(&self) -> u32 {
        let row = self.0.head_dim * self.0.dtype.bytes();
        let (res, strm, ns) = (self.resident_rows(), self.streamed_rows(), self.0.num_stages);
        let (resident, slot) = match self.0.kind.role() {
            KernelKind::Fwd => (res * row, 2 * strm * row),
            KernelKind::BwdDq => (2 * res * row, 2 * strm * row),
            KernelKind::BwdDkdv => (2 * res * row, 2 * strm * row + 8 * strm),
            _ => return 0,
        };
        if self.0.kind.warp_specialized_forward() {
            // and the mbarriers: Q full (persistent: full and empty per Q buffer), then K/V full and empty per slot
            // (persistent: and the two tiles the producer publishes to the consumers, two words each)
            let q_barriers = if self.0.kind.persistent() { 4 + 2 } else { 1 };
            self.q_buffers() * resident + ns * slot.next_multiple_of(1024) + 1024 + 8 * (q_barriers + 2 * ns)
        } else if self.0.kind.fuses_dq() {
            // and the 1 KB the kernel aligns its tile base with
            self.fused_layout().end + 1024
        } else if self.0.kind.uses_wgmma() {
            resident + ns * slot.next_multiple_of(1024) + 1024
        } else {
            resident + ns * slot
        }
    }

    /// The fused backward's shared memory (`KernelSpec::fused_layout`) with `buffers` staging buffers.
    fn fused_layout_with(&self, buffers: u32) -> FusedLayout {
        let row = self.0.head_dim * self.0.dtype.bytes();
        let (res, ns) = (self.resident_rows(), self.0.num_stages);
        let ds_tile = 2 * res * row + ns * self.slot_bytes();
        let staging = ds_tile + res * 128;
        let mbarriers = staging + buffers * (self.0.head_dim / 64) * 16384;
        FusedLayout { ds_tile, staging, mbarriers, end: mbarriers + 8 * ns }
    }

    /// The fused backward's shared memory, in bytes from the 1024-aligned tile base: the resident K and V,
    /// the ring, the dSᵀ tile (one 128-byte row of 64 queries per key row), per staging buffer a 64×64 f32
    /// piece per 64 columns of dQ (the bulk reductions' source), and the Q/dO ring's mbarriers
    /// (lib/tma_ring.ll.tera), one per slot.
    pub fn fused_layout(&self) -> FusedLayout {
        self.fused_layout_with(self.staging_buffers())
    }

    /// The fused backward's staging buffers: two where they fit (the MMA warpgroups fill one while the
    /// writer adds the other, so that a late turn on a lock does not stall them), else one (at HEAD_DIM 128
    /// with three stages: the writer has a step to read it before the MMA warpgroups write it again).
    pub fn staging_buffers(&self) -> u32 {
        if self.fused_layout_with(2).end + 1024 <= self.0.arch.shared_memory_limit() {
            2
        } else {
            1
        }
    }

    /// Whether the kernel keeps S of the next K/V block in flight during the softmax of the current one
    /// (FA3's intra-warpgroup overlap): fwd_wgmma with at least 3 stages (blocks j and j+1 resident while
    /// block j+2 loads); with 2 stages it runs S, softmax and P·V in turn.
    pub fn overlaps_softmax(&self) -> bool {
        self.0.kind == KernelKind::FwdWgmma && self.0.num_stages >= 3
    }

    /// Bytes of one ring slot (see `shared_memory_bytes`).
    pub fn slot_bytes(&self) -> u32 {
        let row = self.0.head_dim * self.0.dtype.bytes();
        let strm = self.streamed_rows();
        let slot = if self.0.kind.role() == KernelKind::BwdDkdv { 2 * strm * row + 8 * strm } else { 2 * strm * row };
        if self.0.kind.uses_wgmma() {
            slot.next_multiple_of(1024)
        } else {
            slot
        }
    }

    /// The shared-memory layout in words, for error messages.
    fn shared_memory_layout(&self) -> String {
        let (d, res, strm, ns) = (self.0.head_dim, self.resident_rows(), self.streamed_rows(), self.0.num_stages);
        match self.0.kind.role() {
            KernelKind::Fwd if self.0.kind.persistent() => format!("{} × Q {res}×{d} + num_stages={ns} × K/V {strm}×{d}", self.q_buffers()),
            KernelKind::Fwd => format!("Q {res}×{d} + num_stages={ns} × K/V {strm}×{d}"),
            KernelKind::BwdDq => format!("Q and dO {res}×{d} + num_stages={ns} × K/V {strm}×{d}"),
            KernelKind::BwdDkdv if self.0.kind.fuses_dq() => format!("K and V {res}×{d} + num_stages={ns} × (Q/dO {strm}×{d} + M/Δ {strm}) + dSᵀ {res}×{strm} + dQ staging 2 × 64×{d} f32"),
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
        let m_tiles = self.rows_per_warp() / 16;
        let (d, strm) = (self.0.head_dim, self.streamed_rows());
        let a_fragments = if self.q_in_registers() {
            self.a_operands() * m_tiles * d / 4
        } else if self.a_operands() == 0 {
            0
        } else {
            16
        };
        let (per_tile, overhead) = match self.0.kind {
            KernelKind::Fwd => (d / 2 + strm / 2, REGISTER_OVERHEAD),
            // Q is read through a descriptor: no fragments; S (BLOCK_N/2, twice when the next block's S is
            // in flight), O (D/2) and packed P (BLOCK_N/4)
            KernelKind::FwdWgmma => (d / 2 + strm / 2 + strm / 4 + if self.overlaps_softmax() { strm / 2 } else { 0 }, REGISTER_OVERHEAD),
            // fitted to ptxas 12.9 (consumer code; its largest register index + 1): D/2 + 3·BLOCK_N/4 + 17
            // without ping-pong (D128×128: 177, D64×64: 97), up to 29 with it (D64×128: 157, P of the
            // previous block stays live): overheads 24 and 32 bound them (tests/ptxas.rs sweeps the space)
            // (the persistent kind's consumers read their tile from shared memory: no more than fwd_ws's)
            KernelKind::FwdWs | KernelKind::FwdWsPersistent => (d / 2 + strm / 2 + strm / 4, if self.ping_pong() { 32 } else { 24 }),
            KernelKind::BwdDq => (d / 2 + 2 * strm, BACKWARD_REGISTER_OVERHEAD),
            KernelKind::BwdDkdv => (d + 2 * strm, BACKWARD_REGISTER_OVERHEAD),
            // wgmma backward: the accumulators, S (or Sᵀ) and dP (BLOCK/2 each) and their packed copies
            KernelKind::BwdDqWgmma => (d / 2 + strm + strm / 2 + 4, REGISTER_OVERHEAD),
            KernelKind::BwdDkdvWgmma => (d + strm + strm / 2, REGISTER_OVERHEAD),
            // dK, dV, Sᵀ and dPᵀ, then its 64-column chunk of dQ (32), less what the writer warpgroup holds
            // (locks, chains, the final dQ): fitted to ptxas 12.9
            KernelKind::BwdFused | KernelKind::BwdFusedAtomic | KernelKind::BwdFusedUp => (d + strm + 24, BACKWARD_REGISTER_OVERHEAD),
            KernelKind::BwdPre => (0, 0),
        };
        let in_flight = if self.0.kind.uses_wgmma() { 0 } else { strm * d / 256 };
        m_tiles * per_tile + a_fragments + in_flight + overhead
    }

    /// The module's second entry, which the runtime launches after the kernel (the fused kinds: dQ =
    /// sm_scale · the chains' partial sums, docs/ABI.md), if the kind has one.
    pub fn dq_sum_entry(&self) -> Option<String> {
        self.kind().fuses_dq().then(|| format!("{}_dq_sum", self.name()))
    }

    /// The kernel's symbol, encoding every parameter: fa2_fwd_bf16_d128_st3_bm128_bn64_w8_ns3_sm90a.
    pub fn name(&self) -> String {
        let p = &self.0;
        format!(
            "fa2_{}_{}_d{}_st{}_bm{}_bn{}_w{}_ns{}_{}",
            p.kind.name(),
            p.dtype.name(),
            p.head_dim,
            p.stage,
            p.block_m,
            p.block_n,
            p.num_warps,
            p.num_stages,
            p.arch.name().replace('_', "")
        )
    }

    /// Launch grid for a problem: (cdiv(N_CTX, resident rows), Z·H, 1), i.e. cdiv(N_CTX, BLOCK_M) for
    /// the forward, preprocess and dQ kernels and cdiv(N_CTX, BLOCK_N) for dK/dV. A persistent kernel's
    /// programs take tiles in turn: one program per tile up to `programs` (the SM count: one resident
    /// program per SM), on grid x.
    pub fn grid(&self, z: u32, h: u32, n_ctx: u32, programs: u32) -> (u32, u32, u32) {
        let (blocks, heads) = (n_ctx.div_ceil(self.resident_rows()), z * h);
        if self.0.kind.persistent() {
            ((blocks * heads).clamp(1, programs.max(1)), 1, 1)
        } else {
            (blocks, heads, 1)
        }
    }

    /// The default forward for a target, dtype, head dim and causality: on sm_90a a wgmma kernel (`forward_kind`),
    /// which beat the best mma.sync config on every measured row (bench/results/2026-11-30-wgmma-v1),
    /// elsewhere the mma.sync one (see `default_of`).
    pub fn default_for(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<KernelSpec, SpecError> {
        KernelSpec::default_forward(arch, dtype, head_dim, causal, usize::MAX)
    }

    /// The default forward for a problem with `n_ctx` tokens (`default_for` is the one for long sequences).
    pub fn default_forward(arch: Arch, dtype: DType, head_dim: u32, causal: bool, n_ctx: usize) -> Result<KernelSpec, SpecError> {
        KernelSpec::default_at(KernelSpec::forward_kind(arch, head_dim, causal, n_ctx), arch, dtype, head_dim, causal, n_ctx)
    }

    /// The kind of the default forward: on sm_90a the warp-specialized fwd_ws, except at HEAD_DIM 64 up to
    /// 4096 tokens, where its persistent form runs (a tile's prologue and epilogue hide under the other
    /// tiles' products, and the tiles come from a global counter, so no program idles while another has
    /// several left): non-causal at N = 1024 448-455 TFLOP/s on 256-row tiles against fwd_ws's 393-401;
    /// causal on 128-row tiles in L2-sized head groups 319 / 388 at 1024 / 2048 against 283 / 331 before
    /// (fwd_wgmma, then 256-row tiles) and fwd_ws's 245 / 349 (persistent-w20, persistent-landed,
    /// persistent-l2); at 4096 see `forward_tiles`; and at HEAD_DIM 128 up to 2048 tokens, on fwd_ws's own
    /// 128×128 tiles (which fit once Q is read into registers and needs one buffer): 1.056 / 1.026× fwd_ws
    /// at 1024 (non-causal / causal), 1.029 / 1.017× at 2048, in alternating order (order-ab); at 4096
    /// +1% non-causal, causal within the call's drift (qbufs-ab). Elsewhere fwd.
    pub fn forward_kind(arch: Arch, head_dim: u32, _causal: bool, n_ctx: usize) -> KernelKind {
        match (arch.has_wgmma(), head_dim) {
            (false, _) => KernelKind::Fwd,
            (true, 64) if n_ctx <= 4096 => KernelKind::FwdWsPersistent,
            (true, 128) if n_ctx <= 2048 => KernelKind::FwdWsPersistent,
            (true, _) => KernelKind::FwdWs,
        }
    }

    /// The mma.sync forward's default tiles: the best measured on the H200 with rotated random inputs
    /// (bench/results/2026-11-30-fwd-mma-v5.jsonl), within every target's limits.
    /// HEAD_DIM 64: 128×64 tiles, 4 warps of 32 rows, 3 stages (255 registers, 64 KB).
    /// HEAD_DIM 128: 32 rows per warp with Q re-read from shared memory (each K/V fragment then feeds two
    /// m16 tiles) and BLOCK_N 32, 3 stages; non-causal with 8 warps (256 rows: K/V tiles shared by twice the
    /// rows, +3-5% at N >= 4096), causal with 4 warps (128 rows: the diagonal's short programs balance
    /// better, +4-15%). On sm_86/sm_89 (99 KB) the 256-row tile (112 KB) does not fit: 4 warps there too.
    /// The wgmma forward's: two warpgroups (128 query rows), 2 stages (S, softmax and P·V in turn: the
    /// 3-stage overlap measured 0-31% slower), BLOCK_N 64 at HEAD_DIM 64 and 128 at 128 (+7-12% over 64
    /// there; at 64 the wider block lost 13%).
    /// The persistent forward's depend on the length `n_ctx`.
    fn forward_tiles(kind: KernelKind, arch: Arch, head_dim: u32, causal: bool, n_ctx: usize) -> (u32, u32, u32, u32) {
        let small_smem = arch.shared_memory_limit() < 160_000;
        match (kind, head_dim) {
            (KernelKind::FwdWgmma, 64) => (128, 64, 8, 2),
            (KernelKind::FwdWgmma, _) => (128, 128, 8, 2),
            // Ping-pong (from 3 stages): on two consumer warpgroups at HEAD_DIM 128, +3-12% over the plain
            // schedule (wholeprog-v8); on three at 64 (FA3's 192×128), +2-11% over two and over three without
            // it, a fourth slot +0.5-3% at N = 16384 (verify-v9)
            (KernelKind::FwdWs, 64) => (192, 128, 16, 4),
            // persistent, HEAD_DIM 64: non-causal, four consumer warpgroups of 64 rows (256-row tiles: 1024
            // rows are four whole tiles) on 64-row K/V blocks (their 112 registers hold no wider S), 6 slots.
            // Causal on the same tiles, each consumer running only the blocks its rows reach (`own_blocks`,
            // which needs 5+ slots here): up to 2048 tokens with 8 slots (6 slots: +0.3-1.3% at 1024 over two
            // consumers on 128×128 and +0.2-1.9% at 2048 over 4 slots without it, own-ab; 8 slots: +1.5-3%
            // over 6 at 1024 and 2048, stages8-ab); from 2049, 4 slots without it (+1% over 6 with it at
            // 4096, and level with 8; 256×64 was +3-6% over fwd_ws 192×128 there: dyn-ab, mask-ab2). From
            // 1025 tokens non-causal: FA3's 192×128 (+2% over fwd_ws at 4096); from 8192 fwd_ws is ahead
            // again (see `forward_kind`). Non-causal keeps 6 slots (8 lost 1-5%: stages8-ab)
            (KernelKind::FwdWsPersistent, 64) if causal && n_ctx <= 2048 => (256, 64, 20, 8),
            (KernelKind::FwdWsPersistent, 64) if causal => (256, 64, 20, 4),
            (KernelKind::FwdWsPersistent, 64) if n_ctx <= 1024 => (256, 64, 20, 6),
            (KernelKind::FwdWsPersistent, 64) => (192, 128, 16, 4),
            (KernelKind::FwdWs, _) => (128, 128, 12, 3),
            // fwd_ws's tiles: with Q in registers one Q buffer is enough, and three 128-row K/V slots fit
            // beside it (two Q buffers would not); 128×64 was 0.88-0.99× fwd_ws (sweep-v1)
            (KernelKind::FwdWsPersistent, _) => (128, 128, 12, 3),
            (_, 64) => (128, 64, 4, 3),
            _ if causal || small_smem => (128, 32, 4, 3),
            _ => (256, 32, 8, 3),
        }
    }

    /// The default spec of any kernel kind (see `default_for`, `backward_defaults`, `backward_preprocess`);
    /// where it depends on the length (the persistent forward), the one for the shortest sequences.
    pub fn default_of(kind: KernelKind, arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<KernelSpec, SpecError> {
        KernelSpec::default_at(kind, arch, dtype, head_dim, causal, 1)
    }

    /// The default spec of any kernel kind for sequences of `n_ctx` tokens.
    pub fn default_at(kind: KernelKind, arch: Arch, dtype: DType, head_dim: u32, causal: bool, n_ctx: usize) -> Result<KernelSpec, SpecError> {
        match kind {
            KernelKind::Fwd | KernelKind::FwdWgmma | KernelKind::FwdWs | KernelKind::FwdWsPersistent => {
                let (block_m, block_n, num_warps, num_stages) = KernelSpec::forward_tiles(kind, arch, head_dim, causal, n_ctx);
                KernelSpec::new(SpecParams { kind, dtype, head_dim, block_m, block_n, stage: if causal { 3 } else { 1 }, num_warps, num_stages, arch })
            }
            KernelKind::BwdPre => KernelSpec::new(*KernelSpec::backward_preprocess(arch, dtype, head_dim).params()),
            KernelKind::BwdDkdv => Ok(KernelSpec::backward_mma_sync(arch, dtype, head_dim, causal)?.dkdv),
            KernelKind::BwdDq => KernelSpec::backward_mma_sync(arch, dtype, head_dim, causal)?.dq.ok_or_else(|| SpecError("bwd_dq: no mma.sync dQ kernel".into())),
            KernelKind::BwdDkdvWgmma => Ok(KernelSpec::backward_wgmma(arch, dtype, head_dim, causal)?.dkdv),
            KernelKind::BwdDqWgmma => KernelSpec::backward_wgmma(arch, dtype, head_dim, causal)?.dq.ok_or_else(|| SpecError("bwd_dq_wgmma: no wgmma dQ kernel".into())),
            KernelKind::BwdFused => KernelSpec::backward_fused(arch, dtype, head_dim, causal).map(|b| b.dkdv),
            KernelKind::BwdFusedAtomic => KernelSpec::backward_fused_atomic(arch, dtype, head_dim, causal).map(|b| b.dkdv),
            KernelKind::BwdFusedUp => KernelSpec::backward_fused_up(arch, dtype, head_dim, causal).map(|b| b.dkdv),
        }
    }

    /// The backward preprocess (Δ = rowsum(dO ⊙ O)) for a target, dtype and head dim: 64 rows per program,
    /// 4 warps; its other parameters are fixed (it has no tiles to tune and does not depend on causality).
    pub fn backward_preprocess(arch: Arch, dtype: DType, head_dim: u32) -> KernelSpec {
        KernelSpec(SpecParams { kind: KernelKind::BwdPre, dtype, head_dim, block_m: 64, block_n: 0, stage: 1, num_warps: 4, num_stages: 1, arch })
    }

    /// The default backward kernels for a target, dtype, head dim and causality, for long sequences (see
    /// `default_backward`).
    pub fn backward_defaults(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        KernelSpec::default_backward(arch, dtype, head_dim, causal, usize::MAX)
    }

    /// The default backward kernels for a problem with `n_ctx` tokens. On sm_90a at HEAD_DIM 128 from
    /// `FUSED_BACKWARD_MIN_TOKENS`: Δ + the deterministic fused kernel and its dQ sum pass
    /// (`backward_fused_for`: bwd_fused, or causal bwd_fused_up), 1.30-1.62× the three wgmma kernels at
    /// N = 1024, 4096 and 16384 (bench/results/2026-11-30-landed-v2; at N = 1024 it was 0.82-0.92× them
    /// before the sum pass, whose programs no longer write dQ); at HEAD_DIM 64 0.5-0.8×, so there the three
    /// wgmma kernels (`backward_wgmma`), which also run where the driver cannot describe Q or dO for TMA.
    /// Elsewhere the mma.sync ones (`backward_mma_sync`).
    pub fn default_backward(arch: Arch, dtype: DType, head_dim: u32, causal: bool, n_ctx: usize) -> Result<BackwardSpecs, SpecError> {
        if arch.has_wgmma() && head_dim == 128 && n_ctx >= FUSED_BACKWARD_MIN_TOKENS {
            KernelSpec::backward_fused_for(arch, dtype, head_dim, causal)
        } else if arch.has_wgmma() {
            KernelSpec::backward_wgmma(arch, dtype, head_dim, causal)
        } else {
            KernelSpec::backward_mma_sync(arch, dtype, head_dim, causal)
        }
    }

    /// The mma.sync backward kernels (every target): the best of five measured
    /// on the H200 (bench/results/2026-11-30-bwd-v2.jsonl). 4-warp programs win (+1-14% over the seed's
    /// 8-warp shape): at ≤ 255 registers two fit on an SM, so one's loads hide under the other's math.
    /// HEAD_DIM 128: dK/dV owns 64 key rows (16 per warp) and streams 32 query rows; dQ owns 64 query rows
    /// and streams 32 key rows. HEAD_DIM 64 non-causal: 32 rows per warp (each K/V or Q/dO fragment then
    /// feeds two m16 tiles): dK/dV 128 key rows × 16-row query blocks, dQ 128 query rows × 32-row key
    /// blocks; causal: dK/dV 64 × 32, dQ 64 × 64 (shorter programs balance the diagonal). 3 stages; every
    /// default fits every target's shared memory (at most 82688 B).
    pub fn backward_mma_sync(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        let ((dkdv_m, dkdv_n), (dq_m, dq_n)) = match (head_dim, causal) {
            (64, false) => ((16, 128), (128, 32)),
            (64, true) => ((32, 64), (64, 64)),
            _ => ((32, 64), (64, 32)),
        };
        let stage = if causal { 3 } else { 1 };
        let kernel = |kind, block_m, block_n| KernelSpec::new(SpecParams { kind, dtype, head_dim, block_m, block_n, stage, num_warps: 4, num_stages: 3, arch });
        Ok(BackwardSpecs {
            preprocess: KernelSpec::backward_preprocess(arch, dtype, head_dim),
            dkdv: kernel(KernelKind::BwdDkdv, dkdv_m, dkdv_n)?,
            dq: Some(kernel(KernelKind::BwdDq, dq_m, dq_n)?),
        })
    }

    /// The backward on wgmma (sm_90a): the autotuner's most frequent winners over the 12 anchor rows
    /// (bench/results/2026-11-30-hopper-v2, 3-13% over the first sweep's picks). One-warpgroup programs (two
    /// or more per SM, so one's loads hide under another's math) except the non-causal HEAD_DIM 128 dQ;
    /// dK/dV owns 64 key rows and streams 64 query rows at HEAD_DIM 64 (32 at 128: dK and dV take 128
    /// registers there); dQ owns 64 query rows and streams 64 key rows (non-causal HEAD_DIM 128: 128 rows,
    /// 3 stages); 2 stages.
    pub fn backward_wgmma(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        let stage = if causal { 3 } else { 1 };
        let kernel = |kind, (block_m, block_n, num_warps, num_stages)| KernelSpec::new(SpecParams { kind, dtype, head_dim, block_m, block_n, stage, num_warps, num_stages, arch });
        let (dkdv, dq) = match (head_dim, causal) {
            (64, _) => ((64, 64, 4, 2), (64, 64, 4, 2)),
            (_, true) => ((32, 64, 4, 2), (64, 64, 4, 2)),
            _ => ((32, 64, 4, 2), (128, 64, 8, 3)),
        };
        Ok(BackwardSpecs {
            preprocess: KernelSpec::backward_preprocess(arch, dtype, head_dim),
            dkdv: kernel(KernelKind::BwdDkdvWgmma, dkdv)?,
            dq: Some(kernel(KernelKind::BwdDqWgmma, dq)?),
        })
    }

    /// The fused backward on wgmma (sm_90a): Δ, then one kernel for dK, dV and dQ (`KernelKind::BwdFused`).
    /// Query blocks of 64 rows; HEAD_DIM 128: two warpgroups of 64 key rows (each warpgroup then computes
    /// 64 of dQ's 128 columns: 32 registers), HEAD_DIM 64: one. The default at HEAD_DIM 128 (see
    /// `backward_defaults`).
    pub fn backward_fused(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        KernelSpec::backward_fused_of(KernelKind::BwdFused, arch, dtype, head_dim, causal)
    }

    /// The deterministic fused backward: causal bwd_fused_up, else bwd_fused. With the final sums in a pass
    /// of their own (sumpass-v1), bwd_fused_up measured 1.02-1.36× bwd_fused at causal 4096-16384 (at 4096
    /// the waits in line of bwd_fused's short programs, at 8192-16384 none of its programs waits on a line
    /// at all); before that pass, program 0, which wrote every block's dQ, made it 0.87-0.93× at 8192-16384
    /// (up-v1).
    pub fn backward_fused_for(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        if causal {
            KernelSpec::backward_fused_up(arch, dtype, head_dim, causal)
        } else {
            KernelSpec::backward_fused(arch, dtype, head_dim, causal)
        }
    }

    /// `backward_fused` with the additions in the order of the causal programs' visits
    /// (`KernelKind::BwdFusedUp`; causal only).
    pub fn backward_fused_up(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        KernelSpec::backward_fused_of(KernelKind::BwdFusedUp, arch, dtype, head_dim, causal)
    }

    /// `backward_fused` with dQ added by atomics (`KernelKind::BwdFusedAtomic`; not deterministic).
    pub fn backward_fused_atomic(arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        KernelSpec::backward_fused_of(KernelKind::BwdFusedAtomic, arch, dtype, head_dim, causal)
    }

    fn backward_fused_of(kind: KernelKind, arch: Arch, dtype: DType, head_dim: u32, causal: bool) -> Result<BackwardSpecs, SpecError> {
        // HEAD_DIM 128: two MMA warpgroups over 128 keys, HEAD_DIM 64: one; then the dQ writer warpgroup.
        // Two stages: the writer's double-buffered staging leaves no room for a third at HEAD_DIM 128 (with
        // the TMA ring two did as well as three, fused-tma-v2)
        let (num_warps, num_stages) = if head_dim == 128 { (12, 2) } else { (8, 2) };
        let p = SpecParams { kind, dtype, head_dim, block_m: 64, block_n: head_dim, stage: if causal { 3 } else { 1 }, num_warps, num_stages, arch };
        Ok(BackwardSpecs { preprocess: KernelSpec::backward_preprocess(arch, dtype, head_dim), dkdv: KernelSpec::new(p)?, dq: None })
    }

    /// The default set that `flashgen emit --defaults` generates: for sm_80 and sm_90a, bf16 and fp16,
    /// HEAD_DIM 64 and 128, STAGE 1 and 3: the default forward and the default backward kernels (on sm_90a
    /// the wgmma kinds; with fwd_ws, also its fwd_wgmma fallback, and the short- and medium-length forwards
    /// (1024 and 4096 tokens) where they differ; and the fused backwards, which FLASHGEN_BACKWARD=fused or
    /// fused-atomic selects, and the default takes at HEAD_DIM 128 from 1024 tokens).
    pub fn default_set() -> Vec<KernelSpec> {
        let mut out = Vec::new();
        for arch in [Arch::Sm80, Arch::Sm90a] {
            for dtype in [DType::Bf16, DType::F16] {
                for head_dim in HEAD_DIMS {
                    for causal in [false, true] {
                        // the forwards of long, medium and short sequences, and what runs when the driver cannot
                        // describe a layout for TMA
                        let at = |n| KernelSpec::default_forward(arch, dtype, head_dim, causal, n).expect("default specs validate");
                        let forwards = [at(usize::MAX), at(4096), at(1024)];
                        for forward in forwards.into_iter().chain(forwards.map(|f| f.without_warp_specialization())) {
                            if !out.contains(&forward) {
                                out.push(forward);
                            }
                        }
                        let b = KernelSpec::backward_defaults(arch, dtype, head_dim, causal).expect("default specs validate");
                        let mut backward = if causal { vec![] } else { vec![b.preprocess] };
                        backward.push(b.dkdv);
                        backward.extend(b.dq);
                        if arch.has_wgmma() {
                            // the three wgmma kernels run where the default is fused and TMA cannot describe
                            // an operand, or on request (FLASHGEN_BACKWARD=split); the fused kinds on request
                            let split = KernelSpec::backward_wgmma(arch, dtype, head_dim, causal).expect("default specs validate");
                            backward.push(split.dkdv);
                            backward.extend(split.dq);
                            backward.push(KernelSpec::backward_fused(arch, dtype, head_dim, causal).expect("default specs validate").dkdv);
                            backward.push(KernelSpec::backward_fused_atomic(arch, dtype, head_dim, causal).expect("default specs validate").dkdv);
                            if causal {
                                backward.push(KernelSpec::backward_fused_up(arch, dtype, head_dim, causal).expect("default specs validate").dkdv);
                            }
                        }
                        for s in backward {
                            if !out.contains(&s) {
                                out.push(s);
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

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
