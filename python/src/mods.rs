//! score_mod / mask_mod from Python (FlexAttention's, as expressions: `flashgen::mods`) and flash-attn's
//! `alibi_slopes`, read into the runtime's `CallModifiers`. The expressions come as strings; the tensors they
//! read as parallel lists of names and tensors, each declared by how the expressions index it (`slope[h]`: one
//! value per query head, `doc_end[b]`: one per batch entry) and by its dtype (float32 or int32).

use crate::dlpack::{self, Operand, DL_FLOAT, DL_INT};
use crate::value_err;
use flashgen::mods::{builtins, MaskMod, ModError, PerIndex, Scalar, ScoreMod, TensorDecl};
use flashgen_runtime::{BufferView, CallModifiers, ModTensor};
use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;

/// The modifiers of a call and the tensors they read, alive (their capsules) while the call is queued.
pub struct PyMods<'py> {
    score: Option<ScoreMod>,
    mask: Option<MaskMod>,
    tensors: Vec<(String, Operand, Bound<'py, PyAny>)>,
}

/// The name ALiBi's slopes go by in the expression `alibi_slopes` builds.
const ALIBI: &str = "alibi_slopes";

fn mod_err(e: ModError) -> PyErr {
    value_err(e.to_string())
}

/// How `src` indexes tensor `name`: `name[h]` or `name[b]` (spaces allowed); None when it does not read it.
fn index_in(src: &str, name: &str) -> PyResult<Option<PerIndex>> {
    let mut found = None;
    let bytes = src.as_bytes();
    let mut at = 0;
    while let Some(i) = src[at..].find(name).map(|i| i + at) {
        at = i + name.len();
        let before_ok = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let rest = src[at..].trim_start();
        if !before_ok || !rest.starts_with('[') {
            continue;
        }
        let inner = rest[1..].trim_start();
        let index = match inner.chars().next() {
            Some('h') => PerIndex::Head,
            Some('b') => PerIndex::Batch,
            _ => return Err(value_err(format!("tensor `{name}` is indexed by something other than h or b in `{src}`: a modifier's tensor holds one value per query head (`{name}[h]`) or per batch entry (`{name}[b]`)"))),
        };
        if found.is_some_and(|f| f != index) {
            return Err(value_err(format!("tensor `{name}` is indexed both by h and by b in `{src}`: give two tensors")));
        }
        found = Some(index);
    }
    Ok(found)
}

/// One modifier tensor: float32 or int32, 1-D, contiguous, 4-byte aligned.
fn scalar_of(name: &str, op: &Operand) -> PyResult<Scalar> {
    let scalar = match (op.dtype.code, op.dtype.bits, op.dtype.lanes) {
        (DL_FLOAT, 32, 1) => Scalar::F32,
        (DL_INT, 32, 1) => Scalar::I32,
        _ => return Err(value_err(format!("tensor `{name}` is {}: a modifier's tensor is torch.float32 or torch.int32", op.dtype.describe()))),
    };
    if op.shape.len() != 1 {
        return Err(value_err(format!("tensor `{name}` has shape {:?}: a modifier's tensor is 1-D (heads,) or (batch,)", op.shape)));
    }
    if op.shape[0] > 1 && op.strides[0] != 1 {
        return Err(value_err(format!("tensor `{name}` has stride {}: a modifier's tensor is contiguous", op.strides[0])));
    }
    if op.shape[0] > 0 && (op.addr == 0 || !op.addr.is_multiple_of(4)) {
        return Err(value_err(format!("tensor `{name}`: base address {:#x} is not 4-byte aligned", op.addr)));
    }
    Ok(scalar)
}

/// Read a call's modifiers. `offset`: n_kv − n_q of fixed lengths (None for packed sequences), where
/// flash-attn's ALiBi centres its bias: −slope·|q_idx + offset − kv_idx|.
pub fn read<'py>(
    score_mod: Option<&str>,
    mask_mod: Option<&str>,
    names: Option<Vec<String>>,
    values: Option<Vec<Bound<'py, PyAny>>>,
    alibi_slopes: Option<&Bound<'py, PyAny>>,
    offset: Option<i64>,
) -> PyResult<Option<PyMods<'py>>> {
    let (names, values) = (names.unwrap_or_default(), values.unwrap_or_default());
    if names.len() != values.len() {
        return Err(value_err(format!("mod_tensors: {} names for {} tensors", names.len(), values.len())));
    }
    let mut tensors = Vec::new();
    for (name, value) in names.into_iter().zip(values) {
        if name == ALIBI && alibi_slopes.is_some() {
            return Err(value_err(format!("mod_tensors: `{ALIBI}` is alibi_slopes's name; pick another")));
        }
        let (op, capsule) = dlpack::read("mod_tensors", &value)?;
        tensors.push((name, op, capsule));
    }
    let mut score_src = score_mod.map(str::to_string);
    if let Some(slopes) = alibi_slopes {
        if score_src.is_some() {
            return Err(value_err("alibi_slopes with a score_mod: write ALiBi into the score_mod (e.g. `score - slope[h] * abs(q_idx - kv_idx)`)"));
        }
        let Some(offset) = offset else {
            return Err(PyNotImplementedError::new_err(
                "alibi_slopes with packed sequences: the bias centres on each sequence's diagonal; pass a score_mod with a per-batch offset tensor instead",
            ));
        };
        let (op, capsule) = dlpack::read(ALIBI, slopes)?;
        if op.shape.len() == 2 {
            return Err(PyNotImplementedError::new_err("alibi_slopes of shape (batch, heads): flashgen takes one slope per head, (heads,)"));
        }
        let alibi = builtins::alibi_symmetric(ALIBI, offset).map_err(mod_err)?;
        score_src = Some(alibi.text().to_string());
        tensors.push((ALIBI.to_string(), op, capsule));
    }
    if score_src.is_none() && mask_mod.is_none() {
        if let Some((name, ..)) = tensors.first() {
            return Err(value_err(format!("mod_tensors: `{name}` is given without a score_mod or mask_mod")));
        }
        return Ok(None);
    }
    // each tensor declared by the expressions' indexing and its dtype
    let mut decls = Vec::new();
    for (name, op, _) in &tensors {
        let dtype = scalar_of(name, op)?;
        let uses: Vec<PerIndex> = [score_src.as_deref(), mask_mod].into_iter().flatten().map(|s| index_in(s, name)).collect::<PyResult<Vec<_>>>()?.into_iter().flatten().collect();
        let Some(&index) = uses.first() else {
            return Err(value_err(format!("mod_tensors: `{name}` is given but neither modifier reads it (`{name}[h]` or `{name}[b]`)")));
        };
        if uses.iter().any(|&u| u != index) {
            return Err(value_err(format!("tensor `{name}` is indexed by h in one modifier and by b in the other: give two tensors")));
        }
        decls.push(TensorDecl { name: name.clone(), dtype, index });
    }
    let used_by = |src: &str| -> Vec<TensorDecl> { decls.iter().filter(|d| index_in(src, &d.name).ok().flatten().is_some()).cloned().collect() };
    let score = score_src.as_deref().map(|s| ScoreMod::parse(s, &used_by(s))).transpose().map_err(mod_err)?;
    let mask = mask_mod.map(|s| MaskMod::parse(s, &used_by(s))).transpose().map_err(mod_err)?;
    Ok(Some(PyMods { score, mask, tensors }))
}

impl<'py> PyMods<'py> {
    /// The tensors' operands (for the device check).
    pub fn operands(&self) -> Vec<&Operand> {
        self.tensors.iter().map(|(_, op, _)| op).collect()
    }

    /// The runtime's modifiers over the tensors (alive while `self` is).
    pub fn call<'a>(&'a self) -> CallModifiers<'a> {
        let tensors = self
            .tensors
            .iter()
            .map(|(name, op, _)| {
                let len = op.shape.first().copied().unwrap_or(0).max(0) as usize;
                // SAFETY: checked by `read` to be a contiguous 1-D float32 / int32 tensor of `len` values in
                // the same GPU's memory (check_devices), alive (its capsule is held) while `self` is.
                let t = if op.dtype.code == DL_FLOAT {
                    ModTensor::F32(unsafe { BufferView::from_raw_parts(op.addr, len) })
                } else {
                    ModTensor::I32(unsafe { BufferView::from_raw_parts(op.addr, len) })
                };
                (name.as_str(), t)
            })
            .collect();
        CallModifiers { score: self.score.clone(), mask: self.mask.clone(), tensors }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_are_declared_by_their_indexing() {
        assert_eq!(index_in("score + slope[h] * (kv_idx - q_idx)", "slope").unwrap(), Some(PerIndex::Head));
        assert_eq!(index_in("kv_idx < doc_end [ b ]", "doc_end").unwrap(), Some(PerIndex::Batch));
        assert_eq!(index_in("kv_idx < my_slope[h]", "slope").unwrap(), None, "a longer name is not this one");
        assert!(index_in("slope[h] + slope[b]", "slope").is_err());
        assert!(index_in("slope[q_idx]", "slope").is_err());
    }
}
