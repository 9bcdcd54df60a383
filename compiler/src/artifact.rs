//! The compiled kernel and its Triton-style metadata.

use crate::spec::KernelSpec;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Triton's field names (name, num_warps, num_ctas, num_stages, shared, target), plus the spec itself.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Metadata {
    pub name: String,
    pub num_warps: u32,
    pub num_ctas: u32,
    pub num_stages: u32,
    /// Dynamic shared memory bytes the launch must request.
    pub shared: u32,
    pub target: Target,
    pub ptx_version: String,
    pub spec: KernelSpec,
    /// Launch shape: grid (cdiv(N_CTX, BLOCK_M), Z·H, 1), block (32·num_warps, 1, 1).
    pub block_m: u32,
    pub threads: u32,
    pub flashgen_version: String,
    pub llvm_version: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Target {
    pub backend: String,
    pub arch: u32,
    pub arch_name: String,
    pub warp_size: u32,
}

impl Metadata {
    pub fn of(spec: &KernelSpec) -> Metadata {
        let (major, minor) = spec.arch().ptx_version();
        Metadata {
            name: spec.name(),
            num_warps: spec.num_warps(),
            num_ctas: 1,
            num_stages: spec.num_stages(),
            shared: spec.shared_memory_bytes(),
            target: Target { backend: "cuda".into(), arch: spec.arch().capability(), arch_name: spec.arch().name().into(), warp_size: 32 },
            ptx_version: format!("{major}.{minor}"),
            spec: *spec,
            block_m: spec.block_m(),
            threads: spec.threads(),
            flashgen_version: env!("CARGO_PKG_VERSION").to_string(),
            llvm_version: crate::llvm_version(),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Parse metadata JSON; the spec inside is validated like any other.
    pub fn from_json(text: &str) -> Result<Metadata, String> {
        serde_json::from_str(text).map_err(|e| format!("metadata JSON: {e}"))
    }
}

/// LLVM stage times (zero when the artifact did not come from LLVM).
#[derive(Clone, Copy, Debug, Default)]
pub struct LlvmTimings {
    pub parse: Duration,
    pub optimize: Duration,
    pub codegen: Duration,
}

/// Time spent in each stage of spec -> PTX.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    pub render: Duration,
    pub llvm: LlvmTimings,
}

impl Timings {
    pub fn total(&self) -> Duration {
        self.render + self.llvm.parse + self.llvm.optimize + self.llvm.codegen
    }
}

/// A compiled specialization: PTX, its entry point and metadata; the IR texts when asked for.
#[derive(Clone, Debug)]
pub struct Artifact {
    pub spec: KernelSpec,
    pub entry: String,
    pub ptx: String,
    pub ir: String,
    pub optimized_ir: Option<String>,
    pub metadata: Metadata,
    pub timings: Timings,
}
