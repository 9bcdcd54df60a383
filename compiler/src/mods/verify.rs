//! LLVM's own verdict on rendered IR (tests, and a check a caller may run on a module it assembled):
//! parse + verify, and emission to PTX through the NVPTX backend, which is where an intrinsic LLVM does
//! not know shows up (as a call to an undefined function).

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::OptimizationLevel;
use std::sync::Once;

/// Parse and verify a whole module's text.
pub fn verify_ir(text: &str) -> Result<(), String> {
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "mods");
    let module = context.create_module_from_ir(buffer).map_err(|e| format!("parse: {e}"))?;
    module.verify().map_err(|e| format!("verify: {e}"))
}

fn target_machine(cpu: &str) -> Result<TargetMachine, String> {
    static INIT: Once = Once::new();
    INIT.call_once(|| Target::initialize_nvptx(&InitializationConfig::default()));
    let triple = TargetTriple::create(crate::codegen::TRIPLE);
    let target = Target::from_triple(&triple).map_err(|e| e.to_string())?;
    target
        .create_target_machine(&triple, cpu, "+ptx80", OptimizationLevel::Default, RelocMode::Default, CodeModel::Default)
        .ok_or_else(|| format!("no NVPTX target machine for {cpu}"))
}

/// Parse, verify, run the kernels' IR pipeline and emit PTX for `cpu` (e.g. "sm_90a"). Fails when the
/// PTX calls a function the module does not define (an intrinsic the backend does not lower).
pub fn compile_ptx(text: &str, cpu: &str) -> Result<String, String> {
    let context = Context::create();
    let buffer = MemoryBuffer::create_from_memory_range_copy(text.as_bytes(), "mods");
    let module = context.create_module_from_ir(buffer).map_err(|e| format!("parse: {e}"))?;
    module.verify().map_err(|e| format!("verify: {e}"))?;
    let tm = target_machine(cpu)?;
    module.run_passes(crate::codegen::OPT_PIPELINE, &tm, PassBuilderOptions::create()).map_err(|e| format!("optimize: {e}"))?;
    let buf = tm.write_to_memory_buffer(&module, FileType::Assembly).map_err(|e| format!("emit: {e}"))?;
    let ptx = String::from_utf8_lossy(buf.as_slice()).into_owned();
    if let Some(line) = ptx.lines().find(|l| l.starts_with(".extern .func")) {
        return Err(format!("the PTX calls an undefined function (an intrinsic the NVPTX backend does not lower): {line}"));
    }
    Ok(ptx)
}
