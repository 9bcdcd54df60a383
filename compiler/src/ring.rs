//! Context-parallel (ring) attention's schedule (issue 35): a sequence too long for one GPU is split across
//! P ranks. Each rank keeps its slice of the queries; the K/V slices travel around the ring (at step s rank r
//! holds the slice rank r − s started with, and sends it on to rank r + 1), and at each step every rank
//! attends its queries to the keys it holds. The partial results merge exactly through their log-sum-exps
//! (`reference::combine`: LSE = ln Σ exp(LSE_s), O = Σ exp(LSE_s − LSE)·O_s), so the order of the steps does
//! not change the result beyond rounding.
//!
//! The sequence is cut into chunks of equal length. A pair (query chunk i, key chunk j) is a block of work:
//! all of it when the keys precede the queries or attention is not causal (`Full`), the causal diagonal when
//! i = j (`Diagonal`), nothing when causal and j > i. With contiguous slices (rank r holds chunk r of P) the
//! causal work is lopsided: the last rank computes P blocks, the first one. The zig-zag split cuts the sequence
//! into 2P chunks and gives rank r chunks r and 2P − 1 − r: at every step every rank then computes two full
//! blocks' worth (two `Full`, or one `Full` and two `Diagonal`s), so no rank waits for another at the hand-over.
//!
//! This module is the plan (which blocks, in which order, with which mask) and the merge kernels
//! (templates/ring_merge.ll.tera: a block's partial O and M into a chunk's f32 accumulators, the gradients'
//! partials summed, the accumulators stored once in the tensor's dtype); the runtime (runtime/src/ring.rs)
//! runs the blocks with the attention kernels, and the CPU tests (tests/ring.rs) run the plan with the f64
//! reference against attention over the whole sequence and the merge kernels on the SIMT emulator.

use crate::render::RenderError;
use crate::spec::DType;
use std::ops::Range;

/// Rows a merge program takes, one a warp.
pub const MERGE_WARPS: u32 = 8;
/// Threads of a merge program.
pub const MERGE_THREADS: u32 = 32 * MERGE_WARPS;

/// The entry that merges a partial into a chunk's accumulators (by log-sum-exp, or summed when its M is
/// null): `(acc_o, acc_m, part_o, part_m, rows, cols, first, len, acc_len, acc_start)`: the partial's row r
/// (of B·H·len) is the accumulators' row (r / len)·acc_len + acc_start + r % len (a part of longer rows).
pub fn merge_entry(dtype: DType) -> String {
    format!("flashgen_ring_merge_{}", dtype.name())
}

/// The entry that stores accumulators into a strided tensor:
/// `(out, acc, rows, cols, heads, len, stride_b, stride_h, stride_n, acc_len, acc_start)`: out[b, h, l] is the
/// accumulators' row (b·H + h)·acc_len + acc_start + l.
pub fn store_entry(dtype: DType) -> String {
    format!("flashgen_ring_store_{}", dtype.name())
}

/// The merge module's LLVM IR for a dtype (both entries).
pub fn merge_module_ir(dtype: DType) -> Result<String, RenderError> {
    let mut ctx = tera::Context::new();
    ctx.insert("dtype", dtype.name());
    ctx.insert("is_bf16", &(dtype == DType::Bf16));
    ctx.insert("pair_type", if dtype == DType::Bf16 { "<2 x bfloat>" } else { "<2 x half>" });
    ctx.insert("merge", &merge_entry(dtype));
    ctx.insert("store", &store_entry(dtype));
    ctx.insert("WARPS", &MERGE_WARPS);
    ctx.insert("THREADS", &MERGE_THREADS);
    crate::render::render_module("ring_merge.ll.tera", &ctx)
}

/// The merge module's PTX for a target (the runtime loads it once per dtype).
#[cfg(feature = "llvm")]
pub fn merge_module_ptx(arch: crate::Arch, dtype: DType) -> Result<String, crate::CompileError> {
    let ir = merge_module_ir(dtype)?;
    let (ptx, _, _) = crate::codegen::compile_module(&format!("ring_merge_{}", dtype.name()), arch, &ir, false)?;
    Ok(ptx)
}

/// How the sequence's chunks are dealt to the ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// P chunks, rank r holding chunk r (non-causal attention: every rank's work is the same anyway).
    Contiguous,
    /// 2P chunks, rank r holding chunks r and 2P − 1 − r (causal attention's balance).
    ZigZag,
}

/// What part of a (query chunk, key chunk) block a rank computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Every query sees every key of the block.
    Full,
    /// The block on the causal diagonal (query chunk = key chunk): query t sees keys up to t.
    Diagonal,
}

/// One block of a step: the rank's query chunk `q` against the visiting key chunk `kv`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    pub q: usize,
    pub kv: usize,
    pub mask: Mask,
}

/// One rank's step as one attention call on its local tokens (`Ring::step_call`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepCall {
    /// The rank's query tokens (of its chunks·L).
    pub q: Range<usize>,
    /// The visiting slice's key tokens.
    pub kv: Range<usize>,
    /// Causal on the call's own diagonal (equal lengths, both from token 0: step 0 of the zig-zag).
    pub causal: bool,
}

/// The ring of one attention call: P ranks over `tokens` tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ring {
    pub ranks: usize,
    pub tokens: usize,
    pub causal: bool,
    pub split: Split,
}

impl Ring {
    /// The ring for P = `ranks` over `tokens` tokens: zig-zag when causal, contiguous otherwise. The tokens must
    /// divide into equal chunks (2P of them when causal, P otherwise), so that every rank holds as many.
    pub fn new(ranks: usize, tokens: usize, causal: bool) -> Result<Ring, String> {
        let split = if causal { Split::ZigZag } else { Split::Contiguous };
        if ranks == 0 {
            return Err("a ring of 0 ranks: give at least one".into());
        }
        let ring = Ring { ranks, tokens, causal, split };
        let chunks = ring.chunks();
        if tokens == 0 || !tokens.is_multiple_of(chunks) {
            return Err(format!(
                "{tokens} tokens do not split into {chunks} equal chunks ({} for {ranks} ranks): pad the sequence to a multiple of {chunks}",
                if causal { "2P, the zig-zag split's" } else { "P" }
            ));
        }
        Ok(ring)
    }

    /// Chunks of the sequence (2P zig-zag, P contiguous).
    pub fn chunks(&self) -> usize {
        match self.split {
            Split::Contiguous => self.ranks,
            Split::ZigZag => 2 * self.ranks,
        }
    }

    pub fn chunk_len(&self) -> usize {
        self.tokens / self.chunks()
    }

    /// The tokens of chunk `c`.
    pub fn chunk(&self, c: usize) -> Range<usize> {
        c * self.chunk_len()..(c + 1) * self.chunk_len()
    }

    /// The chunks rank `rank` holds (its queries, and the keys it starts with), in sequence order.
    pub fn chunks_of(&self, rank: usize) -> Vec<usize> {
        match self.split {
            Split::Contiguous => vec![rank],
            Split::ZigZag => vec![rank, 2 * self.ranks - 1 - rank],
        }
    }

    /// The rank whose K/V slice `rank` holds at step `step` (0 ..P): its own first, then its left
    /// neighbour's, and so on around the ring.
    pub fn source(&self, rank: usize, step: usize) -> usize {
        (rank + self.ranks - step % self.ranks) % self.ranks
    }

    /// The blocks `rank` computes at `step`: each of its query chunks against each key chunk it holds then,
    /// those the causal mask hides entirely left out.
    pub fn blocks(&self, rank: usize, step: usize) -> Vec<Block> {
        let keys = self.chunks_of(self.source(rank, step));
        let mut out = Vec::new();
        for &q in &self.chunks_of(rank) {
            for &kv in &keys {
                let mask = match (self.causal, kv.cmp(&q)) {
                    (false, _) | (true, std::cmp::Ordering::Less) => Mask::Full,
                    (true, std::cmp::Ordering::Equal) => Mask::Diagonal,
                    (true, std::cmp::Ordering::Greater) => continue,
                };
                out.push(Block { q, kv, mask });
            }
        }
        out
    }

    /// Rank `rank`'s rows of a whole [rows, tokens, width] host tensor (rows = B·H): its chunks, in order,
    /// as the [rows, chunks·L, width] tensor the rank holds.
    pub fn gather<T: Copy>(&self, rank: usize, whole: &[T], rows: usize, width: usize) -> Vec<T> {
        let (n, len, chunks) = (self.tokens, self.chunk_len(), self.chunks_of(rank));
        let mut out = Vec::with_capacity(rows * chunks.len() * len * width);
        for r in 0..rows {
            for &c in &chunks {
                out.extend_from_slice(&whole[(r * n + c * len) * width..(r * n + (c + 1) * len) * width]);
            }
        }
        out
    }

    /// The reverse of `gather`: rank `rank`'s [rows, chunks·L, width] tensor into its places of the whole.
    pub fn scatter<T: Copy>(&self, rank: usize, local: &[T], whole: &mut [T], rows: usize, width: usize) {
        let (n, len, chunks) = (self.tokens, self.chunk_len(), self.chunks_of(rank));
        let t = chunks.len() * len;
        for r in 0..rows {
            for (i, &c) in chunks.iter().enumerate() {
                whole[(r * n + c * len) * width..(r * n + (c + 1) * len) * width].copy_from_slice(&local[(r * t + i * len) * width..(r * t + (i + 1) * len) * width]);
            }
        }
    }

    /// A step's blocks for `rank` as one attention call on its local tensors ([.., chunks·L, ..], its chunks in
    /// order) against the visiting slice's (laid out the same): query tokens `q` against key tokens `kv`,
    /// causal on their own diagonal or not. It always exists (`the_steps_blocks_are_one_call`): the zig-zag
    /// ranks at step 0 hold their own slice (causal over all 2L tokens); later, a slice from a lower rank is
    /// seen whole by both query chunks (kv its first chunk: the second lies after both), one from a higher
    /// rank by the second query chunk alone (both key chunks). One call instead of two or three: kernels
    /// twice as long, one merge (ring-flash-attention's zig-zag does the same).
    pub fn step_call(&self, rank: usize, step: usize) -> StepCall {
        let len = self.chunk_len();
        let mine = self.chunks_of(rank);
        let theirs = self.chunks_of(self.source(rank, step));
        let blocks = self.blocks(rank, step);
        let local = |chunks: &[usize], c: usize| chunks.iter().position(|&x| x == c).expect("a block's chunk is held");
        let qs: Vec<usize> = blocks.iter().map(|b| local(&mine, b.q)).collect();
        let ks: Vec<usize> = blocks.iter().map(|b| local(&theirs, b.kv)).collect();
        let (q0, q1) = (*qs.iter().min().expect("every step has a block"), *qs.iter().max().expect("every step has a block"));
        let (k0, k1) = (*ks.iter().min().expect("every step has a block"), *ks.iter().max().expect("every step has a block"));
        let causal = blocks.iter().any(|b| b.mask == Mask::Diagonal);
        StepCall { q: q0 * len..(q1 + 1) * len, kv: k0 * len..(k1 + 1) * len, causal }
    }

    /// A step's work for `rank` in half-blocks (a `Full` block 2, a `Diagonal` 1): what the balance is
    /// measured in.
    pub fn work(&self, rank: usize, step: usize) -> usize {
        self.blocks(rank, step).iter().map(|b| if b.mask == Mask::Full { 2 } else { 1 }).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rings_sizes_are_checked() {
        assert!(Ring::new(0, 1024, true).unwrap_err().contains("0 ranks"));
        let e = Ring::new(4, 1002, true).unwrap_err();
        assert!(e.contains("1002 tokens do not split into 8 equal chunks") && e.contains("multiple of 8"), "{e}");
        assert!(Ring::new(4, 1002, false).unwrap_err().contains("multiple of 4"));
        let r = Ring::new(4, 1024, true).unwrap();
        assert_eq!((r.split, r.chunk_len(), r.chunks_of(1), r.chunk(6)), (Split::ZigZag, 128, vec![1, 6], 768..896));
    }

    #[test]
    fn the_ranks_rows_gather_and_scatter_back_to_the_whole() {
        // 2 rows (B·H) of 16 tokens, width 3; 2 ranks, zig-zag: rank 0 holds chunks 0 and 3, rank 1 chunks 1 and 2
        let r = Ring::new(2, 16, true).unwrap();
        let whole: Vec<usize> = (0..2 * 16 * 3).collect();
        let local = r.gather(0, &whole, 2, 3);
        let tokens = |row: usize, range: Range<usize>| whole[(row * 16 + range.start) * 3..(row * 16 + range.end) * 3].to_vec();
        assert_eq!(local, [tokens(0, 0..4), tokens(0, 12..16), tokens(1, 0..4), tokens(1, 12..16)].concat());
        let mut back = vec![0; whole.len()];
        for rank in 0..2 {
            r.scatter(rank, &r.gather(rank, &whole, 2, 3), &mut back, 2, 3);
        }
        assert_eq!(back, whole);
    }

    /// Every step's blocks are exactly one call's: the (query chunk, key chunk) pairs the call's rectangle
    /// and mask reach, with the same masks, for P = 1-8, causal or not.
    #[test]
    fn the_steps_blocks_are_one_call() {
        for ranks in 1..=8 {
            for causal in [false, true] {
                let r = Ring::new(ranks, 2 * ranks * 8, causal).unwrap();
                let len = r.chunk_len();
                for rank in 0..ranks {
                    for step in 0..ranks {
                        let call = r.step_call(rank, step);
                        // (a causal call is square from token 0 of both: the kernels' two alignments agree on it)
                        assert!(!call.causal || (call.q == call.kv && call.q.start == 0), "{call:?}");
                        // (the first step reaches every query and key token: it writes the accumulators)
                        let t = len * r.chunks_of(rank).len();
                        assert!(step > 0 || (call.q == (0..t) && call.kv == (0..t)), "{call:?}");
                        let (mine, theirs) = (r.chunks_of(rank), r.chunks_of(r.source(rank, step)));
                        let mut covered = Vec::new();
                        for (i, &qc) in mine.iter().enumerate().filter(|(i, _)| call.q.contains(&(i * len))) {
                            for (j, &kc) in theirs.iter().enumerate().filter(|(j, _)| call.kv.contains(&(j * len))) {
                                // the call's local causal mask on these chunks: full below its diagonal, the diagonal, nothing above
                                let (qi, kj) = (i - call.q.start / len, j - call.kv.start / len);
                                let mask = match (call.causal, kj.cmp(&qi)) {
                                    (false, _) | (true, std::cmp::Ordering::Less) => Mask::Full,
                                    (true, std::cmp::Ordering::Equal) => Mask::Diagonal,
                                    (true, std::cmp::Ordering::Greater) => continue,
                                };
                                covered.push(Block { q: qc, kv: kc, mask });
                            }
                        }
                        let mut blocks = r.blocks(rank, step);
                        blocks.sort_by_key(|b| (b.q, b.kv));
                        covered.sort_by_key(|b| (b.q, b.kv));
                        assert_eq!(covered, blocks, "P={ranks} causal={causal} rank {rank} step {step}: {call:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn kv_slices_travel_to_the_right() {
        let r = Ring::new(4, 64, false).unwrap();
        // rank 2 holds its own slice, then rank 1's, 0's, 3's
        assert_eq!((0..4).map(|s| r.source(2, s)).collect::<Vec<_>>(), vec![2, 1, 0, 3]);
        // what rank r holds at step s + 1 is what rank r − 1 held at step s
        for s in 0..3 {
            for rank in 0..4 {
                assert_eq!(r.source(rank, s + 1), r.source((rank + 3) % 4, s));
            }
        }
    }
}
