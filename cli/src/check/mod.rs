//! `flashgen check`: generate the default kernels and check them. Without a GPU: every default spec
//! compiles, and the tiled CPU algorithm agrees with f64 attention. With one: every kernel runs against
//! the CPU f64 reference on fresh random inputs, with poisoned outputs and guard zones.

mod args;
mod backward;
mod common;
mod cpu;
mod decode;
mod forward;
mod geometry;

pub use args::CheckArgs;

use flashgen::{compile, CompileOptions};
use flashgen_runtime::{Flash, Gpu, KernelCache};
use std::time::Instant;

pub fn run(a: &CheckArgs) -> Result<(), String> {
    let t0 = Instant::now();
    // (--decode-only: the decode kernels alone)
    let attention = if a.decode_only { Vec::new() } else { flashgen::plan::default_set() };
    let defaults: Vec<_> = attention.into_iter().chain(flashgen::plan::decode_default_set()).collect();
    for spec in &defaults {
        compile(spec, CompileOptions::default()).map_err(|e| e.to_string())?;
    }
    println!("generated {} default kernels in {:.2} s", defaults.len(), t0.elapsed().as_secs_f64());
    cpu::cpu_algorithm_check(a.seed)?;
    if a.cpu_only {
        return Ok(());
    }
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            println!("no GPU ({e}): kernels generated and the algorithm checked on the CPU; GPU checks not run");
            return Ok(());
        }
    };
    let flash = Flash::new(gpu, KernelCache::from_env());
    let result = gpu_check(&flash, a);
    println!("kernel cache ({}): {}", flash.cache.dir().map(|d| d.display().to_string()).unwrap_or("memory only".into()), flash.cache.stats.summary());
    result
}

/// The forward checks, then (unless --forward-only) the backward's; one JSON line per case.
fn gpu_check(flash: &Flash, a: &CheckArgs) -> Result<(), String> {
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    if a.decode_only {
        let (passed, failed) = decode::gpu_check(flash, a, &mut json)?;
        println!("{passed} passed, {failed} failed");
        ran_some(a, passed + failed)?;
        return if failed > 0 { Err(format!("{failed} decode case(s) failed")) } else { Ok(()) };
    }
    let (mut passed, mut failed) = forward::gpu_check(flash, a, &mut json)?;
    if !a.skip_decode {
        let (p, f) = decode::gpu_check(flash, a, &mut json)?;
        passed += p;
        failed += f;
    }
    if !a.forward_only {
        let (p, f) = backward::gpu_check(flash, a, &mut json)?;
        passed += p;
        failed += f;
    }
    if !a.skip_geometry {
        let (p, f) = geometry::gpu_check(flash, a, &mut json)?;
        passed += p;
        failed += f;
    }
    println!("{passed} passed, {failed} failed");
    ran_some(a, passed + failed)?;
    if failed > 0 {
        return Err(format!("{failed} GPU check case(s) failed (tolerances: O {:e}, M {:e}, gradients {:e})", common::O_TOL, common::M_TOL, common::GRAD_TOL));
    }
    Ok(())
}

/// A check that ran no case has shown nothing: an error, not a pass (a sanitizer run over a filter that
/// matched no case once read as clean).
fn ran_some(a: &CheckArgs, cases: usize) -> Result<(), String> {
    if cases == 0 {
        return Err(format!("no case ran: --filter `{}` selects none of them (filters match kernel names, and decode cases as \"decode <dtype> <label>\")", a.filter.as_deref().unwrap_or("")));
    }
    Ok(())
}
