//! 02: attention on the GPU through the runtime: specialize, cache, launch. Needs an NVIDIA GPU.
//! cargo run --release -p flashgen-runtime --example 02-attention

use flashgen::DType;
use flashgen_runtime::{Flash, Layout, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flash = Flash::open()?; // device 0, kernel cache in ~/.cache/flashgen (FLASHGEN_CACHE_DIR)
    let (z, h, n, d) = (2, 8, 1000, 128);
    let layout = Layout::bshd(z, h, n, d); // [Z, N, H, D] memory, any 16-byte-aligned strides
    let values: Vec<f32> = (0..z * h * n * d).map(|i| ((i * 7919) % 2000) as f32 / 1000.0 - 1.0).collect();
    let q = Tensor::from_f32(&flash.gpu, &values, DType::Bf16, layout)?;
    let out = flash.attention_forward(&q, &q, &q, true, None)?;
    let o = out.o.to_f32(&flash.gpu)?;
    let lse: Vec<f32> = flash.gpu.stream.clone_dtoh(&out.lse)?;
    println!("O[0, 0, 0, 0..4] = {:?}, LSE[0] = {}", &o[..4], lse[0]);
    println!("kernel cache: {}", flash.cache.stats.summary());
    Ok(())
}
