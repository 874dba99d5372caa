//! Queue disciplines of mm-link: infinite, droptail, drophead, CoDel and PIE,
//! with limits in packets and/or bytes.
//!
//! Mahimahi's option strings (`--uplink-queue=droptail
//! --uplink-queue-args="packets=100, bytes=150000"`) are parsed once, at the
//! CLI edge, into a typed [`QueueConfig`]. Sizes are the charged sizes (IP
//! length + 4), as in mm-link, so limits mean the same thing in both tools.
//! AQM times are given in milliseconds, like mm-link's arguments.

use crate::rng::SplitMix64;
use crate::{Nanos, OPPORTUNITY_BYTES};
use std::collections::VecDeque;

const MS: u64 = 1_000_000;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Discipline {
    Infinite,
    DropTail,
    DropHead,
    /// CoDel (RFC 8289 pseudo-code); target and interval in milliseconds.
    CoDel { target_ms: u64, interval_ms: u64 },
    /// PIE (RFC 8033); qdelay_ref and max_burst in milliseconds.
    Pie { qdelay_ref_ms: u64, max_burst_ms: u64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueConfig {
    pub discipline: Discipline,
    pub packets: Option<u64>,
    pub bytes: Option<u64>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig { discipline: Discipline::Infinite, packets: None, bytes: None }
    }
}

impl QueueConfig {
    /// Parse mm-link's spelling: a kind and `key=value, key=value` arguments.
    pub fn parse(kind: &str, args: &str) -> Result<QueueConfig, String> {
        let mut kv: Vec<(String, u64)> = Vec::new();
        for part in args.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("queue argument {part:?} is not key=value (e.g. \"packets=100, bytes=150000\")"))?;
            let v: u64 = v.trim().parse().map_err(|_| format!("queue argument {}: {:?} is not a non-negative integer", k.trim(), v.trim()))?;
            kv.push((k.trim().to_string(), v));
        }
        let get = |key: &str| kv.iter().find(|(k, _)| k == key).map(|(_, v)| *v);
        let allowed: &[&str] = match kind {
            "infinite" => &[],
            "droptail" | "drophead" => &["packets", "bytes"],
            "codel" => &["packets", "bytes", "target", "interval"],
            "pie" => &["packets", "bytes", "qdelay_ref", "max_burst"],
            other => return Err(format!("unknown queue {other:?}; valid: infinite, droptail, drophead, codel, pie")),
        };
        for (k, _) in &kv {
            if !allowed.contains(&k.as_str()) {
                return Err(format!(
                    "queue {kind} does not take argument {k:?}; valid: {}",
                    if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") }
                ));
            }
        }
        let (packets, bytes) = (get("packets").filter(|v| *v > 0), get("bytes").filter(|v| *v > 0));
        let discipline = match kind {
            "infinite" => Discipline::Infinite,
            "droptail" | "drophead" => {
                if packets.is_none() && bytes.is_none() {
                    return Err(format!("queue {kind} needs a limit: packets=N and/or bytes=N"));
                }
                if kind == "droptail" { Discipline::DropTail } else { Discipline::DropHead }
            }
            "codel" => {
                let (Some(t), Some(i)) = (get("target"), get("interval")) else {
                    return Err("queue codel needs target=MS and interval=MS (e.g. \"target=5, interval=100\")".into());
                };
                if t == 0 || i == 0 {
                    return Err("queue codel: target and interval must be > 0 ms".into());
                }
                Discipline::CoDel { target_ms: t, interval_ms: i }
            }
            _ => {
                let (Some(r), Some(b)) = (get("qdelay_ref"), get("max_burst")) else {
                    return Err("queue pie needs qdelay_ref=MS and max_burst=MS (e.g. \"qdelay_ref=15, max_burst=150\")".into());
                };
                if r == 0 {
                    return Err("queue pie: qdelay_ref must be > 0 ms".into());
                }
                Discipline::Pie { qdelay_ref_ms: r, max_burst_ms: b }
            }
        };
        Ok(QueueConfig { discipline, packets, bytes })
    }

    /// mm-link-like description for log headers.
    pub fn describe(&self) -> String {
        let mut limits = Vec::new();
        if let Some(b) = self.bytes {
            limits.push(format!("bytes={b}"));
        }
        if let Some(p) = self.packets {
            limits.push(format!("packets={p}"));
        }
        let name = match self.discipline {
            Discipline::Infinite => return "infinite".into(),
            Discipline::DropTail => "droptail".to_string(),
            Discipline::DropHead => "drophead".to_string(),
            Discipline::CoDel { target_ms, interval_ms } => {
                limits.push(format!("target={target_ms}"));
                limits.push(format!("interval={interval_ms}"));
                "codel".to_string()
            }
            Discipline::Pie { qdelay_ref_ms, max_burst_ms } => {
                limits.push(format!("qdelay_ref={qdelay_ref_ms}"));
                limits.push(format!("max_burst={max_burst_ms}"));
                "pie".to_string()
            }
        };
        format!("{name} [{}]", limits.join(", "))
    }
}

#[derive(Debug)]
pub struct Queued<P> {
    /// Charged size: IP length + 4 (mm-link's TUN header).
    pub size: u32,
    /// When it joined this queue (what an AQM's sojourn counts from).
    pub arrival: Nanos,
    /// When it reached the link: `arrival`, or earlier when a stage held it
    /// first (workload-aware replay's base delay and train); logs count from it.
    pub ingress: Nanos,
    pub payload: P,
}

#[derive(Debug, Default)]
struct CoDelState {
    first_above: Nanos,
    drop_next: Nanos,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

#[derive(Debug)]
struct PieState {
    drop_prob: f64,
    burst_allowance: i64,
    qdelay_old: f64,
    current_qdelay: f64,
    dq_count: Option<u64>,
    dq_tstamp: Nanos,
    avg_dq_rate: f64,
    last_update: Nanos,
    rng: SplitMix64,
}

const PIE_T_UPDATE: u64 = 15 * MS;
const PIE_ALPHA: f64 = 0.125;
const PIE_BETA: f64 = 1.25;
const PIE_DQ_THRESHOLD: u64 = 16384;

pub struct PacketQueue<P> {
    cfg: QueueConfig,
    q: VecDeque<Queued<P>>,
    bytes: u64,
    codel: CoDelState,
    pie: Option<PieState>,
}

impl<P> PacketQueue<P> {
    pub fn new(cfg: QueueConfig, seed: u64) -> Self {
        let pie = match cfg.discipline {
            Discipline::Pie { max_burst_ms, .. } => Some(PieState {
                drop_prob: 0.0,
                burst_allowance: (max_burst_ms * MS) as i64,
                qdelay_old: 0.0,
                current_qdelay: 0.0,
                dq_count: None,
                dq_tstamp: 0,
                avg_dq_rate: 0.0,
                last_update: 0,
                rng: SplitMix64::new(seed),
            }),
            _ => None,
        };
        PacketQueue { cfg, q: VecDeque::new(), bytes: 0, codel: CoDelState::default(), pie }
    }

    pub fn packets(&self) -> u64 {
        self.q.len() as u64
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }

    fn good_with(&self, bytes: u64, packets: u64) -> bool {
        self.cfg.bytes.is_none_or(|b| bytes <= b) && self.cfg.packets.is_none_or(|p| packets <= p)
    }

    fn push(&mut self, p: Queued<P>) {
        self.bytes += p.size as u64;
        self.q.push_back(p);
    }

    fn pop(&mut self) -> Option<Queued<P>> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size as u64;
        Some(p)
    }

    /// Offer a packet; dropped packets (the newcomer or others) go to `dropped`.
    pub fn enqueue(&mut self, p: Queued<P>, now: Nanos, dropped: &mut Vec<Queued<P>>) {
        match self.cfg.discipline {
            Discipline::Infinite => self.push(p),
            Discipline::DropTail | Discipline::CoDel { .. } => {
                if self.good_with(self.bytes + p.size as u64, self.q.len() as u64 + 1) {
                    self.push(p)
                } else {
                    dropped.push(p)
                }
            }
            Discipline::DropHead => {
                self.push(p);
                while !self.good_with(self.bytes, self.q.len() as u64) {
                    let d = self.pop().expect("non-empty");
                    dropped.push(d);
                }
            }
            Discipline::Pie { qdelay_ref_ms, max_burst_ms } => {
                self.pie_update(now, qdelay_ref_ms, max_burst_ms);
                if !self.good_with(self.bytes + p.size as u64, self.q.len() as u64 + 1) || self.pie_drop_early(qdelay_ref_ms) {
                    dropped.push(p)
                } else {
                    self.push(p)
                }
            }
        }
    }

    /// Every queued packet, in queue order (a timeline's outage that flushes the queue).
    pub fn drain(&mut self, dropped: &mut Vec<Queued<P>>) {
        self.bytes = 0;
        dropped.extend(self.q.drain(..));
    }

    /// Take the head packet for an opportunity at `now`; AQM drops go to `dropped`.
    pub fn dequeue(&mut self, now: Nanos, dropped: &mut Vec<Queued<P>>) -> Option<Queued<P>> {
        match self.cfg.discipline {
            Discipline::CoDel { target_ms, interval_ms } => self.codel_dequeue(now, target_ms * MS, interval_ms * MS, dropped),
            Discipline::Pie { qdelay_ref_ms, max_burst_ms } => {
                let p = self.pop()?;
                self.pie_after_dequeue(now, p.size as u64);
                self.pie_update(now, qdelay_ref_ms, max_burst_ms);
                Some(p)
            }
            _ => self.pop(),
        }
    }

    fn codel_dodequeue(&mut self, now: Nanos, target: u64, interval: u64) -> (Option<Queued<P>>, bool) {
        let Some(p) = self.pop() else {
            self.codel.first_above = 0;
            return (None, false);
        };
        let sojourn = now.saturating_sub(p.arrival);
        let mut ok = false;
        if sojourn < target || self.bytes <= OPPORTUNITY_BYTES as u64 {
            self.codel.first_above = 0;
        } else if self.codel.first_above == 0 {
            self.codel.first_above = now + interval;
        } else if now >= self.codel.first_above {
            ok = true;
        }
        (Some(p), ok)
    }

    fn codel_control_law(t: Nanos, interval: u64, count: u32) -> Nanos {
        t + (interval as f64 / (count as f64).sqrt()) as u64
    }

    fn codel_dequeue(&mut self, now: Nanos, target: u64, interval: u64, dropped: &mut Vec<Queued<P>>) -> Option<Queued<P>> {
        let (mut p, mut ok) = self.codel_dodequeue(now, target, interval);
        if p.is_none() {
            self.codel.dropping = false;
            return None;
        }
        if self.codel.dropping {
            if !ok {
                self.codel.dropping = false;
            }
            while self.codel.dropping && now >= self.codel.drop_next {
                dropped.push(p.take().expect("packet"));
                self.codel.count += 1;
                (p, ok) = self.codel_dodequeue(now, target, interval);
                if p.is_none() || !ok {
                    self.codel.dropping = false;
                } else {
                    self.codel.drop_next = Self::codel_control_law(self.codel.drop_next, interval, self.codel.count);
                }
            }
        } else if ok {
            dropped.push(p.take().expect("packet"));
            (p, _) = self.codel_dodequeue(now, target, interval);
            self.codel.dropping = true;
            let delta = self.codel.count.wrapping_sub(self.codel.lastcount);
            let recent = (now as i128 - self.codel.drop_next as i128) < 16 * interval as i128;
            self.codel.count = if delta > 1 && recent { delta } else { 1 };
            self.codel.drop_next = Self::codel_control_law(now, interval, self.codel.count);
            self.codel.lastcount = self.codel.count;
        }
        p
    }

    /// PIE's periodic drop-probability update, run lazily for every period
    /// elapsed since the last one (mm-link does the same: no timer thread).
    fn pie_update(&mut self, now: Nanos, qdelay_ref_ms: u64, max_burst_ms: u64) {
        let bytes = self.bytes;
        let s = self.pie.as_mut().expect("pie state");
        let qref = qdelay_ref_ms as f64;
        let max_burst = (max_burst_ms * MS) as i64;
        while now >= s.last_update + PIE_T_UPDATE {
            // Fast-forward an idle, settled queue: every further period is identical.
            if bytes == 0 && s.drop_prob == 0.0 && s.current_qdelay == 0.0 && s.qdelay_old == 0.0 && s.burst_allowance == (max_burst - PIE_T_UPDATE as i64).max(0) {
                let periods = (now - s.last_update) / PIE_T_UPDATE;
                s.last_update += periods * PIE_T_UPDATE;
                break;
            }
            s.last_update += PIE_T_UPDATE;
            s.qdelay_old = s.current_qdelay;
            s.current_qdelay = if s.avg_dq_rate > 0.0 { bytes as f64 / s.avg_dq_rate } else { 0.0 };
            let mut p = PIE_ALPHA * (s.current_qdelay - qref) + PIE_BETA * (s.current_qdelay - s.qdelay_old);
            if s.drop_prob < 0.000001 {
                p /= 2048.0
            } else if s.drop_prob < 0.00001 {
                p /= 512.0
            } else if s.drop_prob < 0.0001 {
                p /= 128.0
            } else if s.drop_prob < 0.001 {
                p /= 32.0
            } else if s.drop_prob < 0.01 {
                p /= 8.0
            } else if s.drop_prob < 0.1 {
                p /= 2.0
            }
            s.drop_prob += p;
            if s.current_qdelay == 0.0 && s.qdelay_old == 0.0 {
                s.drop_prob *= 0.98;
            }
            s.drop_prob = s.drop_prob.clamp(0.0, 1.0);
            if s.drop_prob == 0.0 && s.current_qdelay < qref / 2.0 && s.qdelay_old < qref / 2.0 {
                s.burst_allowance = max_burst;
            }
            s.burst_allowance = (s.burst_allowance - PIE_T_UPDATE as i64).max(0);
        }
    }

    fn pie_drop_early(&mut self, qdelay_ref_ms: u64) -> bool {
        let bytes = self.bytes;
        let s = self.pie.as_mut().expect("pie state");
        if s.burst_allowance > 0 {
            return false;
        }
        if s.qdelay_old < qdelay_ref_ms as f64 / 2.0 && s.drop_prob < 0.2 {
            return false;
        }
        if bytes < 2 * OPPORTUNITY_BYTES as u64 {
            return false;
        }
        s.rng.next_f64() < s.drop_prob
    }

    fn pie_after_dequeue(&mut self, now: Nanos, size: u64) {
        let bytes = self.bytes;
        let s = self.pie.as_mut().expect("pie state");
        if bytes >= PIE_DQ_THRESHOLD && s.dq_count.is_none() {
            s.dq_tstamp = now;
            s.dq_count = Some(0);
        }
        if let Some(c) = s.dq_count {
            let c = c + size;
            s.dq_count = Some(c);
            if c >= PIE_DQ_THRESHOLD {
                let dtime = now - s.dq_tstamp;
                if dtime > 0 {
                    let rate = c as f64 / (dtime as f64 / MS as f64);
                    s.avg_dq_rate = if s.avg_dq_rate == 0.0 { rate } else { 0.875 * s.avg_dq_rate + 0.125 * rate };
                    if bytes < PIE_DQ_THRESHOLD {
                        s.dq_count = None;
                    } else {
                        s.dq_count = Some(0);
                        s.dq_tstamp = now;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u32) -> Queued<()> {
        Queued { size, arrival: 0, ingress: 0, payload: () }
    }

    #[test]
    fn parses_mahimahi_spelling() {
        let c = QueueConfig::parse("droptail", "packets=100, bytes=150000").unwrap();
        assert_eq!(c.packets, Some(100));
        assert_eq!(c.bytes, Some(150000));
        assert!(QueueConfig::parse("droptail", "").unwrap_err().contains("needs a limit"));
        assert!(QueueConfig::parse("fifo", "").unwrap_err().contains("valid: infinite"));
        assert!(QueueConfig::parse("codel", "target=5").unwrap_err().contains("interval"));
        assert!(QueueConfig::parse("droptail", "packets=x").unwrap_err().contains("packets"));
        assert!(QueueConfig::parse("droptail", "pakets=3").unwrap_err().contains("valid: packets, bytes"));
    }

    #[test]
    fn droptail_drops_newcomer_drophead_drops_oldest() {
        let mut d = Vec::new();
        let mut q = PacketQueue::new(QueueConfig::parse("droptail", "packets=2").unwrap(), 0);
        for s in [100, 200, 300] {
            q.enqueue(pkt(s), 0, &mut d);
        }
        assert_eq!(d.iter().map(|p| p.size).collect::<Vec<_>>(), vec![300]);
        let mut d = Vec::new();
        let mut q = PacketQueue::new(QueueConfig::parse("drophead", "bytes=500").unwrap(), 0);
        for s in [100, 200, 300] {
            q.enqueue(pkt(s), 0, &mut d);
        }
        assert_eq!(d.iter().map(|p| p.size).collect::<Vec<_>>(), vec![100]);
        assert_eq!(q.bytes(), 500);
    }
}
