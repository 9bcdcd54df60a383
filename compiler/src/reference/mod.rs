//! CPU references for every kernel: attention in f64 over any problem the kernels take (GQA, unequal and
//! packed variable lengths, D_qk ≠ D_v, causal in either alignment, sliding windows, softcap, ALiBi,
//! score_mod/mask_mod closures, any strides), its backward, decoding against a contiguous or paged KV
//! cache, the split-KV combine; and the kernels' own algorithms in f32 (blocks, base-2 online softmax,
//! lazy rescaling, block ranges, the backward's passes), so their logic is checked without a GPU.
//!
//! - [`problem`]: [`RefProblem`], [`ScoreRules`] and the conventions (score order, masks, layouts);
//! - [`forward`] and [`backward`]: f64, row by row / K/V head by K/V head (callers may parallelize);
//! - [`blocks`]: which key (query) blocks a query (key) tile visits and which need the mask;
//! - [`tiled`]: the kernels' algorithms in f32;
//! - [`decode`]: [`KvCacheProblem`], append, paged KV; [`combine`]: split-KV partials and their merge.
//!
//! Inputs are f32 slices (values already rounded to the kernel's dtype), outputs f64 (or f32 for the
//! tiled algorithms). The square MHA functions the CLI has always used ([`naive_f64`], [`naive_f64_row`],
//! [`backward_f64`], [`tiled_f32`], [`block_range`], …) remain, on contiguous [Z, H, N, D] tensors; they
//! are the general code on [`Shape::problem`].

pub mod backward;
pub mod blocks;
pub mod combine;
pub mod decode;
pub mod forward;
pub mod problem;
pub mod tiled;

pub use crate::numeric::{relative_error, SplitMix};
pub use backward::{backward, backward_group, Gradients, GroupGradients};
pub use blocks::{block_range, kv_blocks, q_blocks, Band, Blocks};
pub use combine::{combine, combine_row, split_keys, LogBase, Partial};
pub use decode::{append_kv, decode, decode_row, decode_splits, CacheStorage, KvCacheInputs, KvCacheProblem};
pub use forward::{forward, forward_row, forward_splits};
pub use problem::{Alibi, Alignment, Layout, Layouts, Lengths, Mask, MaskMod, Qkv, QueryRow, RefProblem, RowAt, RowRules, ScoreMod, ScoreRules, Seq, TensorOrder, Window};
pub use tiled::{fused_backward_f32, FusedOrder, ramp_keys, tiled_backward, tiled_backward_f32, tiled_f32, tiled_forward, BackwardInputs, LazyRescale};

/// 1/ln 2 = log2 e: the factor from natural-log LSE to the kernels' base-2 M, folded into qk_scale so
/// that exp becomes exp2.
pub const RCP_LN2: f64 = std::f64::consts::LOG2_E;

/// The square MHA problem of the first kernels: Z sequences, H heads, N queries and keys, head dim D,
/// contiguous [Z, H, N, D].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub z: usize,
    pub h: usize,
    pub n: usize,
    pub d: usize,
}

impl Shape {
    pub fn heads(&self) -> usize {
        self.z * self.h
    }
    pub fn len(&self) -> usize {
        self.heads() * self.n * self.d
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The same problem as a [`RefProblem`]: causal (top-left and bottom-right agree when N_q = N_kv) or
    /// not, with this sm_scale.
    pub fn problem(&self, causal: bool, sm_scale: f64) -> RefProblem {
        RefProblem::new(self.z, self.h, self.n, self.d).causal(causal).sm_scale(sm_scale)
    }
}

/// One forward's results: O, and per query row the log-sum-exp of its scores in natural log (LSE) and in
/// base 2 (M = LSE · log2 e, what the kernels store). Rows that see no key: O = 0, LSE = M = −∞.
#[derive(Clone, Debug)]
pub struct Attention<T> {
    pub o: Vec<T>,
    pub lse: Vec<T>,
    pub m: Vec<T>,
}

/// softmax(Q·Kᵀ·sm_scale [causal]) · V in f64 for the square MHA problem; M in base 2.
pub fn naive_f64(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, sm_scale: f64) -> Attention<f64> {
    forward(&s.problem(causal, sm_scale), &Qkv { q, k, v })
}

/// One query row (`row` counts rows over all heads: hz·N + i) of [`naive_f64`]: writes O's row into `o_row`
/// and returns the row's base-2 log-sum-exp. Rows are independent, so callers may split them over threads.
#[allow(clippy::too_many_arguments)]
pub fn naive_f64_row(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, sm_scale: f64, row: usize, o_row: &mut [f64]) -> f64 {
    let (hz, i) = (row / s.n, row % s.n);
    let r = QueryRow { b: hz / s.h, h: hz % s.h, i };
    forward_row(&s.problem(causal, sm_scale), &Qkv { q, k, v }, r, o_row) * RCP_LN2
}

/// The square MHA backward in f64: with P = softmax(Q·Kᵀ·sm_scale [causal]) and O = P·V,
/// dV = Pᵀ·dO, dP = dO·Vᵀ, Δ_i = rowsum(dO_i ⊙ O_i), dS = P ⊙ (dP − Δ), dQ = dS·K·sm_scale, dK = dSᵀ·Q·sm_scale.
pub fn backward_f64(q: &[f32], k: &[f32], v: &[f32], d_o: &[f32], s: Shape, causal: bool, sm_scale: f64) -> Gradients<f64> {
    backward(&s.problem(causal, sm_scale), &Qkv { q, k, v }, d_o)
}

/// [`relative_error`] for log-sum-exps, where −∞ is a value (rows that see no key): a row the reference
/// has at −∞ must be −∞ in `a` too (else the error is infinite), and the other rows are compared as
/// [`relative_error`] does.
pub fn relative_error_lse<A: Copy + Into<f64>, B: Copy + Into<f64>>(a: &[A], b: &[B]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let (mut finite_a, mut finite_b) = (Vec::with_capacity(a.len()), Vec::with_capacity(b.len()));
    for (&x, &y) in a.iter().zip(b) {
        let (x, y): (f64, f64) = (x.into(), y.into());
        if y == f64::NEG_INFINITY {
            if x != f64::NEG_INFINITY {
                return f64::INFINITY;
            }
        } else {
            finite_a.push(x);
            finite_b.push(y);
        }
    }
    relative_error(&finite_a, &finite_b)
}
