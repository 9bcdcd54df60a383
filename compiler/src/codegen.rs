//! Stages 2-4: LLVM IR text -> verified module -> optimize (instcombine, early-cse, adce) -> PTX, through LLVM's NVPTX backend (inkwell).

use crate::spec::{Arch, KernelSpec};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::Once;
use std::time::Instant;

pub const TRIPLE: &str = "nvptx64-nvidia-cuda";

/// The IR pipeline. The templates arrive fully unrolled with constant indices, so what is left to do is
/// promoting the loop-carried allocas to registers (sroa), folding and deduplicating the address
/// arithmetic (instcombine, early-cse) and tidying the CFG. `default<O3>` gave the same registers and
/// instructions from ptxas at 4-5x the time (docs/DECISIONS.md, Code generation), and ptxas schedules the result anyway.
/// instcombine runs its one iteration without LLVM 19's fixpoint check (as the O-level pipelines run it):
/// with the check, IR that a second iteration would still fold (phis of equal values, as a persistent
/// kernel's tile values are when they do not depend on the tile) aborts the process with an LLVM ERROR.
pub const OPT_PIPELINE: &str = "function(instcombine<no-verify-fixpoint>,early-cse,adce)";

/// NVPTX codegen level. Aggressive swaps EarlyCSE for two GVN runs in NVPTX's straight-line scalar
/// passes, which cost ~10 ms per kernel and changed nothing that reached ptxas.
const CODEGEN_LEVEL: OptimizationLevel = OptimizationLevel::Default;

/// Which stage failed, and LLVM's own words.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    #[error("parse: LLVM rejected the rendered IR of {spec}: {detail}")]
    Parse { spec: String, detail: String },
    #[error("verify: the rendered IR of {spec} is not valid LLVM: {detail}")]
    Verify { spec: String, detail: String },
    #[error("target: no NVPTX target machine for {arch}: {detail}")]
    Target { arch: String, detail: String },
    #[error("optimize: the IR pipeline failed on {spec}: {detail}")]
    Optimize { spec: String, detail: String },
    #[error("emit: PTX emission failed for {spec}: {detail}")]
    Emit { spec: String, detail: String },
}

pub use crate::artifact::LlvmTimings;

fn init_nvptx() {
    static INIT: Once = Once::new();
    INIT.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
}

/// "19.1.7": the LLVM this binary links (part of cache keys and metadata).
pub fn llvm_version() -> String {
    let (major, minor, patch) = inkwell::support::get_llvm_version();
    format!("{major}.{minor}.{patch}")
}

fn target_machine(arch: Arch) -> Result<TargetMachine, CodegenError> {
    init_nvptx();
    let err = |detail: String| CodegenError::Target { arch: arch.name().into(), detail };
    let triple = TargetTriple::create(TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| err(e.to_string()))?;
    let (major, minor) = arch.ptx_version();
    let features = format!("+ptx{major}{minor}");
    target
        .create_target_machine(&triple, arch.name(), &features, CODEGEN_LEVEL, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| err(format!("LLVM has no target machine for cpu {} with {features}", arch.name())))
}

/// Parse, verify, optimize and emit. Returns the PTX and, when asked, the optimized IR.
pub fn compile_ir(spec: &KernelSpec, ir: &str, keep_optimized_ir: bool) -> Result<(String, Option<String>, LlvmTimings), CodegenError> {
    compile_module(&spec.name(), spec.arch(), ir, keep_optimized_ir)
}

/// `compile_ir` for a module that is not one spec's (the ring's merges): named `name` in errors.
pub fn compile_module(name: &str, arch: Arch, ir: &str, keep_optimized_ir: bool) -> Result<(String, Option<String>, LlvmTimings), CodegenError> {
    let name = name.to_string();
    let mut timings = LlvmTimings::default();
    let t0 = Instant::now();
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), &name);
    let module = context
        .create_module_from_ir(buffer)
        .map_err(|e| CodegenError::Parse { spec: name.clone(), detail: e.to_string() })?;
    module.verify().map_err(|e| CodegenError::Verify { spec: name.clone(), detail: e.to_string() })?;
    timings.parse = t0.elapsed();

    let tm = target_machine(arch)?;
    let t1 = Instant::now();
    module
        .run_passes(OPT_PIPELINE, &tm, PassBuilderOptions::create())
        .map_err(|e| CodegenError::Optimize { spec: name.clone(), detail: e.to_string() })?;
    timings.optimize = t1.elapsed();
    let optimized = keep_optimized_ir.then(|| module.print_to_string().to_string());

    let t2 = Instant::now();
    let buf = tm
        .write_to_memory_buffer(&module, FileType::Assembly)
        .map_err(|e| CodegenError::Emit { spec: name.clone(), detail: e.to_string() })?;
    let ptx = String::from_utf8_lossy(buf.as_slice()).into_owned();
    timings.codegen = t2.elapsed();
    Ok((ptx, optimized, timings))
}
