//! GPU tests of ring attention on virtual ranks (issue 35; runtime/src/ring.rs): #[ignore]d here, run on the
//! device machine with --ignored. P = 1-4 virtual ranks, causal (zig-zag) or not, MHA and GQA, both dtypes:
//! the ring's O, LSE and gradients against the f64 reference and against the one-GPU kernels on the same
//! inputs, and its backward bit for bit the same from run to run. P ranks as threads on one GPU (`RankRing` on
//! a `LocalLink`), each holding only its chunks and handing K/V (and dK/dV) to the next: the virtual ring's
//! bits; a rank that fails makes the others fail within seconds.

use flashgen::numeric::SplitMix;
use flashgen::reference::{backward, forward, relative_error, relative_error_lse, Qkv, RefProblem};
use flashgen::DType;
use flashgen_runtime::cudarc::driver::CudaSlice;
use flashgen_runtime::tensor::{from_bits, to_bits};
use flashgen::ring::Ring;
use flashgen_runtime::{BackwardCall, BufferView, BufferViewMut, Flash, ForwardCall, Gpu, KernelCache, Layout, LocalLink, RankRing, RingLink, RingShape, StatsIn, StatsOut, TensorView, TensorViewMut, VirtualRing};
use std::time::{Duration, Instant};

const O_TOL: f64 = 1e-2;
const LSE_TOL: f64 = 1e-3;
const GRAD_TOL: f64 = 2e-2;
const POISON: u16 = 0x7FC0;

fn flash() -> Flash {
    Flash::new(Gpu::open(0).expect("a CUDA GPU is required for this test"), KernelCache::new(None, flashgen_runtime::KernelSource::default_source()))
}

struct Outputs {
    o: CudaSlice<u16>,
    dq: CudaSlice<u16>,
    dk: CudaSlice<u16>,
    dv: CudaSlice<u16>,
}

impl Outputs {
    fn poisoned(f: &Flash, q_len: usize, kv_len: usize) -> Outputs {
        let st = &f.gpu.stream;
        let p = |n: usize| st.clone_htod(&vec![POISON; n]).unwrap();
        Outputs { o: p(q_len), dq: p(q_len), dk: p(kv_len), dv: p(kv_len) }
    }
    fn host(&self, f: &Flash, dt: DType) -> [Vec<f32>; 4] {
        let st = &f.gpu.stream;
        st.synchronize().unwrap();
        [&self.o, &self.dq, &self.dk, &self.dv].map(|x| st.clone_dtoh(x).unwrap().iter().map(|&b| from_bits(dt, b)).collect())
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn the_virtual_ring_matches_the_f64_reference_and_the_one_gpu_kernels() {
    let f = flash();
    let stream = f.own_stream();
    let mut rng = SplitMix(3535);
    let (batch, heads, tokens) = (2, 4, 768);
    let mut cases = 0;
    for (dt, d, kv_heads) in [(DType::Bf16, 64, 4), (DType::F16, 128, 2), (DType::Bf16, 128, 1)] {
        let (q_len, kv_len) = (batch * heads * tokens * d, batch * kv_heads * tokens * d);
        let mut gen = |n: usize| -> Vec<f32> { (0..n).map(|_| from_bits(dt, to_bits(dt, rng.normal()))).collect() };
        let (q, k, v, d_o) = (gen(q_len), gen(kv_len), gen(kv_len), gen(q_len));
        let st = &f.gpu.stream;
        let up = |x: &[f32]| st.clone_htod(&x.iter().map(|&y| to_bits(dt, y)).collect::<Vec<u16>>()).unwrap();
        let (dq_in, dk_in, dv_in, ddo) = (up(&q), up(&k), up(&v), up(&d_o));
        let (ql, kvl) = (Layout::contiguous(batch, heads, tokens, d), Layout::contiguous(batch, kv_heads, tokens, d));
        fn view<'a>(s: &'a CudaSlice<u16>, l: Layout, name: &'static str, dt: DType) -> TensorView<'a> {
            TensorView::of_slice(name, s, 0, dt, l).unwrap()
        }
        let view = |s, l, name| view(s, l, name, dt);
        for causal in [false, true] {
            let p = RefProblem::new(batch, heads, tokens, d).kv_heads(kv_heads).causal(causal);
            let x = Qkv { q: &q, k: &k, v: &v };
            let want = forward(&p, &x);
            let grads = backward(&p, &x, &d_o);
            // the one-GPU kernels on the same inputs
            let mut one = Outputs::poisoned(&f, q_len, kv_len);
            let mut lse = st.alloc_zeros::<f32>(batch * heads * tokens).unwrap();
            let call = ForwardCall {
                causal,
                ..ForwardCall::new(view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), TensorViewMut::of_slice("O", &mut one.o, 0, dt, ql).unwrap(), StatsOut::Lse(BufferViewMut::of(&mut lse)))
            };
            f.forward(call, stream).unwrap();
            let o_view = TensorView::of_slice("O", &one.o, 0, dt, ql).unwrap();
            let g = (TensorViewMut::of_slice("dQ", &mut one.dq, 0, dt, ql).unwrap(), TensorViewMut::of_slice("dK", &mut one.dk, 0, dt, kvl).unwrap(), TensorViewMut::of_slice("dV", &mut one.dv, 0, dt, kvl).unwrap());
            let call = BackwardCall { causal, ..BackwardCall::new(view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), o_view, view(&ddo, ql, "dO"), StatsIn::Lse(BufferView::of(&lse)), g) };
            f.backward(call, stream).unwrap();
            let one_host = one.host(&f, dt);
            let one_lse = st.clone_dtoh(&lse).unwrap();
            for ranks in 1..=4 {
                let shape = RingShape { batch, heads, kv_heads, tokens, head_dim: d, head_dim_v: d };
                let mut ring = VirtualRing::new(&f, ranks, causal, shape, dt).unwrap();
                let mut ours = Outputs::poisoned(&f, q_len, kv_len);
                ring.forward(&f, view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), TensorViewMut::of_slice("O", &mut ours.o, 0, dt, ql).unwrap(), None, stream).unwrap();
                let backward_into = |ring: &mut VirtualRing, out: &mut Outputs| {
                    let o_view = TensorView::of_slice("O", &out.o, 0, dt, ql).unwrap();
                    let inputs = [view(&dq_in, ql, "Q"), view(&dk_in, kvl, "K"), view(&dv_in, kvl, "V"), o_view, view(&ddo, ql, "dO")];
                    let grads = [TensorViewMut::of_slice("dQ", &mut out.dq, 0, dt, ql).unwrap(), TensorViewMut::of_slice("dK", &mut out.dk, 0, dt, kvl).unwrap(), TensorViewMut::of_slice("dV", &mut out.dv, 0, dt, kvl).unwrap()];
                    ring.backward(&f, inputs, grads, None, stream).unwrap();
                };
                backward_into(&mut ring, &mut ours);
                let host = ours.host(&f, dt);
                let ring_lse = ring.lse(&f).unwrap();
                let label = format!("{dt:?} D{d} H{heads}/{kv_heads} causal={causal} P={ranks}");
                let errs = [
                    ("O", relative_error(&host[0], &want.o), relative_error(&host[0], &one_host[0]), O_TOL),
                    ("LSE", relative_error_lse(&ring_lse, &want.lse), relative_error_lse(&ring_lse, &one_lse), LSE_TOL),
                    ("dQ", relative_error(&host[1], &grads.dq), relative_error(&host[1], &one_host[1]), GRAD_TOL),
                    ("dK", relative_error(&host[2], &grads.dk), relative_error(&host[2], &one_host[2]), GRAD_TOL),
                    ("dV", relative_error(&host[3], &grads.dv), relative_error(&host[3], &one_host[3]), GRAD_TOL),
                ];
                for (name, to_ref, to_one, tol) in errs {
                    eprintln!("{label} {name}: {to_ref:.2e} against f64, {to_one:.2e} against one GPU");
                    assert!(to_ref <= tol && to_one <= tol, "{label} {name}: {to_ref:.2e} against f64, {to_one:.2e} against the one-GPU kernels (tolerance {tol:.0e})");
                }
                // the ring adds in one order: the same gradients, bit for bit, on a second run
                let mut again = Outputs::poisoned(&f, q_len, kv_len);
                st.memcpy_dtod(&ours.o, &mut again.o).unwrap();
                backward_into(&mut ring, &mut again);
                st.synchronize().unwrap();
                for (name, a, b) in [("dQ", &ours.dq, &again.dq), ("dK", &ours.dk, &again.dk), ("dV", &ours.dv, &again.dv)] {
                    assert_eq!(st.clone_dtoh(a).unwrap(), st.clone_dtoh(b).unwrap(), "{label} {name}: not bit-identical run to run");
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 24);
}

/// What the ring refuses before it launches anything: tokens that do not split into its chunks, heads that
/// do not share K/V heads evenly, tensors of another shape than the ring's, a backward before a forward.
#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn the_ring_refuses_what_it_cannot_run() {
    let f = flash();
    let shape = RingShape { batch: 1, heads: 4, kv_heads: 2, tokens: 1004, head_dim: 64, head_dim_v: 64 };
    let e = VirtualRing::new(&f, 4, true, shape, DType::Bf16).err().unwrap().to_string();
    assert!(e.contains("1004 tokens do not split into 8 equal chunks"), "{e}");
    let e = VirtualRing::new(&f, 2, false, RingShape { kv_heads: 3, tokens: 1024, ..shape }, DType::Bf16).err().unwrap().to_string();
    assert!(e.contains("H must be a multiple of H_kv"), "{e}");
    let shape = RingShape { tokens: 1024, ..shape };
    let mut ring = VirtualRing::new(&f, 2, true, shape, DType::Bf16).unwrap();
    let st = &f.gpu.stream;
    let buf = st.alloc_zeros::<u16>(4 * 2048 * 64).unwrap();
    let mut out = st.alloc_zeros::<u16>(4 * 2048 * 64).unwrap();
    let wrong = Layout::contiguous(1, 4, 2048, 64);
    let v = |l| TensorView::of_slice("Q", &buf, 0, DType::Bf16, l).unwrap();
    let e = ring.forward(&f, v(wrong), v(wrong), v(wrong), TensorViewMut::of_slice("O", &mut out, 0, DType::Bf16, wrong).unwrap(), None, f.own_stream()).unwrap_err().to_string();
    assert!(e.contains("tensor Q is bf16 [1, 4, 2048, 64] but this ring was made for bf16 [1, 4, 1024, 64]"), "{e}");
    let (ql, kvl) = (Layout::contiguous(1, 4, 1024, 64), Layout::contiguous(1, 2, 1024, 64));
    let mut g = [st.alloc_zeros::<u16>(4 * 1024 * 64).unwrap(), st.alloc_zeros::<u16>(2 * 1024 * 64).unwrap(), st.alloc_zeros::<u16>(2 * 1024 * 64).unwrap()];
    let [a, b, c] = &mut g;
    let grads = [TensorViewMut::of_slice("dQ", a, 0, DType::Bf16, ql).unwrap(), TensorViewMut::of_slice("dK", b, 0, DType::Bf16, kvl).unwrap(), TensorViewMut::of_slice("dV", c, 0, DType::Bf16, kvl).unwrap()];
    let e = ring.backward(&f, [v(ql), v(kvl), v(kvl), v(ql), v(ql)], grads, None, f.own_stream()).unwrap_err().to_string();
    assert!(e.contains("run VirtualRing::forward on these inputs first"), "{e}");
}

#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn ranks_on_a_local_link_compute_the_virtual_rings_bits() {
    let f = flash();
    let mut rng = SplitMix(3536);
    let (batch, heads, tokens) = (2, 4, 768);
    for (dt, d, kv_heads, causal, ranks) in [(DType::Bf16, 64, 2, true, 2), (DType::Bf16, 128, 4, false, 3), (DType::F16, 64, 1, true, 4), (DType::Bf16, 128, 2, true, 1), (DType::F16, 128, 4, false, 4)] {
        let label = format!("{dt:?} D{d} H{heads}/{kv_heads} causal={causal} P={ranks}");
        let shape = RingShape { batch, heads, kv_heads, tokens, head_dim: d, head_dim_v: d };
        let (q_len, kv_len) = (batch * heads * tokens * d, batch * kv_heads * tokens * d);
        let mut gen = |n: usize| -> Vec<f32> { (0..n).map(|_| from_bits(dt, to_bits(dt, rng.normal()))).collect() };
        let (q, k, v, d_o) = (gen(q_len), gen(kv_len), gen(kv_len), gen(q_len));
        let st = &f.gpu.stream;
        let up = |x: &[f32]| st.clone_htod(&x.iter().map(|&y| to_bits(dt, y)).collect::<Vec<u16>>()).unwrap();
        // the virtual ring on the whole tensors
        let (ql, kvl) = (Layout::contiguous(batch, heads, tokens, d), Layout::contiguous(batch, kv_heads, tokens, d));
        let (gq, gk, gv, gdo) = (up(&q), up(&k), up(&v), up(&d_o));
        let mut want = Outputs::poisoned(&f, q_len, kv_len);
        let mut ring = VirtualRing::new(&f, ranks, causal, shape, dt).unwrap();
        let view = |s, l| TensorView::of_slice("x", s, 0, dt, l).unwrap();
        ring.forward(&f, view(&gq, ql), view(&gk, kvl), view(&gv, kvl), TensorViewMut::of_slice("O", &mut want.o, 0, dt, ql).unwrap(), None, f.own_stream()).unwrap();
        {
            let Outputs { o, dq, dk, dv } = &mut want;
            let grads = [TensorViewMut::of_slice("dQ", dq, 0, dt, ql).unwrap(), TensorViewMut::of_slice("dK", dk, 0, dt, kvl).unwrap(), TensorViewMut::of_slice("dV", dv, 0, dt, kvl).unwrap()];
            ring.backward(&f, [view(&gq, ql), view(&gk, kvl), view(&gv, kvl), view(o, ql), view(&gdo, ql)], grads, None, f.own_stream()).unwrap();
        }
        st.synchronize().unwrap();
        let want: Vec<Vec<u16>> = [&want.o, &want.dq, &want.dk, &want.dv].iter().map(|x| st.clone_dtoh(*x).unwrap()).collect();
        // the ranks, each with its own chunks
        let plan = Ring::new(ranks, tokens, causal).unwrap();
        let len = plan.chunk_len();
        let link = LocalLink::new(ranks, Duration::from_secs(20));
        let mut got = [vec![0u16; q_len], vec![0u16; q_len], vec![0u16; kv_len], vec![0u16; kv_len]];
        let locals: Vec<[Vec<u16>; 4]> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..ranks)
                .map(|rank| {
                    let (f, link, plan) = (&f, link.clone(), plan);
                    let (q, k, v, d_o) = (&q, &k, &v, &d_o);
                    scope.spawn(move || {
                        let chunks = plan.chunks_of(rank);
                        let t = chunks.len() * len;
                        let st = &f.gpu.stream;
                        let up = |x: Vec<f32>| st.clone_htod(&x.iter().map(|&y| to_bits(dt, y)).collect::<Vec<u16>>()).unwrap();
                        let (lq, lk, lv, ldo) = (up(plan.gather(rank, q, batch * heads, d)), up(plan.gather(rank, k, batch * kv_heads, d)), up(plan.gather(rank, v, batch * kv_heads, d)), up(plan.gather(rank, d_o, batch * heads, d)));
                        let mut out = Outputs::poisoned(f, batch * heads * t * d, batch * kv_heads * t * d);
                        st.synchronize().unwrap();
                        let mut me = RankRing::new(f, ranks, rank, causal, shape, dt).unwrap();
                        let (lql, lkvl) = (Layout::contiguous(batch, heads, t, d), Layout::contiguous(batch, kv_heads, t, d));
                        let view = |s, l| TensorView::of_slice("x", s, 0, dt, l).unwrap();
                        me.forward(f, &*link, view(&lq, lql), view(&lk, lkvl), view(&lv, lkvl), TensorViewMut::of_slice("O", &mut out.o, 0, dt, lql).unwrap(), None).unwrap();
                        let Outputs { o, dq, dk, dv } = &mut out;
                        let grads = [TensorViewMut::of_slice("dQ", dq, 0, dt, lql).unwrap(), TensorViewMut::of_slice("dK", dk, 0, dt, lkvl).unwrap(), TensorViewMut::of_slice("dV", dv, 0, dt, lkvl).unwrap()];
                        me.backward(f, &*link, [view(&lq, lql), view(&lk, lkvl), view(&lv, lkvl), view(o, lql), view(&ldo, lql)], grads, None).unwrap();
                        me.finish(&*link).unwrap();
                        [&out.o, &out.dq, &out.dk, &out.dv].map(|x| st.clone_dtoh(x).unwrap())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
        });
        for (rank, local) in locals.iter().enumerate() {
            for (i, (l, g)) in local.iter().zip(got.iter_mut()).enumerate() {
                plan.scatter(rank, l, g, if i < 2 { batch * heads } else { batch * kv_heads }, d);
            }
        }
        for (name, (a, b)) in ["O", "dQ", "dK", "dV"].iter().zip(got.iter().zip(&want)) {
            let differ = a.iter().zip(b).filter(|(x, y)| x != y).count();
            assert_eq!(differ, 0, "{label} {name}: {differ} of {} elements differ from the virtual ring's", a.len());
        }
        eprintln!("{label}: ranks on a LocalLink = the virtual ring, bit for bit");
    }
}

/// A rank that fails (here: before its first hand-over) makes every other rank's call fail with its error
/// within seconds, instead of waiting at the hand-over for it.
#[test]
#[ignore = "needs a CUDA GPU: run on the H200 with --ignored"]
fn a_failed_rank_fails_the_others_within_seconds() {
    let f = flash();
    let (ranks, dt, d) = (3, DType::Bf16, 64);
    let shape = RingShape { batch: 1, heads: 2, kv_heads: 2, tokens: 6 * 128, head_dim: d, head_dim_v: d };
    let link = LocalLink::new(ranks, Duration::from_secs(60));
    let t0 = Instant::now();
    let results: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..ranks)
            .map(|rank| {
                let (f, link) = (&f, link.clone());
                scope.spawn(move || {
                    if rank == 1 {
                        link.abort(1, "injected failure");
                        return Err("rank 1 stopped".to_string());
                    }
                    let t = 2 * 128;
                    let st = &f.gpu.stream;
                    let x = st.alloc_zeros::<u16>(2 * t * d).unwrap();
                    let mut o = st.alloc_zeros::<u16>(2 * t * d).unwrap();
                    let l = Layout::contiguous(1, 2, t, d);
                    let mut me = RankRing::new(f, ranks, rank, true, shape, dt).unwrap();
                    let view = || TensorView::of_slice("x", &x, 0, dt, l).unwrap();
                    me.forward(f, &*link, view(), view(), view(), TensorViewMut::of_slice("O", &mut o, 0, dt, l).unwrap(), None).map_err(|e| e.to_string())?;
                    me.finish(&*link).map_err(|e| e.to_string())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a rank panicked")).collect()
    });
    let waited = t0.elapsed();
    for (rank, r) in results.iter().enumerate().filter(|(r, _)| *r != 1) {
        let e = r.as_ref().expect_err("a rank went on past its failed peer");
        assert!(e.contains("ring rank 1 failed: injected failure"), "rank {rank}: {e}");
    }
    assert!(waited < Duration::from_secs(10), "the ranks took {waited:?} to give up");
}
