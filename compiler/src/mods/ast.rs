//! The expression tree as written (parsed from text or built in Rust), before type checking.
//!
//! `Expr` is untyped and keeps the source span of every node, so that the checker's errors can point at
//! the offending text. The builder below (operators on `Expr`, `tanh(x)`, `where_(c, a, b)`, ...) makes the
//! same trees as the parser; builder nodes have no span and errors print the node's text instead.

use std::fmt;

/// A byte range `start..end` in the source text.
pub type Span = (usize, usize);

/// The built-in variables, as FlexAttention names them. Positions are absolute within the sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Var {
    /// Batch index (i32).
    B,
    /// Query head index (i32); with GQA this is the query head, not the K/V head.
    H,
    /// Query position in its sequence (i32).
    QIdx,
    /// Key/value position in its sequence (i32).
    KvIdx,
    /// The scaled score q·kᵀ·sm_scale (f32), in score_mod only.
    Score,
}

impl Var {
    pub const ALL: [Var; 5] = [Var::B, Var::H, Var::QIdx, Var::KvIdx, Var::Score];
    pub fn name(self) -> &'static str {
        match self {
            Var::B => "b",
            Var::H => "h",
            Var::QIdx => "q_idx",
            Var::KvIdx => "kv_idx",
            Var::Score => "score",
        }
    }
    pub fn from_name(s: &str) -> Option<Var> {
        Var::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// Arithmetic operators. `/` is true division (its result is f32, as in Python); `//` and `%` are
/// Python's floor division and modulo on integers (the result takes the divisor's sign).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
        }
    }
}

/// Comparisons. On floats they are IEEE's ordered comparisons, except `!=`, which is true for NaN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
    /// `!(a op b)` as `a op' b` (exact on integers; on floats NaN breaks it, so only integers use it).
    pub fn negated(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
        }
    }
    /// `a op b` as `b op' a`.
    pub fn swapped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            CmpOp::Eq | CmpOp::Ne => self,
        }
    }
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// The functions of the language, with their names in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Func {
    Tanh,
    Exp,
    Exp2,
    Log,
    Log2,
    Sqrt,
    Abs,
    Min,
    Max,
    Floor,
    Ceil,
    Where,
}

impl Func {
    pub const ALL: [Func; 12] =
        [Func::Tanh, Func::Exp, Func::Exp2, Func::Log, Func::Log2, Func::Sqrt, Func::Abs, Func::Min, Func::Max, Func::Floor, Func::Ceil, Func::Where];
    pub fn name(self) -> &'static str {
        match self {
            Func::Tanh => "tanh",
            Func::Exp => "exp",
            Func::Exp2 => "exp2",
            Func::Log => "log",
            Func::Log2 => "log2",
            Func::Sqrt => "sqrt",
            Func::Abs => "abs",
            Func::Min => "min",
            Func::Max => "max",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Where => "where",
        }
    }
    pub fn from_name(s: &str) -> Option<Func> {
        Func::ALL.into_iter().find(|f| f.name() == s)
    }
    pub fn arity(self) -> usize {
        match self {
            Func::Min | Func::Max => 2,
            Func::Where => 3,
            _ => 1,
        }
    }
    /// How the text calls it, for error messages.
    pub fn signature(self) -> &'static str {
        match self {
            Func::Tanh => "tanh(x: f32) -> f32",
            Func::Exp => "exp(x: f32) -> f32",
            Func::Exp2 => "exp2(x: f32) -> f32",
            Func::Log => "log(x: f32) -> f32",
            Func::Log2 => "log2(x: f32) -> f32",
            Func::Sqrt => "sqrt(x: f32) -> f32",
            Func::Abs => "abs(x: i32 or f32) -> same",
            Func::Min => "min(a, b: i32 or f32) -> i32 if both are, else f32",
            Func::Max => "max(a, b: i32 or f32) -> i32 if both are, else f32",
            Func::Floor => "floor(x: f32) -> f32",
            Func::Ceil => "ceil(x: f32) -> f32",
            Func::Where => "where(cond: bool, a, b) -> the type of a and b",
        }
    }
}

/// One node of the untyped tree.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A bare name: a variable, `inf`, or (an error) a tensor without its index.
    Name(String),
    /// `name[index]`: a per-head or per-batch tensor value.
    Index(String, Box<Expr>),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// A call by name; the checker resolves the name (so an unknown function is an error at its span).
    Call(String, Vec<Expr>),
}

/// An untyped expression with, when parsed, the span of its text.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Option<Span>,
}

impl Expr {
    pub fn new(kind: ExprKind) -> Expr {
        Expr { kind, span: None }
    }
    pub(crate) fn at(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span: Some(span) }
    }

    // Leaves.
    pub fn var(v: Var) -> Expr {
        Expr::new(ExprKind::Name(v.name().into()))
    }
    pub fn b() -> Expr {
        Expr::var(Var::B)
    }
    pub fn h() -> Expr {
        Expr::var(Var::H)
    }
    pub fn q_idx() -> Expr {
        Expr::var(Var::QIdx)
    }
    pub fn kv_idx() -> Expr {
        Expr::var(Var::KvIdx)
    }
    pub fn score() -> Expr {
        Expr::var(Var::Score)
    }
    pub fn int(v: i64) -> Expr {
        Expr::new(ExprKind::Int(v))
    }
    pub fn float(v: f64) -> Expr {
        Expr::new(ExprKind::Float(v))
    }
    pub fn bool(v: bool) -> Expr {
        Expr::new(ExprKind::Bool(v))
    }
    /// `name[h]` or `name[b]`, as its declaration says.
    pub fn tensor(name: &str, index: Var) -> Expr {
        Expr::new(ExprKind::Index(name.into(), Box::new(Expr::var(index))))
    }

    // Operators that Rust cannot overload with these meanings.
    pub fn floor_div(self, rhs: impl Into<Expr>) -> Expr {
        Expr::new(ExprKind::Bin(BinOp::FloorDiv, Box::new(self), Box::new(rhs.into())))
    }
    pub fn cmp(self, op: CmpOp, rhs: impl Into<Expr>) -> Expr {
        Expr::new(ExprKind::Cmp(op, Box::new(self), Box::new(rhs.into())))
    }
    pub fn lt(self, rhs: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Lt, rhs)
    }
    pub fn le(self, rhs: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Le, rhs)
    }
    pub fn gt(self, rhs: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Gt, rhs)
    }
    pub fn ge(self, rhs: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Ge, rhs)
    }
    pub fn eq_(self, rhs: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Eq, rhs)
    }
    pub fn ne_(self, rhs: impl Into<Expr>) -> Expr {
        self.cmp(CmpOp::Ne, rhs)
    }
    pub fn and(self, rhs: impl Into<Expr>) -> Expr {
        Expr::new(ExprKind::And(Box::new(self), Box::new(rhs.into())))
    }
    pub fn or(self, rhs: impl Into<Expr>) -> Expr {
        Expr::new(ExprKind::Or(Box::new(self), Box::new(rhs.into())))
    }
    pub fn call(f: Func, args: Vec<Expr>) -> Expr {
        Expr::new(ExprKind::Call(f.name().into(), args))
    }

    /// Replace every free occurrence of `v` by `with` (composition: softcap applied to ALiBi's score).
    pub fn substitute(&self, v: Var, with: &Expr) -> Expr {
        let sub = |e: &Expr| Box::new(e.substitute(v, with));
        let kind = match &self.kind {
            ExprKind::Name(n) if n == v.name() => return with.clone(),
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Name(_) | ExprKind::Index(..) => return self.clone(),
            ExprKind::Neg(a) => ExprKind::Neg(sub(a)),
            ExprKind::Not(a) => ExprKind::Not(sub(a)),
            ExprKind::Bin(op, a, b) => ExprKind::Bin(*op, sub(a), sub(b)),
            ExprKind::Cmp(op, a, b) => ExprKind::Cmp(*op, sub(a), sub(b)),
            ExprKind::And(a, b) => ExprKind::And(sub(a), sub(b)),
            ExprKind::Or(a, b) => ExprKind::Or(sub(a), sub(b)),
            ExprKind::Call(f, args) => ExprKind::Call(f.clone(), args.iter().map(|a| a.substitute(v, with)).collect()),
        };
        Expr { kind, span: self.span }
    }
}

// The builder's function spellings.
pub fn tanh(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Tanh, vec![x.into()])
}
pub fn exp(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Exp, vec![x.into()])
}
pub fn exp2(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Exp2, vec![x.into()])
}
pub fn log(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Log, vec![x.into()])
}
pub fn log2(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Log2, vec![x.into()])
}
pub fn sqrt(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Sqrt, vec![x.into()])
}
pub fn abs(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Abs, vec![x.into()])
}
pub fn floor(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Floor, vec![x.into()])
}
pub fn ceil(x: impl Into<Expr>) -> Expr {
    Expr::call(Func::Ceil, vec![x.into()])
}
pub fn min(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    Expr::call(Func::Min, vec![a.into(), b.into()])
}
pub fn max(a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    Expr::call(Func::Max, vec![a.into(), b.into()])
}
pub fn where_(cond: impl Into<Expr>, a: impl Into<Expr>, b: impl Into<Expr>) -> Expr {
    Expr::call(Func::Where, vec![cond.into(), a.into(), b.into()])
}

impl From<i64> for Expr {
    fn from(v: i64) -> Expr {
        Expr::int(v)
    }
}
impl From<i32> for Expr {
    fn from(v: i32) -> Expr {
        Expr::int(v as i64)
    }
}
impl From<f64> for Expr {
    fn from(v: f64) -> Expr {
        Expr::float(v)
    }
}
impl From<bool> for Expr {
    fn from(v: bool) -> Expr {
        Expr::bool(v)
    }
}
impl From<Var> for Expr {
    fn from(v: Var) -> Expr {
        Expr::var(v)
    }
}

macro_rules! binop {
    ($trait:ident, $method:ident, $op:expr) => {
        impl<T: Into<Expr>> std::ops::$trait<T> for Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::new(ExprKind::Bin($op, Box::new(self), Box::new(rhs.into())))
            }
        }
    };
}
binop!(Add, add, BinOp::Add);
binop!(Sub, sub, BinOp::Sub);
binop!(Mul, mul, BinOp::Mul);
binop!(Div, div, BinOp::Div);
binop!(Rem, rem, BinOp::Mod);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::new(ExprKind::Neg(Box::new(self)))
    }
}
impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::new(ExprKind::Not(Box::new(self)))
    }
}

/// Which rule an expression broke. Each has a fixed name (`Display`) that error texts start with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Syntax,
    UnknownName,
    UnknownFunction,
    Arity,
    WrongType,
    TensorIndex,
    ScoreInMask,
    DivisorMayBeZero,
    Overflow,
    TooComplex,
    Declaration,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Syntax => "syntax",
            Rule::UnknownName => "unknown name",
            Rule::UnknownFunction => "unknown function",
            Rule::Arity => "wrong number of arguments",
            Rule::WrongType => "wrong type",
            Rule::TensorIndex => "tensor index",
            Rule::ScoreInMask => "score in a mask_mod",
            Rule::DivisorMayBeZero => "divisor may be zero",
            Rule::Overflow => "overflow",
            Rule::TooComplex => "too complex",
            Rule::Declaration => "tensor declaration",
        })
    }
}

/// An expression the generator refuses, with the rule, where, and how to fix it.
#[derive(Clone, Debug, PartialEq)]
pub struct ModError {
    pub rule: Rule,
    /// What is wrong, in words.
    pub message: String,
    /// What to write instead.
    pub fix: String,
    /// The offending bytes of the source, when the expression was parsed.
    pub span: Option<Span>,
    /// "score_mod" or "mask_mod", and the source text when there is one.
    pub kind: &'static str,
    pub source: Option<String>,
}

impl ModError {
    pub(crate) fn new(rule: Rule, span: Option<Span>, message: impl Into<String>, fix: impl Into<String>) -> ModError {
        ModError { rule, message: message.into(), fix: fix.into(), span, kind: "expression", source: None }
    }
    /// 1-based character column of the error's start, when known.
    pub fn column(&self) -> Option<usize> {
        let (src, (start, _)) = (self.source.as_ref()?, self.span?);
        Some(src.get(..start).map(|s| s.chars().count()).unwrap_or(0) + 1)
    }
}

impl fmt::Display for ModError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.kind, self.rule, self.message)?;
        if let (Some(col), Some(src), Some((start, end))) = (self.column(), &self.source, self.span) {
            let width = src.get(start..end.max(start)).map(|s| s.chars().count()).unwrap_or(1).max(1);
            write!(f, " (column {col})\n  {src}\n  {}{}", " ".repeat(col - 1), "^".repeat(width))?;
        }
        write!(f, "\nfix: {}", self.fix)
    }
}

impl std::error::Error for ModError {}

/// Binding power of a node when printed (higher binds tighter), as the parser reads it.
pub(crate) fn precedence(k: &ExprKind) -> u8 {
    match k {
        ExprKind::Or(..) => 1,
        ExprKind::And(..) => 2,
        ExprKind::Cmp(..) => 3,
        ExprKind::Bin(BinOp::Add | BinOp::Sub, ..) => 4,
        ExprKind::Bin(..) => 5,
        // A negative literal prints as `-3` and reads back as -(3): the unary level.
        ExprKind::Neg(_) | ExprKind::Not(_) => 6,
        ExprKind::Int(v) if *v < 0 => 6,
        ExprKind::Float(v) if v.is_sign_negative() => 6,
        _ => 7,
    }
}

/// Floats print as Rust's shortest round-trip form, always recognizable as a float (`30.0`, `1e-7`, `inf`).
pub(crate) fn float_text(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    format!("{v:?}")
}

/// Printing with the fewest parentheses that read back as the same tree: one line, single spaces around
/// binary operators, none after unary ones or inside calls' parentheses. This is the canonical text.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn child(f: &mut fmt::Formatter<'_>, e: &Expr, min: u8) -> fmt::Result {
            if precedence(&e.kind) < min {
                write!(f, "({e})")
            } else {
                write!(f, "{e}")
            }
        }
        match &self.kind {
            ExprKind::Int(v) => write!(f, "{v}"),
            ExprKind::Float(v) => f.write_str(&float_text(*v)),
            ExprKind::Bool(v) => write!(f, "{v}"),
            ExprKind::Name(n) => f.write_str(n),
            ExprKind::Index(n, i) => write!(f, "{n}[{i}]"),
            ExprKind::Neg(a) => {
                f.write_str("-")?;
                child(f, a, 6)
            }
            ExprKind::Not(a) => {
                f.write_str("!")?;
                child(f, a, 6)
            }
            ExprKind::Bin(op, a, b) => {
                let p = precedence(&self.kind);
                child(f, a, p)?;
                write!(f, " {} ", op.symbol())?;
                child(f, b, p + 1)
            }
            ExprKind::Cmp(op, a, b) => {
                child(f, a, 4)?;
                write!(f, " {} ", op.symbol())?;
                child(f, b, 4)
            }
            ExprKind::And(a, b) => {
                child(f, a, 2)?;
                f.write_str(" && ")?;
                child(f, b, 3)
            }
            ExprKind::Or(a, b) => {
                child(f, a, 1)?;
                f.write_str(" || ")?;
                child(f, b, 2)
            }
            ExprKind::Call(name, args) => {
                write!(f, "{name}(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{a}")?;
                }
                f.write_str(")")
            }
        }
    }
}
