//! The build-time path: build.rs generated the default set, and the binary carries it.

use flashgen_prebuilt_example::FLASHGEN_KERNELS;

#[test]
fn build_rs_embedded_the_default_set() {
    assert_eq!(FLASHGEN_KERNELS.len(), flashgen::KernelSpec::default_set().len());
    for (json, ptx) in FLASHGEN_KERNELS {
        let meta = flashgen::Metadata::from_json(json).unwrap();
        assert!(ptx.contains(&format!(".entry {}(", meta.name)), "{} PTX lacks its entry", meta.name);
    }
    flashgen_runtime::KernelSource::embedded(FLASHGEN_KERNELS).unwrap();
}

#[test]
fn the_binary_contains_the_ptx() {
    let bin = std::fs::read(env!("CARGO_BIN_EXE_flashgen-prebuilt-example")).unwrap();
    let needle = b".entry fa2_fwd_bf16_d128_st3_bm128_bn32_w4_ns3_sm90a(";
    assert!(bin.windows(needle.len()).any(|w| w == needle), "the PTX is not embedded in the binary");
}
