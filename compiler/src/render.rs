//! Stage 1: spec -> LLVM IR text, by rendering the tera templates with the spec's constants.

use crate::spec::{DType, KernelKind, KernelSpec};
use serde::Serialize;
use std::sync::OnceLock;

/// The templates, embedded at build time so that a built binary needs no template files.
pub const TEMPLATES: &[(&str, &str)] = &[
    ("fa2_fwd.ll.tera", include_str!("../../templates/fa2_fwd.ll.tera")),
    ("lib/verbs.ll.tera", include_str!("../../templates/lib/verbs.ll.tera")),
    ("lib/fwd_block.ll.tera", include_str!("../../templates/lib/fwd_block.ll.tera")),
    ("lib/gemm.ll.tera", include_str!("../../templates/lib/gemm.ll.tera")),
    ("lib/wgmma.ll.tera", include_str!("../../templates/lib/wgmma.ll.tera")),
    ("lib/stream.ll.tera", include_str!("../../templates/lib/stream.ll.tera")),
    ("lib/ws.ll.tera", include_str!("../../templates/lib/ws.ll.tera")),
    ("lib/pingpong.ll.tera", include_str!("../../templates/lib/pingpong.ll.tera")),
    ("fa2_fwd_ws.ll.tera", include_str!("../../templates/fa2_fwd_ws.ll.tera")),
    ("fa2_fwd_ws_persistent.ll.tera", include_str!("../../templates/fa2_fwd_ws_persistent.ll.tera")),
    ("fa2_bwd_pre.ll.tera", include_str!("../../templates/fa2_bwd_pre.ll.tera")),
    ("fa2_bwd_dkdv.ll.tera", include_str!("../../templates/fa2_bwd_dkdv.ll.tera")),
    ("fa2_bwd_dq.ll.tera", include_str!("../../templates/fa2_bwd_dq.ll.tera")),
    ("lib/dq_fused.ll.tera", include_str!("../../templates/lib/dq_fused.ll.tera")),
    ("lib/tma_ring.ll.tera", include_str!("../../templates/lib/tma_ring.ll.tera")),
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
/// computed here once so that templates only index and never divide.
#[derive(Serialize)]
#[allow(non_snake_case)]
struct KernelConstants {
    name: String,
    dtype: &'static str,
    elem: &'static str,
    is_bf16: bool,
    /// LLVM type of one packed mma operand register, and the mma intrinsic that takes it.
    operand_type: &'static str,
    mma_intrinsic: &'static str,
    causal: bool,
    /// The resident tile's fragments (the forward's Q, dK/dV's K and V, dQ's Q and dO) live in registers
    /// across the loop (else re-read from shared memory per block).
    RESIDENT_IN_REGISTERS: bool,
    /// The Hopper kernels: wgmma from shared-memory descriptors, tiles in 128B-swizzle panels.
    WGMMA: bool,
    /// fwd_wgmma with 3+ stages: S of block j+1 in flight during the softmax of block j.
    OVERLAP_NEXT_S: bool,
    STAGE: u32,
    /// The mask of the blocks j >= n_full: "causal" (inner stage 2) or "edge" (N_CTX bound only).
    MASK: &'static str,
    HEAD_DIM: u32,
    BLOCK_M: u32,
    BLOCK_N: u32,
    NUM_WARPS: u32,
    NUM_STAGES: u32,
    THREADS: u32,
    /// The threads that copy tiles and compute: all but a helper warpgroup (the fused backward's writer).
    COPY_THREADS: u32,
    ROWS_PER_WARP: u32,
    M_TILES_PER_WARP: u32,
    BLOCK_N_N8_TILES: u32,
    HEAD_DIM_K16_STEPS: u32,
    HEAD_DIM_K32_STEPS: u32,
    BLOCK_N_K16_STEPS: u32,
    HEAD_DIM_N8_PAIRS: u32,
    HEAD_DIM_N8_TILES: u32,
    CHUNKS_PER_ROW: u32,
    LOG2_CHUNKS_PER_ROW: u32,
    ROW_BYTES: u32,
    Q_COPIES_PER_THREAD: u32,
    KV_COPIES_PER_THREAD: u32,
    KV_RING_OFFSET: u32,
    V_OFFSET: u32,
    SLOT_BYTES: u32,
    RCP_LN2: String,
    /// See `spec::LAZY_RESCALE_LOG2`.
    LAZY_RESCALE_LOG2: u32,
    // ---- the backward kernels: a program owns RESIDENT_ROWS rows (split over warps) and streams blocks of STREAMED_ROWS rows ----
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
    /// dK/dV slots carry the block's M and Δ (STREAMED_ROWS f32 each) after the two tiles: 4-byte copies per thread.
    STAT_COPIES_PER_THREAD: u32,
    /// Preprocess: 16-byte chunks of O (and dO) per thread.
    PRE_COPIES_PER_THREAD: u32,
    // ---- wgmma (sm_90a): the constant fields of the shared-memory descriptors (SBO = 1024 B, 128B
    // swizzle) with the LBO field of K-major operands (unused: 1) and of MN-major ones, the streamed tiles
    // read transposed (the next 64-column panel: streamed rows·128 B), as decimal i64 literals; the ptx type
    // of the operands ----
    DESC_K_MAJOR: String,
    DESC_MN_MAJOR: String,
    /// MN-major descriptor of the resident tiles (the next panel: resident rows·128 B): bwd_fused reads K
    /// transposed for dQ = dS·K.
    DESC_MN_MAJOR_RESIDENT: String,
    // ---- bwd_fused: dQ inside dK/dV (lib/dq_fused.ll.tera): MMA_WARPGROUPS, warpgroup w computes dQ's
    // columns w·DQ_PANEL_COLUMNS .. (64: one K panel), one lock each; then the writer warpgroup. The dSᵀ tile's
    // offset from the tiles (after the ring) and the staging buffers' (after it) ----
    FUSED_DQ: bool,
    DQ_ATOMIC: bool,
    /// bwd_fused_up: the Q blocks run up from the diagonal, the programs last first, and each block's
    /// additions go from its highest program down (lib/dq_fused.ll.tera)
    DQ_UP: bool,
    MMA_WARPGROUPS: u32,
    DQ_PANEL_COLUMNS: u32,
    DS_TILE_OFFSET: u32,
    DQ_STAGING_OFFSET: u32,
    /// staging buffers (`KernelSpec::staging_buffers`): step j stages in buffer j % DQ_STAGING_BUFFERS
    DQ_STAGING_BUFFERS: u32,
    /// the dQ sum pass's threads per block (`spec::DQ_SUM_THREADS`)
    DQ_SUM_THREADS: u32,
    /// bwd_fused: the ring's mbarriers (after the dSᵀ tile and the dQ staging)
    RING_BARRIERS_OFFSET: u32,
    WGMMA_TYPES: &'static str,
    // ---- fwd_ws: consumer warpgroups, 64-column panels per row, the mbarriers' offset from the tiles,
    // bytes the TMA loads of Q and of one K/V block bring, and the registers of each warpgroup role ----
    CONSUMER_WARPGROUPS: u32,
    /// fwd_ws with 3+ stages: consumers take turns issuing (ping-pong), P·V of block j-1 with S_j.
    PING_PONG: bool,
    /// The ping-pong tile's S = Q·Kᵀ on wgmma with Q from registers (read once a tile with ldmatrix).
    Q_FROM_REGISTERS: bool,
    /// The ping-pong tile's lazy rescaling (`KernelSpec::lazy_rescale`).
    LAZY_RESCALE: bool,
    /// The causal eager softmax on half of a masked block (`KernelSpec::half_block_softmax`).
    HALF_BLOCK_SOFTMAX: bool,
    /// The forward's Q buffers (`KernelSpec::q_buffers`: 1 or 2).
    Q_BUFFERS: u32,
    /// The persistent forward runs across tiles (`KernelSpec::cross_tile`).
    CROSS_TILE: bool,
    /// The causal ping-pong tile's last P·V over half the block where the warpgroup keeps no more (`KernelSpec::narrow_last_product`).
    NARROW_LAST_PRODUCT: bool,
    /// Each consumer runs the blocks its own rows reach, and empty turns for the rest (`KernelSpec::own_blocks`).
    OWN_BLOCKS: bool,
    /// One copy of the cross-tile kernel's last turn and epilogue (`KernelSpec::single_tail`).
    SINGLE_TAIL: bool,
    /// The ping-pong tile computes the epilogue's l_i, 1/l_i and M under its last P·V, the reciprocal and
    /// log2 approximate and flush-to-zero (`KernelSpec::early_row_norm`).
    EARLY_ROW_NORM: bool,
    PANELS_PER_ROW: u32,
    BARRIERS_OFFSET: u32,
    Q_TILE_BYTES: u32,
    KV_BLOCK_BYTES: u32,
    LAUNCH_REGISTERS: u32,
    L2_GROUP_BYTES: u32,
    PRODUCER_REGISTERS: u32,
    CONSUMER_REGISTERS: u32,
}

impl KernelConstants {
    fn of(spec: &KernelSpec) -> KernelConstants {
        let d = spec.head_dim();
        let (bm, bn) = (spec.block_m(), spec.block_n());
        let threads = spec.threads();
        let copy_threads = 32 * spec.mma_warps();
        let cpr = d / 8;
        let row_bytes = d * spec.dtype().bytes();
        let mt = spec.rows_per_warp() / 16;
        let (br, bs) = (spec.resident_rows(), spec.streamed_rows());
        // bwd_fused: the dSᵀ tile, the dQ staging buffers and the ring's mbarriers after K, V and the ring
        let fused = spec.fused_layout();
        // the forward's Q tile (BLOCK_M rows), double-buffered by a persistent kernel that reads Q through shared memory
        let q_bytes = spec.q_buffers() * bm * row_bytes;
        KernelConstants {
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
            RESIDENT_IN_REGISTERS: spec.q_in_registers(),
            WGMMA: spec.kind().uses_wgmma(),
            OVERLAP_NEXT_S: spec.overlaps_softmax(),
            STAGE: spec.stage() as u32,
            MASK: if spec.causal() { "causal" } else { "edge" },
            HEAD_DIM: d,
            BLOCK_M: bm,
            BLOCK_N: bn,
            NUM_WARPS: spec.num_warps(),
            NUM_STAGES: spec.num_stages(),
            THREADS: threads,
            COPY_THREADS: copy_threads,
            ROWS_PER_WARP: spec.rows_per_warp(),
            M_TILES_PER_WARP: mt,
            BLOCK_N_N8_TILES: bn / 8,
            HEAD_DIM_K16_STEPS: d / 16,
            HEAD_DIM_K32_STEPS: d / 32,
            BLOCK_N_K16_STEPS: bn / 16,
            HEAD_DIM_N8_PAIRS: d / 16,
            HEAD_DIM_N8_TILES: d / 8,
            CHUNKS_PER_ROW: cpr,
            LOG2_CHUNKS_PER_ROW: cpr.trailing_zeros(),
            ROW_BYTES: row_bytes,
            Q_COPIES_PER_THREAD: bm * cpr / threads,
            KV_COPIES_PER_THREAD: bn * cpr / threads,
            KV_RING_OFFSET: q_bytes,
            V_OFFSET: bn * row_bytes,
            SLOT_BYTES: spec.slot_bytes(),
            RCP_LN2: rcp_ln2_literal(),
            LAZY_RESCALE_LOG2: crate::spec::LAZY_RESCALE_LOG2,
            RESIDENT_ROWS: br,
            STREAMED_ROWS: bs,
            STREAMED_N8_TILES: bs / 8,
            STREAMED_K16_STEPS: bs / 16,
            RESIDENT_COPIES_PER_THREAD: br * cpr / copy_threads,
            STREAMED_COPIES_PER_THREAD: bs * cpr / copy_threads,
            RESIDENT_TILE_BYTES: br * row_bytes,
            STREAMED_TILE_BYTES: bs * row_bytes,
            RING_OFFSET: 2 * br * row_bytes,
            STAT_COPIES_PER_THREAD: (2 * bs).div_ceil(threads),
            PRE_COPIES_PER_THREAD: bm * cpr / threads,
            DESC_K_MAJOR: descriptor_constant(1).to_string(),
            DESC_MN_MAJOR: descriptor_constant(bs * 128 / 16).to_string(),
            DESC_MN_MAJOR_RESIDENT: descriptor_constant(br * 128 / 16).to_string(),
            FUSED_DQ: spec.kind().fuses_dq(),
            DQ_ATOMIC: spec.kind().dq_atomics(),
            DQ_UP: spec.kind().dq_up(),
            MMA_WARPGROUPS: (spec.mma_warps() / 4).max(1),
            DQ_PANEL_COLUMNS: 64,
            DS_TILE_OFFSET: fused.ds_tile,
            DQ_STAGING_OFFSET: fused.staging,
            DQ_STAGING_BUFFERS: spec.staging_buffers(),
            DQ_SUM_THREADS: crate::spec::DQ_SUM_THREADS,
            RING_BARRIERS_OFFSET: fused.mbarriers,
            WGMMA_TYPES: match spec.dtype() {
                DType::Bf16 => "bf16.bf16",
                DType::F16 => "f16.f16",
            },
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
            EARLY_ROW_NORM: spec.early_row_norm(),
            PANELS_PER_ROW: d / 64,
            BARRIERS_OFFSET: q_bytes + spec.num_stages() * spec.slot_bytes(),
            Q_TILE_BYTES: bm * row_bytes,
            KV_BLOCK_BYTES: 2 * bn * row_bytes,
            LAUNCH_REGISTERS: spec.registers().launch,
            L2_GROUP_BYTES: crate::spec::L2_GROUP_BYTES,
            PRODUCER_REGISTERS: spec.registers().producer,
            CONSUMER_REGISTERS: spec.registers().consumer,
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
        KernelKind::Fwd | KernelKind::FwdWgmma => "fa2_fwd.ll.tera",
        KernelKind::FwdWs => "fa2_fwd_ws.ll.tera",
        KernelKind::FwdWsPersistent => "fa2_fwd_ws_persistent.ll.tera",
        KernelKind::BwdPre => "fa2_bwd_pre.ll.tera",
        KernelKind::BwdDkdv | KernelKind::BwdDkdvWgmma | KernelKind::BwdFused | KernelKind::BwdFusedAtomic | KernelKind::BwdFusedUp => "fa2_bwd_dkdv.ll.tera",
        KernelKind::BwdDq | KernelKind::BwdDqWgmma => "fa2_bwd_dq.ll.tera",
    }
}

/// Render the LLVM IR text of a specialization.
pub fn render(spec: &KernelSpec) -> Result<String, RenderError> {
    let template = template_for(spec.kind());
    let mut ctx = tera::Context::new();
    ctx.insert("k", &KernelConstants::of(spec));
    // the parameter lists and indices (compiler/src/abi.rs): `define` lines and TMA descriptor addresses
    ctx.insert("abi", &crate::abi::AbiContext::of(spec));
    engine()?
        .render(template, &ctx)
        .map_err(|e| RenderError { template, spec: spec.name(), detail: describe(&e) })
}
