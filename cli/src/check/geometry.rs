//! The geometry cases on the GPU against flashgen::reference (f64): grouped-query heads (H_kv 1, 2, 8 of H
//! 8..64), unequal query and key lengths both ways (ragged, causal aligned bottom-right and top-left),
//! packed variable-length sequences (seeded lengths 0..4097 with empty ones, both dtypes, D 64 and 128,
//! causal or not), forward and backward, through the view-level calls with poisoned outputs and guard
//! zones (every element written, nothing past the end). Also sliding windows (left, right, with causal,
//! unequal lengths, GQA and packed sequences), softcap, score_mod and mask_mod, forward and backward, V
//! narrower than Q and K (192/128) and HEAD_DIM 256 with softcap, on every GPU's kernels.

use super::args::CheckArgs;
use super::common::{nan_bits, GRAD_TOL, GUARD, M_TOL, O_TOL};
use flashgen::numeric::SplitMix;
use flashgen::reference::{self, relative_error, relative_error_lse, Alignment, Qkv, RefProblem, TensorOrder, Window};
use flashgen::mods::{MaskMod, Scalar, ScoreMod, TensorData, TensorDecl, Tensors};
use flashgen::DType;
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen_runtime::{BackwardCall, CallModifiers, ModTensor, BufferView, BufferViewMut, CausalAlign, Flash, ForwardCall, Layout, StatsIn, StatsOut, TensorView, TensorViewMut, VarLen};
use std::io::Write;

/// One geometry case: the problem (BSHD tensors, FlashAttention's layout; packed: THD).
struct Case {
    label: String,
    dtype: DType,
    problem: RefProblem,
    /// A score_mod / mask_mod and the values of the tensors they read.
    mods: Option<CaseMods>,
}

#[derive(Clone)]
struct CaseMods {
    score: Option<ScoreMod>,
    mask: Option<MaskMod>,
    tensors: Tensors,
}

impl CaseMods {
    /// The reference problem with the same modifiers (evaluated in f64 by the expressions' interpreter).
    fn on(&self, p: RefProblem) -> RefProblem {
        p.modifiers(self.score.as_ref(), self.mask.as_ref(), &self.tensors)
    }
}

/// Lengths 0..=max, a few of them zero, from `rng`.
fn lengths(rng: &mut SplitMix, batch: usize, max: usize) -> Vec<usize> {
    (0..batch).map(|_| if rng.next_u64() % 6 == 0 { 0 } else { (rng.next_u64() % (max as u64 + 1)) as usize }).collect()
}

/// Every case runs on every GPU: the problems the fused kernels and fwd_ws serve on sm_90a (windows, softcap,
/// modifiers, 192/128, HEAD_DIM 256) run on the mma.sync kernels elsewhere (and with FLASHGEN_WGMMA=0).
fn cases(a: &CheckArgs, seed: u64) -> Vec<Case> {
    let mut rng = SplitMix(seed ^ 0x6e0);
    let mut out = Vec::new();
    let mut push = |label: String, dtype: DType, problem: RefProblem| out.push(Case { label, dtype, problem, mods: None });
    let mut modified: Vec<Case> = Vec::new();
    let long = if a.quick { 1100 } else { 4097 };
    for (dtype, d) in [(DType::Bf16, 128), (DType::F16, 64)] {
        for causal in [false, true] {
            // grouped-query heads
            for (h, hkv, n) in [(8, 1, 257), (16, 2, 200), (64, 8, 130)] {
                let p = RefProblem::new(1, h, n, d).kv_heads(hkv).causal(causal).order(TensorOrder::Bshd);
                push(format!("gqa H{h}/{hkv} N{n}"), dtype, p);
            }
            // unequal lengths, both alignments
            for (nq, nkv) in [(100, 300), (300, 100), (1, 513), (513, 1), (1000, 1023)] {
                for align in [Alignment::BottomRight, Alignment::TopLeft] {
                    if !causal && align == Alignment::TopLeft {
                        continue; // the alignment only moves a causal mask
                    }
                    let p = RefProblem::new(2, 4, nq, d).kv_heads(2).seqlens(nq, nkv).causal(causal).alignment(align).order(TensorOrder::Bshd);
                    push(format!("N_q {nq} N_kv {nkv} {align:?}"), dtype, p);
                }
            }
            if causal {
                // a program's tiles that see a key followed by tiles that see none, on a grid of more tiles than
                // SMs (bottom-right with N_q − N_kv past a query block; packed queries without keys): the
                // persistent forward's last turn must not wait on them (it deadlocked before 2c51b96)
                let p = RefProblem::new(2, 32, 2048, d).kv_heads(8).seqlens(2048, 200).causal(true).order(TensorOrder::Bshd);
                push("vacant after keyed N_q 2048 N_kv 200 H32/8".into(), dtype, p);
                let (q, k) = ([700, 300, 0, 900, 1200, 64, 500, 2000], [0, 300, 500, 100, 0, 64, 0, 1]);
                let p = RefProblem::new(8, 16, 1, d).kv_heads(4).varlen_from_lengths(&q, &k).causal(true).order(TensorOrder::Bshd);
                push(format!("varlen queries without keys q {q:?} k {k:?}"), dtype, p);
            }
            // packed sequences: equal query and key lengths per sequence, then unequal ones
            let (lq, lk) = (lengths(&mut rng, 5, long), lengths(&mut rng, 5, long));
            let p = RefProblem::new(5, 4, 1, d).kv_heads(2).varlen_from_lengths(&lq, &lq).causal(causal).order(TensorOrder::Bshd);
            push(format!("varlen {lq:?}"), dtype, p);
            let p = RefProblem::new(5, 4, 1, d).varlen_from_lengths(&lq, &lk).causal(causal).order(TensorOrder::Bshd);
            push(format!("varlen q {lq:?} k {lk:?}"), dtype, p);
            if d == 128 {
                // V narrower than Q and K (DeepSeek's 192/128): equal, unequal, grouped and packed
                let dims = |p: RefProblem| p.head_dims(192, 128).order(TensorOrder::Bshd);
                push("dv 192/128 N1000".into(), dtype, dims(RefProblem::new(2, 4, 1000, 192).causal(causal)));
                push("dv 192/128 gqa H8/2 N_q 300 N_kv 700".into(), dtype, dims(RefProblem::new(1, 8, 300, 192).kv_heads(2).seqlens(300, 700).causal(causal)));
                push(format!("dv 192/128 varlen {lq:?}"), dtype, dims(RefProblem::new(5, 4, 1, 192).varlen_from_lengths(&lq, &lq).causal(causal)));
                // HEAD_DIM 256 (Gemma's width) with softcap and a sliding window: the split-ring ping-pong
                // tile forward, the wgmma pair backward (dK/dV on the column warpgroups, P times softcap's
                // derivative handed over)
                let gemma = RefProblem::new(2, 4, 1000, 256).kv_heads(2).softcap(1.0).causal(causal).order(TensorOrder::Bshd);
                push("D256 softcap 1 gqa H4/2 N1000".into(), dtype, gemma.clone());
                push("D256 softcap 1 window left 300 N1000".into(), dtype, gemma.window(Window { left: Some(300), right: if causal { Some(0) } else { None } }));
            }
            window_cases(&mut push, dtype, d, causal, long, &lq);
            fused_window_cases(&mut push, dtype, causal);
            modifier_cases(&mut modified, dtype, d, causal, &lq);
            fused_modifier_cases(&mut modified, dtype, causal, a.quick);
        }
    }
    out.extend(modified);
    out
}

/// score_mod and mask_mod (fwd_ws and the wgmma backward pair on sm_90a, the mma.sync kernels elsewhere), forward and backward: ALiBi with the causal flag (a causal
/// kernel with a score_mod), causal written as a mask_mod (the proved interval path), a document mask with
/// a per-batch tensor and ALiBi after softcap (the per-element path, and the call's softcap joining the
/// score_mod), a mask that is no interval, a mask with the causal flag on unequal lengths (the diagonal
/// joins the mask, bottom-right), and ALiBi on packed sequences.
fn modifier_cases(out: &mut Vec<Case>, dtype: DType, d: usize, causal: bool, lens: &[usize]) {
    use flashgen::mods::builtins;
    let slopes: Vec<f32> = (0..16).map(|h| 0.5f32.powi(h + 1) * 4.0).collect();
    let alibi = builtins::alibi("slope").ok();
    let with_slopes = Tensors::new().f32("slope", slopes);
    let mut push = |label: &str, problem: RefProblem, mods: CaseMods| {
        let problem = mods.on(problem.order(TensorOrder::Bshd));
        out.push(Case { label: format!("mods {label}"), dtype, problem, mods: Some(mods) });
    };
    let m = CaseMods { score: alibi.clone(), mask: None, tensors: with_slopes.clone() };
    push("alibi N1000", RefProblem::new(2, 4, 1000, d).causal(causal), m.clone());
    push(&format!("alibi varlen {lens:?}"), RefProblem::new(5, 4, 1, d).varlen_from_lengths(lens, lens).causal(causal), m);
    if causal {
        return;
    }
    let m = CaseMods { score: None, mask: builtins::causal(0).ok(), tensors: Tensors::new() };
    push("mask causal N1000", RefProblem::new(2, 4, 1000, d), m);
    let docs = flashgen::mods::MaskMod::parse("q_idx // 128 >= kv_idx // 128 && kv_idx < doc_end[b]", &[TensorDecl::per_batch("doc_end", Scalar::I32)]).ok();
    let m = CaseMods { score: alibi.clone(), mask: docs, tensors: with_slopes.clone().i32("doc_end", vec![500, 777]) };
    push("docs alibi softcap 1 N777", RefProblem::new(2, 4, 777, d).softcap(1.0), m);
    let stripes = flashgen::mods::MaskMod::parse("(q_idx + kv_idx) % 3 != 0 || kv_idx == 0", &[]).ok();
    let m = CaseMods { score: None, mask: stripes, tensors: Tensors::new() };
    push("mask stripes N600", RefProblem::new(1, 4, 600, d), m);
    // grouped-query heads: dK/dV's steps walk a group's query heads (ALiBi's slope per step; the causal
    // mask's query range), and a per-head window (no query range: it varies with the head)
    let m = CaseMods { score: alibi.clone(), mask: builtins::causal(0).ok(), tensors: with_slopes.clone() };
    push("gqa alibi mask causal H16/4 N600", RefProblem::new(1, 16, 600, d).kv_heads(4), m);
    let per_head = flashgen::mods::MaskMod::parse("kv_idx <= q_idx && q_idx - kv_idx < w[h]", &[TensorDecl::per_head("w", Scalar::I32)]).ok();
    let m = CaseMods { score: None, mask: per_head, tensors: Tensors::new().i32("w", vec![40, 100, 300, 7, 64, 65, 1000, 1]) };
    push("gqa window per head H8/2 N500", RefProblem::new(2, 8, 500, d).kv_heads(2), m);
    // packed sequences (empty ones too): a causal window of 100 written as the mask, with ALiBi; positions
    // count within each sequence
    let band = flashgen::mods::MaskMod::parse("kv_idx <= q_idx && q_idx - kv_idx < 100", &[]).ok();
    let m = CaseMods { score: alibi.clone(), mask: band, tensors: with_slopes.clone() };
    push(&format!("varlen band alibi {lens:?}"), RefProblem::new(5, 4, 1, d).kv_heads(2).varlen_from_lengths(lens, lens), m);
    let even = flashgen::mods::MaskMod::parse("kv_idx % 2 == 0", &[]).ok();
    let m = CaseMods { score: alibi, mask: even, tensors: with_slopes };
    push("mask even alibi causal N_q 300 N_kv 700", RefProblem::new(2, 4, 300, d).kv_heads(2).seqlens(300, 700).causal(true), m);
}

/// Softcap and score_mods where the backward runs fused (HEAD_DIM 96 and 128 from 1024 tokens, `plan`; 64's
/// tile takes softcap alone): ALiBi on a ragged length (the zero-filled queries past it masked), on a whole
/// number of blocks, over a GQA group (the slope of each step's query head, the folded causal grid),
/// on unequal lengths in both alignments, after softcap in one score_mod; softcap at a cap that bends the
/// scores, alone and with a causal window (bwd_fused_up's window). `quick`: one case of each path (D96 and
/// D128's ALiBi on a ragged length, GQA, one unequal-length case, softcap alone and after ALiBi, the window).
fn fused_modifier_cases(out: &mut Vec<Case>, dtype: DType, causal: bool, quick: bool) {
    use flashgen::mods::builtins;
    let slopes: Vec<f32> = (0..16).map(|h| 0.5f32.powi(h + 1)).collect();
    let alibi = builtins::alibi("slope").ok();
    let capped = builtins::softcap(2.0).and_then(|c| c.then(&builtins::alibi("slope")?)).ok();
    let with_slopes = Tensors::new().f32("slope", slopes);
    let mut push = |label: String, problem: RefProblem, mods: Option<CaseMods>| {
        let problem = problem.order(TensorOrder::Bshd);
        let problem = match &mods {
            Some(m) => m.on(problem),
            None => problem,
        };
        out.push(Case { label: format!("fused-mods {label}"), dtype, problem, mods });
    };
    let m = || Some(CaseMods { score: alibi.clone(), mask: None, tensors: with_slopes.clone() });
    for d in [128, 96, 64] {
        if !(quick && d == 96) {
            let cap = RefProblem::new(2, 4, 1200, d).softcap(1.0).causal(causal);
            push(format!("D{d} softcap 1 N1200"), cap, None);
        }
        if d == 64 {
            continue; // (a score_mod runs on the pair at 64)
        }
        push(format!("D{d} alibi N1500"), RefProblem::new(2, 4, 1500, d).causal(causal), m());
        if !(quick && d == 96) {
            push(format!("D{d} alibi gqa H16/4 N1200"), RefProblem::new(1, 16, 1200, d).kv_heads(4).causal(causal), m());
        }
    }
    if !quick {
        push("D128 alibi N2048".into(), RefProblem::new(1, 4, 2048, 128).causal(causal), m());
    }
    let aligns = match (causal, quick) {
        (true, false) => vec![Alignment::BottomRight, Alignment::TopLeft],
        (true, true) => vec![Alignment::TopLeft],
        (false, _) => vec![Alignment::BottomRight],
    };
    let lengths: &[(usize, usize)] = if quick { &[(1500, 1100)] } else { &[(1100, 1500), (1500, 1100)] };
    for &(nq, nkv) in lengths {
        for &align in &aligns {
            let p = RefProblem::new(2, 4, nq, 128).kv_heads(2).seqlens(nq, nkv).causal(causal).alignment(align);
            push(format!("D128 alibi N_q {nq} N_kv {nkv} {align:?}"), p, m());
        }
    }
    let both = Some(CaseMods { score: capped, mask: None, tensors: with_slopes.clone() });
    push("D128 softcap 2 then alibi N1300".into(), RefProblem::new(2, 4, 1300, 128).causal(causal), both);
    if causal {
        let p = RefProblem::new(2, 4, 1500, 128).window(Window { left: Some(100), right: None }).softcap(1.0).causal(true);
        push("D128 softcap 1 window N1500 left 100".into(), p, None);
    }
}

/// Sliding windows and softcap (fwd_ws and the wgmma backward pair on sm_90a, the mma.sync kernels elsewhere): left bounds inside a block and
/// across many, a bounded right side without causal (the kernel's shifted diagonal), unequal lengths that
/// leave rows without keys in both alignments, GQA, packed sequences; softcap at a cap small enough to bend
/// the scores (cap 1: tanh is far from linear on N(0, 1) scores), alone and with a window.
fn window_cases(push: &mut impl FnMut(String, DType, RefProblem), dtype: DType, d: usize, causal: bool, long: usize, lens: &[usize]) {
    let w = |left: Option<usize>, right: Option<usize>| Window { left, right };
    for (n, left) in [(1000, 100), (long, 1024.min(long / 4)), (300, 0)] {
        let p = RefProblem::new(2, 4, n, d).window(w(Some(left), None)).causal(causal).order(TensorOrder::Bshd);
        push(format!("window N{n} left {left}"), dtype, p);
    }
    if !causal {
        for (left, right) in [(Some(64), Some(200)), (None, Some(100)), (Some(300), Some(0))] {
            let p = RefProblem::new(2, 4, 777, d).window(w(left, right)).order(TensorOrder::Bshd);
            push(format!("window N777 ({left:?}, {right:?})"), dtype, p);
        }
    }
    for (nq, nkv) in [(300, 700), (700, 300)] {
        for align in [Alignment::BottomRight, Alignment::TopLeft] {
            let p = RefProblem::new(2, 4, nq, d).kv_heads(2).seqlens(nq, nkv).window(w(Some(150), None)).causal(causal).alignment(align).order(TensorOrder::Bshd);
            push(format!("window N_q {nq} N_kv {nkv} {align:?} left 150"), dtype, p);
        }
    }
    let p = RefProblem::new(1, 16, 600, d).kv_heads(4).window(w(Some(200), None)).causal(causal).order(TensorOrder::Bshd);
    push("window gqa H16/4 N600 left 200".into(), dtype, p);
    let p = RefProblem::new(5, 4, 1, d).varlen_from_lengths(lens, lens).window(w(Some(333), None)).causal(causal).order(TensorOrder::Bshd);
    push(format!("window varlen {lens:?} left 333"), dtype, p);
    for (n, cap) in [(1000, 1.0), (long, 30.0)] {
        let p = RefProblem::new(2, 4, n, d).softcap(cap).causal(causal).order(TensorOrder::Bshd);
        push(format!("softcap {cap} N{n}"), dtype, p);
    }
    let p = RefProblem::new(2, 4, 900, d).window(w(Some(100), None)).softcap(1.0).causal(causal).order(TensorOrder::Bshd);
    push("softcap 1 window N900 left 100".into(), dtype, p);
}

/// Causal windows where the backward runs fused (bwd_fused_up: HEAD_DIM 128 from 1024 tokens, `plan`): left
/// bounds inside a key block and across several, a bounded right side (the shifted diagonal), GQA and
/// unequal lengths in both alignments (top-left with more queries leaves query blocks past every key:
/// their dQ is 0), packed sequences.
fn fused_window_cases(push: &mut impl FnMut(String, DType, RefProblem), dtype: DType, causal: bool) {
    let w = |left: Option<usize>, right: Option<usize>| Window { left, right };
    let d = 128;
    if !causal {
        let p = RefProblem::new(1, 4, 1200, d).window(w(Some(200), Some(64))).order(TensorOrder::Bshd);
        push("window-fused N1200 (200, 64)".into(), dtype, p);
        return;
    }
    for (n, left) in [(1500, 100), (2048, 1000)] {
        let p = RefProblem::new(2, 4, n, d).window(w(Some(left), None)).causal(true).order(TensorOrder::Bshd);
        push(format!("window-fused N{n} left {left}"), dtype, p);
    }
    let p = RefProblem::new(1, 16, 1200, d).kv_heads(4).window(w(Some(300), None)).causal(true).order(TensorOrder::Bshd);
    push("window-fused gqa H16/4 N1200 left 300".into(), dtype, p);
    for (nq, nkv, align) in [(1100, 1500, Alignment::BottomRight), (1500, 1100, Alignment::BottomRight), (1100, 1500, Alignment::TopLeft), (1500, 1100, Alignment::TopLeft)] {
        let p = RefProblem::new(2, 4, nq, d).kv_heads(2).seqlens(nq, nkv).window(w(Some(250), None)).causal(true).alignment(align).order(TensorOrder::Bshd);
        push(format!("window-fused N_q {nq} N_kv {nkv} {align:?} left 250"), dtype, p);
    }
    // packed sequences (an empty one, N_q ≠ N_kv both ways, the longest past 1024 tokens: the plan's bwd_fused_up)
    let (lq, lk) = ([1500, 0, 300, 2048, 700], [1500, 0, 900, 1800, 700]);
    let p = RefProblem::new(5, 4, 1, d).kv_heads(2).varlen_from_lengths(&lq, &lk).window(w(Some(300), None)).causal(true).order(TensorOrder::Bshd);
    push(format!("window-fused varlen q {lq:?} k {lk:?} left 300"), dtype, p);
}

/// The f64 forward with its rows split over all cores.
fn forward_parallel(p: &RefProblem, x: &Qkv<'_>) -> (Vec<f64>, Vec<f64>) {
    let l = p.layouts();
    let rows: Vec<_> = p.rows().collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = rows.len().div_ceil(threads).max(1);
    let parts: Vec<Vec<(usize, usize, Vec<f64>, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(per)
            .map(|chunk| {
                s.spawn(|| {
                    chunk
                        .iter()
                        .map(|&row| {
                            let mut o = vec![0f64; p.d_v];
                            let lse = reference::forward_row(p, x, row, &mut o);
                            (p.o_offset(&l, row), p.lse_offset(&l, row), o, lse)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_default()).collect()
    });
    let (mut o, mut lse) = (vec![0f64; p.o_len()], vec![0f64; p.lse_len()]);
    for (at, lat, row, l) in parts.into_iter().flatten() {
        o[at..at + row.len()].copy_from_slice(&row);
        lse[lat] = l;
    }
    (o, lse)
}

/// The f64 backward with its (sequence, K/V head) groups split over all cores.
fn backward_parallel(p: &RefProblem, x: &Qkv<'_>, d_o: &[f32]) -> reference::Gradients<f64> {
    let l = p.layouts();
    let groups: Vec<(usize, usize)> = (0..p.sequences()).flat_map(|b| (0..p.kv_heads).map(move |h| (b, h))).collect();
    let done: Vec<reference::GroupGradients> = std::thread::scope(|s| {
        let handles: Vec<_> = groups.iter().map(|&(b, h)| s.spawn(move || reference::backward_group(p, x, d_o, b, h))).collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let mut g = reference::Gradients { dq: vec![0.0; p.q_len()], dk: vec![0.0; p.k_len()], dv: vec![0.0; p.v_len()] };
    for gg in done {
        gg.scatter(p, &l, &mut g);
    }
    g
}

/// The runtime's [Z, H, N, D] layout of a reference tensor in BSHD (packed: THD, Z = 1), `d` wide.
fn layout(p: &RefProblem, heads: usize, tokens: usize, batch: usize, d: usize) -> Layout {
    if matches!(p.lengths, reference::Lengths::Varlen { .. }) {
        Layout::bshd(1, heads, tokens, d)
    } else {
        Layout::bshd(batch, heads, tokens / batch.max(1), d)
    }
}

/// Run one case forward and backward; returns (worst O/LSE/gradient errors, guards intact).
fn run_case(flash: &Flash, c: &Case, seed: u64) -> Result<([f64; 5], bool), String> {
    let e = |x: flashgen_runtime::RuntimeError| x.to_string();
    let le = |x: flashgen_runtime::LayoutError| x.to_string();
    let dr = |x: flashgen_runtime::cudarc::driver::DriverError| x.to_string();
    let gpu = &flash.gpu;
    let p = &c.problem;
    let dtype = c.dtype;
    let mut rng = SplitMix(seed);
    let round = |x: f32| from_bits(dtype, to_bits(dtype, x));
    let mut gen = |n: usize| -> Vec<f32> { (0..n).map(|_| round(rng.normal())).collect() };
    let (q, k, v, d_o) = (gen(p.q_len()), gen(p.k_len()), gen(p.v_len()), gen(p.o_len()));
    let x = Qkv { q: &q, k: &k, v: &v };
    let (varlen, batch, total_q, total_k) = match &p.lengths {
        reference::Lengths::Varlen { cu_q, cu_k } => (Some((cu_q.clone(), cu_k.clone())), 1, *cu_q.last().unwrap_or(&0), *cu_k.last().unwrap_or(&0)),
        reference::Lengths::Fixed { q: nq, kv: nkv } => (None, p.batch, p.batch * nq, p.batch * nkv),
    };
    let (lq, lk) = (layout(p, p.heads, total_q, batch, p.d_qk), layout(p, p.kv_heads, total_k, batch, p.d_qk));
    // (V, O, dO, dV: the value head dim, narrower than Q's and K's in DeepSeek's 192/128)
    let (lqv, lkv) = (layout(p, p.heads, total_q, batch, p.d_v), layout(p, p.kv_heads, total_k, batch, p.d_v));
    let up = |vals: &[f32]| -> Result<_, String> { gpu.stream.clone_htod(&vals.iter().map(|&x| to_bits(dtype, x)).collect::<Vec<u16>>()).map_err(dr) };
    let poisoned = |n: usize| -> Result<_, String> { gpu.stream.clone_htod(&vec![nan_bits(dtype); n + GUARD]).map_err(dr) };
    let (dq_in, dk_in, dv_in, ddo) = (up(&q)?, up(&k)?, up(&v)?, up(&d_o)?);
    let mut o = poisoned(p.o_len())?;
    let mut lse = gpu.stream.clone_htod(&vec![f32::NAN; p.lse_len().max(1) + GUARD]).map_err(dr)?;
    let cu = match &varlen {
        Some((cq, ck)) => {
            let i32s = |v: &[usize]| v.iter().map(|&x| x as i32).collect::<Vec<i32>>();
            Some((i32s(cq), i32s(ck)))
        }
        None => None,
    };
    let cu_dev = match &cu {
        Some((cq, ck)) => Some((gpu.stream.clone_htod(cq).map_err(dr)?, gpu.stream.clone_htod(ck).map_err(dr)?)),
        None => None,
    };
    let max_len = |cu: &[usize]| cu.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let var = match (&varlen, &cu, &cu_dev) {
        (Some((cq, ck)), Some((hq, hk)), Some((dq, dk))) => Some(VarLen {
            cu_seqlens_q: BufferView::of(dq),
            cu_seqlens_k: BufferView::of(dk),
            max_seqlen_q: max_len(cq),
            max_seqlen_k: max_len(ck),
            host_cu_seqlens_q: Some(hq),
            host_cu_seqlens_k: Some(hk),
        }),
        _ => None,
    };
    let align = match p.rules.mask.alignment {
        Alignment::BottomRight => CausalAlign::BottomRight,
        Alignment::TopLeft => CausalAlign::TopLeft,
    };
    let causal = p.rules.mask.causal;
    let view = |name, buf, l| TensorView::of_slice(name, buf, 0, dtype, l).map_err(le);
    let stream = flash.own_stream();
    // the modifiers' tensors on the GPU, by name
    let mut f32s = Vec::new();
    let mut i32s = Vec::new();
    if let Some(m) = &c.mods {
        for d in [m.score.as_ref().map(|s| s.tensors()), m.mask.as_ref().map(|x| x.tensors())].into_iter().flatten().flatten() {
            match m.tensors.get(&d.name) {
                Some(TensorData::F32(v)) if !f32s.iter().any(|(n, _)| *n == d.name) => f32s.push((d.name.clone(), gpu.stream.clone_htod(v).map_err(dr)?)),
                Some(TensorData::I32(v)) if !i32s.iter().any(|(n, _)| *n == d.name) => i32s.push((d.name.clone(), gpu.stream.clone_htod(v).map_err(dr)?)),
                _ => {}
            }
        }
    }
    let modifiers = c.mods.as_ref().map(|m| CallModifiers {
        score: m.score.clone(),
        mask: m.mask.clone(),
        tensors: f32s.iter().map(|(n, b)| (n.as_str(), ModTensor::F32(BufferView::of(b)))).chain(i32s.iter().map(|(n, b)| (n.as_str(), ModTensor::I32(BufferView::of(b))))).collect(),
    });
    let call = ForwardCall {
        q: view("Q", &dq_in, lq)?,
        k: view("K", &dk_in, lk)?,
        v: view("V", &dv_in, lkv)?,
        o: TensorViewMut::of_slice("O", &mut o, 0, dtype, lqv).map_err(le)?,
        stats: StatsOut::Lse(BufferViewMut::of(&mut lse)),
        causal,
        align,
        sm_scale: Some(p.rules.sm_scale as f32),
        varlen: var,
        window: p.rules.mask.window,
        softcap: p.rules.softcap.map(|c| c as f32),
        modifiers: modifiers.clone(),
    };
    flash.forward(call, stream).map_err(e)?;
    let mut grads: Vec<_> = [p.q_len(), p.k_len(), p.v_len()].into_iter().map(poisoned).collect::<Result<_, _>>()?;
    {
        let [gq, gk, gv] = &mut grads[..] else { return Err("three gradients".into()) };
        let call = BackwardCall {
            q: view("Q", &dq_in, lq)?,
            k: view("K", &dk_in, lk)?,
            v: view("V", &dv_in, lkv)?,
            o: view("O", &o, lqv)?,
            d_o: view("dO", &ddo, lqv)?,
            stats: StatsIn::Lse(BufferView::of(&lse)),
            dq: TensorViewMut::of_slice("dQ", gq, 0, dtype, lq).map_err(le)?,
            dk: TensorViewMut::of_slice("dK", gk, 0, dtype, lk).map_err(le)?,
            dv: TensorViewMut::of_slice("dV", gv, 0, dtype, lkv).map_err(le)?,
            causal,
            align,
            sm_scale: Some(p.rules.sm_scale as f32),
            varlen: var,
            window: p.rules.mask.window,
            softcap: p.rules.softcap.map(|c| c as f32),
            modifiers,
        };
        flash.backward(call, stream).map_err(e)?;
    }
    gpu.stream.synchronize().map_err(dr)?;
    let down = |buf: &flashgen_runtime::cudarc::driver::CudaSlice<u16>, n: usize| -> Result<(Vec<f32>, bool), String> {
        let all: Vec<u16> = gpu.stream.clone_dtoh(buf).map_err(dr)?;
        Ok((all[..n].iter().map(|&b| from_bits(dtype, b)).collect(), all[n..].iter().all(|&b| b == nan_bits(dtype))))
    };
    let (got_o, o_guard) = down(&o, p.o_len())?;
    let all_lse: Vec<f32> = gpu.stream.clone_dtoh(&lse).map_err(dr)?;
    let lse_guard = all_lse[p.lse_len().max(1)..].iter().all(|x| x.is_nan());
    let (want_o, want_lse) = forward_parallel(p, &x);
    let o_errs = [relative_error(&got_o, &want_o), relative_error_lse(&all_lse[..p.lse_len()], &want_lse)];
    let g = backward_parallel(p, &x, &d_o);
    let (gq, gq_guard) = down(&grads[0], p.q_len())?;
    let (gk, gk_guard) = down(&grads[1], p.k_len())?;
    let (gv, gv_guard) = down(&grads[2], p.v_len())?;
    // dV's norm floors the gradients' denominators, as in the MHA backward check
    let floor = g.dv.iter().map(|x| x * x).sum::<f64>().sqrt();
    let grad_err = |got: &[f32], want: &[f64]| {
        let num = got.iter().zip(want).map(|(&a, &b)| (a as f64 - b).powi(2)).sum::<f64>().sqrt();
        let den = want.iter().map(|x| x * x).sum::<f64>().sqrt().max(floor).max(f64::MIN_POSITIVE);
        if got.iter().any(|x| !x.is_finite()) { f64::INFINITY } else { num / den }
    };
    let errs = [o_errs[0], o_errs[1], grad_err(&gq, &g.dq), grad_err(&gk, &g.dk), grad_err(&gv, &g.dv)];
    Ok((errs, o_guard && lse_guard && gq_guard && gk_guard && gv_guard))
}

/// Every geometry case; returns (passed, failed).
pub fn gpu_check(flash: &Flash, a: &CheckArgs, json: &mut Option<std::fs::File>) -> Result<(usize, usize), String> {
    let (mut passed, mut failed) = (0, 0);
    let mut seed = a.seed ^ 0x6e0;
    for c in cases(a, a.seed) {
        if !a.selects(&c.label) {
            continue;
        }
        seed = seed.wrapping_add(0x9E37_79B9);
        let causal = c.problem.rules.mask.causal;
        let d = c.problem.d_qk;
        let (result, errs, guards) = match run_case(flash, &c, seed) {
            Ok((errs, guards)) => {
                let ok = errs[0] <= O_TOL && errs[1] <= M_TOL && errs[2..].iter().all(|&x| x <= GRAD_TOL) && guards;
                (if ok { "pass" } else { "FAIL" }, errs, guards)
            }
            Err(why) => {
                println!("FAIL geometry {} d{d} causal={} {}: {why}", c.dtype.name(), causal as u8, c.label);
                ("error", [f64::INFINITY; 5], false)
            }
        };
        if result == "pass" { passed += 1 } else { failed += 1 }
        let line = format!(
            "{{\"kind\":\"check_geometry\",\"case\":\"{}\",\"dtype\":\"{}\",\"D\":{d},\"causal\":{causal},\"rel_err_o\":{:.3e},\"rel_err_lse\":{:.3e},\"rel_err_dq\":{:.3e},\"rel_err_dk\":{:.3e},\"rel_err_dv\":{:.3e},\"guards_intact\":{guards},\"pass\":{}}}",
            c.label, c.dtype.name(), errs[0], errs[1], errs[2], errs[3], errs[4], result == "pass"
        );
        if result == "FAIL" {
            println!("FAIL {line}");
        }
        if let Some(f) = json.as_mut() {
            writeln!(f, "{line}").map_err(|e| e.to_string())?;
        }
    }
    println!("geometry: {passed} passed, {failed} failed");
    Ok((passed, failed))
}
