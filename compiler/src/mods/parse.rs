//! Text -> `Expr`: a small lexer and a precedence-climbing parser.
//!
//! Precedence, loosest first: `||`, `&&`, comparisons (not chained), `+ -`, `* / // %`, unary `- !`, then
//! calls, indexing, parentheses and literals. Python spellings that mean something else here (`&`, `|`,
//! `and`, `**`, chained comparisons) are errors that say what to write instead, never silent reinterpretations.

use super::ast::{BinOp, CmpOp, Expr, ExprKind, ModError, Rule, Span};

/// Longest source text accepted (a modifier is a line, not a program).
pub const MAX_SOURCE_LEN: usize = 4096;
/// Deepest tree accepted: keeps every recursive pass (check, eval, render) far from the stack's end.
pub const MAX_DEPTH: usize = 200;

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Ident(String),
    Op(&'static str),
    End,
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

fn syntax(span: Span, message: impl Into<String>, fix: impl Into<String>) -> ModError {
    ModError::new(Rule::Syntax, Some(span), message, fix)
}

const OPERATORS: [&str; 20] = ["//", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "!", "(", ")", "[", "]", ","];

impl<'a> Lexer<'a> {
    fn next(&mut self) -> Result<(Tok, Span), ModError> {
        let bytes = self.src.as_bytes();
        while self.pos < bytes.len() && bytes[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
        let start = self.pos;
        let Some(&c) = bytes.get(start) else { return Ok((Tok::End, (start, start))) };
        if c.is_ascii_digit() || (c == b'.' && bytes.get(start + 1).is_some_and(u8::is_ascii_digit)) {
            return self.number();
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while self.pos < bytes.len() && (bytes[self.pos].is_ascii_alphanumeric() || bytes[self.pos] == b'_') {
                self.pos += 1;
            }
            return Ok((Tok::Ident(self.src[start..self.pos].to_string()), (start, self.pos)));
        }
        let rest = &self.src[start..];
        for hint in [
            ("**", "`**` (power) is not in the language", "multiply: x * x, or use exp2(y * log2(x))"),
            ("&", "`&` is not an operator here", "write `a && b` for logical and (Python's `(a) & (b)` on masks)"),
            ("|", "`|` is not an operator here", "write `a || b` for logical or (Python's `(a) | (b)` on masks)"),
            ("=", "`=` is not an operator here", "write `==` to compare"),
            ("~", "`~` is not an operator here", "write `!a` for logical not"),
        ] {
            if rest.starts_with(hint.0) && !OPERATORS.iter().any(|op| op.len() > 1 && rest.starts_with(op)) {
                return Err(syntax((start, start + hint.0.len()), hint.1, hint.2));
            }
        }
        if let Some(op) = OPERATORS.iter().find(|op| rest.starts_with(**op)) {
            self.pos += op.len();
            return Ok((Tok::Op(op), (start, self.pos)));
        }
        let ch = rest.chars().next().unwrap_or('?');
        Err(syntax(
            (start, start + ch.len_utf8()),
            format!("unexpected character `{ch}`"),
            "use names, numbers, ( ) [ ] , and the operators + - * / // % < <= > >= == != && || !",
        ))
    }

    /// `12`, `1.5`, `.5`, `2.`, `1e-3`, `3.0E+2`. Integers are i32 (checked here, so that an out-of-range
    /// literal is named where it is written); anything with `.` or an exponent is f32.
    fn number(&mut self) -> Result<(Tok, Span), ModError> {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let digits = |l: &mut Self| {
            while l.pos < bytes.len() && bytes[l.pos].is_ascii_digit() {
                l.pos += 1;
            }
        };
        digits(self);
        let mut float = false;
        if bytes.get(self.pos) == Some(&b'.') {
            float = true;
            self.pos += 1;
            digits(self);
        }
        if matches!(bytes.get(self.pos), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(bytes.get(self.pos), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
                float = true;
                digits(self);
            } else {
                self.pos = save;
            }
        }
        let span = (start, self.pos);
        if bytes.get(self.pos).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') {
            return Err(syntax((start, self.pos + 1), "a number runs into a name", "separate them with an operator, e.g. `2 * h`"));
        }
        let text = &self.src[start..self.pos];
        if float {
            let v: f64 = text.parse().map_err(|_| syntax(span, format!("`{text}` is not a number"), "write a literal like 1.5 or 2e-3"))?;
            Ok((Tok::Float(v), span))
        } else {
            match text.parse::<i64>() {
                Ok(v) if v <= i32::MAX as i64 => Ok((Tok::Int(v), span)),
                _ => Err(ModError::new(
                    Rule::Overflow,
                    Some(span),
                    format!("integer literal {text} does not fit i32 (largest {})", i32::MAX),
                    "use a smaller constant, or write a float literal (with a `.`) if a float is meant",
                )),
            }
        }
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    tok: Tok,
    span: Span,
    /// Open recursions (parentheses, calls, indexing, unary operators): bounded before recursing, so
    /// that no input text can exhaust the stack.
    level: usize,
}

/// Parse `src` into an untyped tree. Never panics; every failure is a `ModError` with a span.
pub fn parse(src: &str) -> Result<Expr, ModError> {
    if src.len() > MAX_SOURCE_LEN {
        return Err(ModError::new(
            Rule::TooComplex,
            None,
            format!("the expression is {} bytes long (at most {MAX_SOURCE_LEN})", src.len()),
            "split the modifier, or compute per-head values on the host and pass them as a tensor",
        ));
    }
    let mut lexer = Lexer { src, pos: 0 };
    let (tok, span) = lexer.next()?;
    let mut p = Parser { lexer, tok, span, level: 0 };
    if p.tok == Tok::End {
        return Err(syntax((0, 0), "the expression is empty", "write e.g. `score` (score_mod) or `q_idx >= kv_idx` (mask_mod)"));
    }
    let (e, _) = p.expr(0)?;
    if p.tok != Tok::End {
        let fix = match &p.tok {
            Tok::Op("<" | "<=" | ">" | ">=" | "==" | "!=") => "comparisons do not chain: write `a < b && b < c`",
            Tok::Ident(w) if w == "and" => "write `&&` for logical and",
            Tok::Ident(w) if w == "or" => "write `||` for logical or",
            Tok::Ident(w) if w == "if" => "write where(cond, a, b) for `a if cond else b`",
            _ => "remove it, or join it to the expression with an operator",
        };
        return Err(syntax(p.span, format!("unexpected {} after a complete expression", describe(&p.tok)), fix));
    }
    Ok(e)
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Int(v) => format!("number `{v}`"),
        Tok::Float(v) => format!("number `{v:?}`"),
        Tok::Ident(s) => format!("name `{s}`"),
        Tok::Op(o) => format!("`{o}`"),
        Tok::End => "end of text".into(),
    }
}

/// Binding power of a binary operator token (higher binds tighter).
fn infix(t: &Tok) -> Option<u8> {
    match t {
        Tok::Op("||") => Some(1),
        Tok::Op("&&") => Some(2),
        Tok::Op("<" | "<=" | ">" | ">=" | "==" | "!=") => Some(3),
        Tok::Op("+" | "-") => Some(4),
        Tok::Op("*" | "/" | "//" | "%") => Some(5),
        _ => None,
    }
}

impl<'a> Parser<'a> {
    fn bump(&mut self) -> Result<(Tok, Span), ModError> {
        let next = self.lexer.next()?;
        Ok((std::mem::replace(&mut self.tok, next.0), std::mem::replace(&mut self.span, next.1)))
    }

    fn make(&self, kind: ExprKind, span: Span, nesting: usize) -> Result<Expr, ModError> {
        if nesting > MAX_DEPTH {
            return Err(self.too_deep(span));
        }
        Ok(Expr::at(kind, span))
    }

    /// Precedence climbing; `min_bp` is the loosest operator this call may consume.
    fn expr(&mut self, min_bp: u8) -> Result<(Expr, usize), ModError> {
        let (mut lhs, mut lhs_depth) = self.unary()?;
        while let Some(bp) = infix(&self.tok) {
            if bp < min_bp {
                break;
            }
            let (op, op_span) = self.bump()?;
            let (rhs, rhs_depth) = self.expr(bp + 1)?;
            if bp == 3 && infix(&self.tok) == Some(3) {
                return Err(syntax(
                    self.span,
                    format!("comparisons do not chain ({} after {})", describe(&self.tok), describe(&op)),
                    "comparisons do not chain: write `a < b && b < c`",
                ));
            }
            let span = (lhs.span.map_or(op_span.0, |s| s.0), rhs.span.map_or(op_span.1, |s| s.1));
            let (a, b) = (Box::new(lhs), Box::new(rhs));
            let kind = match op {
                Tok::Op("||") => ExprKind::Or(a, b),
                Tok::Op("&&") => ExprKind::And(a, b),
                Tok::Op("<") => ExprKind::Cmp(CmpOp::Lt, a, b),
                Tok::Op("<=") => ExprKind::Cmp(CmpOp::Le, a, b),
                Tok::Op(">") => ExprKind::Cmp(CmpOp::Gt, a, b),
                Tok::Op(">=") => ExprKind::Cmp(CmpOp::Ge, a, b),
                Tok::Op("==") => ExprKind::Cmp(CmpOp::Eq, a, b),
                Tok::Op("!=") => ExprKind::Cmp(CmpOp::Ne, a, b),
                Tok::Op("+") => ExprKind::Bin(BinOp::Add, a, b),
                Tok::Op("-") => ExprKind::Bin(BinOp::Sub, a, b),
                Tok::Op("*") => ExprKind::Bin(BinOp::Mul, a, b),
                Tok::Op("/") => ExprKind::Bin(BinOp::Div, a, b),
                Tok::Op("//") => ExprKind::Bin(BinOp::FloorDiv, a, b),
                _ => ExprKind::Bin(BinOp::Mod, a, b),
            };
            lhs_depth = 1 + lhs_depth.max(rhs_depth);
            lhs = self.make(kind, span, lhs_depth)?;
        }
        Ok((lhs, lhs_depth))
    }

    fn unary(&mut self) -> Result<(Expr, usize), ModError> {
        self.level += 1;
        if self.level > MAX_DEPTH {
            return Err(self.too_deep(self.span));
        }
        let r = self.unary_inner();
        self.level -= 1;
        r
    }

    fn too_deep(&self, span: Span) -> ModError {
        ModError::new(
            Rule::TooComplex,
            Some(span),
            format!("the expression nests deeper than {MAX_DEPTH} levels"),
            "simplify it, or compute per-head values on the host and pass them as a tensor",
        )
    }

    fn unary_inner(&mut self) -> Result<(Expr, usize), ModError> {
        match self.tok {
            Tok::Op("-") | Tok::Op("!") => {
                let (op, span) = self.bump()?;
                let (a, d) = self.unary()?;
                let span = (span.0, a.span.map_or(span.1, |s| s.1));
                let kind = if op == Tok::Op("-") { ExprKind::Neg(Box::new(a)) } else { ExprKind::Not(Box::new(a)) };
                Ok((self.make(kind, span, d + 1)?, d + 1))
            }
            Tok::Op("+") => Err(syntax(self.span, "unary `+` is not in the language", "drop the `+`")),
            _ => self.primary(),
        }
    }

    fn primary(&mut self) -> Result<(Expr, usize), ModError> {
        let (tok, span) = self.bump()?;
        match tok {
            Tok::Int(v) => Ok((Expr::at(ExprKind::Int(v), span), 1)),
            Tok::Float(v) => Ok((Expr::at(ExprKind::Float(v), span), 1)),
            Tok::Op("(") => {
                let (mut e, d) = self.expr(0)?;
                let close = self.expect(")", "close the parenthesis")?;
                // The span of a parenthesized expression covers its parentheses (errors underline them).
                e.span = Some((span.0, close.1));
                Ok((e, d))
            }
            Tok::Ident(name) => match self.tok {
                Tok::Op("(") => {
                    self.bump()?;
                    let mut args = Vec::new();
                    let mut d = 0;
                    if self.tok != Tok::Op(")") {
                        loop {
                            let (a, ad) = self.expr(0)?;
                            d = d.max(ad);
                            args.push(a);
                            if self.tok == Tok::Op(",") {
                                self.bump()?;
                                continue;
                            }
                            break;
                        }
                    }
                    let close = self.expect(")", "close the argument list (arguments are separated by `,`)")?;
                    Ok((self.make(ExprKind::Call(name, args), (span.0, close.1), d + 1)?, d + 1))
                }
                Tok::Op("[") => {
                    self.bump()?;
                    let (index, d) = self.expr(0)?;
                    let close = self.expect("]", "close the index")?;
                    Ok((self.make(ExprKind::Index(name, Box::new(index)), (span.0, close.1), d + 1)?, d + 1))
                }
                _ => {
                    let kind = match name.as_str() {
                        "true" => ExprKind::Bool(true),
                        "false" => ExprKind::Bool(false),
                        _ => ExprKind::Name(name),
                    };
                    Ok((Expr::at(kind, span), 1))
                }
            },
            Tok::End => Err(syntax(span, "the expression ends where a value is expected", "complete the expression")),
            other => {
                Err(syntax(span, format!("expected a value, found {}", describe(&other)), "write a name, a number, a call or a parenthesized expression here"))
            }
        }
    }

    fn expect(&mut self, op: &'static str, fix: &str) -> Result<Span, ModError> {
        if self.tok == Tok::Op(op) {
            Ok(self.bump()?.1)
        } else {
            Err(syntax(self.span, format!("expected `{op}`, found {}", describe(&self.tok)), fix))
        }
    }
}
