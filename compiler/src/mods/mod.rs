//! Score and mask modifiers (FlexAttention's `score_mod` / `mask_mod`) compiled into the kernels at
//! specialization time.
//!
//! # The language
//!
//! Expressions over `b` (batch index), `h` (query head), `q_idx`, `kv_idx` (i32, absolute positions in
//! the sequence, as FlexAttention defines them), `score` (f32: q·kᵀ·sm_scale, score_mod only), declared
//! per-head or per-batch scalar tensors `name[h]` / `name[b]` (f32 or i32), literals (`3`, `30.0`, `1e-3`,
//! `inf`, `true`, `false`), `+ - * / // %`, comparisons, `&& || !`, unary `-`, and the functions tanh,
//! exp, exp2, log, log2, sqrt, abs, min, max, floor, ceil, where(cond, a, b). `/` is true division (f32,
//! as Python's); `//` and `%` are Python's floor division and modulo on integers (block-causal document
//! masks: `q_idx // 128 >= kv_idx // 128`). i32 promotes to f32 wherever a float is needed.
//!
//! Checked before anything is generated (`ModError` names the rule, the column and the fix): unknown
//! names and functions, types, tensor indices (only `h` or `b`, as declared), `score` in a mask_mod, a
//! divisor that may be 0 (only non-zero constants or expressions the interval analysis proves non-zero),
//! integer intermediates that may overflow i32 with positions < 2^24 (see `interval`), f32 literals that
//! overflow or flush to zero.
//!
//! # What the kernels get
//!
//! - Naming and caching: `key()` is the canonical text including the kind and the tensor declarations
//!   (`score_mod(slope: f32[h]): score + slope[h] * (kv_idx - q_idx)`): put it in the cache key. `hash()`
//!   is its first 8 hex digits of SHA-256: put it in kernel names (e.g. `..._sm1a2b3c4d`).
//! - ABI: one `ptr addrspace(1)` kernel parameter per declared tensor, in declaration order, after the
//!   kernel's own parameters; a per-head tensor holds one value per query head (H values), a per-batch
//!   tensor one per batch entry (Z values), contiguous, 4-byte aligned.
//! - IR (`ScoreMod::ir`, `MaskMod::ir` -> `ModIr`):
//!   1. `render_prologue(&ProgramInputs { b, h, tensors }, prefix)` once per program (b, h: i32 operands;
//!      tensors: the pointer parameters' names), at a point that dominates every use below;
//!   2. `render_element(&prologue, &ElementInputs { q_idx, kv_idx, score }, prefix)` per score element,
//!      with a distinct prefix each time; the result `value` is a float operand (the new score, same
//!      units as `score`: the kernel multiplies by log2 e afterwards as it does today) or an i1 (true =
//!      keep); with `ir_with_grad`, `grad` is d(value)/d(score) for the backward's dS;
//!   3. masks: `render_block_range(&prologue, q_first, q_last, BLOCK_N, n_kv, prefix)` per query tile:
//!      the K/V blocks `first..=last` the tile visits and the unmasked ones `full_first..=full_last` (i32
//!      operands; `render_tile_range` gives the same as key bounds);
//!   4. `missing_declarations(&[&ir, ...], template_text)`: the `declare` lines to add to the module.
//! - Value names are `%<prefix>.<n>`. Subexpressions of the row (q_idx) or the column (kv_idx) alone come
//!   out identical across a tile's elements when the template passes one SSA name per row and per
//!   column, so LLVM's early-cse computes them once.
//! - Backward: with s the scaled score and m = score_mod(s), dS = P ⊙ (dP − Δ) ⊙ grad, then · sm_scale as
//!   today; masked elements have P = 0.
//! - CPU reference: `eval_score` / `eval_mask` (f64 interpreter with f32's range), `eval_grad`.
//! - Block sparsity: `MaskMod::classify` (one block, proved by interval analysis), `block_mask` (a
//!   program's grid), `kv_bounds`, `tile_keys` and `blocks` (closed-form K/V ranges per query tile when
//!   the mask is affine in kv_idx).

mod ast;
mod blocks;
pub mod builtins;
mod check;
mod eval;
mod grad;
mod interval;
mod ir;
mod parse;
mod typed;
#[cfg(feature = "llvm")]
mod verify;

pub use ast::{abs, ceil, exp, exp2, floor, log, log2, max, min, sqrt, tanh, where_, BinOp, CmpOp, Expr, ExprKind, Func, ModError, Rule, Span, Var};
pub use blocks::{Affine, BlockClass, BlockRange, Bound, KvBounds, KvSet, Region, TileKeys};
pub use check::ModKind;
pub use eval::{EvalError, Point, TensorData, Tensors};
pub use interval::{MAX_BATCH, MAX_HEADS, MAX_INT_TENSOR, MAX_POSITION};
pub use ir::{missing_declarations, BlockRangeIr, Declaration, Element, ElementInputs, IrError, ModIr, ProgramInputs, Prologue, QueryRange, TileRange};
pub use parse::{MAX_DEPTH, MAX_SOURCE_LEN};
pub use typed::{Node, PerIndex, Scalar, TExpr, TensorDecl, Ty};
#[cfg(feature = "llvm")]
pub use verify::{compile_ptx, verify_ir};

use check::Checker;
use sha2::{Digest, Sha256};
use crate::reference::Window;

/// A checked expression with its canonical text.
#[derive(Clone, Debug)]
struct Compiled {
    kind: ModKind,
    tensors: Vec<TensorDecl>,
    expr: TExpr,
    text: String,
    key: String,
    hash: String,
}

fn compile(kind: ModKind, expr: &Expr, tensors: &[TensorDecl], src: Option<&str>) -> Result<Compiled, ModError> {
    let checked = Checker { kind, decls: tensors, src }.check_root(expr).map_err(|mut e| {
        e.kind = kind.name();
        e.source = src.map(str::to_string);
        e
    })?;
    let text = checked.text(tensors);
    let decls: Vec<String> = tensors.iter().map(|d| d.to_string()).collect();
    let key = if decls.is_empty() { format!("{}: {text}", kind.name()) } else { format!("{}({}): {text}", kind.name(), decls.join(", ")) };
    let digest = Sha256::digest(key.as_bytes());
    let hash = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    Ok(Compiled { kind, tensors: tensors.to_vec(), expr: checked, text, key, hash })
}

fn parse_and_compile(kind: ModKind, src: &str, tensors: &[TensorDecl]) -> Result<Compiled, ModError> {
    let e = parse::parse(src).map_err(|mut e| {
        e.kind = kind.name();
        e.source = Some(src.to_string());
        e
    })?;
    compile(kind, &e, tensors, Some(src))
}

/// Declarations of two modifiers together: the same name must mean the same tensor.
fn merge_decls(a: &[TensorDecl], b: &[TensorDecl]) -> Result<Vec<TensorDecl>, ModError> {
    let mut out = a.to_vec();
    for d in b {
        match out.iter().find(|x| x.name == d.name) {
            Some(x) if x == d => {}
            Some(x) => {
                return Err(ModError::new(Rule::Declaration, None, format!("tensor `{}` is declared as {x} and as {d}", d.name), "rename one of them"));
            }
            None => out.push(d.clone()),
        }
    }
    Ok(out)
}

macro_rules! common {
    () => {
        /// The checked, typed tree.
        pub fn expr(&self) -> &TExpr {
            &self.c.expr
        }
        /// The canonical text of the expression alone (`score + slope[h] * (kv_idx - q_idx)`).
        pub fn text(&self) -> &str {
            &self.c.text
        }
        /// The cache key: kind, declarations and canonical text. Stable across releases of this module
        /// for the same meaning.
        pub fn key(&self) -> &str {
            &self.c.key
        }
        /// 8 hex digits of SHA-256 of `key()`, for kernel names.
        pub fn hash(&self) -> &str {
            &self.c.hash
        }
        /// The declared tensors, in ABI order.
        pub fn tensors(&self) -> &[TensorDecl] {
            &self.c.tensors
        }
        /// The untyped tree of the canonical text (to combine with other expressions).
        pub fn to_expr(&self) -> Expr {
            self.c.expr.to_expr(&self.c.tensors)
        }
    };
}

/// A checked score_mod: `f(score, b, h, q_idx, kv_idx) -> f32`, applied to the scaled score before the
/// softmax.
#[derive(Clone, Debug)]
pub struct ScoreMod {
    c: Compiled,
    grad: TExpr,
}

impl PartialEq for ScoreMod {
    fn eq(&self, other: &ScoreMod) -> bool {
        self.c.key == other.c.key
    }
}

impl ScoreMod {
    /// Parse and check `src` with the declared tensors.
    pub fn parse(src: &str, tensors: &[TensorDecl]) -> Result<ScoreMod, ModError> {
        ScoreMod::from_compiled(parse_and_compile(ModKind::Score, src, tensors)?)
    }

    /// Check a tree made with the builder.
    pub fn new(expr: &Expr, tensors: &[TensorDecl]) -> Result<ScoreMod, ModError> {
        ScoreMod::from_compiled(compile(ModKind::Score, expr, tensors, None)?)
    }

    fn from_compiled(c: Compiled) -> Result<ScoreMod, ModError> {
        debug_assert_eq!(c.kind, ModKind::Score);
        let grad = grad::derivative(&c.expr);
        Ok(ScoreMod { c, grad })
    }

    common!();

    /// `score` unchanged: the kernel needs no modifier at all.
    pub fn is_identity(&self) -> bool {
        self.c.expr.node == Node::Var(Var::Score)
    }

    /// d(score_mod)/d(score), simplified (`1.0` for ALiBi).
    pub fn grad(&self) -> &TExpr {
        &self.grad
    }

    /// The gradient's canonical text.
    pub fn grad_text(&self) -> String {
        self.grad.text(&self.c.tensors)
    }

    /// `outer(self)`: `outer` applied to this modifier's result (softcap after ALiBi:
    /// `alibi.then(&softcap)`). The tensors of both are declared; equal names must be equal declarations.
    pub fn then(&self, outer: &ScoreMod) -> Result<ScoreMod, ModError> {
        let tensors = merge_decls(&self.c.tensors, &outer.c.tensors)?;
        ScoreMod::new(&outer.to_expr().substitute(Var::Score, &self.to_expr()), &tensors)
    }

    /// The f64 value at one element; `Err` only for misuse (tensors missing, of the wrong type, or too
    /// short for `b`/`h`).
    pub fn try_eval(&self, p: &Point, tensors: &Tensors) -> Result<f64, EvalError> {
        let data = tensors.bind(&self.c.tensors)?;
        Ok(eval::eval(&self.c.expr, p, &data, &self.c.tensors)?.f())
    }

    /// The reference's entry: the modified score at (b, h, q_idx, kv_idx) for `score`.
    /// Panics on misuse of the tensors (see `try_eval`); the expression itself cannot fail.
    pub fn eval_score(&self, b: i64, h: i64, q_idx: i64, kv_idx: i64, score: f64, tensors: &Tensors) -> f64 {
        self.try_eval(&Point { b, h, q_idx, kv_idx, score }, tensors).unwrap_or_else(|e| panic!("score_mod `{}`: {e}", self.c.text))
    }

    /// d(score_mod)/d(score) at one element (the gradient's expression evaluated).
    pub fn eval_grad(&self, b: i64, h: i64, q_idx: i64, kv_idx: i64, score: f64, tensors: &Tensors) -> f64 {
        let p = Point { b, h, q_idx, kv_idx, score };
        let r = tensors.bind(&self.c.tensors).and_then(|d| eval::eval(&self.grad, &p, &d, &self.c.tensors));
        r.map(|v| v.f()).unwrap_or_else(|e| panic!("score_mod `{}`: {e}", self.c.text))
    }

    /// Bind the tensors once for many evaluations (the reference's inner loop).
    pub fn evaluator<'s>(&'s self, tensors: &'s Tensors) -> Result<ScoreEval<'s>, EvalError> {
        Ok(ScoreEval { m: self, data: tensors.bind(&self.c.tensors)? })
    }

    /// Lowered for the kernel's forward: element results `value` only.
    pub fn ir(&self) -> ModIr {
        ModIr::new(&[&self.c.expr], None, &self.c.tensors, self.c.key.clone())
    }

    /// Lowered for the backward: `value` and `grad`, sharing their common subexpressions.
    pub fn ir_with_grad(&self) -> ModIr {
        ModIr::new(&[&self.c.expr, &self.grad], None, &self.c.tensors, self.c.key.clone())
    }
}

/// A score_mod with its tensors bound.
pub struct ScoreEval<'s> {
    m: &'s ScoreMod,
    data: Vec<&'s TensorData>,
}

impl ScoreEval<'_> {
    pub fn score(&self, p: &Point) -> Result<f64, EvalError> {
        Ok(eval::eval(&self.m.c.expr, p, &self.data, &self.m.c.tensors)?.f())
    }
    pub fn grad(&self, p: &Point) -> Result<f64, EvalError> {
        Ok(eval::eval(&self.m.grad, p, &self.data, &self.m.c.tensors)?.f())
    }
}

/// A checked mask_mod: `f(b, h, q_idx, kv_idx) -> bool`, true = keep.
#[derive(Clone, Debug)]
pub struct MaskMod {
    c: Compiled,
    bounds: KvBounds,
}

impl PartialEq for MaskMod {
    fn eq(&self, other: &MaskMod) -> bool {
        self.c.key == other.c.key
    }
}

impl MaskMod {
    pub fn parse(src: &str, tensors: &[TensorDecl]) -> Result<MaskMod, ModError> {
        Ok(MaskMod::from_compiled(parse_and_compile(ModKind::Mask, src, tensors)?))
    }

    pub fn new(expr: &Expr, tensors: &[TensorDecl]) -> Result<MaskMod, ModError> {
        Ok(MaskMod::from_compiled(compile(ModKind::Mask, expr, tensors, None)?))
    }

    fn from_compiled(c: Compiled) -> MaskMod {
        let bounds = blocks::kv_bounds(&c.expr);
        MaskMod { c, bounds }
    }

    common!();

    /// Both masks (`causal.and(&window)`).
    pub fn and(&self, other: &MaskMod) -> Result<MaskMod, ModError> {
        MaskMod::new(&self.to_expr().and(other.to_expr()), &merge_decls(&self.c.tensors, &other.c.tensors)?)
    }

    /// Either mask.
    pub fn or(&self, other: &MaskMod) -> Result<MaskMod, ModError> {
        MaskMod::new(&self.to_expr().or(other.to_expr()), &merge_decls(&self.c.tensors, &other.c.tensors)?)
    }

    pub fn try_eval(&self, p: &Point, tensors: &Tensors) -> Result<bool, EvalError> {
        let data = tensors.bind(&self.c.tensors)?;
        Ok(eval::eval(&self.c.expr, p, &data, &self.c.tensors)?.b())
    }

    /// The reference's entry: whether (b, h, q_idx, kv_idx) is kept. Panics on misuse of the tensors.
    pub fn eval_mask(&self, b: i64, h: i64, q_idx: i64, kv_idx: i64, tensors: &Tensors) -> bool {
        self.try_eval(&Point { b, h, q_idx, kv_idx, score: 0.0 }, tensors).unwrap_or_else(|e| panic!("mask_mod `{}`: {e}", self.c.text))
    }

    pub fn evaluator<'s>(&'s self, tensors: &'s Tensors) -> Result<MaskEval<'s>, EvalError> {
        Ok(MaskEval { m: self, data: tensors.bind(&self.c.tensors)? })
    }

    /// What the mask does on `region` (sound: `Partial` when not proved). With `tensors`, their values
    /// at the region's b/h (or over all of them) are used; without, tensor values are unknown.
    pub fn classify(&self, region: &Region, tensors: Option<&Tensors>) -> BlockClass {
        let data = tensors.and_then(|t| t.bind(&self.c.tensors).ok());
        blocks::classify(&self.c.expr, &self.c.tensors, region, data.as_deref())
    }

    /// `true`: the kernel needs no mask at all.
    pub fn keeps_all(&self) -> bool {
        self.c.expr.node == Node::Bool(true)
    }

    /// FlexAttention's block mask, proved: the class of every (query block, key block) of a program
    /// (b, h), row-major over `ceil(n_q / block_m)` x `ceil(n_kv / block_n)` blocks (the last ones cut at
    /// n_q and n_kv). For masks the closed-form bounds cannot express (tensor-driven ones), a runtime
    /// can compute this per (b, h) once and hand the kernel its lists of blocks.
    pub fn block_mask(
        &self,
        (n_q, n_kv): (i64, i64),
        (block_m, block_n): (i64, i64),
        b: Option<i64>,
        h: Option<i64>,
        tensors: Option<&Tensors>,
    ) -> Vec<BlockClass> {
        let data = tensors.and_then(|t| t.bind(&self.c.tensors).ok());
        let blocks = |n: i64, size: i64| if size <= 0 { 0 } else { (n.max(0) + size - 1) / size };
        let mut out = Vec::with_capacity((blocks(n_q, block_m) * blocks(n_kv, block_n)) as usize);
        for i in 0..blocks(n_q, block_m) {
            for j in 0..blocks(n_kv, block_n) {
                let r = Region { q: (i * block_m, ((i + 1) * block_m).min(n_q) - 1), kv: (j * block_n, ((j + 1) * block_n).min(n_kv) - 1), b, h };
                out.push(blocks::classify(&self.c.expr, &self.c.tensors, &r, data.as_deref()));
            }
        }
        out
    }

    /// The sliding window (FlashAttention's, around the top-left diagonal: query i keeps key j iff
    /// i - left <= j <= i + right, an absent side unbounded) that this mask is exactly, where it is one:
    /// its key bounds proved exact (the keys needed are the keys visible) and each side q_idx plus a
    /// constant, left of the diagonal or on it for the lower bound, right of it or on it for the upper.
    /// Such a mask runs as the built-in causal diagonal and window (`kernel_window`), whose kernels skip
    /// blocks and mask their edges without evaluating it per element, and whose backward runs fused.
    pub fn as_window(&self) -> Option<Window> {
        let KvBounds { needed, visible } = &self.bounds;
        let KvSet::Range { lo, hi } = needed else { return None };
        // (the bounds are sound: needed ⊇ kept ⊇ visible, so equal ones are the kept set itself)
        if needed != visible || (lo.is_none() && hi.is_none()) {
            return None;
        }
        // a side as q_idx + c, c within what a kernel's i32 window takes
        let offset = |b: &Bound| match b {
            Bound::Affine(Affine { q_coef: 1, rest }) => match rest.node {
                Node::Int(c) if c.unsigned_abs() <= MAX_POSITION as u64 => Some(c),
                _ => None,
            },
            _ => None,
        };
        let side = |b: &Option<Bound>, sign: i64| -> Option<Option<usize>> {
            match b {
                None => Some(None),
                Some(b) => usize::try_from(sign * offset(b)?).ok().map(Some),
            }
        };
        Some(Window { left: side(lo, -1)?, right: side(hi, 1)? })
    }

    /// The closed-form key bounds (see `KvBounds`); `skips_blocks()` says whether there are any.
    pub fn kv_bounds(&self) -> &KvBounds {
        &self.bounds
    }

    /// The keys query tile q.0..=q.1 of program (b, h) needs and sees unmasked.
    pub fn tile_keys(&self, q: (i64, i64), b: i64, h: i64, tensors: &Tensors) -> Result<TileKeys, EvalError> {
        let data = tensors.bind(&self.c.tensors)?;
        Ok(self.bounds.keys(q, b, h, &data, &self.c.tensors))
    }

    /// The K/V blocks of `block_n` keys (of `n_kv`) that query tile q.0..=q.1 visits, and the unmasked ones.
    pub fn blocks(&self, q: (i64, i64), block_n: i64, n_kv: i64, b: i64, h: i64, tensors: &Tensors) -> Result<BlockRange, EvalError> {
        Ok(KvBounds::blocks(self.tile_keys(q, b, h, tensors)?, block_n, n_kv))
    }

    /// Lowered for the kernel: element results are i1 (true = keep); tile ranges from `kv_bounds`.
    pub fn ir(&self) -> ModIr {
        ModIr::new(&[&self.c.expr], Some(self.bounds.clone()), &self.c.tensors, self.c.key.clone())
    }
}

/// A mask_mod with its tensors bound.
pub struct MaskEval<'s> {
    m: &'s MaskMod,
    data: Vec<&'s TensorData>,
}

impl MaskEval<'_> {
    pub fn keep(&self, p: &Point) -> Result<bool, EvalError> {
        Ok(eval::eval(&self.m.c.expr, p, &self.data, &self.m.c.tensors)?.b())
    }
}
