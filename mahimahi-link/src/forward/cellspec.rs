//! A shared cell in the forwarder: its specification from the command line,
//! and the forwarder's links as the cell's members (crate::cell schedules them).

use super::{LogSink, Pkt, RunLink};
use crate::cell::{CellConfig, CellCore, MemberLinks, Members, SchedulerParams, UeClass};
use crate::link::Link;
use crate::Nanos;

/// One cell of a direction: its name (the timeline's handovers name it), scheduler and blocks.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub name: String,
    pub scheduler: String,
    pub blocks: u32,
}

/// One direction's shared cells (usually one): they share one slot clock,
/// each member is in one at a time.
#[derive(Clone)]
pub struct CellSpec {
    /// The slot clock and the uplink signalling (its `blocks`: the first cell's).
    pub cfg: CellConfig,
    pub sites: Vec<Site>,
    /// Each member's first cell (an index into `sites`), in the members' order.
    pub start: Vec<usize>,
    /// One per member (fewer: the rest best effort).
    pub classes: Vec<UeClass>,
    pub log_path: Option<String>,
    /// The member links' indices, in the cell's order (its UE numbers).
    pub members: Vec<usize>,
    pub be_starvation_slots: u64,
    pub pf: crate::cell::ProportionalFair,
}

impl CellSpec {
    pub(super) fn build(&self) -> Result<CellCore, String> {
        let mut classes = self.classes.clone();
        classes.resize(self.members.len(), UeClass::BestEffort);
        let mut cells = Vec::new();
        for site in &self.sites {
            let params = SchedulerParams { classes: classes.clone(), be_starvation_slots: self.be_starvation_slots, pf: self.pf };
            cells.push((crate::cell::scheduler(&site.scheduler, &params)?, site.blocks));
        }
        let start = (0..self.members.len()).map(|i| Some(self.start.get(i).copied().unwrap_or(0))).collect();
        Ok(CellCore::with_cells(self.members.len(), self.cfg, cells, start))
    }

    /// The cell named `name` (an index into `sites`).
    pub fn site(&self, name: &str) -> Option<usize> {
        self.sites.iter().position(|s| s.name == name)
    }

    /// How the cell log's header names the scheduler(s): "pf", or "a:pf:51,b:rr:25" for several cells.
    pub fn describe(&self) -> String {
        match self.sites.as_slice() {
            [one] => one.scheduler.clone(),
            many => many.iter().map(|s| format!("{}:{}:{}", s.name, s.scheduler, s.blocks)).collect::<Vec<_>>().join(","),
        }
    }
}

/// The forwarder's links as one direction's cell sees them; departures are
/// collected per link and sent on after the cell's step.
pub(super) struct CellMembers<'a> {
    pub(super) links: &'a mut [RunLink],
    pub(super) members: &'a [usize],
    pub(super) up: bool,
    pub(super) out: &'a mut Vec<(usize, Vec<(Nanos, Pkt)>)>,
}

impl MemberLinks<Pkt> for CellMembers<'_> {
    fn count(&self) -> usize {
        self.members.len()
    }
    fn link(&self, i: usize) -> &Link<Pkt> {
        let l = &self.links[self.members[i]];
        if self.up { &l.up.link } else { &l.down.link }
    }
}

impl Members<Pkt> for CellMembers<'_> {
    fn link_mut(&mut self, i: usize) -> &mut Link<Pkt> {
        let l = &mut self.links[self.members[i]];
        if self.up { &mut l.up.link } else { &mut l.down.link }
    }
    fn run_to(&mut self, i: usize, until: Nanos) {
        let i = self.members[i];
        let d = if self.up { &mut self.links[i].up } else { &mut self.links[i].down };
        let mut deps = Vec::new();
        let mut sink = LogSink { log: d.log.as_mut(), out: &mut deps };
        d.link.advance_to(until, &mut sink);
        if !deps.is_empty() {
            self.out.push((i, deps));
        }
    }
}
