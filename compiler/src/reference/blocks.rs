//! Which blocks a tile visits and which of them need the mask: pure integer functions the kernels' host
//! code (grid sizes, split-KV boundaries) and the CPU tiled algorithms share, tested exhaustively against
//! the dense mask.
//!
//! The causal mask and the window make the visible part of a sequence's score matrix a band: query i sees
//! key j iff lo ≤ j − i ≤ hi (and both are in range). Each row's keys are one interval that slides right by
//! one key per row, so the keys a tile of rows sees are one interval too (the first row's start to the last
//! row's end), and so are the keys every row of the tile sees (the last row's start to the first row's end).
//! Block ranges follow from these two intervals; the blocks skipped are exactly the fully masked ones.

use std::ops::Range;

/// The visible part of one sequence's score matrix under the causal mask and the window: query i
/// (0 ≤ i < rows) sees key j (0 ≤ j < cols) iff lo ≤ j − i ≤ hi, each bound optional (None: unbounded).
/// Build it with [`super::Mask::band`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Band {
    pub rows: usize,
    pub cols: usize,
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

impl Band {
    pub fn contains(&self, i: usize, j: usize) -> bool {
        let delta = j as i64 - i as i64;
        i < self.rows && j < self.cols && self.lo.is_none_or(|lo| delta >= lo) && self.hi.is_none_or(|hi| delta <= hi)
    }

    /// The columns [first, last] (inclusive, may be empty: first > last) that row i's interval covers,
    /// clipped to the matrix, in i64 so an empty or negative interval needs no special case.
    fn cols_of(&self, i: i64) -> (i64, i64) {
        let first = self.lo.map_or(0, |lo| (i + lo).max(0));
        let last = self.hi.map_or(self.cols as i64 - 1, |hi| (i + hi).min(self.cols as i64 - 1));
        (first, last)
    }

    /// The keys row i sees (empty if none, or if i is not a row).
    pub fn keys_of(&self, i: usize) -> Range<usize> {
        if i >= self.rows {
            return 0..0;
        }
        let (first, last) = self.cols_of(i as i64);
        if first > last {
            0..0
        } else {
            first as usize..last as usize + 1
        }
    }

    /// The same band seen from the keys: row j of the transpose lists the queries that see key j. The
    /// backward's dK/dV programs walk it (outer loop over key blocks, inner over query blocks).
    pub fn transpose(&self) -> Band {
        Band { rows: self.cols, cols: self.rows, lo: self.hi.map(|h| -h), hi: self.lo.map(|l| -l) }
    }

    /// The column blocks (of `block_cols` columns) that row tile `tile` (rows tile·tile_rows ..
    /// (tile+1)·tile_rows, clipped to the matrix) visits, split by whether they need the mask. Rows past
    /// the matrix (the last tile's padding) are ignored: their results are never stored. Columns past it
    /// are not: a block holding any must be masked (it reads padding).
    pub fn blocks(&self, tile: usize, tile_rows: usize, block_cols: usize) -> Blocks {
        let none = Blocks { begin: 0, full_begin: 0, full_end: 0, end: 0 };
        let (r0, bn) = (tile as i64 * tile_rows as i64, block_cols as i64);
        if tile_rows == 0 || block_cols == 0 || r0 >= self.rows as i64 || self.cols == 0 {
            return none;
        }
        if let (Some(lo), Some(hi)) = (self.lo, self.hi) {
            if lo > hi {
                return none;
            }
        }
        let r1 = (r0 + tile_rows as i64).min(self.rows as i64) - 1;
        // keys some row of the tile sees: the first row's start to the last row's end
        let (first, _) = self.cols_of(r0);
        let (_, last) = self.cols_of(r1);
        if first > last {
            return none;
        }
        let (begin, end) = (first.div_euclid(bn), (last + bn).div_euclid(bn));
        // keys every row of the tile sees: the last row's start to the first row's end; a block is unmasked
        // when all of its block_cols columns (past the matrix or not) lie in it
        let (all_first, _) = self.cols_of(r1);
        let (_, all_last) = self.cols_of(r0);
        let (full_begin, full_end) = ((all_first + bn - 1).div_euclid(bn), (all_last + 1).div_euclid(bn));
        let (full_begin, full_end) = if full_begin < full_end { (full_begin, full_end) } else { (begin, begin) };
        Blocks { begin: begin as usize, full_begin: full_begin as usize, full_end: full_end as usize, end: end as usize }
    }
}

/// The column blocks one tile visits, in index order: [begin, full_begin) need the mask (the window's
/// left edge), [full_begin, full_end) do not, [full_end, end) need it (the causal diagonal, the window's
/// right edge, the ragged last block). Blocks outside [begin, end) hold no visible pair and are never
/// visited; begin == end means the tile sees nothing (its rows write O = 0 and LSE = −∞).
/// With no unmasked block, full_begin = full_end = begin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Blocks {
    pub begin: usize,
    pub full_begin: usize,
    pub full_end: usize,
    pub end: usize,
}

impl Blocks {
    pub fn is_empty(&self) -> bool {
        self.begin == self.end
    }
    pub fn visited(&self) -> Range<usize> {
        self.begin..self.end
    }
    pub fn needs_mask(&self, block: usize) -> bool {
        !(self.full_begin..self.full_end).contains(&block)
    }
}

/// The key blocks query tile `start_m` of one sequence visits (the forward and the dQ pass): the
/// function the kernels' host code and the CPU tiled algorithm share.
pub fn kv_blocks(start_m: usize, block_m: usize, block_n: usize, seqlen_q: usize, seqlen_k: usize, mask: &super::Mask) -> Blocks {
    mask.band(seqlen_q, seqlen_k).blocks(start_m, block_m, block_n)
}

/// The query blocks key tile `start_n` of one sequence visits (the backward's dK/dV pass).
pub fn q_blocks(start_n: usize, block_n: usize, block_m: usize, seqlen_q: usize, seqlen_k: usize, mask: &super::Mask) -> Blocks {
    mask.band(seqlen_q, seqlen_k).transpose().blocks(start_n, block_n, block_m)
}

/// The FA2 kernels' split today (equal lengths, no window): blocks [0, n_full) need no mask, [n_full,
/// n_total) are masked, nothing past n_total is visited. Causal (STAGE=3): n_full = the blocks wholly left
/// of the tile's first row (inner stage 1), then up to the block holding the last row's diagonal (inner
/// stage 2). Non-causal (STAGE=1): the full blocks (inner stage 3), then the ragged edge block.
/// [`kv_blocks`] agrees with it (n_full = full_end, n_total = end) whenever block_n does not divide
/// start_m·block_m + 1, that is for every pair of even block sizes.
pub fn block_range(n_ctx: usize, block_m: usize, block_n: usize, start_m: usize, causal: bool) -> (usize, usize) {
    if causal {
        let row0 = start_m * block_m;
        let row_end = (row0 + block_m).min(n_ctx);
        (row0 / block_n, row_end.div_ceil(block_n))
    } else {
        (n_ctx / block_n, n_ctx.div_ceil(block_n))
    }
}
