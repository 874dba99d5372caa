//! A timeline: changes to links at set times of an experiment (`--timeline=FILE`),
//! applied by the forwarder as its clock reaches them, with no restart.
//!
//! Times count from the latest trace restart (SIGUSR2: an experiment's
//! repetition begins); nothing applies before the first (an experiment's set-up
//! and network checks see the links as configured). Each restart puts every
//! link back as the command line made it and plays the timeline again, so
//! every repetition sees the same changes at the same times.
//!
//! One change per line, `#` starts a comment:
//!
//! ```text
//! AT_MS LINK outage DURATION_MS keep|flush
//! AT_MS LINK uplink-trace PATH restart|aligned
//! AT_MS LINK downlink-trace PATH restart|aligned
//! AT_MS LINK delay PREFIX MS
//! AT_MS LINK handover CELL INTERRUPTION_MS keep|flush
//! ```
//!
//! LINK is a `--link` name or `*` (every link). `delay` sets the one-way core
//! delay of an existing `--delay` rule (by its prefix) for that link's packets
//! from then on (a packet already delayed keeps its release time, and packets
//! never overtake one another). `handover` moves a shared cell's member (one
//! LINK, not `*`) to another of its direction's cells (`--cells`): it leaves
//! its cell at once, nothing is delivered either way for the interruption
//! (an outage; its queue forwarded, kept, or lost, flushed), then the new
//! cell schedules it. Its channel stays its link's trace: a trace switch at
//! the same time gives it the new cell's.

use crate::packet::Prefix;
use crate::trace::Trace;
use crate::Nanos;
use std::path::Path;
use std::sync::Arc;

#[derive(Clone, Debug)]
pub enum Change {
    Outage { duration: Nanos, flush: bool },
    Trace { up: bool, trace: Arc<Trace>, path: String, aligned: bool },
    Delay { prefix: Prefix, delay_ns: u64 },
    Handover { cell: String, interruption: Nanos, flush: bool },
}

#[derive(Clone, Debug)]
pub struct Event {
    /// Nanoseconds after the latest trace restart.
    pub at: Nanos,
    /// A link's name; None: every link.
    pub link: Option<String>,
    pub change: Change,
    /// The change as written (the line without its time and link), for the applied-events log.
    pub text: String,
}

/// Every event of the file, in time order (a file's order among equal times), or every problem in it.
pub fn load(path: &str) -> Result<Vec<Event>, Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| vec![format!("--timeline: cannot read {path}: {e}")])?;
    parse(path, &text, |p| Trace::load(Path::new(p)).map_err(|e| e.to_string()))
}

/// `load` on text; `trace` reads a trace file by path.
pub fn parse(name: &str, text: &str, trace: impl Fn(&str) -> Result<Trace, String>) -> Result<Vec<Event>, Vec<String>> {
    let mut events = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        match parse_line(line, &trace) {
            Ok(e) => events.push(e),
            Err(why) => errors.push(format!("{name}:{}: {why} (in {line:?}); expected AT_MS LINK outage DURATION_MS keep|flush, \
                                             AT_MS LINK uplink-trace|downlink-trace PATH restart|aligned, AT_MS LINK delay PREFIX MS, \
                                             or AT_MS LINK handover CELL INTERRUPTION_MS keep|flush", i + 1)),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    events.sort_by_key(|e| e.at); // stable: a file's order among equal times
    Ok(events)
}

fn ms(s: &str, what: &str) -> Result<Nanos, String> {
    let v: f64 = s.parse().map_err(|_| format!("{what} {s:?} is not a number of milliseconds"))?;
    if !v.is_finite() || !(0.0..=1e9).contains(&v) {
        return Err(format!("{what} {s:?} must be between 0 and 1e9 ms"));
    }
    Ok((v * 1e6).round() as Nanos)
}

fn flushed(fate: &str) -> Result<bool, String> {
    match fate {
        "keep" => Ok(false),
        "flush" => Ok(true),
        other => Err(format!("the queue's fate {other:?} is neither keep nor flush")),
    }
}

fn parse_line(line: &str, trace: &impl Fn(&str) -> Result<Trace, String>) -> Result<Event, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    if words.len() < 4 {
        return Err("too few fields".into());
    }
    let at = ms(words[0], "the time")?;
    let link = (words[1] != "*").then(|| words[1].to_string());
    let change = match (words[2], &words[3..]) {
        ("outage", [d, fate]) => {
            let duration = ms(d, "the outage's duration")?;
            if duration == 0 {
                return Err("an outage of 0 ms".into());
            }
            Change::Outage { duration, flush: flushed(fate)? }
        }
        ("handover", [cell, d, fate]) => {
            if link.is_none() {
                return Err("a handover moves one link: name it, not *".into());
            }
            Change::Handover { cell: cell.to_string(), interruption: ms(d, "the interruption")?, flush: flushed(fate)? }
        }
        (kind @ ("uplink-trace" | "downlink-trace"), [path @ .., mode]) if !path.is_empty() => {
            let aligned = match *mode {
                "restart" => false,
                "aligned" => true,
                other => return Err(format!("the trace's phase {other:?} is neither restart nor aligned")),
            };
            let path = path.join(" ");
            let t = trace(&path).map_err(|e| format!("trace {path}: {e}"))?;
            Change::Trace { up: kind == "uplink-trace", trace: Arc::new(t), path, aligned }
        }
        ("delay", [prefix, d]) => Change::Delay { prefix: Prefix::parse(prefix)?, delay_ns: ms(d, "the delay")? },
        (kind, _) => return Err(format!("unknown change {kind:?} or wrong fields for it")),
    };
    Ok(Event { at, link, change, text: words[2..].join(" ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traces(p: &str) -> Result<Trace, String> {
        match p {
            "a b.trace" => Trace::parse(p, "1\n").map_err(|e| e.to_string()),
            _ => Err("no such file".into()),
        }
    }

    #[test]
    fn parses_each_change_and_sorts_by_time() {
        let text = "# a comment\n2000 ue1 outage 500 flush\n1000 * delay 10.0.3.0/24 12.5  # later\n1500 ue0 uplink-trace a b.trace aligned\n";
        let e = parse("t", text, traces).unwrap();
        assert_eq!(e.iter().map(|e| e.at).collect::<Vec<_>>(), vec![1_000_000_000, 1_500_000_000, 2_000_000_000]);
        assert!(matches!(e[0].change, Change::Delay { delay_ns: 12_500_000, .. }) && e[0].link.is_none());
        assert!(matches!(&e[1].change, Change::Trace { up: true, aligned: true, path, .. } if path == "a b.trace"));
        assert!(matches!(e[2].change, Change::Outage { duration: 500_000_000, flush: true }));
        assert_eq!(e[2].link.as_deref(), Some("ue1"));
    }

    #[test]
    fn every_bad_line_is_named_with_its_number() {
        let text = "x ue0 outage 5 keep\n10 ue0 outage 0 keep\n10 ue0 outage 5 lose\n10 ue0 uplink-trace missing.trace restart\n10 ue0 teleport 3 4\n10 ue0 delay 10.0.0.0/8\n10 * handover b 50 keep\n10 ue0 handover b 50 forward\n";
        let errors = parse("f.txt", text, traces).unwrap_err();
        assert_eq!(errors.len(), 8, "{errors:?}");
        assert!(errors[6].contains("name it, not *") && errors[7].contains("neither keep nor flush"));
        let ok = parse("f.txt", "10 ue0 handover b 50 flush\n", traces).unwrap();
        assert!(matches!(&ok[0].change, Change::Handover { cell, interruption: 50_000_000, flush: true } if cell == "b"));
        for (i, e) in errors.iter().enumerate() {
            assert!(e.starts_with(&format!("f.txt:{}: ", i + 1)), "{e}");
        }
        assert!(errors[2].contains("neither keep nor flush") && errors[3].contains("no such file"));
    }
}
