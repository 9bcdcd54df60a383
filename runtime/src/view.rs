//! Borrowed tensor views: a device address, an element type and a strided [Z, H, N, D] layout over memory
//! that someone else owns (a PyTorch tensor, a candle storage, a range of a `CudaSlice`). The kernels read
//! and write through views; `Tensor` (owned) hands out views of itself.
//!
//! What a view promises is checked where it is made, once: the base address is 16-byte aligned (cp.async
//! and TMA move aligned 16-byte chunks; a misaligned base would kill the CUDA context with
//! CUDA_ERROR_MISALIGNED_ADDRESS), the layout's strides are legal for the kernels, and every element the
//! layout reaches lies inside the memory the view was given.

use crate::{Layout, LayoutError};
use cudarc::driver::{CudaSlice, DevicePtr};
use flashgen::DType;
use std::marker::PhantomData;

/// Bytes a view's base address must be a multiple of.
pub const BASE_ALIGNMENT: u64 = 16;

/// A read-only view of a 16-bit tensor on the GPU.
#[derive(Clone, Copy, Debug)]
pub struct TensorView<'a> {
    addr: u64,
    pub dtype: DType,
    pub layout: Layout,
    _borrow: PhantomData<&'a ()>,
}

/// A view the kernels write (an output): the same promises, and nothing else reads or writes it meanwhile.
#[derive(Debug)]
pub struct TensorViewMut<'a> {
    addr: u64,
    pub dtype: DType,
    pub layout: Layout,
    _borrow: PhantomData<&'a mut ()>,
}

/// The checks every view passes: alignment of the base, the layout's rules, the extent within `available`.
fn check(tensor: &'static str, addr: u64, available: usize, layout: &Layout) -> Result<(), LayoutError> {
    if layout.shape.contains(&0) {
        // an empty tensor: nothing is read or written through it (the calls launch nothing)
        return Ok(());
    }
    if !addr.is_multiple_of(BASE_ALIGNMENT) {
        return Err(LayoutError {
            tensor,
            rule: format!(
                "base address {addr:#x} is not {BASE_ALIGNMENT}-byte aligned ({} bytes past a boundary): the kernels load 16-byte chunks; start the view at a multiple of 8 elements (copy the tensor, or slice it elsewhere)",
                addr % BASE_ALIGNMENT
            ),
        });
    }
    layout.check(tensor, available)
}

/// The layout and address of tokens `range` of a [Z, H, N, D] view (dimension 2), or why they cannot be one.
fn tokens_of(tensor: &'static str, addr: u64, layout: &Layout, range: &std::ops::Range<usize>) -> Result<(u64, Layout), LayoutError> {
    let n = layout.shape[2];
    if range.start > range.end || range.end > n {
        return Err(LayoutError { tensor, rule: format!("tokens {}..{} are not within its {n}", range.start, range.end) });
    }
    let addr = addr + 2 * (range.start * layout.strides[2]) as u64;
    let mut shape = layout.shape;
    shape[2] = range.len();
    let layout = Layout { shape, ..*layout };
    if !layout.shape.contains(&0) && !addr.is_multiple_of(BASE_ALIGNMENT) {
        return Err(LayoutError { tensor, rule: format!("tokens from {} start {} bytes past a 16-byte boundary: the kernels load 16-byte chunks; cut at a token whose offset (token × the token stride {}) is a multiple of 8 elements", range.start, addr % BASE_ALIGNMENT, layout.strides[2]) });
    }
    Ok((addr, layout))
}

impl<'a> TensorView<'a> {
    /// A view of `available` 2-byte elements at device address `addr`, laid out as `layout`.
    ///
    /// # Safety
    /// 1. `addr` is a device address valid in the CUDA context of the `Flash` the view is used with (the
    ///    device's primary context, where PyTorch and candle allocate).
    /// 2. The `available` elements from `addr` lie in one allocation that stays alive, and that nothing
    ///    writes, for `'a`.
    pub unsafe fn from_raw_parts(tensor: &'static str, addr: u64, available: usize, dtype: DType, layout: Layout) -> Result<TensorView<'a>, LayoutError> {
        check(tensor, addr, available, &layout)?;
        Ok(TensorView { addr, dtype, layout, _borrow: PhantomData })
    }

    /// A view of `slice` from element `offset` on, laid out as `layout` (the range it reaches is checked).
    pub fn of_slice(tensor: &'static str, slice: &'a CudaSlice<u16>, offset: usize, dtype: DType, layout: Layout) -> Result<TensorView<'a>, LayoutError> {
        let available = slice.len().checked_sub(offset).ok_or_else(|| LayoutError { tensor, rule: format!("offset {offset} is past the buffer's {} elements", slice.len()) })?;
        let (base, _sync) = slice.device_ptr(slice.stream());
        // SAFETY: the address is inside `slice`, which outlives 'a and is borrowed shared for 'a.
        unsafe { TensorView::from_raw_parts(tensor, base + 2 * offset as u64, available, dtype, layout) }
    }

    /// The device address of element (0, 0, 0, 0).
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Tokens `range` of every sequence (dimension 2): a chunk of the sequence, the same strides. Its
    /// elements are this view's, so only the new base's alignment needs checking.
    pub fn tokens(&self, range: std::ops::Range<usize>) -> Result<TensorView<'a>, LayoutError> {
        let (addr, layout) = tokens_of("(tokens of a view)", self.addr, &self.layout, &range)?;
        Ok(TensorView { addr, dtype: self.dtype, layout, _borrow: PhantomData })
    }
}

impl<'a> TensorViewMut<'a> {
    /// A writable view of `available` 2-byte elements at `addr`, laid out as `layout`.
    ///
    /// # Safety
    /// As `TensorView::from_raw_parts`, and nothing else reads or writes those elements for `'a`.
    pub unsafe fn from_raw_parts(tensor: &'static str, addr: u64, available: usize, dtype: DType, layout: Layout) -> Result<TensorViewMut<'a>, LayoutError> {
        check(tensor, addr, available, &layout)?;
        Ok(TensorViewMut { addr, dtype, layout, _borrow: PhantomData })
    }

    /// A writable view of `slice` from element `offset` on.
    pub fn of_slice(tensor: &'static str, slice: &'a mut CudaSlice<u16>, offset: usize, dtype: DType, layout: Layout) -> Result<TensorViewMut<'a>, LayoutError> {
        let available = slice.len().checked_sub(offset).ok_or_else(|| LayoutError { tensor, rule: format!("offset {offset} is past the buffer's {} elements", slice.len()) })?;
        let (base, _sync) = slice.device_ptr(slice.stream());
        // SAFETY: the address is inside `slice`, which is borrowed exclusively for 'a.
        unsafe { TensorViewMut::from_raw_parts(tensor, base + 2 * offset as u64, available, dtype, layout) }
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// The same memory, read-only, for as long as this borrow.
    pub fn as_view(&self) -> TensorView<'_> {
        TensorView { addr: self.addr, dtype: self.dtype, layout: self.layout, _borrow: PhantomData }
    }

    /// Tokens `range` of every sequence, writable for as long as this borrow (`TensorView::tokens`).
    pub fn tokens(&mut self, range: std::ops::Range<usize>) -> Result<TensorViewMut<'_>, LayoutError> {
        let (addr, layout) = tokens_of("(tokens of a view)", self.addr, &self.layout, &range)?;
        Ok(TensorViewMut { addr, dtype: self.dtype, layout, _borrow: PhantomData })
    }
}

/// A read-only view of `len` elements of `T` on the GPU (row statistics, offsets, scratch).
#[derive(Debug)]
pub struct BufferView<'a, T> {
    addr: u64,
    len: usize,
    _borrow: PhantomData<&'a [T]>,
}

// (manual: a view is a borrowed address, copyable whatever `T` is)
impl<T> Clone for BufferView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for BufferView<'_, T> {}

/// A view of `len` elements of `T` that the kernels write.
#[derive(Debug)]
pub struct BufferViewMut<'a, T> {
    addr: u64,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<'a, T> BufferView<'a, T> {
    /// A view of `len` elements at `addr` (each parameter's alignment is checked where a launch takes it).
    ///
    /// # Safety
    /// As `TensorView::from_raw_parts`: `len` elements of `T` at `addr`, alive and unwritten for `'a`.
    pub unsafe fn from_raw_parts(addr: u64, len: usize) -> BufferView<'a, T> {
        BufferView { addr, len, _borrow: PhantomData }
    }

    /// The whole of `slice`.
    pub fn of(slice: &'a CudaSlice<T>) -> BufferView<'a, T> {
        let (addr, _sync) = slice.device_ptr(slice.stream());
        BufferView { addr, len: slice.len(), _borrow: PhantomData }
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<'a, T> BufferViewMut<'a, T> {
    /// A writable view of `len` elements at `addr`.
    ///
    /// # Safety
    /// As `TensorViewMut::from_raw_parts`.
    pub unsafe fn from_raw_parts(addr: u64, len: usize) -> BufferViewMut<'a, T> {
        BufferViewMut { addr, len, _borrow: PhantomData }
    }

    /// The whole of `slice`, borrowed exclusively.
    pub fn of(slice: &'a mut CudaSlice<T>) -> BufferViewMut<'a, T> {
        let (addr, _sync) = slice.device_ptr(slice.stream());
        BufferViewMut { addr, len: slice.len(), _borrow: PhantomData }
    }

    pub fn addr(&self) -> u64 {
        self.addr
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The same memory, read-only, for as long as this borrow.
    pub fn as_view(&self) -> BufferView<'_, T> {
        BufferView { addr: self.addr, len: self.len, _borrow: PhantomData }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misaligned_base_is_refused_before_any_launch() {
        let layout = Layout::contiguous(1, 2, 64, 64);
        // a packed QKV tensor's K starts one head dim later: aligned; one element later is not
        let ok = unsafe { TensorView::from_raw_parts("K", 0x7f00_0000_0080, layout.extent(), DType::Bf16, layout) };
        assert!(ok.is_ok());
        let e = unsafe { TensorView::from_raw_parts("K", 0x7f00_0000_0082, layout.extent(), DType::Bf16, layout) }.unwrap_err();
        assert_eq!(e.tensor, "K");
        assert!(e.rule.contains("not 16-byte aligned (2 bytes past a boundary)"), "{}", e.rule);
        // the layout's own rules still apply, and the extent must fit what the view was given
        let e = unsafe { TensorView::from_raw_parts("Q", 0x1000, layout.extent() - 1, DType::Bf16, layout) }.unwrap_err();
        assert!(e.rule.contains("but the buffer holds"), "{}", e.rule);
        let strided = Layout { shape: [1, 2, 64, 64], strides: [8192, 4096, 65, 1] };
        assert!(unsafe { TensorView::from_raw_parts("Q", 0x1000, 1 << 20, DType::Bf16, strided) }.unwrap_err().rule.contains("not a multiple of 8"));
    }
}
