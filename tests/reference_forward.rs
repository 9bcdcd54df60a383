//! The f64 forward over every geometry and modifier, against an independent dense formula and against
//! itself (GQA = MHA with repeated K/V, varlen = one call per sequence, the alignments agree on equal
//! lengths, a window as wide as the keys is no window, a huge softcap is none, ALiBi and a window are the
//! score_mod and mask_mod they stand for, layouts only move numbers), rows that see no key, and the tiled
//! f32 forward (the kernels' block logic) against it on all of that.

use flashgen::reference::{
    forward, forward_row, relative_error, relative_error_lse, tiled_forward, Alibi, Alignment, Attention, Layout, Layouts, LazyRescale, MaskMod, Qkv, QueryRow, RefProblem, ScoreMod, SplitMix, TensorOrder, Window,
};

/// Random Q, K, V for a problem's layouts.
fn inputs(rng: &mut SplitMix, p: &RefProblem) -> [Vec<f32>; 3] {
    [rng.vec(p.q_len()), rng.vec(p.k_len()), rng.vec(p.v_len())]
}

fn run(p: &RefProblem, x: &[Vec<f32>; 3]) -> Attention<f64> {
    forward(p, &Qkv { q: &x[0], k: &x[1], v: &x[2] })
}

/// A smooth score_mod that depends on every argument, with its derivative.
fn wobble() -> ScoreMod {
    ScoreMod::new(
        |b, h, i, j, s| s + 0.25 * (s * (1 + h) as f64).sin() + 0.01 * (i as f64 - j as f64) + 0.1 * b as f64,
        |_, h, _, _, s| 1.0 + 0.25 * (1 + h) as f64 * (s * (1 + h) as f64).cos(),
    )
}

/// softmax attention written out from the module's conventions for fixed lengths in [B, H, N, D], with no
/// shared code: the score in its documented order, the mask as a predicate, the softmax over the row.
fn dense(p: &RefProblem, x: &[Vec<f32>; 3], n_q: usize, n_kv: usize) -> (Vec<f64>, Vec<f64>) {
    let r = &p.rules;
    let (h_all, g, dqk, dv) = (p.heads, p.heads / p.kv_heads, p.d_qk, p.d_v);
    let off = if r.mask.alignment == Alignment::BottomRight { n_kv as i64 - n_q as i64 } else { 0 };
    let mut o = vec![0f64; p.batch * h_all * n_q * dv];
    let mut lse = vec![0f64; p.batch * h_all * n_q];
    for b in 0..p.batch {
        for h in 0..h_all {
            let hk = h / g;
            for i in 0..n_q {
                let mut s = vec![f64::NEG_INFINITY; n_kv];
                for (j, sj) in s.iter_mut().enumerate() {
                    let diag = i as i64 + off;
                    let jj = j as i64;
                    let shown = (!r.mask.causal || jj <= diag) && r.mask.window.left.is_none_or(|l| jj >= diag - l as i64) && r.mask.window.right.is_none_or(|rr| jj <= diag + rr as i64);
                    if !shown {
                        continue;
                    }
                    let qrow = &x[0][((b * h_all + h) * n_q + i) * dqk..][..dqk];
                    let krow = &x[1][((b * p.kv_heads + hk) * n_kv + j) * dqk..][..dqk];
                    let mut v = r.sm_scale * qrow.iter().zip(krow).map(|(&a, &c)| a as f64 * c as f64).sum::<f64>();
                    if let Some(cap) = r.softcap {
                        v = cap * (v / cap).tanh();
                    }
                    if let Some(a) = &r.alibi {
                        v -= a.slope(b, h, h_all) * (diag - jj).abs() as f64;
                    }
                    *sj = v;
                }
                let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let at = (b * h_all + h) * n_q + i;
                if mx == f64::NEG_INFINITY {
                    lse[at] = f64::NEG_INFINITY;
                    continue;
                }
                let sum: f64 = s.iter().map(|v| (v - mx).exp()).sum();
                lse[at] = mx + sum.ln();
                for (j, sj) in s.iter().enumerate() {
                    let pj = (sj - mx).exp() / sum;
                    for c in 0..dv {
                        o[at * dv + c] += pj * x[2][((b * p.kv_heads + hk) * n_kv + j) * dv + c] as f64;
                    }
                }
            }
        }
    }
    (o, lse)
}

#[test]
fn forward_matches_the_dense_formula() {
    let mut rng = SplitMix(1);
    let mut cases = 0;
    for (n_q, n_kv) in [(5, 5), (3, 11), (11, 3), (1, 9), (8, 1)] {
        for (heads, kv_heads) in [(4, 4), (4, 2), (6, 1)] {
            for causal in [false, true] {
                for alignment in [Alignment::BottomRight, Alignment::TopLeft] {
                    for window in [Window::UNBOUNDED, Window { left: Some(2), right: Some(1) }, Window { left: Some(0), right: None }] {
                        for (softcap, alibi) in [(0.0, false), (1.5, false), (0.0, true), (2.0, true)] {
                            let mut p = RefProblem::new(2, heads, n_q, 12).kv_heads(kv_heads).seqlens(n_q, n_kv).head_dims(12, 8).sm_scale(0.6).causal(causal).alignment(alignment).window(window).softcap(softcap);
                            if alibi {
                                p = p.alibi(Alibi::per_batch_head((0..2 * heads).map(|i| 0.1 + 0.07 * i as f64).collect()));
                            }
                            let x = inputs(&mut rng, &p);
                            let r = run(&p, &x);
                            let (o, lse) = dense(&p, &x, n_q, n_kv);
                            let what = format!("N_q={n_q} N_kv={n_kv} H={heads}/{kv_heads} causal={causal} {alignment:?} {window:?} softcap={softcap} alibi={alibi}");
                            assert!(relative_error(&r.o, &o) < 1e-13, "{what}: O");
                            assert!(relative_error_lse(&r.lse, &lse) < 1e-13, "{what}: LSE");
                            assert!(r.m.iter().zip(&r.lse).all(|(m, l)| m == &(l * std::f64::consts::LOG2_E)), "{what}: M = LSE·log2 e");
                            cases += 1;
                        }
                    }
                }
            }
        }
    }
    assert_eq!(cases, 5 * 3 * 2 * 2 * 3 * 4);
}

/// K/V with H_kv heads read by groups of H / H_kv query heads equal MHA with each K/V head repeated.
#[test]
fn gqa_equals_mha_with_repeated_kv() {
    let mut rng = SplitMix(2);
    for (heads, kv_heads) in [(8, 2), (6, 1), (4, 4)] {
        for causal in [false, true] {
            let (n_q, n_kv, d) = (7, 13, 8);
            let gqa = RefProblem::new(3, heads, n_q, d).kv_heads(kv_heads).seqlens(n_q, n_kv).causal(causal).window(Window { left: Some(5), right: None }).alibi(Alibi::standard(heads));
            let x = inputs(&mut rng, &gqa);
            let mha = RefProblem { kv_heads: heads, ..gqa.clone() };
            // [B, H_kv, N, D] -> [B, H, N, D]: head h of the MHA copy is K/V head h / group
            let repeat = |t: &[f32]| -> Vec<f32> {
                let per_head = n_kv * d;
                (0..3).flat_map(|b| (0..heads).flat_map(move |h| t[(b * kv_heads + h / (heads / kv_heads)) * per_head..][..per_head].to_vec())).collect()
            };
            let xm = [x[0].clone(), repeat(&x[1]), repeat(&x[2])];
            let (a, b) = (run(&gqa, &x), run(&mha, &xm));
            assert_eq!(a.o, b.o, "H={heads}/{kv_heads} causal={causal}");
            assert_eq!(a.lse, b.lse);
        }
    }
}

/// A packed varlen batch (THD; lengths 0 allowed on either side) equals one fixed-length call per
/// sequence on its slice of the packed tensors ([1, N, H, D] is the packed slice's memory).
#[test]
fn varlen_equals_one_call_per_sequence() {
    let mut rng = SplitMix(3);
    let (heads, kv_heads, d_qk, d_v) = (4, 2, 8, 6);
    let (n_q, n_kv) = ([5usize, 0, 3, 9, 4, 1], [7usize, 4, 0, 9, 2, 1]);
    for causal in [false, true] {
        for alignment in [Alignment::BottomRight, Alignment::TopLeft] {
            let slopes: Vec<f64> = (0..n_q.len() * heads).map(|i| 0.05 * (1 + i) as f64).collect();
            let all = RefProblem::new(0, heads, 0, d_qk)
                .kv_heads(kv_heads)
                .head_dims(d_qk, d_v)
                .varlen_from_lengths(&n_q, &n_kv)
                .order(TensorOrder::Bshd)
                .causal(causal)
                .alignment(alignment)
                .window(Window { left: Some(3), right: Some(2) })
                .softcap(3.0)
                .alibi(Alibi::per_batch_head(slopes.clone()))
                .score_mod(wobble());
            assert_eq!(all.sequences(), 6);
            let x = inputs(&mut rng, &all);
            let packed = run(&all, &x);
            let lp = all.layouts();
            for b in 0..n_q.len() {
                let s = all.seq(b);
                let base = wobble();
                let one = RefProblem { batch: 1, lengths: flashgen::reference::Lengths::Fixed { q: s.n_q, kv: s.n_kv }, ..all.clone() }
                    .alibi(Alibi::per_head(slopes[b * heads..(b + 1) * heads].to_vec()))
                    .score_mod(ScoreMod::new(move |_, h, i, j, sc| base.apply(b, h, i, j, sc), |_, _, _, _, _| 1.0));
                let xs = [
                    x[0][s.q_start * heads * d_qk..(s.q_start + s.n_q) * heads * d_qk].to_vec(),
                    x[1][s.k_start * kv_heads * d_qk..(s.k_start + s.n_kv) * kv_heads * d_qk].to_vec(),
                    x[2][s.k_start * kv_heads * d_v..(s.k_start + s.n_kv) * kv_heads * d_v].to_vec(),
                ];
                let r = run(&one, &xs);
                assert_eq!(r.o[..], packed.o[s.q_start * heads * d_v..(s.q_start + s.n_q) * heads * d_v], "sequence {b} causal={causal} {alignment:?}: O");
                let lo = one.layouts();
                for h in 0..heads {
                    for i in 0..s.n_q {
                        let (mine, theirs) = (r.lse[one.lse_offset(&lo, QueryRow { b: 0, h, i })], packed.lse[all.lse_offset(&lp, QueryRow { b, h, i })]);
                        assert!(mine == theirs, "sequence {b} head {h} row {i}: LSE {mine} vs {theirs}");
                    }
                }
            }
            // LSE of packed varlen is [H, total_q]
            assert_eq!(all.lse_len(), heads * n_q.iter().sum::<usize>());
        }
    }
}

#[test]
fn alignments_agree_on_equal_lengths() {
    let mut rng = SplitMix(4);
    for window in [Window::UNBOUNDED, Window { left: Some(4), right: Some(0) }, Window { left: Some(1), right: Some(6) }] {
        let p = RefProblem::new(2, 2, 19, 8).causal(true).window(window).alibi(Alibi::standard(2));
        let x = inputs(&mut rng, &p);
        let (a, b) = (run(&p, &x), run(&p.clone().alignment(Alignment::TopLeft), &x));
        assert_eq!((a.o, a.lse), (b.o, b.lse), "{window:?}");
    }
}

/// A window of max(N_q, N_kv) on both sides hides nothing: the same as no window, causal or not,
/// whatever the alignment.
#[test]
fn a_window_as_wide_as_the_sequence_is_no_window() {
    let mut rng = SplitMix(5);
    for (n_q, n_kv) in [(9, 9), (4, 17), (17, 4)] {
        for causal in [false, true] {
            for alignment in [Alignment::BottomRight, Alignment::TopLeft] {
                let p = RefProblem::new(1, 3, n_q, 8).seqlens(n_q, n_kv).causal(causal).alignment(alignment);
                let x = inputs(&mut rng, &p);
                let n = n_q.max(n_kv);
                let w = run(&p.clone().window(Window { left: Some(n), right: Some(n) }), &x);
                let plain = run(&p, &x);
                assert_eq!((w.o, w.lse), (plain.o, plain.lse), "N_q={n_q} N_kv={n_kv} causal={causal} {alignment:?}");
            }
        }
    }
}

/// cap·tanh(s/cap) → s as cap → ∞; and softcap is the score_mod cap·tanh(s/cap) applied to sm_scale·q·k.
#[test]
fn softcap_is_tanh_of_the_scaled_score() {
    let mut rng = SplitMix(6);
    let p = RefProblem::new(2, 2, 11, 16).seqlens(11, 6).causal(true).sm_scale(2.0);
    let x = inputs(&mut rng, &p);
    let plain = run(&p, &x);
    let huge = run(&p.clone().softcap(1e8), &x);
    assert!(relative_error(&huge.o, &plain.o) < 1e-12 && relative_error_lse(&huge.lse, &plain.lse) < 1e-12);
    let cap = 0.7;
    let capped = run(&p.clone().softcap(cap), &x);
    let as_mod = run(&p.clone().score_mod(ScoreMod::numeric(move |_, _, _, _, s| cap * (s / cap).tanh())), &x);
    assert!(relative_error(&capped.o, &as_mod.o) < 1e-14 && relative_error_lse(&capped.lse, &as_mod.lse) < 1e-14);
    assert!(relative_error(&capped.o, &plain.o) > 1e-2, "a cap of 0.7 on scores of up to ~8 changes the result");
}

/// ALiBi is −slope·|i + off − j| added after the softcap, in both alignments; for a causal problem it is
/// FlashAttention's slope·j form up to a per-row constant (the same O, the LSE shifted by slope·(i + off)).
#[test]
fn alibi_is_the_score_mod_it_stands_for() {
    let mut rng = SplitMix(7);
    let heads = 4;
    let alibi = Alibi::standard(heads);
    assert_eq!(alibi.slopes, vec![0.25, 0.0625, 0.015625, 0.00390625]);
    assert_eq!(Alibi::standard(6).slopes.len(), 6);
    for (n_q, n_kv) in [(6, 6), (3, 10), (10, 3)] {
        for causal in [false, true] {
            for alignment in [Alignment::BottomRight, Alignment::TopLeft] {
                let p = RefProblem::new(1, heads, n_q, 8).seqlens(n_q, n_kv).causal(causal).alignment(alignment).softcap(5.0).sm_scale(1.3);
                let x = inputs(&mut rng, &p);
                let off = if alignment == Alignment::BottomRight { n_kv as i64 - n_q as i64 } else { 0 };
                let slopes = alibi.slopes.clone();
                let bias = move |_: usize, h: usize, i: usize, j: usize, s: f64| s - slopes[h] * (i as i64 + off - j as i64).abs() as f64;
                let a = run(&p.clone().alibi(alibi.clone()), &x);
                let m = run(&p.clone().score_mod(ScoreMod::numeric(bias)), &x);
                let what = format!("N_q={n_q} N_kv={n_kv} causal={causal} {alignment:?}");
                assert!(relative_error(&a.o, &m.o) < 1e-14 && relative_error_lse(&a.lse, &m.lse) < 1e-14, "{what}");
                if causal {
                    let slopes = alibi.slopes.clone();
                    let fa = run(&p.clone().score_mod(ScoreMod::numeric(move |_, h, _, j, s| s + slopes[h] * j as f64)), &x);
                    assert!(relative_error(&a.o, &fa.o) < 1e-13, "{what}: FA's causal form, O");
                    for r in p.rows() {
                        let at = p.lse_offset(&p.layouts(), r);
                        if a.lse[at].is_finite() {
                            let shift = alibi.slopes[r.h] * (r.i as i64 + off) as f64;
                            assert!((fa.lse[at] - shift - a.lse[at]).abs() < 1e-12, "{what}: FA's causal form, LSE row {r:?}");
                        }
                    }
                }
            }
        }
    }
}

/// A mask_mod that says what the window says gives what the window gives.
#[test]
fn mask_mod_equal_to_the_window_is_the_window() {
    let mut rng = SplitMix(8);
    let (n_q, n_kv) = (7, 12);
    let p = RefProblem::new(2, 2, n_q, 8).seqlens(n_q, n_kv).causal(true);
    let x = inputs(&mut rng, &p);
    let w = run(&p.clone().window(Window { left: Some(3), right: None }), &x);
    let off = (n_kv - n_q) as i64;
    let m = run(&p.clone().mask_mod(MaskMod::new(move |_, _, i, j| j as i64 >= i as i64 + off - 3)), &x);
    assert_eq!((w.o, w.lse), (m.o, m.lse));
}

/// Copy every row of a problem's Q, K, V from one layout to another (the target's other elements NaN, so
/// a reference reading padding would show).
fn relayout(from: &RefProblem, to: &RefProblem, x: &[Vec<f32>; 3]) -> [Vec<f32>; 3] {
    let (lf, lt) = (from.layouts(), to.layouts());
    let mut out = [vec![f32::NAN; to.q_len()], vec![f32::NAN; to.k_len()], vec![f32::NAN; to.v_len()]];
    for r in from.rows() {
        let (a, b) = (from.q_offset(&lf, r), to.q_offset(&lt, r));
        out[0][b..b + from.d_qk].copy_from_slice(&x[0][a..a + from.d_qk]);
    }
    for bi in 0..from.sequences() {
        for hk in 0..from.kv_heads {
            for j in 0..from.seq(bi).n_kv {
                let (a, b) = (from.k_offset(&lf, bi, hk, j), to.k_offset(&lt, bi, hk, j));
                out[1][b..b + from.d_qk].copy_from_slice(&x[1][a..a + from.d_qk]);
                let (a, b) = (from.v_offset(&lf, bi, hk, j), to.v_offset(&lt, bi, hk, j));
                out[2][b..b + from.d_v].copy_from_slice(&x[2][a..a + from.d_v]);
            }
        }
    }
    out
}

/// [B, H, N, D], [B, N, H, D] and a padded custom layout give the same numbers for every row (and the
/// padding of the custom layout is never read: it holds NaN).
#[test]
fn layouts_only_move_numbers() {
    let mut rng = SplitMix(9);
    let bhsd = RefProblem::new(2, 4, 5, 8).kv_heads(2).seqlens(5, 9).head_dims(8, 4).causal(true);
    let bshd = bhsd.clone().order(TensorOrder::Bshd);
    // rows padded to 40 elements, 16 token slots per head, 5 head slots per sequence
    let pad = Layout { batch: 5 * 16 * 40, head: 16 * 40, token: 40 };
    let custom = bhsd.clone().layouts_explicit(Layouts { q: pad, k: pad, v: pad, o: pad, lse: Layout { batch: 100, head: 11, token: 2 } });
    let varlen = RefProblem::new(0, 4, 0, 8).kv_heads(2).head_dims(8, 4).causal(true).varlen_from_lengths(&[5, 5], &[9, 9]);
    let x = inputs(&mut rng, &bhsd);
    let reference = run(&bhsd, &x);
    for other in [bshd, custom, varlen.clone(), varlen.order(TensorOrder::Bshd)] {
        let xo = relayout(&bhsd, &other, &x);
        let r = run(&other, &xo);
        let (l0, l1) = (bhsd.layouts(), other.layouts());
        for row in bhsd.rows() {
            let (a, b) = (bhsd.o_offset(&l0, row), other.o_offset(&l1, row));
            assert_eq!(reference.o[a..a + 4], r.o[b..b + 4], "{:?} row {row:?}", other.layouts());
            assert_eq!(reference.lse[bhsd.lse_offset(&l0, row)], r.lse[other.lse_offset(&l1, row)]);
        }
    }
}

/// Rows that see no key (N_q > N_kv causal bottom-right, an empty K sequence under varlen, a mask_mod
/// or score_mod that hides a whole row) give O = 0 and LSE = M = −∞; the others are finite. The tiled f32
/// forward writes the same (its −∞ guards), and empty sequences are simply absent.
#[test]
fn rows_that_see_no_key_give_zero_and_minus_infinity() {
    let mut rng = SplitMix(10);
    let hide_row_2_of_head_1 = MaskMod::new(|_, h, i, _| !(h == 1 && i == 2));
    let minus_inf_on_row_0 = ScoreMod::new(|_, _, i, _, s| if i == 0 { f64::NEG_INFINITY } else { s }, |_, _, _, _, _| 1.0);
    type Blind = Box<dyn Fn(QueryRow) -> bool>;
    let problems: [(RefProblem, &str, Blind); 4] = [
        (RefProblem::new(2, 2, 9, 8).seqlens(9, 4).causal(true), "N_q > N_kv causal", Box::new(|r| r.i < 5)),
        (RefProblem::new(0, 2, 0, 8).varlen_from_lengths(&[3, 0, 4], &[0, 5, 6]).causal(true), "empty K sequence", Box::new(|r| r.b == 0)),
        (RefProblem::new(1, 2, 6, 8).mask_mod(hide_row_2_of_head_1), "mask_mod hides a row", Box::new(|r| r.h == 1 && r.i == 2)),
        (RefProblem::new(1, 2, 6, 8).score_mod(minus_inf_on_row_0), "score_mod −∞ on a row", Box::new(|r| r.i == 0)),
    ];
    for (p, what, is_blind) in problems {
        let x = inputs(&mut rng, &p);
        let r = run(&p, &x);
        let t = tiled_forward(&p, &Qkv { q: &x[0], k: &x[1], v: &x[2] }, 4, 2, Some(LazyRescale { rows_per_vote: 2, log2_threshold: 8.0 }));
        let l = p.layouts();
        let mut blind = 0;
        for row in p.rows() {
            let (o_at, lse_at) = (p.o_offset(&l, row), p.lse_offset(&l, row));
            let mut o = vec![0f64; p.d_v];
            let lse = forward_row(&p, &Qkv { q: &x[0], k: &x[1], v: &x[2] }, row, &mut o);
            assert_eq!(o[..], r.o[o_at..o_at + p.d_v]);
            if is_blind(row) {
                blind += 1;
                assert!(r.o[o_at..o_at + p.d_v].iter().all(|&v| v == 0.0) && lse == f64::NEG_INFINITY && r.m[lse_at] == f64::NEG_INFINITY, "{what}: {row:?}");
                assert!(t.o[o_at..o_at + p.d_v].iter().all(|&v| v == 0.0) && t.m[lse_at] == f32::NEG_INFINITY, "{what}: tiled {row:?}");
            } else {
                assert!(lse.is_finite() && r.o[o_at..o_at + p.d_v].iter().any(|&v| v != 0.0), "{what}: {row:?} sees keys");
            }
        }
        assert!(blind > 0, "{what}: no blind row");
        assert!(relative_error(&t.o, &r.o) < 1e-5 && relative_error_lse(&t.m, &r.m) < 1e-5, "{what}: tiled");
    }
}

/// The kernels' tiled algorithm (f32, base 2, masks only in the blocks kv_blocks says need them, −∞
/// guards, lazy rescaling) against the f64 forward on unequal, ragged and packed lengths, GQA, D_qk ≠ D_v,
/// both alignments, windows and every modifier; kernel-sized and small odd blocks.
#[test]
fn tiled_forward_matches_f64_on_every_geometry() {
    let mut rng = SplitMix(11);
    let problems = vec![
        RefProblem::new(2, 4, 77, 32).kv_heads(2).seqlens(77, 130).causal(true),
        RefProblem::new(1, 2, 130, 32).seqlens(130, 77).causal(true),
        RefProblem::new(1, 2, 130, 32).seqlens(130, 77).causal(true).alignment(Alignment::TopLeft),
        RefProblem::new(1, 3, 200, 24).kv_heads(1).head_dims(24, 16).causal(true).window(Window { left: Some(40), right: None }),
        RefProblem::new(1, 2, 90, 16).seqlens(90, 150).window(Window { left: Some(20), right: Some(7) }).softcap(1.5).alibi(Alibi::standard(2)),
        RefProblem::new(0, 4, 0, 16).kv_heads(2).varlen_from_lengths(&[0, 65, 1, 130, 33], &[5, 65, 0, 200, 33]).order(TensorOrder::Bshd).causal(true).score_mod(wobble()),
        RefProblem::new(1, 2, 64, 16).mask_mod(MaskMod::new(|_, h, i, j| (i + j + h) % 3 != 0)),
    ];
    for p in problems {
        let x = inputs(&mut rng, &p);
        let r = run(&p, &x);
        for (bm, bn) in [(64, 64), (128, 64), (64, 128), (16, 32), (3, 5)] {
            for lazy in [None, Some(LazyRescale::KERNEL)] {
                let t = tiled_forward(&p, &Qkv { q: &x[0], k: &x[1], v: &x[2] }, bm, bn, lazy);
                let (eo, em) = (relative_error(&t.o, &r.o), relative_error_lse(&t.m, &r.m));
                assert!(eo < 1e-5 && em < 1e-5, "BM={bm} BN={bn} lazy={} {:?} {:?}: O {eo:.1e} M {em:.1e}", lazy.is_some(), p.lengths, p.rules.mask);
            }
        }
    }
}
