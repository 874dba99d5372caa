//! The forwarder's event loop: one clock reading per round, the links served,
//! then a sleep on a timerfd until the earliest next event, or on the rings
//! until a frame arrives (see the module documentation of forward).

use super::*;

/// What the loop waits on.
struct Waits {
    epoll: sys::Epoll,
    epoll_timed: sys::Epoll,
    timer: sys::TimerFd,
}

/// What the loop carries from one round to the next.
struct Round {
    next_stats: Nanos,
    next_flush: Nanos,
    armed: Option<Nanos>,
    last_active: Nanos,
    deps: Vec<(Nanos, Pkt)>,
}

impl Forwarder {
    /// Forward until a stop signal, the child (pidfd) exits, or `once` traces end.
    pub fn run(&mut self, child_pidfd: Option<i32>) -> Result<Stop, String> {
        sys::tight_timer_slack();
        if let Some(cpu) = self.cfg.cpu {
            sys::pin_to_cpu(cpu).map_err(|e| format!("--cpu={cpu}: {e}"))?;
        }
        let waits = self.waits(child_pidfd)?;
        self.begin();
        let mut r = Round { next_stats: 0, next_flush: 1_000_000_000, armed: None, last_active: 0, deps: Vec::new() };
        let mut fired = Vec::new();
        let stop = loop {
            if let Some(sig) = sys::stop_signal() {
                break Stop::Signal(sig);
            }
            self.restart_traces(&mut r.deps);
            let mono = sys::monotonic_ns();
            let real_offset = sys::realtime_ns() - mono + self.t0;
            let now = mono - self.t0;
            self.apply_timeline(now, real_offset, &mut r.deps);
            let (busy, tx_left) = self.serve(now, real_offset, &mut r)?;
            if !self.cfg.link_opts.repeat && self.links.iter().all(|l| l.up.link.finished() && l.down.link.finished()) {
                break Stop::TracesEnded;
            }
            if busy {
                r.last_active = now;
                continue;
            }
            let mut next = r.next_flush;
            if tx_left {
                // The kernel took only part of a TX batch (send buffer full): kick
                // the rest again shortly, as its earlier frames complete.
                next = now + TX_RETRY_NS;
            }
            if self.cfg.stats_path.is_some() {
                next = next.min(r.next_stats);
            }
            let now2 = sys::monotonic_ns() - self.t0;
            let (next, next_busy) = self.next_events(now2, next);
            // A shared cell needs no wakeups of its own: its members' links are
            // among the links above (a busy one batched like any other), and
            // each call of advance_cell schedules every slot up to its time,
            // each from the queues at that slot's start (an arrival advances
            // the cell before it is queued), so a late call gives the same slots.
            if next <= now2 {
                continue;
            }
            let backlogged = next_busy.is_some();
            let deadline = next_busy.map_or(next, |b| b.min(next));
            self.arm_rings(&waits.epoll)?;
            // Just after traffic and with no queue backlogged, keep polling the rings
            // a moment: a reply (a ping's, an ACK) often follows within tens of
            // microseconds, and catching it here saves it a wakeup.
            if !backlogged && now2 - r.last_active < POLL_NS {
                std::hint::spin_loop();
                continue;
            }
            if self.sleep_until(deadline, now2, &waits, &mut r, &mut fired) {
                break Stop::ChildExited;
            }
        };
        self.finish()?;
        Ok(stop)
    }

    /// Two wait sets: with frames (links idle: the next frame is the next
    /// event) and without (a link is busy: frames wait in the ring, with
    /// their kernel timestamps, until the next timed event); both with the
    /// timer (token 0) and the child (1); the rings are token 2.
    fn waits(&self, child_pidfd: Option<i32>) -> Result<Waits, String> {
        let epoll = sys::Epoll::new().map_err(|e| e.to_string())?;
        let epoll_timed = sys::Epoll::new().map_err(|e| e.to_string())?;
        let timer = sys::TimerFd::new().map_err(|e| e.to_string())?;
        for ep in [&epoll, &epoll_timed] {
            ep.add(timer.0, 0).map_err(|e| e.to_string())?;
            if let Some(fd) = child_pidfd {
                ep.add(fd, 1).map_err(|e| e.to_string())?;
            }
        }
        for l in &self.links {
            for fd in l.ue.fds().into_iter().chain(l.core.fds()) {
                epoll.add(fd, 2).map_err(|e| e.to_string())?;
            }
        }
        Ok(Waits { epoll, epoll_timed, timer })
    }

    /// Time starts: the logs' headers carry it.
    fn begin(&mut self) {
        self.t0 = sys::monotonic_ns();
        let init_ms = crate::unix_ms();
        // Slot 0 starts at t0: its wall-clock time lets the log be read
        // against the workload's own timestamps (time.time_ns()).
        let t0_unix_ns = sys::realtime_ns() - (sys::monotonic_ns() - self.t0);
        for (out, _) in self.cell_logs.iter_mut().flatten() {
            out.append(format!("t0 {t0_unix_ns}\n").into_bytes());
        }
        for n in &mut self.nics {
            n.begin(t0_unix_ns);
        }
        if let Some(cu) = self.cu.as_mut() {
            cu.begin(t0_unix_ns);
        }
        for l in &mut self.links {
            for d in [&mut l.up, &mut l.down] {
                if let Some(log) = d.log.as_mut() {
                    log.begin(init_ms);
                }
            }
        }
    }

    /// One round's work at `now`: every link's arrivals, delays and departures,
    /// the cells, the transmissions, and the statistics and log flushes when due.
    /// Returns whether a ring had frames, and whether transmissions are left.
    fn serve(&mut self, now: Nanos, real_offset: u64, r: &mut Round) -> Result<(bool, bool), String> {
        let mut busy = false;
        let mut tx_left = false;
        for li in 0..self.links.len() {
            busy |= self.receive(li, now, real_offset, &mut r.deps);
            self.release_delayed(li, now, &mut r.deps);
            self.advance(li, now, &mut r.deps);
        }
        self.advance_cell(true, now);
        self.advance_cell(false, now);
        self.serve_cu(now);
        self.serve_nics(now);
        if self.senders.iter().any(|(_, s)| s.pending() > 0) {
            r.last_active = now;
            tx_left = !self.flush_tx();
        }
        if self.cfg.stats_path.is_some() && now >= r.next_stats {
            self.write_stats(now);
            r.next_stats = now + self.cfg.stats_interval_ns;
        }
        if now >= r.next_flush {
            self.collect_ring_drops();
            self.flush_logs()?;
            r.next_flush = now + 1_000_000_000;
        }
        Ok((busy, tx_left))
    }

    /// The next timed event of the idle links (at most `next`), and of the busy
    /// ones (None: none is busy). Batch the wakeups of a busy link (a queue of 2
    /// or more packets in either direction): its events then happen up to its
    /// batch window late (its opportunities are still used exactly). A busy
    /// link's reverse traffic (ACKs) would otherwise cost a wakeup per packet.
    /// Other links keep their own timing, and so does every link at low load
    /// (a lone packet, a ping).
    fn next_events(&self, now2: Nanos, mut next: Nanos) -> (Nanos, Option<Nanos>) {
        let mut next_busy: Option<Nanos> = None;
        for t in [self.timed.next_at(), self.nic_next, self.cu.as_ref().and_then(|c| c.next_event())].into_iter().flatten() {
            next = next.min(t);
        }
        for l in &self.links {
            for t in [l.up.next_release(), l.down.next_release()].into_iter().flatten() {
                next = next.min(t);
            }
            let batch = [&l.up, &l.down].iter().filter(|d| d.link.queued_packets() >= 2).map(|d| d.batch_ns).min();
            let events = [l.up.link.next_event(), l.down.link.next_event()]
                .into_iter()
                .flatten()
                .chain(l.delay_up.iter().chain(l.delay_down.iter()).filter_map(|q| q.front().map(|e| e.0)));
            for t in events {
                match batch {
                    Some(b) => {
                        let t = t.max(now2 + b);
                        next_busy = Some(next_busy.map_or(t, |n| n.min(t)));
                    }
                    None => next = next.min(t),
                }
            }
        }
        (next, next_busy)
    }

    /// A busy link's frames are picked up at its batch deadline (their kernel
    /// timestamps keep their arrival times exact); other links' frames still
    /// wake the loop.
    fn arm_rings(&mut self, epoll: &sys::Epoll) -> Result<(), String> {
        for l in &mut self.links {
            let idle = l.up.link.queued_packets() < 2 && l.down.link.queued_packets() < 2;
            for sock in [&mut l.ue, &mut l.core] {
                if sock.rx_armed != idle {
                    for fd in sock.fds() {
                        epoll.arm(fd, 2, idle).map_err(|e| e.to_string())?;
                    }
                    sock.rx_armed = idle;
                }
            }
        }
        Ok(())
    }

    /// Wait for `deadline` (or a frame, where the rings are armed): spinning when it is
    /// closer than a sleep costs, else on the timer. Returns whether the child exited.
    fn sleep_until(&self, deadline: Nanos, now2: Nanos, w: &Waits, r: &mut Round, fired: &mut Vec<u64>) -> bool {
        if deadline - now2 <= SPIN_NS {
            // Sleeping and waking again costs more than this (a timer, a VM exit
            // and a context switch: ~25 us here); wait on the clock instead.
            while sys::monotonic_ns() - self.t0 < deadline {
                std::hint::spin_loop();
            }
            return false;
        }
        // Re-arming an hrtimer is costly (a VM exit on virtual machines); keep an
        // earlier, still pending deadline: waking early only costs one loop round.
        if !r.armed.is_some_and(|a| a > now2 && a <= deadline) {
            w.timer.set(self.t0 + deadline);
            r.armed = Some(deadline);
        }
        if deadline - now2 <= self.cfg.coalesce_ns {
            w.epoll_timed.wait(fired, -1);
        } else {
            w.epoll.wait(fired, -1);
        }
        if fired.contains(&0) {
            w.timer.drain();
            r.armed = None;
        }
        fired.contains(&1)
    }

    /// The last statistics and log lines, everything written out.
    fn finish(&mut self) -> Result<(), String> {
        let now = sys::monotonic_ns() - self.t0;
        self.collect_ring_drops();
        if self.cfg.stats_path.is_some() {
            self.write_stats(now);
        }
        if let Some(cu) = self.cu.as_mut() {
            cu.finish();
        }
        self.flush_logs()?;
        self.writer.finish()
    }

    /// Carry out a trace restart asked for since the last round (SIGUSR2):
    /// every link runs to the signal's instant on its old phase, then starts
    /// its trace over from there. Taken from the signal's own timestamp, so a
    /// forwarder that notices it late (asleep until its next event) restarts
    /// at the same instant as the others.
    pub(super) fn restart_traces(&mut self, deps: &mut Vec<(Nanos, Pkt)>) {
        let asked = sys::trace_restart_at();
        if asked == self.restart_seen {
            return;
        }
        self.restart_seen = asked;
        let at = asked.saturating_sub(self.t0);
        for li in 0..self.links.len() {
            self.advance(li, at, deps);
        }
        self.advance_cell(true, at);
        self.advance_cell(false, at);
        self.rearm_timeline(at);
        for l in &mut self.links {
            l.up.link.restart_trace(at);
            l.down.link.restart_trace(at);
            for b in [l.up.burst.as_mut(), l.down.burst.as_mut()].into_iter().flatten() {
                b.restart_trace(at);
            }
        }
        // Not a warning: said even with --quiet, once per restart (by one thread), for the run's log.
        if sys::first_to_report_restart(asked) {
            eprintln!("mahimahi-link: every trace restarted from its first line at {:.3} s (SIGUSR2)", at as f64 / 1e9);
        }
    }

    /// Add the kernel's receive-ring drops to each direction's count (frames
    /// from the UE side were uplink arrivals, from the core side downlink
    /// ones) and say so once: such a loss is the emulator falling behind, not
    /// the link, and must not pass for the trace's behaviour.
    pub(super) fn collect_ring_drops(&mut self) {
        for l in &mut self.links {
            for (sock, d) in [(&l.ue, &mut l.up), (&l.core, &mut l.down)] {
                let n = sock.take_ring_drops();
                if n == 0 {
                    continue;
                }
                d.extra.ring_drops += n;
                if !self.cfg.quiet && !self.warned_ring_drops {
                    self.warned_ring_drops = true;
                    crate::say!(
                        "mahimahi-link: link {}: {n} frames arriving on {} were lost because its receive ring ({} slots) was full: the emulator fell behind a burst. They count as ring_drops in the statistics; --ring-frames raises the ring size (further losses are counted silently)",
                        l.name,
                        sock.name,
                        sock.rx_slots()
                    );
                }
            }
        }
    }

    /// Hand gathered log lines to the writer thread; report a write error.
    pub(super) fn flush_logs(&mut self) -> Result<(), String> {
        for ((cell, log), spec) in self.cells.iter_mut().zip(self.cell_logs.iter_mut()).zip(self.cfg.cells.iter()) {
            let (Some(cell), Some((out, written)), Some(spec)) = (cell.as_mut(), log.as_mut(), spec.as_ref()) else {
                if let Some(c) = cell.as_mut() {
                    c.moves.clear(); // no log: nobody reads them
                }
                continue;
            };
            let names: Vec<String> = spec.sites.iter().map(|s| s.name.clone()).collect();
            let mut text = String::new();
            for r in cell.log.as_mut().map(std::mem::take).unwrap_or_default() {
                let _ = write!(text, "{}", r.slot);
                for b in &r.blocks {
                    let _ = write!(text, " {b}");
                }
                text.push_str(" | seen");
                for b in &r.backlog_bytes {
                    let _ = write!(text, " {b}");
                }
                if !r.srs.is_empty() {
                    text.push_str(" | sr");
                    for u in &r.srs {
                        let _ = write!(text, " {u}");
                    }
                }
                text.push('\n');
            }
            for (ue, start, at) in &cell.detections()[*written..] {
                let _ = writeln!(text, "start {ue} {start} {at}");
            }
            *written = cell.detections().len();
            for (ue, to, slot) in std::mem::take(&mut cell.moves) {
                let _ = writeln!(text, "move {ue} {} {slot}", to.map_or("-".to_string(), |c| names[c].clone()));
            }
            out.append(text.into_bytes());
        }
        for l in &mut self.links {
            for d in [&mut l.up, &mut l.down] {
                if let Some(log) = d.log.as_mut() {
                    log.flush();
                }
            }
        }
        self.flush_nic_logs();
        if let Some(cu) = self.cu.as_mut() {
            cu.flush();
        }
        self.writer.take_error().map_or(Ok(()), Err)
    }
}
