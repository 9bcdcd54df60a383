//! What a reference computes: the geometry of one attention call (batch, query and K/V heads, head dims,
//! fixed or packed variable lengths), where each tensor's elements live (strides), and the rules that turn
//! a dot product q·k into a softmax weight (scale, softcap, ALiBi, score_mod; causal, window, mask_mod).
//!
//! The score of query i and key j of sequence b, query head h (i and j count within the sequence; N_q and
//! N_kv are that sequence's lengths; `off` is the alignment's diagonal, [`Alignment::offset`]):
//!
//! ```text
//! s = sm_scale · (q_i · k_j)                    the scale first, as FlashAttention applies it
//! s = cap · tanh(s / cap)                        softcap, on the scaled score
//! s = s − slope[b, h] · |i + off − j|            ALiBi, after the softcap
//! s = score_mod(b, h, i, j, s)                   last
//! visible(i, j) = 0 ≤ j < N_kv
//!               ∧ (¬causal ∨ j ≤ i + off)
//!               ∧ (left = None ∨ j ≥ i + off − left) ∧ (right = None ∨ j ≤ i + off + right)
//!               ∧ mask_mod(b, h, i, j)
//! ```
//!
//! P_i = softmax over the visible keys (a score of −∞ from score_mod counts as masked), O_i = P_i·V,
//! LSE_i = ln Σ_visible exp(s_ij), M_i = LSE_i · log2 e (what the kernels store). A row with no visible key
//! has O_i = 0 and LSE_i = M_i = −∞, and its gradients are 0.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use super::blocks::Band;

/// Where the causal diagonal lies when a sequence has N_q ≠ N_kv: query i is aligned with key i + offset.
/// The window and ALiBi's distance are measured from the same diagonal, so all three agree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Alignment {
    /// offset = N_kv − N_q: the last query is aligned with the last key (FlashAttention 2 and later; the
    /// default). With N_q > N_kv the first N_q − N_kv queries of a causal problem see no key.
    #[default]
    BottomRight,
    /// offset = 0: the first query is aligned with the first key (FlashAttention 1, PyTorch's `is_causal`).
    TopLeft,
}

impl Alignment {
    /// The diagonal's offset for one sequence: query i is aligned with key i + offset.
    pub fn offset(self, n_q: usize, n_kv: usize) -> i64 {
        match self {
            Alignment::BottomRight => n_kv as i64 - n_q as i64,
            Alignment::TopLeft => 0,
        }
    }
}

/// A sliding window around the aligned diagonal: query i sees keys i + off − left ..= i + off + right
/// (FlashAttention's `window_size`). `None` is unbounded on that side (FlashAttention's −1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Window {
    pub left: Option<usize>,
    pub right: Option<usize>,
}

impl Window {
    /// No window.
    pub const UNBOUNDED: Window = Window { left: None, right: None };

    /// FlashAttention's `window_size=(left, right)`: any negative value is unbounded.
    pub fn from_fa(left: i64, right: i64) -> Window {
        let bound = |x: i64| usize::try_from(x).ok();
        Window { left: bound(left), right: bound(right) }
    }

    pub fn is_unbounded(&self) -> bool {
        self.left.is_none() && self.right.is_none()
    }
}

/// The structural part of the mask, the part kernels skip and mask whole blocks by: causal, its alignment,
/// the window. Causal composed with a window is their intersection (FlashAttention: causal sets right = 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mask {
    pub causal: bool,
    pub alignment: Alignment,
    pub window: Window,
}

impl Mask {
    /// The visible (query, key) pairs of a sequence with these lengths, as bounds on j − i.
    pub fn band(&self, n_q: usize, n_kv: usize) -> Band {
        let off = self.alignment.offset(n_q, n_kv);
        let lo = self.window.left.map(|l| off - l as i64);
        let hi = self.window.right.map(|r| off + r as i64);
        let hi = if self.causal { Some(hi.map_or(off, |h| h.min(off))) } else { hi };
        Band { rows: n_q, cols: n_kv, lo, hi }
    }
}

/// ALiBi slopes, one per query head (`[H]`) or per (sequence, query head) (`[B, H]`, FlashAttention's
/// `alibi_slopes` of shape (batch, nheads)). The bias is −slope · |i + off − j|: FlashAttention 2's
/// documented formula, for causal and non-causal problems alike (for the keys a causal row sees it equals
/// slope · (j − i − off)). No gradient flows to the slopes.
#[derive(Clone, Debug, PartialEq)]
pub struct Alibi {
    pub slopes: Vec<f64>,
    pub per_batch: bool,
}

impl Alibi {
    pub fn per_head(slopes: Vec<f64>) -> Alibi {
        Alibi { slopes, per_batch: false }
    }

    /// `slopes[b * heads + h]`.
    pub fn per_batch_head(slopes: Vec<f64>) -> Alibi {
        Alibi { slopes, per_batch: true }
    }

    /// The slopes of the ALiBi paper for `heads` heads: a geometric sequence 2^(−8/n), 2^(−16/n), … for a
    /// power of two n; otherwise the closest smaller power's slopes followed by every other slope of twice it.
    pub fn standard(heads: usize) -> Alibi {
        fn power_of_two(n: usize) -> Vec<f64> {
            let start = 2f64.powf(-8.0 / n as f64);
            (1..=n).map(|i| start.powi(i as i32)).collect()
        }
        let mut slopes = Vec::with_capacity(heads);
        if heads > 0 {
            let floor = 1usize << heads.ilog2();
            slopes = power_of_two(floor);
            slopes.extend(power_of_two(2 * floor).into_iter().step_by(2).take(heads - floor));
        }
        Alibi::per_head(slopes)
    }

    /// The slope of query head `h` of sequence `b` (`heads` query heads).
    pub fn slope(&self, b: usize, h: usize, heads: usize) -> f64 {
        self.slopes[if self.per_batch { b * heads + h } else { h }]
    }
}

/// The signature of a score modifier (and of its derivative): (sequence b, query head h, q_idx, kv_idx,
/// score) → score. Indices count within the sequence.
pub type ScoreFn = dyn Fn(usize, usize, usize, usize, f64) -> f64 + Send + Sync;

/// A generic score modifier, FlexAttention's `score_mod`, applied last to the score (after scale, softcap
/// and ALiBi), with its derivative d(new score)/d(score) for the backward. Returning −∞ masks the pair.
#[derive(Clone)]
pub struct ScoreMod {
    value: Arc<ScoreFn>,
    derivative: Option<Arc<ScoreFn>>,
}

impl ScoreMod {
    /// A modifier with its exact derivative.
    pub fn new(value: impl Fn(usize, usize, usize, usize, f64) -> f64 + Send + Sync + 'static, derivative: impl Fn(usize, usize, usize, usize, f64) -> f64 + Send + Sync + 'static) -> ScoreMod {
        ScoreMod { value: Arc::new(value), derivative: Some(Arc::new(derivative)) }
    }

    /// A modifier whose derivative is taken by central differences in f64 (step 1e-5·(1 + |s|): about 1e-10
    /// relative error for smooth modifiers, far below what any kernel check resolves). For an interpreter that
    /// evaluates expressions but does not differentiate them.
    pub fn numeric(value: impl Fn(usize, usize, usize, usize, f64) -> f64 + Send + Sync + 'static) -> ScoreMod {
        ScoreMod { value: Arc::new(value), derivative: None }
    }

    pub fn apply(&self, b: usize, h: usize, i: usize, j: usize, s: f64) -> f64 {
        (self.value)(b, h, i, j, s)
    }

    pub fn derivative(&self, b: usize, h: usize, i: usize, j: usize, s: f64) -> f64 {
        match &self.derivative {
            Some(d) => d(b, h, i, j, s),
            None => {
                let step = 1e-5 * (1.0 + s.abs());
                (self.apply(b, h, i, j, s + step) - self.apply(b, h, i, j, s - step)) / (2.0 * step)
            }
        }
    }
}

impl fmt::Debug for ScoreMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ScoreMod({})", if self.derivative.is_some() { "exact derivative" } else { "numeric derivative" })
    }
}

/// A generic mask, FlexAttention's `mask_mod`: (sequence b, query head h, q_idx, kv_idx) → visible. It is
/// ANDed with the structural [`Mask`]; indices count within the sequence.
#[derive(Clone)]
pub struct MaskMod(Arc<dyn Fn(usize, usize, usize, usize) -> bool + Send + Sync>);

impl MaskMod {
    pub fn new(visible: impl Fn(usize, usize, usize, usize) -> bool + Send + Sync + 'static) -> MaskMod {
        MaskMod(Arc::new(visible))
    }

    pub fn visible(&self, b: usize, h: usize, i: usize, j: usize) -> bool {
        (self.0)(b, h, i, j)
    }
}

impl fmt::Debug for MaskMod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MaskMod")
    }
}

/// Everything that turns q·k into a softmax weight, independent of where the tensors live: shared by the
/// dense, varlen and KV-cache problems. The order of application is the module's (scale, softcap, ALiBi,
/// score_mod; then the masks).
#[derive(Clone, Debug)]
pub struct ScoreRules {
    pub sm_scale: f64,
    pub mask: Mask,
    /// `Some(cap)` with cap > 0: s ← cap · tanh(s / cap) on the scaled score.
    pub softcap: Option<f64>,
    pub alibi: Option<Alibi>,
    pub score_mod: Option<ScoreMod>,
    pub mask_mod: Option<MaskMod>,
}

impl ScoreRules {
    /// Plain softmax(sm_scale · q·k): no mask, no modifier.
    pub fn new(sm_scale: f64) -> ScoreRules {
        ScoreRules { sm_scale, mask: Mask::default(), softcap: None, alibi: None, score_mod: None, mask_mod: None }
    }

    /// True when the score is sm_scale · q·k and nothing else (the kernels' plain path).
    pub fn is_plain_score(&self) -> bool {
        self.softcap.is_none() && self.alibi.is_none() && self.score_mod.is_none()
    }

    /// The rules specialized to one query row (see [`RowAt`]).
    pub fn row(&self, at: RowAt) -> RowRules<'_> {
        let band = self.mask.band(at.n_q, at.n_kv);
        let slope = self.alibi.as_ref().map_or(0.0, |a| a.slope(at.b, at.h, at.heads));
        RowRules { rules: self, at, band, offset: self.mask.alignment.offset(at.n_q, at.n_kv), slope }
    }
}

/// Which query row a score belongs to, with what per-row rules need: the sequence's lengths and the
/// number of query heads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowAt {
    pub b: usize,
    pub h: usize,
    pub i: usize,
    pub n_q: usize,
    pub n_kv: usize,
    pub heads: usize,
}

/// [`ScoreRules`] specialized to one query row: what a kernel knows when it processes that row.
#[derive(Clone, Debug)]
pub struct RowRules<'a> {
    rules: &'a ScoreRules,
    at: RowAt,
    band: Band,
    offset: i64,
    slope: f64,
}

impl RowRules<'_> {
    /// The keys the structural mask lets this row see (mask_mod may hide some of them).
    pub fn keys(&self) -> Range<usize> {
        self.band.keys_of(self.at.i)
    }

    /// The structural mask and mask_mod.
    pub fn visible(&self, j: usize) -> bool {
        let RowAt { b, h, i, .. } = self.at;
        self.band.contains(i, j) && self.rules.mask_mod.as_ref().is_none_or(|m| m.visible(b, h, i, j))
    }

    /// The score from the dot product q_i·k_j, without any mask: scale, softcap, ALiBi, score_mod.
    pub fn transform(&self, j: usize, qk: f64) -> f64 {
        self.transform_with_derivative(j, qk).0
    }

    /// The score and d score / d(q·k).
    pub fn transform_with_derivative(&self, j: usize, qk: f64) -> (f64, f64) {
        let r = self.rules;
        let RowAt { b, h, i, .. } = self.at;
        let mut s = r.sm_scale * qk;
        let mut ds = r.sm_scale;
        if let Some(cap) = r.softcap {
            let t = (s / cap).tanh();
            s = cap * t;
            ds *= 1.0 - t * t;
        }
        if r.alibi.is_some() {
            s -= self.slope * (i as i64 + self.offset - j as i64).abs() as f64;
        }
        if let Some(m) = &r.score_mod {
            ds *= m.derivative(b, h, i, j, s);
            s = m.apply(b, h, i, j, s);
        }
        (s, ds)
    }

    /// The score if the pair is visible, −∞ if not.
    pub fn score(&self, j: usize, qk: f64) -> f64 {
        if self.visible(j) {
            self.transform(j, qk)
        } else {
            f64::NEG_INFINITY
        }
    }
}

/// Element strides of one tensor whose last dimension (the head dim, or nothing for LSE) is contiguous:
/// the element (sequence b, head h, token t) starts at b·batch + h·head + t·token. For packed varlen
/// tensors t is the packed token index (cu_seqlens[b] + i) and `batch` is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub batch: usize,
    pub head: usize,
    pub token: usize,
}

impl Layout {
    pub fn offset(&self, b: usize, h: usize, t: usize) -> usize {
        b * self.batch + h * self.head + t * self.token
    }

    /// [B, H, N, D], contiguous.
    pub fn bhsd(heads: usize, tokens: usize, d: usize) -> Layout {
        Layout { batch: heads * tokens * d, head: tokens * d, token: d }
    }

    /// [B, N, H, D], contiguous.
    pub fn bshd(heads: usize, tokens: usize, d: usize) -> Layout {
        Layout { batch: tokens * heads * d, head: d, token: heads * d }
    }

    /// The same layout for a packed tensor: one batch entry holds every sequence, so the batch stride is 0
    /// and tokens are addressed by their packed index ([B, H, N, D] becomes [H, total, D]; [B, N, H, D]
    /// becomes [total, H, D], "THD").
    pub fn packed(self) -> Layout {
        Layout { batch: 0, ..self }
    }
}

/// The order of the dimensions of Q, K, V, O (and dO, dQ, dK, dV), all contiguous.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TensorOrder {
    /// [B, H, N, D]; packed varlen: [H, total, D].
    #[default]
    Bhsd,
    /// [B, N, H, D] (FlashAttention's); packed varlen: [total, H, D] ("THD").
    Bshd,
}

/// The layouts of one problem's tensors. dO has O's layout; dQ, dK, dV have Q's, K's and V's.
/// LSE and M are one value per query row: [B, H, N_q], or [H, total_q] for packed varlen, by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Layouts {
    pub q: Layout,
    pub k: Layout,
    pub v: Layout,
    pub o: Layout,
    /// LSE's `token` stride is per query row (there is no head dim).
    pub lse: Layout,
}

/// The sequence lengths of a problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lengths {
    /// Every sequence has `q` queries and `kv` keys.
    Fixed { q: usize, kv: usize },
    /// Packed variable lengths: sequence b owns tokens cu_q[b]..cu_q[b+1] of the packed Q and O, and
    /// cu_k[b]..cu_k[b+1] of K and V. Both start at 0, are non-decreasing, and have B + 1 entries.
    /// Zero-length sequences are allowed.
    Varlen { cu_q: Vec<usize>, cu_k: Vec<usize> },
}

/// One sequence of a problem: where its tokens start on each side's token axis, and its lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seq {
    pub q_start: usize,
    pub n_q: usize,
    pub k_start: usize,
    pub n_kv: usize,
}

/// One query row: sequence b, query head h, query i within the sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueryRow {
    pub b: usize,
    pub h: usize,
    pub i: usize,
}

/// The input tensors of a forward, as f32 (values rounded to the kernel's dtype first, so the reference
/// sees exactly what the kernel reads), in the problem's layouts.
#[derive(Clone, Copy, Debug)]
pub struct Qkv<'a> {
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
}

/// One attention problem as a reference sees it. Build it with [`RefProblem::new`] and the builder methods;
/// fields are public so a check can read (or set) anything directly.
///
/// Geometry: B sequences, H query heads, H_kv K/V heads (H % H_kv == 0; query head h reads K/V head
/// h / (H / H_kv)), head dims D_qk (Q, K) and D_v (V, O), lengths fixed or packed ([`Lengths`]).
/// Tensors: Q [.., H, D_qk], K [.., H_kv, D_qk], V [.., H_kv, D_v], O and dO [.., H, D_v], in
/// [`RefProblem::layouts`].
#[derive(Clone, Debug)]
pub struct RefProblem {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub d_qk: usize,
    pub d_v: usize,
    pub lengths: Lengths,
    pub rules: ScoreRules,
    pub order: TensorOrder,
    /// Explicit strides, overriding `order` (for views with padding, or any other layout a kernel takes).
    pub custom_layouts: Option<Layouts>,
}

impl RefProblem {
    /// B sequences of N queries and N keys, H heads of dim D (MHA), sm_scale = 1/√D, no mask, [B, H, N, D].
    pub fn new(batch: usize, heads: usize, n: usize, d: usize) -> RefProblem {
        RefProblem {
            batch,
            heads,
            kv_heads: heads,
            d_qk: d,
            d_v: d,
            lengths: Lengths::Fixed { q: n, kv: n },
            rules: ScoreRules::new(1.0 / (d.max(1) as f64).sqrt()),
            order: TensorOrder::Bhsd,
            custom_layouts: None,
        }
    }

    pub fn kv_heads(mut self, kv_heads: usize) -> Self {
        self.kv_heads = kv_heads;
        self
    }
    /// Fixed lengths N_q and N_kv (either may be the larger, or 0).
    pub fn seqlens(mut self, n_q: usize, n_kv: usize) -> Self {
        self.lengths = Lengths::Fixed { q: n_q, kv: n_kv };
        self
    }
    /// Packed variable lengths; B becomes cu_q.len() − 1.
    pub fn varlen(mut self, cu_q: Vec<usize>, cu_k: Vec<usize>) -> Self {
        self.batch = cu_q.len().saturating_sub(1);
        self.lengths = Lengths::Varlen { cu_q, cu_k };
        self
    }
    /// Packed variable lengths from per-sequence lengths.
    pub fn varlen_from_lengths(self, n_q: &[usize], n_kv: &[usize]) -> Self {
        let cumulative = |n: &[usize]| std::iter::once(0).chain(n.iter().scan(0, |acc, &x| { *acc += x; Some(*acc) })).collect();
        self.varlen(cumulative(n_q), cumulative(n_kv))
    }
    /// D_qk and D_v; sm_scale stays as it is (set it with [`RefProblem::sm_scale`]).
    pub fn head_dims(mut self, d_qk: usize, d_v: usize) -> Self {
        self.d_qk = d_qk;
        self.d_v = d_v;
        self
    }
    pub fn sm_scale(mut self, sm_scale: f64) -> Self {
        self.rules.sm_scale = sm_scale;
        self
    }
    pub fn causal(mut self, causal: bool) -> Self {
        self.rules.mask.causal = causal;
        self
    }
    pub fn alignment(mut self, alignment: Alignment) -> Self {
        self.rules.mask.alignment = alignment;
        self
    }
    pub fn window(mut self, window: Window) -> Self {
        self.rules.mask.window = window;
        self
    }
    /// cap > 0 caps the scores; 0 (or less) removes the cap, as FlashAttention's softcap=0.0.
    pub fn softcap(mut self, cap: f64) -> Self {
        self.rules.softcap = (cap > 0.0).then_some(cap);
        self
    }
    pub fn alibi(mut self, alibi: Alibi) -> Self {
        self.rules.alibi = Some(alibi);
        self
    }
    pub fn score_mod(mut self, m: ScoreMod) -> Self {
        self.rules.score_mod = Some(m);
        self
    }
    pub fn mask_mod(mut self, m: MaskMod) -> Self {
        self.rules.mask_mod = Some(m);
        self
    }
    /// The kernels' modifiers (`crate::mods`) as this problem's rules, evaluated in f64 by the expressions'
    /// interpreter over `tensors`: what a kernel compiled with them computes.
    pub fn modifiers(self, score: Option<&crate::mods::ScoreMod>, mask: Option<&crate::mods::MaskMod>, tensors: &crate::mods::Tensors) -> Self {
        let mut p = self;
        if let Some(sm) = score.cloned() {
            let (t1, t2, sm2) = (tensors.clone(), tensors.clone(), sm.clone());
            let value = move |b: usize, h: usize, i: usize, j: usize, s: f64| sm.eval_score(b as i64, h as i64, i as i64, j as i64, s, &t1);
            let grad = move |b: usize, h: usize, i: usize, j: usize, s: f64| sm2.eval_grad(b as i64, h as i64, i as i64, j as i64, s, &t2);
            p = p.score_mod(ScoreMod::new(value, grad));
        }
        if let Some(mm) = mask.cloned() {
            let t = tensors.clone();
            p = p.mask_mod(MaskMod::new(move |b, h, i, j| mm.eval_mask(b as i64, h as i64, i as i64, j as i64, &t)));
        }
        p
    }
    pub fn order(mut self, order: TensorOrder) -> Self {
        self.order = order;
        self.custom_layouts = None;
        self
    }
    pub fn layouts_explicit(mut self, layouts: Layouts) -> Self {
        self.custom_layouts = Some(layouts);
        self
    }

    /// The number of sequences.
    pub fn sequences(&self) -> usize {
        match &self.lengths {
            Lengths::Fixed { .. } => self.batch,
            Lengths::Varlen { cu_q, .. } => cu_q.len().saturating_sub(1),
        }
    }

    /// Sequence b's token ranges.
    pub fn seq(&self, b: usize) -> Seq {
        match &self.lengths {
            Lengths::Fixed { q, kv } => Seq { q_start: 0, n_q: *q, k_start: 0, n_kv: *kv },
            Lengths::Varlen { cu_q, cu_k } => Seq { q_start: cu_q[b], n_q: cu_q[b + 1] - cu_q[b], k_start: cu_k[b], n_kv: cu_k[b + 1] - cu_k[b] },
        }
    }

    /// Query heads per K/V head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads.max(1)
    }

    /// The K/V head query head h reads.
    pub fn kv_head_of(&self, h: usize) -> usize {
        h / self.group().max(1)
    }

    /// The lengths of the query and key token axes: N_q and N_kv, or total_q and total_kv when packed.
    fn token_axes(&self) -> (usize, usize) {
        match &self.lengths {
            Lengths::Fixed { q, kv } => (*q, *kv),
            Lengths::Varlen { cu_q, cu_k } => (cu_q.last().copied().unwrap_or(0), cu_k.last().copied().unwrap_or(0)),
        }
    }

    /// Where every tensor's elements live.
    pub fn layouts(&self) -> Layouts {
        if let Some(l) = self.custom_layouts {
            return l;
        }
        let (nq, nk) = self.token_axes();
        let packed = matches!(self.lengths, Lengths::Varlen { .. });
        let make = |heads: usize, tokens: usize, d: usize| {
            let l = match self.order {
                TensorOrder::Bhsd => Layout::bhsd(heads, tokens, d),
                TensorOrder::Bshd => Layout::bshd(heads, tokens, d),
            };
            if packed { l.packed() } else { l }
        };
        let lse = Layout::bhsd(self.heads, nq, 1);
        Layouts {
            q: make(self.heads, nq, self.d_qk),
            k: make(self.kv_heads, nk, self.d_qk),
            v: make(self.kv_heads, nk, self.d_v),
            o: make(self.heads, nq, self.d_v),
            lse: if packed { lse.packed() } else { lse },
        }
    }

    /// Elements a buffer in `layout` needs for `heads` heads of rows of `d` elements on the query side
    /// (`keys` false) or the key side: one past the furthest element any sequence addresses.
    fn extent(&self, layout: Layout, heads: usize, d: usize, keys: bool) -> usize {
        (0..self.sequences())
            .filter_map(|b| {
                let s = self.seq(b);
                let (start, n) = if keys { (s.k_start, s.n_kv) } else { (s.q_start, s.n_q) };
                (n > 0 && heads > 0 && d > 0).then(|| layout.offset(b, heads - 1, start + n - 1) + d)
            })
            .max()
            .unwrap_or(0)
    }

    /// Elements of the Q, K, V, O and LSE buffers (dQ, dK, dV, dO: as Q, K, V, O).
    pub fn q_len(&self) -> usize {
        self.extent(self.layouts().q, self.heads, self.d_qk, false)
    }
    pub fn k_len(&self) -> usize {
        self.extent(self.layouts().k, self.kv_heads, self.d_qk, true)
    }
    pub fn v_len(&self) -> usize {
        self.extent(self.layouts().v, self.kv_heads, self.d_v, true)
    }
    pub fn o_len(&self) -> usize {
        self.extent(self.layouts().o, self.heads, self.d_v, false)
    }
    pub fn lse_len(&self) -> usize {
        self.extent(self.layouts().lse, self.heads, 1, false)
    }

    /// Every query row, sequence by sequence, head by head.
    pub fn rows(&self) -> impl Iterator<Item = QueryRow> + '_ {
        (0..self.sequences()).flat_map(move |b| {
            let n_q = self.seq(b).n_q;
            (0..self.heads).flat_map(move |h| (0..n_q).map(move |i| QueryRow { b, h, i }))
        })
    }

    /// Where row `r`'s Q (and dQ) row starts.
    pub fn q_offset(&self, l: &Layouts, r: QueryRow) -> usize {
        l.q.offset(r.b, r.h, self.seq(r.b).q_start + r.i)
    }
    /// Where row `r`'s O (and dO) row starts.
    pub fn o_offset(&self, l: &Layouts, r: QueryRow) -> usize {
        l.o.offset(r.b, r.h, self.seq(r.b).q_start + r.i)
    }
    /// Where row `r`'s LSE (and M) value is.
    pub fn lse_offset(&self, l: &Layouts, r: QueryRow) -> usize {
        l.lse.offset(r.b, r.h, self.seq(r.b).q_start + r.i)
    }
    /// Where key j of K/V head `kv_head` of sequence b starts in K (and dK).
    pub fn k_offset(&self, l: &Layouts, b: usize, kv_head: usize, j: usize) -> usize {
        l.k.offset(b, kv_head, self.seq(b).k_start + j)
    }
    /// Where key j of K/V head `kv_head` of sequence b starts in V (and dV).
    pub fn v_offset(&self, l: &Layouts, b: usize, kv_head: usize, j: usize) -> usize {
        l.v.offset(b, kv_head, self.seq(b).k_start + j)
    }

    /// The per-row rules of row `r`.
    pub fn row_rules(&self, r: QueryRow) -> RowRules<'_> {
        let s = self.seq(r.b);
        self.rules.row(RowAt { b: r.b, h: r.h, i: r.i, n_q: s.n_q, n_kv: s.n_kv, heads: self.heads })
    }

    /// What must hold for the references to run: heads divisible, lengths consistent, slopes and buffers
    /// large enough. The references panic with this message on a problem that fails it.
    pub fn validate(&self, x: Option<&Qkv<'_>>) -> Result<(), String> {
        if self.kv_heads == 0 || !self.heads.is_multiple_of(self.kv_heads) {
            return Err(format!("H = {} is not a multiple of H_kv = {}", self.heads, self.kv_heads));
        }
        if let Lengths::Varlen { cu_q, cu_k } = &self.lengths {
            for (name, cu) in [("cu_seqlens_q", cu_q), ("cu_seqlens_k", cu_k)] {
                if cu.first() != Some(&0) {
                    return Err(format!("{name} must start at 0: {cu:?}"));
                }
                if cu.windows(2).any(|w| w[1] < w[0]) {
                    return Err(format!("{name} must be non-decreasing: {cu:?}"));
                }
            }
            if cu_q.len() != cu_k.len() {
                return Err(format!("cu_seqlens_q has {} entries, cu_seqlens_k {}", cu_q.len(), cu_k.len()));
            }
            if self.batch != cu_q.len() - 1 {
                return Err(format!("batch {} but cu_seqlens describe {} sequences", self.batch, cu_q.len() - 1));
            }
        }
        if let Some(a) = &self.rules.alibi {
            let want = if a.per_batch { self.sequences() * self.heads } else { self.heads };
            if a.slopes.len() < want {
                return Err(format!("{} ALiBi slopes for {want} (sequence, head) pairs", a.slopes.len()));
            }
        }
        if let Some(cap) = self.rules.softcap {
            if cap.is_nan() || cap <= 0.0 {
                return Err(format!("softcap {cap} must be > 0 (None for no cap)"));
            }
        }
        if let Some(x) = x {
            for (name, have, want) in [("Q", x.q.len(), self.q_len()), ("K", x.k.len(), self.k_len()), ("V", x.v.len(), self.v_len())] {
                if have < want {
                    return Err(format!("{name} has {have} elements, the problem's layout needs {want}"));
                }
            }
        }
        Ok(())
    }
}
