//! Split-KV: the keys of a row split into ranges, one partial result (O_s, LSE_s) per range, merged by
//! their log-sum-exps. The merge is exact: for softmax weights over disjoint key sets,
//!
//! ```text
//! LSE = ln Σ_s exp(LSE_s),   O = Σ_s exp(LSE_s − LSE) · O_s
//! ```
//!
//! A split in which the row sees no key has O_s = 0 and LSE_s = −∞ and weighs 0; when every split is
//! like that the row saw nothing: O = 0, LSE = −∞, as in one pass.

use std::ops::Range;

use super::{Attention, RCP_LN2};

/// The base of the partials' log-sum-exps: natural (LSE) or 2 (M, what the kernels write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogBase {
    Natural,
    Two,
}

impl LogBase {
    /// This base's value of a natural-log LSE.
    fn of_natural(self, lse: f64) -> f64 {
        match self {
            LogBase::Natural => lse,
            LogBase::Two => lse * RCP_LN2,
        }
    }
    fn to_natural(self, x: f64) -> f64 {
        match self {
            LogBase::Natural => x,
            LogBase::Two => x / RCP_LN2,
        }
    }
}

/// The keys split `split` of `num_splits` covers in a sequence of `n_kv` keys, FlashAttention's rule:
/// the ⌈n_kv / block_n⌉ blocks are dealt in runs of ⌈blocks / num_splits⌉, so the last splits may be
/// empty (their partials are O = 0, LSE = −∞).
pub fn split_keys(n_kv: usize, block_n: usize, num_splits: usize, split: usize) -> Range<usize> {
    let blocks = n_kv.div_ceil(block_n.max(1));
    let per_split = blocks.div_ceil(num_splits.max(1));
    let start = (split * per_split * block_n).min(n_kv);
    let end = ((split + 1) * per_split * block_n).min(n_kv);
    start..end
}

/// Merge one row's partials (O_s, log-sum-exp_s in `base`) into `o_row`; returns the merged
/// log-sum-exp in the same base. In f64 whatever the partials' type, so the reference for a combine kernel
/// takes exactly the partials that kernel read.
pub fn combine_row<T: Copy + Into<f64>>(parts: &[(&[T], T)], base: LogBase, o_row: &mut [f64]) -> f64 {
    o_row.iter_mut().for_each(|x| *x = 0.0);
    let lse: Vec<f64> = parts.iter().map(|&(_, l)| base.to_natural(l.into())).collect();
    let max = lse.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let total = max + lse.iter().map(|l| (l - max).exp()).sum::<f64>().ln();
    for (&(o_s, _), &l) in parts.iter().zip(&lse) {
        let w = (l - total).exp();
        if w > 0.0 {
            o_row.iter_mut().zip(o_s).for_each(|(o, &x)| *o += w * x.into());
        }
    }
    base.of_natural(total)
}

/// One partial result in some layout: O and its log-sum-exps (in the combine's base).
#[derive(Clone, Copy, Debug)]
pub struct Partial<'a, T> {
    pub o: &'a [T],
    pub lse: &'a [T],
}

/// Merge whole partial results that share one layout: `rows` lists each row's (O offset, LSE offset),
/// rows have `d_v` elements. The result has the partials' layout (elements no row addresses are 0), its
/// LSE in natural log and M in base 2 whatever `base` the partials use.
pub fn combine<T: Copy + Into<f64>>(parts: &[Partial<'_, T>], rows: impl IntoIterator<Item = (usize, usize)>, d_v: usize, base: LogBase) -> Attention<f64> {
    let (o_len, lse_len) = parts.first().map_or((0, 0), |p| (p.o.len(), p.lse.len()));
    let mut o = vec![0f64; o_len];
    let mut lse = vec![0f64; lse_len];
    for (o_at, lse_at) in rows {
        let row: Vec<(&[T], T)> = parts.iter().map(|p| (&p.o[o_at..o_at + d_v], p.lse[lse_at])).collect();
        lse[lse_at] = base.to_natural(combine_row(&row, base, &mut o[o_at..o_at + d_v]));
    }
    let m = lse.iter().map(|x| x * RCP_LN2).collect();
    Attention { o, lse, m }
}
