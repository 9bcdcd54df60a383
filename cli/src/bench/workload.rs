//! What `flashgen bench` times: the anchors' table shapes, grouped-query shapes, or fa4_bench.py's packed
//! variable-length batch, each with the FLOP count and the JSON keys fa4_bench.py writes for it, so that
//! our rows and FlashAttention-4's match key for key.

use flashgen::{DType, Problem};
use flashgen_runtime::Layout;

/// A workload's operand layouts: Q (and dQ), K (dK), V (dV) and O (dO), V and O `dv` wide.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layouts {
    pub q: Layout,
    pub k: Layout,
    pub v: Layout,
    pub o: Layout,
}

/// One timed shape.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub b: usize,
    pub h: usize,
    pub hkv: usize,
    /// Query tokens per sequence; packed: the total.
    pub n: usize,
    /// Key tokens per sequence.
    pub nk: usize,
    pub d: usize,
    /// V's head dim (fa4_bench.py's DV: 128 beside D 192), else `d`.
    pub dv: usize,
    /// fa4_bench.py's packed sequences: the seed and the lengths (each sequence's queries = its keys).
    pub varlen: Option<(u64, Vec<usize>)>,
    /// Rows carry HKV (fa4_bench.py's gqa mode has the key; its table mode does not).
    pub gqa_key: bool,
    /// BSHD tensors (FlashAttention's layout: the gqa and varlen modes), else contiguous [B, H, N, D] (the
    /// anchors' table).
    pub bshd: bool,
    /// fa4_bench.py's window mode: a sliding window of this many keys left of the diagonal (right 0 with a
    /// causal mask, else unbounded), and softcap.
    pub window_left: Option<usize>,
    pub softcap: Option<f32>,
}

impl Workload {
    /// The anchors' table: 16384 tokens per batch, H·D = 2048.
    pub fn table(n: usize, d: usize) -> Workload {
        let (b, h) = (16384 / n, 2048 / d);
        Workload { b, h, hkv: h, n, nk: n, d, dv: d, varlen: None, gqa_key: false, bshd: false, window_left: None, softcap: None }
    }

    /// fa4_bench.py's gqa mode: B sequences of N tokens, H query heads on H_kv K/V heads.
    pub fn grouped(b: usize, h: usize, hkv: usize, n: usize, d: usize) -> Workload {
        Workload { b, h, hkv, n, nk: n, d, dv: d, varlen: None, gqa_key: true, bshd: true, window_left: None, softcap: None }
    }

    /// fa4_bench.py's varlen mode: the seed's lengths packed into one batch, H heads.
    pub fn packed(seed: u64, lens: Vec<usize>, h: usize, hkv: usize, d: usize) -> Workload {
        let total = lens.iter().sum();
        Workload { b: lens.len(), h, hkv, n: total, nk: total, d, dv: d, varlen: Some((seed, lens)), gqa_key: hkv != h, bshd: true, window_left: None, softcap: None }
    }

    /// fa4_bench.py's FLOP count: 2·B·H·N·N_k·(D + D_v), ×0.5 causal, ×2.5 backward; packed batches
    /// sequence by sequence.
    /// With a window, the FLOPs of the visible band (fa4_bench.py's window mode: 4·H·Σ_i visible(i)·D).
    pub fn flops(&self, kind: &str, causal: bool) -> f64 {
        let mask = if causal { 0.5 } else { 1.0 };
        let pass = if kind == "bwd" { 2.5 } else { 1.0 };
        let pairs = match &self.varlen {
            Some((_, lens)) => lens.iter().map(|&n| (n * n) as f64).sum::<f64>(),
            None => self.b as f64 * self.n as f64 * self.nk as f64,
        };
        if self.window_left.is_some() {
            // (each sequence's band: a packed batch's sequences one by one, a fixed batch's B alike)
            let visible = |n: usize, nk: usize| -> usize {
                let band = self.mask(causal).band(n, nk);
                (0..n).map(|i| band.keys_of(i).len()).sum()
            };
            let visible: usize = match &self.varlen {
                Some((_, lens)) => lens.iter().map(|&n| visible(n, n)).sum(),
                None => self.b * visible(self.n, self.nk),
            };
            return 2.0 * self.h as f64 * visible as f64 * (self.d + self.dv) as f64 * pass;
        }
        2.0 * self.h as f64 * pairs * (self.d + self.dv) as f64 * mask * pass
    }

    /// The structural mask (causal, the window) as the reference defines it.
    pub fn mask(&self, causal: bool) -> flashgen::reference::Mask {
        let window = flashgen::reference::Window { left: self.window_left, right: None };
        flashgen::reference::Mask { causal, alignment: Default::default(), window }
    }

    /// The shape keys of the JSON row, as fa4_bench.py writes them.
    pub fn json_keys(&self, causal: bool) -> String {
        let hkv = if self.gqa_key { format!("\"HKV\": {}, ", self.hkv) } else { String::new() };
        let varlen = match &self.varlen {
            Some((seed, _)) => format!(", \"varlen\": true, \"lens_seed\": {seed}"),
            None => String::new(),
        };
        let window = match self.window_left {
            Some(left) => format!(", \"window_left\": {left}, \"window_right\": {}", if causal { "0" } else { "-1" }),
            None => String::new(),
        };
        let softcap = self.softcap.map_or(String::new(), |c| format!(", \"softcap\": {c:?}"));
        // (fa4_bench.py's hdim mode: the value head dim on every row of a head dim its table has not)
        let dv = if matches!(self.d, 64 | 128) && self.dv == self.d { String::new() } else { format!(", \"DV\": {}", self.dv) };
        format!("\"B\": {}, \"H\": {}, {hkv}\"N\": {}, \"D\": {}{dv}, \"causal\": {causal}{window}{softcap}{varlen}", self.b, self.h, self.n, self.d)
    }

    /// The operands' layouts: packed sequences are one [total, H, D] tensor (Z = 1).
    pub fn layouts(&self) -> Layouts {
        let lay = |z, h, n, d| if self.bshd { Layout::bshd(z, h, n, d) } else { Layout::contiguous(z, h, n, d) };
        let (zq, zk) = if self.varlen.is_some() { (1, 1) } else { (self.b, self.b) };
        Layouts {
            q: lay(zq, self.h, self.n, self.d),
            k: lay(zk, self.hkv, self.nk, self.d),
            v: lay(zk, self.hkv, self.nk, self.dv),
            o: lay(zq, self.h, self.n, self.dv),
        }
    }

    /// Each sequence's first token in the packed tensors, and the end (B + 1 offsets).
    pub fn cu_seqlens(&self) -> Option<Vec<i32>> {
        self.varlen.as_ref().map(|(_, lens)| std::iter::once(0).chain(lens.iter().scan(0i32, |acc, &n| {
            *acc += n as i32;
            Some(*acc)
        })).collect())
    }

    /// The problem the plan sees.
    pub fn problem(&self, causal: bool) -> Problem {
        let longest = self.varlen.as_ref().map_or(self.n, |(_, lens)| lens.iter().copied().max().unwrap_or(0));
        let value_dim = (self.dv != self.d).then_some(self.dv as u32);
        let problem = Problem { seqlen_k: self.varlen.as_ref().map_or(self.nk, |_| longest), varlen: self.varlen.is_some(), value_dim, ..Problem::new(DType::Bf16, self.d as u32, causal, longest) };
        problem.with_window(self.mask(causal).window, self.softcap.is_some())
    }

    /// Rows of the row statistics: [B, H, N], or [H, total] for packed sequences.
    pub fn stat_rows(&self) -> usize {
        match self.varlen {
            Some(_) => self.h * self.n,
            None => self.b * self.h * self.n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_rows_count_the_visible_band_as_fa4_bench() {
        // fa4_bench.py's window mode: B 1, H 16, N 16384, D 128, causal, left 1024: 4·H·Σ_i (min(i, W) + 1)·D
        let mut w = Workload::grouped(1, 16, 16, 16384, 128);
        w.window_left = Some(1024);
        let vis: usize = (0..16384).map(|i: usize| i.min(1024) + 1).sum();
        assert_eq!(w.flops("fwd", true), 4.0 * 16.0 * vis as f64 * 128.0);
        assert_eq!(w.flops("bwd", true), 2.5 * 4.0 * 16.0 * vis as f64 * 128.0);
        assert!(w.json_keys(true).ends_with("\"causal\": true, \"window_left\": 1024, \"window_right\": 0"), "{}", w.json_keys(true));
        // the problem the plan sees: causal with the window's left bound
        let p = w.problem(true);
        assert!(p.causal && p.window.left == Some(1024) && p.window.right == Some(0));
        // softcap: the table's FLOPs, the key
        let mut c = Workload::grouped(1, 16, 16, 16384, 128);
        c.softcap = Some(30.0);
        assert_eq!(c.flops("fwd", true), Workload::grouped(1, 16, 16, 16384, 128).flops("fwd", true));
        assert!(c.json_keys(true).ends_with("\"softcap\": 30.0"), "{}", c.json_keys(true));
        assert!(c.problem(true).softcap);
        // a packed batch with a window: each sequence's band (not one band over the total tokens)
        let lens = crate::fa4_lengths::lengths(0);
        let mut v = Workload::packed(0, lens.clone(), 16, 16, 128);
        v.window_left = Some(1024);
        let vis: usize = lens.iter().map(|&n| (0..n).map(|i: usize| i.min(1024) + 1).sum::<usize>()).sum();
        assert_eq!(v.flops("fwd", true), 4.0 * 16.0 * vis as f64 * 128.0);
        assert!(v.problem(true).varlen && v.problem(true).window.left == Some(1024));
    }

    #[test]
    fn flops_and_keys_match_fa4_bench() {
        // table: 4·Z·H·N²·D (the anchors'), no HKV key
        let t = Workload::table(4096, 128);
        assert_eq!(t.flops("fwd", false), 4.0 * 4.0 * 16.0 * 4096.0 * 4096.0 * 128.0);
        assert_eq!(t.flops("bwd", true), t.flops("fwd", false) * 0.5 * 2.5);
        assert_eq!(t.json_keys(true), "\"B\": 4, \"H\": 16, \"N\": 4096, \"D\": 128, \"causal\": true");
        // hdim: H = 2048 / D, and the DV key (fa4_bench.py's hdim rows)
        let h = Workload::table(16384, 256);
        assert_eq!(h.json_keys(false), "\"B\": 1, \"H\": 8, \"N\": 16384, \"D\": 256, \"DV\": 256, \"causal\": false");
        // DeepSeek's 192/128: the FLOPs count D + DV, V and O 128 wide
        let ds = Workload { dv: 128, ..Workload::table(16384, 192) };
        assert_eq!(ds.json_keys(true), "\"B\": 1, \"H\": 10, \"N\": 16384, \"D\": 192, \"DV\": 128, \"causal\": true");
        assert_eq!(ds.flops("fwd", false), 2.0 * 10.0 * 16384.0 * 16384.0 * 320.0);
        assert_eq!((ds.layouts().v.shape[3], ds.layouts().o.shape[3], ds.layouts().q.shape[3]), (128, 128, 192));
        // gqa: the HKV key, BSHD tensors
        let g = Workload::grouped(1, 64, 8, 16384, 128);
        assert_eq!(g.json_keys(false), "\"B\": 1, \"H\": 64, \"HKV\": 8, \"N\": 16384, \"D\": 128, \"causal\": false");
        assert_eq!(g.layouts().k, Layout::bshd(1, 8, 16384, 128));
        // varlen: B = the sequences, N = the total tokens, sequence by sequence FLOPs
        let lens = crate::fa4_lengths::lengths(0);
        let v = Workload::packed(0, lens.clone(), 16, 16, 128);
        assert_eq!(v.json_keys(true), "\"B\": 7, \"H\": 16, \"N\": 16384, \"D\": 128, \"causal\": true, \"varlen\": true, \"lens_seed\": 0");
        let want: f64 = lens.iter().map(|&n| 4.0 * 16.0 * (n * n) as f64 * 128.0 * 0.5).sum();
        assert_eq!(v.flops("fwd", true), want);
        assert_eq!(v.cu_seqlens().unwrap(), [0, 3714, 5547, 8907, 12809, 14787, 15208, 16384]);
        assert_eq!(v.problem(true).seqlen, 3902);
        assert!(v.problem(true).varlen);
        assert_eq!(v.layouts().q, Layout::bshd(1, 16, 16384, 128));
        assert_eq!(v.stat_rows(), 16 * 16384);
    }
}
