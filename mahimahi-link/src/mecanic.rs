//! MECaNIC's ingress queueing (Algorithm 1 of "MECaNIC: SmartNIC to Assist
//! URLLC Processing in MEC Platforms"; ../shared/design/SPEC-mecanic.md), the
//! core of the edge ingress stage of issue 40. Pure, like the link core: the
//! caller passes the time. `reference/mecanic_model.py` is the independent
//! model it is held to, event for event (`mahimahi-link simulate-mecanic`).
//!
//! Why in the emulator: the packets bound for an edge node already pass
//! through this process (the core hop), so a stage here sees them with no
//! extra copy or hop, on the same clock as the link and the core delay, and
//! its queues are measured the same way as the link's.
//!
//! The rules (the same words as the model's docstring):
//! - enqueue: candidates are the flow's queue range; allowed, those whose P^r
//!   is at most the flow's; among them (those with room first) the lowest
//!   P^r, then the least recently enqueued to, then the lowest index. That
//!   queue takes the flow's P^r, even when the packet is then dropped because
//!   every allowed queue is full; with no queue allowed it is dropped too.
//! - a queue that empties gives its P^r back (0).
//! - whenever the path to the host is free: among queues whose head is within
//!   the queue's cap (a token bucket one 1500-byte packet deep), the head with
//!   the largest dp, ties to the queue after the one served last; it leaves
//!   after its transmission time (rounded up to the ns), and every packet
//!   still queued ages: dp += its dp_tick (= the flow's P^l).
//!
//! Arithmetic is integer (tokens in bit·1e9 units), so the model and the
//! core agree to the nanosecond.

use crate::Nanos;
use std::collections::VecDeque;

/// A flow's classification: its queue range (inclusive), P^r and P^l.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub lo: usize,
    pub hi: usize,
    pub pr: u32,
    pub pl: u64,
}

/// The unmatched packets' rule by default: any queue (the range is cut to the pool), no claim
/// on a held queue, the lowest latency priority that still ages.
pub const DEFAULT_RULE: Rule = Rule { lo: 0, hi: usize::MAX, pr: 0, pl: 1 };

/// The largest packet a queue's token bucket holds (and so the largest the stage takes).
pub const MAX_PACKET: u32 = 1500;
const BUCKET: u128 = MAX_PACKET as u128 * 8 * 1_000_000_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    NoQueue,
    Full,
}

#[derive(Debug)]
struct Waiting<P> {
    payload: P,
    size: u32,
    dp: u64,
    tick: u64,
}

#[derive(Debug)]
struct Queue<P> {
    pr: u32,
    /// The enqueue count when last chosen (None: never).
    last: Option<u64>,
    packets: VecDeque<Waiting<P>>,
    tokens: u128,
    tokens_at: Nanos,
}

/// The stage's configuration.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub queues: usize,
    /// The path to the host (bit/s).
    pub rate_bps: u64,
    /// Each queue's cap (bit/s; None: uncapped).
    pub queue_rate_bps: Option<u64>,
    pub queue_packets: usize,
}

pub struct Stage<P> {
    cfg: Config,
    pool: Vec<Queue<P>>,
    enqueues: u64,
    last_served: usize,
    busy_until: Nanos,
}

impl<P> Stage<P> {
    pub fn new(cfg: Config) -> Self {
        let pool = (0..cfg.queues)
            .map(|_| Queue { pr: 0, last: None, packets: VecDeque::new(), tokens: if cfg.queue_rate_bps.is_some() { BUCKET } else { 0 }, tokens_at: 0 })
            .collect();
        Stage { cfg, pool, enqueues: 0, last_served: cfg.queues.saturating_sub(1), busy_until: 0 }
    }

    /// A packet of a flow classified by `rule` arrives; Err: why it was dropped.
    pub fn enqueue(&mut self, rule: Rule, size: u32, payload: P) -> Result<usize, Drop> {
        let hi = rule.hi.min(self.cfg.queues - 1);
        let allowed: Vec<usize> = (rule.lo..=hi).filter(|&k| self.pool[k].pr <= rule.pr).collect();
        if allowed.is_empty() {
            return Err(Drop::NoQueue);
        }
        let room: Vec<usize> = allowed.iter().copied().filter(|&k| self.pool[k].packets.len() < self.cfg.queue_packets).collect();
        let among = if room.is_empty() { &allowed } else { &room };
        let lowest = among.iter().map(|&k| self.pool[k].pr).min().unwrap_or(0);
        // least recently chosen first: never chosen (None) before any count
        let k = among.iter().copied().filter(|&k| self.pool[k].pr == lowest).min_by_key(|&k| (self.pool[k].last.map_or(0, |c| c + 1), k)).unwrap_or(allowed[0]);
        let q = &mut self.pool[k];
        q.pr = rule.pr;
        q.last = Some(self.enqueues);
        self.enqueues += 1;
        if room.is_empty() {
            return Err(Drop::Full);
        }
        q.packets.push_back(Waiting { payload, size, dp: rule.pl, tick: rule.pl });
        Ok(k)
    }

    fn refill(q: &mut Queue<P>, rate: u64, t: Nanos) {
        q.tokens = BUCKET.min(q.tokens + (t - q.tokens_at) as u128 * rate as u128);
        q.tokens_at = t;
    }

    fn may_go(&mut self, k: usize, t: Nanos) -> bool {
        let rate = self.cfg.queue_rate_bps;
        let q = &mut self.pool[k];
        let Some(head) = q.packets.front() else { return false };
        let cost = head.size as u128 * 8 * 1_000_000_000;
        match rate {
            None => true,
            Some(r) => {
                Self::refill(q, r, t);
                q.tokens >= cost
            }
        }
    }

    /// When a non-empty queue's head is within its cap.
    fn ready_at(&mut self, k: usize, t: Nanos) -> Nanos {
        let Some(r) = self.cfg.queue_rate_bps else { return t };
        let q = &mut self.pool[k];
        Self::refill(q, r, t);
        let cost = q.packets.front().map_or(0, |p| p.size as u128 * 8 * 1_000_000_000);
        if cost <= q.tokens {
            t
        } else {
            t + (cost - q.tokens).div_ceil(r as u128) as Nanos
        }
    }

    /// If the path is free at `now`, the next packet to the host: (when it has left, its queue, it).
    pub fn dequeue(&mut self, now: Nanos) -> Option<(Nanos, usize, P, u32)> {
        if now < self.busy_until {
            return None;
        }
        let n = self.cfg.queues;
        let eligible: Vec<usize> = (0..n).filter(|&k| self.may_go(k, now)).collect();
        let best = eligible.iter().filter_map(|&k| self.pool[k].packets.front().map(|p| p.dp)).max()?;
        let k = (1..=n).map(|j| (self.last_served + j) % n).find(|k| eligible.contains(k) && self.pool[*k].packets.front().is_some_and(|p| p.dp == best))?;
        let rate = self.cfg.rate_bps as u128;
        let q = &mut self.pool[k];
        let p = q.packets.pop_front()?;
        let bits = p.size as u128 * 8 * 1_000_000_000;
        if self.cfg.queue_rate_bps.is_some() {
            q.tokens -= bits;
        }
        if q.packets.is_empty() {
            q.pr = 0; // released
        }
        self.last_served = k;
        self.busy_until = now + bits.div_ceil(rate) as Nanos;
        for w in self.pool.iter_mut().flat_map(|q| q.packets.iter_mut()) {
            w.dp += w.tick;
        }
        Some((self.busy_until, k, p.payload, p.size))
    }

    /// When to call `dequeue` again (None: nothing waits).
    pub fn next_event(&mut self, now: Nanos) -> Option<Nanos> {
        let waiting: Vec<usize> = (0..self.cfg.queues).filter(|&k| !self.pool[k].packets.is_empty()).collect();
        if waiting.is_empty() {
            return None;
        }
        if now < self.busy_until {
            return Some(self.busy_until);
        }
        let ready = waiting.into_iter().map(|k| self.ready_at(k, now)).min()?;
        Some(ready.max(now + 1))
    }

    /// Packets waiting, per queue (occupancy).
    pub fn occupancy(&self) -> Vec<usize> {
        self.pool.iter().map(|q| q.packets.len()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (departure time, flow, 0) per packet to the host; (arrival time, flow, why) per drop.
    type Outcome = (Vec<(Nanos, usize, usize)>, Vec<(Nanos, usize, Drop)>);

    fn run(cfg: Config, rules: &[Rule], arrivals: &[(Nanos, usize, u32)]) -> Outcome {
        let mut s: Stage<usize> = Stage::new(cfg);
        let (mut deps, mut drops) = (Vec::new(), Vec::new());
        let (mut i, mut now) = (0, 0);
        loop {
            while i < arrivals.len() && arrivals[i].0 <= now {
                let (t, flow, size) = arrivals[i];
                if let Err(why) = s.enqueue(rules[flow], size, flow) {
                    drops.push((t, flow, why));
                }
                i += 1;
            }
            if let Some((t, _, flow, _)) = s.dequeue(now) {
                deps.push((t, flow, 0));
            }
            let next = [arrivals.get(i).map(|a| a.0), s.next_event(now)].into_iter().flatten().min();
            match next {
                Some(t) => now = now.max(t),
                None => return (deps, drops),
            }
        }
    }

    #[test]
    fn the_largest_dp_goes_first_and_everything_queued_ages() {
        let cfg = Config { queues: 2, rate_bps: 10_000_000_000, queue_rate_bps: None, queue_packets: 100 };
        let rules = [Rule { lo: 0, hi: 0, pr: 1, pl: 10 }, Rule { lo: 1, hi: 1, pr: 1, pl: 1 }];
        let arrivals = [(0, 1, 1250), (0, 1, 1250), (0, 1, 1250), (0, 0, 1250), (0, 0, 1250)];
        let (deps, _) = run(cfg, &rules, &arrivals);
        let flows: Vec<usize> = deps.iter().map(|d| d.1).collect();
        assert_eq!(flows, vec![0, 0, 1, 1, 1]);
        assert_eq!(deps.iter().map(|d| d.0).collect::<Vec<_>>(), vec![1000, 2000, 3000, 4000, 5000]);
    }

    #[test]
    fn a_higher_reliability_priority_claims_a_full_queue_and_the_lower_is_shut_out() {
        let cfg = Config { queues: 1, rate_bps: 1_000_000, queue_rate_bps: None, queue_packets: 1 };
        let rules = [Rule { lo: 0, hi: 0, pr: 1, pl: 1 }, Rule { lo: 0, hi: 0, pr: 5, pl: 1 }];
        // low's first packet leaves at once (8 ms on the path), its second fills the queue; high finds
        // it full (dropped) but claims it; low is then shut out until the queue empties
        let (deps, drops) = run(cfg, &rules, &[(0, 0, 1000), (1, 0, 1000), (2, 1, 1000), (3, 0, 1000), (16_000_001, 0, 1000)]);
        assert_eq!(deps.iter().map(|d| d.0).collect::<Vec<_>>(), vec![8_000_000, 16_000_000, 24_000_001]);
        assert_eq!(drops, vec![(2, 1, Drop::Full), (3, 0, Drop::NoQueue)]);
    }
}

/// MECaNIC's payload pattern matching (issue 40): the patterns a stage looks for in the transport
/// payload of the packets it scans. The result is the lowest-numbered pattern found (1-based), 0 for
/// none; it reaches the host in the packet as an IPv4 option ([`mark`]), since nothing else of a
/// packet reaches an application's socket (a NIC would put it in the receive descriptor).
#[derive(Clone, Debug)]
pub struct Patterns {
    ac: aho_corasick::AhoCorasick,
    pub count: usize,
}

/// The most patterns, and the longest (the paper's NIC matches 100 of up to 128 bytes).
pub const MAX_PATTERNS: usize = 1024;
pub const MAX_PATTERN_BYTES: usize = 128;

impl Patterns {
    pub fn new(patterns: &[Vec<u8>]) -> Result<Patterns, String> {
        if patterns.is_empty() || patterns.len() > MAX_PATTERNS {
            return Err(format!("{} patterns: 1 to {MAX_PATTERNS}", patterns.len()));
        }
        if let Some((i, p)) = patterns.iter().enumerate().find(|(_, p)| p.is_empty() || p.len() > MAX_PATTERN_BYTES) {
            return Err(format!("pattern {} has {} bytes: 1 to {MAX_PATTERN_BYTES}", i + 1, p.len()));
        }
        let ac = aho_corasick::AhoCorasick::new(patterns).map_err(|e| e.to_string())?;
        Ok(Patterns { ac, count: patterns.len() })
    }

    /// The patterns from a file: one per line, in hex ("#" lines and blank lines skipped).
    pub fn load(path: &str) -> Result<Patterns, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bytes = (line.len().is_multiple_of(2) && line.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| (0..line.len()).step_by(2).map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("hex")).collect::<Vec<u8>>())
                .ok_or_else(|| format!("{path}:{}: {line:?} is not hex bytes (one pattern per line, e.g. 47455420 for \"GET \")", n + 1))?;
            out.push(bytes);
        }
        Patterns::new(&out).map_err(|e| format!("{path}: {e}"))
    }

    /// The lowest-numbered pattern anywhere in `payload` (1-based), 0 for none.
    pub fn scan(&self, payload: &[u8]) -> u16 {
        self.ac.find_overlapping_iter(payload).map(|m| m.pattern().as_usize() + 1).min().unwrap_or(0) as u16
    }
}

/// The IPv4 option that carries a scan's result: option type 158 (RFC 4727's experimental
/// number 30, copied on fragmentation), length 4, the result (u16, big-endian).
pub const MATCH_OPTION: u8 = 0x9E;

/// Put a scan's result into an Ethernet + IPv4 frame as [`MATCH_OPTION`], the IP header grown by
/// 4 bytes and its checksum redone. False (the frame unchanged) where it has no room: the header
/// is at its 60 bytes, or the packet would exceed `mtu`, or it is not IPv4.
pub fn mark(frame: &mut Vec<u8>, value: u16, mtu: usize) -> bool {
    use crate::packet::ETH_HLEN;
    let ip = ETH_HLEN;
    if frame.len() < ip + 20 || frame[12..14] != [0x08, 0x00] || frame[ip] >> 4 != 4 {
        return false;
    }
    let ihl = (frame[ip] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([frame[ip + 2], frame[ip + 3]]) as usize;
    if ihl + 4 > 60 || total + 4 > mtu || frame.len() < ip + ihl {
        return false;
    }
    let v = value.to_be_bytes();
    frame.splice(ip + ihl..ip + ihl, [MATCH_OPTION, 4, v[0], v[1]]);
    frame[ip] = 0x40 | ((ihl + 4) / 4) as u8;
    frame[ip + 2..ip + 4].copy_from_slice(&((total + 4) as u16).to_be_bytes());
    frame[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let c = !crate::gso::fold(crate::gso::ones_sum(&frame[ip..ip + ihl + 4]));
    frame[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
mod pattern_tests {
    use super::*;

    #[test]
    fn the_lowest_numbered_pattern_found_is_the_result() {
        let p = Patterns::new(&[b"attack".to_vec(), b"GET /admin".to_vec(), b"tac".to_vec()]).unwrap();
        assert_eq!(p.scan(b"GET /admin/attack"), 1); // both 1 and 2 are there (and 3 inside 1): 1 wins
        assert_eq!(p.scan(b"GET /admin/x"), 2);
        assert_eq!(p.scan(b"stack"), 3);
        assert_eq!(p.scan(b"nothing"), 0);
        assert!(Patterns::new(&[]).is_err() && Patterns::new(&[vec![0; 129]]).unwrap_err().contains("pattern 1 has 129 bytes"));
    }

    #[test]
    fn a_mark_is_an_ipv4_option_with_the_header_checksum_redone() {
        // Ethernet + IPv4 (20 bytes) + UDP (8) + 4 bytes of payload
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00, 0x45, 0, 0, 32, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 200, 0, 2, 10, 202, 0, 2]);
        f.extend([0x9c, 0x40, 0x13, 0x88, 0, 12, 0, 0, b'd', b'a', b't', b'a']);
        let c = !crate::gso::fold(crate::gso::ones_sum(&f[14..34]));
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert!(mark(&mut f, 7, 1500));
        assert_eq!((f[14], u16::from_be_bytes([f[16], f[17]])), (0x46, 36));
        assert_eq!(&f[34..38], &[MATCH_OPTION, 4, 0, 7]);
        assert_eq!(crate::gso::fold(crate::gso::ones_sum(&f[14..38])), 0xffff); // a valid header sums to all ones
        assert_eq!(&f[38..40], &[0x9c, 0x40]); // the UDP header follows, unchanged
        assert_eq!(&f[f.len() - 4..], b"data");
        // no room: past the MTU, or a header already at 60 bytes
        let mut g = f.clone();
        assert!(!mark(&mut g, 1, 36 + 3) && g == f);
        g[14] = 0x4f;
        assert!(!mark(&mut g, 1, 1500));
    }
}

/// What a rule looks for in a packet beside its 5-tuple (issue 40's L7 keywords).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keyword {
    /// Bytes at an offset of the transport payload, compared under a mask.
    Raw { offset: usize, bytes: Vec<u8>, mask: Vec<u8> },
    /// An MQTT PUBLISH whose topic starts with this (the packet holding the message's start).
    MqttTopic(Vec<u8>),
    /// An HTTP request line whose path starts with this ("GET /path ...", any method).
    HttpPath(Vec<u8>),
}

/// A classification rule: every given field must match (None: any).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Match {
    pub proto: Option<u8>,
    pub src: Option<crate::packet::Prefix>,
    pub dst: Option<crate::packet::Prefix>,
    pub sport: Option<(u16, u16)>,
    pub dport: Option<(u16, u16)>,
    pub keyword: Option<Keyword>,
}

/// A named class: what it matches and the queueing it gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub when: Match,
    pub rule: Rule,
}

impl Default for Rule {
    fn default() -> Rule {
        DEFAULT_RULE
    }
}

/// What the classifier reads of a frame.
pub struct Dissected<'a> {
    pub proto: u8,
    pub src: std::net::IpAddr,
    pub dst: std::net::IpAddr,
    pub ports: Option<(u16, u16)>,
    /// The transport payload (after the TCP or UDP header; empty for other protocols).
    pub payload: &'a [u8],
}

/// An Ethernet frame's IP protocol, addresses, ports and transport payload (IPv4, or IPv6 with no
/// extension header; None for anything else and for fragments past the first).
pub fn dissect(frame: &[u8]) -> Option<Dissected<'_>> {
    let m = crate::packet::parse(frame)?;
    let ip = &frame[crate::packet::ETH_HLEN..];
    let (proto, l4) = match m.src {
        std::net::IpAddr::V4(_) => {
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            let frag_off = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
            let end = (m.ip_len as usize).min(ip.len());
            (ip[9], if frag_off == 0 && end >= ihl { &ip[ihl..end] } else { return None })
        }
        std::net::IpAddr::V6(_) => (ip[6], ip.get(40..(m.ip_len as usize).min(ip.len()))?),
    };
    let payload = match proto {
        6 if l4.len() >= 20 => l4.get(((l4[12] >> 4) as usize) * 4..)?,
        17 if l4.len() >= 8 => &l4[8..],
        _ => &[][..],
    };
    Some(Dissected { proto, src: m.src, dst: m.dst, ports: m.ports, payload })
}

impl Keyword {
    pub fn matches(&self, payload: &[u8]) -> bool {
        match self {
            Keyword::Raw { offset, bytes, mask } => payload
                .get(*offset..offset + bytes.len())
                .is_some_and(|got| got.iter().zip(bytes).zip(mask).all(|((g, b), m)| g & m == b & m)),
            Keyword::MqttTopic(prefix) => {
                // fixed header: type 3 (PUBLISH) in the high nibble; remaining length: 1-4 bytes, 7 bits each
                if payload.first().is_none_or(|b| b >> 4 != 3) {
                    return false;
                }
                let mut i = 1;
                while payload.get(i).is_some_and(|b| b & 0x80 != 0) && i < 4 {
                    i += 1;
                }
                let Some(len) = payload.get(i + 1..i + 3).map(|l| u16::from_be_bytes([l[0], l[1]]) as usize) else { return false };
                payload.get(i + 3..i + 3 + len).is_some_and(|topic| topic.starts_with(prefix))
            }
            Keyword::HttpPath(prefix) => {
                let Some(sp) = payload.iter().take(8).position(|&b| b == b' ') else { return false };
                payload[..sp].iter().all(u8::is_ascii_uppercase) && payload[sp + 1..].starts_with(prefix)
            }
        }
    }
}

/// The first class whose rule the frame matches (None: unclassified, the stage's default class).
pub fn classify<'a>(classes: &'a [Class], frame: &[u8]) -> Option<&'a Class> {
    let Dissected { proto, src, dst, ports, payload } = dissect(frame)?;
    let within = |range: Option<(u16, u16)>, port: Option<u16>| range.is_none_or(|(a, b)| port.is_some_and(|p| a <= p && p <= b));
    classes.iter().find(|c| {
        let w = &c.when;
        w.proto.is_none_or(|p| p == proto)
            && w.src.is_none_or(|p| p.contains(src))
            && w.dst.is_none_or(|p| p.contains(dst))
            && within(w.sport, ports.map(|p| p.0))
            && within(w.dport, ports.map(|p| p.1))
            && w.keyword.as_ref().is_none_or(|k| k.matches(payload))
    })
}

#[cfg(test)]
mod classify_tests {
    use super::*;
    use crate::packet::Prefix;

    /// An Ethernet + IPv4 + TCP (data offset 5) or UDP frame carrying `payload`.
    fn frame(proto: u8, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
        let l4h = if proto == 6 { 20 } else { 8 };
        let total = (20 + l4h + payload.len()) as u16;
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00]);
        f.extend([0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 200, 0, 2]);
        f.extend(dst);
        let mut l4 = vec![0u8; l4h];
        l4[0..2].copy_from_slice(&40000u16.to_be_bytes());
        l4[2..4].copy_from_slice(&dport.to_be_bytes());
        if proto == 6 {
            l4[12] = 5 << 4;
        }
        f.extend(l4);
        f.extend(payload);
        f
    }

    fn publish(topic: &str, body: &[u8]) -> Vec<u8> {
        let rest = 2 + topic.len() + body.len();
        let mut p = vec![0x30];
        let mut n = rest;
        loop {
            let b = (n % 128) as u8;
            n /= 128;
            p.push(if n > 0 { b | 0x80 } else { b });
            if n == 0 {
                break;
            }
        }
        p.extend((topic.len() as u16).to_be_bytes());
        p.extend(topic.as_bytes());
        p.extend(body);
        p
    }

    fn class(name: &str, when: Match) -> Class {
        Class { name: name.into(), when, rule: Rule { lo: 0, hi: 0, pr: 0, pl: 1 } }
    }

    #[test]
    fn the_first_class_that_matches_wins_by_5_tuple_and_keyword() {
        let edge = Prefix::parse("10.202.0.0/16").unwrap();
        let classes = vec![
            class("urgent", Match { keyword: Some(Keyword::Raw { offset: 0, bytes: b"URG".to_vec(), mask: vec![0xff; 3] }), ..Default::default() }),
            class("mqtt-video", Match { proto: Some(6), dport: Some((1883, 1883)), keyword: Some(Keyword::MqttTopic(b"video/".to_vec())), ..Default::default() }),
            class("http-api", Match { keyword: Some(Keyword::HttpPath(b"/api/".to_vec())), ..Default::default() }),
            class("to-edge-udp", Match { proto: Some(17), dst: Some(edge), ..Default::default() }),
        ];
        let name = |f: &[u8]| classify(&classes, f).map(|c| c.name.as_str());
        assert_eq!(name(&frame(17, [10, 202, 0, 2], 9000, b"URGENT data")), Some("urgent"));
        assert_eq!(name(&frame(17, [10, 202, 0, 2], 9000, b"plain")), Some("to-edge-udp"));
        assert_eq!(name(&frame(17, [10, 203, 0, 2], 9000, b"plain")), None); // the cloud's net
        // a PUBLISH whose remaining length takes two bytes still has its topic found
        let long = publish("video/cam1", &[7u8; 300]);
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 1883, &long)), Some("mqtt-video"));
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 1883, &publish("audio/x", b"b"))), None);
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 1884, &publish("video/x", b"b"))), None); // another port
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 80, b"GET /api/v1 HTTP/1.1\r\n")), Some("http-api"));
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 80, b"GET /index HTTP/1.1\r\n")), None);
        // masked bytes: only the bits under the mask count
        let flag = vec![class("flag", Match { keyword: Some(Keyword::Raw { offset: 2, bytes: vec![0x80], mask: vec![0x80] }), ..Default::default() })];
        assert!(classify(&flag, &frame(17, [10, 202, 0, 2], 1, &[0, 0, 0x81])).is_some());
        assert!(classify(&flag, &frame(17, [10, 202, 0, 2], 1, &[0, 0, 0x7f])).is_none());
        assert!(classify(&flag, &frame(17, [10, 202, 0, 2], 1, &[0, 0])).is_none()); // too short: no match
    }
}

/// A class from the command line: `NAME:LO:HI:PR:PL` then `,KEY=VALUE` conditions, each optional:
/// `proto=tcp|udp|N`, `src=PREFIX`, `dst=PREFIX`, `sport=P[-Q]`, `dport=P[-Q]`, and one keyword:
/// `raw=OFFSET:HEX[/MASKHEX]`, `mqtt=TOPIC_PREFIX` or `http=PATH_PREFIX`.
pub fn parse_class(spec: &str) -> Result<Class, String> {
    let bad = |why: String| format!("{spec:?}: {why}; expected NAME:LO:HI:PR:PL[,proto=tcp|udp][,src=PREFIX][,dst=PREFIX][,sport=P[-Q]][,dport=P[-Q]][,raw=OFFSET:HEX[/MASK]|,mqtt=TOPIC|,http=PATH]");
    let mut parts = spec.split(',');
    let head: Vec<&str> = parts.next().unwrap_or("").split(':').collect();
    let [name, lo, hi, pr, pl] = head.as_slice() else { return Err(bad("the class needs NAME:LO:HI:PR:PL".into())) };
    let int = |what: &str, v: &str| v.parse::<u64>().map_err(|_| bad(format!("{what} {v:?} is not a non-negative integer")));
    let (lo, hi) = (int("LO", lo)? as usize, int("HI", hi)? as usize);
    if name.is_empty() || lo > hi {
        return Err(bad("a name, and LO <= HI".into()));
    }
    let rule = Rule { lo, hi, pr: int("PR", pr)? as u32, pl: int("PL", pl)? };
    let hex = |v: &str| -> Result<Vec<u8>, String> {
        if v.is_empty() || !v.len().is_multiple_of(2) {
            return Err(bad(format!("{v:?} is not hex bytes")));
        }
        (0..v.len()).step_by(2).map(|i| u8::from_str_radix(&v[i..i + 2], 16).map_err(|_| bad(format!("{v:?} is not hex bytes")))).collect()
    };
    let ports = |v: &str| -> Result<(u16, u16), String> {
        let (a, b) = v.split_once('-').unwrap_or((v, v));
        match (a.parse::<u16>(), b.parse::<u16>()) {
            (Ok(a), Ok(b)) if a <= b => Ok((a, b)),
            _ => Err(bad(format!("ports {v:?}: P or P-Q, P <= Q"))),
        }
    };
    let mut when = Match::default();
    for cond in parts {
        let (k, v) = cond.split_once('=').ok_or_else(|| bad(format!("{cond:?} is not KEY=VALUE")))?;
        let keyword = |when: &Match| if when.keyword.is_some() { Err(bad("one keyword per class".into())) } else { Ok(()) };
        match k {
            "proto" => when.proto = Some(match v { "tcp" => 6, "udp" => 17, n => n.parse().map_err(|_| bad(format!("proto {n:?}: tcp, udp or a number")))? }),
            "src" => when.src = Some(crate::packet::Prefix::parse(v).map_err(bad)?),
            "dst" => when.dst = Some(crate::packet::Prefix::parse(v).map_err(bad)?),
            "sport" => when.sport = Some(ports(v)?),
            "dport" => when.dport = Some(ports(v)?),
            "raw" => {
                keyword(&when)?;
                let (off, bytes) = v.split_once(':').ok_or_else(|| bad(format!("raw={v}: OFFSET:HEX[/MASK]")))?;
                let (bytes, mask) = bytes.split_once('/').map_or((bytes, None), |(b, m)| (b, Some(m)));
                let bytes = hex(bytes)?;
                let mask = mask.map_or(Ok(vec![0xff; bytes.len()]), hex)?;
                if mask.len() != bytes.len() {
                    return Err(bad("the mask has as many bytes as the pattern".into()));
                }
                when.keyword = Some(Keyword::Raw { offset: int("OFFSET", off)? as usize, bytes, mask });
            }
            "mqtt" => {
                keyword(&when)?;
                when.keyword = Some(Keyword::MqttTopic(v.as_bytes().to_vec()));
            }
            "http" => {
                keyword(&when)?;
                when.keyword = Some(Keyword::HttpPath(v.as_bytes().to_vec()));
            }
            other => return Err(bad(format!("unknown condition {other:?}"))),
        }
    }
    Ok(Class { name: name.to_string(), when, rule })
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn a_class_from_the_command_line_and_every_problem_named() {
        let c = parse_class("urllc:0:19:5:200,proto=udp,dst=10.202.0.0/16,dport=5000-5010,raw=4:55524700/ffffff00").unwrap();
        assert_eq!((c.name.as_str(), c.rule), ("urllc", Rule { lo: 0, hi: 19, pr: 5, pl: 200 }));
        assert_eq!((c.when.proto, c.when.dport), (Some(17), Some((5000, 5010))));
        assert_eq!(c.when.keyword, Some(Keyword::Raw { offset: 4, bytes: vec![0x55, 0x52, 0x47, 0], mask: vec![0xff, 0xff, 0xff, 0] }));
        assert_eq!(parse_class("v:0:9:3:50,mqtt=video/").unwrap().when.keyword, Some(Keyword::MqttTopic(b"video/".to_vec())));
        for (spec, why) in [
            ("x:0:9:3", "NAME:LO:HI:PR:PL"),
            ("x:9:0:3:5", "LO <= HI"),
            ("x:0:9:3:5,proto=sctp", "tcp, udp or a number"),
            ("x:0:9:3:5,dport=9-1", "P <= Q"),
            ("x:0:9:3:5,raw=0:zz", "not hex"),
            ("x:0:9:3:5,raw=0:ab/ffff", "as many bytes"),
            ("x:0:9:3:5,mqtt=a,http=/b", "one keyword"),
            ("x:0:9:3:5,colour=red", "unknown condition"),
        ] {
            let e = parse_class(spec).unwrap_err();
            assert!(e.contains(why) && e.contains(spec), "{spec}: {e}");
        }
    }
}
