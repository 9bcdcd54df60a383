//! What the forward and backward checks share: tolerances, poison values, guard zones.

use flashgen::DType;

/// Tolerances against the f64 reference (relative error of the whole tensor): O, the row statistics M,
/// the gradients.
pub const O_TOL: f64 = 1e-2;
pub const M_TOL: f64 = 1e-3;
pub const GRAD_TOL: f64 = 2e-2;

/// Elements past each output's end that must stay untouched (the poison survives).
pub const GUARD: usize = 4096;

/// NaN in the dtype's bits: outputs are poisoned with it before a launch, so every element must be written.
pub fn nan_bits(dtype: DType) -> u16 {
    match dtype {
        DType::Bf16 => 0x7FC0,
        DType::F16 => 0x7E00,
    }
}
