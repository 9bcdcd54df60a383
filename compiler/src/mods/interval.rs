//! Interval analysis: the set of values every node can take when the variables range over boxes.
//!
//! One pass serves three purposes: the checker's proofs (no integer intermediate leaves i32, no divisor
//! can be 0) under the assumed bounds below, and block classification (can this mask be false, or true,
//! anywhere in a query block x key block). Results are sound (they contain every value the f64 interpreter
//! or the f32 kernel can produce) and exact where it is cheap to be: an integer node that is affine in
//! the variables (q_idx - kv_idx + 3) gets its exact range from its linear form, so the comparisons of
//! causal masks and sliding windows are decided exactly, not just bounded.
//!
//! Floats: every operation's range is widened outward (relative 2^-20 for arithmetic, 2e-3 plus 1e-6
//! for the MUFU approximations tanh, ex2, lg2, sqrt) and values beyond f32's range become infinite, so
//! that the kernel's f32 rounding, flush-to-zero and approximate intrinsics stay inside; NaN is tracked
//! as a flag (comparisons with NaN are false, except `!=`).

use super::ast::{BinOp, CmpOp, Func, ModError, Rule, Var};
use super::typed::{Node, Scalar, TExpr, TensorDecl, Ty};

/// Positions (q_idx, kv_idx) are assumed below 2^24 = 16,777,216 tokens.
pub const MAX_POSITION: i64 = 1 << 24;
/// Batch indices are assumed below 2^20.
pub const MAX_BATCH: i64 = 1 << 20;
/// Head indices are assumed below 2^16.
pub const MAX_HEADS: i64 = 1 << 16;
/// Values of i32 tensors are assumed within ±2^24 (they are positions, lengths, offsets).
pub const MAX_INT_TENSOR: i64 = 1 << 24;

/// Saturation of integer bounds: anything at ±2^62 means "unbounded".
const BIG: i128 = 1 << 62;

const REL_ARITH: f64 = 1.0 / (1u64 << 20) as f64;
const ABS_ARITH: f64 = 1.2e-38; // f32's smallest normal: below it the kernel's ftz gives 0
const REL_MUFU: f64 = 2e-3;
const ABS_MUFU: f64 = 1e-6;

/// A range of floats, `nan` when NaN is possible.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FRange {
    pub lo: f64,
    pub hi: f64,
    pub nan: bool,
}

impl FRange {
    pub const ANY: FRange = FRange { lo: f64::NEG_INFINITY, hi: f64::INFINITY, nan: true };
    pub fn point(v: f64) -> FRange {
        if v.is_nan() {
            return FRange { lo: f64::INFINITY, hi: f64::NEG_INFINITY, nan: true };
        }
        FRange { lo: v, hi: v, nan: false }
    }
    fn has_inf(&self) -> bool {
        self.lo == f64::NEG_INFINITY || self.hi == f64::INFINITY
    }
    fn has_zero(&self) -> bool {
        self.lo <= 0.0 && self.hi >= 0.0
    }
    fn hull(a: FRange, b: FRange) -> FRange {
        FRange { lo: a.lo.min(b.lo), hi: a.hi.max(b.hi), nan: a.nan || b.nan }
    }
    /// Outward by `rel`·|bound| + `abs`; beyond f32's largest finite value becomes infinite.
    fn widen(self, rel: f64, abs: f64) -> FRange {
        let out = |v: f64, dir: f64| {
            if !v.is_finite() {
                return v;
            }
            let w = v + dir * (v.abs() * rel + abs);
            if w.abs() >= f32::MAX as f64 {
                dir * f64::INFINITY
            } else {
                w
            }
        };
        FRange { lo: out(self.lo, -1.0), hi: out(self.hi, 1.0), nan: self.nan }
    }
}

/// The values one node can take.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Range {
    Int(i64, i64),
    Float(FRange),
    Bool { can_true: bool, can_false: bool },
}

impl Range {
    fn int(lo: i128, hi: i128) -> Range {
        Range::Int(lo.clamp(-BIG, BIG) as i64, hi.clamp(-BIG, BIG) as i64)
    }
    pub fn as_int(&self) -> (i64, i64) {
        match *self {
            Range::Int(lo, hi) => (lo, hi),
            _ => (-BIG as i64, BIG as i64),
        }
    }
    pub fn as_float(&self) -> FRange {
        match *self {
            Range::Float(f) => f,
            Range::Int(lo, hi) => int_to_float(lo, hi),
            Range::Bool { .. } => FRange::ANY,
        }
    }
    pub fn as_bool(&self) -> (bool, bool) {
        match *self {
            Range::Bool { can_true, can_false } => (can_true, can_false),
            _ => (true, true),
        }
    }
    fn contains_zero(&self) -> bool {
        match *self {
            Range::Int(lo, hi) => lo <= 0 && hi >= 0,
            Range::Float(f) => f.has_zero(),
            Range::Bool { .. } => true,
        }
    }
    fn hull(a: Range, b: Range) -> Range {
        match (a, b) {
            (Range::Int(a0, a1), Range::Int(b0, b1)) => Range::Int(a0.min(b0), a1.max(b1)),
            (Range::Bool { can_true: t0, can_false: f0 }, Range::Bool { can_true: t1, can_false: f1 }) => {
                Range::Bool { can_true: t0 || t1, can_false: f0 || f1 }
            }
            (a, b) => Range::Float(FRange::hull(a.as_float(), b.as_float())),
        }
    }
}

fn int_to_float(lo: i64, hi: i64) -> FRange {
    let r = FRange { lo: lo as f64, hi: hi as f64, nan: false };
    // i32 -> f32 is exact up to 2^24; beyond, it rounds.
    if lo.abs() > 1 << 24 || hi.abs() > 1 << 24 {
        r.widen(1.0 / (1u64 << 23) as f64, 0.0)
    } else {
        r
    }
}

/// The box the variables range over, and each tensor's values.
#[derive(Clone, Debug)]
pub struct Env {
    pub b: (i64, i64),
    pub h: (i64, i64),
    pub q: (i64, i64),
    pub kv: (i64, i64),
    pub score: FRange,
    /// One per declared tensor, in declaration order.
    pub tensors: Vec<Range>,
}

impl Env {
    /// What the checker assumes: every position below 2^24, heads below 2^16, batch below 2^20, any score,
    /// i32 tensors within ±2^24 and f32 tensors anything (NaN included).
    pub fn assumed(decls: &[TensorDecl]) -> Env {
        Env {
            b: (0, MAX_BATCH - 1),
            h: (0, MAX_HEADS - 1),
            q: (0, MAX_POSITION - 1),
            kv: (0, MAX_POSITION - 1),
            score: FRange::ANY,
            tensors: decls.iter().map(|d| unknown_tensor(d.dtype)).collect(),
        }
    }
}

pub(crate) fn unknown_tensor(dtype: Scalar) -> Range {
    match dtype {
        Scalar::I32 => Range::Int(-MAX_INT_TENSOR, MAX_INT_TENSOR),
        Scalar::F32 => Range::Float(FRange::ANY),
    }
}

/// An integer node as Σ coef·atom + c (atoms: b, h, q_idx, kv_idx, integer tensor values).
#[derive(Clone, Debug, Default, PartialEq)]
struct Lin {
    terms: Vec<(Atom, i128)>,
    c: i128,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Var(Var),
    Load(usize),
}

/// Coefficients beyond this are not tracked (the node falls back to interval arithmetic).
const LIN_LIMIT: i128 = 1 << 40;

impl Lin {
    fn atom(a: Atom) -> Lin {
        Lin { terms: vec![(a, 1)], c: 0 }
    }
    fn constant(&self) -> Option<i128> {
        self.terms.is_empty().then_some(self.c)
    }
    fn combine(&self, other: &Lin, k: i128) -> Option<Lin> {
        let mut terms = self.terms.clone();
        for &(a, c) in &other.terms {
            match terms.iter_mut().find(|(b, _)| *b == a) {
                Some(t) => t.1 += k * c,
                None => terms.push((a, k * c)),
            }
        }
        terms.retain(|t| t.1 != 0);
        terms.sort();
        Lin { terms, c: self.c + k * other.c }.bounded()
    }
    fn scale(&self, k: i128) -> Option<Lin> {
        if k == 0 {
            return Some(Lin::default());
        }
        Lin { terms: self.terms.iter().map(|&(a, c)| (a, c * k)).collect(), c: self.c * k }.bounded()
    }
    fn bounded(self) -> Option<Lin> {
        (self.c.abs() < LIN_LIMIT && self.terms.iter().all(|t| t.1.abs() < LIN_LIMIT)).then_some(self)
    }
    fn range(&self, env: &Env) -> Range {
        let (mut lo, mut hi) = (self.c, self.c);
        for &(a, k) in &self.terms {
            let (a0, a1) = match a {
                Atom::Var(Var::B) => env.b,
                Atom::Var(Var::H) => env.h,
                Atom::Var(Var::QIdx) => env.q,
                Atom::Var(Var::KvIdx) => env.kv,
                Atom::Var(Var::Score) => (-BIG as i64, BIG as i64),
                Atom::Load(i) => env.tensors[i].as_int(),
            };
            let (x, y) = (k * a0 as i128, k * a1 as i128);
            lo += x.min(y);
            hi += x.max(y);
        }
        Range::int(lo, hi)
    }
}

fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// What the checker does with the ranges: refuse overflows and divisors that may be 0.
pub(crate) struct Strict<'a> {
    pub decls: &'a [TensorDecl],
}

pub(crate) struct Analysis<'a> {
    pub env: &'a Env,
    pub strict: Option<Strict<'a>>,
}

type Out = Result<(Range, Option<Lin>), ModError>;

impl<'a> Analysis<'a> {
    /// The range of `e` (never fails unless strict).
    pub fn range(&self, e: &TExpr) -> Result<Range, ModError> {
        Ok(self.node(e)?.0)
    }

    fn overflow(&self, e: &TExpr, r: Range) -> Result<(), ModError> {
        let (Some(s), Range::Int(lo, hi)) = (&self.strict, r) else { return Ok(()) };
        if lo >= i32::MIN as i64 && hi <= i32::MAX as i64 {
            return Ok(());
        }
        let show = |v: i64| {
            if v.unsigned_abs() as i128 >= BIG {
                if v < 0 {
                    "-inf".to_string()
                } else {
                    "+inf".to_string()
                }
            } else {
                v.to_string()
            }
        };
        Err(ModError::new(
            Rule::Overflow,
            e.span,
            format!(
                "`{}` may overflow i32: it ranges over [{}, {}] with the assumed bounds (q_idx, kv_idx < 2^24, h < 2^16, b < 2^20, i32 tensors within ±2^24)",
                e.text(s.decls),
                show(lo),
                show(hi)
            ),
            "keep integer intermediates within i32 (e.g. divide before multiplying, use smaller constants), or compute in float by starting with a float literal, e.g. 1.0 * q_idx * kv_idx",
        ))
    }

    fn divisor(&self, d: &TExpr, r: Range) -> Result<(), ModError> {
        let Some(s) = &self.strict else { return Ok(()) };
        if !r.contains_zero() {
            return Ok(());
        }
        let why = if d.any(&|e| matches!(e.node, Node::Load(_))) {
            " (tensor values are not known when the kernel is specialized)".to_string()
        } else {
            match r {
                Range::Int(lo, hi) => format!(" (it ranges over [{lo}, {hi}] with the assumed bounds)"),
                Range::Float(f) => format!(" (it ranges over [{:?}, {:?}] with the assumed bounds)", f.lo, f.hi),
                _ => String::new(),
            }
        };
        Err(ModError::new(
            Rule::DivisorMayBeZero,
            d.span,
            format!("the divisor `{}` may be 0{why}", d.text(s.decls)),
            "divide by a non-zero constant, or by an expression that cannot be 0: e.g. max(x, 1) or abs(x) + 1 for integers, max(t[h], 1e-6) for a positive tensor (or pass 1/t as the tensor and multiply)",
        ))
    }

    fn node(&self, e: &TExpr) -> Out {
        let r = self.node_inner(e)?;
        self.overflow(e, r.0)?;
        Ok(r)
    }

    fn node_inner(&self, e: &TExpr) -> Out {
        let env = self.env;
        let int_lin = |lin: Lin| {
            let r = lin.range(env);
            Ok((r, Some(lin)))
        };
        match &e.node {
            Node::Int(v) => int_lin(Lin { terms: vec![], c: *v as i128 }),
            Node::Float(v) => {
                let f = *v as f32 as f64;
                Ok((Range::Float(FRange::hull(FRange::point(*v), FRange::point(f))), None))
            }
            Node::Bool(v) => Ok((Range::Bool { can_true: *v, can_false: !*v }, None)),
            Node::Var(Var::Score) => Ok((Range::Float(env.score), None)),
            Node::Var(v) => int_lin(Lin::atom(Atom::Var(*v))),
            Node::Load(i) => match env.tensors[*i] {
                Range::Int(..) => int_lin(Lin::atom(Atom::Load(*i))),
                r => Ok((r, None)),
            },
            Node::Neg(a) => {
                let (r, lin) = self.node(a)?;
                Ok(match r {
                    Range::Int(lo, hi) => (Range::int(-(hi as i128), -(lo as i128)), lin.and_then(|l| l.scale(-1))),
                    _ => {
                        let f = r.as_float();
                        (Range::Float(FRange { lo: -f.hi, hi: -f.lo, nan: f.nan }), None)
                    }
                })
            }
            Node::Not(a) => {
                let (t, f) = self.node(a)?.0.as_bool();
                Ok((Range::Bool { can_true: f, can_false: t }, None))
            }
            Node::ToFloat(a) => Ok((Range::Float(self.node(a)?.0.as_float()), None)),
            Node::Bin(op, a, b) => {
                let (ra, la) = self.node(a)?;
                let (rb, lb) = self.node(b)?;
                if matches!(op, BinOp::Div | BinOp::FloorDiv | BinOp::Mod) {
                    self.divisor(b, rb)?;
                }
                if e.ty == Ty::Int {
                    return Ok(int_bin(*op, ra.as_int(), rb.as_int(), la, lb, env));
                }
                Ok((Range::Float(float_bin(*op, ra.as_float(), rb.as_float())), None))
            }
            Node::Cmp(op, a, b) => {
                let (ra, la) = self.node(a)?;
                let (rb, lb) = self.node(b)?;
                let (t, f) = match (ra, rb) {
                    (Range::Int(..), Range::Int(..)) => {
                        // Compare the difference when both sides are affine: exact, whatever their correlation.
                        let diff = la.zip(lb).and_then(|(x, y)| x.combine(&y, -1));
                        let (lo, hi) = match diff {
                            Some(d) => d.range(env).as_int(),
                            None => {
                                let ((a0, a1), (b0, b1)) = (ra.as_int(), rb.as_int());
                                Range::int(a0 as i128 - b1 as i128, a1 as i128 - b0 as i128).as_int()
                            }
                        };
                        cmp_int(*op, lo, hi)
                    }
                    (Range::Bool { can_true: t0, can_false: f0 }, Range::Bool { can_true: t1, can_false: f1 }) => {
                        let (same, differ) = ((t0 && t1) || (f0 && f1), (t0 && f1) || (f0 && t1));
                        if *op == CmpOp::Eq {
                            (same, differ)
                        } else {
                            (differ, same)
                        }
                    }
                    _ => cmp_float(*op, ra.as_float(), rb.as_float()),
                };
                Ok((Range::Bool { can_true: t, can_false: f }, None))
            }
            Node::And(a, b) => {
                let (t0, f0) = self.node(a)?.0.as_bool();
                let (t1, f1) = self.node(b)?.0.as_bool();
                Ok((Range::Bool { can_true: t0 && t1, can_false: f0 || f1 }, None))
            }
            Node::Or(a, b) => {
                let (t0, f0) = self.node(a)?.0.as_bool();
                let (t1, f1) = self.node(b)?.0.as_bool();
                Ok((Range::Bool { can_true: t0 || t1, can_false: f0 && f1 }, None))
            }
            Node::Where(c, a, b) => {
                let (t, f) = self.node(c)?.0.as_bool();
                let (ra, la) = self.node(a)?;
                let (rb, lb) = self.node(b)?;
                Ok(match (t, f) {
                    (true, false) => (ra, la),
                    (false, true) => (rb, lb),
                    _ => (Range::hull(ra, rb), None),
                })
            }
            Node::Call(func, args) => {
                let mut rs = Vec::with_capacity(args.len());
                for a in args {
                    rs.push(self.node(a)?.0);
                }
                Ok((call(*func, &rs, e.ty), None))
            }
        }
    }
}

fn int_bin(op: BinOp, (a0, a1): (i64, i64), (b0, b1): (i64, i64), la: Option<Lin>, lb: Option<Lin>, env: &Env) -> (Range, Option<Lin>) {
    let (a0, a1, b0, b1) = (a0 as i128, a1 as i128, b0 as i128, b1 as i128);
    let lin = match (op, &la, &lb) {
        (BinOp::Add, Some(x), Some(y)) => x.combine(y, 1),
        (BinOp::Sub, Some(x), Some(y)) => x.combine(y, -1),
        (BinOp::Mul, Some(x), Some(y)) => match (x.constant(), y.constant()) {
            (_, Some(k)) => x.scale(k),
            (Some(k), _) => y.scale(k),
            _ => None,
        },
        _ => None,
    };
    if let Some(l) = lin {
        return (l.range(env), Some(l));
    }
    let corners = |f: &dyn Fn(i128, i128) -> i128| {
        let c = [f(a0, b0), f(a0, b1), f(a1, b0), f(a1, b1)];
        Range::int(*c.iter().min().unwrap(), *c.iter().max().unwrap())
    };
    let r = match op {
        BinOp::Add => Range::int(a0 + b0, a1 + b1),
        BinOp::Sub => Range::int(a0 - b1, a1 - b0),
        BinOp::Mul => corners(&|x, y| x * y),
        // Only reached with a divisor range that excludes 0 (the checker's rule); otherwise anything.
        BinOp::FloorDiv if b0 > 0 || b1 < 0 => corners(&|x, y| floor_div(x, y)),
        BinOp::Mod if b0 == b1 && b0 != 0 => {
            // Within one period of the divisor the remainder is monotone; across periods it is anything
            // in the divisor's half-open range.
            if floor_div(a0, b0) == floor_div(a1, b0) {
                Range::int(a0 - b0 * floor_div(a0, b0), a1 - b0 * floor_div(a1, b0))
            } else if b0 > 0 {
                Range::int(0, b0 - 1)
            } else {
                Range::int(b0 + 1, 0)
            }
        }
        BinOp::Mod if b0 > 0 => Range::int(0, b1 - 1),
        BinOp::Mod if b1 < 0 => Range::int(b0 + 1, 0),
        _ => Range::int(-BIG, BIG),
    };
    (r, None)
}

fn float_bin(op: BinOp, a: FRange, b: FRange) -> FRange {
    let nan_in = a.nan || b.nan;
    let r = match op {
        BinOp::Add | BinOp::Sub => {
            let b = if op == BinOp::Sub { FRange { lo: -b.hi, hi: -b.lo, nan: b.nan } } else { b };
            // inf + -inf is NaN
            let nan = (a.lo == f64::NEG_INFINITY && b.hi == f64::INFINITY) || (a.hi == f64::INFINITY && b.lo == f64::NEG_INFINITY);
            let lo = a.lo + b.lo;
            let hi = a.hi + b.hi;
            FRange { lo: if lo.is_nan() { f64::NEG_INFINITY } else { lo }, hi: if hi.is_nan() { f64::INFINITY } else { hi }, nan: nan_in || nan }
        }
        BinOp::Mul | BinOp::Div => {
            if op == BinOp::Div && b.has_zero() {
                return FRange::ANY;
            }
            let f = |x: f64, y: f64| if op == BinOp::Mul { x * y } else { x / y };
            let c = [f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)];
            let nan = c.iter().any(|v| v.is_nan())
                || (op == BinOp::Mul && ((a.has_zero() && b.has_inf()) || (b.has_zero() && a.has_inf())))
                || (op == BinOp::Div && a.has_inf() && b.has_inf());
            let finite = c.iter().copied().filter(|v| !v.is_nan());
            let (mut lo, mut hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
            if nan {
                // 0·inf and inf/inf: the limits around them are 0 or unbounded
                lo = lo.min(0.0);
                hi = hi.max(0.0);
                if a.has_inf() || b.has_inf() {
                    lo = f64::NEG_INFINITY;
                    hi = f64::INFINITY;
                }
            }
            FRange { lo, hi, nan: nan_in || nan }
        }
        // Integer-only operators: never reached for floats.
        BinOp::FloorDiv | BinOp::Mod => FRange::ANY,
    };
    r.widen(REL_ARITH, ABS_ARITH)
}

fn cmp_int(op: CmpOp, lo: i64, hi: i64) -> (bool, bool) {
    // `a op b` for a - b in [lo, hi]
    match op {
        CmpOp::Lt => (lo < 0, hi >= 0),
        CmpOp::Le => (lo <= 0, hi > 0),
        CmpOp::Gt => (hi > 0, lo <= 0),
        CmpOp::Ge => (hi >= 0, lo < 0),
        CmpOp::Eq => (lo <= 0 && hi >= 0, !(lo == 0 && hi == 0)),
        CmpOp::Ne => (!(lo == 0 && hi == 0), lo <= 0 && hi >= 0),
    }
}

fn cmp_float(op: CmpOp, a: FRange, b: FRange) -> (bool, bool) {
    let nan = a.nan || b.nan;
    let overlap = a.lo <= b.hi && b.lo <= a.hi;
    let single_equal = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
    let (t, f) = match op {
        CmpOp::Lt => (a.lo < b.hi, a.hi >= b.lo),
        CmpOp::Le => (a.lo <= b.hi, a.hi > b.lo),
        CmpOp::Gt => (a.hi > b.lo, a.lo <= b.hi),
        CmpOp::Ge => (a.hi >= b.lo, a.lo < b.hi),
        CmpOp::Eq => (overlap, !single_equal),
        CmpOp::Ne => (!single_equal || nan, overlap),
    };
    if op == CmpOp::Ne {
        (t, f)
    } else {
        (t, f || nan)
    }
}

fn call(f: Func, r: &[Range], ty: Ty) -> Range {
    let mono = |x: FRange, g: fn(f64) -> f64| FRange { lo: g(x.lo), hi: g(x.hi), nan: x.nan }.widen(REL_MUFU, ABS_MUFU);
    match f {
        Func::Tanh => Range::Float(mono(r[0].as_float(), f64::tanh)),
        Func::Exp => Range::Float(mono(r[0].as_float(), f64::exp)),
        Func::Exp2 => Range::Float(mono(r[0].as_float(), f64::exp2)),
        Func::Log | Func::Log2 | Func::Sqrt => {
            let x = r[0].as_float();
            let g: fn(f64) -> f64 = match f {
                Func::Log => f64::ln,
                Func::Log2 => f64::log2,
                _ => f64::sqrt,
            };
            if x.hi < 0.0 {
                return Range::Float(FRange::ANY);
            }
            // Below 0 the result is NaN; the rest is monotone.
            let m = mono(FRange { lo: x.lo.max(0.0), hi: x.hi, nan: x.nan || x.lo < 0.0 }, g);
            // ftz: the kernel flushes subnormal inputs to 0 (log(0) = -inf)
            let m = if f != Func::Sqrt && x.lo < 1.2e-38 { FRange { lo: f64::NEG_INFINITY, ..m } } else { m };
            Range::Float(m)
        }
        Func::Floor | Func::Ceil => {
            let x = r[0].as_float();
            let g = if f == Func::Floor { f64::floor } else { f64::ceil };
            Range::Float(FRange { lo: g(x.lo), hi: g(x.hi), nan: x.nan })
        }
        Func::Abs => match r[0] {
            Range::Int(lo, hi) => {
                let (lo, hi) = (lo as i128, hi as i128);
                if lo >= 0 {
                    Range::int(lo, hi)
                } else if hi <= 0 {
                    Range::int(-hi, -lo)
                } else {
                    Range::int(0, hi.max(-lo))
                }
            }
            x => {
                let x = x.as_float();
                let (lo, hi) = if x.lo >= 0.0 {
                    (x.lo, x.hi)
                } else if x.hi <= 0.0 {
                    (-x.hi, -x.lo)
                } else {
                    (0.0, x.hi.max(-x.lo))
                };
                Range::Float(FRange { lo, hi, nan: x.nan })
            }
        },
        Func::Min | Func::Max => {
            let pick = |x: f64, y: f64| if f == Func::Min { x.min(y) } else { x.max(y) };
            if ty == Ty::Int {
                let ((a0, a1), (b0, b1)) = (r[0].as_int(), r[1].as_int());
                let p = |x: i64, y: i64| if f == Func::Min { x.min(y) } else { x.max(y) };
                return Range::Int(p(a0, b0), p(a1, b1));
            }
            let (a, b) = (r[0].as_float(), r[1].as_float());
            // minnum/maxnum return the other operand when one is NaN: then the result is that operand.
            let mut out = FRange { lo: pick(a.lo, b.lo), hi: pick(a.hi, b.hi), nan: a.nan && b.nan };
            for (x, other_nan) in [(b, a.nan), (a, b.nan)] {
                if other_nan {
                    out = FRange { nan: out.nan, ..FRange::hull(out, x) };
                }
            }
            Range::Float(out)
        }
        // `where` is Node::Where, never a call.
        Func::Where => Range::Float(FRange::ANY),
    }
}
