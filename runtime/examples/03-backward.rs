//! 03: the backward pass: gradients of attention with respect to Q, K and V. Needs an NVIDIA GPU.
//! cargo run --release -p flashgen-runtime --example 03-backward

use flashgen::DType;
use flashgen_runtime::{Flash, Layout, RowStats, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flash = Flash::open()?;
    let (z, h, n, d) = (2, 8, 1000, 64);
    let layout = Layout::contiguous(z, h, n, d);
    let values = |seed: usize| -> Vec<f32> { (0..z * h * n * d).map(|i| (((i + seed) * 7919) % 2000) as f32 / 1000.0 - 1.0).collect() };
    let [q, k, v, d_o] = [1, 2, 3, 4].map(|s| Tensor::from_f32(&flash.gpu, &values(s), DType::Bf16, layout));
    let (q, k, v, d_o) = (q?, k?, v?, d_o?);
    let out = flash.attention_forward(&q, &k, &v, true, None)?;
    // the forward's natural-log LSE (PyTorch's convention) or its base-2 M (Triton's): RowStats::M(&out.m)
    let g = flash.attention_backward(&q, &k, &v, &out.o, RowStats::Lse(&out.lse), &d_o, true, None)?;
    let (dq, dk, dv) = (g.dq.to_f32(&flash.gpu)?, g.dk.to_f32(&flash.gpu)?, g.dv.to_f32(&flash.gpu)?);
    println!("dQ[..4] = {:?}\ndK[..4] = {:?}\ndV[..4] = {:?}", &dq[..4], &dk[..4], &dv[..4]);
    println!("kernel cache: {}", flash.cache.stats.summary());
    Ok(())
}
