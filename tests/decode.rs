//! The KV-cache decode kernels (issue 33) on the CPU: their rules, every admitted spec through ptxas (no
//! spills, no local memory), a PTX snapshot, and the kernels themselves run on the SIMT emulator
//! (tests/simt) against flashgen::reference::decode — contiguous and paged caches, appends, causal new
//! queries, grouped heads, split-KV with the combine, row tiles, lying cache lengths and block tables.

#[path = "simt/mod.rs"]
mod simt;

use flashgen::abi::{self, ParamType};
use flashgen::numeric::SplitMix;
use flashgen::plan::SplitMerge;
use flashgen::reference::{self, CacheStorage, KvCacheInputs, KvCacheProblem};
use flashgen::{Arch, DType, KernelKind, KernelSpec, SpecParams};
use simt::{bits, bytes16, bytes32, f32s, u16s, value, Arg, Launch};
use std::collections::HashMap;

fn decode_spec(dtype: DType, d: u32, bm: u32, bn: u32, causal: bool, w: u32, ns: u32) -> KernelSpec {
    KernelSpec::new(SpecParams { kind: KernelKind::Decode, dtype, head_dim: d, block_m: bm, block_n: bn, stage: if causal { 3 } else { 1 }, num_warps: w, num_stages: ns, arch: Arch::Sm90a }).unwrap()
}


/// One emulated decode call: the problem, its inputs (f32, already rounded to the dtype), and how to run it.
struct Case {
    p: KvCacheProblem,
    dtype: DType,
    spec: KernelSpec,
    splits: usize,
    /// The cache lengths the kernel is given (a lying one differs from p.cache_seqlens) and the block table.
    device_lens: Vec<i32>,
    device_table: Vec<i32>,
}

/// Buffers in the kernel's order of use (indices into the emulator's buffers).
const Q: usize = 0;
const KC: usize = 1;
const VC: usize = 2;
const KN: usize = 3;
const VN: usize = 4;
const OUT: usize = 5;
const LSE: usize = 6;
const OP: usize = 7;
const LP: usize = 8;
const LENS: usize = 9;
const TABLE: usize = 10;
const COUNTERS: usize = 11;

struct Ran {
    o: Vec<f32>,
    lse: Vec<f32>,
    k_cache: Vec<f32>,
    v_cache: Vec<f32>,
    partial_lse: Vec<f32>,
    counters: Vec<u32>,
}

fn random(rng: &mut SplitMix, n: usize, dtype: DType) -> Vec<f32> {
    (0..n).map(|_| value(dtype, bits(dtype, rng.normal()))).collect()
}

/// The arguments of `entry`'s list from named values: tensors' strides by their [Z, H, N, D] views.
fn args_of(kind: KernelKind, named: &HashMap<&str, Arg>, strides: &HashMap<&str, [i64; 4]>) -> Vec<Arg> {
    abi::kernel_parameters(kind)
        .iter()
        .map(|p| match p.ty {
            ParamType::Stride { tensor, axis } => Arg::I64(strides[tensor][axis]),
            _ => *named.get(p.name).unwrap_or_else(|| panic!("no value for {}", p.name)),
        })
        .collect()
}

/// Run `c` on the emulator, a split call's partials merged as `merge` says (in the decode kernel through
/// SPLIT_COUNTERS, or by decode_combine).
fn run_case(tools: &simt::Tools, c: &Case, x: &KvCacheInputs<'_>, merge: SplitMerge) -> Ran {
    let p = &c.p;
    let (b, h, hkv, d, nq, nn) = (p.batch, p.heads, p.kv_heads, p.d_qk, p.n_q, p.n_new);
    let dt = c.dtype;
    let enc = |v: &[f32]| bytes16(&v.iter().map(|&x| bits(dt, x)).collect::<Vec<_>>());
    let rows = b * h * nq;
    let nan = match dt {
        DType::Bf16 => 0x7FC0u16,
        DType::F16 => 0x7E00,
    };
    let mut bufs = vec![
        enc(x.q),
        enc(x.k_cache),
        enc(x.v_cache),
        enc(x.k_new),
        enc(x.v_new),
        bytes16(&vec![nan; p.o_len()]),
        bytes32(&vec![f32::NAN; rows], f32::to_le_bytes),
        // the partials are as wide as the tiles (32 and 96 padded to 64 and 128)
        bytes32(&vec![f32::NAN; c.splits * rows * c.spec.params().tile_dim() as usize], f32::to_le_bytes),
        bytes32(&vec![f32::NAN; c.splits * rows], f32::to_le_bytes),
        c.device_lens.iter().flat_map(|v| v.to_le_bytes()).collect(),
        c.device_table.iter().flat_map(|v| v.to_le_bytes()).collect(),
        // the split counters, zero before the call
        vec![0u8; 4 * b * hkv * (p.group() * nq).div_ceil(c.spec.block_m() as usize).max(1)],
    ];
    let in_kernel = c.splits > 1 && merge == SplitMerge::InKernel;
    let (capacity, page_size, max_pages, pool) = match &p.storage {
        CacheStorage::Contiguous { capacity } => (*capacity, 0, 0, 0),
        CacheStorage::Paged { page_size, pages, max_pages, .. } => (max_pages * page_size, *page_size, *max_pages, *pages),
    };
    let cache_rows = if page_size > 0 { page_size } else { capacity };
    let bshd = |heads: usize, n: usize| [(n * heads * d) as i64, d as i64, (heads * d) as i64, 1];
    let strides: HashMap<&str, [i64; 4]> =
        [("Q", bshd(h, nq)), ("Out", bshd(h, nq)), ("K_CACHE", bshd(hkv, cache_rows)), ("V_CACHE", bshd(hkv, cache_rows)), ("K_NEW", bshd(hkv, nn)), ("V_NEW", bshd(hkv, nn))].into_iter().collect();
    // the caches' tensor maps as the runtime builds them (tma::decode_maps; kernels without TMA ignore them):
    // [B or pages, H_kv, rows, D] in rows of H_kv·D elements
    let e = dt.bytes() as u64;
    let outer = if page_size > 0 { pool } else { b };
    let box_rows = c.spec.decode_box_rows(page_size as u32);
    let cache_map = |buf| Arg::TensorMap {
        buf,
        offset: 0,
        dims: [d as u64, cache_rows as u64, hkv as u64, outer as u64],
        strides: [(hkv * d) as u64 * e, d as u64 * e, (cache_rows * hkv * d) as u64 * e],
        box_rows,
        elem: e as u32,
    };
    let named: HashMap<&str, Arg> = [
        ("Q", Arg::Buf(Q)),
        ("K_CACHE", Arg::Buf(KC)),
        ("V_CACHE", Arg::Buf(VC)),
        ("K_NEW", if nn > 0 { Arg::Buf(KN) } else { Arg::Null }),
        ("V_NEW", if nn > 0 { Arg::Buf(VN) } else { Arg::Null }),
        ("sm_scale", Arg::F32(p.rules.sm_scale as f32)),
        ("SOFTCAP", Arg::F32(p.rules.softcap.unwrap_or(0.0) as f32)),
        ("Out", Arg::Buf(OUT)),
        ("LSE", Arg::Buf(LSE)),
        ("O_PARTIAL", Arg::Buf(OP)),
        ("LSE_PARTIAL", Arg::Buf(LP)),
        ("SPLIT_COUNTERS", if in_kernel { Arg::Buf(COUNTERS) } else { Arg::Null }),
        ("CACHE_SEQLENS", Arg::Buf(LENS)),
        ("BLOCK_TABLE", if page_size > 0 { Arg::Buf(TABLE) } else { Arg::Null }),
        ("N_NEW", Arg::I32(nn as i32)),
        ("NUM_SPLITS", Arg::I32(c.splits as i32)),
        ("PAGE_SIZE", Arg::I32(page_size as i32)),
        ("MAX_PAGES", Arg::I32(max_pages as i32)),
        ("POOL_PAGES", Arg::I32(pool as i32)),
        ("tmap_k", cache_map(KC)),
        ("tmap_v", cache_map(VC)),
    ]
    .into_iter()
    .chain(simt::fixed_geometry(b, h, hkv, nq, capacity))
    .chain(window_args(p))
    .collect();
    let spec = &c.spec;
    let row_tiles = (p.group() * nq).div_ceil(spec.block_m() as usize);
    let mut launches = vec![Launch {
        ir: flashgen::render::render(spec).unwrap(),
        entry: spec.name(),
        args: args_of(KernelKind::Decode, &named, &strides),
        grid: (c.splits as u32, (hkv * row_tiles) as u32, b as u32),
        threads: spec.threads(),
        together: false,
    }];
    if c.splits > 1 && !in_kernel {
        let comb = KernelSpec::decode_combine(Arch::Sm90a, dt, d as u32);
        let programs = rows.div_ceil(flashgen::spec::DECODE_COMBINE_WARPS as usize) as u32;
        launches.push(Launch { ir: flashgen::render::render(&comb).unwrap(), entry: comb.name(), args: args_of(KernelKind::DecodeCombine, &named, &strides), grid: (programs, 1, 1), threads: comb.threads(), together: false });
    }
    simt::run(tools, &launches, &mut bufs).unwrap();
    let dec = |b: &[u8]| u16s(b).into_iter().map(|v| value(dt, v)).collect::<Vec<f32>>();
    Ran { o: dec(&bufs[OUT]), lse: f32s(&bufs[LSE]), k_cache: dec(&bufs[KC]), v_cache: dec(&bufs[VC]), partial_lse: f32s(&bufs[LP]), counters: bufs[COUNTERS].chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect() }
}

/// WINDOW_LEFT and WINDOW_RIGHT of the problem's window as the runtime passes them (its kernel's: causal
/// takes the right bound 0; unbounded sides 2^30), after fixed_geometry's defaults.
fn window_args(p: &KvCacheProblem) -> Vec<(&'static str, Arg)> {
    let (_, w) = flashgen::plan::kernel_window(p.rules.mask.causal, p.rules.mask.window);
    let bound = |b: Option<usize>, none: i32| b.map_or(none, |b| b.min(1 << 30) as i32);
    vec![("WINDOW_LEFT", Arg::I32(bound(w.left, 1 << 30))), ("WINDOW_RIGHT", Arg::I32(bound(w.right, 0)))]
}

/// Relative error of the whole tensor (NaN or inf anywhere: infinite).
fn rel(got: &[f32], want: &[f64]) -> f64 {
    if got.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let num: f64 = got.iter().zip(want).map(|(&a, &b)| (a as f64 - b).powi(2)).sum();
    let den: f64 = want.iter().map(|b| b * b).sum();
    (num / den.max(1e-30)).sqrt()
}

/// LSE: −∞ exactly where the reference has −∞, else the absolute error.
fn lse_err(got: &[f32], want: &[f64]) -> f64 {
    got.iter()
        .zip(want)
        .map(|(&a, &b)| if b == f64::NEG_INFINITY { if a == f32::NEG_INFINITY { 0.0 } else { f64::INFINITY } } else { (a as f64 - b).abs() })
        .fold(0.0, f64::max)
}

#[allow(clippy::too_many_arguments)]
fn problem(lens: Vec<usize>, heads: usize, kv_heads: usize, d: usize, n_q: usize, n_new: usize, causal: bool, storage: CacheStorage) -> KvCacheProblem {
    let mut p = KvCacheProblem::new(lens, heads, d, n_q, 0);
    p.kv_heads = kv_heads;
    p.n_new = n_new;
    p.storage = storage;
    p.rules.mask.causal = causal;
    p
}

/// A paged storage for `lens` (+ n_new) with pages of `page_size`, pages permuted, a few spare pages.
fn paged(rng: &mut SplitMix, lens: &[usize], n_new: usize, page_size: usize, max_pages: usize) -> CacheStorage {
    let need: usize = lens.iter().map(|l| (l + n_new).div_ceil(page_size)).sum();
    let pages = need + 3;
    let mut order: Vec<usize> = (0..pages).collect();
    for i in (1..pages).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut table = vec![0usize; lens.len() * max_pages];
    let mut next = 0;
    for (b, l) in lens.iter().enumerate() {
        for j in 0..(l + n_new).div_ceil(page_size) {
            table[b * max_pages + j] = order[next];
            next += 1;
        }
        // unused entries point at the last spare page (never read)
        for j in (l + n_new).div_ceil(page_size)..max_pages {
            table[b * max_pages + j] = order[pages - 1];
        }
    }
    CacheStorage::Paged { page_size, pages, max_pages, block_table: table }
}

/// Run `c` and compare with the reference: O and LSE of every row (or, with lying device inputs, of the
/// `honest` sequences only), the caches after the append, and the split partials' log-sum-exps.
fn check(tools: &simt::Tools, label: &str, c: Case, seed: u64, honest: Option<&[usize]>) {
    let p = &c.p;
    let mut rng = SplitMix(seed);
    let q = random(&mut rng, p.q_len(), c.dtype);
    let k_cache = random(&mut rng, p.cache_len(p.d_qk), c.dtype);
    let v_cache = random(&mut rng, p.cache_len(p.d_v), c.dtype);
    let k_new = random(&mut rng, p.new_len(p.d_qk), c.dtype);
    let v_new = random(&mut rng, p.new_len(p.d_v), c.dtype);
    let x = KvCacheInputs { q: &q, k_cache: &k_cache, v_cache: &v_cache, k_new: &k_new, v_new: &v_new };
    let want = reference::decode(p, &x);
    let ran = run_case(tools, &c, &x, SplitMerge::InKernel);
    if c.splits > 1 {
        // the last split's merge in the kernel and decode_combine's are one merge (lib/decode.ll.tera
        // `merge_row`): the same bits; and every count is back to 0 for the next call
        let combined = run_case(tools, &c, &x, SplitMerge::Combine);
        assert!(ran.o.iter().zip(&combined.o).all(|(a, b)| a.to_bits() == b.to_bits()), "{label}: O merged in the kernel differs from decode_combine's");
        assert!(ran.lse.iter().zip(&combined.lse).all(|(a, b)| a.to_bits() == b.to_bits()), "{label}: LSE merged in the kernel differs from decode_combine's");
        assert!(ran.counters.iter().all(|&n| n == 0), "{label}: split counters left at {:?}", ran.counters);
    }
    let keep: Vec<reference::QueryRow> = p.rows().filter(|r| honest.is_none_or(|h| h.contains(&r.b))).collect();
    let got_o: Vec<f32> = keep.iter().flat_map(|&r| ran.o[p.o_offset(r)..p.o_offset(r) + p.d_v].to_vec()).collect();
    let want_o: Vec<f64> = keep.iter().flat_map(|&r| want.o[p.o_offset(r)..p.o_offset(r) + p.d_v].to_vec()).collect();
    let got_l: Vec<f32> = keep.iter().map(|&r| ran.lse[p.lse_offset(r)]).collect();
    let want_l: Vec<f64> = keep.iter().map(|&r| want.lse[p.lse_offset(r)]).collect();
    let (eo, el) = (rel(&got_o, &want_o), lse_err(&got_l, &want_l));
    let written = ran.o.iter().all(|v| v.is_finite()) && ran.lse.iter().all(|v| !v.is_nan());
    // the caches: the new tokens appended, nothing else changed
    let appended = honest.is_some() || {
        let (mut kc, mut vc) = (k_cache.clone(), v_cache.clone());
        reference::append_kv(p, &mut kc, &mut vc, &k_new, &v_new);
        ran.k_cache == kc && ran.v_cache == vc
    };
    println!("{label}: {} splits {} rel err O {eo:.2e}, LSE max abs err {el:.2e}, caches {}", c.spec.name(), c.splits, if appended { "as appended" } else { "WRONG" });
    assert!(eo < 1e-2 && el < 2e-3 && appended && written, "{label}: O {eo:e} LSE {el:e} appended {appended} written {written}");
    // (a window's splits share only the blocks its queries see: their partials are not the whole cache's split)
    if c.splits > 1 && honest.is_none() && !c.spec.features().window {
        // the partials' log-sum-exps are the reference's splits' (base 2)
        let parts = reference::decode_splits(p, &x, c.splits, c.spec.block_n() as usize);
        for (s, part) in parts.iter().enumerate() {
            let rows = p.lse_len();
            let err = lse_err(&ran.partial_lse[s * rows..(s + 1) * rows], &part.m);
            assert!(err < 3e-3, "{label}: split {s} partial M err {err:e}");
        }
    }
}

fn honest_lens(p: &KvCacheProblem) -> Vec<i32> {
    p.cache_seqlens.iter().map(|&l| l as i32).collect()
}

fn table_of(p: &KvCacheProblem) -> Vec<i32> {
    match &p.storage {
        CacheStorage::Paged { block_table, .. } => block_table.iter().map(|&x| x as i32).collect(),
        CacheStorage::Contiguous { .. } => vec![0],
    }
}

fn case(p: KvCacheProblem, dtype: DType, spec: KernelSpec, splits: usize) -> Case {
    Case { device_lens: honest_lens(&p), device_table: table_of(&p), p, dtype, spec, splits }
}

#[test]
fn decode_contiguous_append_gqa_splits_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // G = 4 query heads per K/V head, one new query and one appended token; lengths 0, ragged, full
    let p = problem(vec![0, 137, 299], 8, 2, 128, 1, 1, true, CacheStorage::Contiguous { capacity: 300 });
    check(&tools, "contiguous bf16 d128", case(p, DType::Bf16, decode_spec(DType::Bf16, 128, 16, 64, true, 4, 3), 3), 1, None);
}

#[test]
fn decode_paged_fp16_causal_appends_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let mut rng = SplitMix(5);
    // three new queries appended and attending causally (bottom-right), pages of 16 in any order
    let lens = vec![45, 0, 100, 16];
    let storage = paged(&mut rng, &lens, 3, 16, 8);
    let p = problem(lens, 4, 2, 64, 3, 3, true, storage);
    check(&tools, "paged fp16 d64 bn64", case(p.clone(), DType::F16, decode_spec(DType::F16, 64, 16, 64, true, 4, 3), 2), 2, None);
    check(&tools, "paged fp16 d64 bn128", case(p, DType::F16, decode_spec(DType::F16, 64, 16, 128, true, 4, 2), 3), 3, None);
}

#[test]
fn decode_32_rows_and_row_tiles_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // G = 8, N_q = 4: 32 rows in one program (Q re-read from shared memory at HEAD_DIM 128), one split
    let p = problem(vec![33, 250], 16, 2, 128, 4, 4, true, CacheStorage::Contiguous { capacity: 260 });
    check(&tools, "32 rows bf16 d128", case(p, DType::Bf16, decode_spec(DType::Bf16, 128, 32, 64, true, 4, 3), 1), 4, None);
    // G = 8, N_q = 3: 24 rows in two row tiles of 16, paged 32, four splits
    let mut rng = SplitMix(6);
    let lens = vec![200, 31];
    let storage = paged(&mut rng, &lens, 3, 32, 8);
    let p = problem(lens, 16, 2, 64, 3, 3, true, storage);
    check(&tools, "row tiles bf16 d64", case(p, DType::Bf16, decode_spec(DType::Bf16, 64, 16, 64, true, 4, 4), 4), 5, None);
}

#[test]
fn decode_non_causal_without_append_eight_warps_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // MHA (G = 1), two queries, nothing appended, 8 warps of 16 keys; five splits, the last ones empty
    let p = problem(vec![70, 1, 0], 2, 2, 128, 2, 0, false, CacheStorage::Contiguous { capacity: 96 });
    check(&tools, "non-causal fp16 d128 w8", case(p, DType::F16, decode_spec(DType::F16, 128, 16, 128, false, 8, 2), 5), 7, None);
}

#[test]
fn decode_padded_head_dims_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // HEAD_DIM 96 (Phi-3) on 128's tiles: chunks 12..16 zero-filled, never stored; GQA, an append, splits
    // and their combine (whose lanes past the 96 columns store nothing)
    let p = problem(vec![0, 137, 299], 8, 2, 96, 1, 1, true, CacheStorage::Contiguous { capacity: 300 });
    check(&tools, "contiguous bf16 d96", case(p, DType::Bf16, decode_spec(DType::Bf16, 96, 16, 64, true, 4, 3), 3), 21, None);
    // HEAD_DIM 32 on 64's tiles: paged, two causal queries appended, fp16, one split and two
    let mut rng = SplitMix(22);
    let lens = vec![45, 0, 100];
    let storage = paged(&mut rng, &lens, 2, 16, 8);
    let p = problem(lens, 4, 1, 32, 2, 2, true, storage);
    check(&tools, "paged fp16 d32", case(p.clone(), DType::F16, decode_spec(DType::F16, 32, 16, 64, true, 4, 4), 1), 23, None);
    check(&tools, "paged fp16 d32 splits", case(p, DType::F16, decode_spec(DType::F16, 32, 16, 64, true, 4, 4), 2), 24, None);
}

#[test]
fn decode_head_dim_256_in_column_groups_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // Gemma's 256: 8 warps, 4 key warps × 2 column groups; GQA (G = 2), an append, causal, three splits
    let p = problem(vec![0, 137, 299], 4, 2, 256, 1, 1, true, CacheStorage::Contiguous { capacity: 300 });
    check(&tools, "contiguous bf16 d256 w8", case(p, DType::Bf16, decode_spec(DType::Bf16, 256, 16, 64, true, 8, 3), 3), 31, None);
    // 32 rows (G = 8, N_q = 4: two m16 tiles), paged, two splits
    let mut rng = SplitMix(32);
    let lens = vec![70, 9];
    let storage = paged(&mut rng, &lens, 4, 16, 8);
    let p = problem(lens, 16, 2, 256, 4, 4, true, storage);
    check(&tools, "paged fp16 d256 32 rows", case(p, DType::F16, decode_spec(DType::F16, 256, 32, 64, true, 8, 2), 2), 33, None);
}

/// A decode spec with a window and/or softcap (as `flashgen::plan::decode` makes them).
fn featured(spec: KernelSpec, window: bool, softcap: bool) -> KernelSpec {
    KernelSpec::with_features(*spec.params(), flashgen::spec::ScheduleOverrides::NONE, flashgen::spec::Features { window, softcap, ..flashgen::spec::Features::NONE }).unwrap()
}

#[test]
fn decode_windows_and_softcap_on_the_emulator() {
    use flashgen::reference::Window;
    let Some(tools) = simt::tools_or_skip() else { return };
    // Mistral's sliding window, causal: each new query sees its last 100 keys; three splits over the window's
    // blocks only (the append still writes every new token); lengths below, across and far past the window
    let mut p = problem(vec![0, 60, 299], 8, 2, 128, 2, 2, true, CacheStorage::Contiguous { capacity: 310 });
    p.rules.mask.window = Window { left: Some(100), right: None };
    let spec = featured(decode_spec(DType::Bf16, 128, 16, 64, true, 4, 3), true, false);
    check(&tools, "window 100 causal bf16 d128", case(p, DType::Bf16, spec, 3), 41, None);
    // Gemma 2: softcap 50 and a window of 4096 on head dim 256, paged; and softcap alone (non-causal, fp16)
    let mut rng = SplitMix(42);
    let lens = vec![5000, 70];
    let storage = paged(&mut rng, &lens, 1, 64, 80);
    let mut p = problem(lens, 4, 2, 256, 1, 1, true, storage);
    p.rules.mask.window = Window { left: Some(4096), right: None };
    p.rules.softcap = Some(50.0);
    let spec = featured(decode_spec(DType::Bf16, 256, 16, 64, true, 8, 3), true, true);
    check(&tools, "Gemma 2: window 4096 softcap 50 d256 paged", case(p, DType::Bf16, spec, 4), 43, None);
    let mut p = problem(vec![33, 200], 4, 4, 64, 1, 0, false, CacheStorage::Contiguous { capacity: 200 });
    p.rules.softcap = Some(5.0);
    let spec = featured(decode_spec(DType::F16, 64, 16, 64, false, 4, 3), false, true);
    check(&tools, "softcap 5 fp16 d64", case(p, DType::F16, spec, 2), 44, None);
    // a window bounded on both sides, non-causal: left 40, right 10 (a causal kernel shifted by 10)
    let mut p = problem(vec![150, 7], 4, 1, 64, 3, 0, false, CacheStorage::Contiguous { capacity: 160 });
    p.rules.mask.window = Window { left: Some(40), right: Some(10) };
    let spec = featured(decode_spec(DType::Bf16, 64, 16, 64, true, 4, 3), true, false);
    check(&tools, "window 40/10 bf16 d64", case(p, DType::Bf16, spec, 2), 45, None);
    // a left bound alone, non-causal (a STAGE=1 kernel with the window), two queries, three splits
    let mut p = problem(vec![150, 20], 4, 2, 64, 2, 2, false, CacheStorage::Contiguous { capacity: 160 });
    p.rules.mask.window = Window { left: Some(70), right: None };
    let spec = featured(decode_spec(DType::F16, 64, 16, 64, false, 4, 3), true, false);
    check(&tools, "window 70/- non-causal fp16 d64", case(p, DType::F16, spec, 3), 46, None);
}

#[test]
fn lying_lengths_and_block_tables_stay_inside_the_cache_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // contiguous: a length past the capacity and a negative one; the emulator aborts on any read outside
    let p = problem(vec![50, 60, 70], 4, 1, 64, 1, 1, true, CacheStorage::Contiguous { capacity: 128 });
    let mut c = case(p, DType::Bf16, decode_spec(DType::Bf16, 64, 16, 64, true, 4, 3), 2);
    c.device_lens = vec![50, 1_000_000, -5];
    check(&tools, "lying lengths", c, 8, Some(&[0]));
    // paged: entries past the pool and negative ones, and a length past the table's pages
    let mut rng = SplitMix(9);
    let lens = vec![40, 40, 40];
    let storage = paged(&mut rng, &lens, 1, 16, 4);
    let p = problem(lens, 4, 1, 64, 1, 1, true, storage);
    let mut c = case(p, DType::Bf16, decode_spec(DType::Bf16, 64, 16, 64, true, 4, 3), 2);
    c.device_table[4] = 1_000_000;
    c.device_table[5] = -3;
    c.device_lens = vec![40, 40, 5000];
    check(&tools, "lying block table", c, 10, Some(&[0]));
}

/// Every admitted decode spec of a grid of the parameters (both kinds).
fn admitted(dtypes: &[DType], archs: &[Arch], stages: &[u32], num_stages: &[u32]) -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for &arch in archs {
        for &dtype in dtypes {
            for d in flashgen::spec::DECODE_HEAD_DIMS {
                out.push(KernelSpec::decode_combine(arch, dtype, d));
                for bm in flashgen::spec::DECODE_BLOCK_MS {
                    for bn in flashgen::spec::DECODE_BLOCK_NS {
                        for w in flashgen::spec::DECODE_NUM_WARPS {
                            for &stage in stages {
                                for &ns in num_stages {
                                    let p = SpecParams { kind: KernelKind::Decode, dtype, head_dim: d, block_m: bm, block_n: bn, stage, num_warps: w, num_stages: ns, arch };
                                    if let Ok(s) = KernelSpec::new(p) {
                                        out.push(s);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// ptxas over the admitted decode space: no spills, no stack, no ptxas warnings, no local memory in SASS,
/// and the ring as LDGSTS and the products as HMMA.
#[test]
fn admitted_decode_specs_assemble_without_spills_or_local_memory() {
    let Some(ptxas) = flashgen_tests::find_ptxas() else {
        assert!(!flashgen_tests::in_ci(), "ptxas not found (set FLASHGEN_PTXAS): CI must install it");
        eprintln!("SKIPPED: ptxas not found (set FLASHGEN_PTXAS)");
        return;
    };
    let nvdisasm = flashgen_tests::find_nvdisasm();
    // every tile shape (HEAD_DIM × BLOCK_M × BLOCK_N / warps × STAGE) at the ring's extremes on sm_90a, and
    // each other target and dtype at one depth (the depth changes constants of the ring, not its code)
    let mut specs = admitted(&[DType::Bf16], &[Arch::Sm90a], &[1, 3], &[2, 6]);
    specs.extend(admitted(&[DType::F16], &[Arch::Sm90a, Arch::Sm80], &[3], &[3]));
    specs.extend(admitted(&[DType::Bf16], &[Arch::Sm86, Arch::Sm89], &[1], &[2]));
    // the window and softcap variants of the default decode kernels (the mask's lower bounds, tanh on S)
    for spec in flashgen::plan::decode_default_set().into_iter().filter(|s| s.kind() == KernelKind::Decode) {
        for (window, softcap) in [(true, false), (false, true), (true, true)] {
            specs.push(featured(spec, window, softcap));
        }
        // the TMA boxes' variants (sm_90), plain and windowed
        if matches!(spec.arch(), Arch::Sm90 | Arch::Sm90a) {
            specs.push(tma(spec));
            specs.push(tma(featured(spec, true, true)));
        }
    }
    specs.dedup();
    assert!(specs.len() >= 60, "the admitted space should be a real one: {}", specs.len());
    // the SASS (one ptxas run gives it and the report) of the sm_90a kernels at the shallow ring's depth, of
    // every featured or TMA variant and of the combine kernels: each code path once, since a ring's depth
    // and the other targets change its constants and registers, which ptxas's report checks on all of them
    let read_sass = |s: &KernelSpec| s.kind() != KernelKind::Decode || s.features() != flashgen::spec::Features::NONE || s.decode_tma_kv() || (s.arch() == Arch::Sm90a && s.num_stages() == 2);
    let (a, b) = specs.split_at(specs.len() / 2);
    std::thread::scope(|s| {
        for half in [a, b] {
            let (ptxas, nvdisasm, read_sass) = (&ptxas, &nvdisasm, &read_sass);
            s.spawn(move || {
                for spec in half {
                    let art = flashgen::compile(spec, flashgen::CompileOptions::default()).unwrap();
                    let assembled = flashgen_tests::assemble(ptxas, &art.ptx, spec.arch().name(), nvdisasm.as_deref().filter(|_| read_sass(spec))).unwrap();
                    let r = assembled.kernel().expect("an entry");
                    println!("{:<52} registers {:>3} (estimate {:>3})  shared {:>6} B  stack {} spills {}/{}", spec.name(), r.registers, spec.register_estimate(), spec.shared_memory_bytes(), r.stack_frame, r.spill_stores, r.spill_loads);
                    assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "{} spills: {r:?}", spec.name());
                    assert!(r.warnings.is_empty(), "{}: {:?}", spec.name(), r.warnings);
                    if let Some(text) = assembled.sass {
                        let local = text.lines().filter(|l| l.contains(" LDL") || l.contains(" STL")).count();
                        assert_eq!(local, 0, "{}: local memory", spec.name());
                        if spec.kind() == KernelKind::Decode {
                            assert!(text.contains("LDGSTS"), "{}: the cp.async ring is not LDGSTS in SASS", spec.name());
                            assert!(text.contains("HMMA"), "{}: no HMMA", spec.name());
                            assert_eq!(text.contains("UTMALDG"), spec.decode_tma_kv(), "{}: TMA boxes (UTMALDG) in SASS iff tma_kv", spec.name());
                        }
                    }
                }
            });
        }
    });
}

/// tma_kv: the decode kernel's only switch, sm_90 only; the tiles in 64-column panels of 128-byte rows, one
/// mbarrier a slot past the merge area, 1 KB to align the tiles; boxes of a block, or of a page's run.
#[test]
fn tma_kv_is_a_decode_switch_on_sm_90() {
    use flashgen::spec::ScheduleOverrides;
    let on = ScheduleOverrides { tma_kv: Some(true), ..ScheduleOverrides::NONE };
    let p = SpecParams { kind: KernelKind::Decode, dtype: DType::Bf16, head_dim: 128, block_m: 16, block_n: 64, stage: 1, num_warps: 4, num_stages: 3, arch: Arch::Sm90a };
    let s = KernelSpec::with_schedule(p, on).unwrap();
    assert_eq!(s.name(), "fa2_decode_bf16_d128_st1_bm16_bn64_w4_ns3_sm90a_tma1");
    assert_eq!((s.decode_kv_pitch(), s.decode_slot_bytes()), (128, 2 * 64 * 256));
    // [Q 16×128 | 3 × (K, V) 64 rows × 2 panels] and 3 mbarriers past it, and the alignment's 1 KB
    assert_eq!(s.shared_memory_bytes(), 4096 + 3 * 2 * 64 * 256 + 3 * 8 + 1024);
    let plain = KernelSpec::with_schedule(p, ScheduleOverrides::NONE).unwrap();
    assert_eq!((plain.decode_kv_pitch(), plain.decode_slot_bytes()), (256, 2 * 64 * 256));
    // boxes: a contiguous block at once; pages of 16, 48, 96, 256 tokens in runs of 16, 16, 32, 64
    assert_eq!([0, 16, 48, 96, 256].map(|page| s.decode_box_rows(page)), [64, 16, 16, 32, 64]);
    let err = |p: SpecParams| KernelSpec::with_schedule(p, on).unwrap_err().to_string();
    assert!(err(SpecParams { arch: Arch::Sm80, ..p }).contains("tma_kv=on needs sm_90"));
    assert!(err(SpecParams { kind: KernelKind::FwdWs, block_m: 128, block_n: 128, num_warps: 12, num_stages: 2, ..p }).contains("tma_kv=on is for the decode kernel"));
    let combine = SpecParams { kind: KernelKind::DecodeCombine, block_m: 1, block_n: 0, num_stages: 1, ..p };
    assert!(err(combine).contains("decode_combine none"));
    let other = ScheduleOverrides { lazy_rescale: Some(true), ..ScheduleOverrides::NONE };
    assert!(KernelSpec::with_schedule(p, other).unwrap_err().to_string().contains("one schedule switch, tma_kv"));
}

#[test]
fn a_decode_plan_takes_a_schedule_keeping_its_tiles_and_features() {
    use flashgen::plan::{decode, DecodeProblem};
    use flashgen::spec::ScheduleOverrides;
    let on = ScheduleOverrides::parse("tma_kv=on").unwrap();
    let p = DecodeProblem { dtype: DType::Bf16, head_dim: 128, causal: false, window: true, softcap: true, group: 4, queries: 1 };
    let plan = decode(Arch::Sm90a, &p).unwrap();
    let tma = plan.with_schedule(&p, on).unwrap();
    assert_eq!(tma.kernel.name(), "fa2_decode_bf16_d128_st1_bm16_bn64_w4_ns3_sm90a_tma1_window_softcap");
    assert_eq!((tma.kernel.params(), tma.kernel.features()), (plan.kernel.params(), plan.kernel.features()));
    assert!(tma.kernel.decode_tma_kv() && !plan.kernel.decode_tma_kv());
    assert_eq!((tma.combine, tma.merge), (plan.combine, SplitMerge::for_tile(&tma.kernel, &p)));
    // no override is the plan itself; sm_80 refuses the switch by name
    assert_eq!(plan.with_schedule(&p, ScheduleOverrides::NONE).unwrap(), plan);
    let plain = DecodeProblem { window: false, softcap: false, ..p };
    let e = decode(Arch::Sm80, &plain).unwrap().with_schedule(&plain, on).unwrap_err().to_string();
    assert!(e.contains("tma_kv=on needs sm_90"), "{e}");
}

#[test]
fn decode_rules_name_the_fix() {
    let p = SpecParams { kind: KernelKind::Decode, dtype: DType::Bf16, head_dim: 128, block_m: 16, block_n: 64, stage: 1, num_warps: 4, num_stages: 3, arch: Arch::Sm90a };
    let s = KernelSpec::new(p).unwrap();
    assert_eq!(s.name(), "fa2_decode_bf16_d128_st1_bm16_bn64_w4_ns3_sm90a");
    assert_eq!((s.decode_keys_per_warp(), s.decode_m_tiles(), s.decode_q_in_registers()), (16, 1, true));
    // [Q 16×128 | 3 × (K, V) 64×128] = 4 KB + 96 KB: two programs per H200 SM
    assert_eq!(s.shared_memory_bytes(), 4096 + 3 * 32768);
    let err = |p: SpecParams| KernelSpec::new(p).unwrap_err().to_string();
    assert!(err(SpecParams { block_m: 48, ..p }).contains("BLOCK_M=48 is not supported"));
    assert!(err(SpecParams { block_n: 64, num_warps: 8, ..p }).contains("gives each warp 8 keys"));
    assert!(err(SpecParams { block_n: 32, ..p }).contains("gives each warp 8 keys"));
    assert!(err(SpecParams { num_stages: 7, ..p }).contains("num_stages=7"));
    assert!(err(SpecParams { head_dim: 192, ..p }).contains("HEAD_DIM=192"));
    // 256: two column groups of 4 key warps; 4 warps of 16 keys would leave 2 key warps 32 keys each
    let d256 = KernelSpec::new(SpecParams { head_dim: 256, num_warps: 8, ..p }).unwrap();
    assert_eq!((d256.decode_column_groups(), d256.decode_key_warps(), d256.decode_keys_per_warp()), (2, 4, 16));
    assert!(err(SpecParams { head_dim: 256, block_n: 32, num_warps: 8, ..p }).contains("over 4 key warps (num_warps=8 in 2 column groups) gives each warp 8 keys"));
    // 4 warps copy 4 rows of 32 chunks a pass: two swizzles in one thread's rows
    assert!(err(SpecParams { head_dim: 256, block_n: 32, ..p }).contains("the swizzle needs a multiple of 8: use 8 warps"));
    // 96 runs on 128's tiles: the same shared memory and ring
    let d96 = KernelSpec::new(SpecParams { head_dim: 96, ..p }).unwrap();
    assert_eq!((d96.shared_memory_bytes(), d96.name()), (s.shared_memory_bytes(), "fa2_decode_bf16_d96_st1_bm16_bn64_w4_ns3_sm90a".to_string()));
    assert!(err(SpecParams { block_m: 64, ..p }).contains("BLOCK_M=64 is not supported"), "64 rows of accumulators per warp");
    assert!(err(SpecParams { num_stages: 6, block_n: 128, arch: Arch::Sm86, ..p }).contains("shared memory"));
    // the combine has one form
    let c = KernelSpec::decode_combine(Arch::Sm80, DType::F16, 64);
    assert_eq!(c.name(), "fa2_decode_combine_fp16_d64_st1_bm1_bn0_w4_ns1_sm80");
    assert_eq!(KernelSpec::new(*c.params()).unwrap(), c);
    assert!(err(SpecParams { block_m: 2, ..*c.params() }).contains("decode_combine takes only dtype, HEAD_DIM and arch"));
    // a spec read from a file obeys the same rules
    let json = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<KernelSpec>(&json).unwrap(), s);
}

/// The split heuristic on fa4_bench.py's decode shapes (8 K/V heads, blocks of 64 keys) on the H200's 132
/// SMs at two programs each, and its edges.
#[test]
fn split_heuristic_fills_the_chip() {
    use flashgen::plan::decode_splits;
    let (sms, per_sm) = (132, 2);
    // batch 1: 8 programs a split; 8192 keys = 128 blocks: 32 splits of 4 blocks (256 programs, 97% of a wave)
    assert_eq!(decode_splits(8, 128, sms, per_sm), 32);
    // 32768 keys: as many splits, 16 blocks each
    assert_eq!(decode_splits(8, 512, sms, per_sm), 32);
    // batch 16: 128 programs cover 97% of the SMs: one split (decode-splits: +0.4-3% over two)
    assert_eq!(decode_splits(128, 128, sms, per_sm), 1);
    // below 80% of the SMs (105.6 programs), the splits fill the wave: 104 programs, 2 splits
    assert_eq!(decode_splits(105, 128, sms, per_sm), 2);
    assert_eq!(decode_splits(106, 128, sms, per_sm), 1);
    // batch 8: 64 programs, 4 splits (256 programs)
    assert_eq!(decode_splits(64, 128, sms, per_sm), 4);
    // batch 64: 512 programs, two waves already
    assert_eq!(decode_splits(512, 512, sms, per_sm), 1);
    // short caches: at least 2 blocks a split
    assert_eq!(decode_splits(8, 3, sms, per_sm), 1);
    assert_eq!(decode_splits(8, 4, sms, per_sm), 2);
    assert_eq!(decode_splits(0, 100, sms, per_sm), 1);
    assert!(decode_splits(1, 1 << 20, sms, per_sm) <= flashgen::spec::DECODE_MAX_SPLITS as usize);
    for units in [1, 3, 8, 50, 100, 200, 300] {
        for blocks in [1, 2, 7, 64, 129, 1000] {
            let s = decode_splits(units, blocks, sms, per_sm);
            // never a split without blocks
            assert_eq!(blocks.div_ceil(blocks.div_ceil(s)), s, "units {units} blocks {blocks}: {s}");
        }
    }
}

#[test]
fn decode_plans_take_the_rows_of_a_kv_head() {
    use flashgen::plan::{decode, DecodeProblem};
    let p = |group, queries| DecodeProblem { dtype: DType::Bf16, head_dim: 128, causal: true, window: false, softcap: false, group, queries };
    let plan = decode(Arch::Sm90a, &p(4, 1)).unwrap();
    assert_eq!(plan.kernel.name(), "fa2_decode_bf16_d128_st3_bm16_bn64_w4_ns3_sm90a");
    assert_eq!(plan.combine.name(), "fa2_decode_combine_bf16_d128_st1_bm1_bn0_w4_ns1_sm90a");
    // the merge: decode_combine where its launch overlaps (sm_90); elsewhere in the kernel up to 2 rows a warp
    assert_eq!(plan.merge, SplitMerge::Combine);
    assert_eq!(decode(Arch::Sm80, &p(4, 1)).unwrap().merge, SplitMerge::InKernel);
    assert_eq!(decode(Arch::Sm80, &p(8, 1)).unwrap().merge, SplitMerge::InKernel);
    assert_eq!(decode(Arch::Sm80, &p(4, 3)).unwrap().merge, SplitMerge::Combine);
    assert_eq!(plan.row_tiles(&p(4, 1)), 1);
    let plan = decode(Arch::Sm90a, &p(8, 4)).unwrap();
    assert_eq!((plan.kernel.block_m(), plan.row_tiles(&p(8, 4))), (32, 1));
    let plan = decode(Arch::Sm80, &p(16, 4)).unwrap();
    assert_eq!((plan.kernel.block_m(), plan.row_tiles(&p(16, 4))), (32, 2));
    assert!(decode(Arch::Sm90a, &DecodeProblem { head_dim: 192, ..p(1, 1) }).unwrap_err().to_string().contains("HEAD_DIM=192"));
    // 32 and 96 take 64's and 128's tiles
    let d96 = decode(Arch::Sm90a, &DecodeProblem { head_dim: 96, ..p(4, 1) }).unwrap();
    assert_eq!(d96.kernel.name(), "fa2_decode_bf16_d96_st3_bm16_bn64_w4_ns3_sm90a");
    let set = flashgen::plan::decode_default_set();
    assert!(set.iter().any(|s| s.kind() == KernelKind::DecodeCombine) && set.len() >= 2 * 2 * 2 * 2 * 2);
    for arch in Arch::ALL {
        for d in flashgen::spec::DECODE_HEAD_DIMS {
            if d == 256 && arch.shared_memory_limit() < 136 * 1024 {
                // no ring of two 64 KB blocks fits: the error says what serves it instead
                assert!(decode(arch, &DecodeProblem { head_dim: d, ..p(8, 4) }).unwrap_err().to_string().contains("prefill kernels"));
                continue;
            }
            let plan = decode(arch, &DecodeProblem { head_dim: d, ..p(8, 4) }).unwrap();
            assert!(plan.kernel.shared_memory_bytes() <= arch.shared_memory_limit());
        }
    }
}

/// The PTX of the default decode kernel (H200, bf16, HEAD_DIM 128, one m16 tile of rows) and of its combine:
/// any change to the generated code shows as a diff to review (`cargo insta review`).
#[test]
fn decode_ptx_snapshots() {
    let plan = flashgen::plan::decode(Arch::Sm90a, &flashgen::plan::DecodeProblem { dtype: DType::Bf16, head_dim: 128, causal: false, window: false, softcap: false, group: 4, queries: 1 }).unwrap();
    for s in [plan.kernel, plan.combine] {
        let a = flashgen::compile(&s, flashgen::CompileOptions::default()).unwrap();
        let name = format!("fa2_{}@{}_d{}_stage{}_bm{}_bn{}_w{}_ns{}_{}", s.kind().name(), s.dtype().name(), s.head_dim(), s.stage() as u32, s.block_m(), s.block_n(), s.num_warps(), s.num_stages(), s.arch().name());
        insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
            insta::assert_snapshot!(name, a.ptx);
        });
    }
}

#[test]
fn decode_odd_pages_deep_rings_and_eight_warps_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    // pages of 48 (a multiple of 16, not a power of two) under blocks of 128 keys on 8 warps
    let mut rng = SplitMix(11);
    let lens = vec![200, 47, 96];
    let storage = paged(&mut rng, &lens, 2, 48, 6);
    let p = problem(lens, 8, 2, 128, 2, 2, true, storage);
    check(&tools, "pages of 48 w8", case(p, DType::Bf16, decode_spec(DType::Bf16, 128, 16, 128, true, 8, 2), 2), 12, None);
    // a 6-slot ring over 20 blocks in one split, fp16, 32 rows (G 8, N_q 4) at HEAD_DIM 64 (Q in registers)
    let p = problem(vec![1250], 8, 1, 64, 4, 4, true, CacheStorage::Contiguous { capacity: 1300 });
    check(&tools, "6 slots fp16 d64 32 rows", case(p, DType::F16, decode_spec(DType::F16, 64, 32, 64, true, 4, 6), 1), 13, None);
}

/// `spec` with its full K/V blocks copied by TMA boxes onto per-slot mbarriers (`Schedule::tma_kv`).
fn tma(spec: KernelSpec) -> KernelSpec {
    let on = flashgen::spec::ScheduleOverrides { tma_kv: Some(true), ..flashgen::spec::ScheduleOverrides::NONE };
    let s = KernelSpec::with_features(*spec.params(), on, spec.features()).unwrap();
    assert!(s.decode_tma_kv() && s.name().contains("tma1"), "{}", s.name());
    s
}

/// The TMA path against the reference, as the cp.async path's cases: full blocks by TMA boxes (landing only
/// when a thread waits on their slot's barrier, 128B-swizzled into panels), the edge blocks by cp.async into
/// the same panels; contiguous (a box a block) and paged (pages of 16: a box per 16 rows and page lookup),
/// appends, splits and both merges, padded head dims (the boxes' columns past the tensor read as zeros), two
/// rows a thread (BLOCK_N 128 on 4 warps), 8 warps, column groups, a window, and lying lengths and tables
/// (every box inside its map: the emulator refuses a box outside one).
#[test]
fn decode_tma_boxes_on_the_emulator() {
    use flashgen::reference::Window;
    let Some(tools) = simt::tools_or_skip() else { return };
    let p = problem(vec![0, 137, 299], 8, 2, 128, 1, 1, true, CacheStorage::Contiguous { capacity: 300 });
    check(&tools, "tma contiguous bf16 d128", case(p, DType::Bf16, tma(decode_spec(DType::Bf16, 128, 16, 64, true, 4, 4)), 3), 51, None);
    let mut rng = SplitMix(52);
    let lens = vec![45, 0, 100, 16];
    let storage = paged(&mut rng, &lens, 3, 16, 8);
    let p = problem(lens, 4, 2, 64, 3, 3, true, storage);
    check(&tools, "tma paged fp16 d64 bn64", case(p.clone(), DType::F16, tma(decode_spec(DType::F16, 64, 16, 64, true, 4, 3)), 2), 53, None);
    check(&tools, "tma paged fp16 d64 bn128", case(p, DType::F16, tma(decode_spec(DType::F16, 64, 16, 128, true, 4, 2)), 3), 54, None);
    let p = problem(vec![0, 137, 299], 8, 2, 96, 1, 1, true, CacheStorage::Contiguous { capacity: 300 });
    check(&tools, "tma contiguous bf16 d96", case(p, DType::Bf16, tma(decode_spec(DType::Bf16, 96, 16, 64, true, 4, 3)), 3), 55, None);
    let p = problem(vec![70, 1, 0], 2, 2, 128, 2, 0, false, CacheStorage::Contiguous { capacity: 96 });
    check(&tools, "tma non-causal fp16 d128 w8", case(p, DType::F16, tma(decode_spec(DType::F16, 128, 16, 128, false, 8, 2)), 2), 56, None);
    let mut rng = SplitMix(57);
    let lens = vec![70, 9];
    let storage = paged(&mut rng, &lens, 4, 16, 8);
    let p = problem(lens, 16, 2, 256, 4, 4, true, storage);
    check(&tools, "tma paged fp16 d256 32 rows", case(p, DType::F16, tma(decode_spec(DType::F16, 256, 32, 64, true, 8, 2)), 2), 58, None);
    let mut p = problem(vec![0, 60, 299], 8, 2, 128, 2, 2, true, CacheStorage::Contiguous { capacity: 310 });
    p.rules.mask.window = Window { left: Some(100), right: None };
    let spec = tma(featured(decode_spec(DType::Bf16, 128, 16, 64, true, 4, 3), true, false));
    check(&tools, "tma window 100 causal bf16 d128", case(p, DType::Bf16, spec, 3), 59, None);
    let p = problem(vec![50, 60, 70], 4, 1, 64, 1, 1, true, CacheStorage::Contiguous { capacity: 128 });
    let mut c = case(p, DType::Bf16, tma(decode_spec(DType::Bf16, 64, 16, 64, true, 4, 3)), 2);
    c.device_lens = vec![50, 1_000_000, -5];
    check(&tools, "tma lying lengths", c, 60, Some(&[0]));
    let mut rng = SplitMix(61);
    let lens = vec![40, 40, 40];
    let storage = paged(&mut rng, &lens, 1, 16, 4);
    let p = problem(lens, 4, 1, 64, 1, 1, true, storage);
    let mut c = case(p, DType::Bf16, tma(decode_spec(DType::Bf16, 64, 16, 64, true, 4, 3)), 2);
    c.device_table[4] = 1_000_000;
    c.device_table[5] = -3;
    c.device_lens = vec![40, 40, 5000];
    check(&tools, "tma lying block table", c, 62, Some(&[0]));
}
