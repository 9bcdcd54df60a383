//! The f64 backward over every geometry and modifier: against central differences of the f64 forward
//! (GQA, unequal and packed lengths with empty sequences, both alignments, windows, softcap, ALiBi,
//! score_mod with an exact or a numeric derivative, mask_mod), GQA's dK/dV as the sum over the group, varlen
//! as one call per sequence, zero gradients where nothing is seen; and the tiled f32 backward (the kernels'
//! passes and block logic) against it.

use flashgen::reference::{backward, forward, relative_error, tiled_backward, Alibi, Alignment, Gradients, Lengths, MaskMod, Qkv, RefProblem, ScoreMod, SplitMix, TensorOrder, Window};

/// Random Q, K, V and dO for a problem's layouts.
fn inputs(rng: &mut SplitMix, p: &RefProblem) -> [Vec<f32>; 4] {
    [rng.vec(p.q_len()), rng.vec(p.k_len()), rng.vec(p.v_len()), rng.vec(p.o_len())]
}

fn grads(p: &RefProblem, x: &[Vec<f32>; 4]) -> Gradients<f64> {
    backward(p, &Qkv { q: &x[0], k: &x[1], v: &x[2] }, &x[3])
}

/// L = Σ O ⊙ dO: its gradient in Q, K, V is what the backward returns for dO.
fn loss(p: &RefProblem, x: &[Vec<f32>; 4]) -> f64 {
    forward(p, &Qkv { q: &x[0], k: &x[1], v: &x[2] }).o.iter().zip(&x[3]).map(|(o, g)| o * *g as f64).sum()
}

fn wobble(exact: bool) -> ScoreMod {
    let f = |b: usize, h: usize, i: usize, j: usize, s: f64| s + 0.25 * (s * (1 + h) as f64).sin() + 0.01 * (i as f64 - j as f64) + 0.1 * b as f64;
    if exact {
        ScoreMod::new(f, |_, h, _, _, s| 1.0 + 0.25 * (1 + h) as f64 * (s * (1 + h) as f64).cos())
    } else {
        ScoreMod::numeric(f)
    }
}

fn problems() -> Vec<(&'static str, RefProblem)> {
    let small = |n_q, n_kv| RefProblem::new(2, 4, n_q, 4).kv_heads(2).seqlens(n_q, n_kv).head_dims(4, 3).sm_scale(0.9);
    vec![
        ("GQA causal window", small(4, 6).causal(true).window(Window { left: Some(2), right: Some(1) })),
        ("N_q > N_kv causal", small(6, 3).causal(true)),
        ("top-left, softcap, ALiBi", small(5, 4).causal(true).alignment(Alignment::TopLeft).softcap(1.0).alibi(Alibi::standard(4))),
        ("non-causal window, softcap, ALiBi", small(4, 7).window(Window { left: Some(1), right: Some(2) }).softcap(2.0).alibi(Alibi::per_batch_head(vec![0.3, 0.2, 0.1, 0.4, 0.5, 0.05, 0.15, 0.25]))),
        ("score_mod (exact) + mask_mod", small(5, 5).score_mod(wobble(true)).mask_mod(MaskMod::new(|_, h, i, j| (i + 2 * j + h) % 4 != 1))),
        ("score_mod (numeric), causal", small(3, 5).causal(true).score_mod(wobble(false))),
        ("varlen with empty sequences", RefProblem::new(0, 4, 0, 4).kv_heads(1).head_dims(4, 5).varlen_from_lengths(&[2, 0, 4, 3], &[3, 2, 0, 5]).order(TensorOrder::Bshd).causal(true).softcap(1.5)),
    ]
}

#[test]
fn gradients_match_finite_differences() {
    let mut rng = SplitMix(21);
    let eps = 1.0 / 1024.0; // exact steps for inputs in [-1, 1)
    for (what, p) in problems() {
        let x = inputs(&mut rng, &p);
        let g = grads(&p, &x);
        for (which, grad) in [(0, &g.dq), (1, &g.dk), (2, &g.dv)] {
            assert_eq!(grad.len(), x[which].len());
            let scale = grad.iter().fold(0f64, |m, v| m.max(v.abs()));
            for idx in 0..x[which].len() {
                let bump = |delta: f32| {
                    let mut t = x.clone();
                    t[which][idx] += delta;
                    loss(&p, &t)
                };
                let numeric = (bump(eps) - bump(-eps)) / (2.0 * eps as f64);
                assert!((numeric - grad[idx]).abs() <= 2e-5 * scale.max(1.0), "{what}: tensor {which} element {idx}: numeric {numeric} vs {}", grad[idx]);
            }
        }
    }
}

/// GQA's dK and dV are the sums, over each group's query heads, of MHA's with K/V repeated; dQ is MHA's.
#[test]
fn gqa_gradients_sum_over_the_group() {
    let mut rng = SplitMix(22);
    let (heads, kv_heads, n_q, n_kv, d) = (6, 2, 5, 8, 4);
    let gqa = RefProblem::new(2, heads, n_q, d).kv_heads(kv_heads).seqlens(n_q, n_kv).causal(true).alibi(Alibi::standard(heads)).softcap(3.0);
    let x = inputs(&mut rng, &gqa);
    let mha = RefProblem { kv_heads: heads, ..gqa.clone() };
    let group = heads / kv_heads;
    let per_head = n_kv * d;
    let repeat = |t: &[f32]| -> Vec<f32> { (0..2).flat_map(|b| (0..heads).flat_map(move |h| t[(b * kv_heads + h / group) * per_head..][..per_head].to_vec())).collect() };
    let xm = [x[0].clone(), repeat(&x[1]), repeat(&x[2]), x[3].clone()];
    let (a, m) = (grads(&gqa, &x), grads(&mha, &xm));
    assert!(relative_error(&a.dq, &m.dq) < 1e-15);
    let summed = |t: &[f64]| -> Vec<f64> {
        (0..2).flat_map(|b| (0..kv_heads).flat_map(move |hk| (0..per_head).map(move |e| (0..group).map(|g| t[(b * heads + hk * group + g) * per_head + e]).sum::<f64>()))).collect()
    };
    assert!(relative_error(&a.dk, &summed(&m.dk)) < 1e-14);
    assert!(relative_error(&a.dv, &summed(&m.dv)) < 1e-14);
}

/// Packed varlen gradients equal one fixed-length call per sequence on its slice.
#[test]
fn varlen_gradients_equal_one_call_per_sequence() {
    let mut rng = SplitMix(23);
    let (heads, kv_heads, d_qk, d_v) = (4, 2, 8, 4);
    let (n_q, n_kv) = ([3usize, 0, 6, 2], [5usize, 3, 6, 0]);
    let all = RefProblem::new(0, heads, 0, d_qk).kv_heads(kv_heads).head_dims(d_qk, d_v).varlen_from_lengths(&n_q, &n_kv).order(TensorOrder::Bshd).causal(true).window(Window { left: Some(2), right: None });
    let x = inputs(&mut rng, &all);
    let packed = grads(&all, &x);
    for b in 0..n_q.len() {
        let s = all.seq(b);
        let one = RefProblem { batch: 1, lengths: Lengths::Fixed { q: s.n_q, kv: s.n_kv }, ..all.clone() };
        let q_rows = |t: &[f32], d| t[s.q_start * heads * d..(s.q_start + s.n_q) * heads * d].to_vec();
        let k_rows = |t: &[f32], d| t[s.k_start * kv_heads * d..(s.k_start + s.n_kv) * kv_heads * d].to_vec();
        let xs = [q_rows(&x[0], d_qk), k_rows(&x[1], d_qk), k_rows(&x[2], d_v), q_rows(&x[3], d_v)];
        let g = grads(&one, &xs);
        assert_eq!(g.dq[..], packed.dq[s.q_start * heads * d_qk..(s.q_start + s.n_q) * heads * d_qk], "sequence {b}: dQ");
        assert_eq!(g.dk[..], packed.dk[s.k_start * kv_heads * d_qk..(s.k_start + s.n_kv) * kv_heads * d_qk], "sequence {b}: dK");
        assert_eq!(g.dv[..], packed.dv[s.k_start * kv_heads * d_v..(s.k_start + s.n_kv) * kv_heads * d_v], "sequence {b}: dV");
    }
}

/// Rows that see no key get dQ = 0 (as do rows that see one key: a softmax over one key is constant);
/// keys no row sees get dK = dV = 0.
#[test]
fn what_is_not_seen_has_no_gradient() {
    let mut rng = SplitMix(24);
    // N_q = 9 > N_kv = 5, causal bottom-right with a left window of 1: row i sees keys i − 5 ..= i − 4, so
    // rows 0..4 see nothing and key j is seen by rows j + 4 and j + 5; mask_mod hides key 2 from everyone,
    // which leaves rows 4, 6 and 7 one key each.
    let p = RefProblem::new(1, 2, 9, 4).seqlens(9, 5).causal(true).window(Window { left: Some(1), right: None }).mask_mod(MaskMod::new(|_, _, _, j| j != 2));
    let x = inputs(&mut rng, &p);
    let g = grads(&p, &x);
    let l = p.layouts();
    for row in p.rows() {
        let at = p.q_offset(&l, row);
        let zero = g.dq[at..at + p.d_qk].iter().all(|&v| v == 0.0);
        assert_eq!(zero, row.i <= 4 || row.i == 6 || row.i == 7, "{row:?}");
    }
    for h in 0..2 {
        for j in 0..5 {
            let (k_at, v_at) = (p.k_offset(&l, 0, h, j), p.v_offset(&l, 0, h, j));
            let zero = g.dk[k_at..k_at + 4].iter().chain(&g.dv[v_at..v_at + 4]).all(|&v| v == 0.0);
            assert_eq!(zero, j == 2, "head {h} key {j}");
        }
    }
}

/// The kernels' backward passes in f32 (Δ from O, P from the base-2 M with the −∞ guard, dK/dV over key
/// tiles and the group's query blocks, dQ over query tiles, masks only where the block ranges say) against
/// the f64 backward.
#[test]
fn tiled_backward_matches_f64_on_every_geometry() {
    let mut rng = SplitMix(25);
    let mut problems = vec![
        ("GQA N_q < N_kv causal", RefProblem::new(1, 4, 70, 16).kv_heads(2).seqlens(70, 129).causal(true)),
        ("N_q > N_kv causal (blind rows)", RefProblem::new(1, 2, 129, 16).seqlens(129, 70).causal(true)),
        ("top-left, D_qk != D_v, window", RefProblem::new(1, 2, 100, 24).head_dims(24, 16).seqlens(100, 90).causal(true).alignment(Alignment::TopLeft).window(Window { left: Some(30), right: None })),
        ("softcap, ALiBi, two-sided window", RefProblem::new(1, 2, 80, 16).seqlens(80, 120).window(Window { left: Some(17), right: Some(9) }).softcap(1.5).alibi(Alibi::standard(2))),
        ("varlen, score_mod, mask_mod", RefProblem::new(0, 2, 0, 16).kv_heads(1).varlen_from_lengths(&[0, 65, 1, 100], &[5, 64, 0, 130]).order(TensorOrder::Bshd).causal(true).score_mod(wobble(true)).mask_mod(MaskMod::new(|_, _, i, j| (i + j) % 5 != 0))),
    ];
    problems.push(("plain MHA", RefProblem::new(2, 2, 77, 16).causal(true)));
    for (what, p) in problems {
        let x = inputs(&mut rng, &p);
        let qkv = Qkv { q: &x[0], k: &x[1], v: &x[2] };
        let fwd = forward(&p, &qkv);
        let (o, m): (Vec<f32>, Vec<f32>) = (fwd.o.iter().map(|&v| v as f32).collect(), fwd.m.iter().map(|&v| v as f32).collect());
        let r = grads(&p, &x);
        for (bm, bn) in [(64, 64), (64, 128), (128, 64), (16, 32), (5, 3)] {
            let t = tiled_backward(&p, &qkv, &o, &m, &x[3], bm, bn);
            for (name, a, b) in [("dQ", &t.dq, &r.dq), ("dK", &t.dk, &r.dk), ("dV", &t.dv, &r.dv)] {
                let e = relative_error(a, b);
                assert!(e < 2e-5, "{what} BM={bm} BN={bn}: {name} {e:.1e}");
            }
        }
    }
}
