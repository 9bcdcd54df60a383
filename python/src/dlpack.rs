//! DLPack, read-only: the fields of a `DLManagedTensor` (capsule "dltensor") or of a
//! `DLManagedTensorVersioned` (capsule "dltensor_versioned", DLPack 1.x) that a call needs.
//!
//! The capsule is borrowed, not consumed: its name stays, so its producer's destructor frees the
//! managed tensor when Python drops the capsule, as it would for a capsule nobody took. The memory it
//! describes belongs to the caller's tensors, which outlive the call (the wrapper holds them), and
//! everything the kernels do with it is queued on the caller's stream, where the caching allocator
//! orders any reuse (PyTorch's rule for every custom kernel).
//!
//! Hand-written rather than through a DLPack crate: only these structs' first fields are read, both
//! capsule kinds are taken, nothing is allocated, and the extension keeps one dependency (PyO3).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::{c_void, CStr};

// DLDeviceType codes (dlpack.h)
pub const DL_CPU: i32 = 1;
pub const DL_CUDA: i32 = 2;
pub const DL_CUDA_HOST: i32 = 3;
pub const DL_CUDA_MANAGED: i32 = 13;

// DLDataTypeCode codes
pub const DL_INT: u8 = 0;
pub const DL_UINT: u8 = 1;
pub const DL_FLOAT: u8 = 2;
pub const DL_BFLOAT: u8 = 4;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *const i64,
    /// NULL: compact row-major
    strides: *const i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: *mut c_void,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: *mut c_void,
    flags: u64,
    dl_tensor: DLTensor,
}

const READ_ONLY_FLAG: u64 = 1;

/// What a call reads of one tensor.
#[derive(Clone, Debug)]
pub struct Operand {
    pub name: &'static str,
    /// Device address of the first element (data + byte_offset).
    pub addr: u64,
    pub device_type: i32,
    pub device_id: i32,
    pub dtype: DLDataType,
    pub shape: Vec<i64>,
    /// Element strides (filled in for a compact tensor whose capsule gives none).
    pub strides: Vec<i64>,
    /// A DLPack 1.x producer marked the memory read-only.
    pub read_only: bool,
}

impl DLDataType {
    pub fn describe(self) -> String {
        let kind = match self.code {
            DL_INT => "int",
            DL_UINT => "uint",
            DL_FLOAT => "float",
            DL_BFLOAT => "bfloat",
            3 => "opaque handle",
            5 => "complex",
            6 => "bool",
            _ => "type code ",
        };
        let base = if self.code > 6 { format!("{kind}{}/{}", self.code, self.bits) } else { format!("{kind}{}", self.bits) };
        if self.lanes == 1 { base } else { format!("{base}x{}", self.lanes) }
    }
}

/// Read `obj` (a DLPack capsule, or anything with `__dlpack__()`, which is then called without arguments)
/// as operand `name`. The returned capsule must be kept alive while the operand's address is used.
pub fn read<'py>(name: &'static str, obj: &Bound<'py, PyAny>) -> PyResult<(Operand, Bound<'py, PyAny>)> {
    let capsule = if obj.is_instance_of::<PyCapsule>() { obj.clone() } else {
        match obj.getattr("__dlpack__") {
            Ok(f) => f.call0()?,
            Err(_) => {
                return Err(PyValueError::new_err(format!(
                    "{name}: a {} is not a tensor: pass a torch.Tensor (or any DLPack capsule or object with __dlpack__)",
                    obj.get_type().name()?
                )))
            }
        }
    };
    let cap = capsule.cast::<PyCapsule>().map_err(|_| PyValueError::new_err(format!("{name}: __dlpack__() did not return a DLPack capsule")))?;
    let op = unsafe { read_capsule(name, cap)? };
    Ok((op, capsule))
}

unsafe fn read_capsule(name: &'static str, cap: &Bound<'_, PyCapsule>) -> PyResult<Operand> {
    let raw = cap.as_ptr();
    let (tensor, read_only): (*const DLTensor, bool) = if pyo3::ffi::PyCapsule_IsValid(raw, c"dltensor".as_ptr()) == 1 {
        let m = pyo3::ffi::PyCapsule_GetPointer(raw, c"dltensor".as_ptr()) as *const DLManagedTensor;
        if m.is_null() {
            return Err(PyErr::fetch(cap.py()));
        }
        (&(*m).dl_tensor, false)
    } else if pyo3::ffi::PyCapsule_IsValid(raw, c"dltensor_versioned".as_ptr()) == 1 {
        let m = pyo3::ffi::PyCapsule_GetPointer(raw, c"dltensor_versioned".as_ptr()) as *const DLManagedTensorVersioned;
        if m.is_null() {
            return Err(PyErr::fetch(cap.py()));
        }
        if (*m).version.major != 1 {
            return Err(PyValueError::new_err(format!("{name}: DLPack version {}.{} is not understood (1.x is)", (*m).version.major, (*m).version.minor)));
        }
        (&(*m).dl_tensor, (*m).flags & READ_ONLY_FLAG != 0)
    } else {
        let cname = pyo3::ffi::PyCapsule_GetName(raw);
        let shown = if cname.is_null() { "(unnamed)".to_string() } else { CStr::from_ptr(cname).to_string_lossy().into_owned() };
        pyo3::ffi::PyErr_Clear();
        return Err(PyValueError::new_err(format!(
            "{name}: capsule \"{shown}\" is not a DLPack tensor (\"dltensor\" or \"dltensor_versioned\"; a used capsule cannot be read again)"
        )));
    };
    let t = &*tensor;
    if !(0..=16).contains(&t.ndim) {
        return Err(PyValueError::new_err(format!("{name}: DLPack tensor with {} dimensions", t.ndim)));
    }
    let ndim = t.ndim as usize;
    let shape: Vec<i64> = if ndim == 0 { vec![] } else { std::slice::from_raw_parts(t.shape, ndim).to_vec() };
    let strides = if t.strides.is_null() || ndim == 0 {
        let mut s = vec![1i64; ndim];
        for i in (0..ndim.saturating_sub(1)).rev() {
            s[i] = s[i + 1] * shape[i + 1].max(1);
        }
        s
    } else {
        std::slice::from_raw_parts(t.strides, ndim).to_vec()
    };
    Ok(Operand {
        name,
        addr: (t.data as u64).wrapping_add(t.byte_offset),
        device_type: t.device.device_type,
        device_id: t.device.device_id,
        dtype: t.dtype,
        shape,
        strides,
        read_only,
    })
}

/// The name of a DLPack device, as a user would write it.
pub fn device_name(device_type: i32, device_id: i32) -> String {
    match device_type {
        DL_CPU => "cpu".into(),
        DL_CUDA => format!("cuda:{device_id}"),
        DL_CUDA_HOST => "pinned host memory (cuda_host)".into(),
        DL_CUDA_MANAGED => format!("CUDA managed memory (device {device_id})"),
        10 => format!("rocm:{device_id}"),
        8 => "metal".into(),
        other => format!("DLPack device type {other} (id {device_id})"),
    }
}
