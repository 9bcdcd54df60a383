//! GPU tests: they need an NVIDIA GPU and its driver, so they are #[ignore]d here and run on the device
//! machine (`bench/device.sh checks` runs this binary with --ignored; results in bench/results/). Run without a
//! GPU they fail: they never pass silently.

use flashgen::reference::{backward_f64, naive_f64, relative_error, Shape, SplitMix};
use flashgen::DType;
use flashgen_runtime::{BackwardPath, Flash, Gpu, KernelCache, Layout, RowStats, Tensor};

fn flash() -> Flash {
    Flash::new(Gpu::open(0).expect("a CUDA GPU is required for this test"), KernelCache::new(None, flashgen_runtime::KernelSource::default_source()))
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn attention_forward_matches_f64_and_returns_natural_lse() {
    let f = flash();
    let mut rng = SplitMix(11);
    for (dtype, d, causal) in [(DType::Bf16, 64, true), (DType::F16, 128, false)] {
        let s = Shape { z: 2, h: 2, n: 333, d };
        let layout = Layout::bshd(2, 2, 333, d);
        let round = |x: f32| flashgen_runtime::tensor::from_bits(dtype, flashgen_runtime::tensor::to_bits(dtype, x));
        let mut gen = || -> Vec<f32> { (0..s.len()).map(|_| round(rng.normal())).collect() };
        let (q, k, v) = (gen(), gen(), gen());
        let up = |x: &[f32]| Tensor::from_f32(&f.gpu, x, dtype, layout).unwrap();
        let out = f.attention_forward(&up(&q), &up(&k), &up(&v), causal, None).unwrap();
        let r = naive_f64(&q, &k, &v, s, causal, 1.0 / (d as f64).sqrt());
        let o = out.o.to_f32(&f.gpu).unwrap();
        assert!(relative_error(&o, &r.o) <= 1e-2);
        let lse: Vec<f32> = f.gpu.stream.clone_dtoh(&out.lse).unwrap();
        let natural: Vec<f64> = r.m.iter().map(|m| m * std::f64::consts::LN_2).collect();
        assert!(relative_error(&lse, &natural) <= 1e-3);
        let m: Vec<f32> = f.gpu.stream.clone_dtoh(&out.m).unwrap();
        assert!(relative_error(&m, &r.m) <= 1e-3);
    }
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn bad_arguments_are_errors_not_crashes() {
    let f = flash();
    let l = Layout::contiguous(1, 2, 64, 64);
    let x = vec![0.5f32; 2 * 64 * 64];
    let q = Tensor::from_f32(&f.gpu, &x, DType::Bf16, l).unwrap();
    let k16 = Tensor::from_f32(&f.gpu, &x, DType::F16, l).unwrap();
    let e = f.attention_forward(&q, &k16, &q, false, None).err().unwrap().to_string();
    assert!(e.contains("tensor K is fp16 but Q is bf16"), "{e}");
    // (a head dim no kernel has: 80)
    let l80 = Layout::contiguous(1, 1, 64, 80);
    let q80 = Tensor::from_f32(&f.gpu, &vec![0.1f32; 64 * 80], DType::Bf16, l80).unwrap();
    let e = f.attention_forward(&q80, &q80, &q80, false, None).err().unwrap().to_string();
    assert!(e.contains("HEAD_DIM=80"), "{e}");
    // K/V of another length is legal (unequal lengths); K and V of two lengths, or heads that do not divide
    // Q's, are not
    let short = Layout::contiguous(1, 2, 32, 64);
    let k = Tensor::from_f32(&f.gpu, &x[..2 * 32 * 64], DType::Bf16, short).unwrap();
    f.attention_forward(&q, &k, &k, true, None).unwrap();
    let e = f.attention_forward(&q, &k, &q, false, None).err().unwrap().to_string();
    assert!(e.contains("K and V must have one batch, head count and length"), "{e}");
    let three = Tensor::from_f32(&f.gpu, &vec![0.5f32; 3 * 64 * 64], DType::Bf16, Layout::contiguous(1, 3, 64, 64)).unwrap();
    let e = f.attention_forward(&q, &three, &three, false, None).err().unwrap().to_string();
    assert!(e.contains("multiple of the K/V heads"), "{e}");
    let e = f.attention_forward(&q, &q, &q, false, Some(-1.0)).err().unwrap().to_string();
    assert!(e.contains("sm_scale"), "{e}");
}

/// Random Q, K, V, dO of shape `s` in BSHD layout, rounded to the dtype: the host values and the tensors.
fn backward_inputs(f: &Flash, rng: &mut SplitMix, dtype: DType, s: Shape) -> ([Vec<f32>; 4], [Tensor; 4]) {
    let layout = Layout::bshd(s.z, s.h, s.n, s.d);
    let round = |x: f32| flashgen_runtime::tensor::from_bits(dtype, flashgen_runtime::tensor::to_bits(dtype, x));
    let host: [Vec<f32>; 4] = std::array::from_fn(|_| (0..s.len()).map(|_| round(rng.normal())).collect());
    let tensors = std::array::from_fn(|i| Tensor::from_f32(&f.gpu, &host[i], dtype, layout).unwrap());
    (host, tensors)
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn attention_backward_matches_f64_from_lse_or_m() {
    let f = flash();
    let mut rng = SplitMix(12);
    // the last case is long enough for the default fused backward on sm_90a (at HEAD_DIM 128 from 1024
    // tokens: spec::defaults::BACKWARD_KINDS)
    for (dtype, d, causal, natural, n) in [(DType::Bf16, 128, true, true, 200), (DType::F16, 64, false, false, 200), (DType::Bf16, 128, true, false, 4096)] {
        let s = Shape { z: 1, h: if n > 1000 { 1 } else { 2 }, n, d };
        let ([q, k, v, d_o], [tq, tk, tv, tdo]) = backward_inputs(&f, &mut rng, dtype, s);
        let fused = f.backward_specs(&tq, causal).unwrap().dkdv.kind().fuses_dq();
        assert_eq!(fused, f.gpu.arch.has_wgmma() && d == 128 && n >= 1024, "N={n} d{d}");
        let out = f.attention_forward(&tq, &tk, &tv, causal, None).unwrap();
        let stats = if natural { RowStats::Lse(&out.lse) } else { RowStats::M(&out.m) };
        let g = f.attention_backward(&tq, &tk, &tv, &out.o, stats, &tdo, causal, None).unwrap();
        let r = backward_f64(&q, &k, &v, &d_o, s, causal, 1.0 / (d as f64).sqrt());
        for (name, got, want) in [("dQ", &g.dq, &r.dq), ("dK", &g.dk, &r.dk), ("dV", &g.dv, &r.dv)] {
            let e = relative_error(&got.to_f32(&f.gpu).unwrap(), want);
            assert!(e <= 2e-2, "{name} relative error {e:.3e} ({} d{d} causal={causal} N={n})", dtype.name());
        }
    }
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn bad_backward_arguments_are_errors_not_crashes() {
    let f = flash();
    let l = Layout::contiguous(1, 2, 64, 64);
    let x = vec![0.5f32; 2 * 64 * 64];
    let t = |dtype| Tensor::from_f32(&f.gpu, &x, dtype, l).unwrap();
    let (q, k16) = (t(DType::Bf16), t(DType::F16));
    let m = f.gpu.stream.alloc_zeros::<f32>(2 * 64).unwrap();
    let e = f.attention_backward(&q, &q, &q, &q, RowStats::M(&m), &k16, false, None).err().unwrap().to_string();
    assert!(e.contains("tensor dO is fp16 but Q is bf16"), "{e}");
    let short_m = f.gpu.stream.alloc_zeros::<f32>(64).unwrap();
    let e = f.attention_backward(&q, &q, &q, &q, RowStats::M(&short_m), &q, false, None).err().unwrap().to_string();
    assert!(e.contains("tensor M") && e.contains("128"), "{e}");
    let e = f.attention_backward(&q, &q, &q, &q, RowStats::Lse(&short_m), &q, true, None).err().unwrap().to_string();
    assert!(e.contains("tensor LSE"), "{e}");
    // the gradients of a K/V of another length have its shape
    let short = Tensor::from_f32(&f.gpu, &x[..2 * 32 * 64], DType::Bf16, Layout::contiguous(1, 2, 32, 64)).unwrap();
    let g = f.attention_backward(&q, &short, &short, &q, RowStats::M(&m), &q, false, None).unwrap();
    assert_eq!((g.dq.layout.shape, g.dk.layout.shape), ([1, 2, 64, 64], [1, 2, 32, 64]));
}

/// K and V shared by every head (head stride 0, as multi-query attention broadcasts them), and in the
/// backward dO too: legal layouts for the launcher. At HEAD_DIM 128 on sm_90a the defaults are fwd_ws and,
/// from 1024 tokens, the fused backward, which load by TMA, whose maps the driver may refuse for a zero stride; the
/// calls then run fwd_wgmma and the three backward kernels. Either way the results match f64.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn broadcast_heads_run_correctly_with_or_without_tma() {
    let f = flash();
    let (z, h, d) = (1, 2, 128);
    let dtype = DType::Bf16;
    let mut rng = SplitMix(5);
    let round = |x: f32| flashgen_runtime::tensor::from_bits(dtype, flashgen_runtime::tensor::to_bits(dtype, x));
    for (n, causal) in [(333, false), (333, true), (4096, true)] {
        let s = Shape { z, h, n, d };
        let q: Vec<f32> = (0..s.len()).map(|_| round(rng.normal())).collect();
        let mut one_head = || -> Vec<f32> { (0..n * d).map(|_| round(rng.normal())).collect() };
        let (k, v, d_o) = (one_head().repeat(h), one_head().repeat(h), one_head().repeat(h));
        let shared = Layout { shape: [z, h, n, d], strides: [n * d, 0, d, 1] };
        let qt = Tensor::from_f32(&f.gpu, &q, dtype, Layout::contiguous(z, h, n, d)).unwrap();
        let [kt, vt, dot] = [&k, &v, &d_o].map(|x| Tensor::from_f32(&f.gpu, x, dtype, shared).unwrap());
        let out = f.attention_forward(&qt, &kt, &vt, causal, None).unwrap();
        let r = naive_f64(&q, &k, &v, s, causal, 1.0 / (d as f64).sqrt());
        let err = relative_error(&out.o.to_f32(&f.gpu).unwrap(), &r.o);
        assert!(err <= 1e-2, "N={n} causal={causal}: {err}");
        let g = f.attention_backward(&qt, &kt, &vt, &out.o, RowStats::M(&out.m), &dot, causal, None).unwrap();
        let rb = backward_f64(&q, &k, &v, &d_o, s, causal, 1.0 / (d as f64).sqrt());
        for (name, got, want) in [("dQ", &g.dq, &rb.dq), ("dK", &g.dk, &rb.dk), ("dV", &g.dv, &rb.dv)] {
            let e = relative_error(&got.to_f32(&f.gpu).unwrap(), want);
            assert!(e <= 2e-2, "backward with broadcast K, V, dO: {name} relative error {e:.3e} (N={n} causal={causal})");
        }
    }
}

/// The runtime hands PTX to the driver as a whole program. Through the linker (cuLink*, relocatable code)
/// ptxas ignored setmaxnreg and serialized every wgmma, and fwd_ws ran 15% slower with 159 registers instead
/// of its `.maxnreg`. The loaded fwd_ws must have exactly its launch registers; a PTX the driver rejects
/// comes back as an error that names the kernel and carries the JIT's log.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn kernels_load_as_whole_programs_and_rejected_ptx_is_an_error() {
    let f = flash();
    if f.gpu.arch == flashgen::Arch::Sm90a {
        let spec = flashgen_tests::plan_at(f.gpu.arch, DType::Bf16, 128, false, 16384).forward;
        assert_eq!(spec.kind(), flashgen::KernelKind::FwdWs);
        let k = f.kernel(&spec).unwrap();
        assert_eq!(k.function.num_regs().unwrap() as u32, spec.registers().launch, "{}: registers at launch", spec.name());
        // and the persistent short-sequence default, four consumers on 96 registers at launch
        let short = flashgen_tests::plan_at(f.gpu.arch, DType::Bf16, 64, false, 1024).forward;
        assert_eq!(short.kind(), flashgen::KernelKind::FwdWsPersistent);
        let k = f.kernel(&short).unwrap();
        assert_eq!(k.function.num_regs().unwrap() as u32, short.registers().launch, "{}: registers at launch", short.name());
    }
    let bad = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry broken() { bogus.instruction; }\n";
    let e = flashgen_runtime::jit::load_module(&f.gpu, "broken", bad).expect_err("bad PTX must not load").to_string();
    assert!(e.contains("broken") && e.contains("PTX JIT failed"), "{e}");
}

/// fwd_ws_persistent runs fwd_ws's tiles in the same order of operations, so on the same tiles its O and M
/// are fwd_ws's bit for bit, however many tiles a program takes (from one tile in all to several times the SM
/// count), on ragged lengths, causal and not; and they match f64. Every launch after the first also shows
/// that the last program left the tile counter at zero (else programs would stop after their first tile).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn persistent_forward_is_fwd_ws_bit_for_bit() {
    use flashgen::{KernelKind, KernelSpec, SpecParams};
    let f = flash();
    if !f.gpu.arch.has_wgmma() {
        panic!("fwd_ws_persistent needs sm_90a; this GPU is {}", f.gpu.arch);
    }
    let mut rng = SplitMix(31);
    for (d, n, heads, causal) in [(64, 1, 1, false), (64, 333, 3, true), (64, 1024, 80, false), (64, 2500, 40, true), (128, 777, 50, false), (128, 1500, 30, true)] {
        let s = Shape { z: 1, h: heads, n, d };
        let ([q, k, v, _], [tq, tk, tv, _]) = backward_inputs(&f, &mut rng, DType::Bf16, s);
        let tiles: &[(u32, u32, u32, u32)] = match (d, causal) {
            (64, false) => &[(256, 64, 20, 6), (192, 128, 16, 4)],
            // causal 256×64 ×6 and ×8 (the default to 2048 tokens): each consumer runs its own blocks
            // (`own_blocks`), in both kinds
            (64, true) => &[(128, 128, 12, 4), (192, 128, 16, 4), (256, 64, 20, 6), (256, 64, 20, 8)],
            // 128×128: Q from registers, one Q buffer (two would not fit beside three 128-row K/V slots)
            _ => &[(128, 64, 12, 3), (128, 128, 12, 3)],
        };
        for &(block_m, block_n, num_warps, num_stages) in tiles {
            let p = SpecParams { kind: KernelKind::FwdWsPersistent, dtype: DType::Bf16, head_dim: d as u32, block_m, block_n, stage: if causal { 3 } else { 1 }, num_warps, num_stages, arch: f.gpu.arch };
            let persistent = KernelSpec::new(p).unwrap();
            let plain = KernelSpec::new(SpecParams { kind: KernelKind::FwdWs, ..p }).unwrap();
            let a = f.attention_forward_spec(&persistent, &tq, &tk, &tv, None).unwrap();
            let b = f.attention_forward_spec(&plain, &tq, &tk, &tv, None).unwrap();
            let bits = |o: &Tensor| f.gpu.stream.clone_dtoh(&o.data).unwrap();
            assert!(bits(&a.o) == bits(&b.o), "{}: O differs from {} (N={n}, {heads} heads)", persistent.name(), plain.name());
            let (ma, mb): (Vec<f32>, Vec<f32>) = (f.gpu.stream.clone_dtoh(&a.m).unwrap(), f.gpu.stream.clone_dtoh(&b.m).unwrap());
            assert!(ma.iter().zip(&mb).all(|(x, y)| x.to_bits() == y.to_bits()), "{}: M differs (N={n})", persistent.name());
            if n * heads <= 4096 {
                let r = naive_f64(&q, &k, &v, s, causal, 1.0 / (d as f64).sqrt());
                let e = relative_error(&a.o.to_f32(&f.gpu).unwrap(), &r.o);
                assert!(e <= 1e-2, "{}: relative error {e:.3e} (N={n})", persistent.name());
            }
        }
    }
}

/// The fused backward (bwd_pre + bwd_fused, opt-in), deterministic (one and three chains of additions) and
/// with atomics: gradients match f64 on ragged lengths and many key blocks, causal and not; the
/// deterministic one's dQ is the same bit for bit on a second run (its partial sums are added in program
/// order).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn fused_backward_matches_f64_and_is_deterministic() {
    let mut f = flash();
    if !f.gpu.arch.has_wgmma() {
        panic!("bwd_fused needs sm_90a; this GPU is {}", f.gpu.arch);
    }
    let mut rng = SplitMix(21);
    for (dtype, d, causal, n) in [(DType::Bf16, 128, true, 333), (DType::Bf16, 128, false, 1000), (DType::F16, 64, true, 200), (DType::Bf16, 64, false, 65)] {
        let s = Shape { z: 1, h: 3, n, d };
        let ([q, k, v, d_o], [tq, tk, tv, tdo]) = backward_inputs(&f, &mut rng, dtype, s);
        let out = f.attention_forward(&tq, &tk, &tv, causal, None).unwrap();
        let r = backward_f64(&q, &k, &v, &d_o, s, causal, 1.0 / (d as f64).sqrt());
        for path in [BackwardPath::Fused, BackwardPath::FusedAtomic] {
            f.set_backward_path(path);
            let specs = f.backward_specs(&tq, causal).unwrap();
            assert!(specs.dkdv.kind().fuses_dq() && specs.dq.is_none(), "{}", specs.names());
            let g = f.attention_backward(&tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, causal, None).unwrap();
            for (name, got, want) in [("dQ", &g.dq, &r.dq), ("dK", &g.dk, &r.dk), ("dV", &g.dv, &r.dv)] {
                let e = relative_error(&got.to_f32(&f.gpu).unwrap(), want);
                assert!(e <= 2e-2, "{path:?}: {name} relative error {e:.3e} ({} d{d} causal={causal} N={n})", dtype.name());
            }
            if path == BackwardPath::Fused {
                let again = f.attention_backward(&tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, causal, None).unwrap();
                let bits = |t: &Tensor| f.gpu.stream.clone_dtoh(&t.data).unwrap();
                assert_eq!(bits(&g.dq), bits(&again.dq), "dQ differs between two runs ({} d{d} causal={causal} N={n})", dtype.name());
                // three chains of additions: as right, and as repeatable
                f.set_dq_chains(3).unwrap();
                let c3 = f.attention_backward(&tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, causal, None).unwrap();
                let c3_again = f.attention_backward(&tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, causal, None).unwrap();
                f.set_dq_chains(None).unwrap();
                let e = relative_error(&c3.dq.to_f32(&f.gpu).unwrap(), &r.dq);
                assert!(e <= 2e-2, "3 chains: dQ relative error {e:.3e} ({} d{d} causal={causal} N={n})", dtype.name());
                assert_eq!(bits(&c3.dq), bits(&c3_again.dq), "3 chains: dQ differs between two runs");
            }
        }
    }
}

/// `Schedule::early_next_tile` (each program's next tile's K/V, and at HEAD_DIM 64 its first Q/dO block,
/// loaded under this tile's epilogue; dK/dV staged in the ring) computes what the persistent grid computes
/// without it, bit for bit, where every program runs two tiles (B 4, H 8, N 1000: 256 tiles on 128
/// programs): HEAD_DIM 64 and 128, both dtypes, the ordered kind (dQ too, its additions in program order)
/// and the atomic one (dK and dV; dQ within 1e-3 of the plain grid's, its additions in arrival order).
/// Since the early grid is bwd_fused's default there (non-causal to 4096 tokens), it also agrees with the
/// three wgmma kernels (`BackwardPath::Split`, checked against f64 by the other tests) within 1e-2.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn early_next_tile_is_the_persistent_grid_bit_for_bit() {
    use flashgen::{KernelSpec, ScheduleOverrides};
    use flashgen_runtime::Gradients;
    let mut f = flash();
    if !f.gpu.arch.has_wgmma() {
        panic!("bwd_fused needs sm_90a; this GPU is {}", f.gpu.arch);
    }
    let mut rng = SplitMix(23);
    for (dtype, d) in [(DType::Bf16, 64), (DType::F16, 128), (DType::F16, 64), (DType::Bf16, 128)] {
        let s = Shape { z: 4, h: 8, n: 1000, d };
        let (_, [tq, tk, tv, tdo]) = backward_inputs(&f, &mut rng, dtype, s);
        let out = f.attention_forward(&tq, &tk, &tv, false, None).unwrap();
        f.set_backward_path(BackwardPath::Split);
        let split = f.attention_backward(&tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, false, None).unwrap();
        for path in [BackwardPath::Fused, BackwardPath::FusedAtomic] {
            f.set_backward_path(path);
            // (the plan's tile, on the persistent grid: the table asks for it on bwd_fused's rows, not the atomic kind's)
            let planned = f.backward_specs(&tq, false).unwrap();
            let with = |early: bool| {
                let o = ScheduleOverrides { persistent_tiles: Some(true), early_next_tile: Some(early), ..*planned.dkdv.schedule_overrides() };
                flashgen::BackwardSpecs { dkdv: KernelSpec::with_features(*planned.dkdv.params(), o, planned.dkdv.features()).unwrap(), ..planned }
            };
            let (plain, early) = (with(false), with(true));
            assert!(plain.dkdv.schedule().persistent_tiles && !plain.dkdv.schedule().early_next_tile && early.dkdv.schedule().early_next_tile, "{}", plain.names());
            let run = |specs: &flashgen::BackwardSpecs| {
                let zeros = |t: &Tensor| Tensor { data: f.gpu.stream.alloc_zeros::<u16>(t.data.len()).unwrap(), dtype, layout: t.layout };
                let mut g = Gradients { dq: zeros(&tq), dk: zeros(&tk), dv: zeros(&tv) };
                f.backward_into(specs, &tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, None, &mut g).unwrap();
                g
            };
            let (a, b) = (run(&plain), run(&early));
            let bits = |t: &Tensor| f.gpu.stream.clone_dtoh(&t.data).unwrap();
            let what = format!("{} against {} ({} d{d})", early.dkdv.name(), plain.dkdv.name(), dtype.name());
            assert!(bits(&a.dk) == bits(&b.dk) && bits(&a.dv) == bits(&b.dv), "{what}: dK or dV differs");
            if path == BackwardPath::Fused {
                assert!(bits(&a.dq) == bits(&b.dq), "{what}: dQ differs");
                assert_eq!(planned.dkdv, early.dkdv, "the default is the early grid here");
                for (name, got, want) in [("dQ", &b.dq, &split.dq), ("dK", &b.dk, &split.dk), ("dV", &b.dv, &split.dv)] {
                    let e = relative_error(&got.to_f32(&f.gpu).unwrap(), &want.to_f32(&f.gpu).unwrap());
                    assert!(e <= 1e-2, "{what}: {name} relative error {e:.3e} against the three kernels");
                }
            } else {
                let e = relative_error(&b.dq.to_f32(&f.gpu).unwrap(), &a.dq.to_f32(&f.gpu).unwrap());
                assert!(e <= 1e-3, "{what}: dQ relative error {e:.3e}");
            }
        }
    }
}

/// The fused backward's launch refuses what would make it read or write out of bounds, or wait forever:
/// scratch shorter than `FusedScratch::lengths`, zero chains, chains for the atomic kind, no scratch, or
/// a dQ kernel beside it. Each is an error that names the rule, and nothing is launched.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn bad_fused_backward_arguments_are_errors_not_crashes() {
    use flashgen_runtime::{BackwardArgs, BackwardKernels, FusedScratch};
    let f = flash();
    let (z, h, n, d) = (1, 2, 100, 64);
    let l = Layout::contiguous(z, h, n, d);
    let x = vec![0.25f32; z * h * n * d];
    let t = || Tensor::from_f32(&f.gpu, &x, DType::Bf16, l).unwrap();
    let (q, o) = (t(), t());
    let (mut dq, mut dk, mut dv) = (t(), t(), t());
    let m = f.gpu.stream.alloc_zeros::<f32>(z * h * n).unwrap();
    let mut delta = f.gpu.stream.alloc_zeros::<f32>(z * h * n).unwrap();
    let fused = flashgen_tests::family(flashgen::KernelKind::BwdFused, f.gpu.arch, DType::Bf16, d as u32, false);
    let atomic = flashgen_tests::family(flashgen::KernelKind::BwdFusedAtomic, f.gpu.arch, DType::Bf16, d as u32, false);
    let split = flashgen_tests::family(flashgen::KernelKind::BwdDkdvWgmma, f.gpu.arch, DType::Bf16, d as u32, false);
    let (pre, fk, ak, dq_k) = (f.kernel(&fused.preprocess).unwrap(), f.kernel(&fused.dkdv).unwrap(), f.kernel(&atomic.dkdv).unwrap(), f.kernel(&split.dq.unwrap()).unwrap());
    let geometry = flashgen_runtime::kernel::KernelGeometry::square(z, h, n);
    let (partial_len, locks_len) = FusedScratch::lengths(&fused.dkdv, &geometry, 1);
    let mut partial = f.gpu.stream.alloc_zeros::<f32>(partial_len).unwrap();
    let mut short = f.gpu.stream.alloc_zeros::<f32>(partial_len - 1).unwrap();
    let mut locks = f.gpu.stream.alloc_zeros::<u32>(locks_len).unwrap();
    let mut launch = |dkdv: &flashgen_runtime::LoadedKernel, with_dq: bool, scratch: Option<(&mut flashgen_runtime::cudarc::driver::CudaSlice<f32>, u32)>, locks: &mut flashgen_runtime::cudarc::driver::CudaSlice<u32>| {
        use flashgen_runtime::{BufferView, BufferViewMut};
        let kernels = BackwardKernels { preprocess: &pre, dkdv, dq: with_dq.then_some(&*dq_k) };
        let fused = scratch.map(|(dq_partial, chains)| FusedScratch { dq_partial: BufferViewMut::of(dq_partial), locks: BufferViewMut::of(locks), chains });
        let args = BackwardArgs {
            geometry,
            q: q.view("Q").unwrap(),
            k: q.view("K").unwrap(),
            v: q.view("V").unwrap(),
            o: o.view("O").unwrap(),
            d_o: o.view("dO").unwrap(),
            m: BufferView::of(&m),
            delta: BufferViewMut::of(&mut delta),
            dq: dq.view_mut("dQ").unwrap(),
            dk: dk.view_mut("dK").unwrap(),
            dv: dv.view_mut("dV").unwrap(),
            sm_scale: 0.125,
            fused,
            softcap: 1.0,
            modifier_tensors: [0; 4],
        };
        kernels.launch(&f.gpu, f.own_stream(), args).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let e = launch(&fk, false, Some((&mut short, 1)), &mut locks);
    assert!(e.contains("FusedScratch") && e.contains("FusedScratch::lengths"), "{e}");
    let e = launch(&fk, false, Some((&mut partial, 2)), &mut locks);
    assert!(e.contains("FusedScratch"), "two chains need twice the buffer: {e}");
    let e = launch(&fk, false, Some((&mut partial, 0)), &mut locks);
    assert!(e.contains("0 chains"), "{e}");
    let e = launch(&ak, false, Some((&mut partial, 2)), &mut locks);
    assert!(e.contains("2 chains"), "{e}");
    let e = launch(&fk, false, None, &mut locks);
    assert!(e.contains("needs FusedScratch"), "{e}");
    let e = launch(&fk, true, Some((&mut partial, 1)), &mut locks);
    assert!(e.contains("computes dQ itself"), "{e}");
    // and the right arguments run
    assert_eq!(launch(&fk, false, Some((&mut partial, 1)), &mut locks), "");
    f.gpu.stream.synchronize().unwrap();
}

/// Views into one packed QKV buffer ([B, N, 3, H, D], as a fused projection writes it), outputs into the
/// caller's memory, on a stream of the caller's: the same numbers as the owned API on the Flash's stream,
/// bit for bit, forward (O and the natural-log LSE) and backward.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn views_of_a_packed_qkv_on_a_callers_stream_match_the_owned_api() {
    use flashgen_runtime::{BackwardCall, BufferView, BufferViewMut, ForwardCall, StatsIn, StatsOut, Stream, TensorView, TensorViewMut};
    let f = flash();
    let (z, h, n, d) = (2usize, 4usize, 300usize, 64usize);
    let mut rng = SplitMix(21);
    for causal in [false, true] {
        let round = |x: f32| flashgen_runtime::tensor::from_bits(DType::Bf16, flashgen_runtime::tensor::to_bits(DType::Bf16, x));
        let packed: Vec<f32> = (0..z * n * 3 * h * d).map(|_| round(rng.normal())).collect();
        let bits: Vec<u16> = packed.iter().map(|&x| flashgen_runtime::tensor::to_bits(DType::Bf16, x)).collect();
        let qkv = f.gpu.stream.clone_htod(&bits).unwrap();
        // Q, K, V of [B, N, 3, H, D]: strides (N·3·H·D, D, 3·H·D, 1), K and V H·D and 2·H·D elements in
        let layout = Layout { shape: [z, h, n, d], strides: [n * 3 * h * d, d, 3 * h * d, 1] };
        let part = |i: usize| TensorView::of_slice(["Q", "K", "V"][i], &qkv, i * h * d, DType::Bf16, layout).unwrap();
        // the same values as owned contiguous tensors, through the owned API on the Flash's stream
        let own = |i: usize| -> Tensor {
            let v: Vec<f32> = (0..z * h * n * d).map(|e| { let (b, hh, r, c) = (e / (h * n * d), e / (n * d) % h, e / d % n, e % d); packed[layout.offset(b, hh, r, c) + i * h * d] }).collect();
            Tensor::from_f32(&f.gpu, &v, DType::Bf16, Layout::contiguous(z, h, n, d)).unwrap()
        };
        let (oq, ok, ov) = (own(0), own(1), own(2));
        let want = f.attention_forward(&oq, &ok, &ov, causal, None).unwrap();
        // a caller's stream, and the caller's outputs: O in BSHD, LSE in natural log
        let theirs = f.gpu.ctx.new_stream().unwrap();
        let stream = unsafe { Stream::from_raw(theirs.cu_stream()) };
        let mut o = f.gpu.stream.alloc_zeros::<u16>(z * h * n * d).unwrap();
        let mut lse = f.gpu.stream.alloc_zeros::<f32>(z * h * n).unwrap();
        f.gpu.stream.synchronize().unwrap();
        let o_layout = Layout::bshd(z, h, n, d);
        let o_view = TensorViewMut::of_slice("O", &mut o, 0, DType::Bf16, o_layout).unwrap();
        let call = ForwardCall { causal, ..ForwardCall::new(part(0), part(1), part(2), o_view, StatsOut::Lse(BufferViewMut::of(&mut lse))) };
        f.forward(call, stream).unwrap();
        theirs.synchronize().unwrap();
        let got_o = flashgen_runtime::tensor::decode(&f.gpu.stream.clone_dtoh(&o).unwrap(), DType::Bf16, o_layout);
        assert_eq!(got_o, want.o.to_f32(&f.gpu).unwrap(), "O through views on a caller's stream (causal {causal})");
        let (got_lse, want_lse): (Vec<f32>, Vec<f32>) = (f.gpu.stream.clone_dtoh(&lse).unwrap(), f.gpu.stream.clone_dtoh(&want.lse).unwrap());
        assert_eq!(got_lse, want_lse);
        // the backward, from the natural-log LSE, into the caller's gradients, on the caller's stream
        let d_o = own(0);
        let g = f.attention_backward(&oq, &ok, &ov, &want.o, RowStats::Lse(&want.lse), &d_o, causal, None).unwrap();
        let mut grads: Vec<_> = (0..3).map(|_| f.gpu.stream.alloc_zeros::<u16>(z * h * n * d).unwrap()).collect();
        f.gpu.stream.synchronize().unwrap();
        let [gq, gk, gv] = &mut grads[..] else { unreachable!() };
        let grad = |name, g| TensorViewMut::of_slice(name, g, 0, DType::Bf16, Layout::contiguous(z, h, n, d)).unwrap();
        let o_view = TensorView::of_slice("O", &o, 0, DType::Bf16, o_layout).unwrap();
        let views = (grad("dQ", gq), grad("dK", gk), grad("dV", gv));
        let call = BackwardCall { causal, ..BackwardCall::new(part(0), part(1), part(2), o_view, d_o.view("dO").unwrap(), StatsIn::Lse(BufferView::of(&lse)), views) };
        f.backward(call, stream).unwrap();
        theirs.synchronize().unwrap();
        for (got, want) in grads.iter().zip([&g.dq, &g.dk, &g.dv]) {
            assert_eq!(flashgen_runtime::tensor::decode(&f.gpu.stream.clone_dtoh(got).unwrap(), DType::Bf16, Layout::contiguous(z, h, n, d)), want.to_f32(&f.gpu).unwrap());
        }
    }
    // a view one element past a 16-byte boundary is refused before anything runs
    let qkv = f.gpu.stream.alloc_zeros::<u16>(1 << 16).unwrap();
    let e = TensorView::of_slice("Q", &qkv, 1, DType::Bf16, Layout::contiguous(1, 1, 64, 64)).unwrap_err();
    assert!(e.to_string().contains("not 16-byte aligned"), "{e}");
}

/// Views on a thread with no CUDA context current (PyTorch runs the backward on its autograd engine's device
/// thread) still run the TMA kernels, the same bits as the owned API: the driver encodes TMA descriptors in
/// the thread's current context, which the runtime binds first. Unbound, the descriptors failed
/// (CUDA_ERROR_INVALID_CONTEXT) and every D128 backward through Python ran the three-kernel pass at 0.64-0.72×
/// the fused kernel's speed (bench/results/2026-12-03-python-v5).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn views_on_a_thread_without_a_context_run_the_tma_kernels() {
    use flashgen_runtime::{BackwardCall, BufferView, BufferViewMut, ForwardCall, StatsIn, StatsOut, TensorViewMut};
    let f = flash();
    if !f.gpu.arch.has_wgmma() {
        panic!("the TMA kernels need sm_90a; this GPU is {}", f.gpu.arch);
    }
    let s = Shape { z: 1, h: 2, n: 1024, d: 128 };
    let (_, [q, k, v, d_o]) = backward_inputs(&f, &mut SplitMix(34), DType::Bf16, s);
    assert!(f.backward_specs(&q, true).unwrap().dkdv.kind().fuses_dq(), "the fused backward at D128 N 1024 causal");
    // the owned API on this thread first: it loads the kernels (which binds the context here, not there)
    let want = f.attention_forward(&q, &k, &v, true, None).unwrap();
    let want_g = f.attention_backward(&q, &k, &v, &want.o, RowStats::M(&want.m), &d_o, true, None).unwrap();
    let len = s.len();
    let mut out: Vec<_> = (0..4).map(|_| f.gpu.stream.alloc_zeros::<u16>(len).unwrap()).collect();
    let mut m = f.gpu.stream.alloc_zeros::<f32>(s.z * s.h * s.n).unwrap();
    f.gpu.stream.synchronize().unwrap();
    // (each output in the layout the owned API gave it, so that the bits compare)
    let o_layout = want.o.layout;
    let [dq_layout, dk_layout, dv_layout] = [want_g.dq.layout, want_g.dk.layout, want_g.dv.layout];
    // a stream of the caller's, made here (making one binds the context on the thread that makes it)
    let theirs = f.gpu.ctx.new_stream().unwrap();
    let stream = unsafe { flashgen_runtime::Stream::from_raw(theirs.cu_stream()) };
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let [o, dq, dk, dv] = &mut out[..] else { unreachable!() };
                let (qv, kv, vv) = (q.view("Q").unwrap(), k.view("K").unwrap(), v.view("V").unwrap());
                let o_view = TensorViewMut::of_slice("O", o, 0, DType::Bf16, o_layout).unwrap();
                let fwd = ForwardCall { causal: true, ..ForwardCall::new(qv, kv, vv, o_view, StatsOut::M(BufferViewMut::of(&mut m))) };
                f.forward(fwd, stream).unwrap();
                let view = |name, t, layout| TensorViewMut::of_slice(name, t, 0, DType::Bf16, layout).unwrap();
                let grads = (view("dQ", dq, dq_layout), view("dK", dk, dk_layout), view("dV", dv, dv_layout));
                let o_view = flashgen_runtime::TensorView::of_slice("O", o, 0, DType::Bf16, o_layout).unwrap();
                let (qv, kv, vv) = (q.view("Q").unwrap(), k.view("K").unwrap(), v.view("V").unwrap());
                let bwd = BackwardCall { causal: true, ..BackwardCall::new(qv, kv, vv, o_view, d_o.view("dO").unwrap(), StatsIn::M(BufferView::of(&m)), grads) };
                f.backward(bwd, stream).unwrap();
            })
            .join()
            .unwrap()
    });
    theirs.synchronize().unwrap();
    assert!(f.cache.warnings().is_empty(), "a fallback ran: {:?}", f.cache.warnings());
    for (name, got, want) in [("O", &out[0], &want.o), ("dQ", &out[1], &want_g.dq), ("dK", &out[2], &want_g.dk), ("dV", &out[3], &want_g.dv)] {
        assert_eq!(f.gpu.stream.clone_dtoh(got).unwrap(), f.gpu.stream.clone_dtoh(&want.data).unwrap(), "{name} on the other thread");
    }
}

/// A score_mod (ALiBi) and softcap run on the fused backward where the plan puts them (HEAD_DIM 96 and 128
/// from 1024 tokens: ragged lengths, GQA, causal or not): its gradients repeat bit for bit, and agree with the
/// separate wgmma pair's (FLASHGEN_BACKWARD=split's kernels, which the check suite compares with f64), every
/// value finite (the zero-filled rows and keys past a ragged end are masked).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn score_mods_and_softcap_on_the_fused_backward_repeat_and_agree_with_the_pair() {
    use flashgen_runtime::{BackwardCall, BufferView, BufferViewMut, CallModifiers, ForwardCall, ModTensor, StatsIn, StatsOut};
    let mut f = flash();
    if !f.gpu.arch.has_wgmma() {
        panic!("the fused backward needs sm_90a; this GPU is {}", f.gpu.arch);
    }
    let mut rng = SplitMix(35);
    let alibi = flashgen::mods::builtins::alibi("slope").unwrap();
    // (H, H_kv, N, D, causal, softcap, ALiBi)
    let cases = [(4, 4, 1500, 128, false, None, true), (4, 4, 1500, 128, true, None, true), (8, 2, 1100, 96, true, None, true), (4, 4, 1200, 128, true, Some(2.0f32), false), (4, 4, 1300, 128, false, Some(2.0), true)];
    for (h, hkv, n, d, causal, softcap, with_alibi) in cases {
        let what = format!("H{h}/{hkv} N{n} D{d} causal={causal} softcap={softcap:?} alibi={with_alibi}");
        let z = 2;
        let (ql, kl) = (Layout::contiguous(z, h, n, d), Layout::contiguous(z, hkv, n, d));
        let random = |rng: &mut SplitMix, l: Layout| -> Vec<f32> { (0..l.extent()).map(|_| rng.normal()).collect() };
        let (q, k, v, d_o) = (random(&mut rng, ql), random(&mut rng, kl), random(&mut rng, kl), random(&mut rng, ql));
        let up = |gpu: &Gpu, x: &[f32], l: Layout| Tensor::from_f32(gpu, x, DType::Bf16, l).unwrap();
        let (tq, tk, tv, tdo) = (up(&f.gpu, &q, ql), up(&f.gpu, &k, kl), up(&f.gpu, &v, kl), up(&f.gpu, &d_o, ql));
        let slopes: Vec<f32> = (0..h).map(|i| 0.5f32.powi(i as i32 + 1)).collect();
        let slopes = f.gpu.stream.clone_htod(&slopes).unwrap();
        let modifiers = || with_alibi.then(|| CallModifiers { score: Some(alibi.clone()), mask: None, tensors: vec![("slope", ModTensor::F32(BufferView::of(&slopes)))] });
        let mut o = up(&f.gpu, &vec![0.0; ql.extent()], ql);
        let mut m = f.gpu.stream.alloc_zeros::<f32>(z * h * n).unwrap();
        let call = ForwardCall { causal, softcap, modifiers: modifiers(), ..ForwardCall::new(tq.view("Q").unwrap(), tk.view("K").unwrap(), tv.view("V").unwrap(), o.view_mut("O").unwrap(), StatsOut::M(BufferViewMut::of(&mut m))) };
        f.forward(call, f.own_stream()).unwrap();
        let grads = |f: &Flash, fused: bool| -> [Vec<u16>; 3] {
            let [mut dq, mut dk, mut dv] = [ql, kl, kl].map(|l| up(&f.gpu, &vec![f32::NAN; l.extent()], l));
            let call = BackwardCall {
                causal,
                softcap,
                modifiers: modifiers(),
                ..BackwardCall::new(tq.view("Q").unwrap(), tk.view("K").unwrap(), tv.view("V").unwrap(), o.view("O").unwrap(), tdo.view("dO").unwrap(), StatsIn::M(BufferView::of(&m)), (dq.view_mut("dQ").unwrap(), dk.view_mut("dK").unwrap(), dv.view_mut("dV").unwrap()))
            };
            let kernels = f.backward_plan(&call).unwrap().backward;
            assert_eq!(kernels.dkdv.kind().fuses_dq(), fused, "{what}: {}", kernels.names());
            f.backward(call, f.own_stream()).unwrap();
            [dq, dk, dv].map(|t| f.gpu.stream.clone_dtoh(&t.data).unwrap())
        };
        let fused = grads(&f, true);
        assert!(fused == grads(&f, true), "{what}: the fused backward's gradients differ between two runs");
        f.set_backward_path(BackwardPath::Split);
        let pair = grads(&f, false);
        f.set_backward_path(BackwardPath::Default);
        let to_f32 = |bits: &[u16]| -> Vec<f32> { bits.iter().map(|&b| f32::from_bits((b as u32) << 16)).collect() };
        for (name, a, b) in [("dQ", &fused[0], &pair[0]), ("dK", &fused[1], &pair[1]), ("dV", &fused[2], &pair[2])] {
            let (a, b) = (to_f32(a), to_f32(b));
            assert!(a.iter().all(|x| x.is_finite()), "{what}: {name} has a value that is not finite");
            let e = relative_error(&a, &b);
            assert!(e <= 1e-2, "{what}: {name} fused against the pair: relative error {e:.3e}");
        }
    }
}

/// The fused backward on a length that is not a whole number of key blocks, with every score of a row far below
/// zero (q ≈ 4, k ≈ −4 in every element: logits below −128 at HEAD_DIM 64 and 128): the program's zero-filled keys past the end have
/// P = exp2(−M), infinite there unless masked, and dQ = dS·K would add inf·0. dQ, dK, dV stay finite; dK and dV
/// match f64. dQ is checked against the pair (Split) instead: K's common −4 cancels in dQ = Σ dS·K (each row's
/// dS sums to 0), so the bf16 rounding of O (through Δ) and of dS, every kernel's, is amplified ~40× against
/// f64 (0.116 relative at HEAD_DIM 128 on the H200, bench/results/2026-12-05-checks); the pair rounds the same.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn far_negative_scores_on_ragged_lengths_stay_finite_in_the_fused_backward() {
    let mut f = flash();
    if !f.gpu.arch.has_wgmma() {
        panic!("bwd_fused needs sm_90a; this GPU is {}", f.gpu.arch);
    }
    let mut rng = SplitMix(44);
    for (d, causal, n) in [(128, false, 1000), (64, false, 1100), (128, true, 1300)] {
        let s = Shape { z: 1, h: 2, n, d };
        let ([_, _, v, d_o], [_, _, tv, tdo]) = backward_inputs(&f, &mut rng, DType::Bf16, s);
        let round = |x: f32| flashgen_runtime::tensor::from_bits(DType::Bf16, flashgen_runtime::tensor::to_bits(DType::Bf16, x));
        let q: Vec<f32> = (0..s.len()).map(|_| round(4.0 + 0.1 * rng.normal())).collect();
        let k: Vec<f32> = (0..s.len()).map(|_| round(-4.0 + 0.1 * rng.normal())).collect();
        let layout = Layout::bshd(s.z, s.h, s.n, s.d);
        let (tq, tk) = (Tensor::from_f32(&f.gpu, &q, DType::Bf16, layout).unwrap(), Tensor::from_f32(&f.gpu, &k, DType::Bf16, layout).unwrap());
        let out = f.attention_forward(&tq, &tk, &tv, causal, None).unwrap();
        let r = backward_f64(&q, &k, &v, &d_o, s, causal, 1.0 / (d as f64).sqrt());
        let mut grads = |path: BackwardPath| {
            f.set_backward_path(path);
            let fused = f.backward_specs(&tq, causal).unwrap().dkdv.kind().fuses_dq();
            assert_eq!(fused, path == BackwardPath::Fused, "{path:?}: {}", f.backward_specs(&tq, causal).unwrap().names());
            let g = f.attention_backward(&tq, &tk, &tv, &out.o, RowStats::M(&out.m), &tdo, causal, None).unwrap();
            [&g.dq, &g.dk, &g.dv].map(|t| t.to_f32(&f.gpu).unwrap())
        };
        let [dq, dk, dv] = grads(BackwardPath::Fused);
        let [pair_dq, ..] = grads(BackwardPath::Split);
        f.set_backward_path(BackwardPath::Default);
        let pair_dq: Vec<f64> = pair_dq.iter().map(|&x| x as f64).collect();
        for (name, got, want, tol) in [("dQ (against the pair)", &dq, &pair_dq, 1e-2), ("dK", &dk, &r.dk, 2e-2), ("dV", &dv, &r.dv, 2e-2)] {
            assert!(got.iter().all(|x| x.is_finite()), "{name} has a value that is not finite (d{d} causal={causal} N={n})");
            let e = relative_error(got, want);
            assert!(e <= tol, "{name} relative error {e:.3e} (d{d} causal={causal} N={n})");
        }
    }
}
