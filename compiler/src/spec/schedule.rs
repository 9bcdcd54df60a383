//! `Schedule`: every switch that changes the generated code of a kernel without changing its tiles, as a
//! named field. Each switch has a derived value (what measured best for that spec, with the result that
//! chose it in docs/DECISIONS.md) and may be overridden (`ScheduleOverrides`: the CLI's
//! `--schedule lazy_rescale=off,...`, the autotuner's space). An override that the templates cannot honour
//! is refused by the rules (`Schedule::resolve`); an override equal to the derived value is dropped, so one
//! kernel has one name and one cache key.

use super::types::{KernelKind, SpecError, SpecParams};
use serde::{Deserialize, Serialize};

/// The resolved switches of one spec (see each field). Switches that a kind does not have are off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schedule {
    /// The ping-pong tile computes S = Q·Kᵀ with Q's fragments in registers (wgmma RS, read once a tile)
    /// rather than from shared memory: the product then reads only K there, a third less at BLOCK_N 64.
    /// Two consumers only: with 3-4 (160 / 112 registers) Q's HEAD_DIM / 4 registers make ptxas spill; and
    /// to HEAD_DIM 192.
    pub q_from_registers: bool,
    /// The ping-pong tile rescales lazily (FA4's; `LAZY_RESCALE_LOG2`): a row's m_i moves only when a block
    /// raises it by more than 2^8, so most blocks skip the quad max's shuffles, alpha's exp2 and acc·alpha.
    /// Derived on at HEAD_DIM 128 and on 3-4 consumers (+1-10%, lazy-v2-ab, lazy-cfg-ab); off on two consumers at
    /// HEAD_DIM 64 (0.95-0.98× there).
    pub lazy_rescale: bool,
    /// A causal masked block's eager softmax runs on the first half of the block when every row of the warp
    /// has the second half all masked (a vote; `half_vote` in the templates): consumer 0's diagonal block in
    /// a 128×128 tile on two consumers. Eager (not lazy) configs only: with lazy rescaling it has no effect.
    /// half-ab: 1.015× at HEAD_DIM 64 causal 1024.
    pub half_block_softmax: bool,
    /// The persistent forward runs across tiles: a tile's last turn issues its last P·V with the next tile's
    /// S_0, and its epilogue runs under that S_0 (xtile-ab: +0.5-5.6%). Off: each tile starts with its own
    /// S_0 turn.
    pub cross_tile: bool,
    /// The cross-tile kernel's program-last tile issues an unused S_0 in its last turn, so one copy of the
    /// last turn and the epilogue serves every tile (otherwise that tile has a second copy without the S_0).
    /// Derived at HEAD_DIM 128 (+1.3-2.7%, and two copies went over the 100 ms generation bound); HEAD_DIM 64
    /// keeps two copies (0.987-0.991× with one; tail-latepack-ab).
    pub single_tail: bool,
    /// The causal ping-pong tile's last P·V runs over the first half of the block when no row of the
    /// consumer's warpgroup keeps a column of its second half (P is 0 there; a warp-uniform branch inside the
    /// product's asm). Derived for square tiles (narrow-ab: +0.8-2.2%; 256×64 0.996×).
    pub narrow_last_product: bool,
    /// In a causal ping-pong tile taller than its K/V blocks, each consumer warpgroup runs only the blocks its
    /// own 64 rows reach, handing the skipped blocks' ring slots back and taking empty turns so the ping-pong
    /// order holds. Needs NUM_STAGES >= the most blocks a consumer skips + 2 (the next tile's S_0 slot is
    /// refilled only once every consumer has handed back the slot NUM_STAGES before it). own-ab: +5.7% at
    /// HEAD_DIM 64 causal 1024 on 256×64×6.
    pub own_blocks: bool,
    /// The ping-pong tile computes its epilogue's l_i, 1/l_i and M = m_i + log2(l_i) under its last P·V, the
    /// reciprocal and log2 approximate and flush-to-zero (l_i >= 1). Derived at HEAD_DIM 128 (+0.4-2.7%,
    /// tileboundary-ab); 0.94-0.95× at HEAD_DIM 64 causal 1024.
    pub early_row_norm: bool,
    /// The forward's Q buffers in shared memory: a persistent kernel loads the next tile's Q during the current
    /// tile, into a second buffer, or into the one buffer once the consumers hold Q in registers
    /// (`q_from_registers`: they release it at the tile's start). 1 for every other kernel.
    pub q_buffers: u32,
    /// The programs per SM that ptxas must leave registers for (`.minnctapersm`). 1 everywhere by default: the
    /// tiles are sized for one program per SM, and without it ptxas may cap a 4-warp kernel at 128 registers
    /// and spill. The separate wgmma backward kernels may ask for more (the rules cap it by shared memory):
    /// at HEAD_DIM 64 they wait on every wgmma chain, so more resident programs hide more: derived 3 for
    /// dK/dV and 4 for dQ on their 64×64 four-warp two-stage tiles at HEAD_DIM 64 (+1.0-6.5% on the table's six D 64
    /// backward rows, 2026-12-02-ppsm-ab; ptxas: 168 and 124 registers, no spills), 1 elsewhere.
    pub programs_per_sm: u32,
    /// dK/dV programs each compute HEAD_DIM / column_splits of dK's and dV's columns (whole 64-column panels;
    /// the split is grid z), each recomputing Sᵀ and dPᵀ over the whole head: past HEAD_DIM 128, dK's and dV's
    /// f32 accumulators (HEAD_DIM per thread of a warpgroup) leave no registers for the rest. Derived: 1 to
    /// HEAD_DIM 128; past it the fewest whose accumulators fit the registers (the register estimate:
    /// `KernelSpec::fewest_column_splits`; D192: none on 16-row query blocks, else 3; D256: 2).
    pub column_splits: u32,
    /// bwd_fused_up's causal programs each run two key blocks, one after the other: program x the light
    /// block P - 1 - x, then the heavy block x (P blocks of keys per head, x < ceil(P / 2)), so that every
    /// program does the same work (P + 1 blocks' worth) and half as many programs fill the SMs evenly: the
    /// grid of one program per key block, launched light first (each query block's dQ additions go from its
    /// highest program down), leaves SMs idle at the end when there are few heads (GQA: B 1 × H_KV 8 × 32
    /// blocks = 256 programs, 60% busy by list scheduling; 97% folded). Each block's dQ order becomes the
    /// light halves' from the highest down, then the heavy halves' from program 0 up (one chain). The
    /// runtime folds a launch only when a head's programs fit on the GPU at once (ceil(P / 2) <= the SM
    /// count: a heavy half waits on the light half of a program launched after it) and the unfolded grid
    /// is short (`FOLD_BELOW_WAVES`: past it the folded kernel cost the table's rows of 2048 programs
    /// 1.5-4%; likely because a block's heavy halves meet it at the same step and wait in line for their
    /// turns), and launches the grid unfolded otherwise; the kernel reads which from its grid. Derived on for
    /// bwd_fused_up (but at HEAD_DIM 128 with 3 stages, where it spills).
    pub fold_key_blocks: bool,
    /// The decode kernel copies its full K/V blocks by TMA tensor boxes (sm_90: 64 columns × a block's rows,
    /// or × a page's run of rows when paged, 128B-swizzled into panels, onto a per-slot mbarrier, with an
    /// EVICT_FIRST L2 hint); the blocks that reach the new tokens keep cp.async. Under do_bench's flush (L2
    /// left dirty) the hint lets the stream's lines replace each other rather than the flush's (a raw
    /// 33.5 MB stream: 14.80 µs by bulk copies with the hint against cp.async's 15.84,
    /// 2026-12-04-decode-l2-probe). Its first form, a bulk copy per K or V row (2026-12-04-decode-bulk), won
    /// only there and lost in a model's loop and at batch 16 (a request per 256-byte row); boxes ask the
    /// TMA unit once per 8 KB: at batch 1 the do_bench step 20.26 → 19.13 µs on the H200 (a graph of 8
    /// layers' caches +0.9% there, −2.4% on an H100), but 0.5-4% lost at one split (H100): the plan takes
    /// them for calls that split their sequences (`plan::decode_tma_for`, 2026-12-05-tmakv).
    pub tma_kv: bool,
    /// The fused backward's dSᵀ tile passes between its two MMA warpgroups by a hand-over: each warpgroup
    /// announces (named barrier READ[w]) that it has waited for its dS·K of the step, and waits for the
    /// other's announcement before it stores its next rows, instead of a barrier of both warpgroups every
    /// step (which makes the faster one wait for the other's whole step). Both keep the one tile safe (its
    /// race found by the CPU emulator, 2026-12-05). Off until the GPU times it: the full barrier cost the
    /// backward 0-3% (2026-12-05-fixes-ab, with the key mask); not on a folded grid (ptxas spilled it at
    /// HEAD_DIM 96/128 causal).
    pub ds_handover: bool,
    /// The fused backward issues dV += Pᵀ·dO as soon as P is packed, a commit group of its own, so that it
    /// runs on the tensor cores under dS's packing, its store and the MMA warpgroups' barrier (FA3's order)
    /// instead of beside dK and dQ's part after the barrier. Derived on for bwd_fused_up at HEAD_DIM 128's
    /// tile: +1.3-5.3% there (MHA and GQA, H100, 2026-12-06-early-dv); off for bwd_fused (−10% on the GQA
    /// row at N 16384, ±1.5% elsewhere) and at HEAD_DIM 64 (−2 to −4% non-causal). The rest of FA3's
    /// overlap measured there too and left out: Sᵀ and dPᵀ as two groups (P under dPᵀ) 0.87-0.98× with
    /// 4-272 B of spills, dQ's part before dK and staged under it 0.98-1.01×, both with dV early 0.90-0.99×.
    pub early_dv: bool,
    /// The warp-specialized forward's K and V tiles of a block arrive and leave on barriers of their own
    /// (FA3's two pipelines): a consumer hands K_j back as soon as S_j has completed, V_j after P_j·V_j, so
    /// the producer refills K a step earlier than a shared slot allows. Ping-pong on two stages needs it
    /// (with one barrier per slot the producer waits for block j-1's P·V before it loads j+1): derived on
    /// for the wide K/V block (`WS_WIDE_BLOCK_N`, two stages fit), off elsewhere until timed; asked for on two
    /// stages it makes the tile ping-pong (HEAD_DIM 256's 128×64, where three stages do not fit).
    pub split_kv_ring: bool,
    /// The fused backward's programs run tile after tile (a tile: one key block of one K/V head), up to the
    /// SMs' count of them on grid x, tile t + programs after tile t, each tile's steps, ring slots and dQ
    /// staging turns counted on from the last (as `fold_key_blocks`'s second block): the writer warpgroup
    /// adds a tile's last dQ pieces while the MMA warpgroups load the next tile's K/V and start its steps,
    /// where a grid of one program per tile pays each program's start and end. The grid holds whole heads'
    /// key blocks (`KernelSpec::grid`), so a dQ chain waits only on programs of lower index in the same
    /// round, as the one-program-per-tile grid's do. bwd_fused and bwd_fused_atomic, non-causal, equal
    /// steps per tile (no packed sequences, no window). Derived off; the table's rows ask for it non-causal at
    /// HEAD_DIM 64 and 128 to 4096 tokens (ptiles).
    pub persistent_tiles: bool,
    /// The ordered fused backward's dQ sum pass starts while the kernel still runs (sm_90's programmatic
    /// dependent launch: every program triggers at its start) and sums each query block once its chains are
    /// complete: the kernel's last program of each chain hands the block on too, and the pass waits until
    /// every chain's lock shows its count of programs. It runs on the SMs the kernel leaves free (a
    /// persistent grid's spare SMs, the tail of the last wave) and reads the partial sums while the L2
    /// still holds them, where a pass after the kernel costs its whole DRAM time (16-17% of the backward at
    /// N 1024, bwd-parts). Derived on for bwd_fused and bwd_fused_up (H100, 2026-12-07-dqfollow: +2-2.4%
    /// non-causal at 4096, +1.5-4.6% causal at 1024 / 4096, neutral elsewhere); bwd_fused_atomic has no locks.
    pub dq_sum_follows: bool,
    /// The following dQ sum pass (`dq_sum_follows`) takes the blocks in the order a persistent grid
    /// (`persistent_tiles`) completes them: round by round (a round: the heads whose key blocks the grid's
    /// programs hold at once), in a round step by step (the blocks every program meets at that step), and
    /// at a step across the round's heads. In head order (off), the CTAs the few spare SMs hold wait on a
    /// head whose first block completes only at its round's end, while the round's other heads' blocks
    /// complete unsummed behind them (non-causal N 1024 gained nothing from `dq_sum_follows`). Derived off
    /// until timed.
    pub dq_sum_rounds: bool,
    /// A persistent fused program (`persistent_tiles`) prefetches its next tile's K and V rows into the L2
    /// when it starts a tile (cp.async.bulk.prefetch, a row a thread), so that the next tile's K/V copy,
    /// which every program of a round issues at once at the tile's start and waits for before its first
    /// step, reads the L2 instead of DRAM. Derived off until timed.
    pub prefetch_next_tile: bool,
    /// The fused backward's dK and dV leave through shared memory: each thread's accumulator fragments (4 bytes
    /// a row per n8 tile, 16 bytes apart) go into the K and V tiles, free once every MMA warp has passed its
    /// last product, and the copy lanes store them in whole 16-byte chunks, a row's bytes contiguous across
    /// threads. ncu at D128 causal N 1024 (bwd_fused_up): the fragment stores' LSU queue (lg throttle) held
    /// 12.5% of the kernel's stall samples. Derived on for the fused kinds (staged-ep).
    pub staged_epilogue: bool,
    /// A persistent fused program (`persistent_tiles`) with a staged epilogue stages dK/dV in the Q/dO
    /// ring's free slots instead of the K/V tiles, and issues its next tile's K/V copy (and, where one slot
    /// holds both staged tiles, the ring's first blocks) before it stores them: the next tile's loads land
    /// under this tile's epilogue instead of after it (ncu-bwd-epilogue: the tile's prologue, K/V's copy and
    /// the ring's first block waited for together, 8.6-10.2% of the MMA warps' stall samples at N 1024).
    /// Derived off: +0-1.4% on today's tiles (early-tile, H100 and H200); with a 3-stage ring at D128
    /// non-causal +2.5-5.5% at N 1024 (ring3), a candidate for those rows.
    pub early_next_tile: bool,
}

/// Which switches a caller sets explicitly; `None` takes the derived value. Written and parsed as
/// `name=on|off|N,...` (`q_buffers=2`), in the kernel's name as `_<tag><0|1|N>` per override.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ScheduleOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_from_registers: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lazy_rescale: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_block_softmax: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_tile: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single_tail: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrow_last_product: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_blocks: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_row_norm: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_buffers: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_per_sm: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column_splits: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fold_key_blocks: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tma_kv: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ds_handover: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_kv_ring: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_dv: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_tiles: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dq_sum_follows: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dq_sum_rounds: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefetch_next_tile: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub staged_epilogue: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_next_tile: Option<bool>,
}

/// One switch: its name (the field's, on the CLI), its tag in kernel names, and how to read and write it.
struct Switch {
    name: &'static str,
    tag: &'static str,
    get: fn(&ScheduleOverrides) -> Option<u32>,
    set: fn(&mut ScheduleOverrides, u32),
}

/// The switches in resolution order: a switch's derived value may depend on the ones before it.
const SWITCHES: [Switch; 22] = [
    Switch { name: "q_from_registers", tag: "qreg", get: |o| o.q_from_registers.map(u32::from), set: |o, v| o.q_from_registers = Some(v != 0) },
    Switch { name: "lazy_rescale", tag: "lazy", get: |o| o.lazy_rescale.map(u32::from), set: |o, v| o.lazy_rescale = Some(v != 0) },
    Switch { name: "half_block_softmax", tag: "halfsm", get: |o| o.half_block_softmax.map(u32::from), set: |o, v| o.half_block_softmax = Some(v != 0) },
    Switch { name: "cross_tile", tag: "xtile", get: |o| o.cross_tile.map(u32::from), set: |o, v| o.cross_tile = Some(v != 0) },
    Switch { name: "single_tail", tag: "onetail", get: |o| o.single_tail.map(u32::from), set: |o, v| o.single_tail = Some(v != 0) },
    Switch { name: "narrow_last_product", tag: "narrowpv", get: |o| o.narrow_last_product.map(u32::from), set: |o, v| o.narrow_last_product = Some(v != 0) },
    Switch { name: "own_blocks", tag: "own", get: |o| o.own_blocks.map(u32::from), set: |o, v| o.own_blocks = Some(v != 0) },
    Switch { name: "early_row_norm", tag: "earlynorm", get: |o| o.early_row_norm.map(u32::from), set: |o, v| o.early_row_norm = Some(v != 0) },
    Switch { name: "q_buffers", tag: "qbuf", get: |o| o.q_buffers, set: |o, v| o.q_buffers = Some(v) },
    Switch { name: "programs_per_sm", tag: "ctas", get: |o| o.programs_per_sm, set: |o, v| o.programs_per_sm = Some(v) },
    Switch { name: "column_splits", tag: "colsplit", get: |o| o.column_splits, set: |o, v| o.column_splits = Some(v) },
    Switch { name: "fold_key_blocks", tag: "fold", get: |o| o.fold_key_blocks.map(u32::from), set: |o, v| o.fold_key_blocks = Some(v != 0) },
    Switch { name: "tma_kv", tag: "tma", get: |o| o.tma_kv.map(u32::from), set: |o, v| o.tma_kv = Some(v != 0) },
    Switch { name: "ds_handover", tag: "dshand", get: |o| o.ds_handover.map(u32::from), set: |o, v| o.ds_handover = Some(v != 0) },
    Switch { name: "split_kv_ring", tag: "kvsplit", get: |o| o.split_kv_ring.map(u32::from), set: |o, v| o.split_kv_ring = Some(v != 0) },
    Switch { name: "early_dv", tag: "edv", get: |o| o.early_dv.map(u32::from), set: |o, v| o.early_dv = Some(v != 0) },
    Switch { name: "persistent_tiles", tag: "ptile", get: |o| o.persistent_tiles.map(u32::from), set: |o, v| o.persistent_tiles = Some(v != 0) },
    Switch { name: "dq_sum_follows", tag: "dqf", get: |o| o.dq_sum_follows.map(u32::from), set: |o, v| o.dq_sum_follows = Some(v != 0) },
    Switch { name: "dq_sum_rounds", tag: "dqr", get: |o| o.dq_sum_rounds.map(u32::from), set: |o, v| o.dq_sum_rounds = Some(v != 0) },
    Switch { name: "prefetch_next_tile", tag: "pft", get: |o| o.prefetch_next_tile.map(u32::from), set: |o, v| o.prefetch_next_tile = Some(v != 0) },
    Switch { name: "staged_epilogue", tag: "sep", get: |o| o.staged_epilogue.map(u32::from), set: |o, v| o.staged_epilogue = Some(v != 0) },
    Switch { name: "early_next_tile", tag: "ent", get: |o| o.early_next_tile.map(u32::from), set: |o, v| o.early_next_tile = Some(v != 0) },
];

/// The switches that take a number rather than on/off.
fn numeric(name: &str) -> bool {
    matches!(name, "q_buffers" | "programs_per_sm" | "column_splits")
}

impl ScheduleOverrides {
    /// No override: every switch derived.
    pub const NONE: ScheduleOverrides = ScheduleOverrides {
        q_from_registers: None,
        lazy_rescale: None,
        half_block_softmax: None,
        cross_tile: None,
        single_tail: None,
        narrow_last_product: None,
        own_blocks: None,
        early_row_norm: None,
        q_buffers: None,
        programs_per_sm: None,
        column_splits: None,
        fold_key_blocks: None,
        tma_kv: None,
        ds_handover: None,
        split_kv_ring: None,
        early_dv: None,
        persistent_tiles: None,
        dq_sum_follows: None,
        dq_sum_rounds: None,
        prefetch_next_tile: None,
        staged_epilogue: None,
        early_next_tile: None,
    };

    pub fn is_empty(&self) -> bool {
        *self == ScheduleOverrides::NONE
    }

    /// The names of the switches, in order (for help texts and errors).
    pub fn names() -> Vec<&'static str> {
        SWITCHES.iter().map(|s| s.name).collect()
    }

    /// Parse `name=value,...`: value on/off/true/false/1/0 for the switches, a number for q_buffers.
    pub fn parse(text: &str) -> Result<ScheduleOverrides, SpecError> {
        let mut out = ScheduleOverrides::NONE;
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (name, value) = item
                .split_once('=')
                .ok_or_else(|| SpecError(format!("schedule item `{item}` is not name=value: write e.g. lazy_rescale=off")))?;
            let switch = SWITCHES
                .iter()
                .find(|s| s.name == name.trim())
                .ok_or_else(|| SpecError(format!("schedule switch `{}` is unknown: use one of {}", name.trim(), ScheduleOverrides::names().join(", "))))?;
            let value = match (switch.name, value.trim()) {
                ("q_buffers", v) => v.parse::<u32>().map_err(|_| SpecError(format!("q_buffers={v}: give a number of Q buffers (1 or 2)")))?,
                ("programs_per_sm", v) => v.parse::<u32>().map_err(|_| SpecError(format!("programs_per_sm={v}: give a number of programs (1 to 4)")))?,
                ("column_splits", v) => v.parse::<u32>().map_err(|_| SpecError(format!("column_splits={v}: give a number of splits of HEAD_DIM (1 to 4)")))?,
                (_, "on" | "true" | "1") => 1,
                (_, "off" | "false" | "0") => 0,
                (n, v) => return Err(SpecError(format!("{n}={v}: use on or off"))),
            };
            if (switch.get)(&out).is_some() {
                return Err(SpecError(format!("schedule switch `{}` is given twice", switch.name)));
            }
            (switch.set)(&mut out, value);
        }
        Ok(out)
    }

    /// These overrides, and `base`'s where these leave a switch derived.
    pub fn over(&self, base: &ScheduleOverrides) -> ScheduleOverrides {
        let mut out = *base;
        for s in &SWITCHES {
            if let Some(v) = (s.get)(self) {
                (s.set)(&mut out, v);
            }
        }
        out
    }

    /// The overrides as a kernel-name suffix: `_lazy0_qbuf2` (empty without overrides).
    pub fn name_suffix(&self) -> String {
        SWITCHES.iter().filter_map(|s| (s.get)(self).map(|v| format!("_{}{v}", s.tag))).collect()
    }
}

impl std::fmt::Display for ScheduleOverrides {
    /// `lazy_rescale=off,q_buffers=2`, the form `parse` reads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let items: Vec<String> = SWITCHES
            .iter()
            .filter_map(|s| {
                (s.get)(self).map(|v| match numeric(s.name) {
                    true => format!("{}={v}", s.name),
                    false => format!("{}={}", s.name, if v != 0 { "on" } else { "off" }),
                })
            })
            .collect();
        f.write_str(&items.join(","))
    }
}

/// What a spec's switches are derived from: its parameters and the structure of its kind.
pub(crate) struct Shape {
    pub params: SpecParams,
    /// fwd_ws's consumers take turns on the tensor cores (ping-pong; 3+ stages).
    pub ping_pong: bool,
    pub consumer_warpgroups: u32,
    /// The derived column_splits (1 but for the separate dK/dV kernels: `KernelSpec::fewest_column_splits`).
    pub column_splits: u32,
}

fn rule(ok: bool, msg: impl FnOnce() -> String) -> Result<(), SpecError> {
    if ok {
        Ok(())
    } else {
        Err(SpecError(msg()))
    }
}

impl Schedule {
    /// Every switch off, one Q buffer: what the kinds without switches run.
    pub const PLAIN: Schedule = Schedule {
        q_from_registers: false,
        lazy_rescale: false,
        half_block_softmax: false,
        cross_tile: false,
        single_tail: false,
        narrow_last_product: false,
        own_blocks: false,
        early_row_norm: false,
        q_buffers: 1,
        programs_per_sm: 1,
        column_splits: 1,
        fold_key_blocks: false,
        tma_kv: false,
        ds_handover: false,
        split_kv_ring: false,
        early_dv: false,
        persistent_tiles: false,
        dq_sum_follows: false,
        dq_sum_rounds: false,
        prefetch_next_tile: false,
        staged_epilogue: false,
        early_next_tile: false,
    };

    /// Resolve `overrides` against the derived values, switch by switch in order, checking each switch that
    /// ends up on against what the templates support. Returns the schedule and the canonical overrides
    /// (those that differ from what would be derived).
    pub(crate) fn resolve(shape: &Shape, overrides: &ScheduleOverrides) -> Result<(Schedule, ScheduleOverrides), SpecError> {
        let p = &shape.params;
        let kind = p.kind.name();
        let causal = p.stage == 3;
        let persistent = p.kind == KernelKind::FwdWsPersistent;
        let pp = shape.ping_pong;
        let mut s = Schedule::PLAIN;
        let mut canonical = ScheduleOverrides::NONE;
        // take the override or the derived value; keep the override only where it differs
        macro_rules! decide {
            ($field:ident, $derived:expr) => {{
                let derived = $derived;
                s.$field = overrides.$field.unwrap_or(derived);
                if s.$field != derived {
                    canonical.$field = Some(s.$field);
                }
            }};
        }
        let pingpong_only = |name: &str, on: bool| {
            rule(!on || pp, || format!("{kind}: {name}=on needs the ping-pong tile (fwd_ws or fwd_ws_persistent with num_stages >= 3, or 2 with split_kv_ring=on)"))
        };

        // (HEAD_DIM 256: Q's 64 registers and O's 128 leave too few for S; 128×32×3 spilled; nor beside the
        // wide block's S, as FA3's 128×176 reads Q from shared memory)
        decide!(q_from_registers, pp && shape.consumer_warpgroups == 2 && p.tile_dim() <= 192 && !p.wide_kv_block());
        pingpong_only("q_from_registers", s.q_from_registers)?;
        rule(!s.q_from_registers || shape.consumer_warpgroups == 2, || {
            format!("{kind}: q_from_registers=on needs two consumer warpgroups (num_warps=12): with {} Q's HEAD_DIM/4 registers per thread do not fit beside the accumulators", shape.consumer_warpgroups)
        })?;

        decide!(lazy_rescale, pp && (shape.consumer_warpgroups >= 3 || p.tile_dim() >= 128));
        pingpong_only("lazy_rescale", s.lazy_rescale)?;

        decide!(half_block_softmax, pp && causal && !s.lazy_rescale);
        pingpong_only("half_block_softmax", s.half_block_softmax)?;
        rule(!s.half_block_softmax || (causal && !s.lazy_rescale), || {
            format!("{kind}: half_block_softmax=on is a causal eager-softmax switch: it needs STAGE=3 and lazy_rescale=off")
        })?;

        decide!(cross_tile, persistent);
        rule(!s.cross_tile || persistent, || format!("{kind}: cross_tile=on needs the persistent forward (fwd_ws_persistent)"))?;

        decide!(single_tail, s.cross_tile && p.tile_dim() >= 128);
        rule(!s.single_tail || s.cross_tile, || format!("{kind}: single_tail=on needs cross_tile=on (fwd_ws_persistent)"))?;

        decide!(narrow_last_product, pp && causal && p.block_m == p.block_n);
        pingpong_only("narrow_last_product", s.narrow_last_product)?;
        rule(!s.narrow_last_product || causal, || format!("{kind}: narrow_last_product=on needs STAGE=3 (only a causal diagonal block has a masked half)"))?;

        let most_skipped = if p.block_m > 64 && p.block_n > 0 { (p.block_m - 64).div_ceil(p.block_n) } else { 0 };
        let own_fits = pp && causal && p.block_m > p.block_n && p.num_stages >= most_skipped + 2;
        decide!(own_blocks, own_fits);
        rule(!s.own_blocks || own_fits, || {
            format!(
                "{kind}: own_blocks=on needs the causal ping-pong tile taller than its K/V blocks (STAGE=3, BLOCK_M > BLOCK_N) and num_stages >= {} (the most blocks a consumer skips + 2, so that a skipping consumer never waits for the next tile's slot before its own last release)",
                most_skipped + 2
            )
        })?;

        decide!(early_row_norm, pp && p.tile_dim() >= 128);
        pingpong_only("early_row_norm", s.early_row_norm)?;

        decide!(q_buffers, if persistent && !s.q_from_registers { 2 } else { 1 });
        rule(s.q_buffers == 1 || (persistent && s.q_buffers == 2), || {
            format!("{kind}: q_buffers={} is not supported: use 1, or 2 on fwd_ws_persistent (the next tile's Q loads into the second buffer)", s.q_buffers)
        })?;
        rule(s.q_buffers == 2 || !persistent || s.q_from_registers, || {
            format!("{kind}: q_buffers=1 needs q_from_registers=on: a persistent consumer that reads Q from shared memory holds its buffer until its tile's last S, so the next tile's Q needs a second one")
        })?;

        // (shared memory caps it too: rules.rs, once the spec's footprint is known)
        let separate_wgmma_backward = matches!(p.kind, KernelKind::BwdDkdvWgmma | KernelKind::BwdDqWgmma);
        let measured_tile = p.tile_dim() == 64 && p.num_warps == 4 && p.num_stages == 2 && p.block_m == 64 && p.block_n == 64;
        decide!(programs_per_sm, match p.kind {
            KernelKind::BwdDkdvWgmma if measured_tile => 3,
            KernelKind::BwdDqWgmma if measured_tile => 4,
            _ => 1,
        });
        rule((1..=4).contains(&s.programs_per_sm), || format!("{kind}: programs_per_sm={}: use 1 to 4", s.programs_per_sm))?;
        rule(s.programs_per_sm == 1 || separate_wgmma_backward, || {
            format!("{kind}: programs_per_sm={} is for the separate wgmma backward kernels (bwd_dkdv_wgmma, bwd_dq_wgmma); the others' tiles are sized for one program per SM", s.programs_per_sm)
        })?;

        let separate_dkdv = matches!(p.kind, KernelKind::BwdDkdv | KernelKind::BwdDkdvWgmma);
        let d = p.tile_dim();
        decide!(column_splits, shape.column_splits);
        rule(s.column_splits == 1 || separate_dkdv, || format!("{kind}: column_splits={} is for the separate dK/dV kernels (bwd_dkdv, bwd_dkdv_wgmma)", s.column_splits))?;
        rule((1..=4).contains(&s.column_splits) && d % (64 * s.column_splits) == 0, || {
            format!("{kind}: column_splits={} must split HEAD_DIM={d} into whole 64-column panels: use one of {:?}", s.column_splits, (1..=4).filter(|s| d % (64 * s) == 0).collect::<Vec<_>>())
        })?;

        let up = p.kind == KernelKind::BwdFusedUp;
        // (the folded MMA warpgroups hold one more value through the loop: at HEAD_DIM 128 with a 3-slot
        // ring, ptxas spills 8 B of them)
        let fold_fits = p.num_stages == 2 || p.tile_dim() < 128;
        decide!(fold_key_blocks, up && fold_fits);
        rule(!s.fold_key_blocks || up, || format!("{kind}: fold_key_blocks=on is for bwd_fused_up (its causal programs' order of dQ additions)"))?;
        rule(!s.fold_key_blocks || fold_fits, || format!("{kind}: fold_key_blocks=on at HEAD_DIM {} needs num_stages=2 (with {} the folded kernel's registers spill)", p.tile_dim(), p.num_stages))?;

        decide!(tma_kv, false);
        rule(!s.tma_kv, || format!("{kind}: tma_kv=on is for the decode kernel (its K/V copies)"))?;

        // (one MMA warpgroup reads only the rows it wrote, in its own order: nothing to hand over)
        let two_mma_warpgroups = p.kind.fuses_dq() && p.num_warps == 12;
        decide!(ds_handover, false);
        rule(!s.ds_handover || two_mma_warpgroups, || format!("{kind}: ds_handover=on is for the fused backward with two MMA warpgroups (num_warps=12)"))?;
        rule(!s.ds_handover || !s.fold_key_blocks, || format!("{kind}: ds_handover=on with a folded grid spills the MMA warpgroups' registers: use fold_key_blocks=off"))?;

        decide!(early_dv, up && p.tile_dim() == 128);
        rule(!s.early_dv || p.kind.fuses_dq(), || format!("{kind}: early_dv=on is for the fused backward (bwd_fused, bwd_fused_up, bwd_fused_atomic)"))?;
        // (HEAD_DIM 64's 128-row tile holds P twice with it: 32 B spilled with softcap, and 2-4% slower where
        // it did not spill)
        rule(!s.early_dv || p.tile_dim() == 128, || format!("{kind}: early_dv=on at HEAD_DIM {} spills or slows HEAD_DIM 64's 128-row tile: it is for HEAD_DIM 96 and 128", p.head_dim))?;

        // (two stages of a block wider than 128 keys: only the split ring runs them in ping-pong)
        let wide = p.wide_kv_block();
        decide!(split_kv_ring, pp && wide);
        pingpong_only("split_kv_ring", s.split_kv_ring)?;
        rule(s.split_kv_ring || !wide || !pp, || format!("{kind}: split_kv_ring=off at BLOCK_N={}: two stages of a block that wide run only on the split ring", p.block_n))?;
        rule(!s.split_kv_ring || !s.own_blocks, || format!("{kind}: split_kv_ring=on with own_blocks=on: a consumer's skipped blocks hand back one barrier per slot; use own_blocks=off"))?;
        // (the causal persistent tile past HEAD_DIM 64 holds the diagonal's values beside V's waits: ptxas
        // spilled 4 B at 96 and 128)
        rule(!(s.split_kv_ring && persistent && causal && p.tile_dim() > 64), || {
            format!("{kind}: split_kv_ring=on on causal tiles at HEAD_DIM {} spills the consumers' registers (4 B): use fwd_ws, or split_kv_ring=off", p.head_dim)
        })?;

        // (packed sequences and windows, which give tiles different steps, are refused in rules.rs)
        decide!(persistent_tiles, false);
        let down_order = matches!(p.kind, KernelKind::BwdFused | KernelKind::BwdFusedAtomic);
        rule(!s.persistent_tiles || (down_order && !causal), || {
            format!("{kind}: persistent_tiles=on is for the non-causal fused backward (bwd_fused, bwd_fused_atomic with STAGE=1), whose tiles all take the same steps")
        })?;
        rule(!s.persistent_tiles || !s.ds_handover, || format!("{kind}: persistent_tiles=on with ds_handover=on is not built: use ds_handover=off"))?;

        let ordered_fused = matches!(p.kind, KernelKind::BwdFused | KernelKind::BwdFusedUp);
        decide!(dq_sum_follows, ordered_fused);
        rule(!s.dq_sum_follows || ordered_fused, || {
            format!("{kind}: dq_sum_follows=on is for the ordered fused backward (bwd_fused, bwd_fused_up), whose locks tell the sum pass when a block is complete")
        })?;

        decide!(dq_sum_rounds, false);
        rule(!s.dq_sum_rounds || (s.dq_sum_follows && s.persistent_tiles), || {
            format!("{kind}: dq_sum_rounds=on orders a following sum pass by a persistent grid's rounds: it needs dq_sum_follows=on and persistent_tiles=on")
        })?;

        decide!(prefetch_next_tile, false);
        rule(!s.prefetch_next_tile || s.persistent_tiles, || format!("{kind}: prefetch_next_tile=on is for a persistent fused grid's programs (they know their next tile): it needs persistent_tiles=on"))?;

        // (staged-ep, H100: +4-11% on the short rows, +0-4% from 4096, GQA causal 0.99-1.00)
        decide!(staged_epilogue, p.kind.fuses_dq());
        rule(!s.staged_epilogue || p.kind.fuses_dq(), || format!("{kind}: staged_epilogue=on is for the fused backward (bwd_fused, bwd_fused_up, bwd_fused_atomic), whose dK/dV take the K/V tiles' place"))?;

        decide!(early_next_tile, false);
        rule(!s.early_next_tile || (s.persistent_tiles && s.staged_epilogue), || {
            format!("{kind}: early_next_tile=on loads a persistent program's next tile under its staged epilogue: it needs persistent_tiles=on and staged_epilogue=on")
        })?;
        // (dK and dV staged in the ring: both in one slot's Q/dO area, or one a slot in two; no fused tile
        // admitted today is taller: BLOCK_M >= 64, BLOCK_N <= 128, 2+ stages)
        rule(!s.early_next_tile || p.block_n <= p.block_m || (p.block_n <= 2 * p.block_m && p.num_stages >= 2), || {
            format!("{kind}: early_next_tile=on stages dK/dV in the ring's slots: BLOCK_N={} needs BLOCK_N <= BLOCK_M, or <= 2 * BLOCK_M with num_stages >= 2 (BLOCK_M={}, num_stages={})", p.block_n, p.block_m, p.num_stages)
        })?;
        Ok((s, canonical))
    }
}
