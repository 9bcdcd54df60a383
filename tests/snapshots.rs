//! Snapshots of the emitted PTX for canonical specs, and of the rule errors. Any change to the generated
//! code shows up as a diff to review (`cargo insta review`); in CI an unreviewed change fails.

use flashgen::{compile, Arch, CompileOptions, DType, KernelKind, KernelSpec, SpecParams};

#[allow(clippy::too_many_arguments)]
fn spec(dtype: DType, d: u32, bm: u32, bn: u32, stage: u32, w: u32, ns: u32, arch: Arch) -> KernelSpec {
    kernel(KernelKind::Fwd, dtype, d, bm, bn, stage, w, ns, arch)
}

#[allow(clippy::too_many_arguments)]
fn kernel(kind: KernelKind, dtype: DType, d: u32, bm: u32, bn: u32, stage: u32, w: u32, ns: u32, arch: Arch) -> KernelSpec {
    KernelSpec::new(SpecParams { kind, dtype, head_dim: d, block_m: bm, block_n: bn, stage, num_warps: w, num_stages: ns, arch }).unwrap()
}

fn check_ptx(s: KernelSpec) {
    let a = compile(&s, CompileOptions::default()).unwrap();
    // The snapshot name encodes the parameters: fa2_fwd@stage3_bm128_bn64_d64 style.
    let name = format!(
        "fa2_{}@{}_d{}_stage{}_bm{}_bn{}_w{}_ns{}_{}",
        s.kind().name(),
        s.dtype().name(),
        s.head_dim(),
        s.stage() as u32,
        s.block_m(),
        s.block_n(),
        s.num_warps(),
        s.num_stages(),
        s.arch().name()
    );
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!(name, a.ptx);
    });
}

#[test]
fn ptx_bf16_d64_noncausal_sm90a() {
    check_ptx(spec(DType::Bf16, 64, 128, 64, 1, 4, 3, Arch::Sm90a));
}

#[test]
fn ptx_bf16_d128_causal_sm90a() {
    check_ptx(spec(DType::Bf16, 128, 128, 64, 3, 8, 3, Arch::Sm90a));
}

#[test]
fn ptx_fp16_d128_noncausal_sm80() {
    check_ptx(spec(DType::F16, 128, 128, 64, 1, 8, 3, Arch::Sm80));
}

#[test]
fn ptx_bf16_d64_causal_block_n_over_block_m_sm86() {
    check_ptx(spec(DType::Bf16, 64, 64, 128, 3, 4, 2, Arch::Sm86));
}

#[test]
fn ptx_backward_bf16_d64_causal_sm90a() {
    check_ptx(kernel(KernelKind::BwdDkdv, DType::Bf16, 64, 32, 128, 3, 8, 3, Arch::Sm90a));
    check_ptx(kernel(KernelKind::BwdDq, DType::Bf16, 64, 128, 64, 3, 8, 3, Arch::Sm90a));
    check_ptx(KernelSpec::backward_preprocess(Arch::Sm90a, DType::Bf16, 64));
}

#[test]
fn ptx_backward_fp16_d128_noncausal_sm80() {
    check_ptx(kernel(KernelKind::BwdDkdv, DType::F16, 128, 32, 128, 1, 8, 2, Arch::Sm80));
    check_ptx(kernel(KernelKind::BwdDq, DType::F16, 128, 128, 32, 1, 8, 2, Arch::Sm80));
    check_ptx(KernelSpec::backward_preprocess(Arch::Sm80, DType::F16, 128));
}

#[test]
fn ptx_wgmma_bf16_d128_causal_sm90a() {
    check_ptx(kernel(KernelKind::FwdWgmma, DType::Bf16, 128, 128, 64, 3, 8, 3, Arch::Sm90a));
    check_ptx(kernel(KernelKind::BwdDkdvWgmma, DType::Bf16, 128, 32, 128, 3, 8, 3, Arch::Sm90a));
    check_ptx(kernel(KernelKind::BwdDqWgmma, DType::Bf16, 128, 128, 32, 3, 8, 3, Arch::Sm90a));
}

#[test]
fn rule_errors() {
    let base = SpecParams { kind: KernelKind::Fwd, dtype: DType::Bf16, head_dim: 128, block_m: 128, block_n: 64, stage: 3, num_warps: 8, num_stages: 2, arch: Arch::Sm90a };
    let cases = [
        SpecParams { head_dim: 80, ..base },
        SpecParams { stage: 2, ..base },
        SpecParams { num_warps: 3, ..base },
        SpecParams { block_m: 96, num_warps: 4, ..base },
        SpecParams { head_dim: 64, block_m: 256, num_warps: 4, ..base },
        SpecParams { block_n: 24, ..base },
        SpecParams { head_dim: 64, block_n: 16, ..base },
        SpecParams { num_stages: 1, ..base },
        SpecParams { block_n: 128, num_stages: 4, ..base },
        SpecParams { num_warps: 4, ..base },
        // the backward kernels: dK/dV owns BLOCK_N key rows and streams BLOCK_M; the preprocess has fixed tiles
        SpecParams { kind: KernelKind::BwdDkdv, block_m: 64, block_n: 96, num_warps: 4, ..base },
        SpecParams { kind: KernelKind::BwdDkdv, block_m: 64, block_n: 128, ..base },
        SpecParams { kind: KernelKind::BwdDq, head_dim: 128, block_m: 128, block_n: 64, ..base },
        SpecParams { kind: KernelKind::BwdPre, ..base },
    ];
    let text: Vec<String> = cases.iter().map(|p| KernelSpec::new(*p).unwrap_err().to_string()).collect();
    insta::with_settings!({snapshot_path => "../snapshots", prepend_module_to_snapshot => false, omit_expression => true}, {
        insta::assert_snapshot!("spec_rule_errors", text.join("\n"));
    });
}

/// The fused backward (dQ inside dK/dV): two warpgroups at HEAD_DIM 128, causal, in both orders.
#[test]
fn ptx_fused_backward_bf16_d128_causal_sm90a() {
    check_ptx(kernel(KernelKind::BwdFused, DType::Bf16, 128, 64, 128, 3, 12, 2, Arch::Sm90a));
    check_ptx(kernel(KernelKind::BwdFusedUp, DType::Bf16, 128, 64, 128, 3, 12, 2, Arch::Sm90a));
    check_ptx(kernel(KernelKind::BwdFusedAtomic, DType::Bf16, 64, 64, 64, 1, 8, 2, Arch::Sm90a));
}

/// The warp-specialized forward (fwd_ws): the default (2 stages, consumers independent), the ping-pong
/// variant (3 stages) and the persistent kind.
#[test]
fn ptx_warp_specialized_bf16_d128_sm90a() {
    check_ptx(kernel(KernelKind::FwdWs, DType::Bf16, 128, 128, 128, 1, 12, 2, Arch::Sm90a));
    check_ptx(kernel(KernelKind::FwdWs, DType::Bf16, 64, 128, 64, 3, 12, 3, Arch::Sm90a));
    // its persistent form, as the HEAD_DIM 64 defaults run it: to 1024 tokens (causal 2048) 4 consumers
    // non-causal, 2 causal (in L2-sized head groups); to 4096, 3 consumers on 192×128 non-causal and 4 on
    // 256×64 causal
    check_ptx(kernel(KernelKind::FwdWsPersistent, DType::Bf16, 64, 256, 64, 1, 20, 6, Arch::Sm90a));
    check_ptx(kernel(KernelKind::FwdWsPersistent, DType::Bf16, 64, 128, 128, 3, 12, 4, Arch::Sm90a));
    check_ptx(kernel(KernelKind::FwdWsPersistent, DType::Bf16, 64, 192, 128, 1, 16, 4, Arch::Sm90a));
    check_ptx(kernel(KernelKind::FwdWsPersistent, DType::Bf16, 64, 256, 64, 3, 20, 4, Arch::Sm90a));
}
