//! `flashgen ring-bench`: ring (context-parallel) attention against one GPU's kernels on the same inputs
//! (issue 35). With `--virtual` the P ranks run on this one GPU one after another (runtime/src/ring.rs): the
//! ring's blocks, masks and merges as P GPUs would run them, without the K/V hand-overs. Each row checks
//! the ring's outputs and gradients against the one-GPU kernels first (and its backward bit for bit against
//! a second run), then times both the anchors' way.

use super::random_bf16;
use super::timing::time_by;
use clap::Args;
use flashgen::numeric::SplitMix;
use flashgen::reference::{relative_error, relative_error_lse};
use flashgen::DType;
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::tensor::from_bits;
use flashgen_runtime::{cudarc, BackwardCall, BufferView, BufferViewMut, Flash, ForwardCall, Gpu, KernelCache, Layout, RingShape, StatsIn, StatsOut, TensorView, TensorViewMut, VirtualRing};
use std::io::Write;

#[derive(Args)]
pub struct RingBenchArgs {
    /// Ranks of the ring (P), each a row per length and mask.
    #[arg(long, default_value = "2,4")]
    gpus: String,
    /// Run the P ranks on this one GPU, one after another (no transfers: what the ring's compute costs).
    /// Required until the NCCL ranks exist.
    #[arg(long = "virtual")]
    virtual_ranks: bool,
    /// Total tokens of the sequence.
    #[arg(long, default_value = "131072")]
    n: String,
    #[arg(long, default_value_t = 16)]
    heads: usize,
    /// K/V heads (grouped-query attention); default: --heads.
    #[arg(long)]
    kv_heads: Option<usize>,
    #[arg(long, default_value_t = 128)]
    head_dim: usize,
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// 0 = non-causal, 1 = causal (zig-zag chunks).
    #[arg(long, default_value = "0,1")]
    causal: String,
    /// JSON lines, one per row (kinds ring-fwd and ring-bwd).
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 35)]
    seed: u64,
}

fn list(s: &str) -> Result<Vec<usize>, String> {
    s.split(',').map(|x| x.trim().parse::<usize>().map_err(|e| format!("`{x}` in `{s}`: {e}"))).collect()
}

/// A tensor's values on the host.
fn host(flash: &Flash, x: &CudaSlice<u16>) -> Result<Vec<f32>, String> {
    flash.gpu.stream.synchronize().map_err(|e| e.to_string())?;
    Ok(flash.gpu.stream.clone_dtoh(x).map_err(|e| e.to_string())?.iter().map(|&b| from_bits(DType::Bf16, b)).collect())
}

fn view<'a>(s: &'a CudaSlice<u16>, l: Layout, name: &'static str) -> Result<TensorView<'a>, String> {
    TensorView::of_slice(name, s, 0, DType::Bf16, l).map_err(|e| e.to_string())
}

/// O and the gradients of one implementation.
struct Results {
    o: CudaSlice<u16>,
    grads: [CudaSlice<u16>; 3],
}

impl Results {
    fn new(flash: &Flash, q_len: usize, kv_len: usize) -> Result<Results, String> {
        let st = &flash.gpu.stream;
        let z = |n: usize| st.alloc_zeros::<u16>(n).map_err(|e| e.to_string());
        Ok(Results { o: z(q_len)?, grads: [z(q_len)?, z(kv_len)?, z(kv_len)?] })
    }
}

pub fn run(a: &RingBenchArgs) -> Result<(), String> {
    if !a.virtual_ranks {
        return Err("ring-bench runs virtual ranks only (--virtual: P ranks one after another on this GPU); ranks on P GPUs over NCCL are not built yet (issue 35)".into());
    }
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("ring-bench needs a GPU: {e}"))?, KernelCache::from_env());
    let rt = |x: flashgen_runtime::RuntimeError| x.to_string();
    let stream = flash.own_stream();
    let (batch, heads, d) = (a.batch, a.heads, a.head_dim);
    let kv_heads = a.kv_heads.unwrap_or(heads);
    let mut json = a.json.as_ref().map(std::fs::File::create).transpose().map_err(|e| e.to_string())?;
    let mut table = vec![format!("{:>4} {:>8} {:>6} | {:>9} {:>9} {:>5} | {:>9} {:>9} {:>5} | {:>8} {:>8} {:>8} {:>8} {:>8} {:>5}", "P", "N", "causal", "fwd 1gpu", "fwd ring", "eff", "bwd 1gpu", "bwd ring", "eff", "ΔO", "ΔLSE", "ΔdQ", "ΔdK", "ΔdV", "det")];
    let mut rng = SplitMix(a.seed);
    for tokens in list(&a.n)? {
        let (ql, kvl) = (Layout::contiguous(batch, heads, tokens, d), Layout::contiguous(batch, kv_heads, tokens, d));
        let (q_len, kv_len) = (ql.extent(), kvl.extent());
        let st = &flash.gpu.stream;
        let random = |len: usize, seed: u64| st.clone_htod(&random_bf16(len, seed)).map_err(|e| e.to_string());
        let (q, k, v, d_o) = (random(q_len, rng.next_u64())?, random(kv_len, rng.next_u64())?, random(kv_len, rng.next_u64())?, random(q_len, rng.next_u64())?);
        for causal in list(&a.causal)?.into_iter().map(|c| c != 0) {
            // the one-GPU kernels
            let mut one = Results::new(&flash, q_len, kv_len)?;
            let mut lse = st.alloc_zeros::<f32>(batch * heads * tokens).map_err(|e| e.to_string())?;
            let forward_one = |one: &mut Results, lse: &mut CudaSlice<f32>| -> Result<(), String> {
                let out = TensorViewMut::of_slice("O", &mut one.o, 0, DType::Bf16, ql).map_err(|e| e.to_string())?;
                let call = ForwardCall { causal, ..ForwardCall::new(view(&q, ql, "Q")?, view(&k, kvl, "K")?, view(&v, kvl, "V")?, out, StatsOut::Lse(BufferViewMut::of(lse))) };
                flash.forward(call, stream).map_err(rt)
            };
            forward_one(&mut one, &mut lse)?;
            let backward_one = |one: &mut Results, lse: &CudaSlice<f32>| -> Result<(), String> {
                let [dq, dk, dv] = &mut one.grads;
                let g = (
                    TensorViewMut::of_slice("dQ", dq, 0, DType::Bf16, ql).map_err(|e| e.to_string())?,
                    TensorViewMut::of_slice("dK", dk, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
                    TensorViewMut::of_slice("dV", dv, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
                );
                let call = BackwardCall { causal, ..BackwardCall::new(view(&q, ql, "Q")?, view(&k, kvl, "K")?, view(&v, kvl, "V")?, view(&one.o, ql, "O")?, view(&d_o, ql, "dO")?, StatsIn::Lse(BufferView::of(lse)), g) };
                flash.backward(call, stream).map_err(rt)
            };
            backward_one(&mut one, &lse)?;
            let one_o = host(&flash, &one.o)?;
            let one_lse = st.clone_dtoh(&lse).map_err(|e| e.to_string())?;
            let one_grads = [host(&flash, &one.grads[0])?, host(&flash, &one.grads[1])?, host(&flash, &one.grads[2])?];
            let t1_fwd = time_by(&flash.gpu, true, 0, 0.0, || forward_one(&mut one, &mut lse))?.ms;
            let t1_bwd = time_by(&flash.gpu, true, 0, 0.0, || backward_one(&mut one, &lse))?.ms;
            for ranks in list(&a.gpus)? {
                let shape = RingShape { batch, heads, kv_heads, tokens, head_dim: d, head_dim_v: d };
                let mut ring = VirtualRing::new(&flash, ranks, causal, shape, DType::Bf16).map_err(rt)?;
                let mut ours = Results::new(&flash, q_len, kv_len)?;
                let forward_ring = |ring: &mut VirtualRing, ours: &mut Results| -> Result<(), String> {
                    let out = TensorViewMut::of_slice("O", &mut ours.o, 0, DType::Bf16, ql).map_err(|e| e.to_string())?;
                    ring.forward(&flash, view(&q, ql, "Q")?, view(&k, kvl, "K")?, view(&v, kvl, "V")?, out, None, stream).map_err(rt)
                };
                let backward_ring = |ring: &mut VirtualRing, ours: &mut Results| -> Result<(), String> {
                    let [dq, dk, dv] = &mut ours.grads;
                    let g = [
                        TensorViewMut::of_slice("dQ", dq, 0, DType::Bf16, ql).map_err(|e| e.to_string())?,
                        TensorViewMut::of_slice("dK", dk, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
                        TensorViewMut::of_slice("dV", dv, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
                    ];
                    ring.backward(&flash, [view(&q, ql, "Q")?, view(&k, kvl, "K")?, view(&v, kvl, "V")?, view(&ours.o, ql, "O")?, view(&d_o, ql, "dO")?], g, None, stream).map_err(rt)
                };
                forward_ring(&mut ring, &mut ours)?;
                backward_ring(&mut ring, &mut ours)?;
                // correctness against the one-GPU kernels on the same inputs, and the backward run to run
                let errors = [
                    relative_error(&host(&flash, &ours.o)?, &one_o),
                    relative_error_lse(&ring.lse(&flash).map_err(rt)?, &one_lse),
                    relative_error(&host(&flash, &ours.grads[0])?, &one_grads[0]),
                    relative_error(&host(&flash, &ours.grads[1])?, &one_grads[1]),
                    relative_error(&host(&flash, &ours.grads[2])?, &one_grads[2]),
                ];
                let first: Vec<Vec<u16>> = ours.grads.iter().map(|g| st.clone_dtoh(g)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
                backward_ring(&mut ring, &mut ours)?;
                st.synchronize().map_err(|e| e.to_string())?;
                let second: Vec<Vec<u16>> = ours.grads.iter().map(|g| st.clone_dtoh(g)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
                let deterministic = first == second;
                let tolerances = [1e-2, 1e-3, 2e-2, 2e-2, 2e-2];
                // (NaN fails too: within tolerance means a number at most the tolerance)
                let within = errors.iter().zip(tolerances).all(|(e, t)| e.partial_cmp(&t).is_some_and(|o| o.is_le()));
                if !within || !deterministic {
                    return Err(format!("ring P={ranks} N={tokens} causal={causal}: against the one-GPU kernels O {:.2e}, LSE {:.2e}, dQ {:.2e}, dK {:.2e}, dV {:.2e} (tolerances {tolerances:?}); backward bit-identical run to run: {deterministic}", errors[0], errors[1], errors[2], errors[3], errors[4]));
                }
                let tv_fwd = time_by(&flash.gpu, true, 0, 0.0, || forward_ring(&mut ring, &mut ours))?.ms;
                let tv_bwd = time_by(&flash.gpu, true, 0, 0.0, || backward_ring(&mut ring, &mut ours))?.ms;
                let flops_fwd = 4.0 * (batch * heads) as f64 * (tokens as f64).powi(2) * d as f64 * if causal { 0.5 } else { 1.0 };
                for (kind, t1, tv, flops) in [("ring-fwd", t1_fwd, tv_fwd, flops_fwd), ("ring-bwd", t1_bwd, tv_bwd, 2.5 * flops_fwd)] {
                    let row = serde_json::json!({
                        "kind": kind, "gpus": ranks, "virtual": true, "B": batch, "H": heads, "HKV": kv_heads, "N": tokens, "D": d,
                        "causal": causal, "dtype": "bf16",
                        // the time each of P GPUs would compute (the balanced ranks' share of the serial run), the
                        // serial run itself, and one GPU's kernels on the whole sequence
                        "ms": tv / ranks as f64, "ms_all_ranks": tv, "ms_one_gpu": t1,
                        "tflops": flops / (tv * 1e-3) / 1e12, "tflops_one_gpu": flops / (t1 * 1e-3) / 1e12,
                        // time on 1 GPU / (P × time on P GPUs), with the P GPUs' time the serial run's share: the
                        // ring's compute efficiency (chunked kernels and merges), transfers not included
                        "efficiency": t1 / tv,
                        "rel_err_vs_one_gpu": {"O": errors[0], "LSE": errors[1], "dQ": errors[2], "dK": errors[3], "dV": errors[4]},
                        "deterministic": deterministic,
                    });
                    if let Some(f) = json.as_mut() {
                        writeln!(f, "{row}").map_err(|e| e.to_string())?;
                    }
                    println!("{row}");
                }
                table.push(format!(
                    "{ranks:>4} {tokens:>8} {:>6} | {t1_fwd:>9.2} {:>9.2} {:>5.3} | {t1_bwd:>9.2} {:>9.2} {:>5.3} | {:>8.1e} {:>8.1e} {:>8.1e} {:>8.1e} {:>8.1e} {:>5}",
                    causal,
                    tv_fwd / ranks as f64,
                    t1_fwd / tv_fwd,
                    tv_bwd / ranks as f64,
                    t1_bwd / tv_bwd,
                    errors[0],
                    errors[1],
                    errors[2],
                    errors[3],
                    errors[4],
                    deterministic
                ));
            }
        }
    }
    println!("ring attention, virtual ranks on {} (ms: one GPU, and the ring's serial run / P; eff = one GPU / serial run)", flash.gpu.name);
    for line in table {
        println!("{line}");
    }
    let _ = cudarc::driver::result::ctx::synchronize();
    Ok(())
}
