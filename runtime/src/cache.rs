//! The kernel cache: spec -> (PTX, metadata), in memory and on disk.
//!
//! Laid out like Triton's cache: one folder per key holding `<name>.ptx` and `<name>.json` (Triton's field
//! names plus the key and the PTX's SHA-256). The machine code is the driver's: it compiles the PTX as a
//! whole program when the kernel is loaded and keeps its own cache of that (jit.rs says why not a cubin
//! from the linker). The key hashes the spec, the kernel source (template text and the generator code that
//! fills it, `flashgen::render::GENERATOR_SOURCES`; or the prebuilt PTX), the
//! flashgen and LLVM versions and the device's compute capability. Files are written to a temporary name
//! and renamed, the JSON last: an entry is complete or absent. An entry that does not verify (truncated,
//! edited, another version) is reported, rebuilt and rewritten, never loaded. A cache directory that cannot
//! be written leaves the cache in memory, with one warning.

use flashgen::{KernelSpec, Metadata};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Where kernels come from when the cache does not have them.
#[derive(Clone)]
pub enum KernelSource {
    /// Compile in-process through LLVM (feature `jit`).
    #[cfg(feature = "jit")]
    Jit,
    /// Only these prebuilt kernels, by name: (metadata JSON, PTX) pairs, from `flashgen::build::generate`
    /// or a directory of `flashgen emit` output.
    Prebuilt(Arc<HashMap<String, (Metadata, String)>>),
}

impl KernelSource {
    /// The default: JIT when built with it, else nothing (callers add prebuilt kernels).
    pub fn default_source() -> KernelSource {
        #[cfg(feature = "jit")]
        return KernelSource::Jit;
        #[cfg(not(feature = "jit"))]
        return KernelSource::Prebuilt(Arc::new(HashMap::new()));
    }

    /// Prebuilt kernels embedded by `flashgen::build::generate` (FLASHGEN_KERNELS).
    pub fn embedded(pairs: &[(&str, &str)]) -> Result<KernelSource, CacheError> {
        let mut map = HashMap::new();
        for (json, ptx) in pairs {
            let meta = Metadata::from_json(json).map_err(CacheError::Prebuilt)?;
            map.insert(meta.name.clone(), (meta, ptx.to_string()));
        }
        Ok(KernelSource::Prebuilt(Arc::new(map)))
    }

    /// Prebuilt kernels from a directory of `<name>.ptx` + `<name>.json` (`flashgen emit --defaults --out-dir`).
    pub fn from_dir(dir: &Path) -> Result<KernelSource, CacheError> {
        let err = |e: std::io::Error| CacheError::Prebuilt(format!("reading {}: {e}", dir.display()));
        let mut map = HashMap::new();
        for entry in std::fs::read_dir(dir).map_err(err)? {
            let path = entry.map_err(err)?.path();
            if path.extension().is_some_and(|x| x == "json") {
                let ptx_path = path.with_extension("ptx");
                let json = std::fs::read_to_string(&path).map_err(err)?;
                let ptx = std::fs::read_to_string(&ptx_path).map_err(|e| CacheError::Prebuilt(format!("{}: {e}", ptx_path.display())))?;
                let meta = Metadata::from_json(&json).map_err(|e| CacheError::Prebuilt(format!("{}: {e}", path.display())))?;
                map.insert(meta.name.clone(), (meta, ptx));
            }
        }
        Ok(KernelSource::Prebuilt(Arc::new(map)))
    }
}

#[derive(Debug, thiserror::Error, Clone)]
pub enum CacheError {
    #[error("compiling {spec}: {detail}")]
    Compile { spec: String, detail: String },
    #[error("prebuilt kernels: {0}")]
    Prebuilt(String),
    #[error("{spec} is not among the {available} prebuilt kernels: generate it at build time (flashgen::build::generate) or enable the runtime's `jit` feature")]
    NotPrebuilt { spec: String, available: usize },
}

/// One cached kernel.
#[derive(Clone, Debug)]
pub struct Entry {
    pub key: String,
    pub metadata: Metadata,
    pub ptx: String,
}

/// What the cache (and the loader, `ptx_loads`: PTX handed to the driver) did, for logs and tests.
#[derive(Debug, Default)]
pub struct Stats {
    pub memory_hits: AtomicUsize,
    pub disk_hits: AtomicUsize,
    pub llvm_compiles: AtomicUsize,
    pub ptx_loads: AtomicUsize,
    pub corrupt_rebuilt: AtomicUsize,
    pub disk_writes: AtomicUsize,
}

impl Stats {
    pub fn summary(&self) -> String {
        let g = |a: &AtomicUsize| a.load(Ordering::Relaxed);
        format!(
            "memory hits {}, disk hits {}, LLVM compiles {}, PTX loads {}, corrupt entries rebuilt {}, disk writes {}",
            g(&self.memory_hits),
            g(&self.disk_hits),
            g(&self.llvm_compiles),
            g(&self.ptx_loads),
            g(&self.corrupt_rebuilt),
            g(&self.disk_writes)
        )
    }
}

/// The JSON beside the PTX: Triton's metadata fields, plus what verifies the entry.
#[derive(Serialize, Deserialize)]
struct EntryJson {
    #[serde(flatten)]
    metadata: Metadata,
    key: String,
    ptx_sha256: String,
}

type Slot = Arc<OnceLock<Result<Arc<Entry>, CacheError>>>;
/// Metadata, PTX, and (file name, text) dumps of the intermediate IR.
type Built = (Metadata, String, Vec<(String, String)>);

pub struct KernelCache {
    dir: Option<PathBuf>,
    source: KernelSource,
    /// Compile every kernel again instead of reading the disk (FLASHGEN_ALWAYS_COMPILE).
    always_compile: bool,
    /// Write the rendered and optimized IR beside each kernel built (FLASHGEN_DUMP).
    dump_ir: bool,
    memory: Mutex<HashMap<String, Slot>>,
    disk_ok: AtomicBool,
    warnings: Mutex<Vec<String>>,
    pub stats: Stats,
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The default cache directory: $FLASHGEN_CACHE_DIR, else $XDG_CACHE_HOME/flashgen, else ~/.cache/flashgen.
/// FLASHGEN_CACHE_DIR=off keeps the cache in memory.
pub fn default_dir() -> Option<PathBuf> {
    crate::env::Settings::from_env().cache_dir
}

impl KernelCache {
    /// A cache in `dir` (None: memory only) over `source`.
    pub fn new(dir: Option<PathBuf>, source: KernelSource) -> KernelCache {
        KernelCache {
            dir,
            source,
            always_compile: false,
            dump_ir: false,
            memory: Mutex::new(HashMap::new()),
            disk_ok: AtomicBool::new(true),
            warnings: Mutex::new(Vec::new()),
            stats: Stats::default(),
        }
    }

    /// The directory, source and options the environment gives (crate::env).
    pub fn from_env() -> KernelCache {
        let settings = crate::env::Settings::from_env();
        KernelCache { always_compile: settings.always_compile, dump_ir: settings.dump_ir, ..KernelCache::new(settings.cache_dir, KernelSource::default_source()) }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Warnings so far (corrupt entries rebuilt, an unwritable directory); each is also printed once to stderr.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Print a warning and keep it for `warnings()`, once: a call repeated in a loop repeats no warning.
    pub fn warn(&self, msg: String) {
        if let Ok(mut w) = self.warnings.lock() {
            if !w.contains(&msg) {
                eprintln!("flashgen: warning: {msg}");
                w.push(msg);
            }
        }
    }

    /// The cache key: hash of the spec, the kernel's source (templates or prebuilt PTX), the flashgen and LLVM
    /// versions, and the device's compute capability.
    pub fn key(&self, spec: &KernelSpec, capability: (u32, u32)) -> Result<String, CacheError> {
        let (source, llvm) = match &self.source {
            #[cfg(feature = "jit")]
            KernelSource::Jit => (flashgen::render::generator_hash(), flashgen::llvm_version()),
            KernelSource::Prebuilt(map) => {
                let (meta, ptx) = map.get(&spec.name()).ok_or(CacheError::NotPrebuilt { spec: spec.name(), available: map.len() })?;
                (sha256_hex(ptx.as_bytes()), meta.llvm_version.clone())
            }
        };
        let params = serde_json::to_string(spec).unwrap_or_default();
        let text = format!("{params}\n{source}\nflashgen {}\nllvm {llvm}\ncc {}.{}", env!("CARGO_PKG_VERSION"), capability.0, capability.1);
        Ok(sha256_hex(text.as_bytes())[..32].to_string())
    }

    /// The entry for `spec` on a device of `capability`, built at most once per process: concurrent callers
    /// of one key wait for the first.
    pub fn get(&self, spec: &KernelSpec, capability: (u32, u32)) -> Result<Arc<Entry>, CacheError> {
        let key = self.key(spec, capability)?;
        let slot: Slot = {
            let mut mem = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            mem.entry(key.clone()).or_default().clone()
        };
        let mut fresh = false;
        let result = slot.get_or_init(|| {
            fresh = true;
            self.load_or_build(spec, &key).map(Arc::new)
        });
        if !fresh {
            self.stats.memory_hits.fetch_add(1, Ordering::Relaxed);
        }
        result.clone()
    }

    fn entry_dir(&self, key: &str) -> Option<PathBuf> {
        self.dir.as_ref().filter(|_| self.disk_ok.load(Ordering::Relaxed)).map(|d| d.join(key))
    }

    fn load_or_build(&self, spec: &KernelSpec, key: &str) -> Result<Entry, CacheError> {
        let name = spec.name();
        if let Some(dir) = self.entry_dir(key).filter(|_| !self.always_compile) {
            match read_entry(&dir, &name, key) {
                Ok(Some(entry)) => {
                    self.stats.disk_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(entry);
                }
                Ok(None) => {}
                Err(why) => {
                    self.stats.corrupt_rebuilt.fetch_add(1, Ordering::Relaxed);
                    self.warn(format!("cache entry {} is invalid ({why}): rebuilding it", dir.display()));
                }
            }
        }
        let (metadata, ptx, dumps) = self.build_ptx(spec)?;
        let entry = Entry { key: key.to_string(), metadata, ptx };
        if let Some(dir) = self.entry_dir(key) {
            match write_entry(&dir, &entry, &dumps) {
                Ok(()) => {
                    self.stats.disk_writes.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    self.disk_ok.store(false, Ordering::Relaxed);
                    self.warn(format!("cache directory {} is not writable ({e}): keeping kernels in memory only", dir.display()));
                }
            }
        }
        Ok(entry)
    }

    /// PTX and metadata from the source, plus the IR texts to dump when FLASHGEN_DUMP is set.
    fn build_ptx(&self, spec: &KernelSpec) -> Result<Built, CacheError> {
        match &self.source {
            #[cfg(feature = "jit")]
            KernelSource::Jit => {
                let dump = self.dump_ir;
                let a = flashgen::compile(spec, flashgen::CompileOptions { keep_optimized_ir: dump })
                    .map_err(|e| CacheError::Compile { spec: spec.name(), detail: e.to_string() })?;
                self.stats.llvm_compiles.fetch_add(1, Ordering::Relaxed);
                let mut dumps = Vec::new();
                if dump {
                    dumps.push((format!("{}.ll", spec.name()), a.ir.clone()));
                    if let Some(opt) = &a.optimized_ir {
                        dumps.push((format!("{}.opt.ll", spec.name()), opt.clone()));
                    }
                }
                Ok((a.metadata, a.ptx, dumps))
            }
            KernelSource::Prebuilt(map) => {
                let (meta, ptx) = map.get(&spec.name()).ok_or(CacheError::NotPrebuilt { spec: spec.name(), available: map.len() })?;
                Ok((meta.clone(), ptx.clone(), Vec::new()))
            }
        }
    }
}

/// Ok(None): no entry. Err: an entry that does not verify.
fn read_entry(dir: &Path, name: &str, key: &str) -> Result<Option<Entry>, String> {
    let json_path = dir.join(format!("{name}.json"));
    let json = match std::fs::read_to_string(&json_path) {
        Ok(j) => j,
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", json_path.display())),
    };
    let meta: EntryJson = serde_json::from_str(&json).map_err(|e| format!("{name}.json does not parse: {e}"))?;
    if meta.key != key {
        return Err(format!("{name}.json belongs to key {}, not {key}", meta.key));
    }
    let ptx = std::fs::read_to_string(dir.join(format!("{name}.ptx"))).map_err(|e| format!("{name}.ptx: {e}"))?;
    if sha256_hex(ptx.as_bytes()) != meta.ptx_sha256 {
        return Err(format!("{name}.ptx does not match its SHA-256"));
    }
    if meta.metadata.name != name {
        return Err(format!("{name}.json names kernel {}", meta.metadata.name));
    }
    Ok(Some(Entry { key: key.to_string(), metadata: meta.metadata, ptx }))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let tmp = path.with_extension(format!("tmp-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// PTX and dumps first, the JSON (which carries their hashes) last: a reader sees a whole entry or none.
fn write_entry(dir: &Path, e: &Entry, dumps: &[(String, String)]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let name = &e.metadata.name;
    write_atomic(&dir.join(format!("{name}.ptx")), e.ptx.as_bytes())?;
    for (file, text) in dumps {
        write_atomic(&dir.join(file), text.as_bytes())?;
    }
    let json = EntryJson { metadata: e.metadata.clone(), key: e.key.clone(), ptx_sha256: sha256_hex(e.ptx.as_bytes()) };
    let text = serde_json::to_string_pretty(&json).map_err(std::io::Error::other)?;
    write_atomic(&dir.join(format!("{name}.json")), text.as_bytes())
}
