//! The Hopper kernels (fwd_ws: a TMA producer warpgroup and wgmma consumer warpgroups taking turns;
//! fwd_ws_persistent: the same over tiles handed out by a counter) run on the SIMT emulator (tests/simt:
//! wgmma over 128B-swizzled shared memory, TMA tensor tiles with their zero fill, mbarriers with
//! transaction bytes, named barriers) against the f64 reference: ragged lengths, grouped-query heads,
//! unequal lengths, causal or not, both dtypes; and the fused backward (bwd_fused, bwd_fused_up,
//! bwd_fused_atomic: its dQ pieces added across programs by bulk reductions in their order, then the dQ
//! sum pass), its CTAs run one after another in launch order, as its ordered chains allow. A CPU check of the code paths that otherwise only the H200
//! runs; the emulator runs each wgmma where it is issued, so it checks the arithmetic and the indexing, not
//! the ordering of asynchronous work (compute-sanitizer's racecheck on the GPU does that).

mod simt;

use flashgen::abi::{self, Entry, ParamType};
use flashgen::numeric::SplitMix;
use flashgen::plan::{self, Problem};
use flashgen::reference::{backward, forward, Qkv, RefProblem, Window};
use flashgen::spec::{defaults, GridGeometry};
use flashgen::{Arch, DType, KernelKind, KernelSpec};
use simt::{bits, bytes16, bytes32, f32s, u16s, value, Arg, Launch};
use std::collections::HashMap;

/// One forward problem: `z` sequences of `n_q` queries and `n_kv` keys, `h` query heads on `h_kv` K/V heads,
/// [Z, H, N, D] tensors, the causal diagonal bottom-right; a window (left, right) around it and softcap.
#[derive(Clone, Copy, Debug)]
struct Case {
    z: usize,
    h: usize,
    h_kv: usize,
    n_q: usize,
    n_kv: usize,
    causal: bool,
    window: Window,
    softcap: Option<f64>,
}

const RAGGED: Case = Case { z: 1, h: 2, h_kv: 1, n_q: 200, n_kv: 200, causal: false, window: Window::UNBOUNDED, softcap: None };

impl Case {
    fn reference(&self, d: usize) -> RefProblem {
        let p = RefProblem::new(self.z, self.h, self.n_q, d).kv_heads(self.h_kv).seqlens(self.n_q, self.n_kv).causal(self.causal).sm_scale(1.0 / (d as f64).sqrt()).window(self.window);
        match self.softcap {
            Some(cap) => p.softcap(cap),
            None => p,
        }
    }
    /// The plan's view of it (the kernel's features), and the window as the kernel takes it.
    fn planned(&self, dtype: DType, d: u32) -> (Problem, Window) {
        let mut p = Problem::new(dtype, d, self.causal, self.n_q);
        p.seqlen_k = self.n_kv;
        let p = p.with_window(self.window, self.softcap.is_some());
        let w = p.window;
        (p, w)
    }
}

const Q: usize = 0;
const K: usize = 1;
const V: usize = 2;
const OUT: usize = 3;
const M: usize = 4;
const COUNTER: usize = 5;

/// The emulator's tensor map of a contiguous [z, heads, rows, d] tensor in buffer `buf`, boxes of 64 columns
/// × `box_rows` rows (the runtime's `tma::tensor_map` with the same fields).
fn map(buf: usize, dtype: DType, [z, heads, rows, d]: [usize; 4], box_rows: u32) -> Arg {
    let e = dtype.bytes() as u64;
    let (d, rows, heads, z) = (d as u64, rows as u64, heads as u64, z as u64);
    Arg::TensorMap { buf, offset: 0, dims: [d, rows, heads, z], strides: [d * e, rows * d * e, heads * rows * d * e], box_rows, elem: e as u32 }
}

/// The default spec of `kind` for `c` (the table's tile for its length, the plan's features).
fn spec_for(kind: KernelKind, dtype: DType, d: u32, c: &Case) -> KernelSpec {
    let (problem, _) = c.planned(dtype, d);
    let table = defaults::spec(kind, Arch::Sm90a, dtype, d, problem.causal, c.n_q).unwrap();
    plan::with_features(&table, problem.features()).unwrap_or_else(|e| panic!("{kind:?} {c:?}: {e}"))
}

/// O and M of `spec` on the emulator for `c`, and the reference's (f64).
fn run(tools: &simt::Tools, spec: &KernelSpec, c: Case, seed: u64) -> (Vec<f32>, Vec<f32>, Vec<f64>, Vec<f64>) {
    let dt = spec.dtype();
    let d = spec.params().head_dim as usize;
    let p = c.reference(d);
    let mut rng = SplitMix(seed);
    let mut random = |n: usize| -> Vec<f32> { (0..n).map(|_| value(dt, bits(dt, rng.normal()))).collect() };
    let (q, k, v) = (random(p.q_len()), random(p.k_len()), random(p.v_len()));
    let want = forward(&p, &Qkv { q: &q, k: &k, v: &v });
    let enc = |x: &[f32]| bytes16(&x.iter().map(|&y| bits(dt, y)).collect::<Vec<_>>());
    let rows = c.z * c.h * c.n_q;
    let nan = bits(dt, f32::NAN);
    let mut bufs = vec![enc(&q), enc(&k), enc(&v), bytes16(&vec![nan; p.q_len()]), bytes32(&vec![f32::NAN; rows], f32::to_le_bytes), vec![0u8; 8]];
    let bhsd = |heads: usize, n: usize| [(heads * n * d) as i64, (n * d) as i64, d as i64, 1];
    let strides: HashMap<&str, [i64; 4]> = [("Q", bhsd(c.h, c.n_q)), ("K", bhsd(c.h_kv, c.n_kv)), ("V", bhsd(c.h_kv, c.n_kv)), ("Out", bhsd(c.h, c.n_q))].into_iter().collect();
    let (_, window) = c.planned(dt, d as u32);
    // (the runtime's WINDOW_LEFT / WINDOW_RIGHT: unbounded sides 2^30, the right one 0 when causal)
    let bound = |b: Option<usize>, none: i32| b.map_or(none, |b| b.min(1 << 30) as i32);
    let named: HashMap<&str, Arg> = simt::fixed_geometry(c.z, c.h, c.h_kv, c.n_q, c.n_kv)
        .into_iter()
        .chain(simt::no_modifier_tensors())
        .chain([
            ("Q", Arg::Buf(Q)),
            ("K", Arg::Buf(K)),
            ("V", Arg::Buf(V)),
            ("sm_scale", Arg::F32(p.rules.sm_scale as f32)),
            ("SOFTCAP", Arg::F32(c.softcap.unwrap_or(0.0) as f32)),
            ("M", Arg::Buf(M)),
            ("Out", Arg::Buf(OUT)),
            ("tmap_q", map(Q, dt, [c.z, c.h, c.n_q, d], spec.block_m())),
            ("tmap_k", map(K, dt, [c.z, c.h_kv, c.n_kv, d], spec.block_n())),
            ("tmap_v", map(V, dt, [c.z, c.h_kv, c.n_kv, d], spec.block_n())),
            ("tile_counter", Arg::Buf(COUNTER)),
            ("WINDOW_LEFT", Arg::I32(bound(window.left, 1 << 30))),
            ("WINDOW_RIGHT", Arg::I32(bound(window.right, 0))),
        ])
        .collect();
    let args = args_of(abi::kernel_parameters(spec.kind()), &named, &strides);
    let geometry = GridGeometry { batch: c.z as u32, heads: c.h as u32, kv_heads: c.h_kv as u32, seqlen_q: c.n_q as u32, seqlen_k: c.n_kv as u32 };
    // (a persistent grid of 3 programs: the first tiles by program, the rest by the counter)
    let launch = Launch { ir: flashgen::render::render(spec).unwrap(), entry: spec.name(), args, grid: spec.grid(&geometry, 3), threads: spec.threads() };
    simt::run(tools, &[launch], &mut bufs).unwrap();
    assert_eq!(bufs[COUNTER], vec![0u8; 8], "{}: the tile counter is left at zero for the next launch", spec.name());
    let o = u16s(&bufs[OUT]).into_iter().map(|x| value(dt, x)).collect();
    (o, f32s(&bufs[M]), want.o, want.m)
}

/// The arguments of `params` from named values and the tensors' [Z, H, N, D] strides.
fn args_of(params: &[abi::Param], named: &HashMap<&str, Arg>, strides: &HashMap<&str, [i64; 4]>) -> Vec<Arg> {
    params
        .iter()
        .map(|a| match a.ty {
            ParamType::Stride { tensor, axis } => Arg::I64(strides[tensor][axis]),
            _ => *named.get(a.name).unwrap_or_else(|| panic!("no value for {}", a.name)),
        })
        .collect()
}

fn check(tools: &simt::Tools, spec: KernelSpec, c: Case, seed: u64) {
    let (o, m, want_o, want_m) = run(tools, &spec, c, seed);
    let label = format!("{} {c:?}", spec.name());
    let tol = match spec.dtype() {
        DType::Bf16 => 2e-2,
        DType::F16 => 4e-3,
    };
    let worst_o = o.iter().zip(&want_o).map(|(&a, &b)| if a.is_finite() { (a as f64 - b).abs() } else { f64::INFINITY }).fold(0.0, f64::max);
    assert!(worst_o <= tol, "{label}: O off the reference by {worst_o} (tolerance {tol})");
    for (i, (&a, &b)) in m.iter().zip(&want_m).enumerate() {
        let ok = if b == f64::NEG_INFINITY { a == f32::NEG_INFINITY } else { (a as f64 - b).abs() <= 1e-3 * b.abs().max(1.0) };
        assert!(ok, "{label}: M[{i}] = {a}, the reference {b}");
    }
}

/// The geometry every Hopper forward takes: ragged lengths with grouped-query heads, fewer queries than keys
/// and more (bottom-right: rows that see no key when causal), causal or not.
fn geometry_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for causal in [false, true] {
        cases.push(Case { causal, ..RAGGED });
        cases.push(Case { z: 2, h: 1, h_kv: 1, n_q: 70, n_kv: 300, causal, ..RAGGED });
        cases.push(Case { z: 1, h: 2, h_kv: 2, n_q: 300, n_kv: 130, causal, ..RAGGED });
    }
    cases
}

#[test]
fn warp_specialized_forward_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in geometry_cases().into_iter().enumerate() {
        for (d, dtype) in [(64, DType::Bf16), (128, DType::F16)] {
            check(&tools, spec_for(KernelKind::FwdWs, dtype, d, &c), c, 100 + i as u64);
        }
    }
}

#[test]
fn persistent_forward_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in geometry_cases().into_iter().enumerate() {
        for (d, dtype) in [(64, DType::F16), (128, DType::Bf16)] {
            check(&tools, spec_for(KernelKind::FwdWsPersistent, dtype, d, &c), c, 200 + i as u64);
        }
    }
}

#[test]
fn padded_and_wide_head_dims_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, d) in [32, 96, 192, 256].into_iter().enumerate() {
        for causal in [false, true] {
            let c = Case { causal, ..RAGGED };
            check(&tools, spec_for(KernelKind::FwdWs, DType::Bf16, d, &c), c, 300 + i as u64);
        }
    }
}

#[test]
fn windows_and_softcap_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let sliding = Window { left: Some(70), right: Some(0) };
    let cases = [
        Case { causal: true, window: sliding, ..RAGGED },
        Case { window: Window { left: Some(40), right: Some(90) }, ..RAGGED },
        Case { n_q: 130, n_kv: 330, causal: true, window: sliding, ..RAGGED },
        Case { softcap: Some(5.0), ..RAGGED },
        Case { causal: true, softcap: Some(5.0), window: sliding, ..RAGGED },
    ];
    for (i, c) in cases.into_iter().enumerate() {
        for d in [64, 128] {
            check(&tools, spec_for(KernelKind::FwdWs, DType::Bf16, d, &c), c, 400 + i as u64);
        }
    }
}

/// dQ, dK, dV of the fused backward `spec` on the emulator for `c` (M from the reference, Δ from O rounded to
/// the dtype, as the forward and the preprocess give them), and the reference's; `inputs` makes Q, K, V, dO.
fn run_backward(tools: &simt::Tools, spec: &KernelSpec, c: Case, inputs: &mut dyn FnMut(usize, usize) -> Vec<f32>, chains: u32) -> [(Vec<f32>, Vec<f64>); 3] {
    let dt = spec.dtype();
    let d = spec.params().head_dim as usize;
    let p = c.reference(d);
    let round = |x: Vec<f32>| -> Vec<f32> { x.into_iter().map(|y| value(dt, bits(dt, y))).collect() };
    let (q, k, v, d_o) = (round(inputs(0, p.q_len())), round(inputs(1, p.k_len())), round(inputs(2, p.v_len())), round(inputs(3, p.q_len())));
    let x = Qkv { q: &q, k: &k, v: &v };
    let fwd = forward(&p, &x);
    let want = backward(&p, &x, &d_o);
    let o = round(fwd.o.iter().map(|&y| y as f32).collect());
    let rows = c.z * c.h * c.n_q;
    let delta: Vec<f32> = (0..rows).map(|r| (0..d).map(|e| o[r * d + e] as f64 * d_o[r * d + e] as f64).sum::<f64>() as f32).collect();
    let m: Vec<f32> = fwd.m.iter().map(|&y| y as f32).collect();
    let enc = |x: &[f32]| bytes16(&x.iter().map(|&y| bits(dt, y)).collect::<Vec<_>>());
    let nan16 = |n: usize| bytes16(&vec![bits(dt, f32::NAN); n]);
    let f32b = |x: &[f32]| bytes32(x, f32::to_le_bytes);
    let pieces = spec.dq_pieces() as usize;
    let blocks = c.z * c.h * c.n_q.div_ceil(64) + c.z;
    let partial = chains as usize * blocks * pieces * 4096;
    // (the ordered kinds store their first addition, so their partial sums may start as anything; atomics add
    // to zeros, as the runtime clears them)
    let start = if spec.kind().dq_atomics() { 0.0 } else { f32::NAN };
    const DQ: usize = 0;
    const DK: usize = 1;
    const DV: usize = 2;
    const QB: usize = 3;
    const KB: usize = 4;
    const VB: usize = 5;
    const DOB: usize = 6;
    const MB: usize = 7;
    const DELTA: usize = 8;
    const PARTIAL: usize = 9;
    const LOCKS: usize = 10;
    let mut bufs = vec![nan16(p.q_len()), nan16(p.k_len()), nan16(p.v_len()), enc(&q), enc(&k), enc(&v), enc(&d_o), f32b(&m), f32b(&delta), f32b(&vec![start; partial]), vec![0u8; 4 * blocks * pieces * chains as usize]];
    let bhsd = |heads: usize, n: usize| [(heads * n * d) as i64, (n * d) as i64, d as i64, 1];
    let (qs, ks) = (bhsd(c.h, c.n_q), bhsd(c.h_kv, c.n_kv));
    let strides: HashMap<&str, [i64; 4]> = [("Q", qs), ("K", ks), ("V", ks), ("DO", qs), ("DQ", qs), ("DK", ks), ("DV", ks)].into_iter().collect();
    let named: HashMap<&str, Arg> = simt::fixed_geometry(c.z, c.h, c.h_kv, c.n_q, c.n_kv)
        .into_iter()
        .chain(simt::no_modifier_tensors())
        .chain([
            ("Q", Arg::Buf(QB)),
            ("K", Arg::Buf(KB)),
            ("V", Arg::Buf(VB)),
            ("DO", Arg::Buf(DOB)),
            ("DQ", Arg::Buf(DQ)),
            ("DK", Arg::Buf(DK)),
            ("DV", Arg::Buf(DV)),
            ("M", Arg::Buf(MB)),
            ("Delta", Arg::Buf(DELTA)),
            ("DQ_PARTIAL", Arg::Buf(PARTIAL)),
            ("LOCKS", Arg::Buf(LOCKS)),
            ("CHAINS", Arg::I32(chains as i32)),
            ("sm_scale", Arg::F32(p.rules.sm_scale as f32)),
            ("SOFTCAP", Arg::F32(0.0)),
            ("tmap_q", map(QB, dt, [c.z, c.h, c.n_q, d], spec.block_m())),
            ("tmap_do", map(DOB, dt, [c.z, c.h, c.n_q, d], spec.block_m())),
        ])
        .collect();
    let ir = flashgen::render::render(spec).unwrap();
    let geometry = GridGeometry { batch: c.z as u32, heads: c.h as u32, kv_heads: c.h_kv as u32, seqlen_q: c.n_q as u32, seqlen_k: c.n_kv as u32 };
    // (programs 0: the grid unfolded; a folded program waits on programs launched after it, which the
    // emulator, running CTAs one at a time, cannot)
    let kernel = Launch { ir: ir.clone(), entry: spec.name(), args: args_of(abi::kernel_parameters(spec.kind()), &named, &strides), grid: spec.grid(&geometry, 0), threads: spec.threads() };
    let sum = Launch {
        ir,
        entry: spec.dq_sum_entry().unwrap(),
        args: args_of(abi::parameters(Entry::DqSum), &named, &strides),
        grid: (c.n_q.div_ceil(spec.block_m() as usize) as u32, (c.z * c.h) as u32, 1),
        threads: flashgen::spec::DQ_SUM_THREADS,
    };
    simt::run(tools, &[kernel, sum], &mut bufs).unwrap();
    let dec = |b: &[u8]| u16s(b).into_iter().map(|x| value(dt, x)).collect::<Vec<f32>>();
    [(dec(&bufs[DQ]), want.dq), (dec(&bufs[DK]), want.dk), (dec(&bufs[DV]), want.dv)]
}

fn check_backward(tools: &simt::Tools, spec: KernelSpec, c: Case, inputs: &mut dyn FnMut(usize, usize) -> Vec<f32>, chains: u32) {
    let label = format!("{} chains {chains} {c:?}", spec.name());
    let tol = match spec.dtype() {
        DType::Bf16 => 3e-2,
        DType::F16 => 6e-3,
    };
    for ((got, want), what) in run_backward(tools, &spec, c, inputs, chains).into_iter().zip(["dQ", "dK", "dV"]) {
        let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
        let worst = got.iter().zip(&want).map(|(&a, &b)| if a.is_finite() { (a as f64 - b).abs() } else { f64::INFINITY }).fold(0.0, f64::max);
        assert!(worst <= tol * scale, "{label}: {what} off the reference by {worst} (tolerance {tol} × {scale})");
    }
}

fn normal_inputs(dtype: DType, seed: u64) -> impl FnMut(usize, usize) -> Vec<f32> {
    let mut rng = SplitMix(seed);
    move |_, n| (0..n).map(|_| value(dtype, bits(dtype, rng.normal()))).collect()
}

#[test]
fn fused_backward_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in geometry_cases().into_iter().enumerate() {
        for (d, dtype) in [(64, DType::Bf16), (128, DType::F16)] {
            let kinds: &[KernelKind] = if c.causal { &[KernelKind::BwdFused, KernelKind::BwdFusedUp] } else { &[KernelKind::BwdFused, KernelKind::BwdFusedAtomic] };
            for &kind in kinds {
                let chains = if kind == KernelKind::BwdFused { 2 } else { 1 };
                check_backward(&tools, spec_for(kind, dtype, d, &c), c, &mut normal_inputs(dtype, 500 + i as u64), chains);
            }
        }
    }
}

