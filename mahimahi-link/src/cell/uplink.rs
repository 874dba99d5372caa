//! The uplink's signalling (TS 38.321): scheduling requests at their
//! opportunities, the small grant that answers one, buffer status reports
//! quantized by the short-BSR table, and grants used k2 slots after they are
//! decided. The gNB sees only what the UEs reported.

use super::{CellCore, MemberLinks, UeView};

/// TS 38.321 uplink signalling, in slots.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UplinkSignalling {
    /// SR opportunities every this many slots (UE i's at slot % period == i % period).
    pub sr_period_slots: u64,
    /// Slots from a grant's decision to its use (k2).
    pub k2_slots: u64,
    /// Blocks of the grant that answers an SR (room for a BSR and a little data).
    pub sr_grant_blocks: u32,
    /// periodicBSR-Timer in slots. None: a BSR rides in every transmission
    /// (padding always fits). Some(p): a transmitting UE reports only when
    /// its grant had room left (padding BSR), when data arrived for a buffer
    /// it last reported empty (regular BSR), or p slots after its last report.
    pub periodic_bsr_slots: Option<u64>,
}

impl Default for UplinkSignalling {
    fn default() -> Self {
        UplinkSignalling { sr_period_slots: 20, k2_slots: 4, sr_grant_blocks: 2, periodic_bsr_slots: None }
    }
}

/// TS 38.321 Table 6.1.3.1-1: buffer size levels (bytes) of the 5-bit (short)
/// BSR; index 31 means more than 150000.
pub const SHORT_BSR_LEVELS: [u64; 31] = [
    0, 10, 14, 20, 28, 38, 53, 74, 102, 142, 198, 276, 384, 535, 745, 1038, 1446, 2014, 2806, 3909, 5446, 7587, 10570,
    14726, 20516, 28581, 39818, 55474, 77284, 107669, 150000,
];

/// What the gNB learns from a short BSR of `bytes`: the smallest level that
/// covers them (the report rounds up), or 150001 for "more than 150000".
pub fn short_bsr(bytes: u64) -> u64 {
    SHORT_BSR_LEVELS.iter().copied().find(|&l| l >= bytes).unwrap_or(150_001)
}

/// What the gNB knows of one UE's uplink.
#[derive(Clone, Debug, Default)]
pub(super) struct UplinkUe {
    /// Bytes from the last BSR, less what was granted since.
    reported: u64,
    /// Bytes granted but not yet used (decided, waiting k2 slots).
    in_flight: u64,
    /// Data arrived with nothing reported: an SR waits for the UE's next opportunity.
    sr_pending: bool,
    /// The gNB got an SR and has not granted it yet.
    sr_received: bool,
    /// When that SR arrived (SMEC dates a request's start by it).
    sr_slot: Option<u64>,
    /// Bytes granted for the current slot (used at its end for the books).
    granted_now: u64,
    /// The slot of the UE's last BSR, and whether it said "empty".
    last_bsr_slot: u64,
    last_bsr_empty: bool,
}

impl CellCore {
    /// The schedulers see reports; each decides grants for k2 slots ahead, and
    /// this slot uses the grants decided k2 slots ago.
    pub(super) fn allocate_signalled<P, M: MemberLinks<P>>(&mut self, m: &M, ul: UplinkSignalling) -> Vec<u32> {
        let s = self.slot;
        let n = m.count();
        let mut srs = Vec::new();
        for i in 0..n {
            if self.of[i].is_none() || m.link(i).dark_at(s * self.cfg.slot_ns) {
                continue; // out of every cell, or of coverage: no SR reaches a gNB
            }
            let u = &mut self.ul[i];
            if m.link(i).queued_bytes() > 0 && u.reported == 0 && u.in_flight == 0 && !u.sr_received {
                u.sr_pending = true;
            }
            if u.sr_pending && s % ul.sr_period_slots == i as u64 % ul.sr_period_slots {
                u.sr_pending = false;
                u.sr_received = true;
                u.sr_slot = Some(s);
                srs.push(i);
            }
        }
        let target = s + ul.k2_slots;
        let (mut now_all, mut seen) = (vec![0u32; n], vec![UeView::default(); n]);
        for u in &mut self.ul {
            u.granted_now = 0;
        }
        for c in 0..self.cells.len() {
            let mine = self.members_of(c);
            let mut views = self.views(m, target, c);
            let blocks = self.cells[c].blocks;
            for &i in &mine {
                let (v, u) = (&mut views[i], &self.ul[i]);
                let sr_bytes = v.capacity_bytes * ul.sr_grant_blocks as u64 / blocks as u64;
                v.backlog_bytes = if u.reported > 0 { u.reported } else if u.sr_received { sr_bytes.max(1) } else { 0 };
                v.sr_slot = if u.sr_received { u.sr_slot } else { None };
                v.grant_pending = u.in_flight > 0;
            }
            let cell = &mut self.cells[c];
            let mut decided = vec![0u32; n];
            cell.sched.allocate(target, &views, blocks, &mut decided);
            assert!(decided.iter().sum::<u32>() <= blocks, "{} over-allocated", cell.sched.name());
            for i in 0..n {
                if decided[i] > 0 {
                    let bytes = views[i].capacity_bytes * decided[i] as u64 / blocks as u64;
                    let u = &mut self.ul[i];
                    u.reported = u.reported.saturating_sub(bytes);
                    u.in_flight += bytes;
                    u.sr_received = false;
                    u.sr_slot = None;
                }
            }
            cell.grants.push_back((target, decided));
            while cell.grants.front().is_some_and(|(t, _)| *t < s) {
                cell.grants.pop_front(); // decided for slots skipped while the cell was idle (all zero)
            }
            let now = match cell.grants.front() {
                Some((t, _)) if *t == s => cell.grants.pop_front().map(|(_, g)| g).unwrap_or_default(),
                _ => vec![0; n],
            };
            let cap = self.views(m, s, c);
            for &i in &mine {
                now_all[i] = now[i];
                seen[i] = views[i];
                self.ul[i].granted_now = cap[i].capacity_bytes * now[i] as u64 / blocks as u64;
            }
        }
        self.log_slot(&now_all, &seen, srs);
        now_all
    }
}

impl UplinkUe {
    /// Nothing reported, asked for or granted: the gNB has nothing to schedule for it.
    pub(super) fn quiet(&self) -> bool {
        !self.sr_pending && !self.sr_received && self.reported == 0 && self.in_flight == 0
    }
}

impl CellCore {
    /// At a slot's end each UE that transmitted reports what is left (a BSR in
    /// the same transmission); the grant it used is spent.
    pub(super) fn report_buffers<P, M: MemberLinks<P>>(&mut self, m: &M, ul: UplinkSignalling) {
        for (i, u) in self.ul.iter_mut().enumerate() {
            if self.alloc[i] > 0 {
                u.in_flight = u.in_flight.saturating_sub(u.granted_now);
                let queued = m.link(i).queued_bytes();
                let sent = m.link(i).counters.departed_bytes - self.departed_at_start[i];
                let report = match ul.periodic_bsr_slots {
                    None => true,
                    Some(p) => sent < u.granted_now || (u.last_bsr_empty && queued > 0) || self.slot >= u.last_bsr_slot + p,
                };
                if report {
                    u.reported = short_bsr(queued);
                    u.last_bsr_slot = self.slot;
                    u.last_bsr_empty = queued == 0;
                }
            }
            u.granted_now = 0;
        }
    }
}
