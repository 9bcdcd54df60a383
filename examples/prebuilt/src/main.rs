//! Runs attention with the embedded kernels: no compiler at run time, only the driver.
use flashgen_prebuilt_example::FLASHGEN_KERNELS;
use flashgen_runtime::{Flash, Gpu, KernelCache, KernelSource, Layout, Tensor};

fn main() -> Result<(), String> {
    println!("{} kernels embedded", FLASHGEN_KERNELS.len());
    let source = KernelSource::embedded(FLASHGEN_KERNELS).map_err(|e| e.to_string())?;
    let gpu = match Gpu::open(0) {
        Ok(g) => g,
        Err(e) => {
            println!("no GPU ({e}): nothing to launch");
            return Ok(());
        }
    };
    let flash = Flash::new(gpu, KernelCache::new(flashgen_runtime::cache::default_dir(), source));
    let layout = Layout::contiguous(1, 4, 1000, 128);
    let x: Vec<f32> = (0..4 * 1000 * 128).map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0).collect();
    let q = Tensor::from_f32(&flash.gpu, &x, flashgen::DType::Bf16, layout).map_err(|e| e.to_string())?;
    let out = flash.attention_forward(&q, &q, &q, true, None).map_err(|e| e.to_string())?;
    let o = out.o.to_f32(&flash.gpu).map_err(|e| e.to_string())?;
    println!("attention_forward with a prebuilt kernel: {} outputs, all finite: {}", o.len(), o.iter().all(|v| v.is_finite()));
    println!("kernel cache: {}", flash.cache.stats.summary());
    Ok(())
}
