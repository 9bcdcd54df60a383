//! The ring (context-parallel) schedule of flashgen::ring run on the CPU: P simulated ranks, each attending
//! its query chunks to the K/V chunks it holds at each step (the f64 reference on each block), the partial
//! results merged through their log-sum-exps, against attention over the whole sequence; every block visited
//! once; the zig-zag split's balance, step by step; and the backward's ring (the same blocks, dK/dV travelling
//! with their K/V, the forward's LSE) against the whole sequence's gradients. The merge kernels the runtime
//! runs between the blocks (templates/ring_merge.ll.tera) on the SIMT emulator, against the f64 combine, and
//! through ptxas for every target.

mod simt;

use flashgen::reference::combine::{combine_row, LogBase};
use flashgen::reference::{backward_f64, naive_f64, Shape, SplitMix};
use flashgen::ring::{self as ring_kernels, Block, Mask, Ring, Split};
use flashgen::DType;
use simt::{bits, bytes16, bytes32, f32s, u16s, value, Arg, Launch};
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

/// A chunk of B·H·len rows of `cols` columns as the merges see it, and where the store puts it: a
/// [B, H, n, stride_n] tensor whose rows start..start + len are the chunk's; the accumulators hold it at rows
/// acc_start..acc_start + len of each (b, h)'s acc_len.
struct Chunk {
    batch: usize,
    heads: usize,
    len: usize,
    cols: usize,
    n: usize,
    start: usize,
    stride_n: usize,
    acc_len: usize,
    acc_start: usize,
}

impl Chunk {
    fn rows(&self) -> usize {
        self.batch * self.heads * self.len
    }
    /// The accumulators' row of the chunk's row r.
    fn acc_row(&self, r: usize) -> usize {
        r / self.len * self.acc_len + self.acc_start + r % self.len
    }
    fn acc_rows(&self) -> usize {
        self.batch * self.heads * self.acc_len
    }
    /// The element of the tensor that row r, column c of the chunk lands on.
    fn place(&self, r: usize, c: usize) -> usize {
        let (bh, l) = (r / self.len, r % self.len);
        bh * self.n * self.stride_n + (self.start + l) * self.stride_n + c
    }
    fn store(&self, ir: &str, dtype: DType, out: usize, acc: usize) -> Launch {
        let (sn, sh) = (self.stride_n as i64, (self.n * self.stride_n) as i64);
        Launch {
            ir: ir.into(),
            entry: ring_kernels::store_entry(dtype),
            args: vec![
                Arg::BufAt(out, self.start * self.stride_n * 2),
                Arg::Buf(acc),
                Arg::I32(self.rows() as i32),
                Arg::I32(self.cols as i32),
                Arg::I32(self.heads as i32),
                Arg::I32(self.len as i32),
                Arg::I64(sh * self.heads as i64),
                Arg::I64(sh),
                Arg::I64(sn),
                Arg::I32(self.acc_len as i32),
                Arg::I32(self.acc_start as i32),
            ],
            grid: (self.rows().div_ceil(ring_kernels::MERGE_WARPS as usize) as u32, 1, 1),
            threads: ring_kernels::MERGE_THREADS,
            together: false,
        }
    }
}

fn merge(ir: &str, dtype: DType, c: &Chunk, [acc_o, acc_m, part_o, part_m]: [Arg; 4], first: bool) -> Launch {
    Launch {
        ir: ir.into(),
        entry: ring_kernels::merge_entry(dtype),
        args: vec![acc_o, acc_m, part_o, part_m, Arg::I32(c.rows() as i32), Arg::I32(c.cols as i32), Arg::I32(first as i32), Arg::I32(c.len as i32), Arg::I32(c.acc_len as i32), Arg::I32(c.acc_start as i32)],
        grid: (c.rows().div_ceil(ring_kernels::MERGE_WARPS as usize) as u32, 1, 1),
        threads: ring_kernels::MERGE_THREADS,
        together: false,
    }
}

const POISON: u16 = 0x7fc1;

/// Three partial results (O in the dtype, M base 2) merged into a chunk's accumulators one after the other
/// as the ring's steps bring them, then stored into the middle of a padded tensor: O within the dtype's
/// rounding of the f64 combine of the same partials, M within 1e-5, rows that no partial reached O = 0 and
/// M = −inf, and nothing of the tensor outside the chunk's rows and columns written.
#[test]
fn the_merge_kernels_combine_partials_by_their_log_sum_exps() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let mut rng = SplitMix(351);
    for dtype in [DType::Bf16, DType::F16] {
        let ir = ring_kernels::merge_module_ir(dtype).unwrap();
        // 30 rows (the last program has 6), 96 columns (a lane's second pass covers half the warp)
        // (the accumulators hold 11 rows a head, the chunk's from row 4: a query range of a rank's tokens)
        let c = Chunk { batch: 2, heads: 3, len: 5, cols: 96, n: 9, start: 3, stride_n: 104, acc_len: 11, acc_start: 4 };
        let (rows, cols) = (c.rows(), c.cols);
        let parts: Vec<(Vec<u16>, Vec<f32>)> = (0..3)
            .map(|p| {
                let o: Vec<u16> = rng.vec(rows * cols).iter().map(|&x| bits(dtype, x)).collect();
                // row 4: no key in any block; row 7: none in the first; row 11: none in the last
                let m = (0..rows)
                    .map(|r| match (r, p) {
                        (4, _) | (7, 0) | (11, 2) => f32::NEG_INFINITY,
                        _ => 4.0 * rng.vec(1)[0] + 2.0 * p as f32,
                    })
                    .collect();
                (o, m)
            })
            .collect();
        // rows with M = −inf have O = 0, as the forward writes them
        let parts: Vec<(Vec<u16>, Vec<f32>)> = parts
            .into_iter()
            .map(|(mut o, m)| {
                for r in (0..rows).filter(|&r| m[r] == f32::NEG_INFINITY) {
                    o[r * cols..(r + 1) * cols].fill(0);
                }
                (o, m)
            })
            .collect();
        let tensor = c.batch * c.heads * c.n * c.stride_n;
        // buffers: 0 the tensor, 1 acc_o, 2 acc_m (poisoned: the first merge must not read them), 3.. the partials
        let mut buffers = vec![bytes16(&vec![POISON; tensor]), bytes32(&vec![f32::NAN; c.acc_rows() * cols], f32::to_le_bytes), bytes32(&vec![f32::NAN; c.acc_rows()], f32::to_le_bytes)];
        for (o, m) in &parts {
            buffers.push(bytes16(o));
            buffers.push(bytes32(m, f32::to_le_bytes));
        }
        let mut launches: Vec<Launch> = (0..3).map(|p| merge(&ir, dtype, &c, [Arg::Buf(1), Arg::Buf(2), Arg::Buf(3 + 2 * p), Arg::Buf(4 + 2 * p)], p == 0)).collect();
        launches.push(c.store(&ir, dtype, 0, 1));
        simt::run(&tools, &launches, &mut buffers).unwrap();
        let (out, acc_m) = (u16s(&buffers[0]), f32s(&buffers[2]));
        let mut worst: f64 = 0.0;
        for r in 0..rows {
            let o_parts: Vec<Vec<f64>> = parts.iter().map(|(o, _)| o[r * cols..(r + 1) * cols].iter().map(|&b| value(dtype, b) as f64).collect()).collect();
            let view: Vec<(&[f64], f64)> = o_parts.iter().zip(&parts).map(|(o, (_, m))| (o.as_slice(), m[r] as f64)).collect();
            let mut want = vec![0.0; cols];
            let m = combine_row(&view, LogBase::Two, &mut want);
            let got_m = acc_m[c.acc_row(r)];
            if m == f64::NEG_INFINITY {
                assert_eq!(got_m, f32::NEG_INFINITY, "{dtype:?} row {r}: M {got_m} for a row no partial reached");
            } else {
                assert!((got_m as f64 - m).abs() <= 1e-5 * m.abs().max(1.0), "{dtype:?} row {r}: M {got_m} against {m}");
            }
            for (col, w) in want.iter().enumerate() {
                let got = value(dtype, out[c.place(r, col)]) as f64;
                // the store rounds once to the dtype (8 or 11 bits); the f32 merge adds a few ulp of f32
                let tol = if dtype == DType::Bf16 { 1.0 / 128.0 } else { 1.0 / 1024.0 } * w.abs().max(1e-3) + 1e-6;
                assert!((got - w).abs() <= tol, "{dtype:?} row {r} col {col}: {got} against {w}");
                worst = worst.max((got - w).abs());
            }
        }
        // the tensor's other rows, and the padding past the columns, keep their poison
        let written: BTreeSet<usize> = (0..rows).flat_map(|r| (0..cols).map(move |col| (r, col))).map(|(r, col)| c.place(r, col)).collect();
        let touched = (0..tensor).filter(|i| !written.contains(i) && out[*i] != POISON).count();
        assert_eq!(touched, 0, "{dtype:?}: {touched} elements outside the chunk written");
        eprintln!("{dtype:?}: worst |ΔO| {worst:.2e}");
    }
}

/// The gradients' merge (M null): the partials summed in f32 in the ring's order, bit for bit what the
/// same sums on the CPU give (deterministic: one order), then rounded once into the tensor.
#[test]
fn the_gradient_merges_sum_in_ring_order_bit_for_bit() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let mut rng = SplitMix(352);
    for dtype in [DType::Bf16, DType::F16] {
        let ir = ring_kernels::merge_module_ir(dtype).unwrap();
        let c = Chunk { batch: 1, heads: 2, len: 7, cols: 64, n: 7, start: 0, stride_n: 64, acc_len: 7, acc_start: 0 };
        let (rows, cols) = (c.rows(), c.cols);
        let parts: Vec<Vec<u16>> = (0..4).map(|_| rng.vec(rows * cols).iter().map(|&x| bits(dtype, x)).collect()).collect();
        let mut buffers = vec![bytes16(&vec![POISON; rows * cols]), bytes32(&vec![f32::NAN; rows * cols], f32::to_le_bytes)];
        buffers.extend(parts.iter().map(|p| bytes16(p)));
        let mut launches: Vec<Launch> = (0..4).map(|p| merge(&ir, dtype, &c, [Arg::Buf(1), Arg::Null, Arg::Buf(2 + p), Arg::Null], p == 0)).collect();
        let mut sum_only = buffers.clone();
        simt::run(&tools, &launches, &mut sum_only).unwrap();
        launches.push(c.store(&ir, dtype, 0, 1));
        simt::run(&tools, &launches, &mut buffers).unwrap();
        let acc = f32s(&sum_only[1]);
        let out = u16s(&buffers[0]);
        for i in 0..rows * cols {
            let want = parts.iter().fold(0.0f32, |s, p| s + value(dtype, p[i]));
            assert_eq!(acc[i].to_bits(), want.to_bits(), "{dtype:?} element {i}: {} against {want}", acc[i]);
            assert_eq!(out[i], bits(dtype, want), "{dtype:?} element {i}: stored {} for {want}", value(dtype, out[i]));
        }
    }
}

/// The merge module through ptxas for every target and dtype: both entries, no local memory.
#[test]
fn the_merge_kernels_assemble_for_every_target() {
    let Some(ptxas) = flashgen_tests::find_ptxas() else {
        assert!(!flashgen_tests::in_ci(), "ptxas not found (set FLASHGEN_PTXAS): CI must install it");
        eprintln!("SKIPPED: ptxas not found (set FLASHGEN_PTXAS)");
        return;
    };
    for arch in [flashgen::Arch::Sm80, flashgen::Arch::Sm90a] {
        for dtype in [DType::Bf16, DType::F16] {
            let ptx = ring_kernels::merge_module_ptx(arch, dtype).unwrap();
            let entries = flashgen_tests::ptxas_entries(&ptxas, &ptx, arch.name()).unwrap();
            let names: BTreeSet<String> = entries.iter().map(|(n, _)| n.clone()).collect();
            assert_eq!(names, BTreeSet::from([ring_kernels::merge_entry(dtype), ring_kernels::store_entry(dtype)]), "{arch:?} {dtype:?}");
            for (name, r) in &entries {
                assert!(r.stack_frame == 0 && r.spill_stores == 0 && r.warnings.is_empty(), "{name} on {arch:?}: {r:?}");
            }
        }
    }
}
