//! One test per validation rule: the rule rejects what it should, names itself, and says how to fix it.

use flashgen::spec::GridGeometry;
use flashgen::{Arch, DType, KernelKind, KernelSpec, ScheduleOverrides, SpecParams};

fn base() -> SpecParams {
    SpecParams { kind: KernelKind::Fwd, dtype: DType::Bf16, head_dim: 128, block_m: 128, block_n: 64, stage: 3, num_warps: 8, num_stages: 2, arch: Arch::Sm90a }
}

fn rejects(p: SpecParams, phrases: &[&str]) {
    let err = KernelSpec::new(p).expect_err("spec should be rejected").to_string();
    for ph in phrases {
        assert!(err.contains(ph), "error `{err}` should contain `{ph}`");
    }
}

#[test]
fn base_spec_is_valid() {
    KernelSpec::new(base()).unwrap();
}

#[test]
fn head_dim_must_be_supported() {
    for d in [0, 16, 80, 100, 512] {
        rejects(SpecParams { head_dim: d, ..base() }, &[&format!("HEAD_DIM={d}"), "[32, 64, 96, 128, 192, 256]"]);
    }
}

#[test]
fn stage_is_1_or_3() {
    for s in [0, 2, 4] {
        rejects(SpecParams { stage: s, ..base() }, &[&format!("STAGE={s}"), "1 (non-causal) or 3 (causal)"]);
    }
}

#[test]
fn num_warps_is_a_supported_power_of_two() {
    for w in [0, 1, 2, 3, 16] {
        rejects(SpecParams { num_warps: w, ..base() }, &[&format!("num_warps={w}")]);
    }
}

#[test]
fn block_m_is_whole_m16_tiles_per_warp() {
    rejects(SpecParams { block_m: 96, num_warps: 4, ..base() }, &["BLOCK_M=96 must be a multiple of 16 × num_warps=4 = 64"]);
    rejects(SpecParams { block_m: 0, ..base() }, &["BLOCK_M=0"]);
}

#[test]
fn rows_per_warp_fit_in_registers() {
    rejects(SpecParams { head_dim: 64, block_m: 256, num_warps: 4, ..base() }, &["64 query rows", "at most 32"]);
}

#[test]
fn block_n_is_k16_steps() {
    for bn in [0, 8, 24, 96, 256] {
        rejects(SpecParams { block_n: bn, ..base() }, &[&format!("BLOCK_N={bn} is not supported"), "[16, 32, 64, 128]"]);
    }
}

#[test]
fn kv_tile_divides_into_whole_chunks_per_thread() {
    rejects(SpecParams { head_dim: 64, block_n: 16, num_warps: 8, ..base() }, &["BLOCK_N=16 × HEAD_DIM=64 must be a multiple of 256 × num_warps=8"]);
}

#[test]
fn num_stages_range() {
    for ns in [0, 1, 7] {
        rejects(SpecParams { num_stages: ns, ..base() }, &[&format!("num_stages={ns} must be in 2..=6")]);
    }
    // the warp-specialized forward's TMA ring goes to 8 slots (where shared memory holds them)
    let ws = SpecParams { kind: KernelKind::FwdWsPersistent, head_dim: 64, block_m: 256, block_n: 64, stage: 3, num_warps: 20, ..base() };
    for kind in [KernelKind::FwdWs, KernelKind::FwdWsPersistent] {
        for ns in [7, 8] {
            KernelSpec::new(SpecParams { kind, num_stages: ns, ..ws }).unwrap();
        }
        rejects(SpecParams { kind, num_stages: 9, ..ws }, &["num_stages=9 must be in 2..=8"]);
    }
    // 8 slots of 128-row K/V blocks do not fit: the shared-memory rule, not the range, says so
    rejects(SpecParams { block_m: 192, block_n: 128, num_warps: 16, num_stages: 8, ..ws }, &["232448 B limit of sm_90a"]);
}

#[test]
fn shared_memory_fits_the_target() {
    // 128×128 Q + 6 × (64×128 K + V) = 229376 B: fits sm_90 (232448), not sm_80 (166912)
    let p = SpecParams { num_stages: 6, ..base() };
    KernelSpec::new(p).unwrap();
    rejects(SpecParams { arch: Arch::Sm80, ..p }, &["shared memory 229376 B", "166912 B limit of sm_80"]);
    // Triton reports the same number for this config (OutOfResources, 294912 B)
    rejects(SpecParams { block_n: 128, num_stages: 4, ..base() }, &["shared memory 294912 B", "232448 B limit of sm_90a"]);
    rejects(SpecParams { block_n: 64, num_stages: 3, arch: Arch::Sm86, ..base() }, &["101376 B limit of sm_86"]);
}

#[test]
fn registers_fit() {
    // 32 rows per warp at HEAD_DIM 128 (Q re-read from shared memory): accumulator 128 + scores 64 spill
    rejects(SpecParams { num_warps: 4, ..base() }, &["an estimated 280 registers per thread", "exceed 255"]);
    // 16 rows, but 128-row K/V tiles at HEAD_DIM 128: ptxas spills 12-72 bytes
    rejects(SpecParams { block_n: 128, ..base() }, &["an estimated 264 registers"]);
}

#[test]
fn block_n_larger_than_block_m_is_supported() {
    // The seed's Triton kernel silently breaks here (causal, BLOCK_N > BLOCK_M); ours supports it.
    KernelSpec::new(SpecParams { head_dim: 64, block_m: 64, block_n: 128, num_warps: 4, num_stages: 3, ..base() }).unwrap();
}

#[test]
fn parsers_name_the_choices() {
    assert!(Arch::parse("sm_75").unwrap_err().to_string().contains("sm_80, sm_86, sm_89, sm_90, sm_90a"));
    assert!(DType::parse("fp8").unwrap_err().to_string().contains("bf16 or fp16"));
    assert!(KernelKind::parse("bwd").unwrap_err().to_string().contains("use one of fwd, fwd_wgmma, fwd_ws, fwd_ws_persistent, bwd_pre, bwd_dkdv, bwd_dq, bwd_dkdv_wgmma, bwd_dq_wgmma"));
    for kind in KernelKind::ALL {
        assert_eq!(KernelKind::parse(kind.name()).unwrap(), kind);
    }
    assert_eq!(Arch::parse("SM90A").unwrap(), Arch::Sm90a);
    assert_eq!(DType::parse("float16").unwrap(), DType::F16);
}

#[test]
fn default_set_is_complete_and_names_are_unique() {
    let set = flashgen::plan::default_set();
    // what the plans run (flashgen::plan::default_set): per arch × dtype × head dim: forward and dK/dV and
    // dQ for both stages, one preprocess; on sm_90a a second forward per dtype, head dim and stage: fwd_ws's
    // fwd_wgmma fallback (HEAD_DIM 128), which at HEAD_DIM 64 is also the non-causal short-sequence
    // forward's; the persistent short-sequence forward at HEAD_DIM 64 (on 256×64 tiles: its fallback is
    // fwd_wgmma's default); the persistent medium-length forward (4096 tokens) at HEAD_DIM 64, whose
    // fallback is fwd_wgmma's default; the persistent short-sequence forward at HEAD_DIM 128 (fwd_ws's tiles:
    // its fallback is fwd_ws's); and on sm_90a the fused backwards: non-causal bwd_fused and
    // bwd_fused_atomic, causal bwd_fused_up and bwd_fused_atomic (no plan runs a causal bwd_fused), and
    // non-causal bwd_fused on persistent tiles to 4096 tokens (per dtype and head dim)
    let count = |dims: &[u32]| set.iter().filter(|s| dims.contains(&s.head_dim())).count();
    let d64_d128 = 2 * 2 * 2 * 7 + 2 * 2 * 2 + 2 * 2 + 2 * 2 + 2 * 2 * 2 * 2 + 2 * 2 + 2 * 2;
    assert_eq!(count(&[64, 128]), d64_d128);
    // HEAD_DIM 32 and 96 run 64's and 128's kernels, padded (as many, but the persistent tiles: measured at 64
    // and 128 only); 192 and 256 per dtype: sm_80's 7, and on sm_90a fwd_ws and its fwd_wgmma fallback, the
    // wgmma pair (both stages) and the preprocess (9)
    assert_eq!(count(&[32, 96]), d64_d128 - 2 * 2);
    assert_eq!(count(&[192, 256]), 2 * 2 * (7 + 9));
    assert_eq!(set.len(), count(&flashgen::spec::HEAD_DIMS));
    // (the decode kinds are flashgen::plan::decode_default_set's; tests/decode.rs checks that one)
    for kind in KernelKind::ALL.into_iter().filter(|k| !k.decodes()) {
        // sm_80 gets the mma.sync kinds, sm_90a the wgmma ones; both get the preprocess
        let arch = if kind.uses_wgmma() { Arch::Sm90a } else { Arch::Sm80 };
        assert!(set.iter().any(|s| s.kind() == kind && s.arch() == arch), "default set lacks {} for {arch}", kind.name());
    }
    assert!(set.iter().all(|s| s.kind().uses_wgmma() == (s.arch() == Arch::Sm90a && s.kind() != KernelKind::BwdPre)));
    for ws in set.iter().filter(|s| s.kind().warp_specialized_forward()) {
        assert!(set.contains(&flashgen_tests::fallback(&ws)), "{}: fallback missing", ws.name());
    }
    let mut names: Vec<String> = set.iter().map(|s| s.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), set.len());
    for arch in Arch::ALL {
        for d in [64, 128] {
            for causal in [false, true] {
                let s = flashgen_tests::plan_at(arch, DType::F16, d, causal, usize::MAX).forward;
                assert!(s.shared_memory_bytes() <= arch.shared_memory_limit());
                assert_eq!(s.causal(), causal);
            }
        }
    }
}

#[test]
fn names_and_grid_encode_the_parameters() {
    let s = KernelSpec::new(base()).unwrap();
    assert_eq!(s.name(), "fa2_fwd_bf16_d128_st3_bm128_bn64_w8_ns2_sm90a");
    assert_eq!(s.grid(&GridGeometry::square(2, 16, 1000), 132), (8, 32, 1));
    assert_eq!(s.threads(), 256);
    // a persistent kernel: one program per tile, at most `programs` (the SM count), all on grid x
    let p = SpecParams { kind: KernelKind::FwdWsPersistent, head_dim: 64, block_m: 256, block_n: 64, stage: 1, num_warps: 20, num_stages: 4, ..base() };
    let persistent = KernelSpec::new(p).unwrap();
    assert_eq!(persistent.name(), "fa2_fwd_ws_persistent_bf16_d64_st1_bm256_bn64_w20_ns4_sm90a");
    assert_eq!(persistent.grid(&GridGeometry::square(2, 16, 1000), 132), (128, 1, 1));
    assert_eq!(persistent.grid(&GridGeometry::square(4, 16, 1000), 132), (132, 1, 1));
    assert_eq!(persistent.grid(&GridGeometry::square(1, 2, 300), 132), (4, 1, 1));
    assert_eq!(persistent.grid(&GridGeometry::square(1, 1, 0), 132), (1, 1, 1));
}

#[test]
fn ptx_version_is_the_lowest_each_target_needs() {
    assert_eq!(Arch::Sm80.ptx_version(), (7, 0));
    assert_eq!(Arch::Sm86.ptx_version(), (7, 1));
    assert_eq!(Arch::Sm89.ptx_version(), (7, 8));
    assert_eq!(Arch::Sm90.ptx_version(), (7, 8));
    assert_eq!(Arch::Sm90a.ptx_version(), (8, 0));
}

#[test]
fn dkdv_owns_block_n_rows_and_streams_block_m() {
    // dK/dV: a program owns BLOCK_N rows of K/V; the grid runs over them, the warp rules apply to them
    let dkdv = SpecParams { kind: KernelKind::BwdDkdv, head_dim: 64, block_m: 32, block_n: 128, num_warps: 8, num_stages: 3, ..base() };
    let s = KernelSpec::new(dkdv).unwrap();
    assert_eq!((s.resident_rows(), s.streamed_rows(), s.rows_per_warp()), (128, 32, 16));
    assert_eq!(s.grid(&GridGeometry::square(2, 16, 1000), 132), (8, 32, 1));
    assert_eq!(s.name(), "fa2_bwd_dkdv_bf16_d64_st3_bm32_bn128_w8_ns3_sm90a");
    // K/V rows per program that do not split into whole m16 tiles per warp: named as BLOCK_N
    let e = KernelSpec::new(SpecParams { block_n: 96, ..dkdv }).unwrap_err().to_string();
    assert!(e.contains("BLOCK_N=96 must be a multiple of 16 × num_warps=8 = 128"), "{e}");
    // streamed Q rows that are not a k16-step height: named as BLOCK_M
    let e = KernelSpec::new(SpecParams { block_m: 48, ..dkdv }).unwrap_err().to_string();
    assert!(e.contains("BLOCK_M=48 is not supported"), "{e}");
    // the dQ kernel keeps the forward's roles
    let dq = KernelSpec::new(SpecParams { kind: KernelKind::BwdDq, block_m: 128, block_n: 64, ..dkdv }).unwrap();
    assert_eq!((dq.resident_rows(), dq.streamed_rows()), (128, 64));
    assert_eq!(dq.grid(&GridGeometry::square(2, 16, 1000), 132), (8, 32, 1));
    // grouped-query heads and unequal lengths: dK/dV's programs run over key blocks of K/V heads, dQ's over
    // query blocks of query heads
    let gqa = GridGeometry { batch: 2, heads: 16, kv_heads: 4, seqlen_q: 1000, seqlen_k: 3000 };
    assert_eq!(s.grid(&gqa, 132), (24, 8, 1));
    assert_eq!(dq.grid(&gqa, 132), (8, 32, 1));
}

/// bwd_fused_up folds its grid (two key blocks a program) where the unfolded grid is short (under
/// FOLD_BELOW_WAVES waves) and a head's folded programs fit on the GPU at once, and not where either fails,
/// with the switch off, or with one key block; the switch is its kind's.
#[test]
fn fused_up_folds_its_grid_where_the_programs_fit() {
    let up = SpecParams { kind: KernelKind::BwdFusedUp, head_dim: 128, block_m: 64, block_n: 128, num_warps: 12, num_stages: 2, ..base() };
    let s = KernelSpec::new(up).unwrap();
    assert!(s.fold_key_blocks(), "derived on for bwd_fused_up");
    let gqa = |n| GridGeometry { batch: 1, heads: 64, kv_heads: 8, seqlen_q: n, seqlen_k: n };
    // 32 key blocks: 16 programs of two; 33: 17 (the middle one alone)
    assert_eq!(s.grid(&gqa(4096), 132), (16, 8, 1));
    assert_eq!(s.grid(&gqa(4097), 132), (17, 8, 1));
    // one K/V head: 264 key blocks fold into 132 programs, 265 do not fit on 132 SMs
    let mqa = |n| GridGeometry { kv_heads: 1, ..gqa(n) };
    assert_eq!(s.grid(&mqa(264 * 128), 132), (132, 1, 1));
    assert_eq!(s.grid(&mqa(264 * 128 + 1), 132), (265, 1, 1));
    // an unfolded grid of 12 waves or more stays unfolded: 8 K/V heads of 198 key blocks are 1584 = 12 × 132
    // programs, 197 blocks 1576
    assert_eq!(s.grid(&gqa(198 * 128), 132), (198, 8, 1));
    assert_eq!(s.grid(&gqa(197 * 128), 132), (99, 8, 1));
    assert_eq!(flashgen::spec::FOLD_BELOW_WAVES, 12);
    // one key block: nothing to pair
    assert_eq!(s.grid(&gqa(100), 132), (1, 8, 1));
    let off = KernelSpec::with_schedule(up, ScheduleOverrides::parse("fold_key_blocks=off").unwrap()).unwrap();
    assert!(off.name().ends_with("_fold0"), "{}", off.name());
    assert_eq!(off.grid(&gqa(4096), 132), (32, 8, 1));
    // a 3-slot ring at HEAD_DIM 128 does not fold (ptxas spills the folded kernel's registers there)
    let three = KernelSpec::new(SpecParams { num_stages: 3, ..up }).unwrap();
    assert!(!three.fold_key_blocks());
    let e = KernelSpec::with_schedule(SpecParams { num_stages: 3, ..up }, ScheduleOverrides::parse("fold_key_blocks=on").unwrap()).unwrap_err().to_string();
    assert!(e.contains("needs num_stages=2"), "{e}");
    // the ordered bwd_fused (down) and the atomic kind have no such order
    for kind in [KernelKind::BwdFused, KernelKind::BwdFusedAtomic] {
        let e = KernelSpec::with_schedule(SpecParams { kind, ..up }, ScheduleOverrides::parse("fold_key_blocks=on").unwrap()).unwrap_err().to_string();
        assert!(e.contains("fold_key_blocks=on is for bwd_fused_up"), "{e}");
    }
    // and the folded kernel adds dQ in one chain whatever the caller asks
    assert_eq!(flashgen::plan::dq_chains(&s, Some(3)), 1);
    assert_eq!(flashgen::plan::dq_chains(&off, Some(3)), 3);
    // packed sequences fold at 64 and 128, not at the padded 32 and 96 (the folded dQ writer spills there),
    // and asking for it there is refused by name
    let packed = flashgen::Features { varlen: true, ..flashgen::Features::NONE };
    for (head_dim, block_m, folds) in [(128, 64, true), (96, 64, false), (64, 128, true), (32, 128, false)] {
        let p = SpecParams { head_dim, block_m, ..up };
        let spec = KernelSpec::with_features(p, ScheduleOverrides::NONE, packed).unwrap();
        assert_eq!(spec.fold_key_blocks(), folds, "{}", spec.name());
        assert!(KernelSpec::new(p).unwrap().fold_key_blocks(), "fixed lengths fold at {head_dim}");
        if !folds {
            let e = KernelSpec::with_features(p, ScheduleOverrides::parse("fold_key_blocks=on").unwrap(), packed).unwrap_err().to_string();
            assert!(e.contains("packed sequences at HEAD_DIM 32 and 96"), "{e}");
        }
    }
}

#[test]
fn backward_shared_memory_counts_both_resident_tiles_and_the_stats() {
    let p = SpecParams { kind: KernelKind::BwdDkdv, head_dim: 128, block_m: 32, block_n: 128, num_warps: 8, num_stages: 3, ..base() };
    // K and V 128×128, 3 × (Q and dO 32×128 + M and Δ 32 floats)
    assert_eq!(KernelSpec::new(p).unwrap().shared_memory_bytes(), 2 * 128 * 256 + 3 * (2 * 32 * 256 + 8 * 32));
    let e = KernelSpec::new(SpecParams { arch: Arch::Sm86, ..p }).unwrap_err().to_string();
    assert!(e.contains("exceeds the 101376 B limit of sm_86") && e.contains("K and V 128×128"), "{e}");
}

#[test]
fn preprocess_takes_only_dtype_head_dim_and_arch() {
    let pre = KernelSpec::backward_preprocess(Arch::Sm80, DType::F16, 128);
    assert_eq!(KernelSpec::new(*pre.params()).unwrap(), pre);
    let e = KernelSpec::new(SpecParams { block_m: 128, ..*pre.params() }).unwrap_err().to_string();
    assert!(e.contains("bwd_pre takes only dtype, HEAD_DIM and arch") && e.contains("BLOCK_M=64"), "{e}");
    assert_eq!(pre.grid(&GridGeometry::square(1, 2, 65), 132), (2, 2, 1));
}

#[test]
fn backward_defaults_fit_every_target() {
    for arch in Arch::ALL {
        for dtype in [DType::Bf16, DType::F16] {
            for d in [64, 128] {
                for causal in [false, true] {
                    let b = flashgen_tests::plan_at(arch, dtype, d, causal, usize::MAX).backward;
                    assert_eq!((b.preprocess.kind(), b.dkdv.causal()), (KernelKind::BwdPre, causal));
                    // the Hopper kernels where the target runs them, mma.sync elsewhere (and on request)
                    assert_eq!(b.dkdv.kind().uses_wgmma(), arch.has_wgmma());
                    // on sm_90a (HEAD_DIM 64 and 128), dQ inside the dK/dV kernel, added in program order
                    // (deterministic; causal in the order of the visits); otherwise three kernels
                    let fused = arch.has_wgmma();
                    let ordered = if causal { KernelKind::BwdFusedUp } else { KernelKind::BwdFused };
                    assert_eq!(b.dkdv.kind() == ordered, fused, "{}", b.dkdv.name());
                    assert_eq!(b.dq.is_none(), fused);
                    // short sequences keep the three kernels (the fused one is measured from N = 1024:
                    // spec::defaults::BACKWARD_KINDS)
                    let min = 1024;
                    let short = flashgen_tests::plan_at(arch, dtype, d, causal, min - 1).backward;
                    assert!(short.dq.is_some() && !short.dkdv.kind().fuses_dq(), "{}", short.dkdv.name());
                    // from there the long-sequence kernels (non-causal on sm_90a: the same tile, its programs
                    // running tile after tile to 4096 tokens, `Schedule::persistent_tiles`, each loading its
                    // next tile early on a ring of three Q/dO stages)
                    let at_min = flashgen_tests::plan_at(arch, dtype, d, causal, min).backward;
                    let persistent = fused && !causal;
                    let s = at_min.dkdv.schedule();
                    assert_eq!((s.persistent_tiles, s.early_next_tile), (persistent, persistent), "{}", at_min.dkdv.name());
                    let stages = if persistent { 3 } else { b.dkdv.num_stages() };
                    assert_eq!((*at_min.dkdv.params(), at_min.preprocess, at_min.dq), (SpecParams { num_stages: stages, ..*b.dkdv.params() }, b.preprocess, b.dq));
                    let mut kernels = vec![b.dkdv];
                    if let Some(dq) = b.dq {
                        assert_eq!((dq.causal(), b.dkdv.kind().role(), dq.kind().role()), (causal, KernelKind::BwdDkdv, KernelKind::BwdDq));
                        kernels.push(dq);
                    }
                    let m = flashgen_tests::family(flashgen::KernelKind::BwdDkdv, arch, dtype, d, causal);
                    let mdq = m.dq.unwrap();
                    assert_eq!((m.dkdv.kind(), mdq.kind()), (KernelKind::BwdDkdv, KernelKind::BwdDq));
                    kernels.extend([m.dkdv, mdq]);
                    for s in kernels {
                        assert!(s.shared_memory_bytes() <= arch.shared_memory_limit(), "{}", s.name());
                    }
                }
            }
        }
    }
}

#[test]
fn wgmma_forward_is_sm90a_only_with_one_warpgroup_per_64_rows() {
    let p = SpecParams { kind: KernelKind::FwdWgmma, head_dim: 128, block_m: 128, block_n: 64, num_warps: 8, num_stages: 3, ..base() };
    let s = KernelSpec::new(p).unwrap();
    assert_eq!((s.rows_per_warp(), s.threads()), (16, 256));
    assert!(!s.q_in_registers(), "Q is read through a descriptor");
    // the tiles plus 1 KB, which the kernel uses to align them to 1024 B itself
    assert_eq!(s.shared_memory_bytes(), 128 * 256 + 3 * 2 * 64 * 256 + 1024);
    assert_eq!(s.name(), "fa2_fwd_wgmma_bf16_d128_st3_bm128_bn64_w8_ns3_sm90a");
    let e = KernelSpec::new(SpecParams { arch: Arch::Sm90, ..p }).unwrap_err().to_string();
    assert!(e.contains("fwd_wgmma needs sm_90a"), "{e}");
    let e = KernelSpec::new(SpecParams { block_m: 256, ..p }).unwrap_err().to_string();
    assert!(e.contains("BLOCK_M=256 must be 16 × num_warps=8 = 128"), "{e}");
    // what the default forward on sm_90a falls back to where TMA cannot describe a layout, and only there
    let d = flashgen_tests::fallback(&flashgen_tests::plan_at(Arch::Sm90a, DType::Bf16, 64, true, usize::MAX).forward);
    assert_eq!(d, flashgen::spec::defaults::spec(KernelKind::FwdWgmma, Arch::Sm90a, DType::Bf16, 64, true, 1).unwrap());
    assert_eq!(flashgen_tests::plan_at(Arch::Sm90, DType::Bf16, 64, false, usize::MAX).forward.kind(), KernelKind::Fwd);
    // 3 stages keep the next block's S in flight during the softmax; 2 (the default) run them in turn
    assert!(!d.overlaps_softmax());
    assert!(KernelSpec::new(SpecParams { num_stages: 3, ..*d.params() }).unwrap().overlaps_softmax());
}

#[test]
fn wgmma_backward_keeps_its_roles() {
    for kind in [KernelKind::FwdWgmma, KernelKind::BwdDkdvWgmma, KernelKind::BwdDqWgmma] {
        assert!(kind.uses_wgmma() && !kind.role().uses_wgmma());
        assert_eq!(KernelKind::parse(kind.name()).unwrap(), kind);
    }
    for d in [64, 128] {
        for causal in [false, true] {
            let b = flashgen_tests::family(flashgen::KernelKind::BwdDkdvWgmma, Arch::Sm90a, DType::Bf16, d, causal);
            assert_eq!((b.dkdv.kind(), b.dq.map(|s| s.kind())), (KernelKind::BwdDkdvWgmma, Some(KernelKind::BwdDqWgmma)));
            // dK/dV owns BLOCK_N key rows (one warpgroup per 64) and streams BLOCK_M, like its mma.sync role
            assert_eq!((b.dkdv.resident_rows(), b.dkdv.streamed_rows(), b.dkdv.rows_per_warp()), (64, if d == 64 { 64 } else { 32 }, 16));
            // wgmma slots are whole multiples of 1024 B (the stats after the tiles are padded)
            assert_eq!(b.dkdv.slot_bytes() % 1024, 0);
            assert!(b.dkdv.shared_memory_bytes() <= Arch::Sm90a.shared_memory_limit());
        }
    }
    let p = *flashgen_tests::family(flashgen::KernelKind::BwdDkdvWgmma, Arch::Sm90a, DType::Bf16, 128, true).dkdv.params();
    let e = KernelSpec::new(SpecParams { block_n: 128, ..p }).unwrap_err().to_string();
    assert!(e.contains("bwd_dkdv_wgmma: BLOCK_N=128 must be 16 × num_warps=4 = 64"), "{e}");
    // 8 warps on 64 keys: the column warpgroups, each all 64 rows and half of the columns, and P and dS
    // exchanged after the ring (f32 and packed, 64 keys × BLOCK_M queries)
    let paired = KernelSpec::new(SpecParams { num_warps: 8, ..p }).unwrap();
    assert_eq!((paired.column_warpgroups(), paired.rows_per_warp(), paired.output_columns(), paired.column_splits()), (2, 16, 64, 1));
    assert_eq!(paired.column_exchange_bytes(), 64 * p.block_m * 6);
    assert_eq!(paired.shared_memory_bytes(), KernelSpec::new(p).unwrap().shared_memory_bytes() + 64 * p.block_m * 6);
    // HEAD_DIM 256: 128 columns each, unsplit (two slices on 4 warps)
    let d256 = KernelSpec::new(SpecParams { head_dim: 256, num_warps: 8, block_m: 64, num_stages: 2, ..p }).unwrap();
    assert_eq!((d256.output_columns(), d256.column_splits()), (128, 1));
    // a padded tile (96 on 128 columns) would store the padding's columns: refused
    let e = KernelSpec::new(SpecParams { head_dim: 96, num_warps: 8, ..p }).unwrap_err().to_string();
    assert!(e.contains("HEAD_DIM=96 is padded to 128: use num_warps=4"), "{e}");
    // softcap (or a score_mod): the f32 is P times dS's factor, and P follows packed
    let capped = KernelSpec::with_features(SpecParams { num_warps: 8, ..p }, flashgen::ScheduleOverrides::NONE, flashgen::Features { softcap: true, ..flashgen::Features::NONE }).unwrap();
    assert_eq!(capped.column_exchange_bytes(), 64 * p.block_m * 8);
    // at HEAD_DIM 256 on 64-row query blocks that is the whole of the SM's shared memory
    let d256_capped = KernelSpec::with_features(*d256.params(), flashgen::ScheduleOverrides::NONE, flashgen::Features { softcap: true, ..flashgen::Features::NONE }).unwrap();
    assert_eq!(d256_capped.shared_memory_bytes(), Arch::Sm90a.shared_memory_limit());
    let e = KernelSpec::new(SpecParams { arch: Arch::Sm80, ..p }).unwrap_err().to_string();
    assert!(e.contains("use kernel bwd_dkdv on sm_80"), "{e}");
}

#[test]
fn warp_specialized_forward_has_a_producer_and_two_or_three_consumers() {
    let p = SpecParams { kind: KernelKind::FwdWs, head_dim: 128, block_m: 128, block_n: 128, num_warps: 12, num_stages: 2, ..base() };
    let s = KernelSpec::new(p).unwrap();
    assert_eq!((s.consumer_warpgroups(), s.rows_per_warp(), s.threads()), (2, 16, 384));
    assert_eq!(s.name(), "fa2_fwd_ws_bf16_d128_st3_bm128_bn128_w12_ns2_sm90a");
    // Q, two K/V slots (1024-byte multiples), the alignment KB and the mbarriers (Q, full and empty per slot)
    assert_eq!(s.shared_memory_bytes(), 128 * 256 + 2 * 2 * 128 * 256 + 1024 + 8 * 5);
    // the CTA's register pool covers what setmaxnreg hands out: producer 24, consumers 240 from 168 at launch
    let r = s.registers();
    assert_eq!((r.launch, r.producer, r.consumer), (168, 24, 240));
    assert!(r.launch * s.threads() >= 128 * r.producer + 128 * s.consumer_warpgroups() * r.consumer);
    let three = KernelSpec::new(SpecParams { block_m: 192, block_n: 64, num_warps: 16, ..p }).unwrap();
    let r3 = three.registers();
    assert!(r3.launch * three.threads() >= 128 * r3.producer + 128 * 3 * r3.consumer && r3.launch * three.threads() <= 65536);
    let e = |q: SpecParams| KernelSpec::new(q).unwrap_err().to_string();
    assert!(e(SpecParams { arch: Arch::Sm90, ..p }).contains("fwd_ws needs sm_90a"));
    assert!(e(SpecParams { num_warps: 8, block_m: 64, ..p }).contains("num_warps=8 is not supported: use one of [12, 16, 20]"));
    assert!(e(SpecParams { block_m: 192, ..p }).contains("BLOCK_M=192 must be 64 × the 2 consumer warpgroups of num_warps=12 = 128"));
    // 3 consumers get 160 registers each: HEAD_DIM 128 with BLOCK_N 128 does not fit
    assert!(e(SpecParams { block_m: 192, num_warps: 16, ..p }).contains("exceed the 160 that setmaxnreg gives each of 3 consumer warpgroups"));
    assert!(e(SpecParams { num_stages: 4, ..p }).contains("exceeds the 232448 B limit"));
    // ping-pong from 3 stages (block j-1's slot is held a step longer)
    assert!(!s.ping_pong() && KernelSpec::new(SpecParams { num_stages: 3, ..p }).unwrap().ping_pong());
    // without TMA: the same tiles on fwd_wgmma, one warpgroup fewer
    let f = flashgen_tests::fallback(&s);
    assert_eq!((f.kind(), f.block_m(), f.block_n(), f.num_warps(), f.num_stages()), (KernelKind::FwdWgmma, 128, 128, 8, 2));
    assert_eq!(flashgen_tests::fallback(&f), f);
    // 4 consumers: 96 registers at launch (640 threads), 24 / 112 after setmaxnreg, within 65536
    let four = KernelSpec::new(SpecParams { head_dim: 64, block_m: 256, block_n: 64, num_warps: 20, num_stages: 4, ..p }).unwrap();
    let r4 = four.registers();
    assert_eq!((four.consumer_warpgroups(), r4.launch, r4.producer, r4.consumer), (4, 96, 24, 112));
    assert!(r4.launch * four.threads() >= 128 * r4.producer + 128 * 4 * r4.consumer && r4.launch * four.threads() <= 65536);
    assert!(e(SpecParams { head_dim: 64, block_m: 256, block_n: 128, num_warps: 20, num_stages: 4, ..p }).contains("exceed the 112 that setmaxnreg gives each of 4 consumer warpgroups"));
    // the persistent form: the same rules, Q full and empty barriers for two Q buffers, and ping-pong only;
    // two consumers read Q into registers at a tile's start, so one Q buffer holds the next tile's Q
    let wsp = SpecParams { kind: KernelKind::FwdWsPersistent, block_n: 64, num_stages: 3, ..p };
    let persistent = KernelSpec::new(wsp).unwrap();
    assert!(persistent.q_from_registers() && persistent.q_buffers() == 1);
    // (and two published tiles of two words each)
    assert_eq!(persistent.shared_memory_bytes(), 128 * 256 + 3 * 2 * 64 * 256 + 1024 + 8 * (4 + 2 + 2 * 3));
    // so fwd_ws's 128×128 tiles with three K/V slots fit at HEAD_DIM 128, four do not
    assert!(KernelSpec::new(SpecParams { block_n: 128, ..wsp }).is_ok());
    assert!(e(SpecParams { block_n: 128, num_stages: 4, ..wsp }).contains("1 × Q 128×128 + num_stages=4 × K/V 128×128"));
    // three or four consumers read Q through shared memory (their registers cannot hold it): two buffers
    let three = KernelSpec::new(SpecParams { head_dim: 64, block_m: 192, block_n: 128, num_warps: 16, num_stages: 4, ..wsp }).unwrap();
    assert!(!three.q_from_registers() && three.q_buffers() == 2);
    assert_eq!(three.shared_memory_bytes(), 2 * 192 * 128 + 4 * 2 * 128 * 128 + 1024 + 8 * (4 + 2 + 2 * 4));
    // its consumers read their tile from shared memory: the same register estimate as fwd_ws, causal or not
    let d64 = SpecParams { head_dim: 64, block_m: 192, block_n: 128, num_warps: 16, num_stages: 4, ..wsp };
    let plain = KernelSpec::new(SpecParams { kind: KernelKind::FwdWs, ..d64 }).unwrap();
    assert_eq!(KernelSpec::new(d64).unwrap().register_estimate(), plain.register_estimate());
    assert!(e(SpecParams { num_stages: 2, ..wsp }).contains("fwd_ws_persistent: num_stages=2: the persistent kernel runs the ping-pong schedule"));
    assert_eq!(persistent.registers(), KernelSpec::new(SpecParams { kind: KernelKind::FwdWs, ..wsp }).unwrap().registers());
    // lazy rescaling: the ping-pong tile at HEAD_DIM 128 and on three or four consumers; not on two
    // consumers at 64 (measured slower there), nor without ping-pong (two stages)
    assert!(persistent.lazy_rescale() && three.lazy_rescale());
    let two_at_64 = KernelSpec::new(SpecParams { head_dim: 64, block_n: 128, num_stages: 4, ..wsp }).unwrap();
    assert!(two_at_64.consumer_warpgroups() == 2 && !two_at_64.lazy_rescale());
    let two_stages = KernelSpec::new(SpecParams { kind: KernelKind::FwdWs, num_stages: 2, ..wsp }).unwrap();
    assert!(!two_stages.ping_pong() && !two_stages.lazy_rescale());
}

#[test]
fn the_default_forward_on_sm90a_is_warp_specialized_at_head_dim_128() {
    for causal in [false, true] {
        assert_eq!(flashgen_tests::plan_at(Arch::Sm90a, DType::Bf16, 128, causal, usize::MAX).forward.kind(), KernelKind::FwdWs);
        // HEAD_DIM 128: two consumers taking turns (ping-pong, 3 stages)
        let d128 = flashgen_tests::plan_at(Arch::Sm90a, DType::Bf16, 128, causal, usize::MAX).forward;
        assert_eq!((d128.block_m(), d128.block_n(), d128.consumer_warpgroups(), d128.ping_pong()), (128, 128, 2, true));
        // HEAD_DIM 64: three consumers taking turns (192 rows, 4 stages); up to 4096 tokens the persistent
        // kernel on four consumers (256 rows, 64-row K/V blocks): non-causal to 1024 with 6 slots, then on
        // 192×128; causal with 8 slots to 2048 (each consumer running its own blocks), then 4
        let long = flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, usize::MAX).forward;
        assert_eq!((long.kind(), long.block_m(), long.block_n(), long.consumer_warpgroups(), long.ping_pong()), (KernelKind::FwdWs, 192, 128, 3, true));
        assert_eq!(flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, 4097).forward, long);
        let at = |n| {
            let s = flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, n).forward;
            (s.kind(), (s.block_m(), s.block_n(), s.consumer_warpgroups(), s.num_stages()), s.ping_pong())
        };
        let (short, medium) = if causal { ((256, 64, 4, 8), (256, 64, 4, 4)) } else { ((256, 64, 4, 6), (192, 128, 3, 4)) };
        let medium_from = if causal { 2049 } else { 1025 };
        assert_eq!(at(1024), (KernelKind::FwdWsPersistent, short, true));
        assert_eq!(at(1024), at(1));
        assert_eq!(at(medium_from - 1), (KernelKind::FwdWsPersistent, short, true));
        assert_eq!(at(medium_from), (KernelKind::FwdWsPersistent, medium, true));
        assert_eq!(at(4096), (KernelKind::FwdWsPersistent, medium, true));
        // causal, the short default's consumers run their own blocks; the medium one's 4 slots are too few
        let own = |n| flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, n).forward.own_blocks();
        assert_eq!((own(1024), own(2048), own(4096), own(16384)), (causal, causal, false, causal));
        // the kind's default (`default_of`) is its shortest sequences' default
        let short = flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, 1024).forward;
        assert_eq!(flashgen::spec::defaults::spec(KernelKind::FwdWsPersistent, Arch::Sm90a, DType::F16, 64, causal, 1).unwrap(), short);
        // its fallback where TMA cannot describe a layout: fwd_wgmma's default (256 rows do not fit its 8 warps)
        let fallback = flashgen_tests::fallback(&short);
        assert_eq!(fallback, flashgen::spec::defaults::spec(KernelKind::FwdWgmma, Arch::Sm90a, DType::F16, 64, causal, 1).unwrap());
        // HEAD_DIM 128 up to 2048 tokens: the persistent kernel on fwd_ws's tiles, Q from registers, one Q buffer
        let d128_short = flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 128, causal, 2048).forward;
        assert_eq!(d128_short, KernelSpec::new(SpecParams { kind: KernelKind::FwdWsPersistent, dtype: DType::F16, ..*d128.params() }).unwrap());
        assert!(d128_short.q_from_registers() && d128_short.q_buffers() == 1);
        assert_eq!(flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 128, causal, 1).forward, d128_short);
        assert_eq!(flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 128, causal, 2049).forward.kind(), KernelKind::FwdWs);
        // the persistent kernel runs across tiles; no other kind does
        assert!(short.cross_tile() && d128_short.cross_tile() && !long.cross_tile() && !d128.cross_tile());
        assert!(flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, 4096).forward.cross_tile());
        // the last P·V narrowed on square causal tiles (128×128, the D128 defaults): not on the D64 ones
        // (256×64) nor without the mask
        assert!(!short.narrow_last_product());
        assert_eq!(d128_short.narrow_last_product(), causal);
        assert_eq!(d128.narrow_last_product(), causal);
        assert!(!flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 64, causal, 4096).forward.narrow_last_product());
        // one copy of its last turn at HEAD_DIM 128 (the generation bound), two at 64 (measured)
        assert!(d128_short.single_tail() && !short.single_tail() && !long.single_tail() && !d128.single_tail());
        // the epilogue's row norms under the last P·V, approximate: the ping-pong kernels at HEAD_DIM 128 only
        assert!(d128.early_row_norm() && d128_short.early_row_norm() && !short.early_row_norm() && !long.early_row_norm());
        assert!(!flashgen_tests::fallback(&flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 128, causal, usize::MAX).forward).early_row_norm());
        assert_eq!(flashgen_tests::fallback(&d128_short), flashgen_tests::fallback(&flashgen_tests::plan_at(Arch::Sm90a, DType::F16, 128, causal, usize::MAX).forward));
        // its fallback (192 rows do not fit fwd_wgmma's 8 warps) is fwd_wgmma's default
        assert_eq!(flashgen_tests::fallback(&long), flashgen::spec::defaults::spec(KernelKind::FwdWgmma, Arch::Sm90a, DType::F16, 64, causal, 1).unwrap());
        assert_eq!(flashgen_tests::plan_at(Arch::Sm80, DType::Bf16, 128, causal, usize::MAX).forward.kind(), KernelKind::Fwd);
    }
    assert_eq!(KernelKind::FwdWs.role(), KernelKind::Fwd);
    assert!(KernelKind::FwdWs.uses_wgmma());
    // the wgmma kind of the forward role stays fwd_wgmma (its ABI is the role's; fwd_ws appends TMA maps)
    assert_eq!(KernelKind::Fwd.wgmma_kind(), Some(KernelKind::FwdWgmma));
}

/// bwd_fused: a dK/dV kernel (its role, tiles and grid) that also computes dQ; query blocks of exactly 64
/// rows; one MMA warpgroup per 64 key rows and 64 of dQ's columns, then the dQ writer warpgroup; shared
/// memory within the SM's, registers within what setmaxnreg gives the MMA warpgroups.
#[test]
fn fused_backward_is_a_dkdv_kernel_with_dq() {
    let k = KernelKind::BwdFused;
    assert!(k.fuses_dq() && k.uses_wgmma() && k.role() == KernelKind::BwdDkdv && !k.dq_atomics());
    assert_eq!(KernelKind::parse("bwd_fused").unwrap(), k);
    let atomic = KernelKind::BwdFusedAtomic;
    assert!(atomic.fuses_dq() && atomic.dq_atomics() && atomic.role() == KernelKind::BwdDkdv);
    assert_eq!(KernelKind::parse("bwd_fused_atomic").unwrap(), atomic);
    // bwd_fused_up: the causal order that follows the visits; a non-causal spec of it is refused by name
    let up = KernelKind::BwdFusedUp;
    assert!(up.fuses_dq() && up.dq_up() && !up.dq_atomics() && up.role() == KernelKind::BwdDkdv && !k.dq_up());
    assert_eq!(KernelKind::parse("bwd_fused_up").unwrap(), up);
    let causal_up = *flashgen::spec::defaults::spec(KernelKind::BwdFusedUp, Arch::Sm90a, DType::Bf16, 128, true, 1024).unwrap().params();
    let e = KernelSpec::new(SpecParams { stage: 1, ..causal_up }).unwrap_err().to_string();
    assert!(e.contains("STAGE=3") && e.contains("use bwd_fused"), "{e}");
    // the default deterministic fused backward: bwd_fused_up for causal, else bwd_fused
    for (causal, n, want) in [(true, 4096, up), (true, 8192, up), (true, 16384, up), (false, 4096, k), (false, 16384, k)] {
        let b = flashgen_tests::plan_at(Arch::Sm90a, DType::Bf16, 128, causal, n).backward;
        assert_eq!(b.dkdv.kind(), want, "causal={causal} N={n}");
        assert_eq!(b.dkdv.dq_sum_entry(), Some(format!("{}_dq_sum", b.dkdv.name())));
        // (the tiles; the family's, at 1024 tokens, run on three stages non-causal: the persistent grid's ring)
        let family = *flashgen_tests::family(flashgen::KernelKind::BwdFused, Arch::Sm90a, DType::Bf16, 128, causal).dkdv.params();
        assert_eq!(SpecParams { kind: k, num_stages: 0, ..*b.dkdv.params() }, SpecParams { num_stages: 0, ..family });
    }
    assert_eq!(KernelKind::BwdDkdv.wgmma_kind(), Some(KernelKind::BwdDkdvWgmma), "the plain wgmma kind stays the role's");
    for d in [64, 128] {
        for causal in [false, true] {
            let b = flashgen_tests::family(flashgen::KernelKind::BwdFused, Arch::Sm90a, DType::Bf16, d, causal);
            assert_eq!((b.dkdv.kind(), b.dq, b.dkdv.causal()), (k, None, causal));
            let a = flashgen_tests::family(flashgen::KernelKind::BwdFusedAtomic, Arch::Sm90a, DType::Bf16, d, causal);
            // every fused kind writes dQ in its sum pass, the module's second entry
            for f in [a.dkdv, b.dkdv] {
                assert_eq!(f.dq_sum_entry(), Some(format!("{}_dq_sum", f.name())));
            }
            // (bwd_fused's persistent grid, non-causal at 1024 tokens, on a ring of three stages)
            assert_eq!(SpecParams { kind: k, num_stages: 0, ..*a.dkdv.params() }, SpecParams { num_stages: 0, ..*b.dkdv.params() }, "the same tiles, atomics aside");
            assert_eq!(b.kernels(), vec![b.preprocess, b.dkdv]);
            // 128 keys on two MMA warpgroups of 64 (then the dQ writer warpgroup), each a 64×64 piece of dQ's
            // block: at 128 64 of its columns of a 64-row block, at 64 64 of the rows of a 128-row block
            let strm = if d == 128 { 64 } else { 128 };
            assert_eq!((b.dkdv.streamed_rows(), b.dkdv.resident_rows(), b.dkdv.dq_splits_rows()), (strm, 128, d == 64));
            assert_eq!((b.dkdv.num_warps(), b.dkdv.mma_warps(), b.dkdv.threads()), (12, 8, 384));
            assert_eq!((b.dkdv.rows_per_warp(), b.dkdv.consumer_warpgroups()), (16, 2));
            // the resident K and V, the ring, the dSᵀ tile (a 128-byte row per key and 64 queries), the
            // staging buffers (a 64×64 f32 piece per MMA warpgroup each; two at the defaults, one beside the
            // persistent grid's ring of three) and the ring's mbarriers; all within the SM's 227 KB
            let (res, ns) = (b.dkdv.resident_rows(), b.dkdv.num_stages());
            let buffers = if ns == 3 { 1 } else { 2 };
            assert_eq!(b.dkdv.staging_buffers(), buffers, "{}", b.dkdv.name());
            assert_eq!(b.dkdv.shared_memory_bytes(), 2 * res * d * 2 + ns * b.dkdv.slot_bytes() + 1024 + res * strm * 2 + buffers * 2 * 16384 + 8 * ns);
            assert!(b.dkdv.shared_memory_bytes() <= 227 * 1024, "{}", b.dkdv.name());
            assert!(b.dkdv.register_estimate() <= b.dkdv.registers().consumer);
        }
    }
    let p = *flashgen_tests::family(flashgen::KernelKind::BwdFused, Arch::Sm90a, DType::Bf16, 128, false).dkdv.params();
    let e = |q: SpecParams| KernelSpec::new(q).unwrap_err().to_string();
    assert!(e(SpecParams { block_m: 32, ..p }).contains("bwd_fused: BLOCK_M=32 with HEAD_DIM=128 on 2 MMA warpgroup(s)"));
    assert!(e(SpecParams { block_m: 128, ..p }).contains("or at HEAD_DIM 64 BLOCK_M=128"));
    assert!(e(SpecParams { arch: Arch::Sm80, ..p }).contains("bwd_fused needs sm_90a"));
    assert!(e(SpecParams { num_warps: 4, block_n: 64, ..p }).contains("num_warps=4 is not supported"));
    assert!(e(SpecParams { num_warps: 8, block_n: 64, ..p }).contains("BLOCK_M=64 with HEAD_DIM=128 on 1 MMA warpgroup(s)"));
    assert!(e(SpecParams { block_n: 64, ..p }).contains("BLOCK_N=64 must be 64 × the 2 MMA warpgroups"));
    assert!(e(SpecParams { head_dim: 64, ..p }).contains("BLOCK_M=64 with HEAD_DIM=64 on 2 MMA warpgroup(s)"));
    // (HEAD_DIM 64 with two warpgroups splits dQ's rows: 128-row blocks)
    assert!(KernelSpec::new(SpecParams { head_dim: 64, block_m: 128, ..p }).unwrap().dq_splits_rows());
    // three stages at HEAD_DIM 128 fit with one staging buffer; four do not fit at all
    let three = KernelSpec::new(SpecParams { num_stages: 3, ..p }).unwrap();
    assert_eq!(three.staging_buffers(), 1);
    assert!(three.shared_memory_bytes() <= 227 * 1024);
    assert!(e(SpecParams { num_stages: 4, ..p }).contains("exceeds the"));
    assert!(flashgen::spec::defaults::spec(KernelKind::BwdFused, Arch::Sm90, DType::Bf16, 128, false, 1024).is_err());
}

#[test]
fn causal_consumers_run_their_own_blocks_only_with_slots_to_spare() {
    let ws = |kind, bm, bn, warps, stages, stage| {
        KernelSpec::new(SpecParams { kind, dtype: DType::Bf16, head_dim: 64, block_m: bm, block_n: bn, stage, num_warps: warps, num_stages: stages, arch: Arch::Sm90a }).unwrap()
    };
    use KernelKind::{FwdWs, FwdWsPersistent};
    // 256×64 on four consumers: consumer 0 skips up to 3 blocks, so the next tile's S_0 needs 3 + 2 slots
    assert!(!ws(FwdWsPersistent, 256, 64, 20, 4, 3).own_blocks());
    assert!(ws(FwdWsPersistent, 256, 64, 20, 5, 3).own_blocks());
    assert!(ws(FwdWsPersistent, 256, 64, 20, 6, 3).own_blocks());
    assert!(ws(FwdWsPersistent, 256, 64, 20, 8, 3).own_blocks());
    // 192×128 on three consumers and 128×64 on two skip at most one block: 3 slots are enough
    assert!(ws(FwdWs, 192, 128, 16, 3, 3).own_blocks());
    assert!(ws(FwdWsPersistent, 128, 64, 12, 3, 3).own_blocks());
    // square tiles skip nothing (consumer 0 keeps half its diagonal block); nor does a non-causal tile; and
    // without ping-pong (2 stages) there are no turns to keep
    assert!(!ws(FwdWsPersistent, 128, 128, 12, 4, 3).own_blocks());
    assert!(!ws(FwdWsPersistent, 256, 64, 20, 6, 1).own_blocks());
    assert!(!ws(FwdWs, 128, 64, 12, 2, 3).own_blocks());
    // a rule every spec can be asked, whatever its kind (the preprocess has BLOCK_N 0)
    assert!(flashgen::plan::default_set().iter().all(|s| !s.own_blocks() || (s.causal() && s.kind().warp_specialized_forward())));
}

#[test]
fn a_value_head_dim_is_narrower_in_whole_chunks_and_one_column_slice() {
    use flashgen::{Features, ScheduleOverrides};
    let with_dv = |p: SpecParams, dv: u32| KernelSpec::with_features(p, ScheduleOverrides::NONE, Features { value_dim: Some(dv), ..Features::NONE });
    // DeepSeek's 192/128 on the Hopper forward and the wgmma dK/dV's unsplit 16-row blocks: the name says it
    let ws = SpecParams { kind: KernelKind::FwdWs, head_dim: 192, block_m: 128, block_n: 64, num_warps: 12, num_stages: 3, ..base() };
    let spec = with_dv(ws, 128).unwrap();
    assert_eq!((spec.value_dim(), spec.head_dim()), (128, 192));
    assert!(spec.name().ends_with("_dv128"), "{}", spec.name());
    let dkdv = SpecParams { kind: KernelKind::BwdDkdvWgmma, head_dim: 192, block_m: 16, block_n: 64, num_warps: 4, num_stages: 2, ..base() };
    assert_eq!(with_dv(dkdv, 128).unwrap().column_splits(), 1);
    // V as wide as K is no feature: the same kernel, the same name
    assert_eq!(with_dv(ws, 192).unwrap(), KernelSpec::new(ws).unwrap());
    for dv in [256, 100, 0] {
        let e = with_dv(ws, dv).unwrap_err().to_string();
        assert!(e.contains(&format!("a value head dim of {dv} with HEAD_DIM=192")) && e.contains("positive multiple of 8 below"), "{e}");
    }
    // dV in column slices (D192 on 32-row blocks: 3 of 64): V's 128 columns are two whole slices, the third
    // stores no dV; 96 would end inside a slice
    let sliced = SpecParams { block_m: 32, ..dkdv };
    assert_eq!(with_dv(sliced, 128).unwrap().column_splits(), 3);
    let e = with_dv(sliced, 96).unwrap_err().to_string();
    assert!(e.contains("a value head dim of 96 in dK/dV column slices of 64 columns") && e.contains("whole number of slices"), "{e}");
    let mma_sync = SpecParams { kind: KernelKind::BwdDkdv, arch: Arch::Sm80, ..dkdv };
    assert_eq!(with_dv(mma_sync, 128).unwrap().column_splits(), 3, "sm_80's D192 dK/dV (16 query rows) in three slices");
}

/// The mma.sync kernels with a score_mod at HEAD_DIM 128: the tiles that spill are refused by name and point
/// at the plan's (defaults::MODIFIED_TILES), which take it.
#[test]
fn score_mods_on_the_mma_sync_kernels_refuse_the_tiles_that_spill() {
    use flashgen::{Features, Modifiers};
    let alibi = flashgen::mods::builtins::alibi("slope").unwrap();
    let features = |varlen| Features { varlen, modifiers: Modifiers::new(Some(&alibi), None).unwrap(), ..Features::NONE };
    let with = |p: SpecParams, varlen| KernelSpec::with_features(p, ScheduleOverrides::NONE, features(varlen));
    let fwd = SpecParams { kind: KernelKind::Fwd, block_m: 256, block_n: 32, num_warps: 8, num_stages: 3, stage: 1, arch: Arch::Sm80, ..base() };
    let e = with(fwd, true).unwrap_err().to_string();
    assert!(e.contains("score_mod on packed sequences with 32 query rows a warp") && e.contains("MODIFIED_TILES"), "{e}");
    assert!(with(fwd, false).is_ok() && with(SpecParams { block_m: 128, ..fwd }, true).is_ok());
    let dkdv = SpecParams { kind: KernelKind::BwdDkdv, block_m: 32, block_n: 64, num_warps: 4, num_stages: 3, stage: 1, arch: Arch::Sm80, ..base() };
    let e = with(dkdv, false).unwrap_err().to_string();
    assert!(e.contains("bwd_dkdv: a score_mod (non-causal) on 32-row query blocks") && e.contains("BLOCK_M=16"), "{e}");
    assert!(with(SpecParams { block_m: 16, ..dkdv }, false).is_ok() && with(SpecParams { stage: 3, ..dkdv }, false).is_ok());
}

#[test]
fn the_dq_sum_pass_follows_the_ordered_fused_kernels_only() {
    // derived on where the kernel hands every block on under locks (bwd_fused, bwd_fused_up), with no tag
    let p = |kind, stage| SpecParams { kind, head_dim: 64, block_m: 128, block_n: 128, stage, num_warps: 12, num_stages: 2, ..base() };
    for (kind, stage) in [(KernelKind::BwdFused, 1), (KernelKind::BwdFused, 3), (KernelKind::BwdFusedUp, 3)] {
        let s = KernelSpec::new(p(kind, stage)).unwrap();
        assert!(s.schedule().dq_sum_follows, "{}", s.name());
        assert!(!s.name().contains("_dqf"), "{}", s.name());
        let off = KernelSpec::with_schedule(p(kind, stage), ScheduleOverrides::parse("dq_sum_follows=off").unwrap()).unwrap();
        assert!(!off.schedule().dq_sum_follows && off.name().ends_with("_dqf0"), "{}", off.name());
    }
    // the atomic kind has no locks to wait on: derived off, and refused by name
    let atomic = p(KernelKind::BwdFusedAtomic, 1);
    assert!(!KernelSpec::new(atomic).unwrap().schedule().dq_sum_follows);
    let e = KernelSpec::with_schedule(atomic, ScheduleOverrides::parse("dq_sum_follows=on").unwrap()).unwrap_err().to_string();
    assert!(e.contains("dq_sum_follows=on is for the ordered fused backward"), "{e}");
    // and kernels without a sum pass refuse it too
    let pair = SpecParams { kind: KernelKind::BwdDkdvWgmma, head_dim: 64, block_m: 64, block_n: 64, stage: 1, num_warps: 4, num_stages: 2, ..base() };
    assert!(KernelSpec::with_schedule(pair, ScheduleOverrides::parse("dq_sum_follows=on").unwrap()).is_err());
}

#[test]
fn the_sum_pass_takes_rounds_only_behind_a_persistent_grid() {
    let p = SpecParams { kind: KernelKind::BwdFused, head_dim: 64, block_m: 128, block_n: 128, stage: 1, num_warps: 12, num_stages: 2, ..base() };
    let with = |text: &str| KernelSpec::with_schedule(p, ScheduleOverrides::parse(text).unwrap());
    // derived off (not yet timed); asked for, it is named
    assert!(!with("persistent_tiles=on").unwrap().schedule().dq_sum_rounds);
    let s = with("persistent_tiles=on,dq_sum_rounds=on").unwrap();
    assert!(s.schedule().dq_sum_rounds && s.name().ends_with("_ptile1_dqr1"), "{}", s.name());
    // a round is the heads whose key blocks the grid holds at once: 132 programs over 8 key blocks a head
    // hold 16 heads (128 programs), fewer where there are fewer; a head of more key blocks than programs:
    // 1 (head order); a grid that is not persistent has none
    let g = |seqlen: u32, batch: u32, kv_heads: u32| GridGeometry { batch, heads: kv_heads * 2, kv_heads, seqlen_q: 1000, seqlen_k: seqlen };
    assert_eq!(s.round_heads(&g(1024, 16, 16), 132), 16);
    assert_eq!(s.grid(&g(1024, 16, 16), 132), (128, 1, 1));
    assert_eq!(s.round_heads(&g(1024, 1, 5), 132), 5);
    assert_eq!(s.round_heads(&g(1000, 2, 8), 132), 16);
    assert_eq!(s.round_heads(&g(40000, 2, 8), 132), 1);
    assert_eq!(KernelSpec::new(p).unwrap().round_heads(&g(1024, 16, 16), 132), 0);
    // without a following pass or a persistent grid there are no rounds to follow
    for text in ["dq_sum_rounds=on", "persistent_tiles=on,dq_sum_follows=off,dq_sum_rounds=on"] {
        let e = with(text).unwrap_err().to_string();
        assert!(e.contains("dq_sum_rounds=on orders a following sum pass") && e.contains("dq_sum_follows=on and persistent_tiles=on"), "{text}: {e}");
    }
}

#[test]
fn only_a_persistent_program_prefetches_its_next_tile() {
    let p = |kind| SpecParams { kind, head_dim: 128, block_m: 64, block_n: 128, stage: 1, num_warps: 12, num_stages: 2, ..base() };
    let with = |kind, text: &str| KernelSpec::with_schedule(p(kind), ScheduleOverrides::parse(text).unwrap());
    for kind in [KernelKind::BwdFused, KernelKind::BwdFusedAtomic] {
        assert!(!with(kind, "persistent_tiles=on").unwrap().schedule().prefetch_next_tile);
        let s = with(kind, "persistent_tiles=on,prefetch_next_tile=on").unwrap();
        assert!(s.schedule().prefetch_next_tile && s.name().ends_with("_ptile1_pft1"), "{}", s.name());
        let e = with(kind, "prefetch_next_tile=on").unwrap_err().to_string();
        assert!(e.contains("prefetch_next_tile=on is for a persistent fused grid's programs") && e.contains("persistent_tiles=on"), "{e}");
    }
}

/// `Schedule::staged_epilogue`: derived on for every fused kind (its K/V tiles hold dK/dV on the way out),
/// off by name; the other kinds refuse it, naming where it belongs; bwd_fused_atomic's persistent grid beside a score_mod
/// drops it (24 B spilled) unless asked, and refuses it when asked.
#[test]
fn only_the_fused_backward_stages_its_epilogue() {
    let p = |kind, stage| SpecParams { kind, head_dim: 128, block_m: 64, block_n: 128, stage, num_warps: 12, num_stages: 2, ..base() };
    let with = |kind, stage, text: &str| KernelSpec::with_schedule(p(kind, stage), ScheduleOverrides::parse(text).unwrap());
    for (kind, stage) in [(KernelKind::BwdFused, 1), (KernelKind::BwdFusedAtomic, 1), (KernelKind::BwdFusedUp, 3)] {
        let s = with(kind, stage, "").unwrap();
        assert!(s.schedule().staged_epilogue && !s.name().contains("_sep"), "{}", s.name());
        let off = with(kind, stage, "staged_epilogue=off").unwrap();
        assert!(!off.schedule().staged_epilogue && off.name().ends_with("_sep0"), "{}", off.name());
    }
    let pair = SpecParams { kind: KernelKind::BwdDkdvWgmma, head_dim: 128, block_m: 32, block_n: 64, stage: 1, num_warps: 4, num_stages: 2, ..base() };
    assert!(!KernelSpec::with_schedule(pair, ScheduleOverrides::NONE).unwrap().schedule().staged_epilogue);
    let e = KernelSpec::with_schedule(pair, ScheduleOverrides::parse("staged_epilogue=on").unwrap()).unwrap_err().to_string();
    assert!(e.contains("staged_epilogue=on") && e.contains("staged_epilogue and the rest of the backward's to the fused backward"), "{e}");
    // (ALiBi as a score_mod on the persistent atomic grid)
    let alibi = flashgen::mods::builtins::alibi("slope").unwrap();
    let features = flashgen::Features { modifiers: flashgen::Modifiers::new(Some(&alibi), None).unwrap(), ..flashgen::Features::NONE };
    let tiles = |text: &str| KernelSpec::with_features(p(KernelKind::BwdFusedAtomic, 1), ScheduleOverrides::parse(text).unwrap(), features);
    assert!(!tiles("persistent_tiles=on").unwrap().schedule().staged_epilogue);
    let e = tiles("persistent_tiles=on,staged_epilogue=on").unwrap_err().to_string();
    assert!(e.contains("spills its registers (24 B)") && e.contains("staged_epilogue=off"), "{e}");
    assert!(KernelSpec::with_features(p(KernelKind::BwdFused, 1), ScheduleOverrides::parse("persistent_tiles=on").unwrap(), features).unwrap().schedule().staged_epilogue);
}

/// `Schedule::early_next_tile`: off unless asked; a persistent fused program with its staged epilogue takes it
/// at HEAD_DIM 64's tile (both staged tiles in one ring slot) and 128's (a slot each); refused without a
/// persistent grid or the staged epilogue, and where bwd_fused_atomic's persistent grid drops its staged epilogue beside a score_mod.
#[test]
fn only_a_persistent_staged_program_loads_its_next_tile_early() {
    let p = |kind, head_dim, block_m, block_n, num_stages| SpecParams { kind, head_dim, block_m, block_n, stage: 1, num_warps: 12, num_stages, ..base() };
    let with = |p: SpecParams, text: &str| KernelSpec::with_schedule(p, ScheduleOverrides::parse(text).unwrap());
    for kind in [KernelKind::BwdFused, KernelKind::BwdFusedAtomic] {
        for (d, bm) in [(64, 128), (128, 64)] {
            assert!(!with(p(kind, d, bm, 128, 2), "persistent_tiles=on").unwrap().schedule().early_next_tile);
            let s = with(p(kind, d, bm, 128, 2), "persistent_tiles=on,early_next_tile=on").unwrap();
            assert!(s.schedule().early_next_tile && s.name().ends_with("_ptile1_ent1"), "{}", s.name());
            for text in ["early_next_tile=on", "persistent_tiles=on,staged_epilogue=off,early_next_tile=on"] {
                let e = with(p(kind, d, bm, 128, 2), text).unwrap_err().to_string();
                assert!(e.contains("early_next_tile=on loads a persistent program's next tile") && e.contains("persistent_tiles=on and staged_epilogue=on"), "{text}: {e}");
            }
        }
    }
    let alibi = flashgen::mods::builtins::alibi("slope").unwrap();
    let features = flashgen::Features { modifiers: flashgen::Modifiers::new(Some(&alibi), None).unwrap(), ..flashgen::Features::NONE };
    let e = KernelSpec::with_features(p(KernelKind::BwdFusedAtomic, 128, 64, 128, 2), ScheduleOverrides::parse("persistent_tiles=on,early_next_tile=on").unwrap(), features).unwrap_err().to_string();
    assert!(e.contains("early_next_tile=on needs the staged epilogue") && e.contains("early_next_tile=off"), "{e}");
    assert!(KernelSpec::with_features(p(KernelKind::BwdFused, 128, 64, 128, 2), ScheduleOverrides::parse("persistent_tiles=on,early_next_tile=on").unwrap(), features).unwrap().schedule().early_next_tile);
}
