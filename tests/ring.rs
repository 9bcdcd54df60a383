//! The ring (context-parallel) schedule of flashgen::ring run on the CPU: P simulated ranks, each attending
//! its query chunks to the K/V chunks it holds at each step (the f64 reference on each block), the partial
//! results merged through their log-sum-exps, against attention over the whole sequence; every block visited
//! once; the zig-zag split's balance, step by step; and the backward's ring (the same blocks, dK/dV travelling
//! with their K/V, the forward's LSE) against the whole sequence's gradients.

use flashgen::reference::combine::{combine_row, LogBase};
use flashgen::reference::{backward_f64, naive_f64, Shape, SplitMix};
use flashgen::ring::{Block, Mask, Ring, Split};
use std::collections::BTreeSet;

/// Rows `r` of a [tokens, d] matrix.
fn rows(x: &[f32], r: std::ops::Range<usize>, d: usize) -> &[f32] {
    &x[r.start * d..r.end * d]
}

#[test]
fn the_ring_merges_to_attention_over_the_whole_sequence() {
    let mut rng = SplitMix(35);
    let d = 16;
    for ranks in [1, 2, 3, 4, 5] {
        for causal in [false, true] {
            let chunk = 24;
            let tokens = chunk * if causal { 2 * ranks } else { ranks };
            let ring = Ring::new(ranks, tokens, causal).unwrap();
            assert_eq!(ring.chunk_len(), chunk);
            let (q, k, v) = (rng.vec(tokens * d), rng.vec(tokens * d), rng.vec(tokens * d));
            let scale = 1.5 / (d as f64).sqrt();
            let whole = naive_f64(&q, &k, &v, Shape { z: 1, h: 1, n: tokens, d }, causal, scale);
            let mut visited = BTreeSet::new();
            let mut worst: f64 = 0.0;
            for rank in 0..ranks {
                // per query token of this rank: the partials (O row, natural LSE) of every block it took part in
                let mut parts: Vec<Vec<(Vec<f64>, f64)>> = vec![Vec::new(); tokens];
                for step in 0..ranks {
                    for Block { q: qc, kv, mask } in ring.blocks(rank, step) {
                        assert!(visited.insert((qc, kv)), "block ({qc}, {kv}) computed twice");
                        let (qr, kr) = (ring.chunk(qc), ring.chunk(kv));
                        let s = Shape { z: 1, h: 1, n: chunk, d };
                        let part = naive_f64(rows(&q, qr.clone(), d), rows(&k, kr.clone(), d), rows(&v, kr, d), s, mask == Mask::Diagonal, scale);
                        for (i, t) in qr.enumerate() {
                            parts[t].push((part.o[i * d..(i + 1) * d].to_vec(), part.lse[i]));
                        }
                    }
                }
                for qc in ring.chunks_of(rank) {
                    for t in ring.chunk(qc) {
                        let view: Vec<(&[f64], f64)> = parts[t].iter().map(|(o, l)| (o.as_slice(), *l)).collect();
                        let mut o = vec![0.0; d];
                        let lse = combine_row(&view, LogBase::Natural, &mut o);
                        assert!((lse - whole.lse[t]).abs() <= 1e-12 * whole.lse[t].abs().max(1.0), "P={ranks} causal={causal} token {t}: LSE {lse} against {}", whole.lse[t]);
                        for (a, b) in o.iter().zip(&whole.o[t * d..(t + 1) * d]) {
                            worst = worst.max((a - b).abs());
                        }
                    }
                }
            }
            assert!(worst <= 1e-12, "P={ranks} causal={causal}: O off by {worst:.2e}");
            // every block the mask lets through, once: all of them, or the ones on and below the diagonal
            let chunks = ring.chunks();
            let expected: BTreeSet<(usize, usize)> = (0..chunks).flat_map(|i| (0..chunks).map(move |j| (i, j))).filter(|&(i, j)| !causal || j <= i).collect();
            assert_eq!(visited, expected, "P={ranks} causal={causal}");
        }
    }
}

#[test]
fn the_zig_zag_split_gives_every_rank_the_same_work_at_every_step() {
    for ranks in 1..=8 {
        let ring = Ring::new(ranks, 2 * ranks * 16, true).unwrap();
        for step in 0..ranks {
            for rank in 0..ranks {
                // two full blocks' worth: two Full, or one Full and two Diagonal halves
                assert_eq!(ring.work(rank, step), 4, "P={ranks} rank {rank} step {step}: {:?}", ring.blocks(rank, step));
            }
        }
        // contiguous slices of a causal sequence would not be: rank r computes r + 1 blocks in all
        let lopsided = Ring { split: Split::Contiguous, ..ring };
        let totals: Vec<usize> = (0..ranks).map(|r| (0..ranks).map(|s| lopsided.work(r, s)).sum()).collect();
        assert_eq!(totals, (0..ranks).map(|r| 2 * r + 1).collect::<Vec<_>>());
    }
}

/// The backward of one block with the whole rows' statistics (the forward's LSE and Δ = rowsum(dO ⊙ O)), as a
/// rank computes it: P = exp(S − LSE), dV += Pᵀ·dO, dS = P ⊙ (dO·Vᵀ − Δ), dQ += dS·K·scale, dK += dSᵀ·Q·scale.
#[allow(clippy::too_many_arguments)]
fn block_backward(ring: &Ring, b: Block, x: [&[f32]; 4], lse: &[f64], delta: &[f64], d: usize, scale: f64, grads: [&mut [f64]; 3]) {
    let [q, k, v, d_o] = x;
    let [dq, dk, dv] = grads;
    let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(&x, &y)| x as f64 * y as f64).sum::<f64>();
    for t in ring.chunk(b.q) {
        for j in ring.chunk(b.kv) {
            if b.mask == Mask::Diagonal && j > t {
                continue;
            }
            let (qt, kj, vj, dot_t) = (&q[t * d..(t + 1) * d], &k[j * d..(j + 1) * d], &v[j * d..(j + 1) * d], &d_o[t * d..(t + 1) * d]);
            let p = (dot(qt, kj) * scale - lse[t]).exp();
            let ds = p * (dot(dot_t, vj) - delta[t]);
            for c in 0..d {
                dv[j * d + c] += p * dot_t[c] as f64;
                dq[t * d + c] += ds * kj[c] as f64 * scale;
                dk[j * d + c] += ds * qt[c] as f64 * scale;
            }
        }
    }
}

#[test]
fn the_backward_ring_sums_to_the_whole_sequences_gradients() {
    let mut rng = SplitMix(53);
    let d = 8;
    for ranks in [1, 2, 3, 4] {
        for causal in [false, true] {
            let chunk = 12;
            let tokens = chunk * if causal { 2 * ranks } else { ranks };
            let ring = Ring::new(ranks, tokens, causal).unwrap();
            let (q, k, v, d_o) = (rng.vec(tokens * d), rng.vec(tokens * d), rng.vec(tokens * d), rng.vec(tokens * d));
            let scale = 1.0 / (d as f64).sqrt();
            let s = Shape { z: 1, h: 1, n: tokens, d };
            let fwd = naive_f64(&q, &k, &v, s, causal, scale);
            let delta: Vec<f64> = (0..tokens).map(|t| (0..d).map(|c| d_o[t * d + c] as f64 * fwd.o[t * d + c]).sum()).collect();
            // dQ stays with its rank; dK and dV travel with their K/V slice, each rank adding its blocks' share
            // in ring order (one order, so the sums are the same run to run)
            let (mut dq, mut dk, mut dv) = (vec![0.0; tokens * d], vec![0.0; tokens * d], vec![0.0; tokens * d]);
            for step in 0..ranks {
                for rank in 0..ranks {
                    for b in ring.blocks(rank, step) {
                        block_backward(&ring, b, [&q, &k, &v, &d_o], &fwd.lse, &delta, d, scale, [&mut dq, &mut dk, &mut dv]);
                    }
                }
            }
            let whole = backward_f64(&q, &k, &v, &d_o, s, causal, scale);
            for (name, ours, theirs) in [("dq", &dq, &whole.dq), ("dk", &dk, &whole.dk), ("dv", &dv, &whole.dv)] {
                let worst = ours.iter().zip(theirs).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                let size = theirs.iter().map(|x| x.abs()).fold(0.0, f64::max);
                assert!(worst <= 1e-10 * size.max(1.0), "P={ranks} causal={causal} {name}: off by {worst:.2e} (max {size:.2e})");
            }
        }
    }
}
