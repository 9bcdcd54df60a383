//! Generating one specialization (spec -> PTX, LLVM warm) takes at most 100 ms on the 2-core CI machine.
//! Virtual machines here swing by 1.5x from one second to the next, so the bound is on the fastest of
//! several warm runs (what the code costs), and the median is printed beside it. A round of 7 runs (~0.6 s)
//! can fall wholly inside a slow spell (seen lasting seconds: medians of 130 ms for kernels whose fastest
//! run is 70), so a spec over the bound gets up to five more rounds, two seconds apart.

use flashgen::{compile, CompileOptions, KernelSpec};
use std::time::Duration;

#[test]
fn one_specialization_takes_at_most_100_ms() {
    if cfg!(debug_assertions) {
        eprintln!("SKIPPED: the 100 ms bound is for optimized builds (run with --release, as .ci/run does)");
        return;
    }
    for spec in KernelSpec::default_set().into_iter().filter(|s| s.arch() == flashgen::Arch::Sm90a) {
        let limit = Duration::from_millis(100);
        compile(&spec, CompileOptions::default()).unwrap();
        let mut runs: Vec<Duration> = Vec::new();
        for round in 0..6 {
            if round > 0 {
                std::thread::sleep(Duration::from_secs(2));
            }
            let mut this: Vec<Duration> = (0..7).map(|_| compile(&spec, CompileOptions::default()).unwrap().timings.total()).collect();
            this.sort();
            if runs.is_empty() || this[0] < runs[0] {
                runs = this;
            }
            if runs[0] <= limit {
                break;
            }
        }
        let t = compile(&spec, CompileOptions::default()).unwrap().timings;
        println!(
            "{:<48} fastest {:>6.1} ms, median {:>6.1} ms (render {:.1}, parse {:.1}, optimize {:.1}, codegen {:.1})",
            spec.name(),
            runs[0].as_secs_f64() * 1e3,
            runs[3].as_secs_f64() * 1e3,
            t.render.as_secs_f64() * 1e3,
            t.llvm.parse.as_secs_f64() * 1e3,
            t.llvm.optimize.as_secs_f64() * 1e3,
            t.llvm.codegen.as_secs_f64() * 1e3
        );
        assert!(runs[0] <= limit, "{} took {:?} at best in six rounds", spec.name(), runs[0]);
    }
}
