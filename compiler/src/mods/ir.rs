//! LLVM IR rendering: a checked expression lowered once per specialization into a small hash-consed graph
//! (constants folded, common subexpressions shared), split into a per-program prologue (everything that
//! depends only on b, h and the tensors: loads, per-head products, reciprocals of uniform divisors) and a
//! per-element body; then rendered as text with the caller's SSA names. Rendering walks a few dozen nodes
//! and formats strings: microseconds per element.
//!
//! Lowering choices (why the kernel differs from the f64 interpreter by rounding only):
//! - tanh: `tanh.approx.f32` by inline asm (sm_75+; FA's softcap uses it). LLVM 19 has no NVVM tanh
//!   intrinsic: `llvm.nvvm.tanh.approx.f32` is not one, and would be emitted as a call to an undefined
//!   function. The call is `nounwind memory(none)`, so early-cse merges repeats.
//! - exp(x) = ex2.approx.ftz(x·log2 e), log(x) = lg2.approx.ftz(x)·ln 2, sqrt = sqrt.approx.ftz: the MUFU
//!   unit, as the softmax's exp2.
//! - x / c for a constant c is x · (1/c); x / u for a program-uniform u is x · r with r = 1/u computed
//!   once in the prologue; anything else is an IEEE fdiv.
//! - Float sums and products carry `contract`: a product feeding a sum becomes one fma.
//! - `//` and `%` are Python's floor division and modulo; when the dividend is provably >= 0 and the
//!   divisor a positive constant they are udiv/urem, which LLVM turns into shifts for powers of two.

use super::ast::{BinOp, CmpOp, Func, Var};
use super::blocks::{Bound, KvBounds, KvSet};
use super::interval::{Analysis, Env};
use super::typed::{Node, TExpr, TensorDecl, Ty};
use std::collections::HashMap;
use std::fmt::Write;

type Id = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum IOp {
    Add,
    Sub,
    Mul,
    UDiv,
    URem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum FOp {
    Add,
    Sub,
    Mul,
    Div,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Un {
    Tanh,
    Ex2,
    Lg2,
    Sqrt,
    FAbs,
    Floor,
    Ceil,
    IAbs,
    FNeg,
    INeg,
    Not,
    ToF,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Bi {
    FMin,
    FMax,
    SMin,
    SMax,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Op {
    I(i32),
    /// f32 bits
    F(u32),
    B(bool),
    Var(Var),
    Load(u16),
    Un(Un, Id),
    IBin(IOp, Id, Id),
    FBin(FOp, Id, Id),
    Bi(Bi, Id, Id),
    FloorDiv(Id, Id),
    Mod(Id, Id),
    ICmp(CmpOp, Id, Id),
    FCmp(CmpOp, Id, Id),
    BCmp(CmpOp, Id, Id),
    Select(Id, Id, Id),
}

/// A declaration the kernel module must contain for the rendered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Declaration {
    /// The function's name without `@`.
    pub symbol: &'static str,
    /// The whole `declare` line.
    pub line: &'static str,
}

const fn decl(symbol: &'static str, line: &'static str) -> Declaration {
    Declaration { symbol, line }
}

fn declaration(op: &Op) -> Option<Declaration> {
    Some(match op {
        Op::Un(Un::Ex2, _) => decl("llvm.nvvm.ex2.approx.ftz.f", "declare float @llvm.nvvm.ex2.approx.ftz.f(float)"),
        Op::Un(Un::Lg2, _) => decl("llvm.nvvm.lg2.approx.ftz.f", "declare float @llvm.nvvm.lg2.approx.ftz.f(float)"),
        Op::Un(Un::Sqrt, _) => decl("llvm.nvvm.sqrt.approx.ftz.f", "declare float @llvm.nvvm.sqrt.approx.ftz.f(float)"),
        Op::Un(Un::FAbs, _) => decl("llvm.fabs.f32", "declare float @llvm.fabs.f32(float)"),
        Op::Un(Un::Floor, _) => decl("llvm.floor.f32", "declare float @llvm.floor.f32(float)"),
        Op::Un(Un::Ceil, _) => decl("llvm.ceil.f32", "declare float @llvm.ceil.f32(float)"),
        Op::Un(Un::IAbs, _) => decl("llvm.abs.i32", "declare i32 @llvm.abs.i32(i32, i1 immarg)"),
        Op::Bi(Bi::FMin, ..) => decl("llvm.minnum.f32", "declare float @llvm.minnum.f32(float, float)"),
        Op::Bi(Bi::FMax, ..) => decl("llvm.maxnum.f32", "declare float @llvm.maxnum.f32(float, float)"),
        Op::Bi(Bi::SMin, ..) => SMIN,
        Op::Bi(Bi::SMax, ..) => SMAX,
        _ => return None,
    })
}

const SMIN: Declaration = decl("llvm.smin.i32", "declare i32 @llvm.smin.i32(i32, i32)");
const SMAX: Declaration = decl("llvm.smax.i32", "declare i32 @llvm.smax.i32(i32, i32)");

const LOG2E: f64 = std::f64::consts::LOG2_E;
const LN2: f64 = std::f64::consts::LN_2;

fn f32_bits(v: f64) -> u32 {
    (v as f32).to_bits()
}

/// The lowered graph: nodes in creation order (children before parents), hash-consed.
#[derive(Clone, Debug, Default)]
struct Graph {
    ops: Vec<Op>,
    tys: Vec<Ty>,
    map: HashMap<Op, Id>,
}

impl Graph {
    fn op(&self, id: Id) -> Op {
        self.ops[id as usize]
    }
    fn float(&self, id: Id) -> Option<f32> {
        match self.op(id) {
            Op::F(b) => Some(f32::from_bits(b)),
            _ => None,
        }
    }
    fn int(&self, id: Id) -> Option<i32> {
        match self.op(id) {
            Op::I(v) => Some(v),
            _ => None,
        }
    }
    fn boolean(&self, id: Id) -> Option<bool> {
        match self.op(id) {
            Op::B(v) => Some(v),
            _ => None,
        }
    }

    /// Add a node, folding constants and neutral elements first.
    fn add(&mut self, op: Op, ty: Ty) -> Id {
        if let Some(folded) = self.fold(op) {
            return folded;
        }
        if let Some(&id) = self.map.get(&op) {
            return id;
        }
        let id = self.ops.len() as Id;
        self.ops.push(op);
        self.tys.push(ty);
        self.map.insert(op, id);
        id
    }

    fn konst(&mut self, op: Op) -> Id {
        let ty = match op {
            Op::I(_) => Ty::Int,
            Op::F(_) => Ty::Float,
            _ => Ty::Bool,
        };
        self.add(op, ty)
    }

    fn fold(&mut self, op: Op) -> Option<Id> {
        let f = |v: f64| Op::F(f32_bits(v));
        let folded = match op {
            Op::Un(u, a) => {
                if let Some(x) = self.float(a) {
                    let x = x as f64;
                    match u {
                        Un::Tanh => f(x.tanh()),
                        Un::Ex2 => f(x.exp2()),
                        Un::Lg2 => f(x.log2()),
                        Un::Sqrt => f(x.sqrt()),
                        Un::FAbs => f(x.abs()),
                        Un::Floor => f(x.floor()),
                        Un::Ceil => f(x.ceil()),
                        Un::FNeg => f(-x),
                        _ => return None,
                    }
                } else if let Some(x) = self.int(a) {
                    match u {
                        Un::IAbs => Op::I(x.wrapping_abs()),
                        Un::INeg => Op::I(x.wrapping_neg()),
                        Un::ToF => f(x as f64),
                        _ => return None,
                    }
                } else if let (Un::Not, Some(x)) = (u, self.boolean(a)) {
                    Op::B(!x)
                } else {
                    return None;
                }
            }
            Op::IBin(o, a, b) => match (self.int(a), self.int(b)) {
                (Some(x), Some(y)) => Op::I(match o {
                    IOp::Add => x.wrapping_add(y),
                    IOp::Sub => x.wrapping_sub(y),
                    IOp::Mul => x.wrapping_mul(y),
                    IOp::UDiv if y != 0 => (x as u32 / y as u32) as i32,
                    IOp::URem if y != 0 => (x as u32 % y as u32) as i32,
                    _ => return None,
                }),
                (Some(0), None) if o == IOp::Add => return Some(b),
                (None, Some(0)) if matches!(o, IOp::Add | IOp::Sub) => return Some(a),
                (Some(1), None) if o == IOp::Mul => return Some(b),
                (None, Some(1)) if matches!(o, IOp::Mul | IOp::UDiv) => return Some(a),
                _ => return None,
            },
            Op::FloorDiv(a, b) | Op::Mod(a, b) => match (self.int(a), self.int(b)) {
                (Some(x), Some(y)) if y != 0 => {
                    let q = super::eval::floor_div(x as i64, y as i64)?;
                    Op::I(if matches!(op, Op::FloorDiv(..)) { q as i32 } else { (x as i64 - q * y as i64) as i32 })
                }
                _ => return None,
            },
            Op::FBin(o, a, b) => match (self.float(a), self.float(b)) {
                (Some(x), Some(y)) => Op::F(
                    match o {
                        FOp::Add => x + y,
                        FOp::Sub => x - y,
                        FOp::Mul => x * y,
                        FOp::Div => x / y,
                    }
                    .to_bits(),
                ),
                (Some(x), None) if o == FOp::Mul && x == 1.0 => return Some(b),
                (None, Some(y)) if matches!(o, FOp::Mul | FOp::Div) && y == 1.0 => return Some(a),
                _ => return None,
            },
            Op::Bi(o, a, b) => match o {
                Bi::And | Bi::Or => {
                    let and = o == Bi::And;
                    match (self.boolean(a), self.boolean(b)) {
                        (Some(x), Some(y)) => Op::B(if and { x && y } else { x || y }),
                        (Some(x), None) | (None, Some(x)) if x == and => return Some(if self.boolean(a).is_some() { b } else { a }),
                        (Some(x), None) | (None, Some(x)) => Op::B(x),
                        _ if a == b => return Some(a),
                        _ => return None,
                    }
                }
                Bi::SMin | Bi::SMax => match (self.int(a), self.int(b)) {
                    (Some(x), Some(y)) => Op::I(if o == Bi::SMin { x.min(y) } else { x.max(y) }),
                    _ if a == b => return Some(a),
                    _ => return None,
                },
                Bi::FMin | Bi::FMax => match (self.float(a), self.float(b)) {
                    (Some(x), Some(y)) => f(if o == Bi::FMin { x.min(y) } else { x.max(y) } as f64),
                    _ if a == b => return Some(a),
                    _ => return None,
                },
            },
            Op::ICmp(c, a, b) => match (self.int(a), self.int(b)) {
                (Some(x), Some(y)) => Op::B(c.holds(x, y)),
                _ => return None,
            },
            Op::FCmp(c, a, b) => match (self.float(a), self.float(b)) {
                (Some(x), Some(y)) => Op::B(c.holds(x, y)),
                _ => return None,
            },
            Op::BCmp(c, a, b) => match (self.boolean(a), self.boolean(b)) {
                (Some(x), Some(y)) => Op::B(c.holds(x, y)),
                _ => return None,
            },
            Op::Select(c, a, b) => match self.boolean(c) {
                Some(true) => return Some(a),
                Some(false) => return Some(b),
                None if a == b => return Some(a),
                None => return None,
            },
            _ => return None,
        };
        Some(self.konst(folded))
    }
}

/// Lowers typed trees into one graph (so a value and its gradient share their common parts).
struct Lower {
    g: Graph,
    env: Env,
}

impl Lower {
    fn range_nonneg(&self, e: &TExpr) -> bool {
        let a = Analysis { env: &self.env, strict: None };
        matches!(a.range(e).map(|r| r.as_int()), Ok((lo, _)) if lo >= 0)
    }

    /// Every value of `e` is an integer f32 represents exactly (|v| <= 2^24).
    fn exact_in_f32(&self, e: &TExpr) -> bool {
        let a = Analysis { env: &self.env, strict: None };
        matches!(a.range(e).map(|r| r.as_int()), Ok((lo, hi)) if lo >= -(1 << 24) && hi <= 1 << 24)
    }

    /// i32 -> f32 of a sum or difference: converted term by term when every partial result is exact in
    /// f32, which gives the same value and moves the conversions to the row (q_idx) and column (kv_idx)
    /// values, shared across a tile's elements by early-cse: ALiBi's `slope[h] * (kv_idx - q_idx)` costs
    /// one fsub per element instead of an isub and an I2F (a quarter-rate conversion).
    fn lower_to_float(&mut self, a: &TExpr) -> Id {
        match &a.node {
            Node::Bin(op @ (BinOp::Add | BinOp::Sub), x, y) if self.exact_in_f32(a) && self.exact_in_f32(x) && self.exact_in_f32(y) => {
                let (fx, fy) = (self.lower_to_float(x), self.lower_to_float(y));
                self.g.add(Op::FBin(if *op == BinOp::Add { FOp::Add } else { FOp::Sub }, fx, fy), Ty::Float)
            }
            Node::Neg(x) if self.exact_in_f32(x) => {
                let fx = self.lower_to_float(x);
                self.g.add(Op::Un(Un::FNeg, fx), Ty::Float)
            }
            _ => {
                let i = self.lower(a);
                self.g.add(Op::Un(Un::ToF, i), Ty::Float)
            }
        }
    }

    fn lower(&mut self, e: &TExpr) -> Id {
        let ty = e.ty;
        match &e.node {
            Node::Int(v) => self.g.konst(Op::I(*v as i32)),
            Node::Float(v) => self.g.konst(Op::F(f32_bits(*v))),
            Node::Bool(v) => self.g.konst(Op::B(*v)),
            Node::Var(v) => self.g.add(Op::Var(*v), ty),
            Node::Load(i) => self.g.add(Op::Load(*i as u16), ty),
            Node::Neg(a) => {
                let a = self.lower(a);
                self.g.add(Op::Un(if ty == Ty::Int { Un::INeg } else { Un::FNeg }, a), ty)
            }
            Node::Not(a) => {
                let a = self.lower(a);
                self.g.add(Op::Un(Un::Not, a), ty)
            }
            Node::ToFloat(a) => self.lower_to_float(a),
            Node::Bin(op, a, b) => {
                let (la, lb) = (self.lower(a), self.lower(b));
                if ty == Ty::Int {
                    let positive_const = matches!(b.node, Node::Int(d) if d > 0);
                    let unsigned = positive_const && self.range_nonneg(a);
                    return match op {
                        BinOp::Add => self.g.add(Op::IBin(IOp::Add, la, lb), ty),
                        BinOp::Sub => self.g.add(Op::IBin(IOp::Sub, la, lb), ty),
                        BinOp::Mul => self.g.add(Op::IBin(IOp::Mul, la, lb), ty),
                        BinOp::FloorDiv if unsigned => self.g.add(Op::IBin(IOp::UDiv, la, lb), ty),
                        BinOp::Mod if unsigned => self.g.add(Op::IBin(IOp::URem, la, lb), ty),
                        BinOp::FloorDiv => self.g.add(Op::FloorDiv(la, lb), ty),
                        // Div is float-typed; nothing else is integer.
                        _ => self.g.add(Op::Mod(la, lb), ty),
                    };
                }
                match op {
                    BinOp::Add => self.g.add(Op::FBin(FOp::Add, la, lb), ty),
                    BinOp::Sub => self.g.add(Op::FBin(FOp::Sub, la, lb), ty),
                    BinOp::Mul => self.g.add(Op::FBin(FOp::Mul, la, lb), ty),
                    _ => {
                        let reciprocal = self.g.float(lb).map(|c| 1.0 / c as f64).filter(|r| r.is_finite() && (*r as f32).is_normal());
                        if let Some(r) = reciprocal {
                            let r = self.g.konst(Op::F(f32_bits(r)));
                            self.g.add(Op::FBin(FOp::Mul, la, r), ty)
                        } else if !b.per_element() && a.per_element() {
                            let one = self.g.konst(Op::F(1f32.to_bits()));
                            let r = self.g.add(Op::FBin(FOp::Div, one, lb), ty);
                            self.g.add(Op::FBin(FOp::Mul, la, r), ty)
                        } else {
                            self.g.add(Op::FBin(FOp::Div, la, lb), ty)
                        }
                    }
                }
            }
            Node::Cmp(op, a, b) => {
                let (la, lb) = (self.lower(a), self.lower(b));
                let node = match a.ty {
                    Ty::Int => Op::ICmp(*op, la, lb),
                    Ty::Float => Op::FCmp(*op, la, lb),
                    Ty::Bool => Op::BCmp(*op, la, lb),
                };
                self.g.add(node, ty)
            }
            Node::And(a, b) | Node::Or(a, b) => {
                let (la, lb) = (self.lower(a), self.lower(b));
                self.g.add(Op::Bi(if matches!(e.node, Node::And(..)) { Bi::And } else { Bi::Or }, la, lb), ty)
            }
            Node::Where(c, a, b) => {
                let (lc, la, lb) = (self.lower(c), self.lower(a), self.lower(b));
                self.g.add(Op::Select(lc, la, lb), ty)
            }
            Node::Call(f, args) => {
                let a = self.lower(&args[0]);
                let un = |s: &mut Self, u: Un| s.g.add(Op::Un(u, a), ty);
                match f {
                    Func::Tanh => un(self, Un::Tanh),
                    Func::Exp2 => un(self, Un::Ex2),
                    Func::Log2 => un(self, Un::Lg2),
                    Func::Sqrt => un(self, Un::Sqrt),
                    Func::Floor => un(self, Un::Floor),
                    Func::Ceil => un(self, Un::Ceil),
                    Func::Abs => un(self, if ty == Ty::Int { Un::IAbs } else { Un::FAbs }),
                    Func::Exp => {
                        let k = self.g.konst(Op::F(f32_bits(LOG2E)));
                        let x = self.g.add(Op::FBin(FOp::Mul, a, k), ty);
                        self.g.add(Op::Un(Un::Ex2, x), ty)
                    }
                    Func::Log => {
                        let l = un(self, Un::Lg2);
                        let k = self.g.konst(Op::F(f32_bits(LN2)));
                        self.g.add(Op::FBin(FOp::Mul, l, k), ty)
                    }
                    Func::Min | Func::Max => {
                        let b = self.lower(&args[1]);
                        let o = match (f, ty) {
                            (Func::Min, Ty::Int) => Bi::SMin,
                            (Func::Max, Ty::Int) => Bi::SMax,
                            (Func::Min, _) => Bi::FMin,
                            _ => Bi::FMax,
                        };
                        self.g.add(Op::Bi(o, a, b), ty)
                    }
                    // `where` is Node::Where; a call to it does not exist after checking.
                    Func::Where => a,
                }
            }
        }
    }
}

/// A rendering failure: the caller's names, never the expression (that was checked).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("mods IR: {0}")]
pub struct IrError(pub String);

/// The per-program values the template has: SSA names (or constants) of b and h (i32), and one
/// `ptr addrspace(1)` per declared tensor, in declaration order.
#[derive(Clone, Copy, Debug)]
pub struct ProgramInputs<'a> {
    pub b: &'a str,
    pub h: &'a str,
    pub tensors: &'a [&'a str],
}

/// The per-element values: q_idx and kv_idx (i32, absolute positions in the sequence) and the score
/// (float, scaled by sm_scale, natural units; ignored by a mask_mod).
#[derive(Clone, Copy, Debug)]
pub struct ElementInputs<'a> {
    pub q_idx: &'a str,
    pub kv_idx: &'a str,
    pub score: &'a str,
}

/// The rendered prologue: instructions to place once per program, where b, h and the tensor pointers are
/// defined and which dominates every element's code.
#[derive(Clone, Debug)]
pub struct Prologue {
    pub text: String,
    hoisted: Vec<String>,
    b: String,
    h: String,
    tensors: Vec<String>,
}

/// One element's code and its results: LLVM operands (an SSA name, or a constant) of type float (value
/// and gradient of a score_mod) or i1 (a mask_mod's keep).
#[derive(Clone, Debug)]
pub struct Element {
    pub text: String,
    pub value: String,
    /// d(value)/d(score), when the IR was made with the gradient.
    pub grad: Option<String>,
}

/// A query tile's key range, as i32 operands (`None`: unbounded on that side). `needed`: every key the
/// mask keeps for some query of the tile lies in [lo, hi] (an empty range when hi < lo). `visible`: every
/// key in [lo, hi] is kept for every query of the tile (no mask needed there); `None` when the generator
/// proves no such keys.
#[derive(Clone, Debug)]
pub struct TileRange {
    pub text: String,
    pub needed_lo: Option<String>,
    pub needed_hi: Option<String>,
    pub visible: Option<(Option<String>, Option<String>)>,
}

/// A modifier lowered for the kernel: render its prologue once per program, its element code once per
/// score element, and (masks) its tile range once per query tile.
#[derive(Clone, Debug)]
pub struct ModIr {
    g: Graph,
    /// value, then gradient (score_mod with gradient)
    roots: Vec<Id>,
    /// the `rest` of every affine piece of the mask's bounds, in the order `Bound::pieces` visits them
    bound_roots: Vec<Id>,
    bounds: Option<KvBounds>,
    /// per node: its index among the prologue's values
    hoisted: Vec<Option<u32>>,
    n_hoisted: u32,
    tensors: Vec<TensorDecl>,
    banner: String,
    declarations: Vec<Declaration>,
}

fn valid_prefix(p: &str) -> Result<(), IrError> {
    let ok =
        p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || "_.$".contains(c)) && p.chars().all(|c| c.is_ascii_alphanumeric() || "_.$".contains(c));
    if ok {
        Ok(())
    } else {
        Err(IrError(format!("prefix `{p}` is not a valid start of an LLVM value name (letters, digits, _ . $; not starting with a digit)")))
    }
}

fn valid_operand(what: &str, s: &str) -> Result<(), IrError> {
    if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == ',') {
        return Err(IrError(format!("{what} `{s}` is not an LLVM operand (an SSA name like %x, or a constant)")));
    }
    Ok(())
}

impl ModIr {
    /// Lower `roots` (and, for a mask, the pieces of `bounds`). `banner` goes into an IR comment.
    pub(crate) fn new(roots: &[&TExpr], bounds: Option<KvBounds>, tensors: &[TensorDecl], banner: String) -> ModIr {
        let mut l = Lower { g: Graph::default(), env: Env::assumed(tensors) };
        let roots: Vec<Id> = roots.iter().map(|e| l.lower(e)).collect();
        let mut pieces = Vec::new();
        if let Some(b) = &bounds {
            for s in [&b.needed, &b.visible] {
                if let KvSet::Range { lo, hi } = s {
                    lo.iter().chain(hi.iter()).for_each(|b| b.pieces(&mut pieces));
                }
            }
        }
        let bound_roots: Vec<Id> = pieces.iter().map(|a| l.lower(&a.rest)).collect();
        let g = l.g;

        // Uniform: depends on b, h and tensors only. Hoist the non-trivial uniform nodes that an element
        // (or a root) uses; their uniform operands come along into the prologue when rendered.
        let n = g.ops.len();
        let mut uniform = vec![false; n];
        let mut used_by_element = vec![false; n];
        for id in 0..n {
            let op = g.ops[id];
            let args = operands(&op);
            uniform[id] = match op {
                Op::Var(v) => matches!(v, Var::B | Var::H),
                Op::I(_) | Op::F(_) | Op::B(_) | Op::Load(_) => true,
                _ => args.iter().all(|a| uniform[*a as usize]),
            };
            if !uniform[id] {
                args.iter().for_each(|a| used_by_element[*a as usize] = true);
            }
        }
        roots.iter().chain(&bound_roots).for_each(|r| used_by_element[*r as usize] = true);
        let trivial = |op: &Op| matches!(op, Op::I(_) | Op::F(_) | Op::B(_) | Op::Var(_));
        let mut hoisted = vec![None; n];
        let mut n_hoisted = 0;
        for id in 0..n {
            if uniform[id] && used_by_element[id] && !trivial(&g.ops[id]) {
                hoisted[id] = Some(n_hoisted);
                n_hoisted += 1;
            }
        }

        let mut declarations: Vec<Declaration> = g.ops.iter().filter_map(declaration).collect();
        if bounds.is_some() {
            // tile and block ranges combine bounds and clamp with smin/smax
            declarations.extend([SMIN, SMAX]);
        }
        declarations.sort();
        declarations.dedup();
        ModIr { g, roots, bound_roots, bounds, hoisted, n_hoisted, tensors: tensors.to_vec(), banner, declarations }
    }

    /// The declarations the module must contain (each once: merge with the template's own, see
    /// `missing_declarations`).
    pub fn declarations(&self) -> &[Declaration] {
        &self.declarations
    }

    /// Values computed in the prologue (for tests and reports).
    pub fn prologue_values(&self) -> usize {
        self.n_hoisted as usize
    }

    /// Nodes of the lowered graph (a size measure).
    pub fn nodes(&self) -> usize {
        self.g.ops.len()
    }

    /// The program-uniform values: render once per program. Value names are `%<prefix>.<n>`.
    pub fn render_prologue(&self, inputs: &ProgramInputs<'_>, prefix: &str) -> Result<Prologue, IrError> {
        valid_prefix(prefix)?;
        valid_operand("b", inputs.b)?;
        valid_operand("h", inputs.h)?;
        if inputs.tensors.len() != self.tensors.len() {
            return Err(IrError(format!(
                "{} tensor pointers given, {} declared ({})",
                inputs.tensors.len(),
                self.tensors.len(),
                self.tensors.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")
            )));
        }
        for t in inputs.tensors {
            valid_operand("tensor pointer", t)?;
        }
        let mut e = Emitter::new(self, prefix);
        e.out.push_str(&format!("  ; {} (prologue)\n", self.banner));
        e.seed_program(inputs.b, inputs.h);
        e.tensors = inputs.tensors.iter().map(|s| s.to_string()).collect();
        let mut hoisted = Vec::with_capacity(self.n_hoisted as usize);
        for id in 0..self.g.ops.len() {
            if self.hoisted[id].is_some() {
                hoisted.push(e.operand(id as Id));
            }
        }
        Ok(Prologue { text: e.out, hoisted, b: inputs.b.into(), h: inputs.h.into(), tensors: e.tensors })
    }

    /// One element's code. Value names are `%<prefix>.<n>`: give each element its own prefix.
    pub fn render_element(&self, pro: &Prologue, inputs: &ElementInputs<'_>, prefix: &str) -> Result<Element, IrError> {
        self.render_element_with_floats(pro, inputs, None, prefix)
    }

    /// `render_element` where the template also has q_idx and kv_idx as floats (`floats`: the f32 of
    /// q_idx and of kv_idx, exact below 2^24): the expression's conversions of the indices take them
    /// instead of converting per element (a kernel computes a column's float once per block, from the
    /// block's first column and a constant, where a conversion per element would compete with exp2 for
    /// the quarter-rate pipe).
    pub fn render_element_with_floats(&self, pro: &Prologue, inputs: &ElementInputs<'_>, floats: Option<(&str, &str)>, prefix: &str) -> Result<Element, IrError> {
        valid_prefix(prefix)?;
        valid_operand("q_idx", inputs.q_idx)?;
        valid_operand("kv_idx", inputs.kv_idx)?;
        if let Some((qf, kf)) = floats {
            valid_operand("q_idx as float", qf)?;
            valid_operand("kv_idx as float", kf)?;
        }
        let mut e = self.emitter(pro, prefix);
        for (id, op) in self.g.ops.iter().enumerate() {
            e.names[id] = match op {
                Op::Var(Var::QIdx) => Some(inputs.q_idx.into()),
                Op::Var(Var::KvIdx) => Some(inputs.kv_idx.into()),
                Op::Var(Var::Score) => {
                    valid_operand("score", inputs.score)?;
                    Some(inputs.score.into())
                }
                Op::Un(Un::ToF, x) => match (self.g.op(*x), floats) {
                    (Op::Var(Var::QIdx), Some((qf, _))) => Some(qf.into()),
                    (Op::Var(Var::KvIdx), Some((_, kf))) => Some(kf.into()),
                    _ => continue,
                },
                _ => continue,
            };
        }
        let value = e.operand(self.roots[0]);
        let grad = self.roots.get(1).map(|r| e.operand(*r));
        Ok(Element { text: e.out, value, grad })
    }

    /// An emitter whose program values are the prologue's.
    fn emitter<'m>(&'m self, pro: &Prologue, prefix: &'m str) -> Emitter<'m> {
        let mut e = Emitter::new(self, prefix);
        e.seed_program(&pro.b, &pro.h);
        e.tensors.clone_from(&pro.tensors);
        for (id, h) in self.hoisted.iter().enumerate() {
            if let Some(k) = h {
                e.names[id] = Some(pro.hoisted[*k as usize].clone());
            }
        }
        e
    }

    /// The four key bounds of a tile into `e` (None: unbounded; visible None: no keys).
    /// The four key bounds of a tile into `e` (a TileRange without its text).
    fn tile_range_in(&self, e: &mut Emitter<'_>, q_first: &str, q_last: &str) -> Result<TileRange, IrError> {
        let Some(bounds) = &self.bounds else { return Err(IrError("tile ranges exist for mask_mods only".into())) };
        valid_operand("q_first", q_first)?;
        valid_operand("q_last", q_last)?;
        let mut piece = 0usize;
        let mut side =
            |e: &mut Emitter, b: &Option<Bound>, over_max: bool| b.as_ref().map(|b| e.bound(b, over_max, q_first, q_last, &self.bound_roots, &mut piece));
        let (needed_lo, needed_hi, visible) = match (&bounds.needed, &bounds.visible) {
            (KvSet::Empty, _) => (Some("0".to_string()), Some("-1".to_string()), None),
            (KvSet::Range { lo, hi }, vis) => {
                let nlo = side(e, lo, false);
                let nhi = side(e, hi, true);
                let vis = match vis {
                    KvSet::Empty => None,
                    KvSet::Range { lo, hi } => {
                        let vlo = side(e, lo, true);
                        let vhi = side(e, hi, false);
                        Some((vlo, vhi))
                    }
                };
                (nlo, nhi, vis)
            }
        };
        Ok(TileRange { text: String::new(), needed_lo, needed_hi, visible })
    }

    /// For a mask_mod: the key range of the query tile [q_first, q_last] (i32 operands). Errors when the
    /// IR was not made from a mask.
    pub fn render_tile_range(&self, pro: &Prologue, q_first: &str, q_last: &str, prefix: &str) -> Result<TileRange, IrError> {
        valid_prefix(prefix)?;
        let mut e = self.emitter(pro, prefix);
        let r = self.tile_range_in(&mut e, q_first, q_last)?;
        Ok(TileRange { text: e.out, ..r })
    }

    /// For a mask_mod: the K/V blocks of `block_n` keys the query tile [q_first, q_last] visits, given the
    /// sequence's key count `n_kv` (an i32 operand): exactly `MaskMod::blocks` in IR, i32 operands
    /// `first..=last` (none when last < first) and the unmasked `full_first..=full_last` among them.
    pub fn render_block_range(&self, pro: &Prologue, q_first: &str, q_last: &str, block_n: u32, n_kv: &str, prefix: &str) -> Result<BlockRangeIr, IrError> {
        valid_prefix(prefix)?;
        valid_operand("n_kv", n_kv)?;
        if block_n == 0 || block_n > 1 << 20 {
            return Err(IrError(format!("block_n {block_n} is not a block size")));
        }
        let mut e = self.emitter(pro, prefix);
        let TileRange { needed_lo: lo, needed_hi: hi, visible: vis, .. } = self.tile_range_in(&mut e, q_first, q_last)?;
        let bn = block_n as i64;
        let last_key = e.inst(format_args!("add i32 {n_kv}, -1"));
        let smax = |e: &mut Emitter, a: &str, b: &str| e.inst(format_args!("call i32 @llvm.smax.i32(i32 {a}, i32 {b})"));
        let smin = |e: &mut Emitter, a: &str, b: &str| e.inst(format_args!("call i32 @llvm.smin.i32(i32 {a}, i32 {b})"));
        // needed keys, clamped to the sequence
        let lo = match lo {
            Some(l) => smax(&mut e, &l, "0"),
            None => "0".into(),
        };
        let hi = match hi {
            Some(h) => smin(&mut e, &h, &last_key),
            None => last_key.clone(),
        };
        let empty = e.inst(format_args!("icmp sgt i32 {lo}, {hi}"));
        let first = e.inst(format_args!("udiv i32 {lo}, {bn}"));
        let last = e.inst(format_args!("sdiv i32 {hi}, {bn}"));
        // full blocks: [ceil(vlo / BN), (vhi + 1) / BN - 1], the last block full when vhi reaches n_kv - 1
        let (full_first, full_last) = match vis {
            None => (first.clone(), "-1".to_string()),
            Some((vlo, vhi)) => {
                let ff = match vlo {
                    Some(v) => {
                        let v0 = smax(&mut e, &v, "0");
                        let up = e.inst(format_args!("add i32 {v0}, {}", bn - 1));
                        let c = e.inst(format_args!("udiv i32 {up}, {bn}"));
                        smax(&mut e, &c, &first)
                    }
                    None => first.clone(),
                };
                let fl = match vhi {
                    Some(v) => {
                        let t = smin(&mut e, &v, &last_key);
                        let t = smax(&mut e, &t, "-1");
                        let reaches = e.inst(format_args!("icmp eq i32 {t}, {last_key}"));
                        let t1 = e.inst(format_args!("add i32 {t}, 1"));
                        let q = e.inst(format_args!("udiv i32 {t1}, {bn}"));
                        let below = e.inst(format_args!("add i32 {q}, -1"));
                        let fl = e.inst(format_args!("select i1 {reaches}, i32 {last}, i32 {below}"));
                        smin(&mut e, &fl, &last)
                    }
                    None => last.clone(),
                };
                (ff, fl)
            }
        };
        let pick = |e: &mut Emitter, v: &str, if_empty: &str| e.inst(format_args!("select i1 {empty}, i32 {if_empty}, i32 {v}"));
        let first = pick(&mut e, &first, "0");
        let last = pick(&mut e, &last, "-1");
        let full_first = pick(&mut e, &full_first, "0");
        let full_last = pick(&mut e, &full_last, "-1");
        Ok(BlockRangeIr { text: e.out, first, last, full_first, full_last })
    }
}

/// The queries that keep some key of a key range, as i32 operands (see `ModIr::render_query_range`):
/// q_lo ..= q_hi, `None` for an unbounded side.
#[derive(Clone, Debug)]
pub struct QueryRange {
    pub text: String,
    pub q_lo: Option<String>,
    pub q_hi: Option<String>,
}

/// A side no query reaches or every query does (the inverse of a bound constant in q_idx): far outside
/// any position (< 2^24) yet far from i32's ends, so the kernels' clamps never overflow.
const BEYOND: i32 = 1 << 30;

impl ModIr {
    /// For a mask_mod whose key bounds never decrease as q_idx grows (every affine piece of `kv_bounds`
    /// has q coefficient 0 or 1: causal, windows, offsets, block-causal documents do): the queries that may
    /// keep a key of [k0, k1] (i32 operands), q_lo ..= q_hi. A query keeps keys only in [lo(q), hi(q)], so
    /// it needs hi(q) >= k0 (q >= q_lo, hi non-decreasing) and lo(q) <= k1 (q <= q_hi). A dK/dV program
    /// (a block of keys) visits only those queries' blocks. Errors when the bounds are not of that form
    /// (then every query may see the keys).
    pub fn render_query_range(&self, pro: &Prologue, k0: &str, k1: &str, prefix: &str) -> Result<QueryRange, IrError> {
        self.query_range(pro, k0, k1, prefix, false)
    }

    /// The queries that keep every key of [k0, k1] (from the mask's `visible` bounds: lo(q) <= k0 and
    /// hi(q) >= k1): a dK/dV block of such queries needs no mask. Same form and errors as
    /// `render_query_range`; an empty range (q_lo > q_hi) when the generator proves no such query.
    pub fn render_visible_query_range(&self, pro: &Prologue, k0: &str, k1: &str, prefix: &str) -> Result<QueryRange, IrError> {
        self.query_range(pro, k0, k1, prefix, true)
    }

    fn query_range(&self, pro: &Prologue, k0: &str, k1: &str, prefix: &str, visible: bool) -> Result<QueryRange, IrError> {
        valid_prefix(prefix)?;
        valid_operand("k0", k0)?;
        valid_operand("k1", k1)?;
        let Some(bounds) = &self.bounds else { return Err(IrError("query ranges exist for mask_mods only".into())) };
        // (the pieces' rests are numbered as `tile_range_in` walks them: needed lo, needed hi, visible lo,
        // visible hi)
        let count = |set: &KvSet| match set {
            KvSet::Empty => 0,
            KvSet::Range { lo, hi } => {
                let mut pieces = Vec::new();
                lo.iter().chain(hi.iter()).for_each(|b| b.pieces(&mut pieces));
                pieces.len()
            }
        };
        let (set, first_piece, (k_lo, k_hi)) = if visible { (&bounds.visible, count(&bounds.needed), (k1, k0)) } else { (&bounds.needed, 0, (k0, k1)) };
        let monotone = |b: &Option<Bound>| {
            let mut pieces = Vec::new();
            if let Some(b) = b {
                b.pieces(&mut pieces);
            }
            pieces.iter().all(|a| a.q_coef == 0 || a.q_coef == 1)
        };
        let mut e = self.emitter(pro, prefix);
        let (lo, hi) = match set {
            KvSet::Empty => {
                // no query keeps any key (or, visible: every key)
                return Ok(QueryRange { text: String::new(), q_lo: Some("1".into()), q_hi: Some("0".into()) });
            }
            KvSet::Range { lo, hi } => (lo, hi),
        };
        if !(monotone(lo) && monotone(hi)) {
            return Err(IrError("the mask's key bounds are not non-decreasing in q_idx: no query range".into()));
        }
        // needed: lo(q) <= k1 and hi(q) >= k0; visible: lo(q) <= k0 and hi(q) >= k1
        let mut piece = first_piece;
        let q_hi = lo.as_ref().map(|b| e.inverse(b, k_hi, false, &self.bound_roots, &mut piece));
        let q_lo = hi.as_ref().map(|b| e.inverse(b, k_lo, true, &self.bound_roots, &mut piece));
        Ok(QueryRange { text: e.out, q_lo, q_hi })
    }
}

impl Emitter<'_> {
    /// For a non-decreasing bound b(q): with `ge`, the least q with b(q) >= k; else the greatest q with
    /// b(q) <= k (±BEYOND for none or all).
    fn inverse(&mut self, b: &Bound, k: &str, ge: bool, rests: &[Id], piece: &mut usize) -> String {
        match b {
            Bound::Affine(a) => {
                let rest = rests.get(*piece).map(|r| self.operand(*r)).unwrap_or_else(|| "0".into());
                *piece += 1;
                if a.q_coef == 1 {
                    // q + rest >= k iff q >= k - rest; q + rest <= k iff q <= k - rest
                    self.inst(format_args!("sub i32 {k}, {rest}"))
                } else {
                    // a constant: every query or none
                    let holds = self.inst(format_args!("icmp {} i32 {rest}, {k}", if ge { "sge" } else { "sle" }));
                    let (all, none) = if ge { (-BEYOND, BEYOND) } else { (BEYOND, -BEYOND) };
                    self.inst(format_args!("select i1 {holds}, i32 {all}, i32 {none}"))
                }
            }
            Bound::Min(v) | Bound::Max(v) => {
                // min(..) >= k: all of them (the latest of their least q); max(..) >= k: any (the
                // earliest); min(..) <= k: any (the latest of their greatest q); max(..) <= k: all (the
                // earliest): a min takes the latest, a max the earliest, either way
                let take_max = matches!(b, Bound::Min(_));
                let f = if take_max { "llvm.smax.i32" } else { "llvm.smin.i32" };
                let mut acc: Option<String> = None;
                for x in v {
                    let y = self.inverse(x, k, ge, rests, piece);
                    acc = Some(match acc {
                        None => y,
                        Some(a) => self.inst(format_args!("call i32 @{f}(i32 {a}, i32 {y})")),
                    });
                }
                acc.unwrap_or_else(|| "0".into())
            }
        }
    }
}

/// A query tile's K/V blocks as i32 operands (see `ModIr::render_block_range`).
#[derive(Clone, Debug)]
pub struct BlockRangeIr {
    pub text: String,
    pub first: String,
    pub last: String,
    pub full_first: String,
    pub full_last: String,
}

fn operands(op: &Op) -> Vec<Id> {
    match *op {
        Op::I(_) | Op::F(_) | Op::B(_) | Op::Var(_) | Op::Load(_) => vec![],
        Op::Un(_, a) => vec![a],
        Op::IBin(_, a, b)
        | Op::FBin(_, a, b)
        | Op::Bi(_, a, b)
        | Op::FloorDiv(a, b)
        | Op::Mod(a, b)
        | Op::ICmp(_, a, b)
        | Op::FCmp(_, a, b)
        | Op::BCmp(_, a, b) => vec![a, b],
        Op::Select(c, a, b) => vec![c, a, b],
    }
}

fn icmp(c: CmpOp) -> &'static str {
    match c {
        CmpOp::Lt => "slt",
        CmpOp::Le => "sle",
        CmpOp::Gt => "sgt",
        CmpOp::Ge => "sge",
        CmpOp::Eq => "eq",
        CmpOp::Ne => "ne",
    }
}

fn fcmp(c: CmpOp) -> &'static str {
    match c {
        CmpOp::Lt => "olt",
        CmpOp::Le => "ole",
        CmpOp::Gt => "ogt",
        CmpOp::Ge => "oge",
        CmpOp::Eq => "oeq",
        // true for NaN, as the interpreter's `!=`
        CmpOp::Ne => "une",
    }
}

/// An f32 constant as LLVM writes floats: the double with the same value, in hex (exact).
pub(crate) fn float_operand(bits: u32) -> String {
    format!("0x{:016X}", (f32::from_bits(bits) as f64).to_bits())
}

struct Emitter<'m> {
    ir: &'m ModIr,
    out: String,
    prefix: &'m str,
    next: u32,
    names: Vec<Option<String>>,
    tensors: Vec<String>,
    b: String,
    h: String,
}

impl<'m> Emitter<'m> {
    fn new(ir: &'m ModIr, prefix: &'m str) -> Emitter<'m> {
        Emitter { ir, out: String::with_capacity(256), prefix, next: 0, names: vec![None; ir.g.ops.len()], tensors: vec![], b: String::new(), h: String::new() }
    }

    fn seed_program(&mut self, b: &str, h: &str) {
        (self.b, self.h) = (b.to_string(), h.to_string());
        for (id, op) in self.ir.g.ops.iter().enumerate() {
            match op {
                Op::Var(Var::B) => self.names[id] = Some(b.into()),
                Op::Var(Var::H) => self.names[id] = Some(h.into()),
                _ => {}
            }
        }
    }

    fn fresh(&mut self) -> String {
        let s = format!("%{}.{}", self.prefix, self.next);
        self.next += 1;
        s
    }

    /// `%new = <rhs>`; returns %new.
    fn inst(&mut self, rhs: std::fmt::Arguments<'_>) -> String {
        let name = self.fresh();
        let _ = writeln!(self.out, "  {name} = {rhs}");
        name
    }

    fn operand(&mut self, id: Id) -> String {
        if let Some(s) = &self.names[id as usize] {
            return s.clone();
        }
        let s = self.emit(id);
        self.names[id as usize] = Some(s.clone());
        s
    }

    fn emit(&mut self, id: Id) -> String {
        let ty = self.ir.g.tys[id as usize].llvm();
        match self.ir.g.op(id) {
            Op::I(v) => v.to_string(),
            Op::F(b) => float_operand(b),
            Op::B(v) => v.to_string(),
            // Seeded by the caller; reaching here means the input was not given (a score in a mask).
            Op::Var(v) => format!("%{}", v.name()),
            Op::Load(i) => {
                let ptr = self.tensors.get(i as usize).cloned().unwrap_or_else(|| "null".into());
                let d = &self.ir.tensors[i as usize];
                let index = if d.index.var() == Var::H { self.h.clone() } else { self.b.clone() };
                let addr = self.inst(format_args!("getelementptr inbounds {ty}, ptr addrspace(1) {ptr}, i32 {index}"));
                self.inst(format_args!("load {ty}, ptr addrspace(1) {addr}, align 4"))
            }
            Op::Un(u, a) => {
                let x = self.operand(a);
                match u {
                    Un::Tanh => self.inst(format_args!("call float asm \"tanh.approx.f32 $0, $1;\", \"=f,f\"(float {x}) nounwind memory(none)")),
                    Un::Ex2 => self.inst(format_args!("call float @llvm.nvvm.ex2.approx.ftz.f(float {x})")),
                    Un::Lg2 => self.inst(format_args!("call float @llvm.nvvm.lg2.approx.ftz.f(float {x})")),
                    Un::Sqrt => self.inst(format_args!("call float @llvm.nvvm.sqrt.approx.ftz.f(float {x})")),
                    Un::FAbs => self.inst(format_args!("call float @llvm.fabs.f32(float {x})")),
                    Un::Floor => self.inst(format_args!("call float @llvm.floor.f32(float {x})")),
                    Un::Ceil => self.inst(format_args!("call float @llvm.ceil.f32(float {x})")),
                    Un::IAbs => self.inst(format_args!("call i32 @llvm.abs.i32(i32 {x}, i1 false)")),
                    Un::FNeg => self.inst(format_args!("fneg float {x}")),
                    Un::INeg => self.inst(format_args!("sub i32 0, {x}")),
                    Un::Not => self.inst(format_args!("xor i1 {x}, true")),
                    Un::ToF => self.inst(format_args!("sitofp i32 {x} to float")),
                }
            }
            Op::IBin(o, a, b) => {
                let (x, y) = (self.operand(a), self.operand(b));
                let name = match o {
                    IOp::Add => "add",
                    IOp::Sub => "sub",
                    IOp::Mul => "mul",
                    IOp::UDiv => "udiv",
                    IOp::URem => "urem",
                };
                self.inst(format_args!("{name} i32 {x}, {y}"))
            }
            Op::FBin(o, a, b) => {
                let (x, y) = (self.operand(a), self.operand(b));
                // `contract`: a product and the sum it feeds may fuse into one fma (one rounding fewer,
                // one instruction fewer per element: NVPTX otherwise emits mul.rn / add.rn, which ptxas
                // must not fuse)
                let name = match o {
                    FOp::Add => "fadd contract",
                    FOp::Sub => "fsub contract",
                    FOp::Mul => "fmul contract",
                    FOp::Div => "fdiv",
                };
                self.inst(format_args!("{name} float {x}, {y}"))
            }
            Op::Bi(o, a, b) => {
                let (x, y) = (self.operand(a), self.operand(b));
                match o {
                    Bi::And => self.inst(format_args!("and i1 {x}, {y}")),
                    Bi::Or => self.inst(format_args!("or i1 {x}, {y}")),
                    Bi::FMin => self.inst(format_args!("call float @llvm.minnum.f32(float {x}, float {y})")),
                    Bi::FMax => self.inst(format_args!("call float @llvm.maxnum.f32(float {x}, float {y})")),
                    Bi::SMin => self.inst(format_args!("call i32 @llvm.smin.i32(i32 {x}, i32 {y})")),
                    Bi::SMax => self.inst(format_args!("call i32 @llvm.smax.i32(i32 {x}, i32 {y})")),
                }
            }
            Op::FloorDiv(a, b) | Op::Mod(a, b) => {
                // Truncating division, then one step toward -inf when the remainder is non-zero and its
                // sign differs from the divisor's (Python's // and %).
                let (x, d) = (self.operand(a), self.operand(b));
                let q = self.inst(format_args!("sdiv i32 {x}, {d}"));
                let r = self.inst(format_args!("srem i32 {x}, {d}"));
                let nz = self.inst(format_args!("icmp ne i32 {r}, 0"));
                let sx = self.inst(format_args!("xor i32 {r}, {d}"));
                let neg = self.inst(format_args!("icmp slt i32 {sx}, 0"));
                let adj = self.inst(format_args!("and i1 {nz}, {neg}"));
                if matches!(self.ir.g.op(id), Op::FloorDiv(..)) {
                    let one = self.inst(format_args!("zext i1 {adj} to i32"));
                    self.inst(format_args!("sub i32 {q}, {one}"))
                } else {
                    let add = self.inst(format_args!("select i1 {adj}, i32 {d}, i32 0"));
                    self.inst(format_args!("add i32 {r}, {add}"))
                }
            }
            Op::ICmp(c, a, b) => {
                let (x, y) = (self.operand(a), self.operand(b));
                self.inst(format_args!("icmp {} i32 {x}, {y}", icmp(c)))
            }
            Op::FCmp(c, a, b) => {
                let (x, y) = (self.operand(a), self.operand(b));
                self.inst(format_args!("fcmp {} float {x}, {y}", fcmp(c)))
            }
            Op::BCmp(c, a, b) => {
                let (x, y) = (self.operand(a), self.operand(b));
                self.inst(format_args!("icmp {} i1 {x}, {y}", icmp(c)))
            }
            Op::Select(c, a, b) => {
                let (k, x, y) = (self.operand(c), self.operand(a), self.operand(b));
                self.inst(format_args!("select i1 {k}, {ty} {x}, {ty} {y}"))
            }
        }
    }

    /// A bound at the tile's extreme: affine pieces at q_first or q_last, min/max by smin/smax.
    fn bound(&mut self, b: &Bound, over_max: bool, q_first: &str, q_last: &str, rests: &[Id], piece: &mut usize) -> String {
        match b {
            Bound::Affine(a) => {
                let rest = rests.get(*piece).map(|r| self.operand(*r)).unwrap_or_else(|| "0".into());
                *piece += 1;
                let edge = if (a.q_coef >= 0) == over_max { q_last } else { q_first };
                let term = match a.q_coef {
                    0 => None,
                    1 => Some(edge.to_string()),
                    -1 => Some(self.inst(format_args!("sub i32 0, {edge}"))),
                    k => Some(self.inst(format_args!("mul i32 {edge}, {k}"))),
                };
                match (term, rest.as_str()) {
                    (None, _) => rest,
                    (Some(t), "0") => t,
                    (Some(t), _) => self.inst(format_args!("add i32 {t}, {rest}")),
                }
            }
            Bound::Min(v) | Bound::Max(v) => {
                let f = if matches!(b, Bound::Min(_)) { "llvm.smin.i32" } else { "llvm.smax.i32" };
                let mut acc: Option<String> = None;
                for x in v {
                    let y = self.bound(x, over_max, q_first, q_last, rests, piece);
                    acc = Some(match acc {
                        None => y,
                        Some(a) => self.inst(format_args!("call i32 @{f}(i32 {a}, i32 {y})")),
                    });
                }
                acc.unwrap_or_else(|| "0".into())
            }
        }
    }
}

/// The `declare` lines the modifiers need that `module_text` does not already declare, one per line.
pub fn missing_declarations(irs: &[&ModIr], module_text: &str) -> String {
    let mut all: Vec<Declaration> = irs.iter().flat_map(|ir| ir.declarations().iter().copied()).collect();
    all.sort();
    all.dedup();
    let declared = |d: &Declaration| module_text.lines().any(|l| l.trim_start().starts_with("declare") && l.contains(&format!("@{}(", d.symbol)));
    all.iter().filter(|d| !declared(d)).map(|d| format!("{}\n", d.line)).collect()
}

impl ModIr {
    /// A standalone module around this IR, for verification and tests: `@<name>` computes the value
    /// (float or i1) from (i32 %b, i32 %h, i32 %q_idx, i32 %kv_idx, float %score, one ptr addrspace(1)
    /// per tensor); `@<name>_grad` the gradient when present; for masks `@<name>_range` returns the tile
    /// range {needed lo, needed hi, visible lo, visible hi} of (b, h, q_first, q_last, tensors), with
    /// i32::MIN / i32::MAX for unbounded sides and {0, -1} for "no visible keys", and `@<name>_blocks`
    /// the blocks of 64 keys {first, last, full_first, full_last} of (b, h, q_first, q_last, n_kv, tensors).
    pub fn render_function(&self, name: &str) -> Result<String, IrError> {
        valid_prefix(name)?;
        let ptrs: Vec<String> = (0..self.tensors.len()).map(|i| format!("%t{i}")).collect();
        let ptr_refs: Vec<&str> = ptrs.iter().map(String::as_str).collect();
        let params: String = ptrs.iter().map(|p| format!(", ptr addrspace(1) {p}")).collect();
        let mut m = String::from("target triple = \"nvptx64-nvidia-cuda\"\n\n");
        for d in &self.declarations {
            m += d.line;
            m.push('\n');
        }
        let pin = ProgramInputs { b: "%b", h: "%h", tensors: &ptr_refs };
        let ein = ElementInputs { q_idx: "%q_idx", kv_idx: "%kv_idx", score: "%score" };
        for (k, suffix) in ["", "_grad"].iter().enumerate().take(self.roots.len()) {
            let pro = self.render_prologue(&pin, "pro")?;
            let el = self.render_element(&pro, &ein, "el")?;
            let ty = self.g.tys[self.roots[k] as usize].llvm();
            let result = if k == 0 { el.value.clone() } else { el.grad.clone().unwrap_or_default() };
            m += &format!(
                "\ndefine {ty} @{name}{suffix}(i32 %b, i32 %h, i32 %q_idx, i32 %kv_idx, float %score{params}) {{\nentry:\n{}{}  ret {ty} {result}\n}}\n",
                pro.text, el.text
            );
        }
        if self.bounds.is_some() {
            let pro = self.render_prologue(&pin, "pro")?;
            let r = self.render_tile_range(&pro, "%q_first", "%q_last", "tr")?;
            let (vlo, vhi) = match &r.visible {
                Some((lo, hi)) => (lo.clone().unwrap_or(i32::MIN.to_string()), hi.clone().unwrap_or(i32::MAX.to_string())),
                None => ("0".into(), "-1".into()),
            };
            let fields = [r.needed_lo.clone().unwrap_or(i32::MIN.to_string()), r.needed_hi.clone().unwrap_or(i32::MAX.to_string()), vlo, vhi];
            let mut body = String::new();
            let mut agg = "undef".to_string();
            for (i, f) in fields.iter().enumerate() {
                body += &format!("  %agg{i} = insertvalue {{i32, i32, i32, i32}} {agg}, i32 {f}, {i}\n");
                agg = format!("%agg{i}");
            }
            m += &format!(
                "\ndefine {{i32, i32, i32, i32}} @{name}_range(i32 %b, i32 %h, i32 %q_first, i32 %q_last{params}) {{\nentry:\n{}{}{body}  ret {{i32, i32, i32, i32}} {agg}\n}}\n",
                pro.text, r.text
            );
            let br = self.render_block_range(&pro, "%q_first", "%q_last", 64, "%n_kv", "br")?;
            let mut body = String::new();
            let mut agg = "undef".to_string();
            for (i, f) in [&br.first, &br.last, &br.full_first, &br.full_last].iter().enumerate() {
                body += &format!("  %blk{i} = insertvalue {{i32, i32, i32, i32}} {agg}, i32 {f}, {i}\n");
                agg = format!("%blk{i}");
            }
            m += &format!(
                "\ndefine {{i32, i32, i32, i32}} @{name}_blocks(i32 %b, i32 %h, i32 %q_first, i32 %q_last, i32 %n_kv{params}) {{\nentry:\n{}{}{body}  ret {{i32, i32, i32, i32}} {agg}\n}}\n",
                pro.text, br.text
            );
        }
        Ok(m)
    }
}
