//! The link's options, every mode's: queues, losses, the radio stage, the
//! workload-aware replay (simulate), logs, delays, the timeline and --link.

use super::{parse_prob, LightArg, LinkArg, Pending};
use crate::packet::{BypassRule, DelayRule};

/// One option of the link (`key` with its value).
pub(super) fn link_option(p: &mut Pending, key: &str, val: String) -> Result<(), String> {
    match key {
        "--uplink-queue" => super::set(&mut p.uq, val),
        "--uplink-queue-args" => super::set(&mut p.uqa, val),
        "--downlink-queue" => super::set(&mut p.dq, val),
        "--downlink-queue-args" => super::set(&mut p.dqa, val),
        "--queue" if p.simulate => super::set(&mut p.q, val),
        "--queue-args" if p.simulate => super::set(&mut p.qa, val),
        "--light" if p.simulate => {
            p.light = Some(LightArg::new(&val));
            Ok(())
        }
        "--light-bytes" | "--light-idle-ms" | "--light-offsets" | "--light-active-ms" if p.simulate => {
            p.light_keys.push((key.to_string(), val));
            Ok(())
        }
        "--uplink-log" => super::keep(&mut p.c.up_log, val),
        "--downlink-log" => super::keep(&mut p.c.down_log, val),
        "--uplink-loss" => parse_prob(key, &val).map(|x| p.c.up_loss = x),
        "--downlink-loss" => parse_prob(key, &val).map(|x| p.c.down_loss = x),
        "--uplink-radio" => crate::radio::RadioConfig::parse(&val, true).map(|r| p.c.up_radio = Some(r)).map_err(|e| format!("{key}: {e}")),
        "--downlink-radio" => crate::radio::RadioConfig::parse(&val, false).map(|r| p.c.down_radio = Some(r)).map_err(|e| format!("{key}: {e}")),
        "--seed" => val.parse().map(|s| p.c.seed = s).map_err(|_| format!("--seed: {val:?} is not a non-negative integer")),
        "--bypass" => val.split(',').map(BypassRule::parse).collect::<Result<Vec<_>, _>>().map(|mut v| p.c.bypass.append(&mut v)),
        "--delay" => DelayRule::parse(&val).map(|d| p.c.delays.push(d)),
        "--stats" => super::keep(&mut p.c.stats, val),
        "--timeline" => super::keep(&mut p.c.timeline, val),
        "--timeline-log" => super::keep(&mut p.c.timeline_log, val),
        "--stats-interval-ms" => val.parse().ok().filter(|v| *v > 0).map(|v| p.c.stats_interval_ms = v).ok_or_else(|| format!("--stats-interval-ms: {val:?} is not a positive integer")),
        "--link" => LinkArg::parse(&val).map(|l| p.links.push(l)),
        _ => Err(format!("{key}: unknown option; run mahimahi-link --help for the list")),
    }
}
