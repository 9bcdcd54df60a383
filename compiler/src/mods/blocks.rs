//! Block sparsity of a mask_mod, proved by the generator (FlexAttention computes its block mask by
//! evaluating every element; here it follows from the expression).
//!
//! Two tools:
//! - `classify`: for one query block x key block (and, when known, b and h), the interval analysis decides
//!   whether the mask is false everywhere (skip the block), true everywhere (no masking) or mixed. Sound:
//!   `Partial` whenever it cannot prove more.
//! - `KvBounds`: when the mask's conditions are affine in kv_idx with coefficient ±1 (causal, sliding
//!   windows, bottom-right offsets, per-head windows `q_idx - kv_idx < w[h]`), the range of keys a query
//!   tile [q_first, q_last] needs, and the range it sees unmasked, as closed forms of q_first, q_last, b and
//!   h. The kernel's K/V loop then runs over O(window) blocks, not O(N), and masks only the edge blocks.

use super::ast::{BinOp, CmpOp, Var};
use super::eval::{eval, Point, TensorData};
use super::interval::{unknown_tensor, Analysis, Env, FRange, Range, MAX_BATCH, MAX_HEADS};
use super::typed::{Node, PerIndex, TExpr, TensorDecl, Ty};

/// What a mask does on a block of (query, key) positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockClass {
    /// False everywhere: the block is skipped.
    FullyMasked,
    /// True everywhere: the block runs without the mask.
    FullyVisible,
    /// Mixed, or not proved otherwise: the block runs with the mask applied per element.
    Partial,
}

/// A query block x key block (inclusive position ranges) and, when known, the batch and head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub q: (i64, i64),
    pub kv: (i64, i64),
    pub b: Option<i64>,
    pub h: Option<i64>,
}

impl Region {
    pub fn new(q: (i64, i64), kv: (i64, i64)) -> Region {
        Region { q, kv, b: None, h: None }
    }
}

/// The environment of a region: given tensors contribute the values at (or the hull over) their index.
pub(crate) fn region_env(decls: &[TensorDecl], r: &Region, data: Option<&[&TensorData]>) -> Env {
    let b = r.b.map_or((0, MAX_BATCH - 1), |b| (b, b));
    let h = r.h.map_or((0, MAX_HEADS - 1), |h| (h, h));
    let tensors = decls
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let Some(values) = data.map(|v| v[i]) else { return unknown_tensor(d.dtype) };
            let (lo, hi) = if d.index == PerIndex::Head { h } else { b };
            let (lo, hi) = (lo.max(0) as usize, (hi.max(-1) + 1).max(0) as usize);
            let seen = |n: usize| lo.min(n)..hi.min(n);
            match values {
                TensorData::I32(v) if !v[seen(v.len())].is_empty() => {
                    let s = &v[seen(v.len())];
                    Range::Int(*s.iter().min().unwrap_or(&0) as i64, *s.iter().max().unwrap_or(&0) as i64)
                }
                TensorData::F32(v) if !v[seen(v.len())].is_empty() => {
                    let s = &v[seen(v.len())];
                    let nan = s.iter().any(|x| x.is_nan());
                    let finite = s.iter().filter(|x| !x.is_nan()).map(|x| *x as f64);
                    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x), h.max(x)));
                    if lo > hi {
                        Range::Float(FRange::ANY)
                    } else {
                        Range::Float(FRange { lo, hi, nan })
                    }
                }
                // Index outside the given values: the kernel would read whatever is there.
                _ => unknown_tensor(d.dtype),
            }
        })
        .collect();
    Env { b, h, q: r.q, kv: r.kv, score: FRange::ANY, tensors }
}

/// Classify `mask` on `region`. An empty region (q.0 > q.1 or kv.0 > kv.1) keeps nothing: FullyMasked.
pub(crate) fn classify(mask: &TExpr, decls: &[TensorDecl], region: &Region, data: Option<&[&TensorData]>) -> BlockClass {
    if region.q.0 > region.q.1 || region.kv.0 > region.kv.1 {
        return BlockClass::FullyMasked;
    }
    let env = region_env(decls, region, data);
    let r = Analysis { env: &env, strict: None }.range(mask);
    match r.map(|r| r.as_bool()) {
        Ok((false, _)) => BlockClass::FullyMasked,
        Ok((true, false)) => BlockClass::FullyVisible,
        _ => BlockClass::Partial,
    }
}

/// `q_coef · q + rest`, where `rest` is an i32 expression of b, h and tensors only (uniform per program).
#[derive(Clone, Debug, PartialEq)]
pub struct Affine {
    pub q_coef: i64,
    pub rest: TExpr,
}

/// A bound on kv_idx as a function of q_idx: affine pieces combined by min and max.
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    Affine(Affine),
    Min(Vec<Bound>),
    Max(Vec<Bound>),
}

/// A set of keys: nothing, or an interval whose missing sides are unbounded.
#[derive(Clone, Debug, PartialEq)]
pub enum KvSet {
    Empty,
    Range { lo: Option<Bound>, hi: Option<Bound> },
}

const FULL: KvSet = KvSet::Range { lo: None, hi: None };

/// For a query tile: which keys can be kept (`needed`: every kept key lies in it) and which are kept for
/// every query of the tile (`visible`: no masking needed there).
#[derive(Clone, Debug, PartialEq)]
pub struct KvBounds {
    pub needed: KvSet,
    pub visible: KvSet,
}

/// Which extreme of an affine piece over the tile's queries a use needs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Over {
    Min,
    Max,
}

impl Bound {
    fn combine(a: Bound, b: Bound, max: bool) -> Bound {
        let mut items = Vec::new();
        for x in [a, b] {
            match (x, max) {
                (Bound::Max(v), true) | (Bound::Min(v), false) => items.extend(v),
                (x, _) => items.push(x),
            }
        }
        items.dedup();
        if items.len() == 1 {
            return items.pop().expect("one item");
        }
        if max {
            Bound::Max(items)
        } else {
            Bound::Min(items)
        }
    }

    /// Every affine piece taken at its min or max over q in [q0, q1], then combined. For min/max
    /// combinations this is the sound direction: e.g. min over q of max(f, g) >= max(min f, min g).
    pub(crate) fn at(&self, over: Over, q: (i64, i64), rest: &mut dyn FnMut(&TExpr) -> i64) -> i64 {
        match self {
            Bound::Affine(a) => {
                let edge = if (a.q_coef >= 0) == (over == Over::Max) { q.1 } else { q.0 };
                a.q_coef.saturating_mul(edge).saturating_add(rest(&a.rest))
            }
            Bound::Min(v) => v.iter().map(|b| b.at(over, q, rest)).min().unwrap_or(i64::MAX),
            Bound::Max(v) => v.iter().map(|b| b.at(over, q, rest)).max().unwrap_or(i64::MIN),
        }
    }

    pub(crate) fn pieces<'a>(&'a self, out: &mut Vec<&'a Affine>) {
        match self {
            Bound::Affine(a) => out.push(a),
            Bound::Min(v) | Bound::Max(v) => v.iter().for_each(|b| b.pieces(out)),
        }
    }
}

fn side(a: Option<Bound>, b: Option<Bound>, max: bool, none_absorbs: bool) -> Option<Bound> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Bound::combine(a, b, max)),
        (None, x) | (x, None) if !none_absorbs => x,
        _ => None,
    }
}

fn intersect(a: KvSet, b: KvSet) -> KvSet {
    match (a, b) {
        (KvSet::Range { lo: l0, hi: h0 }, KvSet::Range { lo: l1, hi: h1 }) => KvSet::Range { lo: side(l0, l1, true, false), hi: side(h0, h1, false, false) },
        _ => KvSet::Empty,
    }
}

fn hull(a: KvSet, b: KvSet) -> KvSet {
    match (a, b) {
        (KvSet::Empty, x) | (x, KvSet::Empty) => x,
        (KvSet::Range { lo: l0, hi: h0 }, KvSet::Range { lo: l1, hi: h1 }) => KvSet::Range { lo: side(l0, l1, false, true), hi: side(h0, h1, true, true) },
    }
}

/// A subset of a union: either side is (the one with more unbounded sides, as the likelier larger).
fn either(a: KvSet, b: KvSet) -> KvSet {
    let open = |s: &KvSet| match s {
        KvSet::Empty => -1,
        KvSet::Range { lo, hi } => lo.is_none() as i32 + hi.is_none() as i32,
    };
    if open(&b) > open(&a) {
        b
    } else {
        a
    }
}

/// An integer expression as kv·kv_idx + q·q_idx + Σ cᵢ·atomᵢ + c, atoms being program-uniform subtrees.
#[derive(Clone, Debug, Default)]
struct LinX {
    kv: i64,
    q: i64,
    rest: Vec<(i64, TExpr)>,
    c: i64,
}

impl LinX {
    fn combine(mut self, o: LinX, k: i64) -> Option<LinX> {
        self.kv = self.kv.checked_add(o.kv.checked_mul(k)?)?;
        self.q = self.q.checked_add(o.q.checked_mul(k)?)?;
        self.c = self.c.checked_add(o.c.checked_mul(k)?)?;
        for (c, a) in o.rest {
            let c = c.checked_mul(k)?;
            match self.rest.iter_mut().find(|(_, b)| *b == a) {
                Some(t) => t.0 = t.0.checked_add(c)?,
                None => self.rest.push((c, a)),
            }
        }
        self.rest.retain(|t| t.0 != 0);
        Some(self)
    }
    fn scale(self, k: i64) -> Option<LinX> {
        LinX::default().combine(self, k)
    }
    fn constant(&self) -> Option<i64> {
        (self.kv == 0 && self.q == 0 && self.rest.is_empty()).then_some(self.c)
    }
    /// Σ cᵢ·atomᵢ + c as an i32 expression.
    fn rest_expr(&self) -> TExpr {
        let bin = |op, a: TExpr, b: TExpr| TExpr::new(Node::Bin(op, Box::new(a), Box::new(b)), Ty::Int);
        let mut e: Option<TExpr> = None;
        for (c, a) in &self.rest {
            let term = if *c == 1 || *c == -1 { a.clone() } else { bin(BinOp::Mul, TExpr::int(*c), a.clone()) };
            e = Some(match (e, *c < 0) {
                (None, false) => term,
                (None, true) if *c == -1 => TExpr::new(Node::Neg(Box::new(term)), Ty::Int),
                (None, true) => term,
                (Some(x), true) if *c == -1 => bin(BinOp::Sub, x, term),
                (Some(x), _) => bin(BinOp::Add, x, term),
            });
        }
        match e {
            None => TExpr::int(self.c),
            Some(x) if self.c == 0 => x,
            Some(x) if self.c < 0 => bin(BinOp::Sub, x, TExpr::int(-self.c)),
            Some(x) => bin(BinOp::Add, x, TExpr::int(self.c)),
        }
    }
}

fn linear(e: &TExpr) -> Option<LinX> {
    if e.ty != Ty::Int {
        return None;
    }
    let strip = |e: &TExpr| TExpr { span: None, ..e.clone() };
    match &e.node {
        Node::Int(v) => Some(LinX { c: *v, ..LinX::default() }),
        Node::Var(Var::QIdx) => Some(LinX { q: 1, ..LinX::default() }),
        Node::Var(Var::KvIdx) => Some(LinX { kv: 1, ..LinX::default() }),
        Node::Neg(a) => linear(a)?.scale(-1),
        Node::Bin(BinOp::Add, a, b) => linear(a)?.combine(linear(b)?, 1),
        Node::Bin(BinOp::Sub, a, b) => linear(a)?.combine(linear(b)?, -1),
        Node::Bin(BinOp::Mul, a, b) => {
            let (la, lb) = (linear(a)?, linear(b)?);
            match (la.constant(), lb.constant()) {
                (_, Some(k)) => la.scale(k),
                (Some(k), _) => lb.scale(k),
                _ if !e.per_element() => Some(LinX { rest: vec![(1, strip(e))], ..LinX::default() }),
                _ => None,
            }
        }
        _ if !e.per_element() => Some(LinX { rest: vec![(1, strip(e))], ..LinX::default() }),
        _ => None,
    }
}

/// The keys an atomic condition allows, when it bounds kv_idx; None when it says nothing usable.
fn atom(op: CmpOp, a: &TExpr, b: &TExpr) -> Option<KvSet> {
    // a - b op 0, as kv·kv_idx + E op 0
    let d = linear(a)?.combine(linear(b)?, -1)?;
    if d.kv == 0 {
        return d.constant().map(|c| if op.holds(c, 0) { FULL } else { KvSet::Empty });
    }
    if d.kv.abs() != 1 {
        return None;
    }
    // kv·s + E op 0  =>  kv op' F with F = -s·E (s = ±1 flips the comparison when -1)
    let s = d.kv;
    let op = if s < 0 { op.swapped() } else { op };
    let f = LinX { kv: 0, ..d }.scale(-s)?;
    let bound = |extra: i64| -> Option<Bound> {
        let f = f.clone().combine(LinX { c: extra, ..LinX::default() }, 1)?;
        Some(Bound::Affine(Affine { q_coef: f.q, rest: f.rest_expr() }))
    };
    Some(match op {
        CmpOp::Lt => KvSet::Range { lo: None, hi: Some(bound(-1)?) },
        CmpOp::Le => KvSet::Range { lo: None, hi: Some(bound(0)?) },
        CmpOp::Gt => KvSet::Range { lo: Some(bound(1)?), hi: None },
        CmpOp::Ge => KvSet::Range { lo: Some(bound(0)?), hi: None },
        CmpOp::Eq => KvSet::Range { lo: Some(bound(0)?), hi: Some(bound(0)?) },
        CmpOp::Ne => return None,
    })
}

/// (needed, visible) for `e` (negated when `neg`).
fn derive(e: &TExpr, neg: bool) -> (KvSet, KvSet) {
    match &e.node {
        Node::Bool(v) => {
            let s = if *v != neg { FULL } else { KvSet::Empty };
            (s.clone(), s)
        }
        Node::Not(a) => derive(a, !neg),
        Node::And(a, b) | Node::Or(a, b) => {
            let ((n0, v0), (n1, v1)) = (derive(a, neg), derive(b, neg));
            // De Morgan: a negated && is an ||.
            if matches!(e.node, Node::And(..)) != neg {
                (intersect(n0, n1), intersect(v0, v1))
            } else {
                (hull(n0, n1), either(v0, v1))
            }
        }
        Node::Where(c, a, b) => {
            // (c && a) || (!c && b), with a and b negated when `neg`
            let ((nc, vc), (nnc, vnc)) = (derive(c, false), derive(c, true));
            let ((na, va), (nb, vb)) = (derive(a, neg), derive(b, neg));
            (hull(intersect(nc, na), intersect(nnc, nb)), either(intersect(vc, va), intersect(vnc, vb)))
        }
        Node::Cmp(op, a, b) if a.ty == Ty::Int => {
            let op = if neg { op.negated() } else { *op };
            match atom(op, a, b) {
                Some(s) => (s.clone(), s),
                None => (FULL, KvSet::Empty),
            }
        }
        _ => (FULL, KvSet::Empty),
    }
}

pub(crate) fn kv_bounds(mask: &TExpr) -> KvBounds {
    let (needed, visible) = derive(mask, false);
    KvBounds { needed, visible }
}

/// Keys of one query tile, inclusive; i64::MIN / i64::MAX stand for unbounded sides, lo > hi for none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileKeys {
    pub needed: (i64, i64),
    pub visible: (i64, i64),
}

/// The K/V blocks one query tile visits: `first..=last` (none when first > last), of which
/// `full_first..=full_last` need no mask (every key of the block that is below n_kv is kept for every
/// query of the tile; the kernel still applies its own sequence-length mask to the last block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRange {
    pub first: i64,
    pub last: i64,
    pub full_first: i64,
    pub full_last: i64,
}

impl KvBounds {
    /// Whether the loop over K/V blocks can be shortened at all (a bound on one side at least).
    pub fn skips_blocks(&self) -> bool {
        match &self.needed {
            KvSet::Empty => true,
            KvSet::Range { lo, hi } => lo.is_some() || hi.is_some(),
        }
    }

    pub(crate) fn tile_keys(&self, q: (i64, i64), rest: &mut dyn FnMut(&TExpr) -> i64) -> TileKeys {
        let eval = |s: &KvSet, lo_over: Over, hi_over: Over, rest: &mut dyn FnMut(&TExpr) -> i64| match s {
            KvSet::Empty => (0, -1),
            KvSet::Range { lo, hi } => (lo.as_ref().map_or(i64::MIN, |b| b.at(lo_over, q, rest)), hi.as_ref().map_or(i64::MAX, |b| b.at(hi_over, q, rest))),
        };
        TileKeys { needed: eval(&self.needed, Over::Min, Over::Max, rest), visible: eval(&self.visible, Over::Max, Over::Min, rest) }
    }

    /// Keys needed and keys visible for the query tile q.0..=q.1 of program (b, h).
    pub(crate) fn keys(&self, q: (i64, i64), b: i64, h: i64, data: &[&TensorData], decls: &[TensorDecl]) -> TileKeys {
        let p = Point { b, h, q_idx: 0, kv_idx: 0, score: 0.0 };
        self.tile_keys(q, &mut |e| eval(e, &p, data, decls).map(|v| v.f() as i64).unwrap_or(0))
    }

    pub(crate) fn blocks(keys: TileKeys, block_n: i64, n_kv: i64) -> BlockRange {
        let (lo, hi) = (keys.needed.0.max(0), keys.needed.1.min(n_kv - 1));
        if lo > hi || block_n <= 0 {
            return BlockRange { first: 0, last: -1, full_first: 0, full_last: -1 };
        }
        let (first, last) = (lo / block_n, hi / block_n);
        let (vlo, vhi) = keys.visible;
        let full_first = if vlo <= 0 { 0 } else { vlo.saturating_add(block_n - 1) / block_n }.max(first);
        // A block j is full when [j·BN, min((j+1)·BN, n_kv) - 1] lies in [vlo, vhi].
        let full_last = if vhi >= n_kv - 1 {
            last
        } else if vhi < 0 {
            -1
        } else {
            (vhi + 1) / block_n - 1
        }
        .min(last);
        BlockRange { first, last, full_first, full_last }
    }
}
