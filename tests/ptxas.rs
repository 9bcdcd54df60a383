//! Every spec of the default set (and a sweep of the validated tile space) assembles with ptxas for its
//! target with no spills and no stack frame. Registers and shared memory are reported per spec.

use flashgen::{compile, Arch, CompileOptions, DType, Features, KernelKind, KernelSpec, SpecParams};
use flashgen_tests::{find_nvdisasm, find_ptxas, in_ci, ptxas, sass};

fn ptxas_or_skip() -> Option<std::path::PathBuf> {
    let p = find_ptxas();
    if p.is_none() {
        assert!(!in_ci(), "ptxas not found (set FLASHGEN_PTXAS or put it on PATH): CI must install it (.ci/run)");
        eprintln!("SKIPPED: ptxas not found (set FLASHGEN_PTXAS); outside CI this test is skipped");
    }
    p
}

fn nvdisasm_or_skip() -> Option<std::path::PathBuf> {
    let p = find_nvdisasm();
    if p.is_none() {
        assert!(!in_ci(), "nvdisasm not found (set FLASHGEN_NVDISASM): CI must install it (scripts/setup.sh)");
        eprintln!("SKIPPED: nvdisasm not found (set FLASHGEN_NVDISASM); outside CI this test is skipped");
    }
    p
}

/// Compile and assemble one spec; assert no spills, no stack, no ptxas warnings. Returns the PTX, and with
/// `dis` (nvdisasm) the SASS of the same assembly.
fn assemble_clean(tool: &std::path::Path, spec: &KernelSpec, dis: Option<&std::path::Path>) -> (String, Option<String>) {
    let a = compile(spec, CompileOptions::default()).unwrap();
    let (major, minor) = spec.arch().ptx_version();
    assert!(a.ptx.contains(&format!(".version {major}.{minor}\n")), "{}: PTX must declare ISA {major}.{minor}", spec.name());
    assert!(a.ptx.contains(&format!(".target {}", spec.arch().name())));
    let assembled = flashgen_tests::assemble(tool, &a.ptx, spec.arch().name(), dis).unwrap();
    let entries = assembled.entries;
    let entry = |name: &str| entries.iter().find(|(n, _)| n == name).map(|(_, r)| r).unwrap_or_else(|| panic!("{}: no entry {name} in the module", spec.name()));
    // the ordered fused backward's dQ sum pass, the module's second entry: no spills either
    if let Some(sum) = spec.dq_sum_entry() {
        let r = entry(&sum);
        assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "{sum} spills: {r:?}");
    }
    assert_eq!(entries.len(), 1 + spec.dq_sum_entry().is_some() as usize, "{}: entries {:?}", spec.name(), entries.iter().map(|e| &e.0).collect::<Vec<_>>());
    let r = entry(&spec.name());
    println!(
        "{:<48} registers {:>3}  shared {:>6} B  stack {} spills {}/{}",
        spec.name(),
        r.registers,
        spec.shared_memory_bytes(),
        r.stack_frame,
        r.spill_stores,
        r.spill_loads
    );
    // (the fused backward's dQ writer too, with its 24 registers, since the final sums left it for the
    // dQ sum pass)
    assert_eq!((r.stack_frame, r.spill_stores, r.spill_loads), (0, 0, 0), "{} spills: {r:?}", spec.name());
    assert!(r.warnings.is_empty(), "{}: ptxas warns or notes a performance loss (a serialized wgmma, an ignored setmaxnreg): {:?}", spec.name(), r.warnings);
    assert!(r.registers <= 255);
    // the programs per SM the spec asks room for (`.minnctapersm`) share the 64K-register file (allocated by 8 a thread)
    let per_program = r.registers.div_ceil(8) * 8 * spec.threads();
    assert!(
        per_program * spec.programs_per_sm() <= 65536,
        "{}: {} programs of {} registers × {} threads exceed the 64K register file",
        spec.name(),
        spec.programs_per_sm(),
        r.registers,
        spec.threads()
    );
    (a.ptx, assembled.sass)
}

/// The variants of `specs` with each feature the rules admit (`KernelSpec::with_features`): packed
/// sequences, and for causal specs rows that see no key, alone and with packed sequences. The plain specs
/// are not among them.
fn feature_variants(specs: &[KernelSpec]) -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for spec in specs {
        for (varlen, empty_rows) in [(true, false), (false, true), (true, true)] {
            let f = Features { varlen, empty_rows, ..Features::NONE };
            let s = match flashgen::plan::with_features(spec, f) {
                Ok(s) => s,
                // (the refusals: bwd_fused, causal, packed, on HEAD_DIM 64's 128-row query blocks; persistent tiles
                // packed, which the plan runs on the same tile without them, another default)
                Err(_) if spec.dq_splits_rows() && spec.kind() == KernelKind::BwdFused && spec.causal() && varlen => continue,
                Err(_) if spec.schedule().persistent_tiles && varlen => continue,
                Err(e) => panic!("{}: {e}", spec.name()),
            };
            if s.features() == f && !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// The variants of `specs` with a sliding window, softcap and both (where the rules admit them: fwd_ws with
/// ping-pong consumers, the wgmma backward pair, the fused backward's softcap and bwd_fused_up's causal
/// window), alone and with packed sequences.
fn rule_variants(specs: &[KernelSpec]) -> Vec<KernelSpec> {
    let mut out = Vec::new();
    for spec in specs {
        for (varlen, window, softcap) in [(false, true, false), (false, false, true), (false, true, true), (true, true, false), (true, true, true)] {
            let f = Features { varlen, window, softcap, ..Features::NONE };
            if let Ok(s) = flashgen::plan::with_features(spec, f) {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
    }
    out
}

#[test]
fn window_and_softcap_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let specs = rule_variants(&flashgen::plan::default_set());
    let kinds: Vec<_> = specs.iter().map(|s| s.kind()).collect();
    for kind in [flashgen::KernelKind::FwdWs, flashgen::KernelKind::FwdWsPersistent, flashgen::KernelKind::BwdDkdvWgmma, flashgen::KernelKind::BwdDqWgmma, flashgen::KernelKind::BwdFused, flashgen::KernelKind::BwdFusedUp] {
        assert!(kinds.contains(&kind), "no window/softcap variant of {}", kind.name());
    }
    assemble_all_clean(&tool, &specs, |_, _| {});
}

/// `specs`, or with `features` their `feature_variants`.
fn plain_or_featured(specs: Vec<KernelSpec>, features: bool) -> Vec<KernelSpec> {
    if features {
        feature_variants(&specs)
    } else {
        specs
    }
}

/// `assemble_clean` over `specs` on two threads, then `also` on each spec's PTX.
fn assemble_all_clean(tool: &std::path::Path, specs: &[KernelSpec], also: impl Fn(&KernelSpec, &str) + Sync) {
    assemble_all_clean_with_sass(tool, None, specs, |spec, ptx, _| also(spec, ptx));
}

/// The same, `also` taking each spec's SASS too where `dis` (nvdisasm) is given.
fn assemble_all_clean_with_sass(tool: &std::path::Path, dis: Option<&std::path::Path>, specs: &[KernelSpec], also: impl Fn(&KernelSpec, &str, Option<&str>) + Sync) {
    let (a, b) = specs.split_at(specs.len() / 2);
    std::thread::scope(|s| {
        for half in [a, b] {
            let also = &also;
            s.spawn(move || {
                half.iter().for_each(|spec| {
                    let (ptx, sass) = assemble_clean(tool, spec, dis);
                    also(spec, &ptx, sass.as_deref())
                })
            });
        }
    });
}

#[test]
fn default_set_assembles_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    for spec in flashgen::plan::default_set() {
        assemble_clean(&tool, &spec, None);
    }
}

/// Every default spec with each feature (packed sequences, rows that see no key) assembles clean too
/// (tests/timing.rs holds their generation to the 100 ms bound).
#[test]
fn default_set_with_features_assembles_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let specs = feature_variants(&flashgen::plan::default_set());
    assert!(specs.len() >= 150, "{} featured default specs", specs.len());
    assemble_all_clean(&tool, &specs, |_, _| {});
}

/// DeepSeek's 192/128 (`Features::value_dim`) on every default kernel of HEAD_DIM 192 that takes it (one
/// column slice of dK/dV), alone and with packed sequences and rows that see no key.
#[test]
fn value_dim_variants_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let mut specs = Vec::new();
    for spec in flashgen::plan::default_set().iter().filter(|s| s.head_dim() == 192) {
        for (varlen, empty_rows) in [(false, false), (true, true)] {
            let f = Features { varlen, empty_rows, value_dim: Some(128), ..Features::NONE };
            if let Ok(s) = flashgen::plan::with_features(spec, f) {
                if s.value_dim() == 128 && !specs.contains(&s) {
                    specs.push(s);
                }
            }
        }
    }
    assert!(specs.len() >= 12, "{} value_dim specs", specs.len());
    assemble_all_clean(&tool, &specs, |_, _| {});
}

/// The register estimate in validation must be conservative: whatever it admits, ptxas fits in registers.
/// This sweeps every admitted tile shape of the forward and the two backward tile kernels (HEAD_DIM ×
/// warps × resident rows per warp × streamed rows × STAGE), for bf16 on sm_90a and sm_80 and fp16 on
/// sm_90a, at num_stages 2, on two threads.
#[test]
fn admitted_tile_space_assembles_without_spills() {
    admitted_tile_space(false);
}

/// The same sweep with each feature (packed sequences; causal, rows that see no key).
#[test]
fn admitted_tile_space_with_features_assembles_without_spills() {
    admitted_tile_space(true);
}

fn admitted_tile_space(features: bool) {
    let Some(tool) = ptxas_or_skip() else { return };
    let mut specs = Vec::new();
    let (mut admitted, mut rejected) = (0, 0);
    for kind in [KernelKind::Fwd, KernelKind::BwdDkdv, KernelKind::BwdDq] {
        for (dtype, arch) in [(DType::Bf16, Arch::Sm90a), (DType::Bf16, Arch::Sm80), (DType::F16, Arch::Sm90a)] {
            for d in flashgen::spec::HEAD_DIMS {
                for w in flashgen::spec::NUM_WARPS {
                    for m_tiles in [1, 2] {
                        for streamed in flashgen::spec::BLOCK_NS {
                            for stage in [1, 3] {
                                let resident = 16 * w * m_tiles;
                                let (block_m, block_n) = if kind == KernelKind::BwdDkdv { (streamed, resident) } else { (resident, streamed) };
                                let p = SpecParams { kind, dtype, head_dim: d, block_m, block_n, stage, num_warps: w, num_stages: 2, arch };
                                match KernelSpec::new(p) {
                                    Ok(s) => {
                                        specs.push(s);
                                        admitted += 1
                                    }
                                    Err(_) => rejected += 1,
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    println!("{admitted} admitted, {rejected} rejected tile shapes");
    assert!(admitted >= 150, "the admitted space should be a real one: {admitted}");
    // (the features on bf16, on both targets: fp16 changes the conversions, not the features' code, and
    // its plain sweep runs above; CI time)
    if features {
        specs.retain(|s| s.dtype() == DType::Bf16);
    }
    assemble_all_clean(&tool, &plain_or_featured(specs, features), |_, _| {});
}

/// The hand-written M -> natural-log LSE kernel assembles for the oldest target it declares.
#[test]
fn lse_scale_kernel_assembles() {
    let Some(tool) = ptxas_or_skip() else { return };
    for arch in ["sm_80", "sm_90a"] {
        let r = ptxas(&tool, flashgen_runtime::lse::SCALE_PTX, arch).unwrap();
        assert_eq!((r.stack_frame, r.spill_stores), (0, 0));
    }
}

/// The Hopper kernels (fwd_wgmma, bwd_dkdv_wgmma, bwd_dq_wgmma; sm_90a only): every admitted tile shape
/// assembles without spills and without ptxas warnings (a wgmma that ptxas had to serialize is reported as
/// warning C7515/C7511), and the PTX holds the wgmma pipeline: fences, asynchronous MMAs, commit and wait,
/// and the async-proxy fence after the cp.async writes.
#[test]
fn wgmma_kernels_assemble_without_spills_or_serialization() {
    wgmma_kernels(false);
}

/// The same with each feature.
#[test]
fn wgmma_kernels_with_features_assemble_without_spills_or_serialization() {
    wgmma_kernels(true);
}

fn wgmma_kernels(features: bool) {
    let Some(tool) = ptxas_or_skip() else { return };
    let mut specs = Vec::new();
    let kinds = [KernelKind::FwdWgmma, KernelKind::BwdDkdvWgmma, KernelKind::BwdDqWgmma, KernelKind::BwdFused, KernelKind::BwdFusedAtomic, KernelKind::BwdFusedUp];
    for kind in kinds {
        for dtype in [DType::Bf16, DType::F16] {
            for d in flashgen::spec::HEAD_DIMS {
                let warps: &[u32] = if kind.fuses_dq() { &flashgen::spec::FUSED_NUM_WARPS } else { &flashgen::spec::NUM_WARPS };
                for &w in warps {
                    for streamed in flashgen::spec::BLOCK_NS {
                        for stage in [1, 3] {
                            // rows: 16 per computing warp (the fused backward's writer warpgroup owns none), and
                            // dK/dV's column warpgroups: 8 warps on 64 keys
                            let owned = 16 * (w - kind.helper_warps());
                            let column_warpgroups = (kind == KernelKind::BwdDkdvWgmma && w == 8).then_some(64);
                            for owned in std::iter::once(owned).chain(column_warpgroups) {
                                let (block_m, block_n) = if kind.role() == KernelKind::BwdDkdv { (streamed, owned) } else { (owned, streamed) };
                                for num_stages in [2, 3] {
                                    let p = SpecParams { kind, dtype, head_dim: d, block_m, block_n, stage, num_warps: w, num_stages, arch: Arch::Sm90a };
                                    if let Ok(s) = KernelSpec::new(p) {
                                        specs.push(s);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for kind in kinds {
        let n = specs.iter().filter(|s| s.kind() == kind).count();
        // (bwd_fused_up: causal only)
        let least = if kind.dq_up() { 8 } else { 16 };
        assert!(n >= least, "{}: {n} shapes admitted", kind.name());
    }
    assemble_all_clean(&tool, &plain_or_featured(specs, features), |spec, ptx| {
        for needle in ["wgmma.fence.sync.aligned", "wgmma.mma_async.sync.aligned.m64n", "wgmma.commit_group.sync.aligned", "wgmma.wait_group.sync.aligned 0", "fence.proxy.async.shared::cta"] {
            assert!(ptx.contains(needle), "{}: no `{needle}`", spec.name());
        }
    });
}

/// The separate wgmma backward kernels' programs per SM (`Schedule::programs_per_sm`: derived dK/dV 3 and dQ 4
/// at HEAD_DIM 64, ppsm-ab; 1 and 2 as overrides): ptxas caps their registers to fit the register file, with
/// no spills; at HEAD_DIM 128 the shared-memory rule refuses four dK/dV programs.
#[test]
fn more_programs_per_sm_assemble_without_spills() {
    use flashgen::plan::{plan, NoTuning, Problem};
    let Some(tool) = ptxas_or_skip() else { return };
    let with = |spec: &KernelSpec, programs: u32| {
        let o = flashgen::ScheduleOverrides { programs_per_sm: Some(programs), ..Default::default() };
        KernelSpec::with_schedule(*spec.params(), o)
    };
    // (below 1024 tokens: HEAD_DIM 64 runs fused from there)
    let problem = |head_dim, causal| Problem::new(DType::Bf16, head_dim, causal, 1023);
    let mut specs = Vec::new();
    for causal in [false, true] {
        let b = plan(Arch::Sm90a, &problem(64, causal), &Default::default(), &NoTuning).unwrap().backward;
        let (dkdv, dq) = (b.dkdv, b.dq.expect("HEAD_DIM 64: the separate wgmma pair"));
        assert_eq!((dkdv.kind(), dq.kind()), (KernelKind::BwdDkdvWgmma, KernelKind::BwdDqWgmma));
        // derived (no override in the name): dK/dV 3, dQ 4 on these tiles (ppsm-ab)
        assert_eq!((dkdv.programs_per_sm(), dq.programs_per_sm()), (3, 4));
        assert!(!dkdv.name().contains("_ctas") && !dq.name().contains("_ctas"));
        specs.extend([dkdv, dq]);
        for (spec, programs) in [(dkdv, 1), (dkdv, 2), (dq, 1), (dq, 2)] {
            let s = with(&spec, programs).unwrap();
            assert_eq!(s.programs_per_sm(), programs);
            assert!(s.name().ends_with(&format!("_ctas{programs}")), "{}", s.name());
            specs.push(s);
        }
        let wide = plan(Arch::Sm90a, &problem(128, causal), &Default::default(), &NoTuning).unwrap().backward;
        assert_eq!(wide.dkdv.kind(), KernelKind::BwdDkdvWgmma, "HEAD_DIM 128 below 1024 tokens: the wgmma pair");
        let e = with(&wide.dkdv, 4).unwrap_err().to_string();
        assert!(e.contains("programs_per_sm=4") && e.contains("exceed an SM's") && e.contains("at most 3"), "{e}");
    }
    assemble_all_clean(&tool, &specs, |spec, ptx| {
        assert!(ptx.contains(&format!(".minnctapersm {}", spec.programs_per_sm())), "{}: {}", spec.name(), ptx.lines().find(|l| l.contains("minnctapersm")).unwrap_or("no .minnctapersm"));
    });
}

/// The SASS of the Hopper kernels' default specs: every matrix product is an HGMMA (as many as the
/// templates issue: k16 steps over HEAD_DIM for S/dP, over the streamed rows for P·V, dV, dK, dQ), the
/// warpgroup arrive/depbar pairs are there, no mma.sync (HMMA) is left and nothing touches local memory.
#[test]
fn wgmma_kernels_are_hgmma_in_sass() {
    let Some(tool) = ptxas_or_skip() else { return };
    let Some(dis) = nvdisasm_or_skip() else { return };
    for d in flashgen::spec::HEAD_DIMS {
        for causal in [false, true] {
            let b = flashgen_tests::family(flashgen::KernelKind::BwdDkdvWgmma, Arch::Sm90a, DType::Bf16, d, causal);
            let f = flashgen::spec::defaults::spec(KernelKind::FwdWgmma, Arch::Sm90a, DType::Bf16, d, causal, 1).unwrap();
            let k16 = |rows: u32| rows / 16;
            // forward: S (D/16 steps; once more before the loop when S overlaps the softmax) + P·V (BLOCK_N/16);
            // dK/dV: Sᵀ and dPᵀ (2·D/16; the column warpgroups one issue of either, D/16) + dV and dK
            // (2·BLOCK_M/16, per piece of a column warpgroup's columns); dQ: S and dP (2·D/16) + dQ (BLOCK_N/16)
            let s_issues = if f.overlaps_softmax() { 2 } else { 1 };
            let dq = b.dq.unwrap();
            // (products over HEAD_DIM run over its real columns, not the tile's: 96 in 6 k16 steps of 128's 8)
            let mut expected = vec![(f, s_issues * k16(d) + k16(f.block_n())), (b.dkdv, 2 * k16(d) / b.dkdv.column_warpgroups() + 2 * k16(b.dkdv.block_m()) * b.dkdv.column_pieces().len().max(1) as u32), (dq, 2 * k16(d) + k16(dq.block_n()))];
            // bwd_fused (HEAD_DIM 64 and 128): dK/dV's products + dQ = dS·K over the program's key rows (BLOCK_N/16)
            if flashgen::BackwardPath::Fused.serves(d) {
                for kind in [flashgen::KernelKind::BwdFused, flashgen::KernelKind::BwdFusedAtomic] {
                    let fused = flashgen_tests::family(kind, Arch::Sm90a, DType::Bf16, d, causal).dkdv;
                    expected.push((fused, 2 * k16(d) + 2 * k16(fused.block_m()) + k16(fused.block_n())));
                }
            }
            for (spec, hgmma) in expected {
                let text = sass(&tool, &dis, &compile(&spec, CompileOptions::default()).unwrap().ptx, "sm_90a").unwrap();
                let count = |needle: &str| text.lines().filter(|l| l.contains(needle)).count() as u32;
                assert_eq!(count("HGMMA.64x"), hgmma, "{}: HGMMA count", spec.name());
                // the products whose N is a padded head dim (32, 96) run N = that dim, not the tile's 64 / 128:
                // P·V, dV and dK where one program owns all the columns, and dQ in the wgmma pair and in the
                // fused kernels at 32 (the fused kernel's 96 runs 64-column pieces)
                if d % 64 != 0 {
                    let real_n = match spec.kind() {
                        KernelKind::FwdWgmma | KernelKind::BwdDqWgmma => k16(spec.block_n()),
                        // (the fused kinds' dQ too where a warpgroup's piece is split by rows: all its columns)
                        k if k.fuses_dq() => 2 * k16(spec.block_m()) + if spec.dq_splits_rows() { k16(spec.block_n()) } else { 0 },
                        _ if spec.output_columns() >= d => 2 * k16(spec.block_m()),
                        _ => 0,
                    };
                    assert_eq!(count(&format!("HGMMA.64x{d}x16")), real_n, "{}: products over the real {d} columns", spec.name());
                }
                assert_eq!(count("HMMA."), 0, "{}: mma.sync left", spec.name());
                assert!(count("WARPGROUP.ARRIVE") >= 2 && count("WARPGROUP.DEPBAR") >= 2, "{}: warpgroup sync", spec.name());
                let local = text.lines().filter(|l| l.contains(" LDL") || l.contains(" STL")).count();
                assert_eq!(local, 0, "{}: local memory", spec.name());
                if spec.kind().fuses_dq() {
                    // dQ's partial sums leave as bulk reductions (one per 64×64 piece and step), never as a
                    // red.global.add per element: those kept the LSU and the L2 busy for half the kernel
                    assert!(count("UBLKRED.G.S.ADD.F32") >= 1, "{}: no bulk reduction of dQ", spec.name());
                    assert_eq!(count("REDG"), 0, "{}: per-element reductions", spec.name());
                    // the Q/dO ring comes by TMA (two tiles of HEAD_DIM/64 boxes, in the prologue and the
                    // refill) and is waited for on mbarriers
                    assert!(count("UTMALDG") >= 2 * (d / 64), "{}: TMA loads of Q and dO", spec.name());
                    assert!(count("SYNCS") >= 1, "{}: mbarrier waits", spec.name());
                }
            }
        }
    }
}

/// The warp-specialized forward (fwd_ws and fwd_ws_persistent) over its whole autotuning space: assembles clean at the launch
/// register count setmaxnreg needs, and its SASS has the TMA loads, the register hand-over, the mbarrier
/// waits and arrivals, HGMMA for every product (the ping-pong variant issues P·V of the previous block in
/// each turn: S once before the loop, the last P·V after it, the persistent kernel's each in two more
/// places; with two consumers S takes Q from registers;
/// rescaling lazily, one warp vote in the loop)
/// and no local memory.
#[test]
fn warp_specialized_forward_assembles_with_tma_and_setmaxnreg() {
    warp_specialized_forward(false);
}

/// The same with each feature: packed sequences and rows that see no key add a warp vote on a tile
/// without keys wherever a persistent consumer takes its next tile (`pp::seek_tile`: once, or twice across
/// tiles), and nothing else in the SASS.
#[test]
fn warp_specialized_forward_with_features_assembles_with_tma_and_setmaxnreg() {
    warp_specialized_forward(true);
}

fn warp_specialized_forward(features: bool) {
    let Some(tool) = ptxas_or_skip() else { return };
    let mut specs = Vec::new();
    for dtype in [DType::Bf16, DType::F16] {
        for d in flashgen::spec::HEAD_DIMS {
            for stage in [1, 3] {
                for (kind, c) in [KernelKind::FwdWs, KernelKind::FwdWsPersistent].into_iter().flat_map(|k| flashgen_runtime::autotune::config_space_for(k).into_iter().map(move |c| (k, c))) {
                    let p = SpecParams { kind, dtype, head_dim: d, block_m: c.block_m, block_n: c.block_n, stage, num_warps: c.num_warps, num_stages: c.num_stages, arch: Arch::Sm90a };
                    // (each tile once: the space's schedule copies of a config are not assembled here)
                    if let Ok(s) = KernelSpec::new(p) {
                        if (dtype == DType::Bf16 || c.num_stages == 2) && !specs.contains(&s) {
                            specs.push(s);
                        }
                    }
                }
            }
        }
    }
    assert!(specs.len() >= 30, "{} fwd_ws shapes", specs.len());
    let dis = find_nvdisasm();
    assert!(dis.is_some() || !in_ci(), "nvdisasm not found: CI must install it");
    assemble_all_clean_with_sass(&tool, dis.as_deref(), &plain_or_featured(specs, features), |spec, ptx, text| {
        let launch = spec.registers().launch;
        assert!(ptx.contains(&format!(".maxnreg {launch}")), "{}: .maxnreg {launch}", spec.name());
        // the epilogue's 1/l_i: approximate (computed under the last P·V) where `early_row_norm`, IEEE otherwise
        let early = spec.early_row_norm();
        assert_eq!((ptx.contains("rcp.approx.ftz.f32"), ptx.contains("rcp.rn.f32")), (early, !early), "{}: the epilogue's reciprocal", spec.name());
        let Some(text) = text else { return };
        let count = |needle: &str| text.lines().filter(|l| l.contains(needle)).count() as u32;
        // (S = Q·Kᵀ over the real head dim: HEAD_DIM 32 and 96 in 2 and 6 k16 steps of their tiles' 4 and 8)
        let (k16_s, k16_pv) = (spec.head_dim() / 16, spec.block_n() / 16);
        // the ping-pong tile's S_0 and last P·V each once more than the loop's; a cross-tile persistent
        // program's S_0 a third time (its first tile's, and the one in a tile's last turn), and its last P·V
        // too when the program's last tile has its own copy of the last turn (no `single_tail`)
        let (copies_s, copies_pv) = if spec.single_tail() {
            (3, 2)
        } else if spec.cross_tile() {
            (3, 3)
        } else if spec.ping_pong() {
            (2, 2)
        } else {
            (1, 1)
        };
        // a narrowed last P·V (`narrow_last_product`) has a second, half chain in each of its copies; ptxas
        // closes its two paths' groups with an empty HGMMA.64x8x16 after it (at most one a copy)
        let (last_pvs, narrow) = (copies_pv - 1, spec.narrow_last_product() as u32);
        let hgmma = copies_s * k16_s + copies_pv * k16_pv + narrow * last_pvs * k16_pv / 2;
        let empty = count("HGMMA.64x8x16");
        assert!(empty <= narrow * last_pvs, "{}: {empty} empty HGMMAs", spec.name());
        assert_eq!(count("HGMMA.64x") - empty, hgmma, "{}: HGMMA count", spec.name());
        // Q·Kᵀ with A from registers ("HGMMA… R24, R88, gdesc[…]", K-major B: no .tnspB, unlike P·V's)
        let q_rs = text.lines().filter(|l| l.contains("HGMMA.64x") && !l.contains("tnspB") && l.split("gdesc").next().is_some_and(|a| a.contains(", R"))).count() as u32;
        assert_eq!(q_rs, if spec.q_from_registers() { copies_s * k16_s } else { 0 }, "{}: Q·Kᵀ HGMMAs with Q from registers", spec.name());
        // the warp's votes: lazy rescaling's on whether any row's max grew (one, in the K/V loop), the half
        // block softmax's on whether any row reaches the second half (two: the first block's mask, the loop's),
        // and the narrowed last P·V's (one a copy)
        let empty_tiles = spec.features().varlen || spec.features().empty_rows;
        let seeks = if !spec.kind().persistent() || !empty_tiles {
            0
        } else if spec.cross_tile() {
            2
        } else {
            1
        };
        let votes = spec.lazy_rescale() as u32 + 2 * spec.half_block_softmax() as u32 + narrow * last_pvs + seeks;
        assert_eq!(count("VOTE.ANY"), votes, "{}: the warp's votes (lazy rescaling, half block softmax)", spec.name());
        // each consumer's own blocks (`own_blocks`): the K/V loop's bound made warp-uniform by one reduction
        assert_eq!(count("REDUX"), spec.own_blocks() as u32, "{}: the own-blocks bound's warp reduction", spec.name());
        assert!(count("UTMALDG.4D") >= 2, "{}: TMA loads", spec.name());
        assert!(count("USETMAXREG.DEALLOC") == 1 && count("USETMAXREG.TRY_ALLOC") == 1, "{}: setmaxnreg", spec.name());
        assert!(count("SYNCS.PHASECHK") >= 2 && count("SYNCS.ARRIVE") >= 2, "{}: mbarriers", spec.name());
        assert_eq!(count("HMMA."), 0, "{}: mma.sync left", spec.name());
        let local = text.lines().filter(|l| l.contains(" LDL") || l.contains(" STL")).count();
        assert_eq!(local, 0, "{}: local memory", spec.name());
    });
}

/// The fused backward over its admitted shapes, both stages and kinds: no local memory anywhere (the dQ
/// writer warpgroup too, with its 24 registers, since the final sums left it for the dQ sum pass: it
/// spilled 32-48 B before), and with setmaxnreg both sides change their registers (USETMAXREG.TRY_ALLOC,
/// USETMAXREG.DEALLOC).
#[test]
fn fused_backward_touches_no_local_memory() {
    fused_backward(false);
}

/// The same with each feature.
#[test]
fn fused_backward_with_features_touches_no_local_memory() {
    fused_backward(true);
}

fn fused_backward(features: bool) {
    let Some(tool) = ptxas_or_skip() else { return };
    let Some(dis) = nvdisasm_or_skip() else { return };
    let mut checked = 0;
    for kind in [KernelKind::BwdFused, KernelKind::BwdFusedAtomic, KernelKind::BwdFusedUp] {
        // (the warpgroups split dQ's columns, or at HEAD_DIM 64 on 128-row query blocks its rows)
        for (w, d, block_m) in [(8, 64, 64), (12, 128, 64), (12, 64, 128)] {
            for num_stages in [2, 3] {
                for stage in [1, 3] {
                    let p = SpecParams { kind, dtype: DType::Bf16, head_dim: d, block_m, block_n: 16 * (w - 4), stage, num_warps: w, num_stages, arch: Arch::Sm90a };
                    let Ok(spec) = KernelSpec::new(p) else { continue };
                    for spec in plain_or_featured(vec![spec], features) {
                        let text = sass(&tool, &dis, &compile(&spec, CompileOptions::default()).unwrap().ptx, "sm_90a").unwrap();
                        assert!(text.lines().all(|l| !l.contains(" LDL") && !l.contains(" STL")), "{}: local memory", spec.name());
                        if spec.registers().producer > 0 {
                            assert!(text.contains("USETMAXREG.TRY_ALLOC") && text.contains("USETMAXREG.DEALLOC"), "{}: setmaxnreg", spec.name());
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked >= 20, "{checked} fused shapes checked");
}

/// The modifiers the kernels are tested with: ALiBi (a per-head tensor), causal as a mask_mod (block
/// ranges proved), a document mask (per-batch tensor, block-causal), softcap as a score_mod; on fwd_ws, the
/// wgmma backward pair and (score_mods alone) the fused backward.
fn modifier_variants(specs: &[KernelSpec]) -> Vec<KernelSpec> {
    use flashgen::mods::{builtins, MaskMod, Scalar, TensorDecl};
    let alibi = builtins::alibi("slope").unwrap();
    let causal = builtins::causal(0).unwrap();
    let blocks = MaskMod::parse("q_idx // 128 >= kv_idx // 128 && kv_idx < doc_end[b]", &[TensorDecl::per_batch("doc_end", Scalar::I32)]).unwrap();
    let capped = builtins::softcap(30.0).unwrap().then(&alibi).unwrap();
    let sets = [(Some(&alibi), None), (None, Some(&causal)), (Some(&alibi), Some(&causal)), (Some(&capped), Some(&blocks))];
    let mut out = Vec::new();
    for spec in specs.iter().filter(|s| matches!(s.kind(), KernelKind::FwdWs | KernelKind::BwdDkdvWgmma | KernelKind::BwdDqWgmma) || s.kind().fuses_dq()) {
        // (a mask_mod kernel is non-causal: causality goes into the mask)
        for (score, mask) in sets.into_iter().filter(|(_, m)| !spec.causal() || m.is_none()) {
            let modifiers = flashgen::Modifiers::new(score, mask).unwrap();
            for varlen in [false, true] {
                let f = Features { varlen, modifiers, ..Features::NONE };
                if let Ok(s) = flashgen::plan::with_features(spec, f) {
                    if !out.contains(&s) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out
}

#[test]
fn modifier_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let specs = modifier_variants(&flashgen::plan::default_set());
    for kind in [KernelKind::FwdWs, KernelKind::BwdDkdvWgmma, KernelKind::BwdDqWgmma, KernelKind::BwdFused, KernelKind::BwdFusedUp] {
        assert!(specs.iter().filter(|s| s.kind() == kind).count() >= 4, "modifier variants of {}", kind.name());
    }
    // (the fused backward takes score_mods, not mask_mods: the rules refuse those)
    assert!(specs.iter().filter(|s| s.kind().fuses_dq()).all(|s| s.features().modifiers.is_some_and(|m| m.mask().is_none())));
    assemble_all_clean(&tool, &specs, |_, _| {});
}


/// `Schedule::ds_handover` on the fused backward's default specs (bwd_fused_up unfolded: the rules refuse the
/// folded grid with it), alone, packed, with windows and softcap and with score_mods: no spills (the rules
/// refuse the one combination that spilled, bwd_fused_atomic with a score_mod).
#[test]
fn ds_handover_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let handed = |spec: &KernelSpec| -> Option<KernelSpec> {
        let fold = (spec.kind() == KernelKind::BwdFusedUp).then_some(false);
        let o = flashgen::ScheduleOverrides { ds_handover: Some(true), fold_key_blocks: fold, ..Default::default() };
        KernelSpec::with_features(*spec.params(), o, spec.features()).ok()
    };
    let fused: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.kind().fuses_dq() && s.num_warps() == 12).collect();
    let mut specs: Vec<KernelSpec> = fused.iter().filter_map(handed).collect();
    assert_eq!(specs.len(), fused.len(), "every two-warpgroup fused spec takes ds_handover");
    let folded = fused.iter().find(|s| s.kind() == KernelKind::BwdFusedUp).expect("a bwd_fused_up spec");
    let o = flashgen::ScheduleOverrides { ds_handover: Some(true), fold_key_blocks: Some(true), ..Default::default() };
    assert!(KernelSpec::with_schedule(*folded.params(), o).unwrap_err().to_string().contains("fold_key_blocks=off"));
    for variant in [feature_variants(&specs), rule_variants(&specs), modifier_variants(&specs)] {
        specs.extend(variant.into_iter().filter(|s| s.schedule().ds_handover));
    }
    assert!(specs.iter().any(|s| s.features().window) && specs.iter().any(|s| s.features().modifiers.is_some()));
    assemble_all_clean(&tool, &specs, |spec, ptx| {
        // (the hand-over's announcements count the 256 MMA threads; the dQ staging's, 160)
        assert!(ptx.lines().any(|l| l.contains("barrier.arrive") && l.trim_end().ends_with(", 256;")), "{}: no hand-over announcement", spec.name());
    });
}

/// `Schedule::early_dv` (derived on for bwd_fused_up at HEAD_DIM 128's tile) asked of every fused default
/// spec of that tile, alone, packed, with windows and softcap and with score_mods: no spills, and dV's product a commit
/// group of its own (one more a step than without).
#[test]
fn early_dv_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let with_early_dv = |spec: &KernelSpec, on: bool| -> Option<KernelSpec> {
        let o = flashgen::ScheduleOverrides { early_dv: Some(on), ..*spec.schedule_overrides() };
        KernelSpec::with_features(*spec.params(), o, spec.features()).ok()
    };
    let fused: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.kind().fuses_dq()).collect();
    let mut specs: Vec<KernelSpec> = fused.iter().filter_map(|s| with_early_dv(s, true)).collect();
    // (the rules refuse HEAD_DIM 64's tile, where it spilled with softcap)
    assert_eq!(specs.len(), fused.iter().filter(|s| s.params().tile_dim() == 128).count(), "every fused spec of HEAD_DIM 128's tile takes early_dv");
    for variant in [feature_variants(&specs), rule_variants(&specs), modifier_variants(&specs)] {
        specs.extend(variant.into_iter().filter(|s| s.schedule().early_dv));
    }
    assert!(specs.iter().any(|s| s.features().window) && specs.iter().any(|s| s.features().modifiers.is_some()));
    let commits = |ptx: &str| ptx.matches("wgmma.commit_group").count();
    assemble_all_clean(&tool, &specs, |spec, ptx| {
        let off = with_early_dv(spec, false).expect("early_dv=off is always admitted");
        let ptx_off = compile(&off, CompileOptions::default()).unwrap().ptx;
        assert_eq!(commits(ptx), commits(&ptx_off) + 1, "{}: dV's product is not a group of its own", spec.name());
    });
}

/// `Schedule::staged_epilogue`, derived on for the fused kinds: the default set and its feature, rule and
/// modifier variants (each assembled by its own sweep above) are staged. Here the opt-out: every fused default
/// spec, and each non-causal one on the persistent grid, with `staged_epilogue=off` (dK/dV stored from the
/// fragments) assembles without spills, and the staged default stores dK/dV in 16-byte chunks
/// (`st.global.v4`) where the opt-out's fragments store 4 bytes.
#[test]
fn staged_epilogue_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let with = |spec: &KernelSpec, staged: bool, persistent: Option<bool>| -> Option<KernelSpec> {
        // (the next tile's early loads stage dK/dV in the ring: they go with the staged epilogue)
        let early = spec.schedule_overrides().early_next_tile.filter(|_| staged);
        let o = flashgen::ScheduleOverrides { staged_epilogue: Some(staged), persistent_tiles: persistent.or(spec.schedule_overrides().persistent_tiles), early_next_tile: early, ..*spec.schedule_overrides() };
        KernelSpec::with_features(*spec.params(), o, spec.features()).ok()
    };
    let fused: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.kind().fuses_dq()).collect();
    assert!(fused.iter().all(|s| s.schedule().staged_epilogue), "a fused default spec is not staged");
    let mut off: Vec<KernelSpec> = fused.iter().filter_map(|s| with(s, false, None)).collect();
    assert_eq!(off.len(), fused.len(), "every fused default spec takes staged_epilogue=off");
    off.extend(fused.iter().filter_map(|s| with(s, false, Some(true))).filter(|s| s.schedule().persistent_tiles));
    off.sort_by_key(|s| s.name());
    off.dedup();
    assert!(off.iter().any(|s| s.schedule().persistent_tiles) && off.iter().any(|s| s.schedule().fold_key_blocks));
    let wide_stores = |ptx: &str| ptx.lines().filter(|l| l.contains("st.global.v4")).count();
    assemble_all_clean(&tool, &off, |spec, ptx| {
        let staged = with(spec, true, None).expect("staged_epilogue=on is derived for the fused kinds");
        let ptx_staged = compile(&staged, CompileOptions::default()).unwrap().ptx;
        assert!(wide_stores(&ptx_staged) > wide_stores(ptx), "{}: dK/dV not stored in 16-byte chunks when staged", staged.name());
    });
}

/// `Schedule::persistent_tiles` (off by default) asked of every non-causal fused default spec, alone, with
/// softcap and with score_mods where the rules admit them, bwd_fused's with its sum pass in rounds, each
/// with its next tile prefetched, and each with its next tile's loads under its epilogue: no spills (the dQ writer's 24 registers hold the tile across its loop), and
/// the program's tiles walked by grid stride (nctaid.x read).
#[test]
fn persistent_tiles_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let with_tiles = |spec: &KernelSpec| -> Option<KernelSpec> {
        let o = flashgen::ScheduleOverrides { persistent_tiles: Some(true), ..*spec.schedule_overrides() };
        KernelSpec::with_features(*spec.params(), o, spec.features()).ok()
    };
    let fused: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.kind().fuses_dq() && !s.causal()).collect();
    let mut specs: Vec<KernelSpec> = fused.iter().filter_map(with_tiles).collect();
    assert_eq!(specs.len(), fused.len(), "every non-causal fused default spec takes persistent_tiles");
    // (the rules refuse packed sequences and windows: a persistent program's tiles all take the same steps)
    for variant in [rule_variants(&specs), modifier_variants(&specs)] {
        specs.extend(variant.into_iter().filter(|s| s.schedule().persistent_tiles));
    }
    assert!(specs.iter().any(|s| s.features().softcap), "no softcap variant kept persistent_tiles");
    // and the ordered kind's sum pass in the grid's rounds (`Schedule::dq_sum_rounds`), every kind's programs
    // prefetching their next tile (`Schedule::prefetch_next_tile`)
    let rounds: Vec<KernelSpec> = specs
        .iter()
        .filter(|s| s.schedule().dq_sum_follows)
        .filter_map(|s| KernelSpec::with_features(*s.params(), flashgen::ScheduleOverrides { dq_sum_rounds: Some(true), ..*s.schedule_overrides() }, s.features()).ok())
        .collect();
    assert!(!rounds.is_empty() && rounds.iter().all(|s| s.schedule().dq_sum_rounds), "no bwd_fused spec takes dq_sum_rounds");
    let prefetching: Vec<KernelSpec> = fused
        .iter()
        .filter_map(|s| KernelSpec::with_features(*s.params(), flashgen::ScheduleOverrides { persistent_tiles: Some(true), prefetch_next_tile: Some(true), ..*s.schedule_overrides() }, s.features()).ok())
        .collect();
    assert_eq!(prefetching.len(), fused.len(), "every non-causal fused default spec takes prefetch_next_tile");
    // and each persistent spec whose epilogue is staged with its next tile's loads under that epilogue
    // (`Schedule::early_next_tile`): its K/V copies issued in two places, the first tile's prologue and
    // every epilogue
    let early_of = |s: &KernelSpec, on: bool| KernelSpec::with_features(*s.params(), flashgen::ScheduleOverrides { early_next_tile: Some(on), ..*s.schedule_overrides() }, s.features());
    let staged: Vec<&KernelSpec> = specs.iter().filter(|s| s.schedule().staged_epilogue).collect();
    let early: Vec<KernelSpec> = staged.iter().filter_map(|s| early_of(s, true).ok()).collect();
    assert!(early.len() == staged.len() && early.iter().any(|s| s.features().softcap), "not every staged persistent spec takes early_next_tile");
    specs.extend(rounds);
    specs.extend(prefetching);
    assemble_all_clean(&tool, &specs, |spec, ptx| {
        assert!(ptx.contains("%nctaid.x"), "{}: no grid-stride walk of tiles", spec.name());
    });
    let copies = |ptx: &str| ptx.matches("cp.async.cg.shared.global").count();
    assemble_all_clean(&tool, &early, |spec, ptx| {
        let plain = compile(&early_of(spec, false).unwrap(), CompileOptions::default()).unwrap().ptx;
        assert_eq!(copies(ptx), 2 * copies(&plain), "{}: the next tile's K/V not copied from the epilogue", spec.name());
    });
}

/// Every kernel the plan runs over a grid of problems (both targets, dtypes and head dims, 192/128, causal
/// or not, equal and unequal lengths in both alignments, packed, windows, softcap, ALiBi, a causal mask_mod)
/// assembles without spills: the other sweeps start from the default set's tiles, and a modified problem
/// may plan other tiles (`defaults::MODIFIED_TILES`). Every problem plans, on both targets. The kernels the other sweeps assemble are
/// left out here.
#[test]
fn every_planned_kernel_of_the_problem_grid_assembles_without_spills() {
    use flashgen::mods::builtins;
    use flashgen::plan::{plan, NoTuning, PlanOptions, Problem};
    use flashgen::reference::Window;
    let Some(tool) = ptxas_or_skip() else { return };
    let alibi = builtins::alibi("slope").unwrap();
    let causal_mask = builtins::causal(0).unwrap();
    let mods = [None, flashgen::Modifiers::new(Some(&alibi), None).unwrap(), flashgen::Modifiers::new(None, Some(&causal_mask)).unwrap()];
    let windows = [Window::UNBOUNDED, Window { left: Some(256), right: Some(0) }, Window { left: Some(256), right: Some(64) }, Window { left: Some(1024), right: None }];
    let mut planned: Vec<KernelSpec> = Vec::new();
    for arch in [Arch::Sm90a, Arch::Sm80] {
        for dtype in [DType::Bf16, DType::F16] {
            for (head_dim, value_dim) in [(32, None), (64, None), (96, None), (128, None), (192, None), (192, Some(128)), (256, None)] {
                for causal in [false, true] {
                    for (seqlen, seqlen_k) in [(300, 300), (2048, 2048), (2048, 700), (700, 2048), (5000, 5000)] {
                        for varlen in [false, true] {
                            for bottom_right in [true, false] {
                                for window in windows {
                                    for softcap in [false, true] {
                                        for modifiers in mods {
                                            // (modifiers take the window and softcap as their own; a mask_mod kernel is non-causal)
                                            if modifiers.is_some() && (softcap || !window.is_unbounded()) || modifiers.is_some_and(|m| m.mask().is_some()) && causal {
                                                continue;
                                            }
                                            let p = Problem { dtype, head_dim, causal, seqlen, seqlen_k, varlen, bottom_right, window, softcap, modifiers, value_dim };
                                            match plan(arch, &p, &PlanOptions::default(), &NoTuning) {
                                                Ok(pl) => {
                                                    let kernels = [pl.forward, pl.forward_without_tma].into_iter().chain(pl.backward.kernels()).chain(pl.backward_without_tma.iter().flat_map(|b| b.kernels()));
                                                    for spec in kernels {
                                                        if !planned.contains(&spec) {
                                                            planned.push(spec);
                                                        }
                                                    }
                                                }
                                                Err(e) => panic!("{p:?} on {}: {e}", arch.name()),
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let default = flashgen::plan::default_set();
    let mut covered: std::collections::HashSet<KernelSpec> = default.iter().copied().collect();
    covered.extend(feature_variants(&default).into_iter().chain(rule_variants(&default)).chain(modifier_variants(&default)));
    let left: Vec<KernelSpec> = planned.into_iter().filter(|s| !covered.contains(s)).collect();
    println!("{} planned kernels the other sweeps do not assemble", left.len());
    assemble_all_clean(&tool, &left, |_, _| {});
}

/// `Schedule::split_kv_ring` on the warp-specialized forwards' ping-pong default specs (own_blocks off, which
/// it refuses) and FA3's 128×176 tile (two stages, on the split ring), alone, packed, with windows, softcap
/// and modifiers where the rules admit them: no spills, and V's own barriers initialized (twice the
/// mbarriers of a shared slot).
#[test]
fn split_kv_ring_kernels_assemble_without_spills() {
    let Some(tool) = ptxas_or_skip() else { return };
    let split = |spec: &KernelSpec, block_n: u32, num_stages: u32| -> Option<KernelSpec> {
        let o = flashgen::ScheduleOverrides { split_kv_ring: Some(true), own_blocks: spec.own_blocks().then_some(false), ..Default::default() };
        KernelSpec::with_features(SpecParams { block_n, num_stages, ..*spec.params() }, o, spec.features()).ok()
    };
    let ping_pong: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.kind().warp_specialized_forward() && s.ping_pong()).collect();
    let mut specs: Vec<KernelSpec> = ping_pong.iter().filter_map(|s| split(s, s.block_n(), s.params().num_stages)).collect();
    // (all but the causal persistent tiles past HEAD_DIM 64, which the rules refuse: they spilled 4 B)
    let refused = |s: &KernelSpec| s.kind().persistent() && s.causal() && s.params().tile_dim() > 64;
    assert_eq!(specs.len(), ping_pong.iter().filter(|s| !refused(s)).count(), "every other ping-pong forward takes split_kv_ring");
    specs.extend(ping_pong.iter().filter(|s| s.kind() == KernelKind::FwdWs && !s.causal() && s.head_dim() == 128).filter_map(|s| split(s, flashgen::spec::WS_WIDE_BLOCK_N, 2)));
    // (and HEAD_DIM 256's two-stage tile, which the split ring makes ping-pong)
    let two_stage: Vec<KernelSpec> = flashgen::plan::default_set().into_iter().filter(|s| s.kind() == KernelKind::FwdWs && !s.ping_pong() && s.params().tile_dim() == 256).collect();
    specs.extend(two_stage.iter().filter_map(|s| split(s, s.block_n(), 2)).inspect(|s| assert!(s.ping_pong(), "{}", s.name())));
    assert!(specs.iter().any(|s| s.block_n() == flashgen::spec::WS_WIDE_BLOCK_N), "the wide tile");
    assert!(specs.iter().any(|s| s.params().tile_dim() == 256 && s.params().num_stages == 2), "HEAD_DIM 256 on two stages");
    for variant in [feature_variants(&specs), rule_variants(&specs), modifier_variants(&specs)] {
        specs.extend(variant.into_iter().filter(|s| s.split_kv_ring()));
    }
    assert!(specs.iter().any(|s| s.features().window) && specs.iter().any(|s| s.features().modifiers.is_some()));
    assemble_all_clean(&tool, &specs, |spec, ptx| {
        let inits = ptx.matches("mbarrier.init").count() as u32;
        assert!(inits >= 4 * spec.params().num_stages, "{}: {inits} mbarrier inits for {} split slots", spec.name(), spec.params().num_stages);
    });
}
