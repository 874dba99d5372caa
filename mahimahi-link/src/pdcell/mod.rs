//! pDCell's CU (issue 41; ../shared/design/SPEC-pdcell.md): the end of the
//! data-center leg of a credit transport, coupled with the cell's scheduler.
//! Pure, like the link core: the caller passes the time and the cell's view,
//! nothing here reads a clock or a packet.
//!
//! Why in the emulator: the CU of a split RAN sits where the cell's queues are,
//! and here the cell is this process. With a 10 Gbit/s fronthaul the DU holds
//! only what the current slot sends, so the CU's per-UE queue and the cell's
//! per-UE downlink queue are one buffer: a packet the CU admits is queued for
//! the radio at once, and its departure over the air frees its place.
//!
//! What the SPEC leaves open, decided here (docs/pdcell.md says the same):
//! - Credits are per packet (pHost's tokens): a credit names a flow's packet
//!   (its sequence number), first the packets not admitted, then new ones.
//!   A credit is an MTU of the budget until its data arrives.
//! - The sources send their first `unscheduled` packets with the request to
//!   transmit (RTS), without credit; every packet carries its flow's size as
//!   known so far, so any of them registers the flow.
//! - The threshold of UE u (coupled): what its grants will carry over the credit
//!   loop, f_u × (RTT in slots + 2: the slot a credit waits for, and the slot its
//!   data waits to be scheduled), at least one MTU. f_u, the DU's forecast
//!   of u's next grants: its share of the cell's time at its current channel
//!   (channel / the UEs active: with data queued or a flow at the CU, u counted)
//!   or, when larger, this slot's grant to u; it follows a peak at once and
//!   forgets it by 1/16 a slot, so a UE has data queued when its channel is good
//!   (a mean would leave the radio idle at the peaks a scheduler like PF looks
//!   for; the grant alone would shrink with the queue it is drawn from). RTT:
//!   per source (an edge server and a cloud one are loops apart), the least
//!   credit-to-data time of the last one to two seconds, on-time credits only;
//!   a UE's thresholds cover the longest loop among its flows' sources (the first estimate from the caller: twice the core delay and
//!   two slots); the smoothed one, late data included, only says when to give
//!   up on a credit (thresholds sized by it would take in the sources' own
//!   queueing and feed it). When the targets add up to more than the buffer
//!   they are scaled to it.
//! - Modified LQD: an arrival that does not fit the buffer shrinks the longest
//!   queue's threshold by one MTU (none admitted is dropped); evaluated again,
//!   it still does not fit, so it is not admitted and its packet is credited
//!   again later. A queue's shrink ends when the queue empties.
//! - ts and te: a credit may be used from ts to te = ts + window. A credit not
//!   answered by te + 2 RTT brought no data: its packet is credited again, and the
//!   UE's next credits start at the next TTI + α (α: the time its queued bytes
//!   A(t) need at the lowest rate, or a fixed time) until a credit brings data.
//! - Wireless-unaware (pHost-like): the threshold is the whole buffer and the
//!   credits per slot are bounded by the fronthaul's rate only.
//! - Within a UE, and across UEs for pHost, credits go to the flow with the
//!   fewest bytes left (SRPT, as pHost's receivers), ties to the older flow;
//!   MRFS's metadata is the fewest bytes left of a UE's flows.

use crate::Nanos;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::Hash;

/// How a UE's credits are delayed after one brought no data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Alpha {
    /// The time the UE's queued bytes need at this rate (bit/s): the lowest MCS's.
    Queue { lowest_bps: u64 },
    Fixed(Nanos),
}

#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// The CU's shared buffer (bytes; u64::MAX: unbounded).
    pub buffer_bytes: u64,
    pub slot_ns: Nanos,
    /// The largest data packet (IP bytes): a credit's share of the budget.
    pub mtu: u32,
    /// te − ts.
    pub window_ns: Nanos,
    pub alpha: Alpha,
    /// Packets a source sends with its RTS, without credit.
    pub unscheduled: u32,
    /// The first credit-loop estimate (ns).
    pub rtt_ns: Nanos,
    /// Coupled with the cell (pDCell) or wireless-unaware (pHost-like).
    pub coupled: bool,
    /// Credits per slot, in bytes, for the wireless-unaware CU (the fronthaul's rate).
    pub fronthaul_bytes_per_slot: u64,
}

/// What the DU says of one UE at a slot's start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DuView {
    /// Bytes this slot's grant carries (0: none).
    pub grant_bytes: u64,
    /// Bytes the UE's channel carries in a slot with every block.
    pub channel_bytes: u64,
    /// Whether the UE has data queued for the radio.
    pub backlogged: bool,
}

/// A credit for one packet: the source may send it from `ts` to `te` (this clock).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credit<K> {
    pub flow: K,
    pub ue: usize,
    pub seq: u32,
    pub ts: Nanos,
    pub te: Nanos,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    Admitted,
    /// The buffer had no room (modified LQD): credited again later.
    NotAdmitted,
    /// A packet already admitted (its credit was sent again meanwhile).
    Duplicate,
}

/// Per UE counters and state.
#[derive(Clone, Debug, Default)]
pub struct Ue {
    /// Bytes admitted and not yet sent over the air.
    pub occupancy: u64,
    pub peak_occupancy: u64,
    pub threshold: u64,
    shrink: u64,
    forecast: f64,
    /// Credits outstanding (each an MTU of the budget).
    outstanding: u64,
    /// After a credit that brought no data: credits start at the next TTI + α.
    backoff: bool,
    pub credits: u64,
    pub expired: u64,
    pub admitted_packets: u64,
    pub not_admitted: u64,
    pub duplicates: u64,
}

#[derive(Debug)]
struct Flow {
    ue: usize,
    /// Its source (the caller's number: its address), whose credit loop it shares.
    source: u64,
    /// Registration order (ties between flows go to the older).
    order: u64,
    size: u64,
    last: bool,
    payload: u32,
    received: Vec<u64>,
    received_count: u32,
    /// Packets to credit again (not admitted, or their credit expired).
    missing: BTreeSet<u32>,
    next_new: u32,
    /// Sequence → when its credit was sent, and when the CU gives up on it.
    outstanding: HashMap<u32, (Nanos, Nanos)>,
    /// Credits given up on: when each was sent (its data, if it comes after all, still measures the loop).
    given_up: HashMap<u32, Nanos>,
    departed_bytes: u64,
    departed_packets: u32,
}

impl Flow {
    fn packets(&self) -> u32 {
        self.size.div_ceil(self.payload as u64) as u32
    }
    fn has(&self, seq: u32) -> bool {
        self.received.get(seq as usize / 64).is_some_and(|w| w >> (seq % 64) & 1 == 1)
    }
    fn mark(&mut self, seq: u32) {
        let i = seq as usize / 64;
        if self.received.len() <= i {
            self.received.resize(i + 1, 0);
        }
        self.received[i] |= 1 << (seq % 64);
        self.received_count += 1;
    }
    fn creditable(&self) -> bool {
        !self.missing.is_empty() || self.next_new < self.packets()
    }
    fn left(&self) -> u64 {
        self.size.saturating_sub(self.departed_bytes)
    }
}

/// The credit loop to one source (sources sit at different distances: an edge server, a cloud one).
#[derive(Clone, Copy, Debug)]
struct Loop {
    /// Smoothed (late data included): when to give up on a credit.
    rtt: f64,
    /// Its least value over the last one to two seconds, on-time credits only: the loop the thresholds cover.
    /// (The smoothed one would take in the sources' own queueing, and thresholds sized by it would feed it.)
    base: [Option<Nanos>; 2],
    base_since: Nanos,
}

impl Loop {
    fn new(rtt_ns: Nanos) -> Loop {
        Loop { rtt: rtt_ns as f64, base: [None, None], base_since: 0 }
    }
    fn base_or(&self, first: Nanos) -> Nanos {
        self.base.iter().flatten().min().copied().unwrap_or(first)
    }
    fn sample(&mut self, now: Nanos, sent: Nanos, on_time: bool) {
        let d = now.saturating_sub(sent);
        self.rtt += SMOOTH * (d as f64 - self.rtt);
        if on_time {
            if now.saturating_sub(self.base_since) > BASE_WINDOW {
                self.base = [None, self.base[0]];
                self.base_since = now;
            }
            self.base[0] = Some(self.base[0].map_or(d, |b| b.min(d)));
        }
    }
}

/// The CU: per-UE queues in one buffer, thresholds, credits.
pub struct Cu<K> {
    pub cfg: Config,
    pub ues: Vec<Ue>,
    flows: HashMap<K, Flow>,
    /// Flows sent whole and forgotten: a late copy of one of their packets (its credit given up on, the
    /// packet credited and sent again, then the first copy came) is a duplicate, not a new flow to credit.
    finished: HashSet<K>,
    registered: u64,
    /// The credit loop to each source (the caller's number for it: its address).
    loops: HashMap<u64, Loop>,
    /// Bytes admitted and not yet sent, over all UEs, and the most ever.
    pub total: u64,
    pub peak_total: u64,
    /// Where the per-slot credit round starts (rotates, so no UE is always first).
    first: usize,
}

/// The smoothing of the grant forecast and the RTT (1/8, as TCP's SRTT).
const SMOOTH: f64 = 1.0 / 8.0;

/// The base loop's window (ns): its least sample over the last one to two of these.
const BASE_WINDOW: Nanos = 1_000_000_000;

/// The forecast follows a UE's peaks at once and forgets them by this share a slot.
const PEAK_DECAY: f64 = 1.0 / 16.0;

impl<K: Hash + Eq + Clone + Ord> Cu<K> {
    pub fn new(cfg: Config, ues: usize) -> Self {
        let threshold = if cfg.coupled { cfg.mtu as u64 } else { cfg.buffer_bytes };
        Cu { cfg, ues: vec![Ue { threshold, ..Ue::default() }; ues], flows: HashMap::new(), finished: HashSet::new(), registered: 0,
             loops: HashMap::new(),
             total: 0, peak_total: 0, first: 0 }
    }

    fn the_loop(&self, source: u64) -> Loop {
        self.loops.get(&source).copied().unwrap_or(Loop::new(self.cfg.rtt_ns))
    }

    /// The smoothed credit loop to a source (ns).
    pub fn rtt_ns(&self, source: u64) -> Nanos {
        self.the_loop(source).rtt as Nanos
    }

    /// The base credit loop to a source (ns): its least recent on-time sample, else the first estimate.
    pub fn base_rtt_ns(&self, source: u64) -> Nanos {
        self.the_loop(source).base_or(self.cfg.rtt_ns)
    }

    /// A packet of flow `flow` from `source` (its address, say) for UE `ue`: its flow's size so far (`last`: the
    /// size is final), and, for data (`seq`), its IP bytes. An RTS has no data.
    #[allow(clippy::too_many_arguments)]
    pub fn arrive(&mut self, now: Nanos, flow: &K, source: u64, ue: usize, size: u64, last: bool, payload: u32,
                  data: Option<(u32, u32)>) -> Option<Arrival> {
        if self.finished.contains(flow) {
            self.ues[ue].duplicates += u64::from(data.is_some());
            return data.map(|_| Arrival::Duplicate);
        }
        let order = self.registered;
        let f = self.flows.entry(flow.clone()).or_insert_with(|| Flow {
            ue, source, order, size, last, payload: payload.max(1), received: Vec::new(), received_count: 0, missing: BTreeSet::new(),
            next_new: 0, outstanding: HashMap::new(), given_up: HashMap::new(), departed_bytes: 0, departed_packets: 0,
        });
        if f.order == order {
            self.registered += 1;
            // Its first packets come without credit.
            f.next_new = self.cfg.unscheduled.min(f.packets());
        }
        if size > f.size && !f.last {
            f.size = size;
        }
        f.last |= last;
        let (seq, bytes) = data?;
        let ue = f.ue;
        let mut took = None;
        if let Some((sent, _)) = f.outstanding.remove(&seq) {
            self.ues[ue].outstanding -= self.cfg.mtu as u64;
            self.ues[ue].backoff = false;
            took = Some((sent, true));
        } else if let Some(sent) = f.given_up.remove(&seq) {
            took = Some((sent, false));
        }
        let dup = f.has(seq);
        if let Some((sent, on_time)) = took {
            let first = self.cfg.rtt_ns;
            self.loops.entry(source).or_insert_with(|| Loop::new(first)).sample(now, sent, on_time);
        }
        let f = self.flows.get_mut(flow).expect("registered above");
        if dup {
            self.ues[ue].duplicates += 1;
            return Some(Arrival::Duplicate);
        }
        if self.total.saturating_add(bytes as u64) > self.cfg.buffer_bytes {
            // Modified LQD: the longest queue's threshold shrinks, nothing admitted is dropped.
            if let Some(l) = (0..self.ues.len()).max_by_key(|&i| (self.ues[i].occupancy, std::cmp::Reverse(i))) {
                self.ues[l].shrink += self.cfg.mtu as u64;
                self.ues[l].threshold = self.ues[l].threshold.saturating_sub(self.cfg.mtu as u64).max(self.cfg.mtu as u64);
            }
            f.missing.insert(seq);
            self.ues[ue].not_admitted += 1;
            return Some(Arrival::NotAdmitted);
        }
        f.mark(seq);
        f.missing.remove(&seq);
        let u = &mut self.ues[ue];
        u.occupancy += bytes as u64;
        u.peak_occupancy = u.peak_occupancy.max(u.occupancy);
        u.admitted_packets += 1;
        self.total += bytes as u64;
        self.peak_total = self.peak_total.max(self.total);
        Some(Arrival::Admitted)
    }

    /// The radio sent `bytes` (IP) of flow `flow`'s data. True when that was
    /// the flow's last packet: the flow is done and forgotten.
    pub fn depart(&mut self, flow: &K, bytes: u32, payload: u32) -> bool {
        let Some(f) = self.flows.get_mut(flow) else { return false };
        let u = &mut self.ues[f.ue];
        u.occupancy -= bytes as u64;
        if u.occupancy == 0 {
            u.shrink = 0;
        }
        self.total -= bytes as u64;
        f.departed_bytes += payload as u64;
        f.departed_packets += 1;
        let done = f.last && f.departed_packets == f.packets();
        if done {
            self.flows.remove(flow);
            self.finished.insert(flow.clone());
        }
        done
    }

    /// The bytes left of UE `ue`'s shortest flow (MRFS's metadata), if it has any.
    pub fn remaining(&self, ue: usize) -> Option<u64> {
        self.flows.values().filter(|f| f.ue == ue).map(Flow::left).min()
    }

    /// The flows the CU knows (registered, not done).
    pub fn flows(&self) -> usize {
        self.flows.len()
    }

    /// A slot starts at `now` with the DU's view of each UE: update the
    /// thresholds, give up on credits past their time, issue credits.
    pub fn slot(&mut self, now: Nanos, du: &[DuView]) -> Vec<Credit<K>> {
        self.expire(now);
        if self.cfg.coupled {
            self.thresholds(du);
        }
        let n = self.ues.len();
        let mut out = Vec::new();
        let mtu = self.cfg.mtu as u64;
        let mut fronthaul = if self.cfg.coupled { u64::MAX } else { self.cfg.fronthaul_bytes_per_slot };
        // pHost: one SRPT order over every flow; pDCell: each UE's own, UEs in turn.
        let mut keys: Vec<(u64, u64, K)> = self.flows.iter().filter(|(_, f)| f.creditable()).map(|(k, f)| (f.left(), f.order, k.clone())).collect();
        keys.sort();
        let order: Vec<usize> = (0..n).map(|k| (self.first + k) % n).collect();
        self.first = (self.first + 1) % n.max(1);
        let passes: Vec<Option<usize>> = if self.cfg.coupled { order.into_iter().map(Some).collect() } else { vec![None] };
        for ue in passes {
            for (_, _, key) in &keys {
                loop {
                    let f = &self.flows[key];
                    if ue.is_some_and(|u| u != f.ue) || !f.creditable() || fronthaul < mtu {
                        break;
                    }
                    let u = &self.ues[f.ue];
                    let held = u.occupancy + u.outstanding;
                    let all: u64 = self.total + self.ues.iter().map(|u| u.outstanding).sum::<u64>();
                    if held + mtu > u.threshold || all.saturating_add(mtu) > self.cfg.buffer_bytes {
                        break;
                    }
                    let ts = if u.backoff { now + self.cfg.slot_ns + self.alpha(f.ue) } else { now };
                    let te = ts + self.cfg.window_ns;
                    // Data is due one loop after ts; it is given up on after two.
                    let give_up = te + 2 * self.rtt_ns(f.source);
                    let f = self.flows.get_mut(key).expect("listed");
                    let seq = match f.missing.pop_first() {
                        Some(s) => s,
                        None => {
                            f.next_new += 1;
                            f.next_new - 1
                        }
                    };
                    f.outstanding.insert(seq, (now, give_up));
                    let ue = f.ue;
                    self.ues[ue].outstanding += mtu;
                    self.ues[ue].credits += 1;
                    fronthaul -= mtu.min(fronthaul);
                    out.push(Credit { flow: key.clone(), ue, seq, ts, te });
                }
            }
        }
        out
    }

    fn alpha(&self, ue: usize) -> Nanos {
        match self.cfg.alpha {
            Alpha::Fixed(ns) => ns,
            Alpha::Queue { lowest_bps } => (self.ues[ue].occupancy as u128 * 8 * 1_000_000_000).div_ceil(lowest_bps.max(1) as u128) as Nanos,
        }
    }

    fn expire(&mut self, now: Nanos) {
        let mtu = self.cfg.mtu as u64;
        for f in self.flows.values_mut() {
            let late: Vec<u32> = f.outstanding.iter().filter(|(_, (_, end))| *end < now).map(|(s, _)| *s).collect();
            for seq in late {
                if let Some((sent, _)) = f.outstanding.remove(&seq) {
                    f.given_up.insert(seq, sent);
                }
                if !f.has(seq) {
                    f.missing.insert(seq);
                }
                let u = &mut self.ues[f.ue];
                u.outstanding -= mtu;
                u.expired += 1;
                u.backoff = true;
            }
        }
    }

    fn thresholds(&mut self, du: &[DuView]) {
        let mtu = self.cfg.mtu as f64;
        let mut active: Vec<bool> = du.iter().map(|d| d.backlogged).collect();
        // Each UE's loop: the longest base loop of the sources its flows come from (the first estimate without flows).
        let mut base: Vec<Nanos> = vec![0; self.ues.len()];
        for f in self.flows.values() {
            if let Some(a) = active.get_mut(f.ue) {
                *a = true;
                base[f.ue] = base[f.ue].max(self.base_rtt_ns(f.source));
            }
        }
        let busy = active.iter().filter(|a| **a).count() as f64;
        let mut targets: Vec<u64> = Vec::with_capacity(self.ues.len());
        for (((u, d), on), b) in self.ues.iter_mut().zip(du).zip(&active).zip(&base) {
            let b = if *b == 0 { self.cfg.rtt_ns } else { *b };
            let horizon = b as f64 / self.cfg.slot_ns as f64 + 2.0;
            // At least its share of the cell's time at its channel, more when the scheduler gives it more.
            let share = d.channel_bytes as f64 / if *on { busy.max(1.0) } else { busy + 1.0 };
            let next = if *on { share.max(d.grant_bytes as f64) } else { share };
            u.forecast = next.max(u.forecast * (1.0 - PEAK_DECAY));
            targets.push((u.forecast * horizon).ceil().max(mtu) as u64);
        }
        // More than the buffer in all: each scaled to its part of it.
        let sum: u128 = targets.iter().map(|&t| t as u128).sum();
        let b = self.cfg.buffer_bytes as u128;
        for (u, t) in self.ues.iter_mut().zip(targets) {
            let t = if sum > b { (t as u128 * b / sum) as u64 } else { t };
            u.threshold = t.saturating_sub(u.shrink).max(self.cfg.mtu as u64);
        }
    }
}

/// The transport's packets: UDP to the CU's port, this header first, then the
/// data. The shims (`edge-systems/pdcell/`) write and read the same bytes.
pub mod wire {
    /// The header: "PD", kind, flags (bit 0: the size is final), flow, seq,
    /// the flow's size so far (bytes), and for a credit its ts (µs after it
    /// reaches the source) and its window (te − ts, µs). Big-endian.
    pub const HEADER: usize = 28;
    pub const MAGIC: [u8; 2] = *b"PD";
    /// Data bytes in a full packet: a 1500-byte IP packet less IPv4, UDP and this header.
    pub const PAYLOAD: u32 = 1500 - 20 - 8 - HEADER as u32;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Kind {
        /// Request to transmit: a new flow (or more of it) and its size.
        Rts = 1,
        Data = 2,
        /// CU → source: send packet `seq` from ts to ts + window.
        Credit = 3,
        /// CU → source: every packet of the flow has left over the air.
        Done = 4,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Header {
        pub kind: Kind,
        pub last: bool,
        pub flow: u32,
        pub seq: u32,
        pub size: u64,
        pub ts_us: u32,
        pub window_us: u32,
    }

    impl Header {
        pub fn parse(b: &[u8]) -> Option<Header> {
            if b.len() < HEADER || b[..2] != MAGIC {
                return None;
            }
            let kind = match b[2] {
                1 => Kind::Rts,
                2 => Kind::Data,
                3 => Kind::Credit,
                4 => Kind::Done,
                _ => return None,
            };
            let u32_at = |i: usize| u32::from_be_bytes(b[i..i + 4].try_into().expect("4 bytes"));
            Some(Header { kind, last: b[3] & 1 == 1, flow: u32_at(4), seq: u32_at(8), size: u64::from_be_bytes(b[12..20].try_into().expect("8 bytes")),
                          ts_us: u32_at(20), window_us: u32_at(24) })
        }

        pub fn bytes(&self) -> [u8; HEADER] {
            let mut b = [0u8; HEADER];
            b[..2].copy_from_slice(&MAGIC);
            b[2] = self.kind as u8;
            b[3] = u8::from(self.last);
            b[4..8].copy_from_slice(&self.flow.to_be_bytes());
            b[8..12].copy_from_slice(&self.seq.to_be_bytes());
            b[12..20].copy_from_slice(&self.size.to_be_bytes());
            b[20..24].copy_from_slice(&self.ts_us.to_be_bytes());
            b[24..28].copy_from_slice(&self.window_us.to_be_bytes());
            b
        }
    }
}

#[cfg(test)]
mod tests;
