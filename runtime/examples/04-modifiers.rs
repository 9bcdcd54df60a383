//! 04: score and mask modifiers (FlexAttention's score_mod / mask_mod): one built with the Rust builder,
//! one parsed from text, compiled into the kernels with the tensors they read. Needs an H100/H200 (sm_90a).
//! cargo run --release -p flashgen-runtime --example 04-modifiers

use flashgen::mods::{Expr, MaskMod, Scalar, ScoreMod, TensorDecl, Var};
use flashgen::DType;
use flashgen_runtime::{BufferView, CallModifiers, Flash, ForwardCall, Layout, ModTensor, StatsOut, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flash = Flash::open()?;
    let (z, h, n, d) = (2, 8, 1024, 128);
    let layout = Layout::contiguous(z, h, n, d);
    let values = |seed: usize| -> Vec<f32> { (0..z * h * n * d).map(|i| (((i + seed) * 7919) % 2000) as f32 / 1000.0 - 1.0).collect() };
    let (q, k, v) = (Tensor::from_f32(&flash.gpu, &values(1), DType::Bf16, layout)?, Tensor::from_f32(&flash.gpu, &values(2), DType::Bf16, layout)?, Tensor::from_f32(&flash.gpu, &values(3), DType::Bf16, layout)?);
    let mut o = Tensor::from_f32(&flash.gpu, &vec![0.0; z * h * n * d], DType::Bf16, layout)?;

    // ALiBi with the builder: score + slope[h] · (kv_idx − q_idx) (flashgen::mods::builtins has it ready-made)
    let alibi_expr = Expr::score() + Expr::tensor("slope", Var::H) * (Expr::kv_idx() - Expr::q_idx());
    let alibi = ScoreMod::new(&alibi_expr, &[TensorDecl::per_head("slope", Scalar::F32)])?;
    // a document mask from text: block-causal in blocks of 128, and only the first doc_end[b] keys of sequence b
    let docs = MaskMod::parse("q_idx // 128 >= kv_idx // 128 && kv_idx < doc_end[b]", &[TensorDecl::per_batch("doc_end", Scalar::I32)])?;
    println!("score_mod: {}\nmask_mod:  {}\nd(score_mod)/d(score) = {}", alibi.key(), docs.key(), alibi.grad_text());

    let slopes: Vec<f32> = (0..h).map(|i| 2f32.powf(-8.0 * (i + 1) as f32 / h as f32)).collect();
    let slopes = flash.gpu.stream.clone_htod(&slopes)?;
    let doc_end = flash.gpu.stream.clone_htod(&[700i32, 1024])?;
    let modifiers = CallModifiers {
        score: Some(alibi),
        mask: Some(docs),
        tensors: vec![("slope", ModTensor::F32(BufferView::of(&slopes))), ("doc_end", ModTensor::I32(BufferView::of(&doc_end)))],
    };
    let call = ForwardCall { modifiers: Some(modifiers), ..ForwardCall::new(q.view("Q")?, k.view("K")?, v.view("V")?, o.view_mut("O")?, StatsOut::Discard) };
    println!("kernel: {}", flash.forward_kernel(&call)?.name());
    flash.forward(call, flash.own_stream())?;
    let out = o.to_f32(&flash.gpu)?;
    println!("O[..4] = {:?}\nkernel cache: {}", &out[..4], flash.cache.stats.summary());
    Ok(())
}
