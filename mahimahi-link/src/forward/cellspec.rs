//! A shared cell in the forwarder: its specification from the command line,
//! and the forwarder's links as the cell's members (crate::cell schedules them).

use super::{LogSink, Pkt, RunLink};
use crate::cell::{CellConfig, CellCore, MemberLinks, Members, Scheduler, Smec, UeClass};
use crate::link::Link;
use crate::Nanos;

/// One direction's shared cell.
#[derive(Clone)]
pub struct CellSpec {
    pub cfg: CellConfig,
    pub scheduler: String,
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
        let sched: Box<dyn Scheduler> = match self.scheduler.as_str() {
            "smec" => Box::new(Smec::new(classes, self.be_starvation_slots)),
            "tutti" => Box::new(Smec::tutti(classes, self.be_starvation_slots)),
            "pf" => Box::new(self.pf),
            name => crate::cell::scheduler(name)?,
        };
        Ok(CellCore::new(self.members.len(), self.cfg, sched))
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
