//! GPU tests of the geometry (grouped-query heads, unequal lengths in both causal alignments, packed
//! variable-length sequences, rows that see no key) on every kernel kind, through the runtime's view-level
//! launch (`LoadedKernel::launch`, `BackwardKernels::launch`) with a `KernelGeometry`, against the CPU f64
//! reference (flashgen::reference). Outputs are poisoned with NaN and framed by guard zones (and, packed,
//! rows past the last sequence) that must come back untouched. #[ignore]d: they need an H200 (sm_90a;
//! the mma.sync kinds run there too), and run on the device machine:
//!
//!   cargo test --release -p flashgen-tests --test gpu_geometry -- --ignored --test-threads 1
//!
//! The CPU references run on all cores (std threads); the kernels take milliseconds.

use std::sync::Arc;

use cudarc::driver::CudaSlice;
use flashgen::reference::{self, relative_error, Alignment, Qkv, RefProblem, SplitMix, TensorOrder};
use flashgen::{Arch, BackwardSpecs, DType, KernelKind, KernelSpec, Problem};
use flashgen_runtime::cudarc;
use flashgen_runtime::kernel::KernelGeometry;
use flashgen_runtime::{BackwardArgs, BackwardKernels, BufferView, BufferViewMut, Flash, ForwardArgs, FusedScratch, Gpu, KernelCache, Layout, LoadedKernel, Tensor, TensorViewMut};

fn flash() -> Flash {
    Flash::new(Gpu::open(0).expect("a CUDA GPU is required for this test"), KernelCache::new(None, flashgen_runtime::KernelSource::default_source()))
}

/// Elements of poison before and after every output buffer, and rows of poison past a packed tensor's
/// last sequence.
const GUARD: usize = 2048;
const PAD_ROWS: usize = 37;

/// The sequences of a case.
#[derive(Clone, Debug)]
enum Lens {
    Fixed { batch: usize, n_q: usize, n_kv: usize },
    /// Packed: each sequence's query and key lengths.
    Packed { q: Vec<usize>, k: Vec<usize> },
}

#[derive(Clone, Debug)]
struct Case {
    dtype: DType,
    d: usize,
    heads: usize,
    kv_heads: usize,
    causal: bool,
    bottom_right: bool,
    lens: Lens,
}

fn cumulative(n: &[usize]) -> Vec<usize> {
    std::iter::once(0).chain(n.iter().scan(0, |acc, &x| {
        *acc += x;
        Some(*acc)
    }))
    .collect()
}

impl Case {
    fn packed(&self) -> bool {
        matches!(self.lens, Lens::Packed { .. })
    }
    fn batch(&self) -> usize {
        match &self.lens {
            Lens::Fixed { batch, .. } => *batch,
            Lens::Packed { q, .. } => q.len(),
        }
    }
    /// The longest query and key lengths (the grid's).
    fn longest(&self) -> (usize, usize) {
        match &self.lens {
            Lens::Fixed { n_q, n_kv, .. } => (*n_q, *n_kv),
            Lens::Packed { q, k } => (q.iter().copied().max().unwrap_or(0), k.iter().copied().max().unwrap_or(0)),
        }
    }
    /// The packed tensors' rows (the sequences and PAD_ROWS of poison), or N for fixed lengths.
    fn rows(&self) -> (usize, usize) {
        match &self.lens {
            Lens::Fixed { n_q, n_kv, .. } => (*n_q, *n_kv),
            Lens::Packed { q, k } => (q.iter().sum::<usize>() + PAD_ROWS, k.iter().sum::<usize>() + PAD_ROWS),
        }
    }
    fn problem(&self) -> RefProblem {
        let align = if self.bottom_right { Alignment::BottomRight } else { Alignment::TopLeft };
        let p = RefProblem::new(self.batch(), self.heads, 0, self.d).kv_heads(self.kv_heads).causal(self.causal).alignment(align).order(TensorOrder::Bshd);
        match &self.lens {
            Lens::Fixed { n_q, n_kv, .. } => p.seqlens(*n_q, *n_kv),
            Lens::Packed { q, k } => p.varlen_from_lengths(q, k),
        }
    }
    /// Q, O, dO, dQ: [B, H, N_q, D] in BSHD memory, or packed [1, H, total_q, D] (THD).
    fn q_layout(&self) -> Layout {
        let (nq, _) = self.rows();
        Layout::bshd(if self.packed() { 1 } else { self.batch() }, self.heads, nq, self.d)
    }
    fn k_layout(&self) -> Layout {
        let (_, nk) = self.rows();
        Layout::bshd(if self.packed() { 1 } else { self.batch() }, self.kv_heads, nk, self.d)
    }
    fn geometry(&self, cu_q: u64, cu_k: u64) -> KernelGeometry {
        let (mq, mk) = self.longest();
        let (tq, tk) = self.rows();
        if self.packed() {
            KernelGeometry::packed(self.batch(), self.heads, self.kv_heads, mq, mk, tq, tk, self.bottom_right, cu_q, cu_k)
        } else {
            KernelGeometry::fixed(self.batch(), self.heads, self.kv_heads, mq, mk, self.bottom_right)
        }
    }
    /// The problem as the plan sees it (its features: packed sequences, rows that may see no key).
    fn plan_problem(&self) -> Problem {
        let (mq, mk) = self.longest();
        Problem { dtype: self.dtype, head_dim: self.d as u32, causal: self.causal, seqlen: mq.max(1), seqlen_k: mk, varlen: self.packed(), bottom_right: self.bottom_right, ..Problem::new(self.dtype, 64, false, 1) }
    }
    /// The kernel's M row of query row i of sequence b, head h.
    fn m_index(&self, g: &KernelGeometry, b: usize, h: usize, q_start: usize, i: usize) -> usize {
        if self.packed() {
            h * g.total_q + q_start + i
        } else {
            (b * self.heads + h) * g.seqlen_q + i
        }
    }
}

/// `spec` of a kind at this case's features (the table's tiles at the longest length).
fn spec_of(kind: KernelKind, arch: Arch, case: &Case) -> KernelSpec {
    let p = case.plan_problem();
    let s = flashgen::spec::defaults::spec(kind, arch, case.dtype, case.d as u32, case.causal, p.seqlen).unwrap();
    flashgen::plan::with_features(&s, p.features()).unwrap()
}

/// The forward kinds an H200 runs: mma.sync (built for sm_90a, as `check --mma-sync` runs them: the runtime
/// loads a module only for the GPU's own target), fwd_wgmma, fwd_ws, fwd_ws_persistent.
fn forward_specs(case: &Case) -> Vec<KernelSpec> {
    let mut v = vec![spec_of(KernelKind::Fwd, Arch::Sm90a, case)];
    for kind in [KernelKind::FwdWgmma, KernelKind::FwdWs, KernelKind::FwdWsPersistent] {
        v.push(spec_of(kind, Arch::Sm90a, case));
    }
    v
}

/// The backward families: mma.sync, the three wgmma kernels, and the fused kinds (causal: bwd_fused_up with
/// its grid folded, the default, and unfolded).
fn backward_families(case: &Case) -> Vec<BackwardSpecs> {
    let p = case.plan_problem();
    let mut kinds = vec![(KernelKind::BwdDkdv, Arch::Sm90a), (KernelKind::BwdDkdvWgmma, Arch::Sm90a), (KernelKind::BwdFused, Arch::Sm90a), (KernelKind::BwdFusedAtomic, Arch::Sm90a)];
    if case.causal {
        kinds.push((KernelKind::BwdFusedUp, Arch::Sm90a));
    }
    let mut families: Vec<BackwardSpecs> = Vec::new();
    for (kind, arch) in kinds {
        match flashgen::plan::backward_family(kind, arch, &p) {
            Ok(family) => families.push(family),
            // bwd_fused on 128-row query blocks (HEAD_DIM 64) refuses causal packed sequences by name (8 B of
            // spills); the plan runs them on bwd_fused_up, which this list holds for every causal case
            Err(e) if kind == KernelKind::BwdFused && case.causal && p.varlen && e.to_string().contains("spill its registers") => {}
            Err(e) => panic!("{kind:?} at {p:?}: {e}"),
        }
    }
    if let Some(up) = families.iter().find(|f| f.dkdv.fold_key_blocks()) {
        families.push(unfolded(up));
    }
    families
}

/// bwd_fused_up with its grid unfolded (`fold_key_blocks=off`): one key block a program, as before the fold.
fn unfolded(specs: &BackwardSpecs) -> BackwardSpecs {
    let off = flashgen::ScheduleOverrides { fold_key_blocks: Some(false), ..flashgen::ScheduleOverrides::NONE };
    let dkdv = KernelSpec::with_features(*specs.dkdv.params(), off, specs.dkdv.features()).unwrap();
    BackwardSpecs { dkdv, ..*specs }
}

fn nan_bits(dtype: DType) -> u16 {
    match dtype {
        DType::Bf16 => 0x7FC1,
        DType::F16 => 0x7E01,
    }
}
const NAN_F32: u32 = 0x7FC0_0123;

/// Random inputs rounded to the dtype, in raw memory (the layout's extent): the reference reads the same.
fn random_raw(rng: &mut SplitMix, dtype: DType, layout: Layout) -> Vec<f32> {
    let round = |x: f32| flashgen_runtime::tensor::from_bits(dtype, flashgen_runtime::tensor::to_bits(dtype, x));
    (0..layout.extent()).map(|_| round(rng.normal())).collect()
}

fn upload(f: &Flash, raw: &[f32], dtype: DType, layout: Layout) -> Tensor {
    let bits: Vec<u16> = raw.iter().map(|&x| flashgen_runtime::tensor::to_bits(dtype, x)).collect();
    Tensor { data: f.gpu.stream.clone_htod(&bits).unwrap(), dtype, layout }
}

/// An output tensor inside a buffer of NaN with GUARD elements on either side.
struct Guarded {
    buf: CudaSlice<u16>,
    dtype: DType,
    layout: Layout,
}

impl Guarded {
    fn new(f: &Flash, dtype: DType, layout: Layout) -> Guarded {
        Guarded { buf: f.gpu.stream.clone_htod(&vec![nan_bits(dtype); layout.extent() + 2 * GUARD]).unwrap(), dtype, layout }
    }
    fn view_mut(&mut self, name: &'static str) -> TensorViewMut<'_> {
        TensorViewMut::of_slice(name, &mut self.buf, GUARD, self.dtype, self.layout).unwrap()
    }
    /// The tensor's raw memory as f32 (its extent), after checking the guards kept their poison.
    fn download(&self, f: &Flash, what: &str) -> Vec<f32> {
        let mem: Vec<u16> = f.gpu.stream.clone_dtoh(&self.buf).unwrap();
        let nan = nan_bits(self.dtype);
        let (before, rest) = mem.split_at(GUARD);
        let (body, after) = rest.split_at(self.layout.extent());
        assert!(before.iter().chain(after).all(|&b| b == nan), "{what}: a write outside the tensor");
        body.iter().map(|&b| flashgen_runtime::tensor::from_bits(self.dtype, b)).collect()
    }
}

/// f32 rows (M, Δ) inside NaN with GUARD floats on either side.
struct GuardedRows {
    buf: CudaSlice<u32>,
    len: usize,
}

impl GuardedRows {
    fn new(f: &Flash, len: usize) -> GuardedRows {
        GuardedRows { buf: f.gpu.stream.clone_htod(&vec![NAN_F32; len + 2 * GUARD]).unwrap(), len }
    }
    fn addr(&self) -> u64 {
        use cudarc::driver::DevicePtr;
        let (addr, _sync) = self.buf.device_ptr(self.buf.stream());
        addr + 4 * GUARD as u64
    }
    fn view_mut(&mut self) -> BufferViewMut<'_, f32> {
        // SAFETY: the buffer holds GUARD + len + GUARD words, alive and exclusively borrowed for the view
        unsafe { BufferViewMut::from_raw_parts(self.addr(), self.len) }
    }
    fn view(&self) -> BufferView<'_, f32> {
        // SAFETY: as view_mut, shared
        unsafe { BufferView::from_raw_parts(self.addr(), self.len) }
    }
    fn download(&self, f: &Flash, what: &str) -> Vec<f32> {
        let mem: Vec<u32> = f.gpu.stream.clone_dtoh(&self.buf).unwrap();
        let (before, rest) = mem.split_at(GUARD);
        let (body, after) = rest.split_at(self.len);
        assert!(before.iter().chain(after).all(|&b| b == NAN_F32), "{what}: a write outside the row statistics");
        body.iter().map(|&b| f32::from_bits(b)).collect()
    }
}

/// Device copies of a case's offsets (or none for fixed lengths).
fn offsets(f: &Flash, case: &Case) -> Option<(CudaSlice<i32>, CudaSlice<i32>)> {
    let Lens::Packed { q, k } = &case.lens else { return None };
    let dev = |n: &[usize]| f.gpu.stream.clone_htod(&cumulative(n).iter().map(|&x| x as i32).collect::<Vec<_>>()).unwrap();
    Some((dev(q), dev(k)))
}

fn addr_of(s: &CudaSlice<i32>) -> u64 {
    use cudarc::driver::DevicePtr;
    s.device_ptr(s.stream()).0
}

/// Launch one forward kernel on a case's inputs into fresh guarded outputs; returns (O, M) raw.
fn run_forward(f: &Flash, spec: &KernelSpec, g: KernelGeometry, q: &Tensor, k: &Tensor, v: &Tensor, case: &Case) -> (Vec<f32>, Vec<f32>) {
    let kernel: Arc<LoadedKernel> = f.kernel(spec).unwrap();
    let mut o = Guarded::new(f, case.dtype, case.q_layout());
    let mut m = GuardedRows::new(f, g.stat_rows());
    let mut counter = f.gpu.stream.alloc_zeros::<u32>(2).unwrap();
    let (qv, kv, vv) = (q.view("Q").unwrap(), k.view("K").unwrap(), v.view("V").unwrap());
    let maps = spec.kind().warp_specialized_forward().then(|| flashgen_runtime::tma::forward_maps(spec, &qv, &kv, &vv).unwrap());
    let tile_counter = spec.kind().persistent().then(|| BufferViewMut::of(&mut counter));
    let args = ForwardArgs { geometry: g, q: qv, k: kv, v: vv, o: o.view_mut("O"), m: m.view_mut(), softcap: 1.0, modifier_tensors: [0; 4], sm_scale: 1.0 / (case.d as f32).sqrt(), maps, tile_counter };
    kernel.launch(&f.gpu, f.own_stream(), args).unwrap();
    f.gpu.stream.synchronize().unwrap();
    let what = spec.name();
    (o.download(f, &what), m.download(f, &what))
}

/// The outputs of one backward pass: dQ, dK, dV raw.
struct Grads {
    dq: Vec<f32>,
    dk: Vec<f32>,
    dv: Vec<f32>,
}

#[allow(clippy::too_many_arguments)]
fn run_backward(f: &Flash, specs: &BackwardSpecs, g: KernelGeometry, inputs: [&Tensor; 5], m: &GuardedRows, case: &Case) -> Grads {
    let [q, k, v, o, d_o] = inputs;
    let pre = f.kernel(&specs.preprocess).unwrap();
    let dkdv = f.kernel(&specs.dkdv).unwrap();
    let dq_k = specs.dq.map(|s| f.kernel(&s).unwrap());
    let kernels = BackwardKernels { preprocess: &pre, dkdv: &dkdv, dq: dq_k.as_deref() };
    let (mut dq, mut dk, mut dv) = (Guarded::new(f, case.dtype, case.q_layout()), Guarded::new(f, case.dtype, case.k_layout()), Guarded::new(f, case.dtype, case.k_layout()));
    let mut delta = GuardedRows::new(f, g.stat_rows());
    let chains = flashgen::plan::dq_chains(&specs.dkdv, None);
    let (partial_len, locks_len) = FusedScratch::lengths(&specs.dkdv, &g, chains);
    let mut partial = f.gpu.stream.alloc_zeros::<f32>(partial_len.max(1)).unwrap();
    let mut locks = f.gpu.stream.alloc_zeros::<u32>(locks_len.max(1)).unwrap();
    let fused = specs.dkdv.kind().fuses_dq().then(|| FusedScratch { dq_partial: BufferViewMut::of(&mut partial), locks: BufferViewMut::of(&mut locks), chains });
    let args = BackwardArgs {
        geometry: g,
        q: q.view("Q").unwrap(),
        k: k.view("K").unwrap(),
        v: v.view("V").unwrap(),
        o: o.view("O").unwrap(),
        d_o: d_o.view("dO").unwrap(),
        m: m.view(),
        delta: delta.view_mut(),
        dq: dq.view_mut("dQ"),
        dk: dk.view_mut("dK"),
        dv: dv.view_mut("dV"),
        sm_scale: 1.0 / (case.d as f32).sqrt(),
        fused,
        softcap: 1.0,
        modifier_tensors: [0; 4],
    };
    kernels.launch(&f.gpu, f.own_stream(), args).unwrap();
    f.gpu.stream.synchronize().unwrap();
    let what = specs.names();
    Grads { dq: dq.download(f, &what), dk: dk.download(f, &what), dv: dv.download(f, &what) }
}

/// The reference forward and backward of a case, rows spread over the machine's cores.
struct Expected {
    o: Vec<f64>,
    m: Vec<f64>,
    grads: Option<reference::Gradients<f64>>,
}

fn expected(p: &RefProblem, x: &Qkv<'_>, d_o: Option<&[f32]>) -> Expected {
    let l = p.layouts();
    let rows: Vec<_> = p.rows().collect();
    let threads = std::thread::available_parallelism().map_or(8, |n| n.get());
    let mut o = vec![0f64; p.o_len()];
    let mut m = vec![0f64; p.lse_len()];
    let chunks: Vec<Vec<(usize, Vec<f64>, usize, f64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(rows.len().div_ceil(threads).max(1))
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|&r| {
                            let mut row = vec![0f64; p.d_v];
                            let lse = reference::forward_row(p, x, r, &mut row);
                            (p.o_offset(&l, r), row, p.lse_offset(&l, r), lse * reference::RCP_LN2)
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (at, row, mi, mv) in chunks.into_iter().flatten() {
        o[at..at + row.len()].copy_from_slice(&row);
        m[mi] = mv;
    }
    let grads = d_o.map(|d_o| {
        let mut g = reference::Gradients { dq: vec![0.0; p.q_len()], dk: vec![0.0; p.k_len()], dv: vec![0.0; p.v_len()] };
        let groups: Vec<(usize, usize)> = (0..p.sequences()).flat_map(|b| (0..p.kv_heads).map(move |hk| (b, hk))).collect();
        let parts: Vec<reference::GroupGradients> = std::thread::scope(|s| {
            let handles: Vec<_> = groups.iter().map(|&(b, hk)| s.spawn(move || reference::backward_group(p, x, d_o, b, hk))).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for part in parts {
            part.scatter(p, &l, &mut g);
        }
        g
    });
    Expected { o, m, grads }
}

/// Compare a kernel's O and M with the reference on every row of every sequence; packed, the rows past
/// the last sequence keep their poison.
fn check_forward(case: &Case, p: &RefProblem, g: &KernelGeometry, e: &Expected, o: &[f32], m: &[f32], what: &str) {
    let l = p.layouts();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let (mut m_got, mut m_want) = (Vec::new(), Vec::new());
    for r in p.rows() {
        let at = p.o_offset(&l, r);
        for c in 0..case.d {
            assert!(o[at + c].is_finite(), "{what}: O of row {r:?} col {c} is {}", o[at + c]);
            got.push(o[at + c]);
            want.push(e.o[at + c]);
        }
        let s = p.seq(r.b);
        m_got.push(m[case.m_index(g, r.b, r.h, s.q_start, r.i)]);
        m_want.push(e.m[p.lse_offset(&l, r)]);
    }
    let err = relative_error(&got, &want);
    assert!(err <= 1e-2, "{what}: O relative error {err:.3e}");
    let err = reference::relative_error_lse(&m_got, &m_want);
    assert!(err <= 1e-3, "{what}: M relative error {err:.3e}");
    if case.packed() {
        let total: usize = p.seq(p.sequences() - 1).q_start + p.seq(p.sequences() - 1).n_q;
        for h in 0..case.heads {
            for t in total..g.total_q {
                for c in 0..case.d {
                    let x = o[l.o.offset(0, h, t) + c];
                    assert!(x.is_nan(), "{what}: O of the unused row {t} (head {h}) was written: {x}");
                }
                assert!(m[h * g.total_q + t].is_nan(), "{what}: M of the unused row {t} (head {h}) was written");
            }
        }
    }
}

fn check_backward(case: &Case, p: &RefProblem, e: &Expected, got: &Grads, what: &str) {
    let l = p.layouts();
    let want = e.grads.as_ref().unwrap();
    let (mut dq, mut dq_want) = (Vec::new(), Vec::new());
    for r in p.rows() {
        let at = p.q_offset(&l, r);
        for c in 0..case.d {
            assert!(got.dq[at + c].is_finite(), "{what}: dQ of row {r:?} is {}", got.dq[at + c]);
            dq.push(got.dq[at + c]);
            dq_want.push(want.dq[at + c]);
        }
    }
    let (mut dk, mut dk_want, mut dv, mut dv_want) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for b in 0..p.sequences() {
        for hk in 0..case.kv_heads {
            for j in 0..p.seq(b).n_kv {
                let (ka, va) = (p.k_offset(&l, b, hk, j), p.v_offset(&l, b, hk, j));
                for c in 0..case.d {
                    assert!(got.dk[ka + c].is_finite() && got.dv[va + c].is_finite(), "{what}: dK/dV of key {j} (sequence {b}, K/V head {hk})");
                    dk.push(got.dk[ka + c]);
                    dk_want.push(want.dk[ka + c]);
                    dv.push(got.dv[va + c]);
                    dv_want.push(want.dv[va + c]);
                }
            }
        }
    }
    // dV's norm floors the denominators, as `flashgen check` does: where a row sees one key, P = 1 and
    // dS = P·(dP − Δ) = 0, so the exact dQ (and dK) is zero and the kernels' rounding of Δ is all that is left
    let norm = |x: &mut dyn Iterator<Item = f64>| x.map(|v| v * v).sum::<f64>().sqrt();
    let floor = norm(&mut dv_want.iter().copied());
    for (name, a, b) in [("dQ", &dq, &dq_want), ("dK", &dk, &dk_want), ("dV", &dv, &dv_want)] {
        let diff = norm(&mut a.iter().zip(b.iter()).map(|(&x, &y)| x as f64 - y));
        let err = diff / norm(&mut b.iter().copied()).max(floor).max(f64::MIN_POSITIVE);
        assert!(err <= 2e-2, "{what}: {name} relative error {err:.3e} (denominator floored by dV's norm)");
    }
}

/// Run every forward kind (and with `backward` every backward family) on a case, against the reference.
fn run_case(f: &Flash, case: &Case, seed: u64, backward: bool) {
    let p = case.problem();
    let mut rng = SplitMix(seed);
    let (ql, kl) = (case.q_layout(), case.k_layout());
    let (q, k, v, d_o) = (random_raw(&mut rng, case.dtype, ql), random_raw(&mut rng, case.dtype, kl), random_raw(&mut rng, case.dtype, kl), random_raw(&mut rng, case.dtype, ql));
    let x = Qkv { q: &q, k: &k, v: &v };
    let e = expected(&p, &x, backward.then_some(d_o.as_slice()));
    let (tq, tk, tv, tdo) = (upload(f, &q, case.dtype, ql), upload(f, &k, case.dtype, kl), upload(f, &v, case.dtype, kl), upload(f, &d_o, case.dtype, ql));
    let cu = offsets(f, case);
    let g = case.geometry(cu.as_ref().map_or(0, |c| addr_of(&c.0)), cu.as_ref().map_or(0, |c| addr_of(&c.1)));
    let mut forward_out = None;
    for spec in forward_specs(case) {
        let what = format!("{} on {case:?}", spec.name());
        let (o, m) = run_forward(f, &spec, g, &tq, &tk, &tv, case);
        check_forward(case, &p, &g, &e, &o, &m, &what);
        forward_out.get_or_insert((o, m));
    }
    if !backward {
        return;
    }
    // the backward's O and M: the forward's (fwd's, as a caller would pass them)
    let (o, m) = forward_out.unwrap();
    let to = upload(f, &o.iter().map(|x| if x.is_nan() { 0.0 } else { *x }).collect::<Vec<_>>(), case.dtype, ql);
    let mut mm = GuardedRows::new(f, g.stat_rows());
    let m_bits: Vec<u32> = std::iter::repeat_n(NAN_F32, GUARD).chain(m.iter().map(|x| x.to_bits())).chain(std::iter::repeat_n(NAN_F32, GUARD)).collect();
    f.gpu.stream.memcpy_htod(&m_bits, &mut mm.buf).unwrap();
    for specs in backward_families(case) {
        let what = format!("{} on {case:?}", specs.names());
        let got = run_backward(f, &specs, g, [&tq, &tk, &tv, &to, &tdo], &mm, case);
        check_backward(case, &p, &e, &got, &what);
    }
}

/// Grouped-query heads: H_kv 1, 2, 8 of H 8..64, fixed lengths (equal, and unequal both ways), forward and
/// backward on every kind.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn grouped_query_heads_match_f64() {
    let f = flash();
    for (i, (heads, kv_heads, n_q, n_kv, causal)) in [(8, 1, 333, 333, true), (8, 2, 200, 517, false), (16, 8, 517, 200, true), (64, 8, 130, 130, false), (32, 2, 64, 1100, true)].into_iter().enumerate() {
        for (dtype, d) in [(DType::Bf16, 64), (DType::F16, 128)] {
            let case = Case { dtype, d, heads, kv_heads, causal, bottom_right: true, lens: Lens::Fixed { batch: 2, n_q, n_kv } };
            run_case(&f, &case, 100 + i as u64, true);
        }
    }
}

/// Unequal lengths, ragged (not multiples of any block), N_kv < N_q and > N_q, causal in both alignments
/// (bottom-right with N_q > N_kv: the first N_q - N_kv rows see no key: O = 0, M = -inf, gradients 0) and
/// not, forward and backward, every kind.
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn unequal_lengths_match_f64_in_both_alignments() {
    let f = flash();
    let mut seed = 200;
    for (n_q, n_kv) in [(1, 1), (77, 333), (333, 77), (1000, 129), (129, 1000), (256, 1), (1, 700), (2049, 1500)] {
        for (causal, bottom_right) in [(false, true), (true, true), (true, false)] {
            for (dtype, d) in [(DType::Bf16, 128), (DType::F16, 64)] {
                let case = Case { dtype, d, heads: 4, kv_heads: 2, causal, bottom_right, lens: Lens::Fixed { batch: 1, n_q, n_kv } };
                seed += 1;
                run_case(&f, &case, seed, n_q * n_kv <= 1 << 21);
            }
        }
    }
}

/// Lengths in 0 ..= 4097 from a seed (zeros, ones and the longest included), equal or not per sequence.
fn varlen_lengths(seed: u64, equal: bool) -> (Vec<usize>, Vec<usize>) {
    let mut rng = SplitMix(seed);
    let mut q = vec![0, 1, 4097, 64, 65];
    for _ in 0..3 {
        q.push((rng.next_u64() % 4098) as usize);
    }
    let k = if equal { q.clone() } else { q.iter().map(|_| (rng.next_u64() % 4098) as usize).collect() };
    (q, k)
}

/// Packed variable-length sequences (lengths 0..4097 seeded), bf16 at D 64 and fp16 at D 128, causal or
/// not, equal and unequal lengths per sequence, grouped-query heads; forward and backward on every kind.
/// (Four dtype/head-dim pairs took over 300 s on the H200, mostly in the f64 reference; `flashgen check`
/// covers the other two on the default kernels.)
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn packed_sequences_match_f64() {
    let f = flash();
    let mut seed = 300;
    for (dtype, d) in [(DType::Bf16, 64), (DType::F16, 128)] {
        for causal in [false, true] {
            for equal in [true, false] {
                seed += 1;
                let (q, k) = varlen_lengths(seed, equal);
                let case = Case { dtype, d, heads: 4, kv_heads: 2, causal, bottom_right: true, lens: Lens::Packed { q, k } };
                run_case(&f, &case, seed, true);
            }
        }
    }
}

/// The backward with grouped heads sums dK and dV over each group in one fixed order: two runs give the
/// same bits on every deterministic kind (the ordered fused kinds' dQ too); bwd_fused_up's folded grid
/// (two key blocks a program) gives the unfolded grid's dK and dV bit for bit (each key block's sums run
/// in the same order either way; dQ's order of additions differs).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn grouped_backward_is_deterministic() {
    let f = flash();
    for (lens, causal) in [(Lens::Fixed { batch: 2, n_q: 1500, n_kv: 1500 }, true), (Lens::Fixed { batch: 1, n_q: 1111, n_kv: 2048 }, false), (Lens::Packed { q: vec![700, 0, 2049, 31], k: vec![700, 5, 2049, 31] }, true)] {
        let case = Case { dtype: DType::Bf16, d: 128, heads: 16, kv_heads: 2, causal, bottom_right: true, lens };
        let mut rng = SplitMix(400);
        let (ql, kl) = (case.q_layout(), case.k_layout());
        let t = |rng: &mut SplitMix, l: Layout| upload(&f, &random_raw(rng, case.dtype, l), case.dtype, l);
        let (tq, tk, tv, to, tdo) = (t(&mut rng, ql), t(&mut rng, kl), t(&mut rng, kl), t(&mut rng, ql), t(&mut rng, ql));
        let cu = offsets(&f, &case);
        let g = case.geometry(cu.as_ref().map_or(0, |c| addr_of(&c.0)), cu.as_ref().map_or(0, |c| addr_of(&c.1)));
        let (_, m) = run_forward(&f, &forward_specs(&case)[3], g, &tq, &tk, &tv, &case);
        let mut mm = GuardedRows::new(&f, g.stat_rows());
        let m_bits: Vec<u32> = std::iter::repeat_n(NAN_F32, GUARD).chain(m.iter().map(|x| x.to_bits())).chain(std::iter::repeat_n(NAN_F32, GUARD)).collect();
        f.gpu.stream.memcpy_htod(&m_bits, &mut mm.buf).unwrap();
        let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for specs in backward_families(&case) {
            let a = run_backward(&f, &specs, g, [&tq, &tk, &tv, &to, &tdo], &mm, &case);
            let b = run_backward(&f, &specs, g, [&tq, &tk, &tv, &to, &tdo], &mm, &case);
            assert!(bits(&a.dk) == bits(&b.dk) && bits(&a.dv) == bits(&b.dv), "{}: dK/dV differ between runs", specs.names());
            if !specs.dkdv.kind().dq_atomics() {
                assert!(bits(&a.dq) == bits(&b.dq), "{}: dQ differs between runs", specs.names());
            }
            if specs.dkdv.fold_key_blocks() {
                let u = run_backward(&f, &unfolded(&specs), g, [&tq, &tk, &tv, &to, &tdo], &mm, &case);
                assert!(bits(&a.dk) == bits(&u.dk) && bits(&a.dv) == bits(&u.dv), "{}: dK/dV differ between the folded and the unfolded grid", specs.names());
            }
        }
    }
}

/// Offsets that lie, on the GPU only (decreasing, negative, past the tensors, longer than the longest
/// length): every kind runs without a launch error and writes nothing outside its tensors (the guard zones
/// keep their poison). The numbers of the lying sequences are not checked. Run it under compute-sanitizer
/// (memcheck) as well: see the report of the geometry helper for the command. The ordered fused kinds are
/// left out: sequences that overlap make two programs wait for one turn of a lock, which they trap on
/// after 10 s (a launch error by design, no access out of bounds).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn lying_offsets_stay_inside_the_tensors() {
    let f = flash();
    let honest = Case { dtype: DType::Bf16, d: 128, heads: 4, kv_heads: 2, causal: true, bottom_right: true, lens: Lens::Packed { q: vec![300, 200, 500], k: vec![300, 700, 100] } };
    let (tq_rows, tk_rows) = honest.rows();
    let lies: [[i32; 4]; 4] = [[0, 500, 300, 1000], [-50, 100, i32::MAX, -1], [0, tq_rows as i32 + 999, 5, i32::MIN], [7, 7, 7, 7]];
    let mut rng = SplitMix(500);
    let (ql, kl) = (honest.q_layout(), honest.k_layout());
    let t = |rng: &mut SplitMix, l: Layout| upload(&f, &random_raw(rng, honest.dtype, l), honest.dtype, l);
    let (tq, tk, tv, to, tdo) = (t(&mut rng, ql), t(&mut rng, kl), t(&mut rng, kl), t(&mut rng, ql), t(&mut rng, ql));
    for (i, lie_q) in lies.iter().enumerate() {
        let lie_k = lies[(i + 1) % lies.len()];
        let cu_q = f.gpu.stream.clone_htod(&lie_q[..]).unwrap();
        let cu_k = f.gpu.stream.clone_htod(&lie_k[..]).unwrap();
        // the longest lengths given smaller than the real ones, too
        let g = KernelGeometry::packed(3, 4, 2, 256, 256, tq_rows, tk_rows, true, addr_of(&cu_q), addr_of(&cu_k));
        for spec in forward_specs(&honest) {
            run_forward(&f, &spec, g, &tq, &tk, &tv, &honest);
        }
        let mut mm = GuardedRows::new(&f, g.stat_rows());
        let zeros: Vec<u32> = std::iter::repeat_n(NAN_F32, GUARD).chain(std::iter::repeat_n(0u32, g.stat_rows())).chain(std::iter::repeat_n(NAN_F32, GUARD)).collect();
        f.gpu.stream.memcpy_htod(&zeros, &mut mm.buf).unwrap();
        for specs in backward_families(&honest).into_iter().filter(|s| !s.dkdv.kind().fuses_dq() || s.dkdv.kind().dq_atomics()) {
            run_backward(&f, &specs, g, [&tq, &tk, &tv, &to, &tdo], &mm, &honest);
        }
    }
}
