//! The kernel ABI, written once: for every kernel kind (and for the fused kinds' second entry, the dQ sum
//! pass) the ordered list of its parameters. Everything else is made from these lists:
//! - the templates' `define` lines ([`signature`], rendered by `render.rs` as `abi.params`) and every
//!   parameter index a template addresses in inline asm ([`index_of`], as `abi.index.<name>`: TMA
//!   descriptors are read in parameter space as `<entry>_param_<index>`);
//! - the runtime's argument builder (`flashgen_runtime::kernel::KernelArgs`): a launch names its values,
//!   the builder pushes them in this order and refuses a missing, surplus or mistyped one;
//! - docs/ABI.md's parameter tables ([`markdown`]; tests/abi.rs fails when the doc and the lists disagree).
//!
//! The order mirrors the seed's Triton kernel (Q, K, V, sm_scale, M, Out, the strides, the geometry), so a
//! Triton user maps arguments one to one. A kind adds parameters where its role's list says (fwd_ws appends
//! three TMA descriptors, fwd_ws_persistent a tile counter, the fused backward its dQ buffers after Δ, dQ's
//! strides after dV's and two TMA descriptors last): the lists below read as that rule.
//!
//! The problem's geometry (batch, heads, sequence length) reaches every kernel through one group,
//! [`geometry`]: the parameters that a change of geometry (K/V heads, unequal or packed lengths) extends.

use crate::spec::{KernelKind, KernelSpec};
use std::sync::OnceLock;

/// What a pointer parameter points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// The kernel's 16-bit element type (bf16 or fp16): Q, K, V, O and their gradients.
    DType,
    /// f32 values: the row statistics M and Δ, dQ's partial sums.
    F32,
    /// u32 words: locks and counters.
    U32,
    /// i32 values: the packed sequences' offsets (cu_seqlens).
    I32,
    /// 4-byte values, f32 or i32 as a modifier declares its tensor (the MOD_TENSOR slots).
    Word,
}

/// The type of one parameter, with the attributes the IR declares on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamType {
    /// A global pointer (`ptr addrspace(1) noalias`, aligned to `align` bytes); `read_only` adds `readonly`
    /// (the kernel never writes through it).
    Pointer { elem: Elem, read_only: bool, align: u32 },
    /// One element stride (i64) of the tensor parameter `tensor`, on `axis`: 0 batch, 1 head, 2 sequence,
    /// 3 head dim.
    Stride { tensor: &'static str, axis: usize },
    /// An f32 scalar.
    F32,
    /// An i32 scalar (u32 in the docs: every value the kernels take is non-negative).
    I32,
    /// A CUtensorMap of the tensor parameter `tensor`: 128 bytes by value (`byval`, aligned to 64; CUDA's
    /// `__grid_constant__`), which the kernel's TMA reads in parameter space.
    TensorMap { tensor: &'static str },
}

/// One kernel parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The name in the IR (`%name`), in the docs, and in the runtime's argument builder.
    pub name: &'static str,
    pub ty: ParamType,
    /// What it holds, for docs/ABI.md and for the runtime's errors.
    pub meaning: String,
    /// The kinds that add it to their role's list (`None`: every kind of the entry has it).
    pub added_by: Option<&'static str>,
}

/// An entry point of a kernel module: the kernel itself, or the fused kinds' second entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Entry {
    Kernel(KernelKind),
    /// `<name>_dq_sum` (`KernelSpec::dq_sum_entry`): dQ = sm_scale · the chains' partial sums.
    DqSum,
}

impl Entry {
    fn all() -> Vec<Entry> {
        KernelKind::ALL.into_iter().map(Entry::Kernel).chain([Entry::DqSum]).collect()
    }
    /// How the docs name it.
    pub fn name(self) -> &'static str {
        match self {
            Entry::Kernel(kind) => kind.name(),
            Entry::DqSum => "dq_sum (the fused kinds' second entry)",
        }
    }
}

/// The ordered parameters of an entry.
pub fn parameters(entry: Entry) -> &'static [Param] {
    static LISTS: OnceLock<Vec<(Entry, Vec<Param>)>> = OnceLock::new();
    let lists = LISTS.get_or_init(|| Entry::all().into_iter().map(|e| (e, build(e))).collect());
    // every entry is in the table: `all` lists them
    lists.iter().find(|(e, _)| *e == entry).map(|(_, p)| p.as_slice()).unwrap_or(&[])
}

/// The ordered parameters of a kernel kind's main entry.
pub fn kernel_parameters(kind: KernelKind) -> &'static [Param] {
    parameters(Entry::Kernel(kind))
}

/// The index of the parameter `name` in `params`.
pub fn index_of(params: &[Param], name: &str) -> Option<usize> {
    params.iter().position(|p| p.name == name)
}

// ---------------------------------------------------------------------------------------------------------
// The lists

/// A tensor of the kernel's dtype, [Z, H, N_Q, HEAD_DIM] (K and V: [Z, H_KV, N_KV, HEAD_DIM]; packed: one batch
/// of TOTAL_Q or TOTAL_K rows), 16-byte aligned (cp.async and TMA move 16 bytes).
fn tensor(name: &'static str, read_only: bool, meaning: &str) -> Param {
    Param { name, ty: ParamType::Pointer { elem: Elem::DType, read_only, align: 16 }, meaning: meaning.into(), added_by: None }
}

/// An f32 row vector (M, Δ: Z·H·N_Q rows, packed H·TOTAL_Q), 4-byte aligned.
fn rows(name: &'static str, read_only: bool, meaning: &str) -> Param {
    Param { name, ty: ParamType::Pointer { elem: Elem::F32, read_only, align: 4 }, meaning: meaning.into(), added_by: None }
}

fn scalar_f32(name: &'static str, meaning: &str) -> Param {
    Param { name, ty: ParamType::F32, meaning: meaning.into(), added_by: None }
}

fn scalar_i32(name: &'static str, meaning: &str) -> Param {
    Param { name, ty: ParamType::I32, meaning: meaning.into(), added_by: None }
}

fn sm_scale() -> Param {
    scalar_f32("sm_scale", "softmax scale (usually 1/sqrt(HEAD_DIM)); finite and > 0")
}

fn softcap() -> Param {
    scalar_f32("SOFTCAP", "softcap kernels: cap > 0, finite (the scaled score s becomes cap · tanh(s / cap)); other kernels ignore it")
}

/// Each tensor's four strides (batch, head, sequence, head dim) with the letters of the seed's Triton
/// kernel: sequence m for query rows, n for key rows, k for V's; head dim k, or n for V and O.
const STRIDE_NAMES: [(&str, [&str; 4]); 9] = [
    ("Q", ["stride_qz", "stride_qh", "stride_qm", "stride_qk"]),
    ("K", ["stride_kz", "stride_kh", "stride_kn", "stride_kk"]),
    ("V", ["stride_vz", "stride_vh", "stride_vk", "stride_vn"]),
    ("Out", ["stride_oz", "stride_oh", "stride_om", "stride_on"]),
    ("O", ["stride_oz", "stride_oh", "stride_om", "stride_on"]),
    ("DO", ["stride_doz", "stride_doh", "stride_dom", "stride_dok"]),
    ("DK", ["stride_dkz", "stride_dkh", "stride_dkn", "stride_dkk"]),
    ("DV", ["stride_dvz", "stride_dvh", "stride_dvk", "stride_dvn"]),
    ("DQ", ["stride_dqz", "stride_dqh", "stride_dqm", "stride_dqk"]),
];

/// The strides of `tensors`, four each, in order.
fn strides(tensors: &[&'static str]) -> Vec<Param> {
    let mut out = Vec::new();
    for &t in tensors {
        let names = STRIDE_NAMES.iter().find(|(n, _)| *n == t).map(|(_, s)| *s);
        // (every tensor named here has a row in STRIDE_NAMES: tests/abi.rs builds every list)
        let names = names.unwrap_or(["?"; 4]);
        for (axis, name) in names.into_iter().enumerate() {
            let meaning = format!("{t} strides in elements (batch, head, sequence, head dim)");
            out.push(Param { name, ty: ParamType::Stride { tensor: t, axis }, meaning, added_by: None });
        }
    }
    out
}

/// The geometry of the problem, as every kernel takes it (the last of the core parameters): the batch,
/// query and K/V heads, query and key lengths, where a causal diagonal lies when they differ, and for packed
/// variable-length batches each sequence's offsets. The geometry seam: these parameters reach the kernels'
/// template macros (lib/seqinfo.ll.tera, lib/scheduler.ll.tera) through render.rs's `seq` names, and the
/// runtime fills them from one struct (flashgen_runtime::Geometry).
pub fn geometry() -> Vec<Param> {
    let offsets = |name, meaning: &str| Param { name, ty: ParamType::Pointer { elem: Elem::I32, read_only: true, align: 4 }, meaning: meaning.into(), added_by: None };
    vec![
        scalar_i32("Z", "batch (packed sequences: their number B)"),
        scalar_i32("H", "query heads"),
        scalar_i32("H_KV", "K/V heads (H a multiple of it: query head h reads K/V head h / (H / H_KV))"),
        scalar_i32("N_Q", "query rows per sequence (packed sequences: the longest)"),
        scalar_i32("N_KV", "key rows per sequence (packed sequences: the longest)"),
        scalar_i32("ALIGN", "causal alignment when a sequence's lengths differ: 1 bottom-right (query i sees key j iff j <= i + N_kv - N_q), 0 top-left (j <= i)"),
        offsets("CU_SEQLENS_Q", "packed sequences (varlen kernels): B + 1 offsets of each sequence's first query row; other kernels ignore it (0)"),
        offsets("CU_SEQLENS_K", "packed sequences (varlen kernels): B + 1 offsets of each sequence's first key row; other kernels ignore it (0)"),
        scalar_i32("TOTAL_Q", "packed sequences (varlen kernels): the rows of the packed Q and O (the row statistics are [H, TOTAL_Q]; every offset is clamped to it); other kernels ignore it"),
        scalar_i32("TOTAL_K", "packed sequences (varlen kernels): the rows of the packed K and V (every offset is clamped to it); other kernels ignore it"),
        scalar_i32("WINDOW_LEFT", "sliding window (window kernels): query i sees keys from i + diag − WINDOW_LEFT (diag: the ALIGN diagonal's offset; unbounded: 2^30); other kernels ignore it"),
        scalar_i32("WINDOW_RIGHT", "sliding window (causal window kernels): query i sees keys up to i + diag + WINDOW_RIGHT (0: causal); other kernels ignore it"),
    ]
}

/// The modifiers' tensors (`crate::mods`, `spec::Modifiers::tensors`): slot i holds the i-th declared
/// tensor, H (per head) or Z (per batch) contiguous 4-byte values; kernels without modifiers, and slots no
/// modifier declares, ignore them (the runtime passes 0).
pub fn modifier_tensors() -> Vec<Param> {
    const NAMES: [&str; crate::spec::MOD_TENSORS] = ["MOD_TENSOR0", "MOD_TENSOR1", "MOD_TENSOR2", "MOD_TENSOR3"];
    NAMES
        .into_iter()
        .map(|name| Param {
            name,
            ty: ParamType::Pointer { elem: Elem::Word, read_only: true, align: 4 },
            meaning: "a score_mod / mask_mod tensor (f32 or i32 as declared; [H] per head, [Z] per batch): the kernel's modifiers' tensors in declaration order; others ignore it".into(),
            added_by: None,
        })
        .collect()
}

fn tensor_map(name: &'static str, tensor: &'static str, meaning: &str) -> Param {
    Param { name, ty: ParamType::TensorMap { tensor }, meaning: meaning.into(), added_by: None }
}

fn added_by(params: Vec<Param>, kinds: &'static str) -> Vec<Param> {
    params.into_iter().map(|p| Param { added_by: Some(kinds), ..p }).collect()
}

const WS_KINDS: &str = "fwd_ws, fwd_ws_persistent";
const FUSED_KINDS: &str = "bwd_fused, bwd_fused_atomic, bwd_fused_up";

fn build(entry: Entry) -> Vec<Param> {
    let mut p = Vec::new();
    let kind = match entry {
        Entry::Kernel(kind) => kind,
        Entry::DqSum => {
            p.push(Param { name: "DQ_PARTIAL", ty: ParamType::Pointer { elem: Elem::F32, read_only: false, align: 16 }, meaning: "in: the fused kernel's partial sums of dQ (its DQ_PARTIAL; not read-only: with `Schedule::dq_sum_follows` the kernel still adds to them while the pass runs, so the pass reads them coherently, after the locks' acquire)".into(), added_by: None });
            p.push(tensor("DQ", false, "out: dQ"));
            p.push(sm_scale());
            p.push(scalar_i32("CHAINS", "the fused kernel's CHAINS"));
            p.push(Param {
                name: "LOCKS",
                ty: ParamType::Pointer { elem: Elem::U32, read_only: true, align: 4 },
                meaning: "in: the fused kernel's LOCKS (with `Schedule::dq_sum_follows` the pass waits on them)".into(),
                added_by: None,
            });
            p.push(scalar_i32("ROUND_HEADS", "the head rows one round of the fused kernel's persistent grid holds (`KernelSpec::round_heads`; read with `Schedule::dq_sum_rounds`, which takes the blocks round by round)"));
            p.extend(strides(&["DQ"]));
            p.extend(geometry());
            return p;
        }
    };
    match kind.role() {
        KernelKind::Fwd => {
            p.extend([tensor("Q", true, "queries"), tensor("K", true, "keys"), tensor("V", true, "values"), sm_scale(), softcap()]);
            p.push(rows("M", false, "out: f32 row statistics, row `(z·H + h)·N_Q + i` (packed: `h·TOTAL_Q + cu_seqlens_q[b] + i`) = base-2 log-sum-exp m_i + log2(l_i); −inf for a row that sees no key"));
            p.push(tensor("Out", false, "out: O"));
            p.extend(strides(&["Q", "K", "V", "Out"]));
            p.extend(geometry());
            p.extend(modifier_tensors());
            if kind.warp_specialized_forward() {
                let maps = [
                    tensor_map("tmap_q", "Q", "CUtensorMap of Q, boxes of 64 columns × BLOCK_M rows (`tma::forward_maps`)"),
                    tensor_map("tmap_k", "K", "CUtensorMap of K, boxes of 64 columns × BLOCK_N rows"),
                    tensor_map("tmap_v", "V", "CUtensorMap of V, boxes of 64 columns × BLOCK_N rows"),
                ];
                p.extend(added_by(maps.into(), WS_KINDS));
            }
            if kind.persistent() {
                let counter = Param {
                    name: "tile_counter",
                    ty: ParamType::Pointer { elem: Elem::U32, read_only: false, align: 4 },
                    meaning: "two u32 words, zero at launch (the kernel leaves them zero)".into(),
                    added_by: Some("fwd_ws_persistent"),
                };
                p.push(counter);
            }
        }
        KernelKind::BwdPre => {
            p.extend([tensor("O", true, "the forward's output"), tensor("DO", true, "dO")]);
            p.push(rows("Delta", false, "out: f32, rows as the forward's M, Δ = rowsum(dO ⊙ O)"));
            p.extend(strides(&["O", "DO"]));
            p.extend(geometry());
        }
        KernelKind::BwdDkdv => {
            let fused = kind.fuses_dq();
            p.extend([tensor("Q", true, "queries"), tensor("K", true, "keys"), tensor("V", true, "values"), sm_scale(), softcap()]);
            p.extend([tensor("DO", true, "dO"), tensor("DK", false, "out: dK"), tensor("DV", false, "out: dV")]);
            p.push(rows("M", true, "the forward's base-2 M (its rows; −inf: a row that saw no key)"));
            p.push(rows("Delta", true, "Δ from bwd_pre (rows as M)"));
            if fused {
                let partial = Param {
                    name: "DQ_PARTIAL",
                    ty: ParamType::Pointer { elem: Elem::F32, read_only: false, align: 16 },
                    meaning: "f32 partial sums of dQ, [CHAINS][blocks][HEAD_DIM / 64] pieces of 64×64, blocks = Z·H·cdiv(N_Q, 64) (packed: H·(TOTAL_Q / 64 + B)) (below)".into(),
                    added_by: None,
                };
                let locks = Param {
                    name: "LOCKS",
                    ty: ParamType::Pointer { elem: Elem::U32, read_only: false, align: 4 },
                    meaning: "u32 [blocks][HEAD_DIM / 64][CHAINS], zero at launch (ordered kinds)".into(),
                    added_by: None,
                };
                let dq = tensor("DQ", false, "dQ (written by the dQ sum pass, not by the kernel)");
                let chains = scalar_i32("CHAINS", "orders of addition (≥ 1; 1 for bwd_fused_atomic)");
                p.extend(added_by(vec![dq, partial, locks, chains], FUSED_KINDS));
            }
            p.extend(strides(&["Q", "K", "V", "DO", "DK", "DV"]));
            if fused {
                p.extend(added_by(strides(&["DQ"]), FUSED_KINDS));
            }
            p.extend(geometry());
            p.extend(modifier_tensors());
            if fused {
                let maps = [
                    tensor_map("tmap_q", "Q", "CUtensorMap of Q, boxes of 64 columns × BLOCK_M rows (`tma::fused_backward_maps`)"),
                    tensor_map("tmap_do", "DO", "CUtensorMap of dO, boxes of 64 columns × BLOCK_M rows"),
                ];
                p.extend(added_by(maps.into(), FUSED_KINDS));
            }
        }
        KernelKind::BwdDq => {
            p.extend([tensor("Q", true, "queries"), tensor("K", true, "keys"), tensor("V", true, "values"), sm_scale(), softcap()]);
            p.extend([tensor("DO", true, "dO"), tensor("DQ", false, "out: dQ")]);
            p.push(rows("M", true, "the forward's base-2 M (its rows; −inf: a row that saw no key)"));
            p.push(rows("Delta", true, "Δ from bwd_pre (rows as M)"));
            p.extend(strides(&["Q", "K", "V", "DO", "DQ"]));
            p.extend(geometry());
            p.extend(modifier_tensors());
        }
        KernelKind::Decode => p.extend(decode_parameters()),
        KernelKind::DecodeCombine => p.extend(decode_combine_parameters()),
        // `role` maps every other kind onto the four above
        _ => {}
    }
    p
}

// ---------------------------------------------------------------------------------------------------------
// The decode kernels (issue 33; templates/fa2_decode*.ll.tera, runtime/src/decode.rs)

/// A tensor's four strides under their own names (the decode kernels' tensors have no row in STRIDE_NAMES).
fn named_strides(tensor: &'static str, names: [&'static str; 4], what: &str) -> Vec<Param> {
    let meaning = format!("{what} strides in elements (viewed [Z, H, N, D]: batch or page, head, token, head dim)");
    names.into_iter().enumerate().map(|(axis, name)| Param { name, ty: ParamType::Stride { tensor, axis }, meaning: meaning.clone(), added_by: None }).collect()
}

fn f32_buffer(name: &'static str, read_only: bool, align: u32, meaning: &str) -> Param {
    Param { name, ty: ParamType::Pointer { elem: Elem::F32, read_only, align }, meaning: meaning.into(), added_by: None }
}

/// `decode`: Q, the caches (written: the new tokens are appended), the new tokens, sm_scale, O and the
/// natural-log LSE, the split partials, the cache lengths and block table, the strides, the cache's shape
/// and the geometry (Z = B, N_Q = new queries, N_KV = the cache's capacity in tokens per sequence).
fn decode_parameters() -> Vec<Param> {
    let ints = |name, meaning: &str| Param { name, ty: ParamType::Pointer { elem: Elem::I32, read_only: true, align: 4 }, meaning: meaning.into(), added_by: None };
    let mut p = vec![
        tensor("Q", true, "queries [B, N_q, H, D] (FlashAttention's layout, viewed [B, H, N_q, D])"),
        tensor("K_CACHE", false, "the K cache: [B, capacity, H_kv, D] (PAGE_SIZE 0) or a page pool [pages, PAGE_SIZE, H_kv, D]; the new tokens are written into it"),
        tensor("V_CACHE", false, "the V cache, shaped like K_CACHE"),
        tensor("K_NEW", true, "new keys [B, N_NEW, H_kv, D], appended at cache_seqlens[b] (unread when N_NEW = 0)"),
        tensor("V_NEW", true, "new values, shaped like K_NEW"),
        sm_scale(),
        softcap(),
        tensor("Out", false, "out: O [B, N_q, H, D] (NUM_SPLITS = 1)"),
        f32_buffer("LSE", false, 4, "out: natural-log log-sum-exp f32 [B, H, N_q] (NUM_SPLITS = 1)"),
        f32_buffer("O_PARTIAL", false, 16, "out: f32 [NUM_SPLITS, B·H·N_q, D], split s's O of row (b·H + h)·N_q + i (NUM_SPLITS > 1)"),
        f32_buffer("LSE_PARTIAL", false, 4, "out: f32 [NUM_SPLITS, B·H·N_q], split s's base-2 log-sum-exp (−∞: the split saw no key of the row)"),
        Param {
            name: "SPLIT_COUNTERS",
            ty: ParamType::Pointer { elem: Elem::U32, read_only: false, align: 4 },
            meaning: "u32 [B, H_kv · row tiles], zero before and after the call: with NUM_SPLITS > 1 each split counts in when its partials are stored, and the last merges its row tile's partials into Out and LSE (and sets the count back to 0); null: the partials are left for decode_combine".into(),
            added_by: None,
        },
        ints("CACHE_SEQLENS", "i32 [B]: tokens in each sequence's cache before the call (clamped to 0 ..= N_KV − N_NEW)"),
        ints("BLOCK_TABLE", "i32 [B, MAX_PAGES]: the pages of each sequence, in order (PAGE_SIZE > 0; entries clamped to the pool)"),
    ];
    p.extend(named_strides("Q", ["stride_qz", "stride_qh", "stride_qm", "stride_qk"], "Q"));
    p.extend(named_strides("K_CACHE", ["stride_kz", "stride_kh", "stride_kn", "stride_kk"], "K_CACHE"));
    p.extend(named_strides("V_CACHE", ["stride_vz", "stride_vh", "stride_vk", "stride_vn"], "V_CACHE"));
    p.extend(named_strides("K_NEW", ["stride_knz", "stride_knh", "stride_knn", "stride_knk"], "K_NEW"));
    p.extend(named_strides("V_NEW", ["stride_vnz", "stride_vnh", "stride_vnk", "stride_vnn"], "V_NEW"));
    p.extend(named_strides("Out", ["stride_oz", "stride_oh", "stride_om", "stride_on"], "Out"));
    p.push(scalar_i32("N_NEW", "new K/V tokens per sequence (0: nothing appended)"));
    p.push(scalar_i32("NUM_SPLITS", "splits of each sequence's keys (grid x); 1 writes Out and LSE, more the partials"));
    p.push(scalar_i32("PAGE_SIZE", "tokens per page (a multiple of 16), or 0 for a contiguous cache"));
    p.push(scalar_i32("MAX_PAGES", "entries per row of BLOCK_TABLE (paged)"));
    p.push(scalar_i32("POOL_PAGES", "pages in the pool (paged; table entries are clamped below it)"));
    p.extend(geometry());
    p.push(tensor_map("tmap_k", "K_CACHE", "CUtensorMap of K_CACHE, boxes of 64 columns × `decode_box_rows` rows (`tma::decode_maps`; tma_kv kernels, others ignore it)"));
    p.push(tensor_map("tmap_v", "V_CACHE", "CUtensorMap of V_CACHE, as tmap_k"));
    p
}

/// `decode_combine`: the partials, O and the natural-log LSE, O's strides, the split count, the geometry.
fn decode_combine_parameters() -> Vec<Param> {
    let mut p = vec![
        f32_buffer("O_PARTIAL", true, 16, "decode's partials f32 [NUM_SPLITS, B·H·N_q, D]"),
        f32_buffer("LSE_PARTIAL", true, 4, "decode's base-2 log-sum-exps f32 [NUM_SPLITS, B·H·N_q]"),
        tensor("Out", false, "out: O [B, N_q, H, D]"),
        f32_buffer("LSE", false, 4, "out: natural-log log-sum-exp f32 [B, H, N_q]"),
    ];
    p.extend(named_strides("Out", ["stride_oz", "stride_oh", "stride_om", "stride_on"], "Out"));
    p.push(scalar_i32("NUM_SPLITS", "the partials per row (1 ..= DECODE_MAX_SPLITS)"));
    p.extend(geometry());
    p
}

// ---------------------------------------------------------------------------------------------------------
// The IR

/// One parameter as the IR declares it: `ptr addrspace(1) noalias readonly align 16 %Q`.
pub fn llvm_param(p: &Param) -> String {
    let ty = match p.ty {
        ParamType::Pointer { read_only, align, .. } => format!("ptr addrspace(1) noalias {}align {align}", if read_only { "readonly " } else { "" }),
        ParamType::Stride { .. } => "i64".into(),
        ParamType::F32 => "float".into(),
        ParamType::I32 => "i32".into(),
        ParamType::TensorMap { .. } => "ptr byval([128 x i8]) align 64".into(),
    };
    format!("{ty} %{}", p.name)
}

/// The parameter list of a `define` line: one parameter a line after the first.
pub fn signature(params: &[Param]) -> String {
    params.iter().map(llvm_param).collect::<Vec<_>>().join(",\n    ")
}

/// What render.rs gives the templates as `abi`: the signature of each entry of the spec's module and the
/// index of every parameter by name.
#[derive(serde::Serialize)]
pub struct AbiContext {
    /// The kernel's parameter list (`define void @{{ k.name }}({{ abi.params }})`).
    pub params: String,
    /// Parameter name -> index (`{{ abi.index.tmap_q }}`).
    pub index: std::collections::BTreeMap<&'static str, usize>,
    /// The dQ sum pass's parameter list (the fused kinds' second entry; empty otherwise).
    pub dq_sum_params: String,
}

impl AbiContext {
    pub fn of(spec: &KernelSpec) -> AbiContext {
        let params = kernel_parameters(spec.kind());
        AbiContext {
            params: signature(params),
            index: params.iter().enumerate().map(|(i, p)| (p.name, i)).collect(),
            dq_sum_params: if spec.dq_sum_entry().is_some() { signature(parameters(Entry::DqSum)) } else { String::new() },
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// docs/ABI.md

/// The lines that frame the generated tables in docs/ABI.md.
pub const MARKDOWN_BEGIN: &str = "<!-- BEGIN generated by flashgen::abi::markdown (tests/abi.rs checks it; FLASHGEN_WRITE_ABI_DOC=1 rewrites it) -->";
pub const MARKDOWN_END: &str = "<!-- END generated -->";

fn type_cell(ty: ParamType) -> (String, &'static str) {
    match ty {
        ParamType::Pointer { elem, read_only, align } => {
            let e = match elem {
                Elem::DType => "dtype",
                Elem::F32 => "f32",
                Elem::U32 => "u32",
                Elem::I32 => "i32",
                Elem::Word => "f32|i32",
            };
            (format!("{e}* ({}, align {align})", if read_only { "read-only" } else { "written" }), ".u64")
        }
        ParamType::Stride { .. } => ("i64".into(), ".u64"),
        ParamType::F32 => ("f32".into(), ".f32"),
        ParamType::I32 => ("i32".into(), ".u32"),
        ParamType::TensorMap { .. } => ("CUtensorMap, 128 B by value".into(), ".align 64 .b8[128]"),
    }
}

/// One table: the entries whose lists are prefixes of the longest (`params`), each row marked with the
/// entries that have it; a tensor's four strides on one row.
fn table(entries: &[Entry], params: &[Param]) -> String {
    let lengths: Vec<usize> = entries.iter().map(|&e| parameters(e).len()).collect();
    let mut s = String::new();
    let names: Vec<String> = entries.iter().map(|e| format!("`{}`", e.name())).collect();
    s.push_str(&format!("#### {}\n\n", names.join(", ")));
    let per_row_kinds = lengths.iter().any(|&l| l != params.len()) || params.iter().any(|p| p.added_by.is_some());
    if per_row_kinds {
        s.push_str("| # | name | type | PTX | kinds | meaning |\n|---|------|------|-----|-------|---------|\n");
    } else {
        s.push_str("| # | name | type | PTX | meaning |\n|---|------|------|-----|---------|\n");
    }
    let mut i = 0;
    while i < params.len() {
        let p = &params[i];
        // a tensor's four strides collapse into one row
        let span = match p.ty {
            ParamType::Stride { tensor, axis: 0 } if params[i..].iter().take(4).all(|q| matches!(q.ty, ParamType::Stride { tensor: t, .. } if t == tensor)) => 4,
            _ => 1,
        };
        let index = if span == 1 { i.to_string() } else { format!("{}-{}", i, i + span - 1) };
        let name = params[i..i + span].iter().map(|q| q.name).collect::<Vec<_>>().join(", ");
        let (ty, ptx) = type_cell(p.ty);
        let ty = if span == 1 { ty } else { format!("{ty} ×{span}") };
        if per_row_kinds {
            let has: Vec<&str> = entries.iter().zip(&lengths).filter(|(_, &l)| l > i).map(|(e, _)| e.name()).collect();
            let kinds = if has.len() == entries.len() { p.added_by.unwrap_or("all").to_string() } else { has.join(", ") };
            s.push_str(&format!("| {index} | {name} | {ty} | {ptx} | {kinds} | {} |\n", p.meaning));
        } else {
            s.push_str(&format!("| {index} | {name} | {ty} | {ptx} | {} |\n", p.meaning));
        }
        i += span;
    }
    s
}

/// docs/ABI.md's parameter tables, between [`MARKDOWN_BEGIN`] and [`MARKDOWN_END`]: one table per family
/// of entries whose lists extend one another (a kind that only appends shares its role's table).
pub fn markdown() -> String {
    // group the entries: an entry joins a group when one of the two lists is a prefix of the other
    let mut groups: Vec<(Vec<Entry>, &'static [Param])> = Vec::new();
    for e in Entry::all() {
        let mine = parameters(e);
        let prefix = |a: &[Param], b: &[Param]| a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| x == y);
        match groups.iter_mut().find(|(_, longest)| prefix(mine, longest) || prefix(longest, mine)) {
            Some((members, longest)) => {
                members.push(e);
                if mine.len() > longest.len() {
                    *longest = mine;
                }
            }
            None => groups.push((vec![e], mine)),
        }
    }
    let mut s = String::new();
    s.push_str(MARKDOWN_BEGIN);
    s.push('\n');
    for (members, longest) in &groups {
        s.push('\n');
        s.push_str(&table(members, longest));
    }
    s.push('\n');
    s.push_str(MARKDOWN_END);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stride names a tensor parameter of its list that comes before it, and every name is unique.
    #[test]
    fn lists_are_well_formed() {
        for e in Entry::all() {
            let params = parameters(e);
            assert!(!params.is_empty(), "{e:?}");
            for (i, p) in params.iter().enumerate() {
                assert!(!p.name.contains('?'), "{e:?}: a tensor without a row in STRIDE_NAMES");
                assert_eq!(index_of(params, p.name), Some(i), "{e:?}: `{}` twice", p.name);
                if let ParamType::Stride { tensor, .. } | ParamType::TensorMap { tensor } = p.ty {
                    let t = index_of(params, tensor).unwrap_or(usize::MAX);
                    assert!(t < i && matches!(params[t].ty, ParamType::Pointer { elem: Elem::DType, .. }), "{e:?}: `{}` names no tensor before it", p.name);
                }
            }
        }
    }
}
