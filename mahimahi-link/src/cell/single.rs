//! A cell that owns its members' links: simulate-cell, the tests and the
//! benchmarks (the forwarder's links live in its own structures and it drives
//! `CellCore` directly).

use super::{CellConfig, CellCore, MemberLinks, Members, Scheduler};
use crate::link::{Link, Sink};
use crate::Nanos;

/// A cell that owns its members' links (simulate-cell, tests, benchmarks).
pub struct Cell<P> {
    pub core: CellCore,
    pub links: Vec<Link<P>>,
}

pub(super) struct Owned<'a, P, S> {
    pub(super) links: &'a mut [Link<P>],
    pub(super) sinks: &'a mut [S],
}

impl<P, S> MemberLinks<P> for Owned<'_, P, S> {
    fn count(&self) -> usize {
        self.links.len()
    }
    fn link(&self, i: usize) -> &Link<P> {
        &self.links[i]
    }
}

impl<P, S: Sink<P>> Members<P> for Owned<'_, P, S> {
    fn link_mut(&mut self, i: usize) -> &mut Link<P> {
        &mut self.links[i]
    }
    fn run_to(&mut self, i: usize, until: Nanos) {
        self.links[i].advance_to(until, &mut self.sinks[i]);
    }
}

/// Read-only view of owned links (for `idle`/`next_event`, which run nothing).
struct Looking<'a, P>(&'a [Link<P>]);

impl<P> MemberLinks<P> for Looking<'_, P> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn link(&self, i: usize) -> &Link<P> {
        &self.0[i]
    }
}

impl<P> Cell<P> {
    pub fn new(links: Vec<Link<P>>, cfg: CellConfig, sched: Box<dyn Scheduler>) -> Self {
        Cell { core: CellCore::new(links.len(), cfg, sched), links }
    }

    /// Run the cell up to and including `now`; `sinks[i]` gets UE i's events.
    pub fn advance_to<S: Sink<P>>(&mut self, now: Nanos, sinks: &mut [S]) {
        self.core.advance_to(now, &mut Owned { links: &mut self.links, sinks });
    }

    /// A packet of charged `size` arrives at `now` for UE `ue`.
    pub fn enqueue<S: Sink<P>>(&mut self, ue: usize, size: u32, payload: P, now: Nanos, sinks: &mut [S]) {
        self.advance_to(now, sinks);
        self.links[ue].enqueue(size, payload, now, &mut sinks[ue]);
    }

    /// When to call `advance_to` again (None: only on an arrival).
    pub fn next_event(&self) -> Option<Nanos> {
        self.core.next_event(&Looking(&self.links))
    }

    pub fn request_started(&mut self, ue: usize, now: Nanos) {
        self.core.request_started(ue, now);
    }

    pub fn flow_remaining(&mut self, ue: usize, bytes: Option<u64>) {
        self.core.flow_remaining(ue, bytes);
    }

    pub fn detections(&self) -> &[(usize, u64, u64)] {
        self.core.detections()
    }
}
