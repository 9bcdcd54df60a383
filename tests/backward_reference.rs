//! Groundwork for the backward kernels (issue 4), on the CPU: the f64 backward formulas agree with finite
//! differences of the f64 forward, and the seed's 3-kernel tiled backward (f32, base-2 M, causal block
//! skipping) agrees with them, including ragged lengths and BLOCK_N != BLOCK_M.

use flashgen::reference::{backward_f64, naive_f64, relative_error, tiled_backward_f32, Shape, SplitMix};

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

#[test]
fn tiled_backward_matches_f64() {
    let mut rng = SplitMix(9);
    for &(n, bm, bn) in &[(1usize, 16usize, 16usize), (77, 32, 16), (100, 16, 64), (130, 64, 32), (64, 64, 64)] {
        for causal in [false, true] {
            let s = Shape { z: 1, h: 2, n, d: 16 };
            let (q, k, v, d_o) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
            let scale = 0.5;
            let fwd = naive_f64(&q, &k, &v, s, causal, scale);
            let o: Vec<f32> = fwd.o.iter().map(|&x| x as f32).collect();
            let m: Vec<f32> = fwd.m.iter().map(|&x| x as f32).collect();
            let t = tiled_backward_f32(&q, &k, &v, &o, &m, &d_o, s, causal, scale as f32, bm, bn);
            let r = backward_f64(&q, &k, &v, &d_o, s, causal, scale);
            for (name, a, b) in [("dQ", &t.dq, &r.dq), ("dK", &t.dk, &r.dk), ("dV", &t.dv, &r.dv)] {
                let e = relative_error(a, b);
                assert!(e <= 1e-5, "{name} N={n} BM={bm} BN={bn} causal={causal}: {e:.2e}");
            }
        }
    }
}

/// bwd_fused's schedule and lock rules (one program per key block, query blocks of 64 from the last down,
/// dQ added in program order, the last program of a block writing it) give the f64 gradients, with no
/// deadlock and every query block written exactly once: ragged lengths, one and many programs, 64- and
/// 128-row key blocks, causal and not.
#[test]
fn fused_backward_matches_f64() {
    use flashgen::reference::fused_backward_f32;
    let mut rng = SplitMix(13);
    for &(n, bn) in &[(1usize, 64usize), (63, 64), (64, 128), (65, 64), (200, 64), (200, 128), (333, 128), (256, 64)] {
        for causal in [false, true] {
            let s = Shape { z: 1, h: 2, n, d: 16 };
            let (q, k, v, d_o) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
            let scale = 0.5;
            let fwd = naive_f64(&q, &k, &v, s, causal, scale);
            let o: Vec<f32> = fwd.o.iter().map(|&x| x as f32).collect();
            let m: Vec<f32> = fwd.m.iter().map(|&x| x as f32).collect();
            let t = fused_backward_f32(&q, &k, &v, &o, &m, &d_o, s, causal, scale as f32, bn);
            let r = backward_f64(&q, &k, &v, &d_o, s, causal, scale);
            for (name, a, b) in [("dQ", &t.dq, &r.dq), ("dK", &t.dk, &r.dk), ("dV", &t.dv, &r.dv)] {
                let e = relative_error(a, b);
                assert!(e <= 1e-5, "{name} N={n} BN={bn} causal={causal}: {e:.2e}");
            }
        }
    }
}
