//! Loading and launching one forward specialization.

use crate::{Gpu, Layout, LayoutError, RuntimeError};
use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use crate::cache::Entry;
use cudarc::nvrtc::Ptx;
use flashgen::KernelSpec;

/// A forward kernel loaded into a context, ready to launch.
pub struct ForwardKernel {
    pub spec: KernelSpec,
    pub function: CudaFunction,
    pub shared_bytes: u32,
}

/// Operands of one launch: Q, K, V, O as 16-bit element buffers with their layouts, M as f32 [Z·H·N].
pub struct ForwardArgs<'a> {
    pub q: (&'a CudaSlice<u16>, Layout),
    pub k: (&'a CudaSlice<u16>, Layout),
    pub v: (&'a CudaSlice<u16>, Layout),
    pub o: (&'a mut CudaSlice<u16>, Layout),
    pub m: &'a mut CudaSlice<f32>,
    pub sm_scale: f32,
}

impl ForwardKernel {
    /// Load a cached entry's cubin and raise the dynamic shared-memory limit the kernel needs.
    pub fn load(gpu: &Gpu, entry: &Entry) -> Result<ForwardKernel, RuntimeError> {
        let module = gpu.ctx.load_module(Ptx::from_binary(entry.cubin.clone()))?;
        let function = module.load_function(&entry.metadata.name)?;
        let shared_bytes = entry.metadata.shared;
        function.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes as i32)?;
        Ok(ForwardKernel { spec: entry.metadata.spec, function, shared_bytes })
    }

    /// Check every operand, then launch on the GPU's stream.
    pub fn launch(&self, gpu: &Gpu, a: ForwardArgs<'_>) -> Result<(), RuntimeError> {
        let [z, h, n, d] = a.q.1.shape;
        a.q.1.check("Q", a.q.0.len())?;
        a.k.1.check("K", a.k.0.len())?;
        a.v.1.check("V", a.v.0.len())?;
        a.o.1.check("O", a.o.0.len())?;
        for (name, l) in [("K", &a.k.1), ("V", &a.v.1), ("O", &a.o.1)] {
            if l.shape != a.q.1.shape {
                return Err(LayoutError { tensor: name, rule: format!("shape {:?} differs from Q's {:?}", l.shape, a.q.1.shape) }.into());
            }
        }
        if d as u32 != self.spec.head_dim() {
            return Err(LayoutError { tensor: "Q", rule: format!("head dim {d} differs from the kernel's HEAD_DIM={}", self.spec.head_dim()) }.into());
        }
        if a.m.len() < z * h * n {
            return Err(LayoutError { tensor: "M", rule: format!("holds {} floats, needs Z·H·N = {}", a.m.len(), z * h * n) }.into());
        }
        if !(a.sm_scale.is_finite() && a.sm_scale > 0.0) {
            return Err(LayoutError { tensor: "sm_scale", rule: format!("{} must be finite and positive", a.sm_scale) }.into());
        }
        let fits_i32 = |x: usize| x <= i32::MAX as usize;
        if !(fits_i32(z * h * n) && fits_i32(n + self.spec.block_m() as usize) && fits_i32(z * h)) {
            return Err(LayoutError { tensor: "Q", rule: format!("Z·H·N = {} overflows the kernel's 32-bit row indices", z * h * n) }.into());
        }
        let (grid_x, grid_y, _) = self.spec.grid(z as u32, h as u32, n as u32);
        if grid_y > 65_535 {
            return Err(LayoutError { tensor: "Q", rule: format!("Z·H = {grid_y} exceeds the 65535 grid rows of one launch") }.into());
        }
        let cfg = LaunchConfig { grid_dim: (grid_x, grid_y, 1), block_dim: (self.spec.threads(), 1, 1), shared_mem_bytes: self.shared_bytes };
        let st = |l: &Layout| l.strides.map(|s| s as i64);
        let (sq, sk, sv, so) = (st(&a.q.1), st(&a.k.1), st(&a.v.1), st(&a.o.1));
        let (zi, hi, ni) = (z as i32, h as i32, n as i32);
        let mut b = gpu.stream.launch_builder(&self.function);
        b.arg(a.q.0).arg(a.k.0).arg(a.v.0).arg(&a.sm_scale).arg(&mut *a.m).arg(&mut *a.o.0);
        for s in sq.iter().chain(&sk).chain(&sv).chain(&so) {
            b.arg(s);
        }
        b.arg(&zi).arg(&hi).arg(&ni);
        // # Safety
        // 1. The argument list matches the kernel ABI (docs/ABI.md): 3 input pointers, sm_scale, M, Out,
        //    16 i64 strides, Z, H, N_CTX, in that order.
        // 2. Every element the kernel reads or writes lies inside its buffer: each layout was checked
        //    against its buffer's length above, and M holds Z·H·N floats.
        // 3. Block size and dynamic shared memory are the spec's own, raised on the function at load.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
