//! The arguments of `flashgen check`.

use clap::Args;

#[derive(Args)]
pub struct CheckArgs {
    /// Fewer sequence lengths (a fast smoke test).
    #[arg(long)]
    pub quick: bool,
    /// Write one JSON line per case to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Random seed (each case derives its own).
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Only run on the CPU, even if a GPU is present.
    #[arg(long)]
    pub cpu_only: bool,
    /// Also write inputs and outputs of the default kernels (N = 1024) to DIR for bench/triton_parity.py.
    #[arg(long)]
    pub parity_dir: Option<std::path::PathBuf>,
    /// Only check the specs whose name contains this text (comma-separated: any of them, e.g. "_d192_,_d256_");
    /// decode cases match as "decode <dtype> <label>" ("decode bf16", "paged", "lying"). A filter that selects
    /// no case is an error.
    #[arg(long)]
    pub filter: Option<String>,
    /// Skip the backward checks.
    #[arg(long)]
    pub forward_only: bool,
    /// Skip the geometry cases (grouped-query heads, unequal lengths, packed sequences).
    #[arg(long)]
    pub skip_geometry: bool,
    /// On sm_90a, check the mma.sync kernels (the kinds FLASHGEN_WGMMA=0 selects) instead of the default
    /// wgmma ones; elsewhere the mma.sync kernels are the defaults.
    #[arg(long)]
    pub mma_sync: bool,
    /// On sm_90a, also check the fused backward (bwd_pre + bwd_fused, and bwd_fused_atomic: dQ inside the
    /// dK/dV kernel).
    #[arg(long)]
    pub fused_backward: bool,
    /// Skip the KV-cache decode cases.
    #[arg(long)]
    pub skip_decode: bool,
    /// Only the KV-cache decode cases (issue 33).
    #[arg(long, conflicts_with = "skip_decode")]
    pub decode_only: bool,
    /// Schedule overrides for every decode case's kernel, "switch=on|off,..." (`tma_kv=on`: K/V by TMA boxes).
    #[arg(long, value_parser = schedule)]
    pub decode_schedule: Option<flashgen::ScheduleOverrides>,
    /// Schedule overrides for the backward's dK/dV kernels, "switch=on|off,..." (`ds_handover=on`): every set
    /// whose dK/dV kind takes them is checked with them instead (the others as they are; names show which).
    #[arg(long, value_parser = schedule)]
    pub backward_schedule: Option<flashgen::ScheduleOverrides>,
    /// Extra specs to check beside the defaults, as "[w:|ws:|wsp:]dtype,d,bm,bn,stage,warps,stages;..." (target = the GPU's; "w:" = fwd_wgmma, "ws:" = fwd_ws, "wsp:" = fwd_ws_persistent).
    #[arg(long)]
    pub specs: Option<String>,
    /// Backward sets to check beside the defaults at every head dim that admits them, in bench's syntax:
    /// "dkdv bm,bn,warps,stages|dq bm,bn,warps,stages;..." varying the default pair, "w:" the wgmma pair,
    /// "f:" / "fa:" / "fu:" + tiles the fused kinds, each with "@switch=value,..." (e.g. "w:64,64,8,2|64,32,4,2")
    #[arg(long)]
    pub bwd_configs: Option<String>,
}

/// "switch=on|off,...", read when the arguments are (a typo fails before any kernel is generated).
fn schedule(text: &str) -> Result<flashgen::ScheduleOverrides, String> {
    flashgen::ScheduleOverrides::parse(text).map_err(|e| e.to_string())
}

impl CheckArgs {
    /// Whether `--filter` lets `name` through: no filter, or one of its comma-separated texts in it.
    pub fn selects(&self, name: &str) -> bool {
        self.filter.as_ref().is_none_or(|f| f.split(',').any(|t| name.contains(t)))
    }
}
