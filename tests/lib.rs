//! Helpers shared by the integration tests.

use std::path::PathBuf;
use std::process::Command;

/// ptxas: $FLASHGEN_PTXAS, else `ptxas` on PATH. None when neither exists.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLASHGEN_PTXAS").map(PathBuf::from).filter(|p| p.is_file()) {
        return Some(p);
    }
    Command::new("ptxas").arg("--version").output().ok().filter(|o| o.status.success()).map(|_| PathBuf::from("ptxas"))
}

/// nvdisasm (FLASHGEN_NVDISASM, else PATH), to read the SASS ptxas made.
pub fn find_nvdisasm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLASHGEN_NVDISASM").map(PathBuf::from).filter(|p| p.is_file()) {
        return Some(p);
    }
    Command::new("nvdisasm").arg("--version").output().ok().filter(|o| o.status.success()).map(|_| PathBuf::from("nvdisasm"))
}

/// The SASS of `ptx` assembled for `arch`: ptxas to a cubin, then `nvdisasm -c`.
pub fn sass(ptxas: &std::path::Path, nvdisasm: &std::path::Path, ptx: &str, arch: &str) -> Result<String, String> {
    assemble(ptxas, ptx, arch, Some(nvdisasm)).map(|a| a.sass.unwrap_or_default())
}

/// In CI a missing tool is a failure, never a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true" || v == "1").unwrap_or(false)
}

/// What ptxas reports for one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtxasReport {
    pub warnings: Vec<String>,
    pub registers: u32,
    pub stack_frame: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
}

/// Assemble `ptx` for `arch` (e.g. "sm_90a") and parse `ptxas -v` for the module's kernel (the entry every
/// other one's name extends, as the ordered fused backward's `<name>_dq_sum` does).
pub fn ptxas(ptxas: &std::path::Path, ptx: &str, arch: &str) -> Result<PtxasReport, String> {
    assemble(ptxas, ptx, arch, None)?.kernel().cloned().ok_or("ptxas compiled no entry".into())
}

/// Assemble `ptx` for `arch` and parse `ptxas -v` for every entry: (name, report); the warnings are the
/// module's, in every report.
pub fn ptxas_entries(ptxas: &std::path::Path, ptx: &str, arch: &str) -> Result<Vec<(String, PtxasReport)>, String> {
    assemble(ptxas, ptx, arch, None).map(|a| a.entries)
}

/// One assembly of a module: `ptxas -v`'s report of each entry, and the SASS where it was asked for.
pub struct Assembled {
    pub entries: Vec<(String, PtxasReport)>,
    pub sass: Option<String>,
}

impl Assembled {
    /// The module's kernel: the entry every other one's name extends (`<name>_dq_sum`).
    pub fn kernel(&self) -> Option<&PtxasReport> {
        self.entries.iter().min_by_key(|(name, _)| name.len()).map(|(_, r)| r)
    }
}

/// Assemble `ptx` for `arch` once (`ptxas -v` to a cubin) and, given `nvdisasm`, disassemble that cubin
/// (`nvdisasm -c`): a test that wants both the report and the SASS runs ptxas once, not twice.
pub fn assemble(ptxas: &std::path::Path, ptx: &str, arch: &str, nvdisasm: Option<&std::path::Path>) -> Result<Assembled, String> {
    let dir = std::env::temp_dir().join(format!("flashgen-ptxas-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (src, cubin) = (dir.join("k.ptx"), dir.join("k.cubin"));
    std::fs::write(&src, ptx).map_err(|e| e.to_string())?;
    let out = Command::new(ptxas).arg(format!("-arch={arch}")).arg("-v").arg(&src).arg("-o").arg(&cubin).output().map_err(|e| format!("running {}: {e}", ptxas.display()));
    let dis = match (&out, nvdisasm) {
        (Ok(o), Some(nvdisasm)) if o.status.success() => Some(Command::new(nvdisasm).arg("-c").arg(&cubin).output().map_err(|e| format!("running {}: {e}", nvdisasm.display()))),
        _ => None,
    };
    let _ = std::fs::remove_dir_all(&dir);
    let out = out?;
    let text = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!("ptxas failed for {arch}:\n{text}"));
    }
    let sass = match dis {
        Some(d) => {
            let d = d?;
            if !d.status.success() {
                return Err(format!("nvdisasm failed: {}", String::from_utf8_lossy(&d.stderr)));
            }
            Some(String::from_utf8_lossy(&d.stdout).into_owned())
        }
        None => None,
    };
    // ptxas's warnings, and its "Potential Performance Loss" notes (printed as info): a serialized wgmma
    // (C7509/C7515), an ignored setmaxnreg (C7504)
    let warnings: Vec<String> = text.lines().filter(|l| l.contains("warning") || l.contains("Performance Loss")).map(str::to_string).collect();
    let mut entries = Vec::new();
    for section in text.split("Compiling entry function '").skip(1) {
        let name = section.split('\'').next().unwrap_or_default().to_string();
        let num_before = |needle: &str| -> Option<u32> {
            let i = section.find(needle)?;
            section[..i].split_whitespace().last()?.parse().ok()
        };
        let report = PtxasReport {
            warnings: warnings.clone(),
            registers: section.find("Used ").and_then(|i| section[i + 5..].split_whitespace().next()?.parse().ok()).ok_or(format!("no register count for {name} in:\n{text}"))?,
            stack_frame: num_before("bytes stack frame").ok_or(format!("no stack frame for {name} in:\n{text}"))?,
            spill_stores: num_before("bytes spill stores").ok_or(format!("no spill stores for {name} in:\n{text}"))?,
            spill_loads: num_before("bytes spill loads").ok_or(format!("no spill loads for {name} in:\n{text}"))?,
        };
        entries.push((name, report));
    }
    Ok(Assembled { entries, sass })
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed) ^ (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0))
}

/// The default plan (flashgen::plan with the default options, no tuning) of one problem.
pub fn plan_at(arch: flashgen::Arch, dtype: flashgen::DType, head_dim: u32, causal: bool, seqlen: usize) -> flashgen::Plan {
    let problem = flashgen::Problem::new(dtype, head_dim, causal, seqlen);
    flashgen::plan(arch, &problem, &flashgen::PlanOptions::default(), &flashgen::plan::NoTuning).unwrap()
}

/// The default backward pass of the family of `kind` (Δ and the table's kernels of that family).
pub fn family(kind: flashgen::KernelKind, arch: flashgen::Arch, dtype: flashgen::DType, head_dim: u32, causal: bool) -> flashgen::BackwardSpecs {
    flashgen::plan::backward_family(kind, arch, &flashgen::Problem::new(dtype, head_dim, causal, 1024)).unwrap()
}

/// What runs instead of `spec` where TMA cannot describe a layout (flashgen::plan::without_tma).
pub fn fallback(spec: &flashgen::KernelSpec) -> flashgen::KernelSpec {
    let problem = flashgen::Problem::new(spec.dtype(), spec.head_dim(), spec.causal(), 1024);
    flashgen::plan::without_tma(spec, &problem).unwrap()
}
