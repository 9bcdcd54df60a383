//! GPU tests of the KV-cache decode (issue 33): #[ignore]d here, run on the device machine with --ignored.
//! `lying_device_inputs_stay_inside_the_cache` is also the compute-sanitizer case: under
//! `compute-sanitizer --tool memcheck --error-exitcode 1 <this binary> --ignored --exact
//! lying_device_inputs_stay_inside_the_cache` it must report no error (the kernels clamp what only the GPU
//! holds; the CPU emulator checks the same clamps on every cp.async, tests/decode.rs).

use flashgen::numeric::SplitMix;
use flashgen::reference::{self, relative_error, relative_error_lse, CacheStorage, KvCacheInputs, KvCacheProblem};
use flashgen::plan::{DecodePlan, SplitMerge};
use flashgen::DType;
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen_runtime::{BlockTable, BufferView, BufferViewMut, DecodeGeometry, Flash, Gpu, KernelCache, KvCacheCall, Layout, TensorView, TensorViewMut};

fn flash() -> Flash {
    Flash::new(Gpu::open(0).expect("a CUDA GPU is required for this test"), KernelCache::new(None, flashgen_runtime::KernelSource::default_source()))
}

struct Dev {
    q: CudaSlice<u16>,
    kc: CudaSlice<u16>,
    vc: CudaSlice<u16>,
    kn: CudaSlice<u16>,
    vn: CudaSlice<u16>,
    o: CudaSlice<u16>,
    lse: CudaSlice<f32>,
    lens: CudaSlice<i32>,
    table: CudaSlice<i32>,
}

struct Host {
    q: Vec<f32>,
    kc: Vec<f32>,
    vc: Vec<f32>,
    kn: Vec<f32>,
    vn: Vec<f32>,
}

fn setup(f: &Flash, p: &KvCacheProblem, dt: DType, device_lens: &[i32], device_table: &[i32], seed: u64) -> (Host, Dev) {
    let mut rng = SplitMix(seed);
    let mut gen = |n: usize| -> Vec<f32> { (0..n).map(|_| from_bits(dt, to_bits(dt, rng.normal()))).collect() };
    let h = Host { q: gen(p.q_len()), kc: gen(p.cache_len(p.d_qk)), vc: gen(p.cache_len(p.d_v)), kn: gen(p.new_len(p.d_qk)), vn: gen(p.new_len(p.d_v)) };
    let st = &f.gpu.stream;
    let up = |v: &[f32]| st.clone_htod(&v.iter().map(|&x| to_bits(dt, x)).collect::<Vec<u16>>().iter().copied().chain([0]).collect::<Vec<u16>>()).unwrap();
    let d = Dev {
        q: up(&h.q),
        kc: up(&h.kc),
        vc: up(&h.vc),
        kn: up(&h.kn),
        vn: up(&h.vn),
        o: st.clone_htod(&vec![0x7FC0u16; p.o_len()]).unwrap(),
        lse: st.clone_htod(&vec![f32::NAN; p.lse_len()]).unwrap(),
        lens: st.clone_htod(device_lens).unwrap(),
        table: st.clone_htod(device_table).unwrap(),
    };
    (h, d)
}

fn run(f: &Flash, p: &KvCacheProblem, dt: DType, d: &mut Dev, splits: Option<usize>, host: Option<(&[i32], &[i32])>) -> usize {
    run_merged(f, p, dt, d, splits, host, None)
}

/// `run` with the plan's split merge replaced by `merge` (None: the plan's).
fn run_merged(f: &Flash, p: &KvCacheProblem, dt: DType, d: &mut Dev, splits: Option<usize>, host: Option<(&[i32], &[i32])>, merge: Option<SplitMerge>) -> usize {
    let (b, hq, hkv, dd, nq, nn) = (p.batch, p.heads, p.kv_heads, p.d_qk, p.n_q, p.n_new);
    let (cache, paging) = match &p.storage {
        CacheStorage::Contiguous { capacity } => (Layout::bshd(b, hkv, *capacity, dd), None),
        CacheStorage::Paged { page_size, pages, max_pages, .. } => (Layout::bshd(*pages, hkv, *page_size, dd), Some(*max_pages)),
    };
    let call = KvCacheCall {
        q: TensorView::of_slice("q", &d.q, 0, dt, Layout::bshd(b, hq, nq, dd)).unwrap(),
        k_cache: TensorViewMut::of_slice("k_cache", &mut d.kc, 0, dt, cache).unwrap(),
        v_cache: TensorViewMut::of_slice("v_cache", &mut d.vc, 0, dt, cache).unwrap(),
        cache_seqlens: BufferView::of(&d.lens),
        host_cache_seqlens: host.map(|h| h.0),
        block_table: paging.map(|mp| BlockTable { table: BufferView::of(&d.table), max_pages: mp, host: host.map(|h| h.1) }),
        k_new: (nn > 0).then(|| TensorView::of_slice("k_new", &d.kn, 0, dt, Layout::bshd(b, hkv, nn, dd)).unwrap()),
        v_new: (nn > 0).then(|| TensorView::of_slice("v_new", &d.vn, 0, dt, Layout::bshd(b, hkv, nn, dd)).unwrap()),
        o: TensorViewMut::of_slice("o", &mut d.o, 0, dt, Layout::bshd(b, hq, nq, dd)).unwrap(),
        lse: Some(BufferViewMut::of(&mut d.lse)),
        causal: p.rules.mask.causal,
        window: p.rules.mask.window,
        softcap: p.rules.softcap.map(|c| c as f32),
        sm_scale: None,
        num_splits: splits,
    };
    let r = match merge {
        None => f.attention_with_kvcache(call, f.own_stream()).unwrap(),
        Some(merge) => {
            let g = DecodeGeometry::of(&call).unwrap();
            let plan = f.decode_plan(dt, &g, call.causal, call.window, call.softcap.is_some()).unwrap();
            f.attention_with_kvcache_plan(&DecodePlan { merge, ..plan }, call, f.own_stream()).unwrap()
        }
    };
    f.gpu.stream.synchronize().expect("the decode kernels ran without a fault");
    r.splits
}

fn paged(lens: &[usize], n_new: usize, page: usize) -> CacheStorage {
    let max_pages = lens.iter().map(|l| (l + n_new).div_ceil(page)).max().unwrap() + 1;
    let pages = lens.iter().map(|l| (l + n_new).div_ceil(page)).sum::<usize>() + 2;
    let mut table = vec![pages - 1; lens.len() * max_pages];
    let mut next = pages - 2; // pages handed out from the end: any order
    for (b, l) in lens.iter().enumerate() {
        for j in 0..(l + n_new).div_ceil(page) {
            table[b * max_pages + j] = next;
            next = next.wrapping_sub(1);
        }
    }
    CacheStorage::Paged { page_size: page, pages, max_pages, block_table: table }
}

fn problem(lens: Vec<usize>, h: usize, hkv: usize, d: usize, nq: usize, nn: usize, storage: CacheStorage) -> KvCacheProblem {
    let mut p = KvCacheProblem::new(lens, h, d, nq, 0);
    p.kv_heads = hkv;
    p.n_new = nn;
    p.storage = storage;
    p
}

fn table_i32(p: &KvCacheProblem) -> Vec<i32> {
    match &p.storage {
        CacheStorage::Paged { block_table, .. } => block_table.iter().map(|&x| x as i32).collect(),
        _ => vec![0],
    }
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn decode_matches_the_reference_and_appends() {
    let f = flash();
    for (dt, d, paged_size, splits) in [(DType::Bf16, 128, 0, None), (DType::F16, 64, 16, Some(3)), (DType::Bf16, 128, 256, None), (DType::Bf16, 64, 0, Some(1))] {
        let lens = vec![0, 1000, 4097, 33];
        let nn = 2;
        let storage = if paged_size > 0 { paged(&lens, nn, paged_size) } else { CacheStorage::Contiguous { capacity: 4200 } };
        let p = problem(lens.clone(), 16, 4, d, 2, nn, storage);
        let dl: Vec<i32> = lens.iter().map(|&l| l as i32).collect();
        let tb = table_i32(&p);
        let (h, mut dev) = setup(&f, &p, dt, &dl, &tb, 3);
        let used = run(&f, &p, dt, &mut dev, splits, Some((&dl, &tb)));
        let x = KvCacheInputs { q: &h.q, k_cache: &h.kc, v_cache: &h.vc, k_new: &h.kn, v_new: &h.vn };
        let want = reference::decode(&p, &x);
        let o: Vec<f32> = f.gpu.stream.clone_dtoh(&dev.o).unwrap().iter().map(|&b| from_bits(dt, b)).collect();
        let lse: Vec<f32> = f.gpu.stream.clone_dtoh(&dev.lse).unwrap();
        let (eo, el) = (relative_error(&o, &want.o), relative_error_lse(&lse, &want.lse));
        let (mut kc, mut vc) = (h.kc.clone(), h.vc.clone());
        reference::append_kv(&p, &mut kc, &mut vc, &h.kn, &h.vn);
        let down = |s: &CudaSlice<u16>| -> Vec<f32> { f.gpu.stream.clone_dtoh(s).unwrap()[..kc.len()].iter().map(|&b| from_bits(dt, b)).collect() };
        println!("{} d{d} page {paged_size} splits {used}: O {eo:.2e} LSE {el:.2e}", dt.name());
        assert!(eo <= 1e-2 && el <= 1e-3, "O {eo:e} LSE {el:e}");
        assert!(down(&dev.kc) == kc && down(&dev.vc) == vc, "the caches are the reference's append");
    }
}

/// The split merge in the decode kernel (the last split of each row tile, through the split counters) and
/// decode_combine's give the same bits, and the counters are back to 0 after each call (a second call in the
/// kernel gives the same bits again): batch 1 and a ragged batch, one query and three (row tiles).
#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn split_merges_agree_on_the_gpu() {
    let f = flash();
    for (lens, nq, splits) in [(vec![8191], 1, Some(32)), (vec![0, 1000, 4097, 33], 1, Some(7)), (vec![3000, 17], 3, Some(5))] {
        let p = problem(lens.clone(), 32, 8, 128, nq, nq, CacheStorage::Contiguous { capacity: 8192 });
        let dl: Vec<i32> = lens.iter().map(|&l| l as i32).collect();
        let tb = table_i32(&p);
        let mut outs = Vec::new();
        for merge in [SplitMerge::Combine, SplitMerge::InKernel, SplitMerge::InKernel] {
            // fresh caches each time: the call appends its new tokens
            let (h, mut dev) = setup(&f, &p, DType::Bf16, &dl, &tb, 11);
            let used = run_merged(&f, &p, DType::Bf16, &mut dev, splits, Some((&dl, &tb)), Some(merge));
            assert_eq!(Some(used), splits);
            let o: Vec<u16> = f.gpu.stream.clone_dtoh(&dev.o).unwrap();
            let lse: Vec<f32> = f.gpu.stream.clone_dtoh(&dev.lse).unwrap();
            let x = KvCacheInputs { q: &h.q, k_cache: &h.kc, v_cache: &h.vc, k_new: &h.kn, v_new: &h.vn };
            let want = reference::decode(&p, &x);
            let of: Vec<f32> = o.iter().map(|&b| from_bits(DType::Bf16, b)).collect();
            let (eo, el) = (relative_error(&of, &want.o), relative_error_lse(&lse, &want.lse));
            println!("lens {lens:?} N_q {nq} splits {used} {merge:?}: O {eo:.2e} LSE {el:.2e}");
            assert!(eo <= 1e-2 && el <= 1e-3, "{merge:?}: O {eo:e} LSE {el:e}");
            outs.push((o, lse.iter().map(|x| x.to_bits()).collect::<Vec<u32>>()));
        }
        assert!(outs[1] == outs[0], "lens {lens:?}: the merge in the kernel differs from decode_combine's");
        assert!(outs[2] == outs[1], "lens {lens:?}: a second call merged in the kernel differs (counters not reset?)");
    }
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn lying_device_inputs_stay_inside_the_cache() {
    let f = flash();
    for paged_size in [0, 16] {
        let lens = vec![300, 500, 200];
        let storage = if paged_size > 0 { paged(&lens, 1, paged_size) } else { CacheStorage::Contiguous { capacity: 600 } };
        let p = problem(lens, 8, 2, 128, 1, 1, storage);
        // sequence 1 claims 2^30 tokens, sequence 2 a negative length; sequence 1's table row points outside
        let dl = vec![300, 1 << 30, -7];
        let mut tb = table_i32(&p);
        if let CacheStorage::Paged { max_pages, .. } = &p.storage {
            tb[*max_pages] = 1 << 28;
            tb[*max_pages + 1] = -1;
        }
        let (h, mut dev) = setup(&f, &p, DType::Bf16, &dl, &tb, 4);
        for splits in [Some(1), Some(5), None] {
            run(&f, &p, DType::Bf16, &mut dev, splits, None);
        }
        // the honest sequence is right
        let x = KvCacheInputs { q: &h.q, k_cache: &h.kc, v_cache: &h.vc, k_new: &h.kn, v_new: &h.vn };
        let o: Vec<f32> = f.gpu.stream.clone_dtoh(&dev.o).unwrap().iter().map(|&b| from_bits(DType::Bf16, b)).collect();
        let rows: Vec<_> = p.rows().filter(|r| r.b == 0).collect();
        let mut err = 0f64;
        for r in rows {
            let mut want = vec![0f64; p.d_v];
            reference::decode_row(&p, &x, r, None, &mut want);
            err = err.max(relative_error(&o[p.o_offset(r)..p.o_offset(r) + p.d_v], &want));
        }
        assert!(err <= 1e-2, "honest sequence: {err:e}");
        // and the host copies, when given, refuse the same lies before anything runs
        let e = {
            let (cache, mp) = match &p.storage {
                CacheStorage::Contiguous { capacity } => (Layout::bshd(3, 2, *capacity, 128), None),
                CacheStorage::Paged { page_size, pages, max_pages, .. } => (Layout::bshd(*pages, 2, *page_size, 128), Some(*max_pages)),
            };
            let call = KvCacheCall {
                q: TensorView::of_slice("q", &dev.q, 0, DType::Bf16, Layout::bshd(3, 8, 1, 128)).unwrap(),
                k_cache: TensorViewMut::of_slice("k_cache", &mut dev.kc, 0, DType::Bf16, cache).unwrap(),
                v_cache: TensorViewMut::of_slice("v_cache", &mut dev.vc, 0, DType::Bf16, cache).unwrap(),
                cache_seqlens: BufferView::of(&dev.lens),
                host_cache_seqlens: Some(&dl),
                block_table: mp.map(|mp| BlockTable { table: BufferView::of(&dev.table), max_pages: mp, host: Some(&tb) }),
                k_new: None,
                v_new: None,
                o: TensorViewMut::of_slice("o", &mut dev.o, 0, DType::Bf16, Layout::bshd(3, 8, 1, 128)).unwrap(),
                lse: None,
                causal: true,
                window: flashgen_runtime::Window::UNBOUNDED,
                softcap: None,
                sm_scale: None,
                num_splits: None,
            };
            f.attention_with_kvcache(call, f.own_stream()).unwrap_err().to_string()
        };
        assert!(e.contains("cache_seqlens"), "{e}");
    }
}

#[test]
#[ignore = "needs a GPU: run on the device machine with --ignored"]
fn decode_steps_replay_from_a_cuda_graph() {
    use flashgen_runtime::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
    let f = flash();
    let p = problem(vec![8191], 32, 8, 128, 1, 1, CacheStorage::Contiguous { capacity: 8192 });
    let (h, mut dev) = setup(&f, &p, DType::Bf16, &[8191], &[0], 5);
    let side = f.gpu.ctx.new_stream().unwrap();
    let raw = unsafe { flashgen_runtime::Stream::from_raw(side.cu_stream()) };
    fn call(dev: &mut Dev) -> KvCacheCall<'_> {
        KvCacheCall {
        q: TensorView::of_slice("q", &dev.q, 0, DType::Bf16, Layout::bshd(1, 32, 1, 128)).unwrap(),
        k_cache: TensorViewMut::of_slice("k_cache", &mut dev.kc, 0, DType::Bf16, Layout::bshd(1, 8, 8192, 128)).unwrap(),
        v_cache: TensorViewMut::of_slice("v_cache", &mut dev.vc, 0, DType::Bf16, Layout::bshd(1, 8, 8192, 128)).unwrap(),
        cache_seqlens: BufferView::of(&dev.lens),
        host_cache_seqlens: None,
        block_table: None,
        k_new: Some(TensorView::of_slice("k_new", &dev.kn, 0, DType::Bf16, Layout::bshd(1, 8, 1, 128)).unwrap()),
        v_new: Some(TensorView::of_slice("v_new", &dev.vn, 0, DType::Bf16, Layout::bshd(1, 8, 1, 128)).unwrap()),
        o: TensorViewMut::of_slice("o", &mut dev.o, 0, DType::Bf16, Layout::bshd(1, 32, 1, 128)).unwrap(),
        lse: Some(BufferViewMut::of(&mut dev.lse)),
        causal: true,
        window: flashgen_runtime::Window::UNBOUNDED,
        softcap: None,
        sm_scale: None,
        num_splits: None,
        }
    }
    let first = f.attention_with_kvcache(call(&mut dev), raw).unwrap();
    assert!(first.splits > 1, "batch 1 splits the cache: {}", first.splits);
    side.synchronize().unwrap();
    side.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED).unwrap();
    f.attention_with_kvcache(call(&mut dev), raw).unwrap();
    let graph = side.end_capture(CUgraphInstantiate_flags(0)).unwrap().expect("a graph");
    for _ in 0..3 {
        graph.launch().unwrap();
    }
    side.synchronize().unwrap();
    let x = KvCacheInputs { q: &h.q, k_cache: &h.kc, v_cache: &h.vc, k_new: &h.kn, v_new: &h.vn };
    let want = reference::decode(&p, &x);
    let o: Vec<f32> = f.gpu.stream.clone_dtoh(&dev.o).unwrap().iter().map(|&b| from_bits(DType::Bf16, b)).collect();
    assert!(relative_error(&o, &want.o) <= 1e-2);
}
