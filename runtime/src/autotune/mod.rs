//! Triton-style autotuning of the forward kernel and of the two backward tile kernels (dK/dV and dQ, each
//! tuned on its own: they are separate launches): a config space, a key per which the best config is
//! measured once, a named early-prune step, timings as median with 20th/80th percentiles, and the winner
//! persisted beside the kernel cache so the next process does not tune again.
//!
//! The tuner is written against [`Candidates`] (compile, verify, time), so the whole selection logic runs
//! on the CPU in tests with a fake; `gpu::GpuCandidates` is the real one.
//!
//! Safety rules a winner must pass: it validates (every rule of `KernelSpec::new`), it compiles, loads and
//! launches (a failure scores infinity and is reported, never fatal), and its output on the tuning inputs
//! matches the default config's before it may win.

pub mod gpu;
pub mod gpu_backward;
pub mod store;

use flashgen::{Arch, DType, KernelKind, KernelSpec, Problem, ScheduleOverrides, SpecParams};
use serde::{Deserialize, Serialize};

/// One point of the config space (Triton's `triton.Config`: block sizes, num_warps, num_stages), with the
/// schedule switches it sets (none: each derived for its spec).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config {
    pub block_m: u32,
    pub block_n: u32,
    pub num_warps: u32,
    pub num_stages: u32,
    #[serde(default, skip_serializing_if = "ScheduleOverrides::is_empty")]
    pub schedule: ScheduleOverrides,
}

impl Config {
    pub fn new(block_m: u32, block_n: u32, num_warps: u32, num_stages: u32) -> Config {
        Config { block_m, block_n, num_warps, num_stages, schedule: ScheduleOverrides::NONE }
    }

    /// The config of a spec (its tiles and its schedule overrides).
    pub fn of(s: &KernelSpec) -> Config {
        Config { block_m: s.block_m(), block_n: s.block_n(), num_warps: s.num_warps(), num_stages: s.num_stages(), schedule: *s.schedule_overrides() }
    }
}

impl std::fmt::Display for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BLOCK_M: {}, BLOCK_N: {}, num_warps: {}, num_stages: {}", self.block_m, self.block_n, self.num_warps, self.num_stages)?;
        if !self.schedule.is_empty() {
            write!(f, ", schedule: {}", self.schedule)?;
        }
        Ok(())
    }
}

/// What a tuned config is keyed by: like Triton's `key=[...]` plus the dtypes, with N_CTX bucketed to the
/// next power of two (tuning every length would never end) and the Q/KV length ratio (always 1 today).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TuneKey {
    /// Which kernel (files written before the backward existed are forward keys).
    #[serde(default = "forward_kind")]
    pub kind: KernelKind,
    pub arch: Arch,
    pub dtype: DType,
    pub head_dim: u32,
    pub causal: bool,
    pub n_bucket: u32,
    pub kv_ratio: u32,
}

fn forward_kind() -> KernelKind {
    KernelKind::Fwd
}

/// The kernels the tuner searches: the forward and the backward's two tile kernels (the preprocess has
/// nothing to tune).
pub const TUNABLE: [KernelKind; 3] = [KernelKind::Fwd, KernelKind::BwdDkdv, KernelKind::BwdDq];

impl TuneKey {
    /// A forward key.
    pub fn new(arch: Arch, dtype: DType, head_dim: u32, causal: bool, n_ctx: usize) -> TuneKey {
        TuneKey::for_kind(KernelKind::Fwd, arch, dtype, head_dim, causal, n_ctx)
    }

    pub fn for_kind(kind: KernelKind, arch: Arch, dtype: DType, head_dim: u32, causal: bool, n_ctx: usize) -> TuneKey {
        TuneKey { kind, arch, dtype, head_dim, causal, n_bucket: bucket(n_ctx), kv_ratio: 1 }
    }

    /// "sm90a-bf16-d128-causal-n4096-r1" (forward) or "bwd_dq-sm90a-bf16-d128-causal-n4096-r1": the key as a
    /// file-name-safe string.
    pub fn id(&self) -> String {
        let kind = if self.kind == KernelKind::Fwd { String::new() } else { format!("{}-", self.kind.name()) };
        format!(
            "{kind}{}-{}-d{}-{}-n{}-r{}",
            self.arch.name().replace('_', ""),
            self.dtype.name(),
            self.head_dim,
            if self.causal { "causal" } else { "full" },
            self.n_bucket,
            self.kv_ratio
        )
    }

    /// The problem this key stands for (its length the bucket's).
    pub fn problem(&self) -> Problem {
        Problem::new(self.dtype, self.head_dim, self.causal, self.n_bucket as usize)
    }

    /// The spec of `config` under this key.
    pub fn spec(&self, c: Config) -> Result<KernelSpec, flashgen::SpecError> {
        KernelSpec::with_schedule(SpecParams {
            kind: self.kind,
            dtype: self.dtype,
            head_dim: self.head_dim,
            block_m: c.block_m,
            block_n: c.block_n,
            stage: if self.causal { 3 } else { 1 },
            num_warps: c.num_warps,
            num_stages: c.num_stages,
            arch: self.arch,
        }, c.schedule)
    }

    /// The defaults table's config for this key (flashgen::spec::defaults).
    pub fn default_config(&self) -> Result<Config, flashgen::SpecError> {
        Ok(Config::of(&flashgen::spec::defaults::spec(self.kind, self.arch, self.dtype, self.head_dim, self.causal, self.n_bucket as usize)?))
    }
}

/// N_CTX rounded up to a power of two (at least 16).
pub fn bucket(n_ctx: usize) -> u32 {
    (n_ctx.max(16) as u32).next_power_of_two()
}

/// The forward's search space: the Triton tutorial's (BLOCK_M {64, 128}, BLOCK_N {32, 64, 128}, num_stages
/// {2, 3, 4}, num_warps {4, 8}) plus flashgen's own 256-row tiles and 16-wide K/V blocks.
pub fn config_space() -> Vec<Config> {
    config_space_for(KernelKind::Fwd)
}

/// The search space of a kernel: owned rows {64, 128, 256} × streamed rows {16, 32, 64, 128} × num_stages
/// {2, 3, 4} × num_warps {4, 8}; dK/dV owns BLOCK_N (key) rows and streams BLOCK_M, the others the reverse.
/// fwd_ws and fwd_ws_persistent: owned rows {128, 192, 256} (2, 3 or 4 consumer warpgroups) × {32, 64, 128, 176}
/// × {2, 3, 4, 6, 8} stages × their num_warps {12, 16, 20} (validation keeps the pairs where the warps match the
/// rows, and the persistent kind's ping-pong stages), each with its derived schedule and with the ping-pong
/// tile's rescaling the other way (`SCHEDULE_SPACE`: the switch whose best value moved with the shape, +-5%;
/// early_prune drops the copies where the override is the derived value or has no ping-pong tile to act on),
/// and two-stage tiles each also on the split K/V ring (`Schedule::split_kv_ring`: ping-pong on two stages).
/// The separate wgmma backward kernels: each tile with one, two or the most programs per SM.
pub fn config_space_for(kind: KernelKind) -> Vec<Config> {
    let mut out = Vec::new();
    let (owned_rows, streamed_rows, stages, warps): (&[u32], &[u32], &[u32], &[u32]) = if kind.warp_specialized_forward() {
        // (and FA3's wide non-causal block, `WS_WIDE_BLOCK_N`: 128×176 on two stages)
        (&[128, 192, 256], &[32, 64, 128, flashgen::spec::WS_WIDE_BLOCK_N], &[2, 3, 4, 6, 8], &flashgen::spec::WS_NUM_WARPS)
    } else if kind.fuses_dq() {
        // the MMA warpgroups plus the dQ writer's (validation keeps the pairs where the warps match the rows)
        (&[64, 128, 256], &[16, 32, 64, 128], &[2, 3, 4], &flashgen::spec::FUSED_NUM_WARPS)
    } else {
        (&[64, 128, 256], &[16, 32, 64, 128], &[2, 3, 4], &[4, 8])
    };
    let schedules: &[ScheduleOverrides] = match kind {
        k if k.warp_specialized_forward() => &SCHEDULE_SPACE,
        KernelKind::BwdDkdvWgmma => &DKDV_WGMMA_PROGRAMS,
        KernelKind::BwdDqWgmma => &DQ_WGMMA_PROGRAMS,
        k if k.fuses_dq() => &FUSED_SCHEDULES,
        _ => &[ScheduleOverrides::NONE],
    };
    for &owned in owned_rows {
        for &streamed in streamed_rows {
            for &num_stages in stages {
                for &num_warps in warps {
                    for &schedule in schedules {
                        let (block_m, block_n) = if kind.role() == KernelKind::BwdDkdv { (streamed, owned) } else { (owned, streamed) };
                        out.push(Config { schedule, ..Config::new(block_m, block_n, num_warps, num_stages) });
                        // (two stages of the warp-specialized forward also on the split ring, where they run
                        // ping-pong: HEAD_DIM 256's default)
                        if kind.warp_specialized_forward() && num_stages == 2 {
                            let split = ScheduleOverrides { split_kv_ring: Some(true), ..schedule };
                            out.push(Config { schedule: split, ..Config::new(block_m, block_n, num_warps, num_stages) });
                        }
                    }
                }
            }
        }
    }
    out
}

/// The schedules the warp-specialized forward's space tries on each tile config: the derived one, and lazy
/// rescaling on and off (one of the two is the derived value, a copy early_prune drops).
const SCHEDULE_SPACE: [ScheduleOverrides; 3] = [
    ScheduleOverrides::NONE,
    ScheduleOverrides { lazy_rescale: Some(true), ..ScheduleOverrides::NONE },
    ScheduleOverrides { lazy_rescale: Some(false), ..ScheduleOverrides::NONE },
];

/// The separate wgmma backward kernels' programs per SM (`Schedule::programs_per_sm`): the derived value (3 for
/// dK/dV and 4 for dQ on their HEAD_DIM 64 default tiles, 1 elsewhere), one, two, and the most those default
/// tiles hold without spilling (dK/dV 3 at 168 registers, dQ 4 at 124; tests/ptxas.rs); early_prune drops
/// what shared memory does not hold and what equals the derived kernel.
const DKDV_WGMMA_PROGRAMS: [ScheduleOverrides; 4] = [
    ScheduleOverrides::NONE,
    ScheduleOverrides { programs_per_sm: Some(1), ..ScheduleOverrides::NONE },
    ScheduleOverrides { programs_per_sm: Some(2), ..ScheduleOverrides::NONE },
    ScheduleOverrides { programs_per_sm: Some(3), ..ScheduleOverrides::NONE },
];
const DQ_WGMMA_PROGRAMS: [ScheduleOverrides; 4] = [
    ScheduleOverrides::NONE,
    ScheduleOverrides { programs_per_sm: Some(1), ..ScheduleOverrides::NONE },
    ScheduleOverrides { programs_per_sm: Some(2), ..ScheduleOverrides::NONE },
    ScheduleOverrides { programs_per_sm: Some(4), ..ScheduleOverrides::NONE },
];

/// The fused backward's dV product early or not (`Schedule::early_dv`): derived on for bwd_fused_up at
/// HEAD_DIM 128's tile, where it gained on every row measured; bwd_fused gained on the table's rows and lost
/// 10% on GQA's at N 16384 (2026-12-06-early-dv), so the shape decides. And its programs running tile after
/// tile (`Schedule::persistent_tiles`, non-causal bwd_fused and bwd_fused_atomic), alone and with dV early:
/// 1.00-1.13× to 4096 tokens, 0.86-0.99× at 16384 (2026-12-06-ptiles). early_prune drops the copies equal to
/// the derived kernel and what the rules refuse (dV early at HEAD_DIM 64's tile, persistent tiles causal).
const FUSED_SCHEDULES: [ScheduleOverrides; 5] = [
    ScheduleOverrides::NONE,
    ScheduleOverrides { early_dv: Some(true), ..ScheduleOverrides::NONE },
    ScheduleOverrides { early_dv: Some(false), ..ScheduleOverrides::NONE },
    ScheduleOverrides { persistent_tiles: Some(true), ..ScheduleOverrides::NONE },
    ScheduleOverrides { persistent_tiles: Some(true), early_dv: Some(true), ..ScheduleOverrides::NONE },
];

/// Why a config never reached the GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pruned {
    pub config: Config,
    pub step: String,
    pub reason: String,
}

/// The named early-prune step (Triton's `early_config_prune`): drop what fails validation (shape rules,
/// shared memory, registers, schedule switches the spec cannot take), a config that is the same kernel as an
/// earlier one (an override equal to the derived value), and what is dominated for this key: more pipeline stages than the longest
/// program has streamed blocks (the extra slots would hold nothing), and owned rows beyond the sequence.
pub fn early_prune(key: &TuneKey, space: &[Config]) -> (Vec<(Config, KernelSpec)>, Vec<Pruned>) {
    let mut kept = Vec::new();
    let mut pruned = Vec::new();
    let n = key.n_bucket;
    for &c in space {
        let drop = |step: &str, reason: String| Pruned { config: c, step: step.into(), reason };
        match key.spec(c) {
            Err(e) => pruned.push(drop("validate", e.to_string())),
            Ok(s) if kept.iter().any(|(_, k)| *k == s) => pruned.push(drop("duplicate", format!("the same kernel as another config ({}: its schedule overrides are derived)", s.name()))),
            Ok(s) if c.num_stages > 2 && n.div_ceil(s.streamed_rows()) < c.num_stages => {
                pruned.push(drop("dominated", format!("{} stages for {} streamed blocks of N={n}", c.num_stages, n.div_ceil(s.streamed_rows()))))
            }
            Ok(s) if s.resident_rows() > n.max(64) => pruned.push(drop("dominated", format!("{} owned rows exceed N={n}", s.resident_rows()))),
            Ok(s) => kept.push((c, s)),
        }
    }
    (kept, pruned)
}

/// Optional performance model (Triton's `perf_model` + `top_k`): rank by an estimate and keep the best k.
/// The estimate: tensor-core work is fixed, so what varies is shared-memory fragment traffic per mma
/// (fewer rows per warp and narrower K/V blocks reload more) and the number of barriers per key.
pub fn top_k(kept: Vec<(Config, KernelSpec)>, k: usize) -> Vec<(Config, KernelSpec)> {
    let mut scored: Vec<(f64, (Config, KernelSpec))> = kept
        .into_iter()
        .map(|(c, s)| {
            let m_tiles = (s.rows_per_warp() / 16) as f64;
            let streamed = s.streamed_rows() as f64;
            let fragment_traffic = 1.0 / m_tiles + 16.0 / streamed;
            let barriers = 32.0 / streamed;
            (fragment_traffic + 0.25 * barriers, (c, s))
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    scored.into_iter().take(k).map(|(_, cs)| cs).collect()
}

/// Median, 20th and 80th percentile of one config's run times, in ms (Triton's quantiles [0.5, 0.2, 0.8]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    pub p20_ms: f64,
    pub p80_ms: f64,
}

impl Timing {
    pub const FAILED: Timing = Timing { median_ms: f64::INFINITY, p20_ms: f64::INFINITY, p80_ms: f64::INFINITY };

    /// From raw samples (ms).
    pub fn of(mut samples: Vec<f64>) -> Timing {
        if samples.is_empty() {
            return Timing::FAILED;
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Timing { median_ms: at(0.5), p20_ms: at(0.2), p80_ms: at(0.8) }
    }
}

/// The three things tuning needs from a device: compile (may run on other threads), check a candidate's
/// output against the default config's on the same inputs, and time it.
pub trait Candidates: Sync {
    /// Compile and load; safe to call from several threads at once.
    fn prepare(&self, spec: &KernelSpec) -> Result<(), String>;
    /// Relative error of the candidate's O (and M) against the default config's, on the tuning inputs.
    fn verify(&self, spec: &KernelSpec) -> Result<f64, String>;
    /// Time the candidate on scratch buffers. A candidate whose warm-up launch already takes longer than
    /// `cutoff_ms` cannot win: it may stop there and report that one time.
    fn time(&self, spec: &KernelSpec, cutoff_ms: f64) -> Result<Timing, String>;
}

/// A candidate's outcome.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    pub config: Config,
    pub timing: Timing,
    /// Why it scored infinity, if it did.
    pub failure: Option<String>,
}

/// Everything one tuning run learned.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TuneResult {
    pub key: TuneKey,
    pub best: Config,
    pub outcomes: Vec<Outcome>,
    pub pruned: Vec<Pruned>,
    /// End to end: the tuning inputs and reference outputs, compiles, checks and timings.
    pub seconds: f64,
    #[serde(default)]
    pub phases: Phases,
}

/// Where a tuning run's seconds went, on the timing thread (compiles run beside it: `compile_wait` is only
/// the time it had nothing compiled to check).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Phases {
    pub setup_s: f64,
    pub compile_wait_s: f64,
    pub verify_s: f64,
    pub time_s: f64,
}

impl std::fmt::Display for Phases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "setup {:.2} s, waiting for compiles {:.2} s, checking {:.2} s, timing {:.2} s", self.setup_s, self.compile_wait_s, self.verify_s, self.time_s)
    }
}

/// A candidate whose warm-up launch takes this many times the best median so far stops there (timings
/// on the H200 spread under 0.2% between p20 and p80, so it could not have won).
pub const EARLY_STOP_RATIO: f64 = 1.5;
/// For launches of LONG_LAUNCH_MS or more the host-timed warm-up is exact to well under 1% (launch
/// overhead is ~10 µs), so a candidate 10% behind stops: at N = 16384 a non-causal D128 dK/dV launch takes
/// ~9 ms and, with all 12 candidates within 1.5× of each other, the key took 2.25 s (tune-v4).
pub const LONG_LAUNCH_MS: f64 = 4.0;
pub const LONG_EARLY_STOP_RATIO: f64 = 1.1;

/// The warm-up time above which a candidate stops, given the best median so far.
pub fn early_stop_cutoff(best_ms: f64) -> f64 {
    best_ms * if best_ms >= LONG_LAUNCH_MS { LONG_EARLY_STOP_RATIO } else { EARLY_STOP_RATIO }
}

/// Largest relative difference from the default config's output a candidate may show.
pub const MAX_DISAGREEMENT: f64 = 1e-2;

/// A backward kernel is timed alone, but runs between the others: a candidate must beat the default by
/// this fraction to replace it. On the H200 (hopper-v3) three backward winners by 0.4-4% alone ran 2-6%
/// slower than the default in the full pass; the forward is timed as it runs and takes any gain.
pub const BACKWARD_MIN_GAIN: f64 = 0.05;

/// The winner among `outcomes` (sorted fastest first): the fastest that did not fail, unless it is a
/// backward kernel that beats the default by less than `BACKWARD_MIN_GAIN`.
fn choose(key: &TuneKey, outcomes: &[Outcome], default: Config) -> Config {
    let time = |c: Config| outcomes.iter().find(|o| o.config == c && o.failure.is_none()).map(|o| o.timing.median_ms);
    let fastest = outcomes.iter().find(|o| o.failure.is_none()).map(|o| o.config).unwrap_or(default);
    let min_gain = if key.kind.role() == KernelKind::Fwd { 0.0 } else { BACKWARD_MIN_GAIN };
    match (time(fastest), time(default)) {
        (Some(best), Some(base)) if best > base * (1.0 - min_gain) => default,
        _ => fastest,
    }
}

/// Tune one key: prune, compile everything on `compile_threads` threads while this thread verifies and
/// times candidates in the order they finish compiling, and pick the fastest one that agrees with the default.
pub fn tune(key: &TuneKey, space: &[Config], candidates: &dyn Candidates, compile_threads: usize, keep: Option<usize>) -> Result<TuneResult, String> {
    let t0 = std::time::Instant::now();
    let default = key.default_config().map_err(|e| format!("no default config for {}: {e}", key.id()))?;
    let (mut kept, pruned) = early_prune(key, space);
    if let Some(k) = keep {
        kept = top_k(kept, k);
    }
    // the default is the reference every candidate is checked against: it must work. It compiles first, on
    // the compile threads like the rest (not before them: the first key of a process would wait for it alone)
    let default_spec = key.spec(default).map_err(|e| e.to_string())?;
    kept.retain(|(c, _)| *c != default);
    kept.insert(0, (default, default_spec));

    let (tx, rx) = std::sync::mpsc::channel::<(Config, KernelSpec, Result<(), String>)>();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut phases = Phases::default();
    std::thread::scope(|s| -> Result<(), String> {
        for _ in 0..compile_threads.max(1) {
            let (tx, kept, next) = (tx.clone(), &kept, &next);
            s.spawn(move || loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(c, spec)) = kept.get(i) else { break };
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| candidates.prepare(&spec))).unwrap_or_else(|_| Err("compilation panicked".into()));
                if tx.send((c, spec, r)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let since = |t: &mut std::time::Instant| {
            let s = t.elapsed().as_secs_f64();
            *t = std::time::Instant::now();
            s
        };
        let mut clock = std::time::Instant::now();
        // candidates that finish compiling before the default wait for it (their check needs its output)
        let mut before_default = Vec::new();
        let mut default_ready = false;
        for (config, spec, prepared) in rx {
            phases.compile_wait_s += since(&mut clock);
            if !default_ready {
                if config != default {
                    before_default.push((config, spec, prepared));
                    continue;
                }
                prepared.clone().map_err(|e| format!("default config {default} failed to compile: {e}"))?;
                default_ready = true;
            }
            // the default first (the others' reference), then any that waited for it, in their order
            let ready: Vec<_> = std::iter::once((config, spec, prepared)).chain(before_default.drain(..)).collect();
            for (config, spec, prepared) in ready {
                let checked = prepared.and_then(|()| candidates.verify(&spec));
                phases.verify_s += since(&mut clock);
                let scored = checked
                    .and_then(|err| if err <= MAX_DISAGREEMENT { Ok(()) } else { Err(format!("output differs from the default config's by {err:.2e}")) })
                    .and_then(|()| {
                        let best = outcomes.iter().filter(|o| o.failure.is_none()).map(|o| o.timing.median_ms).fold(f64::INFINITY, f64::min);
                        candidates.time(&spec, early_stop_cutoff(best))
                    });
                phases.time_s += since(&mut clock);
                outcomes.push(match scored {
                    Ok(timing) if timing.median_ms.is_finite() => Outcome { config, timing, failure: None },
                    Ok(_) => Outcome { config, timing: Timing::FAILED, failure: Some("no finite time".into()) },
                    Err(e) => Outcome { config, timing: Timing::FAILED, failure: Some(e) },
                });
            }
        }
        if default_ready {
            Ok(())
        } else {
            Err(format!("default config {default} was never compiled"))
        }
    })?;
    outcomes.sort_by(|a, b| a.timing.median_ms.total_cmp(&b.timing.median_ms));
    let best = choose(key, &outcomes, default);
    if crate::env::Settings::from_env().print_autotuning {
        let t = outcomes.iter().find(|o| o.config == best).map(|o| o.timing.median_ms).unwrap_or(f64::NAN);
        eprintln!("flashgen autotuning: key {} finished after {:.2} s ({phases}); best config: {best} ({t:.4} ms)", key.id(), t0.elapsed().as_secs_f64());
    }
    Ok(TuneResult { key: key.clone(), best, outcomes, pruned, seconds: t0.elapsed().as_secs_f64(), phases })
}
