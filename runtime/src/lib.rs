//! flashgen runtime: turn "attention forward on these tensors" into a specialized, cached, launched kernel.
//! cudarc loads the driver dynamically: nothing of CUDA is needed to build, only the driver to run.
//!
//! Layers, bottom up: `jit` (PTX -> a module, compiled whole by the driver), `cache` (memory + disk, Triton's
//! layout), `kernel` (one loaded kernel, the checks every launch shares), `forward` / `backward` (the launches),
//! `api` (`Flash::attention_forward`, `Flash::attention_backward`).
//! Kernels come from LLVM in-process (feature `jit`, default) or prebuilt (`KernelSource::embedded` /
//! `from_dir`), in which case no LLVM is linked.

pub mod api;
pub mod autotune;
pub mod backward;
pub mod cache;
pub mod call;
pub mod decode;
pub mod env;
pub mod forward;
pub mod geometry;
pub mod jit;
pub mod kernel;
pub mod layout;
pub mod lse;
pub mod modifiers;
pub mod ring;
pub mod ring_ranks;
pub mod stream;
pub mod tensor;
pub mod tma;
pub mod view;

pub use api::{Flash, ForwardOutput, Gradients, RowStats};
pub use call::{BackwardCall, ForwardCall, StatsIn, StatsOut};
pub use modifiers::{CallModifiers, ModTensor};
pub use ring::{RingShape, VirtualRing};
pub use ring_ranks::{LocalLink, Meeting, RankRing, RingLink, Transfer};
pub use decode::{BlockTable, DecodeGeometry, DecodeRun, KvCacheCall, Paging};
pub use stream::Stream;
pub use geometry::{CausalAlign, Geometry, VarLen};
pub use flashgen::reference::Window;
/// The cudarc this runtime is built on (its `CudaSlice`s are what the owned API takes).
pub use cudarc;
pub use flashgen::{BackwardPath, Plan, PlanOptions, Problem};
pub use backward::{BackwardArgs, BackwardKernels, FusedScratch};
pub use cache::{CacheError, KernelCache, KernelSource};
pub use forward::ForwardArgs;
pub use kernel::LoadedKernel;
pub use layout::{Layout, LayoutError};
pub use tensor::Tensor;
pub use view::{BufferView, BufferViewMut, TensorView, TensorViewMut};

use cudarc::driver::{CudaContext, CudaStream, DriverError};
use flashgen::Arch;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error("device: {0}")]
    Device(String),
    #[error("kernel {kernel}: {detail}")]
    Kernel { kernel: String, detail: String },
    #[error("{0}")]
    Argument(String),
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// One GPU: its context, a stream, and the flashgen target that runs on it.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub arch: Arch,
    pub capability: (u32, u32),
    pub name: String,
    /// Streaming multiprocessors: a persistent kernel's grid (one resident program per SM).
    pub sm_count: u32,
}

impl Gpu {
    /// Open device `ordinal`. Fails cleanly when no driver or no device is present.
    pub fn open(ordinal: usize) -> Result<Gpu, RuntimeError> {
        // cudarc panics when libcuda cannot be loaded; a machine without a GPU is a normal case here,
        // so the panic is caught and its message kept off the terminal.
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let opened = std::panic::catch_unwind(|| CudaContext::new(ordinal));
        std::panic::set_hook(quiet);
        let ctx = opened.map_err(|_| RuntimeError::Device("the CUDA driver library (libcuda.so) could not be loaded".into()))??;
        let (major, minor) = ctx.compute_capability()?;
        let arch = Arch::from_capability(major as u32, minor as u32).ok_or_else(|| {
            RuntimeError::Device(format!("compute capability {major}.{minor} is not a flashgen target (sm_80, sm_86, sm_89, sm_90)"))
        })?;
        let name = ctx.name()?;
        let stream = ctx.default_stream();
        let sm_count = ctx.attribute(cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        Ok(Gpu { ctx, stream, arch, capability: (major as u32, minor as u32), name, sm_count })
    }
}
