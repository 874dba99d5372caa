//! The live statistics file (--stats): one JSON document per interval, every
//! link's rates, queues and counters, replaced atomically by the writer thread.

use super::Forwarder;
use crate::Nanos;
use std::fmt::Write as _;

impl Forwarder {
    /// Live statistics as one JSON document, replaced atomically by the writer thread.
    /// Rates cover the time since the previous write. They are kept from the last
    /// busy interval when the link was idle since (`idle`: nothing departed or
    /// waited; an idle link's capacity is not a measurement) and when a write comes
    /// less than half an interval after the previous one (the one at exit). The
    /// whole-run means still say something after the run.
    pub(super) fn write_stats(&mut self, now: Nanos) {
        let Some(path) = self.cfg.stats_path.clone() else { return };
        let elapsed = now.saturating_sub(self.stats_at);
        let fresh = elapsed * 2 >= self.cfg.stats_interval_ns && elapsed > 0;
        if fresh {
            self.stats_at = now;
        }
        let elapsed_s = elapsed as f64 / 1e9;
        let run_s = (now as f64 / 1e9).max(1e-9);
        let mbps = |bytes: u64, s: f64| bytes as f64 * 8.0 / s / 1e6;
        let mut entries = Vec::with_capacity(self.links.len());
        for l in self.links.iter_mut() {
            let mut s = String::new();
            s.push_str("{\"name\": ");
            json_string(&mut s, &l.name);
            for (label, d) in [("uplink", &mut l.up), ("downlink", &mut l.down)] {
                let mut c = d.link.counters;
                // With a light stage: what reached the direction, and what left it past the heavy queue too.
                let b = d.burst.as_ref().map(|b| (b.counters, b.held_packets() as u64)).unwrap_or_default();
                if d.burst.is_some() {
                    (c.arrived_packets, c.arrived_bytes) = (b.0.arrived_packets, b.0.arrived_bytes);
                    c.departed_packets += b.0.bypassed_packets;
                    c.departed_bytes += b.0.bypassed_bytes;
                }
                let idle = c.departed_bytes == d.last_departed_bytes && d.link.queued_packets() == 0;
                if fresh {
                    let opps = c.opportunities - d.last_opps;
                    if !idle {
                        d.last_rates = (mbps(opps * crate::OPPORTUNITY_BYTES as u64, elapsed_s), mbps(c.departed_bytes - d.last_departed_bytes, elapsed_s));
                    }
                    d.last_opps = c.opportunities;
                    d.last_departed_bytes = c.departed_bytes;
                }
                let (cap, del) = d.last_rates;
                let e = d.extra;
                let r = d.radio.as_ref().map(|(r, held)| (r.counters, held.len() as u64)).unwrap_or_default();
                let _ = write!(
                    s,
                    ", \"{label}\": {{\"queue_packets\": {}, \"queue_bytes\": {}, \"arrived_packets\": {}, \"arrived_bytes\": {}, \"departed_packets\": {}, \"departed_bytes\": {}, \"dropped_packets\": {}, \"dropped_bytes\": {}, \"lost_packets\": {}, \"bypassed_packets\": {}, \"unshaped_frames\": {}, \"oversize_frames\": {}, \"tx_full_drops\": {}, \"superframes\": {}, \"unsplittable_frames\": {}, \"ring_drops\": {}, \"opportunities\": {}, \"capacity_mbps\": {:.3}, \"delivered_mbps\": {:.3}, \"idle\": {}, \"mean_capacity_mbps\": {:.3}, \"mean_delivered_mbps\": {:.3}, \"light_held_packets\": {}, \"light_bypassed_packets\": {}, \"light_bursts\": {}, \"radio_held_packets\": {}, \"radio_blocks\": {}, \"radio_retransmissions\": {}, \"radio_lost_packets\": {}}}",
                    d.link.queued_packets(), d.link.queued_bytes(), c.arrived_packets, c.arrived_bytes, c.departed_packets, c.departed_bytes,
                    c.dropped_packets, c.dropped_bytes, e.lost_packets, e.bypassed_packets, e.unshaped_frames, e.oversize_frames, e.tx_full_drops,
                    e.superframes, e.unsplittable_frames, e.ring_drops, c.opportunities, cap, del, idle,
                    mbps(c.opportunities * crate::OPPORTUNITY_BYTES as u64, run_s), mbps(c.departed_bytes, run_s),
                    b.1, b.0.bypassed_packets, b.0.bursts, r.1, r.0.blocks, r.0.retransmissions, r.0.lost_packets
                );
            }
            s.push('}');
            entries.push(s);
        }
        let time_s = now as f64 / 1e9;
        let doc = match &self.cfg.stats_share {
            None => Some(format!("{{\"time_s\": {time_s:.6}, \"links\": [{}]}}\n", entries.join(", "))),
            Some(share) => share.compose(time_s, &self.cfg.link_ids, entries),
        };
        if let Some(doc) = doc {
            self.writer.replace(&path, doc);
        }
    }
}

/// `text` as a JSON string literal (link names come from the command line).
fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}
