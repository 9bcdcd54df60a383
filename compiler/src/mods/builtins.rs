//! The usual modifiers, written in the language, so a kernel treats them like any user expression (one
//! code path, one cache key scheme) and `key()` tells them apart from user text only by what they compute.

use super::ast::{abs, tanh, Expr, ModError, Rule, Var};
use super::typed::{Scalar, TensorDecl};
use super::{MaskMod, ScoreMod};

/// Causal, aligned to the bottom-right when `offset` = n_kv - n_q (FlashAttention's convention for
/// unequal lengths; 0 is FlexAttention's `q_idx >= kv_idx`): keep kv_idx <= q_idx + offset.
pub fn causal_expr(offset: i64) -> Expr {
    Expr::kv_idx().le(shift(Expr::q_idx(), offset))
}

pub fn causal(offset: i64) -> Result<MaskMod, ModError> {
    MaskMod::new(&causal_expr(offset), &[])
}

fn shift(e: Expr, by: i64) -> Expr {
    match by {
        0 => e,
        k if k < 0 => e - Expr::int(-k),
        k => e + Expr::int(k),
    }
}

/// FlashAttention's window (left, right) around the diagonal q_idx + offset: keep
/// q_idx + offset - left <= kv_idx <= q_idx + offset + right; `None` is unbounded on that side
/// (FA's -1). Causal with a left window is `sliding_window(Some(left), Some(0), offset)`.
pub fn sliding_window_expr(left: Option<u32>, right: Option<u32>, offset: i64) -> Expr {
    let lo = left.map(|l| Expr::kv_idx().ge(shift(Expr::q_idx(), offset - l as i64)));
    let hi = right.map(|r| Expr::kv_idx().le(shift(Expr::q_idx(), offset + r as i64)));
    match (lo, hi) {
        (Some(a), Some(b)) => a.and(b),
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => Expr::bool(true),
    }
}

pub fn sliding_window(left: Option<u32>, right: Option<u32>, offset: i64) -> Result<MaskMod, ModError> {
    MaskMod::new(&sliding_window_expr(left, right, offset), &[])
}

/// Softcap: cap · tanh(score / cap) (Gemma 2: 50 on attention logits; FA's `softcap`).
pub fn softcap_expr(cap: f64) -> Expr {
    Expr::float(cap) * tanh(Expr::score() / Expr::float(cap))
}

pub fn softcap(cap: f64) -> Result<ScoreMod, ModError> {
    if !(cap.is_finite() && cap > 0.0) {
        return Err(ModError::new(
            Rule::DivisorMayBeZero,
            None,
            format!("softcap {cap} is not a positive finite number"),
            "pass a cap > 0 (e.g. 30.0 or 50.0)",
        ));
    }
    ScoreMod::new(&softcap_expr(cap), &[])
}

/// ALiBi as the issue and FlexAttention write it: score + slope[h] · (kv_idx - q_idx), with `slopes` a
/// per-head f32 tensor (the slopes are positive and the bias negative for past keys).
pub fn alibi_expr(slopes: &str) -> Expr {
    Expr::score() + Expr::tensor(slopes, Var::H) * (Expr::kv_idx() - Expr::q_idx())
}

pub fn alibi(slopes: &str) -> Result<ScoreMod, ModError> {
    ScoreMod::new(&alibi_expr(slopes), &[TensorDecl::per_head(slopes, Scalar::F32)])
}

/// ALiBi as FlashAttention 2 defines it for non-causal attention: score - slope[h] · |q_idx + offset - kv_idx|.
/// Under a causal mask it equals `alibi` up to a per-row constant, which the softmax cancels.
pub fn alibi_symmetric_expr(slopes: &str, offset: i64) -> Expr {
    Expr::score() - Expr::tensor(slopes, Var::H) * abs(shift(Expr::q_idx(), offset) - Expr::kv_idx())
}

pub fn alibi_symmetric(slopes: &str, offset: i64) -> Result<ScoreMod, ModError> {
    ScoreMod::new(&alibi_symmetric_expr(slopes, offset), &[TensorDecl::per_head(slopes, Scalar::F32)])
}
