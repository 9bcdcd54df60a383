//! `Expr` -> `TExpr`: names resolved, types checked (with implicit i32 -> f32 promotion where it is the
//! only reading), then the proofs: no integer intermediate can overflow i32 and no divisor can be 0,
//! under the bounds `interval` assumes. Every refusal names the rule, the spot and the fix.

use super::ast::{BinOp, CmpOp, Expr, ExprKind, Func, ModError, Rule, Span, Var};
use super::interval::{Analysis, Env, Strict};
use super::parse::MAX_DEPTH;
use super::typed::{Node, TExpr, TensorDecl, Ty};

/// Which of FlexAttention's two functions an expression is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ModKind {
    /// `score_mod(score, b, h, q_idx, kv_idx) -> f32`: the new score, before the softmax.
    Score,
    /// `mask_mod(b, h, q_idx, kv_idx) -> bool`: true keeps the element.
    Mask,
}

impl ModKind {
    pub fn name(self) -> &'static str {
        match self {
            ModKind::Score => "score_mod",
            ModKind::Mask => "mask_mod",
        }
    }
}

const KEYWORDS: [&str; 3] = ["inf", "true", "false"];

/// Names a declared tensor may not take.
fn reserved(name: &str) -> bool {
    Var::from_name(name).is_some() || Func::from_name(name).is_some() || KEYWORDS.contains(&name)
}

/// The declarations are usable: identifiers, not reserved, not repeated.
pub(crate) fn check_decls(decls: &[TensorDecl]) -> Result<(), ModError> {
    for (i, d) in decls.iter().enumerate() {
        let ident = d.name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && d.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let problem = if !ident {
            Some(format!("tensor name `{}` is not an identifier", d.name))
        } else if reserved(&d.name) {
            Some(format!("tensor name `{}` is reserved (a variable, function or keyword of the language)", d.name))
        } else if decls[..i].iter().any(|e| e.name == d.name) {
            Some(format!("tensor `{}` is declared twice", d.name))
        } else {
            None
        };
        if let Some(message) = problem {
            return Err(ModError::new(
                Rule::Declaration,
                None,
                message,
                "name each tensor once, with letters, digits and _ (not b, h, q_idx, kv_idx, score, inf, true, false or a function name)",
            ));
        }
    }
    Ok(())
}

pub(crate) struct Checker<'a> {
    pub kind: ModKind,
    pub decls: &'a [TensorDecl],
    pub src: Option<&'a str>,
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + (ca != *cb) as usize).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

fn closest<'n>(name: &str, candidates: impl Iterator<Item = &'n str>) -> Option<&'n str> {
    candidates.map(|c| (levenshtein(name, c), c)).filter(|(d, c)| *d <= 2 && *d < c.len()).min().map(|(_, c)| c)
}

fn promote(e: TExpr) -> TExpr {
    match (e.ty, &e.node) {
        (Ty::Int, Node::Int(v)) => TExpr { node: Node::Float(*v as f64), ty: Ty::Float, span: e.span },
        (Ty::Int, _) => {
            let span = e.span;
            TExpr { node: Node::ToFloat(Box::new(e)), ty: Ty::Float, span }
        }
        _ => e,
    }
}

impl<'a> Checker<'a> {
    fn text(&self, e: &Expr) -> String {
        match (self.src, e.span) {
            (Some(src), Some((s, t))) => src.get(s..t).map(str::to_string).unwrap_or_else(|| e.to_string()),
            _ => e.to_string(),
        }
    }

    fn names(&self) -> String {
        let mut v: Vec<&str> = vec!["b", "h", "q_idx", "kv_idx"];
        if self.kind == ModKind::Score {
            v.push("score");
        }
        v.push("inf");
        let tensors: Vec<String> = self.decls.iter().map(|d| format!("{}[{}]", d.name, d.index.var().name())).collect();
        let mut s = v.join(", ");
        if !tensors.is_empty() {
            s += &format!(" and the declared tensors {}", tensors.join(", "));
        }
        s
    }

    /// The whole expression: typed, its result type right for the kind, and proved safe.
    pub fn check_root(&self, e: &Expr) -> Result<TExpr, ModError> {
        check_decls(self.decls)?;
        let t = self.check(e, 0)?;
        let t = match (self.kind, t.ty) {
            (ModKind::Score, Ty::Bool) => {
                return Err(ModError::new(
                    Rule::WrongType,
                    e.span,
                    "a score_mod returns the new score (a number), but this expression is a condition",
                    "return a number: where(cond, score, -inf) masks inside a score_mod, or pass the condition as a mask_mod",
                ))
            }
            (ModKind::Score, _) => promote(t),
            (ModKind::Mask, Ty::Bool) => t,
            (ModKind::Mask, ty) => {
                return Err(ModError::new(
                    Rule::WrongType,
                    e.span,
                    format!("a mask_mod returns a condition (true = keep), but this expression is {}", ty.name()),
                    "compare it, e.g. `q_idx >= kv_idx` or `x != 0`",
                ))
            }
        };
        let env = Env::assumed(self.decls);
        Analysis { env: &env, strict: Some(Strict { decls: self.decls }) }.range(&t)?;
        Ok(t)
    }

    fn numeric(&self, t: TExpr, e: &Expr, what: &str) -> Result<TExpr, ModError> {
        if t.ty == Ty::Bool {
            return Err(ModError::new(
                Rule::WrongType,
                e.span,
                format!("{what} needs numbers, but `{}` is a condition (bool)", self.text(e)),
                "turn a condition into a number with where(cond, 1.0, 0.0)",
            ));
        }
        Ok(t)
    }

    fn condition(&self, t: TExpr, e: &Expr, what: &str) -> Result<TExpr, ModError> {
        if t.ty != Ty::Bool {
            return Err(ModError::new(
                Rule::WrongType,
                e.span,
                format!("{what} needs a condition, but `{}` is {}", self.text(e), t.ty.name()),
                "compare it, e.g. `x != 0` or `x > 0.0`",
            ));
        }
        Ok(t)
    }

    fn float_literal(&self, v: f64, span: Option<Span>, e: &Expr) -> Result<TExpr, ModError> {
        let problem = if !v.is_finite() || v.abs() > f32::MAX as f64 {
            Some((format!("`{}` does not fit f32 (largest finite value 3.4028235e38)", self.text(e)), "use `inf` for infinity, or a literal within ±3.4e38"))
        } else if v != 0.0 && v.abs() < f32::MIN_POSITIVE as f64 {
            Some((
                format!("`{}` is below f32's smallest normal value (1.1754944e-38): the kernel's flush-to-zero arithmetic reads it as 0", self.text(e)),
                "use 0.0, or a literal of at least 1.2e-38 in magnitude",
            ))
        } else {
            None
        };
        match problem {
            Some((m, fix)) => Err(ModError::new(Rule::Overflow, span, m, fix)),
            None => Ok(TExpr { node: Node::Float(v), ty: Ty::Float, span }),
        }
    }

    fn check(&self, e: &Expr, depth: usize) -> Result<TExpr, ModError> {
        if depth > MAX_DEPTH {
            return Err(ModError::new(
                Rule::TooComplex,
                e.span,
                format!("the expression nests deeper than {MAX_DEPTH} levels"),
                "simplify it, or compute per-head values on the host and pass them as a tensor",
            ));
        }
        let span = e.span;
        let sub = |x: &Expr| self.check(x, depth + 1);
        let mk = |node: Node, ty: Ty| TExpr { node, ty, span };
        Ok(match &e.kind {
            ExprKind::Int(v) => {
                if *v > i32::MAX as i64 || *v < i32::MIN as i64 {
                    return Err(ModError::new(
                        Rule::Overflow,
                        span,
                        format!("integer literal {v} does not fit i32"),
                        "use a smaller constant, or a float literal (with a `.`) if a float is meant",
                    ));
                }
                mk(Node::Int(*v), Ty::Int)
            }
            ExprKind::Float(v) => self.float_literal(*v, span, e)?,
            ExprKind::Bool(v) => mk(Node::Bool(*v), Ty::Bool),
            ExprKind::Name(n) => self.name(n, e)?,
            ExprKind::Index(n, idx) => self.index(n, idx, e)?,
            ExprKind::Neg(a) => {
                let t = self.numeric(sub(a)?, a, "unary `-`")?;
                match t.node {
                    Node::Int(v) => mk(Node::Int(-v), Ty::Int),
                    // Already checked as a literal (or `inf`): negating keeps it in range.
                    Node::Float(v) => mk(Node::Float(-v), Ty::Float),
                    _ => {
                        let ty = t.ty;
                        mk(Node::Neg(Box::new(t)), ty)
                    }
                }
            }
            ExprKind::Not(a) => mk(Node::Not(Box::new(self.condition(sub(a)?, a, "`!`")?)), Ty::Bool),
            ExprKind::Bin(op, a, b) => {
                let what = format!("`{}`", op.symbol());
                let (ta, tb) = (self.numeric(sub(a)?, a, &what)?, self.numeric(sub(b)?, b, &what)?);
                match op {
                    BinOp::FloorDiv | BinOp::Mod => {
                        for (t, x) in [(&ta, a), (&tb, b)] {
                            if t.ty != Ty::Int {
                                let fix = if *op == BinOp::FloorDiv { "for floats write floor(a / b)" } else { "for floats write a - b * floor(a / b)" };
                                return Err(ModError::new(
                                    Rule::WrongType,
                                    x.span,
                                    format!(
                                        "`{}` works on integers (Python's floor {}), but `{}` is f32",
                                        op.symbol(),
                                        if *op == BinOp::FloorDiv { "division" } else { "modulo" },
                                        self.text(x)
                                    ),
                                    fix,
                                ));
                            }
                        }
                        mk(Node::Bin(*op, Box::new(ta), Box::new(tb)), Ty::Int)
                    }
                    // True division, as in Python: always f32.
                    BinOp::Div => mk(Node::Bin(*op, Box::new(promote(ta)), Box::new(promote(tb))), Ty::Float),
                    _ if ta.ty == Ty::Int && tb.ty == Ty::Int => mk(Node::Bin(*op, Box::new(ta), Box::new(tb)), Ty::Int),
                    _ => mk(Node::Bin(*op, Box::new(promote(ta)), Box::new(promote(tb))), Ty::Float),
                }
            }
            ExprKind::Cmp(op, a, b) => {
                let (ta, tb) = (sub(a)?, sub(b)?);
                match (ta.ty == Ty::Bool, tb.ty == Ty::Bool) {
                    (true, true) if matches!(op, CmpOp::Eq | CmpOp::Ne) => mk(Node::Cmp(*op, Box::new(ta), Box::new(tb)), Ty::Bool),
                    (false, false) if ta.ty == tb.ty => mk(Node::Cmp(*op, Box::new(ta), Box::new(tb)), Ty::Bool),
                    (false, false) => mk(Node::Cmp(*op, Box::new(promote(ta)), Box::new(promote(tb))), Ty::Bool),
                    (true, true) => {
                        return Err(ModError::new(
                            Rule::WrongType,
                            span,
                            format!("`{}` orders numbers, but both sides of `{}` are conditions", op.symbol(), self.text(e)),
                            "conditions compare only with == and !=; join them with && or ||",
                        ))
                    }
                    (ba, _) => {
                        let (cond, other) = if ba { (a, b) } else { (b, a) };
                        return Err(ModError::new(
                            Rule::WrongType,
                            span,
                            format!("`{}` compares a condition (`{}`) with a number (`{}`)", op.symbol(), self.text(cond), self.text(other)),
                            "compare numbers with numbers (comparisons do not chain: write `a < b && b < c`), or turn the condition into a number with where(cond, 1, 0)",
                        ));
                    }
                }
            }
            ExprKind::And(a, b) | ExprKind::Or(a, b) => {
                let what = if matches!(e.kind, ExprKind::And(..)) { "`&&`" } else { "`||`" };
                let ta = Box::new(self.condition(sub(a)?, a, what)?);
                let tb = Box::new(self.condition(sub(b)?, b, what)?);
                mk(if matches!(e.kind, ExprKind::And(..)) { Node::And(ta, tb) } else { Node::Or(ta, tb) }, Ty::Bool)
            }
            ExprKind::Call(name, args) => self.call(name, args, e, depth)?,
        })
    }

    fn name(&self, n: &str, e: &Expr) -> Result<TExpr, ModError> {
        let span = e.span;
        if let Some(v) = Var::from_name(n) {
            if v == Var::Score && self.kind == ModKind::Mask {
                return Err(ModError::new(
                    Rule::ScoreInMask,
                    span,
                    "`score` does not exist in a mask_mod: a mask decides from b, h, q_idx and kv_idx only",
                    "move score-dependent terms to the score_mod (where(cond, score, -inf) masks there)",
                ));
            }
            return Ok(TExpr { span, ..TExpr::var(v) });
        }
        if n == "inf" {
            return Ok(TExpr { node: Node::Float(f64::INFINITY), ty: Ty::Float, span });
        }
        if let Some(d) = self.decls.iter().find(|d| d.name == n) {
            return Err(ModError::new(Rule::TensorIndex, span, format!("tensor `{n}` needs its index"), format!("write {n}[{}]", d.index.var().name())));
        }
        if Func::from_name(n).is_some() {
            return Err(ModError::new(Rule::Syntax, span, format!("`{n}` is a function"), format!("call it: {n}(x)")));
        }
        let python = |word: &str| format!("`{word}` is Python's spelling");
        let (rule, message, fix) = match n {
            "and" => (Rule::Syntax, python(n), "write `a && b`".to_string()),
            "or" => (Rule::Syntax, python(n), "write `a || b`".into()),
            "not" => (Rule::Syntax, python(n), "write `!a`".into()),
            "True" | "False" => (Rule::Syntax, python(n), format!("write `{}`", n.to_lowercase())),
            _ => {
                let known = Var::ALL.iter().map(|v| v.name()).chain(KEYWORDS).chain(self.decls.iter().map(|d| d.name.as_str()));
                let hint = closest(n, known).map(|c| format!("did you mean `{c}`? ")).unwrap_or_default();
                (
                    Rule::UnknownName,
                    format!("unknown name `{n}`"),
                    format!("{hint}the names are {}; declare other per-head or per-batch values as tensors", self.names()),
                )
            }
        };
        Err(ModError::new(rule, span, message, fix))
    }

    fn index(&self, n: &str, idx: &Expr, e: &Expr) -> Result<TExpr, ModError> {
        let span = e.span;
        let Some(i) = self.decls.iter().position(|d| d.name == n) else {
            if Var::from_name(n).is_some() || KEYWORDS.contains(&n) {
                return Err(ModError::new(
                    Rule::TensorIndex,
                    span,
                    format!("`{n}` is not a tensor and cannot be indexed"),
                    format!("write `{n}` without brackets"),
                ));
            }
            let hint = closest(n, self.decls.iter().map(|d| d.name.as_str())).map(|c| format!("did you mean `{c}`? ")).unwrap_or_default();
            return Err(ModError::new(
                Rule::UnknownName,
                span,
                format!("no tensor named `{n}` is declared"),
                format!(
                    "{hint}declare it (TensorDecl::per_head(\"{n}\", Scalar::F32) or per_batch); declared: {}",
                    if self.decls.is_empty() { "none".to_string() } else { self.decls.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ") }
                ),
            ));
        };
        let d = &self.decls[i];
        let want = d.index.var();
        match &idx.kind {
            ExprKind::Name(v) if v == want.name() => Ok(TExpr { node: Node::Load(i), ty: d.dtype.ty(), span }),
            ExprKind::Name(v) if v == "h" || v == "b" => Err(ModError::new(
                Rule::TensorIndex,
                idx.span,
                format!("tensor `{n}` is declared {} ({d}) but indexed by {v}", if want == Var::H { "per head" } else { "per batch" }),
                format!("index it as {n}[{}], or declare it per {}", want.name(), if want == Var::H { "batch" } else { "head" }),
            )),
            _ => Err(ModError::new(
                Rule::TensorIndex,
                idx.span,
                format!("tensors are indexed by h or b only, but `{n}` is indexed by `{}`", self.text(idx)),
                format!(
                    "write {n}[{}]; per-position tables are not supported: compute position-dependent values from q_idx and kv_idx in the expression",
                    want.name()
                ),
            )),
        }
    }

    fn call(&self, name: &str, args: &[Expr], e: &Expr, depth: usize) -> Result<TExpr, ModError> {
        let span = e.span;
        let Some(f) = Func::from_name(name) else {
            let fix = match name {
                "pow" => "multiply: x * x (or exp2(y * log2(x)))".to_string(),
                "sigmoid" => "write 1.0 / (1.0 + exp(-x))".into(),
                "clamp" | "clip" => "write min(max(x, lo), hi)".into(),
                "sign" => "write where(x > 0, 1, where(x < 0, -1, 0))".into(),
                "float" | "int" => "numbers convert by themselves: i32 becomes f32 where a float is needed".into(),
                _ if self.decls.iter().any(|d| d.name == name) => format!("`{name}` is a tensor: index it with brackets, {name}[h] or {name}[b]"),
                _ => {
                    let hint = closest(name, Func::ALL.iter().map(|f| f.name())).map(|c| format!("did you mean `{c}`? ")).unwrap_or_default();
                    format!("{hint}the functions are {}", Func::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "))
                }
            };
            return Err(ModError::new(Rule::UnknownFunction, span, format!("unknown function `{name}`"), fix));
        };
        if args.len() != f.arity() {
            return Err(ModError::new(
                Rule::Arity,
                span,
                format!("`{name}` takes {} argument{}, found {}", f.arity(), if f.arity() == 1 { "" } else { "s" }, args.len()),
                format!("call it as {}", f.signature()),
            ));
        }
        let mut t = Vec::with_capacity(args.len());
        for a in args {
            t.push(self.check(a, depth + 1)?);
        }
        let what = format!("`{name}`");
        Ok(match f {
            Func::Where => {
                let (b, a, c) = (t.pop(), t.pop(), t.pop());
                let (Some(c), Some(a), Some(b)) = (c, a, b) else { return Err(ModError::new(Rule::Arity, span, "`where` takes 3 arguments", f.signature())) };
                let c = self.condition(c, &args[0], "where's first argument")?;
                let (a, b) = match (a.ty == Ty::Bool, b.ty == Ty::Bool) {
                    (true, true) => (a, b),
                    (false, false) if a.ty == b.ty => (a, b),
                    (false, false) => (promote(a), promote(b)),
                    _ => {
                        return Err(ModError::new(
                            Rule::WrongType,
                            span,
                            format!(
                                "where's branches have different types: `{}` is {}, `{}` is {}",
                                self.text(&args[1]),
                                a.ty.name(),
                                self.text(&args[2]),
                                b.ty.name()
                            ),
                            "give both branches numbers, or both conditions",
                        ))
                    }
                };
                let ty = a.ty;
                TExpr { node: Node::Where(Box::new(c), Box::new(a), Box::new(b)), ty, span }
            }
            Func::Abs => {
                let a = self.numeric(t.remove(0), &args[0], &what)?;
                let ty = a.ty;
                TExpr { node: Node::Call(f, vec![a]), ty, span }
            }
            Func::Min | Func::Max => {
                let b = self.numeric(t.remove(1), &args[1], &what)?;
                let a = self.numeric(t.remove(0), &args[0], &what)?;
                let (a, b, ty) = if a.ty == Ty::Int && b.ty == Ty::Int { (a, b, Ty::Int) } else { (promote(a), promote(b), Ty::Float) };
                TExpr { node: Node::Call(f, vec![a, b]), ty, span }
            }
            _ => {
                let a = promote(self.numeric(t.remove(0), &args[0], &what)?);
                TExpr { node: Node::Call(f, vec![a]), ty: Ty::Float, span }
            }
        })
    }
}
