//! Stage 1: spec -> LLVM IR text, by rendering the tera templates with the spec's constants.

use crate::spec::{DType, KernelKind, KernelSpec};
use serde::Serialize;
use std::sync::OnceLock;

/// The templates, embedded at build time so that a built binary needs no template files.
pub const TEMPLATES: &[(&str, &str)] = &[
    // one top-level template per kernel kind (`template_for`)
    ("fa2_fwd.ll.tera", include_str!("../../templates/fa2_fwd.ll.tera")),
    ("fa2_fwd_wgmma.ll.tera", include_str!("../../templates/fa2_fwd_wgmma.ll.tera")),
    ("fa2_fwd_ws.ll.tera", include_str!("../../templates/fa2_fwd_ws.ll.tera")),
    ("fa2_fwd_ws_persistent.ll.tera", include_str!("../../templates/fa2_fwd_ws_persistent.ll.tera")),
    ("fa2_bwd_pre.ll.tera", include_str!("../../templates/fa2_bwd_pre.ll.tera")),
    ("fa2_bwd_dkdv.ll.tera", include_str!("../../templates/fa2_bwd_dkdv.ll.tera")),
    ("fa2_bwd_dkdv_wgmma.ll.tera", include_str!("../../templates/fa2_bwd_dkdv_wgmma.ll.tera")),
    ("fa2_bwd_fused.ll.tera", include_str!("../../templates/fa2_bwd_fused.ll.tera")),
    ("fa2_bwd_dq.ll.tera", include_str!("../../templates/fa2_bwd_dq.ll.tera")),
    ("fa2_bwd_dq_wgmma.ll.tera", include_str!("../../templates/fa2_bwd_dq_wgmma.ll.tera")),
    ("fa2_decode.ll.tera", include_str!("../../templates/fa2_decode.ll.tera")),
    ("fa2_decode_combine.ll.tera", include_str!("../../templates/fa2_decode_combine.ll.tera")),
    // the ring's merge kernels (not kernel kinds: no tiles, one module per dtype; ring::merge_module_ir)
    ("ring_merge.ll.tera", include_str!("../../templates/ring_merge.ll.tera")),
    // lib/: the verbs, one file per concept (templates/README.md)
    ("lib/intrinsics.ll.tera", include_str!("../../templates/lib/intrinsics.ll.tera")),
    ("lib/seqinfo.ll.tera", include_str!("../../templates/lib/seqinfo.ll.tera")),
    ("lib/scheduler.ll.tera", include_str!("../../templates/lib/scheduler.ll.tera")),
    ("lib/barriers.ll.tera", include_str!("../../templates/lib/barriers.ll.tera")),
    ("lib/cp_async.ll.tera", include_str!("../../templates/lib/cp_async.ll.tera")),
    ("lib/tma.ll.tera", include_str!("../../templates/lib/tma.ll.tera")),
    ("lib/mma_sync.ll.tera", include_str!("../../templates/lib/mma_sync.ll.tera")),
    ("lib/wgmma.ll.tera", include_str!("../../templates/lib/wgmma.ll.tera")),
    ("lib/masks.ll.tera", include_str!("../../templates/lib/masks.ll.tera")),
    ("lib/softmax.ll.tera", include_str!("../../templates/lib/softmax.ll.tera")),
    ("lib/epilogue.ll.tera", include_str!("../../templates/lib/epilogue.ll.tera")),
    ("lib/pingpong.ll.tera", include_str!("../../templates/lib/pingpong.ll.tera")),
    ("lib/dq_fused.ll.tera", include_str!("../../templates/lib/dq_fused.ll.tera")),
    ("lib/decode.ll.tera", include_str!("../../templates/lib/decode.ll.tera")),
    ("lib/mods.ll.tera", include_str!("../../templates/lib/mods.ll.tera")),
];

#[derive(Debug, thiserror::Error)]
#[error("rendering template `{template}` for {spec}: {detail}")]
pub struct RenderError {
    pub template: &'static str,
    pub spec: String,
    pub detail: String,
}

/// The fixed fields of a wgmma shared-memory matrix descriptor: stride byte offset 1024 B (8 rows of a
/// 128-byte swizzle atom) in bits 32-45, 128B swizzle (1) in bits 62-63, and `lbo_field` (the leading byte
/// offset in 16-B units) in bits 16-29; the start address (bits 0-13) is or-ed in by the kernel.
fn descriptor_constant(lbo_field: u32) -> u64 {
    (1u64 << 62) | ((1024u64 >> 4) << 32) | ((lbo_field as u64 & 0x3FFF) << 16)
}

/// RCP_LN2 = 1/ln 2 = log2(e), rounded to f32 and written as LLVM's hexadecimal double literal.
fn rcp_ln2_literal() -> String {
    let v = std::f32::consts::LOG2_E as f64;
    format!("0x{:016X}", v.to_bits())
}

/// The constants a template sees as `k.*`: the spec's parameters and the tile arithmetic derived from them,
/// computed here once so that templates only index and never divide. Names say what they count: rows and
/// tiles of the mma shapes (m16 row tiles, n8 column tiles, k16 reduction steps), bytes, copies per thread.
/// The groups a kind has no use for are absent (`None`: their fields are not in `k`), so a template that
/// reads a constant of another kind fails to render instead of reading a meaningless value.
#[derive(Serialize)]
struct KernelConstants {
    #[serde(flatten)]
    common: Common,
    /// The forward kinds (fwd, fwd_wgmma, fwd_ws, fwd_ws_persistent).
    #[serde(flatten)]
    forward: Option<Forward>,
    /// The warp-specialized forwards (fwd_ws, fwd_ws_persistent).
    #[serde(flatten)]
    warp_specialized: Option<WarpSpecialized>,
    /// The kinds whose warpgroups hand registers to each other (setmaxnreg): fwd_ws*, the fused backward.
    #[serde(flatten)]
    registers: Option<RegisterSplit>,
    /// dK/dV and dQ (all their kinds).
    #[serde(flatten)]
    backward: Option<Backward>,
    /// The preprocess.
    #[serde(flatten)]
    preprocess: Option<Preprocess>,
    /// The wgmma kinds (sm_90a).
    #[serde(flatten)]
    wgmma: Option<Wgmma>,
    /// The fused backward kinds (dQ inside dK/dV).
    #[serde(flatten)]
    fused: Option<FusedDq>,
    /// The KV-cache decoding kernel (decode).
    #[serde(flatten)]
    decode: Option<Decode>,
    /// The split-KV combine (decode_combine).
    #[serde(flatten)]
    decode_combine: Option<DecodeCombine>,
}

/// Every kind's constants.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct Common {
    name: String,
    dtype: &'static str,
    /// The LLVM element type of Q, K, V, O (bfloat, half), and whether it is bf16.
    elem: &'static str,
    is_bf16: bool,
    /// LLVM type of one packed mma operand register (two elements), and the mma.sync intrinsic taking it.
    operand_type: &'static str,
    mma_intrinsic: &'static str,
    causal: bool,
    /// Triton's kernel-level STAGE: 3 causal, 1 non-causal.
    STAGE: u32,
    /// The mask of the blocks j >= n_full: "causal" (inner stage 2) or "edge" (the sequence's end only).
    MASK: &'static str,
    HEAD_DIM: u32,
    BLOCK_M: u32,
    BLOCK_N: u32,
    NUM_WARPS: u32,
    NUM_STAGES: u32,
    THREADS: u32,
    /// Programs per SM that ptxas must leave registers for (`.minnctapersm`; `KernelSpec::programs_per_sm`).
    MIN_PROGRAMS_PER_SM: u32,
    /// The threads that copy tiles and compute: all but a helper warpgroup (the fused backward's writer).
    COPY_THREADS: u32,
    /// Rows of the resident tile per computing warp, in m16 tiles.
    ROWS_PER_WARP: u32,
    M_TILES_PER_WARP: u32,
    /// Reductions over HEAD_DIM (S = Q·Kᵀ and the backward's like products): k16 steps, and k32 pairs of
    /// them (one ldmatrix.x4 of the B operand feeds two).
    HEAD_DIM_K16_STEPS: u32,
    HEAD_DIM_K32_STEPS: u32,
    /// Accumulators over HEAD_DIM (O, dQ, dK, dV): n8 tiles, and pairs of them (one ldmatrix.x4.trans).
    HEAD_DIM_N8_TILES: u32,
    HEAD_DIM_N8_PAIRS: u32,
    /// A tile row of HEAD_DIM elements: its 16-byte chunks (the unit of every copy and swizzle) and bytes.
    /// HEAD_DIM is the tiles' width (`SpecParams::tile_dim`); the tensors' rows may be narrower.
    CHUNKS_PER_ROW: u32,
    /// The tensors' rows (the spec's head dim): their 16-byte chunks and n8 tiles; copies zero-fill the tile's
    /// chunks past them and the epilogues store only them. PADDED when they are fewer than the tile's.
    VALID_CHUNKS: u32,
    VALID_N8_TILES: u32,
    PADDED: bool,
    /// The same for V, O, dO and dV (`KernelSpec::value_dim`: narrower than Q's and K's for DeepSeek's
    /// 192/128): their loads zero-fill past VALID_V_CHUNKS, their stores write VALID_V_N8_TILES.
    VALID_V_CHUNKS: u32,
    VALID_V_N8_TILES: u32,
    PADDED_V: bool,
    /// The wgmma products run over the real columns only (lib/wgmma.ll.tera): Q·Kᵀ's k16 steps over the
    /// spec's head dim, dO·Vᵀ's over V's; the products whose N is a head dim (P·V and dV over V's columns,
    /// dK over Q/K's) over those columns (the tile's past them are zero-filled, their sums 0).
    QK_K16_STEPS: u32,
    V_K16_STEPS: u32,
    PV_COLUMNS: u32,
    QK_COLUMNS: u32,
    ROW_BYTES: u32,
    /// Bytes of one slot of the ring (the streamed tiles of one block, and dK/dV's M and Δ).
    SLOT_BYTES: u32,
    /// RCP_LN2 = 1/ln 2 = log2(e) as an LLVM double literal of the f32 value: qk_scale = sm_scale·RCP_LN2.
    RCP_LN2: String,
    /// The resident tile's fragments (the forward's Q, dK/dV's K and V, dQ's Q and dO) live in registers
    /// across the loop (else re-read from shared memory per block); mma.sync kinds only.
    RESIDENT_IN_REGISTERS: bool,
    /// dK/dV loops: the steps' place in the group carried as a cursor, not divided per step
    /// (`KernelSpec::step_cursor`; lib/seqinfo.ll.tera `group_cursor`).
    STEP_CURSOR: bool,
    /// `Features::varlen`: packed sequences, each program's offsets and lengths read from cu_seqlens
    /// (lib/seqinfo.ll.tera `sequence`).
    VARLEN: bool,
    /// `Features::empty_rows`: rows may see no key (the softmax's guard of a row maximum of -inf, O = 0 and
    /// M = -inf for such rows; the backward takes their M as +inf).
    EMPTY_ROWS: bool,
    /// A whole tile may see no key (packed sequences, or EMPTY_ROWS): the forward then writes O = 0 and
    /// M = -inf for its rows without visiting a block.
    EMPTY_TILES: bool,
    /// `Features::window`: the tile's K/V blocks start at its first row's first key (%kv_first), blocks
    /// before %n_left take the left bound's mask, and a causal diagonal is shifted by WINDOW_RIGHT.
    WINDOW: bool,
    /// `Features::softcap`: S is capped (cap · tanh(S·sm_scale / cap)) where it is named (`wg::name_s`).
    SOFTCAP: bool,
    /// `Features::modifiers`: a score_mod applied where S is named (`wg::name_s`), a mask_mod in the
    /// mask blocks; their code is `MOD` (lib/mods.ll.tera).
    SCORE_MOD: bool,
    MASK_MOD: bool,
    /// The tile's K/V blocks are a range %kv_first .. %n_total - 1 whose edges (before %n_left, from
    /// %n_full) take the mask: a window, or a mask_mod's proved key range.
    BLOCK_RANGE: bool,
    MOD: Option<ModCode>,
}

/// A kernel's modifiers rendered once (`crate::mods::ModIr`): the program prologue, and each element's code
/// with placeholder names that lib/mods.ll.tera replaces per element (value names `%MODEL.n`, inputs
/// `%MODQ` (q_idx), `%MODKV` (kv_idx), `%MODS` (the scaled score), and in a score_mod's code `%MODFQ`
/// and `%MODFKV`, the indices as floats); the mask's block range of the tile
/// whose rows are %mod.q_first ..= %mod.q_last among %kv_len keys.
#[derive(Serialize)]
struct ModCode {
    prologue: String,
    score: Option<ModElement>,
    mask: Option<ModElement>,
    range: Option<ModRange>,
    /// A mask_mod that keeps exactly an interval of keys per query (its proved bounds for one row are
    /// both what the row needs and what it sees: causal, windows, offsets): the row's bounds, under the
    /// placeholder names, so that each element compares its column with a per-row limit, as the built-in
    /// masks do, instead of evaluating the expression.
    row: Option<ModRowRange>,
    /// A mask_mod whose key bounds never decrease in q_idx: the queries that keep a key of
    /// %mod.k0 ..= %mod.k1 (`ModIr::render_query_range`), which dK/dV's blocks of keys visit.
    queries: Option<ModRowRange>,
    /// The queries that keep every key of %mod.k0 ..= %mod.k1 (`ModIr::render_visible_query_range`): dK/dV's
    /// query blocks among them need no mask.
    visible_queries: Option<ModRowRange>,
    /// `declare` lines the modifiers' code needs (added to the module by `render`).
    declarations: String,
}

#[derive(Serialize)]
struct ModElement {
    text: String,
    value: String,
    /// d(value)/d(score): the backward's score_mod.
    grad: Option<String>,
}

#[derive(Serialize)]
struct ModRowRange {
    text: String,
    lo: Option<String>,
    hi: Option<String>,
}

#[derive(Serialize)]
struct ModRange {
    text: String,
    first: String,
    last: String,
    full_first: String,
    full_last: String,
}

impl ModCode {
    /// The placeholders' names (lib/mods.ll.tera replaces them).
    const PREFIX: &'static str = "MODEL";
    const Q_IDX: &'static str = "%MODQ";
    const KV_IDX: &'static str = "%MODKV";
    const SCORE: &'static str = "%MODS";
    const Q_IDX_F: &'static str = "%MODFQ";
    const KV_IDX_F: &'static str = "%MODFKV";

    /// The query head in the prologue: lib/mods.ll.tera `prologue` replaces it with the program's (the
    /// forward, dQ) or the loop step's (dK/dV, whose steps walk the query heads of a K/V head).
    const HEAD: &'static str = "%MODH";

    /// `with_grad`: the backward's score_mod code, which also gives d(score_mod)/d(score).
    fn of(m: &crate::spec::Modifiers, block_n: u32, with_grad: bool) -> Result<ModCode, crate::mods::IrError> {
        use crate::mods::{ElementInputs, ModIr, ProgramInputs};
        // the program's batch and query head (lib/seqinfo.ll.tera `sequence`), the tensors in their slots
        let slot_names = |decls: &[crate::mods::TensorDecl]| -> Vec<String> { m.slots(decls).iter().map(|i| format!("%MOD_TENSOR{i}")).collect() };
        let element = ElementInputs { q_idx: Self::Q_IDX, kv_idx: Self::KV_IDX, score: Self::SCORE };
        let mut prologue = String::new();
        let mut irs: Vec<ModIr> = Vec::new();
        let mut render = |ir: ModIr, decls: &[crate::mods::TensorDecl], p: &str| -> Result<(ModIr, crate::mods::Prologue), crate::mods::IrError> {
            let names = slot_names(decls);
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let pro = ir.render_prologue(&ProgramInputs { b: "%off_z", h: Self::HEAD, tensors: &refs }, p)?;
            prologue.push_str(&pro.text);
            Ok((ir, pro))
        };
        let mut score = None;
        if let Some(sm) = m.score() {
            let (ir, pro) = render(if with_grad { sm.ir_with_grad() } else { sm.ir() }, sm.tensors(), "mods.sp")?;
            let el = ir.render_element_with_floats(&pro, &element, Some((Self::Q_IDX_F, Self::KV_IDX_F)), Self::PREFIX)?;
            score = Some(ModElement { text: el.text, value: el.value, grad: el.grad });
            irs.push(ir);
        }
        let (mut mask, mut range, mut row, mut queries, mut visible_queries) = (None, None, None, None, None);
        if let Some(mm) = m.mask() {
            let (ir, pro) = render(mm.ir(), mm.tensors(), "mods.mp")?;
            let el = ir.render_element(&pro, &element, Self::PREFIX)?;
            mask = Some(ModElement { text: el.text, value: el.value, grad: None });
            let r = ir.render_block_range(&pro, "%mod.q_first", "%mod.q_last", block_n, "%kv_len", "mods.r")?;
            range = Some(ModRange { text: r.text, first: r.first, last: r.last, full_first: r.full_first, full_last: r.full_last });
            let b = mm.kv_bounds();
            if b.needed == b.visible && b.needed != crate::mods::KvSet::Empty {
                let t = ir.render_tile_range(&pro, Self::Q_IDX, Self::Q_IDX, Self::PREFIX)?;
                row = Some(ModRowRange { text: t.text, lo: t.needed_lo, hi: t.needed_hi });
            }
            // (a mask the range does not cover: dK/dV visits every query block; nor one that varies with
            // the query head: a dK/dV program's steps walk a group of heads over the same blocks)
            let per_head = mm.expr().uses(crate::mods::Var::H) || mm.tensors().iter().any(|d| d.index == crate::mods::PerIndex::Head);
            if let Some(q) = ir.render_query_range(&pro, "%mod.k0", "%mod.k1", "mods.q").ok().filter(|_| !per_head) {
                queries = Some(ModRowRange { text: q.text, lo: q.q_lo, hi: q.q_hi });
                if let Ok(v) = ir.render_visible_query_range(&pro, "%mod.k0", "%mod.k1", "mods.qv") {
                    visible_queries = Some(ModRowRange { text: v.text, lo: v.q_lo, hi: v.q_hi });
                }
            }
            irs.push(ir);
        }
        let refs: Vec<&ModIr> = irs.iter().collect();
        let declarations = crate::mods::missing_declarations(&refs, "");
        Ok(ModCode { prologue, score, mask, range, row, queries, visible_queries, declarations })
    }
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct Forward {
    /// S's columns (a K/V block): n8 tiles; P·V's reduction over the block: k16 steps.
    BLOCK_N_N8_TILES: u32,
    BLOCK_N_K16_STEPS: u32,
    /// 16-byte copies per thread of the Q tile and of a K/V tile.
    Q_COPIES_PER_THREAD: u32,
    KV_COPIES_PER_THREAD: u32,
    /// The K/V ring's offset from the tiles' base (after the Q buffers), and V's within a slot.
    KV_RING_OFFSET: u32,
    V_OFFSET: u32,
    /// fwd_wgmma with 3+ stages: S of block j+1 in flight during the softmax of block j.
    OVERLAP_NEXT_S: bool,
    /// See `spec::LAZY_RESCALE_LOG2`.
    LAZY_RESCALE_LOG2: u32,
    /// The epilogue's l_i, 1/l_i and M under the tile's last P·V, the reciprocal and log2 approximate and
    /// flush-to-zero (`KernelSpec::early_row_norm`).
    EARLY_ROW_NORM: bool,
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct WarpSpecialized {
    CONSUMER_WARPGROUPS: u32,
    /// Consumers take turns issuing (ping-pong), P·V of block j-1 with S_j (`KernelSpec::ping_pong`).
    PING_PONG: bool,
    /// The ping-pong tile's S = Q·Kᵀ on wgmma with Q from registers (`KernelSpec::q_from_registers`).
    Q_FROM_REGISTERS: bool,
    /// The ping-pong tile's lazy rescaling (`KernelSpec::lazy_rescale`).
    LAZY_RESCALE: bool,
    /// The causal eager softmax on half of a masked block (`KernelSpec::half_block_softmax`).
    HALF_BLOCK_SOFTMAX: bool,
    /// The Q buffers (`KernelSpec::q_buffers`: 1 or 2).
    Q_BUFFERS: u32,
    /// The persistent forward runs across tiles (`KernelSpec::cross_tile`), with one copy of its last turn
    /// and epilogue (`KernelSpec::single_tail`).
    CROSS_TILE: bool,
    SINGLE_TAIL: bool,
    /// The causal tile's last P·V over half the block where the warpgroup keeps no more
    /// (`KernelSpec::narrow_last_product`).
    NARROW_LAST_PRODUCT: bool,
    /// Each consumer runs the blocks its own rows reach, and empty turns for the rest (`KernelSpec::own_blocks`).
    OWN_BLOCKS: bool,
    /// K and V on barriers of their own (`KernelSpec::split_kv_ring`): V's full and empty barriers per slot
    /// follow K's (the `full` and `empty` of a shared slot otherwise).
    SPLIT_KV_RING: bool,
    /// The mbarriers' offset from the tiles, and the bytes the TMA loads of Q and of one K/V block bring.
    BARRIERS_OFFSET: u32,
    Q_TILE_BYTES: u32,
    KV_BLOCK_BYTES: u32,
    /// One K or V tile's bytes (the split ring's transaction counts).
    KV_TILE_BYTES: u32,
    /// See `spec::L2_GROUP_BYTES` (the persistent causal tile order).
    L2_GROUP_BYTES: u32,
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct RegisterSplit {
    /// The registers the kernel is launched with (its maxnreg), and what setmaxnreg gives each role.
    LAUNCH_REGISTERS: u32,
    PRODUCER_REGISTERS: u32,
    CONSUMER_REGISTERS: u32,
}

/// A backward program owns RESIDENT_ROWS rows (split over its warps) and streams blocks of STREAMED_ROWS.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct Backward {
    RESIDENT_ROWS: u32,
    STREAMED_ROWS: u32,
    /// n8 tiles and k16 steps of one streamed block.
    STREAMED_N8_TILES: u32,
    STREAMED_K16_STEPS: u32,
    /// 16-byte copies per thread of a resident tile and of a streamed tile.
    RESIDENT_COPIES_PER_THREAD: u32,
    STREAMED_COPIES_PER_THREAD: u32,
    /// Bytes of one resident tile and of one streamed tile; the ring starts after the two resident tiles.
    RESIDENT_TILE_BYTES: u32,
    STREAMED_TILE_BYTES: u32,
    RING_OFFSET: u32,
    /// dK/dV slots carry the block's M and Δ (STREAMED_ROWS f32 each) after the two tiles: 4-byte copies
    /// per thread.
    STAT_COPIES_PER_THREAD: u32,
    /// dK/dV: the program's slice of dK's and dV's columns (`KernelSpec::column_splits`, grid z): its
    /// columns, their n8 tiles and pairs of them, and (wgmma) the slice's offset in the MN-major descriptor
    /// of a streamed tile (its 64-column panels, in 16-byte units).
    COLUMN_SPLITS: u32,
    OUT_COLUMNS: u32,
    OUT_N8_TILES: u32,
    OUT_N8_PAIRS: u32,
    OUT_SLICE_DESC: u32,
    /// The n8 tiles of its slice that the epilogue stores of dK and of dV: all of them, but the padding
    /// past HEAD_DIM (or the value head dim) of a padded tile (one slice).
    OUT_STORE_N8_TILES: u32,
    OUT_STORE_V_N8_TILES: u32,
    /// dK/dV: the warpgroups sharing the program's keys, each OUT_COLUMNS of them
    /// (`KernelSpec::column_warpgroups`), and their exchange after the ring: P (f32), then dS (packed).
    /// With softcap or a score_mod the f32 is P times dS's factor, and P follows packed (PW).
    COLUMN_WARPGROUPS: u32,
    P_EXCHANGE_OFFSET: u32,
    DS_EXCHANGE_OFFSET: u32,
    PW_EXCHANGE_OFFSET: u32,
    /// The column warpgroups' columns as pieces (`column_pieces`), each one wgmma chain per product.
    COLUMN_PIECES: Vec<ColumnPiece>,
}

/// A piece of a column warpgroup's columns of dK and dV: warpgroup w's `N` columns from output column
/// `COL0 + w·COL_WG`, read at descriptor offset `DESC0 + w·DESC_WG` (16-byte units) of the streamed tiles'
/// MN-major descriptors, accumulated in the warpgroup's n8 tiles from `DN0`; `V`: whether they are V's
/// columns for every warpgroup ("all"), for none ("none": no dV product, no store) or for some ("some": the
/// store checks).
#[derive(Serialize)]
#[allow(non_snake_case)]
struct ColumnPiece {
    N: u32,
    DESC0: u32,
    DESC_WG: u32,
    COL0: u32,
    COL_WG: u32,
    DN0: u32,
    V: &'static str,
}

/// The column warpgroups' pieces (`KernelSpec::column_pieces`) with their descriptor offsets: a 64-column
/// panel is `panel_units` apart in an MN-major descriptor of the streamed tiles, a column within one 2 bytes
/// (16-byte units).
fn column_pieces(spec: &KernelSpec, panel_units: u32) -> Vec<ColumnPiece> {
    let units = |col: u32| col / 64 * panel_units + col % 64 * 2 / 16;
    let cw = spec.column_warpgroups();
    let dv = spec.value_dim();
    spec.column_pieces()
        .into_iter()
        .map(|p| {
            let of_v = (0..cw).filter(|w| p.first + w * p.stride + p.columns <= dv).count() as u32;
            let v = match of_v {
                x if x == cw => "all",
                0 => "none",
                _ => "some",
            };
            ColumnPiece { N: p.columns, DESC0: units(p.first), DESC_WG: units(p.stride), COL0: p.first, COL_WG: p.stride, DN0: p.first_tile, V: v }
        })
        .collect()
}

#[derive(Serialize)]
#[allow(non_snake_case)]
struct Preprocess {
    /// A row's threads (the power of two in its chunks, at most a warp) and the chunks each takes.
    PRE_LANES_PER_ROW: u32,
    LOG2_PRE_LANES_PER_ROW: u32,
    PRE_CHUNKS_PER_LANE: u32,
    /// Rows of the block per thread.
    PRE_COPIES_PER_THREAD: u32,
}

/// The constant fields of the shared-memory matrix descriptors (SBO = 1024 B, 128B swizzle) as decimal
/// i64 literals, with the LBO field of K-major operands (unused: 1) and of MN-major ones (the next
/// 64-column panel: streamed rows·128 B, or resident rows·128 B: bwd_fused reads K transposed for
/// dQ = dS·K); the PTX type of the operands.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct Wgmma {
    DESC_K_MAJOR: String,
    DESC_MN_MAJOR: String,
    DESC_MN_MAJOR_RESIDENT: String,
    WGMMA_TYPES: &'static str,
    /// 64-column panels (128B-swizzle atoms, TMA boxes) per row.
    PANELS_PER_ROW: u32,
}

/// bwd_fused: dQ inside dK/dV (lib/dq_fused.ll.tera): MMA_WARPGROUPS, warpgroup w computes dQ's columns
/// w·DQ_PANEL_COLUMNS .. (64: one K panel) of a block, or its rows 64w .. (DQ_SPLITS_ROWS), one lock each;
/// then the writer warpgroup.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct FusedDq {
    /// bwd_fused_atomic: additions in arrival order; bwd_fused_up: the Q blocks run up from the diagonal,
    /// the programs last first, and each block's additions go from its highest program down.
    DQ_ATOMIC: bool,
    DQ_UP: bool,
    /// bwd_fused_up: a program may run two key blocks, the light one and then the heavy one, when the launch
    /// folded the grid (`KernelSpec::fold_key_blocks`, `KernelSpec::folds`).
    FOLD_KEY_BLOCKS: bool,
    /// bwd_fused: each program runs tile after tile (`Schedule::persistent_tiles`): tile t is key block t mod P
    /// of head row t / P, the next t + nctaid.x.
    PERSISTENT_TILES: bool,
    /// The dQ sum pass starts while the kernel runs (`Schedule::dq_sum_follows`): the kernel triggers it at
    /// its start, every program hands each block on (the last too), and the pass waits on the locks.
    DQ_SUM_FOLLOWS: bool,
    /// The following sum pass takes the blocks in a persistent grid's rounds (`Schedule::dq_sum_rounds`;
    /// ROUND_HEADS says how many head rows a round holds).
    DQ_SUM_ROUNDS: bool,
    /// A persistent program prefetches its next tile's K/V rows into the L2 (`Schedule::prefetch_next_tile`).
    PREFETCH_NEXT_TILE: bool,
    /// dK and dV leave through the K and V tiles in 16-byte chunks (`Schedule::staged_epilogue`).
    STAGED_EPILOGUE: bool,
    /// A persistent program stages dK/dV in the ring's free slots and loads its next tile's K/V (and, with
    /// EARLY_STAGE_SLOTS 1, the ring's first blocks) before it stores them (`Schedule::early_next_tile`).
    EARLY_NEXT_TILE: bool,
    /// The ring slots the early epilogue stages in: 1 (dK at the slot of the tile's last step, dV
    /// RESIDENT_TILE_BYTES after it, in its Q/dO area: BLOCK_N <= BLOCK_M) or 2 (dK there, dV in the slot
    /// before).
    EARLY_STAGE_SLOTS: u32,
    /// The dSᵀ tile passes between the MMA warpgroups by a hand-over (`Schedule::ds_handover`), else a
    /// barrier of both every step.
    DS_HANDOVER: bool,
    /// dV += Pᵀ·dO issued as soon as P is packed, before dS's store and the barrier (`Schedule::early_dv`).
    EARLY_DV: bool,
    MMA_WARPGROUPS: u32,
    /// Warpgroup w's piece of a block of dQ: its rows 64w .. (HEAD_DIM 64, BLOCK_M 128:
    /// `KernelSpec::dq_splits_rows`), else its columns 64w ..
    DQ_SPLITS_ROWS: bool,
    /// The columns a warpgroup's dQ = dS·K computes and hands on (N of its wgmma; 64, or the real 32 of
    /// HEAD_DIM 32 on 64's tile, whose pieces are split by rows): the first DQ_PANEL_COLUMNS·256 bytes of its
    /// 16 KB piece (fragment order), the rest of the piece never written nor stored.
    DQ_PANEL_COLUMNS: u32,
    /// The dSᵀ tile's offset from the tiles (after the ring), the staging buffers' (after it) and the
    /// ring's mbarriers' (after them).
    DS_TILE_OFFSET: u32,
    DQ_STAGING_OFFSET: u32,
    RING_BARRIERS_OFFSET: u32,
    /// Staging buffers (`KernelSpec::staging_buffers`): step j stages in buffer j % DQ_STAGING_BUFFERS.
    DQ_STAGING_BUFFERS: u32,
    /// The dQ sum pass's threads per block (`spec::DQ_SUM_THREADS`).
    DQ_SUM_THREADS: u32,
}

impl KernelConstants {
    fn of(spec: &KernelSpec) -> KernelConstants {
        let kind = spec.kind();
        // the tiles' width (HEAD_DIM padded to whole 64-column panels); the tensors' rows have head_dim
        let d = spec.params().tile_dim();
        let (bm, bn) = (spec.block_m(), spec.block_n());
        let threads = spec.threads();
        let copy_threads = 32 * spec.mma_warps();
        let chunks = d / 8;
        let row_bytes = d * spec.dtype().bytes();
        let (resident, streamed) = (spec.resident_rows(), spec.streamed_rows());
        // the forward's Q tile (BLOCK_M rows), double-buffered by a persistent kernel that reads Q through shared memory
        let q_bytes = spec.q_buffers() * bm * row_bytes;
        let common = Common {
            name: spec.name(),
            dtype: spec.dtype().name(),
            elem: match spec.dtype() {
                DType::Bf16 => "bfloat",
                DType::F16 => "half",
            },
            is_bf16: spec.dtype() == DType::Bf16,
            operand_type: match spec.dtype() {
                DType::Bf16 => "i32",
                DType::F16 => "<2 x half>",
            },
            mma_intrinsic: match spec.dtype() {
                DType::Bf16 => "llvm.nvvm.mma.m16n8k16.row.col.bf16",
                DType::F16 => "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
            },
            causal: spec.causal(),
            STAGE: spec.stage() as u32,
            MASK: if spec.causal() { "causal" } else { "edge" },
            HEAD_DIM: d,
            BLOCK_M: bm,
            BLOCK_N: bn,
            NUM_WARPS: spec.num_warps(),
            NUM_STAGES: spec.num_stages(),
            THREADS: threads,
            MIN_PROGRAMS_PER_SM: spec.programs_per_sm(),
            COPY_THREADS: copy_threads,
            ROWS_PER_WARP: spec.rows_per_warp(),
            M_TILES_PER_WARP: spec.rows_per_warp() / 16,
            HEAD_DIM_K16_STEPS: d / 16,
            HEAD_DIM_K32_STEPS: d / 32,
            HEAD_DIM_N8_TILES: d / 8,
            HEAD_DIM_N8_PAIRS: d / 16,
            CHUNKS_PER_ROW: chunks,
            VALID_CHUNKS: spec.head_dim() / 8,
            VALID_N8_TILES: spec.head_dim() / 8,
            PADDED: spec.head_dim() != d,
            VALID_V_CHUNKS: spec.value_dim() / 8,
            VALID_V_N8_TILES: spec.value_dim() / 8,
            PADDED_V: spec.value_dim() != d,
            QK_K16_STEPS: spec.head_dim() / 16,
            V_K16_STEPS: spec.value_dim() / 16,
            PV_COLUMNS: spec.value_dim().min(d),
            QK_COLUMNS: spec.head_dim().min(d),
            ROW_BYTES: row_bytes,
            SLOT_BYTES: spec.slot_bytes(),
            RCP_LN2: rcp_ln2_literal(),
            RESIDENT_IN_REGISTERS: spec.q_in_registers(),
            STEP_CURSOR: spec.step_cursor(),
            VARLEN: spec.features().varlen,
            EMPTY_ROWS: spec.features().empty_rows,
            EMPTY_TILES: spec.features().varlen || spec.features().empty_rows,
            WINDOW: spec.features().window,
            SOFTCAP: spec.features().softcap,
            SCORE_MOD: spec.features().modifiers.is_some_and(|m| m.score().is_some()),
            MASK_MOD: spec.features().modifiers.is_some_and(|m| m.mask().is_some()),
            BLOCK_RANGE: spec.features().window || spec.features().modifiers.is_some_and(|m| m.mask().is_some()),
            MOD: None,
        };
        let forward = (kind.role() == KernelKind::Fwd).then(|| Forward {
            BLOCK_N_N8_TILES: bn / 8,
            BLOCK_N_K16_STEPS: bn / 16,
            Q_COPIES_PER_THREAD: bm * chunks / threads,
            KV_COPIES_PER_THREAD: bn * chunks / threads,
            KV_RING_OFFSET: q_bytes,
            V_OFFSET: bn * row_bytes,
            OVERLAP_NEXT_S: spec.overlaps_softmax(),
            LAZY_RESCALE_LOG2: crate::spec::LAZY_RESCALE_LOG2,
            EARLY_ROW_NORM: spec.early_row_norm(),
        });
        let warp_specialized = kind.warp_specialized_forward().then(|| WarpSpecialized {
            CONSUMER_WARPGROUPS: spec.consumer_warpgroups(),
            PING_PONG: spec.ping_pong(),
            Q_FROM_REGISTERS: spec.q_from_registers(),
            LAZY_RESCALE: spec.lazy_rescale(),
            HALF_BLOCK_SOFTMAX: spec.half_block_softmax(),
            Q_BUFFERS: spec.q_buffers(),
            CROSS_TILE: spec.cross_tile(),
            SINGLE_TAIL: spec.single_tail(),
            NARROW_LAST_PRODUCT: spec.narrow_last_product(),
            OWN_BLOCKS: spec.own_blocks(),
            SPLIT_KV_RING: spec.split_kv_ring(),
            BARRIERS_OFFSET: q_bytes + spec.num_stages() * spec.slot_bytes(),
            Q_TILE_BYTES: bm * row_bytes,
            KV_BLOCK_BYTES: 2 * bn * row_bytes,
            KV_TILE_BYTES: bn * row_bytes,
            L2_GROUP_BYTES: crate::spec::L2_GROUP_BYTES,
        });
        let registers = (kind.warp_specialized_forward() || kind.fuses_dq()).then(|| RegisterSplit {
            LAUNCH_REGISTERS: spec.registers().launch,
            PRODUCER_REGISTERS: spec.registers().producer,
            CONSUMER_REGISTERS: spec.registers().consumer,
        });
        // (the dK/dV column warpgroups' exchange, after the ring)
        let exchange = 2 * resident * row_bytes + spec.num_stages() * spec.slot_bytes();
        let backward = matches!(kind.role(), KernelKind::BwdDkdv | KernelKind::BwdDq).then(|| Backward {
            RESIDENT_ROWS: resident,
            STREAMED_ROWS: streamed,
            STREAMED_N8_TILES: streamed / 8,
            STREAMED_K16_STEPS: streamed / 16,
            RESIDENT_COPIES_PER_THREAD: resident * chunks / copy_threads,
            STREAMED_COPIES_PER_THREAD: streamed * chunks / copy_threads,
            RESIDENT_TILE_BYTES: resident * row_bytes,
            STREAMED_TILE_BYTES: streamed * row_bytes,
            RING_OFFSET: 2 * resident * row_bytes,
            STAT_COPIES_PER_THREAD: (2 * streamed).div_ceil(threads),
            COLUMN_SPLITS: spec.column_splits(),
            OUT_COLUMNS: spec.output_columns(),
            OUT_N8_TILES: spec.output_columns() / 8,
            OUT_N8_PAIRS: spec.output_columns() / 16,
            OUT_SLICE_DESC: spec.output_columns() / 64 * streamed * 128 / 16,
            OUT_STORE_N8_TILES: spec.output_columns().min(spec.head_dim()) / 8,
            OUT_STORE_V_N8_TILES: spec.output_columns().min(spec.value_dim()) / 8,
            COLUMN_WARPGROUPS: spec.column_warpgroups(),
            P_EXCHANGE_OFFSET: exchange,
            DS_EXCHANGE_OFFSET: exchange + resident * streamed * 4,
            PW_EXCHANGE_OFFSET: exchange + resident * streamed * (4 + spec.dtype().bytes()),
            COLUMN_PIECES: column_pieces(spec, streamed * 128 / 16),
        });
        let preprocess = (kind == KernelKind::BwdPre).then(|| {
            // (the rows of O and dO as they are: the value head dim's chunks, not the tile's)
            let chunks = spec.value_dim() / 8;
            let lanes = (1 << chunks.trailing_zeros()).min(32);
            Preprocess { PRE_LANES_PER_ROW: lanes, LOG2_PRE_LANES_PER_ROW: lanes.trailing_zeros(), PRE_CHUNKS_PER_LANE: chunks / lanes, PRE_COPIES_PER_THREAD: bm * lanes / threads }
        });
        let wgmma = kind.uses_wgmma().then(|| Wgmma {
            DESC_K_MAJOR: descriptor_constant(1).to_string(),
            DESC_MN_MAJOR: descriptor_constant(streamed * 128 / 16).to_string(),
            DESC_MN_MAJOR_RESIDENT: descriptor_constant(resident * 128 / 16).to_string(),
            WGMMA_TYPES: match spec.dtype() {
                DType::Bf16 => "bf16.bf16",
                DType::F16 => "f16.f16",
            },
            PANELS_PER_ROW: d / 64,
        });
        let fused = kind.fuses_dq().then(|| {
            // the dSᵀ tile, the dQ staging buffers and the ring's mbarriers after K, V and the ring
            let layout = spec.fused_layout();
            FusedDq {
                DQ_ATOMIC: kind.dq_atomics(),
                DQ_UP: kind.dq_up(),
                FOLD_KEY_BLOCKS: spec.fold_key_blocks(),
                PERSISTENT_TILES: spec.schedule().persistent_tiles,
                DQ_SUM_FOLLOWS: spec.schedule().dq_sum_follows,
                DQ_SUM_ROUNDS: spec.schedule().dq_sum_rounds,
                PREFETCH_NEXT_TILE: spec.schedule().prefetch_next_tile,
                STAGED_EPILOGUE: spec.schedule().staged_epilogue,
                EARLY_NEXT_TILE: spec.schedule().early_next_tile,
                EARLY_STAGE_SLOTS: if spec.resident_rows() <= spec.streamed_rows() { 1 } else { 2 },
                DS_HANDOVER: spec.schedule().ds_handover,
                EARLY_DV: spec.schedule().early_dv,
                MMA_WARPGROUPS: (spec.mma_warps() / 4).max(1),
                DQ_SPLITS_ROWS: spec.dq_splits_rows(),
                // (split by rows, a piece holds every column: only the real ones at HEAD_DIM 32)
                DQ_PANEL_COLUMNS: if spec.dq_splits_rows() { spec.head_dim().min(64) } else { 64 },
                DS_TILE_OFFSET: layout.ds_tile,
                DQ_STAGING_OFFSET: layout.staging,
                RING_BARRIERS_OFFSET: layout.mbarriers,
                DQ_STAGING_BUFFERS: spec.staging_buffers(),
                DQ_SUM_THREADS: crate::spec::DQ_SUM_THREADS,
            }
        });
        let decode = (kind == KernelKind::Decode).then(|| Decode::of(spec));
        let decode_combine = (kind == KernelKind::DecodeCombine).then(|| DecodeCombine::of(spec));
        KernelConstants { common, forward, warp_specialized, registers, backward, preprocess, wgmma, fused, decode, decode_combine }
    }
}

/// ln 2 rounded to f32, as LLVM's hexadecimal double literal (base-2 M -> natural-log LSE).
fn ln2_literal() -> String {
    format!("0x{:016X}", (std::f32::consts::LN_2 as f64).to_bits())
}

/// decode (spec/decode.rs): a program's BLOCK_M query rows (DEC_M_TILES m16 tiles) against its split of
/// the cache, in blocks of BLOCK_N keys of which each warp computes KEYS_PER_WARP; the copy lanes (thread t
/// copies 16-byte chunk t % CHUNKS_PER_ROW of tile rows t / CHUNKS_PER_ROW + COPY_STEP·i), each copy row's
/// 16-token group (paged caches: one page lookup per group) and row within it, split into the part known
/// here (COPY_GROUP[i], COPY_IN_GROUP[i]) and the thread's own (added in the kernel); the merge buffer.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct Decode {
    DEC_M_TILES: u32,
    /// The warps of a column group, which split each block's keys, and the groups, which split O's columns
    /// (2 past 128 columns): a warp's accumulators are DEC_N8_TILES n8 tiles (DEC_N8_PAIRS pairs) from
    /// column group·CG_TILE_BYTES of a V tile row, and group·CG_MERGE_BYTES of a merge buffer row.
    KEY_WARPS: u32,
    COLUMN_GROUPS: u32,
    DEC_N8_TILES: u32,
    DEC_N8_PAIRS: u32,
    CG_TILE_BYTES: u32,
    CG_MERGE_BYTES: u32,
    KEYS_PER_WARP: u32,
    KPW_N8_TILES: u32,
    KPW_K16_STEPS: u32,
    Q_IN_REGISTERS: bool,
    /// The combine starts on this kernel's trigger (spec/decode.rs, `decode_programmatic_combine`).
    PROGRAMMATIC: bool,
    COPY_STEP: u32,
    KV_COPY_ROWS: u32,
    COPY_GROUP: Vec<u32>,
    COPY_IN_GROUP: Vec<u32>,
    Q_COPY_ROWS: u32,
    /// Whether the last Q copy row can fall past BLOCK_M (then it is skipped).
    Q_COPY_GUARD: bool,
    RING_OFFSET: u32,
    /// A ring slot's K tile, then its V tile at V_OFFSET; rows KV_PITCH bytes apart (`decode_kv_pitch`).
    V_OFFSET: u32,
    KV_PITCH: u32,
    KV_SLOT_BYTES: u32,
    /// TMA boxes for the full blocks (`Schedule::tma_kv`): the slots' mbarriers at BARS_OFFSET (from the
    /// 1024-aligned tile base); K and V tiles of PANELS panels, PANEL_BYTES apart, of 64 columns × BLOCK_N
    /// rows of 128 bytes; a block's boxes of BLOCK_N / SUB_BOXES_MAX rows or more (`decode_box_rows`),
    /// TMA_BYTES landing on the slot's barrier in all.
    TMA_KV: bool,
    BARS_OFFSET: u32,
    PANELS: u32,
    PANEL_BYTES: u32,
    SUB_BOXES_MAX: u32,
    TMA_BYTES: u32,
    /// The L2 cache policy the boxes carry: evict first (CUTLASS's CacheHintSm90::EVICT_FIRST).
    EVICT_FIRST: u64,
    MERGE_ROW_BYTES: u32,
    MERGE_WARP_BYTES: u32,
    /// The per-warp row maxima (f32 [num_warps][BLOCK_M]) and then the row sums.
    STATS_OFFSET: u32,
    SUMS_OFFSET: u32,
    /// The output phase: (row, 8-column chunk) items per thread, and whether the last pass is partial.
    OUT_ITERS: u32,
    OUT_ITEMS: u32,
    OUT_GUARD: bool,
    /// The last split's merge of its row tile (`merge_in_kernel`).
    #[serde(flatten)]
    merge: RowMerge,
}

impl Decode {
    fn of(spec: &KernelSpec) -> Decode {
        // the tiles' width (32 and 96 padded to 64 and 128: the common VALID_CHUNKS say which chunks are real)
        let (d, bm, bn, w) = (spec.params().tile_dim(), spec.block_m(), spec.block_n(), spec.num_warps());
        let (threads, chunks) = (32 * w, d / 8);
        let step = threads / chunks;
        let kpw = spec.decode_keys_per_warp();
        let rows = bn / step;
        let items = bm * chunks;
        let (key_warps, groups) = (spec.decode_key_warps(), spec.decode_column_groups());
        Decode {
            DEC_M_TILES: spec.decode_m_tiles(),
            KEY_WARPS: key_warps,
            COLUMN_GROUPS: groups,
            DEC_N8_TILES: d / 8 / groups,
            DEC_N8_PAIRS: d / 16 / groups,
            // (a column group's V columns: bytes into a row, or whole panels with TMA boxes)
            CG_TILE_BYTES: if spec.decode_tma_kv() { d / groups / 64 * bn * 128 } else { d / groups * spec.dtype().bytes() },
            CG_MERGE_BYTES: d / groups * 4,
            KEYS_PER_WARP: kpw,
            KPW_N8_TILES: kpw / 8,
            KPW_K16_STEPS: kpw / 16,
            Q_IN_REGISTERS: spec.decode_q_in_registers(),
            PROGRAMMATIC: spec.decode_programmatic_combine(),
            COPY_STEP: step,
            KV_COPY_ROWS: rows,
            COPY_GROUP: (0..rows).map(|i| step * i / 16).collect(),
            COPY_IN_GROUP: (0..rows).map(|i| step * i % 16).collect(),
            Q_COPY_ROWS: bm.div_ceil(step),
            Q_COPY_GUARD: bm % step != 0,
            RING_OFFSET: spec.decode_ring_offset(),
            V_OFFSET: spec.decode_kv_tile_bytes(),
            KV_PITCH: spec.decode_kv_pitch(),
            KV_SLOT_BYTES: spec.decode_slot_bytes(),
            TMA_KV: spec.decode_tma_kv(),
            BARS_OFFSET: spec.decode_barriers_offset(),
            PANELS: d / 64,
            PANEL_BYTES: bn * 128,
            SUB_BOXES_MAX: bn / 16,
            TMA_BYTES: spec.decode_slot_bytes(),
            EVICT_FIRST: 0x12F0_0000_0000_0000,
            MERGE_ROW_BYTES: (d + crate::spec::DECODE_MERGE_PAD) * 4,
            MERGE_WARP_BYTES: spec.decode_merge_warp_bytes(),
            STATS_OFFSET: spec.decode_stats_offset(),
            SUMS_OFFSET: spec.decode_stats_offset() + key_warps * bm * 4,
            OUT_ITERS: items.div_ceil(threads),
            OUT_ITEMS: items,
            OUT_GUARD: items % threads != 0,
            merge: RowMerge::of(spec),
        }
    }
}

/// The split-KV merge of one query row by one warp (lib/decode.ll.tera `merge_row`), which decode_combine
/// runs and decode's last split of a row tile: each lane VEC columns (HEAD_DIM / 32, of the tile) of the
/// row; the partials in chunks of MERGE_CHUNK splits, all of a chunk's loads in flight together (32, or 16
/// at VEC 8: a chunk holds MERGE_CHUNK·VEC registers); the lanes below STORE_LANES hold the tensor's
/// columns; at most MAX_SPLITS partials.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct RowMerge {
    VEC: u32,
    VEC_PAIRS: u32,
    STORE_LANES: u32,
    MERGE_CHUNK: u32,
    MAX_SPLITS: u32,
    LN2: String,
}

impl RowMerge {
    fn of(spec: &KernelSpec) -> RowMerge {
        let vec = spec.params().tile_dim() / 32;
        RowMerge {
            VEC: vec,
            VEC_PAIRS: spec.params().tile_dim() / 64,
            STORE_LANES: spec.head_dim() / vec,
            MERGE_CHUNK: (128 / vec).min(32),
            MAX_SPLITS: crate::spec::DECODE_MAX_SPLITS,
            LN2: ln2_literal(),
        }
    }
}

/// decode_combine: COMBINE_WARPS warps a program, one query row each.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct DecodeCombine {
    COMBINE_WARPS: u32,
    /// Launched to start on the decode kernel's trigger: it waits for the partials first.
    PROGRAMMATIC: bool,
    #[serde(flatten)]
    merge: RowMerge,
}

impl DecodeCombine {
    fn of(spec: &KernelSpec) -> DecodeCombine {
        DecodeCombine { COMBINE_WARPS: crate::spec::DECODE_COMBINE_WARPS, PROGRAMMATIC: spec.decode_programmatic_combine(), merge: RowMerge::of(spec) }
    }
}

/// The IR names under which the templates find the problem's geometry (the ABI's geometry group,
/// `abi::geometry`), as `seq.*`: no template writes %Z, %H or %N_CTX itself, it passes these to the
/// sequence-info, block-range and scheduler macros (lib/seqinfo.ll.tera, lib/scheduler.ll.tera) and to
/// the verbs that bound rows. Today queries and keys share one length N_CTX; unequal and packed lengths
/// and K/V heads change these names, the ABI's geometry group and those macros, not the kernels.
#[derive(Serialize)]
struct SequenceNames {
    /// Batch size Z and heads per batch H (a program's head row is z·H + h).
    batch: String,
    heads: String,
    /// K/V heads (query head h reads K/V head h / (H / kv_heads)).
    kv_heads: String,
    /// The length of the program's query sequence and of its key/value sequence.
    q_len: String,
    kv_len: String,
    /// 1: a causal diagonal aligned bottom-right (offset kv_len - q_len), 0: top-left.
    align: String,
    /// Packed sequences' offsets (i32 pointers; read by varlen kernels only).
    cu_seqlens_q: String,
    cu_seqlens_k: String,
    /// The packed tensors' rows (varlen kernels: every offset is clamped to them; the row statistics are
    /// [H, total_q]).
    total_q: String,
    total_k: String,
    /// The sliding window's bounds around the diagonal (window kernels read them).
    window_left: String,
    window_right: String,
}

impl SequenceNames {
    fn of(_spec: &KernelSpec) -> SequenceNames {
        SequenceNames::prefixed("%")
    }

    /// The same names under `prefix` instead of `%` (`seq_writer`: the fused backward's dQ writer reads the
    /// parameters afresh into %wr.g.* where it computes its program's values again for a second key block,
    /// lib/dq_fused.ll.tera `writer`).
    fn prefixed(prefix: &str) -> SequenceNames {
        let name = |param: &str| format!("{prefix}{param}");
        SequenceNames {
            batch: name("Z"),
            heads: name("H"),
            kv_heads: name("H_KV"),
            q_len: name("N_Q"),
            kv_len: name("N_KV"),
            align: name("ALIGN"),
            cu_seqlens_q: name("CU_SEQLENS_Q"),
            cu_seqlens_k: name("CU_SEQLENS_K"),
            total_q: name("TOTAL_Q"),
            total_k: name("TOTAL_K"),
            window_left: name("WINDOW_LEFT"),
            window_right: name("WINDOW_RIGHT"),
        }
    }
}

/// The Rust that decides what the templates render besides the spec itself: the spec's rules (which
/// schedule, how many registers, which tiles), the render context built from them, the LLVM pipeline and
/// the metadata. A change there alone (a rule such as `KernelSpec::own_blocks` moving) makes different
/// PTX for the same spec and the same templates.
pub const GENERATOR_SOURCES: &[(&str, &str)] = &[
    ("compiler/src/spec/mod.rs", include_str!("spec/mod.rs")),
    ("compiler/src/spec/types.rs", include_str!("spec/types.rs")),
    ("compiler/src/spec/schedule.rs", include_str!("spec/schedule.rs")),
    ("compiler/src/spec/rules.rs", include_str!("spec/rules.rs")),
    ("compiler/src/spec/resources.rs", include_str!("spec/resources.rs")),
    ("compiler/src/spec/decode.rs", include_str!("spec/decode.rs")),
    ("compiler/src/spec/modifiers.rs", include_str!("spec/modifiers.rs")),
    // the modifiers' lowering (their IR, block ranges and derivatives come from these)
    ("compiler/src/mods/ir.rs", include_str!("mods/ir.rs")),
    ("compiler/src/mods/blocks.rs", include_str!("mods/blocks.rs")),
    ("compiler/src/mods/interval.rs", include_str!("mods/interval.rs")),
    ("compiler/src/mods/grad.rs", include_str!("mods/grad.rs")),
    ("compiler/src/mods/check.rs", include_str!("mods/check.rs")),
    ("compiler/src/mods/typed.rs", include_str!("mods/typed.rs")),
    ("compiler/src/render.rs", include_str!("render.rs")),
    ("compiler/src/abi.rs", include_str!("abi.rs")),
    ("compiler/src/codegen.rs", include_str!("codegen.rs")),
    ("compiler/src/artifact.rs", include_str!("artifact.rs")),
];

/// SHA-256 over every template's and generator source's name and text: part of every kernel cache key
/// and of every stored tuning result, so neither reuses a kernel that was built by other code, whatever
/// the crate's version says.
pub fn generator_hash() -> String {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for (name, text) in TEMPLATES.iter().chain(GENERATOR_SOURCES) {
            h.update(name.as_bytes());
            h.update([0]);
            h.update(text.as_bytes());
            h.update([0]);
        }
        format!("{:x}", h.finalize())
    })
    .clone()
}

fn engine() -> Result<&'static tera::Tera, RenderError> {
    static ENGINE: OnceLock<Result<tera::Tera, String>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            let mut t = tera::Tera::default();
            t.autoescape_on(vec![]);
            t.add_raw_templates(TEMPLATES.iter().copied()).map_err(|e| describe(&e))?;
            Ok(t)
        })
        .as_ref()
        .map_err(|detail| RenderError { template: "(all)", spec: "(none)".into(), detail: detail.clone() })
}

fn describe(e: &tera::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        src = inner.source();
    }
    s
}

/// The template that implements a kernel kind.
pub fn template_for(kind: KernelKind) -> &'static str {
    // a wgmma kind shares its role's template (its own branches are under k.WGMMA)
    match kind {
        KernelKind::Fwd => "fa2_fwd.ll.tera",
        KernelKind::FwdWgmma => "fa2_fwd_wgmma.ll.tera",
        KernelKind::FwdWs => "fa2_fwd_ws.ll.tera",
        KernelKind::FwdWsPersistent => "fa2_fwd_ws_persistent.ll.tera",
        KernelKind::BwdPre => "fa2_bwd_pre.ll.tera",
        KernelKind::BwdDkdv => "fa2_bwd_dkdv.ll.tera",
        KernelKind::BwdDkdvWgmma => "fa2_bwd_dkdv_wgmma.ll.tera",
        KernelKind::BwdFused | KernelKind::BwdFusedAtomic | KernelKind::BwdFusedUp => "fa2_bwd_fused.ll.tera",
        KernelKind::BwdDq => "fa2_bwd_dq.ll.tera",
        KernelKind::BwdDqWgmma => "fa2_bwd_dq_wgmma.ll.tera",
        KernelKind::Decode => "fa2_decode.ll.tera",
        KernelKind::DecodeCombine => "fa2_decode_combine.ll.tera",
    }
}

/// Render a template that is not a kernel kind's (the ring's merges) with its own context.
pub fn render_module(template: &'static str, ctx: &tera::Context) -> Result<String, RenderError> {
    engine()?.render(template, ctx).map_err(|e| RenderError { template, spec: template.into(), detail: describe(&e) })
}

/// Render the LLVM IR text of a specialization.
pub fn render(spec: &KernelSpec) -> Result<String, RenderError> {
    let template = template_for(spec.kind());
    let mut ctx = tera::Context::new();
    let mut constants = KernelConstants::of(spec);
    if let Some(m) = spec.features().modifiers {
        // (the fused backward takes a score_mod: `KernelSpec::with_features` refuses it a mask_mod)
        let backward = matches!(spec.kind(), KernelKind::BwdDkdvWgmma | KernelKind::BwdDqWgmma | KernelKind::BwdDkdv | KernelKind::BwdDq) || spec.kind().fuses_dq();
        if !matches!(spec.kind(), KernelKind::FwdWs | KernelKind::Fwd) && !backward {
            return Err(RenderError { template, spec: spec.name(), detail: "score_mod and mask_mod are built into fwd_ws, fwd and the backward pairs only, a score_mod into the fused backward".into() });
        }
        let code = ModCode::of(&m, spec.block_n(), backward).map_err(|e| RenderError { template, spec: spec.name(), detail: e.to_string() })?;
        constants.common.MOD = Some(code);
    }
    ctx.insert("k", &constants);
    // the parameter lists and indices (compiler/src/abi.rs): `define` lines and TMA descriptor addresses
    ctx.insert("abi", &crate::abi::AbiContext::of(spec));
    ctx.insert("seq", &SequenceNames::of(spec));
    ctx.insert("seq_writer", &SequenceNames::prefixed("%wr.g."));
    let mut ir = engine()?.render(template, &ctx).map_err(|e| RenderError { template, spec: spec.name(), detail: describe(&e) })?;
    if let Some(code) = &constants.common.MOD {
        // (the intrinsics the modifiers call that the templates do not declare themselves)
        let missing: String = code.declarations.lines().filter(|d| !declared(&ir, d)).map(|d| format!("{d}\n")).collect();
        ir.push_str(&missing);
    }
    Ok(ir)
}

/// Whether `module` already declares the function `declaration` declares.
fn declared(module: &str, declaration: &str) -> bool {
    let symbol = declaration.split('@').nth(1).and_then(|s| s.split('(').next()).unwrap_or("");
    module.lines().any(|l| l.trim_start().starts_with("declare") && l.contains(&format!("@{symbol}(")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names `seq` gives the templates are the ABI's geometry parameters (every kind has them), so the
    /// geometry seam has one list: abi::geometry.
    #[test]
    fn sequence_names_are_abi_geometry_parameters() {
        let geometry: Vec<String> = crate::abi::geometry().iter().map(|p| format!("%{}", p.name)).collect();
        let spec = KernelSpec::backward_preprocess(crate::spec::Arch::Sm80, DType::Bf16, 64);
        let names = SequenceNames::of(&spec);
        for name in [names.batch, names.heads, names.kv_heads, names.q_len, names.kv_len, names.align, names.cu_seqlens_q, names.cu_seqlens_k, names.total_q, names.total_k, names.window_left, names.window_right] {
            assert!(geometry.iter().any(|g| *g == name), "seq name {name} is not a parameter of abi::geometry");
        }
        for kind in KernelKind::ALL {
            let params = crate::abi::kernel_parameters(kind);
            for g in crate::abi::geometry() {
                assert!(crate::abi::index_of(params, g.name).is_some(), "{} lacks the geometry parameter {}", kind.name(), g.name);
            }
        }
    }
}

