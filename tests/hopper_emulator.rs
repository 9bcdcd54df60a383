//! The Hopper kernels (fwd_ws: a TMA producer warpgroup and wgmma consumer warpgroups taking turns;
//! fwd_ws_persistent: the same over tiles handed out by a counter) run on the SIMT emulator (tests/simt:
//! wgmma over 128B-swizzled shared memory, TMA tensor tiles with their zero fill, mbarriers with
//! transaction bytes, named barriers) against the f64 reference: ragged lengths, grouped-query heads,
//! unequal lengths, causal or not, both dtypes; and the fused backward (bwd_fused, bwd_fused_up,
//! bwd_fused_atomic: its dQ pieces added across programs by bulk reductions in their order, then the dQ
//! sum pass), its CTAs one after another in launch order as its ordered chains allow, or, for bwd_fused_up's
//! folded grid and the persistent programs, all together (a process each). A CPU check of the code paths
//! that otherwise only the H200 runs; the emulator runs each wgmma where it is issued, so it checks the arithmetic and the indexing, not
//! the ordering of asynchronous work (compute-sanitizer's racecheck on the GPU does that).

mod simt;

use flashgen::abi::{self, Entry, ParamType};
use flashgen::numeric::SplitMix;
use flashgen::plan::{self, Problem};
use flashgen::mods::{builtins, MaskMod, Scalar, ScoreMod, TensorData, TensorDecl, Tensors};
use flashgen::reference::{backward, forward, Qkv, RefProblem, Window};
use flashgen::spec::Modifiers;
use flashgen::spec::{defaults, GridGeometry, ScheduleOverrides, WS_WIDE_BLOCK_N};
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
    /// Packed sequences' (queries, keys), [H, total, D] tensors; empty: `z` sequences of n_q and n_kv.
    packed: &'static [(usize, usize)],
    /// A score_mod and mask_mod compiled into the kernels (`Mods`).
    mods: Mods,
    /// The SM count the backward's grid is planned for: 0, the grid unfolded, one CTA after another; N,
    /// bwd_fused_up's grid folded where `KernelSpec::folds` would on N SMs, its CTAs run together (a folded
    /// program's heavy half waits on the light half of programs launched after it).
    programs: u32,
    /// V's (O's, dO's, dV's) head dim where narrower than Q's and K's (`Features::value_dim`, DeepSeek's
    /// 192/128); 0: the same.
    dv: usize,
}

const RAGGED: Case = Case { z: 1, h: 2, h_kv: 1, n_q: 200, n_kv: 200, causal: false, window: Window::UNBOUNDED, softcap: None, packed: &[], mods: Mods::None, programs: 0, dv: 0 };

/// The modifiers of a case: ALiBi (`builtins::alibi`, a per-head f32 slope), causal written as a mask_mod
/// (the proved key interval), ALiBi with a per-batch document mask (the per-element path, an i32 tensor).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mods {
    None,
    Alibi,
    CausalMask,
    AlibiDocuments,
}

impl Mods {
    /// The score_mod, mask_mod and their tensors' values.
    fn parts(self) -> (Option<ScoreMod>, Option<MaskMod>, Tensors) {
        let slopes = Tensors::new().f32("slope", (0..8).map(|h| 0.5f32.powi(h + 1) * 4.0).collect());
        match self {
            Mods::None => (None, None, Tensors::new()),
            Mods::Alibi => (builtins::alibi("slope").ok(), None, slopes),
            Mods::CausalMask => (None, builtins::causal(0).ok(), Tensors::new()),
            Mods::AlibiDocuments => {
                let docs = MaskMod::parse("q_idx // 64 >= kv_idx // 64 && kv_idx < doc_end[b]", &[TensorDecl::per_batch("doc_end", Scalar::I32)]).ok();
                (builtins::alibi("slope").ok(), docs, slopes.i32("doc_end", vec![150, 90, 300]))
            }
        }
    }
    fn modifiers(self) -> Option<Modifiers> {
        let (score, mask, _) = self.parts();
        Modifiers::new(score.as_ref(), mask.as_ref()).unwrap()
    }
    /// The reference with the same modifiers (the expressions' f64 interpreter).
    fn on(self, p: RefProblem) -> RefProblem {
        let (score, mask, tensors) = self.parts();
        p.modifiers(score.as_ref(), mask.as_ref(), &tensors)
    }
    /// MOD_TENSOR0.. as the kernel's slots order them: buffers `first`, `first` + 1, ..., and their bytes.
    fn tensor_args(self, first: usize) -> (Vec<(&'static str, Arg)>, Vec<Vec<u8>>) {
        let (_, _, tensors) = self.parts();
        let Some(m) = self.modifiers() else { return (Vec::new(), Vec::new()) };
        let names = ["MOD_TENSOR0", "MOD_TENSOR1", "MOD_TENSOR2", "MOD_TENSOR3"];
        let bytes: Vec<Vec<u8>> = m
            .tensors()
            .iter()
            .map(|decl| match tensors.get(&decl.name).unwrap() {
                TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            })
            .collect();
        ((0..bytes.len()).map(|i| (names[i], Arg::Buf(first + i))).collect(), bytes)
    }
}

impl Case {
    fn reference(&self, d: usize) -> RefProblem {
        let p = RefProblem::new(self.z, self.h, self.n_q, d).kv_heads(self.h_kv).causal(self.causal).sm_scale(1.0 / (d as f64).sqrt()).window(self.window);
        let p = if self.packed.is_empty() {
            p.seqlens(self.n_q, self.n_kv)
        } else {
            let (q, k): (Vec<usize>, Vec<usize>) = self.packed.iter().copied().unzip();
            p.varlen_from_lengths(&q, &k)
        };
        let p = match self.softcap {
            Some(cap) => p.softcap(cap),
            None => p,
        };
        let p = if self.dv > 0 { p.head_dims(d, self.dv) } else { p };
        self.mods.on(p)
    }
    /// The plan's view of it (the kernel's features), and the window as the kernel takes it.
    fn planned(&self, dtype: DType, d: u32) -> (Problem, Window) {
        let g = self.grid();
        let mut p = Problem::new(dtype, d, self.causal, g.seqlen_q as usize);
        p.seqlen_k = g.seqlen_k as usize;
        p.varlen = !self.packed.is_empty();
        p.modifiers = self.mods.modifiers();
        p.value_dim = (self.dv > 0).then_some(self.dv as u32);
        let p = p.with_window(self.window, self.softcap.is_some());
        let w = p.window;
        (p, w)
    }
    /// Batch, heads and the longest lengths.
    fn grid(&self) -> GridGeometry {
        let longest = |f: fn(&(usize, usize)) -> usize| self.packed.iter().map(f).max().unwrap_or(0) as u32;
        match self.packed {
            [] => GridGeometry { batch: self.z as u32, heads: self.h as u32, kv_heads: self.h_kv as u32, seqlen_q: self.n_q as u32, seqlen_k: self.n_kv as u32 },
            p => GridGeometry { batch: p.len() as u32, heads: self.h as u32, kv_heads: self.h_kv as u32, seqlen_q: longest(|x| x.0), seqlen_k: longest(|x| x.1) },
        }
    }
    /// The query and key tensors' [Z, H, N, D] extents (packed: one batch of the total rows).
    fn shapes(&self, d: usize) -> ([usize; 4], [usize; 4]) {
        match self.packed {
            [] => ([self.z, self.h, self.n_q, d], [self.z, self.h_kv, self.n_kv, d]),
            p => ([1, self.h, p.iter().map(|x| x.0).sum(), d], [1, self.h_kv, p.iter().map(|x| x.1).sum(), d]),
        }
    }
    /// V's head dim (`dv`, else `d`).
    fn v_dim(&self, d: usize) -> usize {
        if self.dv > 0 { self.dv } else { d }
    }
    /// The row statistics' count (M, Δ): Z·H·N_Q, packed H·TOTAL_Q.
    fn stat_rows(&self) -> usize {
        let ([z, h, n, _], _) = self.shapes(0);
        z * h * n
    }
    /// cu_seqlens of the queries and keys as the kernels read them (i32 bytes; fixed lengths: one 0).
    fn offsets(&self) -> (Vec<u8>, Vec<u8>) {
        let cumulative = |f: fn(&(usize, usize)) -> usize| -> Vec<u8> {
            std::iter::once(0).chain(self.packed.iter().scan(0, |acc, x| {
                *acc += f(x);
                Some(*acc)
            })).flat_map(|v| (v as i32).to_le_bytes()).collect()
        };
        (cumulative(|x| x.0), cumulative(|x| x.1))
    }
}

const Q: usize = 0;
const K: usize = 1;
const V: usize = 2;
const OUT: usize = 3;
const M: usize = 4;
const COUNTER: usize = 5;
const CU_Q: usize = 6;
const CU_K: usize = 7;

/// Element strides of a contiguous [Z, H, N, D] tensor.
fn bhsd([_, h, n, d]: [usize; 4]) -> [i64; 4] {
    [(h * n * d) as i64, (n * d) as i64, d as i64, 1]
}

/// The emulator's tensor map of a contiguous [z, heads, rows, d] tensor in buffer `buf`, boxes of 64 columns
/// × `box_rows` rows (the runtime's `tma::tensor_map` with the same fields).
fn map(buf: usize, dtype: DType, [z, heads, rows, d]: [usize; 4], box_rows: u32) -> Arg {
    let e = dtype.bytes() as u64;
    let (d, rows, heads, z) = (d as u64, rows as u64, heads as u64, z as u64);
    Arg::TensorMap { buf, offset: 0, dims: [d, rows, heads, z], strides: [d * e, rows * d * e, heads * rows * d * e], box_rows, elem: e as u32 }
}

/// The default spec of `kind` for `c` (the table's tile for its length, the plan's features).
fn spec_for(kind: KernelKind, dtype: DType, d: u32, c: &Case) -> KernelSpec {
    admitted(kind, dtype, d, c).unwrap_or_else(|e| panic!("{kind:?} {c:?}: {e}"))
}

/// `spec_for`, or the rule that refuses it.
fn admitted(kind: KernelKind, dtype: DType, d: u32, c: &Case) -> Result<KernelSpec, flashgen::SpecError> {
    admitted_on(Arch::Sm90a, kind, dtype, d, c)
}

fn admitted_on(arch: Arch, kind: KernelKind, dtype: DType, d: u32, c: &Case) -> Result<KernelSpec, flashgen::SpecError> {
    let (problem, _) = c.planned(dtype, d);
    let table = defaults::spec(kind, arch, dtype, d, problem.causal, problem.seqlen)?;
    plan::with_features(&table, problem.features())
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
    let rows = c.stat_rows();
    let nan = bits(dt, f32::NAN);
    let (cu_q, cu_k) = c.offsets();
    let mut bufs = vec![enc(&q), enc(&k), enc(&v), bytes16(&vec![nan; p.o_len()]), bytes32(&vec![f32::NAN; rows], f32::to_le_bytes), vec![0u8; 8], cu_q, cu_k];
    let (mod_args, mod_bytes) = c.mods.tensor_args(bufs.len());
    bufs.extend(mod_bytes);
    let (qshape, kshape) = c.shapes(d);
    let (oshape, vshape) = c.shapes(c.v_dim(d));
    let strides: HashMap<&str, [i64; 4]> = [("Q", bhsd(qshape)), ("K", bhsd(kshape)), ("V", bhsd(vshape)), ("Out", bhsd(oshape))].into_iter().collect();
    let named: HashMap<&str, Arg> = shared_args(&c, dt, d, [CU_Q, CU_K])
        .into_iter()
        .chain([
            ("Q", Arg::Buf(Q)),
            ("K", Arg::Buf(K)),
            ("V", Arg::Buf(V)),
            ("M", Arg::Buf(M)),
            ("Out", Arg::Buf(OUT)),
            ("tmap_q", map(Q, dt, qshape, spec.block_m())),
            ("tmap_k", map(K, dt, kshape, spec.block_n())),
            ("tmap_v", map(V, dt, vshape, spec.block_n())),
            ("tile_counter", Arg::Buf(COUNTER)),
        ])
        .chain(mod_args)
        .collect();
    let args = args_of(abi::kernel_parameters(spec.kind()), &named, &strides);
    let geometry = c.grid();
    // (a persistent grid of 3 programs: the first tiles by program, the rest by the counter; run together,
    // they take the counter's tiles in whatever order the threads reach it)
    let together = spec.kind().persistent();
    let launch = Launch { ir: flashgen::render::render(spec).unwrap(), entry: spec.name(), args, grid: spec.grid(&geometry, 3), threads: spec.threads(), together };
    simt::run(tools, &[launch], &mut bufs).unwrap();
    assert_eq!(bufs[COUNTER], vec![0u8; 8], "{}: the tile counter is left at zero for the next launch", spec.name());
    let o = u16s(&bufs[OUT]).into_iter().map(|x| value(dt, x)).collect();
    (o, f32s(&bufs[M]), want.o, want.m)
}

/// The arguments every kernel of `c` takes alike: the geometry, no modifier tensors, the window as the
/// runtime passes it (unbounded sides 2^30, the right one 0 when causal), softcap and sm_scale.
fn shared_args(c: &Case, dtype: DType, d: usize, [cu_q, cu_k]: [usize; 2]) -> Vec<(&'static str, Arg)> {
    let (_, window) = c.planned(dtype, d as u32);
    let bound = |b: Option<usize>, none: i32| b.map_or(none, |b| b.min(1 << 30) as i32);
    let g = c.grid();
    let ([_, _, total_q, _], [_, _, total_k, _]) = c.shapes(d);
    let packed: Vec<(&str, Arg)> = if c.packed.is_empty() {
        Vec::new()
    } else {
        vec![
            ("Z", Arg::I32(g.batch as i32)),
            ("N_Q", Arg::I32(g.seqlen_q as i32)),
            ("N_KV", Arg::I32(g.seqlen_k as i32)),
            ("CU_SEQLENS_Q", Arg::Buf(cu_q)),
            ("CU_SEQLENS_K", Arg::Buf(cu_k)),
            ("TOTAL_Q", Arg::I32(total_q as i32)),
            ("TOTAL_K", Arg::I32(total_k as i32)),
        ]
    };
    simt::fixed_geometry(c.z, c.h, c.h_kv, c.n_q, c.n_kv)
        .into_iter()
        .chain(packed)
        .chain(simt::no_modifier_tensors())
        .chain([
            ("WINDOW_LEFT", Arg::I32(bound(window.left, 1 << 30))),
            ("WINDOW_RIGHT", Arg::I32(bound(window.right, 0))),
            ("SOFTCAP", Arg::F32(c.softcap.unwrap_or(0.0) as f32)),
            ("sm_scale", Arg::F32(c.reference(d).rules.sm_scale as f32)),
        ])
        .collect()
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
/// and more (bottom-right: rows that see no key when causal), packed sequences (empty ones, queries without
/// keys, each sequence's own diagonal), causal or not.
fn geometry_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for causal in [false, true] {
        cases.push(Case { causal, ..RAGGED });
        cases.push(Case { z: 2, h: 1, h_kv: 1, n_q: 70, n_kv: 300, causal, ..RAGGED });
        cases.push(Case { z: 1, h: 2, h_kv: 2, n_q: 300, n_kv: 130, causal, ..RAGGED });
        cases.push(Case { h: 2, h_kv: 1, causal, packed: &[(70, 70), (0, 0), (130, 200), (200, 130), (30, 0)], ..RAGGED });
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
    // (and a program's tiles that see a key followed by tiles that see none: packed, and fixed lengths with
    // more queries than keys, whose tiles run bottom first: the last turn of the one before must not wait
    // on them)
    let vacant_after_keyed = [
        Case { h: 2, h_kv: 1, causal: true, packed: &[(70, 70), (30, 0), (30, 0), (30, 0)], ..RAGGED },
        Case { z: 1, h: 2, h_kv: 1, n_q: 520, n_kv: 100, causal: true, ..RAGGED },
    ];
    for (i, c) in geometry_cases().into_iter().chain(vacant_after_keyed).enumerate() {
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

/// DeepSeek's 192/128 (V, O, dO and dV 128 wide beside Q and K's 192): the forward (its P·V over V's two
/// panels only, the O accumulator's third left at 0) and the backward the plan runs (dO·Vᵀ over V's 128
/// columns), on the geometry's cases.
#[test]
fn narrower_values_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in geometry_cases().into_iter().enumerate() {
        let c = Case { dv: 128, ..c };
        let dtype = if i % 2 == 0 { DType::Bf16 } else { DType::F16 };
        let fwd = spec_for(KernelKind::FwdWs, dtype, 192, &c);
        assert_eq!(fwd.value_dim(), 128, "{}", fwd.name());
        check(&tools, fwd, c, 1300 + i as u64);
        let (problem, _) = c.planned(dtype, 192);
        let planned = plan::plan(Arch::Sm90a, &problem, &plan::PlanOptions::default(), &plan::NoTuning).unwrap();
        assert!(planned.backward.kernels().iter().all(|s| s.value_dim() == 128), "{}", planned.backward.names());
        check_backward(&tools, &planned.backward.kernels(), c, &mut normal_inputs(dtype, 1350 + i as u64), planned.dq_chains);
    }
}

/// A causal sliding window of 70 keys (`SLIDING`), a two-sided one, the sliding one on N_q < N_kv.
const SLIDING: Window = Window { left: Some(70), right: Some(0) };
const WINDOWS: [Case; 3] = [
    Case { causal: true, window: SLIDING, ..RAGGED },
    Case { window: Window { left: Some(40), right: Some(90) }, ..RAGGED },
    Case { n_q: 130, n_kv: 330, causal: true, window: SLIDING, ..RAGGED },
];

#[test]
fn windows_and_softcap_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let softcaps = [Case { softcap: Some(5.0), ..RAGGED }, Case { causal: true, softcap: Some(5.0), window: SLIDING, ..RAGGED }];
    for (i, c) in WINDOWS.into_iter().chain(softcaps).enumerate() {
        for d in [64, 128] {
            check(&tools, spec_for(KernelKind::FwdWs, DType::Bf16, d, &c), c, 400 + i as u64);
        }
    }
}

/// HEAD_DIM 256 with softcap, windows and ALiBi (Gemma's width): the plan's forward, the table's 128×64 on two
/// stages, ping-pong on the split ring (`Schedule::split_kv_ring`), and its backward.
#[test]
fn head_dim_256_windows_softcap_and_alibi_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let cases = [
        Case { causal: true, softcap: Some(5.0), window: SLIDING, ..RAGGED },
        Case { softcap: Some(5.0), ..RAGGED },
        Case { n_q: 130, n_kv: 330, causal: true, window: SLIDING, ..RAGGED },
        Case { mods: Mods::Alibi, causal: true, ..RAGGED },
    ];
    for (i, c) in cases.into_iter().enumerate() {
        let (problem, _) = c.planned(DType::Bf16, 256);
        let planned = plan::plan(Arch::Sm90a, &problem, &Default::default(), &plan::NoTuning).unwrap_or_else(|e| panic!("{c:?}: {e}"));
        let spec = planned.forward;
        assert!(spec.kind() == KernelKind::FwdWs && spec.ping_pong() && spec.split_kv_ring(), "{}: not the ping-pong tile on the split ring", spec.name());
        check(&tools, spec, c, 450 + i as u64);
        // (the backward: the wgmma pair, dK/dV on the column warpgroups)
        check_backward(&tools, &planned.backward.kernels(), c, &mut normal_inputs(DType::Bf16, 460 + i as u64), planned.dq_chains);
    }
}

/// dQ, dK, dV of the fused backward `spec` on the emulator for `c` (M from the reference, Δ from O rounded to
/// the dtype, as the forward and the preprocess give them), and the reference's; `inputs` makes Q, K, V, dO.
fn run_backward(tools: &simt::Tools, specs: &[KernelSpec], c: Case, inputs: &mut dyn FnMut(usize, usize) -> Vec<f32>, chains: u32) -> [(Vec<f32>, Vec<f64>); 3] {
    // (the maps' boxes and dQ's pieces are the fused kernel's, where there is one; Δ's kernel comes first)
    let spec = specs.iter().find(|s| s.kind().fuses_dq()).unwrap_or(&specs[0]);
    let dt = spec.dtype();
    let d = spec.params().head_dim as usize;
    let p = c.reference(d);
    let round = |x: Vec<f32>| -> Vec<f32> { x.into_iter().map(|y| value(dt, bits(dt, y))).collect() };
    let dv = c.v_dim(d);
    let (q, k, v, d_o) = (round(inputs(0, p.q_len())), round(inputs(1, p.k_len())), round(inputs(2, p.v_len())), round(inputs(3, p.o_len())));
    let x = Qkv { q: &q, k: &k, v: &v };
    let fwd = forward(&p, &x);
    let want = backward(&p, &x, &d_o);
    let o = round(fwd.o.iter().map(|&y| y as f32).collect());
    let rows = c.stat_rows();
    let delta: Vec<f32> = (0..rows).map(|r| (0..dv).map(|e| o[r * dv + e] as f64 * d_o[r * dv + e] as f64).sum::<f64>() as f32).collect();
    let m: Vec<f32> = fwd.m.iter().map(|&y| y as f32).collect();
    let enc = |x: &[f32]| bytes16(&x.iter().map(|&y| bits(dt, y)).collect::<Vec<_>>());
    let nan16 = |n: usize| bytes16(&vec![bits(dt, f32::NAN); n]);
    let f32b = |x: &[f32]| bytes32(x, f32::to_le_bytes);
    let pieces = spec.dq_pieces() as usize;
    let ([_, _, total_q, _], _) = c.shapes(d);
    let blocks = c.h * (total_q.div_ceil(64) + c.grid().batch as usize) * c.z;
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
    const CUQ: usize = 11;
    const CUK: usize = 12;
    const OB: usize = 13;
    let (cu_q, cu_k) = c.offsets();
    // (with the preprocess among the kernels, Δ is its own: poisoned until it runs)
    let delta = if specs.iter().any(|s| s.kind() == KernelKind::BwdPre) { vec![f32::NAN; rows] } else { delta };
    let mut bufs = vec![nan16(p.q_len()), nan16(p.k_len()), nan16(p.v_len()), enc(&q), enc(&k), enc(&v), enc(&d_o), f32b(&m), f32b(&delta), f32b(&vec![start; partial]), vec![0u8; 4 * blocks * pieces * chains as usize], cu_q, cu_k, enc(&o)];
    let (mod_args, mod_bytes) = c.mods.tensor_args(bufs.len());
    bufs.extend(mod_bytes);
    let (qshape, kshape) = c.shapes(d);
    let (oshape, vshape) = c.shapes(dv);
    let (qs, ks, os, vs) = (bhsd(qshape), bhsd(kshape), bhsd(oshape), bhsd(vshape));
    let strides: HashMap<&str, [i64; 4]> = [("Q", qs), ("K", ks), ("V", vs), ("O", os), ("DO", os), ("DQ", qs), ("DK", ks), ("DV", vs)].into_iter().collect();
    let named: HashMap<&str, Arg> = shared_args(&c, dt, d, [CUQ, CUK])
        .into_iter()
        .chain([
            ("Q", Arg::Buf(QB)),
            ("K", Arg::Buf(KB)),
            ("V", Arg::Buf(VB)),
            ("DO", Arg::Buf(DOB)),
            ("O", Arg::Buf(OB)),
            ("DQ", Arg::Buf(DQ)),
            ("DK", Arg::Buf(DK)),
            ("DV", Arg::Buf(DV)),
            ("M", Arg::Buf(MB)),
            ("Delta", Arg::Buf(DELTA)),
            ("DQ_PARTIAL", Arg::Buf(PARTIAL)),
            ("LOCKS", Arg::Buf(LOCKS)),
            ("CHAINS", Arg::I32(chains as i32)),
            ("tmap_q", map(QB, dt, qshape, spec.block_m())),
            ("tmap_do", map(DOB, dt, oshape, spec.block_m())),
        ])
        .chain(mod_args)
        .collect();
    let geometry = c.grid();
    let mut launches = Vec::new();
    for spec in specs {
        let ir = flashgen::render::render(spec).unwrap();
        let grid = spec.grid(&geometry, c.programs);
        launches.push(Launch { ir: ir.clone(), entry: spec.name(), args: args_of(abi::kernel_parameters(spec.kind()), &named, &strides), grid, threads: spec.threads(), together: c.programs > 0 });
        if let Some(entry) = spec.dq_sum_entry() {
            let grid = (geometry.seqlen_q.div_ceil(spec.block_m()), geometry.batch * geometry.heads, 1);
            // (a persistent grid's round: `Schedule::dq_sum_rounds` takes the blocks in its order)
            let mut sum_named = named.clone();
            sum_named.insert("ROUND_HEADS", Arg::I32(spec.round_heads(&geometry, c.programs) as i32));
            launches.push(Launch { ir, entry, args: args_of(abi::parameters(Entry::DqSum), &sum_named, &strides), grid, threads: flashgen::spec::DQ_SUM_THREADS, together: false });
        }
    }
    simt::run(tools, &launches, &mut bufs).unwrap();
    let dec = |b: &[u8]| u16s(b).into_iter().map(|x| value(dt, x)).collect::<Vec<f32>>();
    [(dec(&bufs[DQ]), want.dq), (dec(&bufs[DK]), want.dk), (dec(&bufs[DV]), want.dv)]
}

fn check_backward(tools: &simt::Tools, specs: &[KernelSpec], c: Case, inputs: &mut dyn FnMut(usize, usize) -> Vec<f32>, chains: u32) {
    let names: Vec<String> = specs.iter().map(KernelSpec::name).collect();
    let label = format!("{} chains {chains} {c:?}", names.join(" + "));
    let tol = match specs[0].dtype() {
        DType::Bf16 => 3e-2,
        DType::F16 => 6e-3,
    };
    for ((got, want), what) in run_backward(tools, specs, c, inputs, chains).into_iter().zip(["dQ", "dK", "dV"]) {
        let scale = want.iter().fold(1.0f64, |m, w| m.max(w.abs()));
        let worst = got.iter().zip(&want).map(|(&a, &b)| if a.is_finite() { (a as f64 - b).abs() } else { f64::INFINITY }).fold(0.0, f64::max);
        assert!(worst <= tol * scale, "{label}: {what} off the reference by {worst} (tolerance {tol} × {scale})");
    }
}

fn normal_inputs(dtype: DType, seed: u64) -> impl FnMut(usize, usize) -> Vec<f32> {
    let mut rng = SplitMix(seed);
    move |_, n| (0..n).map(|_| value(dtype, bits(dtype, rng.normal()))).collect()
}

/// The fused kinds over the geometry's cases at the table's head dims and at the padded 32 and 96, whose
/// dQ pieces carry their real columns only (row pieces at 32: N 32 and 8 KB reductions; at 96 warpgroup 1's
/// 8 KB) and whose causal kind runs unfolded on packed sequences.
#[test]
fn fused_backward_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in geometry_cases().into_iter().enumerate() {
        for (d, dtype) in [(64, DType::Bf16), (128, DType::F16), (32, DType::F16), (96, DType::Bf16)] {
            let kinds: &[KernelKind] = if c.causal { &[KernelKind::BwdFused, KernelKind::BwdFusedUp] } else { &[KernelKind::BwdFused, KernelKind::BwdFusedAtomic] };
            // (a kind its rules refuse for the case, bwd_fused on causal packed sequences at HEAD_DIM 64's
            // 128-row blocks, is not what the plan runs)
            // (the padded head dims on the kind the plan runs for the case; the other kind at 64 and 128:
            // the dQ pieces of real columns are the kinds' shared code; CI time)
            let planned = if c.causal { &kinds[1..] } else { &kinds[..1] };
            let kinds = if d % 64 == 0 { kinds } else { planned };
            for spec in kinds.iter().filter_map(|&kind| admitted(kind, dtype, d, &c).ok()) {
                let chains = if spec.kind() == KernelKind::BwdFused { 2 } else { 1 };
                check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, 500 + i as u64), chains);
            }
        }
    }
}

/// Scores all far below zero (q ≈ 4, k ≈ −4 elementwise: −16·√D, about −128 at D 64) on lengths that end inside
/// a key block: the zero-filled keys past the end score 0, far above the row's log-sum-exp, so unless they
/// are masked their P = exp(0 − LSE) overflows and dQ = dS·K adds inf·0.
#[test]
fn far_negative_scores_on_ragged_lengths_stay_finite_in_the_fused_backward() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for causal in [false, true] {
        let c = Case { causal, ..RAGGED };
        for kind in [KernelKind::BwdFused, KernelKind::BwdFusedUp, KernelKind::BwdFusedAtomic] {
            if kind == KernelKind::BwdFusedUp && !causal {
                continue;
            }
            let dtype = DType::Bf16;
            let mut rng = SplitMix(600);
            let mut inputs = |which: usize, n: usize| -> Vec<f32> {
                let centre = [4.0, -4.0, 0.0, 0.0][which];
                (0..n).map(|_| centre + if which < 2 { 0.1 } else { 1.0 } * rng.normal() as f32).collect()
            };
            check_backward(&tools, &[spec_for(kind, dtype, 64, &c)], c, &mut inputs, 1);
        }
    }
}

/// bwd_fused_up's folded grid (a program takes a light key block and a heavy one; the heavy half adds its dQ
/// after programs launched later added theirs, so its CTAs run together): causal, GQA, lengths that end
/// inside a block, an odd count of key blocks (the last program's lone block), N_q ≠ N_kv, both dtypes.
#[test]
fn folded_bwd_fused_up_grid_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let cases = [
        (DType::Bf16, Case { n_q: 600, n_kv: 600, causal: true, programs: 8, ..RAGGED }),
        (DType::Bf16, Case { z: 2, h: 2, h_kv: 2, n_q: 300, n_kv: 520, causal: true, programs: 8, ..RAGGED }),
        (DType::F16, Case { h: 4, h_kv: 1, n_q: 1000, n_kv: 1000, causal: true, programs: 8, ..RAGGED }),
    ];
    for (i, (dtype, c)) in cases.into_iter().enumerate() {
        for d in [64, 128] {
            let spec = spec_for(KernelKind::BwdFusedUp, dtype, d, &c);
            assert!(spec.folds(&c.grid(), c.programs), "{c:?} D{d}: the grid does not fold");
            check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, 900 + i as u64), 1);
        }
    }
}

/// The fused backward's persistent tiles (`Schedule::persistent_tiles`): fewer programs than tiles, all
/// together, whole heads' key blocks a round, each program running tiles of different heads one after
/// another (its ring slots and dQ staging turns counted on): ragged lengths, GQA and MQA,
/// N_q ≠ N_kv both ways, softcap, both dtypes, bwd_fused on two chains and bwd_fused_atomic.
#[test]
fn persistent_fused_backward_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let cases = [
        // (5 key blocks a head: 2 heads a round of 10 programs, 2 rounds; 2 blocks: 2 programs, 2 rounds; 3
        // blocks: 3 programs (4 SMs), 6 rounds)
        (DType::Bf16, Case { z: 2, h: 4, h_kv: 2, n_q: 300, n_kv: 520, programs: 11, ..RAGGED }),
        (DType::F16, Case { z: 2, h: 4, h_kv: 1, n_q: 700, n_kv: 130, programs: 3, ..RAGGED }),
        (DType::Bf16, Case { z: 3, h: 2, h_kv: 2, n_q: 200, n_kv: 260, softcap: Some(5.0), programs: 4, ..RAGGED }),
    ];
    let tiles = ScheduleOverrides { persistent_tiles: Some(true), ..ScheduleOverrides::NONE };
    // (each case on one kind and head dim, the three in turn: the plain persistent grid is an option since
    // bwd_fused's default loads the next tile early, which persistent_fused_backward_early_next_tile_on_the_emulator
    // runs, and tests/gpu.rs holds bit for bit to this grid)
    let kinds = [(KernelKind::BwdFused, 64), (KernelKind::BwdFusedAtomic, 128), (KernelKind::BwdFused, 128)];
    for (i, ((dtype, c), (kind, d))) in cases.into_iter().zip(kinds).enumerate() {
        let base = spec_for(kind, dtype, d, &c);
        let spec = KernelSpec::with_features(*base.params(), tiles, base.features()).unwrap();
        assert!(spec.schedule().persistent_tiles, "{}: not persistent", spec.name());
        let (programs, rows, _) = spec.grid(&c.grid(), c.programs);
        let blocks = c.n_kv.div_ceil(128) as u32;
        let tiles = blocks * (c.z * c.h_kv) as u32;
        assert!(rows == 1 && programs == c.programs / blocks * blocks && programs < tiles, "{}: grid ({programs}, {rows}) for {c:?}", spec.name());
        let chains = if kind == KernelKind::BwdFused { 2 } else { 1 };
        check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, 1300 + i as u64), chains);
    }
    // (the autotuner's one-warpgroup tile at HEAD_DIM 64: 64 keys a program on 64-row query blocks, three
    // stages; 9 key blocks a head, one head a round of 9 programs, 2 rounds)
    let c = Case { z: 2, h: 2, h_kv: 1, n_q: 330, n_kv: 520, programs: 10, ..RAGGED };
    let params = flashgen::spec::SpecParams { block_m: 64, block_n: 64, num_warps: 8, num_stages: 3, ..*spec_for(KernelKind::BwdFused, DType::Bf16, 64, &c).params() };
    let spec = KernelSpec::with_features(params, tiles, flashgen::Features::NONE).unwrap();
    assert_eq!(spec.grid(&c.grid(), c.programs), (9, 1, 1), "{}", spec.name());
    check_backward(&tools, &[spec], c, &mut normal_inputs(DType::Bf16, 1310), 2);
    // the sum pass in the rounds' order (`Schedule::dq_sum_rounds`) and the next tile's K/V prefetched
    // (`Schedule::prefetch_next_tile`: the emulator checks each row lies in its buffer, the last head's last
    // block past the keys' end): 3 key blocks a head, 4 of the 6 K/V head rows a round of 12 programs, then
    // the 2 left; each K/V head two query heads (a tile's steps run the group's heads one after the other)
    let c = Case { z: 2, h: 6, h_kv: 3, n_q: 330, n_kv: 260, programs: 13, ..RAGGED };
    let rounds = ScheduleOverrides { dq_sum_rounds: Some(true), ..tiles };
    let prefetch = ScheduleOverrides { prefetch_next_tile: Some(true), ..tiles };
    let both = ScheduleOverrides { prefetch_next_tile: Some(true), ..rounds };
    for (i, (kind, dtype, d, o)) in [(KernelKind::BwdFused, DType::Bf16, 64, both), (KernelKind::BwdFused, DType::F16, 128, rounds), (KernelKind::BwdFusedAtomic, DType::Bf16, 128, prefetch)].into_iter().enumerate() {
        let base = spec_for(kind, dtype, d, &c);
        let spec = KernelSpec::with_features(*base.params(), o, base.features()).unwrap();
        assert_eq!((spec.schedule().dq_sum_rounds, spec.schedule().prefetch_next_tile), (o.dq_sum_rounds.is_some(), o.prefetch_next_tile.is_some()), "{}", spec.name());
        assert_eq!(spec.round_heads(&c.grid(), c.programs), 4, "{}", spec.name());
        let chains = if kind == KernelKind::BwdFused { 2 } else { 1 };
        check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, 1320 + i as u64), chains);
    }
}

/// Softcap on the fused kernels, a causal sliding window on bwd_fused_up (its key blocks visit the window's
/// query blocks).
#[test]
fn fused_backward_windows_and_softcap_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let cases = [
        (KernelKind::BwdFusedUp, Case { causal: true, window: SLIDING, ..RAGGED }),
        (KernelKind::BwdFusedUp, Case { n_q: 130, n_kv: 330, causal: true, window: SLIDING, ..RAGGED }),
        // (packed sequences, empty ones, N_q ≠ N_kv both ways, one long enough that the window skips its first
        // key blocks' later query blocks)
        (KernelKind::BwdFusedUp, Case { causal: true, window: SLIDING, packed: &[(70, 70), (0, 0), (130, 200), (30, 0), (250, 90), (700, 700)], ..RAGGED }),
        (KernelKind::BwdFused, Case { softcap: Some(5.0), ..RAGGED }),
        (KernelKind::BwdFusedUp, Case { causal: true, softcap: Some(5.0), ..RAGGED }),
    ];
    for (i, (kind, c)) in cases.into_iter().enumerate() {
        for d in [64, 128] {
            check_backward(&tools, &[spec_for(kind, DType::Bf16, d, &c)], c, &mut normal_inputs(DType::Bf16, 700 + i as u64), 1);
        }
    }
}

/// The fused kinds with a schedule switch set (`overrides`; bwd_fused_up's grid unfolded where `unfold`) over
/// the geometry's cases, softcap and a window: each case one of `head_dims` in turn (HEAD_DIM 64's 128-row
/// blocks, 128's 64-row ones) and bf16 and fp16 in turn; `took` checks that the spec has the switch.
fn fused_backward_with_schedule(overrides: flashgen::ScheduleOverrides, unfold: bool, head_dims: &[u32], took: fn(&KernelSpec) -> bool, seed: u64) {
    let Some(tools) = simt::tools_or_skip() else { return };
    let scheduled = |kind: KernelKind, dtype: DType, d: u32, c: &Case| -> Option<KernelSpec> {
        let base = admitted(kind, dtype, d, c).ok()?;
        let fold = (unfold && kind == KernelKind::BwdFusedUp).then_some(false);
        let o = flashgen::ScheduleOverrides { fold_key_blocks: fold, ..overrides };
        let spec = KernelSpec::with_features(*base.params(), o, base.features()).unwrap_or_else(|e| panic!("{kind:?} {c:?} D{d}: {e}"));
        assert!(took(&spec), "{}: not scheduled as asked", spec.name());
        Some(spec)
    };
    let extra = [Case { softcap: Some(5.0), ..RAGGED }, Case { causal: true, window: SLIDING, ..RAGGED }];
    for (i, c) in geometry_cases().into_iter().chain(extra).enumerate() {
        let (d, dtype) = (head_dims[i % head_dims.len()], if i % 2 == 0 { DType::Bf16 } else { DType::F16 });
        let kinds: &[KernelKind] = if c.causal { &[KernelKind::BwdFused, KernelKind::BwdFusedUp] } else { &[KernelKind::BwdFused, KernelKind::BwdFusedAtomic] };
        for spec in kinds.iter().filter_map(|&kind| scheduled(kind, dtype, d, &c)) {
            let chains = if spec.kind() == KernelKind::BwdFused { 2 } else { 1 };
            check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, seed + i as u64), chains);
        }
    }
}

/// `Schedule::ds_handover` (the dSᵀ tile passed between the two MMA warpgroups by announcements instead of a
/// barrier of both every step; bwd_fused_up unfolded). Without either wait the same cases give one
/// warpgroup's dQ rows wrong under CPU load (its race).
#[test]
fn fused_backward_ds_handover_on_the_emulator() {
    let o = flashgen::ScheduleOverrides { ds_handover: Some(true), ..flashgen::ScheduleOverrides::NONE };
    fused_backward_with_schedule(o, true, &[64, 128], |s| s.schedule().ds_handover, 1100);
}

/// `Schedule::early_dv` (dV += Pᵀ·dO issued before dS's store and the barrier, a group of its own) on every
/// fused kind of HEAD_DIM 128's tile (derived on only for bwd_fused_up; the rules refuse 64's).
#[test]
fn fused_backward_early_dv_on_the_emulator() {
    let o = flashgen::ScheduleOverrides { early_dv: Some(true), ..flashgen::ScheduleOverrides::NONE };
    fused_backward_with_schedule(o, false, &[128], |s| s.schedule().early_dv, 1200);
}

/// `Schedule::staged_epilogue` is derived on for the fused kinds, so every fused test here runs it (dK and dV
/// through the K and V tiles, stored in 16-byte chunks). This one runs the opt-out, `staged_epilogue=off`
/// (dK/dV stored from the fragments), on every fused kind over the geometry's cases (ragged lengths, GQA,
/// packed sequences) at HEAD_DIM 64, 128 and the padded 96 and 32, bwd_fused_up folded, and on a persistent
/// grid.
#[test]
fn fused_backward_staged_epilogue_on_the_emulator() {
    let o = flashgen::ScheduleOverrides { staged_epilogue: Some(false), ..flashgen::ScheduleOverrides::NONE };
    fused_backward_with_schedule(o, false, &[64, 128, 96, 32], |s| !s.schedule().staged_epilogue, 1400);
    let Some(tools) = simt::tools_or_skip() else { return };
    let c = Case { z: 2, h: 4, h_kv: 2, n_q: 300, n_kv: 520, programs: 11, ..RAGGED };
    for (i, (kind, dtype, d)) in [(KernelKind::BwdFused, DType::Bf16, 64), (KernelKind::BwdFusedAtomic, DType::F16, 128)].into_iter().enumerate() {
        let base = spec_for(kind, dtype, d, &c);
        let o = ScheduleOverrides { persistent_tiles: Some(true), staged_epilogue: Some(false), ..ScheduleOverrides::NONE };
        let spec = KernelSpec::with_features(*base.params(), o, base.features()).unwrap();
        assert!(spec.schedule().persistent_tiles && !spec.schedule().staged_epilogue, "{}", spec.name());
        let chains = if kind == KernelKind::BwdFused { 2 } else { 1 };
        check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, 1450 + i as u64), chains);
    }
}

/// `Schedule::early_next_tile` on persistent grids: each program's next tile's K/V (at HEAD_DIM 64's tile
/// also its first Q/dO block) issued under this tile's epilogue, dK/dV staged in the ring's free slots
/// (64: both in one; 128: one each, on rings of two and three stages): ragged lengths, GQA and MQA,
/// N_q ≠ N_kv both ways, softcap, both dtypes, bwd_fused on two chains and bwd_fused_atomic, with the L2
/// prefetch too.
#[test]
fn persistent_fused_backward_early_next_tile_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let early = ScheduleOverrides { persistent_tiles: Some(true), early_next_tile: Some(true), ..ScheduleOverrides::NONE };
    let prefetch = ScheduleOverrides { prefetch_next_tile: Some(true), ..early };
    // (kind, dtype, HEAD_DIM, ring stages, schedule, case; bwd_fused's default non-causal to 4096 tokens is
    // the early grid on three stages: at HEAD_DIM 64 the next tile's first two Q/dO blocks go to the two
    // slots besides the staging one, on two stages to the one)
    let runs = [
        (KernelKind::BwdFused, DType::Bf16, 64, 3, prefetch, Case { z: 2, h: 4, h_kv: 2, n_q: 300, n_kv: 520, programs: 11, ..RAGGED }),
        (KernelKind::BwdFused, DType::F16, 64, 2, early, Case { z: 1, h: 2, h_kv: 2, n_q: 200, n_kv: 390, programs: 5, ..RAGGED }),
        (KernelKind::BwdFusedAtomic, DType::F16, 128, 2, early, Case { z: 2, h: 4, h_kv: 1, n_q: 700, n_kv: 130, programs: 3, ..RAGGED }),
        (KernelKind::BwdFused, DType::Bf16, 128, 3, early, Case { z: 3, h: 2, h_kv: 2, n_q: 200, n_kv: 260, softcap: Some(5.0), programs: 4, ..RAGGED }),
    ];
    for (i, (kind, dtype, d, stages, o, c)) in runs.into_iter().enumerate() {
        let base = spec_for(kind, dtype, d, &c);
        let params = flashgen::spec::SpecParams { num_stages: stages, ..*base.params() };
        let spec = KernelSpec::with_features(params, o, base.features()).unwrap();
        assert!(spec.schedule().early_next_tile && spec.schedule().staged_epilogue, "{}", spec.name());
        let (programs, _, _) = spec.grid(&c.grid(), c.programs);
        assert!(programs < c.n_kv.div_ceil(128) as u32 * (c.z * c.h_kv) as u32, "{}: a tile a program for {c:?}", spec.name());
        let chains = if kind == KernelKind::BwdFused { 2 } else { 1 };
        check_backward(&tools, &[spec], c, &mut normal_inputs(dtype, 1500 + i as u64), chains);
    }
}

/// The wgmma backward pair (bwd_dkdv_wgmma, then bwd_dq_wgmma: cp.async rings, wgmma), where the plan runs
/// what the fused kernels do not take: windows that are not causal, and below 1024 tokens
/// at every head dim; the geometry's cases and windows.
#[test]
fn wgmma_backward_pair_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let windows = [Case { window: Window { left: Some(40), right: Some(90) }, ..RAGGED }, Case { causal: true, window: SLIDING, softcap: Some(5.0), ..RAGGED }];
    for (i, c) in geometry_cases().into_iter().chain(windows).enumerate() {
        for (d, dtype) in [(64, DType::F16), (128, DType::Bf16)] {
            let pair = [spec_for(KernelKind::BwdDkdvWgmma, dtype, d, &c), spec_for(KernelKind::BwdDqWgmma, dtype, d, &c)];
            check_backward(&tools, &pair, c, &mut normal_inputs(dtype, 800 + i as u64), 1);
        }
    }
}

/// The modifier cases: ALiBi (ragged, GQA with unequal lengths, causal packed with empty sequences), causal as
/// a mask_mod, ALiBi with a per-batch document mask.
const MODIFIED: [Case; 5] = [
    Case { mods: Mods::Alibi, ..RAGGED },
    Case { mods: Mods::Alibi, causal: true, z: 1, h: 4, h_kv: 2, n_q: 130, n_kv: 260, ..RAGGED },
    Case { mods: Mods::Alibi, causal: true, packed: &[(70, 70), (0, 0), (130, 200), (30, 0)], ..RAGGED },
    Case { mods: Mods::CausalMask, ..RAGGED },
    Case { mods: Mods::AlibiDocuments, z: 3, h: 2, h_kv: 1, n_q: 200, n_kv: 200, ..RAGGED },
];

/// Score and mask modifiers compiled into the kernels: fwd_ws (the forward with modifiers), the wgmma pair
/// (mask_mods' backward) and the fused backward (score_mods at HEAD_DIM 96/128): ALiBi (ragged, GQA, unequal
/// lengths, packed, causal), causal as a mask_mod, ALiBi with a per-batch document mask.
#[test]
fn modifiers_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in MODIFIED.into_iter().enumerate() {
        for (d, dtype) in [(64, DType::Bf16), (128, DType::F16)] {
            check(&tools, spec_for(KernelKind::FwdWs, dtype, d, &c), c, 900 + i as u64);
            let pair = [spec_for(KernelKind::BwdDkdvWgmma, dtype, d, &c), spec_for(KernelKind::BwdDqWgmma, dtype, d, &c)];
            check_backward(&tools, &pair, c, &mut normal_inputs(dtype, 950 + i as u64), 1);
            // (the fused kernels take a score_mod without a mask_mod where their tile holds it: not HEAD_DIM
            // 64's 128-row one)
            if let Ok(fused) = admitted(if c.causal { KernelKind::BwdFusedUp } else { KernelKind::BwdFused }, dtype, d, &c) {
                check_backward(&tools, &[fused], c, &mut normal_inputs(dtype, 970 + i as u64), 1);
            }
        }
    }
}

/// The mma.sync kernels (sm_80 and every GPU without wgmma: A100, L40, RTX): the forward and the three-kernel
/// backward (Δ, dK/dV, dQ) on the geometry's cases.
#[test]
fn mma_sync_kernels_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in geometry_cases().into_iter().enumerate() {
        for (d, dtype) in [(64, DType::F16), (128, DType::Bf16)] {
            let on = |kind| admitted_on(Arch::Sm80, kind, dtype, d, &c).unwrap_or_else(|e| panic!("{kind:?} {c:?}: {e}"));
            check(&tools, on(KernelKind::Fwd), c, 1000 + i as u64);
            let three = [on(KernelKind::BwdPre), on(KernelKind::BwdDkdv), on(KernelKind::BwdDq)];
            check_backward(&tools, &three, c, &mut normal_inputs(dtype, 1050 + i as u64), 1);
        }
    }
}

/// Windows and softcap on the mma.sync kernels (Mistral's and Gemma 2's attention on an A100, L40 or RTX):
/// the plan's forward and three-kernel backward for sm_80, both head dims and dtypes, causal or not,
/// unequal lengths, packed sequences.
#[test]
fn mma_sync_windows_and_softcap_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let more = [
        Case { softcap: Some(5.0), ..RAGGED },
        Case { causal: true, softcap: Some(5.0), window: SLIDING, ..RAGGED },
        Case { causal: true, window: SLIDING, packed: &[(70, 70), (0, 0), (130, 200), (300, 300), (30, 0)], ..RAGGED },
    ];
    for (i, c) in WINDOWS.into_iter().chain(more).enumerate() {
        for (d, dtype) in [(64, DType::F16), (128, DType::Bf16)] {
            let (problem, _) = c.planned(dtype, d);
            let planned = plan::plan(Arch::Sm80, &problem, &plan::PlanOptions::default(), &plan::NoTuning).unwrap_or_else(|e| panic!("{c:?} D{d}: {e}"));
            assert_eq!(planned.forward.kind(), KernelKind::Fwd, "{}", planned.forward.name());
            check(&tools, planned.forward, c, 1300 + i as u64);
            check_backward(&tools, &planned.backward.kernels(), c, &mut normal_inputs(dtype, 1350 + i as u64), 1);
        }
    }
}

/// Score and mask modifiers on the mma.sync kernels (FlexAttention-style ALiBi, causal as a mask_mod, a
/// document mask on an A100, L40 or RTX): the plan's forward and three-kernel backward for sm_80 (HEAD_DIM
/// 128's dK/dV on 16-row query blocks: ALiBi spills 32-row ones), both dtypes, GQA, unequal lengths, packed.
#[test]
fn mma_sync_modifiers_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, c) in MODIFIED.into_iter().enumerate() {
        for (d, dtype) in [(64, DType::F16), (128, DType::Bf16)] {
            let (problem, _) = c.planned(dtype, d);
            let planned = plan::plan(Arch::Sm80, &problem, &plan::PlanOptions::default(), &plan::NoTuning).unwrap_or_else(|e| panic!("{c:?} D{d}: {e}"));
            assert_eq!(planned.forward.kind(), KernelKind::Fwd, "{}", planned.forward.name());
            assert!(planned.forward.features().modifiers.is_some(), "{}", planned.forward.name());
            check(&tools, planned.forward, c, 1400 + i as u64);
            check_backward(&tools, &planned.backward.kernels(), c, &mut normal_inputs(dtype, 1450 + i as u64), 1);
        }
    }
}

/// The backward the plan runs at every head dim (Δ, then the wgmma pair below 1024 tokens and the fused
/// kernel from there where the table has it; 192 and 256 on the pair, dK/dV on the column warpgroups), planned for a
/// short and a long sequence and run on a ragged one.
#[test]
fn planned_backward_at_every_head_dim_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (i, d) in [32u32, 96, 192, 256].into_iter().enumerate() {
        for causal in [false, true] {
            let c = Case { causal, ..RAGGED };
            for hint in [200, 4096] {
                let (mut problem, _) = c.planned(DType::Bf16, d);
                problem.seqlen = hint;
                problem.seqlen_k = hint;
                let planned = plan::plan(Arch::Sm90a, &problem, &plan::PlanOptions::default(), &plan::NoTuning).unwrap();
                check_backward(&tools, &planned.backward.kernels(), c, &mut normal_inputs(DType::Bf16, 1200 + i as u64), planned.dq_chains);
            }
        }
    }
}

/// Windows on the persistent forward (exp/persistent-window): each tile's blocks from its first row's
/// first key's, the ring counting on from there across tiles; tiles past the window's reach vacant.
#[test]
fn persistent_forward_windows_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let more = [
        Case { z: 1, h: 2, h_kv: 1, n_q: 520, n_kv: 100, causal: true, window: SLIDING, ..RAGGED },
        Case { causal: true, window: SLIDING, packed: &[(70, 70), (0, 0), (130, 200), (300, 300), (30, 0)], ..RAGGED },
    ];
    for (i, c) in WINDOWS.into_iter().chain(more).enumerate() {
        for (d, dtype) in [(64, DType::F16), (128, DType::Bf16)] {
            check(&tools, spec_for(KernelKind::FwdWsPersistent, dtype, d, &c), c, 1100 + i as u64);
        }
    }
}

/// `spec` with its tile's K/V blocks `block_n` keys wide on `num_stages` stages and the switches `overrides`.
fn retiled(spec: &KernelSpec, block_n: u32, num_stages: u32, overrides: ScheduleOverrides) -> KernelSpec {
    let params = flashgen::spec::SpecParams { block_n, num_stages, ..*spec.params() };
    KernelSpec::with_features(params, overrides, spec.features()).unwrap_or_else(|e| panic!("{}: {e}", spec.name()))
}

/// K and V on barriers of their own (`Schedule::split_kv_ring`): FA3's non-causal 128×176 tile on two
/// stages (the ring wraps: 600 keys are four blocks, the last one partial), and the switch on the table's
/// tiles of both forwards, where K goes back a step before V.
#[test]
fn split_kv_ring_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let split = ScheduleOverrides { split_kv_ring: Some(true), own_blocks: Some(false), ..ScheduleOverrides::NONE };
    let long_keys = [Case { n_q: 130, n_kv: 600, ..RAGGED }, Case { h: 2, h_kv: 1, packed: &[(70, 600), (0, 0), (200, 130), (30, 0)], ..RAGGED }];
    let wide: Vec<Case> = geometry_cases().into_iter().filter(|c| !c.causal).chain(long_keys).chain([Case { softcap: Some(5.0), ..RAGGED }]).collect();
    for (i, c) in wide.into_iter().enumerate() {
        let spec = retiled(&spec_for(KernelKind::FwdWs, DType::Bf16, 128, &c), WS_WIDE_BLOCK_N, 2, ScheduleOverrides::NONE);
        assert!(spec.split_kv_ring() && spec.ping_pong(), "{}: the wide block runs ping-pong on the split ring", spec.name());
        check(&tools, spec, c, 1200 + i as u64);
    }
    for (i, c) in geometry_cases().into_iter().chain(long_keys).enumerate() {
        for (kind, d, dtype) in [(KernelKind::FwdWs, 64, DType::F16), (KernelKind::FwdWs, 128, DType::Bf16), (KernelKind::FwdWsPersistent, 64, DType::Bf16), (KernelKind::FwdWsPersistent, 128, DType::F16)] {
            // (the rules refuse the split ring on the causal persistent tile at HEAD_DIM 128: it spilled)
            if kind == KernelKind::FwdWsPersistent && d == 128 && c.causal {
                continue;
            }
            let table = spec_for(kind, dtype, d, &c);
            let spec = retiled(&table, table.params().block_n, table.params().num_stages, split);
            check(&tools, spec, c, 1300 + i as u64);
        }
        // HEAD_DIM 256's two-stage tile, ping-pong on the split ring
        let table = spec_for(KernelKind::FwdWs, DType::Bf16, 256, &c);
        let spec = retiled(&table, table.params().block_n, 2, split);
        assert!(spec.ping_pong(), "{}: ping-pong on two stages", spec.name());
        check(&tools, spec, c, 1400 + i as u64);
    }
}

/// The column warpgroups (bwd_dkdv_wgmma on 8 warps and 64 keys, `KernelSpec::column_warpgroups`): both
/// warpgroups own the program's keys and half of dK's and dV's columns, warpgroup 0 hands P to warpgroup 1
/// and takes dS back through shared memory (named barriers 1 and 2 every step, the exchange rewritten
/// each step). HEAD_DIM 256 (each warpgroup 128 columns, unsplit), 192 (96 each: panel w and half w of
/// panel 2, whose chain starts 64 bytes into its rows) and 128 (64 each), on the geometry's
/// cases, a window, a mask_mod, softcap with a causal window and ALiBi on packed sequences (P times dS's
/// factor handed over, P packed beside it); dK and dV NaN-poisoned, so a warpgroup storing the other's
/// columns or none shows.
#[test]
fn dkdv_column_warpgroups_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let more = [
        Case { window: Window { left: Some(40), right: Some(90) }, ..RAGGED },
        Case { mods: Mods::CausalMask, ..RAGGED },
        Case { causal: true, window: SLIDING, softcap: Some(5.0), ..RAGGED },
        Case { mods: Mods::Alibi, causal: true, packed: &[(70, 70), (0, 0), (130, 200), (30, 0)], ..RAGGED },
    ];
    for (i, c) in geometry_cases().into_iter().chain(more).enumerate() {
        for (d, dtype) in [(256, DType::Bf16), (192, DType::F16), (128, DType::F16)] {
            let table = spec_for(KernelKind::BwdDkdvWgmma, dtype, d, &c);
            let params = flashgen::spec::SpecParams { block_m: 64, block_n: 64, num_warps: 8, num_stages: 2, ..*table.params() };
            let paired = KernelSpec::with_features(params, ScheduleOverrides::NONE, table.features()).unwrap_or_else(|e| panic!("{}: {e}", table.name()));
            assert_eq!((paired.column_warpgroups(), paired.column_splits(), paired.output_columns()), (2, 1, d / 2), "{}", paired.name());
            // (HEAD_DIM 192: each warpgroup a whole panel and half of the third, two chains a product)
            assert_eq!(paired.column_pieces().len(), if d == 192 { 2 } else { 1 }, "{}", paired.name());
            check_backward(&tools, &[paired, spec_for(KernelKind::BwdDqWgmma, dtype, d, &c)], c, &mut normal_inputs(dtype, 1500 + i as u64), 1);
        }
    }
}
