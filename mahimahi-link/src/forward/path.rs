//! A frame's way through the forwarder: received from a ring, filtered (bypass,
//! core delay rules), shaped by its link's trace and queue (or its shared
//! cell), delayed, and transmitted; each step a method of the Forwarder.

use super::*;

impl Forwarder {
    /// Drain both RX rings of link `li`. Returns whether any frame was seen.
    pub(super) fn receive(&mut self, li: usize, now: Nanos, real_offset: u64, deps: &mut Vec<(Nanos, Pkt)>) -> bool {
        let mut seen = false;
        for uplink in [true, false] {
            for _ in 0..512 {
                let l = &mut self.links[li];
                let sock = if uplink { &mut l.ue } else { &mut l.core };
                let Some(fr) = sock.rx_peek() else { break };
                seen = true;
                if let Some(len) = fr.truncated_from {
                    let name = sock.name.clone();
                    sock.rx_release();
                    let d = if uplink { &mut l.up } else { &mut l.down };
                    d.extra.oversize_frames += 1;
                    if !self.warned_oversize && !self.cfg.quiet {
                        self.warned_oversize = true;
                        crate::say!(
                            "mahimahi-link: dropped a {len}-byte frame received on {name}: segmentation offload is on at the sending interface; turn it off there (ethtool -K DEV tso off gso off) so the link sees MTU-sized packets"
                        );
                    }
                    continue;
                }
                // With a virtio-net header a pending checksum travels on (NEEDS_CSUM).
                if fr.csum_not_ready && fr.vnet.is_none() {
                    crate::gso::complete_l4_checksum(fr.data);
                }
                // The kernel's receive time is the arrival time, so frames picked up
                // late (the loop sleeps while links are busy) keep exact timing.
                let at = match fr.ts_real_ns.checked_sub(real_offset) {
                    Some(t) if fr.ts_real_ns != 0 && t <= now => t,
                    _ => now,
                };
                let frame = Frame { data: fr.data.to_vec(), vnet: fr.vnet.map(|v| v.for_resend()).unwrap_or_default() };
                sock.rx_release();
                self.ingress(li, uplink, frame, at, deps);
            }
        }
        seen
    }

    fn ingress(&mut self, li: usize, uplink: bool, frame: Frame, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        let meta = packet::parse(&frame.data);
        let bypass = meta.is_some_and(|m| self.cfg.bypass.iter().any(|r| r.matches(&m)));
        let to_cu = if uplink { None } else { meta.and_then(|m| self.for_cu(li, &m)) };
        let l = &mut self.links[li];
        let Some(m) = meta else {
            // Not IP (ARP etc.): link-layer plumbing, forwarded unshaped and undelayed.
            let d = if uplink { &mut l.up } else { &mut l.down };
            d.extra.unshaped_frames += 1;
            self.transmit(li, uplink, frame);
            return;
        };
        if uplink {
            if bypass {
                l.up.extra.bypassed_packets += 1;
                let di = delay_index(&self.cfg.delays, m.dst);
                self.send_to_core(li, di, now, frame);
            } else {
                self.shape(li, true, frame, m.ip_len, now, deps);
                self.uplink_departures(li, deps);
            }
        } else {
            let notice = self.cfg.cell_notice_port.filter(|&p| m.ports.is_some_and(|(_, dst)| dst == p) && m.proto_udp);
            let after = match (notice.and(self.member_of[0][li]), bypass) {
                (Some(ue), _) => After::Notice(ue),
                (None, _) if to_cu.is_some() => After::Cu(to_cu.unwrap_or_default()),
                (None, true) => {
                    l.down.extra.bypassed_packets += 1;
                    After::ToUe
                }
                (None, false) => After::IntoDownlink,
            };
            match delay_index(&self.cfg.delays, m.src).filter(|i| self.links[li].delayed(*i, false)) {
                Some(i) => {
                    let l = &mut self.links[li];
                    push_delayed(&mut l.delay_down[i], now + l.delay_ns[i], frame, after);
                }
                None => self.deliver(li, after, frame, now, deps),
            }
        }
    }

    /// Offer a frame to a direction's link: a super-frame as its MTU
    /// segments, one after another, each charged and timed on its own.
    pub(super) fn shape(&mut self, li: usize, uplink: bool, frame: Frame, ip_len: u32, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        // In a shared cell the slots up to the frame's arrival are scheduled
        // first, so the link serves it with the right share.
        self.advance_cell(uplink, now);
        let quiet = self.cfg.quiet;
        let l = &mut self.links[li];
        let d = if uplink { &mut l.up } else { &mut l.down };
        if !frame.vnet.is_gso() {
            Self::offer(d, ip_len + 4, Pkt::Whole(frame), now, deps);
            return;
        }
        match SuperFrame::new(frame.data, &frame.vnet) {
            Ok(sf) => {
                d.extra.superframes += 1;
                let sf = Rc::new(sf);
                for k in 0..sf.segments() {
                    Self::offer(d, sf.segment_ip_len(k) + 4, Pkt::Segment(sf.clone(), k as u32), now, deps);
                }
            }
            Err(e) => {
                d.extra.unsplittable_frames += 1;
                if !self.warned_unsplittable && !quiet {
                    self.warned_unsplittable = true;
                    let dev = if uplink { &l.ue.name } else { &l.core.name };
                    crate::say!("mahimahi-link: dropped a frame received on {dev}: {e}; turn that offload off at the sender (e.g. ethtool -K DEV tx-udp-segmentation off)");
                }
            }
        }
    }

    /// One packet into a direction's link (random loss first).
    fn offer(d: &mut Direction, size: u32, p: Pkt, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        if d.loss > 0.0 && d.rng.next_f64() < d.loss {
            d.extra.lost_packets += 1;
            if let Some(log) = d.log.as_mut() {
                log.arrival(now, size);
                log.drop(now, 1, size as u64);
            }
            return;
        }
        d.enqueue(size, p, now, deps);
    }

    fn deliver(&mut self, li: usize, after: After, frame: Frame, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        match after {
            After::ToCore => self.reach_core(li, now, frame),
            After::ToUe => self.transmit(li, false, frame),
            After::IntoDownlink => {
                let Some(m) = packet::parse(&frame.data) else { return };
                self.shape(li, false, frame, m.ip_len, now, deps);
                self.downlink_departures(li, deps);
            }
            After::Cu(ue) => self.cu_arrive(li, ue, frame, now, deps),
            After::Notice(ue) => {
                // The slots before the notice are scheduled without it.
                self.advance_cell(true, now);
                if let Some(cell) = self.cells[0].as_mut() {
                    cell.request_started(ue, now);
                }
            }
        }
    }

    pub(super) fn send_to_core(&mut self, li: usize, rule: Option<usize>, t: Nanos, frame: Frame) {
        let l = &mut self.links[li];
        match rule.filter(|i| l.delayed(*i, true)) {
            Some(i) => push_delayed(&mut l.delay_up[i], t + l.delay_ns[i], frame, After::ToCore),
            None => self.reach_core(li, t, frame),
        }
    }

    /// Queue a frame for the core side (`to_core`) or the UE side of link
    /// `li`; it leaves with the round's other frames (see [`Sender`]).
    pub(super) fn transmit(&mut self, li: usize, to_core: bool, frame: Frame) {
        let l = &mut self.links[li];
        let ifindex = if to_core { l.core.ifindex } else { l.ue.ifindex };
        let sender = &mut self.senders[l.sender].1;
        if !sender.push(ifindex, &frame.vnet, frame.data, (li as u32) << 1 | to_core as u32) {
            let d = if to_core { &mut l.up } else { &mut l.down };
            d.extra.tx_full_drops += 1;
        } else if sender.pending().is_multiple_of(TX_BURST) {
            // A long round (a flood picked up at once) sends as it goes, every
            // TX_BURST frames: not at every frame while the kernel's buffer is
            // full and frames stay queued.
            self.flush_tx();
        }
    }

    /// Send every queued frame; false while some wait for buffer space.
    /// Frames the kernel refuses count as TX drops of their direction.
    pub(super) fn flush_tx(&mut self) -> bool {
        let mut all = true;
        let (links, quiet, warned) = (&mut self.links, self.cfg.quiet, &mut self.warned_tx_error);
        for (_, sender) in &mut self.senders {
            all &= sender.flush(|tag, e| {
                let l = &mut links[(tag >> 1) as usize];
                let (d, dev) = if tag & 1 == 1 { (&mut l.up, &l.core.name) } else { (&mut l.down, &l.ue.name) };
                d.extra.tx_full_drops += 1;
                if !quiet && !*warned {
                    *warned = true;
                    crate::say!("mahimahi-link: link {}: the kernel refused a frame for {dev}: {e} (counted in tx_full_drops; further refusals are counted silently)", l.name);
                }
            });
        }
        all
    }

    fn uplink_departures(&mut self, li: usize, deps: &mut Vec<(Nanos, Pkt)>) {
        self.departures(li, true, deps);
    }

    pub(super) fn downlink_departures(&mut self, li: usize, deps: &mut Vec<(Nanos, Pkt)>) {
        self.departures(li, false, deps);
    }

    /// Frames the link let go: on at once, or into the radio's FIFO until its release (src/radio.rs).
    fn departures(&mut self, li: usize, up: bool, deps: &mut Vec<(Nanos, Pkt)>) {
        if deps.is_empty() {
            return;
        }
        for (t, frame) in assemble(deps) {
            let l = &mut self.links[li];
            match (if up { &mut l.up } else { &mut l.down }).radio.as_mut() {
                Some((radio, held)) => {
                    if let Some(at) = radio.release(t) {
                        held.push_back((at, frame));
                    }
                }
                None => self.departed(li, up, t, frame),
            }
        }
    }

    /// A frame past its link (and radio) at `t`: uplink on through its core delay, downlink to the UE.
    fn departed(&mut self, li: usize, up: bool, t: Nanos, frame: Frame) {
        if up {
            let di = packet::parse(&frame.data).and_then(|m| delay_index(&self.cfg.delays, m.dst));
            self.send_to_core(li, di, t, frame);
        } else {
            if self.cu.is_some() {
                self.cu_departed(li, &frame, t);
            }
            self.transmit(li, false, frame);
        }
    }

    /// Frames whose radio release has come, in order.
    pub(super) fn release_radio(&mut self, li: usize, now: Nanos) {
        for up in [true, false] {
            loop {
                let l = &mut self.links[li];
                let Some((_, held)) = (if up { &mut l.up } else { &mut l.down }).radio.as_mut() else { break };
                let Some((t, frame)) = held.pop_front_if(|(t, _)| *t <= now) else { break };
                self.departed(li, up, t, frame);
            }
        }
    }

    pub(super) fn release_delayed(&mut self, li: usize, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        for q in 0..self.cfg.delays.len() {
            for up in [true, false] {
                loop {
                    let l = &mut self.links[li];
                    let dq = if up { &mut l.delay_up[q] } else { &mut l.delay_down[q] };
                    match dq.front() {
                        Some((t, _, _)) if *t <= now => {}
                        _ => break,
                    }
                    let (t, frame, after) = dq.pop_front().expect("front");
                    // An ingress stage takes a frame at its own time: the stage keeps exact timing.
                    let at = if after == After::ToCore { t } else { now };
                    self.deliver(li, after, frame, at, deps);
                }
            }
        }
    }

    pub(super) fn advance(&mut self, li: usize, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        if self.member_of[0][li].is_none() {
            self.links[li].up.advance_to(now, deps);
        }
        self.uplink_departures(li, deps);
        if self.member_of[1][li].is_none() {
            self.links[li].down.advance_to(now, deps);
        }
        self.downlink_departures(li, deps);
        self.release_radio(li, now);
    }

    /// Run one direction's shared cell (if any) to `now`, every member's
    /// departures sent on as a private link's would be.
    pub(super) fn advance_cell(&mut self, up: bool, now: Nanos) {
        let k = usize::from(!up);
        let (Some(mut cell), Some(spec)) = (self.cells[k].take(), self.cfg.cells[k].as_ref()) else { return };
        let mut out = Vec::new();
        cell.advance_to(now, &mut CellMembers { links: &mut self.links, members: &spec.members, up, out: &mut out });
        self.cells[k] = Some(cell);
        for (li, mut deps) in out {
            self.departures(li, up, &mut deps);
            self.release_radio(li, now);
        }
    }
}

/// A frame into a delay rule's FIFO, released at `release` or with the frame
/// before it, whichever is later: after a timeline lowers a delay, packets
/// still never overtake one another.
fn push_delayed(q: &mut VecDeque<(Nanos, Frame, After)>, release: Nanos, frame: Frame, after: After) {
    let release = q.back().map_or(release, |b| b.0.max(release));
    q.push_back((release, frame, after));
}

impl RunLink {
    /// Whether a packet under delay rule `i` waits in its FIFO: a delay, or
    /// (its delay lowered to 0 by a timeline) frames still waiting ahead of it.
    fn delayed(&self, i: usize, up: bool) -> bool {
        self.delay_ns[i] > 0 || !(if up { &self.delay_up[i] } else { &self.delay_down[i] }).is_empty()
    }
}
