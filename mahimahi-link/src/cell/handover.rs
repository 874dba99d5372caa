//! Several cells on one slot clock, and a member's handover between them:
//! it leaves its cell at once (`detach`) and joins another after the
//! interruption (`attach`), its uplink unknown to the new cell.

use super::{CellConfig, CellCore, Members, OneCell, Scheduler, UplinkUe};

impl CellCore {
    /// Several cells on one slot clock, each with its scheduler and blocks; `start[i]`: member i's first cell.
    pub fn with_cells(members: usize, cfg: CellConfig, cells: Vec<(Box<dyn Scheduler>, u32)>, start: Vec<Option<usize>>) -> Self {
        let n = members;
        assert_eq!(start.len(), n, "one first cell per member");
        CellCore {
            cfg,
            cells: cells.into_iter().map(|(sched, blocks)| OneCell { sched, blocks, grants: Default::default(), taken: 0 }).collect(),
            of: start,
            slot: 0,
            allocated: false,
            served_avg: vec![0.0; n],
            departed_at_start: vec![0; n],
            alloc: vec![0; n],
            blocks_total: vec![0; n],
            log: None,
            ul: vec![UplinkUe::default(); n],
            detected: Vec::new(),
            moves: Vec::new(),
        }
    }

    /// The cell member `ue` is in (None: in none, between two).
    pub fn cell_of(&self, ue: usize) -> Option<usize> {
        self.of[ue]
    }

    /// A handover's start: member `ue` leaves its cell at once (call `advance_to` up to then first):
    /// no cell schedules it, its link sends nothing (its share is none) and what the gNB knew of its
    /// uplink (reports, an SR, grants not yet used) is gone, until `attach`.
    pub fn detach<P, M: Members<P>>(&mut self, ue: usize, m: &mut M) {
        self.of[ue] = None;
        self.moves.push((ue, None, self.slot));
        self.ul[ue] = UplinkUe::default();
        for c in &mut self.cells {
            for (_, g) in c.grants.iter_mut() {
                g[ue] = 0;
            }
        }
        self.alloc[ue] = 0;
        m.link_mut(ue).set_share(0, 1);
    }

    /// A handover's end: member `ue` joins `cell`, scheduled by it from the next slot on, its
    /// average served rate new (proportional fair's R) and its uplink unknown (it asks with an SR).
    pub fn attach<P, M: Members<P>>(&mut self, ue: usize, cell: usize, m: &mut M) {
        self.detach(ue, m);
        self.moves.pop();
        self.of[ue] = Some(cell);
        self.served_avg[ue] = 0.0;
        self.moves.push((ue, Some(cell), self.slot));
    }

    /// The members of cell `c`, in order.
    pub(super) fn members_of(&self, c: usize) -> Vec<usize> {
        (0..self.of.len()).filter(|&i| self.of[i] == Some(c)).collect()
    }
}
