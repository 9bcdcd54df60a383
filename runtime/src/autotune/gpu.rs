//! The real `Candidates`: compile through the kernel cache, verify against the default config's output and
//! time with CUDA events, all on scratch buffers of the key's shape (never the caller's outputs).

use super::{Candidates, Timing, TuneKey};
use crate::{Flash, Layout, Tensor};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaSlice;
use flashgen::numeric::{relative_error, SplitMix};
use flashgen::KernelSpec;
use std::sync::{Mutex, OnceLock};

/// Timed launches per candidate (after warm-up): TIMED_RUNS, or fewer when the warm-up shows that they
/// would take longer than TIMED_BUDGET_MS (never fewer than MIN_TIMED_RUNS), like Triton's time-based
/// do_bench. Timing takes median and 20th/80th percentiles of them. (Long candidates spread under 0.2%
/// between p20 and p80 on the H200: three runs tell them apart.)
const TIMED_RUNS: usize = 10;
const MIN_TIMED_RUNS: usize = 3;
const TIMED_BUDGET_MS: f64 = 15.0;
/// Early stop applies only to launches this long: below it the host-timed warm-up is too coarse.
const EARLY_STOP_MIN_MS: f64 = 1.0;
/// Elements per tensor (Z·H·N·D) of the tuning inputs when the caller gives no head count: the anchors'
/// shape (16384 tokens × H·D = 2048). The tuning shape decides the winner: with 32768 rows, N = 16384 had
/// 2 heads and causal tuning preferred 64-row tiles for parallelism that real batches do not need; with
/// 131072 rows a winner 3% faster at 8 heads was 13% slower at the anchors' 32 (bench/results/2026-11-30-fwd-tuned-v7).
const TUNING_ELEMENTS: usize = 1 << 25;
/// The verification run already loaded the module and warmed the caches: one more launch is enough.
const WARMUP_RUNS: usize = 1;

/// Distinct random values behind the tuning inputs (repeated to fill them): generating 3 × 131072 × D
/// normals on the host took seconds per key, and a repeated pattern times the same.
const RANDOM_VALUES: usize = 1 << 20;

/// O of the verified heads (16-bit values) and all of M, on the host.
type Outputs = (Vec<u16>, Vec<f32>);

pub struct GpuCandidates<'a> {
    flash: &'a Flash,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    scratch: Mutex<(Tensor, CudaSlice<f32>)>,
    reference: OnceLock<Result<Outputs, String>>,
    default: KernelSpec,
}

/// `count` random normal [1, H, N, D] tensors with N = the key's bucket and H = `heads` (the calling
/// problem's Z·H, as Triton tunes on the call's own tensors), else the anchors' shape; plus a zeroed one.
pub(crate) fn tuning_inputs(flash: &Flash, key: &TuneKey, heads: Option<usize>, count: usize) -> Result<(Vec<Tensor>, Tensor), String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let n = key.n_bucket as usize;
    let d = key.head_dim as usize;
    let h = heads.unwrap_or(TUNING_ELEMENTS / (n * d)).max(1);
    let layout = Layout::contiguous(1, h, n, d);
    let mut rng = SplitMix(0x7a11 ^ n as u64);
    let pattern: Vec<u16> = (0..RANDOM_VALUES).map(|_| crate::tensor::to_bits(key.dtype, rng.normal())).collect();
    let mut tensors = Vec::with_capacity(count);
    for t in 1..=count {
        // each tensor starts at another offset of the pattern (a prime stride), so Q, K, V, ... differ
        let bits: Vec<u16> = (0..h * n * d).map(|i| pattern[(i + 7919 * t) % RANDOM_VALUES]).collect();
        tensors.push(Tensor { data: flash.gpu.stream.clone_htod(&bits).map_err(dr)?, dtype: key.dtype, layout });
    }
    let zeros = Tensor { data: flash.gpu.stream.alloc_zeros::<u16>(h * n * d).map_err(dr)?, dtype: key.dtype, layout };
    Ok((tensors, zeros))
}

/// Three heads of a [1, H, N, D] tensor (first, middle, last: every program position of a head, and both
/// ends of the grid), as downloaded (16-bit values); downloading all of a long output cost ~0.1 s per
/// candidate, and converting and comparing these on one core another ~0.1 s at N = 16384 (tune-v5).
pub(crate) fn three_heads(flash: &Flash, t: &Tensor) -> Result<Vec<u16>, String> {
    let [_, h, n, d] = t.layout.shape;
    let mut out = Vec::with_capacity(3 * n * d);
    for head in [0, h / 2, h - 1] {
        let bits: Vec<u16> = flash.gpu.stream.clone_dtoh(&t.data.slice(head * n * d..(head + 1) * n * d)).map_err(|x| x.to_string())?;
        out.extend_from_slice(&bits);
    }
    Ok(out)
}

/// `relative_error` of two bf16/fp16 vectors (‖a − b‖ / ‖b‖; a NaN or infinity in `a` gives infinity), on
/// every core: the candidates' outputs reach 12.6 M values per check.
pub fn relative_error_bits(dtype: flashgen::DType, a: &[u16], b: &[u16]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let chunk = a.len().div_ceil(threads).max(1 << 16);
    let f = |x: u16| crate::tensor::from_bits(dtype, x) as f64;
    let parts: Vec<(f64, f64, bool)> = std::thread::scope(|s| {
        let handles: Vec<_> = a
            .chunks(chunk)
            .zip(b.chunks(chunk))
            .map(|(xs, ys)| {
                s.spawn(move || {
                    let (mut num, mut den, mut finite) = (0f64, 0f64, true);
                    for (&x, &y) in xs.iter().zip(ys) {
                        let (x, y) = (f(x), f(y));
                        finite &= x.is_finite();
                        num += (x - y) * (x - y);
                        den += y * y;
                    }
                    (num, den, finite)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or((0.0, 0.0, false))).collect()
    });
    if parts.iter().any(|p| !p.2) {
        return f64::INFINITY;
    }
    let (num, den) = parts.iter().fold((0.0, 0.0), |acc, p| (acc.0 + p.0, acc.1 + p.1));
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// Time `launch` with CUDA events: warm-up, then TIMED_RUNS launches, or fewer (≥ MIN_TIMED_RUNS) when
/// they would take longer than TIMED_BUDGET_MS; a warm-up longer than `cutoff_ms` (and EARLY_STOP_MIN_MS)
/// is the whole measurement.
pub(crate) fn time_launches(flash: &Flash, cutoff_ms: f64, mut launch: impl FnMut() -> Result<(), String>) -> Result<Timing, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    let gpu = &flash.gpu;
    let warm = std::time::Instant::now();
    for _ in 0..WARMUP_RUNS {
        launch()?;
    }
    gpu.stream.synchronize().map_err(dr)?;
    let per_run_ms = warm.elapsed().as_secs_f64() * 1e3 / WARMUP_RUNS as f64;
    if per_run_ms > cutoff_ms && per_run_ms > EARLY_STOP_MIN_MS {
        return Ok(Timing::of(vec![per_run_ms]));
    }
    let runs = ((TIMED_BUDGET_MS / per_run_ms) as usize).clamp(MIN_TIMED_RUNS, TIMED_RUNS);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
        let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
        start.record(&gpu.stream).map_err(dr)?;
        launch()?;
        end.record(&gpu.stream).map_err(dr)?;
        end.synchronize().map_err(dr)?;
        samples.push(start.elapsed_ms(&end).map_err(dr)? as f64);
    }
    Ok(Timing::of(samples))
}

impl<'a> GpuCandidates<'a> {
    /// Inputs as `tuning_inputs` makes them.
    pub fn new(flash: &'a Flash, key: &TuneKey, heads: Option<usize>) -> Result<GpuCandidates<'a>, String> {
        let (t, o) = tuning_inputs(flash, key, heads, 3)?;
        let [q, k, v]: [Tensor; 3] = t.try_into().map_err(|_| "tuning inputs: expected Q, K, V".to_string())?;
        let rows = o.layout.shape[1] * o.layout.shape[2];
        let m = flash.gpu.stream.alloc_zeros::<f32>(rows).map_err(|x| x.to_string())?;
        let default = key.spec(key.default_config().map_err(|x| x.to_string())?).map_err(|x| x.to_string())?;
        Ok(GpuCandidates { flash, q, k, v, scratch: Mutex::new((o, m)), reference: OnceLock::new(), default })
    }

    /// Run a spec; O of three heads and all of M on the host.
    fn run(&self, spec: &KernelSpec) -> Result<Outputs, String> {
        let mut guard = self.scratch.lock().map_err(|_| "scratch buffers poisoned".to_string())?;
        let (o, m) = &mut *guard;
        self.flash.forward_into(spec, &self.q, &self.k, &self.v, None, o, m).map_err(|e| e.to_string())?;
        let out = three_heads(self.flash, o)?;
        let lse: Vec<f32> = self.flash.gpu.stream.clone_dtoh(m).map_err(|x| x.to_string())?;
        Ok((out, lse))
    }
}

impl Candidates for GpuCandidates<'_> {
    fn prepare(&self, spec: &KernelSpec) -> Result<(), String> {
        self.flash.prepare(spec).map(|_| ()).map_err(|e| e.to_string())
    }

    fn verify(&self, spec: &KernelSpec) -> Result<f64, String> {
        let (ro, rm) = self.reference.get_or_init(|| self.run(&self.default)).as_ref().map_err(|e| format!("default config: {e}"))?;
        let (o, m) = self.run(spec)?;
        Ok(relative_error_bits(spec.dtype(), &o, ro).max(relative_error(&m, rm)))
    }

    fn time(&self, spec: &KernelSpec, cutoff_ms: f64) -> Result<Timing, String> {
        let mut guard = self.scratch.lock().map_err(|_| "scratch buffers poisoned".to_string())?;
        let (o, m) = &mut *guard;
        time_launches(self.flash, cutoff_ms, || self.flash.forward_into(spec, &self.q, &self.k, &self.v, None, o, m).map_err(|e| e.to_string()))
    }
}
