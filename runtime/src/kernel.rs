//! One loaded kernel of any kind, and the checks every launch shares.

use crate::cache::Entry;
use crate::tma::TensorMap;
use crate::{Gpu, Layout, LayoutError, RuntimeError};
use cudarc::driver::sys::CUfunction_attribute_enum;
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use cudarc::driver::{sys, CudaFunction, LaunchConfig};
use flashgen::abi::{Elem, Param, ParamType};
use flashgen::reference::Window;
use flashgen::KernelSpec;

/// A kernel loaded into a context, ready to launch; with the fused backward also its dQ sum pass
/// (`KernelSpec::dq_sum_entry`, the module's second entry).
pub struct LoadedKernel {
    pub spec: KernelSpec,
    /// The spec's name (its entry), formatted once at load for the launches' error messages.
    pub name: String,
    pub function: CudaFunction,
    pub shared_bytes: u32,
    pub dq_sum: Option<CudaFunction>,
    /// The most programs a persistent kernel launches: the GPU's SM count.
    pub programs: u32,
}

impl LoadedKernel {
    /// Load a cached entry's PTX (the driver compiles it, or finds it in its own cache) and raise the
    /// dynamic shared-memory limit the kernel needs.
    pub fn load(gpu: &Gpu, entry: &Entry) -> Result<LoadedKernel, RuntimeError> {
        let module = crate::jit::load_module(gpu, &entry.metadata.name, &entry.ptx)?;
        let function = module.load_function(&entry.metadata.name)?;
        let shared_bytes = entry.metadata.shared;
        if shared_bytes > 0 {
            function.set_attribute(CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes as i32)?;
        }
        let dq_sum = entry.metadata.spec.dq_sum_entry().map(|name| module.load_function(&name)).transpose()?;
        Ok(LoadedKernel { spec: entry.metadata.spec, name: entry.metadata.name.clone(), function, shared_bytes, dq_sum, programs: gpu.sm_count })
    }
}

/// The geometry group of a launch (`flashgen::abi::geometry`): what the kernels need to place every
/// program's rows. Fixed lengths: `batch` sequences of `seqlen_q` queries and `seqlen_k` keys, tensors
/// [batch, heads, seqlen_q, D] (Q, O, dO, dQ) and [batch, kv_heads, seqlen_k, D] (K, V, dK, dV), row
/// statistics [batch, heads, seqlen_q]. Packed variable-length sequences (`cu_seqlens_q` ≠ 0): `batch`
/// sequences in one [1, heads, total_q, D] and one [1, kv_heads, total_k, D] tensor, sequence b owning
/// query rows cu_seqlens_q[b] .. cu_seqlens_q[b + 1] and key rows cu_seqlens_k[b] .. (device i32 arrays
/// of batch + 1 offsets), `seqlen_q` / `seqlen_k` the longest lengths (the grid's), the row statistics
/// [heads, total_q]. Query head h reads K/V head h / (heads / kv_heads). `bottom_right`: a causal
/// diagonal aligned bottom-right (query i sees key j iff j <= i + N_kv - N_q), else top-left (j <= i).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelGeometry {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub seqlen_q: usize,
    pub seqlen_k: usize,
    pub bottom_right: bool,
    /// Device addresses of the packed sequences' offsets (i32, B + 1 each); 0 for fixed lengths.
    pub cu_seqlens_q: u64,
    pub cu_seqlens_k: u64,
    /// Rows of the packed Q/O and K/V tensors (for fixed lengths batch·seqlen_q and batch·seqlen_k).
    pub total_q: usize,
    pub total_k: usize,
    /// A sliding window around the aligned diagonal (`Window`; window kernels read it, others ignore it).
    pub window: Window,
}

/// The bound the kernels take for an unbounded side of a window (WINDOW_LEFT, WINDOW_RIGHT): far past any
/// 32-bit row, with room for the kernels' sums of rows and offsets.
pub const WINDOW_UNBOUNDED: i32 = 1 << 30;

/// WINDOW_LEFT, WINDOW_RIGHT as the kernels take them (a bound past 2^30 keys is unbounded there).
pub fn window_bounds(w: &Window) -> (i32, i32) {
    let bound = |b: Option<usize>| b.map_or(WINDOW_UNBOUNDED, |b| b.min(WINDOW_UNBOUNDED as usize) as i32);
    (bound(w.left), bound(w.right))
}

impl KernelGeometry {
    /// Z·H heads of N rows, queries and keys alike (what the equal-length MHA calls pass).
    pub fn square(z: usize, h: usize, n: usize) -> KernelGeometry {
        KernelGeometry::fixed(z, h, h, n, n, true)
    }

    /// Fixed lengths: `batch` sequences of `seqlen_q` queries and `seqlen_k` keys; `heads` query heads
    /// reading `kv_heads` K/V heads.
    pub fn fixed(batch: usize, heads: usize, kv_heads: usize, seqlen_q: usize, seqlen_k: usize, bottom_right: bool) -> KernelGeometry {
        let (total_q, total_k) = (batch * seqlen_q, batch * seqlen_k);
        KernelGeometry { batch, heads, kv_heads, seqlen_q, seqlen_k, bottom_right, cu_seqlens_q: 0, cu_seqlens_k: 0, total_q, total_k, window: Window::UNBOUNDED }
    }

    /// Packed sequences: `batch` of them, their offsets at the device addresses `cu_seqlens_q`,
    /// `cu_seqlens_k` (i32 [batch + 1]), the longest lengths `max_seqlen_q`, `max_seqlen_k`, and the packed
    /// tensors' rows `total_q`, `total_k`.
    #[allow(clippy::too_many_arguments)]
    pub fn packed(batch: usize, heads: usize, kv_heads: usize, max_seqlen_q: usize, max_seqlen_k: usize, total_q: usize, total_k: usize, bottom_right: bool, cu_seqlens_q: u64, cu_seqlens_k: u64) -> KernelGeometry {
        KernelGeometry { batch, heads, kv_heads, seqlen_q: max_seqlen_q, seqlen_k: max_seqlen_k, bottom_right, cu_seqlens_q, cu_seqlens_k, total_q, total_k, window: Window::UNBOUNDED }
    }

    /// Packed variable-length sequences (offsets given).
    pub fn is_packed(&self) -> bool {
        self.cu_seqlens_q != 0 || self.cu_seqlens_k != 0
    }

    /// The rows of the row statistics (M, Δ): batch·heads·seqlen_q, or heads·total_q when packed.
    pub fn stat_rows(&self) -> usize {
        if self.is_packed() {
            self.heads * self.total_q
        } else {
            self.batch * self.heads * self.seqlen_q
        }
    }

    /// The shape of Q, O, dO and dQ: [batch, heads, seqlen_q, D], or [1, heads, total_q, D] when packed.
    pub fn query_shape(&self, d: usize) -> [usize; 4] {
        if self.is_packed() {
            [1, self.heads, self.total_q, d]
        } else {
            [self.batch, self.heads, self.seqlen_q, d]
        }
    }

    /// The shape of K, V, dK and dV: [batch, kv_heads, seqlen_k, D], or [1, kv_heads, total_k, D] when packed.
    pub fn key_shape(&self, d: usize) -> [usize; 4] {
        if self.is_packed() {
            [1, self.kv_heads, self.total_k, d]
        } else {
            [self.batch, self.kv_heads, self.seqlen_k, d]
        }
    }

    /// What the launch grid depends on (`KernelSpec::grid`); counts checked by `check_problem`.
    pub fn grid(&self) -> flashgen::spec::GridGeometry {
        let c = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        flashgen::spec::GridGeometry { batch: c(self.batch), heads: c(self.heads), kv_heads: c(self.kv_heads), seqlen_q: c(self.seqlen_q), seqlen_k: c(self.seqlen_k) }
    }
}

/// The operands as wide as V (`KernelSpec::value_dim`); the others are as wide as Q and K.
const VALUE_SIDE: [&str; 4] = ["V", "O", "dO", "dV"];

/// The checks every launch makes, at one place, against the launch's geometry `g`: the heads (H a multiple
/// of H_KV), the kernel's features (packed kernels for packed sequences; rows that may see no key need
/// `empty_rows`), each query-side operand (`queries`: Q, O, dO, dQ) and key-side operand (`keys`: K, V, dK,
/// dV) against its shape (`KernelGeometry::query_shape`, `key_shape`) and its layout (its view was
/// checked against its memory when it was made), the kernel's head dims (V, O, dO, dV its value head
/// dim), the f32 row vectors (M, Δ) against `stat_rows`, sm_scale, 32-bit row indices and the grid's limits.
pub fn check_problem(
    spec: &KernelSpec,
    g: &KernelGeometry,
    queries: &[(&'static str, Layout)],
    keys: &[(&'static str, Layout)],
    rows: &[(&'static str, usize)],
    sm_scale: Option<f32>,
) -> Result<(), RuntimeError> {
    let arg = |msg: String| Err(RuntimeError::Argument(format!("{}: {msg}", spec.name())));
    if g.heads == 0 || g.kv_heads == 0 || !g.heads.is_multiple_of(g.kv_heads) {
        return arg(format!("{} query heads and {} K/V heads: the query heads must be a positive multiple of the K/V heads (query head h reads K/V head h / (H / H_KV))", g.heads, g.kv_heads));
    }
    let packed = g.is_packed();
    if packed != spec.features().varlen {
        let (has, wants) = if packed { ("packed sequences", "a kernel with Features::varlen") } else { ("fixed lengths", "a kernel without Features::varlen") };
        return arg(format!("the launch has {has}: it needs {wants} (flashgen::plan sets the features from the problem)"));
    }
    if packed && (g.cu_seqlens_q == 0 || g.cu_seqlens_k == 0) {
        return arg("packed sequences need both cu_seqlens_q and cu_seqlens_k".into());
    }
    // rows that see no key: causal bottom-right with more queries than keys, or any packed causal
    // sequence; only kernels with the guard (Features::empty_rows) may run them
    let starved = spec.causal() && (packed || (g.bottom_right && g.seqlen_q > g.seqlen_k));
    if starved && !spec.features().empty_rows {
        return arg(format!("rows may see no key (causal, {} queries and {} keys aligned {}): it needs a kernel with Features::empty_rows", g.seqlen_q, g.seqlen_k, if packed { "per sequence" } else { "bottom-right" }));
    }
    if !packed && g.seqlen_k == 0 && g.seqlen_q > 0 {
        return arg("no keys (N_kv = 0) for fixed-length queries: there is nothing to attend to".into());
    }
    let (d, dv) = (spec.head_dim() as usize, spec.value_dim() as usize);
    for (list, side) in [(queries, KernelGeometry::query_shape as fn(&KernelGeometry, usize) -> [usize; 4]), (keys, KernelGeometry::key_shape)] {
        for &(name, layout) in list {
            layout.check(name, layout.extent())?;
            // (V and what has its width, O, dO, dV: the kernel's value head dim)
            let (width, which) = if VALUE_SIDE.contains(&name) { (dv, "value head dim") } else { (d, "HEAD_DIM") };
            let want = side(g, width);
            if layout.shape != want {
                let what = if layout.shape[3] != width { format!(" (the kernel's {which} is {width})") } else { String::new() };
                return Err(LayoutError { tensor: name, rule: format!("shape {:?} differs from the geometry's {want:?}{what}", layout.shape) }.into());
            }
        }
    }
    let stat_rows = g.stat_rows();
    for &(name, len) in rows {
        if len < stat_rows {
            let rule = if packed { format!("holds {len} floats, needs H·total_q = {stat_rows}") } else { format!("holds {len} floats, needs Z·H·N = {stat_rows}") };
            return Err(LayoutError { tensor: name, rule }.into());
        }
    }
    if let Some(s) = sm_scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(LayoutError { tensor: "sm_scale", rule: format!("{s} must be finite and positive") }.into());
        }
    }
    // row indices and counts are 32-bit in the kernels
    let fits_i32 = |x: usize| x <= i32::MAX as usize;
    let tile = spec.block_m().max(spec.block_n()) as usize;
    let counts = [stat_rows, g.seqlen_q + tile, g.seqlen_k + tile, g.total_q + tile, g.total_k + tile, g.batch * g.heads, g.batch + 1];
    if !counts.iter().all(|&x| fits_i32(x)) {
        return arg(format!("the geometry {g:?} overflows the kernels' 32-bit row indices"));
    }
    let (_, grid_y, _) = spec.grid(&g.grid(), 1);
    if grid_y > 65_535 {
        return arg(format!("{grid_y} heads (Z·H, or Z·H_KV for dK/dV) exceed the 65535 grid rows of one launch"));
    }
    // the persistent kernel numbers its tiles (blocks of every head) in 32 bits
    if spec.kind().persistent() && !fits_i32(g.seqlen_q.div_ceil(spec.block_m() as usize) * g.batch * g.heads) {
        return arg("the persistent kernel's tiles overflow its 32-bit tile numbers".into());
    }
    if spec.schedule().persistent_tiles && !fits_i32(g.seqlen_k.div_ceil(spec.block_n() as usize).saturating_mul(g.batch * g.kv_heads)) {
        return arg("the persistent backward's tiles (key blocks of every K/V head) overflow its 32-bit tile numbers".into());
    }
    Ok(())
}

/// The launch configuration of a spec on a geometry: its grid, 32·num_warps threads, its shared memory.
pub fn launch_config(k: &LoadedKernel, g: &KernelGeometry) -> LaunchConfig {
    let (gx, gy, gz) = k.spec.grid(&g.grid(), k.programs);
    LaunchConfig { grid_dim: (gx, gy, gz), block_dim: (k.spec.threads(), 1, 1), shared_mem_bytes: k.shared_bytes }
}

/// A layout's four strides as the kernels take them (i64 elements).
pub fn strides(l: &Layout) -> [i64; 4] {
    l.strides.map(|s| s as i64)
}

/// One named value of a launch: device addresses (of views the caller holds for the launch), scalars, maps.
enum Value {
    /// A [Z, H, N, D] tensor of the kernel's dtype: its address and its strides (the tensor's stride
    /// parameters take them).
    Tensor(u64, [i64; 4]),
    /// The address of an f32, u32 or i32 buffer (its `ValueKind` says which).
    Buffer(u64, ValueKind),
    F32(f32),
    I32(i32),
    Map(TensorMap),
}

/// What a launch gives for a parameter, as `argument_order` checks it against the parameter's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueKind {
    Tensor,
    F32s,
    U32s,
    I32s,
    Words,
    F32,
    I32,
    Map,
}

impl ValueKind {
    fn describe(self) -> &'static str {
        match self {
            ValueKind::Tensor => "a tensor of the kernel's dtype (KernelArgs::tensor)",
            ValueKind::F32s => "an f32 buffer (KernelArgs::f32s)",
            ValueKind::U32s => "a u32 buffer (KernelArgs::u32s)",
            ValueKind::I32s => "an i32 buffer (KernelArgs::i32s)",
            ValueKind::Words => "a modifier tensor's address, or 0 (KernelArgs::modifier_tensors)",
            ValueKind::F32 => "an f32 (KernelArgs::f32)",
            ValueKind::I32 => "an i32 (KernelArgs::i32)",
            ValueKind::Map => "a CUtensorMap (KernelArgs::map)",
        }
    }
    /// The value a parameter of type `ty` takes (a stride: the tensor it belongs to).
    fn of(ty: ParamType) -> ValueKind {
        match ty {
            ParamType::Pointer { elem: Elem::DType, .. } | ParamType::Stride { .. } => ValueKind::Tensor,
            ParamType::Pointer { elem: Elem::F32, .. } => ValueKind::F32s,
            ParamType::Pointer { elem: Elem::U32, .. } => ValueKind::U32s,
            ParamType::Pointer { elem: Elem::I32, .. } => ValueKind::I32s,
            ParamType::Pointer { elem: Elem::Word, .. } => ValueKind::Words,
            ParamType::F32 => ValueKind::F32,
            ParamType::I32 => ValueKind::I32,
            ParamType::TensorMap { .. } => ValueKind::Map,
        }
    }
}

/// Which part of which supplied value a parameter takes: the value itself, or one of a tensor's strides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    pub value: usize,
    pub stride: Option<usize>,
}

/// The order in which the `supplied` values (name, kind) fill the parameter list `params` of `entry`: one
/// pick per parameter. Refuses a parameter without a value, a value of the wrong kind, a name given twice
/// and a value that no parameter takes (each names the parameter and what to pass).
pub fn argument_order(entry: &str, params: &[Param], supplied: &[(&str, ValueKind)]) -> Result<Vec<Pick>, RuntimeError> {
    let err = |detail: String| RuntimeError::Argument(format!("{entry}: {detail} (the parameter list: flashgen::abi, docs/ABI.md)"));
    for (i, (name, _)) in supplied.iter().enumerate() {
        if supplied[..i].iter().any(|(n, _)| n == name) {
            return Err(err(format!("`{name}` is given twice")));
        }
    }
    let mut used = vec![false; supplied.len()];
    let mut picks = Vec::with_capacity(params.len());
    for (i, p) in params.iter().enumerate() {
        let (source, stride) = match p.ty {
            ParamType::Stride { tensor, axis } => (tensor, Some(axis)),
            _ => (p.name, None),
        };
        let Some(value) = supplied.iter().position(|(n, _)| *n == source) else {
            return Err(err(format!("parameter #{i} `{}` ({}) has no value: pass `{source}`", p.name, p.meaning)));
        };
        let (want, got) = (ValueKind::of(p.ty), supplied[value].1);
        if want != got {
            return Err(err(format!("parameter #{i} `{}` takes {}, the launch gives {}", p.name, want.describe(), got.describe())));
        }
        used[value] = true;
        picks.push(Pick { value, stride });
    }
    if let Some(extra) = used.iter().position(|u| !u) {
        return Err(err(format!("`{}` is not a parameter of this kernel", supplied[extra].0)));
    }
    Ok(picks)
}

/// Orders (parameter list, supplied values) this thread has launched with, newest last: a kernel's launches
/// give the same values in the same order every time, and `argument_order`'s search costs a small call
/// about 2 µs of host time on the H200's host (cli/examples/hostcost.rs: the launch 8.3 µs, of which the
/// driver's cuLaunchKernel 4.0).
const REMEMBERED_ORDERS: usize = 32;

/// One remembered order: the parameter list, the values as supplied (name, kind), the picks.
type Order = (&'static [Param], Vec<(&'static str, ValueKind)>, Vec<Pick>);

thread_local! {
    static ORDERS: std::cell::RefCell<Vec<Order>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `argument_order`, from this thread's remembered orders when the same static list met the same values
/// (an error is never remembered: it is found again).
pub fn remembered_order(entry: &str, params: &'static [Param], supplied: Vec<(&'static str, ValueKind)>) -> Result<Vec<Pick>, RuntimeError> {
    let same_list = |list: &[Param]| std::ptr::eq(list, params);
    let known = ORDERS.with(|o| o.borrow().iter().rev().find(|(list, values, _)| same_list(list) && *values == supplied).map(|(_, _, picks)| picks.clone()));
    if let Some(picks) = known {
        return Ok(picks);
    }
    let picks = argument_order(entry, params, &supplied)?;
    ORDERS.with(|o| {
        let mut o = o.borrow_mut();
        if o.len() == REMEMBERED_ORDERS {
            o.remove(0);
        }
        o.push((params, supplied, picks.clone()));
    });
    Ok(picks)
}

/// The values of one launch, by parameter name. `launch` walks the entry's parameter list
/// (`flashgen::abi`, the list the kernel's `define` line was rendered from) and passes the values in its
/// order: no launch writes an argument order by hand, and a value missing, surplus, of the wrong kind, or
/// at an address its parameter's alignment does not allow is an error before anything reaches the driver.
/// The views a launch takes are borrowed for `'a`: the memory stays the caller's, and alive, until the
/// launch is queued.
#[derive(Default)]
pub struct KernelArgs<'a> {
    values: Vec<(&'static str, Value)>,
    _views: std::marker::PhantomData<&'a ()>,
}

impl<'a> KernelArgs<'a> {
    pub fn new() -> KernelArgs<'a> {
        KernelArgs { values: Vec::new(), _views: std::marker::PhantomData }
    }
    fn put(&mut self, name: &'static str, v: Value) -> &mut Self {
        self.values.push((name, v));
        self
    }
    /// A tensor the kernel reads (its strides fill the tensor's stride parameters).
    pub fn tensor(&mut self, name: &'static str, t: &TensorView<'a>) -> &mut Self {
        self.put(name, Value::Tensor(t.addr(), strides(&t.layout)))
    }
    /// A tensor the kernel writes.
    pub fn tensor_mut(&mut self, name: &'static str, t: &'a mut TensorViewMut<'_>) -> &mut Self {
        self.put(name, Value::Tensor(t.addr(), strides(&t.layout)))
    }
    pub fn f32s(&mut self, name: &'static str, b: &BufferView<'a, f32>) -> &mut Self {
        self.put(name, Value::Buffer(b.addr(), ValueKind::F32s))
    }
    pub fn f32s_mut(&mut self, name: &'static str, b: &'a mut BufferViewMut<'_, f32>) -> &mut Self {
        self.put(name, Value::Buffer(b.addr(), ValueKind::F32s))
    }
    pub fn u32s(&mut self, name: &'static str, b: &BufferView<'a, u32>) -> &mut Self {
        self.put(name, Value::Buffer(b.addr(), ValueKind::U32s))
    }
    pub fn u32s_mut(&mut self, name: &'static str, b: &'a mut BufferViewMut<'_, u32>) -> &mut Self {
        self.put(name, Value::Buffer(b.addr(), ValueKind::U32s))
    }
    pub fn i32s(&mut self, name: &'static str, b: &BufferView<'a, i32>) -> &mut Self {
        self.put(name, Value::Buffer(b.addr(), ValueKind::I32s))
    }
    pub fn f32(&mut self, name: &'static str, v: f32) -> &mut Self {
        self.put(name, Value::F32(v))
    }
    pub fn i32(&mut self, name: &'static str, v: i32) -> &mut Self {
        self.put(name, Value::I32(v))
    }
    /// A TMA descriptor, passed by value.
    pub fn map(&mut self, name: &'static str, map: TensorMap) -> &mut Self {
        self.put(name, Value::Map(map))
    }
    /// The problem's geometry (`flashgen::abi::geometry`): batch, query and K/V heads, lengths, the causal
    /// alignment, the packed sequences' offsets (0 for fixed lengths) and the packed tensors' rows.
    pub fn geometry(&mut self, g: &KernelGeometry) -> &mut Self {
        self.i32("Z", g.batch as i32).i32("H", g.heads as i32).i32("H_KV", g.kv_heads as i32);
        self.i32("N_Q", g.seqlen_q as i32).i32("N_KV", g.seqlen_k as i32).i32("ALIGN", g.bottom_right as i32);
        self.put("CU_SEQLENS_Q", Value::Buffer(g.cu_seqlens_q, ValueKind::I32s)).put("CU_SEQLENS_K", Value::Buffer(g.cu_seqlens_k, ValueKind::I32s));
        // (fixed-length kernels ignore the totals: their rows are batch·N, which may pass i32 only there)
        let total = |x: usize| x.min(i32::MAX as usize) as i32;
        self.i32("TOTAL_Q", total(g.total_q)).i32("TOTAL_K", total(g.total_k));
        let (left, right) = window_bounds(&g.window);
        self.i32("WINDOW_LEFT", left).i32("WINDOW_RIGHT", right)
    }
    /// The modifiers' tensors (`flashgen::abi::modifier_tensors`): their addresses in the kernel's slot
    /// order, 0 for a slot no modifier declares (checked against the declarations in call.rs).
    pub fn modifier_tensors(&mut self, addrs: [u64; flashgen::spec::MOD_TENSORS]) -> &mut Self {
        const NAMES: [&str; flashgen::spec::MOD_TENSORS] = ["MOD_TENSOR0", "MOD_TENSOR1", "MOD_TENSOR2", "MOD_TENSOR3"];
        for (name, addr) in NAMES.into_iter().zip(addrs) {
            self.put(name, Value::Buffer(addr, ValueKind::Words));
        }
        self
    }

    /// The values given so far, by name and kind (what `launch` orders by the parameter list; a test can
    /// check a launch's values against its entry's list without a GPU).
    pub fn supplied(&self) -> Vec<(&'static str, ValueKind)> {
        self.values.iter().map(|(n, v)| (*n, v.kind())).collect()
    }

    /// Launch `function` (of `entry`, which names it in errors) on `stream` with these values in the order of
    /// `params` (the entry's list, `flashgen::abi::parameters`), after checking each pointer against its
    /// parameter's alignment.
    ///
    /// # Safety
    /// The caller upholds what `function` needs beyond its parameter list: every element the kernel reads or
    /// writes through these addresses lies inside memory the caller's views hold (checked layouts and
    /// lengths), the grid, block and shared memory are the spec's own, and `stream` belongs to the context
    /// `function` was loaded in, which is current on this thread.
    pub unsafe fn launch(&self, stream: sys::CUstream, function: &CudaFunction, entry: &str, params: &'static [Param], cfg: LaunchConfig) -> Result<(), RuntimeError> {
        // SAFETY: this function's contract is launch_after's, with the stream's plain ordering
        unsafe { self.launch_after(stream, function, entry, params, cfg, After::Completion) }
    }

    /// `launch`, with the kernel's start ordered after the stream's previous kernel as `after` says.
    ///
    /// # Safety
    /// As `launch`; with `After::Trigger` also: the kernel executes `griddepcontrol.wait` before it touches
    /// any memory the previous kernel on the stream writes or reads (an sm_90 kernel;
    /// `KernelSpec::decode_programmatic_combine` says which do), or reads only what that kernel has
    /// published by a release it acquires and touches nothing else it reads or writes (the dQ sum pass on
    /// the fused kernel's locks, `Schedule::dq_sum_follows`).
    pub unsafe fn launch_after(&self, stream: sys::CUstream, function: &CudaFunction, entry: &str, params: &'static [Param], cfg: LaunchConfig, after: After) -> Result<(), RuntimeError> {
        let supplied: Vec<(&'static str, ValueKind)> = self.values.iter().map(|(n, v)| (*n, v.kind())).collect();
        let picks = remembered_order(entry, params, supplied)?;
        // each parameter's bytes, in order; the driver reads them through `pointers` during cuLaunchKernel
        let mut words: Vec<Arg> = Vec::with_capacity(picks.len());
        for (pick, p) in picks.iter().zip(params) {
            let (name, value) = &self.values[pick.value];
            words.push(match (value, pick.stride) {
                (Value::Tensor(_, s), Some(axis)) => Arg::I64(s[axis]),
                (Value::Tensor(addr, _) | Value::Buffer(addr, _), None) => {
                    if let ParamType::Pointer { align, .. } = p.ty {
                        if addr % align as u64 != 0 {
                            return Err(LayoutError { tensor: name, rule: format!("address {addr:#x} is not {align}-byte aligned, which parameter `{}` of {entry} needs", p.name) }.into());
                        }
                    }
                    Arg::U64(*addr)
                }
                (Value::F32(x), _) => Arg::F32(*x),
                (Value::I32(x), _) => Arg::I32(*x),
                (Value::Map(m), _) => Arg::Map(m),
                (Value::Buffer(..), Some(_)) => unreachable!("argument_order gives strides of tensors only"),
            });
        }
        let mut pointers: Vec<*mut std::ffi::c_void> = words.iter_mut().map(Arg::pointer).collect();
        let (g, b) = (cfg.grid_dim, cfg.block_dim);
        // SAFETY: `pointers` points at `words`, which outlive the call; the values are the kernel's parameter
        // list in order and type (argument_order); the rest is the caller's (this function's contract).
        match after {
            After::Completion => unsafe { cudarc::driver::result::launch_kernel(function.cu_function(), g, b, cfg.shared_mem_bytes, stream, &mut pointers) }?,
            After::Trigger => {
                // programmatic dependent launch: the kernel may start once every program of the previous one
                // has triggered (griddepcontrol.launch_dependents) or exited; its griddepcontrol.wait then
                // waits for that kernel's completion and memory
                let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
                attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
                attr.value.programmaticStreamSerializationAllowed = 1;
                let config = sys::CUlaunchConfig {
                    gridDimX: g.0, gridDimY: g.1, gridDimZ: g.2, blockDimX: b.0, blockDimY: b.1, blockDimZ: b.2,
                    sharedMemBytes: cfg.shared_mem_bytes, hStream: stream, attrs: &mut attr, numAttrs: 1,
                };
                // SAFETY: as launch_kernel's above; `config` and `attr` outlive the call
                unsafe { sys::cuLaunchKernelEx(&config, function.cu_function(), pointers.as_mut_ptr(), std::ptr::null_mut()) }.result()?
            }
        }
        Ok(())
    }
}

/// What a launch waits for of the stream's previous kernel before its programs start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Its completion (a stream's plain order).
    Completion,
    /// Its trigger (programmatic dependent launch, sm_90): the kernel starts early and waits in
    /// `griddepcontrol.wait` (or on the previous kernel's locks) for what it reads.
    Trigger,
}

/// One parameter's value as the driver reads it (cuLaunchKernel takes a pointer to each parameter's bytes).
enum Arg<'m> {
    U64(u64),
    I64(i64),
    F32(f32),
    I32(i32),
    Map(&'m TensorMap),
}

impl Arg<'_> {
    fn pointer(&mut self) -> *mut std::ffi::c_void {
        match self {
            Arg::U64(x) => x as *mut u64 as *mut _,
            Arg::I64(x) => x as *mut i64 as *mut _,
            Arg::F32(x) => x as *mut f32 as *mut _,
            Arg::I32(x) => x as *mut i32 as *mut _,
            // the driver only reads the map's 128 bytes
            Arg::Map(m) => *m as *const TensorMap as *mut _,
        }
    }
}

impl Value {
    fn kind(&self) -> ValueKind {
        match self {
            Value::Tensor(..) => ValueKind::Tensor,
            Value::Buffer(_, kind) => *kind,
            Value::F32(_) => ValueKind::F32,
            Value::I32(_) => ValueKind::I32,
            Value::Map(_) => ValueKind::Map,
        }
    }
}

/// A kernel launched through the wrong entry point would get the wrong argument list: refuse it. (A wgmma
/// kind takes its role's arguments.)
pub fn expect_kind(k: &LoadedKernel, kind: flashgen::KernelKind) -> Result<(), RuntimeError> {
    if k.spec.kind().role() != kind.role() {
        return Err(RuntimeError::Argument(format!("{} is a {} kernel, but this launch needs a {} kernel", k.spec.name(), k.spec.kind().name(), kind.name())));
    }
    Ok(())
}
