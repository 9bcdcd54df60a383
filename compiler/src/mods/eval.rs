//! The f64 interpreter: the meaning of an expression, as the CPU reference computes it.
//!
//! Integers are exact (i64; the checker proved every intermediate fits i32 under its assumptions, so the
//! kernel's i32 arithmetic gives the same values). Floats are f64 with exact functions, but with f32's
//! range: a result beyond f32's largest value is infinite and one below its smallest normal value is 0
//! (the kernel's flush-to-zero), so that the special values agree with the kernel (exp(700) · 0 is NaN in
//! both, not 0 here and NaN there); what remains between the two is the kernel's rounding and its MUFU
//! approximations. `/` is true division, `//` and `%` are Python's floor division and modulo, min/max
//! return the non-NaN operand (as LLVM's minnum).

use super::ast::{BinOp, Func, Var};
use super::interval::MAX_INT_TENSOR;
use super::typed::{Node, PerIndex, Scalar, TExpr, TensorDecl};
use std::fmt;

/// Values of one declared tensor: `heads` or `batch` entries, as declared.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    I32(Vec<i32>),
}

impl TensorData {
    pub fn dtype(&self) -> Scalar {
        match self {
            TensorData::F32(_) => Scalar::F32,
            TensorData::I32(_) => Scalar::I32,
        }
    }
    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::I32(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The tensors' values by name (what the kernel receives as pointers).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tensors {
    entries: Vec<(String, TensorData)>,
}

impl Tensors {
    pub fn new() -> Tensors {
        Tensors::default()
    }
    pub fn with(mut self, name: &str, data: TensorData) -> Tensors {
        self.entries.retain(|(n, _)| n != name);
        self.entries.push((name.into(), data));
        self
    }
    pub fn f32(self, name: &str, values: Vec<f32>) -> Tensors {
        self.with(name, TensorData::F32(values))
    }
    pub fn i32(self, name: &str, values: Vec<i32>) -> Tensors {
        self.with(name, TensorData::I32(values))
    }
    pub fn get(&self, name: &str) -> Option<&TensorData> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, d)| d)
    }

    /// The values of each declaration, in order, checked against it.
    pub fn bind<'t>(&'t self, decls: &[TensorDecl]) -> Result<Vec<&'t TensorData>, EvalError> {
        decls
            .iter()
            .map(|d| {
                let data = self.get(&d.name).ok_or_else(|| EvalError::MissingTensor(d.name.clone()))?;
                if data.dtype() != d.dtype {
                    return Err(EvalError::WrongDtype { name: d.name.clone(), declared: d.dtype, given: data.dtype() });
                }
                if let TensorData::I32(v) = data {
                    if let Some(&x) = v.iter().find(|x| (**x as i64).abs() > MAX_INT_TENSOR) {
                        return Err(EvalError::IntValueOutOfRange { name: d.name.clone(), value: x });
                    }
                }
                Ok(data)
            })
            .collect()
    }
}

/// A misuse of the interpreter (never an expression's fault: those are refused when checked).
#[derive(Clone, Debug, PartialEq)]
pub enum EvalError {
    MissingTensor(String),
    WrongDtype {
        name: String,
        declared: Scalar,
        given: Scalar,
    },
    IndexOutOfRange {
        name: String,
        index: i64,
        len: usize,
    },
    IntValueOutOfRange {
        name: String,
        value: i32,
    },
    /// Inputs outside the checker's assumptions (a negative position) can make a proven divisor 0.
    DivisionByZero,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvalError::MissingTensor(n) => write!(f, "tensor `{n}` is declared but no values were given"),
            EvalError::WrongDtype { name, declared, given } => {
                write!(f, "tensor `{name}` is declared {} but {} values were given", declared.name(), given.name())
            }
            EvalError::IndexOutOfRange { name, index, len } => write!(f, "tensor `{name}` has {len} values, read at index {index}"),
            EvalError::IntValueOutOfRange { name, value } => write!(f, "tensor `{name}` holds {value}, outside the ±2^24 the overflow proofs assume"),
            EvalError::DivisionByZero => write!(f, "a divisor is 0: the inputs are outside the checker's assumptions (positions >= 0)"),
        }
    }
}

impl std::error::Error for EvalError {}

/// One element's inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub b: i64,
    pub h: i64,
    pub q_idx: i64,
    pub kv_idx: i64,
    /// Ignored by mask_mods.
    pub score: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Val {
    I(i64),
    F(f64),
    B(bool),
}

impl Val {
    pub fn f(self) -> f64 {
        match self {
            Val::I(v) => v as f64,
            Val::F(v) => v,
            Val::B(v) => v as i64 as f64,
        }
    }
    pub fn b(self) -> bool {
        match self {
            Val::B(v) => v,
            Val::I(v) => v != 0,
            Val::F(v) => v != 0.0,
        }
    }
}

/// f32's range on an f64: overflow to ±inf (where round-to-nearest in f32 would), flush subnormals to 0.
pub(crate) fn f32_range(v: f64) -> f64 {
    const OVERFLOW: f64 = f32::MAX as f64 * (1.0 + 1.0 / (1u64 << 25) as f64);
    if v.abs() >= OVERFLOW {
        v.signum() * f64::INFINITY
    } else if v.abs() < f32::MIN_POSITIVE as f64 {
        0.0 * v.signum()
    } else {
        v
    }
}

pub(crate) fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) { q - 1 } else { q })
}

/// Evaluate `e` at `p` with the bound tensors (`Tensors::bind`).
pub(crate) fn eval(e: &TExpr, p: &Point, data: &[&TensorData], decls: &[TensorDecl]) -> Result<Val, EvalError> {
    let ev = |x: &TExpr| eval(x, p, data, decls);
    Ok(match &e.node {
        Node::Int(v) => Val::I(*v),
        Node::Float(v) => Val::F(*v),
        Node::Bool(v) => Val::B(*v),
        Node::Var(v) => match v {
            Var::B => Val::I(p.b),
            Var::H => Val::I(p.h),
            Var::QIdx => Val::I(p.q_idx),
            Var::KvIdx => Val::I(p.kv_idx),
            Var::Score => Val::F(p.score),
        },
        Node::Load(i) => {
            let d = &decls[*i];
            let index = if d.index == PerIndex::Head { p.h } else { p.b };
            let out = || EvalError::IndexOutOfRange { name: d.name.clone(), index, len: data[*i].len() };
            let k = usize::try_from(index).map_err(|_| out())?;
            match data[*i] {
                TensorData::F32(v) => Val::F(*v.get(k).ok_or_else(out)? as f64),
                TensorData::I32(v) => Val::I(*v.get(k).ok_or_else(out)? as i64),
            }
        }
        Node::Neg(a) => match ev(a)? {
            Val::I(v) => Val::I(v.wrapping_neg()),
            v => Val::F(-v.f()),
        },
        Node::Not(a) => Val::B(!ev(a)?.b()),
        Node::ToFloat(a) => Val::F(ev(a)?.f()),
        Node::Bin(op, a, b) => {
            let (x, y) = (ev(a)?, ev(b)?);
            if let (Val::I(x), Val::I(y)) = (x, y) {
                match op {
                    BinOp::Add => Val::I(x.wrapping_add(y)),
                    BinOp::Sub => Val::I(x.wrapping_sub(y)),
                    BinOp::Mul => Val::I(x.wrapping_mul(y)),
                    BinOp::Div => Val::F(x as f64 / y as f64),
                    BinOp::FloorDiv => Val::I(floor_div(x, y).ok_or(EvalError::DivisionByZero)?),
                    BinOp::Mod => {
                        let q = floor_div(x, y).ok_or(EvalError::DivisionByZero)?;
                        Val::I(x.wrapping_sub(q.wrapping_mul(y)))
                    }
                }
            } else {
                let (x, y) = (x.f(), y.f());
                Val::F(f32_range(match op {
                    BinOp::Add => x + y,
                    BinOp::Sub => x - y,
                    BinOp::Mul => x * y,
                    BinOp::Div => x / y,
                    BinOp::FloorDiv => (x / y).floor(),
                    BinOp::Mod => x - y * (x / y).floor(),
                }))
            }
        }
        Node::Cmp(op, a, b) => {
            let (x, y) = (ev(a)?, ev(b)?);
            Val::B(match (x, y) {
                (Val::I(x), Val::I(y)) => op.holds(x, y),
                (Val::B(x), Val::B(y)) => op.holds(x, y),
                // IEEE: every comparison with NaN is false except !=.
                _ => op.holds(x.f(), y.f()),
            })
        }
        Node::And(a, b) => Val::B(ev(a)?.b() & ev(b)?.b()),
        Node::Or(a, b) => Val::B(ev(a)?.b() | ev(b)?.b()),
        Node::Where(c, a, b) => {
            // Both branches are evaluated, as the kernel's select does (neither can fail on valid inputs).
            let (c, x, y) = (ev(c)?.b(), ev(a)?, ev(b)?);
            if c {
                x
            } else {
                y
            }
        }
        Node::Call(f, args) => {
            let x = ev(&args[0])?;
            let g = |v: f64| Val::F(f32_range(v));
            match f {
                Func::Tanh => g(x.f().tanh()),
                Func::Exp => g(x.f().exp()),
                Func::Exp2 => g(x.f().exp2()),
                Func::Log => g(x.f().ln()),
                Func::Log2 => g(x.f().log2()),
                Func::Sqrt => g(x.f().sqrt()),
                Func::Floor => Val::F(x.f().floor()),
                Func::Ceil => Val::F(x.f().ceil()),
                Func::Abs => match x {
                    Val::I(v) => Val::I(v.wrapping_abs()),
                    v => Val::F(v.f().abs()),
                },
                Func::Min | Func::Max => {
                    let y = ev(&args[1])?;
                    let min = *f == Func::Min;
                    match (x, y) {
                        (Val::I(a), Val::I(b)) => Val::I(if min { a.min(b) } else { a.max(b) }),
                        (a, b) => Val::F(if min { a.f().min(b.f()) } else { a.f().max(b.f()) }),
                    }
                }
                Func::Where => Val::F(f64::NAN),
            }
        }
    })
}
