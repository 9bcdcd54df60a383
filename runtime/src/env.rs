//! The one place that reads the FLASHGEN_* environment. Each setting has an API twin (`Flash::set_*`,
//! `KernelCache::new`); the variables are for running a program unchanged under other settings.
//!
//! | variable | meaning |
//! |---|---|
//! | FLASHGEN_CACHE_DIR | kernel cache directory; `off` keeps it in memory (default $XDG_CACHE_HOME/flashgen or ~/.cache/flashgen) |
//! | FLASHGEN_ALWAYS_COMPILE=1 | compile every kernel again instead of reading the disk cache |
//! | FLASHGEN_DUMP=1 | write the rendered and optimized IR beside each cached kernel |
//! | FLASHGEN_WGMMA=0 | the mma.sync kernels on sm_90a too |
//! | FLASHGEN_BACKWARD=default\|split\|fused\|fused-atomic | which backward runs on sm_90a |
//! | FLASHGEN_DQ_CHAINS=1..8 | the fused backward's chains of dQ additions |
//! | FLASHGEN_AUTOTUNE=1 | tune a key on its first call when nothing is stored |
//! | FLASHGEN_PRINT_AUTOTUNING=1 | print each tuning's choice |
//! | FLASHGEN_JIT_HELPERS=0 | no helper contexts for the driver's compiles while tuning (also off under CUDA_CACHE_DISABLE=1) |

use flashgen::{BackwardPath, PlanOptions};
use std::path::PathBuf;

/// Every FLASHGEN_* setting, read once per call of `Settings::from_env`.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The disk cache's directory, None: memory only.
    pub cache_dir: Option<PathBuf>,
    pub always_compile: bool,
    pub dump_ir: bool,
    /// How kernels are chosen, or the message naming a variable with an unknown value (reported by the
    /// calls that would use it, not at start-up).
    pub plan: Result<PlanOptions, String>,
    pub autotune: bool,
    pub print_autotuning: bool,
    pub jit_helpers: bool,
}

/// A variable that is set to anything but 0.
fn on(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v != "0")
}

fn plan_options() -> Result<PlanOptions, String> {
    let backward = match std::env::var("FLASHGEN_BACKWARD") {
        Ok(v) => BackwardPath::parse(&v).map_err(|e| format!("FLASHGEN_BACKWARD={v}: {}", e.0))?,
        Err(_) => BackwardPath::Default,
    };
    let dq_chains = match std::env::var("FLASHGEN_DQ_CHAINS") {
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(c) if (1..=8).contains(&c) => Some(c),
            _ => return Err(format!("FLASHGEN_DQ_CHAINS={v} is not a number of dQ chains: use 1 to 8")),
        },
        Err(_) => None,
    };
    Ok(PlanOptions { wgmma: std::env::var_os("FLASHGEN_WGMMA").is_none_or(|v| v != "0"), backward, dq_chains })
}

/// $FLASHGEN_CACHE_DIR, else $XDG_CACHE_HOME/flashgen, else ~/.cache/flashgen; `off`: None.
fn cache_dir() -> Option<PathBuf> {
    match std::env::var_os("FLASHGEN_CACHE_DIR") {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .map(|d| d.join("flashgen")),
    }
}

impl Settings {
    pub fn from_env() -> Settings {
        Settings {
            cache_dir: cache_dir(),
            always_compile: on("FLASHGEN_ALWAYS_COMPILE"),
            dump_ir: on("FLASHGEN_DUMP"),
            plan: plan_options(),
            autotune: on("FLASHGEN_AUTOTUNE"),
            print_autotuning: on("FLASHGEN_PRINT_AUTOTUNING"),
            jit_helpers: !on("CUDA_CACHE_DISABLE") && std::env::var("FLASHGEN_JIT_HELPERS").map_or(true, |v| v != "0"),
        }
    }
}
