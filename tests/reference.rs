//! The kernels' tiled algorithm on the CPU (f32, base-2 online softmax, the stage split) against naive
//! f64 attention, on random inputs and lengths that are not multiples of the blocks.

use flashgen::reference::{block_range, naive_f64, ramp_keys, relative_error, tiled_f32, LazyRescale, Shape, SplitMix};

#[test]
fn tiled_algorithm_matches_f64_attention() {
    let mut rng = SplitMix(42);
    let mut cases = 0;
    for &(n, d) in &[(1, 16), (7, 32), (64, 32), (100, 32), (129, 16), (257, 64)] {
        for &(bm, bn) in &[(16, 16), (64, 32), (32, 64), (64, 128), (128, 64)] {
            for causal in [false, true] {
                let s = Shape { z: 2, h: 1, n, d };
                let (q, k, v) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
                let scale = 1.0 / (d as f32).sqrt() * 2.0;
                let t = tiled_f32(&q, &k, &v, s, causal, scale, bm, bn, None);
                let r = naive_f64(&q, &k, &v, s, causal, scale as f64);
                let (eo, em) = (relative_error(&t.o, &r.o), relative_error(&t.m, &r.m));
                assert!(eo <= 1e-5 && em <= 1e-5, "N={n} D={d} BM={bm} BN={bn} causal={causal}: O {eo:.2e} M {em:.2e}");
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 60);
}

/// The ping-pong forward's lazy rescaling: on ordinary scores it keeps m_i (its results differ from the eager
/// update's, so the skip was taken) and is as exact; on keys growing 100× along the sequence it must update,
/// and does: the same threshold never updating (infinite) overflows there.
#[test]
fn lazy_rescaling_matches_f64_attention_and_updates_when_scores_grow() {
    let lazy = LazyRescale::KERNEL;
    let never = LazyRescale { log2_threshold: f32::INFINITY, ..lazy };
    let mut rng = SplitMix(7);
    for &(n, d, bm, bn) in &[(1000usize, 64usize, 128usize, 64usize), (333, 128, 128, 128), (513, 64, 192, 128)] {
        for causal in [false, true] {
            let s = Shape { z: 1, h: 2, n, d };
            let normal = |rng: &mut SplitMix| (0..s.len()).map(|_| rng.normal()).collect::<Vec<f32>>();
            let (q, mut k, v) = (normal(&mut rng), normal(&mut rng), normal(&mut rng));
            let scale = 1.0 / (d as f32).sqrt();
            let case = format!("N={n} D={d} {bm}x{bn} causal={causal}");
            let r = naive_f64(&q, &k, &v, s, causal, scale as f64);
            let eager = tiled_f32(&q, &k, &v, s, causal, scale, bm, bn, None);
            let t = tiled_f32(&q, &k, &v, s, causal, scale, bm, bn, Some(lazy));
            assert!(relative_error(&t.o, &r.o) <= 1e-5 && relative_error(&t.m, &r.m) <= 1e-5, "{case}: lazy on normal scores");
            assert_ne!(t.o, eager.o, "{case}: the lazy update was never skipped");
            ramp_keys(&mut k, s, 100.0);
            let r = naive_f64(&q, &k, &v, s, causal, scale as f64);
            let t = tiled_f32(&q, &k, &v, s, causal, scale, bm, bn, Some(lazy));
            let (eo, em) = (relative_error(&t.o, &r.o), relative_error(&t.m, &r.m));
            assert!(eo <= 1e-4 && em <= 1e-5, "{case}: lazy on growing keys: O {eo:.2e} M {em:.2e}");
            let stale = tiled_f32(&q, &k, &v, s, causal, scale, bm, bn, Some(never));
            assert!(relative_error(&stale.o, &r.o) > 1.0, "{case}: growing keys do not force an update");
        }
    }
}

#[test]
fn causal_split_visits_no_future_block_and_masks_only_the_diagonal() {
    for &(n, bm, bn) in &[(1000usize, 128usize, 64usize), (1000, 64, 128), (77, 32, 16), (4096, 128, 128)] {
        for start_m in 0..n.div_ceil(bm) {
            let (full, total) = block_range(n, bm, bn, start_m, true);
            let row0 = start_m * bm;
            let last_row = ((start_m + 1) * bm).min(n) - 1;
            // inner stage 1: every column of every block lies left of the first row: no mask needed
            assert!(full * bn <= row0);
            // inner stage 2 starts at the first block that reaches the diagonal
            assert!(full == total || (full + 1) * bn > row0);
            // the last visited block holds the last row's diagonal; nothing past it is visited
            assert!(total * bn > last_row && (total - 1) * bn <= last_row);
        }
        let (full, total) = block_range(n, bm, bn, 0, false);
        assert_eq!((full, total), (n / bn, n.div_ceil(bn)));
    }
}

#[test]
fn relative_error_rejects_nan() {
    assert!(relative_error(&[f32::NAN, 1.0], &[1.0f64, 1.0]).is_infinite());
    assert_eq!(relative_error(&[1.0f32, 2.0], &[1.0f64, 2.0]), 0.0);
}
