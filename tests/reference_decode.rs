//! Decoding against a KV cache: paged equals contiguous (pages permuted, lengths 0 and not multiples of
//! the page, unused slots and table entries poisoned), appending then attending equals attending over the
//! concatenation (and equals the general forward on packed lengths), the split-KV partials merged by LSE
//! equal one pass (f64 partials, and f32 partials in base 2 as kernels write them), and bad caches are
//! refused.

use flashgen::reference::{
    append_kv, combine, decode, decode_splits, forward, forward_splits, relative_error, relative_error_lse, split_keys, Alibi, Attention, CacheStorage, KvCacheInputs, KvCacheProblem, LogBase, Partial, Qkv, QueryRow, RefProblem, SplitMix, TensorOrder, Window,
};

const PAGE: usize = 16;

/// A decode problem with contiguous caches of `capacity`, and its tensors: valid cache tokens random,
/// every other cache slot NaN (a reference that read one would return NaN).
struct Case {
    p: KvCacheProblem,
    q: Vec<f32>,
    k_cache: Vec<f32>,
    v_cache: Vec<f32>,
    k_new: Vec<f32>,
    v_new: Vec<f32>,
}

impl Case {
    fn new(rng: &mut SplitMix, p: KvCacheProblem) -> Case {
        let mut k_cache = vec![f32::NAN; p.cache_len(p.d_qk)];
        let mut v_cache = vec![f32::NAN; p.cache_len(p.d_v)];
        for b in 0..p.batch {
            for hk in 0..p.kv_heads {
                for t in 0..p.cache_seqlens[b] {
                    let at = p.cache_offset(b, hk, t, p.d_qk);
                    k_cache[at..at + p.d_qk].copy_from_slice(&rng.vec(p.d_qk));
                    let at = p.cache_offset(b, hk, t, p.d_v);
                    v_cache[at..at + p.d_v].copy_from_slice(&rng.vec(p.d_v));
                }
            }
        }
        let (q, k_new, v_new) = (rng.vec(p.q_len()), rng.vec(p.new_len(p.d_qk)), rng.vec(p.new_len(p.d_v)));
        Case { p, q, k_cache, v_cache, k_new, v_new }
    }

    fn inputs(&self) -> KvCacheInputs<'_> {
        KvCacheInputs { q: &self.q, k_cache: &self.k_cache, v_cache: &self.v_cache, k_new: &self.k_new, v_new: &self.v_new }
    }

    /// The same step on a paged cache: each sequence's pages drawn in a shuffled order from a pool with
    /// two spare pages; unused slots and spare pages NaN; table entries past a sequence's L_b out of the pool.
    fn paged(&self, rng: &mut SplitMix) -> Case {
        let p = &self.p;
        let max_pages = match p.storage {
            CacheStorage::Contiguous { capacity } => capacity.div_ceil(PAGE),
            CacheStorage::Paged { .. } => unreachable!(),
        };
        let pages = p.batch * max_pages + 2;
        let mut order: Vec<usize> = (0..pages).collect();
        for i in (1..pages).rev() {
            order.swap(i, rng.next_u64() as usize % (i + 1));
        }
        let mut block_table = vec![usize::MAX / 2; p.batch * max_pages];
        let mut next = order.into_iter();
        for b in 0..p.batch {
            for pg in 0..p.seqlen_k(b).div_ceil(PAGE) {
                block_table[b * max_pages + pg] = next.next().unwrap();
            }
        }
        let paged = KvCacheProblem { storage: CacheStorage::Paged { page_size: PAGE, pages, max_pages, block_table }, ..p.clone() };
        let mut k_cache = vec![f32::NAN; paged.cache_len(p.d_qk)];
        let mut v_cache = vec![f32::NAN; paged.cache_len(p.d_v)];
        for b in 0..p.batch {
            for hk in 0..p.kv_heads {
                for t in 0..p.cache_seqlens[b] {
                    let (from, to) = (p.cache_offset(b, hk, t, p.d_qk), paged.cache_offset(b, hk, t, p.d_qk));
                    k_cache[to..to + p.d_qk].copy_from_slice(&self.k_cache[from..from + p.d_qk]);
                    let (from, to) = (p.cache_offset(b, hk, t, p.d_v), paged.cache_offset(b, hk, t, p.d_v));
                    v_cache[to..to + p.d_v].copy_from_slice(&self.v_cache[from..from + p.d_v]);
                }
            }
        }
        Case { p: paged, q: self.q.clone(), k_cache, v_cache, k_new: self.k_new.clone(), v_new: self.v_new.clone() }
    }

    /// The caches after the step's append, and the step that attends to them with nothing new.
    fn appended(&self) -> Case {
        let (mut k_cache, mut v_cache) = (self.k_cache.clone(), self.v_cache.clone());
        append_kv(&self.p, &mut k_cache, &mut v_cache, &self.k_new, &self.v_new);
        let cache_seqlens = (0..self.p.batch).map(|b| self.p.seqlen_k(b)).collect();
        let p = KvCacheProblem { cache_seqlens, n_new: 0, ..self.p.clone() };
        Case { p, q: self.q.clone(), k_cache, v_cache, k_new: Vec::new(), v_new: Vec::new() }
    }
}

/// GQA, lengths 0 and not multiples of the page, several new queries (and new K/V when n_new > 0).
fn problem(n_q: usize, n_new: usize) -> KvCacheProblem {
    let mut p = KvCacheProblem::new(vec![0, 17, 40, 33, 1], 4, 8, n_q, 48);
    p.kv_heads = 2;
    p.d_v = 6;
    p.n_new = n_new;
    p
}

/// Variants of the rules: causal (the default), non-causal, and causal with a window, softcap and ALiBi.
fn with_rules(mut p: KvCacheProblem, variant: usize) -> KvCacheProblem {
    match variant {
        0 => {}
        1 => p.rules.mask.causal = false,
        _ => {
            p.rules.mask.window = Window { left: Some(20), right: None };
            p.rules.softcap = Some(2.0);
            p.rules.alibi = Some(Alibi::standard(p.heads));
        }
    }
    p
}

#[test]
fn paged_equals_contiguous() {
    let mut rng = SplitMix(31);
    for (n_q, n_new) in [(1, 0), (3, 0), (2, 2), (4, 7)] {
        for variant in 0..3 {
            let c = Case::new(&mut rng, with_rules(problem(n_q, n_new), variant));
            let paged = c.paged(&mut rng);
            let (a, b) = (decode(&c.p, &c.inputs()), decode(&paged.p, &paged.inputs()));
            assert_eq!((&a.o, &a.lse), (&b.o, &b.lse), "N_q={n_q} N_new={n_new} variant {variant}");
            assert!(a.o.iter().all(|v| v.is_finite()), "no NaN slot was read");
            // and after the append, in both storages
            let (ca, pa) = (c.appended(), paged.appended());
            let (a2, b2) = (decode(&ca.p, &ca.inputs()), decode(&pa.p, &pa.inputs()));
            assert_eq!((&a2.o, &a2.lse), (&b2.o, &b2.lse));
        }
    }
}

/// Attending to the cache plus the new tokens (read from K_new/V_new) = appending them and attending to
/// the cache = the general forward on packed sequences whose keys are the concatenation; the append
/// writes exactly the new slots.
#[test]
fn append_then_attend_equals_attending_over_the_concatenation() {
    let mut rng = SplitMix(32);
    for (n_q, n_new) in [(1, 1), (3, 3), (2, 5), (5, 2)] {
        for variant in 0..3 {
            let c = Case::new(&mut rng, with_rules(problem(n_q, n_new), variant));
            let p = &c.p;
            let direct = decode(p, &c.inputs());
            let appended = c.appended();
            let after = decode(&appended.p, &appended.inputs());
            assert_eq!((&direct.o, &direct.lse), (&after.o, &after.lse), "N_q={n_q} N_new={n_new} variant {variant}");
            // the append wrote the new tokens where they belong and nothing else
            for b in 0..p.batch {
                for hk in 0..p.kv_heads {
                    for t in 0..p.n_new {
                        let (to, from) = (p.cache_offset(b, hk, p.cache_seqlens[b] + t, p.d_qk), p.new_offset(b, hk, t, p.d_qk));
                        assert_eq!(appended.k_cache[to..to + p.d_qk], c.k_new[from..from + p.d_qk]);
                    }
                }
            }
            let changed = c.k_cache.iter().zip(&appended.k_cache).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            assert_eq!(changed, p.batch * p.kv_heads * p.n_new * p.d_qk);
            // the general forward: Q [B, N_q, H, D] is the packed [B·N_q, H, D]; K/V packed per sequence
            let lens_k: Vec<usize> = (0..p.batch).map(|b| p.seqlen_k(b)).collect();
            let general = RefProblem::new(0, p.heads, 0, p.d_qk).kv_heads(p.kv_heads).head_dims(p.d_qk, p.d_v).varlen_from_lengths(&vec![n_q; p.batch], &lens_k).order(TensorOrder::Bshd);
            let general = RefProblem { rules: p.rules.clone(), ..general };
            let ap = &appended.p;
            let gather = |cache: &[f32], d: usize| -> Vec<f32> {
                let mut out = Vec::new();
                for (b, &len) in lens_k.iter().enumerate() {
                    for t in 0..len {
                        for hk in 0..p.kv_heads {
                            out.extend_from_slice(&cache[ap.cache_offset(b, hk, t, d)..][..d]);
                        }
                    }
                }
                out
            };
            let (k, v) = (gather(&appended.k_cache, p.d_qk), gather(&appended.v_cache, p.d_v));
            let g = forward(&general, &Qkv { q: &c.q, k: &k, v: &v });
            assert_eq!(g.o, direct.o);
            let l = general.layouts();
            for r in p.rows() {
                assert_eq!(g.lse[general.lse_offset(&l, r)], direct.lse[p.lse_offset(r)], "{r:?}");
            }
        }
    }
}

/// The combine's inputs for a decode problem: each row's (O offset, LSE offset).
fn rows(p: &KvCacheProblem) -> Vec<(usize, usize)> {
    p.rows().map(|r| (p.o_offset(r), p.lse_offset(r))).collect()
}

/// Split-KV partials merged by their LSEs equal one pass: any number of splits (more than blocks too),
/// f64 partials exactly, f32 partials in base 2 to f32 precision; rows seeing nothing stay O = 0,
/// LSE = −∞. The same for the general forward's splits.
#[test]
fn split_kv_combine_equals_one_pass() {
    let mut rng = SplitMix(33);
    let c = Case::new(&mut rng, with_rules(problem(2, 1), 2));
    let mut blind_case = Case::new(&mut rng, problem(3, 0));
    blind_case.p.rules.mask.causal = true; // sequence 0 has no key at all, sequence 4 one key for row 2
    for case in [&c, &blind_case] {
        let one = decode(&case.p, &case.inputs());
        for num_splits in [1, 2, 3, 7] {
            let parts = decode_splits(&case.p, &case.inputs(), num_splits, 16);
            let f64_parts: Vec<Partial<'_, f64>> = parts.iter().map(|a| Partial { o: &a.o, lse: &a.lse }).collect();
            let merged = combine(&f64_parts, rows(&case.p), case.p.d_v, LogBase::Natural);
            assert!(relative_error(&merged.o, &one.o) < 1e-14 && relative_error_lse(&merged.lse, &one.lse) < 1e-14, "{num_splits} splits");
            assert!(one.lse.iter().zip(&merged.lse).all(|(a, b)| a.is_finite() == b.is_finite()));
            // as a kernel writes them: f32 O and base-2 M
            let rounded: Vec<(Vec<f32>, Vec<f32>)> = parts.iter().map(|a| (a.o.iter().map(|&v| v as f32).collect(), a.m.iter().map(|&v| v as f32).collect())).collect();
            let f32_parts: Vec<Partial<'_, f32>> = rounded.iter().map(|(o, m)| Partial { o, lse: m }).collect();
            let merged = combine(&f32_parts, rows(&case.p), case.p.d_v, LogBase::Two);
            assert!(relative_error(&merged.o, &one.o) < 1e-6 && relative_error_lse(&merged.m, &one.m) < 1e-6, "{num_splits} f32 splits");
        }
    }
    let blind = decode(&blind_case.p, &blind_case.inputs());
    let r0 = QueryRow { b: 0, h: 0, i: 0 };
    assert_eq!(blind.lse[blind_case.p.lse_offset(r0)], f64::NEG_INFINITY);
    assert!(blind.lse[blind_case.p.lse_offset(QueryRow { b: 4, h: 0, i: 2 })].is_finite());
    assert_eq!(blind.lse[blind_case.p.lse_offset(QueryRow { b: 4, h: 0, i: 1 })], f64::NEG_INFINITY);

    // the general forward's splits (varlen, GQA, causal bottom-right with unequal lengths)
    let p = RefProblem::new(0, 4, 0, 8).kv_heads(2).varlen_from_lengths(&[3, 0, 5, 2], &[40, 7, 0, 70]).causal(true);
    let x = [rng.vec(p.q_len()), rng.vec(p.k_len()), rng.vec(p.v_len())];
    let qkv = Qkv { q: &x[0], k: &x[1], v: &x[2] };
    let one: Attention<f64> = forward(&p, &qkv);
    let l = p.layouts();
    let row_offsets: Vec<(usize, usize)> = p.rows().map(|r| (p.o_offset(&l, r), p.lse_offset(&l, r))).collect();
    for num_splits in [2, 5] {
        let parts = forward_splits(&p, &qkv, num_splits, 16);
        let f64_parts: Vec<Partial<'_, f64>> = parts.iter().map(|a| Partial { o: &a.o, lse: &a.lse }).collect();
        let merged = combine(&f64_parts, row_offsets.iter().copied(), p.d_v, LogBase::Natural);
        assert!(relative_error(&merged.o, &one.o) < 1e-14 && relative_error_lse(&merged.lse, &one.lse) < 1e-14);
    }
}

/// FlashAttention's split rule: ⌈blocks / splits⌉ blocks per split, the last splits possibly empty.
#[test]
fn split_keys_deal_blocks_in_runs() {
    assert_eq!((0..3).map(|s| split_keys(100, 16, 3, s)).collect::<Vec<_>>(), vec![0..48, 48..96, 96..100]);
    assert_eq!((0..4).map(|s| split_keys(33, 16, 4, s)).collect::<Vec<_>>(), vec![0..16, 16..32, 32..33, 33..33]);
    assert_eq!(split_keys(0, 16, 2, 1), 0..0);
    for n in 0..70 {
        for splits in 1..6 {
            let covered: Vec<usize> = (0..splits).flat_map(|s| split_keys(n, 16, splits, s)).collect();
            assert_eq!(covered, (0..n).collect::<Vec<_>>(), "N={n} splits={splits}");
        }
    }
}

#[test]
fn bad_caches_are_refused() {
    let mut rng = SplitMix(34);
    let c = Case::new(&mut rng, problem(1, 2));
    let paged = c.paged(&mut rng);
    assert!(paged.p.validate(Some(&paged.inputs())).is_ok());
    let with_storage = |f: &dyn Fn(&mut usize, &mut usize, &mut Vec<usize>)| {
        let mut p = paged.p.clone();
        if let CacheStorage::Paged { page_size, pages, block_table, .. } = &mut p.storage {
            f(page_size, pages, block_table);
        }
        p.validate(None)
    };
    assert!(with_storage(&|page_size, _, _| *page_size = 24).unwrap_err().contains("multiple of 16"));
    assert!(with_storage(&|_, pages, _| *pages = 1).unwrap_err().contains("outside the pool"));
    assert!(with_storage(&|_, _, table| table[0] = 10_000).unwrap_err().contains("outside the pool"));
    let mut long = c.p.clone();
    long.cache_seqlens[2] = 47; // + 2 new > 48
    assert!(long.validate(None).unwrap_err().contains("exceed"));
    let mut heads = c.p.clone();
    heads.kv_heads = 3;
    assert!(heads.validate(None).unwrap_err().contains("multiple"));
    assert!(c.p.validate(Some(&KvCacheInputs { q: &c.q[1..], ..c.inputs() })).unwrap_err().contains("Q has"));
}
