//! Device tensors of 16-bit elements (bf16 or fp16) with a [Z, H, N, D] layout.

use crate::{Gpu, Layout, RuntimeError};
use cudarc::driver::CudaSlice;
use flashgen::DType;

/// A [Z, H, N, D] tensor on the GPU: 16-bit elements of `dtype`, any strides `layout` allows.
pub struct Tensor {
    pub data: CudaSlice<u16>,
    pub dtype: DType,
    pub layout: Layout,
}

pub fn to_bits(dtype: DType, x: f32) -> u16 {
    match dtype {
        DType::Bf16 => half::bf16::from_f32(x).to_bits(),
        DType::F16 => half::f16::from_f32(x).to_bits(),
    }
}

pub fn from_bits(dtype: DType, b: u16) -> f32 {
    match dtype {
        DType::Bf16 => half::bf16::from_bits(b).to_f32(),
        DType::F16 => half::f16::from_bits(b).to_f32(),
    }
}

impl Tensor {
    /// This tensor as the kernels read it; `name` names it in errors (its fields are public, so its layout
    /// is checked against its buffer here).
    pub fn view(&self, name: &'static str) -> Result<crate::TensorView<'_>, crate::LayoutError> {
        crate::TensorView::of_slice(name, &self.data, 0, self.dtype, self.layout)
    }

    /// This tensor as the kernels write it.
    pub fn view_mut(&mut self, name: &'static str) -> Result<crate::TensorViewMut<'_>, crate::LayoutError> {
        crate::TensorViewMut::of_slice(name, &mut self.data, 0, self.dtype, self.layout)
    }

    /// Upload `values`, given in logical [Z, H, N, D] order, into memory laid out as `layout`.
    pub fn from_f32(gpu: &Gpu, values: &[f32], dtype: DType, layout: Layout) -> Result<Tensor, RuntimeError> {
        let [z, h, n, d] = layout.shape;
        if values.len() != z * h * n * d {
            return Err(RuntimeError::Argument(format!("{} values for shape {:?} (needs {})", values.len(), layout.shape, z * h * n * d)));
        }
        let mut mem = vec![0u16; layout.extent()];
        for (i, &x) in values.iter().enumerate() {
            let (hz, row, col) = (i / (n * d), (i / d) % n, i % d);
            mem[layout.offset(hz / h, hz % h, row, col)] = to_bits(dtype, x);
        }
        Ok(Tensor { data: gpu.stream.clone_htod(&mem)?, dtype, layout })
    }

    /// An uninitialized-looking tensor: every element set to `bits` (tests poison outputs with NaN).
    pub fn filled(gpu: &Gpu, bits: u16, dtype: DType, layout: Layout) -> Result<Tensor, RuntimeError> {
        Ok(Tensor { data: gpu.stream.clone_htod(&vec![bits; layout.extent()])?, dtype, layout })
    }

    /// Download in logical [Z, H, N, D] order.
    pub fn to_f32(&self, gpu: &Gpu) -> Result<Vec<f32>, RuntimeError> {
        let mem: Vec<u16> = gpu.stream.clone_dtoh(&self.data)?;
        Ok(decode(&mem, self.dtype, self.layout))
    }
}

/// Raw memory laid out as `layout` -> values in logical [Z, H, N, D] order.
pub fn decode(mem: &[u16], dtype: DType, layout: Layout) -> Vec<f32> {
    let [z, h, n, d] = layout.shape;
    (0..z * h * n * d)
        .map(|i| {
            let (hz, row, col) = (i / (n * d), (i / d) % n, i % d);
            from_bits(dtype, mem[layout.offset(hz / h, hz % h, row, col)])
        })
        .collect()
}
