//! What flashgen-candle checks without a GPU: shapes, dtypes, the features not built yet, and CPU tensors,
//! each an error that says what is wrong (never a panic).

use candle_core::{DType, Device, Tensor};
use flashgen_candle::{flash_attn, flash_attn_lse};

fn t(dims: &[usize], dtype: DType) -> Tensor {
    Tensor::zeros(dims, dtype, &Device::Cpu).unwrap()
}

fn err(q: &Tensor, k: &Tensor, v: &Tensor) -> String {
    flash_attn(q, k, v, 0.125, false).unwrap_err().to_string()
}

#[test]
fn cpu_tensors_are_refused() {
    let q = t(&[2, 128, 4, 64], DType::BF16);
    let e = err(&q, &q, &q);
    assert!(e.contains("on the CPU: flashgen runs on CUDA tensors"), "{e}");
    let e = flash_attn_lse(&q, &q, &q, 0.125, true).unwrap_err().to_string();
    assert!(e.contains("on the CPU"), "{e}");
}

#[test]
fn dtypes_are_checked() {
    let f = t(&[2, 128, 4, 64], DType::F32);
    assert!(err(&f, &f, &f).contains("q is F32: flashgen takes bf16 or f16"), "{}", err(&f, &f, &f));
    let (q, k) = (t(&[2, 128, 4, 64], DType::BF16), t(&[2, 128, 4, 64], DType::F16));
    let e = err(&q, &k, &q);
    assert!(e.contains("k is F16 but q is BF16"), "{e}");
}

#[test]
fn shapes_are_checked() {
    let q = t(&[2, 128, 4, 64], DType::BF16);
    let e = err(&t(&[128, 4, 64], DType::BF16), &q, &q);
    assert!(e.contains("q has shape [128, 4, 64]: expected 4 dimensions"), "{e}");
    let e = err(&q, &t(&[3, 128, 4, 64], DType::BF16), &q);
    assert!(e.contains("batch sizes differ"), "{e}");
    let e = err(&q, &q, &t(&[2, 64, 4, 64], DType::BF16));
    assert!(e.contains("k and v share seqlen and heads"), "{e}");
    let wide = t(&[2, 128, 4, 128], DType::BF16);
    assert!(err(&q, &wide, &wide).contains("q's head dim is 64 but k's is 128"));
    let six = t(&[2, 128, 6, 64], DType::BF16);
    assert!(err(&six, &q, &q).contains("multiple of the key/value heads"));
}

#[test]
fn features_not_built_yet_say_so() {
    let q = t(&[2, 128, 8, 64], DType::BF16);
    let kv = t(&[2, 128, 2, 64], DType::BF16);
    let e = err(&q, &kv, &kv);
    assert!(e.contains("(GQA/MQA): grouped heads are not in flashgen's runtime yet"), "{e}");
    let long = t(&[2, 256, 8, 64], DType::BF16);
    assert!(err(&q, &long, &long).contains("unequal lengths are not in flashgen's runtime yet"));
}

#[test]
fn softmax_scale_is_checked() {
    let q = t(&[1, 16, 1, 64], DType::BF16);
    for bad in [f32::NAN, 0.0, -1.0, f32::INFINITY] {
        let e = flash_attn(&q, &q, &q, bad, false).unwrap_err().to_string();
        assert!(e.contains("softmax_scale"), "{bad}: {e}");
    }
}

#[test]
fn the_backward_alone_checks_its_tensors() {
    let q = t(&[2, 128, 4, 64], DType::BF16);
    let lse = t(&[2, 4, 128], DType::F32);
    let e = flashgen_candle::flash_attn_bwd(&q, &q, &q, &t(&[2, 128, 4, 64], DType::F16), &q, &lse, 0.125, false).unwrap_err().to_string();
    assert!(e.contains("out is F16"), "{e}");
    let e = flashgen_candle::flash_attn_bwd(&q, &q, &q, &q, &q, &t(&[2, 128, 4], DType::F32), 0.125, false).unwrap_err().to_string();
    assert!(e.contains("lse is F32 [2, 128, 4]: expected F32 (batch, heads, seqlen) = [2, 4, 128]"), "{e}");
    let e = flashgen_candle::flash_attn_bwd(&q, &q, &q, &q, &q, &lse, 0.125, true).unwrap_err().to_string();
    assert!(e.contains("on the CPU"), "{e}");
}
