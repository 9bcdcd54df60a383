//! TMA descriptors (CUtensorMap) of the operands fwd_ws and bwd_fused load, built on the host with the driver and passed
//! by value as `__grid_constant__` kernel parameters: 4-D maps over each tensor's own [Z, heads, rows, D]
//! (innermost first for the driver), whose boxes are 64 columns (128 bytes: one 128B-swizzle panel) × the
//! tile's rows. K and V have their own H_KV heads (the kernels address K/V head h / (H / H_KV)); packed
//! sequences' tensors are one batch of total rows (the kernels address a sequence's rows from its offset,
//! and mask what a box reads past its end).

use crate::{Layout, TensorView};
use cudarc::driver::sys;
use flashgen::DType;

/// One CUtensorMap, 64-byte aligned as the driver wants it; the kernel reads it in parameter space.
#[repr(transparent)]
pub struct TensorMap(sys::CUtensorMap);

// SAFETY: a CUtensorMap is 128 plain bytes that the kernel takes by value (a byval [128 x i8] parameter).
unsafe impl cudarc::driver::DeviceRepr for TensorMap {}

impl TensorMap {
    /// A map for a kernel that takes the parameter and never reads it (the decode kernel without
    /// `Schedule::tma_kv`): zero bytes.
    pub fn unused() -> TensorMap {
        // SAFETY: a CUtensorMap is plain bytes; all-zero is a valid value of the type (the kernel never reads it)
        TensorMap(unsafe { std::mem::zeroed() })
    }
}

/// The descriptors of Q, K and V (fwd_ws's parameters `tmap_q`, `tmap_k`, `tmap_v`: flashgen::abi).
pub struct ForwardMaps(pub [TensorMap; 3]);

/// The map of a [Z, H, N, D] tensor at `ptr` with boxes of 64 columns × `box_rows` rows. Rows past N read
/// as zeros. Errors carry the driver's refusal (strides it cannot express, such as 0 for a broadcast head).
pub fn tensor_map(ptr: sys::CUdeviceptr, layout: &Layout, dtype: DType, box_rows: u32) -> Result<TensorMap, String> {
    let [z, h, n, d] = layout.shape;
    let elem = dtype.bytes() as u64;
    let data_type = match dtype {
        DType::Bf16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    let dims: [u64; 4] = [d as u64, n as u64, h as u64, z as u64];
    // byte strides of dims 1..3 (dim 0 is contiguous: Layout::check)
    let strides: [u64; 3] = [layout.strides[2] as u64 * elem, layout.strides[1] as u64 * elem, layout.strides[0] as u64 * elem];
    let boxes: [u32; 4] = [64, box_rows, 1, 1];
    let unit: [u32; 4] = [1; 4];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: every pointer refers to a live local array of the length the rank (4) implies; the driver
    // only writes the 128-byte map, which is zero-initialized.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            data_type,
            4,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            unit.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(format!("the driver cannot describe shape {:?} with strides {:?} for TMA ({r:?})", layout.shape, layout.strides));
    }
    // SAFETY: the call succeeded, so the map is initialized (it was zeroed before in any case)
    Ok(TensorMap(unsafe { map.assume_init() }))
}

/// The maps fwd_ws needs for Q (boxes of BLOCK_M rows), K and V (BLOCK_N rows).
pub fn forward_maps(spec: &flashgen::KernelSpec, q: &TensorView<'_>, k: &TensorView<'_>, v: &TensorView<'_>) -> Result<ForwardMaps, String> {
    let map = |t: &TensorView<'_>, rows: u32| tensor_map(t.addr(), &t.layout, spec.dtype(), rows);
    Ok(ForwardMaps([map(q, spec.block_m())?, map(k, spec.block_n())?, map(v, spec.block_n())?]))
}

/// The maps bwd_fused needs for Q and dO (boxes of BLOCK_M rows): its parameters `tmap_q`, `tmap_do`.
pub fn fused_backward_maps(spec: &flashgen::KernelSpec, q: &TensorView<'_>, d_o: &TensorView<'_>) -> Result<[TensorMap; 2], String> {
    let map = |t: &TensorView<'_>, what: &str| tensor_map(t.addr(), &t.layout, spec.dtype(), spec.block_m()).map_err(|e| format!("{what}: {e}"));
    Ok([map(q, "Q")?, map(d_o, "dO")?])
}

/// The maps the decode kernel's TMA boxes read (`Schedule::tma_kv`: its parameters `tmap_k`, `tmap_v`): the
/// caches viewed [B or pages, H_kv, rows, D], boxes of 64 columns × `KernelSpec::decode_box_rows` rows.
pub fn decode_maps(spec: &flashgen::KernelSpec, k_cache: &crate::TensorViewMut<'_>, v_cache: &crate::TensorViewMut<'_>, page_size: usize) -> Result<[TensorMap; 2], String> {
    let rows = spec.decode_box_rows(page_size as u32);
    let map = |addr, layout: &Layout, what: &str| tensor_map(addr, layout, spec.dtype(), rows).map_err(|e| format!("{what}: {e}"));
    Ok([map(k_cache.addr(), &k_cache.layout, "K_CACHE")?, map(v_cache.addr(), &v_cache.layout, "V_CACHE")?])
}
