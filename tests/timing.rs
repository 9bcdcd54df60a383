//! Generating one specialization (spec -> PTX, LLVM warm) takes at most 100 ms on the 2-core CI machine,
//! with score and mask modifiers too.
//! Virtual machines here swing by 1.5x, in spells that last from a second to many minutes (one backward
//! kernel read 108 ms, then 72 ms a minute later; a whole clean-clone CI run of 6500 s read 115-124 ms
//! for kernels that read ~80 in a 3500 s one). So the bound is on the fastest of several warm runs (what
//! the code costs), a spec over it is measured again after the others, up to eight more times, ten
//! seconds apart, and each measurement is taken against the machine's speed at the time: a frozen LLVM
//! module (tests/data/timing_reference.ll: the mma.sync forward's IR, D64, as rendered on 2026-12-07),
//! compiled just before and just after the spec, whose fastest run here in a quiet spell is
//! `REFERENCE_QUIET`. A spec's time counts divided by how much slower the reference ran then, by at most
//! `MAX_SLOWDOWN`: a slowed machine scales the bound, the code's own growth does not (the reference is
//! frozen IR, not today's templates), and a machine slower than that still fails.

use flashgen::{compile, CompileOptions, KernelSpec};
use std::time::{Duration, Instant};

/// The reference module's fastest compile in a quiet spell of the 2-core machine (33.1-34.4 ms, the best of
/// 40 runs, three times over two minutes, 2026-12-07).
const REFERENCE_QUIET: Duration = Duration::from_millis(33);
/// The most the machine's slowness may excuse.
const MAX_SLOWDOWN: f64 = 1.6;

/// The reference module's fastest of three compiles (parse, optimize, codegen: what a spec's LLVM stages do).
fn reference_best() -> Duration {
    let ir = include_str!("data/timing_reference.ll");
    (0..3)
        .map(|_| {
            let t = Instant::now();
            flashgen::codegen::compile_module("timing_reference", flashgen::Arch::Sm90a, ir, false).unwrap();
            t.elapsed()
        })
        .min()
        .unwrap()
}

/// One measurement of a spec: its warm runs' stage times, sorted by their total (four runs: a spec over
/// the bound is measured again up to eight times, so a slow spell costs a retry, not a failure), and how
/// much slower than quiet the machine ran (the reference before and after them, the faster of the two; at
/// least 1, at most MAX_SLOWDOWN).
struct Measured {
    runs: Vec<flashgen::Timings>,
    slowdown: f64,
}

impl Measured {
    fn of(spec: &KernelSpec) -> Measured {
        compile(spec, CompileOptions::default()).unwrap();
        let before = reference_best();
        let mut runs: Vec<flashgen::Timings> = (0..4).map(|_| compile(spec, CompileOptions::default()).unwrap().timings).collect();
        let after = reference_best();
        runs.sort_by_key(|t| t.total());
        let slowdown = (before.min(after).as_secs_f64() / REFERENCE_QUIET.as_secs_f64()).clamp(1.0, MAX_SLOWDOWN);
        Measured { runs, slowdown }
    }

    /// The fastest run at the quiet machine's speed.
    fn fastest(&self) -> Duration {
        self.runs[0].total().div_f64(self.slowdown)
    }
}

#[test]
fn one_specialization_takes_at_most_100_ms() {
    if cfg!(debug_assertions) {
        eprintln!("SKIPPED: the 100 ms bound is for optimized builds (run with --release, as .ci/run does)");
        return;
    }
    let limit = Duration::from_millis(100);
    // the default set on sm_90a, and each spec with the features the plan gives packed sequences and rows
    // that see no key (the largest kernels' variants: the most template code)
    let plain: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.arch() == flashgen::Arch::Sm90a).collect();
    let mut specs = plain.clone();
    for s in &plain {
        for f in [flashgen::Features { varlen: true, ..flashgen::Features::NONE }, flashgen::Features { varlen: true, empty_rows: true, ..flashgen::Features::NONE }] {
            let featured = flashgen::plan::with_features(s, f).unwrap();
            if !specs.contains(&featured) {
                specs.push(featured);
            }
        }
    }
    // modifiers (issue 32: specialization stays within the bound): a softcapped ALiBi score_mod with a
    // per-head tensor and a document mask with a per-batch one (the per-element mask path), on the kernels
    // that take them
    use flashgen::mods::{MaskMod, Scalar, ScoreMod, TensorDecl};
    let score = ScoreMod::parse("30.0 * tanh(score / 30.0) + slope[h] * (kv_idx - q_idx)", &[TensorDecl::per_head("slope", Scalar::F32)]).unwrap();
    let mask = MaskMod::parse("q_idx // 128 >= kv_idx // 128 && kv_idx < doc_end[b]", &[TensorDecl::per_batch("doc_end", Scalar::I32)]).unwrap();
    let modifiers = flashgen::Modifiers::new(Some(&score), Some(&mask)).unwrap();
    for s in plain.iter().filter(|s| !s.causal()) {
        if let Ok(m) = flashgen::plan::with_features(s, flashgen::Features { modifiers, ..flashgen::Features::NONE }) {
            if !specs.contains(&m) {
                specs.push(m);
            }
        }
    }
    // the measurement with the fastest run at the quiet machine's speed seen for each spec
    let mut best: Vec<Measured> = specs.iter().map(Measured::of).collect();
    for _ in 0..8 {
        let over: Vec<usize> = (0..specs.len()).filter(|&i| best[i].fastest() > limit).collect();
        if over.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_secs(10));
        for i in over {
            let m = Measured::of(&specs[i]);
            if m.fastest() < best[i].fastest() {
                best[i] = m;
            }
        }
    }
    for (spec, m) in specs.iter().zip(&best) {
        let t = m.runs[0];
        println!(
            "{:<48} fastest {:>6.1} ms at quiet speed ({:>6.1} ms measured, the machine {:.2}x slower), slowest {:>6.1} ms (fastest: render {:.1}, parse {:.1}, optimize {:.1}, codegen {:.1})",
            spec.name(),
            m.fastest().as_secs_f64() * 1e3,
            t.total().as_secs_f64() * 1e3,
            m.slowdown,
            m.runs[m.runs.len() - 1].total().as_secs_f64() * 1e3,
            t.render.as_secs_f64() * 1e3,
            t.llvm.parse.as_secs_f64() * 1e3,
            t.llvm.optimize.as_secs_f64() * 1e3,
            t.llvm.codegen.as_secs_f64() * 1e3
        );
    }
    for (spec, m) in specs.iter().zip(&best) {
        assert!(
            m.fastest() <= limit,
            "{} took {:?} at best at the quiet machine's speed ({:?} measured while the reference ran {:.2}x slower than quiet), in nine passes over the specs",
            spec.name(),
            m.fastest(),
            m.runs[0].total(),
            m.slowdown
        );
    }
}

