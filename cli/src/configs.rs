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
}
