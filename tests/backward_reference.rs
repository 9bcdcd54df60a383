//! Groundwork for the backward kernels (issue 4), on the CPU: the f64 backward formulas agree with finite
//! differences of the f64 forward, and the seed's 3-kernel tiled backward (f32, base-2 M, causal block
//! skipping) agrees with them, including ragged lengths and BLOCK_N != BLOCK_M.

use flashgen::reference::{backward_f64, fused_backward_f32, FusedOrder, naive_f64, relative_error, tiled_backward_f32, BackwardInputs, Gradients, Shape, SplitMix};

/// L = Σ O ⊙ dO, so ∂L/∂x is what backward_f64 returns for dO.
fn loss(q: &[f32], k: &[f32], v: &[f32], d_o: &[f32], s: Shape, causal: bool, scale: f64) -> f64 {
    naive_f64(q, k, v, s, causal, scale).o.iter().zip(d_o).map(|(o, g)| o * *g as f64).sum()
}

#[test]
fn backward_formulas_match_finite_differences() {
    let mut rng = SplitMix(5);
    for causal in [false, true] {
        let s = Shape { z: 1, h: 2, n: 5, d: 4 };
        let (q, k, v, d_o) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
        let scale = 0.7;
        let g = backward_f64(&q, &k, &v, &d_o, s, causal, scale);
        let eps = 1e-3f32;
        for (which, grad) in [(0, &g.dq), (1, &g.dk), (2, &g.dv)] {
            for idx in 0..s.len() {
                let bump = |delta: f32| {
                    let mut t = [q.clone(), k.clone(), v.clone()];
                    t[which][idx] += delta;
                    loss(&t[0], &t[1], &t[2], &d_o, s, causal, scale)
                };
                let numeric = (bump(eps) - bump(-eps)) / (2.0 * eps as f64);
                assert!((numeric - grad[idx]).abs() < 2e-4, "causal={causal} tensor {which} elem {idx}: numeric {numeric} vs {}", grad[idx]);
            }
        }
    }
}

/// Random Q, K, V, dO of one shape, the f64 forward's O and M rounded to f32 (what the kernels read), and
/// a check that a tiled backward's gradients are the f64 ones within 1e-5.
struct Problem {
    s: Shape,
    causal: bool,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    d_o: Vec<f32>,
    o: Vec<f32>,
    m: Vec<f32>,
}

const SCALE: f64 = 0.5;

impl Problem {
    fn new(rng: &mut SplitMix, n: usize, causal: bool) -> Problem {
        let s = Shape { z: 1, h: 2, n, d: 16 };
        let (q, k, v, d_o) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
        let fwd = naive_f64(&q, &k, &v, s, causal, SCALE);
        let (o, m) = (fwd.o.iter().map(|&x| x as f32).collect(), fwd.m.iter().map(|&x| x as f32).collect());
        Problem { s, causal, q, k, v, d_o, o, m }
    }

    fn inputs(&self) -> BackwardInputs<'_> {
        BackwardInputs { q: &self.q, k: &self.k, v: &self.v, o: &self.o, m: &self.m, d_o: &self.d_o, s: self.s, causal: self.causal, sm_scale: SCALE as f32 }
    }

    fn assert_matches_f64(&self, t: &Gradients<f32>, what: &str) {
        let r = backward_f64(&self.q, &self.k, &self.v, &self.d_o, self.s, self.causal, SCALE);
        for (name, a, b) in [("dQ", &t.dq, &r.dq), ("dK", &t.dk, &r.dk), ("dV", &t.dv, &r.dv)] {
            let e = relative_error(a, b);
            assert!(e <= 1e-5, "{name} N={} {what} causal={}: {e:.2e}", self.s.n, self.causal);
        }
    }
}

#[test]
fn tiled_backward_matches_f64() {
    let mut rng = SplitMix(9);
    for &(n, bm, bn) in &[(1usize, 16usize, 16usize), (77, 32, 16), (100, 16, 64), (130, 64, 32), (64, 64, 64)] {
        for causal in [false, true] {
            let p = Problem::new(&mut rng, n, causal);
            let t = tiled_backward_f32(&p.inputs(), bm, bn);
            p.assert_matches_f64(&t, &format!("BM={bm} BN={bn}"));
        }
    }
}

/// bwd_fused's schedule and lock rules (one program per key block, query blocks of 64 from the last down,
/// or with bwd_fused_up's order up from the diagonal, or its folded grid of two key blocks a program; dQ
/// stored then added in a fixed order within each of 1-3 chains, into buffers that start as NaN; then the
/// dQ sum pass combining the chains in order) give the f64 gradients, with no deadlock and every chain
/// complete when the pass reads it: ragged lengths, one and many programs (fewer programs than chains too,
/// odd and even key blocks when folded), 64- and 128-row key blocks, causal (all three orders) and not.
#[test]
fn fused_backward_matches_f64() {
    let mut rng = SplitMix(13);
    for &(n, bn) in &[(1usize, 64usize), (63, 64), (64, 128), (65, 64), (200, 64), (200, 128), (333, 128), (256, 64)] {
        for (causal, order) in [(false, FusedOrder::Down), (true, FusedOrder::Down), (true, FusedOrder::Up), (true, FusedOrder::Folded)] {
            let chain_counts: &[usize] = if order == FusedOrder::Folded { &[1] } else { &[1, 2, 3] };
            for &chains in chain_counts {
                let p = Problem::new(&mut rng, n, causal);
                let t = fused_backward_f32(&p.inputs(), bn, chains, order);
                p.assert_matches_f64(&t, &format!("BN={bn} chains={chains} {order:?}"));
            }
        }
    }
}
