//! The cp.async dK/dV kernel (bwd_dkdv, mma.sync: the stream and step cursor that bwd_dkdv_wgmma shares,
//! lib/cp_async.ll.tera and lib/seqinfo.ll.tera `group_cursor`) run on the SIMT emulator (tests/simt)
//! against flashgen::reference::backward: grouped-query heads (a K/V head's program runs its query heads
//! one after another, the ring running on from one head into the next), causal bottom-right with unequal
//! lengths, equal lengths, non-causal, 2- and 3-slot rings (the refill one and two steps ahead); and a
//! tile without the registers for the cursor (`KernelSpec::step_cursor`), which divides per step.

#[path = "simt/mod.rs"]
mod simt;

use flashgen::abi::{self, ParamType};
use flashgen::numeric::SplitMix;
use flashgen::reference::{backward, forward, Qkv, RefProblem};
use flashgen::spec::GridGeometry;
use flashgen::{Arch, DType, KernelKind, KernelSpec, SpecParams};
use simt::{Arg, Launch};
use std::collections::HashMap;

fn bf16(x: f32) -> u16 {
    half::bf16::from_f32(x).to_bits()
}
fn value(b: u16) -> f32 {
    half::bf16::from_bits(b).to_f32()
}
fn bytes16(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|&x| bf16(x).to_le_bytes()).collect()
}
fn bytes32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}
fn decode16(b: &[u8]) -> Vec<f32> {
    b.chunks(2).map(|c| value(u16::from_le_bytes([c[0], c[1]]))).collect()
}

/// ‖got − want‖ / ‖want‖ (NaN or inf anywhere: infinite).
fn rel(got: &[f32], want: &[f64]) -> f64 {
    if got.iter().any(|x| !x.is_finite()) {
        return f64::INFINITY;
    }
    let (mut num, mut den) = (0f64, 0f64);
    for (g, w) in got.iter().zip(want) {
        num += (*g as f64 - w) * (*g as f64 - w);
        den += w * w;
    }
    (num / den.max(1e-30)).sqrt()
}

/// One dK/dV launch on the emulator: Z batches, H query heads on H_KV K/V heads, N_q queries and N_kv keys
/// (contiguous [Z, heads, N, D]), causal bottom-right or not; M and Δ from the f64 reference forward.
fn check(label: &str, tools: &simt::Tools, (z, h, hkv, n_q, n_kv, d): (usize, usize, usize, usize, usize, usize), causal: bool, (bm, bn, w, ns): (u32, u32, u32, u32)) {
    check_dims(label, tools, (z, h, hkv, n_q, n_kv, d, d), causal, (bm, bn, w, ns));
}

/// `check` with V (dO, dV) `dv` wide, narrower than Q and K (`Features::value_dim`).
fn check_dims(label: &str, tools: &simt::Tools, (z, h, hkv, n_q, n_kv, d, dv): (usize, usize, usize, usize, usize, usize, usize), causal: bool, (bm, bn, w, ns): (u32, u32, u32, u32)) {
    let params = SpecParams { kind: KernelKind::BwdDkdv, dtype: DType::Bf16, head_dim: d as u32, block_m: bm, block_n: bn, stage: if causal { 3 } else { 1 }, num_warps: w, num_stages: ns, arch: Arch::Sm80 };
    let features = flashgen::Features { value_dim: Some(dv as u32), ..flashgen::Features::NONE };
    let spec = KernelSpec::with_features(params, flashgen::spec::ScheduleOverrides::NONE, features).unwrap();
    let (cursor, estimate) = (spec.step_cursor(), spec.register_estimate());
    let p = RefProblem::new(z, h, n_q, d).kv_heads(hkv).seqlens(n_q, n_kv).causal(causal).head_dims(d, dv);
    let mut rng = SplitMix(0x5eed ^ (n_q * 1000 + n_kv) as u64);
    // inputs rounded to bf16, as the kernel reads them
    let mut input = |len: usize| -> Vec<f32> { (0..len).map(|_| value(bf16(rng.normal()))).collect() };
    let (q, k, v, d_o) = (input(z * h * n_q * d), input(z * hkv * n_kv * d), input(z * hkv * n_kv * dv), input(z * h * n_q * dv));
    let x = Qkv { q: &q, k: &k, v: &v };
    let fwd = forward(&p, &x);
    let want = backward(&p, &x, &d_o);
    let rows = z * h * n_q;
    let m: Vec<f32> = fwd.m.iter().map(|&m| m as f32).collect();
    let delta: Vec<f32> = (0..rows).map(|r| (0..dv).map(|c| fwd.o[r * dv + c] * d_o[r * dv + c] as f64).sum::<f64>() as f32).collect();
    // buffers: Q, K, V, dO, dK, dV, M, Δ (dK, dV NaN-poisoned: every element must be written)
    let (nan, nan_v) = (vec![f32::NAN; z * hkv * n_kv * d], vec![f32::NAN; z * hkv * n_kv * dv]);
    let mut bufs = vec![bytes16(&q), bytes16(&k), bytes16(&v), bytes16(&d_o), bytes16(&nan), bytes16(&nan_v), bytes32(&m), bytes32(&delta)];
    let bhsd = |heads: usize, n: usize, d: usize| [(heads * n * d) as i64, (n * d) as i64, d as i64, 1];
    let strides: HashMap<&str, [i64; 4]> =
        [("Q", bhsd(h, n_q, d)), ("DO", bhsd(h, n_q, dv)), ("K", bhsd(hkv, n_kv, d)), ("V", bhsd(hkv, n_kv, dv)), ("DK", bhsd(hkv, n_kv, d)), ("DV", bhsd(hkv, n_kv, dv))].into_iter().collect();
    let named: HashMap<&str, Arg> = [
        ("Q", Arg::Buf(0)),
        ("K", Arg::Buf(1)),
        ("V", Arg::Buf(2)),
        ("DO", Arg::Buf(3)),
        ("DK", Arg::Buf(4)),
        ("DV", Arg::Buf(5)),
        ("M", Arg::Buf(6)),
        ("Delta", Arg::Buf(7)),
        ("sm_scale", Arg::F32(p.rules.sm_scale as f32)),
        ("SOFTCAP", Arg::F32(1.0)),
    ]
    .into_iter()
    .chain(simt::fixed_geometry(z, h, hkv, n_q, n_kv))
    .chain(simt::no_modifier_tensors())
    .collect();
    let args = abi::kernel_parameters(KernelKind::BwdDkdv)
        .iter()
        .map(|a| match a.ty {
            ParamType::Stride { tensor, axis } => Arg::I64(strides[tensor][axis]),
            _ => *named.get(a.name).unwrap_or_else(|| panic!("no value for {}", a.name)),
        })
        .collect();
    let grid = spec.grid(&GridGeometry { batch: z as u32, heads: h as u32, kv_heads: hkv as u32, seqlen_q: n_q as u32, seqlen_k: n_kv as u32 }, 1);
    let launch = Launch { ir: flashgen::render::render(&spec).unwrap(), entry: spec.name(), args, grid, threads: spec.threads(), together: false };
    simt::run(tools, &[launch], &mut bufs).unwrap();
    let (dk, dv) = (decode16(&bufs[4]), decode16(&bufs[5]));
    let (ek, ev) = (rel(&dk, &want.dk), rel(&dv, &want.dv));
    eprintln!("{label} ({}, step cursor {cursor}, estimate {estimate}): dK rel {ek:.2e}, dV rel {ev:.2e}", spec.name());
    assert!(ek < 2e-2 && ev < 2e-2, "{label} ({}): dK rel {ek:.3e}, dV rel {ev:.3e}", spec.name());
}

/// Causal bottom-right with fewer queries than keys, three query heads per K/V head (the step cursor): each program's
/// count of query blocks differs, the ring's refill (two steps ahead, 3 slots) crosses from head to head,
/// and a program with one block per head wraps on every step.
#[test]
fn dkdv_grouped_causal_unequal_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    check("GQA 3, causal, N_q 70 < N_kv 100", &tools, (2, 6, 2, 70, 100, 64), true, (32, 64, 4, 3));
}

/// Equal lengths (the default path), MHA and grouped, causal: a 2-slot ring (refill one step ahead).
#[test]
fn dkdv_equal_lengths_causal_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    check("MHA, causal, N 96", &tools, (1, 2, 2, 96, 96, 64), true, (32, 64, 4, 2));
    check("GQA 2, causal, N 96", &tools, (1, 4, 2, 96, 96, 64), true, (32, 64, 4, 2));
}

/// HEAD_DIM 128 with 32 streamed rows (the sm_80 default tile): no room for the cursor, the step divided.
#[test]
fn dkdv_grouped_causal_divided_steps_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    let spec = |ns| KernelSpec::new(SpecParams { kind: KernelKind::BwdDkdv, dtype: DType::Bf16, head_dim: 128, block_m: 32, block_n: 64, stage: 3, num_warps: 4, num_stages: ns, arch: Arch::Sm80 }).unwrap();
    assert!(!spec(3).step_cursor() && spec(3).register_estimate() > 247);
    check("GQA 2, causal, N_q 50 < N_kv 80, HEAD_DIM 128", &tools, (1, 4, 2, 50, 80, 128), true, (32, 64, 4, 3));
}

/// Non-causal, grouped: every program runs every query block of every head of its group.
#[test]
fn dkdv_grouped_non_causal_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    check("GQA 2, non-causal, N_q 40, N_kv 72", &tools, (1, 4, 2, 40, 72, 64), false, (16, 128, 4, 3));
}

/// HEAD_DIM 192 and 256: dK and dV in column slices (`column_splits` 3 and 2, grid z), each program
/// recomputing Sᵀ and dPᵀ over the whole head; every slice must land in its own columns (NaN-poisoned).
#[test]
fn dkdv_column_slices_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    for (d, splits) in [(192, 3), (256, 2)] {
        let spec = KernelSpec::new(SpecParams { kind: KernelKind::BwdDkdv, dtype: DType::Bf16, head_dim: d as u32, block_m: 16, block_n: 64, stage: 3, num_warps: 4, num_stages: 2, arch: Arch::Sm80 }).unwrap();
        assert_eq!(spec.column_splits(), splits);
        check(&format!("GQA 2, causal, N_q 40 < N_kv 70, HEAD_DIM {d}"), &tools, (1, 4, 2, 40, 70, d), true, (16, 64, 4, 2));
    }
}

/// HEAD_DIM 32 and 96 on the 64- and 128-column tiles: the copies zero-fill the columns past HEAD_DIM and
/// the epilogue stores only HEAD_DIM of them (dK, dV NaN-poisoned, rows HEAD_DIM apart: a stored padding
/// column would land in the next row).
#[test]
fn dkdv_padded_head_dims_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    check("GQA 2, causal, N_q 40 < N_kv 70, HEAD_DIM 96", &tools, (1, 4, 2, 40, 70, 96), true, (32, 64, 4, 3));
    check("MHA, non-causal, N 50, HEAD_DIM 32", &tools, (1, 2, 2, 50, 50, 32), false, (16, 128, 4, 3));
}

/// V (dO, dV) narrower than Q and K (DeepSeek's shape, here 128/64 on 128's tiles, and 192/128 in column
/// slices): V's and dO's copies zero-fill its columns past 64 and dV is stored 64 wide (its buffer is
/// exactly that: NaN-poisoned).
#[test]
fn dkdv_narrower_values_on_the_emulator() {
    let Some(tools) = simt::tools_or_skip() else { return };
    check_dims("GQA 2, causal, N_q 40 < N_kv 70, D 128 / DV 64", &tools, (1, 4, 2, 40, 70, 128, 64), true, (32, 64, 4, 3));
    // 192/128 in sm_80's three 64-column slices: two are V's, the third stores no dV (a stored one would
    // land in the next row's columns, or past the buffer)
    check_dims("GQA 2, causal, N_q 40 < N_kv 70, D 192 / DV 128, 3 slices", &tools, (1, 4, 2, 40, 70, 192, 128), true, (16, 64, 4, 2));
    check_dims("MHA, non-causal, N 50, D 192 / DV 128, 3 slices", &tools, (1, 2, 2, 50, 50, 192, 128), false, (16, 64, 4, 2));
}
