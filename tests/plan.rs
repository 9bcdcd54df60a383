//! The plan (which kernels a problem runs), the defaults tables behind it, and the schedule switches.

use flashgen::plan::{backward_family, default_set, forward_kind, without_tma, NoTuning, Tuned};
use flashgen::spec::defaults::{self, BACKWARD_KINDS, FORWARD_KINDS, TILES};
use flashgen::{plan, Arch, BackwardPath, DType, KernelKind, KernelSpec, PlanOptions, Problem, ScheduleOverrides, SpecParams};

fn problem(head_dim: u32, causal: bool, seqlen: usize) -> Problem {
    Problem::new(DType::Bf16, head_dim, causal, seqlen)
}

#[test]
fn every_table_row_names_a_result_that_exists() {
    let results = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/results");
    let names: Vec<String> = std::fs::read_dir(&results).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    for id in defaults::cited_results() {
        // result files and folders are named <date>-<id>[.jsonl|.txt|...]
        let found = names.iter().any(|n| n.split_once('.').map_or(n.as_str(), |(stem, _)| stem).ends_with(&format!("-{id}")));
        assert!(found, "the defaults tables cite result `{id}`, which is not under bench/results");
    }
}

#[test]
fn every_tile_row_validates_for_both_dtypes() {
    for (i, row) in TILES.iter().enumerate() {
        // the lengths where the row's range starts, ends, or begins past an earlier row of its kind
        let earlier_ends = TILES[..i].iter().filter(|r| r.kind == row.kind).map(|r| r.applies.tokens.end().saturating_add(1));
        let lengths: Vec<usize> = [*row.applies.tokens.start(), *row.applies.tokens.end()].into_iter().chain(earlier_ends).filter(|n| row.applies.tokens.contains(n)).collect();
        let mut found = false;
        for dtype in [DType::Bf16, DType::F16] {
            for (&arch, &d) in row.applies.targets.iter().flat_map(|a| row.applies.head_dims.iter().map(move |d| (a, d))) {
                for causal in [false, true].into_iter().filter(|c| row.applies.causal.is_none_or(|r| r == *c)) {
                    for &n in &lengths {
                        let spec = defaults::spec(row.kind, arch, dtype, d, causal, n).unwrap();
                        found |= (spec.block_m(), spec.block_n(), spec.num_warps(), spec.num_stages()) == (row.tiles.block_m, row.tiles.block_n, row.tiles.num_warps, row.tiles.num_stages);
                    }
                }
            }
        }
        // some problem the row covers finds it (earlier rows covering every one of them would shadow it)
        assert!(found, "{row:?} is shadowed");
    }
}

#[test]
fn a_head_dim_without_rows_is_an_error_that_says_where_to_add_one() {
    // no catch-all row: an untabled problem names the table to extend, it never borrows another's tiles
    let e = defaults::spec(KernelKind::FwdWs, Arch::Sm90a, DType::Bf16, 80, false, 4096).unwrap_err().to_string();
    assert!(e.contains("no fwd_ws tile row is tabled for HEAD_DIM=80") && e.contains("compiler/src/spec/defaults.rs"), "{e}");
    let e = plan(Arch::Sm90a, &problem(80, false, 4096), &PlanOptions::default(), &NoTuning).unwrap_err().to_string();
    assert!(e.contains("HEAD_DIM=80") && e.contains("FORWARD_KINDS"), "{e}");
    let e = defaults::spec(KernelKind::FwdWgmma, Arch::Sm80, DType::Bf16, 64, false, 1).unwrap_err().to_string();
    assert!(e.contains("on sm_80"), "{e}");
}

#[test]
fn kind_tables_cover_every_length_without_gaps_or_overlaps() {
    for table in [FORWARD_KINDS, BACKWARD_KINDS] {
        for d in flashgen::spec::HEAD_DIMS {
            for causal in [false, true] {
                let rows: Vec<_> = table.iter().filter(|r| r.applies.head_dims.contains(&d) && r.applies.causal.is_none_or(|c| c == causal)).collect();
                let mut next = 0usize;
                let mut ranges: Vec<_> = rows.iter().map(|r| r.applies.tokens.clone()).collect();
                ranges.sort_by_key(|r| *r.start());
                for r in ranges {
                    assert_eq!(*r.start(), next, "HEAD_DIM {d} causal {causal}: a gap or an overlap before {r:?}");
                    next = r.end().saturating_add(1);
                }
                assert_eq!(next, usize::MAX, "HEAD_DIM {d} causal {causal}: the longest sequences are not covered");
            }
        }
    }
}

#[test]
fn the_plan_follows_the_tables_and_the_options() {
    let (hopper, ampere) = (Arch::Sm90a, Arch::Sm80);
    let default = PlanOptions::default();
    let at = |arch, d, causal, n, options: &PlanOptions| plan(arch, &problem(d, causal, n), options, &NoTuning).unwrap();
    // forward kinds by length on Hopper; fwd elsewhere and with wgmma off
    assert_eq!(at(hopper, 64, false, 4096, &default).forward.kind(), KernelKind::FwdWsPersistent);
    assert_eq!(at(hopper, 64, false, 4097, &default).forward.kind(), KernelKind::FwdWs);
    assert_eq!(at(hopper, 128, true, 2048, &default).forward.kind(), KernelKind::FwdWsPersistent);
    assert_eq!(at(hopper, 128, true, 2049, &default).forward.kind(), KernelKind::FwdWs);
    let mma = PlanOptions { wgmma: false, ..default };
    for arch in [hopper, ampere] {
        let p = at(arch, 128, true, 16384, &mma);
        assert_eq!((p.forward.kind(), p.backward.dkdv.kind(), p.backward.dq.map(|s| s.kind())), (KernelKind::Fwd, KernelKind::BwdDkdv, Some(KernelKind::BwdDq)));
        assert_eq!(p.forward_without_tma, p.forward);
        assert!(p.backward_without_tma.is_none());
    }
    assert_eq!(forward_kind(ampere, &problem(64, false, 1024), &default).unwrap(), KernelKind::Fwd);
    // the backward: fused at HEAD_DIM 32 to 128 from 1024 tokens (causal: in the order of the visits), with
    // the three wgmma kernels for layouts TMA cannot describe; three kernels below
    let long = at(hopper, 128, true, 1024, &default);
    assert_eq!((long.backward.dkdv.kind(), long.backward.dq), (KernelKind::BwdFusedUp, None));
    assert_eq!(long.backward_without_tma.unwrap(), backward_family(KernelKind::BwdDkdvWgmma, hopper, &problem(128, true, 1024)).unwrap());
    assert_eq!(long.dq_chains, 1);
    assert_eq!(at(hopper, 128, false, 1024, &default).backward.dkdv.kind(), KernelKind::BwdFused);
    assert_eq!(at(hopper, 128, false, 1024, &default).dq_chains, 2);
    assert_eq!(at(hopper, 128, false, 1023, &default).backward.dkdv.kind(), KernelKind::BwdDkdvWgmma);
    // (HEAD_DIM 64 on its 128×128 tile: two MMA warpgroups, each 64 rows of a 128-row block of dQ)
    let d64 = at(hopper, 64, false, 16384, &default).backward.dkdv;
    assert_eq!((d64.kind(), d64.block_m(), d64.block_n(), d64.dq_splits_rows()), (KernelKind::BwdFused, 128, 128, true));
    assert_eq!(at(hopper, 64, true, 1024, &default).backward.dkdv.kind(), KernelKind::BwdFusedUp);
    assert_eq!(at(hopper, 64, true, 1023, &default).backward.dkdv.kind(), KernelKind::BwdDkdvWgmma);
    // (HEAD_DIM 32 on 64's tile, padded, from 1024 tokens too)
    assert_eq!(at(hopper, 32, false, 16384, &default).backward.dkdv.kind(), KernelKind::BwdFused);
    assert_eq!(at(hopper, 32, true, 1024, &default).backward.dkdv.kind(), KernelKind::BwdFusedUp);
    assert_eq!(at(hopper, 32, true, 1023, &default).backward.dkdv.kind(), KernelKind::BwdDkdvWgmma);
    // explicit paths: no fallback (a layout TMA cannot describe is then an error)
    for (path, causal, kind) in [
        (BackwardPath::Split, false, KernelKind::BwdDkdvWgmma),
        (BackwardPath::Fused, false, KernelKind::BwdFused),
        (BackwardPath::Fused, true, KernelKind::BwdFusedUp),
        (BackwardPath::FusedAtomic, true, KernelKind::BwdFusedAtomic),
    ] {
        let p = at(hopper, 64, causal, 64, &PlanOptions { backward: path, ..default });
        assert_eq!(p.backward.dkdv.kind(), kind, "{path:?}");
        assert!(p.backward_without_tma.is_none());
    }
    assert_eq!(at(hopper, 128, false, 4096, &PlanOptions { backward: BackwardPath::FusedAtomic, dq_chains: Some(4), ..default }).dq_chains, 1);
    assert_eq!(at(hopper, 128, false, 4096, &PlanOptions { dq_chains: Some(4), ..default }).dq_chains, 4);
    assert!(plan(hopper, &problem(128, false, 4096), &PlanOptions { dq_chains: Some(9), ..default }, &NoTuning).is_err());
    assert_eq!(BackwardPath::parse("fused-atomic").unwrap(), BackwardPath::FusedAtomic);
    assert!(BackwardPath::parse("fast").unwrap_err().to_string().contains("use default, split"));
}

#[test]
fn tuned_winners_replace_the_table_and_keep_their_fallbacks() {
    // a tuned forward on 192 rows: its TMA-less fallback is fwd_wgmma's default (192 rows do not fit 8 warps)
    struct Store(KernelSpec);
    impl Tuned for Store {
        fn winner(&self, kind: KernelKind, _: Arch, _: &Problem) -> Result<Option<KernelSpec>, String> {
            Ok((kind == self.0.kind()).then_some(self.0))
        }
    }
    let p = problem(64, false, 8192);
    let tuned = KernelSpec::new(SpecParams { kind: KernelKind::FwdWs, dtype: DType::Bf16, head_dim: 64, block_m: 128, block_n: 64, stage: 1, num_warps: 12, num_stages: 4, arch: Arch::Sm90a }).unwrap();
    let planned = plan(Arch::Sm90a, &p, &PlanOptions::default(), &Store(tuned)).unwrap();
    assert_eq!(planned.forward, tuned);
    assert_eq!(planned.forward_without_tma, without_tma(&tuned, &p).unwrap());
    assert_eq!((planned.forward_without_tma.kind(), planned.forward_without_tma.block_m(), planned.forward_without_tma.num_warps()), (KernelKind::FwdWgmma, 128, 8));
    struct Failing;
    impl Tuned for Failing {
        fn winner(&self, _: KernelKind, _: Arch, _: &Problem) -> Result<Option<KernelSpec>, String> {
            Err("tuning failed".into())
        }
    }
    assert!(plan(Arch::Sm90a, &p, &PlanOptions::default(), &Failing).unwrap_err().to_string().contains("tuning failed"));
}

#[test]
fn the_default_set_is_every_kernel_the_plans_run() {
    let set = default_set();
    for arch in [Arch::Sm80, Arch::Sm90a] {
        for dtype in [DType::Bf16, DType::F16] {
            for d in flashgen::spec::HEAD_DIMS {
                for causal in [false, true] {
                    for n in [1, 100, 1024, 1500, 2048, 3000, 4096, 5000, 16384, 1 << 20] {
                        for backward in BackwardPath::ALL {
                            let planned = plan(arch, &Problem::new(dtype, d, causal, n), &PlanOptions { backward, ..PlanOptions::default() }, &NoTuning);
                            // (the fused kernels stop at HEAD_DIM 128: asking for them past it is an error)
                            if !backward.serves(d) {
                                let fused_hopper = arch == Arch::Sm90a && matches!(backward, BackwardPath::Fused | BackwardPath::FusedAtomic);
                                assert_eq!(planned.is_err(), fused_hopper, "{backward:?} at HEAD_DIM {d} on {arch}");
                                continue;
                            }
                            let p = planned.unwrap();
                            for spec in [p.forward, p.forward_without_tma].into_iter().chain(p.backward.kernels()).chain(p.backward_without_tma.iter().flat_map(|b| b.kernels())) {
                                assert!(set.contains(&spec), "{} (N={n}, {backward:?}) is not in the default set", spec.name());
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn schedule_overrides_parse_print_and_name_the_kernel() {
    let o = ScheduleOverrides::parse("lazy_rescale=off, own_blocks=on,q_buffers=2").unwrap();
    assert_eq!((o.lazy_rescale, o.own_blocks, o.q_buffers, o.cross_tile), (Some(false), Some(true), Some(2), None));
    assert_eq!(o.to_string(), "lazy_rescale=off,own_blocks=on,q_buffers=2");
    assert_eq!(ScheduleOverrides::parse(&o.to_string()).unwrap(), o);
    assert_eq!(o.name_suffix(), "_lazy0_own1_qbuf2");
    for (bad, says) in [
        ("lazy=off", "schedule switch `lazy` is unknown: use one of q_from_registers, lazy_rescale"),
        ("lazy_rescale", "is not name=value"),
        ("lazy_rescale=maybe", "lazy_rescale=maybe: use on or off"),
        ("q_buffers=two", "give a number of Q buffers"),
        ("cross_tile=on,cross_tile=off", "given twice"),
    ] {
        let e = ScheduleOverrides::parse(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
    assert!(ScheduleOverrides::parse("").unwrap().is_empty());
}

/// The D64 causal persistent default (256×64×20×8) and the D128 fwd_ws default (128×128×12×3).
fn d64_causal() -> SpecParams {
    *defaults::spec(KernelKind::FwdWsPersistent, Arch::Sm90a, DType::Bf16, 64, true, 1024).unwrap().params()
}

#[test]
fn overrides_equal_to_the_derived_value_are_dropped_and_others_rename_the_kernel() {
    let p = d64_causal();
    let derived = KernelSpec::new(p).unwrap();
    assert!(derived.own_blocks() && derived.lazy_rescale() && derived.cross_tile() && !derived.single_tail() && derived.q_buffers() == 2);
    // setting what would be derived anyway is the same kernel: one name, one cache key
    let same = KernelSpec::with_schedule(p, ScheduleOverrides::parse("own_blocks=on,lazy_rescale=on").unwrap()).unwrap();
    assert_eq!(same, derived);
    assert_eq!(same.name(), derived.name());
    assert!(same.schedule_overrides().is_empty());
    // a real override: its own name, its own code
    let eager = KernelSpec::with_schedule(p, ScheduleOverrides::parse("lazy_rescale=off").unwrap()).unwrap();
    assert_ne!(eager, derived);
    assert_eq!(eager.name(), format!("{}_lazy0", derived.name()));
    // with lazy rescaling off, the causal eager softmax's half-block switch is derived on
    assert!(!eager.lazy_rescale() && eager.half_block_softmax());
    // the override survives a round trip through the files that carry specs (metadata, tuning results)
    let json = serde_json::to_string(&eager).unwrap();
    assert!(json.contains("\"schedule\":{\"lazy_rescale\":false}"), "{json}");
    assert_eq!(serde_json::from_str::<KernelSpec>(&json).unwrap(), eager);
    // and a spec without overrides is written as before (no schedule field)
    assert!(!serde_json::to_string(&derived).unwrap().contains("schedule"));
    // a dependent switch follows the switch it depends on: no cross-tile, no single tail
    let d128 = *defaults::spec(KernelKind::FwdWsPersistent, Arch::Sm90a, DType::Bf16, 128, true, 1024).unwrap().params();
    let apart = KernelSpec::with_schedule(d128, ScheduleOverrides::parse("cross_tile=off").unwrap()).unwrap();
    assert!(!apart.cross_tile() && !apart.single_tail());
    assert_eq!(apart.schedule_overrides().to_string(), "cross_tile=off");
}

#[test]
fn overrides_the_templates_cannot_honour_are_refused_by_name() {
    let p = d64_causal();
    let with = |s: &str, p: SpecParams| KernelSpec::with_schedule(p, ScheduleOverrides::parse(s).unwrap()).map(|_| ()).unwrap_err().to_string();
    // own blocks need slots to spare: 256×64 skips up to 3 blocks, so 5 stages
    assert!(with("own_blocks=on", SpecParams { num_stages: 4, ..p }).contains("num_stages >= 5"));
    assert!(with("q_from_registers=on", p).contains("needs two consumer warpgroups"));
    assert!(with("q_buffers=1", p).contains("q_buffers=1 needs q_from_registers=on"));
    assert!(with("q_buffers=3", p).contains("q_buffers=3 is not supported"));
    assert!(with("half_block_softmax=on", p).contains("lazy_rescale=off"));
    assert!(with("narrow_last_product=on", SpecParams { stage: 1, ..p }).contains("needs STAGE=3"));
    // the switches belong to the warp-specialized forward: the 2-stage fwd_ws has no ping-pong tile
    let ws2 = SpecParams { kind: KernelKind::FwdWs, head_dim: 128, block_m: 128, block_n: 128, num_warps: 12, num_stages: 2, ..p };
    assert!(with("lazy_rescale=on", ws2).contains("needs the ping-pong tile"));
    assert!(with("cross_tile=on", ws2).contains("needs the persistent forward"));
    assert!(with("single_tail=on", ws2).contains("needs cross_tile=on"));
    let fwd = *defaults::spec(KernelKind::Fwd, Arch::Sm80, DType::Bf16, 64, true, 1).unwrap().params();
    assert!(with("lazy_rescale=off", fwd).contains("fwd: schedule `lazy_rescale=off`: this kind has no such schedule switches"));
    // programs_per_sm: a number, for the separate wgmma backward only, 1 to 4
    assert!(with("programs_per_sm=2", p).contains("is for the separate wgmma backward kernels"));
    assert!(with("programs_per_sm=2", fwd).contains("is for the separate wgmma backward kernels"));
    assert!(ScheduleOverrides::parse("programs_per_sm=on").unwrap_err().to_string().contains("give a number of programs"));
    let dq = SpecParams { kind: KernelKind::BwdDqWgmma, head_dim: 64, block_m: 64, block_n: 64, num_warps: 4, num_stages: 2, stage: 1, ..p };
    assert!(with("programs_per_sm=5", dq).contains("use 1 to 4"));
    let o = ScheduleOverrides::parse("programs_per_sm=2").unwrap();
    assert_eq!(o.to_string(), "programs_per_sm=2");
    assert!(KernelSpec::with_schedule(dq, o).unwrap().name().ends_with("_ctas2"));
    // derived: 4 for dQ and 3 for dK/dV on the 64×64 four-warp tiles at HEAD_DIM 64 (ppsm-ab), 1 elsewhere;
    // saying the derived value is no override, the same kernel and name
    assert_eq!(KernelSpec::new(dq).unwrap().programs_per_sm(), 4);
    assert_eq!(KernelSpec::with_schedule(dq, ScheduleOverrides::parse("programs_per_sm=4").unwrap()).unwrap(), KernelSpec::new(dq).unwrap());
    let dkdv = SpecParams { kind: KernelKind::BwdDkdvWgmma, ..dq };
    assert_eq!(KernelSpec::new(dkdv).unwrap().programs_per_sm(), 3);
    assert_eq!(KernelSpec::new(SpecParams { num_stages: 3, ..dkdv }).unwrap().programs_per_sm(), 1, "only the measured tile");
    assert_eq!(KernelSpec::new(SpecParams { head_dim: 128, block_m: 32, ..dkdv }).unwrap().programs_per_sm(), 1);
}

#[test]
fn a_schedule_override_changes_the_generated_code() {
    // the switch reaches the templates: the eager kernel is different code under a different symbol
    let p = d64_causal();
    let derived = flashgen::compile(&KernelSpec::new(p).unwrap(), Default::default()).unwrap();
    let eager = flashgen::compile(&KernelSpec::with_schedule(p, ScheduleOverrides::parse("lazy_rescale=off").unwrap()).unwrap(), Default::default()).unwrap();
    assert!(eager.ptx.contains(".entry fa2_fwd_ws_persistent_bf16_d64_st3_bm256_bn64_w20_ns8_sm90a_lazy0("));
    let body = |ptx: &str| ptx.split_once(".entry").unwrap().1.split_once('(').unwrap().1.to_string();
    assert_ne!(body(&derived.ptx), body(&eager.ptx));
}

#[test]
fn geometry_features_reach_the_kernels_names() {
    let options = PlanOptions::default();
    let at = |p: Problem| plan(Arch::Sm90a, &p, &options, &NoTuning).unwrap();
    // more queries than keys, causal bottom-right: the first rows see nothing, so the kernels guard them
    let starved = Problem { seqlen_k: 512, ..problem(128, true, 1024) };
    let p = at(starved);
    assert!(p.forward.features().empty_rows && !p.forward.features().varlen);
    assert!(p.forward.name().ends_with("_emptyrows"), "{}", p.forward.name());
    assert!(p.backward.kernels().iter().filter(|s| s.kind() != KernelKind::BwdPre).all(|s| s.features().empty_rows));
    assert!(p.forward_without_tma.features().empty_rows);
    // more keys than queries, or top-left, or not causal: every row sees a key, the plain kernels run
    for p in [Problem { seqlen_k: 2048, ..problem(128, true, 1024) }, Problem { seqlen_k: 512, bottom_right: false, ..problem(128, true, 1024) }, Problem { seqlen_k: 512, ..problem(128, false, 1024) }] {
        assert!(at(p).forward.features().is_none(), "{p:?}");
    }
    // packed sequences: varlen kernels, and causal ones guard (only the GPU knows each sequence's lengths)
    let varlen = at(Problem { varlen: true, ..problem(64, true, 4096) });
    assert!(varlen.forward.features().varlen && varlen.forward.features().empty_rows);
    assert_eq!(varlen.backward.preprocess.features(), flashgen::Features { varlen: true, ..flashgen::Features::NONE });
    let json = serde_json::to_string(&varlen.forward).unwrap();
    assert!(json.contains("\"features\":{\"varlen\":true,\"empty_rows\":true}"), "{json}");
    assert_eq!(serde_json::from_str::<KernelSpec>(&json).unwrap(), varlen.forward);
    // and the plain MHA plans are what they were: no features, no suffix
    assert!(at(problem(64, true, 1024)).forward.features().is_none());
}

/// The fused backward's persistent tiles where the table asks for them (non-causal, HEAD_DIM 64 and 128, to
/// 4096 tokens, softcap too); dropped for packed sequences (their tiles take different steps; a window's
/// non-causal backward runs on the pair), and not past 4096 tokens nor on causal problems.
#[test]
fn persistent_tiles_run_where_the_table_puts_them_and_nowhere_their_tiles_differ() {
    use flashgen::reference::Window;
    let options = PlanOptions::default();
    let dkdv = |p: Problem| plan(Arch::Sm90a, &p, &options, &NoTuning).unwrap().backward.dkdv;
    for d in [64, 128] {
        for n in [1024, 4096] {
            let s = dkdv(problem(d, false, n));
            assert!(s.kind() == KernelKind::BwdFused && s.schedule().persistent_tiles && s.name().contains("_ptile1"), "D{d} N{n}: {}", s.name());
            let packed = dkdv(Problem { varlen: true, ..problem(d, false, n) });
            assert!(packed.features().varlen && !packed.schedule().persistent_tiles, "{}", packed.name());
            let window = dkdv(problem(d, false, n).with_window(Window { left: Some(256), right: Some(256) }, false));
            assert!(!window.schedule().persistent_tiles, "{}", window.name());
            let softcap = dkdv(problem(d, false, n).with_window(Window::UNBOUNDED, true));
            assert!(softcap.schedule().persistent_tiles && softcap.features().softcap, "{}", softcap.name());
        }
        assert!(!dkdv(problem(d, false, 16384)).schedule().persistent_tiles);
        assert!(!dkdv(problem(d, true, 1024)).schedule().persistent_tiles);
        // (a persistent tile that also asks for the switches only a persistent grid takes: packed, all dropped)
        let tiled = dkdv(problem(d, false, 1024));
        let o = ScheduleOverrides { dq_sum_rounds: Some(true), prefetch_next_tile: Some(true), early_next_tile: Some(true), ..*tiled.schedule_overrides() };
        let asked = KernelSpec::with_features(*tiled.params(), o, tiled.features()).unwrap();
        assert!(asked.schedule().early_next_tile && asked.schedule().prefetch_next_tile && asked.schedule().dq_sum_rounds, "{}", asked.name());
        let packed = flashgen::plan::with_features(&asked, flashgen::Features { varlen: true, ..asked.features() }).unwrap();
        let s = packed.schedule();
        assert!(!s.persistent_tiles && !s.early_next_tile && !s.prefetch_next_tile && !s.dq_sum_rounds, "{}", packed.name());
    }
}

#[test]
fn windows_and_softcap_plan_their_kernels_and_refuse_the_others() {
    use flashgen::plan::kernel_window;
    use flashgen::reference::Window;
    let w = |left, right| Window { left, right };
    // the kernels' window: causal ends it at the diagonal; a bounded right side makes the kernel causal
    assert_eq!(kernel_window(true, w(None, None)), (true, Window::UNBOUNDED));
    assert_eq!(kernel_window(true, w(None, Some(0))), (true, Window::UNBOUNDED));
    assert_eq!(kernel_window(true, w(Some(1024), None)), (true, w(Some(1024), Some(0))));
    assert_eq!(kernel_window(true, w(Some(8), Some(64))), (true, w(Some(8), Some(0))));
    assert_eq!(kernel_window(false, w(None, Some(100))), (true, w(None, Some(100))));
    assert_eq!(kernel_window(false, w(Some(100), None)), (false, w(Some(100), None)));
    assert_eq!(kernel_window(false, w(None, None)), (false, Window::UNBOUNDED));
    let options = PlanOptions::default();
    // (the last two: a window on a kernel that is not causal, which only the pair takes)
    let cases = [(true, w(Some(1024), None), false), (false, w(Some(64), Some(64)), true), (false, Window::UNBOUNDED, true), (false, w(Some(100), None), false), (false, w(Some(100), None), true)];
    for (causal, window, softcap) in cases {
        for d in [64, 128] {
            let p = problem(d, causal, 4096).with_window(window, softcap);
            let planned = plan(Arch::Sm90a, &p, &options, &NoTuning).unwrap();
            let (fwd, bwd) = (planned.forward, planned.backward);
            // (a window alone: the persistent kernel, exp/persistent-window)
            let persistent = !window.is_unbounded() && !softcap;
            assert_eq!(fwd.kind(), if persistent { KernelKind::FwdWsPersistent } else { KernelKind::FwdWs }, "{p:?}");
            assert!(fwd.ping_pong());
            assert_eq!(fwd.features().window, !window.is_unbounded());
            assert_eq!(fwd.features().softcap, softcap);
            // a window guards rows without keys (a tile's first block may hold none of its later rows' keys)
            assert_eq!(fwd.features().empty_rows, !window.is_unbounded());
            assert_eq!(planned.forward_without_tma, fwd, "no kernel without TMA takes them");
            assert!(bwd.preprocess.features().is_none(), "Δ is row by row");
            assert!(fwd.name().contains(if softcap { "_softcap" } else { "_window" }), "{}", fwd.name());
            let windowed = !window.is_unbounded();
            if !windowed || p.causal {
                // softcap and a causal window run fused where the table runs the fused kernel without them
                // (HEAD_DIM 64 and 128 from 1024 tokens): a window on bwd_fused_up, unfolded, in one chain; the
                // pair where TMA cannot read Q or dO
                let kind = if p.causal { KernelKind::BwdFusedUp } else { KernelKind::BwdFused };
                assert_eq!((bwd.dkdv.kind(), bwd.dq), (kind, None), "{p:?}");
                assert_eq!(bwd.dkdv.features(), fwd.features());
                if windowed {
                    assert!(!bwd.dkdv.fold_key_blocks() && planned.dq_chains == 1);
                }
                let pair = planned.backward_without_tma.expect("the pair without TMA");
                assert_eq!((pair.dkdv.kind(), pair.dkdv.features()), (KernelKind::BwdDkdvWgmma, fwd.features()));
                // (the atomic kernel takes softcap; a window only bwd_fused_up)
                let atomic = if windowed { KernelKind::BwdDkdvWgmma } else { KernelKind::BwdFusedAtomic };
                for (backward, expected) in [(BackwardPath::Fused, kind), (BackwardPath::Split, KernelKind::BwdDkdvWgmma), (BackwardPath::FusedAtomic, atomic)] {
                    let b = plan(Arch::Sm90a, &p, &PlanOptions { backward, ..options }, &NoTuning).unwrap().backward;
                    assert_eq!(b.dkdv.kind(), expected, "{backward:?}");
                    assert_eq!(b == bwd, backward == BackwardPath::Fused, "{backward:?}");
                    assert_eq!(b.dkdv.features(), fwd.features());
                }
                // below the fused kernel's lengths, the pair as without them
                let short = plan(Arch::Sm90a, &problem(d, causal, 512).with_window(window, softcap), &options, &NoTuning).unwrap().backward;
                assert_eq!(short.dkdv.kind(), KernelKind::BwdDkdvWgmma);
                continue;
            }
            assert_eq!((bwd.dkdv.kind(), bwd.dq.map(|s| s.kind())), (KernelKind::BwdDkdvWgmma, Some(KernelKind::BwdDqWgmma)));
            assert!(bwd.dkdv.features() == fwd.features() && bwd.dq.unwrap().features() == fwd.features());
            assert!(planned.backward_without_tma.is_none());
            if softcap {
                assert!(bwd.dkdv.programs_per_sm() <= 2 && bwd.dq.unwrap().programs_per_sm() <= 2, "softcap's registers");
            }
            // every backward path asks for the same pair
            for backward in BackwardPath::ALL {
                let b = plan(Arch::Sm90a, &p, &PlanOptions { backward, ..options }, &NoTuning).unwrap().backward;
                assert_eq!(b, bwd, "{backward:?}");
            }
        }
    }
    // tuned winners (timed without windows, perhaps tiles that cannot take them) are not used for them
    struct TwoStages;
    impl Tuned for TwoStages {
        fn winner(&self, kind: KernelKind, arch: Arch, p: &Problem) -> Result<Option<KernelSpec>, String> {
            let base = defaults::spec(kind, arch, p.dtype, p.head_dim, p.causal, p.seqlen).map_err(|e| e.to_string())?;
            Ok(KernelSpec::new(SpecParams { num_stages: 2, ..*base.params() }).ok())
        }
    }
    let windowed = problem(128, true, 4096).with_window(w(Some(256), None), true);
    assert_eq!(plan(Arch::Sm90a, &windowed, &options, &TwoStages).unwrap(), plan(Arch::Sm90a, &windowed, &options, &NoTuning).unwrap());
    assert_eq!(plan(Arch::Sm90a, &problem(128, true, 4096), &options, &TwoStages).unwrap().forward.num_stages(), 2, "and are for the others");
    // elsewhere (and on sm_90a with wgmma off): the mma.sync kernels, which take windows, softcap and modifiers
    let p = problem(128, true, 4096).with_window(w(Some(256), None), true);
    for (arch, wgmma) in [(Arch::Sm80, true), (Arch::Sm86, true), (Arch::Sm90a, false)] {
        let planned = plan(arch, &p, &PlanOptions { wgmma, ..options }, &NoTuning).unwrap();
        let kinds: Vec<KernelKind> = std::iter::once(planned.forward).chain(planned.backward.kernels()).map(|s| s.kind()).collect();
        assert_eq!(kinds, [KernelKind::Fwd, KernelKind::BwdPre, KernelKind::BwdDkdv, KernelKind::BwdDq], "{arch:?}");
        assert!(planned.forward.features().window && planned.forward.features().softcap && planned.backward.dkdv.features().softcap);
    }
    let alibi = flashgen::mods::builtins::alibi("slope").unwrap();
    let modified = Problem { modifiers: flashgen::Modifiers::new(Some(&alibi), None).unwrap(), ..problem(128, true, 4096) };
    for (arch, wgmma) in [(Arch::Sm80, true), (Arch::Sm90a, false)] {
        let planned = plan(arch, &modified, &PlanOptions { wgmma, ..options }, &NoTuning).unwrap();
        let kernels: Vec<KernelSpec> = std::iter::once(planned.forward).chain(planned.backward.kernels()).collect();
        assert_eq!(kernels.iter().map(|s| s.kind()).collect::<Vec<_>>(), [KernelKind::Fwd, KernelKind::BwdPre, KernelKind::BwdDkdv, KernelKind::BwdDq], "{arch:?}");
        assert!(kernels.iter().filter(|s| s.kind() != KernelKind::BwdPre).all(|s| s.features().modifiers == modified.modifiers), "{arch:?}");
    }
    // the fused backward's window: both alignments, packed sequences too (where the plain problem runs
    // bwd_fused_up); the fold's order is refused by name
    let fused = |p: Problem| plan(Arch::Sm90a, &p, &options, &NoTuning).unwrap().backward.dkdv.kind();
    let windowed = |nq: usize, nkv: usize, bottom_right: bool| Problem { seqlen_k: nkv, bottom_right, ..problem(128, true, nq) }.with_window(w(Some(300), None), false);
    assert_eq!(fused(windowed(4096, 2048, true)), KernelKind::BwdFusedUp);
    assert_eq!(fused(windowed(2048, 4096, false)), KernelKind::BwdFusedUp);
    assert_eq!(fused(windowed(4096, 2048, false)), KernelKind::BwdFusedUp);
    assert_eq!(fused(Problem { varlen: true, ..windowed(4096, 4096, true) }), KernelKind::BwdFusedUp);
    assert_eq!(fused(problem(128, true, 512).with_window(w(Some(300), None), false)), KernelKind::BwdDkdvWgmma, "the table's pair below 1024");
    let up = defaults::spec(KernelKind::BwdFusedUp, Arch::Sm90a, DType::Bf16, 128, true, 4096).unwrap();
    assert!(up.fold_key_blocks());
    let fold_on = ScheduleOverrides { fold_key_blocks: Some(true), ..ScheduleOverrides::NONE };
    let window = flashgen::Features { window: true, ..flashgen::Features::NONE };
    let e = KernelSpec::with_features(*up.params(), fold_on, window).unwrap_err().to_string();
    assert!(e.contains("fold_key_blocks=on with a sliding window"), "{e}");
    assert!(KernelSpec::with_features(*up.params(), fold_on, flashgen::Features::NONE).is_ok());
    // (packed: unfolded, as every packed bwd_fused_up where its programs would not fit)
    let packed_window = KernelSpec::with_features(*up.params(), ScheduleOverrides::NONE, flashgen::Features { varlen: true, ..window }).unwrap();
    assert!(!packed_window.fold_key_blocks() && flashgen::plan::dq_chains(&packed_window, None) == 1);
    assert_eq!(flashgen::plan::dq_chains(&flashgen::plan::with_features(&up, window).unwrap(), Some(4)), 1);
    // the kinds that do not take them refuse them by name
    let features = flashgen::Features { window: true, ..flashgen::Features::NONE };
    for kind in [KernelKind::BwdFused, KernelKind::FwdWgmma] {
        let spec = defaults::spec(kind, Arch::Sm90a, DType::Bf16, 128, true, 4096).unwrap();
        let e = flashgen::plan::with_features(&spec, features).unwrap_err().to_string();
        assert!(e.contains("a sliding window is built into fwd_ws") && e.contains(kind.name()), "{e}");
    }
    // (fwd_ws_persistent takes a window on its cross-tile consumers only)
    let persistent = defaults::spec(KernelKind::FwdWsPersistent, Arch::Sm90a, DType::Bf16, 128, true, 4096).unwrap();
    assert!(flashgen::plan::with_features(&persistent, features).is_ok());
    let separate = ScheduleOverrides { cross_tile: Some(false), ..ScheduleOverrides::NONE };
    let e = KernelSpec::with_features(*persistent.params(), separate, features).unwrap_err().to_string();
    assert!(e.contains("a sliding window is built into") && e.contains("fwd_ws_persistent with cross_tile"), "{e}");
    let ws2 = SpecParams { num_stages: 2, ..*defaults::spec(KernelKind::FwdWs, Arch::Sm90a, DType::Bf16, 128, true, 4096).unwrap().params() };
    let e = KernelSpec::with_features(ws2, ScheduleOverrides::NONE, flashgen::Features { softcap: true, ..flashgen::Features::NONE }).unwrap_err().to_string();
    assert!(e.contains("softcap") && e.contains("NUM_STAGES=2"), "{e}");
    // the features round-trip through the spec's record
    let spec = plan(Arch::Sm90a, &problem(128, true, 4096).with_window(w(Some(64), None), true), &options, &NoTuning).unwrap().forward;
    let json = serde_json::to_string(&spec).unwrap();
    assert!(json.contains("\"window\":true") && json.contains("\"softcap\":true"), "{json}");
    assert_eq!(serde_json::from_str::<KernelSpec>(&json).unwrap(), spec);
    assert_eq!(flashgen::Features::parse("window, softcap").unwrap(), flashgen::Features { window: true, softcap: true, ..flashgen::Features::NONE });
    assert!(flashgen::Features::parse("windows").unwrap_err().to_string().contains("feature `windows` is unknown"));
}

#[test]
fn score_mods_run_fused_where_the_tile_holds_them_and_mask_mods_on_the_pair() {
    use flashgen::mods::builtins;
    let alibi = builtins::alibi_symmetric("slope", 0).unwrap();
    let causal_mask = builtins::causal(0).unwrap();
    let score = flashgen::Modifiers::new(Some(&alibi), None).unwrap();
    let masked = flashgen::Modifiers::new(Some(&alibi), Some(&causal_mask)).unwrap();
    let options = PlanOptions::default();
    let pair = (KernelKind::BwdDkdvWgmma, Some(KernelKind::BwdDqWgmma));
    for d in [64, 96, 128] {
        for causal in [false, true] {
            let p = Problem { modifiers: score, ..problem(d, causal, 4096) };
            let planned = plan(Arch::Sm90a, &p, &options, &NoTuning).unwrap();
            let b = planned.backward;
            // HEAD_DIM 96 and 128 on the fused kernels' 64-row query blocks; 64's 128-row tile cannot hold
            // the score_mod's registers (the rules refuse it), so the pair
            let expected = match (d, causal) {
                (64, _) => pair,
                (_, false) => (KernelKind::BwdFused, None),
                (_, true) => (KernelKind::BwdFusedUp, None),
            };
            assert_eq!((b.dkdv.kind(), b.dq.map(|s| s.kind())), expected, "D{d} causal {causal}");
            assert_eq!(b.dkdv.features().modifiers, score);
            // (unfolded: the folded grid's state beside the score_mod spills bwd_fused_up's registers)
            assert!(!b.dkdv.fold_key_blocks());
            assert_eq!(planned.backward_without_tma.is_some(), d != 64, "the pair where TMA cannot read Q or dO");
            // a mask_mod (here with the score_mod; causality written into it, a STAGE=1 kernel) runs on the pair
            if !causal {
                let m = Problem { modifiers: masked, ..problem(d, false, 4096) };
                let b = plan(Arch::Sm90a, &m, &options, &NoTuning).unwrap().backward;
                assert_eq!((b.dkdv.kind(), b.dq.map(|s| s.kind())), pair, "D{d} mask_mod");
            }
        }
    }
    // the fused tile's refusal names the rule and the way out
    let d64 = flashgen::plan::backward_family(KernelKind::BwdFused, Arch::Sm90a, &problem(64, false, 4096)).unwrap().dkdv;
    let f = flashgen::Features { modifiers: score, ..flashgen::Features::NONE };
    let e = flashgen::plan::with_features(&d64, f).unwrap_err().to_string();
    assert!(e.contains("score_mod on 128-row query blocks") && e.contains("wgmma pair"), "{e}");
    // and a mask_mod on the fused kernel
    let d128 = flashgen::plan::backward_family(KernelKind::BwdFused, Arch::Sm90a, &problem(128, false, 4096)).unwrap().dkdv;
    let e = flashgen::plan::with_features(&d128, flashgen::Features { modifiers: masked, ..flashgen::Features::NONE }).unwrap_err().to_string();
    assert!(e.contains("not a mask_mod"), "{e}");
}

/// HEAD_DIM 256 (Gemma: softcap, sliding windows): the table's 128×64 on two stages runs ping-pong on the split
/// ring (`Schedule::split_kv_ring`), so a modified problem's forward is that tile with its features, as the
/// plain one's.
#[test]
fn head_dim_256_with_softcap_or_a_window_plans_the_ping_pong_forward() {
    use flashgen::reference::Window;
    let sliding = Window { left: Some(4096), right: Some(0) };
    for (window, softcap) in [(sliding, false), (Window::UNBOUNDED, true), (sliding, true)] {
        let p = Problem { window, softcap, ..problem(256, true, 8192) };
        let planned = plan(Arch::Sm90a, &p, &PlanOptions::default(), &NoTuning).unwrap();
        let f = planned.forward;
        assert!(f.kind() == KernelKind::FwdWs && f.ping_pong(), "{}", f.name());
        assert_eq!((f.block_m(), f.block_n(), f.num_warps(), f.num_stages(), f.split_kv_ring()), (128, 64, 12, 2, true), "{}", f.name());
        assert_eq!((f.features().window, f.features().softcap), (!window.is_unbounded(), softcap), "{}", f.name());
        assert_eq!(planned.backward.dkdv.kind(), KernelKind::BwdDkdvWgmma);
    }
    let plain = plan(Arch::Sm90a, &problem(256, true, 8192), &PlanOptions::default(), &NoTuning).unwrap().forward;
    assert_eq!((plain.block_n(), plain.num_stages(), plain.ping_pong(), plain.split_kv_ring()), (64, 2, true, true), "{}", plain.name());
}

/// DeepSeek's 192/128 on the mma.sync kernels (sm_80, or sm_90a with the wgmma kernels off): dK/dV in three
/// 64-column slices, the third past V's columns (it stores no dV), and dQ; the wgmma backward on sm_90a.
#[test]
fn value_head_dim_128_beside_192_plans_the_backward_everywhere() {
    for causal in [false, true] {
        let p = Problem { value_dim: Some(128), ..problem(192, causal, 4096) };
        for (arch, wgmma) in [(Arch::Sm80, true), (Arch::Sm90a, false)] {
            let b = plan(arch, &p, &PlanOptions { wgmma, ..PlanOptions::default() }, &NoTuning).unwrap().backward;
            assert_eq!(b.dkdv.kind(), KernelKind::BwdDkdv, "{}", b.names());
            assert_eq!((b.dkdv.column_splits(), b.dkdv.value_dim()), (3, 128), "{}", b.names());
            assert_eq!(b.dq.map(|s| s.value_dim()), Some(128), "{}", b.names());
        }
        let hopper = plan(Arch::Sm90a, &p, &PlanOptions::default(), &NoTuning).unwrap().backward;
        assert_eq!((hopper.dkdv.kind(), hopper.dkdv.column_splits()), (KernelKind::BwdDkdvWgmma, 1), "{}", hopper.names());
    }
}

/// Random problems (head dims 0-320 with V as wide or narrower, lengths 0 to 2^31 − 1 both ways, windows of
/// any size, softcap, packed sequences, every target, path and chain count) are planned or refused, never a
/// panic; a plan's kernels validate as they stand, and their grids for geometries up to the launch's
/// limits (Z·H of 65535 rows) compute, at least one program wide where there is work.
#[test]
fn random_problems_plan_or_refuse_without_panicking() {
    let mut rng = flashgen::numeric::SplitMix(27);
    let mut pick = |n: u64| (rng.next_u64() % n) as usize;
    let (mut planned, mut refused) = (0, 0);
    for _ in 0..4000 {
        let head_dim = [32, 64, 96, 128, 192, 256, 0, 1, 48, 80, 100, 160, 200, 320][pick(14)];
        let len = |p: usize| [0, 1, 63, 64, 65, 127, 1000, 1024, 4097, 16384, 131072, (1 << 31) - 1][p];
        let mut p = Problem::new([DType::Bf16, DType::F16][pick(2)], head_dim, pick(2) == 0, len(pick(12)));
        p.seqlen_k = if pick(3) == 0 { len(pick(12)) } else { p.seqlen };
        p.varlen = pick(4) == 0;
        p.bottom_right = pick(2) == 0;
        let bound = |x: usize| [None, Some(0), Some(1), Some(256), Some(1024), Some(usize::MAX)][x];
        p.window = flashgen::reference::Window { left: bound(pick(6)), right: bound(pick(6)) };
        p.softcap = pick(4) == 0;
        p.value_dim = [None, None, Some(128), Some(64), Some(head_dim), Some(0)][pick(6)];
        let arch = [Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90, Arch::Sm90a, Arch::Sm90a][pick(6)];
        let options = PlanOptions { wgmma: pick(4) != 0, backward: BackwardPath::ALL[pick(4)], dq_chains: [None, Some(1), Some(2), Some(8), Some(0), Some(9)][pick(6)] };
        let what = format!("{p:?} on {arch:?} with {options:?}");
        let result = std::panic::catch_unwind(|| plan::plan(arch, &p, &options, &NoTuning)).unwrap_or_else(|_| panic!("plan panicked: {what}"));
        let Ok(plan) = result else {
            refused += 1;
            continue;
        };
        planned += 1;
        let mut kernels = vec![plan.forward, plan.forward_without_tma];
        kernels.extend(plan.backward.kernels());
        kernels.extend(plan.backward_without_tma.iter().flat_map(|b| b.kernels()));
        for spec in kernels {
            let again = KernelSpec::with_features(*spec.params(), *spec.schedule_overrides(), spec.features());
            assert_eq!(again.as_ref().ok(), Some(&spec), "{what}: {} does not validate as it stands: {again:?}", spec.name());
            // the largest grids a launch allows: Z·H up to 65535 rows, lengths as the problem's (u32)
            let n = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
            for (batch, heads, kv_heads) in [(1, 1, 1), (65535, 1, 1), (1, 65535, 5), (255, 257, 1), (2, 256, 8)] {
                let g = flashgen::spec::GridGeometry { batch, heads, kv_heads, seqlen_q: n(p.seqlen), seqlen_k: n(p.seqlen_k) };
                let grid = std::panic::catch_unwind(|| spec.grid(&g, 132)).unwrap_or_else(|_| panic!("{what}: {} grid for {g:?} panicked", spec.name()));
                assert!(grid.0 >= 1 || p.seqlen == 0 || p.seqlen_k == 0, "{what}: {} grid {grid:?} for {g:?}", spec.name());
                if spec.kind().persistent() {
                    // one program per tile up to the SMs, counted without wrapping (release builds do not trap)
                    let tiles = u64::from(g.seqlen_q.div_ceil(spec.resident_rows())) * u64::from(batch * heads);
                    assert_eq!(u64::from(grid.0), tiles.clamp(1, 132), "{what}: {} grid {grid:?} for {g:?}", spec.name());
                }
            }
        }
    }
    assert!(planned > 500 && refused > 100, "planned {planned}, refused {refused}: the draw should reach both");
}
