//! The rules: `KernelSpec::with_schedule` (and `KernelSpec::new`, without overrides) is the one validation
//! point. Each rule names the parameter, the limit, why it exists and how to fix it.

use super::schedule::{Schedule, ScheduleOverrides, Shape};
use super::types::*;
use super::{Features, KernelSpec};

pub(crate) fn rule(ok: bool, msg: impl FnOnce() -> String) -> Result<(), SpecError> {
    if ok {
        Ok(())
    } else {
        Err(SpecError(msg()))
    }
}

/// A kind that takes only dtype, HEAD_DIM and arch (bwd_pre, decode_combine): `p` must be its `canonical`
/// spec, made by `KernelSpec::{constructor}`; `why` says why the other parameters do not apply.
pub(crate) fn only_canonical(p: SpecParams, canonical: KernelSpec, why: &str, constructor: &str) -> Result<KernelSpec, SpecError> {
    rule(p == canonical.params, || {
        let c = canonical.params;
        format!(
            "{} takes only dtype, HEAD_DIM and arch ({why}): use BLOCK_M={} BLOCK_N={} STAGE={} num_warps={} num_stages={} (KernelSpec::{constructor})",
            p.kind.name(),
            c.block_m,
            c.block_n,
            c.stage,
            c.num_warps,
            c.num_stages
        )
    })?;
    Ok(canonical)
}

impl KernelSpec {
    /// A spec with every schedule switch derived (see `with_schedule`).
    pub fn new(p: SpecParams) -> Result<KernelSpec, SpecError> {
        KernelSpec::with_schedule(p, ScheduleOverrides::NONE)
    }

    /// `with_schedule` for a kernel with `features` (packed sequences, rows that see no key). The
    /// preprocess computes Δ row by row, so only the layout of its rows (varlen) concerns it.
    pub fn with_features(p: SpecParams, overrides: ScheduleOverrides, features: Features) -> Result<KernelSpec, SpecError> {
        let spec = KernelSpec::with_schedule(p, overrides)?;
        // rows see no key only under a causal mask (a non-causal row sees every key of its sequence, or, in
        // a packed sequence without keys, none: a tile without blocks, which `varlen` handles); Δ is
        // computed row by row, so only the layout of its rows (varlen) concerns the preprocess
        // (a window's left bound can leave rows without keys in a non-causal kernel too, and a tile's first
        // block can hold no key of its later rows: a window always takes the guard)
        // (Δ is computed row by row: only the layout of its rows, varlen, concerns the preprocess)
        // V's head dim: narrower than Q's and K's, whole 16-byte chunks (it is the tiles' zero-filled share)
        let features = Features { value_dim: features.value_dim.filter(|&dv| dv != p.head_dim), ..features };
        if let Some(dv) = features.value_dim {
            rule(dv > 0 && dv < p.head_dim && dv % 8 == 0, || {
                format!("a value head dim of {dv} with HEAD_DIM={}: V's must be a positive multiple of 8 below Q's and K's (the tiles are HEAD_DIM wide, V's columns past its own zero)", p.head_dim)
            })?;
            rule(!p.kind.decodes(), || format!("{}: the decode kernels take V as wide as K", p.kind.name()))?;
            // (a dK/dV column slice is wholly V's or wholly past it: the latter stores no dV)
            // (a column warpgroup's piece is wholly V's or wholly past it)
            let cw = spec.column_warpgroups();
            let straddles = spec.column_pieces().iter().any(|c| (0..cw).map(|w| c.first + w * c.stride).any(|first| first < dv && dv < first + c.columns));
            rule(!straddles, || {
                format!("{}: a value head dim of {dv} ends inside a column warpgroup's columns of dK and dV (HEAD_DIM={}, {} columns each): use num_warps=4", p.kind.name(), p.head_dim, spec.output_columns())
            })?;
            rule(cw > 1 || spec.column_splits() == 1 || dv % spec.output_columns() == 0, || {
                format!("{}: a value head dim of {dv} in dK/dV column slices of {} columns (HEAD_DIM={} in {}): V's must be a whole number of slices; use column_splits=1 or a V of a multiple of {} columns", p.kind.name(), spec.output_columns(), p.head_dim, spec.column_splits(), spec.output_columns())
            })?;
        }
        if p.kind == KernelKind::BwdPre {
            return Ok(KernelSpec { features: Features { varlen: features.varlen, value_dim: features.value_dim, ..Features::NONE }, ..spec });
        }
        // (a mask_mod may leave any row without keys, as a window may)
        let masked_by_mod = features.modifiers.is_some_and(|m| m.mask().is_some());
        let empty_rows = (features.empty_rows && p.stage == 3) || features.window || masked_by_mod;
        let features = Features { empty_rows, ..features };
        let mut spec = spec;
        if (features.softcap || features.modifiers.is_some()) && spec.overrides.programs_per_sm.is_none() && !p.kind.decodes() {
            // (softcap keeps tanh(S) for dS's derivative, a score_mod its derivative and a mask_mod its
            // element code: the D64 pair spills at 3-4 programs' registers, not at 2)
            spec.schedule.programs_per_sm = spec.schedule.programs_per_sm.min(2);
        }
        // windows, softcap and modifiers live in the ping-pong consumer (lib/pingpong.ll.tera) of the
        // warp-specialized forward and in the separate wgmma backward pair; softcap and a score_mod also in
        // the fused backward (where its wait names Sᵀ, as the pair's dK/dV kernel)
        let takes_them = (p.kind == KernelKind::FwdWs && spec.ping_pong()) || matches!(p.kind, KernelKind::BwdDkdvWgmma | KernelKind::BwdDqWgmma);
        let fused = p.kind.fuses_dq();
        // (bwd_fused_up takes a causal window: its key blocks visit the window's query blocks, `seq::q_blocks`;
        // fixed lengths or packed)
        let window_fused = p.kind == KernelKind::BwdFusedUp && p.stage == 3;
        // (fwd_ws_persistent takes a window on its cross-tile consumers: each tile's blocks from its first row's
        // first key's, `seq::kv_blocks`)
        let window_persistent = p.kind == KernelKind::FwdWsPersistent && spec.cross_tile();
        // (the mma.sync kernels, every target's: windows, softcap and modifiers)
        let mma_sync = matches!(p.kind, KernelKind::Fwd | KernelKind::BwdDkdv | KernelKind::BwdDq);
        for (on, what, also) in [(features.window, "a sliding window", window_fused || window_persistent || mma_sync), (features.softcap, "softcap", fused || mma_sync)] {
            rule(!on || takes_them || also || p.kind == KernelKind::Decode, || {
                format!("{what} is built into fwd_ws with ping-pong consumers (NUM_STAGES >= 3), fwd_ws_persistent with cross_tile (a window), the backward's bwd_dkdv_wgmma / bwd_dq_wgmma, decode, the mma.sync kernels (fwd, bwd_dkdv, bwd_dq), the fused backward (softcap) and (a causal window) bwd_fused_up only, not into {} with NUM_STAGES={}: plan the kernels with `flashgen::plan`", p.kind.name(), p.num_stages)
            })?;
        }
        // (the mma.sync kernels at HEAD_DIM 128 and up, softcap on causal packed sequences: the forward with 32
        // query rows a warp spills 28-32 B of its 255 registers, bwd_dkdv on 32-row query blocks 8-12 B; with 16
        // rows, none)
        let softcap_packed_causal = features.softcap && features.varlen && p.stage == 3 && p.tile_dim() >= 128;
        rule(!(softcap_packed_causal && p.kind == KernelKind::Fwd && spec.rows_per_warp() >= 32), || {
            format!("fwd: softcap on causal packed sequences with {} query rows a warp (BLOCK_M={}, num_warps={}) at HEAD_DIM={} spills its registers: use 16 rows a warp (num_warps = BLOCK_M / 16; the plan's tile for it, defaults::MODIFIED_TILES)", spec.rows_per_warp(), p.block_m, p.num_warps, p.head_dim)
        })?;
        rule(!(softcap_packed_causal && p.kind == KernelKind::BwdDkdv && p.block_m >= 32), || {
            format!("bwd_dkdv: softcap on causal packed sequences on {}-row query blocks at HEAD_DIM={} spills its registers: use BLOCK_M=16 (the plan's tile for it, defaults::MODIFIED_TILES)", p.block_m, p.head_dim)
        })?;
        // (and with a score_mod (ALiBi): the forward on packed sequences with 32 rows a warp 32 B, bwd_dkdv
        // non-causal on 32-row query blocks 4 B; 16 rows, none)
        let score_mod_wide = features.modifiers.is_some_and(|m| m.score().is_some()) && p.tile_dim() >= 128;
        rule(!(score_mod_wide && features.varlen && p.kind == KernelKind::Fwd && spec.rows_per_warp() >= 32), || {
            format!("fwd: a score_mod on packed sequences with {} query rows a warp (BLOCK_M={}, num_warps={}) at HEAD_DIM={} spills its registers: use 16 rows a warp (num_warps = BLOCK_M / 16; the plan's tile for it, defaults::MODIFIED_TILES)", spec.rows_per_warp(), p.block_m, p.num_warps, p.head_dim)
        })?;
        rule(!(score_mod_wide && p.stage == 1 && p.kind == KernelKind::BwdDkdv && p.block_m >= 32), || {
            format!("bwd_dkdv: a score_mod (non-causal) on {}-row query blocks at HEAD_DIM={} spills its registers: use BLOCK_M=16 (the plan's tile for it, defaults::MODIFIED_TILES)", p.block_m, p.head_dim)
        })?;
        // (the wide K/V block with modifiers on packed sequences: the consumers spilled 8 B)
        rule(!(p.block_n == WS_WIDE_BLOCK_N && features.varlen && features.modifiers.is_some()), || {
            format!("{}: BLOCK_N={} with a score_mod or mask_mod on packed sequences spills its registers: use BLOCK_N=128", p.kind.name(), p.block_n)
        })?;
        // (bwd_fused, causal, on packed sequences at HEAD_DIM 64's 128-row query blocks: ptxas spills 8 B of
        // its MMA registers; the plan runs causal on bwd_fused_up, which does not)
        rule(!(p.kind == KernelKind::BwdFused && p.stage == 3 && features.varlen && spec.dq_splits_rows()), || {
            format!("{}: causal packed sequences on 128-row query blocks (HEAD_DIM 64) spill its registers: use bwd_fused_up (the plan's causal fused kernel) or BLOCK_M=64", p.kind.name())
        })?;
        // a folded grid takes neither a score_mod (its phase state beside the score_mod's indices and the masks
        // of the keys and queries past the sequence spill 4-8 B of bwd_fused_up's MMA registers; unfolded,
        // none) nor a window (its order of dQ additions counts on every program from 0 to a block's highest
        // meeting it; a window's blocks meet only the programs of their keys), nor packed sequences at the
        // padded HEAD_DIM 32 and 96 (the dQ writer's 24 registers spill 4 B there since their products and
        // pieces run the real columns: real-n, d32-dq)
        let score_mod = features.modifiers.is_some_and(|m| m.score().is_some());
        let unfold_for = if score_mod {
            Some("with a score_mod spills the MMA warpgroups' registers")
        } else if features.varlen && p.head_dim % 64 != 0 {
            Some("on packed sequences at HEAD_DIM 32 and 96 spills the dQ writer's registers")
        } else if features.window {
            Some("with a sliding window: the folded order of dQ additions needs every key block up to the diagonal to meet a query block")
        } else {
            None
        };
        // (the hand-over's barrier ids beside a score_mod's indices spill 32 B of bwd_fused_atomic's MMA registers
        // at HEAD_DIM 96/128, and of bwd_fused's at 96 since its Q·Kᵀ runs 6 k16 steps (real-columns); bwd_fused
        // at 128 and bwd_fused_up, none)
        let spills = p.kind == KernelKind::BwdFusedAtomic || (p.kind == KernelKind::BwdFused && p.head_dim == 96);
        rule(!(spec.schedule.ds_handover && score_mod && spills), || {
            format!("{}: ds_handover=on with a score_mod spills the MMA warpgroups' registers at HEAD_DIM {}: use ds_handover=off", p.kind.name(), p.head_dim)
        })?;
        if let (Some(why), true) = (unfold_for, spec.schedule.fold_key_blocks) {
            // (the caller's switches: one equal to the derived value is dropped from the spec's)
            rule(overrides.fold_key_blocks != Some(true), || format!("{}: fold_key_blocks=on {why}; use fold_key_blocks=off", p.kind.name()))?;
            spec.schedule.fold_key_blocks = false;
        }
        // (the staged epilogue on bwd_fused_atomic's persistent grid beside a score_mod: ptxas spills 24 B of the
        // MMA registers; the fragments' own stores then)
        if spec.schedule.staged_epilogue && score_mod && p.kind == KernelKind::BwdFusedAtomic && spec.schedule.persistent_tiles {
            rule(overrides.staged_epilogue != Some(true), || {
                "bwd_fused_atomic: staged_epilogue=on with persistent_tiles=on and a score_mod spills its registers (24 B): use staged_epilogue=off".to_string()
            })?;
            spec.schedule.staged_epilogue = false;
            // (and the next tile's early loads, which stage in its place)
            rule(overrides.early_next_tile != Some(true), || {
                "bwd_fused_atomic: early_next_tile=on needs the staged epilogue, which persistent_tiles=on with a score_mod spills (24 B): use early_next_tile=off".to_string()
            })?;
            spec.schedule.early_next_tile = false;
        }
        // (a persistent program's writer counts the next tile's steps as this one's: packed sequences and
        // windows give tiles different steps)
        rule(!(spec.schedule.persistent_tiles && features.vary_tile_steps()), || {
            format!("{}: persistent_tiles=on takes neither packed sequences nor a window (its tiles must all take the same steps): use persistent_tiles=off", p.kind.name())
        })?;
        if p.kind.decodes() {
            rule(features.modifiers.is_none() && !features.varlen && (p.kind == KernelKind::Decode || features.is_none()), || {
                format!("{}: the decode kernels take a window and softcap only (the combine none)", p.kind.name())
            })?;
            return Ok(KernelSpec { features: Features { empty_rows: false, ..features }, ..spec });
        }
        if features.modifiers.is_some() {
            rule(takes_them || mma_sync || (fused && !masked_by_mod), || {
                let fused = if fused { " (the fused backward takes a score_mod, not a mask_mod: its programs' order of dQ additions counts on every query block the causal rule leaves)" } else { "" };
                format!("score_mod and mask_mod are built into fwd_ws with ping-pong consumers (NUM_STAGES >= 3), the backward's bwd_dkdv_wgmma / bwd_dq_wgmma and the mma.sync kernels (fwd, bwd_dkdv, bwd_dq) only, not into {} with NUM_STAGES={}{fused}: plan the kernels with `flashgen::plan`", p.kind.name(), p.num_stages)
            })?;
            // (HEAD_DIM 64's fused tile, two warpgroups of 64 keys on 128-row query blocks, holds S and dP of 128
            // queries: ALiBi's per-element indices spill 160-216 B of its registers)
            rule(!(fused && spec.dq_splits_rows()), || {
                format!("{}: a score_mod on 128-row query blocks (HEAD_DIM 64's fused tile) spills its registers: the plan runs it on the wgmma pair (bwd_dkdv_wgmma / bwd_dq_wgmma)", p.kind.name())
            })?;
            rule(!features.window && !features.softcap, || {
                "a kernel with score_mod or mask_mod takes a window and softcap as modifiers too: write the window into the mask_mod (`builtins::sliding_window`) and the softcap into the score_mod (`ScoreMod::then(&builtins::softcap(cap))`)".to_string()
            })?;
            rule(!(masked_by_mod && p.stage == 3), || {
                "a mask_mod kernel is STAGE=1: the mask_mod decides which keys a query sees; write causality into it (`builtins::causal(offset).and(&mask)`)".to_string()
            })?;
        }
        let spec = KernelSpec { features, ..spec };
        // (the column warpgroups' exchange grows with softcap or a score_mod: P follows packed)
        if spec.column_warpgroups() > 1 {
            spec.fits_shared_memory("lower BLOCK_M")?;
        }
        Ok(spec)
    }

    /// The one validation point: the parameters, then the schedule switches `overrides` sets (the rest
    /// derived, `Schedule::resolve`), then shared memory and registers.
    pub fn with_schedule(p: SpecParams, overrides: ScheduleOverrides) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, num_warps: w, num_stages: ns, .. } = p;
        rule(HEAD_DIMS.contains(&d), || {
            format!("HEAD_DIM={d} is not supported: use one of {HEAD_DIMS:?} (tiles are whole panels of 64 columns, the 128B swizzle's; a head dim that fills too little of one is not tabled)")
        })?;
        rule(p.stage == 1 || p.stage == 3, || {
            format!("STAGE={} is not a kernel-level stage: use 1 (non-causal) or 3 (causal), as in Triton's tutorial", p.stage)
        })?;
        if p.kind.warp_specialized_forward() {
            return KernelSpec::new_warp_specialized(p, overrides);
        }
        if p.kind.fuses_dq() {
            return KernelSpec::new_fused(p, overrides);
        }
        if p.kind.decodes() {
            return KernelSpec::new_decode(p, overrides);
        }
        // the kinds below take two switches, programs_per_sm (the separate wgmma backward) and column_splits
        // (the separate dK/dV kernels; resolve's rules)
        let others = ScheduleOverrides { programs_per_sm: None, column_splits: None, ..overrides };
        rule(others.is_empty(), || format!("{}: schedule `{others}`: this kind has no such schedule switches (the forward's belong to fwd_ws and fwd_ws_persistent, fold_key_blocks to bwd_fused_up, ds_handover, staged_epilogue and the rest of the backward's to the fused backward)", p.kind.name()))?;
        rule(NUM_WARPS.contains(&w), || format!("num_warps={w} is not supported: use one of {NUM_WARPS:?}"))?;
        if p.kind == KernelKind::BwdPre {
            return only_canonical(p, KernelSpec::backward_preprocess(p.arch, p.dtype, d), "Δ does not depend on tiles or causality", "backward_preprocess");
        }
        let spec = KernelSpec::scheduled(p, &overrides)?;
        if p.kind.uses_wgmma() {
            let (kind, role) = (p.kind.name(), p.kind.role().name());
            rule(!(spec.overlaps_softmax() && p.tile_dim() > 128), || {
                format!("{kind}: num_stages={ns} overlaps the next block's S with the softmax, which at HEAD_DIM={d} (O's accumulators beside two blocks' scores) spills: use num_stages=2")
            })?;
            rule(!(p.kind == KernelKind::FwdWgmma && p.tile_dim() > 128 && p.block_n > 64), || {
                format!("{kind}: BLOCK_N={} at HEAD_DIM={d}: O's accumulators beside a block of 128 scores spill (192: 148 bytes): use BLOCK_N=64", p.block_n)
            })?;
            rule(p.arch == Arch::Sm90a, || format!("{kind} needs sm_90a (wgmma is an sm_90a instruction): use kernel {role} on {}", p.arch))?;
            let (res_name, _, rows) = p.kind.block_names();
            let (res, cw) = (spec.resident_rows(), spec.column_warpgroups());
            rule(res * cw == 16 * w, || {
                let pair = if p.kind == KernelKind::BwdDkdvWgmma { " (or num_warps=8 on BLOCK_N=64: two warpgroups sharing the keys, each half of dK's and dV's columns)" } else { "" };
                format!("{kind}: {res_name}={res} must be 16 × num_warps={w} = {} (one warpgroup of 4 warps per 64 {rows}, 16 per warp){pair}", 16 * w)
            })?;
            if cw > 1 {
                // (a padded tile's warpgroups would store the padding's columns: their stores are by piece)
                let columns = p.tile_dim() / spec.column_splits();
                rule(p.head_dim == p.tile_dim(), || {
                    format!("{kind}: the column warpgroups (num_warps=8 on BLOCK_N=64) take whole 64-column panels; HEAD_DIM={d} is padded to {}: use num_warps=4", p.tile_dim())
                })?;
                // (each warpgroup's columns whole 64-column panels, and at most half of one more: the halves of
                // the last panel, HEAD_DIM 192's 96 a warpgroup)
                rule(spec.column_splits() == 1 && columns % (32 * cw) == 0, || {
                    format!("{kind}: the {cw} column warpgroups of num_warps={w} on BLOCK_N=64 take HEAD_DIM={d} whole (column_splits=1) in shares of whole 64-column panels and at most half of one more: use num_warps=4")
                })?;
            }
        }
        let (res, strm) = (spec.resident_rows(), spec.streamed_rows());
        let (res_name, strm_name, rows) = p.kind.block_names();
        let row_warps = w / spec.column_warpgroups();
        rule(res > 0 && res % (16 * row_warps) == 0, || {
            format!("{res_name}={res} must be a multiple of 16 × num_warps={w} = {} (each warp owns whole m16 tiles of {rows})", 16 * w)
        })?;
        rule(spec.rows_per_warp() <= MAX_ROWS_PER_WARP, || {
            format!("{res_name}={res} gives each of num_warps={w} warps {} {rows}; at most {MAX_ROWS_PER_WARP} fit in registers: raise num_warps or lower {res_name}", spec.rows_per_warp())
        })?;
        rule(BLOCK_NS.contains(&strm), || {
            format!("{strm_name}={strm} is not supported: use one of {BLOCK_NS:?} (the streamed rows are consumed in k16 steps; other heights spill)")
        })?;
        let (threads, d) = (32 * w, p.tile_dim());
        rule((strm * d / 8) % threads == 0, || {
            format!("{strm_name}={strm} × HEAD_DIM={d} must be a multiple of 256 × num_warps={w} = {} (each of the {threads} threads copies whole 16-byte chunks of every streamed tile): raise {strm_name} or lower num_warps", 256 * w)
        })?;
        rule(NUM_STAGES.contains(&ns), || {
            format!("num_stages={ns} must be in {}..={} (the depth of the cp.async ring of streamed blocks; 1 would leave nothing in flight)", NUM_STAGES.start(), NUM_STAGES.end())
        })?;
        spec.fits_shared_memory(&format!("lower num_stages or {strm_name}"))?;
        let regs = spec.register_estimate();
        rule(regs <= MAX_REGISTERS, || {
            format!("an estimated {regs} registers per thread ({}: accumulators, scores and fragments of {} rows × HEAD_DIM={d}, {strm_name}={strm}) exceed {MAX_REGISTERS}: it would spill; lower {strm_name} or give each warp fewer rows (more num_warps)", p.kind.name(), res / w)
        })?;
        Ok(spec)
    }

    /// A spec with its switches resolved (`Schedule::resolve`), before its resource rules.
    fn scheduled(p: SpecParams, overrides: &ScheduleOverrides) -> Result<KernelSpec, SpecError> {
        // (two stages run ping-pong on the split ring: the wide block's derived, or asked for)
        let ping_pong = p.ping_pong(p.wide_kv_block() || overrides.split_kv_ring == Some(true));
        let consumer_warpgroups = if p.kind.helper_warps() > 0 { (p.num_warps / 4).saturating_sub(1) } else { 0 };
        let shape = Shape { params: p, ping_pong, consumer_warpgroups, column_splits: KernelSpec::fewest_column_splits(p) };
        let (schedule, overrides) = Schedule::resolve(&shape, overrides)?;
        Ok(KernelSpec { params: p, schedule, overrides, features: Features::NONE })
    }

    /// The separate dK/dV kernels' derived column_splits: the fewest splits of HEAD_DIM into whole 64-column
    /// panels whose accumulators fit the register estimate (1 if none does: the rules then say so); 1 for
    /// the other kinds.
    pub(crate) fn fewest_column_splits(p: SpecParams) -> u32 {
        if !matches!(p.kind, KernelKind::BwdDkdv | KernelKind::BwdDkdvWgmma) {
            return 1;
        }
        let with = |splits: u32| KernelSpec { params: p, schedule: Schedule { column_splits: splits, ..Schedule::PLAIN }, overrides: ScheduleOverrides::NONE, features: Features::NONE };
        (1..=4).filter(|s| p.tile_dim() % (64 * s) == 0).find(|&s| with(s).register_estimate() <= MAX_REGISTERS).unwrap_or(1)
    }

    /// The shared-memory rule: the kernel's layout within its target's limit; `fix` says what to lower. With
    /// more than one program per SM (`programs_per_sm`) their layouts together, each with the 1 KB the driver
    /// reserves per program, within the SM's (the per-program limit plus one reserve).
    fn fits_shared_memory(&self, fix: &str) -> Result<(), SpecError> {
        let (smem, limit) = (self.shared_memory_bytes(), self.params.arch.shared_memory_limit());
        rule(smem <= limit, || format!("shared memory {smem} B ({}) exceeds the {limit} B limit of {}: {fix}", self.shared_memory_layout(), self.params.arch))?;
        let programs = self.schedule.programs_per_sm;
        rule(programs * (smem + 1024) <= limit + 1024, || {
            format!(
                "programs_per_sm={programs}: {programs} programs of {smem} B shared memory (+1 KB each for the driver) exceed an SM's {} B on {}: ask for at most {}, or use fewer stages",
                limit + 1024,
                self.params.arch,
                (limit + 1024) / (smem + 1024)
            )
        })
    }

    /// The rules of fwd_ws (after the common ones on HEAD_DIM and STAGE): a producer warpgroup plus 2 or 3
    /// consumer warpgroups of 64 query rows each; the TMA ring in shared memory; and the
    /// registers each consumer thread needs within what setmaxnreg can give it.
    fn new_warp_specialized(p: SpecParams, overrides: ScheduleOverrides) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, block_m: bm, block_n: bn, num_warps: w, num_stages: ns, .. } = p;
        let kind = p.kind.name();
        rule(p.arch == Arch::Sm90a, || format!("{kind} needs sm_90a (wgmma, TMA and setmaxnreg are sm_90a instructions): use kernel fwd on {}", p.arch))?;
        rule(WS_NUM_WARPS.contains(&w), || {
            format!("{kind}: num_warps={w} is not supported: use one of {WS_NUM_WARPS:?} (one producer warpgroup plus 2, 3 or 4 consumer warpgroups of 4 warps)")
        })?;
        rule(bm == 16 * (w - 4), || {
            format!("{kind}: BLOCK_M={bm} must be 64 × the {} consumer warpgroups of num_warps={w} = {} (one producer warpgroup, then 64 query rows per consumer)", (w - 4) / 4, 16 * (w - 4))
        })?;
        rule(BLOCK_NS.contains(&bn) || bn == WS_WIDE_BLOCK_N, || format!("{kind}: BLOCK_N={bn} is not supported: use one of {BLOCK_NS:?} or {WS_WIDE_BLOCK_N}"))?;
        // (the wide block: FA3's non-causal HEAD_DIM 128 tile; a causal tile's diagonal needs blocks that
        // divide BLOCK_M, and its S of 88 registers beside O's HEAD_DIM/2 fit two consumers only)
        rule(bn != WS_WIDE_BLOCK_N || (p.stage == 1 && w == 12 && p.tile_dim() <= 128), || {
            format!("{kind}: BLOCK_N={bn} is for non-causal tiles (STAGE=1) on two consumer warpgroups (num_warps=12) to HEAD_DIM 128: use BLOCK_N=128")
        })?;
        rule(WS_NUM_STAGES.contains(&ns), || format!("num_stages={ns} must be in {}..={} (the depth of the TMA ring of K/V blocks)", WS_NUM_STAGES.start(), WS_NUM_STAGES.end()))?;
        rule(p.tile_dim() <= 128 || w == 12, || {
            format!("{kind}: HEAD_DIM={d} needs two consumer warpgroups (num_warps=12): O's HEAD_DIM/2 accumulators leave the {} registers of 3 or 4 consumers too few (192 on three spilled)", if w == 16 { 160 } else { 112 })
        })?;
        let spec = KernelSpec::scheduled(p, &overrides)?;
        rule(!p.kind.persistent() || spec.ping_pong(), || {
            format!("{kind}: num_stages={ns}: the persistent kernel runs the ping-pong schedule, which needs 3 or more stages, or 2 on the split ring (use num_stages=3, split_kv_ring=on, or fwd_ws)")
        })?;
        spec.fits_shared_memory("lower num_stages or BLOCK_N")?;
        let (regs, budget) = (spec.register_estimate(), spec.registers().consumer);
        rule(regs <= budget, || {
            format!("{kind}: an estimated {regs} registers per consumer thread (HEAD_DIM={d}, BLOCK_N={bn}) exceed the {budget} that setmaxnreg gives each of {} consumer warpgroups: lower BLOCK_N or use fewer consumer warpgroups", (w - 4) / 4)
        })?;
        Ok(spec)
    }

    /// The rules of the fused backward (bwd_fused, bwd_fused_atomic; after the common ones on HEAD_DIM and
    /// STAGE): 1 or 2 MMA warpgroups of 64 key rows, each computing a 64×64 piece of dQ (64 of its columns
    /// of a 64-row query block, or at HEAD_DIM 64 with two, 64 of the rows of a 128-row block), plus the dQ
    /// writer warpgroup (lib/dq_fused.ll.tera); query blocks by TMA; shared memory; and the registers each
    /// MMA thread needs within what setmaxnreg gives it.
    fn new_fused(p: SpecParams, overrides: ScheduleOverrides) -> Result<KernelSpec, SpecError> {
        let SpecParams { head_dim: d, block_m: bm, block_n: bn, num_warps: w, num_stages: ns, .. } = p;
        let kind = p.kind.name();
        rule(p.arch == Arch::Sm90a, || format!("{kind} needs sm_90a (wgmma, TMA and bulk reductions are sm_90a instructions): use kernel bwd_dkdv and bwd_dq on {}", p.arch))?;
        rule(!p.kind.dq_up() || p.stage == Stage::Causal as u32, || format!("{kind} orders the causal programs' additions (STAGE=3): use bwd_fused for STAGE={}", p.stage))?;
        rule(FUSED_NUM_WARPS.contains(&w), || {
            format!("{kind}: num_warps={w} is not supported: use one of {FUSED_NUM_WARPS:?} (1 or 2 MMA warpgroups of 4 warps, then the dQ writer warpgroup)")
        })?;
        let mma_groups = (w - 4) / 4;
        rule(bn == 64 * mma_groups, || format!("{kind}: BLOCK_N={bn} must be 64 × the {mma_groups} MMA warpgroups of num_warps={w} = {} (64 key rows each)", 64 * mma_groups))?;
        // dQ = dS·K is one wgmma chain of 64 query rows × 64 columns per MMA warpgroup: the warpgroups split
        // its columns (BLOCK_M 64, HEAD_DIM 64 per warpgroup) or, at HEAD_DIM 64 with two, its rows (BLOCK_M 128)
        let t = p.tile_dim();
        let splits_columns = bm == 64 && t == 64 * mma_groups;
        let splits_rows = bm == 64 * mma_groups && t == 64 && mma_groups == 2;
        rule(splits_columns || splits_rows, || {
            format!(
                "{kind}: BLOCK_M={bm} with HEAD_DIM={d} on {mma_groups} MMA warpgroup(s): dQ = dS·K gives each warpgroup 64 query rows × 64 columns: use BLOCK_M=64 with num_warps={} and BLOCK_N={} (a warpgroup per 64 columns), or at HEAD_DIM 64 BLOCK_M=128, BLOCK_N=128, num_warps=12 (a warpgroup per 64 query rows)",
                4 * (t / 64 + 1),
                t
            )
        })?;
        rule(NUM_STAGES.contains(&ns), || format!("num_stages={ns} must be in {}..={} (the depth of the TMA ring of Q/dO blocks)", NUM_STAGES.start(), NUM_STAGES.end()))?;
        let spec = KernelSpec::scheduled(p, &overrides)?;
        spec.fits_shared_memory("lower num_stages")?;
        let (regs, budget) = (spec.register_estimate(), spec.registers().consumer);
        rule(regs <= budget, || format!("{kind}: an estimated {regs} registers per MMA thread (HEAD_DIM={d}, BLOCK_M={bm}) exceed the {budget} that each of its {mma_groups} MMA warpgroups has"))?;
        Ok(spec)
    }
}
