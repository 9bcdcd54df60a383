//! The `flashgen` command line: emit writes PTX + metadata; bad flags exit non-zero with the rule, never panic.

use std::path::PathBuf;
use std::process::Command;

fn flashgen() -> Command {
    // the binary of the cli package, built by cargo for this workspace's profile
    let exe = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("target").join(if cfg!(debug_assertions) { "debug" } else { "release" }).join("flashgen");
    assert!(exe.exists(), "build the CLI first: cargo build -p flashgen-cli (missing {})", exe.display());
    Command::new(exe)
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flashgen-cli-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn emit_writes_ptx_and_triton_style_metadata() {
    let dir = tmp("one");
    let out = dir.join("k.ptx");
    let st = flashgen()
        .args(["emit", "--kernel", "fwd", "--dtype", "bf16", "--head-dim", "128", "--block-m", "128", "--block-n", "64", "--stage", "3", "--num-warps", "8", "--num-stages", "3", "--arch", "sm_90a", "-o"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".entry fa2_fwd_bf16_d128_st3_bm128_bn64_w8_ns3_sm90a("));
    assert!(ptx.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
    assert!(ptx.contains("cp.async.cg.shared.global") && ptx.contains("ldmatrix.sync.aligned.m8n8.x4"));
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("k.json")).unwrap()).unwrap();
    assert_eq!(meta["name"], "fa2_fwd_bf16_d128_st3_bm128_bn64_w8_ns3_sm90a");
    assert_eq!(meta["num_warps"], 8);
    assert_eq!(meta["num_stages"], 3);
    assert_eq!(meta["shared"], 32768 + 3 * 32768);
    assert_eq!(meta["target"]["arch"], 90);
    assert_eq!(meta["spec"]["block_n"], 64);
}

#[test]
fn emit_ir_writes_llvm_ir() {
    let dir = tmp("ir");
    assert!(flashgen().args(["emit", "--ir", "--head-dim", "64", "--stage", "1", "--out-dir"]).arg(&dir).status().unwrap().success());
    let ll = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).find(|e| e.path().extension().is_some_and(|x| x == "ll")).unwrap();
    let text = std::fs::read_to_string(ll.path()).unwrap();
    assert!(text.contains("inner stage 3") && text.contains("@llvm.nvvm.mma.m16n8k16.row.col.bf16"));
}

#[test]
fn emit_defaults_writes_the_default_set() {
    let dir = tmp("defaults");
    assert!(flashgen().args(["emit", "--defaults", "--out-dir"]).arg(&dir).status().unwrap().success());
    let files: Vec<String> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    // per arch × dtype × head dim: forward, dK/dV and dQ for both stages, and one preprocess; on sm_90a
    // the tile kernels are the wgmma kinds, and the forward is fwd_ws with its fwd_wgmma fallback beside it
    // (at HEAD_DIM 64 also the short-sequence forward), and the two fused backwards per stage (three causal)
    // (and the decode kernels, flashgen::plan::decode_default_set)
    let n = flashgen::plan::default_set().len() + flashgen::plan::decode_default_set().len();
    assert_eq!(files.iter().filter(|f| f.ends_with(".ptx")).count(), n);
    assert_eq!(files.iter().filter(|f| f.ends_with(".json")).count(), n);
    for dt in ["bf16", "fp16"] {
        for d in ["d64", "d128"] {
            for st in ["st1", "st3"] {
                assert!(files.iter().any(|f| f.starts_with(&format!("fa2_fwd_ws_{dt}_{d}_{st}_")) && f.ends_with("sm90a.ptx")), "fwd_ws {dt} {d} {st}");
            }
        }
    }
    for (arch, suffix) in [("sm80", ""), ("sm90a", "_wgmma")] {
        for dt in ["bf16", "fp16"] {
            for d in ["d64", "d128"] {
                for st in ["st1", "st3"] {
                    for role in ["fwd", "bwd_dkdv", "bwd_dq"] {
                        let kind = format!("{role}{suffix}");
                        let found = files.iter().any(|f| f.starts_with(&format!("fa2_{kind}_{dt}_{d}_{st}_")) && f.ends_with(&format!("{arch}.ptx")));
                        assert!(found, "{kind} {arch} {dt} {d} {st}");
                    }
                }
                assert!(files.iter().any(|f| f.starts_with(&format!("fa2_bwd_pre_{dt}_{d}_")) && f.ends_with(&format!("{arch}.ptx"))));
            }
        }
    }
}

#[test]
fn emit_features_name_the_kernel_and_reach_its_code() {
    let dir = tmp("features");
    let ok = flashgen().args(["emit", "--ir", "--kernel", "fwd_ws", "--head-dim", "128", "--stage", "3", "--features", "window,softcap", "--out-dir"]).arg(&dir).status().unwrap();
    assert!(ok.success());
    let ll = std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()).find(|e| e.path().extension().is_some_and(|x| x == "ll")).unwrap();
    let name = ll.file_name().to_string_lossy().to_string();
    assert!(name.ends_with("_emptyrows_window_softcap.ll"), "{name}: a window guards rows without keys, and both are in the name");
    let text = std::fs::read_to_string(ll.path()).unwrap();
    assert!(text.contains("%WINDOW_LEFT") && text.contains("%kv_first") && text.contains("tanh.approx.f32") && text.contains("%SOFTCAP"));
    // a kernel that does not take them, and an unknown feature: the rule, non-zero
    for (args, phrase) in [
        (vec!["--kernel", "fwd_wgmma", "--features", "window"], "a sliding window is built into fwd_ws"),
        (vec!["--kernel", "fwd_ws", "--num-stages", "2", "--features", "softcap"], "NUM_STAGES=2"),
        (vec!["--features", "alibi"], "feature `alibi` is unknown"),
    ] {
        let out = flashgen().arg("emit").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(phrase), "{args:?}: `{err}` should contain `{phrase}`");
    }
}

#[test]
fn bad_flags_name_the_rule_and_exit_nonzero() {
    for (args, phrase) in [
        (vec!["--block-m", "96", "--num-warps", "4"], "BLOCK_M=96 must be a multiple of 16 × num_warps=4"),
        (vec!["--head-dim", "80"], "HEAD_DIM=80 is not supported"),
        (vec!["--arch", "sm_75"], "arch `sm_75` is unknown"),
        (vec!["--dtype", "fp8"], "dtype `fp8` is unknown"),
        (vec!["--block-n", "128", "--num-stages", "4"], "exceeds the 232448 B limit of sm_90a"),
        (vec!["--block-m", "-1"], "unexpected argument"),
    ] {
        let out = flashgen().arg("emit").args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(err.contains(phrase), "{args:?}: `{err}` should contain `{phrase}`");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
    // check's schedule flags are read with the arguments: a typo fails before any kernel is generated
    for (flag, phrase) in [("--backward-schedule", "schedule switch `ds_hand` is unknown"), ("--decode-schedule", "schedule switch `ds_hand` is unknown")] {
        let out = flashgen().args(["check", "--cpu-only", flag, "ds_hand=on"]).output().unwrap();
        let (err, stdout) = (String::from_utf8_lossy(&out.stderr), String::from_utf8_lossy(&out.stdout));
        assert!(!out.status.success() && err.contains(phrase) && err.contains(flag), "{flag}: `{err}` should contain `{phrase}`");
        assert!(!stdout.contains("generated"), "{flag}: kernels were generated before the flag was read: {stdout}");
    }
}
