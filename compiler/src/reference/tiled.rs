//! The kernels' algorithms in f32 on the CPU, so their block logic and arithmetic are checked without a
//! GPU: the forward (blocks, online softmax in base 2, lazy rescaling, masks only where a block needs them)
//! and the backward (Δ, P recomputed from M, dK/dV over key tiles, dQ over query tiles) over any
//! [`RefProblem`], and the seed's three-kernel and fused backwards of the square MHA problem.

use super::backward::Gradients;
use super::blocks::Blocks;
use super::forward::dot as dot_f64;
use super::problem::{Qkv, QueryRow, RefProblem, RowRules};
use super::{Attention, Shape};

/// How the ping-pong forward rescales lazily (`KernelSpec::lazy_rescale`): from the second K/V block on, the
/// rows of one warp (`rows_per_vote`, 16) keep their m_i unless one of them has a score above
/// m_i + `log2_threshold`; then all of them update as usual.
#[derive(Clone, Copy, Debug)]
pub struct LazyRescale {
    pub rows_per_vote: usize,
    pub log2_threshold: f32,
}

impl LazyRescale {
    /// The kernels' rule: a warp's 16 rows, `spec::LAZY_RESCALE_LOG2`.
    pub const KERNEL: LazyRescale = LazyRescale { rows_per_vote: 16, log2_threshold: crate::spec::LAZY_RESCALE_LOG2 as f32 };
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()
}

/// One pair's score as a kernel computes it, in base-2 units (score · log2 e), f32: the plain path folds
/// sm_scale·log2 e into one factor (qk_scale); with modifiers, the f64 rules on the f32 dot product.
/// `masked`: this block needs the mask, so an invisible pair is −∞. In a block that needs none, a pair
/// outside the sequence means the block logic is wrong: that panics rather than read another sequence.
struct TileScores<'a> {
    p: &'a RefProblem,
    qk_scale: f32,
}

impl TileScores<'_> {
    fn score2(&self, rules: &RowRules<'_>, q: &[f32], k: &[f32], j: usize, masked: bool) -> f32 {
        if masked && !rules.visible(j) {
            return f32::NEG_INFINITY;
        }
        let qk = dot(q, k);
        if self.p.rules.is_plain_score() {
            qk * self.qk_scale
        } else {
            (rules.transform(j, qk as f64) * super::RCP_LN2) as f32
        }
    }

    /// Whether block `blk` of `blocks` is processed with the mask: the band's blocks say, and a mask_mod
    /// (which block logic does not see) masks every block.
    fn masked(&self, blocks: &Blocks, blk: usize) -> bool {
        blocks.needs_mask(blk) || self.p.rules.mask_mod.is_some()
    }
}

/// The forward as the kernels compute it, in f32, over any problem: per (sequence, query head, tile of
/// `block_m` queries), the key blocks of [`Band::blocks`](super::Band::blocks) in order, masking only the
/// blocks that need it, with the online softmax in base 2 (m_i = −∞, l_i = 1.0 at the start, acc
/// unscaled, one division by l_i at the end) and, with `lazy`, the ping-pong forward's lazy rescaling.
///
/// The −∞ guards the kernels need for rows that see no key (all of a block, or all of the sequence):
/// exponents are taken against m_i' = (m_new == −∞ ? 0 : m_new), so alpha and P are 0, not NaN; a row
/// whose m_i is still −∞ at the end writes O = 0 and M = −∞ (not acc / l_i = 0/0).
/// O in the problem's O layout; M (base 2) and LSE (natural) in its LSE layout.
pub fn tiled_forward(p: &RefProblem, x: &Qkv<'_>, block_m: usize, block_n: usize, lazy: Option<LazyRescale>) -> Attention<f32> {
    if let Err(e) = p.validate(Some(x)) {
        panic!("tiled forward: {e}");
    }
    let l = p.layouts();
    let t = TileScores { p, qk_scale: p.rules.sm_scale as f32 * std::f32::consts::LOG2_E };
    let (d_qk, d_v) = (p.d_qk, p.d_v);
    let mut o = vec![0f32; p.o_len()];
    let mut m_out = vec![0f32; p.lse_len()];
    let mut qk = vec![0f32; block_m * block_n];
    for b in 0..p.sequences() {
        let seq = p.seq(b);
        let band = p.rules.mask.band(seq.n_q, seq.n_kv);
        for h in 0..p.heads {
            let kv_head = p.kv_head_of(h);
            for tile in 0..seq.n_q.div_ceil(block_m) {
                let rows: Vec<QueryRow> = (tile * block_m..((tile + 1) * block_m).min(seq.n_q)).map(|i| QueryRow { b, h, i }).collect();
                let rules: Vec<RowRules<'_>> = rows.iter().map(|&r| p.row_rules(r)).collect();
                let q_rows: Vec<&[f32]> = rows.iter().map(|&r| &x.q[p.q_offset(&l, r)..][..d_qk]).collect();
                let mut m_i = vec![f32::NEG_INFINITY; rows.len()];
                let mut l_i = vec![1.0f32; rows.len()];
                let mut acc = vec![0f32; rows.len() * d_v];
                let blocks = band.blocks(tile, block_m, block_n);
                for (visit, blk) in blocks.visited().enumerate() {
                    let masked = t.masked(&blocks, blk);
                    for r in 0..rows.len() {
                        for c in 0..block_n {
                            let j = blk * block_n + c;
                            qk[r * block_n + c] = if masked && j >= seq.n_kv {
                                f32::NEG_INFINITY
                            } else {
                                assert!(j < seq.n_kv, "tiled forward: block {blk} of tile {tile} reaches key {j} of {} unmasked", seq.n_kv);
                                t.score2(&rules[r], q_rows[r], &x.k[p.k_offset(&l, b, kv_head, j)..][..d_qk], j, masked)
                            };
                        }
                    }
                    let row_max: Vec<f32> = (0..rows.len()).map(|r| qk[r * block_n..(r + 1) * block_n].iter().copied().fold(f32::NEG_INFINITY, f32::max)).collect();
                    let mut m_new: Vec<f32> = (0..rows.len()).map(|r| m_i[r].max(row_max[r])).collect();
                    if let (Some(lz), true) = (lazy, visit > 0) {
                        // a warp keeps its rows' m_i unless one of them grew past the threshold
                        for group in (0..rows.len()).step_by(lz.rows_per_vote) {
                            let members = group..(group + lz.rows_per_vote).min(rows.len());
                            if !members.clone().any(|r| row_max[r] > m_i[r] + lz.log2_threshold) {
                                members.for_each(|r| m_new[r] = m_i[r]);
                            }
                        }
                    }
                    for r in 0..rows.len() {
                        // the −∞ guard: a row that has seen no key yet takes its exponents against 0
                        let m_ref = if m_new[r] == f32::NEG_INFINITY { 0.0 } else { m_new[r] };
                        let alpha = (m_i[r] - m_ref).exp2();
                        let row = &mut qk[r * block_n..(r + 1) * block_n];
                        let mut rowsum = 0f32;
                        for s in row.iter_mut() {
                            *s = (*s - m_ref).exp2();
                            rowsum += *s;
                        }
                        l_i[r] = l_i[r] * alpha + rowsum;
                        let acc_r = &mut acc[r * d_v..(r + 1) * d_v];
                        acc_r.iter_mut().for_each(|a| *a *= alpha);
                        for (c, &pv) in row.iter().enumerate() {
                            if pv != 0.0 {
                                let v = &x.v[p.v_offset(&l, b, kv_head, blk * block_n + c)..][..d_v];
                                acc_r.iter_mut().zip(v).for_each(|(a, &vv)| *a += pv * vv);
                            }
                        }
                        m_i[r] = m_new[r];
                    }
                }
                for (r, &row) in rows.iter().enumerate() {
                    let at = p.o_offset(&l, row);
                    let seen = m_i[r] != f32::NEG_INFINITY;
                    for c in 0..d_v {
                        o[at + c] = if seen { acc[r * d_v + c] / l_i[r] } else { 0.0 };
                    }
                    m_out[p.lse_offset(&l, row)] = if seen { m_i[r] + l_i[r].log2() } else { f32::NEG_INFINITY };
                }
            }
        }
    }
    let lse = m_out.iter().map(|m| m * std::f32::consts::LN_2).collect();
    Attention { o, lse, m: m_out }
}

/// The FA2 forward of the square MHA problem as the kernel computes it (see [`tiled_forward`]).
#[allow(clippy::too_many_arguments)]
pub fn tiled_f32(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, sm_scale: f32, block_m: usize, block_n: usize, lazy: Option<LazyRescale>) -> Attention<f32> {
    tiled_forward(&s.problem(causal, sm_scale as f64), &Qkv { q, k, v }, block_m, block_n, lazy)
}

/// The backward as the kernels compute it, in f32, over any problem, from the forward's O (O's layout)
/// and base-2 M (LSE's layout) and dO: Δ_i = dO_i·O_i; P_ij = exp2(s_ij·log2 e − M_i) with s = −∞ where
/// masked, and the guard kernels need for rows that saw no key: M_i = −∞ is taken as +∞ (FlashAttention
/// stores +∞ there for this reason), so P = exp2(−∞ − ∞) = 0 instead of exp2(−∞ + ∞) = NaN;
/// dS_ij = P_ij (dO_i·V_j − Δ_i) and
/// dX_ij = dS_ij · ds/dx. dK, dV: one program per (sequence, K/V head, key tile of `block_n`), over the
/// query heads of its group and the query blocks of `block_m` that [`Band::transpose`](super::Band)
/// gives, masking only where needed. dQ: one program per (sequence, query head, query tile), over the
/// key blocks [`Band::blocks`](super::Band::blocks) gives.
#[allow(clippy::too_many_arguments)]
pub fn tiled_backward(p: &RefProblem, x: &Qkv<'_>, o: &[f32], m: &[f32], d_o: &[f32], block_m: usize, block_n: usize) -> Gradients<f32> {
    if let Err(e) = p.validate(Some(x)) {
        panic!("tiled backward: {e}");
    }
    for (name, have, want) in [("O", o.len(), p.o_len()), ("dO", d_o.len(), p.o_len()), ("M", m.len(), p.lse_len())] {
        assert!(have >= want, "tiled backward: {name} has {have} elements, the problem's layout needs {want}");
    }
    let l = p.layouts();
    let t = TileScores { p, qk_scale: p.rules.sm_scale as f32 * std::f32::consts::LOG2_E };
    let (d_qk, d_v) = (p.d_qk, p.d_v);
    let mut g = Gradients { dq: vec![0f32; p.q_len()], dk: vec![0f32; p.k_len()], dv: vec![0f32; p.v_len()] };
    // ---- preprocess: Δ ----
    let mut delta = vec![0f32; p.lse_len()];
    for row in p.rows() {
        let at = p.o_offset(&l, row);
        delta[p.lse_offset(&l, row)] = dot(&o[at..at + d_v], &d_o[at..at + d_v]);
    }
    let q_of = |r: QueryRow| &x.q[p.q_offset(&l, r)..][..d_qk];
    let d_o_of = |r: QueryRow| &d_o[p.o_offset(&l, r)..][..d_v];
    // (P_ij, dX_ij) of a pair that lies in both sequences, as the kernels recompute it
    let pair = |rules: &RowRules<'_>, r: QueryRow, kv_head: usize, j: usize, masked: bool| -> (f32, f32) {
        let m_i = m[p.lse_offset(&l, r)];
        let k = &x.k[p.k_offset(&l, r.b, kv_head, j)..][..d_qk];
        let s2 = t.score2(rules, q_of(r), k, j, masked);
        let m_i = if m_i == f32::NEG_INFINITY { f32::INFINITY } else { m_i };
        let pij = (s2 - m_i).exp2();
        if pij == 0.0 {
            return (0.0, 0.0);
        }
        let v = &x.v[p.v_offset(&l, r.b, kv_head, j)..][..d_v];
        let ds = pij * (dot(d_o_of(r), v) - delta[p.lse_offset(&l, r)]);
        let dscore = if p.rules.is_plain_score() { p.rules.sm_scale as f32 } else { rules.transform_with_derivative(j, dot_f64(q_of(r), k)).1 as f32 };
        (pij, ds * dscore)
    };
    for b in 0..p.sequences() {
        let seq = p.seq(b);
        let band = p.rules.mask.band(seq.n_q, seq.n_kv);
        // ---- dK, dV: outer over key tiles, inner over the group's heads and their query blocks ----
        for kv_head in 0..p.kv_heads {
            for tile in 0..seq.n_kv.div_ceil(block_n) {
                let blocks = band.transpose().blocks(tile, block_n, block_m);
                for h in kv_head * p.group()..(kv_head + 1) * p.group() {
                    for blk in blocks.visited() {
                        let masked = t.masked(&blocks, blk);
                        for i in blk * block_m..(blk + 1) * block_m {
                            if masked && i >= seq.n_q {
                                continue;
                            }
                            assert!(i < seq.n_q, "tiled backward: query block {blk} of key tile {tile} reaches query {i} of {} unmasked", seq.n_q);
                            let r = QueryRow { b, h, i };
                            let rules = p.row_rules(r);
                            for j in tile * block_n..((tile + 1) * block_n).min(seq.n_kv) {
                                let (pij, dx) = pair(&rules, r, kv_head, j, masked);
                                let (dk_at, dv_at) = (p.k_offset(&l, b, kv_head, j), p.v_offset(&l, b, kv_head, j));
                                g.dv[dv_at..dv_at + d_v].iter_mut().zip(d_o_of(r)).for_each(|(a, &x)| *a += pij * x);
                                g.dk[dk_at..dk_at + d_qk].iter_mut().zip(q_of(r)).for_each(|(a, &x)| *a += dx * x);
                            }
                        }
                    }
                }
            }
        }
        // ---- dQ: outer over query tiles, inner over key blocks ----
        for h in 0..p.heads {
            let kv_head = p.kv_head_of(h);
            for tile in 0..seq.n_q.div_ceil(block_m) {
                let blocks = band.blocks(tile, block_m, block_n);
                for i in tile * block_m..((tile + 1) * block_m).min(seq.n_q) {
                    let r = QueryRow { b, h, i };
                    let rules = p.row_rules(r);
                    let dq_at = p.q_offset(&l, r);
                    for blk in blocks.visited() {
                        let masked = t.masked(&blocks, blk);
                        for j in blk * block_n..(blk + 1) * block_n {
                            if masked && j >= seq.n_kv {
                                continue;
                            }
                            assert!(j < seq.n_kv, "tiled backward: key block {blk} of query tile {tile} reaches key {j} of {} unmasked", seq.n_kv);
                            let (_, dx) = pair(&rules, r, kv_head, j, masked);
                            let k = &x.k[p.k_offset(&l, b, kv_head, j)..][..d_qk];
                            g.dq[dq_at..dq_at + d_qk].iter_mut().zip(k).for_each(|(a, &x)| *a += dx * x);
                        }
                    }
                }
            }
        }
    }
    g
}

/// Keys that grow along the sequence: token t's key scaled by 1 + (top − 1)·t/N, so later K/V blocks
/// raise a row's max far past the first block's (with top = 100, by hundreds in log2 units: exp2 against a
/// stale m_i overflows even f32). The inputs that make a lazily rescaling kernel take its update path.
pub fn ramp_keys(k: &mut [f32], s: Shape, top: f32) {
    for (i, row) in k.chunks_mut(s.d).enumerate() {
        let t = i % s.n;
        let f = 1.0 + (top - 1.0) * t as f32 / s.n as f32;
        row.iter_mut().for_each(|x| *x *= f);
    }
}

/// What a tiled backward reads, as the kernels get it: Q, K, V, the forward's O, its base-2 M (f32
/// [Z·H·N]) and dO, all [Z, H, N, D] contiguous f32, and the problem's shape, causality and sm_scale.
#[derive(Clone, Copy)]
pub struct BackwardInputs<'a> {
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub o: &'a [f32],
    pub m: &'a [f32],
    pub d_o: &'a [f32],
    pub s: Shape,
    pub causal: bool,
    pub sm_scale: f32,
}

/// One head of a backward's inputs, with what every tiled backward recomputes as the kernels do: Δ_i =
/// rowsum(dO_i ⊙ O_i), P_ij = exp2(Q_i·K_j·qk_scale − M_i) (0 above the causal diagonal) and
/// dS_ij = P_ij (dO_i·V_j − Δ_i).
struct HeadTerms<'a> {
    x: BackwardInputs<'a>,
    base: usize,
    hz: usize,
    qk_scale: f32,
    delta: Vec<f32>,
}

impl<'a> HeadTerms<'a> {
    fn new(x: BackwardInputs<'a>, hz: usize) -> HeadTerms<'a> {
        let mut t = HeadTerms { x, base: hz * x.s.n * x.s.d, hz, qk_scale: x.sm_scale * std::f32::consts::LOG2_E, delta: Vec::new() };
        t.delta = (0..x.s.n).map(|i| dot(&t.row(x.o, i), &t.row(x.d_o, i))).collect();
        t
    }
    /// Row r of this head of `x` (one of the [Z, H, N, D] inputs).
    fn row(&self, x: &[f32], r: usize) -> Vec<f32> {
        let d = self.x.s.d;
        x[self.base + r * d..self.base + (r + 1) * d].to_vec()
    }
    fn p(&self, i: usize, j: usize) -> f32 {
        if self.x.causal && j > i {
            0.0
        } else {
            (dot(&self.row(self.x.q, i), &self.row(self.x.k, j)) * self.qk_scale - self.x.m[self.hz * self.x.s.n + i]).exp2()
        }
    }
    fn ds(&self, i: usize, j: usize) -> f32 {
        self.p(i, j) * (dot(&self.row(self.x.d_o, i), &self.row(self.x.v, j)) - self.delta[i])
    }
}

/// The seed's 3-kernel backward as the kernels will compute it, in f32 from the forward's O and base-2 M:
/// preprocess Δ = rowsum(dO ⊙ O); dK/dV with an outer loop over K/V blocks and an inner one over Q blocks
/// (causal: Q blocks wholly above the diagonal skipped, only diagonal blocks masked), P recomputed as
/// exp2(Q·Kᵀ·qk_scale − M); dQ with an outer loop over Q blocks and an inner one over K/V blocks.
#[allow(clippy::needless_range_loop)] // indices mirror the kernels' loops
pub fn tiled_backward_f32(x: &BackwardInputs<'_>, block_m: usize, block_n: usize) -> Gradients<f32> {
    let BackwardInputs { q, k, v, d_o, s, causal, sm_scale, .. } = *x;
    let (n, d) = (s.n, s.d);
    let mut g = Gradients { dq: vec![0f32; s.len()], dk: vec![0f32; s.len()], dv: vec![0f32; s.len()] };
    for hz in 0..s.heads() {
        let base = hz * n * d;
        // ---- preprocess (Δ), and P and dS as the kernels recompute them ----
        let t = HeadTerms::new(*x, hz);
        let row = |x: &'_ [f32], r: usize| t.row(x, r);
        let p_of = |i: usize, j: usize| t.p(i, j);
        let delta = &t.delta;
        // ---- dK, dV: outer over K/V blocks, inner over Q blocks ----
        for start_n in (0..n).step_by(block_n) {
            let keys = start_n..(start_n + block_n).min(n);
            // causal: Q blocks whose every row lies above this K/V block's first key contribute nothing
            let first_q_block = if causal { start_n / block_m } else { 0 };
            for start_m in (first_q_block * block_m..n).step_by(block_m) {
                for i in start_m..(start_m + block_m).min(n) {
                    let doi = row(d_o, i);
                    let qi = row(q, i);
                    for j in keys.clone() {
                        let p = p_of(i, j);
                        let dp = dot(&doi, &row(v, j));
                        let ds = p * (dp - delta[i]);
                        for c in 0..d {
                            g.dv[base + j * d + c] += p * doi[c];
                            g.dk[base + j * d + c] += ds * qi[c];
                        }
                    }
                }
            }
        }
        // ---- dQ: outer over Q blocks, inner over K/V blocks up to the diagonal ----
        for start_m in (0..n).step_by(block_m) {
            let rows = start_m..(start_m + block_m).min(n);
            let hi = if causal { rows.end } else { n };
            for start_n in (0..hi).step_by(block_n) {
                for i in rows.clone() {
                    let doi = row(d_o, i);
                    for j in start_n..(start_n + block_n).min(hi) {
                        let p = p_of(i, j);
                        let ds = p * (dot(&doi, &row(v, j)) - delta[i]);
                        let kj = row(k, j);
                        for c in 0..d {
                            g.dq[base + i * d + c] += ds * kj[c];
                        }
                    }
                }
            }
        }
    }
    g.dq.iter_mut().chain(g.dk.iter_mut()).for_each(|x| *x *= sm_scale);
    g
}

/// The order in which bwd_fused's programs visit their query blocks and add to each block's dQ
/// (lib/dq_fused.ll.tera).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FusedOrder {
    /// bwd_fused: one program per key block, the blocks from the last down; a block's additions by
    /// program, up (ticket n / C) to its highest program.
    Down,
    /// bwd_fused_up (causal): blocks up from the program's diagonal; a block's additions from its
    /// highest program down (ticket (last - n) / C).
    Up,
    /// bwd_fused_up with its grid folded (`Schedule::fold_key_blocks`, one chain): program x runs the
    /// light key block P - 1 - x, then the heavy block x while x < P - 1 - x; a block's additions are the
    /// light halves' from its highest program down (ticket last - n), then the heavy halves' from block 0
    /// up (ticket n + the light halves that meet it, max(0, last - half + 1), half = floor(P / 2)).
    Folded,
}

/// bwd_fused as the kernel computes it (lib/dq_fused.ll.tera), in f32: each program holds a key block of
/// `block_n` rows (`FusedOrder::Folded`: two, one after the other), streams query blocks of 64 rows,
/// computes dK and dV as the three-kernel pass does, and adds each block's dQ_partial = dS·K into one of
/// `chains` f32 buffers (not zeroed: NaN here) under that block's lock of its chain. Key block n is in
/// chain n mod C; it adds when its lock reads its ticket (`FusedOrder`; ticket 0 stores), then sets it to
/// ticket + 1. The programs advance one block at a time in turn, each waiting while its lock says so, as on
/// the GPU with every program resident. Then the dQ sum pass: dQ = sm_scale · the sums of the chains that
/// have programs up to the block's highest `last` (causal: the one holding its last query), in chain
/// order from 0. A schedule in which no program can advance (a deadlock), or a chain the pass reads before
/// all its programs have added, panics: the lock rules are what this checks.
#[allow(clippy::needless_range_loop)] // indices mirror the kernel's loops
pub fn fused_backward_f32(x: &BackwardInputs<'_>, block_n: usize, chains: usize, order: FusedOrder) -> Gradients<f32> {
    const BLOCK_M: usize = 64;
    let BackwardInputs { q, k, d_o, s, causal, sm_scale, .. } = *x;
    assert!(order == FusedOrder::Down || causal, "bwd_fused_up is causal only");
    assert!(order != FusedOrder::Folded || chains == 1, "a folded grid adds in one chain");
    let (n, d) = (s.n, s.d);
    let mut g = Gradients { dq: vec![f32::NAN; s.len()], dk: vec![0f32; s.len()], dv: vec![0f32; s.len()] };
    for hz in 0..s.heads() {
        let base = hz * n * d;
        let t = HeadTerms::new(*x, hz);
        let row = |x: &'_ [f32], r: usize| t.row(x, r);
        let (key_blocks, n_q) = (n.div_ceil(block_n), n.div_ceil(BLOCK_M));
        // the kernel's rule: causal, the key block holding the block's last query (or the last one)
        let last_of = |blk: usize| if causal { ((blk * BLOCK_M + BLOCK_M - 1) / block_n).min(key_blocks - 1) } else { key_blocks - 1 };
        let first_block = |kb: usize| if causal { kb * block_n / BLOCK_M } else { 0 };
        // key blocks 0..=last in chain c
        let members = |c: usize, last: usize| if c <= last { (last - c) / chains + 1 } else { 0 };
        let half = key_blocks / 2;
        // each program's key blocks, in the order it runs them
        let programs: Vec<Vec<usize>> = match order {
            FusedOrder::Down | FusedOrder::Up => (0..key_blocks).map(|kb| vec![kb]).collect(),
            FusedOrder::Folded => (0..key_blocks.div_ceil(2)).map(|x| if x < key_blocks - 1 - x { vec![key_blocks - 1 - x, x] } else { vec![x] }).collect(),
        };
        let ticket = |kb: usize, last: usize| match order {
            FusedOrder::Down => kb / chains,
            FusedOrder::Up => (last - kb) / chains,
            FusedOrder::Folded if kb >= half => last - kb,
            FusedOrder::Folded => kb + (last + 1).saturating_sub(half),
        };
        let mut lock = vec![0usize; n_q * chains];
        let block_len = n_q * BLOCK_M * d;
        let mut partial = vec![f32::NAN; chains * block_len];
        let blocks_of = |kb: usize| n_q - first_block(kb);
        // the (key block, query block) a program visits at its step
        let visit = |p: usize, step: usize| {
            let mut step = step;
            for &kb in &programs[p] {
                if step < blocks_of(kb) {
                    return Some((kb, if order == FusedOrder::Down { n_q - 1 - step } else { first_block(kb) + step }));
                }
                step -= blocks_of(kb);
            }
            None
        };
        let mut steps = vec![0usize; programs.len()];
        while (0..programs.len()).any(|p| visit(p, steps[p]).is_some()) {
            let mut advanced = false;
            for p in 0..programs.len() {
                let Some((kb, blk)) = visit(p, steps[p]) else { continue };
                let (chain, last) = (kb % chains, last_of(blk));
                let ticket = ticket(kb, last);
                if lock[blk * chains + chain] != ticket {
                    continue;
                }
                let (keys, rows) = (kb * block_n..((kb + 1) * block_n).min(n), blk * BLOCK_M..((blk + 1) * BLOCK_M).min(n));
                for i in rows.clone() {
                    let (qi, doi) = (row(q, i), row(d_o, i));
                    let mut dq_part = vec![0f32; d];
                    for j in keys.clone() {
                        let (ds, p_ij, kj) = (t.ds(i, j), t.p(i, j), row(k, j));
                        for c in 0..d {
                            g.dv[base + j * d + c] += p_ij * doi[c];
                            g.dk[base + j * d + c] += ds * qi[c];
                            dq_part[c] += ds * kj[c];
                        }
                    }
                    let at = (blk * BLOCK_M + i - rows.start) * d;
                    for c in 0..d {
                        // the first in the chain's order stores its part, the others add theirs
                        let sum = &mut partial[chain * block_len + at + c];
                        *sum = if ticket == 0 { dq_part[c] } else { *sum + dq_part[c] };
                    }
                }
                lock[blk * chains + chain] = ticket + 1;
                steps[p] += 1;
                advanced = true;
            }
            assert!(advanced, "deadlock: locks {lock:?}, steps {steps:?}");
        }
        // the dQ sum pass, after the kernel: the chains that have programs up to the block's last, each
        // complete, summed in chain order
        for blk in 0..n_q {
            let last = last_of(blk);
            for c in 0..chains {
                assert_eq!(lock[blk * chains + c], members(c, last), "block {blk}: chain {c} incomplete after the kernel");
            }
            for i in blk * BLOCK_M..((blk + 1) * BLOCK_M).min(n) {
                for c in 0..d {
                    let at = i * d + c;
                    let total = (0..chains.min(last + 1)).fold(0f32, |sum, ch| sum + partial[ch * block_len + at]);
                    g.dq[base + at] = total * sm_scale;
                }
            }
        }
    }
    g.dk.iter_mut().for_each(|x| *x *= sm_scale);
    g
}
