//! PTX -> a loaded module through the driver's JIT, compiled as a whole program.
//!
//! Whole-program matters on Hopper: the linker path (cuLink*) compiles PTX as relocatable code, and then
//! ptxas ignores setmaxnreg ("to maintain compatibility across compilation units") and serializes every
//! wgmma ("due to the presence of Extern calls"): fwd_ws ran at 532 instead of 624 TFLOP/s (D128,
//! N=16384), and its ping-pong schedule at half speed. cuModuleLoadData compiles the module whole; the
//! driver keeps its own cache of these compilations (CUDA_CACHE_PATH), so a second process does not run
//! ptxas again. A rejected PTX is compiled once more with log buffers, so the error carries the JIT's log.

use crate::{Gpu, RuntimeError};
use cudarc::driver::{sys, CudaModule};
use cudarc::nvrtc::Ptx;
use std::ffi::{c_void, CString};
use std::sync::Arc;

const LOG_BYTES: usize = 16 * 1024;

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

/// Compile `ptx` for the GPU (whole program) and load it; errors carry the JIT's log.
pub fn load_module(gpu: &Gpu, name: &str, ptx: &str) -> Result<Arc<CudaModule>, RuntimeError> {
    let kernel_err = |detail: String| RuntimeError::Kernel { kernel: name.to_string(), detail };
    if ptx.contains('\0') {
        return Err(kernel_err("PTX contains a NUL byte".into()));
    }
    match gpu.ctx.load_module(Ptx::from_src(ptx)) {
        Ok(module) => Ok(module),
        Err(e) => Err(kernel_err(format!("PTX JIT failed ({e}): {}", jit_error_log(gpu, ptx)))),
    }
}

/// The JIT's error log for a PTX the driver rejected (cuModuleLoadDataEx with a log buffer).
fn jit_error_log(gpu: &Gpu, ptx: &str) -> String {
    let Ok(source) = CString::new(ptx) else { return String::new() };
    if gpu.ctx.bind_to_thread().is_err() {
        return String::new();
    }
    let mut error_log = vec![0u8; LOG_BYTES];
    let mut options = [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values: [*mut c_void; 2] = [error_log.as_mut_ptr().cast(), LOG_BYTES as *mut c_void];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // # Safety
    // 1. `options`/`values` are 2 matching pairs; the log buffer outlives the call.
    // 2. `source` is a NUL-terminated PTX string.
    // 3. A module that loads after all is unloaded at once: nothing keeps it.
    unsafe {
        let code = sys::cuModuleLoadDataEx(&mut module, source.as_ptr().cast(), options.len() as u32, options.as_mut_ptr(), values.as_mut_ptr());
        if code == sys::CUresult::CUDA_SUCCESS {
            sys::cuModuleUnload(module);
        }
    }
    log_text(&error_log)
}

/// Helper contexts (see `warm`): those free to use, and the device of every one created. At most
/// MAX_HELPERS per device: creating one costs about 0.1 s, so more would cost the first tuned key more
/// than their compiles save.
struct Helpers {
    free: Vec<(sys::CUdevice, usize)>,
    created: Vec<sys::CUdevice>,
}
const MAX_HELPERS: usize = 6;
static HELPERS: std::sync::Mutex<Helpers> = std::sync::Mutex::new(Helpers { free: Vec::new(), created: Vec::new() });
static HELPER_FREED: std::sync::Condvar = std::sync::Condvar::new();

/// Whether `warm` compiles in helper contexts: FLASHGEN_JIT_HELPERS=0 turns it off, and it is off when
/// the driver's compute cache is (CUDA_CACHE_DISABLE=1: the primary context would compile again).
pub fn helpers_enabled() -> bool {
    crate::env::Settings::from_env().jit_helpers
}

/// A free helper context of the GPU's device: one from the pool, a new one while there are fewer than
/// MAX_HELPERS, else the next one handed back. None if the driver cannot create one.
fn take_helper(gpu: &Gpu) -> Option<sys::CUcontext> {
    let device = gpu.ctx.cu_device();
    let mut pool = HELPERS.lock().unwrap_or_else(|p| p.into_inner());
    loop {
        if let Some(i) = pool.free.iter().position(|&(d, _)| d == device) {
            return Some(pool.free.swap_remove(i).1 as sys::CUcontext);
        }
        if pool.created.iter().filter(|&&d| d == device).count() < MAX_HELPERS {
            pool.created.push(device);
            drop(pool);
            let mut ctx: sys::CUcontext = std::ptr::null_mut();
            // # Safety: creates a context on the GPU's own device; it is kept for the process (never destroyed).
            let ok = unsafe { sys::cuCtxCreate_v2(&mut ctx, 0, device) } == sys::CUresult::CUDA_SUCCESS;
            if !ok {
                let mut pool = HELPERS.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(i) = pool.created.iter().position(|&d| d == device) {
                    pool.created.swap_remove(i);
                }
                HELPER_FREED.notify_all();
                return None;
            }
            return Some(ctx);
        }
        pool = HELPER_FREED.wait(pool).unwrap_or_else(|p| p.into_inner());
    }
}

/// Compile `ptx` in a helper context of the same device, so that the driver's compute cache holds it and
/// the load into the primary context that follows is a cache hit. The driver compiles one module at a time
/// per context (the autotuner's threads, loading into the primary context, took the sum of their compile
/// times); contexts of their own let them compile at once. Best effort: any failure here only means the
/// primary context compiles the PTX itself.
pub fn warm(gpu: &Gpu, ptx: &str) {
    let Ok(source) = CString::new(ptx) else { return };
    let Some(ctx) = take_helper(gpu) else { return };
    // # Safety
    // 1. The helper context is used by this thread only until it goes back to the pool below.
    // 2. `source` is a NUL-terminated PTX string; the module is unloaded at once.
    // 3. The primary context is made current again before returning (cudarc also binds it on every call).
    unsafe {
        if sys::cuCtxSetCurrent(ctx) == sys::CUresult::CUDA_SUCCESS {
            let mut module: sys::CUmodule = std::ptr::null_mut();
            if sys::cuModuleLoadData(&mut module, source.as_ptr().cast()) == sys::CUresult::CUDA_SUCCESS {
                sys::cuModuleUnload(module);
            }
        }
    }
    HELPERS.lock().unwrap_or_else(|p| p.into_inner()).free.push((gpu.ctx.cu_device(), ctx as usize));
    HELPER_FREED.notify_all();
    let _ = gpu.ctx.bind_to_thread();
}
