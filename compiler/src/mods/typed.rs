//! The checked tree: every node typed, integer-to-float promotions explicit, tensors resolved to their
//! declaration. Everything after the checker (interpreter, differentiation, block analysis, IR) reads this.

use super::ast::{BinOp, CmpOp, Expr, ExprKind, Func, Span, Var};
use std::fmt;

/// The three types: i32 integers, f32 floats and conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ty {
    Int,
    Float,
    Bool,
}

impl Ty {
    pub fn name(self) -> &'static str {
        match self {
            Ty::Int => "i32",
            Ty::Float => "f32",
            Ty::Bool => "bool",
        }
    }
    /// Its LLVM type.
    pub fn llvm(self) -> &'static str {
        match self {
            Ty::Int => "i32",
            Ty::Float => "float",
            Ty::Bool => "i1",
        }
    }
}

/// Element type of a declared tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    F32,
    I32,
}

impl Scalar {
    pub fn ty(self) -> Ty {
        match self {
            Scalar::F32 => Ty::Float,
            Scalar::I32 => Ty::Int,
        }
    }
    pub fn name(self) -> &'static str {
        self.ty().name()
    }
}

/// What a tensor is indexed by: one value per query head (`name[h]`) or per batch entry (`name[b]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PerIndex {
    Head,
    Batch,
}

impl PerIndex {
    pub fn var(self) -> Var {
        match self {
            PerIndex::Head => Var::H,
            PerIndex::Batch => Var::B,
        }
    }
}

/// A scalar tensor the expression may read, as the caller declares it. Kernel ABI: one
/// `ptr addrspace(1)` per declared tensor, in declaration order, pointing at `heads` (per head) or
/// `batch` (per batch) contiguous values of `dtype`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorDecl {
    pub name: String,
    pub dtype: Scalar,
    pub index: PerIndex,
}

impl TensorDecl {
    pub fn per_head(name: &str, dtype: Scalar) -> TensorDecl {
        TensorDecl { name: name.into(), dtype, index: PerIndex::Head }
    }
    pub fn per_batch(name: &str, dtype: Scalar) -> TensorDecl {
        TensorDecl { name: name.into(), dtype, index: PerIndex::Batch }
    }
}

impl fmt::Display for TensorDecl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}[{}]", self.name, self.dtype.name(), self.index.var().name())
    }
}

/// A typed node.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Int(i64),
    Float(f64),
    Bool(bool),
    Var(Var),
    /// The value of declared tensor number `.0` at h or b (as declared).
    Load(usize),
    Neg(Box<TExpr>),
    Not(Box<TExpr>),
    /// i32 -> f32 (implicit in the text: it prints as its operand).
    ToFloat(Box<TExpr>),
    Bin(BinOp, Box<TExpr>, Box<TExpr>),
    Cmp(CmpOp, Box<TExpr>, Box<TExpr>),
    And(Box<TExpr>, Box<TExpr>),
    Or(Box<TExpr>, Box<TExpr>),
    /// Every function except `where`, which is `Where`.
    Call(Func, Vec<TExpr>),
    Where(Box<TExpr>, Box<TExpr>, Box<TExpr>),
}

/// A typed expression. Equality ignores spans (two equal trees are the same computation).
#[derive(Clone, Debug)]
pub struct TExpr {
    pub node: Node,
    pub ty: Ty,
    pub span: Option<Span>,
}

impl PartialEq for TExpr {
    fn eq(&self, other: &TExpr) -> bool {
        self.ty == other.ty && self.node == other.node
    }
}

impl TExpr {
    pub fn new(node: Node, ty: Ty) -> TExpr {
        TExpr { node, ty, span: None }
    }
    pub fn int(v: i64) -> TExpr {
        TExpr::new(Node::Int(v), Ty::Int)
    }
    pub fn float(v: f64) -> TExpr {
        TExpr::new(Node::Float(v), Ty::Float)
    }
    pub fn bool(v: bool) -> TExpr {
        TExpr::new(Node::Bool(v), Ty::Bool)
    }
    pub fn var(v: Var) -> TExpr {
        TExpr::new(Node::Var(v), if v == Var::Score { Ty::Float } else { Ty::Int })
    }

    /// The node's children, in order.
    pub fn children(&self) -> Vec<&TExpr> {
        match &self.node {
            Node::Int(_) | Node::Float(_) | Node::Bool(_) | Node::Var(_) | Node::Load(_) => vec![],
            Node::Neg(a) | Node::Not(a) | Node::ToFloat(a) => vec![a],
            Node::Bin(_, a, b) | Node::Cmp(_, a, b) | Node::And(a, b) | Node::Or(a, b) => vec![a, b],
            Node::Call(_, args) => args.iter().collect(),
            Node::Where(c, a, b) => vec![c, a, b],
        }
    }

    /// Whether any node satisfies `p`.
    pub fn any(&self, p: &dyn Fn(&TExpr) -> bool) -> bool {
        p(self) || self.children().into_iter().any(|c| c.any(p))
    }

    pub fn uses(&self, v: Var) -> bool {
        self.any(&|e| e.node == Node::Var(v))
    }

    /// Depends on the element (q_idx, kv_idx or score), not only on the program (b, h, tensors).
    pub fn per_element(&self) -> bool {
        self.any(&|e| matches!(e.node, Node::Var(Var::QIdx | Var::KvIdx | Var::Score)))
    }

    /// The untyped tree this prints as (promotions vanish; tensors get their names back; no spans).
    pub fn to_expr(&self, tensors: &[TensorDecl]) -> Expr {
        let b = |e: &TExpr| Box::new(e.to_expr(tensors));
        let kind = match &self.node {
            Node::Int(v) => ExprKind::Int(*v),
            Node::Float(v) => ExprKind::Float(*v),
            Node::Bool(v) => ExprKind::Bool(*v),
            Node::Var(v) => ExprKind::Name(v.name().into()),
            Node::Load(i) => {
                let d = &tensors[*i];
                ExprKind::Index(d.name.clone(), Box::new(Expr::var(d.index.var())))
            }
            Node::Neg(a) => ExprKind::Neg(b(a)),
            Node::Not(a) => ExprKind::Not(b(a)),
            Node::ToFloat(a) => return a.to_expr(tensors),
            Node::Bin(op, x, y) => ExprKind::Bin(*op, b(x), b(y)),
            Node::Cmp(op, x, y) => ExprKind::Cmp(*op, b(x), b(y)),
            Node::And(x, y) => ExprKind::And(b(x), b(y)),
            Node::Or(x, y) => ExprKind::Or(b(x), b(y)),
            Node::Call(f, args) => ExprKind::Call(f.name().into(), args.iter().map(|a| a.to_expr(tensors)).collect()),
            Node::Where(c, x, y) => ExprKind::Call("where".into(), vec![c.to_expr(tensors), x.to_expr(tensors), y.to_expr(tensors)]),
        };
        // No spans: they belong to the text this was checked from, and the result is a new tree (printed,
        // or combined with others, whose errors must not point into the old text).
        Expr::new(kind)
    }

    /// The canonical text: the fewest parentheses, single spaces, shortest round-trip float literals.
    /// Parsing it gives back an equal tree, so it is a stable key.
    pub fn text(&self, tensors: &[TensorDecl]) -> String {
        self.to_expr(tensors).to_string()
    }
}
