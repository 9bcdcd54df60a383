//! What flashgen-candle checks without a GPU: ranks, dtypes, the extras' types, and CPU tensors, each an
//! error that says what is wrong (never a panic); and that what the runtime computes (GQA, unequal lengths,
//! a narrower V, packed sequences, windows, softcap, ALiBi) is not refused here but reaches the device.

use candle_core::{DType, Device, Tensor};
use flashgen_candle::{flash_attn, flash_attn_alibi, flash_attn_bwd, flash_attn_lse, flash_attn_varlen, flash_attn_windowed, flash_attn_with_kvcache, Attention, KvCache};

fn t(dims: &[usize], dtype: DType) -> Tensor {
    Tensor::zeros(dims, dtype, &Device::Cpu).unwrap()
}

fn err(q: &Tensor, k: &Tensor, v: &Tensor) -> String {
    flash_attn(q, k, v, 0.125, false).unwrap_err().to_string()
}

/// The error of a call that passed this crate's checks: the op's CPU path refuses it.
const REACHED_THE_DEVICE: &str = "on the CPU: flashgen runs on CUDA tensors";

#[test]
fn cpu_tensors_are_refused() {
    let q = t(&[2, 128, 4, 64], DType::BF16);
    let e = err(&q, &q, &q);
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
    let e = flash_attn_lse(&q, &q, &q, 0.125, true).unwrap_err().to_string();
    assert!(e.contains("on the CPU"), "{e}");
}

#[test]
fn keeping_freed_memory_needs_a_cuda_device() {
    let e = flashgen_candle::keep_freed_memory(&Device::Cpu).unwrap_err().to_string();
    assert!(e.contains("is not a CUDA device"), "{e}");
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
fn ranks_follow_the_form() {
    let q = t(&[2, 128, 4, 64], DType::BF16);
    let e = err(&t(&[128, 4, 64], DType::BF16), &q, &q);
    assert!(e.contains("q has shape [128, 4, 64]: expected 4 dimensions (batch, seqlen, heads, head_dim)"), "{e}");
    let offsets = Tensor::new(&[0u32, 100, 256], &Device::Cpu).unwrap();
    let e = flash_attn_varlen(&q, &q, &q, &offsets, &offsets, 156, 156, 0.125, true).unwrap_err().to_string();
    assert!(e.contains("q has shape [2, 128, 4, 64]: expected 3 dimensions (total_tokens, heads, head_dim) for packed sequences"), "{e}");
}

#[test]
fn what_the_runtime_computes_is_not_refused_here() {
    let q = t(&[2, 128, 8, 64], DType::BF16);
    // GQA and MQA
    for kv_heads in [2, 1] {
        let kv = t(&[2, 128, kv_heads, 64], DType::BF16);
        assert!(err(&q, &kv, &kv).contains(REACHED_THE_DEVICE), "{}", err(&q, &kv, &kv));
    }
    // N_q != N_kv, both ways
    for n_kv in [300, 50] {
        let kv = t(&[2, n_kv, 8, 64], DType::BF16);
        assert!(err(&q, &kv, &kv).contains(REACHED_THE_DEVICE));
    }
    // DeepSeek's 192/128 and the head dims past 128
    let (q192, v128) = (t(&[2, 128, 8, 192], DType::BF16), t(&[2, 128, 8, 128], DType::BF16));
    assert!(err(&q192, &q192, &v128).contains(REACHED_THE_DEVICE));
    let q256 = t(&[1, 64, 2, 256], DType::F16);
    assert!(err(&q256, &q256, &q256).contains(REACHED_THE_DEVICE));
    // packed sequences, windows, softcap, ALiBi
    let packed = t(&[256, 8, 64], DType::BF16);
    let offsets = Tensor::new(&[0u32, 100, 256], &Device::Cpu).unwrap();
    let e = flash_attn_varlen(&packed, &packed, &packed, &offsets, &offsets, 156, 156, 0.125, true).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
    let e = flash_attn_windowed(&q, &q, &q, 0.125, Some(64), Some(0)).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
    let e = Attention::new(0.125).causal(true).softcap(30.0).forward(&q, &q, &q).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
    let slopes = t(&[8], DType::F32);
    let e = flash_attn_alibi(&q, &q, &q, &slopes, 0.125, true).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
}

#[test]
fn the_extras_are_checked() {
    let q = t(&[2, 128, 8, 64], DType::BF16);
    let e = flash_attn_alibi(&q, &q, &q, &t(&[8], DType::F16), 0.125, false).unwrap_err().to_string();
    assert!(e.contains("alibi_slopes is F16 [8]: expected f32 (heads,)"), "{e}");
    let e = flash_attn_alibi(&q, &q, &q, &t(&[2, 8], DType::F32), 0.125, false).unwrap_err().to_string();
    assert!(e.contains("alibi_slopes is F32 [2, 8]"), "{e}");
    let packed = t(&[256, 8, 64], DType::BF16);
    let offsets = Tensor::new(&[0u32, 100, 256], &Device::Cpu).unwrap();
    let e = Attention::new(0.125).varlen(&offsets, &offsets, 156, 156).alibi(&t(&[8], DType::F32)).forward(&packed, &packed, &packed).unwrap_err().to_string();
    assert!(e.contains("alibi_slopes with packed sequences"), "{e}");
    let wide = Tensor::new(&[0i64, 100, 256], &Device::Cpu).unwrap();
    let e = flash_attn_varlen(&packed, &packed, &packed, &wide, &offsets, 156, 156, 0.125, false).unwrap_err().to_string();
    assert!(e.contains("seqlens_q is I64 [3]: expected u32 (batch + 1,) offsets"), "{e}");
    let e = flash_attn_varlen(&packed, &packed, &packed, &offsets, &offsets, 156, 0, 0.125, false).unwrap_err().to_string();
    assert!(e.contains("max_seqlen_k = 0"), "{e}");
}

#[test]
fn the_backward_alone_checks_its_tensors() {
    let q = t(&[2, 128, 4, 64], DType::BF16);
    let lse = t(&[2, 4, 128], DType::F32);
    let e = flash_attn_bwd(&q, &q, &q, &t(&[2, 128, 4, 64], DType::F16), &q, &lse, 0.125, false).unwrap_err().to_string();
    assert!(e.contains("out is F16 but q is BF16"), "{e}");
    let e = flash_attn_bwd(&q, &q, &q, &q, &q, &t(&[2, 4, 128], DType::BF16), 0.125, false).unwrap_err().to_string();
    assert!(e.contains("lse is BF16: the forward's f32 log-sum-exp is expected"), "{e}");
    let e = flash_attn_bwd(&q, &q, &q, &q, &q, &lse, 0.125, true).unwrap_err().to_string();
    assert!(e.contains("on the CPU"), "{e}");
}

#[test]
fn kvcache_arguments_are_checked_before_the_device() {
    let q = t(&[2, 1, 8, 128], DType::BF16);
    let cache = t(&[2, 512, 2, 128], DType::BF16);
    let lens = Tensor::new(&[10u32, 20], &Device::Cpu).unwrap();
    let new = t(&[2, 1, 2, 128], DType::BF16);
    // a well-formed call (contiguous, appending; paged) passes this crate's checks
    let e = flash_attn_with_kvcache(&q, &cache, &cache, Some(&new), Some(&new), &lens, None, 0.09, true).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
    let table = Tensor::new(&[[0u32, 1], [2, 3]], &Device::Cpu).unwrap();
    let pool = t(&[4, 64, 2, 128], DType::BF16);
    let e = flash_attn_with_kvcache(&q, &pool, &pool, None, None, &lens, Some(&table), 0.09, true).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
    // the new tokens come in pairs
    let e = flash_attn_with_kvcache(&q, &cache, &cache, Some(&new), None, &lens, None, 0.09, true).unwrap_err().to_string();
    assert!(e.contains("k and v (the new tokens) come together"), "{e}");
    // lengths and tables are u32 (as candle-flash-attn's offsets)
    let i64_lens = Tensor::new(&[10i64, 20], &Device::Cpu).unwrap();
    let e = flash_attn_with_kvcache(&q, &cache, &cache, None, None, &i64_lens, None, 0.09, true).unwrap_err().to_string();
    assert!(e.contains("cache_seqlens is I64 [2]: expected u32 (batch,)"), "{e}");
    let flat_table = Tensor::new(&[0u32, 1, 2, 3], &Device::Cpu).unwrap();
    let e = flash_attn_with_kvcache(&q, &pool, &pool, None, None, &lens, Some(&flat_table), 0.09, true).unwrap_err().to_string();
    assert!(e.contains("block_table is U32 [4]: expected u32 (batch, max_pages)"), "{e}");
    // ranks and dtypes
    let e = flash_attn_with_kvcache(&q, &t(&[512, 2, 128], DType::BF16), &cache, None, None, &lens, None, 0.09, true).unwrap_err().to_string();
    assert!(e.contains("k_cache has shape [512, 2, 128]: expected 4 dimensions"), "{e}");
    let e = flash_attn_with_kvcache(&q, &cache, &t(&[2, 512, 2, 128], DType::F16), None, None, &lens, None, 0.09, true).unwrap_err().to_string();
    assert!(e.contains("v_cache is F16 but q is BF16"), "{e}");
    // what the decode kernels do not take
    let slopes = Tensor::zeros(8, DType::F32, &Device::Cpu).unwrap();
    let e = Attention::new(0.09).alibi(&slopes).with_kvcache(&q, &KvCache::new(&cache, &cache, &lens), None).unwrap_err().to_string();
    assert!(e.contains("with_kvcache takes no alibi_slopes or packed sequences"), "{e}");
    // a window and softcap reach the device
    let e = Attention::new(0.09).causal(true).window(Some(256), Some(0)).softcap(30.0).with_kvcache(&q, &KvCache::new(&cache, &cache, &lens), Some((&new, &new))).unwrap_err().to_string();
    assert!(e.contains(REACHED_THE_DEVICE), "{e}");
}
