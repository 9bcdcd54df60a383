//! CPU references: naive attention in f64, and the kernels' tiled algorithm in f32 (blocks, online softmax
//! in base 2, un-scaled accumulation, the causal stage split), so the algorithm is checked without a GPU.
//! Tensors are contiguous [Z, H, N, D] in row-major order.

pub use crate::numeric::{relative_error, SplitMix};

/// 1/ln 2, the factor folded into qk_scale so that exp becomes exp2.
pub const RCP_LN2: f64 = std::f64::consts::LOG2_E;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub z: usize,
    pub h: usize,
    pub n: usize,
    pub d: usize,
}

impl Shape {
    pub fn heads(&self) -> usize {
        self.z * self.h
    }
    pub fn len(&self) -> usize {
        self.heads() * self.n * self.d
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// O and M = base-2 log-sum-exp per row (Triton's convention), for one problem.
#[derive(Clone, Debug)]
pub struct Attention<T> {
    pub o: Vec<T>,
    pub m: Vec<T>,
}

/// softmax(Q·Kᵀ·sm_scale [causal]) · V, in f64, one row at a time.
pub fn naive_f64(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, sm_scale: f64) -> Attention<f64> {
    let mut o = vec![0f64; s.len()];
    let mut m = vec![0f64; s.heads() * s.n];
    for (row, (o_row, m_row)) in o.chunks_mut(s.d).zip(m.iter_mut()).enumerate() {
        *m_row = naive_f64_row(q, k, v, s, causal, sm_scale, row, o_row);
    }
    Attention { o, m }
}

/// One query row (`row` counts rows over all heads: hz·N + i) of [`naive_f64`]: writes O's row into `o_row`
/// and returns the row's base-2 log-sum-exp. Rows are independent, so callers may split them over threads.
#[allow(clippy::too_many_arguments)]
pub fn naive_f64_row(q: &[f32], k: &[f32], v: &[f32], s: Shape, causal: bool, sm_scale: f64, row: usize, o_row: &mut [f64]) -> f64 {
    let (n, d) = (s.n, s.d);
    let (hz, i) = (row / n, row % n);
    let base = hz * n * d;
    let cols = if causal { i + 1 } else { n };
    let qi = &q[base + i * d..base + (i + 1) * d];
    let scores: Vec<f64> = (0..cols)
        .map(|j| qi.iter().zip(&k[base + j * d..base + (j + 1) * d]).map(|(&a, &b)| a as f64 * b as f64).sum::<f64>() * sm_scale)
        .collect();
    let mx = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sum = 0f64;
    o_row.iter_mut().for_each(|x| *x = 0.0);
    for (j, &sj) in scores.iter().enumerate() {
        let p = (sj - mx).exp();
        sum += p;
        for (x, &vj) in o_row.iter_mut().zip(&v[base + j * d..base + (j + 1) * d]) {
            *x += p * vj as f64;
        }
    }
    o_row.iter_mut().for_each(|x| *x /= sum);
    (mx + sum.ln()) * RCP_LN2
}

/// The K/V block range one program (query block `start_m`) visits, split as the kernel splits it:
/// blocks [0, n_full) need no mask; blocks [n_full, n_total) are masked. Blocks past n_total are never visited.
/// Causal (STAGE=3): n_full = blocks wholly left of row0 (inner stage 1), the rest up to the last row
/// reaching the diagonal (inner stage 2). Non-causal (STAGE=1): full blocks (inner stage 3), then the
/// ragged edge block.
pub fn block_range(n_ctx: usize, block_m: usize, block_n: usize, start_m: usize, causal: bool) -> (usize, usize) {
    if causal {
        let row0 = start_m * block_m;
        let row_end = (row0 + block_m).min(n_ctx);
        (row0 / block_n, row_end.div_ceil(block_n))
    } else {
        (n_ctx / block_n, n_ctx.div_ceil(block_n))
    }
}

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

/// The FA2 forward as the kernel computes it, in f32: per (head, query block), loop over K/V blocks with
/// the online softmax in base 2 (m_i = -inf, l_i = 1.0), acc un-scaled, one division by l_i at the end;
/// with `lazy`, the ping-pong forward's lazy rescaling (`None`: every block updates m_i).
#[allow(clippy::too_many_arguments)]
pub fn tiled_f32(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: Shape,
    causal: bool,
    sm_scale: f32,
    block_m: usize,
    block_n: usize,
    lazy: Option<LazyRescale>,
) -> Attention<f32> {
    let (n, d) = (s.n, s.d);
    let qk_scale = sm_scale * std::f32::consts::LOG2_E;
    let mut o = vec![0f32; s.len()];
    let mut m_out = vec![0f32; s.heads() * n];
    let mut qk = vec![0f32; block_m * block_n];
    for hz in 0..s.heads() {
        let base = hz * n * d;
        for start_m in 0..n.div_ceil(block_m) {
            let rows = (start_m * block_m)..((start_m + 1) * block_m).min(n);
            let mut m_i = vec![f32::NEG_INFINITY; block_m];
            let mut l_i = vec![1.0f32; block_m];
            let mut acc = vec![0f32; block_m * d];
            let (n_full, n_total) = block_range(n, block_m, block_n, start_m, causal);
            for j in 0..n_total {
                let masked = j >= n_full;
                for (r, i) in rows.clone().enumerate() {
                    let qi = &q[base + i * d..base + (i + 1) * d];
                    for c in 0..block_n {
                        let col = j * block_n + c;
                        let visible = !masked || (col < n && (!causal || col <= i));
                        qk[r * block_n + c] = if visible {
                            qi.iter().zip(&k[base + col * d..base + (col + 1) * d]).map(|(a, b)| a * b).sum()
                        } else {
                            f32::NEG_INFINITY
                        };
                    }
                }
                let row_max: Vec<f32> =
                    (0..rows.len()).map(|r| qk[r * block_n..(r + 1) * block_n].iter().copied().fold(f32::NEG_INFINITY, f32::max) * qk_scale).collect();
                let mut m_new: Vec<f32> = (0..rows.len()).map(|r| m_i[r].max(row_max[r])).collect();
                if let (Some(lz), true) = (lazy, j > 0) {
                    // a warp keeps its rows' m_i unless one of them grew past the threshold
                    for group in (0..rows.len()).step_by(lz.rows_per_vote) {
                        let members = group..(group + lz.rows_per_vote).min(rows.len());
                        if !members.clone().any(|r| row_max[r] > m_i[r] + lz.log2_threshold) {
                            members.for_each(|r| m_new[r] = m_i[r]);
                        }
                    }
                }
                for r in 0..rows.len() {
                    let row = &mut qk[r * block_n..(r + 1) * block_n];
                    let m_ij = m_new[r];
                    let alpha = (m_i[r] - m_ij).exp2();
                    let mut rowsum = 0f32;
                    for x in row.iter_mut() {
                        *x = (*x * qk_scale - m_ij).exp2();
                        rowsum += *x;
                    }
                    l_i[r] = l_i[r] * alpha + rowsum;
                    let acc_r = &mut acc[r * d..(r + 1) * d];
                    acc_r.iter_mut().for_each(|a| *a *= alpha);
                    for (c, &p) in row.iter().enumerate() {
                        let col = j * block_n + c;
                        if p != 0.0 {
                            for (a, &vv) in acc_r.iter_mut().zip(&v[base + col * d..base + (col + 1) * d]) {
                                *a += p * vv;
                            }
                        }
                    }
                    m_i[r] = m_ij;
                }
            }
            for (r, i) in rows.enumerate() {
                for c in 0..d {
                    o[base + i * d + c] = acc[r * d + c] / l_i[r];
                }
                m_out[hz * n + i] = m_i[r] + l_i[r].log2();
            }
        }
    }
    Attention { o, m: m_out }
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

/// Gradients of one attention problem.
#[derive(Clone, Debug)]
pub struct Gradients<T> {
    pub dq: Vec<T>,
    pub dk: Vec<T>,
    pub dv: Vec<T>,
}

/// Naive backward in f64: with P = softmax(Q·Kᵀ·sm_scale [causal]) and O = P·V,
/// dV = Pᵀ·dO, dP = dO·Vᵀ, Δ_i = rowsum(dO_i ⊙ O_i), dS = P ⊙ (dP − Δ), dQ = dS·K·sm_scale, dK = dSᵀ·Q·sm_scale.
pub fn backward_f64(q: &[f32], k: &[f32], v: &[f32], d_o: &[f32], s: Shape, causal: bool, sm_scale: f64) -> Gradients<f64> {
    let (n, d) = (s.n, s.d);
    let mut g = Gradients { dq: vec![0f64; s.len()], dk: vec![0f64; s.len()], dv: vec![0f64; s.len()] };
    let at = |x: &[f32], base: usize, r: usize| -> Vec<f64> { x[base + r * d..base + (r + 1) * d].iter().map(|&a| a as f64).collect() };
    for hz in 0..s.heads() {
        let base = hz * n * d;
        for i in 0..n {
            let cols = if causal { i + 1 } else { n };
            let qi = at(q, base, i);
            let doi = at(d_o, base, i);
            let scores: Vec<f64> = (0..cols).map(|j| qi.iter().zip(at(k, base, j)).map(|(a, b)| a * b).sum::<f64>() * sm_scale).collect();
            let mx = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = scores.iter().map(|x| (x - mx).exp()).sum();
            let p: Vec<f64> = scores.iter().map(|x| (x - mx).exp() / sum).collect();
            // O_i, then Δ_i = dO_i · O_i
            let mut oi = vec![0f64; d];
            for (j, &pj) in p.iter().enumerate() {
                for (o, vj) in oi.iter_mut().zip(at(v, base, j)) {
                    *o += pj * vj;
                }
            }
            let delta: f64 = oi.iter().zip(&doi).map(|(a, b)| a * b).sum();
            for (j, &pj) in p.iter().enumerate() {
                let vj = at(v, base, j);
                let kj = at(k, base, j);
                let dp: f64 = doi.iter().zip(&vj).map(|(a, b)| a * b).sum();
                let ds = pj * (dp - delta);
                for c in 0..d {
                    g.dv[base + j * d + c] += pj * doi[c];
                    g.dq[base + i * d + c] += ds * kj[c] * sm_scale;
                    g.dk[base + j * d + c] += ds * qi[c] * sm_scale;
                }
            }
        }
    }
    g
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

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>()
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

/// bwd_fused as the kernel computes it (lib/dq_fused.ll.tera), in f32: one program per key block of
/// `block_n` rows streams query blocks of 64 rows, computes dK and dV as the three-kernel pass does, and
/// adds each block's dQ_partial = dS·K into one of `chains` f32 buffers (not zeroed: NaN here) under that
/// block's lock of its chain. Program n is in chain n mod C; it adds when its lock reads its ticket (ticket
/// 0 stores), then sets it to ticket + 1. bwd_fused (`up` false): blocks from the last down, ticket n / C,
/// up to the block's highest program `last` (causal: the one holding its last query); bwd_fused_up (`up`,
/// causal): blocks up from the program's first, ticket (last - n) / C (down from the block's highest
/// program). The programs advance one block at a time in turn, each waiting while its lock says so, as on
/// the GPU. Then the dQ sum pass: dQ = sm_scale · the sums of the chains that have programs up to `last`,
/// in chain order from 0. A schedule in which no program can advance (a deadlock), or a chain the pass
/// reads before all its programs have added, panics: the lock rules are what this checks.
#[allow(clippy::needless_range_loop)] // indices mirror the kernel's loops
pub fn fused_backward_f32(x: &BackwardInputs<'_>, block_n: usize, chains: usize, up: bool) -> Gradients<f32> {
    const BLOCK_M: usize = 64;
    let BackwardInputs { q, k, d_o, s, causal, sm_scale, .. } = *x;
    assert!(!up || causal, "bwd_fused_up is causal only");
    let (n, d) = (s.n, s.d);
    let mut g = Gradients { dq: vec![f32::NAN; s.len()], dk: vec![0f32; s.len()], dv: vec![0f32; s.len()] };
    for hz in 0..s.heads() {
        let base = hz * n * d;
        let t = HeadTerms::new(*x, hz);
        let row = |x: &'_ [f32], r: usize| t.row(x, r);
        let (programs, n_q) = (n.div_ceil(block_n), n.div_ceil(BLOCK_M));
        // the kernel's rule: causal, the program holding the block's last query (or the last program)
        let last_of = |blk: usize| if causal { ((blk * BLOCK_M + BLOCK_M - 1) / block_n).min(programs - 1) } else { programs - 1 };
        let first_block = |p: usize| if causal { p * block_n / BLOCK_M } else { 0 };
        // programs 0..=last in chain c
        let members = |c: usize, last: usize| if c <= last { (last - c) / chains + 1 } else { 0 };
        let mut lock = vec![0usize; n_q * chains];
        let block_len = n_q * BLOCK_M * d;
        let mut partial = vec![f32::NAN; chains * block_len];
        let blocks_of = |p: usize| n_q - first_block(p);
        // the block a program visits at its step
        let visit = |p: usize, step: usize| if up { first_block(p) + step } else { n_q - 1 - step };
        let mut steps = vec![0usize; programs];
        while (0..programs).any(|p| steps[p] < blocks_of(p)) {
            let mut advanced = false;
            for p in 0..programs {
                if steps[p] == blocks_of(p) {
                    continue;
                }
                let blk = visit(p, steps[p]);
                let (chain, last) = (p % chains, last_of(blk));
                let ticket = if up { (last - p) / chains } else { p / chains };
                if lock[blk * chains + chain] != ticket {
                    continue;
                }
                let (keys, rows) = (p * block_n..((p + 1) * block_n).min(n), blk * BLOCK_M..((blk + 1) * BLOCK_M).min(n));
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
