//! What only forward mode has: the edge's stages inside the emulator
//! (MECaNIC's --nic, pDCell's --cu) and the forwarder's own threads, CPU and
//! batching.

use super::Common;

/// One option of the edge stages (--nic*, --cu*).
pub(super) fn stage_option(c: &mut Common, key: &str, val: String) -> Result<(), String> {
    match key {
        "--nic" => crate::forward::NicSpec::parse(&val).map(|n| c.nics.push(n)),
        "--nic-class" => crate::mecanic::parse_class(&val).map(|k| c.nic_classes.push(k)),
        "--nic-default" => crate::mecanic::parse_class(&format!("default:{val}")).and_then(|k| {
            if k.when == crate::mecanic::Match::default() { c.nic_default = k.rule; Ok(()) } else { Err(format!("{val:?}: LO:HI:PR:PL only")) }
        }),
        "--nic-log" => super::keep(&mut c.nic_log, val),
        "--cu" => crate::forward::CuSpec::parse(&val).map(|s| c.cu = Some(s)),
        "--cu-log" => super::keep(&mut c.cu_log, val),
        "--nic-patterns" => crate::mecanic::Patterns::load(&val).map(|p| c.nic_patterns = Some(p)),
        "--nic-scan" => {
            c.nic_scan.extend(val.split(',').filter(|v| !v.is_empty()).map(String::from));
            Ok(())
        }
        _ => Err(format!("{key}: unknown option; run mahimahi-link --help for the list")),
    }
}

/// One option of how the forwarder runs (--cpu, --threads, --batch-us, --ring-frames, --coalesce-us).
pub(super) fn machine_option(c: &mut Common, key: &str, val: String) -> Result<(), String> {
    match key {
        "--cpu" => val.parse().map(|v| c.cpu = Some(v)).map_err(|_| format!("--cpu: {val:?} is not a CPU number")),
        "--threads" => val.parse().ok().filter(|v| (1..=256).contains(v)).map(|v| c.threads = v).ok_or_else(|| format!("--threads: {val:?} is not an integer 1..=256")),
        "--batch-us" => val.parse().ok().filter(|v| *v <= 1000).map(|v| c.batch_us = v).ok_or_else(|| format!("--batch-us: {val:?} is not an integer 0..=1000")),
        "--ring-frames" => val.parse().ok().filter(|v| (16..=65_536).contains(v)).map(|v| c.ring_frames = Some(v)).ok_or_else(|| format!("--ring-frames: {val:?} is not an integer 16..=65536")),
        "--coalesce-us" => val.parse().ok().filter(|v| *v <= 10_000).map(|v| c.coalesce_us = v).ok_or_else(|| format!("--coalesce-us: {val:?} is not an integer 0..=10000")),

        _ => Err(format!("{key}: unknown option; run mahimahi-link --help for the list")),
    }
}
