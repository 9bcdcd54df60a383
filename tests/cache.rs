//! The kernel cache on the CPU: keys, memory and disk hits, atomic and verified entries, corrupt entries
//! rebuilt, an unwritable directory, concurrent callers, prebuilt kernels. (The driver turns the cached PTX
//! into machine code when a kernel is loaded: that half runs in the GPU tests.)

use flashgen::{compile, Arch, CompileOptions, DType, KernelSpec};
use flashgen_runtime::cache::{KernelCache, KernelSource};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

fn spec(causal: bool) -> KernelSpec {
    flashgen_tests::plan_at(Arch::Sm90a, DType::Bf16, 64, causal, 1024).forward
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("flashgen-cache-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn count(c: &KernelCache) -> (usize, usize, usize, usize) {
    let s = &c.stats;
    let g = |a: &std::sync::atomic::AtomicUsize| a.load(Ordering::Relaxed);
    (g(&s.memory_hits), g(&s.disk_hits), g(&s.llvm_compiles), g(&s.corrupt_rebuilt))
}

#[test]
fn keys_separate_specs_and_devices_and_are_stable() {
    let a = KernelCache::new(None, KernelSource::Jit);
    let b = KernelCache::new(None, KernelSource::Jit);
    let k = a.key(&spec(false), (9, 0)).unwrap();
    assert_eq!(k, b.key(&spec(false), (9, 0)).unwrap(), "same inputs, same key, in any instance");
    assert_ne!(k, a.key(&spec(true), (9, 0)).unwrap());
    assert_ne!(k, a.key(&spec(false), (8, 0)).unwrap());
    assert_eq!(k.len(), 32);
}

/// The JIT key's source hash covers the Rust that shapes a kernel besides its templates (the spec's rules,
/// the render context, the LLVM pipeline, the metadata), each file as it is in this checkout: a rule that
/// moves without a template changing still makes a new key, so a disk cache never serves the old kernel.
#[test]
fn the_source_hash_covers_the_generator_not_only_the_templates() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let names: Vec<&str> = flashgen::render::GENERATOR_SOURCES.iter().map(|(n, _)| *n).collect();
    for needed in ["compiler/src/render.rs", "compiler/src/codegen.rs", "compiler/src/mods/ir.rs", "compiler/src/mods/blocks.rs"] {
        assert!(names.contains(&needed), "{needed} is not hashed into the cache key");
    }
    // every part of the spec module but the defaults tables (they only choose specs, which the key holds)
    for entry in std::fs::read_dir(root.join("compiler/src/spec")).unwrap() {
        let file = format!("compiler/src/spec/{}", entry.unwrap().file_name().to_string_lossy());
        assert!(names.contains(&file.as_str()) || file.ends_with("/defaults.rs"), "{file} is not hashed into the cache key");
    }
    for (name, text) in flashgen::render::GENERATOR_SOURCES {
        assert_eq!(std::fs::read_to_string(root.join(name)).unwrap(), *text, "{name}: the hashed text is not the file");
    }
    // and the hash is over the templates and then them, each name and text closed by a zero byte
    use sha2::{Digest, Sha256};
    let digest = |files: &mut dyn Iterator<Item = &(&str, &str)>| {
        let mut h = Sha256::new();
        for (name, text) in files {
            h.update(name.as_bytes());
            h.update([0]);
            h.update(text.as_bytes());
            h.update([0]);
        }
        format!("{:x}", h.finalize())
    };
    let (templates, generator) = (flashgen::render::TEMPLATES, flashgen::render::GENERATOR_SOURCES);
    assert_eq!(digest(&mut templates.iter().chain(generator)), flashgen::render::generator_hash());
    assert_ne!(digest(&mut templates.iter()), flashgen::render::generator_hash());
}

#[test]
fn memory_then_disk_then_second_process() {
    let dir = tmp("hits");
    let c = KernelCache::new(Some(dir.clone()), KernelSource::Jit);
    let e1 = c.get(&spec(false), (9, 0)).unwrap();
    let e2 = c.get(&spec(false), (9, 0)).unwrap();
    assert_eq!(e1.ptx, e2.ptx);
    assert_eq!(count(&c), (1, 0, 1, 0));
    // Triton's layout: a folder per key with <name>.ptx and .json
    let entry = dir.join(&e1.key);
    let name = spec(false).name();
    for ext in ["ptx", "json"] {
        assert!(entry.join(format!("{name}.{ext}")).is_file(), "{ext} missing");
    }
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(entry.join(format!("{name}.json"))).unwrap()).unwrap();
    assert_eq!(json["name"], name.as_str());
    assert_eq!(json["num_warps"], spec(false).num_warps());
    assert!(json["shared"].as_u64().unwrap() > 0 && json["ptx_sha256"].is_string() && json["key"] == e1.key.as_str());
    // a "second process": nothing compiled
    let c2 = KernelCache::new(Some(dir.clone()), KernelSource::Jit);
    let e3 = c2.get(&spec(false), (9, 0)).unwrap();
    assert_eq!(e3.ptx, e1.ptx);
    assert_eq!(count(&c2), (0, 1, 0, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corrupt_entries_are_reported_rebuilt_and_never_loaded() {
    let dir = tmp("corrupt");
    let name = spec(true).name();
    let key = KernelCache::new(Some(dir.clone()), KernelSource::Jit).get(&spec(true), (9, 0)).unwrap().key.clone();
    let entry = dir.join(&key);
    type Corruption<'a> = (&'static str, Box<dyn Fn() + 'a>);
    let corruptions: Vec<Corruption> = vec![
        ("truncated PTX", Box::new(|| {
            let p = entry.join(format!("{name}.ptx"));
            let t = std::fs::read_to_string(&p).unwrap();
            std::fs::write(&p, &t[..t.len() / 2]).unwrap();
        })),
        ("edited PTX", Box::new(|| std::fs::write(entry.join(format!("{name}.ptx")), b"garbage").unwrap())),
        ("JSON that does not parse", Box::new(|| std::fs::write(entry.join(format!("{name}.json")), "{\"name\": ").unwrap())),
        ("missing PTX", Box::new(|| std::fs::remove_file(entry.join(format!("{name}.ptx"))).unwrap())),
    ];
    for (what, corrupt) in corruptions {
        corrupt();
        let c = KernelCache::new(Some(dir.clone()), KernelSource::Jit);
        let e = c.get(&spec(true), (9, 0)).unwrap();
        assert_eq!(e.ptx, compile(&spec(true), CompileOptions::default()).unwrap().ptx, "{what}: rebuilt entry is whole");
        assert_eq!(count(&c), (0, 0, 1, 1), "{what}: reported and rebuilt once");
        assert!(c.warnings().iter().any(|w| w.contains("is invalid") && w.contains("rebuilding")), "{what}: {:?}", c.warnings());
        // and rewritten: the next process hits it
        let c2 = KernelCache::new(Some(dir.clone()), KernelSource::Jit);
        c2.get(&spec(true), (9, 0)).unwrap();
        assert_eq!(count(&c2), (0, 1, 0, 0), "{what}: rewritten");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unwritable_directory_falls_back_to_memory_with_one_warning() {
    let file = tmp("not-a-dir");
    std::fs::write(&file, "a file where the cache directory should be").unwrap();
    let c = KernelCache::new(Some(file.join("cache")), KernelSource::Jit);
    c.get(&spec(false), (9, 0)).unwrap();
    c.get(&spec(true), (9, 0)).unwrap();
    c.get(&spec(true), (9, 0)).unwrap();
    let w = c.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("not writable") && w[0].contains("memory only"));
    assert_eq!(count(&c).0, 1, "the memory cache still serves");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn concurrent_callers_compile_once() {
    let dir = tmp("concurrent");
    let c = KernelCache::new(Some(dir.clone()), KernelSource::Jit);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| c.get(&spec(false), (9, 0)).unwrap());
        }
    });
    let (mem, disk, llvm, _) = count(&c);
    assert_eq!((llvm, disk, mem), (1, 0, 3));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn prebuilt_kernels_need_no_compiler() {
    let a = compile(&spec(false), CompileOptions::default()).unwrap();
    let json = a.metadata.to_json();
    let c = KernelCache::new(None, KernelSource::embedded(&[(json.as_str(), a.ptx.as_str())]).unwrap());
    let e = c.get(&spec(false), (9, 0)).unwrap();
    assert_eq!(e.ptx, a.ptx);
    assert_eq!(count(&c).2, 0, "no LLVM compile for a prebuilt kernel");
    let err = c.get(&spec(true), (9, 0)).unwrap_err().to_string();
    assert!(err.contains("not among the 1 prebuilt kernels") && err.contains("jit"), "{err}");
    // and from a directory of `flashgen emit` output
    let dir = tmp("prebuilt-dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{}.ptx", a.entry)), &a.ptx).unwrap();
    std::fs::write(dir.join(format!("{}.json", a.entry)), &json).unwrap();
    let c = KernelCache::new(None, KernelSource::from_dir(&dir).unwrap());
    assert_eq!(c.get(&spec(false), (9, 0)).unwrap().ptx, a.ptx);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn metadata_with_an_invalid_spec_is_rejected() {
    let a = compile(&spec(false), CompileOptions::default()).unwrap();
    let bad = a.metadata.to_json().replace(&format!("\"block_m\": {}", spec(false).block_m()), "\"block_m\": 96");
    let err = KernelSource::embedded(&[(bad.as_str(), a.ptx.as_str())]).err().expect("invalid spec must be rejected").to_string();
    assert!(err.contains("BLOCK_M=96"), "{err}");
}

#[test]
fn a_repeated_warning_is_kept_once() {
    let c = KernelCache::new(None, KernelSource::default_source());
    let before = c.warnings().len();
    for _ in 0..3 {
        c.warn("fa2_fwd_ws_bf16_d128_st1_bm128_bn128_w12_ns2_sm90a: the driver cannot describe it; running fwd_wgmma instead".into());
    }
    c.warn("another".into());
    assert_eq!(c.warnings().len(), before + 2);
}
