//! The build-time path: build.rs generated the default set, and the binary carries it.

use flashgen_prebuilt_example::FLASHGEN_KERNELS;

#[test]
fn build_rs_embedded_the_default_set() {
    assert_eq!(FLASHGEN_KERNELS.len(), flashgen::plan::default_set().len());
    for (json, ptx) in FLASHGEN_KERNELS {
        let meta = flashgen::Metadata::from_json(json).unwrap();
        assert!(ptx.contains(&format!(".entry {}(", meta.name)), "{} PTX lacks its entry", meta.name);
    }
    flashgen_runtime::KernelSource::embedded(FLASHGEN_KERNELS).unwrap();
}

#[test]
fn the_binary_contains_the_ptx() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_flashgen-prebuilt-example")).unwrap();
    use flashgen::{Arch, DType, PlanOptions, Problem};
    // the H200's default causal forward (a wgmma kernel) and the A100's
    for arch in [Arch::Sm90a, Arch::Sm80] {
        let problem = Problem::new(DType::Bf16, 128, true, 16384);
        let name = flashgen::plan(arch, &problem, &PlanOptions::default(), &flashgen::plan::NoTuning).unwrap().forward.name();
        let needle = format!(".entry {name}(");
        assert!(bin.windows(needle.len()).any(|w| w == needle.as_bytes()), "the PTX of {name} is not embedded in the binary");
    }
}
