//! Attention calls on borrowed views, queued on a stream: what the owned-tensor API (api.rs), the Python
//! package and the candle op all go through. Every check of the operands happens here or in the launch
//! layer, before anything is queued; outputs go into the caller's memory.

use crate::backward::{BackwardArgs, BackwardKernels, FusedScratch};
use crate::forward::ForwardArgs;
use crate::stream::{grow, Stream};
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use crate::geometry::{CausalAlign, Geometry, VarLen};
use crate::kernel::KernelGeometry;
use crate::modifiers::{self, CallModifiers, KernelModifiers};
use flashgen::reference::Window;
use crate::{lse, Flash, LayoutError, RuntimeError};
use flashgen::{BackwardSpecs, KernelSpec, Plan};

/// The forward's per-row statistics as the caller wants them written: f32 [Z·H·N].
pub enum StatsOut<'a> {
    /// Base-2 M = m_i + log2(l_i), as the kernels write it (Triton's convention).
    M(BufferViewMut<'a, f32>),
    /// Natural-log log-sum-exp (PyTorch's and FlashAttention's convention): M · ln 2.
    Lse(BufferViewMut<'a, f32>),
    /// Not wanted (inference without a backward or the log-sum-exp): the kernel writes them into the
    /// stream's scratch, which spares the caller an allocation per call.
    Discard,
}

/// The forward's per-row statistics as the backward takes them: f32 [Z·H·N].
#[derive(Clone, Copy)]
pub enum StatsIn<'a> {
    M(BufferView<'a, f32>),
    Lse(BufferView<'a, f32>),
}

/// One forward call: O = softmax(Q·Kᵀ·sm_scale [causal])·V and its row statistics. Q and O are
/// [B, H, N_q, D], K and V [B, H_kv, N_kv, D] (grouped-query attention when H_kv < H), or packed sequences
/// (`varlen`: [1, H, total, D] views, `geometry.rs`); the statistics [B, H, N_q] or [H, total_q].
pub struct ForwardCall<'a> {
    pub q: TensorView<'a>,
    pub k: TensorView<'a>,
    pub v: TensorView<'a>,
    pub o: TensorViewMut<'a>,
    pub stats: StatsOut<'a>,
    pub causal: bool,
    /// Where the causal diagonal lies when a sequence has N_q ≠ N_kv (default bottom-right).
    pub align: CausalAlign,
    /// Default 1/sqrt(HEAD_DIM).
    pub sm_scale: Option<f32>,
    /// Packed variable-length sequences.
    pub varlen: Option<VarLen<'a>>,
    /// A sliding window around the aligned diagonal (FlashAttention's `window_size`; `Window::UNBOUNDED`
    /// for none). With `causal` its right bound is 0.
    pub window: Window,
    /// Softcap: the scaled score s becomes cap · tanh(s / cap) (Gemma 2's 50.0, Grok's 30.0); finite, > 0.
    pub softcap: Option<f32>,
    /// A score_mod and/or mask_mod compiled into the kernels (`flashgen::mods`; fwd_ws and the wgmma backward pair on sm_90a, a score_mod also the fused backward; the mma.sync kernels elsewhere), with
    /// the tensors they read. Causal, the window and softcap join them (`modifiers::fold`).
    pub modifiers: Option<CallModifiers<'a>>,
}

impl<'a> ForwardCall<'a> {
    /// Plain attention into `o` and `stats`: not causal, the diagonal bottom-right where it matters, the
    /// default scale, fixed lengths, no window, softcap or modifiers. The rest by struct update:
    /// `ForwardCall { causal: true, ..ForwardCall::new(q, k, v, o, stats) }`.
    pub fn new(q: TensorView<'a>, k: TensorView<'a>, v: TensorView<'a>, o: TensorViewMut<'a>, stats: StatsOut<'a>) -> ForwardCall<'a> {
        ForwardCall { q, k, v, o, stats, causal: false, align: CausalAlign::BottomRight, sm_scale: None, varlen: None, window: Window::UNBOUNDED, softcap: None, modifiers: None }
    }
}

/// One backward call: dQ, dK, dV of the forward with these inputs, its O and statistics, and dO (dQ shaped
/// like Q, dK and dV like K and V: the gradients of each K/V head summed over its query heads).
pub struct BackwardCall<'a> {
    pub q: TensorView<'a>,
    pub k: TensorView<'a>,
    pub v: TensorView<'a>,
    pub o: TensorView<'a>,
    pub d_o: TensorView<'a>,
    pub stats: StatsIn<'a>,
    pub dq: TensorViewMut<'a>,
    pub dk: TensorViewMut<'a>,
    pub dv: TensorViewMut<'a>,
    pub causal: bool,
    pub align: CausalAlign,
    /// Default 1/sqrt(HEAD_DIM); must be the forward's.
    pub sm_scale: Option<f32>,
    pub varlen: Option<VarLen<'a>>,
    /// The forward's window, softcap and modifiers (`ForwardCall`).
    pub window: Window,
    pub softcap: Option<f32>,
    pub modifiers: Option<CallModifiers<'a>>,
}

impl<'a> BackwardCall<'a> {
    /// The backward of plain attention (`ForwardCall::new`'s rules) into (dQ, dK, dV); the rest by struct
    /// update, as the forward's.
    pub fn new(q: TensorView<'a>, k: TensorView<'a>, v: TensorView<'a>, o: TensorView<'a>, d_o: TensorView<'a>, stats: StatsIn<'a>, (dq, dk, dv): (TensorViewMut<'a>, TensorViewMut<'a>, TensorViewMut<'a>)) -> BackwardCall<'a> {
        BackwardCall { q, k, v, o, d_o, stats, dq, dk, dv, causal: false, align: CausalAlign::BottomRight, sm_scale: None, varlen: None, window: Window::UNBOUNDED, softcap: None, modifiers: None }
    }
}

fn same_dtype(q: &TensorView<'_>, others: &[(&str, flashgen::DType)], what: &str) -> Result<(), RuntimeError> {
    for (name, dtype) in others {
        if *dtype != q.dtype {
            return Err(RuntimeError::Argument(format!("tensor {name} is {} but Q is {}: {what}", dtype.name(), q.dtype.name())));
        }
    }
    Ok(())
}

fn sm_scale_of(q: &TensorView<'_>, sm_scale: Option<f32>) -> f32 {
    sm_scale.unwrap_or(1.0 / (q.layout.shape[3] as f32).sqrt())
}

/// The problem the plan sees for a call of this geometry.
pub(crate) fn problem_of(dtype: flashgen::DType, g: &Geometry, causal: bool, align: CausalAlign) -> flashgen::Problem {
    flashgen::Problem {
        seqlen_k: g.seqlen_k,
        varlen: g.varlen,
        bottom_right: align == CausalAlign::BottomRight,
        value_dim: (g.head_dim_v != g.head_dim).then_some(g.head_dim_v as u32),
        ..flashgen::Problem::new(dtype, g.head_dim as u32, causal, g.seqlen_q)
    }
}

/// The mask and score rules of a forward call as its kernel takes them (`flashgen::plan::kernel_window`):
/// whether the kernel is causal, its window, and the softcap, checked.
fn kernel_rules(causal: bool, window: Window, softcap: Option<f32>) -> Result<(bool, Window, Option<f32>), RuntimeError> {
    if let Some(cap) = softcap.filter(|c| !(c.is_finite() && *c > 0.0)) {
        return Err(RuntimeError::Argument(format!("softcap = {cap}: the cap must be finite and > 0 (None for no softcap)")));
    }
    let (causal, window) = flashgen::plan::kernel_window(causal, window);
    Ok((causal, window, softcap))
}

/// A kernel computes a call's window, softcap and modifiers exactly when it has the features for them.
fn check_rules(spec: &KernelSpec, window: &Window, softcap: Option<f32>) -> Result<(), RuntimeError> {
    let features = spec.features();
    if features.modifiers.is_some() {
        return Err(RuntimeError::Argument(format!("kernel {} computes score_mod / mask_mod {} but the call has none", spec.name(), features.modifiers.map(|m| m.key()).unwrap_or(""))));
    }
    if features.window == window.is_unbounded() || features.softcap != softcap.is_some() {
        let what = |w: bool, c: bool| format!("{}{}", if w { "a window" } else { "no window" }, if c { " and softcap" } else { " and no softcap" });
        return Err(RuntimeError::Argument(format!("the call has {} but kernel {} computes {}: plan it for this call", what(!window.is_unbounded(), softcap.is_some()), spec.name(), what(features.window, features.softcap))));
    }
    Ok(())
}

/// The problem the plan sees for a forward call with these rules (`kernel_rules`).
fn forward_problem(dtype: flashgen::DType, g: &Geometry, align: CausalAlign, (causal, window, softcap): (bool, Window, Option<f32>)) -> flashgen::Problem {
    flashgen::Problem { window, softcap: softcap.is_some(), ..problem_of(dtype, g, causal, align) }
}

/// The problem of a forward call whose rules joined its modifiers (`modifiers::fold`).
fn modified_problem(dtype: flashgen::DType, g: &Geometry, km: &KernelModifiers) -> flashgen::Problem {
    flashgen::Problem { modifiers: km.modifiers, ..forward_problem(dtype, g, km.align, (km.causal, km.window, km.softcap)) }
}

/// A kernel computes a call's rules and modifiers exactly when it has the features for them.
fn check_modified(spec: &KernelSpec, km: &KernelModifiers) -> Result<(), RuntimeError> {
    if spec.features().modifiers != km.modifiers {
        let key = |m: Option<flashgen::Modifiers>| m.map(|m| m.key().to_string()).unwrap_or_else(|| "none".into());
        return Err(RuntimeError::Argument(format!("the call's modifiers are {} but kernel {} computes {}: plan it for this call", key(km.modifiers), spec.name(), key(spec.features().modifiers))));
    }
    if km.modifiers.is_some() {
        return Ok(());
    }
    check_rules(spec, &km.window, km.softcap)
}

/// A kernel runs a call of its dtype and causality, and one of packed sequences only if it reads them.
fn check_kernel(spec: &KernelSpec, dtype: flashgen::DType, causal: bool, g: &Geometry) -> Result<(), RuntimeError> {
    if dtype != spec.dtype() {
        return Err(RuntimeError::Argument(format!("tensor Q is {} but kernel {} takes {}", dtype.name(), spec.name(), spec.dtype().name())));
    }
    if causal != spec.causal() {
        return Err(RuntimeError::Argument(format!("the call is {}causal but kernel {} is not", if causal { "" } else { "not " }, spec.name())));
    }
    if g.varlen != spec.features().varlen {
        let (call, kernel) = if g.varlen { ("packs variable-length sequences", "does not read cu_seqlens") } else { ("has fixed lengths", "reads packed sequences") };
        return Err(RuntimeError::Argument(format!("the call {call} but kernel {} {kernel}: plan it for this geometry (Flash::plan_for)", spec.name())));
    }
    Ok(())
}

/// The geometry group the kernels take (flashgen::abi::geometry) for a validated call and its kernels' window.
fn kernel_geometry(g: &Geometry, align: CausalAlign, varlen: Option<&VarLen<'_>>, window: Window) -> KernelGeometry {
    let bottom_right = align == CausalAlign::BottomRight;
    let geometry = match varlen {
        Some(v) => KernelGeometry::packed(g.batch, g.heads, g.kv_heads, g.seqlen_q, g.seqlen_k, g.total_q, g.total_k, bottom_right, v.cu_seqlens_q.addr(), v.cu_seqlens_k.addr()),
        None => KernelGeometry::fixed(g.batch, g.heads, g.kv_heads, g.seqlen_q, g.seqlen_k, bottom_right),
    };
    KernelGeometry { window, ..geometry }
}

impl Flash {
    /// The Flash's own stream (the one `attention_forward` and `attention_backward` use).
    pub fn own_stream(&self) -> Stream {
        // SAFETY: the GPU's stream belongs to this Flash's context and lives as long as it does
        unsafe { Stream::from_raw(self.gpu.stream.cu_stream()) }
    }

    /// The kernels a call of this geometry runs (`flashgen::plan`, with this Flash's tuning results).
    pub fn plan_for(&self, dtype: flashgen::DType, g: &Geometry, causal: bool, align: CausalAlign) -> Result<Plan, RuntimeError> {
        self.plan_problem(&problem_of(dtype, g, causal, align), g.batch * g.heads)
    }

    /// The forward on `stream`, with the kernel the plan chooses.
    pub fn forward(&self, call: ForwardCall<'_>, stream: Stream) -> Result<(), RuntimeError> {
        let spec = self.forward_kernel(&call)?;
        self.forward_with(&spec, call, stream)
    }

    /// The forward kernel the plan chooses for a call (its rules and modifiers joined, `modifiers::fold`).
    pub fn forward_kernel(&self, call: &ForwardCall<'_>) -> Result<KernelSpec, RuntimeError> {
        let g = Geometry::of(&call.q, &call.k, &call.v, call.varlen.as_ref())?;
        let rules = kernel_rules(call.causal, call.window, call.softcap)?;
        let km = modifiers::fold(call.modifiers.as_ref(), rules, &g, call.align)?;
        Ok(self.plan_problem(&modified_problem(call.q.dtype, &g, &km), g.batch * g.heads)?.forward)
    }

    /// The forward on `stream` with an explicit kernel.
    pub fn forward_with(&self, spec: &KernelSpec, call: ForwardCall<'_>, stream: Stream) -> Result<(), RuntimeError> {
        let ForwardCall { q, k, v, o, stats, causal, align, sm_scale, varlen, window, softcap, modifiers } = call;
        let g = Geometry::of(&q, &k, &v, varlen.as_ref())?;
        let km = modifiers::fold(modifiers.as_ref(), kernel_rules(causal, window, softcap)?, &g, align)?;
        check_modified(spec, &km)?;
        let (causal, window, softcap, align) = (km.causal, km.window, km.softcap, km.align);
        same_dtype(&q, &[("K", k.dtype), ("V", v.dtype), ("O", o.dtype)], "all four must share one dtype")?;
        let [z, h, n, _] = q.layout.shape;
        if o.layout.shape != [z, h, n, g.head_dim_v] {
            return Err(RuntimeError::Argument(format!("tensor O has shape {:?} but Q has {:?} and V head dim {}: O is shaped like Q, as wide as V", o.layout.shape, q.layout.shape, g.head_dim_v)));
        }
        check_kernel(spec, q.dtype, causal, &g)?;
        let sm_scale = sm_scale_of(&q, sm_scale);
        if g.is_empty() {
            return Ok(()); // an empty batch, head count or sequence: nothing to compute, nothing to launch
        }
        // fwd_ws reads Q, K and V through TMA descriptors; a layout the driver cannot describe (a stride of 0
        // for a broadcast head, say) runs the same tiles on fwd_wgmma's cp.async loads instead. The driver
        // encodes them in the thread's current context: a caller's thread may have none bound
        self.gpu.ctx.bind_to_thread()?;
        let (spec, maps) = match spec.kind() {
            kind if kind.warp_specialized_forward() => match crate::tma::forward_maps(spec, &q, &k, &v) {
                Ok(maps) => (*spec, Some(maps)),
                Err(why) => {
                    let instead = flashgen::plan::without_tma(spec, &problem_of(q.dtype, &g, causal, align)).map_err(|e| RuntimeError::Argument(e.to_string()))?;
                    if instead == *spec {
                        return Err(RuntimeError::Argument(format!("{}: {why}, and windows, softcap, score_mod and mask_mod have no kernel without TMA yet: give Q, K and V layouts TMA can describe (16-byte aligned strides, no stride 0)", spec.name())));
                    }
                    self.cache.warn(format!("{}: {why}; running {} instead", spec.name(), instead.name()));
                    (instead, None)
                }
            },
            _ => (*spec, None),
        };
        let kernel = self.kernel(&spec)?;
        let stat_rows = g.stat_rows();
        let scratch = self.scratch.of(stream);
        let mut scratch = scratch.lock().unwrap_or_else(|p| p.into_inner());
        let scratch = &mut *scratch;
        let (m, lse_factor) = match stats {
            StatsOut::M(m) => (m, None),
            StatsOut::Lse(lse) => (lse, Some(std::f32::consts::LN_2)),
            StatsOut::Discard => (grow(&self.gpu, stream, &mut scratch.m, stat_rows)?, None),
        };
        if m.len() < stat_rows {
            return Err(LayoutError { tensor: "M", rule: format!("holds {} floats, needs {stat_rows} (one per query row and head)", m.len()) }.into());
        }
        let addr = m.addr();
        // the persistent kernel's tile counter, made on its first launch on this stream
        let tile_counter = match spec.kind().persistent() {
            true => Some(grow(&self.gpu, stream, &mut scratch.tile_counter, 2)?),
            false => None,
        };
        let geometry = kernel_geometry(&g, align, varlen.as_ref(), window);
        kernel.launch(&self.gpu, stream, ForwardArgs { geometry, q, k, v, o, m, sm_scale, softcap: softcap.unwrap_or(1.0), modifier_tensors: km.tensors, maps, tile_counter })?;
        if let Some(factor) = lse_factor {
            // the kernel wrote M into the caller's buffer: scale its rows in place
            self.scale(addr, addr, factor, stat_rows, stream)?;
        }
        Ok(())
    }

    /// The backward on `stream`, with the kernels the plan chooses (the three-kernel pass where the default
    /// fused kernel's TMA cannot describe Q or dO).
    pub fn backward(&self, call: BackwardCall<'_>, stream: Stream) -> Result<(), RuntimeError> {
        self.check_backward_env()?;
        let plan = self.backward_plan(&call)?;
        let mut specs = plan.backward;
        // (the driver encodes TMA descriptors in the thread's current context, and a caller's thread may have
        // none bound: PyTorch runs the backward on its autograd engine's device thread. Unbound, every layout
        // read as one TMA cannot describe, and the fused backward fell to the three kernels: 2026-12-03-python-v5)
        self.gpu.ctx.bind_to_thread()?;
        if let Some(split) = plan.backward_without_tma {
            if let Err(why) = crate::tma::fused_backward_maps(&specs.dkdv, &call.q, &call.d_o) {
                self.cache.warn(format!("{}: {why}; running the three-kernel backward instead", specs.dkdv.name()));
                specs = split;
            }
        }
        self.backward_with(&specs, call, stream)
    }

    /// The plan of a backward call (its rules and modifiers joined, `modifiers::fold`): `backward` runs its
    /// `backward`, or `backward_without_tma` where TMA cannot describe Q or dO.
    pub fn backward_plan(&self, call: &BackwardCall<'_>) -> Result<Plan, RuntimeError> {
        let g = Geometry::of(&call.q, &call.k, &call.v, call.varlen.as_ref())?;
        let rules = kernel_rules(call.causal, call.window, call.softcap)?;
        let km = modifiers::fold(call.modifiers.as_ref(), rules, &g, call.align)?;
        self.plan_problem(&modified_problem(call.q.dtype, &g, &km), g.batch * g.heads)
    }

    /// The backward on `stream` with explicit kernels.
    pub fn backward_with(&self, specs: &BackwardSpecs, call: BackwardCall<'_>, stream: Stream) -> Result<(), RuntimeError> {
        let BackwardCall { q, k, v, o, d_o, stats, dq, dk, dv, causal, align, sm_scale, varlen, window, softcap, modifiers } = call;
        let g = Geometry::of(&q, &k, &v, varlen.as_ref())?;
        let km = modifiers::fold(modifiers.as_ref(), kernel_rules(causal, window, softcap)?, &g, align)?;
        for spec in [Some(specs.dkdv), specs.dq].into_iter().flatten() {
            check_modified(&spec, &km)?;
        }
        let (causal, window, softcap, align) = (km.causal, km.window, km.softcap, km.align);
        // (O, dO as wide as V: its head dim may be narrower than Q's)
        let (q_shape, v_shape) = (q.layout.shape, v.layout.shape);
        let o_shape = [q_shape[0], q_shape[1], q_shape[2], v_shape[3]];
        let named = [("O", o.dtype, o.layout.shape, o_shape), ("dO", d_o.dtype, d_o.layout.shape, o_shape), ("dQ", dq.dtype, dq.layout.shape, q_shape), ("dK", dk.dtype, dk.layout.shape, k.layout.shape), ("dV", dv.dtype, dv.layout.shape, v_shape)];
        same_dtype(&q, &[("K", k.dtype), ("V", v.dtype)], "all tensors of the backward share one dtype")?;
        for (name, dtype, shape, like) in named {
            same_dtype(&q, &[(name, dtype)], "all tensors of the backward share one dtype")?;
            if shape != like {
                return Err(RuntimeError::Argument(format!("tensor {name} has shape {shape:?} but must be {like:?} (dQ like Q, O and dO like Q as wide as V; dK like K, dV like V)")));
            }
        }
        if let Some(dq) = specs.dq.filter(|dq| dq.causal() != specs.dkdv.causal()) {
            return Err(RuntimeError::Argument(format!("{} and {} disagree on causality: use one plan's BackwardSpecs", specs.dkdv.name(), dq.name())));
        }
        for spec in specs.kernels() {
            // (the preprocess, Δ row by row, is the same kernel for causal and non-causal calls)
            let causal = if spec.kind() == flashgen::KernelKind::BwdPre { spec.causal() } else { causal };
            check_kernel(&spec, q.dtype, causal, &g)?;
        }
        if g.is_empty() {
            return Ok(()); // nothing to compute, nothing to launch
        }
        let rows = g.stat_rows();
        let sm_scale = sm_scale_of(&q, sm_scale);
        let (pre, dkdv) = (self.kernel(&specs.preprocess)?, self.kernel(&specs.dkdv)?);
        let dq_kernel = match specs.dq {
            Some(s) => Some(self.kernel(&s)?),
            None => None,
        };
        let kernels = BackwardKernels { preprocess: &pre, dkdv: &dkdv, dq: dq_kernel.as_deref() };
        let scratch = self.scratch.of(stream);
        let mut scratch = scratch.lock().unwrap_or_else(|p| p.into_inner());
        let scratch = &mut *scratch;
        let m = match stats {
            StatsIn::M(m) => m,
            StatsIn::Lse(lse) => {
                if lse.len() < rows {
                    return Err(LayoutError { tensor: "LSE", rule: format!("holds {} floats, needs {rows} (one per query row and head)", lse.len()) }.into());
                }
                let converted = grow(&self.gpu, stream, &mut scratch.m, rows)?;
                self.scale(lse.addr(), converted.addr(), std::f32::consts::LOG2_E, rows, stream)?;
                // SAFETY: the scratch holds `rows` floats, written above on this stream, read below on it
                unsafe { BufferView::from_raw_parts(converted.addr(), converted.len()) }
            }
        };
        let delta = grow(&self.gpu, stream, &mut scratch.delta, rows)?;
        let geometry = kernel_geometry(&g, align, varlen.as_ref(), window);
        let chains = flashgen::plan::dq_chains(&specs.dkdv, self.dq_chains());
        let fused = if specs.dkdv.kind().fuses_dq() {
            let (partial, locks) = FusedScratch::lengths(&specs.dkdv, &geometry, chains);
            let dq_partial = grow(&self.gpu, stream, &mut scratch.dq_partial, partial)?;
            let locks = grow(&self.gpu, stream, &mut scratch.locks, locks)?;
            Some(FusedScratch { dq_partial, locks, chains })
        } else {
            None
        };
        kernels.launch(&self.gpu, stream, BackwardArgs { geometry, q, k, v, o, d_o, m, delta, dq, dk, dv, sm_scale, softcap: softcap.unwrap_or(1.0), modifier_tensors: km.tensors, fused })
    }

    /// dst[i] = src[i] · factor for the first `n` floats (M <-> LSE), on `stream`.
    pub(crate) fn scale(&self, src: u64, dst: u64, factor: f32, n: usize, stream: Stream) -> Result<(), RuntimeError> {
        if n == 0 {
            return Ok(());
        }
        let f = self
            .scale_kernel
            .get_or_init(|| {
                let module = self.gpu.ctx.load_module(cudarc::nvrtc::Ptx::from_src(lse::SCALE_PTX)).map_err(|e| e.to_string())?;
                module.load_function(lse::SCALE_ENTRY).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|e| RuntimeError::Kernel { kernel: lse::SCALE_ENTRY.into(), detail: e.clone() })?;
        let count = u32::try_from(n).map_err(|_| RuntimeError::Argument(format!("{n} rows overflow the statistics kernel's u32 count")))?;
        let (mut src, mut dst, mut factor, mut count_arg) = (src, dst, factor, count);
        let mut params: [*mut std::ffi::c_void; 4] =
            [&mut src as *mut u64 as *mut _, &mut dst as *mut u64 as *mut _, &mut factor as *mut f32 as *mut _, &mut count_arg as *mut u32 as *mut _];
        self.gpu.ctx.bind_to_thread()?;
        // # Safety
        // 1. flashgen_scale_f32 takes (src, dst, factor, n): two f32 device pointers, an f32 and a u32, which
        //    `params` points at, in that order.
        // 2. It touches elements [0, n) of both, which the callers' buffers hold (checked above them).
        // 3. `stream` belongs to this context, bound to this thread.
        unsafe { cudarc::driver::result::launch_kernel(f.cu_function(), (count.div_ceil(lse::SCALE_THREADS), 1, 1), (lse::SCALE_THREADS, 1, 1), 0, stream.raw(), &mut params) }?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashgen::{Arch, DType, Features, KernelKind};

    #[test]
    fn rules_reach_the_kernels_as_they_take_them() {
        let w = |left, right| Window { left, right };
        // causal ends a window at the diagonal; a bounded right side is a shifted causal kernel
        assert_eq!(kernel_rules(true, w(Some(64), Some(32)), None).unwrap(), (true, w(Some(64), Some(0)), None));
        assert_eq!(kernel_rules(false, w(None, Some(32)), Some(30.0)).unwrap(), (true, w(None, Some(32)), Some(30.0)));
        assert_eq!(kernel_rules(true, w(None, Some(0)), None).unwrap(), (true, Window::UNBOUNDED, None));
        for bad in [0.0, -1.0, f32::INFINITY, f32::NAN] {
            let e = kernel_rules(false, Window::UNBOUNDED, Some(bad)).unwrap_err().to_string();
            assert!(e.contains("finite and > 0"), "{bad}: {e}");
        }
        // a kernel runs a call's window and softcap exactly when it computes them
        let spec = flashgen::spec::defaults::spec(KernelKind::FwdWs, Arch::Sm90a, DType::Bf16, 128, true, 4096).unwrap();
        let windowed = flashgen::plan::with_features(&spec, Features { window: true, ..Features::NONE }).unwrap();
        assert!(check_rules(&windowed, &w(Some(64), Some(0)), None).is_ok());
        let e = check_rules(&spec, &w(Some(64), Some(0)), None).unwrap_err().to_string();
        assert!(e.contains("the call has a window and no softcap") && e.contains("computes no window and no softcap"), "{e}");
        let e = check_rules(&windowed, &Window::UNBOUNDED, Some(5.0)).unwrap_err().to_string();
        assert!(e.contains("the call has no window and softcap") && e.contains("computes a window and no softcap"), "{e}");
    }
}
