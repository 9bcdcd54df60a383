//! A kernel's score and mask modifiers (`crate::mods`: FlexAttention's score_mod and mask_mod) as a spec
//! carries them. A spec is a small `Copy` value that names a kernel; a modifier is a checked expression
//! tree. `Modifiers` joins the two: the pair is interned once per distinct key (a process holds a handful
//! of them: the modifiers its models use) and the spec holds a `'static` reference, compared, hashed and
//! serialized by the pair's key, so two specs with the same expressions are the same kernel.

use crate::mods::{MaskMod, ModError, PerIndex, Scalar, ScoreMod, TensorDecl};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The kernels' slots for the modifiers' tensors (the ABI's MOD_TENSOR0..3, `abi::modifier_tensors`).
pub const MOD_TENSORS: usize = 4;

/// A score_mod and a mask_mod (either may be absent, not both), with their tensors declared once.
#[derive(Debug)]
pub struct ModifierSet {
    score: Option<ScoreMod>,
    mask: Option<MaskMod>,
    /// Both modifiers' tensors, in the kernel's order: the score_mod's, then the mask_mod's new ones.
    tensors: Vec<TensorDecl>,
    key: String,
    hash: String,
}

/// An interned `ModifierSet`: what `Features::modifiers` holds.
#[derive(Clone, Copy)]
pub struct Modifiers(&'static ModifierSet);

impl Modifiers {
    /// The modifiers of a kernel: `None` when neither changes anything (no score_mod or the identity
    /// `score`, no mask_mod or `true`). Errors: more than `MOD_TENSORS` tensors, or one name declared
    /// differently by the two.
    pub fn new(score: Option<&ScoreMod>, mask: Option<&MaskMod>) -> Result<Option<Modifiers>, ModError> {
        let score = score.filter(|s| !s.is_identity()).cloned();
        let mask = mask.filter(|m| !m.keeps_all()).cloned();
        if score.is_none() && mask.is_none() {
            return Ok(None);
        }
        let mut tensors: Vec<TensorDecl> = score.as_ref().map(|s| s.tensors().to_vec()).unwrap_or_default();
        for d in mask.as_ref().map(|m| m.tensors()).unwrap_or(&[]) {
            match tensors.iter().find(|t| t.name == d.name) {
                Some(t) if t == d => {}
                Some(t) => return Err(declaration_error(format!("tensor `{}` is declared as {t} by the score_mod and as {d} by the mask_mod", d.name), "rename one of them")),
                None => tensors.push(d.clone()),
            }
        }
        if tensors.len() > MOD_TENSORS {
            let names: Vec<String> = tensors.iter().map(|t| t.to_string()).collect();
            return Err(declaration_error(
                format!("the modifiers declare {} tensors ({}); a kernel takes at most {MOD_TENSORS}", tensors.len(), names.join(", ")),
                "read at most 4 tensors: fold constants into the expression, or precompute per-head (or per-batch) values that combine several into one tensor",
            ));
        }
        let key = [score.as_ref().map(|s| s.key()), mask.as_ref().map(|m| m.key())].into_iter().flatten().collect::<Vec<_>>().join("; ");
        let digest = Sha256::digest(key.as_bytes());
        let hash = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
        Ok(Some(Modifiers::intern(ModifierSet { score, mask, tensors, key, hash })))
    }

    fn intern(set: ModifierSet) -> Modifiers {
        static TABLE: OnceLock<Mutex<HashMap<String, &'static ModifierSet>>> = OnceLock::new();
        let mut table = TABLE.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        let entry = table.entry(set.key.clone()).or_insert_with(|| Box::leak(Box::new(set)));
        Modifiers(entry)
    }

    /// Parse `Modifiers::key`'s text back (a spec read from a file).
    pub fn from_key(key: &str) -> Result<Option<Modifiers>, ModError> {
        let (mut score, mut mask) = (None, None);
        for part in key.split("; ").filter(|p| !p.trim().is_empty()) {
            if let Some(rest) = part.strip_prefix("score_mod") {
                let (decls, text) = split_key(rest)?;
                score = Some(ScoreMod::parse(text, &decls)?);
            } else if let Some(rest) = part.strip_prefix("mask_mod") {
                let (decls, text) = split_key(rest)?;
                mask = Some(MaskMod::parse(text, &decls)?);
            } else {
                return Err(declaration_error(format!("`{part}` is not a modifier's key"), "write `score_mod[(tensors)]: expr` or `mask_mod[(tensors)]: expr`"));
            }
        }
        Modifiers::new(score.as_ref(), mask.as_ref())
    }

    pub fn score(&self) -> Option<&'static ScoreMod> {
        self.0.score.as_ref()
    }
    pub fn mask(&self) -> Option<&'static MaskMod> {
        self.0.mask.as_ref()
    }
    /// Every tensor the modifiers read, in the kernel's order (MOD_TENSOR0, 1, ...).
    pub fn tensors(&self) -> &'static [TensorDecl] {
        &self.0.tensors
    }
    /// The kernel's slot of each of `decls` (a modifier's own list, a subset of `tensors` by construction:
    /// `new` merged both lists).
    pub fn slots(&self, decls: &[TensorDecl]) -> Vec<usize> {
        decls.iter().map(|d| self.0.tensors.iter().position(|t| t == d).unwrap_or(0)).collect()
    }
    /// The keys of both, `; `-joined: the cache key's part.
    pub fn key(&self) -> &'static str {
        &self.0.key
    }
    /// 8 hex digits of SHA-256 of the key: the kernel name's part.
    pub fn hash(&self) -> &'static str {
        &self.0.hash
    }
}

fn declaration_error(msg: String, fix: &str) -> ModError {
    ModError::new(crate::mods::Rule::Declaration, None, msg, fix)
}

/// `(a: f32[h], b: i32[b]): text` or `: text` -> the declarations and the text.
fn split_key(rest: &str) -> Result<(Vec<TensorDecl>, &str), ModError> {
    if let Some(text) = rest.strip_prefix(": ") {
        return Ok((Vec::new(), text));
    }
    let bad = || declaration_error(format!("`{rest}` does not start with `(tensors): ` or `: `"), "write the key as Modifiers::key prints it");
    let inner = rest.strip_prefix('(').ok_or_else(bad)?;
    let (decls, text) = inner.split_once("): ").ok_or_else(bad)?;
    let decls = decls.split(", ").map(parse_decl).collect::<Result<Vec<_>, _>>()?;
    Ok((decls, text))
}

/// `name: f32[h]` (as `TensorDecl`'s Display writes it).
fn parse_decl(s: &str) -> Result<TensorDecl, ModError> {
    let bad = || declaration_error(format!("`{s}` is not a tensor declaration"), "write `name: f32[h]`, `name: i32[b]`, ...");
    let (name, ty) = s.split_once(": ").ok_or_else(bad)?;
    let dtype = match &ty[..ty.len().min(3)] {
        "f32" => Scalar::F32,
        "i32" => Scalar::I32,
        _ => return Err(bad()),
    };
    let index = match &ty[ty.len().min(3)..] {
        "[h]" => PerIndex::Head,
        "[b]" => PerIndex::Batch,
        _ => return Err(bad()),
    };
    Ok(TensorDecl { name: name.to_string(), dtype, index })
}

impl PartialEq for Modifiers {
    fn eq(&self, other: &Modifiers) -> bool {
        self.0.key == other.0.key
    }
}
impl Eq for Modifiers {}

impl std::hash::Hash for Modifiers {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.key.hash(state)
    }
}

impl std::fmt::Debug for Modifiers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Modifiers({})", self.0.key)
    }
}

impl Serialize for Modifiers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.key)
    }
}

impl<'de> Deserialize<'de> for Modifiers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Modifiers, D::Error> {
        let key = String::deserialize(d)?;
        match Modifiers::from_key(&key) {
            Ok(Some(m)) => Ok(m),
            Ok(None) => Err(serde::de::Error::custom(format!("modifiers `{key}` change nothing: leave the field out"))),
            Err(e) => Err(serde::de::Error::custom(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mods::builtins;

    #[test]
    fn interned_by_key_and_read_back_from_it() {
        let alibi = builtins::alibi("slope").unwrap();
        let causal = builtins::causal(0).unwrap();
        let a = Modifiers::new(Some(&alibi), Some(&causal)).unwrap().unwrap();
        let b = Modifiers::new(Some(&ScoreMod::parse("score + slope[h] * (kv_idx - q_idx)", &[TensorDecl::per_head("slope", Scalar::F32)]).unwrap()), Some(&causal)).unwrap().unwrap();
        assert!(std::ptr::eq(a.0, b.0), "one set per key");
        let back = Modifiers::from_key(a.key()).unwrap().unwrap();
        assert_eq!(back, a);
        assert_eq!(a.tensors().len(), 1);
        assert_eq!(a.hash().len(), 8);
        let json = serde_json::to_string(&a).unwrap();
        let read: Modifiers = serde_json::from_str(&json).unwrap();
        assert_eq!(read.key(), a.key());
    }

    #[test]
    fn identities_are_no_modifiers_and_tensor_limits_hold() {
        let id = ScoreMod::parse("score", &[]).unwrap();
        let all = MaskMod::parse("true", &[]).unwrap();
        assert!(Modifiers::new(Some(&id), Some(&all)).unwrap().is_none());
        let decls: Vec<TensorDecl> = (0..5).map(|i| TensorDecl::per_head(&format!("t{i}"), Scalar::F32)).collect();
        let five = ScoreMod::parse("score + t0[h] + t1[h] + t2[h] + t3[h] + t4[h]", &decls).unwrap();
        let e = Modifiers::new(Some(&five), None).unwrap_err().to_string();
        assert!(e.contains("at most 4"), "{e}");
        let s = ScoreMod::parse("score * w[h]", &[TensorDecl::per_head("w", Scalar::F32)]).unwrap();
        let m = MaskMod::parse("kv_idx < w[h]", &[TensorDecl::per_head("w", Scalar::I32)]).unwrap();
        assert!(Modifiers::new(Some(&s), Some(&m)).is_err(), "one name, two declarations");
    }
}
