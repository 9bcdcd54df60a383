//! 01: one spec -> PTX, with its Triton-style metadata and stage times.
//! cargo run --release -p flashgen --example 01-emit

use flashgen::{compile, Arch, CompileOptions, DType, KernelKind, KernelSpec, SpecParams};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let spec = KernelSpec::new(SpecParams {
        kind: KernelKind::Fwd,
        dtype: DType::Bf16,
        head_dim: 128,
        block_m: 128,
        block_n: 32,
        stage: 3, // causal
        num_warps: 4,
        num_stages: 3,
        arch: Arch::Sm90a,
    })?;
    let artifact = compile(&spec, CompileOptions::default())?;
    println!("{}: {} lines of PTX in {:.1} ms", artifact.entry, artifact.ptx.lines().count(), artifact.timings.total().as_secs_f64() * 1e3);
    println!("{}", artifact.metadata.to_json());
    // a rejected spec names its rule
    let bad = KernelSpec::new(SpecParams { block_m: 96, ..*spec.params() });
    println!("{}", bad.unwrap_err());
    Ok(())
}
