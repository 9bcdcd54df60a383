//! The real `Candidates` of the backward's tile kernels: each dK/dV or dQ candidate runs alone (with the
//! default kernels beside it only for the argument checks) on Δ computed once, is verified against the
//! default config's dK and dV (or dQ), and timed with CUDA events, all on scratch buffers. A fused
//! candidate (bwd_fused, bwd_fused_atomic) computes all three gradients: all three are verified.

use super::gpu::{relative_error_bits, three_heads, time_launches, tuning_inputs};
use super::{Candidates, Timing, TuneKey};
use crate::backward::{BackwardArgs, BackwardKernels, FusedScratch};
use crate::view::{BufferView, BufferViewMut};
use crate::{Flash, Gradients, Tensor};
use cudarc::driver::CudaSlice;
use flashgen::{BackwardSpecs, KernelKind, KernelSpec};
use std::sync::{Mutex, OnceLock};

pub struct BackwardCandidates<'a> {
    flash: &'a Flash,
    kind: KernelKind,
    defaults: BackwardSpecs,
    inputs: [Tensor; 4],
    o: Tensor,
    m: CudaSlice<f32>,
    /// The outputs, and Δ (written once by the preprocess, read by every candidate).
    scratch: Mutex<(Gradients, CudaSlice<f32>)>,
    /// A fused candidate's dQ partial sums and locks (sized for the largest, the 64-column chunks).
    fused: Option<Mutex<(CudaSlice<f32>, CudaSlice<u32>)>>,
    reference: OnceLock<Result<Vec<u16>, String>>,
}

impl<'a> BackwardCandidates<'a> {
    /// Q, K, V, dO as `tuning_inputs` makes them; O and M from the default forward; Δ from the preprocess.
    pub fn new(flash: &'a Flash, key: &TuneKey, heads: Option<usize>) -> Result<BackwardCandidates<'a>, String> {
        let e = |x: crate::RuntimeError| x.to_string();
        if !matches!(key.kind.role(), KernelKind::BwdDkdv | KernelKind::BwdDq) {
            return Err(format!("{} is not a backward tile kernel", key.kind.name()));
        }
        let (t, zeros) = tuning_inputs(flash, key, heads, 4)?;
        let inputs: [Tensor; 4] = t.try_into().map_err(|_| "tuning inputs: expected Q, K, V, dO".to_string())?;
        let problem = key.problem();
        let forward = flashgen::plan(key.arch, &problem, &flashgen::PlanOptions::default(), &flashgen::plan::NoTuning).map_err(|x| x.to_string())?.forward;
        let out = flash.attention_forward_spec(&forward, &inputs[0], &inputs[1], &inputs[2], None).map_err(e)?;
        // the other kernels of the pass: the defaults of the tuned kernel's family
        let defaults = flashgen::plan::backward_family(key.kind, key.arch, &problem).map_err(|x| x.to_string())?;
        let rows = zeros.layout.shape[1] * zeros.layout.shape[2];
        let delta = flash.gpu.stream.alloc_zeros::<f32>(rows).map_err(|x| x.to_string())?;
        let like = |t: &Tensor| -> Result<Tensor, String> { Ok(Tensor { data: flash.gpu.stream.alloc_zeros::<u16>(t.data.len()).map_err(|x| x.to_string())?, dtype: t.dtype, layout: t.layout }) };
        let fused = if key.kind.fuses_dq() {
            let [z, h, n, _] = zeros.layout.shape;
            let (partial, locks) = FusedScratch::lengths(&defaults.dkdv, &crate::kernel::KernelGeometry::square(z, h, n), 1);
            let dr = |x: cudarc::driver::DriverError| x.to_string();
            Some(Mutex::new((flash.gpu.stream.alloc_zeros::<f32>(partial).map_err(dr)?, flash.gpu.stream.alloc_zeros::<u32>(locks).map_err(dr)?)))
        } else {
            None
        };
        let scratch = Gradients { dq: like(&zeros)?, dk: like(&zeros)?, dv: zeros };
        let c = BackwardCandidates { flash, kind: key.kind, defaults, inputs, o: out.o, m: out.m, scratch: Mutex::new((scratch, delta)), fused, reference: OnceLock::new() };
        c.launch(&defaults.preprocess, KernelKind::BwdPre)?;
        Ok(c)
    }

    /// Launch one kernel: `spec` in its role, the defaults in the others.
    fn launch(&self, spec: &KernelSpec, kind: KernelKind) -> Result<(), String> {
        let e = |x: crate::RuntimeError| x.to_string();
        let d = &self.defaults;
        let load = |s: &KernelSpec| self.flash.kernel(s).map_err(e);
        // the dQ kernel beside a dK/dV one (none beside a fused one, which computes dQ itself)
        let default_dq = match d.dq {
            Some(dq) if !(kind.role() == KernelKind::BwdDkdv && spec.kind().fuses_dq()) => Some(load(&dq)?),
            _ => None,
        };
        let (pre, dkdv, dq) = match kind.role() {
            KernelKind::BwdDkdv => (load(&d.preprocess)?, load(spec)?, default_dq),
            KernelKind::BwdDq => (load(&d.preprocess)?, load(&d.dkdv)?, Some(load(spec)?)),
            _ => (load(spec)?, load(&d.dkdv)?, default_dq),
        };
        let kernels = BackwardKernels { preprocess: &pre, dkdv: &dkdv, dq: dq.as_deref() };
        let mut fused_guard = match &self.fused {
            Some(m) if dkdv.spec.kind().fuses_dq() => Some(m.lock().map_err(|_| "fused scratch poisoned".to_string())?),
            _ => None,
        };
        let fused = fused_guard.as_deref_mut().map(|(dq_partial, locks)| FusedScratch { dq_partial: BufferViewMut::of(dq_partial), locks: BufferViewMut::of(locks), chains: 1 });
        let mut guard = self.scratch.lock().map_err(|_| "scratch buffers poisoned".to_string())?;
        let (g, delta) = &mut *guard;
        let [q, k, v, d_o] = &self.inputs;
        let lay = |x: crate::LayoutError| x.to_string();
        let Gradients { dq, dk, dv } = g;
        let [z, h, n, _] = q.layout.shape;
        let args = BackwardArgs {
            geometry: crate::kernel::KernelGeometry::square(z, h, n),
            q: q.view("Q").map_err(lay)?,
            k: k.view("K").map_err(lay)?,
            v: v.view("V").map_err(lay)?,
            o: self.o.view("O").map_err(lay)?,
            d_o: d_o.view("dO").map_err(lay)?,
            m: BufferView::of(&self.m),
            delta: BufferViewMut::of(delta),
            dq: dq.view_mut("dQ").map_err(lay)?,
            dk: dk.view_mut("dK").map_err(lay)?,
            dv: dv.view_mut("dV").map_err(lay)?,
            sm_scale: 1.0 / (q.layout.shape[3] as f32).sqrt(),
            fused,
            softcap: 1.0,
            modifier_tensors: [0; flashgen::spec::MOD_TENSORS],
        };
        kernels.launch_only(&self.flash.gpu, self.flash.own_stream(), args, kind).map_err(e)
    }

    /// The candidate's outputs (dK and dV, or dQ) of three heads, on the host (16-bit values).
    fn run(&self, spec: &KernelSpec) -> Result<Vec<u16>, String> {
        self.launch(spec, self.kind)?;
        let guard = self.scratch.lock().map_err(|_| "scratch buffers poisoned".to_string())?;
        let g = &guard.0;
        match self.kind.role() {
            KernelKind::BwdDkdv if self.kind.fuses_dq() => Ok([three_heads(self.flash, &g.dk)?, three_heads(self.flash, &g.dv)?, three_heads(self.flash, &g.dq)?].concat()),
            KernelKind::BwdDkdv => Ok([three_heads(self.flash, &g.dk)?, three_heads(self.flash, &g.dv)?].concat()),
            _ => three_heads(self.flash, &g.dq),
        }
    }
}

impl Candidates for BackwardCandidates<'_> {
    fn prepare(&self, spec: &KernelSpec) -> Result<(), String> {
        self.flash.prepare(spec).map(|_| ()).map_err(|e| e.to_string())
    }

    fn verify(&self, spec: &KernelSpec) -> Result<f64, String> {
        let default = if self.kind.role() == KernelKind::BwdDkdv { Some(self.defaults.dkdv) } else { self.defaults.dq };
        let default = default.ok_or_else(|| format!("{}: the family's defaults have no dQ kernel", self.defaults.dkdv.name()))?;
        let reference = self.reference.get_or_init(|| self.run(&default)).as_ref().map_err(|e| format!("default config: {e}"))?;
        Ok(relative_error_bits(spec.dtype(), &self.run(spec)?, reference))
    }

    fn time(&self, spec: &KernelSpec, cutoff_ms: f64) -> Result<Timing, String> {
        time_launches(self.flash, cutoff_ms, || self.launch(spec, self.kind))
    }
}
