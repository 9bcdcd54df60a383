//! The kernel ABI is written once (flashgen::abi): the templates' `define` lines, the parameter indices
//! they address, the runtime's argument order and docs/ABI.md's tables all come from the same lists. These
//! tests fail when one of them drifts.

use flashgen::abi::{self, Entry, ParamType};
use flashgen::{Arch, DType, KernelKind, KernelSpec, SpecParams};
use flashgen_runtime::kernel::{argument_order, remembered_order, ValueKind};

/// One spec of every kind: the default set, and the opt-in kinds it lacks.
fn one_of_each_kind() -> Vec<KernelSpec> {
    let mut specs = flashgen::plan::default_set();
    specs.extend(flashgen::plan::decode_default_set());
    let p = |kind, d, bm, bn, stage, w, ns| SpecParams { kind, dtype: DType::Bf16, head_dim: d, block_m: bm, block_n: bn, stage, num_warps: w, num_stages: ns, arch: Arch::Sm90a };
    for extra in [p(KernelKind::BwdFusedAtomic, 64, 64, 64, 1, 8, 2), p(KernelKind::BwdFusedUp, 128, 64, 128, 3, 12, 2), p(KernelKind::Fwd, 64, 128, 64, 1, 4, 3)] {
        specs.push(KernelSpec::new(extra).unwrap());
    }
    // the decode kernel that reads its tensor maps (Schedule::tma_kv)
    let tma = flashgen::spec::ScheduleOverrides { tma_kv: Some(true), ..flashgen::spec::ScheduleOverrides::NONE };
    specs.push(KernelSpec::with_schedule(p(KernelKind::Decode, 128, 16, 64, 1, 4, 3), tma).unwrap());
    for kind in KernelKind::ALL {
        assert!(specs.iter().any(|s| s.kind() == kind), "no spec of {}", kind.name());
    }
    specs
}

/// docs/ABI.md holds `abi::markdown()` between its markers. FLASHGEN_WRITE_ABI_DOC=1 rewrites the block.
#[test]
fn the_doc_tables_are_the_lists() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ABI.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = (doc.find(abi::MARKDOWN_BEGIN), doc.find(abi::MARKDOWN_END));
    let (Some(begin), Some(end)) = (begin, end) else { panic!("docs/ABI.md lacks the markers {} ... {}", abi::MARKDOWN_BEGIN, abi::MARKDOWN_END) };
    let block = &doc[begin..end + abi::MARKDOWN_END.len()];
    let fresh = abi::markdown();
    if block != fresh && std::env::var("FLASHGEN_WRITE_ABI_DOC").is_ok_and(|v| v == "1") {
        std::fs::write(&path, doc.replace(block, &fresh)).unwrap();
        return;
    }
    assert!(block == fresh, "docs/ABI.md's parameter tables differ from flashgen::abi: run `FLASHGEN_WRITE_ABI_DOC=1 cargo test --release --test abi` and review the diff");
}

/// Every kernel's `define` line is its list's signature, and the dQ sum pass's too; the parameter
/// indices the templates address (the TMA descriptors, read as `<entry>_param_<index>`) are the lists'.
#[test]
fn the_templates_declare_the_lists() {
    for spec in one_of_each_kind() {
        let ir = flashgen::render::render(&spec).unwrap();
        let params = abi::kernel_parameters(spec.kind());
        let define = format!("define void @{}({}) {{", spec.name(), abi::signature(params));
        assert!(ir.contains(&define), "{}: the define line is not flashgen::abi's list", spec.name());
        if let Some(sum) = spec.dq_sum_entry() {
            let define = format!("define void @{sum}({}) {{", abi::signature(abi::parameters(Entry::DqSum)));
            assert!(ir.contains(&define), "{sum}: the define line is not flashgen::abi's list");
        }
        for (i, p) in params.iter().enumerate() {
            // (the decode kernel reads its maps only with its TMA boxes)
            if matches!(p.ty, ParamType::TensorMap { .. }) && (spec.kind() != KernelKind::Decode || spec.decode_tma_kv()) {
                assert!(ir.contains(&format!("{}_param_{i};", spec.name())), "{}: `{}` (#{i}) is not read at its index", spec.name(), p.name);
            }
        }
        // no template addresses a parameter by an index the list does not give
        for (at, _) in ir.match_indices("_param_") {
            let digits: String = ir[at + 7..].chars().take_while(|c| c.is_ascii_digit()).collect();
            let i: usize = digits.parse().unwrap();
            assert!(matches!(params.get(i).map(|p| p.ty), Some(ParamType::TensorMap { .. })), "{}: parameter #{i} read in parameter space", spec.name());
        }
    }
}

/// The values of a list, as a launch that names each parameter would supply them.
fn supply(params: &[abi::Param]) -> Vec<(&'static str, ValueKind)> {
    let mut out: Vec<(&'static str, ValueKind)> = Vec::new();
    for p in params {
        let v = match p.ty {
            ParamType::Stride { .. } => continue,
            ParamType::Pointer { elem: abi::Elem::DType, .. } => ValueKind::Tensor,
            ParamType::Pointer { elem: abi::Elem::F32, .. } => ValueKind::F32s,
            ParamType::Pointer { elem: abi::Elem::U32, .. } => ValueKind::U32s,
            ParamType::Pointer { elem: abi::Elem::I32, .. } => ValueKind::I32s,
            ParamType::Pointer { elem: abi::Elem::Word, .. } => ValueKind::Words,
            ParamType::F32 => ValueKind::F32,
            ParamType::I32 => ValueKind::I32,
            ParamType::TensorMap { .. } => ValueKind::Map,
        };
        out.push((p.name, v));
    }
    // in any order: the builder orders them
    out.reverse();
    out
}

/// The runtime's builder pushes named values in the list's order, strides from their tensors; it refuses a
/// missing, surplus, doubled or mistyped value, naming the parameter.
#[test]
fn the_runtime_pushes_in_the_lists_order() {
    for kind in KernelKind::ALL {
        let params = abi::kernel_parameters(kind);
        let supplied = supply(params);
        let picks = argument_order(kind.name(), params, &supplied).unwrap();
        assert_eq!(picks.len(), params.len());
        for (p, pick) in params.iter().zip(&picks) {
            let (name, _) = supplied[pick.value];
            match p.ty {
                ParamType::Stride { tensor, axis } => assert_eq!((name, pick.stride), (tensor, Some(axis))),
                _ => assert_eq!((name, pick.stride), (p.name, None)),
            }
        }
    }
    let params = abi::kernel_parameters(KernelKind::FwdWsPersistent);
    let all = supply(params);
    let without: Vec<_> = all.iter().copied().filter(|(n, _)| *n != "tmap_k").collect();
    let e = argument_order("fwd_ws_persistent", params, &without).unwrap_err().to_string();
    let index = abi::index_of(params, "tmap_k").unwrap();
    assert!(e.contains(&format!("#{index} `tmap_k`")) && e.contains("has no value"), "{e}");
    let mistyped: Vec<_> = all.iter().map(|&(n, v)| if n == "M" { (n, ValueKind::Tensor) } else { (n, v) }).collect();
    let e = argument_order("fwd_ws_persistent", params, &mistyped).unwrap_err().to_string();
    assert!(e.contains("`M` takes an f32 buffer"), "{e}");
    let e = argument_order("fwd", abi::kernel_parameters(KernelKind::Fwd), &all).unwrap_err().to_string();
    assert!(e.contains("is not a parameter of this kernel"), "{e}");
    let mut twice = all.clone();
    twice.push(("Q", ValueKind::Tensor));
    let e = argument_order("fwd_ws_persistent", params, &twice).unwrap_err().to_string();
    assert!(e.contains("`Q` is given twice"), "{e}");
}

/// A launch's order comes from the thread's remembered orders when the same list met the same values: the
/// same picks as the search, a reordered list of values its own picks, and a refused list refused every
/// time (a remembered success for other values does not let it through).
#[test]
fn remembered_orders_are_the_searched_ones() {
    let params = abi::kernel_parameters(KernelKind::FwdWsPersistent);
    let all = supply(params);
    let searched = argument_order("fwd_ws_persistent", params, &all).unwrap();
    for _ in 0..3 {
        assert_eq!(remembered_order("fwd_ws_persistent", params, all.clone()).unwrap(), searched);
    }
    let reversed: Vec<_> = all.iter().rev().copied().collect();
    let picks = remembered_order("fwd_ws_persistent", params, reversed.clone()).unwrap();
    assert_eq!(picks, argument_order("fwd_ws_persistent", params, &reversed).unwrap());
    assert_ne!(picks, searched);
    let mistyped: Vec<_> = all.iter().map(|&(n, v)| if n == "M" { (n, ValueKind::Tensor) } else { (n, v) }).collect();
    for _ in 0..2 {
        let e = remembered_order("fwd_ws_persistent", params, mistyped.clone()).unwrap_err().to_string();
        assert!(e.contains("`M` takes an f32 buffer"), "{e}");
    }
    // the same values against another kernel's list: refused there, though remembered for this one
    let e = remembered_order("fwd", abi::kernel_parameters(KernelKind::Fwd), all.clone()).unwrap_err().to_string();
    assert!(e.contains("is not a parameter of this kernel"), "{e}");
}
