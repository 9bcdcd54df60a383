//! One test per validation rule: the rule rejects what it should, names itself, and says how to fix it.

use flashgen::{Arch, DType, KernelKind, KernelSpec, SpecParams};

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
    for d in [0, 32, 96, 100, 256] {
        rejects(SpecParams { head_dim: d, ..base() }, &[&format!("HEAD_DIM={d}"), "[64, 128]"]);
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
    assert!(KernelKind::parse("bwd").unwrap_err().to_string().contains("use fwd"));
    assert_eq!(Arch::parse("SM90A").unwrap(), Arch::Sm90a);
    assert_eq!(DType::parse("float16").unwrap(), DType::F16);
}

#[test]
fn default_set_is_complete_and_names_are_unique() {
    let set = KernelSpec::default_set();
    assert_eq!(set.len(), 16, "2 archs × 2 dtypes × 2 head dims × 2 stages");
    let mut names: Vec<String> = set.iter().map(|s| s.name()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 16);
    for arch in Arch::ALL {
        for d in [64, 128] {
            for causal in [false, true] {
                let s = KernelSpec::default_for(arch, DType::F16, d, causal).unwrap();
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
    assert_eq!(s.grid(2, 16, 1000), (8, 32, 1));
    assert_eq!(s.threads(), 256);
}

#[test]
fn ptx_version_is_the_lowest_each_target_needs() {
    assert_eq!(Arch::Sm80.ptx_version(), (7, 0));
    assert_eq!(Arch::Sm86.ptx_version(), (7, 1));
    assert_eq!(Arch::Sm89.ptx_version(), (7, 8));
    assert_eq!(Arch::Sm90.ptx_version(), (7, 8));
    assert_eq!(Arch::Sm90a.ptx_version(), (8, 0));
}
