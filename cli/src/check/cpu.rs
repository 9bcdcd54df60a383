//! The tiled algorithm on the CPU against f64 attention: what `flashgen check` proves without a GPU.

use flashgen::reference::{naive_f64, ramp_keys, relative_error, tiled_f32, LazyRescale, Shape, SplitMix};

/// The kernels' tiled algorithm (f32) against naive f64 attention, at lengths that are not multiples of the
/// blocks: with the eager update, and with the ping-pong forward's lazy rescaling on ordinary keys and on keys
/// growing along the sequence (which force its update path).
pub fn cpu_algorithm_check(seed: u64) -> Result<(), String> {
    let mut rng = SplitMix(seed);
    let mut worst = 0f64;
    for (n, bm, bn, causal) in [(1, 64, 32, true), (77, 32, 16, true), (130, 64, 128, true), (130, 128, 64, false), (45, 16, 64, false), (600, 128, 64, true)] {
        let s = Shape { z: 1, h: 2, n, d: 32 };
        let (q, k, v) = (rng.vec(s.len()), rng.vec(s.len()), rng.vec(s.len()));
        let mut ramp = k.clone();
        ramp_keys(&mut ramp, s, 100.0);
        let lazy = Some(LazyRescale::KERNEL);
        for (how, keys, lazy) in [("eager", &k, None), ("lazy", &k, lazy), ("lazy, growing keys", &ramp, lazy)] {
            let t = tiled_f32(&q, keys, &v, s, causal, 0.3, bm, bn, lazy);
            let r = naive_f64(&q, keys, &v, s, causal, 0.3);
            let e = relative_error(&t.o, &r.o).max(relative_error(&t.m, &r.m));
            worst = worst.max(e);
            if e > 1e-5 {
                return Err(format!("tiled CPU algorithm ({how}) differs from f64 attention by {e:.2e} (N={n}, BLOCK_M={bm}, BLOCK_N={bn}, causal={causal})"));
            }
        }
    }
    println!("tiled CPU algorithm agrees with f64 attention: worst relative error {worst:.1e}");
    Ok(())
}
