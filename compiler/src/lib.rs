//! flashgen: FlashAttention-2 kernels specialized on their compile-time parameters and emitted as PTX
//! through LLVM's NVPTX backend. The stages, in order:
//!
//! ```text
//! KernelSpec::new  -> render (tera) -> parse + verify (LLVM) -> optimize (instcombine, early-cse, adce) -> emit (PTX) -> Artifact
//! ```

pub mod abi;
pub mod artifact;
pub mod build;
#[cfg(feature = "llvm")]
pub mod codegen;
pub mod mods;
pub mod numeric;
pub mod plan;
pub mod reference;
pub mod render;
pub mod ring;
pub mod spec;

pub use artifact::{Artifact, Metadata, Timings};
pub use plan::{plan, BackwardPath, Plan, PlanOptions, Problem};
pub use spec::{Arch, BackwardSpecs, DType, Features, KernelKind, KernelSpec, Modifiers, Registers, Schedule, ScheduleOverrides, SpecError, SpecParams, Stage};


/// Any failure between a spec and its PTX, naming the stage.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Render(#[from] render::RenderError),
    #[cfg(feature = "llvm")]
    #[error(transparent)]
    Codegen(#[from] codegen::CodegenError),
}

/// The LLVM this build links ("19.1.7"), or "none" without the `llvm` feature.
pub fn llvm_version() -> String {
    #[cfg(feature = "llvm")]
    return codegen::llvm_version();
    #[cfg(not(feature = "llvm"))]
    return "none".to_string();
}

/// Options that do not change the kernel, only what is kept.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompileOptions {
    /// Keep the optimized IR in the artifact (for `--ir` dumps and debugging).
    pub keep_optimized_ir: bool,
}

/// Compile one specialization to PTX.
#[cfg(feature = "llvm")]
pub fn compile(spec: &KernelSpec, options: CompileOptions) -> Result<Artifact, CompileError> {
    let t0 = std::time::Instant::now();
    let ir = render::render(spec)?;
    let render_time = t0.elapsed();
    let (ptx, optimized_ir, llvm) = codegen::compile_ir(spec, &ir, options.keep_optimized_ir)?;
    Ok(Artifact {
        spec: *spec,
        entry: spec.name(),
        ptx,
        ir,
        optimized_ir,
        metadata: Metadata::of(spec),
        timings: Timings { render: render_time, llvm },
    })
}
