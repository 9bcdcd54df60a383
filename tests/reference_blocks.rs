//! Block ranges against the dense mask, exhaustively on small sizes: for every query tile, the key blocks
//! visited are exactly those holding a visible pair, and the blocks processed without the mask are exactly
//! those in which every pair (of a real row; padding columns count as hidden) is visible. The same for the
//! backward's key tiles over query blocks. And the kernels' current split (block_range) agrees.

use flashgen::reference::{block_range, kv_blocks, q_blocks, Alignment, Band, Blocks, Mask, Window};

/// Every mask shape the small sweep tries: causal or not, both alignments, windows from none to tight.
fn masks() -> Vec<Mask> {
    let bounds = [None, Some(0), Some(1), Some(3), Some(7)];
    let mut out = Vec::new();
    for causal in [false, true] {
        for alignment in [Alignment::BottomRight, Alignment::TopLeft] {
            for left in bounds {
                for right in bounds {
                    out.push(Mask { causal, alignment, window: Window { left, right } });
                }
            }
        }
    }
    out
}

/// Query i sees key j, written out from the conventions (not through Band).
fn visible(m: &Mask, n_q: usize, n_kv: usize, i: usize, j: usize) -> bool {
    let off = match m.alignment {
        Alignment::BottomRight => n_kv as i64 - n_q as i64,
        Alignment::TopLeft => 0,
    };
    let (i, j) = (i as i64, j as i64);
    let diag = i + off;
    i < n_q as i64 && j < n_kv as i64 && (!m.causal || j <= diag) && m.window.left.is_none_or(|l| j >= diag - l as i64) && m.window.right.is_none_or(|r| j <= diag + r as i64)
}

/// Checks one tile's Blocks against a dense visibility predicate over (row, col).
#[allow(clippy::too_many_arguments)]
fn check_tile(blocks: Blocks, tile: usize, tile_rows: usize, block_cols: usize, rows: usize, cols: usize, seen: impl Fn(usize, usize) -> bool, what: &str) {
    let tile_rows_range = tile * tile_rows..((tile + 1) * tile_rows).min(rows);
    let n_blocks = cols.div_ceil(block_cols) + 1; // one past, to see nothing is visited beyond
    let mut any_visited = false;
    for blk in 0..n_blocks {
        let block_cols_range = blk * block_cols..(blk + 1) * block_cols;
        let any = tile_rows_range.clone().any(|i| block_cols_range.clone().any(|j| seen(i, j)));
        let all = !tile_rows_range.is_empty() && tile_rows_range.clone().all(|i| block_cols_range.clone().all(|j| seen(i, j)));
        let visited = blocks.visited().contains(&blk);
        assert_eq!(visited, any, "{what}: tile {tile} block {blk}: visited {visited} but holds a visible pair {any} ({blocks:?})");
        // a visited block is processed unmasked exactly when it is fully visible
        if visited {
            assert_eq!(!blocks.needs_mask(blk), all, "{what}: tile {tile} block {blk}: unmasked {} but fully visible {all} ({blocks:?})", !blocks.needs_mask(blk));
        }
        any_visited |= any;
    }
    assert_eq!(blocks.is_empty(), !any_visited, "{what}: tile {tile}: {blocks:?}");
    assert!(blocks.begin <= blocks.full_begin && blocks.full_begin <= blocks.full_end && blocks.full_end <= blocks.end, "{what}: {blocks:?} out of order");
}

#[test]
fn block_ranges_match_the_dense_mask_exhaustively() {
    let mut tiles = 0usize;
    for n_q in 0..=10 {
        for n_kv in 0..=10 {
            for mask in masks() {
                for (bm, bn) in [(1, 1), (1, 3), (3, 1), (2, 4), (4, 2), (3, 5), (16, 16)] {
                    let what = format!("N_q={n_q} N_kv={n_kv} BM={bm} BN={bn} {mask:?}");
                    let seen = |i: usize, j: usize| visible(&mask, n_q, n_kv, i, j);
                    for tile in 0..n_q.div_ceil(bm) + 1 {
                        check_tile(kv_blocks(tile, bm, bn, n_q, n_kv, &mask), tile, bm, bn, n_q, n_kv, seen, &format!("forward {what}"));
                        tiles += 1;
                    }
                    // the backward's dK/dV programs: key tiles over query blocks
                    for tile in 0..n_kv.div_ceil(bn) + 1 {
                        check_tile(q_blocks(tile, bn, bm, n_q, n_kv, &mask), tile, bn, bm, n_kv, n_q, |j, i| seen(i, j), &format!("backward {what}"));
                    }
                }
            }
        }
    }
    assert!(tiles > 100_000, "{tiles} tiles");
}

/// Kernel-sized tiles on longer, ragged sequences with windows, against the dense mask.
#[test]
fn block_ranges_match_the_dense_mask_at_kernel_tile_sizes() {
    let cases = [(300usize, 1000usize), (1000, 300), (777, 777), (64, 4097), (1, 513), (513, 1)];
    for (n_q, n_kv) in cases {
        for mask in [
            Mask { causal: true, ..Mask::default() },
            Mask { causal: true, alignment: Alignment::TopLeft, ..Mask::default() },
            Mask { causal: true, window: Window { left: Some(256), right: None }, ..Mask::default() },
            Mask { causal: false, window: Window { left: Some(100), right: Some(37) }, ..Mask::default() },
            Mask { causal: false, alignment: Alignment::TopLeft, window: Window { left: Some(0), right: Some(0) } },
            Mask::default(),
        ] {
            for (bm, bn) in [(128, 64), (64, 128), (128, 128), (192, 128)] {
                let what = format!("N_q={n_q} N_kv={n_kv} BM={bm} BN={bn} {mask:?}");
                let seen = |i: usize, j: usize| visible(&mask, n_q, n_kv, i, j);
                for tile in 0..n_q.div_ceil(bm) {
                    check_tile(kv_blocks(tile, bm, bn, n_q, n_kv, &mask), tile, bm, bn, n_q, n_kv, seen, &what);
                }
                for tile in 0..n_kv.div_ceil(bn) {
                    check_tile(q_blocks(tile, bn, bm, n_q, n_kv, &mask), tile, bn, bm, n_kv, n_q, |j, i| seen(i, j), &what);
                }
            }
        }
    }
}

/// The kernels' causal stage split of today (equal lengths) is kv_blocks' unmasked/masked split.
#[test]
fn block_range_is_kv_blocks_for_equal_lengths() {
    for n in [1usize, 63, 64, 77, 1000, 4096] {
        for (bm, bn) in [(128usize, 64usize), (64, 128), (32, 16), (128, 128), (192, 128)] {
            for causal in [false, true] {
                let mask = Mask { causal, ..Mask::default() };
                for tile in 0..n.div_ceil(bm) {
                    let b = kv_blocks(tile, bm, bn, n, n, &mask);
                    assert_eq!(b.begin, 0);
                    let want = if b.full_begin == b.full_end { (0, b.end) } else { (b.full_end, b.end) };
                    assert_eq!(block_range(n, bm, bn, tile, causal), want, "N={n} BM={bm} BN={bn} causal={causal} tile {tile}: {b:?}");
                }
            }
        }
    }
}

/// FlashAttention's window semantics on a hand-checked case: N_q = 3, N_kv = 8, bottom-right (offset 5),
/// window (2, 1): row i sees keys i+3 ..= i+6; with causal, i+3 ..= i+5.
#[test]
fn band_keys_by_hand() {
    let w = Window { left: Some(2), right: Some(1) };
    let band = Mask { causal: false, alignment: Alignment::BottomRight, window: w }.band(3, 8);
    assert_eq!((0..3).map(|i| band.keys_of(i)).collect::<Vec<_>>(), vec![3..7, 4..8, 5..8]);
    let band = Mask { causal: true, alignment: Alignment::BottomRight, window: w }.band(3, 8);
    assert_eq!((0..3).map(|i| band.keys_of(i)).collect::<Vec<_>>(), vec![3..6, 4..7, 5..8]);
    // N_q > N_kv, causal bottom-right: the first N_q − N_kv rows see nothing
    let band = Mask { causal: true, ..Mask::default() }.band(5, 2);
    assert_eq!((0..5).map(|i| band.keys_of(i)).collect::<Vec<_>>(), vec![0..0, 0..0, 0..0, 0..1, 0..2]);
    // top-left: the diagonal from the first key
    let band = Mask { causal: true, alignment: Alignment::TopLeft, window: Window::UNBOUNDED }.band(2, 5);
    assert_eq!((0..2).map(|i| band.keys_of(i)).collect::<Vec<_>>(), vec![0..1, 0..2]);
    assert_eq!(Window::from_fa(-1, 0), Window { left: None, right: Some(0) });
    // the transpose lists, for each key, the queries that see it
    let band = Mask { causal: true, ..Mask::default() }.band(3, 5);
    let t: Band = band.transpose();
    assert_eq!((0..5).map(|j| t.keys_of(j)).collect::<Vec<_>>(), vec![0..3, 0..3, 0..3, 1..3, 2..3]);
}
