//! Decoding against a KV cache (FlashAttention's `flash_attn_with_kvcache`): per sequence b, N_q new
//! queries attend to the L_b = cache_seqlens[b] + N_new keys made of the cache's first cache_seqlens[b]
//! tokens followed by the N_new new ones, appended to the cache in the same call. The cache is contiguous
//! or paged (a block table into a pool of pages, in any order). Every [`ScoreRules`] applies, with the
//! sequence's lengths N_q and L_b: causal is bottom-right by default, so query i sees keys
//! j ≤ i + L_b − N_q (the new tokens causally among themselves, every cached one).
//!
//! Tensors (FlashAttention's layouts, contiguous): Q [B, N_q, H, D_qk]; O [B, N_q, H, D_v]; LSE and M
//! [B, H, N_q]; K_new [B, N_new, H_kv, D_qk], V_new [B, N_new, H_kv, D_v]; the K and V caches
//! [B, capacity, H_kv, D] (contiguous) or page pools [pages, page_size, H_kv, D] (paged).

use std::ops::Range;

use super::combine::split_keys;
use super::forward::{row_softmax, weighted_values};
use super::problem::{Layout, QueryRow, RowAt, RowRules, ScoreRules};
use super::{Attention, RCP_LN2};

/// Where the cache's tokens live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheStorage {
    /// K and V caches [B, capacity, H_kv, D]: token t of sequence b at (b, t).
    Contiguous { capacity: usize },
    /// K and V page pools [pages, page_size, H_kv, D]: token t of sequence b lives in page
    /// block_table[b · max_pages + t / page_size], slot t mod page_size (the table is [B, max_pages]).
    /// page_size is a multiple of 16; pages come in any order; only the entries covering a sequence's
    /// L_b tokens are read.
    Paged { page_size: usize, pages: usize, max_pages: usize, block_table: Vec<usize> },
}

/// One decoding step: the geometry, the cache, and the score rules.
#[derive(Clone, Debug)]
pub struct KvCacheProblem {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub d_qk: usize,
    pub d_v: usize,
    /// New queries per sequence.
    pub n_q: usize,
    /// Tokens in each sequence's cache before this call.
    pub cache_seqlens: Vec<usize>,
    /// New K/V tokens per sequence, appended after cache_seqlens[b] (0: nothing appended).
    pub n_new: usize,
    pub storage: CacheStorage,
    pub rules: ScoreRules,
}

/// The tensors of a decoding step, f32, in the module's layouts. `k_new` and `v_new` may be empty when
/// N_new = 0.
#[derive(Clone, Copy, Debug)]
pub struct KvCacheInputs<'a> {
    pub q: &'a [f32],
    pub k_cache: &'a [f32],
    pub v_cache: &'a [f32],
    pub k_new: &'a [f32],
    pub v_new: &'a [f32],
}

impl KvCacheProblem {
    /// MHA, head dim D, contiguous caches of `capacity` tokens, `n_q` queries and no new K/V per
    /// sequence, sm_scale = 1/√D, causal (bottom-right).
    pub fn new(cache_seqlens: Vec<usize>, heads: usize, d: usize, n_q: usize, capacity: usize) -> KvCacheProblem {
        let mut rules = ScoreRules::new(1.0 / (d.max(1) as f64).sqrt());
        rules.mask.causal = true;
        KvCacheProblem { batch: cache_seqlens.len(), heads, kv_heads: heads, d_qk: d, d_v: d, n_q, cache_seqlens, n_new: 0, storage: CacheStorage::Contiguous { capacity }, rules }
    }

    /// L_b: the keys sequence b attends to.
    pub fn seqlen_k(&self, b: usize) -> usize {
        self.cache_seqlens[b] + self.n_new
    }

    pub fn group(&self) -> usize {
        self.heads / self.kv_heads.max(1)
    }

    fn q_layout(&self) -> Layout {
        Layout::bshd(self.heads, self.n_q, self.d_qk)
    }
    fn o_layout(&self) -> Layout {
        Layout::bshd(self.heads, self.n_q, self.d_v)
    }
    fn lse_layout(&self) -> Layout {
        Layout::bhsd(self.heads, self.n_q, 1)
    }

    /// Where row `r`'s Q row, O row and LSE value are.
    pub fn q_offset(&self, r: QueryRow) -> usize {
        self.q_layout().offset(r.b, r.h, r.i)
    }
    pub fn o_offset(&self, r: QueryRow) -> usize {
        self.o_layout().offset(r.b, r.h, r.i)
    }
    pub fn lse_offset(&self, r: QueryRow) -> usize {
        self.lse_layout().offset(r.b, r.h, r.i)
    }

    /// Where token t (0 ≤ t < the cache's size for b) of K/V head `kv_head` of sequence b lives in a
    /// cache whose rows have `d` elements (D_qk for K, D_v for V).
    pub fn cache_offset(&self, b: usize, kv_head: usize, t: usize, d: usize) -> usize {
        match &self.storage {
            CacheStorage::Contiguous { capacity } => Layout::bshd(self.kv_heads, *capacity, d).offset(b, kv_head, t),
            CacheStorage::Paged { page_size, max_pages, block_table, .. } => {
                let page = block_table[b * max_pages + t / page_size];
                Layout::bshd(self.kv_heads, *page_size, d).offset(page, kv_head, t % page_size)
            }
        }
    }

    /// Where new token t of K/V head `kv_head` of sequence b lives in K_new/V_new (rows of `d`).
    pub fn new_offset(&self, b: usize, kv_head: usize, t: usize, d: usize) -> usize {
        Layout::bshd(self.kv_heads, self.n_new, d).offset(b, kv_head, t)
    }

    /// Key (or value) t of sequence b's L_b: from the cache below cache_seqlens[b], from the new tensors
    /// above (rows of `d`).
    fn token<'a>(&self, b: usize, kv_head: usize, t: usize, cache: &'a [f32], new: &'a [f32], d: usize) -> &'a [f32] {
        let cached = self.cache_seqlens[b];
        if t < cached {
            &cache[self.cache_offset(b, kv_head, t, d)..][..d]
        } else {
            &new[self.new_offset(b, kv_head, t - cached, d)..][..d]
        }
    }

    /// Elements of the Q, O, LSE, K_new, V_new and cache buffers.
    pub fn q_len(&self) -> usize {
        self.batch * self.n_q * self.heads * self.d_qk
    }
    pub fn o_len(&self) -> usize {
        self.batch * self.n_q * self.heads * self.d_v
    }
    pub fn lse_len(&self) -> usize {
        self.batch * self.heads * self.n_q
    }
    pub fn new_len(&self, d: usize) -> usize {
        self.batch * self.n_new * self.kv_heads * d
    }
    pub fn cache_len(&self, d: usize) -> usize {
        let tokens = match &self.storage {
            CacheStorage::Contiguous { capacity } => self.batch * capacity,
            CacheStorage::Paged { page_size, pages, .. } => pages * page_size,
        };
        tokens * self.kv_heads * d
    }

    /// Every query row, sequence by sequence, head by head.
    pub fn rows(&self) -> impl Iterator<Item = QueryRow> + '_ {
        (0..self.batch).flat_map(move |b| (0..self.heads).flat_map(move |h| (0..self.n_q).map(move |i| QueryRow { b, h, i })))
    }

    pub fn row_rules(&self, r: QueryRow) -> RowRules<'_> {
        self.rules.row(RowAt { b: r.b, h: r.h, i: r.i, n_q: self.n_q, n_kv: self.seqlen_k(r.b), heads: self.heads })
    }

    /// What must hold: heads divisible; every sequence's L_b tokens within its cache (the capacity, or
    /// the pages its table row gives); table entries that are read inside the pool; pages of a multiple
    /// of 16 tokens; buffers large enough.
    pub fn validate(&self, x: Option<&KvCacheInputs<'_>>) -> Result<(), String> {
        if self.kv_heads == 0 || !self.heads.is_multiple_of(self.kv_heads) {
            return Err(format!("H = {} is not a multiple of H_kv = {}", self.heads, self.kv_heads));
        }
        if self.cache_seqlens.len() != self.batch {
            return Err(format!("{} cache lengths for batch {}", self.cache_seqlens.len(), self.batch));
        }
        for b in 0..self.batch {
            let len = self.seqlen_k(b);
            match &self.storage {
                CacheStorage::Contiguous { capacity } if len > *capacity => {
                    return Err(format!("sequence {b}: {} cached + {} new tokens exceed the cache's {capacity}", self.cache_seqlens[b], self.n_new));
                }
                CacheStorage::Contiguous { .. } => {}
                CacheStorage::Paged { page_size, pages, max_pages, block_table } => {
                    if *page_size == 0 || page_size % 16 != 0 {
                        return Err(format!("page size {page_size} is not a positive multiple of 16"));
                    }
                    if block_table.len() < self.batch * max_pages {
                        return Err(format!("block table has {} entries for [{}, {max_pages}]", block_table.len(), self.batch));
                    }
                    if len > max_pages * page_size {
                        return Err(format!("sequence {b}: {len} tokens exceed its {max_pages} pages of {page_size}"));
                    }
                    if let Some(&bad) = block_table[b * max_pages..b * max_pages + len.div_ceil(*page_size)].iter().find(|&&pg| pg >= *pages) {
                        return Err(format!("sequence {b}: block table entry {bad} outside the pool of {pages} pages"));
                    }
                }
            }
        }
        if let Some(x) = x {
            let want = [("Q", x.q.len(), self.q_len()), ("K cache", x.k_cache.len(), self.cache_len(self.d_qk)), ("V cache", x.v_cache.len(), self.cache_len(self.d_v)), ("K_new", x.k_new.len(), self.new_len(self.d_qk)), ("V_new", x.v_new.len(), self.new_len(self.d_v))];
            for (name, have, need) in want {
                if have < need {
                    return Err(format!("{name} has {have} elements, needs {need}"));
                }
            }
        }
        Ok(())
    }
}

/// Append the new K/V of every sequence into the caches after its cache_seqlens[b] tokens (what the
/// kernel's in-call append must leave in the caches; nothing else changes).
///
/// # Panics
/// If the problem fails [`KvCacheProblem::validate`].
pub fn append_kv(p: &KvCacheProblem, k_cache: &mut [f32], v_cache: &mut [f32], k_new: &[f32], v_new: &[f32]) {
    let x = KvCacheInputs { q: &[], k_cache, v_cache, k_new, v_new };
    if let Err(e) = p.validate(None).and_then(|_| KvCacheProblem { n_q: 0, ..p.clone() }.validate(Some(&x))) {
        panic!("append_kv: {e}");
    }
    for b in 0..p.batch {
        for kv_head in 0..p.kv_heads {
            for t in 0..p.n_new {
                let pos = p.cache_seqlens[b] + t;
                let (to, from) = (p.cache_offset(b, kv_head, pos, p.d_qk), p.new_offset(b, kv_head, t, p.d_qk));
                k_cache[to..to + p.d_qk].copy_from_slice(&k_new[from..from + p.d_qk]);
                let (to, from) = (p.cache_offset(b, kv_head, pos, p.d_v), p.new_offset(b, kv_head, t, p.d_v));
                v_cache[to..to + p.d_v].copy_from_slice(&v_new[from..from + p.d_v]);
            }
        }
    }
}

/// One query row of [`decode`] over the keys `split` (None: all): O's row into `o_row`, the row's LSE
/// (natural log) returned; O = 0 and LSE = −∞ for a row that sees no key.
pub fn decode_row(p: &KvCacheProblem, x: &KvCacheInputs<'_>, row: QueryRow, split: Option<Range<usize>>, o_row: &mut [f64]) -> f64 {
    let rules = p.row_rules(row);
    let kv_head = row.h / p.group().max(1);
    let q = &x.q[p.q_offset(row)..][..p.d_qk];
    let mut keys = rules.keys();
    if let Some(s) = split {
        keys = keys.start.max(s.start)..keys.end.min(s.end);
    }
    let sm = row_softmax(&rules, q, keys, |t| p.token(row.b, kv_head, t, x.k_cache, x.k_new, p.d_qk), false);
    weighted_values(&sm, |t| p.token(row.b, kv_head, t, x.v_cache, x.v_new, p.d_v), o_row);
    sm.lse
}

/// The decoding step's attention in f64: O [B, N_q, H, D_v], LSE (natural) and M (base 2) [B, H, N_q].
/// It reads new tokens from K_new/V_new, so it does not need the caches appended first (append them with
/// [`append_kv`] to get the caches the kernel must leave).
///
/// # Panics
/// If the problem or the buffers fail [`KvCacheProblem::validate`].
pub fn decode(p: &KvCacheProblem, x: &KvCacheInputs<'_>) -> Attention<f64> {
    decode_keys(p, x, |_| None)
}

/// The split-KV partials of [`decode`]: split s covers keys [`split_keys`](super::split_keys)(L_b,
/// block_n, num_splits, s) of each sequence. Merged by [`combine`](super::combine) they equal [`decode`].
pub fn decode_splits(p: &KvCacheProblem, x: &KvCacheInputs<'_>, num_splits: usize, block_n: usize) -> Vec<Attention<f64>> {
    (0..num_splits).map(|s| decode_keys(p, x, |b| Some(split_keys(p.seqlen_k(b), block_n, num_splits, s)))).collect()
}

fn decode_keys(p: &KvCacheProblem, x: &KvCacheInputs<'_>, split: impl Fn(usize) -> Option<Range<usize>>) -> Attention<f64> {
    if let Err(e) = p.validate(Some(x)) {
        panic!("reference decode: {e}");
    }
    let mut o = vec![0f64; p.o_len()];
    let mut lse = vec![0f64; p.lse_len()];
    for row in p.rows() {
        let at = p.o_offset(row);
        lse[p.lse_offset(row)] = decode_row(p, x, row, split(row.b), &mut o[at..at + p.d_v]);
    }
    let m = lse.iter().map(|x| x * RCP_LN2).collect();
    Attention { o, lse, m }
}
