//! d(score_mod)/d(score): symbolic differentiation of the typed tree, then simplification, so that the
//! backward multiplies dS by a small expression (softcap's derivative comes out as
//! `1.0 - tanh(score / 30.0) * tanh(score / 30.0)`, ALiBi's as `1.0`).
//!
//! Zero is `None` throughout, so branches that do not depend on the score build nothing. At kinks the
//! derivative follows torch: abs'(0) = 0, min/max pass the gradient to the first operand on ties, and
//! floor, ceil and comparisons have derivative 0.

use super::ast::{BinOp, CmpOp, Func, Var};
use super::typed::{Node, TExpr, Ty};
use std::f64::consts::LN_2;

fn fl(v: f64) -> TExpr {
    TExpr::float(v)
}

fn bin(op: BinOp, a: TExpr, b: TExpr) -> TExpr {
    TExpr::new(Node::Bin(op, Box::new(a), Box::new(b)), Ty::Float)
}

fn add(a: TExpr, b: TExpr) -> TExpr {
    match (&a.node, &b.node) {
        (Node::Float(x), Node::Float(y)) => fl(x + y),
        (Node::Float(x), _) if *x == 0.0 => b,
        (_, Node::Float(y)) if *y == 0.0 => a,
        _ => bin(BinOp::Add, a, b),
    }
}

fn sub(a: TExpr, b: TExpr) -> TExpr {
    match (&a.node, &b.node) {
        (Node::Float(x), Node::Float(y)) => fl(x - y),
        (Node::Float(x), _) if *x == 0.0 => neg(b),
        (_, Node::Float(y)) if *y == 0.0 => a,
        _ => bin(BinOp::Sub, a, b),
    }
}

fn neg(a: TExpr) -> TExpr {
    match a.node {
        Node::Float(x) => fl(-x),
        Node::Neg(inner) => *inner,
        _ => TExpr::new(Node::Neg(Box::new(a)), Ty::Float),
    }
}

fn mul(a: TExpr, b: TExpr) -> TExpr {
    bin(BinOp::Mul, a, b)
}

fn div(a: TExpr, b: TExpr) -> TExpr {
    bin(BinOp::Div, a, b)
}

fn call(f: Func, a: TExpr) -> TExpr {
    TExpr::new(Node::Call(f, vec![a]), Ty::Float)
}

fn select(c: TExpr, a: TExpr, b: TExpr) -> TExpr {
    if a == b {
        return a;
    }
    TExpr::new(Node::Where(Box::new(c), Box::new(a), Box::new(b)), Ty::Float)
}

fn cmp(op: CmpOp, a: TExpr, b: TExpr) -> TExpr {
    TExpr::new(Node::Cmp(op, Box::new(a), Box::new(b)), Ty::Bool)
}

fn or_zero(d: Option<TExpr>) -> TExpr {
    d.unwrap_or_else(|| fl(0.0))
}

/// d(e)/d(score); None when it is 0 everywhere.
fn d(e: &TExpr) -> Option<TExpr> {
    if e.ty != Ty::Float {
        // Integers and conditions cannot depend on the score (there is no float -> int conversion).
        return None;
    }
    let strip = |e: &TExpr| TExpr { span: None, ..e.clone() };
    match &e.node {
        Node::Var(Var::Score) => Some(fl(1.0)),
        Node::Float(_) | Node::Var(_) | Node::Load(_) | Node::ToFloat(_) => None,
        Node::Neg(a) => d(a).map(neg),
        Node::Bin(op, a, b) => {
            let (da, db) = (d(a), d(b));
            let (a, b) = (strip(a), strip(b));
            match op {
                BinOp::Add => match (da, db) {
                    (None, None) => None,
                    (x, y) => Some(add(or_zero(x), or_zero(y))),
                },
                BinOp::Sub => match (da, db) {
                    (None, None) => None,
                    (x, y) => Some(sub(or_zero(x), or_zero(y))),
                },
                BinOp::Mul => match (da, db) {
                    (None, None) => None,
                    (Some(x), None) => Some(mul(x, b)),
                    (None, Some(y)) => Some(mul(a, y)),
                    (Some(x), Some(y)) => Some(add(mul(x, b), mul(a, y))),
                },
                BinOp::Div => match (da, db) {
                    (None, None) => None,
                    (Some(x), None) => Some(div(x, b)),
                    // (a/b)' = (a'b - ab') / b²
                    (x, Some(y)) => Some(div(sub(mul(or_zero(x), b.clone()), mul(a, y)), mul(b.clone(), b))),
                },
                BinOp::FloorDiv | BinOp::Mod => None,
            }
        }
        Node::Where(c, a, b) => match (d(a), d(b)) {
            (None, None) => None,
            (x, y) => Some(select(strip(c), or_zero(x), or_zero(y))),
        },
        Node::Call(f, args) => {
            let u = strip(&args[0]);
            match f {
                Func::Min | Func::Max => {
                    let v = strip(&args[1]);
                    match (d(&args[0]), d(&args[1])) {
                        (None, None) => None,
                        (x, y) => Some(select(cmp(if *f == Func::Min { CmpOp::Le } else { CmpOp::Ge }, u, v), or_zero(x), or_zero(y))),
                    }
                }
                Func::Floor | Func::Ceil => None,
                _ => {
                    let du = d(&args[0])?;
                    Some(match f {
                        // tanh' = 1 - tanh²
                        Func::Tanh => {
                            let t = call(Func::Tanh, u);
                            mul(sub(fl(1.0), mul(t.clone(), t)), du)
                        }
                        Func::Exp => mul(call(Func::Exp, u), du),
                        Func::Exp2 => mul(mul(call(Func::Exp2, u), fl(LN_2)), du),
                        Func::Log => div(du, u),
                        Func::Log2 => div(du, mul(u, fl(LN_2))),
                        Func::Sqrt => div(du, mul(fl(2.0), call(Func::Sqrt, u))),
                        // torch's sign(u): -1, 0 or 1
                        Func::Abs => select(cmp(CmpOp::Lt, u.clone(), fl(0.0)), neg(du.clone()), select(cmp(CmpOp::Gt, u, fl(0.0)), du, fl(0.0))),
                        _ => return None,
                    })
                }
            }
        }
        // Not float-typed.
        Node::Int(_) | Node::Bool(_) | Node::Not(_) | Node::Cmp(..) | Node::And(..) | Node::Or(..) => None,
    }
}

/// The derivative of a score_mod with respect to the score, simplified.
pub fn derivative(e: &TExpr) -> TExpr {
    simplify(&or_zero(d(e)))
}

/// A product chain `c · Π num / Π den` taken apart: constants multiply out in one division at the end,
/// so `30.0 * (x * (1.0 / 30.0))` becomes `x` exactly (no 0.9999999999999999).
#[derive(Default)]
struct Product {
    sign: bool,
    num_const: f64,
    den_const: f64,
    num: Vec<TExpr>,
    den: Vec<TExpr>,
}

impl Product {
    fn collect(&mut self, e: TExpr, denominator: bool) {
        match e.node {
            Node::Bin(BinOp::Mul, a, b) => {
                self.collect(*a, denominator);
                self.collect(*b, denominator);
            }
            Node::Bin(BinOp::Div, a, b) => {
                self.collect(*a, denominator);
                self.collect(*b, !denominator);
            }
            Node::Neg(a) => {
                self.sign = !self.sign;
                self.collect(*a, denominator);
            }
            Node::Float(v) if denominator => self.den_const *= v,
            Node::Float(v) => self.num_const *= v,
            _ if denominator => self.den.push(e),
            _ => self.num.push(e),
        }
    }

    fn build(self) -> TExpr {
        let product = |v: Vec<TExpr>| v.into_iter().reduce(mul);
        let sign = if self.sign { -1.0 } else { 1.0 };
        let (num, den) = (product(self.num), product(self.den));
        let (cn, cd) = (sign * self.num_const, self.den_const);
        if cn == 0.0 && cd != 0.0 {
            return fl(0.0);
        }
        let body = match (num, den) {
            (None, None) => return fl(cn / cd),
            (Some(n), None) => n,
            (n, Some(dn)) => div(n.unwrap_or_else(|| fl(1.0)), dn),
        };
        // A constant denominator reads better (and rounds less) as a division: x / 30.0, not 0.0333 * x.
        let body = if cd != 1.0 && cn.abs() == 1.0 { div(body, fl(cd)) } else { body };
        let c = if cd != 1.0 && cn.abs() == 1.0 { cn } else { cn / cd };
        if c == 1.0 {
            body
        } else if c == -1.0 {
            neg(body)
        } else {
            mul(fl(c), body)
        }
    }
}

/// Bottom-up: fold constants, drop neutral elements, normalize product chains, merge equal where-branches.
pub fn simplify(e: &TExpr) -> TExpr {
    let s = |x: &TExpr| simplify(x);
    let out = match &e.node {
        Node::Neg(a) if e.ty == Ty::Float => neg(s(a)),
        Node::Bin(op @ (BinOp::Mul | BinOp::Div), _, _) if e.ty == Ty::Float => {
            let mut p = Product { num_const: 1.0, den_const: 1.0, ..Default::default() };
            // Simplify the factors first, then take the chain apart.
            let rebuilt = match &e.node {
                Node::Bin(_, a, b) => bin(*op, s(a), s(b)),
                _ => e.clone(),
            };
            p.collect(rebuilt, false);
            p.build()
        }
        Node::Bin(BinOp::Add, a, b) if e.ty == Ty::Float => add(s(a), s(b)),
        Node::Bin(BinOp::Sub, a, b) if e.ty == Ty::Float => sub(s(a), s(b)),
        Node::Where(c, a, b) => match c.node {
            Node::Bool(true) => s(a),
            Node::Bool(false) => s(b),
            _ => {
                let (a, b) = (s(a), s(b));
                if a == b {
                    a
                } else {
                    TExpr::new(Node::Where(Box::new(s(c)), Box::new(a), Box::new(b)), e.ty)
                }
            }
        },
        Node::Call(f, args) => TExpr::new(Node::Call(*f, args.iter().map(s).collect()), e.ty),
        _ => e.clone(),
    };
    TExpr { span: None, ..out }
}
