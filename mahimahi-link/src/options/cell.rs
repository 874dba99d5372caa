//! The shared cell's options (forward mode's --cell-*, --uplink-cell,
//! --downlink-cell) and `simulate-cell`'s own.

use super::Common;
use crate::cell::{DOWNLINK_SCHEDULERS, UPLINK_SCHEDULERS};

/// One option of forward mode's shared cells.
pub(super) fn cell_option(c: &mut Common, key: &str, val: String) -> Result<(), String> {
    match key {
        "--uplink-cell" | "--downlink-cell" => {
            let mut out = Vec::new();
            let mut bad = None;
            for v in val.split(',').map(str::trim) {
                let (here, there, other) = if key == "--uplink-cell" { (UPLINK_SCHEDULERS, DOWNLINK_SCHEDULERS, "downlink") } else { (DOWNLINK_SCHEDULERS, UPLINK_SCHEDULERS, "uplink") };
                if here.contains(&v) {
                    out.push(v.to_string());
                } else if there.contains(&v) {
                    bad = Some(format!("{key}: {}; it schedules the {other} only (valid here: {})", crate::cell::why_one_direction(v), here.join(", ")));
                } else {
                    bad = Some(format!("{key}: {v:?} is not a scheduler; valid: {}; several cells: one per cell, separated by ','", here.join(", ")));
                }
            }
            match bad {
                Some(e) => Err(e),
                None if key == "--uplink-cell" => {
                    c.uplink_cell = Some(out);
                    Ok(())
                }
                None => {
                    c.downlink_cell = Some(out);
                    Ok(())
                }
            }
        }
        "--cells" => {
            let names: Vec<String> = val.split(',').map(|n| n.trim().to_string()).collect();
            if names.iter().any(|n| n.is_empty() || n == "-" || n.contains(char::is_whitespace)) {
                Err(format!("--cells: {val:?}: give the cells' names separated by ',' (no empty name, no space, not \"-\")"))
            } else {
                c.cell_names = names;
                Ok(())
            }
        }
        "--cell-start" => {
            c.cell_start = Some(val.split(',').map(|n| n.trim().to_string()).collect());
            Ok(())
        }
        "--cell-members" => {
            let names: Vec<String> = val.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
            if names.is_empty() {
                Err(format!("--cell-members: {val:?} names no link; give link names separated by ','"))
            } else {
                c.cell_members = Some(names);
                Ok(())
            }
        }
        "--cell-sr-period-slots" => val.parse().ok().filter(|v| (1..=640).contains(v)).map(|v| c.cell_signalling.sr_period_slots = v).ok_or_else(|| format!("--cell-sr-period-slots: {val:?} is not an integer 1..=640")),
        "--cell-k2-slots" => val.parse().ok().filter(|v| *v <= 32).map(|v| c.cell_signalling.k2_slots = v).ok_or_else(|| format!("--cell-k2-slots: {val:?} is not an integer 0..=32")),
        "--cell-periodic-bsr-slots" => val.parse().ok().filter(|v| (1..=20_480).contains(v)).map(|v| c.cell_signalling.periodic_bsr_slots = Some(v)).ok_or_else(|| format!("--cell-periodic-bsr-slots: {val:?} is not an integer 1..=20480")),
        "--cell-sr-grant-blocks" => val.parse().ok().filter(|v| (1..=275).contains(v)).map(|v| c.cell_signalling.sr_grant_blocks = v).ok_or_else(|| format!("--cell-sr-grant-blocks: {val:?} is not an integer 1..=275")),
        "--cell-be-starvation-slots" => val.parse().ok().filter(|v| (1..=1_000_000).contains(v)).map(|v| c.cell_be_starvation_slots = v).ok_or_else(|| format!("--cell-be-starvation-slots: {val:?} is not an integer 1..=1000000")),
        "--cell-pf-alpha" => exponent(key, Some(&val)).map(|x| c.cell_pf.alpha = x),
        "--cell-pf-beta" => exponent(key, Some(&val)).map(|x| c.cell_pf.beta = x),
        "--cell-pf-window-slots" => val.parse().ok().filter(|v| (1..=100_000).contains(v)).map(|v| c.cell_pf_window_slots = Some(v)).ok_or_else(|| format!("--cell-pf-window-slots: {val:?} is not an integer 1..=100000")),
        "--cell-notice-port" => val.parse().ok().filter(|v| *v > 0).map(|v| c.cell_notice_port = Some(v)).ok_or_else(|| format!("--cell-notice-port: {val:?} is not a UDP port 1..=65535")),
        "--cell-log" => super::keep(&mut c.cell_log, val),
        "--cell-slot-us" => val.parse().ok().filter(|v| (125..=1000).contains(v)).map(|v| c.cell_slot_us = v).ok_or_else(|| format!("--cell-slot-us: {val:?} is not an integer 125..=1000")),
        "--cell-blocks" => val.split(',').map(|v| v.trim().parse().ok().filter(|v| (1..=275).contains(v))).collect::<Option<Vec<u32>>>()
            .map(|v| c.cell_blocks = v).ok_or_else(|| format!("--cell-blocks: {val:?} is not an integer 1..=275 (several cells: one per cell, separated by ',')")),
        "--cell-class" => match val.as_str() {
            "be" => {
                c.cell_classes.push(crate::cell::UeClass::BestEffort);
                Ok(())
            }
            v => v.strip_prefix("lc:").and_then(|ms| ms.parse::<u64>().ok()).filter(|ms| *ms > 0)
                .map(|ms| c.cell_classes.push(crate::cell::UeClass::LatencyCritical { slo_slots: ms * 1_000_000 }))
                .ok_or_else(|| format!("--cell-class: {v:?} is not a class; valid: be, lc:SLO_MS (one per --link, in order)")),
        },
        _ => Err(format!("{key}: unknown option; run mahimahi-link --help for the list")),
    }
}

/// A proportional-fair exponent: a number 0..=10.
fn exponent(key: &str, val: Option<&str>) -> Result<f64, String> {
    val.and_then(|v| v.parse::<f64>().ok()).filter(|x| (0.0..=10.0).contains(x))
        .ok_or_else(|| format!("{key}: {:?} is not a number 0..=10", val.unwrap_or("")))
}

/// `simulate-cell`'s options.
#[derive(Debug)]
pub struct CellSim {
    pub traces: Vec<String>,
    pub classes: Vec<crate::cell::UeClass>,
    pub scheduler: String,
    pub cfg: crate::cell::CellConfig,
    pub be_starvation_slots: u64,
    /// Proportional fair's exponents: r^alpha / R^beta.
    pub pf: crate::cell::ProportionalFair,
}

/// Parse `simulate-cell`'s options; every error names its option.
pub fn parse_cell(args: &[String]) -> Result<CellSim, Vec<String>> {
    use crate::cell::{CellConfig, UeClass, UplinkSignalling};
    let mut errors = Vec::new();
    let mut sim = CellSim { traces: Vec::new(), classes: Vec::new(), scheduler: "rr".into(), cfg: CellConfig::default(),
                            be_starvation_slots: 40, pf: Default::default() };
    let (mut signalling, mut ul) = (false, UplinkSignalling::default());
    let mut classes: Vec<UeClass> = Vec::new();
    for a in args {
        let (key, val) = a.split_once('=').map_or((a.as_str(), None), |(k, v)| (k, Some(v)));
        let num = |v: Option<&str>, lo: u64, hi: u64| -> Result<u64, String> {
            v.and_then(|v| v.parse::<u64>().ok()).filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| format!("{key}: {:?} is not an integer {lo}..={hi}", v.unwrap_or("")))
        };
        let r: Result<(), String> = match key {
            "--trace" => val.map(|v| sim.traces.push(v.into())).ok_or_else(|| format!("{key} needs =FILE")),
            "--scheduler" => match val {
                Some(v) if UPLINK_SCHEDULERS.contains(&v) || DOWNLINK_SCHEDULERS.contains(&v) => {
                    sim.scheduler = v.into();
                    Ok(())
                }
                v => Err(format!("{key}: {:?} is not a scheduler; valid: {}", v.unwrap_or(""), crate::cell::all_schedulers().join(", "))),
            },
            "--class" => match val {
                Some("be") => {
                    classes.push(UeClass::BestEffort);
                    Ok(())
                }
                Some(v) if v.starts_with("lc:") => v[3..].parse::<u64>().ok().filter(|ms| *ms > 0)
                    .map(|ms| classes.push(UeClass::LatencyCritical { slo_slots: ms * 1_000_000 }))
                    .ok_or_else(|| format!("{key}: {v:?}: the SLO must be a positive number of milliseconds (lc:100)")),
                v => Err(format!("{key}: {:?} is not a class; valid: be, lc:SLO_MS", v.unwrap_or(""))),
            },
            "--slot-us" => num(val, 125, 1000).map(|n| sim.cfg.slot_ns = n * 1000),
            "--blocks" => num(val, 1, 275).map(|n| sim.cfg.blocks = n as u32),
            "--uplink-signalling" if val.is_none() => {
                signalling = true;
                Ok(())
            }
            "--sr-period-slots" => num(val, 1, 640).map(|n| ul.sr_period_slots = n),
            "--k2-slots" => num(val, 0, 32).map(|n| ul.k2_slots = n),
            "--sr-grant-blocks" => num(val, 1, 275).map(|n| ul.sr_grant_blocks = n as u32),
            "--periodic-bsr-slots" => num(val, 1, 20_480).map(|n| ul.periodic_bsr_slots = Some(n)),
            "--be-starvation-slots" => num(val, 1, 1_000_000).map(|n| sim.be_starvation_slots = n),
            "--pf-alpha" => exponent(key, val).map(|x| sim.pf.alpha = x),
            "--pf-beta" => exponent(key, val).map(|x| sim.pf.beta = x),
            "--pf-window-slots" => num(val, 1, 100_000).map(|n| sim.cfg.avg_slots = n as f64),
            _ => Err(format!("{key}: unknown option for simulate-cell; run mahimahi-link --help for the list")),
        };
        if let Err(e) = r {
            errors.push(e);
        }
    }
    if sim.traces.is_empty() {
        errors.push("--trace: give one channel trace per UE".into());
    }
    if classes.len() > sim.traces.len() {
        errors.push(format!("--class: {} classes for {} UEs (--trace)", classes.len(), sim.traces.len()));
    }
    if signalling && ul.sr_grant_blocks > sim.cfg.blocks {
        errors.push(format!("--sr-grant-blocks: {} is more than the cell's {} blocks", ul.sr_grant_blocks, sim.cfg.blocks));
    }
    classes.resize(sim.traces.len(), UeClass::BestEffort);
    // SLOs were read in ns; the scheduler counts slots.
    sim.classes = classes.into_iter().map(|c| match c {
        UeClass::LatencyCritical { slo_slots: ns } => UeClass::LatencyCritical { slo_slots: ns.div_ceil(sim.cfg.slot_ns) },
        be => be,
    }).collect();
    sim.cfg.uplink = signalling.then_some(ul);
    if errors.is_empty() { Ok(sim) } else { Err(errors) }
}
