//! The forward in f64, one query row at a time: scores against the visible keys, softmax, O = P·V, LSE.
//! Rows are independent, so a caller may split them over threads ([`forward_row`]).

use std::ops::Range;

use super::problem::{Qkv, QueryRow, RefProblem, RowRules};
use super::{Attention, RCP_LN2};

/// q·k in f64 over the shorter of the two (both are head-dim rows of the same length).
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum()
}

/// The softmax of one query row over its visible keys, in f64.
pub(crate) struct RowSoftmax {
    /// The visible keys, ascending.
    pub keys: Vec<usize>,
    /// P_ij for each of them (summing to 1).
    pub p: Vec<f64>,
    /// d score / d(q·k) for each of them (empty unless asked for).
    pub dscore: Vec<f64>,
    /// ln Σ exp(s_ij); −∞ when no key is visible.
    pub lse: f64,
}

/// Row `rules` of query `q` against keys `keys` (a range within the row's band; `key(j)` is K's row j):
/// masked pairs and scores of −∞ drop out. With `derivative`, also d score / d(q·k).
pub(crate) fn row_softmax<'k>(rules: &RowRules<'_>, q: &[f32], keys: Range<usize>, key: impl Fn(usize) -> &'k [f32], derivative: bool) -> RowSoftmax {
    let mut visible = Vec::new();
    let mut scores = Vec::new();
    let mut dscore = Vec::new();
    for j in keys.filter(|&j| rules.visible(j)) {
        let (s, ds) = if derivative { rules.transform_with_derivative(j, dot(q, key(j))) } else { (rules.transform(j, dot(q, key(j))), 0.0) };
        if s == f64::NEG_INFINITY {
            continue; // a score_mod that masks
        }
        visible.push(j);
        scores.push(s);
        if derivative {
            dscore.push(ds);
        }
    }
    let max = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if visible.is_empty() {
        return RowSoftmax { keys: visible, p: scores, dscore, lse: f64::NEG_INFINITY };
    }
    let mut p: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let sum: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= sum);
    RowSoftmax { keys: visible, p, dscore, lse: max + sum.ln() }
}

/// O_i = Σ_j P_ij V_j into `o_row` (0 for a row with no visible key).
pub(crate) fn weighted_values<'v>(sm: &RowSoftmax, value: impl Fn(usize) -> &'v [f32], o_row: &mut [f64]) {
    o_row.iter_mut().for_each(|x| *x = 0.0);
    for (&j, &p) in sm.keys.iter().zip(&sm.p) {
        for (o, &v) in o_row.iter_mut().zip(value(j)) {
            *o += p * v as f64;
        }
    }
}

/// One query row of [`forward`]: writes O's row (D_v values) into `o_row` and returns the row's LSE in
/// natural log (M = LSE · log2 e); a row that sees no key gets O = 0 and LSE = −∞.
pub fn forward_row(p: &RefProblem, x: &Qkv<'_>, row: QueryRow, o_row: &mut [f64]) -> f64 {
    forward_row_keys(p, x, row, None, o_row)
}

/// [`forward_row`] over the keys of `split` only (sequence-local indices; the others count as masked):
/// one split-KV partial.
pub(crate) fn forward_row_keys(p: &RefProblem, x: &Qkv<'_>, row: QueryRow, split: Option<Range<usize>>, o_row: &mut [f64]) -> f64 {
    let l = p.layouts();
    let rules = p.row_rules(row);
    let kv_head = p.kv_head_of(row.h);
    let q_at = p.q_offset(&l, row);
    let q = &x.q[q_at..q_at + p.d_qk];
    let mut keys = rules.keys();
    if let Some(s) = split {
        keys = keys.start.max(s.start)..keys.end.min(s.end);
    }
    let key = |j: usize| {
        let at = p.k_offset(&l, row.b, kv_head, j);
        &x.k[at..at + p.d_qk]
    };
    let value = |j: usize| {
        let at = p.v_offset(&l, row.b, kv_head, j);
        &x.v[at..at + p.d_v]
    };
    let sm = row_softmax(&rules, q, keys, key, false);
    weighted_values(&sm, value, o_row);
    sm.lse
}

/// The forward of a whole problem in f64: O in the problem's O layout, LSE (natural log) and M (base 2)
/// in its LSE layout. Elements of the buffers no row addresses (padding in custom layouts) are 0.
///
/// # Panics
/// If the problem or the buffers fail [`RefProblem::validate`].
pub fn forward(p: &RefProblem, x: &Qkv<'_>) -> Attention<f64> {
    forward_keys(p, x, |_| None)
}

/// [`forward`] restricted to a range of keys per sequence (`split(b)`; None: all of them).
pub(crate) fn forward_keys(p: &RefProblem, x: &Qkv<'_>, split: impl Fn(usize) -> Option<Range<usize>>) -> Attention<f64> {
    if let Err(e) = p.validate(Some(x)) {
        panic!("reference forward: {e}");
    }
    let l = p.layouts();
    let mut o = vec![0f64; p.o_len()];
    let mut lse = vec![0f64; p.lse_len()];
    for row in p.rows() {
        let at = p.o_offset(&l, row);
        lse[p.lse_offset(&l, row)] = forward_row_keys(p, x, row, split(row.b), &mut o[at..at + p.d_v]);
    }
    let m = lse.iter().map(|x| x * RCP_LN2).collect();
    Attention { o, lse, m }
}

/// The split-KV partials of [`forward`]: split s covers keys [`split_keys`](super::split_keys)(N_kv,
/// block_n, num_splits, s) of each sequence; O and LSE in the problem's layouts. Merged by
/// [`combine`](super::combine) they equal [`forward`].
pub fn forward_splits(p: &RefProblem, x: &Qkv<'_>, num_splits: usize, block_n: usize) -> Vec<Attention<f64>> {
    (0..num_splits).map(|s| forward_keys(p, x, |b| Some(super::split_keys(p.seq(b).n_kv, block_n, num_splits, s)))).collect()
}
