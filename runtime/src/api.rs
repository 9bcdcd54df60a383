//! The safe entry point: `Flash::attention_forward(q, k, v, causal, sm_scale)`.

use crate::autotune::{self, store::TuneStore, Config, TuneKey, TuneResult};
use crate::cache::KernelCache;
use crate::call::{BackwardCall, ForwardCall, StatsIn, StatsOut};
use crate::kernel::LoadedKernel;
use crate::stream::ScratchPool;
use crate::view::{BufferView, BufferViewMut};
use crate::{CausalAlign, Geometry, Gpu, Layout, RuntimeError, Tensor};
use cudarc::driver::{CudaFunction, CudaSlice};
use flashgen::plan::{NoTuning, Tuned};
use flashgen::{Arch, BackwardPath, BackwardSpecs, DType, KernelKind, KernelSpec, Plan, PlanOptions, Problem};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Outputs of one forward call.
pub struct ForwardOutput {
    /// O, contiguous [Z, H, N, D], in the inputs' dtype.
    pub o: Tensor,
    /// Per-row log-sum-exp in natural log, [Z·H·N] f32.
    pub lse: CudaSlice<f32>,
    /// The kernel's raw base-2 M = m_i + log2(l_i) (Triton's convention), [Z·H·N] f32.
    pub m: CudaSlice<f32>,
}

/// The forward's per-row statistics, as `attention_backward` accepts them.
#[derive(Clone, Copy)]
pub enum RowStats<'a> {
    /// Natural-log log-sum-exp, [Z·H·N] f32 (`ForwardOutput::lse`, PyTorch's convention).
    Lse(&'a CudaSlice<f32>),
    /// Base-2 M = m_i + log2(l_i), [Z·H·N] f32 (`ForwardOutput::m`, Triton's convention; no conversion).
    M(&'a CudaSlice<f32>),
}

impl<'a> RowStats<'a> {
    /// The statistics as the view-based calls take them.
    pub fn view(self) -> StatsIn<'a> {
        match self {
            RowStats::Lse(s) => StatsIn::Lse(BufferView::of(s)),
            RowStats::M(s) => StatsIn::M(BufferView::of(s)),
        }
    }
}

/// Outputs of one backward call: contiguous [Z, H, N, D] tensors in the inputs' dtype.
pub struct Gradients {
    pub dq: Tensor,
    pub dk: Tensor,
    pub dv: Tensor,
}

/// A GPU with a kernel cache: specializes, caches, loads and launches. Which kernels a call runs is
/// `flashgen::plan`'s choice, given this Flash's options and its stored tuning results.
pub struct Flash {
    pub gpu: Gpu,
    pub cache: KernelCache,
    /// Tune a key on its first call when no tuned config is stored (opt-in, like Triton's autotune:
    /// FLASHGEN_AUTOTUNE=1 or `set_autotune(true)`).
    autotune: bool,
    /// How the plan chooses kernels (FLASHGEN_WGMMA, FLASHGEN_BACKWARD, FLASHGEN_DQ_CHAINS, or the setters).
    /// Behind a lock so that a benchmark can vary the dQ chains between calls on a shared Flash.
    options: Mutex<PlanOptions>,
    /// An unknown FLASHGEN_BACKWARD or FLASHGEN_DQ_CHAINS, reported by every backward call until
    /// `set_backward_path` (the caller then chose explicitly).
    backward_env_error: Option<String>,
    tunes: TuneStore,
    /// Each key's tuned config as first looked up (None: nothing stored and not tuning), so a call reads
    /// the tuning store at most once per key and process.
    tuned: Mutex<HashMap<TuneKey, Option<Config>>>,
    /// Kernels loaded into this context. One Flash has one device and one kernel source, so the spec alone
    /// identifies a kernel here: a launch of a loaded kernel never reaches the cache (nor hashes a key).
    loaded: Mutex<HashMap<KernelSpec, Arc<LoadedKernel>>>,
    /// Plans already made (`plan_problem`), newest last, by problem and options: planning looks up each
    /// kind's tuned winner, 2-3 µs of a small call's host time on the H200's host (cli/examples/hostcost.rs),
    /// where finding a remembered plan costs a few comparisons. Forgotten when a tuning result changes.
    plans: Mutex<Vec<(Problem, PlanOptions, Plan)>>,
    /// The M <-> LSE conversion kernel (lse.rs), loaded on first use.
    pub(crate) scale_kernel: OnceLock<Result<CudaFunction, String>>,
    /// Each stream's scratch (Δ, converted statistics, the tile counter, the fused backward's buffers),
    /// kept between calls so that a call allocates nothing but what the caller did not give it.
    pub(crate) scratch: ScratchPool,
}

impl Drop for Flash {
    /// Work queued on a caller's stream may still use this Flash's scratch: wait for the context's work
    /// before the buffers go.
    fn drop(&mut self) {
        if self.gpu.ctx.bind_to_thread().is_ok() {
            // SAFETY: the context is current on this thread
            let _ = unsafe { cudarc::driver::sys::cuCtxSynchronize() };
        }
    }
}

/// Plans a Flash remembers (`Flash::plans`): the shapes of a model's calls, and of a ragged batch's many lengths.
const REMEMBERED_PLANS: usize = 256;

fn no_kernels(problem: &Problem, e: flashgen::SpecError) -> RuntimeError {
    RuntimeError::Argument(format!("tensor Q: no kernels for head dim {} and {}: {e}", problem.head_dim, problem.dtype.name()))
}

/// The tuning store as the plan sees it: a key's stored winner, tuned first on a miss when autotuning is on
/// (on the call's own batch × heads, as Triton tunes on the call's tensors).
struct StoredTunes<'a> {
    flash: &'a Flash,
    heads: Option<usize>,
}

impl Tuned for StoredTunes<'_> {
    fn winner(&self, kind: KernelKind, arch: Arch, p: &Problem) -> Result<Option<KernelSpec>, String> {
        let flash = self.flash;
        let key = TuneKey::for_kind(kind, arch, p.dtype, p.head_dim, p.causal, p.seqlen);
        let known = flash.tuned.lock().unwrap_or_else(|e| e.into_inner()).get(&key).copied();
        let config = match known {
            Some(c) if c.is_some() || !flash.autotune => c,
            _ => {
                let stored = match flash.tunes.load(&key) {
                    Ok(found) => found.map(|f| f.best),
                    Err(why) => {
                        flash.cache.warn(format!("tuning result ignored ({why}){}", if flash.autotune { ": re-tuning" } else { "" }));
                        None
                    }
                };
                let config = match stored {
                    None if flash.autotune => Some(flash.autotune_heads(&key, None, self.heads).map_err(|e| e.to_string())?.best),
                    c => c,
                };
                flash.tuned.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), config);
                config
            }
        };
        config.map(|c| key.spec(c).map_err(|e| e.to_string())).transpose()
    }
}

impl Flash {
    pub fn new(gpu: Gpu, cache: KernelCache) -> Flash {
        let tunes = TuneStore::new(cache.dir());
        let settings = crate::env::Settings::from_env();
        // unknown values are reported at the first backward call (`backward_specs`), not here
        let (options, backward_env_error) = match settings.plan {
            Ok(o) => (o, None),
            Err(e) => (PlanOptions { wgmma: std::env::var_os("FLASHGEN_WGMMA").is_none_or(|v| v != "0"), ..PlanOptions::default() }, Some(e)),
        };
        Flash {
            gpu,
            cache,
            autotune: settings.autotune,
            options: Mutex::new(options),
            backward_env_error,
            tunes,
            tuned: Mutex::new(HashMap::new()),
            loaded: Mutex::new(HashMap::new()),
            plans: Mutex::new(Vec::new()),
            scale_kernel: OnceLock::new(),
            scratch: ScratchPool::default(),
        }
    }

    /// How this Flash chooses kernels now.
    pub fn plan_options(&self) -> PlanOptions {
        *self.options.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn update_options(&self, f: impl FnOnce(&mut PlanOptions)) {
        f(&mut self.options.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The ordered fused backward's number of independent chains of dQ additions (1..=8; each is
    /// deterministic, and so is their sum in chain order), or None for the kind's default
    /// (`flashgen::plan::dq_chains`): more chains shorten bwd_fused's waits in line and cost a dQ-sized f32
    /// buffer each.
    pub fn set_dq_chains(&self, chains: impl Into<Option<u32>>) -> Result<(), RuntimeError> {
        let chains = chains.into();
        if let Some(c) = chains.filter(|c| !(1..=8).contains(c)) {
            return Err(RuntimeError::Argument(format!("{c} dQ chains: use 1 to 8, or None for the default")));
        }
        self.update_options(|o| o.dq_chains = chains);
        Ok(())
    }

    /// The chains the ordered fused backward adds in (`set_dq_chains`; None: the kind's default).
    pub fn dq_chains(&self) -> Option<u32> {
        self.plan_options().dq_chains
    }

    /// Which backward runs on sm_90a with wgmma on (elsewhere: the three mma.sync kernels).
    pub fn set_backward_path(&mut self, path: BackwardPath) {
        self.update_options(|o| o.backward = path);
        self.backward_env_error = None;
    }

    /// Tune keys on their first call when nothing is stored for them.
    pub fn set_autotune(&mut self, on: bool) {
        self.autotune = on;
        self.forget_plans();
    }

    /// Plans are made again from here on (a tuning result or the autotune switch changed what they choose).
    fn forget_plans(&self) {
        self.plans.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Use the Hopper (wgmma) kernels where the GPU runs them (sm_90a; on by default), or the mma.sync ones.
    pub fn set_wgmma(&mut self, on: bool) {
        self.update_options(|o| o.wgmma = on);
    }

    /// The forward kind calls with this head dim, causality and sequence length use (`flashgen::plan::forward_kind`).
    pub fn forward_kind(&self, head_dim: u32, causal: bool, n_ctx: usize) -> Result<KernelKind, RuntimeError> {
        let problem = Problem::new(DType::Bf16, head_dim, causal, n_ctx);
        flashgen::plan::forward_kind(self.gpu.arch, &problem, &self.plan_options()).map_err(|e| RuntimeError::Argument(e.to_string()))
    }

    /// Tune one key now over the whole config space (or the `keep` best by the performance model),
    /// compiling on all but one core while this thread times; store and use the winner.
    pub fn autotune(&self, key: &TuneKey, keep: Option<usize>) -> Result<TuneResult, RuntimeError> {
        self.autotune_heads(key, keep, None)
    }

    /// As `autotune`, on inputs with `heads` = Z·H heads (default: the anchors' shape, 2^25 elements).
    pub fn autotune_heads(&self, key: &TuneKey, keep: Option<usize>, heads: Option<usize>) -> Result<TuneResult, RuntimeError> {
        let t0 = std::time::Instant::now();
        let candidates: Box<dyn autotune::Candidates + '_> = match key.kind.role() {
            KernelKind::Fwd => Box::new(autotune::gpu::GpuCandidates::new(self, key, heads).map_err(RuntimeError::Argument)?),
            KernelKind::BwdDkdv | KernelKind::BwdDq => Box::new(autotune::gpu_backward::BackwardCandidates::new(self, key, heads).map_err(RuntimeError::Argument)?),
            _ => return Err(RuntimeError::Argument("the backward preprocess has no configs to tune".into())),
        };
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).saturating_sub(1).max(1);
        let setup_s = t0.elapsed().as_secs_f64();
        let mut result = autotune::tune(key, &autotune::config_space_for(key.kind), candidates.as_ref(), threads, keep).map_err(RuntimeError::Argument)?;
        // end to end, as a caller waits for it
        result.phases.setup_s = setup_s;
        result.seconds = t0.elapsed().as_secs_f64();
        if let Err(e) = self.tunes.save(&result) {
            self.cache.warn(format!("tuning result for {} not saved: {e}", key.id()));
        }
        self.tuned.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), Some(result.best));
        self.forget_plans();
        Ok(result)
    }

    /// The problem an equal-length call with a Q of this dtype and [Z, H, N, D] shape computes.
    pub(crate) fn problem_of_shape(dtype: DType, shape: [usize; 4], causal: bool) -> Problem {
        Problem::new(dtype, shape[3] as u32, causal, shape[2])
    }

    /// The kernels an equal-length call on these inputs runs (`flashgen::plan`): the tuned winners where
    /// stored (tuned first on a miss if autotuning is on), else the defaults. Other geometries:
    /// `plan_for`.
    pub fn plan(&self, q: &Tensor, causal: bool) -> Result<Plan, RuntimeError> {
        self.plan_problem(&Flash::problem_of_shape(q.dtype, q.layout.shape, causal), q.layout.shape[0] * q.layout.shape[1])
    }

    /// The plan of `problem`, tuning (if on) on inputs of `heads` = batch × heads.
    pub fn plan_problem(&self, problem: &Problem, heads: usize) -> Result<Plan, RuntimeError> {
        let options = self.plan_options();
        let remembered = |plans: &[(Problem, PlanOptions, Plan)]| plans.iter().rev().find(|(p, o, _)| p == problem && *o == options).map(|(_, _, plan)| *plan);
        if let Some(plan) = remembered(&self.plans.lock().unwrap_or_else(|p| p.into_inner())) {
            return Ok(plan);
        }
        // (`heads` only sizes an autotuning run on a miss; the plan it leads to is the same for any heads)
        let tunes = StoredTunes { flash: self, heads: Some(heads) };
        let plan = flashgen::plan(self.gpu.arch, problem, &options, &tunes).map_err(|e| no_kernels(problem, e))?;
        let mut plans = self.plans.lock().unwrap_or_else(|p| p.into_inner());
        if plans.len() == REMEMBERED_PLANS {
            plans.remove(0);
        }
        plans.push((*problem, options, plan));
        Ok(plan)
    }

    fn plan_with(&self, problem: &Problem, tuned: &dyn Tuned) -> Result<Plan, RuntimeError> {
        flashgen::plan(self.gpu.arch, problem, &self.plan_options(), tuned).map_err(|e| no_kernels(problem, e))
    }

    /// The forward spec a call on these inputs uses (`plan`).
    pub fn spec_for(&self, q: &Tensor, causal: bool) -> Result<KernelSpec, RuntimeError> {
        Ok(self.plan(q, causal)?.forward)
    }

    /// Device 0 with the default cache (FLASHGEN_CACHE_DIR, else ~/.cache/flashgen).
    pub fn open() -> Result<Flash, RuntimeError> {
        Ok(Flash::new(Gpu::open(0)?, KernelCache::from_env()))
    }

    /// The loaded kernel for `spec`: memory, else the disk cache's PTX, else compiled (JIT) or prebuilt PTX;
    /// the driver turns the PTX into machine code (whole program, cached by the driver).
    pub fn kernel(&self, spec: &KernelSpec) -> Result<Arc<LoadedKernel>, RuntimeError> {
        self.load(spec, false)
    }

    /// `kernel` for a caller that prepares many kernels on several threads at once (the autotuner): the
    /// driver's compile runs in a helper context first (jit::warm), where the threads do not wait for
    /// each other.
    pub fn prepare(&self, spec: &KernelSpec) -> Result<Arc<LoadedKernel>, RuntimeError> {
        self.load(spec, crate::jit::helpers_enabled())
    }

    fn load(&self, spec: &KernelSpec, warm_in_helper: bool) -> Result<Arc<LoadedKernel>, RuntimeError> {
        if spec.arch() != self.gpu.arch {
            return Err(RuntimeError::Argument(format!("{} targets {}, but the GPU runs {}", spec.name(), spec.arch(), self.gpu.arch)));
        }
        if let Some(k) = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).get(spec) {
            return Ok(k.clone());
        }
        let gpu = &self.gpu;
        let entry = self.cache.get(spec, gpu.capability)?;
        if warm_in_helper {
            crate::jit::warm(gpu, &entry.ptx);
        }
        // The driver compiles the PTX here (ptxas, 0.1-0.5 s; a cache hit after `warm`): outside the lock.
        // Two callers racing on one spec both load it; the first one stays.
        let k = Arc::new(LoadedKernel::load(gpu, &entry)?);
        self.cache.stats.ptx_loads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        Ok(loaded.entry(*spec).or_insert(k).clone())
    }

    /// The default forward spec for these inputs, tuning results aside.
    pub fn default_spec(&self, q: &Tensor, causal: bool) -> Result<KernelSpec, RuntimeError> {
        Ok(self.plan_with(&Flash::problem_of_shape(q.dtype, q.layout.shape, causal), &NoTuning)?.forward)
    }

    /// softmax(Q·Kᵀ·sm_scale [causal]) · V with the tuned config for these shapes if one is stored (see
    /// `spec_for`), else the default. `sm_scale` defaults to 1/sqrt(D).
    pub fn attention_forward(&self, q: &Tensor, k: &Tensor, v: &Tensor, causal: bool, sm_scale: Option<f32>) -> Result<ForwardOutput, RuntimeError> {
        // planned on the call's whole geometry (K/V heads and length: a causal Q longer than K/V has rows
        // that see no key, which only a kernel with `Features::empty_rows` serves), not on Q's shape alone
        let g = Geometry::of(&q.view("Q")?, &k.view("K")?, &v.view("V")?, None)?;
        let spec = self.plan_for(q.dtype, &g, causal, CausalAlign::BottomRight)?.forward;
        self.attention_forward_spec(&spec, q, k, v, sm_scale)
    }

    /// As `attention_forward`, with an explicit spec.
    pub fn attention_forward_spec(&self, spec: &KernelSpec, q: &Tensor, k: &Tensor, v: &Tensor, sm_scale: Option<f32>) -> Result<ForwardOutput, RuntimeError> {
        // (O as wide as V: its head dim may be narrower than Q's)
        let ([z, h, n, _], d) = (q.layout.shape, v.layout.shape[3]);
        let mut o = Tensor { data: self.gpu.stream.alloc_zeros::<u16>((z * h * n * d).max(1))?, dtype: q.dtype, layout: Layout::contiguous(z, h, n, d) };
        let rows = z * h * n;
        let mut m = self.gpu.stream.alloc_zeros::<f32>(rows.max(1))?;
        let mut lse = self.gpu.stream.alloc_zeros::<f32>(rows.max(1))?;
        self.forward_into(spec, q, k, v, sm_scale, &mut o, &mut m)?;
        let (m_addr, lse_addr) = (BufferView::of(&m).addr(), BufferViewMut::of(&mut lse).addr());
        self.scale(m_addr, lse_addr, std::f32::consts::LN_2, rows, self.own_stream())?;
        Ok(ForwardOutput { o, lse, m })
    }

    #[allow(clippy::too_many_arguments)]
    /// Launch into caller-provided outputs (O of any valid layout, M of Z·H·N floats) on the Flash's stream.
    /// Every check of the operands happens before anything is compiled or launched (`forward_with`).
    pub fn forward_into(&self, spec: &KernelSpec, q: &Tensor, k: &Tensor, v: &Tensor, sm_scale: Option<f32>, o: &mut Tensor, m: &mut CudaSlice<f32>) -> Result<(), RuntimeError> {
        let call = ForwardCall { causal: spec.causal(), sm_scale, ..ForwardCall::new(q.view("Q")?, k.view("K")?, v.view("V")?, o.view_mut("O")?, StatsOut::M(BufferViewMut::of(m))) };
        self.forward_with(spec, call, self.own_stream())
    }

    /// The backward kernels a call on these inputs uses (`plan`).
    pub fn backward_specs(&self, q: &Tensor, causal: bool) -> Result<BackwardSpecs, RuntimeError> {
        self.check_backward_env()?;
        Ok(self.plan(q, causal)?.backward)
    }

    pub(crate) fn check_backward_env(&self) -> Result<(), RuntimeError> {
        match &self.backward_env_error {
            Some(e) => Err(RuntimeError::Argument(e.clone())),
            None => Ok(()),
        }
    }

    /// The backward kernels a call with this dtype, head dim, causality and length runs before tuning.
    pub fn untuned_backward(&self, dtype: DType, d: u32, causal: bool, n: usize) -> Result<BackwardSpecs, RuntimeError> {
        self.check_backward_env()?;
        Ok(self.plan_with(&Problem::new(dtype, d, causal, n), &NoTuning)?.backward)
    }

    /// Gradients of softmax(Q·Kᵀ·sm_scale [causal])·V with respect to Q, K and V, given the forward's O and
    /// row statistics and the output gradient dO. `sm_scale` defaults to 1/sqrt(D) and must be the forward's.
    #[allow(clippy::too_many_arguments)]
    pub fn attention_backward(&self, q: &Tensor, k: &Tensor, v: &Tensor, o: &Tensor, stats: RowStats<'_>, d_o: &Tensor, causal: bool, sm_scale: Option<f32>) -> Result<Gradients, RuntimeError> {
        // dQ shaped like Q; dK and dV like K and V (fewer heads with GQA, another length)
        let alloc = |[z, h, n, d]: [usize; 4]| -> Result<Tensor, RuntimeError> { Ok(Tensor { data: self.gpu.stream.alloc_zeros::<u16>((z * h * n * d).max(1))?, dtype: q.dtype, layout: Layout::contiguous(z, h, n, d) }) };
        let mut g = Gradients { dq: alloc(q.layout.shape)?, dk: alloc(k.layout.shape)?, dv: alloc(v.layout.shape)? };
        let grads = (g.dq.view_mut("dQ")?, g.dk.view_mut("dK")?, g.dv.view_mut("dV")?);
        let call = BackwardCall { causal, sm_scale, ..BackwardCall::new(q.view("Q")?, k.view("K")?, v.view("V")?, o.view("O")?, d_o.view("dO")?, stats.view(), grads) };
        self.backward(call, self.own_stream())?;
        Ok(g)
    }

    /// As `attention_backward`, with explicit kernels and caller-provided outputs (any valid layouts), on the
    /// Flash's stream. Every check of the operands happens before anything runs (`backward_with`).
    #[allow(clippy::too_many_arguments)]
    pub fn backward_into(&self, specs: &BackwardSpecs, q: &Tensor, k: &Tensor, v: &Tensor, o: &Tensor, stats: RowStats<'_>, d_o: &Tensor, sm_scale: Option<f32>, g: &mut Gradients) -> Result<(), RuntimeError> {
        let Gradients { dq, dk, dv } = g;
        let grads = (dq.view_mut("dQ")?, dk.view_mut("dK")?, dv.view_mut("dV")?);
        let call = BackwardCall { causal: specs.dkdv.causal(), sm_scale, ..BackwardCall::new(q.view("Q")?, k.view("K")?, v.view("V")?, o.view("O")?, d_o.view("dO")?, stats.view(), grads) };
        self.backward_with(specs, call, self.own_stream())
    }

}
