//! The radio's timing after the trace (issue #58's access procedure, its
//! second half): what a real cell adds to a packet the trace has already
//! given capacity to. A trace says when the link could carry a packet; a
//! cell then transmits it only in its direction's slots (TDD), after its
//! scheduling and processing pipeline, and a transport block the receiver
//! fails to decode is sent again a HARQ round trip later, the packets
//! behind it held until it arrives (RLC/PDCP deliver in order).
//!
//! Per direction, a packet leaving the link at `t`:
//! 1. is ready at `t + delay` (the pipeline: a scheduler's decision, the
//!    grant or assignment's lead time, decoding; every packet, busy or not);
//! 2. goes out in the slot holding that time if the direction may transmit
//!    in it (FDD: every slot), otherwise in the direction's next slot, and
//!    arrives at that slot's end, when its transport block is decoded (a
//!    TDD pattern holds what the trace delivers outside the direction's
//!    slots; the capacity stays the trace's, the direction's average);
//! 3. shares the transport block of its slot with every packet sent in it:
//!    the block fails each transmission with probability `bler`, drawn once
//!    per block from the seeded generator, and each failure moves its
//!    arrival by the HARQ round trip (rounded up to the direction's next
//!    slot); a block that fails `max_tx` times is lost (RLC would recover it
//!    later; counted, not modelled);
//! 4. is delivered no earlier than the packet before it.
//!
//! Releases never go backwards, so the caller may hold packets in one FIFO.
//! Pure like [`crate::link`]: times are passed in, nothing reads a clock.
//! `mahimahi-link/reference/radio_model.py` is the independent model the
//! emulator is checked against.

use crate::rng::SplitMix64;
use crate::Nanos;

/// One direction's radio timing.
#[derive(Clone, Debug, PartialEq)]
pub struct RadioConfig {
    pub slot_ns: Nanos,
    /// TDD: the pattern's slots this direction transmits in, repeating from
    /// slot 0 (None: FDD, every slot).
    pub slots: Option<Vec<bool>>,
    /// Scheduling and processing delay every packet sees.
    pub delay_ns: Nanos,
    /// Probability a transmission of a transport block fails.
    pub bler: f64,
    /// Slots from a transmission to its retransmission (HARQ round trip).
    pub harq_rtt_slots: u64,
    /// Transmissions of a block before it is given up.
    pub max_tx: u32,
}

impl RadioConfig {
    /// `slot-us=N,tdd=DDDSU,delay-ms=X,bler=P,harq-rtt-slots=N,max-tx=N` for
    /// the uplink (`up`: its slots are the pattern's U) or the downlink (D and S).
    pub fn parse(spec: &str, up: bool) -> Result<RadioConfig, String> {
        const VALID: &str = "slot-us, tdd, delay-ms, bler, harq-rtt-slots, max-tx";
        let mut c = RadioConfig { slot_ns: 1_000_000, slots: None, delay_ns: 0, bler: 0.0, harq_rtt_slots: 8, max_tx: 4 };
        for kv in spec.split(',').filter(|s| !s.is_empty()) {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!("{kv:?}: expected KEY=VALUE (keys: {VALID})"));
            };
            let num = |what: &str| v.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| format!("{k}={v:?}: {what}"));
            match k {
                "slot-us" => {
                    let us = num("a slot length in microseconds, > 0")?;
                    if !(1.0..=10_000.0).contains(&us) {
                        return Err(format!("{k}={v:?}: a slot length in microseconds, 1..=10000 (LTE 1000, NR 30 kHz 500)"));
                    }
                    c.slot_ns = (us * 1e3).round() as Nanos;
                }
                "tdd" => {
                    if v.is_empty() || v.len() > 80 || !v.chars().all(|ch| matches!(ch, 'D' | 'S' | 'U')) {
                        return Err(format!("{k}={v:?}: a TDD pattern of D, S and U slots, e.g. DDDSU"));
                    }
                    let mine: Vec<bool> = v.chars().map(|ch| if up { ch == 'U' } else { ch != 'U' }).collect();
                    if !mine.contains(&true) {
                        return Err(format!("{k}={v:?}: no {} slot in the pattern", if up { "uplink (U)" } else { "downlink (D or S)" }));
                    }
                    c.slots = Some(mine);
                }
                "delay-ms" => c.delay_ns = (num("a delay in milliseconds, >= 0")? * 1e6).round() as Nanos,
                "bler" => {
                    c.bler = num("a block error rate, 0 <= bler < 1")?;
                    if c.bler >= 1.0 {
                        return Err(format!("{k}={v:?}: a block error rate, 0 <= bler < 1"));
                    }
                }
                "harq-rtt-slots" => c.harq_rtt_slots = v.parse().ok().filter(|n| (1..=64).contains(n)).ok_or_else(|| format!("{k}={v:?}: an integer 1..=64"))?,
                "max-tx" => c.max_tx = v.parse().ok().filter(|n| (1..=32).contains(n)).ok_or_else(|| format!("{k}={v:?}: an integer 1..=32"))?,
                _ => return Err(format!("unknown key {k:?}; valid: {VALID}")),
            }
        }
        Ok(c)
    }

    fn usable(&self, slot: u64) -> bool {
        self.slots.as_ref().is_none_or(|p| p[(slot % p.len() as u64) as usize])
    }

    /// The first slot at or after `slot` this direction transmits in.
    fn next_usable(&self, mut slot: u64) -> u64 {
        while !self.usable(slot) {
            slot += 1;
        }
        slot
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RadioCounters {
    pub packets: u64,
    /// Transport blocks (slots with at least one packet) and their retransmissions.
    pub blocks: u64,
    pub retransmissions: u64,
    /// Packets of blocks that failed every transmission.
    pub lost_packets: u64,
}

pub struct Radio {
    cfg: RadioConfig,
    rng: SplitMix64,
    /// The current transport block: its slot and how many of its transmissions fail.
    block: Option<(u64, u32)>,
    last: Nanos,
    pub counters: RadioCounters,
}

impl Radio {
    pub fn new(cfg: RadioConfig, seed: u64) -> Radio {
        Radio { cfg, rng: SplitMix64::new(seed), block: None, last: 0, counters: RadioCounters::default() }
    }

    /// When a packet the link let go at `t` reaches the far side (None: lost
    /// with its block). Calls must come in departure order.
    pub fn release(&mut self, t: Nanos) -> Option<Nanos> {
        let c = &self.cfg;
        self.counters.packets += 1;
        let ready = t + c.delay_ns;
        let slot = c.next_usable(ready / c.slot_ns);
        let mut at = (slot + 1) * c.slot_ns;
        let failures = match self.block {
            Some((s, f)) if s == slot => f,
            _ => {
                let mut f = 0;
                if c.bler > 0.0 {
                    while f < c.max_tx && self.rng.next_f64() < c.bler {
                        f += 1;
                    }
                }
                self.block = Some((slot, f));
                self.counters.blocks += 1;
                self.counters.retransmissions += u64::from(f.min(c.max_tx - 1));
                f
            }
        };
        if failures >= c.max_tx {
            self.counters.lost_packets += 1;
            return None;
        }
        let mut s = slot;
        for _ in 0..failures {
            let next = c.next_usable(s + c.harq_rtt_slots);
            at += (next - s) * c.slot_ns;
            s = next;
        }
        self.last = self.last.max(at);
        Some(self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn fdd_without_errors_is_the_delay_and_the_slots_end() {
        let mut r = Radio::new(RadioConfig::parse("delay-ms=4", false).unwrap(), 1);
        assert_eq!(r.release(1_500_000), Some(6 * MS));
        assert_eq!(r.release(1_600_000), Some(6 * MS));
        assert_eq!(r.release(2_000_000), Some(7 * MS));
    }

    #[test]
    fn tdd_holds_a_packet_for_the_directions_next_slot_by_hand() {
        // DDDSU at 0.5 ms: the uplink's slots are 4, 9, 14, ... (2.0-2.5 ms, 4.5-5.0 ms).
        let mut up = Radio::new(RadioConfig::parse("slot-us=500,tdd=DDDSU", true).unwrap(), 1);
        assert_eq!(up.release(100_000), Some(2_500_000)); // slot 0 -> slot 4's end
        assert_eq!(up.release(2_100_000), Some(2_500_000)); // in slot 4 itself: its end
        assert_eq!(up.release(2_400_000), Some(2_500_000));
        assert_eq!(up.release(2_600_000), Some(5_000_000)); // slot 5 -> slot 9's end
        // The downlink transmits in D and S: slot 4 (U) waits for slot 5's end.
        let mut down = Radio::new(RadioConfig::parse("slot-us=500,tdd=DDDSU", false).unwrap(), 1);
        assert_eq!(down.release(100_000), Some(500_000));
        assert_eq!(down.release(2_100_000), Some(3_000_000));
        assert_eq!(down.release(3_000_000), Some(3_500_000));
    }

    #[test]
    fn a_failed_block_arrives_a_harq_round_trip_later_and_holds_the_packets_behind_it() {
        // Groups of three packets in one 1-ms slot (one block), groups 3 ms apart; each
        // block's failures drawn here from the same generator, in the same way.
        let mut r = Radio::new(RadioConfig::parse("bler=0.5,harq-rtt-slots=8,max-tx=4", false).unwrap(), 7);
        let mut rng = SplitMix64::new(7);
        let mut last = 0;
        for g in 0..100u64 {
            let mut f = 0;
            while f < 4 && rng.next_f64() < 0.5 {
                f += 1;
            }
            for k in 0..3u64 {
                let t = g * 3 * MS + 100_000 + k * 200_000;
                let got = r.release(t);
                if f == 4 {
                    assert_eq!(got, None, "group {g}: its block failed four times");
                } else {
                    last = u64::max(last, (t / MS + 1 + f as u64 * 8) * MS);
                    assert_eq!(got, Some(last), "group {g} packet {k}: {f} failures");
                }
            }
        }
        assert_eq!(r.counters.blocks, 100);
        assert!(r.counters.retransmissions > 50 && r.counters.lost_packets > 0, "{:?}", r.counters);
    }

    #[test]
    fn retransmissions_wait_for_the_directions_slot() {
        let cfg = RadioConfig::parse("slot-us=500,tdd=DDDSU,harq-rtt-slots=7,max-tx=2", true).unwrap();
        let mut r = Radio::new(cfg.clone(), 3);
        r.block = Some((4, 1)); // slot 4's block fails once (set by hand)
        // Slot 4 + 7 = 11 is a D slot: the retransmission goes in slot 14, 10 slots on.
        assert_eq!(r.release(2_100_000), Some(2_500_000 + 10 * 500_000));
        let mut r = Radio::new(cfg, 3);
        r.block = Some((4, 2)); // both transmissions fail: lost
        assert_eq!(r.release(2_100_000), None);
        assert_eq!(r.counters.lost_packets, 1);
    }

    #[test]
    fn bad_specs_are_refused_with_what_is_valid() {
        assert!(RadioConfig::parse("tdd=DDDSX", true).unwrap_err().contains("D, S and U"));
        assert!(RadioConfig::parse("tdd=DDDS", true).unwrap_err().contains("no uplink"));
        assert!(RadioConfig::parse("bler=1", false).unwrap_err().contains("0 <= bler < 1"));
        assert!(RadioConfig::parse("max-tx=0", false).unwrap_err().contains("1..=32"));
        assert!(RadioConfig::parse("rtt=3", false).unwrap_err().contains("valid: slot-us"));
        assert!(RadioConfig::parse("delay-ms", false).unwrap_err().contains("KEY=VALUE"));
    }
}
