//! The backward in f64. With the row softmax P_i over the visible keys, O_i = P_i·V and s_ij the final
//! score (after every modifier) of x_ij = q_i·k_j:
//!
//! ```text
//! dV_j  += P_ij dO_i
//! Δ_i    = dO_i · O_i
//! dS_ij  = P_ij (dO_i · V_j − Δ_i)                 ∂L/∂s_ij
//! dX_ij  = dS_ij · ds_ij/dx_ij                      ds/dx = sm_scale · (1 − tanh²(sm_scale·x/cap)) · score_mod′
//! dQ_i  += dX_ij K_j,   dK_j += dX_ij Q_i
//! ```
//!
//! ALiBi adds a constant per pair and has no derivative in x (no gradient to the slopes); masked pairs and
//! rows with no visible key contribute nothing. Under GQA, dK and dV of a K/V head sum over the query heads
//! of its group, in a fixed order (head, then row, then key).

use super::forward::{dot, row_softmax, weighted_values};
use super::problem::{Layouts, Qkv, QueryRow, RefProblem};

/// dQ, dK, dV of one problem, in Q's, K's and V's layouts.
#[derive(Clone, Debug)]
pub struct Gradients<T> {
    pub dq: Vec<T>,
    pub dk: Vec<T>,
    pub dv: Vec<T>,
}

/// The gradients one K/V head of one sequence owns: dK and dV of that head, and dQ of the query heads that
/// read it. Groups are independent, so a caller may compute them on several threads and
/// [`GroupGradients::scatter`] them into one [`Gradients`].
#[derive(Clone, Debug)]
pub struct GroupGradients {
    pub b: usize,
    pub kv_head: usize,
    /// [group][N_q][D_qk]: query head kv_head·group + g, row i.
    pub dq: Vec<f64>,
    /// [N_kv][D_qk].
    pub dk: Vec<f64>,
    /// [N_kv][D_v].
    pub dv: Vec<f64>,
}

impl GroupGradients {
    /// Copy this group's rows into the problem-wide gradients (in the problem's layouts).
    pub fn scatter(&self, p: &RefProblem, l: &Layouts, g: &mut Gradients<f64>) {
        let s = p.seq(self.b);
        for gh in 0..p.group() {
            for i in 0..s.n_q {
                let at = p.q_offset(l, QueryRow { b: self.b, h: self.kv_head * p.group() + gh, i });
                let from = (gh * s.n_q + i) * p.d_qk;
                g.dq[at..at + p.d_qk].copy_from_slice(&self.dq[from..from + p.d_qk]);
            }
        }
        for j in 0..s.n_kv {
            let at = p.k_offset(l, self.b, self.kv_head, j);
            g.dk[at..at + p.d_qk].copy_from_slice(&self.dk[j * p.d_qk..(j + 1) * p.d_qk]);
            let at = p.v_offset(l, self.b, self.kv_head, j);
            g.dv[at..at + p.d_v].copy_from_slice(&self.dv[j * p.d_v..(j + 1) * p.d_v]);
        }
    }
}

/// The gradients of K/V head `kv_head` of sequence `b` and of its query heads, for the loss whose
/// gradient in O is `d_o` (in O's layout).
pub fn backward_group(p: &RefProblem, x: &Qkv<'_>, d_o: &[f32], b: usize, kv_head: usize) -> GroupGradients {
    let l = p.layouts();
    let s = p.seq(b);
    let (d_qk, d_v, group) = (p.d_qk, p.d_v, p.group());
    let mut gg = GroupGradients { b, kv_head, dq: vec![0.0; group * s.n_q * d_qk], dk: vec![0.0; s.n_kv * d_qk], dv: vec![0.0; s.n_kv * d_v] };
    let key = |j: usize| {
        let at = p.k_offset(&l, b, kv_head, j);
        &x.k[at..at + d_qk]
    };
    let value = |j: usize| {
        let at = p.v_offset(&l, b, kv_head, j);
        &x.v[at..at + d_v]
    };
    let mut o = vec![0f64; d_v];
    for gh in 0..group {
        let h = kv_head * group + gh;
        for i in 0..s.n_q {
            let row = QueryRow { b, h, i };
            let rules = p.row_rules(row);
            let q_at = p.q_offset(&l, row);
            let q = &x.q[q_at..q_at + d_qk];
            let o_at = p.o_offset(&l, row);
            let d_o_row = &d_o[o_at..o_at + d_v];
            let sm = row_softmax(&rules, q, rules.keys(), key, true);
            weighted_values(&sm, value, &mut o);
            let delta: f64 = o.iter().zip(d_o_row).map(|(&a, &g)| a * g as f64).sum();
            let dq = &mut gg.dq[(gh * s.n_q + i) * d_qk..(gh * s.n_q + i + 1) * d_qk];
            for ((&j, &pj), &dscore) in sm.keys.iter().zip(&sm.p).zip(&sm.dscore) {
                let dp = dot(d_o_row, value(j));
                let dx = pj * (dp - delta) * dscore;
                for (c, (&kc, &qc)) in key(j).iter().zip(q).enumerate() {
                    dq[c] += dx * kc as f64;
                    gg.dk[j * d_qk + c] += dx * qc as f64;
                }
                for (dv, &g) in gg.dv[j * d_v..(j + 1) * d_v].iter_mut().zip(d_o_row) {
                    *dv += pj * g as f64;
                }
            }
        }
    }
    gg
}

/// The backward of a whole problem in f64 (the forward is recomputed). Elements no row addresses are 0.
///
/// # Panics
/// If the problem or the buffers fail [`RefProblem::validate`], or dO is shorter than O's layout needs.
pub fn backward(p: &RefProblem, x: &Qkv<'_>, d_o: &[f32]) -> Gradients<f64> {
    if let Err(e) = p.validate(Some(x)) {
        panic!("reference backward: {e}");
    }
    assert!(d_o.len() >= p.o_len(), "reference backward: dO has {} elements, O's layout needs {}", d_o.len(), p.o_len());
    let l = p.layouts();
    let mut g = Gradients { dq: vec![0.0; p.q_len()], dk: vec![0.0; p.k_len()], dv: vec![0.0; p.v_len()] };
    for b in 0..p.sequences() {
        for kv_head in 0..p.kv_heads {
            backward_group(p, x, d_o, b, kv_head).scatter(p, &l, &mut g);
        }
    }
    g
}
