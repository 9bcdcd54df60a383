//! One loaded kernel of any kind, and the checks every launch shares.

use crate::cache::Entry;
use crate::tma::TensorMap;
use crate::{Gpu, Layout, LayoutError, RuntimeError};
use cudarc::driver::sys::CUfunction_attribute_enum;
use crate::view::{BufferView, BufferViewMut, TensorView, TensorViewMut};
use cudarc::driver::{sys, CudaFunction, LaunchConfig};
use flashgen::abi::{Elem, Param, ParamType};
use flashgen::KernelSpec;

/// A kernel loaded into a context, ready to launch; with the fused backward also its dQ sum pass
/// (`KernelSpec::dq_sum_entry`, the module's second entry).
pub struct LoadedKernel {
    pub spec: KernelSpec,
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
        Ok(LoadedKernel { spec: entry.metadata.spec, function, shared_bytes, dq_sum, programs: gpu.sm_count })
    }
}

/// The checks every launch makes, at one place: each [Z, H, N, D] operand's layout (its view was checked
/// against its memory when it was made) and its shape against the first one's; the kernel's head dim; the
/// f32 row vectors (M, Δ) hold Z·H·N floats; sm_scale; 32-bit row indices and the grid's row limit.
/// Returns (Z, H, N).
pub fn check_problem(
    spec: &KernelSpec,
    tensors: &[(&'static str, Layout)],
    rows: &[(&'static str, usize)],
    sm_scale: Option<f32>,
) -> Result<(usize, usize, usize), RuntimeError> {
    let (first, shape) = (tensors[0].0, tensors[0].1.shape);
    let [z, h, n, d] = shape;
    for &(name, layout) in tensors {
        layout.check(name, layout.extent())?;
        if layout.shape != shape {
            return Err(LayoutError { tensor: name, rule: format!("shape {:?} differs from {first}'s {:?}", layout.shape, shape) }.into());
        }
    }
    if d as u32 != spec.head_dim() {
        return Err(LayoutError { tensor: first, rule: format!("head dim {d} differs from the kernel's HEAD_DIM={}", spec.head_dim()) }.into());
    }
    for &(name, len) in rows {
        if len < z * h * n {
            return Err(LayoutError { tensor: name, rule: format!("holds {len} floats, needs Z·H·N = {}", z * h * n) }.into());
        }
    }
    if let Some(s) = sm_scale {
        if !(s.is_finite() && s > 0.0) {
            return Err(LayoutError { tensor: "sm_scale", rule: format!("{s} must be finite and positive") }.into());
        }
    }
    let fits_i32 = |x: usize| x <= i32::MAX as usize;
    if !(fits_i32(z * h * n) && fits_i32(n + spec.block_m().max(spec.block_n()) as usize) && fits_i32(z * h)) {
        return Err(LayoutError { tensor: first, rule: format!("Z·H·N = {} overflows the kernel's 32-bit row indices", z * h * n) }.into());
    }
    if z * h > 65_535 {
        return Err(LayoutError { tensor: first, rule: format!("Z·H = {} exceeds the 65535 grid rows of one launch", z * h) }.into());
    }
    Ok((z, h, n))
}

/// The launch configuration of a spec on a problem: its grid, 32·num_warps threads, its shared memory.
pub fn launch_config(k: &LoadedKernel, z: usize, h: usize, n: usize) -> LaunchConfig {
    let (gx, gy, _) = k.spec.grid(z as u32, h as u32, n as u32, k.programs);
    LaunchConfig { grid_dim: (gx, gy, 1), block_dim: (k.spec.threads(), 1, 1), shared_mem_bytes: k.shared_bytes }
}

/// A layout's four strides as the kernels take them (i64 elements).
pub fn strides(l: &Layout) -> [i64; 4] {
    l.strides.map(|s| s as i64)
}

/// The geometry group of a launch (`flashgen::abi::geometry`), with 32-bit counts checked by the callers.
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
}

impl KernelGeometry {
    /// Z·H heads of N rows, queries and keys alike (what the equal-length MHA calls pass).
    pub fn square(z: usize, h: usize, n: usize) -> KernelGeometry {
        KernelGeometry { batch: z, heads: h, kv_heads: h, seqlen_q: n, seqlen_k: n, bottom_right: true, cu_seqlens_q: 0, cu_seqlens_k: 0 }
    }
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
    /// alignment and the packed sequences' offsets (0 for fixed lengths).
    pub fn geometry(&mut self, g: &KernelGeometry) -> &mut Self {
        self.i32("Z", g.batch as i32).i32("H", g.heads as i32).i32("H_KV", g.kv_heads as i32);
        self.i32("N_Q", g.seqlen_q as i32).i32("N_KV", g.seqlen_k as i32).i32("ALIGN", g.bottom_right as i32);
        self.put("CU_SEQLENS_Q", Value::Buffer(g.cu_seqlens_q, ValueKind::I32s)).put("CU_SEQLENS_K", Value::Buffer(g.cu_seqlens_k, ValueKind::I32s))
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
    pub unsafe fn launch(&self, stream: sys::CUstream, function: &CudaFunction, entry: &str, params: &[Param], cfg: LaunchConfig) -> Result<(), RuntimeError> {
        let supplied: Vec<(&str, ValueKind)> = self.values.iter().map(|(n, v)| (*n, v.kind())).collect();
        let picks = argument_order(entry, params, &supplied)?;
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
        unsafe { cudarc::driver::result::launch_kernel(function.cu_function(), g, b, cfg.shared_mem_bytes, stream, &mut pointers) }?;
        Ok(())
    }
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
