//! Tuning results on disk, one JSON file per key beside the kernel cache (`<cache dir>/autotune/<key>.json`),
//! shaped like Triton's autotune cache: {"key": ..., "configs_timings": [[config, timings], ...]}, plus the
//! winner and the versions it was measured with. A file that does not parse, belongs to another version, or
//! names a config that no longer validates is reported and re-tuned, never trusted.

use super::{Config, TuneKey, TuneResult};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize)]
pub struct TuneFile {
    pub key: TuneKey,
    /// [config, [median, p20, p80] ms] for every config timed; failures carry infinities as null.
    pub configs_timings: Vec<(Config, [Option<f64>; 3])>,
    pub best: Config,
    pub flashgen_version: String,
    pub kernels: String,
}

/// What the kernels are built from: a changed template invalidates tuning results.
pub fn kernels_fingerprint() -> String {
    #[cfg(feature = "jit")]
    return flashgen::render::generator_hash();
    #[cfg(not(feature = "jit"))]
    return "prebuilt".to_string();
}

impl TuneFile {
    pub fn of(r: &TuneResult) -> TuneFile {
        let finite = |x: f64| x.is_finite().then_some(x);
        TuneFile {
            key: r.key.clone(),
            configs_timings: r.outcomes.iter().map(|o| (o.config, [finite(o.timing.median_ms), finite(o.timing.p20_ms), finite(o.timing.p80_ms)])).collect(),
            best: r.best,
            flashgen_version: env!("CARGO_PKG_VERSION").to_string(),
            kernels: kernels_fingerprint(),
        }
    }
}

pub struct TuneStore {
    dir: Option<PathBuf>,
}

impl TuneStore {
    /// `<cache dir>/autotune`, or nothing (memory only) without a cache directory.
    pub fn new(cache_dir: Option<&Path>) -> TuneStore {
        TuneStore { dir: cache_dir.map(|d| d.join("autotune")) }
    }

    pub fn path(&self, key: &TuneKey) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join(format!("{}.json", key.id())))
    }

    /// Ok(None): never tuned. Err: a file that must not be trusted (re-tune).
    pub fn load(&self, key: &TuneKey) -> Result<Option<TuneFile>, String> {
        let Some(path) = self.path(key) else { return Ok(None) };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let f: TuneFile = serde_json::from_str(&text).map_err(|e| format!("{} does not parse: {e}", path.display()))?;
        if f.key != *key {
            return Err(format!("{} holds key {}, not {}", path.display(), f.key.id(), key.id()));
        }
        if f.flashgen_version != env!("CARGO_PKG_VERSION") || f.kernels != kernels_fingerprint() {
            return Err(format!("{} was tuned with other kernels (flashgen {}, kernels {})", path.display(), f.flashgen_version, &f.kernels[..f.kernels.len().min(12)]));
        }
        key.spec(f.best).map_err(|e| format!("{}: its best config no longer validates: {e}", path.display()))?;
        Ok(Some(f))
    }

    /// Write atomically (temporary name, then rename).
    pub fn save(&self, r: &TuneResult) -> Result<Option<PathBuf>, String> {
        let Some(path) = self.path(&r.key) else { return Ok(None) };
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let text = serde_json::to_string_pretty(&TuneFile::of(r)).map_err(|e| e.to_string())?;
        let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Some(path))
    }
}
