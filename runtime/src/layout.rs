//! Strided [Z, H, N, D] tensor layouts, checked once before any launch.

/// Element strides of a [Z, H, N, D] tensor (the head dim must be contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub shape: [usize; 4],
    pub strides: [usize; 4],
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("tensor {tensor}: {rule}")]
pub struct LayoutError {
    pub tensor: &'static str,
    pub rule: String,
}

impl Layout {
    /// Row-major contiguous [Z, H, N, D].
    pub fn contiguous(z: usize, h: usize, n: usize, d: usize) -> Layout {
        Layout { shape: [z, h, n, d], strides: [h * n * d, n * d, d, 1] }
    }

    /// [Z, N, H, D] memory viewed as [Z, H, N, D] (the "BSHD" layout of most inference code).
    pub fn bshd(z: usize, h: usize, n: usize, d: usize) -> Layout {
        Layout { shape: [z, h, n, d], strides: [n * h * d, d, h * d, 1] }
    }

    /// One past the largest element offset the layout reaches; usize::MAX where that does not fit a usize
    /// (strides from a caller can be anything: a wrapped sum would pass the buffer check below).
    pub fn extent(&self) -> usize {
        let reach = self.shape.iter().zip(&self.strides).try_fold(1usize, |sum, (&s, &st)| s.saturating_sub(1).checked_mul(st).and_then(|r| sum.checked_add(r)));
        reach.unwrap_or(usize::MAX)
    }

    /// Element offset of (z, h, n, d).
    pub fn offset(&self, z: usize, h: usize, n: usize, d: usize) -> usize {
        z * self.strides[0] + h * self.strides[1] + n * self.strides[2] + d * self.strides[3]
    }

    /// The rules every kernel operand obeys: contiguous head dim; the other strides multiples of 8 elements
    /// (cp.async moves aligned 16-byte chunks); the buffer holds every element.
    pub fn check(&self, tensor: &'static str, buffer_len: usize) -> Result<(), LayoutError> {
        let err = |rule: String| Err(LayoutError { tensor, rule });
        if self.shape.contains(&0) {
            return err(format!("shape {:?} has a zero dimension: every dimension must be at least 1", self.shape));
        }
        if self.strides[3] != 1 {
            return err(format!("head-dim stride is {}: the head dim must be contiguous (stride 1)", self.strides[3]));
        }
        if let Some(i) = (0..3).find(|&i| !self.strides[i].is_multiple_of(8)) {
            return err(format!("stride {} of dim {i} is not a multiple of 8 elements (16 bytes), which cp.async needs", self.strides[i]));
        }
        let extent = self.extent();
        if extent == usize::MAX {
            return err(format!("strides {:?} over shape {:?} reach past the address space", self.strides, self.shape));
        }
        if extent > buffer_len {
            return err(format!("layout reaches element {} but the buffer holds {buffer_len}", extent - 1));
        }
        Ok(())
    }
}
