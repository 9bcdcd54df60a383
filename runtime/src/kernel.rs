//! One loaded kernel of any kind, and the checks every launch shares.

use crate::cache::Entry;
use crate::{Gpu, Layout, LayoutError, RuntimeError};
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::CudaFunction;
use flashgen::KernelSpec;

/// A kernel loaded into a context, ready to launch; with the fused backward also its dQ sum pass
/// (`KernelSpec::dq_sum_entry`, the module's second entry).
pub struct LoadedKernel {
    pub spec: KernelSpec,
    pub function: CudaFunction,
    pub shared_bytes: u32,
    pub dq_sum: Option<CudaFunction>,
    /// The most programs a persistent kernel launches: the GPU's SM count.
    pub programs: u32,
}

impl LoadedKernel {
    /// Load a cached entry's PTX (the driver compiles it, or finds it in its own cache) and raise the
    /// dynamic shared-memory limit the kernel needs.
    pub fn load(gpu: &Gpu, entry: &Entry) -> Result<LoadedKernel, RuntimeError> {
        let module = crate::jit::load_module(gpu, &entry.metadata.name, &entry.ptx)?;
        let function = module.load_function(&entry.metadata.name)?;
        let shared_bytes = entry.metadata.shared;
        if shared_bytes > 0 {
            function.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes as i32)?;
        }
        let dq_sum = entry.metadata.spec.dq_sum_entry().map(|name| module.load_function(&name)).transpose()?;
        Ok(LoadedKernel { spec: entry.metadata.spec, function, shared_bytes, dq_sum, programs: gpu.sm_count })
    }
}

/// The checks every launch makes, at one place: each [Z, H, N, D] operand against its buffer and against
/// the first one's shape; the kernel's head dim; the f32 row vectors (M, Δ) hold Z·H·N floats; sm_scale;
/// 32-bit row indices and the grid's row limit. Returns (Z, H, N).
pub fn check_problem(
    spec: &KernelSpec,
    tensors: &[(&'static str, Layout, usize)],
    rows: &[(&'static str, usize)],
    sm_scale: Option<f32>,
) -> Result<(usize, usize, usize), RuntimeError> {
    let (first, shape) = (tensors[0].0, tensors[0].1.shape);
    let [z, h, n, d] = shape;
    for &(name, layout, len) in tensors {
        layout.check(name, len)?;
        if layout.shape != shape {
            return Err(LayoutError { tensor: name, rule: format!("shape {:?} differs from {first}'s {:?}", layout.shape, shape) }.into());
        }
    }
    if d as u32 != spec.head_dim() {
        return Err(LayoutError { tensor: first, rule: format!("head dim {d} differs from the kernel's HEAD_DIM={}", spec.head_dim()) }.into());
    }
    for &(name, len) in rows {
        if len < z * h * n {
            return Err(LayoutError { tensor: name, rule: format!("holds {len} floats, needs Z·H·N = {}", z * h * n) }.into());
        }
    }
    if let Some(s) = sm_scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(LayoutError { tensor: "sm_scale", rule: format!("{s} must be finite and positive") }.into());
        }
    }
    let fits_i32 = |x: usize| x <= i32::MAX as usize;
    if !(fits_i32(z * h * n) && fits_i32(n + spec.block_m().max(spec.block_n()) as usize) && fits_i32(z * h)) {
        return Err(LayoutError { tensor: first, rule: format!("Z·H·N = {} overflows the kernel's 32-bit row indices", z * h * n) }.into());
    }
    if z * h > 65_535 {
        return Err(LayoutError { tensor: first, rule: format!("Z·H = {} exceeds the 65535 grid rows of one launch", z * h) }.into());
    }
    Ok((z, h, n))
}

/// The launch configuration of a spec on a problem: its grid, 32·num_warps threads, its shared memory.
pub fn launch_config(k: &LoadedKernel, z: usize, h: usize, n: usize) -> cudarc::driver::LaunchConfig {
    let (gx, gy, _) = k.spec.grid(z as u32, h as u32, n as u32, k.programs);
    cudarc::driver::LaunchConfig { grid_dim: (gx, gy, 1), block_dim: (k.spec.threads(), 1, 1), shared_mem_bytes: k.shared_bytes }
}

/// A layout's four strides as the kernels take them (i64 elements).
pub fn strides(l: &Layout) -> [i64; 4] {
    l.strides.map(|s| s as i64)
}

/// A kernel launched through the wrong entry point would get the wrong argument list: refuse it. (A wgmma
/// kind takes its role's arguments.)
pub fn expect_kind(k: &LoadedKernel, kind: flashgen::KernelKind) -> Result<(), RuntimeError> {
    if k.spec.kind().role() != kind.role() {
        return Err(RuntimeError::Argument(format!("{} is a {} kernel, but this launch needs a {} kernel", k.spec.name(), k.spec.kind().name(), kind.name())));
    }
    Ok(())
}
