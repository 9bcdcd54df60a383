//! The geometry of one attention call, validated once: batch, query and K/V heads, query and key lengths
//! (fixed, or packed variable-length sequences), the head dim, and how a causal mask aligns queries with
//! keys. Every shape rule of Q, K, V and the outputs is checked here, before anything is planned or
//! launched; the kernels receive the result through the ABI's geometry group (flashgen::abi::geometry).
//!
//! Tensors are [Z, H, N, D] views (`Layout`). Fixed lengths: Q [B, H, N_q, D], K and V [B, H_kv, N_kv, D],
//! O like Q, the row statistics [B, H, N_q]. Packed variable-length batches: the sequences of the batch one
//! after another in one [total, H, D] tensor (Z = 1: `Layout::bshd(1, H, total, D)` for FlashAttention's
//! (total, H, D)); sequence b owns rows cu_seqlens[b] .. cu_seqlens[b + 1]; the row statistics [H, total_q].

use crate::view::{BufferView, TensorView};
use crate::{LayoutError, RuntimeError};

/// Where the causal diagonal lies when a sequence has N_q ≠ N_kv (flashgen::reference::Alignment).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CausalAlign {
    /// Query i sees key j iff j ≤ i + N_kv − N_q: the last query is aligned with the last key
    /// (FlashAttention 2 and later). With N_q > N_kv the first N_q − N_kv rows see no key: O = 0, LSE = −∞.
    #[default]
    BottomRight,
    /// Query i sees key j iff j ≤ i (PyTorch's `is_causal`).
    TopLeft,
}

/// Packed variable-length sequences: B + 1 offsets into the packed Q and into the packed K/V, on the GPU
/// (i32, as FlashAttention takes them), the longest lengths, and, when the caller has them, host copies of
/// the offsets, which are then checked before anything runs. Without host copies the kernels clamp every
/// sequence to its tensor: lying offsets give wrong numbers for those sequences, never a read outside.
#[derive(Clone, Copy)]
pub struct VarLen<'a> {
    pub cu_seqlens_q: BufferView<'a, i32>,
    pub cu_seqlens_k: BufferView<'a, i32>,
    pub max_seqlen_q: usize,
    pub max_seqlen_k: usize,
    pub host_cu_seqlens_q: Option<&'a [i32]>,
    pub host_cu_seqlens_k: Option<&'a [i32]>,
}

/// The validated geometry of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub batch: usize,
    pub heads: usize,
    pub kv_heads: usize,
    /// Query rows of a sequence (the longest, for packed batches).
    pub seqlen_q: usize,
    /// Key rows of a sequence (the longest, for packed batches).
    pub seqlen_k: usize,
    pub head_dim: usize,
    /// V's head dim (and O's): Q's and K's, or narrower (DeepSeek's 192/128).
    pub head_dim_v: usize,
    /// Packed variable-length sequences (Z = 1 tensors; per-sequence lengths on the GPU).
    pub varlen: bool,
    /// Rows of the packed tensors (varlen), else B·N.
    pub total_q: usize,
    pub total_k: usize,
}

impl Geometry {
    /// Query heads per K/V head.
    pub fn group(&self) -> usize {
        self.heads / self.kv_heads.max(1)
    }

    /// Rows of the row statistics (M or LSE): B·H·N_q, or H·total_q for packed batches.
    pub fn stat_rows(&self) -> usize {
        if self.varlen {
            self.heads * self.total_q
        } else {
            self.batch * self.heads * self.seqlen_q
        }
    }

    /// Nothing to compute (an empty batch, head count or sequence): the calls launch nothing.
    pub fn is_empty(&self) -> bool {
        self.batch == 0 || self.heads == 0 || self.seqlen_q == 0 || self.total_q == 0
    }

    /// The geometry of Q, K, V (and the outputs, checked against it by the callers), or the rule they break.
    pub fn of(q: &TensorView<'_>, k: &TensorView<'_>, v: &TensorView<'_>, varlen: Option<&VarLen<'_>>) -> Result<Geometry, RuntimeError> {
        let arg = |msg: String| Err(RuntimeError::Argument(msg));
        let [qz, h, qn, d] = q.layout.shape;
        let [kz, hkv, kn, kd] = k.layout.shape;
        let dv = v.layout.shape[3];
        if v.layout.shape[..3] != k.layout.shape[..3] {
            return arg(format!("tensor V has shape {:?} but K has {:?}: K and V must have one batch, head count and length ([B, H_kv, N_kv, D])", v.layout.shape, k.layout.shape));
        }
        if dv > kd || dv == 0 || dv % 8 != 0 {
            return arg(format!("tensor V has head dim {dv} and K {kd}: V's is K's, or narrower and a multiple of 8 (DeepSeek's 192/128)"));
        }
        if kd != d {
            return arg(format!("tensor K has head dim {kd} but Q has {d}: Q and K share one head dim"));
        }
        if hkv == 0 || h % hkv != 0 {
            return arg(format!("Q has {h} heads and K/V {hkv}: the query heads must be a multiple of the K/V heads (grouped-query attention: head h reads K/V head h / (H / H_kv))"));
        }
        let Some(var) = varlen else {
            if kz != qz {
                return arg(format!("tensor K has batch {kz} but Q has {qz}: one batch for Q, K and V"));
            }
            return Ok(Geometry { batch: qz, heads: h, kv_heads: hkv, seqlen_q: qn, seqlen_k: kn, head_dim: d, head_dim_v: dv, varlen: false, total_q: qz * qn, total_k: kz * kn });
        };
        // packed sequences: one [total, H, D] tensor each (Z = 1)
        if qz != 1 || kz != 1 {
            return arg(format!("packed variable-length Q and K are one sequence of tokens each ([1, H, total, D], FlashAttention's (total, H, D)), but Q has Z = {qz} and K Z = {kz}"));
        }
        let (nq, nk) = (var.cu_seqlens_q.len(), var.cu_seqlens_k.len());
        if nq < 1 || nq != nk {
            return arg(format!("cu_seqlens_q has {nq} offsets and cu_seqlens_k {nk}: both hold B + 1 (one per sequence, and the end)"));
        }
        let batch = nq - 1;
        for (name, host, total, max) in [("cu_seqlens_q", var.host_cu_seqlens_q, qn, var.max_seqlen_q), ("cu_seqlens_k", var.host_cu_seqlens_k, kn, var.max_seqlen_k)] {
            if let Some(host) = host {
                check_offsets(name, host, nq, total, max)?;
            }
            if max > i32::MAX as usize {
                return arg(format!("max_seqlen of {name} = {max} overflows the kernels' 32-bit rows"));
            }
        }
        Ok(Geometry { batch, heads: h, kv_heads: hkv, seqlen_q: var.max_seqlen_q, seqlen_k: var.max_seqlen_k, head_dim: d, head_dim_v: dv, varlen: true, total_q: qn, total_k: kn })
    }
}

/// The rules of one offsets array, on its host copy: B + 1 entries, starting at 0, non-decreasing, ending
/// at most at the packed tensor's rows, no sequence longer than the given maximum.
pub fn check_offsets(name: &'static str, host: &[i32], entries: usize, total: usize, max_seqlen: usize) -> Result<(), RuntimeError> {
    let err = |rule: String| Err(LayoutError { tensor: name, rule }.into());
    if host.len() != entries {
        return err(format!("the host copy has {} offsets but the GPU's {entries}", host.len()));
    }
    if host.first() != Some(&0) {
        return err(format!("starts at {:?}: the first offset is 0", host.first()));
    }
    for (b, pair) in host.windows(2).enumerate() {
        let len = i64::from(pair[1]) - i64::from(pair[0]);
        if len < 0 {
            return err(format!("sequence {b} has offsets {} .. {}: the offsets never decrease", pair[0], pair[1]));
        }
        if len as usize > max_seqlen {
            return err(format!("sequence {b} has {len} tokens but max_seqlen is {max_seqlen}: give the longest length"));
        }
    }
    let end = *host.last().unwrap_or(&0) as usize;
    if end > total {
        return err(format!("ends at token {end} but the packed tensor holds {total}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;
    use flashgen::DType;

    fn view(layout: Layout) -> TensorView<'static> {
        unsafe { TensorView::from_raw_parts("T", 0x10000, layout.extent(), DType::Bf16, layout) }.unwrap()
    }

    #[test]
    fn grouped_and_unequal_lengths() {
        let q = view(Layout::bshd(2, 8, 100, 64));
        let kv = view(Layout::bshd(2, 2, 300, 64));
        let g = Geometry::of(&q, &kv, &kv, None).unwrap();
        assert_eq!((g.batch, g.heads, g.kv_heads, g.group(), g.seqlen_q, g.seqlen_k, g.stat_rows()), (2, 8, 2, 4, 100, 300, 2 * 8 * 100));
        let e = Geometry::of(&q, &view(Layout::bshd(2, 3, 300, 64)), &view(Layout::bshd(2, 3, 300, 64)), None).unwrap_err().to_string();
        assert!(e.contains("multiple of the K/V heads"), "{e}");
        let e = Geometry::of(&q, &kv, &view(Layout::bshd(2, 2, 299, 64)), None).unwrap_err().to_string();
        assert!(e.contains("K and V must have one batch, head count and length"), "{e}");
        // V narrower than K (DeepSeek's 192/128), not wider, in whole 16-byte chunks
        let (q192, k192) = (view(Layout::bshd(2, 8, 100, 192)), view(Layout::bshd(2, 2, 300, 192)));
        let g = Geometry::of(&q192, &k192, &view(Layout::bshd(2, 2, 300, 128)), None).unwrap();
        assert_eq!((g.head_dim, g.head_dim_v), (192, 128));
        for dv in [256] {
            let e = Geometry::of(&q192, &k192, &view(Layout::bshd(2, 2, 300, dv)), None).unwrap_err().to_string();
            assert!(e.contains(&format!("tensor V has head dim {dv} and K 192")) && e.contains("narrower and a multiple of 8"), "{e}");
        }
        let e = Geometry::of(&q, &view(Layout::bshd(1, 2, 300, 64)), &view(Layout::bshd(1, 2, 300, 64)), None).unwrap_err().to_string();
        assert!(e.contains("one batch"), "{e}");
    }

    #[test]
    fn packed_sequences_and_lying_offsets() {
        let q = view(Layout::bshd(1, 4, 700, 128));
        let k = view(Layout::bshd(1, 4, 900, 128));
        const CU_Q: [i32; 4] = [0, 300, 300, 700];
        let cu_q: &'static [i32] = &CU_Q;
        const CU_K: [i32; 4] = [0, 500, 600, 900];
        let cu_k: &'static [i32] = &CU_K;
        let dev = |n| unsafe { BufferView::<i32>::from_raw_parts(0x20000, n) };
        let var = |cq: &'static [i32], ck: &'static [i32], mq, mk| VarLen { cu_seqlens_q: dev(cq.len()), cu_seqlens_k: dev(ck.len()), max_seqlen_q: mq, max_seqlen_k: mk, host_cu_seqlens_q: Some(cq), host_cu_seqlens_k: Some(ck) };
        let g = Geometry::of(&q, &k, &k, Some(&var(cu_q, cu_k, 400, 500))).unwrap();
        assert_eq!((g.batch, g.seqlen_q, g.seqlen_k, g.total_q, g.stat_rows(), g.varlen), (3, 400, 500, 700, 4 * 700, true));
        for (cq, ck, mq, says) in [
            (&[1, 300, 700][..], &[0, 500, 900][..], 400, "the first offset is 0"),
            (&[0, 400, 300, 700][..], &[0, 500, 600, 900][..], 400, "never decrease"),
            (&[0, 300, 300, 800][..], &[0, 500, 600, 900][..], 500, "holds 700"),
            (&[0, 300, 300, 700][..], &[0, 500, 600, 900][..], 399, "max_seqlen is 399"),
            (&[0, 300, 700][..], &[0, 500, 600, 900][..], 400, "B + 1"),
        ] {
            let v = VarLen { cu_seqlens_q: dev(cq.len()), cu_seqlens_k: dev(ck.len()), max_seqlen_q: mq, max_seqlen_k: 500, host_cu_seqlens_q: Some(cq), host_cu_seqlens_k: Some(ck) };
            let e = Geometry::of(&q, &k, &k, Some(&v)).unwrap_err().to_string();
            assert!(e.contains(says), "{cq:?}: {e}");
        }
        let e = Geometry::of(&view(Layout::bshd(2, 4, 350, 128)), &k, &k, Some(&var(cu_q, cu_k, 400, 500))).unwrap_err().to_string();
        assert!(e.contains("[1, H, total, D]"), "{e}");
    }
}
