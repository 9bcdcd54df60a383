//! `plan`: the one place that chooses which kernels a problem runs — the defaults tables (spec::defaults),
//! the tuned results the caller has (`Tuned`), and the fallbacks for layouts TMA cannot describe. The
//! runtime's calls, `flashgen emit --defaults`, `check`, `bench` and `autotune` all ask it.

use crate::reference::Window;
use crate::spec::defaults::{self, BACKWARD_KINDS, FORWARD_KINDS};
use crate::spec::{Arch, BackwardSpecs, DType, Features, KernelKind, KernelSpec, Modifiers, SpecError, SpecParams, DECODE_HEAD_DIMS, HEAD_DIMS};

/// What is computed: the attention problem as the kernel choice sees it (the heads and the batch are
/// runtime geometry: they choose nothing but the autotuner's inputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Problem {
    pub dtype: DType,
    pub head_dim: u32,
    pub causal: bool,
    /// Query tokens per sequence (packed sequences: the longest). The tables' lengths are these.
    pub seqlen: usize,
    /// Key tokens per sequence (packed sequences: the longest).
    pub seqlen_k: usize,
    /// Packed variable-length sequences (cu_seqlens).
    pub varlen: bool,
    /// A causal diagonal aligned bottom-right when lengths differ (FlashAttention's), else top-left.
    pub bottom_right: bool,
    /// A sliding window around that diagonal (a bounded right side makes the kernel causal, shifted).
    pub window: Window,
    /// Softcap on the scaled scores.
    pub softcap: bool,
    /// A score_mod and/or mask_mod compiled into the kernels (`crate::mods`).
    pub modifiers: Option<Modifiers>,
    /// V's head dim where it differs from Q's and K's (`Features::value_dim`).
    pub value_dim: Option<u32>,
}

impl Problem {
    /// Sequences of `seqlen` queries and as many keys.
    pub fn new(dtype: DType, head_dim: u32, causal: bool, seqlen: usize) -> Problem {
        Problem { dtype, head_dim, causal, seqlen, seqlen_k: seqlen, varlen: false, bottom_right: true, window: Window::UNBOUNDED, softcap: false, modifiers: None, value_dim: None }
    }

    /// What the score and mask rules add beyond causal: a window, softcap or modifiers (fwd_ws and the
    /// wgmma backward pair only, so far).
    pub fn modified(&self) -> bool {
        !self.window.is_unbounded() || self.softcap || self.modifiers.is_some()
    }

    /// What the problem needs of its kernels beyond fixed-length attention: packed sequences, and the guard
    /// for rows that see no key (causal bottom-right with more queries than keys; packed sequences, whose
    /// lengths only the GPU knows).
    pub fn features(&self) -> Features {
        let window = !self.window.is_unbounded();
        let starved = self.causal && (self.varlen || (self.bottom_right && self.seqlen > self.seqlen_k));
        let value_dim = self.value_dim.filter(|&dv| dv != self.head_dim);
        Features { varlen: self.varlen, empty_rows: starved, window, softcap: self.softcap, modifiers: self.modifiers, value_dim }
    }

    /// Whether the fused backward can run this problem's rules beyond causal: softcap and a score_mod
    /// (where S is named, as in the pair), a window only causal (bwd_fused_up's key blocks visit the window's
    /// query blocks, fixed lengths or packed); not a mask_mod (the fused kernels' order of dQ additions counts on
    /// every query block the causal rule leaves to a key block).
    pub fn modifiers_fuse(&self) -> bool {
        let masked = self.modifiers.is_some_and(|m| m.mask().is_some());
        !masked && (self.window.is_unbounded() || self.causal)
    }

    /// The problem with a window (and softcap) as its kernels take it (`kernel_window`): the causal flag
    /// is the kernel's.
    pub fn with_window(self, window: Window, softcap: bool) -> Problem {
        let (causal, window) = kernel_window(self.causal, window);
        Problem { causal, window, softcap, ..self }
    }


}

/// A call's causality and window as the kernels take them: a causal call's window ends at the diagonal
/// (right bound 0); a bounded right side makes the kernel causal, its diagonal shifted by the bound
/// (WINDOW_RIGHT); a window left with no bound on either side is none (a causal kernel, or a plain one).
pub fn kernel_window(causal: bool, window: Window) -> (bool, Window) {
    let right = if causal { Some(0) } else { window.right };
    let window = match (window.left, right) {
        (None, Some(0)) | (None, None) => Window::UNBOUNDED,
        (left, right) => Window { left, right },
    };
    (causal || right.is_some(), window)
}

/// Which backward runs where the GPU has wgmma (FLASHGEN_BACKWARD=default|split|fused|fused-atomic).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BackwardPath {
    /// The table's choice (`BACKWARD_KINDS`): fused at HEAD_DIM 128 from 1024 tokens, else three kernels.
    #[default]
    Default,
    /// Δ, dK/dV and dQ as three wgmma kernels.
    Split,
    /// Δ + the deterministic fused kernel (causal: bwd_fused_up).
    Fused,
    /// Δ + the fused kernel adding dQ in arrival order (not deterministic).
    FusedAtomic,
}

impl BackwardPath {
    pub const ALL: [BackwardPath; 4] = [BackwardPath::Default, BackwardPath::Split, BackwardPath::Fused, BackwardPath::FusedAtomic];

    /// Whether the path has kernels for HEAD_DIM `head_dim`: the fused kernels compute dQ in 64-column chunks,
    /// one MMA warpgroup each, so at most two (HEAD_DIM to 128; 32 and 96 on 64's and 128's tiles).
    pub fn serves(self, head_dim: u32) -> bool {
        !matches!(self, BackwardPath::Fused | BackwardPath::FusedAtomic) || head_dim.next_multiple_of(64) <= 128
    }

    pub fn parse(s: &str) -> Result<BackwardPath, SpecError> {
        match s.trim() {
            "default" | "" => Ok(BackwardPath::Default),
            "split" => Ok(BackwardPath::Split),
            "fused" => Ok(BackwardPath::Fused),
            "fused-atomic" => Ok(BackwardPath::FusedAtomic),
            other => Err(SpecError(format!("backward path `{other}` is unknown: use default, split (three kernels), fused (deterministic) or fused-atomic"))),
        }
    }
}

/// How the caller wants the kernels chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Use the Hopper kernels (wgmma, TMA) where the target has them; off: the mma.sync kernels everywhere.
    pub wgmma: bool,
    pub backward: BackwardPath,
    /// The fused backward's independent chains of dQ additions (1..=8), None for the kind's default.
    pub dq_chains: Option<u32>,
}

impl Default for PlanOptions {
    fn default() -> PlanOptions {
        PlanOptions { wgmma: true, backward: BackwardPath::Default, dq_chains: None }
    }
}

/// Tuned configs the caller knows (the runtime's autotune store); `NoTuning` for the defaults alone.
pub trait Tuned {
    /// The tuned spec of `kind` for `problem` on `arch`, if there is one.
    fn winner(&self, kind: KernelKind, arch: Arch, problem: &Problem) -> Result<Option<KernelSpec>, String>;
}

/// The defaults alone.
pub struct NoTuning;

impl Tuned for NoTuning {
    fn winner(&self, _: KernelKind, _: Arch, _: &Problem) -> Result<Option<KernelSpec>, String> {
        Ok(None)
    }
}

/// The kernels one problem runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub forward: KernelSpec,
    /// What runs instead of a warp-specialized forward when TMA cannot describe Q, K or V (a broadcast
    /// head's stride 0): the same tiles on fwd_wgmma's cp.async loads where they validate, else its default.
    /// Equal to `forward` for the other kinds.
    pub forward_without_tma: KernelSpec,
    pub backward: BackwardSpecs,
    /// What runs instead of the default fused backward when TMA cannot describe Q or dO: the three-kernel
    /// pass. None where the backward needs no TMA, or was chosen explicitly (then such a layout is an error).
    pub backward_without_tma: Option<BackwardSpecs>,
    /// The fused backward's chains of dQ additions: bwd_fused_atomic 1; by default bwd_fused 2 (its programs
    /// meet each block together and wait in line; two lines were 1.02-1.15× one, overlap-ab) and
    /// bwd_fused_up 1 (its programs meet a block one after another: 0.91-0.99× at 2, finalize-ab2; and
    /// always 1 where it folds its key blocks).
    pub dq_chains: u32,
}

/// The implementation family the options select on a target.
fn hopper(arch: Arch, options: &PlanOptions) -> bool {
    options.wgmma && arch.has_wgmma()
}

/// The tuned spec of `kind` when the caller has one, else the table's, with the problem's features.
fn chosen(kind: KernelKind, arch: Arch, problem: &Problem, tuned: &dyn Tuned) -> Result<KernelSpec, SpecError> {
    // (the tuner's keys have no window or softcap: their winners were timed without them, and may be tiles
    // that cannot take them, so those problems run the table's)
    let winner = if problem.modified() { None } else { tuned.winner(kind, arch, problem).map_err(SpecError)? };
    let spec = match winner {
        Some(spec) => spec,
        None if problem.modified() => defaults::modified_spec(kind, arch, problem.dtype, problem.head_dim, problem.causal, problem.seqlen)?,
        None => defaults::spec(kind, arch, problem.dtype, problem.head_dim, problem.causal, problem.seqlen)?,
    };
    with_features(&spec, problem.features())
}

/// `spec` computing `features`. A table row's persistent tiles need every tile to take the same steps:
/// with packed sequences or a window the tile runs one program per tile instead, without the switches
/// that only a persistent grid's programs take (`dq_sum_rounds`, `prefetch_next_tile`, `early_next_tile`).
pub fn with_features(spec: &KernelSpec, features: Features) -> Result<KernelSpec, SpecError> {
    let mut overrides = *spec.schedule_overrides();
    if spec.schedule().persistent_tiles && features.vary_tile_steps() {
        overrides.persistent_tiles = None;
        overrides.dq_sum_rounds = None;
        overrides.prefetch_next_tile = None;
        overrides.early_next_tile = None;
    }
    KernelSpec::with_features(*spec.params(), overrides, features)
}

/// The forward kind a problem runs (`FORWARD_KINDS` on Hopper, fwd elsewhere).
pub fn forward_kind(arch: Arch, problem: &Problem, options: &PlanOptions) -> Result<KernelKind, SpecError> {
    if problem.modified() {
        // (a window alone: the persistent kernel, whose tiles of a window's few blocks overlap one another's
        // epilogue and start (exp/persistent-window, not yet timed); softcap and modifiers: the ping-pong
        // consumer of fwd_ws, where they are built in so far)
        let window_only = !problem.softcap && problem.modifiers.is_none();
        let persistent = window_only && defaults::spec(KernelKind::FwdWsPersistent, arch, problem.dtype, problem.head_dim, problem.causal, problem.seqlen).is_ok();
        return match hopper(arch, options) {
            true if persistent => Ok(KernelKind::FwdWsPersistent),
            true => Ok(KernelKind::FwdWs),
            // (windows, softcap and modifiers are built into the mma.sync forward too)
            false => Ok(KernelKind::Fwd),
        };
    }
    if !hopper(arch, options) {
        return Ok(KernelKind::Fwd);
    }
    Ok(defaults::kinds_for(FORWARD_KINDS, "forward kernel", arch, problem.head_dim, problem.causal, problem.seqlen)?[0])
}

/// The backward's dK/dV (and dQ) kinds a problem runs under `options`.
fn backward_kinds(arch: Arch, problem: &Problem, options: &PlanOptions) -> Result<&'static [KernelKind], SpecError> {
    use KernelKind::*;
    if problem.modified() {
        // (softcap and a score_mod: the fused kernel where the path would run it without them; a causal
        // window: bwd_fused_up where the path would run it without the window; other windows and a
        // mask_mod: the separate wgmma pair, whatever the path asked for)
        if hopper(arch, options) && problem.modifiers_fuse() {
            let plain = Problem { window: Window::UNBOUNDED, softcap: false, modifiers: None, ..*problem };
            let kinds = backward_kinds(arch, &plain, options)?;
            let fuses = if problem.window.is_unbounded() { kinds[0].fuses_dq() } else { kinds == [BwdFusedUp] };
            if fuses {
                return Ok(kinds);
            }
        }
        return match hopper(arch, options) {
            true => Ok(&[BwdDkdvWgmma, BwdDqWgmma]),
            false => Ok(&[BwdDkdv, BwdDq]),
        };
    }
    if !hopper(arch, options) {
        return Ok(&[BwdDkdv, BwdDq]);
    }
    if !options.backward.serves(problem.head_dim) {
        return Err(SpecError(format!(
            "the fused backward computes dQ in 64-column chunks, one MMA warpgroup each (HEAD_DIM to 128), not HEAD_DIM={}: use the default or split backward",
            problem.head_dim
        )));
    }
    Ok(match (options.backward, problem.causal) {
        (BackwardPath::Default, _) => defaults::kinds_for(BACKWARD_KINDS, "backward", arch, problem.head_dim, problem.causal, problem.seqlen)?,
        (BackwardPath::Split, _) => &[BwdDkdvWgmma, BwdDqWgmma],
        (BackwardPath::Fused, true) => &[BwdFusedUp],
        (BackwardPath::Fused, false) => &[BwdFused],
        (BackwardPath::FusedAtomic, _) => &[BwdFusedAtomic],
    })
}

/// The backward kernels of `kinds` (dK/dV first, then dQ unless dK/dV computes it).
fn backward_specs(kinds: &[KernelKind], arch: Arch, problem: &Problem, tuned: &dyn Tuned) -> Result<BackwardSpecs, SpecError> {
    let dkdv = chosen(kinds[0], arch, problem, tuned)?;
    let dq = match kinds.get(1) {
        Some(&kind) => Some(chosen(kind, arch, problem, tuned)?),
        None => None,
    };
    let preprocess = with_features(&KernelSpec::backward_preprocess(arch, problem.dtype, problem.head_dim), problem.features())?;
    Ok(BackwardSpecs { preprocess, dkdv, dq })
}

/// The default backward pass that runs `kind` (a dK/dV or dQ kind): Δ and the table's kernels of its family.
pub fn backward_family(kind: KernelKind, arch: Arch, problem: &Problem) -> Result<BackwardSpecs, SpecError> {
    use KernelKind::*;
    let kinds = match kind {
        BwdDkdv | BwdDq => vec![BwdDkdv, BwdDq],
        BwdDkdvWgmma | BwdDqWgmma => vec![BwdDkdvWgmma, BwdDqWgmma],
        BwdFused | BwdFusedAtomic | BwdFusedUp => vec![kind],
        other => return Err(SpecError(format!("{} is not a backward kernel with dK/dV or dQ", other.name()))),
    };
    backward_specs(&kinds, arch, problem, &NoTuning)
}

/// The fwd_wgmma spec that computes what a warp-specialized forward does without TMA: the same tiles with
/// one warpgroup fewer where they validate there, else fwd_wgmma's default; other specs as they are.
pub fn without_tma(forward: &KernelSpec, problem: &Problem) -> Result<KernelSpec, SpecError> {
    // (windows and softcap have no kernel without TMA yet: such a call's layouts must suit TMA)
    let modified = forward.features().window || forward.features().softcap || forward.features().modifiers.is_some();
    if !forward.kind().warp_specialized_forward() || modified {
        return Ok(*forward);
    }
    let p = forward.params();
    let same_tiles = SpecParams { kind: KernelKind::FwdWgmma, num_warps: p.num_warps - 4, ..*p };
    let fallback = KernelSpec::new(same_tiles).or_else(|_| defaults::spec(KernelKind::FwdWgmma, p.arch, p.dtype, p.head_dim, forward.causal(), problem.seqlen))?;
    with_features(&fallback, forward.features())
}

/// The chains the fused kernel `spec` adds dQ in, given the caller's choice (see `Plan::dq_chains`): one for
/// bwd_fused_atomic, for a bwd_fused_up that folds its key blocks (`KernelSpec::fold_key_blocks`: its
/// order of additions is one chain) and for one with a window (the dQ sum pass reads the chains of the
/// programs 0 .. a block's highest; a window's blocks meet fewer), whatever the choice.
pub fn dq_chains(spec: &KernelSpec, chosen: Option<u32>) -> u32 {
    let kind = spec.kind();
    match (kind.dq_atomics() || spec.fold_key_blocks() || spec.features().window, chosen) {
        (true, _) => 1,
        (false, Some(c)) => c,
        (false, None) if kind.dq_up() => 1,
        (false, None) => 2,
    }
}

/// The kernels `problem` runs on `arch`: the table's defaults, or the caller's tuned winners for the same kinds.
pub fn plan(arch: Arch, problem: &Problem, options: &PlanOptions, tuned: &dyn Tuned) -> Result<Plan, SpecError> {
    if let Some(c) = options.dq_chains.filter(|c| !(1..=8).contains(c)) {
        return Err(SpecError(format!("{c} dQ chains: use 1 to 8, or None for the default")));
    }
    let forward = chosen(forward_kind(arch, problem, options)?, arch, problem, tuned)?;
    let kinds = backward_kinds(arch, problem, options)?;
    let backward = match backward_specs(kinds, arch, problem, tuned) {
        // (a fused tile that cannot hold what the modifiers add, HEAD_DIM 64's with a score_mod: the pair)
        Err(_) if problem.modified() && kinds[0].fuses_dq() => backward_specs(&[KernelKind::BwdDkdvWgmma, KernelKind::BwdDqWgmma], arch, problem, tuned)?,
        specs => specs?,
    };
    // (a fused backward is planned with modifiers only for those it takes, which the pair takes too)
    let backward_without_tma = if backward.dkdv.kind().fuses_dq() && options.backward == BackwardPath::Default {
        Some(backward_specs(&[KernelKind::BwdDkdvWgmma, KernelKind::BwdDqWgmma], arch, problem, tuned)?)
    } else {
        None
    };
    let dq_chains = dq_chains(&backward.dkdv, options.dq_chains);
    Ok(Plan { forward, forward_without_tma: without_tma(&forward, problem)?, backward, backward_without_tma, dq_chains })
}

/// Every kernel the default plans can run, which `flashgen emit --defaults` generates (prebuilt users ship
/// these): for sm_80 and sm_90a, bf16 and fp16, each head dim, causal or not, one length in each range of
/// the tables, and each backward path: the forward, its TMA-less fallback and the backward kernels.
pub fn default_set() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for arch in [Arch::Sm80, Arch::Sm90a] {
        for dtype in [DType::Bf16, DType::F16] {
            for head_dim in HEAD_DIMS {
                for causal in [false, true] {
                    for seqlen in defaults::length_boundaries() {
                        let problem = Problem::new(dtype, head_dim, causal, seqlen);
                        for backward in BackwardPath::ALL.into_iter().filter(|b| b.serves(head_dim)) {
                            let options = PlanOptions { backward, ..PlanOptions::default() };
                            let p = plan(arch, &problem, &options, &NoTuning).expect("every tabled problem plans");
                            let backward = p.backward.kernels().into_iter().chain(p.backward_without_tma.iter().flat_map(|b| b.kernels()));
                            for spec in [p.forward, p.forward_without_tma].into_iter().chain(backward) {
                                if !out.contains(&spec) {
                                    out.push(spec);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------------------
// Decoding against a KV cache (issue 33): `decode` over the cache's splits, `decode_combine` after it.

/// What a decode call computes, as the kernel choice sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeProblem {
    pub dtype: DType,
    pub head_dim: u32,
    /// The kernel's causal flag: causal among the new queries, or a window bounded on the right
    /// (`kernel_window`: the right bound rides on the causal diagonal, as in the prefill).
    pub causal: bool,
    /// A sliding window (Mistral, Gemma 2's local layers): WINDOW_LEFT and WINDOW_RIGHT bound each query's
    /// keys, and the splits cover only the keys the tile's rows can see.
    pub window: bool,
    /// Softcap (Gemma 2): s ← cap · tanh(s / cap), the ABI's SOFTCAP.
    pub softcap: bool,
    /// Query heads per K/V head (G = H / H_kv).
    pub group: usize,
    /// New queries per sequence (N_q).
    pub queries: usize,
}

impl DecodeProblem {
    /// The packed query rows of one K/V head: G·N_q.
    pub fn rows(&self) -> usize {
        self.group * self.queries
    }
}

/// The kernels of a decode call: the split attention and the combine of its partials, and where a split
/// call's partials merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodePlan {
    pub kernel: KernelSpec,
    pub combine: KernelSpec,
    pub merge: SplitMerge,
}

/// Where a split call's partials merge (one split writes O itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SplitMerge {
    /// decode's last split of each row tile merges its rows, a warp a row (SPLIT_COUNTERS): one launch.
    InKernel,
    /// decode_combine, a second launch: a warp a row over the whole grid.
    Combine,
}

/// Rows of a tile each warp of its last split merges at most for the merge to stay in the kernel; past
/// it the rows go to decode_combine's grid, which merges them all at once.
pub const DECODE_MERGE_ROWS_PER_WARP: usize = 2;

impl SplitMerge {
    /// decode_combine where its launch overlaps the decode kernel's (sm_90's programmatic launch: the batch-1
    /// step 20.05-20.08 µs against 20.25 merged in the kernel, 2026-12-03-decode-merge); elsewhere in the
    /// kernel when the tile's rows (G·N_q, up to BLOCK_M) give each warp at most DECODE_MERGE_ROWS_PER_WARP
    /// of them (a combine launched after the decode kernel cost 1.4 µs more a step on the H200,
    /// 2026-12-03-decode-pdl; the merge in the kernel 0.2), else decode_combine.
    pub fn for_tile(kernel: &KernelSpec, problem: &DecodeProblem) -> SplitMerge {
        let rows = problem.rows().min(kernel.block_m() as usize);
        if !kernel.decode_programmatic_combine() && rows <= DECODE_MERGE_ROWS_PER_WARP * kernel.num_warps() as usize {
            SplitMerge::InKernel
        } else {
            SplitMerge::Combine
        }
    }
}

impl DecodePlan {
    /// This plan with its decode kernel under `schedule`'s overrides (its tiles and features kept; the merge
    /// chosen anew for the kernel): how `check` and `bench` try a decode switch such as `tma_kv=on`.
    pub fn with_schedule(&self, problem: &DecodeProblem, schedule: crate::spec::ScheduleOverrides) -> Result<DecodePlan, SpecError> {
        let kernel = KernelSpec::with_features(*self.kernel.params(), schedule, self.kernel.features())?;
        Ok(DecodePlan { kernel, merge: SplitMerge::for_tile(&kernel, problem), ..*self })
    }

    /// Row tiles of BLOCK_M per K/V head (programs per (sequence, K/V head, split)).
    pub fn row_tiles(&self, problem: &DecodeProblem) -> usize {
        problem.rows().div_ceil(self.kernel.block_m() as usize).max(1)
    }
}

/// BLOCK_M for `rows` packed query rows: 16 up to 16, else 32 (more rows run as row tiles of 32).
pub fn decode_block_m(rows: usize) -> u32 {
    if rows <= 16 {
        16
    } else {
        32
    }
}

/// The default decode kernels of a problem on `arch` (spec::defaults::DECODE_TILES).
pub fn decode(arch: Arch, problem: &DecodeProblem) -> Result<DecodePlan, SpecError> {
    if !DECODE_HEAD_DIMS.contains(&problem.head_dim) {
        return Err(SpecError(format!("decode: HEAD_DIM={} is not supported: use one of {DECODE_HEAD_DIMS:?} (or the prefill kernels: ForwardCall with N_q = the new tokens)", problem.head_dim)));
    }
    let kernel = defaults::decode_spec(arch, problem.dtype, problem.head_dim, problem.causal, decode_block_m(problem.rows()))?;
    let kernel = if problem.window || problem.softcap {
        KernelSpec::with_features(*kernel.params(), crate::spec::ScheduleOverrides::NONE, Features { window: problem.window, softcap: problem.softcap, ..Features::NONE })?
    } else {
        kernel
    };
    Ok(DecodePlan { kernel, combine: KernelSpec::decode_combine(arch, problem.dtype, problem.head_dim), merge: SplitMerge::for_tile(&kernel, problem) })
}

/// Whether a decode call's full K/V blocks come by TMA boxes (`Schedule::tma_kv`): on sm_90 when the call
/// splits its sequences, one split stays on cp.async. Batch 1 (32 splits) on the H200 in one process: the
/// step under do_bench 20.26 → 19.13 µs, K/V GB/s +5-6%, a graph of 8 layers' caches +0.9% (on an H100
/// −2.4%); batch 16 and 64 (one split) −0.5 to −4% with boxes on the H100 (2026-12-05-tmakv).
pub fn decode_tma_for(arch: Arch, splits: usize) -> bool {
    matches!(arch, Arch::Sm90 | Arch::Sm90a) && splits > 1
}

/// Splits of a sequence worth at least this many blocks each (a split's prologue and merge amortized).
pub const DECODE_MIN_BLOCKS_PER_SPLIT: usize = 2;

/// The number of splits of each sequence's keys: `units` programs per split (B·H_kv·row tiles), `blocks` of
/// the longest sequence, on `sms` SMs running `per_sm` programs each (from the driver). One split when the
/// units cover 80% of the SMs, one program each: a decode program streams its keys at the full rate of its
/// SM, and splits would add only their partial results' traffic and the combine (batch 16, 128 programs on
/// 132 SMs: one split +0.4-3% over two, 2026-12-03-decode-splits; FlashAttention's rule, 80% of a wave of
/// slots, gave two). Else the most splits whose programs still fit in one wave (all of them equal: one full
/// wave has no tail), among counts that leave no split empty, with at least DECODE_MIN_BLOCKS_PER_SPLIT
/// blocks each, at most DECODE_MAX_SPLITS. Batch 1, 8 K/V heads, 8192 keys in blocks of 64, 132 SMs × 2: 32
/// splits (256 programs of 4 blocks); batch 16 and 64: 1.
pub fn decode_splits(units: usize, blocks: usize, sms: usize, per_sm: usize) -> usize {
    let slots = sms * per_sm;
    if units == 0 || blocks == 0 || slots == 0 || units * 5 >= sms * 4 {
        return 1;
    }
    let most = (crate::spec::DECODE_MAX_SPLITS as usize).min(blocks / DECODE_MIN_BLOCKS_PER_SPLIT).min(slots / units).max(1);
    // (a count that leaves a split empty does the work of fewer splits)
    (1..=most).rev().find(|&s| blocks.div_ceil(blocks.div_ceil(s)) == s).unwrap_or(1)
}

/// Every decode kernel the default plans run on sm_80 and sm_90a (both dtypes, head dims and causalities,
/// BLOCK_M 16 and 32) and their combines, which `flashgen emit --defaults` generates too.
pub fn decode_default_set() -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for arch in [Arch::Sm80, Arch::Sm90a] {
        for dtype in [DType::Bf16, DType::F16] {
            for head_dim in DECODE_HEAD_DIMS {
                for causal in [false, true] {
                    for queries in [1, 32] {
                        let p = DecodeProblem { dtype, head_dim, causal, window: false, softcap: false, group: 1, queries };
                        let plan = decode(arch, &p).expect("every decode problem of the tables plans");
                        for spec in [plan.kernel, plan.combine] {
                            if !out.contains(&spec) {
                                out.push(spec);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}
