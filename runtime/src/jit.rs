//! PTX -> cubin through the driver's JIT linker (cuLink*), so the cache can keep the cubin and a second
//! process starts without compiling, and so a rejected PTX comes back with the JIT's own error log
//! (cudarc's load_module uses plain cuModuleLoadData, which returns only an error code).

use crate::{Gpu, RuntimeError};
use cudarc::driver::sys;
use std::ffi::{c_void, CString};

const LOG_BYTES: usize = 16 * 1024;

fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

/// Assemble `ptx` for the GPU's own architecture; errors carry the JIT's log.
pub fn ptx_to_cubin(gpu: &Gpu, name: &str, ptx: &str) -> Result<Vec<u8>, RuntimeError> {
    gpu.ctx.bind_to_thread()?;
    let jit_err = |what: &str, code: sys::CUresult, log: &[u8]| RuntimeError::Kernel { kernel: name.to_string(), detail: format!("PTX JIT {what} failed ({code:?}): {}", log_text(log)) };
    let source = CString::new(ptx).map_err(|_| RuntimeError::Kernel { kernel: name.into(), detail: "PTX contains a NUL byte".into() })?;
    let cname = CString::new(name).unwrap_or_default();
    let mut error_log = vec![0u8; LOG_BYTES];
    let mut info_log = vec![0u8; LOG_BYTES];
    let mut options = [
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER,
        sys::CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
    ];
    let mut values: [*mut c_void; 4] = [error_log.as_mut_ptr().cast(), LOG_BYTES as *mut c_void, info_log.as_mut_ptr().cast(), LOG_BYTES as *mut c_void];
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    // # Safety
    // 1. `options`/`values` are 4 matching pairs; the log buffers outlive the link state (destroyed below).
    // 2. `source` is a NUL-terminated PTX string whose length (with the NUL) is passed.
    // 3. The cubin returned by cuLinkComplete belongs to the link state: it is copied before cuLinkDestroy.
    unsafe {
        let code = sys::cuLinkCreate_v2(options.len() as u32, options.as_mut_ptr(), values.as_mut_ptr(), &mut state);
        if code != sys::CUresult::CUDA_SUCCESS {
            return Err(jit_err("cuLinkCreate", code, &error_log));
        }
        let code = sys::cuLinkAddData_v2(
            state,
            sys::CUjitInputType::CU_JIT_INPUT_PTX,
            source.as_ptr() as *mut c_void,
            source.as_bytes_with_nul().len(),
            cname.as_ptr(),
            0,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        if code != sys::CUresult::CUDA_SUCCESS {
            sys::cuLinkDestroy(state);
            return Err(jit_err("of the PTX", code, &error_log));
        }
        let mut cubin: *mut c_void = std::ptr::null_mut();
        let mut size = 0usize;
        let code = sys::cuLinkComplete(state, &mut cubin, &mut size);
        if code != sys::CUresult::CUDA_SUCCESS || cubin.is_null() {
            sys::cuLinkDestroy(state);
            return Err(jit_err("link", code, &error_log));
        }
        let bytes = std::slice::from_raw_parts(cubin as *const u8, size).to_vec();
        sys::cuLinkDestroy(state);
        Ok(bytes)
    }
}
