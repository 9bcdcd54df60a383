//! The autotuner on the CPU with a fake device: key bucketing, the named prune step, failure scoring,
//! output checks against the default config, parallel compilation overlapping timing, persistence.

use flashgen::{Arch, DType, KernelKind, KernelSpec};
use flashgen_runtime::autotune::store::{TuneFile, TuneStore};
use flashgen_runtime::autotune::{bucket, config_space, config_space_for, early_prune, early_stop_cutoff, top_k, tune, Candidates, Config, Timing, TuneKey, TuneResult, EARLY_STOP_RATIO, LONG_EARLY_STOP_RATIO, LONG_LAUNCH_MS, TUNABLE};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

fn key(n: usize) -> TuneKey {
    TuneKey::new(Arch::Sm90a, DType::Bf16, 128, true, n)
}

#[test]
fn n_ctx_is_bucketed_to_powers_of_two() {
    assert_eq!([bucket(0), bucket(1), bucket(16), bucket(17), bucket(1000), bucket(1024), bucket(16385)], [16, 16, 16, 32, 1024, 1024, 32768]);
    assert_eq!(key(3000), key(4096));
    assert_ne!(key(4096), key(4097));
    assert_eq!(key(4000).id(), "sm90a-bf16-d128-causal-n4096-r1");
    assert_ne!(TuneKey::new(Arch::Sm90a, DType::F16, 128, true, 4096), key(4096), "the key includes the dtype");
}

#[test]
fn early_prune_names_its_step_and_reason() {
    let (kept, pruned) = early_prune(&key(64), &config_space());
    assert!(!kept.is_empty());
    for (c, s) in &kept {
        assert_eq!(key(64).spec(*c).unwrap(), *s);
    }
    assert!(pruned.iter().any(|p| p.step == "validate" && p.reason.contains("shared memory")), "smem-pruned configs are named");
    assert!(pruned.iter().any(|p| p.step == "validate" && p.reason.contains("registers")));
    assert!(pruned.iter().any(|p| p.step == "dominated" && p.reason.contains("stages for 2 streamed blocks")));
    assert!(pruned.iter().any(|p| p.step == "dominated" && p.reason.contains("256 owned rows exceed N=64")));
    assert_eq!(kept.len() + pruned.len(), config_space().len());
    // a long sequence keeps the deep pipelines
    let (kept_long, _) = early_prune(&key(16384), &config_space());
    assert!(kept_long.iter().any(|(c, _)| c.num_stages == 4));
}

#[test]
fn top_k_keeps_k_and_prefers_fewer_fragment_reloads() {
    let (kept, _) = early_prune(&key(4096), &config_space());
    let best = top_k(kept.clone(), 3);
    assert_eq!(best.len(), 3);
    assert!(best.iter().all(|(_, s)| s.rows_per_warp() == 32), "two m16 tiles per warp halve K/V fragment loads");
}

/// A fake device: time is a function of the config; some configs fail in named ways.
struct Fake {
    fail_compile: Config,
    panic_compile: Config,
    wrong_output: Config,
    in_prepare: AtomicUsize,
    max_parallel: AtomicUsize,
    first_time_call: Mutex<Option<Instant>>,
    last_prepare_end: Mutex<Option<Instant>>,
    stopped_early: AtomicUsize,
}

impl Candidates for Fake {
    fn prepare(&self, spec: &KernelSpec) -> Result<(), String> {
        let now = self.in_prepare.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_parallel.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(15));
        self.in_prepare.fetch_sub(1, Ordering::SeqCst);
        *self.last_prepare_end.lock().unwrap() = Some(Instant::now());
        let c = config_of(spec);
        if c == self.panic_compile {
            panic!("LLVM crashed");
        }
        if c == self.fail_compile {
            return Err("ptxas: too many resources".into());
        }
        Ok(())
    }
    fn verify(&self, spec: &KernelSpec) -> Result<f64, String> {
        Ok(if config_of(spec) == self.wrong_output { 0.3 } else { 1e-3 })
    }
    fn time(&self, spec: &KernelSpec, cutoff_ms: f64) -> Result<Timing, String> {
        self.first_time_call.lock().unwrap().get_or_insert(Instant::now());
        let c = config_of(spec);
        // fastest: 128 rows, BLOCK_N 64, 3 stages
        let ms = 1.0 + (c.block_m as f64 - 128.0).abs() / 64.0 + (c.block_n as f64 - 64.0).abs() / 32.0 + (c.num_stages as f64 - 3.0).abs() * 0.1 + c.num_warps as f64 * 0.01;
        if ms > cutoff_ms {
            self.stopped_early.fetch_add(1, Ordering::SeqCst);
            return Ok(Timing::of(vec![ms]));
        }
        Ok(Timing::of(vec![ms * 0.99, ms, ms * 1.01]))
    }
}

fn config_of(s: &KernelSpec) -> Config {
    Config::of(s)
}

fn fake() -> Fake {
    Fake {
        fail_compile: Config::new(64, 32, 4, 2),
        panic_compile: Config::new(64, 32, 4, 3),
        // the fastest config computes garbage: it must not win
        wrong_output: Config::new(128, 64, 8, 3),
        in_prepare: AtomicUsize::new(0),
        max_parallel: AtomicUsize::new(0),
        first_time_call: Mutex::new(None),
        last_prepare_end: Mutex::new(None),
        stopped_early: AtomicUsize::new(0),
    }
}

fn run_tune() -> (TuneResult, Fake) {
    let f = fake();
    let k = TuneKey::new(Arch::Sm90a, DType::Bf16, 64, false, 4096);
    let r = tune(&k, &config_space(), &f, 2, None).unwrap();
    (r, f)
}

#[test]
fn failures_score_infinity_and_are_reported_never_fatal() {
    let (r, f) = run_tune();
    let outcome = |c: Config| r.outcomes.iter().find(|o| o.config == c).unwrap();
    let failed = outcome(f.fail_compile);
    assert!(failed.timing.median_ms.is_infinite() && failed.failure.as_deref().unwrap().contains("too many resources"));
    assert!(outcome(f.panic_compile).failure.as_deref().unwrap().contains("panicked"));
    let wrong = outcome(f.wrong_output);
    assert!(wrong.failure.as_deref().unwrap().contains("differs from the default config's by 3.00e-1"));
    assert_ne!(r.best, f.wrong_output);
    assert_eq!(r.best, Config::new(128, 64, 4, 3));
    // configs far slower than the best so far stopped after one launch, and still rank behind it
    assert!(f.stopped_early.load(Ordering::SeqCst) > 0);
    // sorted fastest first, failures last
    assert!(r.outcomes.windows(2).all(|w| w[0].timing.median_ms <= w[1].timing.median_ms));
}

#[test]
fn long_launches_stop_early_at_a_tighter_ratio() {
    const { assert!(LONG_EARLY_STOP_RATIO < EARLY_STOP_RATIO) };
    assert_eq!(early_stop_cutoff(1.0), 1.0 * EARLY_STOP_RATIO);
    assert_eq!(early_stop_cutoff(LONG_LAUNCH_MS * 2.0), LONG_LAUNCH_MS * 2.0 * LONG_EARLY_STOP_RATIO);
    assert!(early_stop_cutoff(f64::INFINITY).is_infinite(), "nothing timed yet: nothing stops");
}

#[test]
fn tuning_reports_where_its_time_went() {
    let (r, _) = run_tune();
    let p = r.phases;
    assert!(p.compile_wait_s > 0.0 && p.verify_s >= 0.0 && p.time_s > 0.0);
    assert!(p.compile_wait_s + p.verify_s + p.time_s <= r.seconds + 1e-3, "{p} within {} s", r.seconds);
}

#[test]
fn compilation_runs_in_parallel_and_overlaps_timing() {
    let (r, f) = run_tune();
    assert!(r.outcomes.len() > 10);
    assert_eq!(f.max_parallel.load(Ordering::SeqCst), 2, "two compile threads at work at once");
    let first_timed = f.first_time_call.lock().unwrap().unwrap();
    let last_compiled = f.last_prepare_end.lock().unwrap().unwrap();
    assert!(first_timed < last_compiled, "the device times early configs while later ones still compile");
}

#[test]
fn timing_quantiles() {
    let t = Timing::of((1..=10).map(|x| x as f64).collect());
    assert_eq!((t.median_ms, t.p20_ms, t.p80_ms), (6.0, 3.0, 8.0));
    assert!(Timing::of(vec![]).median_ms.is_infinite());
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("flashgen-tune-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn results_persist_and_untrusted_files_are_rejected() {
    let (r, _) = run_tune();
    let dir = tmp("store");
    let store = TuneStore::new(Some(&dir));
    let path = store.save(&r).unwrap().unwrap();
    assert!(path.ends_with("autotune/sm90a-bf16-d64-full-n4096-r1.json"));
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(json["configs_timings"].as_array().unwrap().len() == r.outcomes.len(), "Triton's shape: configs_timings");
    assert_eq!(store.load(&r.key).unwrap().unwrap().best, r.best);
    assert!(store.load(&key(1 << 20)).unwrap().is_none(), "never tuned");

    let good = std::fs::read_to_string(&path).unwrap();
    let cases = [
        ("{\"key\": ", "does not parse"),
        (&good.replace("\"flashgen_version\": \"", "\"flashgen_version\": \"0.0.0-"), "tuned with other kernels"),
        (&good.replacen("\"block_m\": 128", "\"block_m\": 96", usize::MAX), "no longer validates"),
    ];
    for (text, phrase) in cases {
        std::fs::write(&path, text).unwrap();
        let err = store.load(&r.key).err().unwrap_or_else(|| panic!("`{phrase}` must be rejected"));
        assert!(err.contains(phrase), "{err}");
    }
    let other = TuneFile::of(&r);
    std::fs::write(store.path(&key(4096)).unwrap(), serde_json::to_string(&other).unwrap()).unwrap();
    assert!(store.load(&key(4096)).err().unwrap().contains("holds key"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn emit_tuned_generates_exactly_the_winners() {
    let (r, _) = run_tune();
    // and a backward key's winner beside it
    let bk = TuneKey::for_kind(KernelKind::BwdDkdv, Arch::Sm90a, DType::Bf16, 64, true, 4096);
    let rb = tune(&bk, &config_space_for(KernelKind::BwdDkdv), &fake(), 2, None).unwrap();
    let dir = tmp("emit");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tuning.json");
    std::fs::write(&file, serde_json::to_string(&vec![TuneFile::of(&r), TuneFile::of(&rb)]).unwrap()).unwrap();
    let exe = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target").join(if cfg!(debug_assertions) { "debug" } else { "release" }).join("flashgen");
    let out = dir.join("kernels");
    let st = std::process::Command::new(exe).args(["emit", "--tuned"]).arg(&file).arg("--out-dir").arg(&out).status().unwrap();
    assert!(st.success());
    let names: Vec<String> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for want in [r.key.spec(r.best).unwrap().name(), rb.key.spec(rb.best).unwrap().name()] {
        assert!(names.contains(&format!("{want}.ptx")) && names.contains(&format!("{want}.json")), "{want} in {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("fa2_bwd_dkdv_")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn backward_keys_name_their_kernel_and_old_files_are_forward_keys() {
    let dkdv = TuneKey::for_kind(KernelKind::BwdDkdv, Arch::Sm90a, DType::Bf16, 128, true, 4000);
    assert_eq!(dkdv.id(), "bwd_dkdv-sm90a-bf16-d128-causal-n4096-r1");
    assert_ne!(dkdv, TuneKey::for_kind(KernelKind::BwdDq, Arch::Sm90a, DType::Bf16, 128, true, 4000));
    assert_eq!(TuneKey::new(Arch::Sm90a, DType::Bf16, 128, true, 4000).id(), "sm90a-bf16-d128-causal-n4096-r1");
    // a key written before the backward existed has no "kind": it is a forward key
    let old = r#"{"arch": "sm90a", "dtype": "bf16", "head_dim": 128, "causal": true, "n_bucket": 4096, "kv_ratio": 1}"#;
    assert_eq!(serde_json::from_str::<TuneKey>(old).unwrap(), key(4096));
}

#[test]
fn backward_spaces_own_and_stream_the_right_rows() {
    for kind in TUNABLE {
        let k = TuneKey::for_kind(kind, Arch::Sm90a, DType::Bf16, 64, false, 16384);
        let (kept, pruned) = early_prune(&k, &config_space_for(kind));
        assert!(kept.len() >= 10, "{}: {} kept", kind.name(), kept.len());
        assert_eq!(kept.len() + pruned.len(), config_space_for(kind).len());
        for (c, s) in &kept {
            assert_eq!(s.kind(), kind);
            assert!([64, 128, 256].contains(&s.resident_rows()), "{c}");
            assert!([16, 32, 64, 128].contains(&s.streamed_rows()), "{c}");
        }
        // the default is in the space, so the tuner can only match or beat it
        let default = k.default_config().unwrap();
        assert!(kept.iter().any(|(c, _)| *c == default), "{}: default {default} pruned", kind.name());
    }
    // fwd_ws and its persistent form: 2, 3 or 4 consumer warpgroups, the default in the space (the persistent
    // one's at HEAD_DIM 64 depends on the length: the key's bucket picks the same tiles as the default
    // forward at that length), ping-pong only for the persistent kind
    // (and HEAD_DIM 256's default, on the split ring)
    for (kind, d, n) in [(KernelKind::FwdWs, 128, 1024), (KernelKind::FwdWs, 256, 4096), (KernelKind::FwdWsPersistent, 64, 1024), (KernelKind::FwdWsPersistent, 64, 4096)] {
        for causal in [false, true] {
            let k = TuneKey::for_kind(kind, Arch::Sm90a, DType::Bf16, d, causal, n);
            let (kept, _) = early_prune(&k, &config_space_for(kind));
            assert!(kept.len() >= 8, "{}: {} kept", kind.name(), kept.len());
            assert!(kept.iter().all(|(_, s)| s.kind() == kind && [2, 3, 4].contains(&s.consumer_warpgroups())));
            assert!(kept.iter().all(|(_, s)| kind == KernelKind::FwdWs || s.ping_pong()));
            let default = k.default_config().unwrap();
            assert!(kept.iter().any(|(c, _)| *c == default), "{} n{n}: default {default} pruned", kind.name());
            if kind == KernelKind::FwdWsPersistent {
                assert_eq!(k.spec(default).unwrap(), flashgen_tests::plan_at(Arch::Sm90a, DType::Bf16, d, causal, n).forward);
            }
        }
    }
    // the separate wgmma backward tries more programs per SM on its tiles (the D64 default tiles with 3 and 4),
    // and nothing else does
    for (kind, most) in [(KernelKind::BwdDkdvWgmma, 3), (KernelKind::BwdDqWgmma, 4)] {
        let k = TuneKey::for_kind(kind, Arch::Sm90a, DType::Bf16, 64, false, 4096);
        let (kept, _) = early_prune(&k, &config_space_for(kind));
        let default = k.default_config().unwrap();
        for programs in [1, 2, most] {
            assert!(kept.iter().any(|(c, s)| (c.block_m, c.block_n, c.num_warps, c.num_stages) == (default.block_m, default.block_n, default.num_warps, default.num_stages) && s.programs_per_sm() == programs), "{} {programs}", kind.name());
        }
    }
    for kind in TUNABLE {
        assert!(config_space_for(kind).iter().all(|c| c.schedule.programs_per_sm.is_none()), "{}", kind.name());
    }
    // dK/dV owns BLOCK_N key rows: its space puts the owned sizes in BLOCK_N
    assert!(config_space_for(KernelKind::BwdDkdv).iter().all(|c| [64, 128, 256].contains(&c.block_n)));
    // the fused backward: at HEAD_DIM 128 two MMA warpgroups of 64 key rows on 64-row query blocks; at 64
    // one on 64-row blocks, or two on 128-row blocks (each 64 rows of dQ); each beside the dQ writer
    // warpgroup; 2-4 stages where they fit, the default among them
    for kind in [KernelKind::BwdFused, KernelKind::BwdFusedAtomic, KernelKind::BwdFusedUp] {
        for (d, tiles) in [(128, vec![(12, 64)]), (64, vec![(8, 64), (12, 128)])] {
            let k = TuneKey::for_kind(kind, Arch::Sm90a, DType::Bf16, d, true, 16384);
            let (kept, _) = early_prune(&k, &config_space_for(kind));
            // (each tile with dV's product early and not at HEAD_DIM 128; at 64 the rules refuse it early)
            for (c, _) in &kept {
                let schedules: Vec<bool> = kept.iter().filter(|(o, _)| (o.block_m, o.num_warps, o.num_stages) == (c.block_m, c.num_warps, c.num_stages)).map(|(_, s)| s.schedule().early_dv).collect();
                let want: &[bool] = if d == 128 { &[false, true] } else { &[false] };
                assert_eq!(schedules.len(), want.len(), "{} d{d} {c}: {schedules:?}", kind.name());
                assert!(want.iter().all(|w| schedules.contains(w)), "{} d{d} {c}: {schedules:?}", kind.name());
            }
            let mut shapes: Vec<(u32, u32, u32)> = kept.iter().filter(|(_, s)| !s.schedule().early_dv).map(|(c, _)| (c.num_warps, c.block_m, c.num_stages)).collect();
            shapes.sort();
            let want: Vec<(u32, u32, u32)> = tiles.iter().flat_map(|&(w, bm)| [2, 3, 4].map(|ns| (w, bm, ns))).filter(|&(w, bm, ns)| {
                // what fits the shared memory: 4 stages of two warpgroups do not
                KernelSpec::new(flashgen::SpecParams { kind, dtype: DType::Bf16, head_dim: d, block_m: bm, block_n: 16 * (w - 4), stage: 3, num_warps: w, num_stages: ns, arch: Arch::Sm90a }).is_ok()
            }).collect();
            assert_eq!(shapes, want, "{} d{d}", kind.name());
            assert!(tiles.iter().all(|&(w, bm)| shapes.contains(&(w, bm, 2))), "{} d{d}: {shapes:?}", kind.name());
            assert!(kept.iter().all(|(c, s)| s.kind() == kind && c.block_n == 16 * (c.num_warps - 4)));
            assert!(kept.iter().any(|(c, _)| *c == k.default_config().unwrap()), "{} d{d}: default pruned", kind.name());
            // (causal: no persistent tiles)
            assert!(kept.iter().all(|(_, s)| !s.schedule().persistent_tiles), "{} d{d}", kind.name());
        }
    }
    // non-causal, bwd_fused and bwd_fused_atomic keep each of their tiles with and without persistent tiles
    for kind in [KernelKind::BwdFused, KernelKind::BwdFusedAtomic] {
        for d in [64, 128] {
            let k = TuneKey::for_kind(kind, Arch::Sm90a, DType::Bf16, d, false, 4096);
            let (kept, _) = early_prune(&k, &config_space_for(kind));
            for (c, _) in &kept {
                let same_tile = kept.iter().filter(|(o, s)| (o.block_m, o.num_warps, o.num_stages) == (c.block_m, c.num_warps, c.num_stages) && !s.schedule().early_dv);
                let persistent: Vec<bool> = same_tile.map(|(_, s)| s.schedule().persistent_tiles).collect();
                assert!(persistent.len() == 2 && persistent.contains(&true) && persistent.contains(&false), "{} d{d} {c}: {persistent:?}", kind.name());
            }
        }
    }
}

#[test]
fn backward_tuning_picks_a_valid_backward_spec() {
    let f = fake();
    let k = TuneKey::for_kind(KernelKind::BwdDq, Arch::Sm90a, DType::Bf16, 64, true, 4096);
    let r = tune(&k, &config_space_for(KernelKind::BwdDq), &f, 2, None).unwrap();
    let best = k.spec(r.best).unwrap();
    assert_eq!(best.kind(), KernelKind::BwdDq);
    assert!(r.outcomes.iter().any(|o| o.config == k.default_config().unwrap()));
}

/// A device where the default takes 1 ms and one other config `rival` takes `rival_ms`; the rest 2 ms.
struct Rival {
    default: Config,
    rival: Config,
    rival_ms: f64,
}

impl Candidates for Rival {
    fn prepare(&self, _: &KernelSpec) -> Result<(), String> {
        Ok(())
    }
    fn verify(&self, _: &KernelSpec) -> Result<f64, String> {
        Ok(0.0)
    }
    fn time(&self, spec: &KernelSpec, _: f64) -> Result<Timing, String> {
        let c = config_of(spec);
        let ms = if c == self.default { 1.0 } else if c == self.rival { self.rival_ms } else { 2.0 };
        Ok(Timing::of(vec![ms; 3]))
    }
}

#[test]
fn backward_winners_must_beat_the_default_by_more_than_the_alone_vs_in_pass_gap() {
    for kind in [KernelKind::Fwd, KernelKind::BwdDkdv, KernelKind::BwdDq] {
        let k = TuneKey::for_kind(kind, Arch::Sm90a, DType::Bf16, 64, false, 4096);
        let default = k.default_config().unwrap();
        let (kept, _) = early_prune(&k, &config_space_for(kind));
        let rival = kept.iter().map(|(c, _)| *c).find(|c| *c != default).unwrap();
        // 3% faster alone: the forward takes it, a backward kernel keeps its default
        let small = tune(&k, &config_space_for(kind), &Rival { default, rival, rival_ms: 0.97 }, 2, None).unwrap();
        assert_eq!(small.best, if kind == KernelKind::Fwd { rival } else { default }, "{}", kind.name());
        // 10% faster: every kind takes it
        let large = tune(&k, &config_space_for(kind), &Rival { default, rival, rival_ms: 0.9 }, 2, None).unwrap();
        assert_eq!(large.best, rival, "{}", kind.name());
    }
}

#[test]
fn the_parallel_output_check_is_the_relative_error_of_the_values() {
    use flashgen_runtime::autotune::gpu::relative_error_bits;
    use flashgen_runtime::tensor::{from_bits, to_bits};
    let mut rng = flashgen::numeric::SplitMix(3);
    for dtype in [DType::Bf16, DType::F16] {
        let b: Vec<u16> = (0..300_001).map(|_| to_bits(dtype, rng.normal())).collect();
        let a: Vec<u16> = b.iter().map(|&x| to_bits(dtype, from_bits(dtype, x) * 1.01)).collect();
        let (af, bf): (Vec<f32>, Vec<f32>) = (a.iter().map(|&x| from_bits(dtype, x)).collect(), b.iter().map(|&x| from_bits(dtype, x)).collect());
        let want = flashgen::reference::relative_error(&af, &bf);
        let got = relative_error_bits(dtype, &a, &b);
        assert!((got - want).abs() <= 1e-9 * want.max(1.0) && got > 1e-3, "{got} vs {want}");
        assert_eq!(relative_error_bits(dtype, &b, &b), 0.0);
        let mut nan = a.clone();
        nan[299_999] = to_bits(dtype, f32::NAN);
        assert!(relative_error_bits(dtype, &nan, &b).is_infinite(), "a NaN never passes");
        assert!(relative_error_bits(dtype, &a[1..], &b).is_infinite(), "lengths must match");
    }
}

/// A device whose default config compiles slowest (or fails): see below.
struct SlowDefault {
    default: Config,
    fail: bool,
    default_done: Mutex<Option<Instant>>,
    first_verify: Mutex<Option<Instant>>,
    started_while_default_compiles: AtomicUsize,
}

impl Candidates for SlowDefault {
    fn prepare(&self, spec: &KernelSpec) -> Result<(), String> {
        if config_of(spec) != self.default {
            if self.default_done.lock().unwrap().is_none() {
                self.started_while_default_compiles.fetch_add(1, Ordering::SeqCst);
            }
            std::thread::sleep(Duration::from_millis(2));
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(60));
        *self.default_done.lock().unwrap() = Some(Instant::now());
        if self.fail {
            Err("ptxas: out of registers".into())
        } else {
            Ok(())
        }
    }
    fn verify(&self, _: &KernelSpec) -> Result<f64, String> {
        self.first_verify.lock().unwrap().get_or_insert(Instant::now());
        Ok(1e-3)
    }
    fn time(&self, _: &KernelSpec, _: f64) -> Result<Timing, String> {
        Ok(Timing::of(vec![1.0]))
    }
}

/// The default compiles on the compile threads with the rest (first in their queue, not alone before
/// them); every candidate is checked against it, so none is checked before it is ready, and a default that
/// does not compile is an error that names it.
#[test]
fn the_default_compiles_with_the_others_and_nothing_is_checked_before_it() {
    let k = TuneKey::new(Arch::Sm90a, DType::Bf16, 64, false, 4096);
    let default = k.default_config().unwrap();
    let slow = |fail| SlowDefault { default, fail, default_done: Mutex::new(None), first_verify: Mutex::new(None), started_while_default_compiles: AtomicUsize::new(0) };
    let f = slow(false);
    let r = tune(&k, &config_space(), &f, 4, None).unwrap();
    let (done, first) = (f.default_done.lock().unwrap().unwrap(), f.first_verify.lock().unwrap().unwrap());
    assert!(first >= done, "a candidate was checked before the default compiled");
    assert!(f.started_while_default_compiles.load(Ordering::SeqCst) > 0, "the others compile while the default does");
    let (kept, _) = early_prune(&k, &config_space());
    assert_eq!(r.outcomes.len(), kept.len() + usize::from(!kept.iter().any(|(c, _)| *c == default)), "every kept config and the default timed once");
    assert!(r.outcomes.iter().all(|o| o.failure.is_none()));
    let e = tune(&k, &config_space(), &slow(true), 4, None).unwrap_err();
    assert!(e.contains(&format!("default config {default} failed to compile")) && e.contains("out of registers"), "{e}");
}

#[test]
fn the_warp_specialized_space_tries_the_rescaling_both_ways_once() {
    let k = TuneKey::for_kind(KernelKind::FwdWs, Arch::Sm90a, DType::Bf16, 128, true, 4096);
    let (kept, pruned) = early_prune(&k, &config_space_for(KernelKind::FwdWs));
    // every ping-pong tile config kept twice: derived (lazy at HEAD_DIM 128) and eager (its own kernel)
    let pingpong: Vec<_> = kept.iter().filter(|(_, s)| s.ping_pong()).collect();
    let eager = pingpong.iter().filter(|(c, s)| !s.lazy_rescale() && c.schedule.lazy_rescale == Some(false)).count();
    assert!(eager > 0 && 2 * eager == pingpong.len(), "{eager} eager of {} ping-pong configs", pingpong.len());
    assert!(pingpong.iter().all(|(_, s)| s.lazy_rescale() || s.name().contains("_lazy0")));
    // the copies that set the derived value are the same kernels: dropped by name, never timed twice
    assert!(pruned.iter().any(|p| p.step == "duplicate"));
    let mut names: Vec<String> = kept.iter().map(|(_, s)| s.name()).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "a kernel kept twice");
    // a tuned config with an override persists and comes back as the same spec
    let (c, s) = pingpong.iter().find(|(c, _)| !c.schedule.is_empty()).unwrap();
    let back: Config = serde_json::from_str(&serde_json::to_string(c).unwrap()).unwrap();
    assert_eq!(k.spec(back).unwrap(), *s);
}
