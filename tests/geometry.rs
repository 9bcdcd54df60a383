//! The kernels' geometry arithmetic, mirrored here line by line from the templates (lib/seqinfo.ll.tera,
//! lib/dq_fused.ll.tera, lib/pingpong.ll.tera) in i32/u32 as the IR computes it, checked on the CPU
//! against flashgen::reference's block ranges and the dense mask: which key blocks a query tile visits
//! and masks (forward, dQ), which query blocks a key tile meets (dK/dV), the fused backward's order of
//! programs per query block, the dQ pieces of packed sequences, the persistent consumers' own blocks,
//! packed sequences' clamped offsets, and the dK/dV loops' carried step cursor (no division per step). Small sizes, exhaustively, in both causal alignments.

use flashgen::reference::{kv_blocks, q_blocks, Alignment, Mask, Window};

/// seqinfo `lengths`: the diagonal (query i sees key j iff j <= i + diag).
fn diag(n_q: i32, n_kv: i32, bottom_right: bool) -> i32 {
    if bottom_right {
        n_kv - n_q
    } else {
        0
    }
}

/// seqinfo `kv_blocks`: (n_full, n_total) of the query tile from row0.
fn kv_blocks_ir(causal: bool, row0: i32, q_len: i32, kv_len: i32, diag: i32, bm: i32, bn: i32) -> (u32, u32) {
    if causal {
        let full_keys0 = (row0 + diag).max(0) as u32;
        let n_full = (full_keys0 / bn as u32).min(kv_len as u32 / bn as u32);
        let row_end = if ((row0 + bm) as u32) < q_len as u32 { row0 + bm } else { q_len };
        let end = ((row_end + diag).max(0) as u32).min(kv_len as u32);
        (n_full, (end + bn as u32 - 1) / bn as u32)
    } else {
        (kv_len as u32 / bn as u32, (kv_len as u32 + bn as u32 - 1) / bn as u32)
    }
}

/// seqinfo `q_blocks`: (n_q, i0, mask_end, count) of the key tile from n0.
fn q_blocks_ir(causal: bool, n0: i32, q_len: i32, diag: i32, bm: i32, bn: i32) -> (u32, u32, i32, u32) {
    let n_q = (q_len as u32 + bm as u32 - 1) / bm as u32;
    if causal {
        let first_q = n0 - diag;
        let i0 = (first_q.max(0) as u32 / bm as u32).min(n_q);
        (n_q, i0, first_q + bn, n_q - i0)
    } else {
        (n_q, 0, 0, n_q)
    }
}

/// The per-row mask limit (seqinfo `column_bound`, `row_limit`): column colt + c is kept iff c <= limit.
fn keeps(causal: bool, row: i32, col: i32, kv_len: i32, diag: i32) -> bool {
    let colt = col; // (c = 0: the limit compares the column's offset from colt)
    let nlim = kv_len - 1 - colt;
    let lim = if causal { (row - (colt - diag)).min(nlim) } else { nlim };
    0 <= lim
}

/// dq_fused `last_program`: the highest program meeting query block blk (-1: none).
fn last_program_ir(causal: bool, blk: i32, p_last: i32, diag: i32, bn: i32) -> i32 {
    if causal {
        let qe_up = blk * 64 + 63 + diag + bn;
        let diag_n = (qe_up.max(0) as u32 / bn as u32) as i32 - 1;
        diag_n.min(p_last)
    } else {
        p_last
    }
}

fn mask(causal: bool, bottom_right: bool) -> Mask {
    Mask { causal, alignment: if bottom_right { Alignment::BottomRight } else { Alignment::TopLeft }, window: Window::UNBOUNDED }
}

/// The forward's (and dQ's) key blocks: every visible block visited, none past the last; every block
/// before n_full wholly visible to every row of the tile; the row limits keep exactly the visible pairs.
#[test]
fn forward_block_ranges_match_the_reference() {
    for (bm, bn) in [(16, 16), (32, 16), (16, 32), (64, 64), (128, 64), (64, 128), (192, 128)] {
        for n_q in 0..=3 * bm + 3 {
            for n_kv in [0, 1, bn - 1, bn, bn + 1, 2 * bn + 5, 3 * bn, 5 * bn + 1] {
                for causal in [false, true] {
                    for br in [true, false] {
                        let (d, m) = (diag(n_q, n_kv, br), mask(causal, br));
                        for tile in 0..(n_q as usize).div_ceil(bm as usize) {
                            let row0 = tile as i32 * bm;
                            let r = kv_blocks(tile, bm as usize, bn as usize, n_q as usize, n_kv as usize, &m);
                            let (n_full, n_total) = kv_blocks_ir(causal, row0, n_q, n_kv, d, bm, bn);
                            let at = format!("bm{bm} bn{bn} n_q {n_q} n_kv {n_kv} causal {causal} br {br} tile {tile}");
                            assert_eq!(n_total as usize, r.end, "{at}: n_total vs {r:?}");
                            assert!(n_full as usize <= r.full_end && n_full <= n_total, "{at}: n_full {n_full} vs {r:?}");
                            assert_eq!(r.begin, 0, "{at}");
                            for row in row0..(row0 + bm).min(n_q) {
                                for col in 0..(n_total as i32 * bn) {
                                    let visible = col < n_kv && (!causal || col <= row + d);
                                    assert_eq!(keeps(causal, row, col, n_kv, d), visible, "{at} row {row} col {col}");
                                    if (col / bn) < n_full as i32 {
                                        assert!(visible, "{at}: block {} before n_full {n_full} not wholly visible", col / bn);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// dK/dV's query blocks: [i0, n_q) are exactly the blocks holding a query that sees a key of the tile; a
/// block starting at or past mask_end has every real query see every key of the tile.
#[test]
fn key_tile_block_ranges_match_the_reference() {
    for (bm, bn) in [(16, 64), (32, 64), (64, 64), (64, 128), (16, 128)] {
        for n_q in [0, 1, bm - 1, bm, bm + 1, 3 * bm + 7, 2 * bn + 3] {
            for n_kv in 0..=2 * bn + 2 {
                for causal in [false, true] {
                    for br in [true, false] {
                        let (d, m) = (diag(n_q, n_kv, br), mask(causal, br));
                        for tile in 0..(n_kv as usize).div_ceil(bn as usize) {
                            let n0 = tile as i32 * bn;
                            let r = q_blocks(tile, bn as usize, bm as usize, n_q as usize, n_kv as usize, &m);
                            let (n_q_blocks, i0, mask_end, count) = q_blocks_ir(causal, n0, n_q, d, bm, bn);
                            let at = format!("bm{bm} bn{bn} n_q {n_q} n_kv {n_kv} causal {causal} br {br} key tile {tile}");
                            if r.is_empty() {
                                assert_eq!(count, 0, "{at}: {r:?}");
                            } else {
                                assert_eq!((i0 as usize, n_q_blocks as usize), (r.begin, r.end), "{at}: {r:?}");
                            }
                            if causal {
                                for b in i0..n_q_blocks {
                                    let q0 = b as i32 * bm;
                                    if q0 >= mask_end {
                                        for i in q0..(q0 + bm).min(n_q) {
                                            for j in n0..(n0 + bn).min(n_kv) {
                                                assert!(j <= i + d, "{at}: block {b} unmasked but query {i} does not see key {j}");
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The fused backward's order per query block: the programs meeting block b are exactly 0 ..= last_n, and
/// the writer's span (last_n - n from its carried block position) and the sum pass's last_n agree.
#[test]
fn fused_backward_orders_every_block_by_its_programs() {
    for bn in [64, 128] {
        for n_q in [1, 63, 64, 65, 200, 320] {
            for n_kv in [1, 63, 64, 65, 200, 320, 700] {
                for causal in [false, true] {
                    for br in [true, false] {
                        let d = diag(n_q, n_kv, br);
                        let programs = (n_kv + bn - 1) / bn;
                        let p_last = programs - 1;
                        let blocks = (n_q + 63) / 64;
                        for blk in 0..blocks {
                            let meets: Vec<i32> = (0..programs)
                                .filter(|&n| {
                                    let (_, i0, _, count) = q_blocks_ir(causal, n * bn, n_q, d, 64, bn);
                                    count > 0 && (blk as u32) >= i0
                                })
                                .collect();
                            let last = last_program_ir(causal, blk, p_last, d, bn);
                            let at = format!("bn{bn} n_q {n_q} n_kv {n_kv} causal {causal} br {br} block {blk}");
                            assert_eq!(meets, (0..=last).collect::<Vec<_>>(), "{at}");
                            for &n in &meets {
                                // the writer: span = min((blk·64 + 63 + diag - n·BN) / BN, p_last - n)
                                let qe_key = blk * 64 + 63 + d - n * bn;
                                assert!(!causal || qe_key >= 0, "{at}: program {n}");
                                let span = if causal { ((qe_key as u32) / bn as u32).min((p_last - n) as u32) as i32 } else { p_last - n };
                                assert_eq!(span, last - n, "{at}: program {n}");
                            }
                        }
                    }
                }
            }
        }
    }
}

/// seqinfo `packed_side`: any offsets give a start in [0, total] and a length within the tensor and the
/// longest length; honest offsets give the sequence itself.
#[test]
fn packed_offsets_are_clamped_to_the_tensor() {
    let side = |cu0: i32, cu1: i32, total: i32, longest: i32| -> (i32, i32) {
        let row0 = (cu0.max(0) as u32).min(total as u32) as i32;
        let end = (cu1.max(row0) as u32).min(total as u32) as i32;
        (row0, ((end - row0) as u32).min(longest as u32) as i32)
    };
    let values = [i32::MIN, -5, -1, 0, 1, 7, 63, 64, 100, 1000, i32::MAX];
    for &total in &[0, 1, 100, 1000] {
        for &longest in &[0, 1, 50, 1000, i32::MAX] {
            for &a in &values {
                for &b in &values {
                    let (row0, len) = side(a, b, total, longest);
                    assert!((0..=total).contains(&row0) && len >= 0 && row0 as i64 + len as i64 <= total as i64 && len <= longest, "cu {a}..{b} total {total} longest {longest}: {row0} + {len}");
                    if 0 <= a && a <= b && b <= total && b - a <= longest {
                        assert_eq!((row0, len), (a, b - a));
                    }
                }
            }
        }
    }
}

/// The fused backward's dQ blocks of packed sequences (dq_fused `piece_block`, blocks of M = BLOCK_M rows:
/// 64, or 128 at HEAD_DIM 64): sequence b's blocks h·(total/M + B) + cu[b]/M + b + i, i < cdiv(len_b, M),
/// never meet another sequence's or head's, and stay below H·(total/M + B) (`FusedScratch::blocks`).
#[test]
fn packed_dq_pieces_do_not_overlap() {
    let mut rng = flashgen::reference::SplitMix(7);
    for m in [64, 128] {
        for _ in 0..2000 {
            let b = 1 + (rng.next_u64() % 9) as usize;
            let lens: Vec<usize> = (0..b).map(|_| if rng.next_u64() % 4 == 0 { 0 } else { (rng.next_u64() % 300) as usize }).collect();
            let mut cu = vec![0usize];
            for l in &lens {
                cu.push(cu.last().unwrap() + l);
            }
            let total = cu[b] + (rng.next_u64() % 70) as usize;
            let heads = 3;
            let per_head = total / m + b;
            let mut owner = vec![None; heads * per_head];
            for h in 0..heads {
                for s in 0..b {
                    for i in 0..lens[s].div_ceil(m) {
                        let piece = h * per_head + cu[s] / m + s + i;
                        assert!(piece < heads * per_head, "M {m}, lens {lens:?}: piece {piece}");
                        assert!(owner[piece].is_none(), "M {m}, lens {lens:?}: piece {piece} of ({h}, {s}) and {:?}", owner[piece]);
                        owner[piece] = Some((h, s));
                    }
                }
            }
        }
    }
}

/// The persistent consumers' own blocks (pingpong `own_blocks`): a warpgroup runs blocks 0 .. n_own - 1,
/// at least block 0, and every block holding a key its rows see.
#[test]
fn own_blocks_cover_every_visible_key() {
    let bn = 64;
    for n_q in [1, 64, 200, 256, 700] {
        for n_kv in [1, 10, 64, 200, 700, 1000] {
            for br in [true, false] {
                let d = diag(n_q, n_kv, br);
                for tile in 0..(n_q + 255) / 256 {
                    let row0 = tile * 256;
                    let (_, n_total) = kv_blocks_ir(true, row0, n_q, n_kv, d, 256, bn);
                    if n_total == 0 {
                        continue;
                    }
                    for wg in 0..4 {
                        let wg_last = row0 + 64 * wg + 63;
                        let wg_end = (wg_last + d + bn).max(bn);
                        let n_own = (wg_end as u32 / bn as u32).min(n_total);
                        assert!(n_own >= 1);
                        for row in (row0 + 64 * wg)..(row0 + 64 * wg + 64).min(n_q) {
                            let last_key = (row + d).min(n_kv - 1);
                            if last_key >= 0 {
                                assert!((last_key / bn) < n_own as i32, "n_q {n_q} n_kv {n_kv} br {br} tile {tile} wg {wg}: row {row} sees block {}", last_key / bn);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// seqinfo `group_cursor` / `group_cursor_phis` / `group_cursor_next` (dK/dV loops, cp.async and TMA rings):
/// the cursor carried from step to step, without a division, is `group_step`'s (j mod count, j / count)
/// at every step: the refill's (step j + ahead), the block positions handed down to step j's, and the
/// carried head values (a pointer, a row offset) that move on once per head, as gi times their step.
#[test]
fn group_cursor_is_the_divided_step() {
    let advance = |gj: u32, gi: u32, count: u32| -> (u32, u32, bool) {
        let gj1 = gj.wrapping_add(1);
        let wrap = gj1 >= count;
        (if wrap { 0 } else { gj1 }, gi + wrap as u32, wrap)
    };
    for count in 1u32..=9 {
        for group in 1u32..=5 {
            let steps = count * group;
            for ahead in 1usize..=4 {
                // group_cursor: from step 0 by `ahead` advances; the handed-down positions of steps 1 .. ahead-1
                let mut start = vec![(0u32, 0u32)];
                for _ in 0..ahead {
                    let (gj, gi) = *start.last().unwrap();
                    let (nj, ni, _) = advance(gj, gi, count);
                    start.push((nj, ni));
                }
                let (mut rgj, mut rgi) = start[ahead];
                let mut c: Vec<u32> = (0..ahead).map(|i| start[i].0).collect();
                let (stride, stat_head) = (1000u64, 77u32);
                let (mut hs, mut shead) = (rgi as u64 * stride, rgi * stat_head);
                for j in 0..steps {
                    let at = format!("count {count} group {group} ahead {ahead} step {j}");
                    assert_eq!(c[0], j % count, "{at}: step j's block position");
                    let jn = j + ahead as u32;
                    if jn < steps {
                        assert_eq!((rgj, rgi), (jn % count, jn / count), "{at}: the refill's");
                        assert_eq!((hs, shead), ((jn / count) as u64 * stride, (jn / count) * stat_head), "{at}: carried head values");
                    }
                    // group_cursor_next, and the phis' hand-down (c_i <- c_{i+1}, c_{ahead-1} <- rgj)
                    let (nj, ni, wrap) = advance(rgj, rgi, count);
                    if wrap {
                        hs += stride;
                        shead += stat_head;
                    }
                    c.remove(0);
                    c.push(rgj);
                    (rgj, rgi) = (nj, ni);
                }
            }
        }
    }
}
