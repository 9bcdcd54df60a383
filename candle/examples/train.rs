//! A tiny causal transformer trained for a few steps on random tokens, its attention by flashgen-candle
//! (forward and backward on the GPU). The batch is fixed, so the loss must fall as the model memorizes it:
//! the example fails unless it ends below 80% of where it started.
//!
//!     cargo run --release -p flashgen-candle --features cuda --example train

use candle_core::{DType, Device, Module, Result, Tensor};
use candle_nn::{embedding, layer_norm, linear_no_bias, AdamW, Embedding, LayerNorm, Linear, Optimizer, ParamsAdamW, VarBuilder, VarMap};
use flashgen_candle::flash_attn;

const VOCAB: usize = 256;
const DIM: usize = 256;
const HEADS: usize = 4; // head dim 64
const LAYERS: usize = 2;
const SEQ: usize = 128;
const BATCH: usize = 8;
const STEPS: usize = 40;

struct Block {
    ln1: LayerNorm,
    qkv: Linear,
    proj: Linear,
    ln2: LayerNorm,
    up: Linear,
    down: Linear,
}

impl Block {
    fn new(vb: VarBuilder) -> Result<Block> {
        Ok(Block {
            ln1: layer_norm(DIM, 1e-5, vb.pp("ln1"))?,
            qkv: linear_no_bias(DIM, 3 * DIM, vb.pp("qkv"))?,
            proj: linear_no_bias(DIM, DIM, vb.pp("proj"))?,
            ln2: layer_norm(DIM, 1e-5, vb.pp("ln2"))?,
            up: linear_no_bias(DIM, 4 * DIM, vb.pp("up"))?,
            down: linear_no_bias(4 * DIM, DIM, vb.pp("down"))?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (b, n, c) = x.dims3()?;
        // q, k, v are views into one packed (B, N, 3, H, D) bf16 tensor: no copies
        let qkv = self.qkv.forward(&self.ln1.forward(x)?)?.reshape((b, n, 3, HEADS, c / HEADS))?.to_dtype(DType::BF16)?;
        let part = |i| qkv.narrow(2, i, 1).and_then(|t| t.squeeze(2));
        let a = flash_attn(&part(0)?, &part(1)?, &part(2)?, 1.0 / ((c / HEADS) as f32).sqrt(), true)?;
        let x = (x + self.proj.forward(&a.to_dtype(DType::F32)?.reshape((b, n, c))?)?)?;
        let h = self.down.forward(&self.up.forward(&self.ln2.forward(&x)?)?.gelu()?)?;
        x + h
    }
}

struct Model {
    embed: Embedding,
    blocks: Vec<Block>,
    ln: LayerNorm,
    head: Linear,
}

impl Model {
    fn new(vb: VarBuilder) -> Result<Model> {
        let blocks = (0..LAYERS).map(|i| Block::new(vb.pp(format!("block{i}")))).collect::<Result<_>>()?;
        Ok(Model { embed: embedding(VOCAB, DIM, vb.pp("embed"))?, blocks, ln: layer_norm(DIM, 1e-5, vb.pp("ln"))?, head: linear_no_bias(DIM, VOCAB, vb.pp("head"))? })
    }

    fn forward(&self, tokens: &Tensor) -> Result<Tensor> {
        let mut x = self.embed.forward(tokens)?;
        for b in &self.blocks {
            x = b.forward(&x)?;
        }
        self.head.forward(&self.ln.forward(&x)?)
    }
}

fn main() -> Result<()> {
    let dev = Device::new_cuda(0)?;
    let vars = VarMap::new();
    let model = Model::new(VarBuilder::from_varmap(&vars, DType::F32, &dev))?;
    let mut opt = AdamW::new(vars.all_vars(), ParamsAdamW { lr: 3e-3, ..Default::default() })?;
    // random tokens; the target of each position is the next token
    let data = Tensor::rand(0f32, VOCAB as f32, (BATCH, SEQ + 1), &dev)?.to_dtype(DType::U32)?;
    let (inputs, targets) = (data.narrow(1, 0, SEQ)?, data.narrow(1, 1, SEQ)?);
    let mut losses = Vec::new();
    for step in 0..STEPS {
        let t0 = std::time::Instant::now();
        let logits = model.forward(&inputs)?;
        let loss = candle_nn::loss::cross_entropy(&logits.flatten_to(1)?, &targets.flatten_all()?)?;
        opt.backward_step(&loss)?;
        let loss = loss.to_scalar::<f32>()?; // (waits for the step)
        println!("step {step:2}  loss {loss:.4}  {:.1} ms", t0.elapsed().as_secs_f64() * 1e3);
        losses.push(loss);
    }
    let (first, last) = (losses[0], losses[STEPS - 1]);
    if !(last < 0.8 * first) {
        return Err(candle_core::Error::Msg(format!("the loss did not fall: {first:.4} -> {last:.4}")));
    }
    println!("loss {first:.4} -> {last:.4}: flashgen's forward and backward trained the model");
    Ok(())
}
