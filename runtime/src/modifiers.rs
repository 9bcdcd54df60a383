//! Score and mask modifiers on a call (FlexAttention's score_mod / mask_mod, `flashgen::mods`): the
//! expressions, the tensors they read, and how a call's causal flag, window and softcap join them, so that
//! one kernel computes all of it.

use crate::geometry::{CausalAlign, Geometry};
use crate::view::BufferView;
use crate::RuntimeError;
use flashgen::mods::{builtins, MaskMod, PerIndex, Scalar, ScoreMod};
use flashgen::reference::Window;
use flashgen::spec::{Modifiers, MOD_TENSORS};

/// One tensor a modifier reads: f32 or i32 values on the GPU, one per query head (`name[h]`: H values) or
/// per batch entry (`name[b]`: B values), as its declaration says.
#[derive(Clone, Copy)]
pub enum ModTensor<'a> {
    F32(BufferView<'a, f32>),
    I32(BufferView<'a, i32>),
}

impl ModTensor<'_> {
    fn scalar(&self) -> Scalar {
        match self {
            ModTensor::F32(_) => Scalar::F32,
            ModTensor::I32(_) => Scalar::I32,
        }
    }
    fn len(&self) -> usize {
        match self {
            ModTensor::F32(b) => b.len(),
            ModTensor::I32(b) => b.len(),
        }
    }
    fn addr(&self) -> u64 {
        match self {
            ModTensor::F32(b) => b.addr(),
            ModTensor::I32(b) => b.addr(),
        }
    }
}

/// A call's modifiers: a score_mod (applied to the scaled score s = q·k·sm_scale before the softmax), a
/// mask_mod (true = keep), and the tensors they declare, by name. q_idx and kv_idx are positions in the
/// sequence (packed sequences: in each sequence); b is the batch entry (packed: the sequence), h the query
/// head.
#[derive(Clone, Default)]
pub struct CallModifiers<'a> {
    pub score: Option<ScoreMod>,
    pub mask: Option<MaskMod>,
    pub tensors: Vec<(&'a str, ModTensor<'a>)>,
}

/// The modifiers a kernel takes for a call, with its causal flag, window and softcap folded in where the
/// kernel cannot take them beside the modifiers, and the tensors' addresses in the kernel's slots.
pub(crate) struct KernelModifiers {
    pub modifiers: Option<Modifiers>,
    pub causal: bool,
    pub window: Window,
    pub softcap: Option<f32>,
    /// The causal diagonal's alignment: the call's, or top-left where a mask_mod became the diagonal.
    pub align: CausalAlign,
    pub tensors: [u64; MOD_TENSORS],
}

fn err(msg: String) -> RuntimeError {
    RuntimeError::Argument(msg)
}

/// Join a call's rules (the kernel's causal flag and window, `flashgen::plan::kernel_window`, and softcap)
/// with its modifiers. Without modifiers the rules stay as they are. With a score_mod alone the kernel
/// stays causal or not (a window becomes a mask_mod); a softcap goes before the score_mod (it caps the
/// scaled score, as FlashAttention's does, and the score_mod takes the capped score); with a mask_mod
/// the causal diagonal and the window join it (aligned as the call aligns them: fixed lengths only, as
/// packed sequences would need a diagonal per sequence). A mask that is then exactly a diagonal or a window
/// (`MaskMod::as_window`) leaves the modifiers as the built-in rules, aligned top-left.
pub(crate) fn fold(
    m: Option<&CallModifiers<'_>>,
    (causal, window, softcap): (bool, Window, Option<f32>),
    g: &Geometry,
    align: CausalAlign,
) -> Result<KernelModifiers, RuntimeError> {
    let none = KernelModifiers { modifiers: None, causal, window, softcap, align, tensors: [0; MOD_TENSORS] };
    let Some(m) = m else { return Ok(none) };
    let text = |e: flashgen::mods::ModError| err(e.to_string());
    let mut score = m.score.clone().filter(|s| !s.is_identity());
    let mut mask = m.mask.clone().filter(|x| !x.keeps_all());
    if score.is_none() && mask.is_none() {
        check_unused(m)?;
        return Ok(none);
    }
    let (mut causal, mut window, mut align) = (causal, window, align);
    // (a mask_mod takes the causal diagonal and the window with it; a window, which the kernel cannot take
    // beside modifiers, becomes one)
    let bounded = !window.is_unbounded();
    if bounded || (mask.is_some() && causal) {
        if g.varlen && align == CausalAlign::BottomRight {
            return Err(err(
                "causal or a window with a mask_mod, or a window with a score_mod, on packed sequences: the diagonal differs per sequence; write it into the mask_mod (e.g. `kv_idx <= q_idx` for sequences of equal query and key lengths) and pass causal = false and no window".into(),
            ));
        }
        let offset = match align {
            CausalAlign::BottomRight => g.seqlen_k as i64 - g.seqlen_q as i64,
            CausalAlign::TopLeft => 0,
        };
        // the kernel's window (causal: right bound 0) as a mask
        let right = if causal { Some(window.right.unwrap_or(0)) } else { window.right };
        let bound = |x: Option<usize>| x.map(|x| x.min(u32::MAX as usize) as u32);
        let rule = builtins::sliding_window(bound(window.left), bound(right), offset).map_err(text)?;
        mask = Some(match mask {
            Some(x) => rule.and(&x).map_err(text)?,
            None => rule,
        });
        causal = false;
        window = Window::UNBOUNDED;
    }
    // a mask that is exactly a causal diagonal or a window (FlexAttention's causal mask_mod, a band) runs
    // as one, top-left: the built-in kernels (the fused backward among them), which the kernel can take
    // beside a score_mod only without a window
    if let Some(rule) = mask.as_ref().and_then(|x| x.as_window()) {
        let (rule_causal, rule_window) = flashgen::plan::kernel_window(false, rule);
        if score.is_none() || rule_window.is_unbounded() {
            (mask, causal, window, align) = (None, rule_causal, rule_window, CausalAlign::TopLeft);
            if score.is_none() {
                check_unused(m)?;
                return Ok(KernelModifiers { modifiers: None, causal, window, softcap, align, tensors: [0; MOD_TENSORS] });
            }
        }
    }
    if let Some(cap) = softcap {
        // (softcap first, on the scaled score, as FlashAttention applies it before ALiBi and the masks)
        let cap_mod = builtins::softcap(cap as f64).map_err(text)?;
        score = Some(match score {
            Some(s) => cap_mod.then(&s).map_err(text)?,
            None => cap_mod,
        });
    }
    let modifiers = Modifiers::new(score.as_ref(), mask.as_ref()).map_err(text)?;
    let mut tensors = [0u64; MOD_TENSORS];
    if let Some(mods) = modifiers {
        for (slot, decl) in mods.tensors().iter().enumerate() {
            let given: Vec<&ModTensor<'_>> = m.tensors.iter().filter(|(n, _)| *n == decl.name).map(|(_, t)| t).collect();
            let t = match given.as_slice() {
                [t] => *t,
                [] => return Err(err(format!("the modifiers read tensor `{decl}` but the call gives none by that name: add (\"{}\", ModTensor::..) to the call's tensors", decl.name))),
                _ => return Err(err(format!("tensor `{}` is given {} times: give it once", decl.name, given.len()))),
            };
            if t.scalar() != decl.dtype {
                return Err(err(format!("tensor `{}` holds {} but is declared {decl}: pass {} values", decl.name, t.scalar().name(), decl.dtype.name())));
            }
            let (needed, what) = match decl.index {
                PerIndex::Head => (g.heads, "query heads"),
                PerIndex::Batch => (g.batch, "batch entries (sequences)"),
            };
            if t.len() < needed {
                return Err(err(format!("tensor `{decl}` holds {} values but the call has {needed} {what}: give one value each", t.len())));
            }
            if t.len() > 0 && t.addr() % 4 != 0 {
                return Err(err(format!("tensor `{}` at {:#x} is not 4-byte aligned", decl.name, t.addr())));
            }
            tensors[slot] = t.addr();
        }
        for (name, _) in &m.tensors {
            if !mods.tensors().iter().any(|d| d.name == *name) {
                return Err(err(format!("tensor `{name}` is given but no modifier declares it: declare it (TensorDecl) or leave it out")));
            }
        }
    }
    Ok(KernelModifiers { modifiers, causal, window, softcap: if modifiers.is_some() { None } else { softcap }, align, tensors })
}

fn check_unused(m: &CallModifiers<'_>) -> Result<(), RuntimeError> {
    match m.tensors.first() {
        Some((name, _)) => Err(err(format!("tensor `{name}` is given but no modifier reads it: leave it out"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashgen::mods::TensorDecl;

    fn geometry(varlen: bool) -> Geometry {
        Geometry { batch: 2, heads: 4, kv_heads: 4, seqlen_q: 100, seqlen_k: 130, head_dim: 64, head_dim_v: 64, varlen, total_q: 200, total_k: 260 }
    }

    #[test]
    fn causal_window_and_softcap_join_the_modifiers() {
        let slope = [0.5f32; 4];
        let view = unsafe { BufferView::from_raw_parts(0x1000, slope.len()) };
        let alibi = builtins::alibi("slope").unwrap();
        let call = CallModifiers { score: Some(alibi.clone()), mask: None, tensors: vec![("slope", ModTensor::F32(view))] };
        // score_mod alone: the kernel stays causal, the tensor goes to slot 0
        let k = fold(Some(&call), (true, Window::UNBOUNDED, None), &geometry(false), CausalAlign::BottomRight).unwrap();
        assert!(k.causal && k.modifiers.unwrap().mask().is_none());
        assert_eq!(k.tensors[0], 0x1000);
        // a mask_mod takes the causal diagonal, bottom-right (offset 30), and ALiBi takes the capped score
        let docs = MaskMod::parse("kv_idx >= 0", &[]).unwrap();
        let call = CallModifiers { mask: Some(docs), ..call };
        let k = fold(Some(&call), (true, Window::UNBOUNDED, Some(30.0)), &geometry(false), CausalAlign::BottomRight).unwrap();
        let mods = k.modifiers.unwrap();
        assert!(!k.causal && k.softcap.is_none());
        assert!(mods.mask().unwrap().text().contains("q_idx + 30"), "{}", mods.key());
        assert!(mods.score().unwrap().text().starts_with("30.0 * tanh(score / 30.0) +"), "{}", mods.key());
        // packed sequences cannot take a diagonal with a mask_mod
        assert!(fold(Some(&call), (true, Window::UNBOUNDED, None), &geometry(true), CausalAlign::BottomRight).is_err());
    }

    #[test]
    fn masks_that_are_a_diagonal_or_a_window_run_as_the_built_in_rules() {
        let slope = [0.5f32; 4];
        let view = unsafe { BufferView::from_raw_parts(0x1000, slope.len()) };
        let mask = |text: &str| MaskMod::parse(text, &[]).unwrap();
        let g = geometry(false);
        let fold_mask = |m: &str, score: Option<ScoreMod>, rules: (bool, Window, Option<f32>), align| {
            let tensors = if score.is_some() { vec![("slope", ModTensor::F32(view))] } else { vec![] };
            fold(Some(&CallModifiers { score, mask: Some(mask(m)), tensors }), rules, &g, align).unwrap()
        };
        let plain = (false, Window::UNBOUNDED, None);
        // FlexAttention's causal mask_mod: the causal kernels, top-left, no modifiers
        let k = fold_mask("kv_idx <= q_idx", None, plain, CausalAlign::BottomRight);
        assert!(k.modifiers.is_none() && k.causal && k.window.is_unbounded() && k.align == CausalAlign::TopLeft);
        // a band: the causal window; with softcap, the built-in softcap beside it
        let k = fold_mask("kv_idx <= q_idx && q_idx - kv_idx < 256", None, (false, Window::UNBOUNDED, Some(30.0)), CausalAlign::TopLeft);
        assert!(k.modifiers.is_none() && k.causal && k.window == Window { left: Some(255), right: Some(0) } && k.softcap == Some(30.0));
        // the call's causal flag, bottom-right (offset 30), joined by a band: the diagonal shifted by 30, top-left
        let k = fold_mask("kv_idx >= q_idx - 70", None, (true, Window::UNBOUNDED, None), CausalAlign::BottomRight);
        assert!(k.modifiers.is_none() && k.causal && k.window == Window { left: Some(70), right: Some(30) } && k.align == CausalAlign::TopLeft);
        // with a score_mod: the diagonal alone becomes the causal flag, a window stays a mask
        let alibi = builtins::alibi("slope").unwrap();
        let k = fold_mask("kv_idx <= q_idx", Some(alibi.clone()), plain, CausalAlign::BottomRight);
        let mods = k.modifiers.unwrap();
        assert!(mods.mask().is_none() && mods.score().is_some() && k.causal && k.align == CausalAlign::TopLeft);
        assert_eq!(k.tensors[0], 0x1000);
        let k = fold_mask("kv_idx <= q_idx && q_idx - kv_idx < 256", Some(alibi), plain, CausalAlign::BottomRight);
        assert!(k.modifiers.unwrap().mask().is_some() && !k.causal && k.align == CausalAlign::BottomRight);
        // a mask that is no window stays one; a tensor only the mask read is then unused
        let k = fold_mask("kv_idx <= q_idx && kv_idx % 2 == 0", None, plain, CausalAlign::BottomRight);
        assert!(k.modifiers.unwrap().mask().is_some() && !k.causal);
        let call = CallModifiers { score: None, mask: Some(mask("kv_idx <= q_idx")), tensors: vec![("slope", ModTensor::F32(view))] };
        let e = fold(Some(&call), plain, &g, CausalAlign::BottomRight).err().unwrap().to_string();
        assert!(e.contains("no modifier reads it"), "{e}");
    }

    #[test]
    fn tensors_are_checked_against_the_declarations() {
        let short = unsafe { BufferView::<f32>::from_raw_parts(0x1000, 3) };
        let ints = unsafe { BufferView::<i32>::from_raw_parts(0x1000, 4) };
        let alibi = builtins::alibi("slope").unwrap();
        let rules = (false, Window::UNBOUNDED, None);
        let g = geometry(false);
        let cases: [(Vec<(&str, ModTensor)>, &str); 4] = [
            (vec![], "gives none"),
            (vec![("slope", ModTensor::F32(short))], "holds 3 values"),
            (vec![("slope", ModTensor::I32(ints))], "holds i32"),
            (vec![("slope", ModTensor::F32(short)), ("other", ModTensor::I32(ints))], "holds 3 values"),
        ];
        for (tensors, want) in cases {
            let call = CallModifiers { score: Some(alibi.clone()), mask: None, tensors };
            let e = fold(Some(&call), rules, &g, CausalAlign::BottomRight).err().unwrap().to_string();
            assert!(e.contains(want), "{e} (want {want})");
        }
        let per_batch = ScoreMod::parse("score * w[b]", &[TensorDecl::per_batch("w", Scalar::F32)]).unwrap();
        let two = unsafe { BufferView::<f32>::from_raw_parts(0x2000, 2) };
        let call = CallModifiers { score: Some(per_batch), mask: None, tensors: vec![("w", ModTensor::F32(two)), ("x", ModTensor::F32(two))] };
        let e = fold(Some(&call), rules, &g, CausalAlign::BottomRight).err().unwrap().to_string();
        assert!(e.contains("no modifier declares"), "{e}");
    }
}
