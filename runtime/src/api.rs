//! The safe entry point: `Flash::attention_forward(q, k, v, causal, sm_scale)`.

use crate::autotune::{self, store::TuneStore, Config, TuneKey, TuneResult};
use crate::cache::KernelCache;
use crate::forward::{ForwardArgs, ForwardKernel};
use crate::{lse, Gpu, Layout, RuntimeError, Tensor};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use flashgen::KernelSpec;
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

/// A GPU with a kernel cache: specializes, caches, loads and launches.
pub struct Flash {
    pub gpu: Gpu,
    pub cache: KernelCache,
    /// Tune a key on its first call when no tuned config is stored (opt-in, like Triton's autotune:
    /// FLASHGEN_AUTOTUNE=1 or `set_autotune(true)`).
    autotune: bool,
    tunes: TuneStore,
    tuned: Mutex<HashMap<TuneKey, Config>>,
    /// Kernels loaded into this context. One Flash has one device and one kernel source, so the spec alone
    /// identifies a kernel here: a launch of a loaded kernel never reaches the cache (nor hashes a key).
    loaded: Mutex<HashMap<KernelSpec, Arc<ForwardKernel>>>,
    scale: OnceLock<Result<CudaFunction, String>>,
}

impl Flash {
    pub fn new(gpu: Gpu, cache: KernelCache) -> Flash {
        let tunes = TuneStore::new(cache.dir());
        let autotune = std::env::var_os("FLASHGEN_AUTOTUNE").is_some_and(|v| v != "0");
        Flash { gpu, cache, autotune, tunes, tuned: Mutex::new(HashMap::new()), loaded: Mutex::new(HashMap::new()), scale: OnceLock::new() }
    }

    /// Tune keys on their first call when nothing is stored for them.
    pub fn set_autotune(&mut self, on: bool) {
        self.autotune = on;
    }

    /// Tune one key now over the whole config space (or the `keep` best by the performance model),
    /// compiling on all but one core while this thread times; store and use the winner.
    pub fn autotune(&self, key: &TuneKey, keep: Option<usize>) -> Result<TuneResult, RuntimeError> {
        let candidates = autotune::gpu::GpuCandidates::new(self, key).map_err(RuntimeError::Argument)?;
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2).saturating_sub(1).max(1);
        let result = autotune::tune(key, &autotune::config_space(), &candidates, threads, keep).map_err(RuntimeError::Argument)?;
        if let Err(e) = self.tunes.save(&result) {
            self.cache.warn(format!("tuning result for {} not saved: {e}", key.id()));
        }
        self.tuned.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), result.best);
        Ok(result)
    }

    /// The spec a call on these inputs uses: the tuned config for its key when one is stored (tuning it
    /// first if autotuning is on), else the default.
    pub fn spec_for(&self, q: &Tensor, causal: bool) -> Result<KernelSpec, RuntimeError> {
        let default = self.default_spec(q, causal)?;
        let key = TuneKey::new(self.gpu.arch, q.dtype, q.layout.shape[3] as u32, causal, q.layout.shape[2]);
        if let Some(c) = self.tuned.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return key.spec(*c).map_err(|e| RuntimeError::Argument(e.to_string()));
        }
        let stored = match self.tunes.load(&key) {
            Ok(found) => found.map(|f| f.best),
            Err(why) => {
                self.cache.warn(format!("tuning result ignored ({why}){}", if self.autotune { ": re-tuning" } else { "" }));
                None
            }
        };
        let config = match stored {
            Some(c) => c,
            None if self.autotune => self.autotune(&key, None)?.best,
            None => return Ok(default),
        };
        self.tuned.lock().unwrap_or_else(|p| p.into_inner()).insert(key.clone(), config);
        key.spec(config).map_err(|e| RuntimeError::Argument(e.to_string()))
    }

    /// Device 0 with the default cache (FLASHGEN_CACHE_DIR, else ~/.cache/flashgen).
    pub fn open() -> Result<Flash, RuntimeError> {
        Ok(Flash::new(Gpu::open(0)?, KernelCache::from_env()))
    }

    /// The loaded kernel for `spec`: memory, else the disk cache's cubin, else compiled (JIT) or prebuilt PTX.
    pub fn kernel(&self, spec: &KernelSpec) -> Result<Arc<ForwardKernel>, RuntimeError> {
        if spec.arch() != self.gpu.arch {
            return Err(RuntimeError::Argument(format!("{} targets {}, but the GPU runs {}", spec.name(), spec.arch(), self.gpu.arch)));
        }
        if let Some(k) = self.loaded.lock().unwrap_or_else(|p| p.into_inner()).get(spec) {
            return Ok(k.clone());
        }
        let gpu = &self.gpu;
        let jit = |ptx: &str| crate::jit::ptx_to_cubin(gpu, &spec.name(), ptx).map_err(|e| e.to_string());
        let entry = self.cache.get(spec, gpu.capability, &jit)?;
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = loaded.get(spec) {
            return Ok(k.clone());
        }
        let k = Arc::new(ForwardKernel::load(gpu, &entry)?);
        loaded.insert(*spec, k.clone());
        Ok(k)
    }

    /// The default spec for these inputs (see `KernelSpec::default_for`).
    pub fn default_spec(&self, q: &Tensor, causal: bool) -> Result<KernelSpec, RuntimeError> {
        let d = q.layout.shape[3] as u32;
        KernelSpec::default_for(self.gpu.arch, q.dtype, d, causal)
            .map_err(|e| RuntimeError::Argument(format!("tensor Q: no kernel for head dim {d} and {}: {e}", q.dtype.name())))
    }

    /// softmax(Q·Kᵀ·sm_scale [causal]) · V with the tuned config for these shapes if one is stored (see
    /// `spec_for`), else the default. `sm_scale` defaults to 1/sqrt(D).
    pub fn attention_forward(&self, q: &Tensor, k: &Tensor, v: &Tensor, causal: bool, sm_scale: Option<f32>) -> Result<ForwardOutput, RuntimeError> {
        let spec = self.spec_for(q, causal)?;
        self.attention_forward_spec(&spec, q, k, v, sm_scale)
    }

    /// As `attention_forward`, with an explicit spec.
    pub fn attention_forward_spec(&self, spec: &KernelSpec, q: &Tensor, k: &Tensor, v: &Tensor, sm_scale: Option<f32>) -> Result<ForwardOutput, RuntimeError> {
        let [z, h, n, d] = q.layout.shape;
        let mut o = Tensor { data: self.gpu.stream.alloc_zeros::<u16>(z * h * n * d)?, dtype: q.dtype, layout: Layout::contiguous(z, h, n, d) };
        let rows = z * h * n;
        let mut m = self.gpu.stream.alloc_zeros::<f32>(rows.max(1))?;
        let mut lse = self.gpu.stream.alloc_zeros::<f32>(rows.max(1))?;
        self.forward_into(spec, q, k, v, sm_scale, &mut o, &mut m)?;
        if rows > 0 {
            self.scale(&m, &mut lse, std::f32::consts::LN_2, rows)?;
        }
        Ok(ForwardOutput { o, lse, m })
    }

    #[allow(clippy::too_many_arguments)]
    /// Launch into caller-provided outputs (O of any valid layout, M of Z·H·N floats).
    /// Every check of the operands happens here, before anything is compiled or launched.
    pub fn forward_into(&self, spec: &KernelSpec, q: &Tensor, k: &Tensor, v: &Tensor, sm_scale: Option<f32>, o: &mut Tensor, m: &mut CudaSlice<f32>) -> Result<(), RuntimeError> {
        for (name, t) in [("K", k), ("V", v), ("O", &*o)] {
            if t.dtype != q.dtype {
                return Err(RuntimeError::Argument(format!("tensor {name} is {} but Q is {}: all four must share one dtype", t.dtype.name(), q.dtype.name())));
            }
        }
        if q.dtype != spec.dtype() {
            return Err(RuntimeError::Argument(format!("tensor Q is {} but kernel {} takes {}", q.dtype.name(), spec.name(), spec.dtype().name())));
        }
        if k.layout.shape[2] != q.layout.shape[2] {
            return Err(RuntimeError::Argument(format!(
                "tensor K has {} keys but Q has {} queries: this kernel needs equal sequence lengths (N_CTX)",
                k.layout.shape[2], q.layout.shape[2]
            )));
        }
        let d = q.layout.shape[3];
        let sm_scale = sm_scale.unwrap_or(1.0 / (d as f32).sqrt());
        if q.layout.shape[2] == 0 || q.layout.shape[0] == 0 || q.layout.shape[1] == 0 {
            // an empty batch, head count or sequence: nothing to compute, nothing to launch
            return if q.layout.shape == k.layout.shape && q.layout.shape == v.layout.shape && q.layout.shape == o.layout.shape {
                Ok(())
            } else {
                Err(RuntimeError::Argument(format!("tensors Q, K, V, O must share one shape; Q is {:?}", q.layout.shape)))
            };
        }
        let kernel = self.kernel(spec)?;
        kernel.launch(&self.gpu, ForwardArgs { q: (&q.data, q.layout), k: (&k.data, k.layout), v: (&v.data, v.layout), o: (&mut o.data, o.layout), m, sm_scale })
    }

    fn scale(&self, src: &CudaSlice<f32>, dst: &mut CudaSlice<f32>, factor: f32, n: usize) -> Result<(), RuntimeError> {
        let f = self
            .scale
            .get_or_init(|| {
                let module = self.gpu.ctx.load_module(Ptx::from_src(lse::SCALE_PTX)).map_err(|e| e.to_string())?;
                module.load_function(lse::SCALE_ENTRY).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| RuntimeError::Kernel { kernel: lse::SCALE_ENTRY.into(), detail: e.clone() })?;
        let count = n as u32;
        let cfg = LaunchConfig { grid_dim: (count.div_ceil(lse::SCALE_THREADS), 1, 1), block_dim: (lse::SCALE_THREADS, 1, 1), shared_mem_bytes: 0 };
        let mut b = self.gpu.stream.launch_builder(f);
        b.arg(src).arg(dst).arg(&factor).arg(&count);
        // # Safety
        // 1. flashgen_scale_f32 takes (src, dst, factor, n): two f32 device pointers, an f32 and a u32.
        // 2. It touches elements [0, n) of both; src and dst were allocated with at least n elements.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
