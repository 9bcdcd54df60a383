//! The KV-cache decode on the GPU against flashgen::reference::decode (f64): random cache lengths 0..40000
//! (0 and lengths off the page included), contiguous and paged caches (pages of 16, 64, 256 in permuted
//! order, with spare pages), new tokens appended (N_new = N_q 1..4) or none, causal or not, grouped-query
//! heads G 1..16 (past 32 rows a K/V head: row tiles), both dtypes, HEAD_DIM 64 and 128 (and 96, 32 padded, 256; windows and softcap), the heuristic's splits and forced ones (1, 3, 37), host
//! copies of the lengths and table given or not, and a case of lying device lengths and table entries (only
//! the honest sequences compared; the kernels must stay inside the pool). Outputs are poisoned and guarded;
//! the caches after the call must equal the reference's append (every element). Long cases compare sampled
//! rows, like the forward check.

use super::args::CheckArgs;
use super::common::{nan_bits, GUARD, M_TOL, O_TOL};
use flashgen::numeric::SplitMix;
use flashgen::reference::{self, relative_error, relative_error_lse, CacheStorage, KvCacheInputs, KvCacheProblem, QueryRow};
use flashgen::DType;
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen_runtime::{BlockTable, BufferView, BufferViewMut, Flash, KvCacheCall, Layout, TensorView, TensorViewMut};
use std::io::Write;

/// One decode case.
struct Case {
    label: String,
    dtype: DType,
    p: KvCacheProblem,
    splits: Option<usize>,
    host_copies: bool,
    /// Device lengths that differ from the problem's (a lying caller), and table entries to corrupt.
    lying: bool,
}

/// `batch` lengths up to `max`: random ones, one just past a page boundary, and empty ones, in a random order.
fn lengths(rng: &mut SplitMix, batch: usize, max: usize, page: usize) -> Vec<usize> {
    let salt = rng.next_u64() as usize;
    (0..batch)
        .map(|i| match (i + salt) % 3 {
            0 => (rng.next_u64() % (max as u64 + 1)) as usize,
            1 => (rng.next_u64() % (max as u64 + 1)) as usize / page * page + page / 2 + 1, // off the page
            _ => 0,
        })
        .map(|l| l.min(max))
        .collect()
}

fn paged(rng: &mut SplitMix, lens: &[usize], n_new: usize, page_size: usize) -> CacheStorage {
    let max_pages = lens.iter().map(|l| (l + n_new).div_ceil(page_size)).max().unwrap_or(0).max(1) + 1;
    let need: usize = lens.iter().map(|l| (l + n_new).div_ceil(page_size)).sum();
    let pages = need + 3;
    let mut order: Vec<usize> = (0..pages).collect();
    for i in (1..pages).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let mut table = vec![order[pages - 1]; lens.len() * max_pages];
    let mut next = 0;
    for (b, l) in lens.iter().enumerate() {
        for j in 0..(l + n_new).div_ceil(page_size) {
            table[b * max_pages + j] = order[next];
            next += 1;
        }
    }
    CacheStorage::Paged { page_size, pages, max_pages, block_table: table }
}

fn cases(a: &CheckArgs) -> Vec<Case> {
    let mut rng = SplitMix(a.seed ^ 0xdec0de);
    let mut out = Vec::new();
    let long = if a.quick { 5000 } else { 40000 };
    let mut n = 0usize;
    for dtype in [DType::Bf16, DType::F16] {
        for d in [128usize, 64] {
            // G 8, 4, 1, 4 and 16 (G·N_q past 32 rows: row tiles)
            for (heads, kv_heads) in [(8, 1), (8, 2), (4, 4), (32, 8), (16, 1)] {
                for paged_size in [0usize, 16, 64, 256] {
                    n += 1;
                    if a.quick && !n.is_multiple_of(3) {
                        continue;
                    }
                    let n_q = 1 + (rng.next_u64() % 4) as usize;
                    let append = !rng.next_u64().is_multiple_of(3);
                    let causal = rng.next_u64().is_multiple_of(2);
                    // long caches on few heads (the host builds and the reference walks them)
                    let (batch, max) = if kv_heads >= 8 { (2, long / 8) } else { (3, long / kv_heads) };
                    let n_new = if append { n_q } else { 0 };
                    let lens = lengths(&mut rng, batch, max, paged_size.max(64));
                    let storage = if paged_size > 0 {
                        paged(&mut rng, &lens, n_new, paged_size)
                    } else {
                        let cap = lens.iter().max().copied().unwrap_or(0) + n_new + (rng.next_u64() % 50) as usize;
                        CacheStorage::Contiguous { capacity: cap.max(1) }
                    };
                    let mut p = KvCacheProblem::new(lens.clone(), heads, d, n_q, 0);
                    p.kv_heads = kv_heads;
                    p.n_new = n_new;
                    p.storage = storage;
                    p.rules.mask.causal = causal;
                    let splits = match n % 5 {
                        1 => Some(1),
                        2 => Some(3),
                        3 => Some(37),
                        _ => None,
                    };
                    let label = format!("H{heads}/{kv_heads} N_q {n_q} new {n_new} {} lens {lens:?}{}", if paged_size > 0 { format!("paged {paged_size}") } else { "contiguous".into() }, if causal { " causal" } else { "" });
                    out.push(Case { label, dtype, p, splits, host_copies: n.is_multiple_of(2), lying: false });
                }
            }
        }
    }
    // HEAD_DIM 96 and 32 on 128's and 64's tiles, 256 in two column groups (their own seed stream: the cases
    // above stay as they were)
    let mut rng = SplitMix(a.seed ^ 0xdec0de_96);
    for dtype in [DType::Bf16, DType::F16] {
        for d in [96usize, 32, 256] {
            for (heads, kv_heads) in [(8, 2), (32, 8)] {
                for paged_size in [0usize, 16] {
                    let (n_q, causal) = (1 + (rng.next_u64() % 3) as usize, rng.next_u64().is_multiple_of(2));
                    let lens = lengths(&mut rng, 2, long / kv_heads, 64);
                    let storage = if paged_size > 0 { paged(&mut rng, &lens, n_q, paged_size) } else { CacheStorage::Contiguous { capacity: lens.iter().max().copied().unwrap_or(0) + n_q + 7 } };
                    let mut p = KvCacheProblem::new(lens.clone(), heads, d, n_q, 0);
                    p.kv_heads = kv_heads;
                    p.n_new = n_q;
                    p.storage = storage;
                    p.rules.mask.causal = causal;
                    let splits = if paged_size > 0 { Some(3) } else { None };
                    let label = format!("D{d} H{heads}/{kv_heads} N_q {n_q} new {n_q} {} lens {lens:?}{}", if paged_size > 0 { format!("paged {paged_size}") } else { "contiguous".into() }, if causal { " causal" } else { "" });
                    out.push(Case { label, dtype, p, splits, host_copies: true, lying: false });
                }
            }
        }
    }
    // windows and softcap (Mistral's window, Gemma 2's window and softcap at 256): (D, causal, left, right, cap)
    let mut rng = SplitMix(a.seed ^ 0xdec0de_5c);
    for (d, causal, left, right, cap) in [(128usize, true, Some(256), None, None), (256, true, Some(4096), None, Some(50.0)), (64, false, None, None, Some(30.0)), (96, false, Some(64), Some(8), None)] {
        for paged_size in [0usize, 64] {
            let n_q = 1 + (rng.next_u64() % 3) as usize;
            let lens = lengths(&mut rng, 2, long, 64);
            let storage = if paged_size > 0 { paged(&mut rng, &lens, n_q, paged_size) } else { CacheStorage::Contiguous { capacity: lens.iter().max().copied().unwrap_or(0) + n_q + 3 } };
            let mut p = KvCacheProblem::new(lens.clone(), 8, d, n_q, 0);
            p.kv_heads = 2;
            p.n_new = n_q;
            p.storage = storage;
            p.rules.mask.causal = causal;
            p.rules.mask.window = flashgen::reference::Window { left, right };
            p.rules.softcap = cap;
            let label = format!("D{d} window {left:?}/{right:?} softcap {cap:?} N_q {n_q} {} lens {lens:?}{}", if paged_size > 0 { format!("paged {paged_size}") } else { "contiguous".into() }, if causal { " causal" } else { "" });
            out.push(Case { label, dtype: DType::Bf16, p, splits: None, host_copies: true, lying: false });
        }
    }
    // lying device lengths and table entries (no host copies): honest sequences right, nothing outside
    for paged_size in [0usize, 16] {
        let lens = vec![300, 500, 200];
        let storage = if paged_size > 0 { paged(&mut rng, &lens, 1, paged_size) } else { CacheStorage::Contiguous { capacity: 600 } };
        let mut p = KvCacheProblem::new(lens, 8, 128, 1, 0);
        p.kv_heads = 2;
        p.n_new = 1;
        p.storage = storage;
        out.push(Case { label: format!("lying lengths and table, {}", if paged_size > 0 { "paged" } else { "contiguous" }), dtype: DType::Bf16, p, splits: Some(4), host_copies: false, lying: true });
    }
    out
}

/// Reference rows above this much work (rows × longest keys) are sampled.
const SAMPLE_ABOVE: usize = 1 << 24;
const SAMPLED_ROWS: usize = 256;

/// The rows to compare (every one, or a sample: each sequence's first and last rows and random others) and
/// their reference O and LSE, on all cores.
fn reference_rows(p: &KvCacheProblem, x: &KvCacheInputs<'_>, only: &[usize], seed: u64) -> Vec<(QueryRow, Vec<f64>, f64)> {
    let mut rows: Vec<QueryRow> = p.rows().filter(|r| only.contains(&r.b)).collect();
    let longest = (0..p.batch).map(|b| p.seqlen_k(b)).max().unwrap_or(0);
    if rows.len() * longest > SAMPLE_ABOVE {
        let mut rng = SplitMix(seed ^ 0x5a5a);
        let mut pick: Vec<QueryRow> = Vec::new();
        for &b in only {
            pick.extend(rows.iter().filter(|r| r.b == b).take(1));
            pick.extend(rows.iter().rfind(|r| r.b == b));
        }
        while pick.len() < SAMPLED_ROWS.min(rows.len()) {
            pick.push(rows[(rng.next_u64() % rows.len() as u64) as usize]);
        }
        rows = pick;
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = rows.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(per)
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&r| {
                            let mut o = vec![0f64; p.d_v];
                            let lse = reference::decode_row(p, x, r, None, &mut o);
                            (r, o, lse)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}

/// Run one case: (rel. err. of O, of the LSE, caches as appended, guards intact).
fn run_case(flash: &Flash, c: &Case, schedule: flashgen::ScheduleOverrides, seed: u64) -> Result<(f64, f64, bool, bool), String> {
    let rt = |x: flashgen_runtime::RuntimeError| x.to_string();
    let le = |x: flashgen_runtime::LayoutError| x.to_string();
    let dr = |x: flashgen_runtime::cudarc::driver::DriverError| x.to_string();
    let gpu = &flash.gpu;
    let (p, dt) = (&c.p, c.dtype);
    let mut rng = SplitMix(seed);
    let round = |x: f32| from_bits(dt, to_bits(dt, x));
    let mut gen = |n: usize| -> Vec<f32> { (0..n).map(|_| round(rng.normal())).collect() };
    let (q, k_cache, v_cache, k_new, v_new) = (gen(p.q_len()), gen(p.cache_len(p.d_qk)), gen(p.cache_len(p.d_v)), gen(p.new_len(p.d_qk)), gen(p.new_len(p.d_v)));
    let x = KvCacheInputs { q: &q, k_cache: &k_cache, v_cache: &v_cache, k_new: &k_new, v_new: &v_new };
    // (one element more: the driver allocates nothing of zero bytes, and K_NEW is empty without an append)
    let up = |v: &[f32]| gpu.stream.clone_htod(&v.iter().map(|&x| to_bits(dt, x)).chain([0]).collect::<Vec<u16>>()).map_err(dr);
    let (d_q, mut d_kc, mut d_vc) = (up(&q)?, up(&k_cache)?, up(&v_cache)?);
    let (d_kn, d_vn) = (up(&k_new)?, up(&v_new)?);
    let mut d_o = gpu.stream.clone_htod(&vec![nan_bits(dt); p.o_len() + GUARD]).map_err(dr)?;
    let mut d_lse = gpu.stream.clone_htod(&vec![f32::NAN; p.lse_len() + GUARD]).map_err(dr)?;
    let (b, h, hkv, d, nq, nn) = (p.batch, p.heads, p.kv_heads, p.d_qk, p.n_q, p.n_new);
    let mut lens: Vec<i32> = p.cache_seqlens.iter().map(|&l| l as i32).collect();
    let (cache_layout, table) = match &p.storage {
        CacheStorage::Contiguous { capacity } => (Layout::bshd(b, hkv, *capacity, d), None),
        CacheStorage::Paged { page_size, pages, max_pages, block_table } => (Layout::bshd(*pages, hkv, *page_size, d), Some((block_table.iter().map(|&x| x as i32).collect::<Vec<i32>>(), *max_pages))),
    };
    let mut honest: Vec<usize> = (0..b).collect();
    let mut table = table;
    if c.lying {
        // sequence 1 claims far more than the cache holds, sequence 2 a negative length; and sequence 1's
        // table row points outside the pool
        lens[1] = 1 << 30;
        lens[2] = -7;
        if let Some((t, mp)) = table.as_mut() {
            t[*mp] = 1 << 28;
            t[*mp + 1] = -1;
        }
        honest = vec![0];
    }
    let d_lens = gpu.stream.clone_htod(&lens).map_err(dr)?;
    let d_table = match &table {
        Some((t, _)) => Some(gpu.stream.clone_htod(t).map_err(dr)?),
        None => None,
    };
    let host_lens: Vec<i32> = lens.clone();
    let call = KvCacheCall {
        q: TensorView::of_slice("q", &d_q, 0, dt, Layout::bshd(b, h, nq, d)).map_err(le)?,
        k_cache: TensorViewMut::of_slice("k_cache", &mut d_kc, 0, dt, cache_layout).map_err(le)?,
        v_cache: TensorViewMut::of_slice("v_cache", &mut d_vc, 0, dt, cache_layout).map_err(le)?,
        cache_seqlens: BufferView::of(&d_lens),
        host_cache_seqlens: c.host_copies.then_some(host_lens.as_slice()),
        block_table: match (&d_table, &table) {
            (Some(dt_), Some((t, mp))) => Some(BlockTable { table: BufferView::of(dt_), max_pages: *mp, host: c.host_copies.then_some(t.as_slice()) }),
            _ => None,
        },
        k_new: if nn > 0 { Some(TensorView::of_slice("k_new", &d_kn, 0, dt, Layout::bshd(b, hkv, nn, d)).map_err(le)?) } else { None },
        v_new: if nn > 0 { Some(TensorView::of_slice("v_new", &d_vn, 0, dt, Layout::bshd(b, hkv, nn, d)).map_err(le)?) } else { None },
        o: TensorViewMut::of_slice("o", &mut d_o, 0, dt, Layout::bshd(b, h, nq, d)).map_err(le)?,
        lse: Some(BufferViewMut::of(&mut d_lse)),
        causal: p.rules.mask.causal,
        window: p.rules.mask.window,
        softcap: p.rules.softcap.map(|c| c as f32),
        sm_scale: Some(p.rules.sm_scale as f32),
        num_splits: c.splits,
    };
    // (no schedule: the plan attention_with_kvcache makes)
    let g = flashgen_runtime::DecodeGeometry::of(&call).map_err(rt)?;
    let plan = flash.decode_plan_under(dt, &g, call.causal, call.window, call.softcap.is_some(), schedule).map_err(rt)?;
    flash.attention_with_kvcache_plan(&plan, call, flash.own_stream()).map_err(rt)?;
    gpu.stream.synchronize().map_err(dr)?;
    let all_o: Vec<u16> = gpu.stream.clone_dtoh(&d_o).map_err(dr)?;
    let all_lse: Vec<f32> = gpu.stream.clone_dtoh(&d_lse).map_err(dr)?;
    let guards = all_o[p.o_len()..].iter().all(|&x| x == nan_bits(dt)) && all_lse[p.lse_len()..].iter().all(|x| x.is_nan());
    let o: Vec<f32> = all_o[..p.o_len()].iter().map(|&x| from_bits(dt, x)).collect();
    let written = o.iter().all(|x| x.is_finite()) && all_lse[..p.lse_len()].iter().all(|x| !x.is_nan());
    let want = reference_rows(p, &x, &honest, seed);
    let got_o: Vec<f32> = want.iter().flat_map(|(r, _, _)| o[p.o_offset(*r)..p.o_offset(*r) + p.d_v].to_vec()).collect();
    let want_o: Vec<f64> = want.iter().flat_map(|(_, o, _)| o.clone()).collect();
    let got_l: Vec<f32> = want.iter().map(|(r, _, _)| all_lse[p.lse_offset(*r)]).collect();
    let want_l: Vec<f64> = want.iter().map(|(_, _, l)| *l).collect();
    let eo = if written { relative_error(&got_o, &want_o) } else { f64::INFINITY };
    let el = relative_error_lse(&got_l, &want_l);
    // the caches: the reference's append, every element (lying sequences aside)
    let appended = c.lying || {
        let (mut kc, mut vc) = (k_cache.clone(), v_cache.clone());
        reference::append_kv(p, &mut kc, &mut vc, &k_new, &v_new);
        let down = |buf: &flashgen_runtime::cudarc::driver::CudaSlice<u16>| -> Result<Vec<f32>, String> { Ok(gpu.stream.clone_dtoh(buf).map_err(dr)?[..kc.len()].iter().map(|&x| from_bits(dt, x)).collect()) };
        down(&d_kc)? == kc && down(&d_vc)? == vc
    };
    Ok((eo, el, appended, guards))
}

/// Every decode case; returns (passed, failed).
pub fn gpu_check(flash: &Flash, a: &CheckArgs, json: &mut Option<std::fs::File>) -> Result<(usize, usize), String> {
    let (mut passed, mut failed) = (0, 0);
    let mut seed = a.seed ^ 0xdec;
    let schedule = a.decode_schedule;
    for c in cases(a) {
        if !a.selects(&format!("decode {} {}", c.dtype.name(), c.label)) {
            continue;
        }
        seed = seed.wrapping_add(0x9E37_79B9);
        let d = c.p.d_qk;
        let (result, (eo, el, appended, guards)) = match run_case(flash, &c, schedule.unwrap_or(flashgen::ScheduleOverrides::NONE), seed) {
            Ok(r) => (if r.0 <= O_TOL && r.1 <= M_TOL && r.2 && r.3 { "pass" } else { "FAIL" }, r),
            Err(why) => {
                println!("FAIL decode {} d{d} {}: {why}", c.dtype.name(), c.label);
                ("error", (f64::INFINITY, f64::INFINITY, false, false))
            }
        };
        if result == "pass" { passed += 1 } else { failed += 1 }
        let line = format!(
            "{{\"kind\":\"check_decode\",\"case\":\"{}\",\"dtype\":\"{}\",\"D\":{d},\"schedule\":\"{}\",\"splits\":\"{}\",\"host_copies\":{},\"rel_err_o\":{eo:.3e},\"rel_err_lse\":{el:.3e},\"caches_appended\":{appended},\"guards_intact\":{guards},\"pass\":{}}}",
            c.label,
            c.dtype.name(),
            schedule.map_or(String::new(), |s| s.to_string()),
            c.splits.map_or("heuristic".to_string(), |s| s.to_string()),
            c.host_copies,
            result == "pass"
        );
        if result == "FAIL" {
            println!("FAIL {line}");
        }
        if let Some(f) = json.as_mut() {
            writeln!(f, "{line}").map_err(|e| e.to_string())?;
        }
    }
    println!("decode{}: {passed} passed, {failed} failed", schedule.map_or(String::new(), |s| format!(" @{s}")));
    Ok((passed, failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        check: CheckArgs,
    }

    /// Every case is a valid problem whose views the runtime accepts (the harness builds no call the host
    /// checks would refuse), and the cases cover what the check promises.
    #[test]
    fn cases_are_valid_calls() {
        for quick in [false, true] {
            let args: Vec<&str> = if quick { vec!["check", "--quick"] } else { vec!["check"] };
            let a = Cli::parse_from(args).check;
            let all = cases(&a);
            assert!(all.len() >= if quick { 20 } else { 80 }, "{}", all.len());
            for c in &all {
                c.p.validate(None).unwrap_or_else(|e| panic!("{}: {e}", c.label));
                let (b, h, hkv, d, nq, nn) = (c.p.batch, c.p.heads, c.p.kv_heads, c.p.d_qk, c.p.n_q, c.p.n_new);
                let (cache, table) = match &c.p.storage {
                    CacheStorage::Contiguous { capacity } => (Layout::bshd(b, hkv, *capacity, d), None),
                    CacheStorage::Paged { page_size, pages, max_pages, block_table } => (Layout::bshd(*pages, hkv, *page_size, d), Some((block_table.iter().map(|&x| x as i32).collect::<Vec<_>>(), *max_pages))),
                };
                let fake = |name: &'static str, l: Layout| unsafe { TensorView::from_raw_parts(name, 0x10000, l.extent(), c.dtype, l) }.unwrap();
                let fake_mut = |name: &'static str, l: Layout| unsafe { TensorViewMut::from_raw_parts(name, 0x10000, l.extent(), c.dtype, l) }.unwrap();
                let lens: Vec<i32> = c.p.cache_seqlens.iter().map(|&l| l as i32).collect();
                let call = KvCacheCall {
                    q: fake("q", Layout::bshd(b, h, nq, d)),
                    k_cache: fake_mut("k_cache", cache),
                    v_cache: fake_mut("v_cache", cache),
                    cache_seqlens: unsafe { BufferView::from_raw_parts(0x20000, b) },
                    host_cache_seqlens: (!c.lying).then_some(lens.as_slice()),
                    block_table: table.as_ref().map(|(t, mp)| BlockTable { table: unsafe { BufferView::from_raw_parts(0x30000, t.len()) }, max_pages: *mp, host: Some(t.as_slice()) }),
                    k_new: (nn > 0).then(|| fake("k_new", Layout::bshd(b, hkv, nn, d))),
                    v_new: (nn > 0).then(|| fake("v_new", Layout::bshd(b, hkv, nn, d))),
                    o: fake_mut("o", Layout::bshd(b, h, nq, d)),
                    lse: None,
                    causal: c.p.rules.mask.causal,
                    window: c.p.rules.mask.window,
                    softcap: c.p.rules.softcap.map(|c| c as f32),
                    sm_scale: None,
                    num_splits: c.splits,
                };
                flashgen_runtime::DecodeGeometry::of(&call).unwrap_or_else(|e| panic!("{}: {e}", c.label));
            }
            if !quick {
                let longest = all.iter().flat_map(|c| c.p.cache_seqlens.iter().copied()).max().unwrap_or(0);
                assert!(longest > 20000, "lengths up to 40000: {longest}");
                assert!(all.iter().any(|c| c.p.cache_seqlens.contains(&0)));
                assert!(all.iter().any(|c| c.p.group() * c.p.n_q > 32), "row tiles");
                assert!(all.iter().any(|c| c.lying));
            }
        }
    }
}
