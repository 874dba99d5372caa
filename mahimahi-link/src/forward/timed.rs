//! The timeline ([`crate::timeline`]) as one forwarding thread applies it:
//! each change at its time on the link's own clock (the link is run to that
//! instant first, so what it delivered before and after is exact), whatever
//! the loop's wakeup latency; each applied change logged with that latency.

use super::*;
use crate::timeline::Change;

/// A change resolved to this thread's link and delay rule.
#[derive(Clone)]
enum Applied {
    Outage { duration: Nanos, flush: bool },
    Trace { up: bool, trace: Arc<Trace>, aligned: bool },
    Delay { rule: usize, delay_ns: Nanos },
    /// A handover's start: the member leaves its cells (per direction) and its link is dark for `duration`.
    Leave { duration: Nanos, flush: bool },
    /// ... and its end: it joins the cell of this index in each direction that has cells.
    Join { cells: [Option<usize>; 2] },
}

pub(super) struct Timed {
    /// (time after the latest restart, link index, change, the line as written), in time order.
    events: Vec<(Nanos, usize, Applied, String)>,
    next: usize,
    /// When the latest trace restart happened (ns since t0); None before the first: nothing applies
    /// while an experiment is still being set up (its network checks must see the links as configured).
    epoch: Option<Nanos>,
    log: Option<std::fs::File>,
}

impl Timed {
    /// This thread's events: those for its links (a `*` event for each of them).
    /// Names and prefixes are checked against the whole command line before
    /// the links are split among threads ([`check`]).
    pub(super) fn resolve(cfg: &ForwardConfig, links: &[RunLink]) -> Result<Timed, String> {
        let mut events = Vec::new();
        for e in &cfg.timeline {
            for (li, l) in links.iter().enumerate() {
                if e.link.as_ref().is_some_and(|n| *n != l.name) {
                    continue;
                }
                let change = match &e.change {
                    Change::Outage { duration, flush } => Applied::Outage { duration: *duration, flush: *flush },
                    Change::Trace { up, trace, aligned, .. } => Applied::Trace { up: *up, trace: trace.clone(), aligned: *aligned },
                    Change::Delay { prefix, delay_ns } => match cfg.delays.iter().position(|d| d.prefix == *prefix) {
                        Some(rule) => Applied::Delay { rule, delay_ns: *delay_ns },
                        None => continue, // checked before: cannot happen
                    },
                    Change::Handover { cell, interruption, flush } => {
                        let cells = [0, 1].map(|k| cfg.cells[k].as_ref().and_then(|c| c.site(cell)));
                        events.push((e.at + interruption, li, Applied::Join { cells }, format!("joins {cell}")));
                        Applied::Leave { duration: *interruption, flush: *flush }
                    }
                };
                events.push((e.at, li, change, e.text.clone()));
            }
        }
        events.sort_by_key(|e| e.0); // stable: a handover's end after what the file has at its time
        let log = match (&cfg.timeline_log, events.is_empty()) {
            (Some(p), false) => Some(
                std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| format!("--timeline-log: cannot open {p}: {e}"))?,
            ),
            _ => None,
        };
        Ok(Timed { events, next: 0, epoch: None, log })
    }

    /// When the next change is due (ns since t0).
    pub(super) fn next_at(&self) -> Option<Nanos> {
        Some(self.epoch? + self.events.get(self.next)?.0)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
}

/// Every event's link and delay prefix exist, and a handover moves a shared
/// cell's member to a cell of its direction(s) that it is not already bound
/// to at the start (a member's outage and trace switch act on its link, which
/// the cell schedules: a dark member gets no blocks, a switched one its new channel).
pub fn check(cfg: &ForwardConfig) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    for e in &cfg.timeline {
        let at = e.at as f64 / 1e6;
        let li = match &e.link {
            Some(n) => match cfg.links.iter().position(|l| l.name == *n) {
                None => {
                    errors.push(format!("--timeline: {at} ({}): no --link is named {n:?}", e.text));
                    None
                }
                found => found,
            },
            None => None,
        };
        if let (Change::Handover { cell, .. }, Some(li)) = (&e.change, li) {
            let dirs: Vec<&super::CellSpec> = cfg.cells.iter().flatten().filter(|c| c.members.contains(&li)).collect();
            if dirs.is_empty() {
                errors.push(format!("--timeline: {at} ({}): link {:?} is in no shared cell (--cell-members)", e.text, cfg.links[li].name));
            }
            for c in dirs {
                if c.site(cell).is_none() {
                    let names: Vec<&str> = c.sites.iter().map(|s| s.name.as_str()).collect();
                    errors.push(format!("--timeline: {at} ({}): no cell is named {cell:?}; cells (--cells): {}", e.text, names.join(", ")));
                }
            }
        }
        if let Change::Delay { prefix, .. } = &e.change {
            if !cfg.delays.iter().any(|d| d.prefix == *prefix) {
                errors.push(format!("--timeline: {} ({}): no --delay rule has the prefix {prefix:?}", e.at as f64 / 1e6, e.text));
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

impl Forwarder {
    /// Apply every change due by `now`, each at its own time.
    pub(super) fn apply_timeline(&mut self, now: Nanos, real_offset: u64, deps: &mut Vec<(Nanos, Pkt)>) {
        while let Some(at) = self.timed.next_at().filter(|&t| t <= now) {
            let (rel, li, change, text) = self.timed.events[self.timed.next].clone();
            self.timed.next += 1;
            self.advance(li, at, deps);
            self.advance_cell(true, at); // a member's link is the cell's to run: to this instant, too
            self.advance_cell(false, at);
            match change {
                Applied::Outage { duration, flush } => {
                    let l = &mut self.links[li];
                    for d in [&mut l.up, &mut l.down] {
                        let mut sink = LogSink { log: d.log.as_mut(), out: deps };
                        d.link.outage(at + duration, flush, &mut sink);
                    }
                }
                Applied::Trace { up, trace, aligned } => {
                    let l = &mut self.links[li];
                    let d = if up { &mut l.up } else { &mut l.down };
                    d.batch_ns = batch_window(&trace, self.cfg.batch_ns);
                    d.link.switch_trace(trace, aligned);
                }
                Applied::Delay { rule, delay_ns } => self.links[li].delay_ns[rule] = delay_ns,
                Applied::Leave { duration, flush } => {
                    for up in [true, false] {
                        self.move_member(li, up, None);
                    }
                    let l = &mut self.links[li];
                    for d in [&mut l.up, &mut l.down] {
                        let mut sink = LogSink { log: d.log.as_mut(), out: deps };
                        d.link.outage(at + duration, flush, &mut sink);
                    }
                }
                Applied::Join { cells } => {
                    for (k, up) in [(0, true), (1, false)] {
                        self.move_member(li, up, cells[k]);
                    }
                }
            }
            let l = &self.links[li];
            if let Some(f) = self.timed.log.as_mut() {
                use std::io::Write as _;
                // UNIX_NS (when it applied, on the link's clock) T_MS (after the restart) LATE_US (the loop's) LINK CHANGE
                let line = format!("{} {:.3} {:.0} {} {}\n", at + real_offset, rel as f64 / 1e6, (now - at) as f64 / 1e3, l.name, text);
                let _ = f.write_all(line.as_bytes());
            }
        }
    }

    /// Link `li` leaves its cell in one direction (`to` None) or joins cell `to` there
    /// (nothing where that direction has no cells or the link is not a member).
    fn move_member(&mut self, li: usize, up: bool, to: Option<usize>) {
        let k = usize::from(!up);
        let (Some(ue), Some(mut cell), Some(spec)) = (self.member_of[k][li], self.cells[k].take(), self.cfg.cells[k].as_ref()) else { return };
        let mut out = Vec::new();
        let mut m = CellMembers { links: &mut self.links, members: &spec.members, up, out: &mut out };
        match to {
            None => cell.detach(ue, &mut m),
            Some(c) => cell.attach(ue, c, &mut m),
        }
        self.cells[k] = Some(cell);
    }

    /// A trace restart: every link back as the command line made it (and every cell member
    /// in its first cell), and the timeline from its start (the caller restarts the traces after this).
    pub(super) fn rearm_timeline(&mut self, at: Nanos) {
        if self.timed.is_empty() {
            return;
        }
        for (k, up) in [(0, true), (1, false)] {
            let Some(spec) = self.cfg.cells[k].clone() else { continue };
            for (ue, &li) in spec.members.iter().enumerate() {
                let first = spec.start.get(ue).copied().unwrap_or(0);
                if self.cells[k].as_ref().is_some_and(|c| c.cell_of(ue) != Some(first)) {
                    self.move_member(li, up, Some(first));
                }
            }
        }
        for (li, l) in self.links.iter_mut().enumerate() {
            let spec = &self.cfg.links[li];
            for (d, s) in [(&mut l.up, &spec.up), (&mut l.down, &spec.down)] {
                if !Arc::ptr_eq(&s.trace, d.link.trace_arc()) {
                    d.link.switch_trace(s.trace.clone(), false);
                    d.batch_ns = batch_window(&s.trace, self.cfg.batch_ns);
                }
            }
            l.delay_ns = self.cfg.delays.iter().map(|d| d.delay_ns).collect();
        }
        self.timed.epoch = Some(at);
        self.timed.next = 0;
    }
}
