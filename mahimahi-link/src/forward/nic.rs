//! The edge ingress stages (issue 40): uplink frames bound for a stage's
//! prefix (an edge node), once past the link and the core delay, queue in the
//! stage ([`crate::mecanic::Stage`]) and go on to the core side when the
//! stage's path to the host has carried them. A stage is shared by every link
//! of the forwarder, so flows from different UEs contend in it as they would
//! at one NIC.
//!
//! The stage runs on its own clock, event by event: before a frame arrives at
//! t, every departure that started by t is carried out, so the order and the
//! departure times are those of the reference model whatever the loop's
//! wakeups. A frame arriving "in the past" (another link's departure found
//! later in the same round) is taken at the stage's clock, at most a round late.

use super::*;
use crate::mecanic::{self, Class, Rule, Stage};
use crate::packet::Prefix;

/// A stage from the command line (`--nic`).
#[derive(Clone, Debug)]
pub struct NicSpec {
    pub name: String,
    pub prefix: Prefix,
    pub cfg: mecanic::Config,
    /// One FIFO of `queue_packets`: the host path as an ordinary NIC has it.
    pub plain: bool,
    /// The node's MTU: a packet is marked with its scan's result only if it then still fits.
    pub mtu: usize,
}

impl NicSpec {
    /// `NAME,prefix=P,rate-bps=R[,queues=N][,queue-packets=K][,queue-rate-bps=Q][,plain]`.
    pub fn parse(s: &str) -> Result<NicSpec, String> {
        let bad = |why: String| format!("--nic={s}: {why}; expected NAME,prefix=PREFIX,rate-bps=R[,queues=N][,queue-packets=K][,queue-rate-bps=Q][,mtu=BYTES][,plain]");
        let mut parts = s.split(',');
        let name = parts.next().unwrap_or("").to_string();
        if name.is_empty() || name.contains(['=', ' ', '/']) {
            return Err(bad("the stage needs a name first".into()));
        }
        let (mut prefix, mut plain, mut mtu) = (None, false, 1500);
        let mut cfg = mecanic::Config { queues: 20, rate_bps: 0, queue_rate_bps: None, queue_packets: 64 };
        for part in parts {
            if part == "plain" {
                plain = true;
                continue;
            }
            let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("{part:?} is not KEY=VALUE")))?;
            let num = |what: &str| v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| bad(format!("{k}: {v:?} is not a positive integer ({what})")));
            match k {
                "prefix" => prefix = Some(Prefix::parse(v).map_err(bad)?),
                "rate-bps" => cfg.rate_bps = num("bit/s")?,
                "queues" => cfg.queues = num("queues")?.min(1024) as usize,
                "queue-packets" => cfg.queue_packets = num("packets")? as usize,
                "queue-rate-bps" => cfg.queue_rate_bps = Some(num("bit/s")?),
                "mtu" => mtu = num("bytes")?.clamp(68, 65_535) as usize,
                other => return Err(bad(format!("unknown key {other:?}"))),
            }
        }
        let prefix = prefix.ok_or_else(|| bad("prefix= is missing".into()))?;
        if cfg.rate_bps == 0 {
            return Err(bad("rate-bps= is missing".into()));
        }
        if plain {
            cfg.queues = 1;
            cfg.queue_rate_bps = None;
        }
        Ok(NicSpec { name, prefix, cfg, plain, mtu })
    }
}

/// What a queued packet carries: where it goes on, and what its log line says.
struct Held {
    li: usize,
    frame: Frame,
    arrival: Nanos,
    class: usize,
    /// Its number among the stage's arrivals (from 0): the order the reference model replays.
    n: u64,
    /// Its scan's result for the log: "-" (not scanned), the pattern (0: none), "!" after it: no room to mark the packet.
    found: String,
}

pub(super) struct RunNic {
    spec: NicSpec,
    stage: Stage<Held>,
    clock: Nanos,
    /// Carried to the host, leaving at the time given (in order: the path is serial).
    leaving: VecDeque<(Nanos, usize, Frame)>,
    log: Option<Appender>,
    text: String,
    arrivals: u64,
    /// When the stage last sent a packet on its way to the host.
    decided: Option<Nanos>,
}

/// The classes' names, with the unclassified packets' ("default") last.
pub(super) fn class_name(classes: &[Class], k: usize) -> &str {
    classes.get(k).map_or("default", |c| c.name.as_str())
}

impl RunNic {
    pub(super) fn open(spec: &NicSpec, classes: &[Class], default: Rule, log_path: Option<&str>, command_line: &str, writer: &Writer) -> Result<RunNic, String> {
        let log = match log_path {
            None => None,
            Some(p) => {
                let path = p.replace("{name}", &spec.name);
                let mut f = std::fs::File::create(&path).map_err(|e| format!("--nic-log: cannot create {path}: {e}"))?;
                use std::io::Write as _;
                let rule = |r: &Rule| format!("{}:{}:{}:{}", r.lo, r.hi.min(spec.cfg.queues - 1), r.pr, r.pl);
                let classes: Vec<String> = classes.iter().map(|c| format!("{}:{}", c.name, rule(&c.rule))).chain([format!("default:{}", rule(&default))]).collect();
                let c = &spec.cfg;
                writeln!(
                    f,
                    "# mahimahi-link nic {} kind={} prefix={} rate_bps={} queues={} queue_packets={} queue_rate_bps={}\n# classes {}\n# command line: {command_line}\n# ARRIVAL_NS DONE_NS CLASS QUEUE SIZE N MATCH (a packet carried to the host: it reached the stage at ARRIVAL_NS, had left by DONE_NS; N: its number among the stage's arrivals; MATCH: - not scanned, else the first pattern found, 0 none, ! not marked: no room)\n# ARRIVAL_NS x CLASS full|noqueue SIZE N MATCH (a packet dropped)\n# t0 UNIX_NS (time 0 of the lines)",
                    spec.name,
                    if spec.plain { "plain" } else { "mecanic" },
                    spec.prefix,
                    c.rate_bps,
                    c.queues,
                    c.queue_packets,
                    c.queue_rate_bps.map_or("none".to_string(), |r| r.to_string()),
                    classes.join(" "),
                )
                .map_err(|e| format!("--nic-log: cannot write {path}: {e}"))?;
                Some(writer.register(&path, f))
            }
        };
        Ok(RunNic { spec: spec.clone(), stage: Stage::new(spec.cfg), clock: 0, leaving: VecDeque::new(), log, text: String::new(), arrivals: 0, decided: None })
    }

    pub(super) fn begin(&mut self, t0_unix_ns: u64) {
        if self.log.is_some() {
            let _ = writeln!(self.text, "t0 {t0_unix_ns}");
        }
    }

    /// Carry out every departure that starts before `t` (`inclusive`: by `t`); the clock ends at
    /// `t` (or later). The reference model takes the arrivals at an instant before its decision at
    /// that instant, so an arrival runs the stage to just before itself.
    fn run_to(&mut self, t: Nanos, inclusive: bool, classes: &[Class]) {
        let due = |e: Nanos| e < t || (inclusive && e == t);
        loop {
            if due(self.clock) {
                if let Some((done, q, held, size)) = self.stage.dequeue(self.clock) {
                    self.decided = Some(self.clock);
                    if self.log.is_some() {
                        let _ = writeln!(self.text, "{} {done} {} {q} {size} {} {}", held.arrival, class_name(classes, held.class), held.n, held.found);
                    }
                    self.leaving.push_back((done, held.li, held.frame));
                }
            }
            match self.stage.next_event(self.clock) {
                Some(e) if due(e) => self.clock = e,
                _ => break,
            }
        }
        self.clock = self.clock.max(t);
    }

    /// A frame of link `li` reaches the stage at `t`; with patterns, the classes in `scan` (all when
    /// empty) are scanned first and the result marked in the packet.
    #[allow(clippy::too_many_arguments)]
    fn arrive(&mut self, li: usize, t: Nanos, mut frame: Frame, ip_len: u32, classes: &[Class], default: Rule, scan: Option<(&mecanic::Patterns, &[String])>) {
        self.run_to(t, false, classes);
        // A frame found late (another link's, picked up later in the round) arrives at the stage's
        // clock, after any decision already taken at that instant.
        if self.decided == Some(self.clock) {
            self.clock += 1;
        }
        let class = mecanic::classify(classes, &frame.data).map_or(classes.len(), |c| classes.iter().position(|k| std::ptr::eq(k, c)).unwrap_or(classes.len()));
        let name = class_name(classes, class);
        let found = match scan.filter(|(_, which)| which.is_empty() || which.iter().any(|w| w == name)) {
            None => "-".to_string(),
            Some((patterns, _)) => {
                let result = mecanic::dissect(&frame.data).map_or(0, |d| patterns.scan(d.payload));
                if mecanic::mark(&mut frame.data, result, self.spec.mtu) {
                    if frame.vnet.flags & crate::gso::F_NEEDS_CSUM != 0 {
                        frame.vnet.csum_start += 4; // the transport header moved with the option
                    }
                    result.to_string()
                } else {
                    format!("{result}!")
                }
            }
        };
        let rule = if self.spec.plain { Rule { lo: 0, hi: 0, pr: 0, pl: 1 } } else { classes.get(class).map_or(default, |c| c.rule) };
        let at = self.clock;
        // The token bucket holds one MTU-sized packet: a larger frame (none without --gso) is charged as one.
        let size = ip_len.min(mecanic::MAX_PACKET);
        let n = self.arrivals;
        self.arrivals += 1;
        if let Err(why) = self.stage.enqueue(rule, size, Held { li, frame, arrival: at, class, n, found: found.clone() }) {
            if self.log.is_some() {
                let _ = writeln!(self.text, "{at} x {} {} {size} {n} {found}", class_name(classes, class), if why == mecanic::Drop::Full { "full" } else { "noqueue" });
            }
        }
        self.run_to(at, true, classes);
    }

    fn flush(&mut self) {
        if let Some(log) = &self.log {
            log.append(std::mem::take(&mut self.text).into_bytes());
        }
    }
}

impl Forwarder {
    /// A frame for the core side: into the stage of its destination, if one takes it.
    pub(super) fn reach_core(&mut self, li: usize, t: Nanos, frame: Frame) {
        let Some(m) = packet::parse(&frame.data).filter(|_| !self.nics.is_empty()) else {
            return self.transmit(li, true, frame);
        };
        let Some(k) = self.nics.iter().position(|n| n.spec.prefix.contains(m.dst)) else {
            return self.transmit(li, true, frame);
        };
        if !frame.vnet.is_gso() {
            let scan = self.cfg.nic_patterns.as_ref().map(|p| (p, self.cfg.nic_scan.as_slice()));
            return self.nics[k].arrive(li, t, frame, m.ip_len, &self.cfg.nic_classes, self.cfg.nic_default, scan);
        }
        // A super-frame (--gso) reaches the stage as its MTU segments, each queued, classified and sent on alone, as a NIC sees them.
        match SuperFrame::new(frame.data, &frame.vnet) {
            Ok(sf) => {
                for i in 0..sf.segments() {
                    let (vnet, data) = sf.build(i, i + 1);
                    let scan = self.cfg.nic_patterns.as_ref().map(|p| (p, self.cfg.nic_scan.as_slice()));
                    self.nics[k].arrive(li, t, Frame { data, vnet }, sf.segment_ip_len(i), &self.cfg.nic_classes, self.cfg.nic_default, scan);
                }
            }
            Err(_) => self.links[li].up.extra.unsplittable_frames += 1,
        }
    }

    /// Run every stage to `now`, sending on what has left; the stages' next event, if any.
    pub(super) fn serve_nics(&mut self, now: Nanos) {
        let mut next: Option<Nanos> = None;
        for k in 0..self.nics.len() {
            self.nics[k].run_to(now, true, &self.cfg.nic_classes);
            while self.nics[k].leaving.front().is_some_and(|(done, _, _)| *done <= now) {
                let (_, li, frame) = self.nics[k].leaving.pop_front().expect("front");
                self.transmit(li, true, frame);
            }
            let n = &mut self.nics[k];
            let clock = n.clock;
            for t in [n.leaving.front().map(|l| l.0), n.stage.next_event(clock)].into_iter().flatten() {
                next = Some(next.map_or(t, |x: Nanos| x.min(t)));
            }
        }
        self.nic_next = next;
    }

    pub(super) fn flush_nic_logs(&mut self) {
        for n in &mut self.nics {
            n.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_from_the_command_line_and_its_problems_named() {
        let n = NicSpec::parse("edge0,prefix=10.202.0.0/24,rate-bps=20000000,queues=8,queue-packets=16,queue-rate-bps=5000000").unwrap();
        assert_eq!((n.name.as_str(), n.cfg.queues, n.cfg.queue_packets, n.cfg.queue_rate_bps, n.plain), ("edge0", 8, 16, Some(5_000_000), false));
        let p = NicSpec::parse("edge0,prefix=10.202.0.0/24,rate-bps=20000000,queues=8,plain").unwrap();
        assert_eq!((p.cfg.queues, p.plain), (1, true));
        for (s, why) in [
            (",prefix=10.0.0.0/8,rate-bps=1", "name first"),
            ("e,rate-bps=1", "prefix= is missing"),
            ("e,prefix=10.0.0.0/8", "rate-bps= is missing"),
            ("e,prefix=10.0.0.0/8,rate-bps=0", "positive integer"),
            ("e,prefix=10.0.0.0/8,rate-bps=1,colour=red", "unknown key"),
        ] {
            let e = NicSpec::parse(s).unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
    }
}
