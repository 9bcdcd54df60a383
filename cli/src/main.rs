//! `flashgen`: emit FA2 kernels as PTX; check and bench them on a GPU.

use clap::{Args, Parser, Subcommand};
use flashgen::{compile, Arch, CompileOptions, DType, KernelKind, KernelSpec, ScheduleOverrides, SpecParams};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod autotune;
mod bench;
mod check;
mod configs;
mod fa4_lengths;

#[derive(Parser)]
#[command(name = "flashgen", version, about = "FlashAttention-2 kernels specialized and emitted as PTX through LLVM")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Generate PTX (or LLVM IR) and its metadata JSON for one spec, or for the default set.
    Emit(EmitArgs),
    /// Generate and check the default kernels; with a GPU, run them against the CPU f64 reference.
    Check(check::CheckArgs),
    /// Time the forward kernels on the GPU in the anchors' shapes (JSON lines + a table).
    Bench(bench::BenchArgs),
    /// Ring (context-parallel) attention against one GPU's kernels: checked, then timed (issue 35).
    RingBench(bench::ring::RingBenchArgs),
    /// Tune the forward kernel for a list of shapes on the GPU (Triton-style autotune).
    Autotune(autotune::AutotuneArgs),
    /// Time a fresh process's first attention call (context, cache lookup or compile, JIT, launch).
    FirstCall,
    /// Print the kernels' parameter tables (flashgen::abi; docs/ABI.md's generated block).
    Abi,
}

#[derive(Args)]
struct EmitArgs {
    /// Generate the default set (STAGE 1 and 3, bf16 and fp16, every HEAD_DIM (32 to 256), sm_80 and sm_90a) into --out-dir.
    #[arg(long, conflicts_with_all = ["kernel", "dtype", "head_dim", "block_m", "block_n", "stage", "num_warps", "num_stages", "arch", "schedule", "features", "score_mod", "mask_mod", "mod_tensor", "output", "tuned"])]
    defaults: bool,
    /// Generate exactly the winning specs of a tuning file (`flashgen autotune --out FILE`) into --out-dir.
    #[arg(long, conflicts_with_all = ["kernel", "dtype", "head_dim", "block_m", "block_n", "stage", "num_warps", "num_stages", "arch", "schedule", "features", "score_mod", "mask_mod", "mod_tensor", "output"])]
    tuned: Option<PathBuf>,
    #[arg(long, default_value = "fwd")]
    kernel: String,
    #[arg(long, default_value = "bf16")]
    dtype: String,
    #[arg(long, default_value_t = 128)]
    head_dim: u32,
    /// Default: the default config for this arch, dtype, head dim and stage.
    #[arg(long)]
    block_m: Option<u32>,
    /// Default: the default config for this arch, dtype, head dim and stage.
    #[arg(long)]
    block_n: Option<u32>,
    /// 3 = causal, 1 = non-causal (Triton's kernel-level STAGE).
    #[arg(long, default_value_t = 3)]
    stage: u32,
    /// Default: the default config for this arch, dtype, head dim and stage.
    #[arg(long)]
    num_warps: Option<u32>,
    /// Default: the default config for this arch, dtype, head dim and stage.
    #[arg(long)]
    num_stages: Option<u32>,
    #[arg(long, default_value = "sm_90a")]
    arch: String,
    /// Schedule switches to set, "name=on|off,..." (q_buffers=N, programs_per_sm=N); the others are derived for the spec
    /// (compiler/src/spec/schedule.rs lists them: q_from_registers, lazy_rescale, half_block_softmax,
    /// cross_tile, single_tail, narrow_last_product, own_blocks, early_row_norm, q_buffers, programs_per_sm,
    /// column_splits, fold_key_blocks, tma_kv, ds_handover, split_kv_ring, early_dv, persistent_tiles, dq_sum_follows,
    /// dq_sum_rounds, prefetch_next_tile, staged_epilogue, early_next_tile).
    #[arg(long)]
    schedule: Option<String>,
    /// What the kernel computes beyond fixed-length attention, "varlen,empty_rows,window,softcap,value_dim=N" (any of them; value_dim: V narrower than Q and K, e.g. 128 at HEAD_DIM 192).
    #[arg(long)]
    features: Option<String>,
    /// A score_mod compiled into the kernel (fwd_ws): an expression over score, b, h, q_idx, kv_idx and the
    /// declared tensors, e.g. "score + slope[h] * (kv_idx - q_idx)" with --mod-tensor "slope: f32[h]".
    #[arg(long)]
    score_mod: Option<String>,
    /// A mask_mod compiled into the kernel (true = keep), e.g. "kv_idx <= q_idx" (a STAGE=1 kernel).
    #[arg(long)]
    mask_mod: Option<String>,
    /// A tensor the modifiers read, "name: f32[h]" or "name: i32[b]" (repeat the flag for several).
    #[arg(long)]
    mod_tensor: Vec<String>,
    /// Output file (PTX, or IR with --ir); the metadata JSON is written beside it. Default: ./<name>.ptx
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Directory for --defaults (or for the single spec when -o is not given).
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
    /// Write the rendered LLVM IR (.ll) instead of PTX.
    #[arg(long)]
    ir: bool,
    /// Print render / parse / optimize / codegen times.
    #[arg(long)]
    timings: bool,
}

fn spec_from_flags(a: &EmitArgs) -> Result<KernelSpec, String> {
    let kind = KernelKind::parse(&a.kernel).map_err(|e| e.to_string())?;
    let dtype = DType::parse(&a.dtype).map_err(|e| e.to_string())?;
    let arch = Arch::parse(&a.arch).map_err(|e| e.to_string())?;
    // tile flags left out come from the default config (itself checked by the same validation)
    let base = flashgen::spec::defaults::spec(kind, arch, dtype, a.head_dim, a.stage == 3, 1)
        .or_else(|e| match kind {
            // the decode kinds' own defaults (one query row tile of 16)
            KernelKind::Decode => flashgen::spec::defaults::decode_spec(arch, dtype, a.head_dim, a.stage == 3, 16),
            KernelKind::DecodeCombine => Ok(KernelSpec::decode_combine(arch, dtype, a.head_dim)),
            _ => Err(e),
        })
        .map(|s| *s.params())
        .unwrap_or(SpecParams {
        kind,
        dtype,
        head_dim: a.head_dim,
        block_m: 128,
        block_n: 64,
        stage: a.stage,
        num_warps: 8,
        num_stages: 2,
        arch,
    });
    let params = SpecParams {
        kind,
        dtype,
        head_dim: a.head_dim,
        block_m: a.block_m.unwrap_or(base.block_m),
        block_n: a.block_n.unwrap_or(base.block_n),
        stage: a.stage,
        num_warps: a.num_warps.unwrap_or(base.num_warps),
        num_stages: a.num_stages.unwrap_or(base.num_stages),
        arch,
    };
    let schedule = a.schedule.as_deref().map(ScheduleOverrides::parse).transpose().map_err(|e| e.to_string())?.unwrap_or_default();
    let mut features = flashgen::Features::parse(a.features.as_deref().unwrap_or("")).map_err(|e| e.to_string())?;
    features.modifiers = modifiers_from_flags(a)?;
    KernelSpec::with_features(params, schedule, features).map_err(|e| e.to_string())
}

/// --score-mod, --mask-mod and --mod-tensor as the spec's modifiers (`Modifiers::from_key` reads the same text).
fn modifiers_from_flags(a: &EmitArgs) -> Result<Option<flashgen::Modifiers>, String> {
    let decls = if a.mod_tensor.is_empty() { String::new() } else { format!("({})", a.mod_tensor.join(", ")) };
    let mut parts = Vec::new();
    if let Some(s) = &a.score_mod {
        parts.push(format!("score_mod{decls}: {s}"));
    }
    if let Some(m) = &a.mask_mod {
        parts.push(format!("mask_mod{decls}: {m}"));
    }
    if parts.is_empty() {
        return Ok(None);
    }
    flashgen::Modifiers::from_key(&parts.join("; ")).map_err(|e| e.to_string())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create directory {}: {e}", dir.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Median per stage over `repeat` compilations (the first warms tera and LLVM and is not counted).
fn print_timings(spec: &KernelSpec, repeat: usize) -> Result<(), String> {
    compile(spec, CompileOptions::default()).map_err(|e| e.to_string())?;
    let runs: Vec<flashgen::Timings> = (0..repeat.max(1))
        .map(|_| compile(spec, CompileOptions::default()).map(|a| a.timings).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let median = |f: &dyn Fn(&flashgen::Timings) -> std::time::Duration| {
        let mut v: Vec<f64> = runs.iter().map(|t| f(t).as_secs_f64() * 1e3).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{}: render {:.1} ms, parse {:.1} ms, optimize {:.1} ms, codegen {:.1} ms, total {:.1} ms (median of {} warm runs)",
        spec.name(),
        median(&|t| t.render),
        median(&|t| t.llvm.parse),
        median(&|t| t.llvm.optimize),
        median(&|t| t.llvm.codegen),
        median(&|t| t.total()),
        runs.len()
    );
    Ok(())
}

fn emit_one(spec: &KernelSpec, path: &Path, ir: bool, timings: bool) -> Result<(), String> {
    let artifact = compile(spec, CompileOptions::default()).map_err(|e| e.to_string())?;
    write(path, if ir { &artifact.ir } else { &artifact.ptx })?;
    write(&path.with_extension("json"), &artifact.metadata.to_json())?;
    if timings {
        print_timings(spec, 5)?;
    }
    println!("wrote {}", path.display());
    Ok(())
}

fn emit(a: &EmitArgs) -> Result<(), String> {
    let ext = if a.ir { "ll" } else { "ptx" };
    if a.defaults || a.tuned.is_some() {
        let specs = match &a.tuned {
            Some(file) => autotune::tuned_specs(file)?,
            None => flashgen::plan::default_set().into_iter().chain(flashgen::plan::decode_default_set()).collect(),
        };
        for spec in specs {
            emit_one(&spec, &a.out_dir.join(format!("{}.{ext}", spec.name())), a.ir, a.timings)?;
        }
        return Ok(());
    }
    let spec = spec_from_flags(a)?;
    let path = a.output.clone().unwrap_or_else(|| a.out_dir.join(format!("{}.{ext}", spec.name())));
    emit_one(&spec, &path, a.ir, a.timings)
}

/// One attention call in a fresh process: with a warm disk cache it must not run LLVM or the PTX JIT.
fn first_call() -> Result<(), String> {
    use flashgen_runtime::{Flash, Layout, Tensor};
    let t0 = std::time::Instant::now();
    let flash = Flash::open().map_err(|e| e.to_string())?;
    let opened = t0.elapsed();
    let layout = Layout::contiguous(1, 2, 512, 64);
    let x: Vec<f32> = (0..2 * 512 * 64).map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0).collect();
    let q = Tensor::from_f32(&flash.gpu, &x, DType::Bf16, layout).map_err(|e| e.to_string())?;
    let t1 = std::time::Instant::now();
    let out = flash.attention_forward(&q, &q, &q, true, None).map_err(|e| e.to_string())?;
    flash.gpu.stream.synchronize().map_err(|e| e.to_string())?;
    let first = t1.elapsed();
    let o = out.o.to_f32(&flash.gpu).map_err(|e| e.to_string())?;
    if !o.iter().all(|v| v.is_finite()) {
        return Err("first call produced non-finite output".into());
    }
    let s = &flash.cache.stats;
    let n = |a: &std::sync::atomic::AtomicUsize| a.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "{{\"kind\": \"first_call\", \"context_ms\": {:.1}, \"first_call_ms\": {:.1}, \"llvm_compiles\": {}, \"ptx_loads\": {}, \"disk_hits\": {}, \"cache_dir\": {:?}}}",
        opened.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3,
        n(&s.llvm_compiles),
        n(&s.ptx_loads),
        n(&s.disk_hits),
        flash.cache.dir().map(|d| d.display().to_string()).unwrap_or_default()
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Emit(a) => emit(a),
        Command::Check(a) => check::run(a),
        Command::Bench(a) => bench::run(a),
        Command::RingBench(a) => bench::ring::run(a),
        Command::FirstCall => first_call(),
        Command::Autotune(a) => autotune::run(a),
        Command::Abi => {
            println!("{}", flashgen::abi::markdown());
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("flashgen: error: {e}");
            ExitCode::FAILURE
        }
    }
}
