//! `flashgen autotune`: tune the forward (and with --kernel, the backward's dK/dV and dQ) kernels for a list of shapes on the GPU and print each key's table;
//! the winners are stored beside the kernel cache (used by later calls) and, with --out, written as a
//! tuning file that `flashgen emit --tuned FILE` turns into exactly those kernels.

use clap::Args;
use flashgen::{DType, KernelKind};
use flashgen_runtime::autotune::store::TuneFile;
use flashgen_runtime::autotune::TuneKey;
use flashgen_runtime::{Flash, Gpu, KernelCache};

#[derive(Args)]
pub struct AutotuneArgs {
    #[arg(long, default_value = "64,128")]
    d: String,
    #[arg(long, default_value = "1024,4096,16384")]
    n: String,
    /// Which variants: 0 (non-causal), 1 (causal) or both.
    #[arg(long, default_value = "0,1")]
    causal: String,
    #[arg(long, default_value = "bf16")]
    dtype: String,
    /// Kernels to tune: fwd, bwd_dkdv, bwd_dq (comma-separated): the kernels calls use on this GPU (on sm_90a
    /// unless FLASHGEN_WGMMA=0: fwd_ws, or fwd_wgmma at HEAD_DIM 64 up to N = 2048; the wgmma backward, whose
    /// dK/dV kernel is bwd_fused at HEAD_DIM 128 from N = 1024, with no dQ kernel to tune); fwd_wgmma, fwd_ws,
    /// bwd_dkdv_wgmma, bwd_dq_wgmma, bwd_fused and bwd_fused_atomic name those.
    #[arg(long, default_value = "fwd")]
    kernel: String,
    /// Time only the k best configs by the performance model (Triton's top_k); default: all that survive pruning.
    #[arg(long)]
    top_k: Option<usize>,
    /// Z·H of the tuning inputs (default: the anchors' shape, 16384 tokens × H·D = 2048).
    #[arg(long)]
    heads: Option<usize>,
    /// Also write the results as a tuning file for `flashgen emit --tuned`.
    #[arg(long)]
    out: Option<std::path::PathBuf>,
}

fn list(s: &str) -> Result<Vec<u32>, String> {
    s.split(',').map(|x| x.trim().parse().map_err(|_| format!("`{x}` is not a number"))).collect()
}

pub fn run(a: &AutotuneArgs) -> Result<(), String> {
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("autotune needs a GPU: {e}"))?, KernelCache::from_env());
    let dtype = DType::parse(&a.dtype).map_err(|e| e.to_string())?;
    // a role (fwd, bwd_dkdv, bwd_dq) means the family calls use on this GPU; a wgmma kind is taken as named
    // (the forward's kind also depends on the head dim, causality and the length: Flash::forward_kind)
    // a backward role means the kernel of that role among those calls run (none for dQ where it is fused)
    let kind_of = |k: KernelKind, d: u32, causal: bool, n: u32| -> Result<Option<KernelKind>, String> {
        Ok(match k {
            KernelKind::Fwd => Some(flash.forward_kind(d, causal, n as usize).map_err(|e| e.to_string())?),
            KernelKind::BwdDkdv | KernelKind::BwdDq => {
                let specs = flash.untuned_backward(dtype, d, causal, n as usize).map_err(|e| e.to_string())?;
                if k == KernelKind::BwdDkdv { Some(specs.dkdv.kind()) } else { specs.dq.map(|s| s.kind()) }
            }
            k => Some(k),
        })
    };
    let roles = a.kernel.split(',').map(|k| KernelKind::parse(k).map_err(|e| e.to_string())).collect::<Result<Vec<_>, _>>()?;
    let mut keys = Vec::new();
    for role in roles {
        for d in list(&a.d)? {
            for n in list(&a.n)? {
                for causal in list(&a.causal)? {
                    match kind_of(role, d, causal == 1, n)? {
                        Some(kind) => keys.push(TuneKey::for_kind(kind, flash.gpu.arch, dtype, d, causal == 1, n as usize)),
                        None => println!("{role:?} at D={d} N={n} causal={causal}: none to tune (dQ is computed inside the dK/dV kernel)"),
                    }
                }
            }
        }
    }
    let mut files = Vec::new();
    for key in keys {
        let r = flash.autotune_heads(&key, a.top_k, a.heads).map_err(|e| e.to_string())?;
        let default = key.default_config().map_err(|e| e.to_string())?;
        let t = |c| r.outcomes.iter().find(|o| o.config == c).map(|o| o.timing.median_ms).unwrap_or(f64::NAN);
        println!("\n{}: {} timed, {} pruned, {:.2} s; best {} ({:.4} ms), default {} ({:.4} ms, {:.2}x)\n  ({})", key.id(), r.outcomes.len(), r.pruned.len(), r.seconds, r.best, t(r.best), default, t(default), t(default) / t(r.best), r.phases);
        for o in &r.outcomes {
            match &o.failure {
                None => println!("  {:<64} median {:.4} ms  p20 {:.4}  p80 {:.4}", o.config.to_string(), o.timing.median_ms, o.timing.p20_ms, o.timing.p80_ms),
                Some(f) => println!("  {:<64} inf ({f})", o.config.to_string()),
            }
        }
        println!(
            "{{\"kind\": \"autotune\", \"key\": \"{}\", \"seconds\": {:.3}, \"setup_s\": {:.3}, \"compile_wait_s\": {:.3}, \"verify_s\": {:.3}, \"time_s\": {:.3}, \"timed\": {}, \"pruned\": {}, \"best\": \"{}\", \"best_ms\": {:.5}, \"default_ms\": {:.5}}}",
            key.id(),
            r.seconds,
            r.phases.setup_s,
            r.phases.compile_wait_s,
            r.phases.verify_s,
            r.phases.time_s,
            r.outcomes.len(),
            r.pruned.len(),
            r.best,
            t(r.best),
            t(default)
        );
        files.push(TuneFile::of(&r));
    }
    if let Some(out) = &a.out {
        std::fs::write(out, serde_json::to_string_pretty(&files).map_err(|e| e.to_string())?).map_err(|e| format!("{}: {e}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(())
}

/// The specs of a tuning file (a list of tuning results, or one), each validated.
pub fn tuned_specs(path: &std::path::Path) -> Result<Vec<flashgen::KernelSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let files: Vec<TuneFile> = serde_json::from_str(&text)
        .or_else(|_| serde_json::from_str::<TuneFile>(&text).map(|f| vec![f]))
        .map_err(|e| format!("{} is not a flashgen tuning file: {e}", path.display()))?;
    files.iter().map(|f| f.key.spec(f.best).map_err(|e| format!("{}: key {}: {e}", path.display(), f.key.id()))).collect()
}
