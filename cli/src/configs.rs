//! The config and spec syntax `check` and `bench` read: "[w:|ws:|wsp:]tiles[@switch=on|off,...]".

use flashgen::{DType, KernelSpec};

/// A config's kernel kind and tiles: "w:bm,bn,warps,stages" is the Hopper (wgmma) kind of `role`; for the
/// forward "ws:" is fwd_ws and "wsp:" fwd_ws_persistent.
pub fn config_kind(cfg: &str, role: flashgen::KernelKind) -> (flashgen::KernelKind, &str) {
    let cfg = cfg.trim();
    if role.role() == flashgen::KernelKind::Fwd {
        if let Some(tiles) = cfg.strip_prefix("wsp:") {
            return (flashgen::KernelKind::FwdWsPersistent, tiles);
        }
        if let Some(tiles) = cfg.strip_prefix("ws:") {
            return (flashgen::KernelKind::FwdWs, tiles);
        }
    }
    match cfg.strip_prefix("w:") {
        Some(tiles) => (role.wgmma_kind().unwrap_or(role), tiles),
        None => (role, cfg),
    }
}

/// "tiles@switch=on|off,..." -> the tiles and the schedule overrides (none without '@').
pub fn split_schedule(item: &str) -> Result<(&str, flashgen::ScheduleOverrides), String> {
    match item.split_once('@') {
        Some((tiles, schedule)) => Ok((tiles, flashgen::ScheduleOverrides::parse(schedule).map_err(|e| e.to_string())?)),
        None => Ok((item, flashgen::ScheduleOverrides::NONE)),
    }
}

/// "[w:|ws:|wsp:]dtype,d,bm,bn,stage,warps,stages[@switch=on|off,...];..." for one target ("w:": the wgmma forward, "ws:" the
/// warp-specialized one, "wsp:" its persistent form).
pub fn parse_spec_list(list: &str, arch: flashgen::Arch) -> Result<Vec<KernelSpec>, String> {
    list.split(';')
        .filter(|s| !s.trim().is_empty())
        .map(|item| {
            let (kind, item) = config_kind(item, flashgen::KernelKind::Fwd);
            let (item, schedule) = split_schedule(item)?;
            let f: Vec<&str> = item.split(',').map(str::trim).collect();
            if f.len() != 7 {
                return Err(format!("spec `{item}` must have 7 fields: dtype,d,bm,bn,stage,warps,stages"));
            }
            let num = |i: usize| f[i].parse::<u32>().map_err(|_| format!("spec `{item}`: field {} is not a number", i + 1));
            KernelSpec::with_schedule(flashgen::SpecParams {
                kind,
                dtype: DType::parse(f[0]).map_err(|e| e.to_string())?,
                head_dim: num(1)?,
                block_m: num(2)?,
                block_n: num(3)?,
                stage: num(4)?,
                num_warps: num(5)?,
                num_stages: num(6)?,
                arch,
            }, schedule)
            .map_err(|e| e.to_string())
        })
        .collect()
}


/// A backward config of `check --bwd-configs` and `bench --bwd-configs`: "dkdv|dq" tiles varying `default`
/// (the call's backward), "w:dkdv|dq" the wgmma pair, "f:" / "fa:" / "fu:" + tiles the fused backward
/// (bwd_fused, bwd_fused_atomic, bwd_fused_up); `family` gives the kind's default specs for the call.
pub fn backward_config(item: &str, default: flashgen::BackwardSpecs, family: &dyn Fn(flashgen::KernelKind) -> Result<flashgen::BackwardSpecs, String>) -> Result<flashgen::BackwardSpecs, String> {
    use flashgen::KernelKind::*;
    let item = item.trim();
    let fused = [("fa:", BwdFusedAtomic), ("fu:", BwdFusedUp), ("f:", BwdFused)].into_iter().find(|(p, _)| item.starts_with(p));
    match fused {
        Some((prefix, kind)) => fused_variant(&item[prefix.len()..], &family(kind)?),
        None => match item.strip_prefix("w:") {
            Some(tiles) => backward_variant(tiles, &family(BwdDkdvWgmma)?),
            None => backward_variant(item, &default),
        },
    }
}

fn numbers(s: &str) -> Result<Vec<u32>, String> {
    s.split(',').map(|x| x.trim().parse().map_err(|_| format!("`{x}` is not a number"))).collect()
}

/// "bm,bn,warps,stages[@switch=value,...]" -> the fused backward `base` (bwd_fused, bwd_fused_atomic or
/// bwd_fused_up) with those tiles and schedule switches.
fn fused_variant(item: &str, base: &flashgen::BackwardSpecs) -> Result<flashgen::BackwardSpecs, String> {
    let (tiles, schedule) = split_schedule(item)?;
    let f = numbers(tiles)?;
    if f.len() != 4 {
        return Err(format!("`{item}` must be bm,bn,warps,stages[@switch=value,...]"));
    }
    let p = flashgen::SpecParams { block_m: f[0], block_n: f[1], num_warps: f[2], num_stages: f[3], ..*base.dkdv.params() };
    let dkdv = KernelSpec::with_features(p, schedule, base.dkdv.features()).map_err(|e| e.to_string())?;
    Ok(flashgen::BackwardSpecs { dkdv, ..*base })
}

/// "bm,bn,warps,stages|bm,bn,warps,stages" -> the default backward specs with those dK/dV and dQ tiles.
fn backward_variant(item: &str, default: &flashgen::BackwardSpecs) -> Result<flashgen::BackwardSpecs, String> {
    let parts: Vec<&str> = item.split('|').collect();
    if parts.len() != 2 {
        return Err(format!("`{item}` must be dkdv|dq tiles: bm,bn,warps,stages|bm,bn,warps,stages"));
    }
    let tiles = |text: &str, base: &KernelSpec| -> Result<KernelSpec, String> {
        let (text, schedule) = split_schedule(text)?;
        let f = numbers(text)?;
        if f.len() != 4 {
            return Err(format!("`{text}` must be bm,bn,warps,stages[@switch=value,...]"));
        }
        let p = flashgen::SpecParams { block_m: f[0], block_n: f[1], num_warps: f[2], num_stages: f[3], ..*base.params() };
        // (the call's features too: a window's or softcap's variants compute what the call asks)
        KernelSpec::with_features(p, schedule, base.features()).map_err(|e| e.to_string())
    };
    let dq = default.dq.ok_or_else(|| format!("{} has no dQ kernel to vary", default.dkdv.name()))?;
    Ok(flashgen::BackwardSpecs { preprocess: default.preprocess, dkdv: tiles(parts[0], &default.dkdv)?, dq: Some(tiles(parts[1], &dq)?) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use flashgen::{Arch, KernelKind};

    #[test]
    fn prefixes_pick_the_kind_and_at_signs_the_schedule() {
        assert_eq!(config_kind("wsp:256,64,20,8", KernelKind::Fwd), (KernelKind::FwdWsPersistent, "256,64,20,8"));
        assert_eq!(config_kind("w:64,64,4,2", KernelKind::BwdDq), (KernelKind::BwdDqWgmma, "64,64,4,2"));
        let (tiles, schedule) = split_schedule("256,64,20,8@own_blocks=off,lazy_rescale=off").unwrap();
        assert_eq!((tiles, schedule.to_string().as_str()), ("256,64,20,8", "lazy_rescale=off,own_blocks=off"));
        let specs = parse_spec_list("wsp:bf16,64,256,64,3,20,8@own_blocks=off;bf16,64,128,64,1,4,3", Arch::Sm90a).unwrap();
        assert_eq!(specs[0].name(), "fa2_fwd_ws_persistent_bf16_d64_st3_bm256_bn64_w20_ns8_sm90a_own0");
        assert_eq!(specs[1].kind(), KernelKind::Fwd);
        let e = parse_spec_list("wsp:bf16,64,256,64,3,20,8@own=off", Arch::Sm90a).unwrap_err();
        assert!(e.contains("schedule switch `own` is unknown"), "{e}");
    }

    /// `--bwd-configs`: "w:" varies the wgmma pair, "fu:" the causal fused kernel, bare tiles the call's own
    /// backward; the call's features follow, and a tile the head dim refuses says why.
    #[test]
    fn backward_configs_vary_the_kind_they_name() {
        let problem = flashgen::Problem::new(DType::Bf16, 256, true, 4096);
        let family = |kind| flashgen::plan::backward_family(kind, Arch::Sm90a, &problem).map_err(|e| e.to_string());
        let default = family(KernelKind::BwdDkdvWgmma).unwrap();
        let slices = backward_config("w:32,64,4,2|128,32,8,2", default, &family).unwrap();
        assert_eq!((slices.dkdv.name().as_str(), slices.dkdv.column_splits()), ("fa2_bwd_dkdv_wgmma_bf16_d256_st3_bm32_bn64_w4_ns2_sm90a", 2));
        assert_eq!(slices.dq, default.dq);
        let bare = backward_config("32,64,4,2|128,32,8,2", default, &family).unwrap();
        assert_eq!(bare, slices);
        let e = backward_config("w:32,64,4,2", default, &family).unwrap_err();
        assert!(e.contains("must be dkdv|dq tiles"), "{e}");
        // (the fused kinds take HEAD_DIM to 128)
        assert!(backward_config("fu:64,128,12,2", default, &family).is_err());
        let d128 = flashgen::Problem::new(DType::Bf16, 128, true, 4096);
        let family128 = |kind| flashgen::plan::backward_family(kind, Arch::Sm90a, &d128).map_err(|e| e.to_string());
        let up = backward_config("fu:64,128,12,2@fold_key_blocks=off", family128(KernelKind::BwdDkdvWgmma).unwrap(), &family128).unwrap();
        assert_eq!((up.dkdv.kind(), up.dkdv.fold_key_blocks()), (KernelKind::BwdFusedUp, false));
    }
}
