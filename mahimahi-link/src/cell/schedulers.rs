//! The cell's MAC schedulers: what each sees of the UEs at a slot's start and
//! how it splits the cell's resource blocks among them.

/// What a scheduler sees of one UE at a slot's start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UeView {
    /// Bytes the scheduler knows are waiting (downlink: the queue itself).
    pub backlog_bytes: u64,
    /// Bytes the UE could move in this slot with every block (its channel).
    pub capacity_bytes: u64,
    /// Moving average of the bytes served per slot (proportional fair's R).
    pub served_avg: f64,
    /// Uplink: the slot an SR from this UE reached the gNB, while it waits for its grant.
    pub sr_slot: Option<u64>,
    /// Uplink: a grant is decided but not used yet (what it carries is not in the backlog).
    pub grant_pending: bool,
}

/// A MAC scheduler: splits `blocks` among the UEs for one slot.
pub trait Scheduler {
    fn name(&self) -> &'static str;
    /// Fill `out` (one entry per UE, zeroed) with blocks; the sum may be less
    /// than `blocks` (the cell spreads the rest).
    fn allocate(&mut self, slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]);
    /// Request starts the scheduler detected: (ue, start slot, slot detected).
    fn detections(&self) -> &[(usize, u64, u64)] {
        &[]
    }
    /// The edge says UE `ue` started a request; it reached the RAN in `slot`
    /// (Tutti's signal; other schedulers ignore it).
    fn request_started(&mut self, _ue: usize, _slot: u64) {}
    /// pDCell's metadata from the CU: the bytes left of UE `ue`'s current flow,
    /// None once it has none (flow-aware schedulers use it; the others ignore it).
    fn flow_remaining(&mut self, _ue: usize, _bytes: Option<u64>) {}
}

/// Blocks a UE needs for its backlog this slot (at least one when it has any).
pub fn blocks_needed(ue: &UeView, blocks: u32) -> u32 {
    if ue.backlog_bytes == 0 {
        return 0;
    }
    if ue.capacity_bytes == 0 {
        return blocks; // no channel this slot: asking for everything gets nothing through anyway
    }
    let need = (ue.backlog_bytes * blocks as u64).div_ceil(ue.capacity_bytes);
    need.clamp(1, blocks as u64) as u32
}

/// Round robin: backlogged UEs in turn, starting one further each slot,
/// each offered an equal part of what is left and taking what it needs.
#[derive(Default)]
pub struct RoundRobin {
    next: usize,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }
    fn allocate(&mut self, _slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]) {
        let n = ues.len();
        if n == 0 {
            return;
        }
        let mut need: Vec<u32> = ues.iter().map(|u| blocks_needed(u, blocks)).collect();
        let mut left = blocks;
        water_fill(self.next, &mut need, out, &mut left);
        self.next = (self.next + 1) % n;
    }
}

/// Split `left` blocks among the UEs that still `need` some: equal parts
/// (a UE needing less takes less and the rest is split again), the
/// remainder to the first in turn, which starts at `first`.
fn water_fill(first: usize, need: &mut [u32], out: &mut [u32], left: &mut u32) {
    let n = need.len();
    loop {
        let wanting: Vec<usize> = (0..n).map(|k| (first + k) % n).filter(|&i| need[i] > 0).collect();
        if wanting.is_empty() || *left == 0 {
            break;
        }
        let part = (*left / wanting.len() as u32).max(1);
        for &i in &wanting {
            let g = part.min(need[i]).min(*left);
            out[i] += g;
            need[i] -= g;
            *left -= g;
            if *left == 0 {
                break;
            }
        }
    }
}

/// Each UE of `order` takes the blocks it needs until none are left.
fn in_order(order: impl Iterator<Item = usize>, ues: &[UeView], blocks: u32, out: &mut [u32]) {
    let mut left = blocks;
    for i in order {
        let g = blocks_needed(&ues[i], blocks).min(left);
        out[i] = g;
        left -= g;
        if left == 0 {
            break;
        }
    }
}

/// Proportional fair: each slot, UEs in order of r^alpha / R^beta (r: this
/// slot's channel, R: the moving average of what each was served), each
/// taking the blocks it needs until none are left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProportionalFair {
    pub alpha: f64,
    pub beta: f64,
}

impl Default for ProportionalFair {
    fn default() -> Self {
        ProportionalFair { alpha: 1.0, beta: 1.0 }
    }
}

impl Scheduler for ProportionalFair {
    fn name(&self) -> &'static str {
        "pf"
    }
    fn allocate(&mut self, _slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]) {
        let metric = |u: &UeView| (u.capacity_bytes as f64).powf(self.alpha) / u.served_avg.max(1.0).powf(self.beta);
        let mut order: Vec<(f64, usize)> = (0..ues.len()).filter(|&i| ues[i].backlog_bytes > 0).map(|i| (metric(&ues[i]), i)).collect();
        // Highest metric first; ties by index, so the order is deterministic.
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        in_order(order.into_iter().map(|(_, i)| i), ues, blocks, out);
    }
}

/// A UE's traffic class for SMEC: latency-critical with an SLO, or best effort.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UeClass {
    LatencyCritical { slo_slots: u64 },
    BestEffort,
}

/// Where a deadline-aware scheduler learns that a request started.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StartSignal {
    /// SMEC: from the UE's own reports (a backlog increase, dated by its SR).
    Reports,
    /// Tutti-like: from the edge, when the request's first bytes reach it
    /// (late by the uplink time); until then the UE is served in turn.
    EdgeNotice,
}

/// SMEC's RAN policy (../shared/design/SPEC-smec.md): a request starts when a
/// UE's reported backlog grows (dated by the SR that preceded it, if any);
/// SR-triggered grants first; then latency-critical UEs with a request,
/// violated ones first, then the smallest remaining budget; then what is
/// left split equally among the other UEs with data (best effort), in turn. A best-effort UE left unserved for `be_starvation_slots`
/// goes right after the SR grants. A UE's request ends (priority reset) when
/// its backlog returns to zero.
pub struct Smec {
    pub classes: Vec<UeClass>,
    pub be_starvation_slots: u64,
    pub signal: StartSignal,
    last_backlog: Vec<u64>,
    /// Detected start slot of each UE's outstanding request(s).
    pub start: Vec<Option<u64>>,
    /// Every detection, (ue, start slot, slot it was detected in), for the log.
    pub detected: Vec<(usize, u64, u64)>,
    last_served: Vec<u64>,
    rr: usize,
}

impl Smec {
    pub fn new(classes: Vec<UeClass>, be_starvation_slots: u64) -> Self {
        let n = classes.len();
        Smec { classes, be_starvation_slots, signal: StartSignal::Reports, last_backlog: vec![0; n], start: vec![None; n],
               detected: Vec::new(), last_served: vec![0; n], rr: 0 }
    }

    /// The same priorities with starts told by the edge (Tutti-like).
    pub fn tutti(classes: Vec<UeClass>, be_starvation_slots: u64) -> Self {
        Smec { signal: StartSignal::EdgeNotice, ..Smec::new(classes, be_starvation_slots) }
    }
}

impl Scheduler for Smec {
    fn name(&self) -> &'static str {
        match self.signal {
            StartSignal::Reports => "smec",
            StartSignal::EdgeNotice => "tutti",
        }
    }
    fn detections(&self) -> &[(usize, u64, u64)] {
        &self.detected
    }
    fn request_started(&mut self, ue: usize, slot: u64) {
        // Every notice is logged (one per request the edge saw, so the log
        // pairs them with requests in order); it starts a request only if
        // none is open.
        if self.signal == StartSignal::EdgeNotice && ue < self.start.len() {
            self.start[ue].get_or_insert(slot);
            self.detected.push((ue, slot, slot));
        }
    }
    fn allocate(&mut self, slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]) {
        let n = ues.len();
        assert_eq!(n, self.classes.len(), "smec: one class per UE");
        for (i, u) in ues.iter().enumerate() {
            let sr_only = u.sr_slot.is_some();
            if u.backlog_bytes == 0 && !sr_only && !u.grant_pending {
                self.start[i] = None; // back to zero: the request is done, priority reset
            } else if self.signal == StartSignal::Reports && (u.backlog_bytes > self.last_backlog[i] || sr_only) && self.start[i].is_none() {
                let s = u.sr_slot.unwrap_or(slot);
                self.start[i] = Some(s);
                self.detected.push((i, s, slot));
            }
            self.last_backlog[i] = if sr_only { 0 } else { u.backlog_bytes };
        }
        let mut left = blocks;
        let give = |i: usize, out: &mut [u32], left: &mut u32| {
            let g = blocks_needed(&ues[i], blocks).saturating_sub(out[i]).min(*left);
            out[i] += g;
            *left -= g;
        };
        // 1. SR-triggered grants (small) outrank everything.
        for i in (0..n).filter(|&i| ues[i].sr_slot.is_some()) {
            give(i, out, &mut left);
        }
        // 2. Best-effort UEs starved too long: what they need, split equally in turn.
        let mut starved: Vec<u32> = (0..n)
            .map(|i| {
                let due = self.classes[i] == UeClass::BestEffort && ues[i].backlog_bytes > 0
                    && slot.saturating_sub(self.last_served[i]) > self.be_starvation_slots;
                if due { blocks_needed(&ues[i], blocks).saturating_sub(out[i]) } else { 0 }
            })
            .collect();
        water_fill(self.rr, &mut starved, out, &mut left);
        // 3. Latency-critical requests: violated first, then the least budget left.
        let mut lc: Vec<(i64, usize)> = (0..n)
            .filter_map(|i| match (self.classes[i], self.start[i]) {
                (UeClass::LatencyCritical { slo_slots }, Some(s)) if ues[i].backlog_bytes > 0 => {
                    Some((slo_slots as i64 - (slot as i64 - s as i64), i))
                }
                _ => None,
            })
            .collect();
        lc.sort_by_key(|&(budget, i)| (budget.max(-1), budget, i)); // every violated one (< 0) ahead
        for (_, i) in lc {
            give(i, out, &mut left);
        }
        // 4. What is left: split among everyone else with data, in turn.
        let mut need: Vec<u32> = (0..n).map(|i| blocks_needed(&ues[i], blocks).saturating_sub(out[i])).collect();
        water_fill(self.rr, &mut need, out, &mut left);
        self.rr = (self.rr + 1) % n.max(1);
        for (served, &o) in self.last_served.iter_mut().zip(out.iter()) {
            if o > 0 {
                *served = slot;
            }
        }
    }
}

/// pDCell's MRFS, minimum remaining flow size (../shared/design/SPEC-pdcell.md):
/// each slot, the backlogged UEs in order of the bytes left of their flow over
/// this slot's channel (the time the rest of the flow needs at the UE's current
/// rate), each taking the blocks it needs until none are left; a UE without a
/// channel this slot goes last, ties by index. The bytes left come from the CU
/// (`flow_remaining`, pDCell's metadata): the MAC never reads a payload. For a
/// UE the CU has told nothing, the MAC's own queue stands in.
#[derive(Default)]
pub struct Mrfs {
    remaining: Vec<Option<u64>>,
}

impl Scheduler for Mrfs {
    fn name(&self) -> &'static str {
        "mrfs"
    }
    fn flow_remaining(&mut self, ue: usize, bytes: Option<u64>) {
        if self.remaining.len() <= ue {
            self.remaining.resize(ue + 1, None);
        }
        self.remaining[ue] = bytes;
    }
    fn allocate(&mut self, _slot: u64, ues: &[UeView], blocks: u32, out: &mut [u32]) {
        let left_of = |i: usize| self.remaining.get(i).copied().flatten().unwrap_or(ues[i].backlog_bytes) as u128;
        let mut order: Vec<usize> = (0..ues.len()).filter(|&i| ues[i].backlog_bytes > 0).collect();
        // rem_a / cap_a < rem_b / cap_b, compared exactly; no channel: last
        order.sort_by(|&a, &b| {
            let (ca, cb) = (ues[a].capacity_bytes as u128, ues[b].capacity_bytes as u128);
            (ca == 0).cmp(&(cb == 0)).then((left_of(a) * cb).cmp(&(left_of(b) * ca))).then(a.cmp(&b))
        });
        in_order(order.into_iter(), ues, blocks, out);
    }
}

/// The schedulers by name, each direction's (continuum/config/raw.py's
/// UPLINK_SCHEDULERS and DOWNLINK_SCHEDULERS are the other side; a test holds
/// them equal): tutti learns request starts from the edge, so it schedules the
/// uplink only; mrfs orders UEs by the flow sizes pDCell's CU reports, so the
/// downlink only.
pub const UPLINK_SCHEDULERS: [&str; 4] = ["rr", "pf", "smec", "tutti"];
pub const DOWNLINK_SCHEDULERS: [&str; 4] = ["rr", "pf", "smec", "mrfs"];

/// Why a scheduler runs in one direction only (for its error message).
pub fn why_one_direction(name: &str) -> &'static str {
    match name {
        "tutti" => "tutti learns uplink request starts from the edge",
        "mrfs" => "mrfs orders UEs by the flow sizes pDCell's CU reports",
        _ => "a scheduler of one direction",
    }
}

/// Every scheduler's name once, uplink's first.
pub fn all_schedulers() -> Vec<&'static str> {
    let mut out = UPLINK_SCHEDULERS.to_vec();
    out.extend(DOWNLINK_SCHEDULERS.iter().filter(|d| !UPLINK_SCHEDULERS.contains(d)));
    out
}

/// What a scheduler is built from besides its name: the UEs' classes and the
/// best-effort starvation bound (smec, tutti), proportional fair's weights.
#[derive(Clone, Debug)]
pub struct SchedulerParams {
    pub classes: Vec<UeClass>,
    pub be_starvation_slots: u64,
    pub pf: ProportionalFair,
}

impl Default for SchedulerParams {
    fn default() -> Self {
        SchedulerParams { classes: Vec::new(), be_starvation_slots: 40, pf: ProportionalFair::default() }
    }
}

/// The scheduler named `name`, the one place a name becomes a scheduler (the
/// forwarder's cells, simulate-cell, the tests); `p.classes` has one class per
/// member for smec and tutti.
pub fn scheduler(name: &str, p: &SchedulerParams) -> Result<Box<dyn Scheduler>, String> {
    match name {
        "rr" => Ok(Box::new(RoundRobin::default())),
        "pf" => Ok(Box::new(p.pf)),
        "mrfs" => Ok(Box::new(Mrfs::default())),
        "smec" => Ok(Box::new(Smec::new(p.classes.clone(), p.be_starvation_slots))),
        "tutti" => Ok(Box::new(Smec::tutti(p.classes.clone(), p.be_starvation_slots))),
        other => Err(format!("{other:?} is not a scheduler; valid: {}", all_schedulers().join(", "))),
    }
}
