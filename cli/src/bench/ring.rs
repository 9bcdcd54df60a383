//! `flashgen ring-bench`: ring (context-parallel) attention against one GPU's kernels on the same inputs
//! (issue 35). With `--virtual` the P ranks run on this one GPU one after another (runtime/src/ring.rs): the
//! ring's blocks, masks and merges as P GPUs would run them, without the K/V hand-overs. Without it, a
//! thread per GPU runs one rank (`RankRing` over NCCL, runtime/src/ring_ranks.rs) on its own chunks. Each
//! row checks the ring's outputs and gradients against the one-GPU kernels first (and its backward bit for
//! bit against a second run), then times both: the one-GPU kernels and the virtual ring the anchors' way
//! (do_bench), the P GPUs by wall time from a common start to the last rank's end (the mean of 3).

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
    /// Run the P ranks on this one GPU, one after another (no transfers: what the ring's compute costs);
    /// without it, one rank per GPU over NCCL (P GPUs; libnccl.so on LD_LIBRARY_PATH).
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
    let flash = Flash::new(Gpu::open(0).map_err(|e| format!("ring-bench needs a GPU: {e}"))?, KernelCache::from_env());
    // the other GPUs' Flashes (ranks 1..P, one GPU each), when the ranks are not virtual
    let mut others = Vec::new();
    if !a.virtual_ranks {
        let most = list(&a.gpus)?.into_iter().max().unwrap_or(1);
        let devices = cudarc::driver::CudaContext::device_count().map_err(|e| e.to_string())? as usize;
        if most > devices {
            return Err(format!("ring-bench --gpus {most} runs a rank per GPU and this machine has {devices}: add --virtual to run the ranks on one GPU one after another"));
        }
        for r in 1..most {
            others.push(Flash::new(Gpu::open(r).map_err(|e| e.to_string())?, KernelCache::from_env()));
        }
    }
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
        let inputs = [random_bf16(q_len, rng.next_u64()), random_bf16(kv_len, rng.next_u64()), random_bf16(kv_len, rng.next_u64()), random_bf16(q_len, rng.next_u64())];
        let up = |x: &Vec<u16>| st.clone_htod(x).map_err(|e| e.to_string());
        let (q, k, v, d_o) = (up(&inputs[0])?, up(&inputs[1])?, up(&inputs[2])?, up(&inputs[3])?);
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
                // correctness against the one-GPU kernels on the same inputs, and the backward run to run
                let verify = |outputs: &[Vec<f32>; 4], lse: &[f32], deterministic: bool| -> Result<[f64; 5], String> {
                    let errors = [
                        relative_error(&outputs[0], &one_o),
                        relative_error_lse(lse, &one_lse),
                        relative_error(&outputs[1], &one_grads[0]),
                        relative_error(&outputs[2], &one_grads[1]),
                        relative_error(&outputs[3], &one_grads[2]),
                    ];
                    check_errors(ranks, tokens, causal, &errors, deterministic)?;
                    Ok(errors)
                };
                let m = if a.virtual_ranks {
                    virtual_ring(&flash, ranks, causal, shape, [&q, &k, &v, &d_o], verify)?
                } else {
                    let flashes: Vec<&Flash> = std::iter::once(&flash).chain(others.iter()).take(ranks).collect();
                    let r = ranks_over_nccl(&flashes, causal, shape, &inputs)?;
                    let [o, dq, dk, dv] = &r.outputs;
                    let errors = verify(&[decode(o), decode(dq), decode(dk), decode(dv)], &r.lse, r.deterministic)?;
                    Measured { errors, deterministic: r.deterministic, ms: [r.ms_fwd, r.ms_bwd], serial_ms: None }
                };
                let errors = m.errors;
                let flops_fwd = 4.0 * (batch * heads) as f64 * (tokens as f64).powi(2) * d as f64 * if causal { 0.5 } else { 1.0 };
                let efficiency = |t1: f64, ms: f64| t1 / (ranks as f64 * ms);
                for (i, (kind, t1, flops)) in [("ring-fwd", t1_fwd, flops_fwd), ("ring-bwd", t1_bwd, 2.5 * flops_fwd)].into_iter().enumerate() {
                    let ms = m.ms[i];
                    // (the rate of the whole run: the virtual ring's serial time, the P GPUs' wall time)
                    let elapsed = m.serial_ms.map_or(ms, |serial| serial[i]);
                    let mut row = serde_json::json!({
                        "kind": kind, "gpus": ranks, "virtual": a.virtual_ranks, "B": batch, "H": heads, "HKV": kv_heads, "N": tokens, "D": d,
                        "causal": causal, "dtype": "bf16",
                        // the time per GPU (virtual: the balanced ranks' share of the serial run) and one GPU's
                        // kernels on the whole sequence
                        "ms": ms, "ms_one_gpu": t1,
                        "tflops": flops / (elapsed * 1e-3) / 1e12, "tflops_one_gpu": flops / (t1 * 1e-3) / 1e12,
                        // time on 1 GPU / (P × time on P GPUs); virtual: the ring's compute efficiency (chunked
                        // kernels and merges), transfers not included
                        "efficiency": efficiency(t1, ms),
                        "rel_err_vs_one_gpu": {"O": errors[0], "LSE": errors[1], "dQ": errors[2], "dK": errors[3], "dV": errors[4]},
                        "deterministic": m.deterministic,
                    });
                    match m.serial_ms {
                        Some(serial) => row["ms_all_ranks"] = serial[i].into(),
                        None => row["timing"] = "wall, common start to the last rank's end, mean of 3".into(),
                    }
                    if let Some(f) = json.as_mut() {
                        writeln!(f, "{row}").map_err(|e| e.to_string())?;
                    }
                    println!("{row}");
                }
                let [ms_fwd, ms_bwd] = m.ms;
                table.push(format!(
                    "{ranks:>4} {tokens:>8} {:>6} | {t1_fwd:>9.2} {ms_fwd:>9.2} {:>5.3} | {t1_bwd:>9.2} {ms_bwd:>9.2} {:>5.3} | {:>8.1e} {:>8.1e} {:>8.1e} {:>8.1e} {:>8.1e} {:>5}",
                    causal,
                    efficiency(t1_fwd, ms_fwd),
                    efficiency(t1_bwd, ms_bwd),
                    errors[0],
                    errors[1],
                    errors[2],
                    errors[3],
                    errors[4],
                    m.deterministic
                ));
            }
        }
    }
    if a.virtual_ranks {
        println!("ring attention, virtual ranks on {} (ms: one GPU, and the ring's serial run / P; eff = one GPU / serial run)", flash.gpu.name);
    } else {
        println!("ring attention, a rank per GPU over NCCL on {} (ms: one GPU, and the P GPUs' wall time; eff = one GPU / (P × that))", flash.gpu.name);
    }
    for line in table {
        println!("{line}");
    }
    let _ = cudarc::driver::result::ctx::synchronize();
    Ok(())
}

/// The ring's errors against the one-GPU kernels within the check suite's tolerances (NaN fails too), and its
/// backward bit-identical run to run, or why not.
fn check_errors(ranks: usize, tokens: usize, causal: bool, errors: &[f64; 5], deterministic: bool) -> Result<(), String> {
    let tolerances = [1e-2, 1e-3, 2e-2, 2e-2, 2e-2];
    let within = errors.iter().zip(tolerances).all(|(e, t)| e.partial_cmp(&t).is_some_and(|o| o.is_le()));
    if !within || !deterministic {
        return Err(format!("ring P={ranks} N={tokens} causal={causal}: against the one-GPU kernels O {:.2e}, LSE {:.2e}, dQ {:.2e}, dK {:.2e}, dV {:.2e} (tolerances {tolerances:?}); backward bit-identical run to run: {deterministic}", errors[0], errors[1], errors[2], errors[3], errors[4]));
    }
    Ok(())
}

/// A ring's errors against the one-GPU kernels (O, LSE, dQ, dK, dV), its run-to-run determinism, and its
/// forward and backward ms per GPU; the virtual ring's serial run besides.
struct Measured {
    errors: [f64; 5],
    deterministic: bool,
    ms: [f64; 2],
    serial_ms: Option<[f64; 2]>,
}

/// P virtual ranks on `flash`'s GPU over the whole tensors [q, k, v, d_o]: one forward and two backwards
/// checked by `verify` (outputs O, dQ, dK, dV; LSE; determinism), then both timed on the anchors' timer.
fn virtual_ring(
    flash: &Flash,
    ranks: usize,
    causal: bool,
    shape: RingShape,
    [q, k, v, d_o]: [&CudaSlice<u16>; 4],
    verify: impl Fn(&[Vec<f32>; 4], &[f32], bool) -> Result<[f64; 5], String>,
) -> Result<Measured, String> {
    let rt = |x: flashgen_runtime::RuntimeError| x.to_string();
    let stream = flash.own_stream();
    let st = &flash.gpu.stream;
    let RingShape { batch, heads, kv_heads, tokens, head_dim: d, .. } = shape;
    let (ql, kvl) = (Layout::contiguous(batch, heads, tokens, d), Layout::contiguous(batch, kv_heads, tokens, d));
    let mut ring = VirtualRing::new(flash, ranks, causal, shape, DType::Bf16).map_err(rt)?;
    let mut ours = Results::new(flash, ql.extent(), kvl.extent())?;
    let forward_ring = |ring: &mut VirtualRing, ours: &mut Results| -> Result<(), String> {
        let out = TensorViewMut::of_slice("O", &mut ours.o, 0, DType::Bf16, ql).map_err(|e| e.to_string())?;
        ring.forward(flash, view(q, ql, "Q")?, view(k, kvl, "K")?, view(v, kvl, "V")?, out, None, stream).map_err(rt)
    };
    let backward_ring = |ring: &mut VirtualRing, ours: &mut Results| -> Result<(), String> {
        let [dq, dk, dv] = &mut ours.grads;
        let g = [
            TensorViewMut::of_slice("dQ", dq, 0, DType::Bf16, ql).map_err(|e| e.to_string())?,
            TensorViewMut::of_slice("dK", dk, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
            TensorViewMut::of_slice("dV", dv, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
        ];
        ring.backward(flash, [view(q, ql, "Q")?, view(k, kvl, "K")?, view(v, kvl, "V")?, view(&ours.o, ql, "O")?, view(d_o, ql, "dO")?], g, None, stream).map_err(rt)
    };
    forward_ring(&mut ring, &mut ours)?;
    backward_ring(&mut ring, &mut ours)?;
    let outputs = [host(flash, &ours.o)?, host(flash, &ours.grads[0])?, host(flash, &ours.grads[1])?, host(flash, &ours.grads[2])?];
    let lse = ring.lse(flash).map_err(rt)?;
    let first: Vec<Vec<u16>> = ours.grads.iter().map(|g| st.clone_dtoh(g)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    backward_ring(&mut ring, &mut ours)?;
    st.synchronize().map_err(|e| e.to_string())?;
    let second: Vec<Vec<u16>> = ours.grads.iter().map(|g| st.clone_dtoh(g)).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
    let deterministic = first == second;
    let errors = verify(&outputs, &lse, deterministic)?;
    let serial = [time_by(&flash.gpu, true, 0, 0.0, || forward_ring(&mut ring, &mut ours))?.ms, time_by(&flash.gpu, true, 0, 0.0, || backward_ring(&mut ring, &mut ours))?.ms];
    Ok(Measured { errors, deterministic, ms: serial.map(|t| t / ranks as f64), serial_ms: Some(serial) })
}

fn decode(bits: &[u16]) -> Vec<f32> {
    bits.iter().map(|&b| from_bits(DType::Bf16, b)).collect()
}

/// What P ranks over NCCL computed (gathered into whole tensors) and how long they took.
struct RankRun {
    /// O, dQ, dK, dV of the whole sequence, bf16 bits.
    outputs: [Vec<u16>; 4],
    /// The natural-log LSE [B, H, N].
    lse: Vec<f32>,
    ms_fwd: f64,
    ms_bwd: f64,
    deterministic: bool,
}

/// A rank per GPU (`flashes[r]` is rank r's), each on its own thread with its chunks of `inputs` (Q, K, V, dO
/// of the whole sequence, host bf16), over NCCL: one forward and backward checked, then each timed 3 times from
/// a common start (a host barrier) to the last rank's end; the backward once more for determinism. A rank's
/// failure fails the others (the barrier and the link), never a hang.
fn ranks_over_nccl(flashes: &[&Flash], causal: bool, shape: RingShape, inputs: &[Vec<u16>; 4]) -> Result<RankRun, String> {
    use flashgen_runtime::ring_ranks::nccl::{NcclLink, RankFailure};
    use flashgen_runtime::{Meeting, RankRing};
    use std::sync::Arc;
    use std::time::{Duration, Instant};
    const REPS: usize = 3;
    let ranks = flashes.len();
    let RingShape { batch, heads, kv_heads, tokens, head_dim: d, .. } = shape;
    let plan = flashgen::ring::Ring::new(ranks, tokens, causal)?;
    let len = plan.chunk_len();
    let id = NcclLink::unique_id().map_err(|e| e.to_string())?;
    let failure = Arc::new(RankFailure::default());
    let meeting = Meeting::new(ranks, Duration::from_secs(120));
    type Local = ([Vec<u16>; 4], Vec<f32>, Vec<f64>, bool);
    let results: Vec<Result<Local, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let (flash, failure, meeting, plan) = (flashes[rank], failure.clone(), &meeting, plan);
                scope.spawn(move || -> Result<Local, String> {
                    let rt = |e: flashgen_runtime::RuntimeError| e.to_string();
                    let body = || -> Result<Local, String> {
                        flash.gpu.ctx.bind_to_thread().map_err(|e| e.to_string())?;
                        let link = NcclLink::join(rank, ranks, id, failure.clone()).map_err(rt)?;
                        let chunks = plan.chunks_of(rank);
                        let t = chunks.len() * len;
                        let st = &flash.gpu.stream;
                        let local = |x: &Vec<u16>, h: usize| st.clone_htod(&plan.gather(rank, x, batch * h, d)).map_err(|e| e.to_string());
                        let (q, k, v, d_o) = (local(&inputs[0], heads)?, local(&inputs[1], kv_heads)?, local(&inputs[2], kv_heads)?, local(&inputs[3], heads)?);
                        let z = |n: usize| st.alloc_zeros::<u16>(n).map_err(|e| e.to_string());
                        let (mut o, mut dq, mut dk, mut dv) = (z(batch * heads * t * d)?, z(batch * heads * t * d)?, z(batch * kv_heads * t * d)?, z(batch * kv_heads * t * d)?);
                        st.synchronize().map_err(|e| e.to_string())?;
                        let (ql, kvl) = (Layout::contiguous(batch, heads, t, d), Layout::contiguous(batch, kv_heads, t, d));
                        let mut me = RankRing::new(flash, ranks, rank, causal, shape, DType::Bf16).map_err(rt)?;
                        let forward = |me: &mut RankRing, o: &mut CudaSlice<u16>| -> Result<(), String> {
                            let out = TensorViewMut::of_slice("O", o, 0, DType::Bf16, ql).map_err(|e| e.to_string())?;
                            me.forward(flash, &link, view(&q, ql, "Q")?, view(&k, kvl, "K")?, view(&v, kvl, "V")?, out, None).map_err(rt)?;
                            me.finish(&link).map_err(rt)
                        };
                        let backward = |me: &mut RankRing, o: &CudaSlice<u16>, [dq, dk, dv]: [&mut CudaSlice<u16>; 3]| -> Result<(), String> {
                            let g = [
                                TensorViewMut::of_slice("dQ", dq, 0, DType::Bf16, ql).map_err(|e| e.to_string())?,
                                TensorViewMut::of_slice("dK", dk, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
                                TensorViewMut::of_slice("dV", dv, 0, DType::Bf16, kvl).map_err(|e| e.to_string())?,
                            ];
                            me.backward(flash, &link, [view(&q, ql, "Q")?, view(&k, kvl, "K")?, view(&v, kvl, "V")?, view(o, ql, "O")?, view(&d_o, ql, "dO")?], g, None).map_err(rt)?;
                            me.finish(&link).map_err(rt)
                        };
                        forward(&mut me, &mut o)?;
                        backward(&mut me, &o, [&mut dq, &mut dk, &mut dv])?;
                        let down = |x: &CudaSlice<u16>| st.clone_dtoh(x).map_err(|e| e.to_string());
                        let outputs = [down(&o)?, down(&dq)?, down(&dk)?, down(&dv)?];
                        let lse = me.lse(flash).map_err(rt)?;
                        let mut times = Vec::new();
                        for pass in 0..2 {
                            for _ in 0..REPS {
                                meeting.wait().map_err(rt)?;
                                let t0 = Instant::now();
                                if pass == 0 { forward(&mut me, &mut o)? } else { backward(&mut me, &o, [&mut dq, &mut dk, &mut dv])? }
                                meeting.wait().map_err(rt)?;
                                times.push(t0.elapsed().as_secs_f64() * 1e3);
                            }
                        }
                        let deterministic = [down(&dq)?, down(&dk)?, down(&dv)?] == [outputs[1].clone(), outputs[2].clone(), outputs[3].clone()];
                        Ok((outputs, lse, times, deterministic))
                    };
                    body().inspect_err(|e| meeting.abort(format!("ring rank {rank} failed: {e}")))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into()))).collect()
    });
    let mut outputs = [vec![0u16; batch * heads * tokens * d], vec![0u16; batch * heads * tokens * d], vec![0u16; batch * kv_heads * tokens * d], vec![0u16; batch * kv_heads * tokens * d]];
    let mut lse = vec![0f32; batch * heads * tokens];
    let (mut ms_fwd, mut ms_bwd, mut deterministic) = (0.0, 0.0, true);
    for (rank, r) in results.into_iter().enumerate() {
        let (local, local_lse, times, det) = r?;
        for (i, (l, w)) in local.iter().zip(outputs.iter_mut()).enumerate() {
            plan.scatter(rank, l, w, batch * if i < 2 { heads } else { kv_heads }, d);
        }
        plan.scatter(rank, &local_lse, &mut lse, batch * heads, 1);
        if rank == 0 {
            ms_fwd = times[..REPS].iter().sum::<f64>() / REPS as f64;
            ms_bwd = times[REPS..].iter().sum::<f64>() / REPS as f64;
        }
        deterministic &= det;
    }
    Ok(RankRun { outputs, lse, ms_fwd, ms_bwd, deterministic })
}
