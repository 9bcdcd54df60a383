//! Host time of one small forward (B 1, H 8, N 128, D 64, bf16; the Python bar's shape, issue 34) through the
//! runtime, by piece: the whole call (`Flash::forward`), the call with its kernel given (`forward_with`), the
//! plan, the TMA descriptors, the views, the loaded kernel's lookup, the launch itself, and the driver's
//! cuLaunchKernel alone (empty kernels, one with the forward's parameter bytes). The timed calls queue behind
//! long launches, so the GPU never makes the host wait. Needs a GPU (sm_90a):
//!
//!     cargo build --release -p flashgen-cli --example hostcost && target/release/examples/hostcost
use flashgen::DType;
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::kernel::KernelGeometry;
use flashgen_runtime::{ForwardArgs, Flash, ForwardCall, Gpu, KernelCache, Layout, StatsOut, TensorView, TensorViewMut, BufferViewMut, CausalAlign, Geometry};

fn per_call(n: usize, mut f: impl FnMut()) -> f64 {
    let t = std::time::Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn small_call<'a>(q: &'a CudaSlice<u16>, k: &'a CudaSlice<u16>, v: &'a CudaSlice<u16>, o: &'a mut CudaSlice<u16>, m: &'a mut CudaSlice<f32>, lay: Layout) -> ForwardCall<'a> {
    ForwardCall::new(TensorView::of_slice("q", q, 0, DType::Bf16, lay).unwrap(), TensorView::of_slice("k", k, 0, DType::Bf16, lay).unwrap(),
        TensorView::of_slice("v", v, 0, DType::Bf16, lay).unwrap(), TensorViewMut::of_slice("o", o, 0, DType::Bf16, lay).unwrap(), StatsOut::M(BufferViewMut::of(m)))
}

fn main() {
    let flash = Flash::new(Gpu::open(0).expect("a GPU"), KernelCache::from_env());
    let (b, h, n, d) = (1, 8, 128, 64);
    let st = &flash.gpu.stream;
    let q = st.alloc_zeros::<u16>(b * h * n * d).unwrap();
    let k = st.alloc_zeros::<u16>(b * h * n * d).unwrap();
    let v = st.alloc_zeros::<u16>(b * h * n * d).unwrap();
    let mut o = st.alloc_zeros::<u16>(b * h * n * d).unwrap();
    let mut m = st.alloc_zeros::<f32>(b * h * n).unwrap();
    // a long launch to queue behind: N 16384, D 128
    let big = 16384 * 16 * 128;
    let (bq, bk, bv) = (st.alloc_zeros::<u16>(big).unwrap(), st.alloc_zeros::<u16>(big).unwrap(), st.alloc_zeros::<u16>(big).unwrap());
    let mut bo = st.alloc_zeros::<u16>(big).unwrap();
    let mut bm = st.alloc_zeros::<f32>(16 * 16384).unwrap();
    let lay = Layout::bshd(b, h, n, d);
    let blay = Layout::bshd(1, 16, 16384, 128);
    let mut long = || {
        let call = ForwardCall::new(TensorView::of_slice("q", &bq, 0, DType::Bf16, blay).unwrap(), TensorView::of_slice("k", &bk, 0, DType::Bf16, blay).unwrap(),
            TensorView::of_slice("v", &bv, 0, DType::Bf16, blay).unwrap(), TensorViewMut::of_slice("o", &mut bo, 0, DType::Bf16, blay).unwrap(), StatsOut::M(BufferViewMut::of(&mut bm)));
        flash.forward(call, flash.own_stream()).unwrap();
    };
    for _ in 0..20 {
        long();
        flash.forward(small_call(&q, &k, &v, &mut o, &mut m, lay), flash.own_stream()).unwrap();
    }
    st.synchronize().unwrap();
    let calls = 400;
    let spec = flash.forward_kernel(&small_call(&q, &k, &v, &mut o, &mut m, lay)).unwrap();
    let mut rows = Vec::new();
    for round in 0..3 {
        for _ in 0..6 {
            long(); // ~6 ms of GPU work ahead of the timed calls
        }
        let whole = per_call(calls, || flash.forward(small_call(&q, &k, &v, &mut o, &mut m, lay), flash.own_stream()).unwrap());
        let with = per_call(calls, || flash.forward_with(&spec, small_call(&q, &k, &v, &mut o, &mut m, lay), flash.own_stream()).unwrap());
        st.synchronize().unwrap();
        let g = Geometry::of(&TensorView::of_slice("q", &q, 0, DType::Bf16, lay).unwrap(), &TensorView::of_slice("k", &k, 0, DType::Bf16, lay).unwrap(), &TensorView::of_slice("v", &v, 0, DType::Bf16, lay).unwrap(), None).unwrap();
        let plan = per_call(calls, || {
            flash.plan_for(DType::Bf16, &g, false, CausalAlign::BottomRight).unwrap();
        });
        let qv = TensorView::of_slice("q", &q, 0, DType::Bf16, lay).unwrap();
        let maps = per_call(calls, || {
            flashgen_runtime::tma::forward_maps(&spec, &qv, &qv, &qv).unwrap();
        });
        let views = per_call(calls, || {
            std::hint::black_box(small_call(&q, &k, &v, &mut o, &mut m, lay));
        });
        let lookup = per_call(calls, || {
            std::hint::black_box(flash.kernel(&spec).unwrap());
        });
        let kernel = flash.kernel(&spec).unwrap();
        let mut counter = st.alloc_zeros::<u32>(2).unwrap();
        for _ in 0..6 {
            long();
        }
        let launch = per_call(calls, || {
            let qv = TensorView::of_slice("q", &q, 0, DType::Bf16, lay).unwrap();
            let kv = TensorView::of_slice("k", &k, 0, DType::Bf16, lay).unwrap();
            let vv = TensorView::of_slice("v", &v, 0, DType::Bf16, lay).unwrap();
            let maps = flashgen_runtime::tma::forward_maps(&spec, &qv, &kv, &vv).unwrap();
            let args = ForwardArgs { geometry: KernelGeometry::fixed(b, h, h, n, n, true), q: qv, k: kv, v: vv,
                o: TensorViewMut::of_slice("o", &mut o, 0, DType::Bf16, lay).unwrap(), m: BufferViewMut::of(&mut m), sm_scale: 0.125, softcap: 1.0,
                modifier_tensors: [0; 4], maps: Some(maps), tile_counter: Some(BufferViewMut::of(&mut counter)) };
            kernel.launch(&flash.gpu, flash.own_stream(), args).unwrap();
        });
        st.synchronize().unwrap();
        rows.push((round, whole, with, plan, maps, views, lookup, launch));
    }
    // the driver alone: cuLaunchKernel of empty kernels, one with a u64 parameter and one with the forward's
    // parameter bytes (3 maps of 128 bytes and 48 words)
    let ptx = format!(".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry tiny(.param .u64 a) {{ ret; }}\n.visible .entry wide(.param .align 64 .b8 m0[128], .param .align 64 .b8 m1[128], .param .align 64 .b8 m2[128], {}) {{ ret; }}\n",
        (0..48).map(|i| format!(".param .u64 w{i}")).collect::<Vec<_>>().join(", "));
    let module = flashgen_runtime::jit::load_module(&flash.gpu, "probe", &ptx).unwrap();
    let (tiny, wide) = (module.load_function("tiny").unwrap(), module.load_function("wide").unwrap());
    let mut word = [0u64; 1];
    let mut tiny_ptrs: Vec<*mut std::ffi::c_void> = word.iter_mut().map(|w| w as *mut u64 as *mut std::ffi::c_void).collect();
    #[repr(C, align(64))]
    struct Map([u8; 128]);
    let mut maps3 = [Map([0; 128]), Map([0; 128]), Map([0; 128])];
    let mut words = [0u64; 48];
    let mut wide_ptrs: Vec<*mut std::ffi::c_void> = maps3.iter_mut().map(|m| m as *mut Map as *mut std::ffi::c_void).chain(words.iter_mut().map(|w| w as *mut u64 as *mut std::ffi::c_void)).collect();
    let raw = flash.gpu.stream.cu_stream();
    for _ in 0..6 {
        long();
    }
    let t_tiny = per_call(calls, || unsafe { flashgen_runtime::cudarc::driver::result::launch_kernel(tiny.cu_function(), (132, 1, 1), (128, 1, 1), 0, raw, &mut tiny_ptrs).unwrap() });
    let t_wide = per_call(calls, || unsafe { flashgen_runtime::cudarc::driver::result::launch_kernel(wide.cu_function(), (132, 1, 1), (128, 1, 1), 0, raw, &mut wide_ptrs).unwrap() });
    st.synchronize().unwrap();
    println!("cuLaunchKernel alone: {t_tiny:.2} µs (1 word), {t_wide:.2} µs (3 maps + 48 words)");
    println!("{}", spec.name());
    println!("round  forward  forward_with  plan  3 maps  views  lookup  launch+maps+views   (host µs per call)");
    for (r, a, b, c, d, e, f, g) in rows {
        println!("{r:5} {a:8.2} {b:13.2} {c:5.2} {d:7.2} {e:6.2} {f:7.2} {g:8.2}");
    }
}
