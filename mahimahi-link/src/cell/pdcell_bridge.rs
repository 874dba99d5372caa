//! What the cell and pDCell's CU tell each other (src/pdcell/): the flows'
//! remaining bytes to the schedulers, the DU's view of each member to the CU.

use super::{CellCore, MemberLinks};

impl CellCore {
    /// pDCell's metadata: the bytes left of UE `ue`'s flow (told to every cell's scheduler: a UE keeps it across a handover).
    pub fn flow_remaining(&mut self, ue: usize, bytes: Option<u64>) {
        for c in &mut self.cells {
            c.sched.flow_remaining(ue, bytes);
        }
    }

    /// What the DU tells pDCell's CU of each member at the current slot: the
    /// bytes its grant carries (the slot's blocks, the spread of unneeded ones
    /// included), its channel with every block, and whether it has data queued.
    pub fn du_views<P, M: MemberLinks<P>>(&self, m: &M) -> Vec<crate::pdcell::DuView> {
        let start = self.slot * self.cfg.slot_ns;
        (0..m.count())
            .map(|i| {
                let Some(c) = self.of[i].filter(|_| !m.link(i).dark_at(start)) else { return crate::pdcell::DuView::default() };
                let channel = self.capacity(m.link(i), start);
                let granted = if self.allocated { self.alloc.get(i).copied().unwrap_or(0) as u64 } else { 0 };
                crate::pdcell::DuView { grant_bytes: channel * granted / self.cells[c].blocks.max(1) as u64, channel_bytes: channel,
                                        backlogged: m.link(i).queued_bytes() > 0 }
            })
            .collect()
    }
}
