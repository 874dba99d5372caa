//! What workload-aware replay costs per packet: the same arrivals through a
//! plain link and through the light stage in front of it (src/burst.rs),
//! under a virtual clock, so only the emulation core's CPU time is counted.
//! Arrivals: bursts of 1 to 64 full packets with idle gaps between them (every
//! burst starts from idle: the stage's whole path), on a 1.2 Gbit/s trace.
//! Prints ns per packet for each: plain, CellReplay's rule, the active-link rule,
//! and plain with the radio stage after it (src/radio.rs: NR TDD DDDSU at 0.5-ms
//! slots, a 1-ms pipeline, BLER 0.1, the access presets' kind of work).
//!
//!     cargo run --release --example burst_bench [PACKETS]

use mahimahi_link::burst::{Burst, BurstOptions, LightTrace};
use mahimahi_link::link::{Link, LinkOptions, Sink, MS};
use mahimahi_link::queue::{QueueConfig, Queued};
use mahimahi_link::radio::{Radio, RadioConfig};
use mahimahi_link::rng::SplitMix64;
use mahimahi_link::trace::Trace;
use std::sync::Arc;
use std::time::Instant;

struct Count(u64, Option<Radio>, u64);
impl Sink<u32> for Count {
    fn departure(&mut self, t: u64, p: Queued<u32>) {
        self.0 += p.size as u64;
        if let Some(r) = self.1.as_mut() {
            self.2 = self.2.max(r.release(t).unwrap_or(0)); // used, so the call is not optimised away
        }
    }
}

fn arrivals(n: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(7);
    let (mut t, mut out) = (0u64, Vec::with_capacity(n));
    while out.len() < n {
        t += 5 * MS + rng.next_u64() % (20 * MS); // an idle gap
        for _ in 0..(1 + rng.next_u64() % 64) {
            t += rng.next_u64() % 20_000;
            out.push(t);
        }
    }
    out.truncate(n);
    out
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(2_000_000);
    let heavy = Arc::new(Trace::parse("1200mbps", &"1\n".repeat(100)).expect("trace"));
    let train: String = (0..64).map(|k| format!("{} ", k / 4)).collect();
    let light_text: String = (0..100).map(|i| format!("{} {} {}\n", i * 200, 20 + i % 7, train.trim())).collect();
    let light = Arc::new(LightTrace::parse("light", &light_text).expect("light trace"));
    let times = arrivals(n);
    let opts = LinkOptions::default();
    // "active": the active-link rule (a floor of 2 ms), the same arrivals
    let runs = [("plain", false, None, false), ("workload-aware", true, None, false), ("active", true, Some(2 * MS), false),
                ("radio", false, None, true)];
    let radio = RadioConfig::parse("slot-us=500,tdd=DDDSU,delay-ms=1,bler=0.1,harq-rtt-slots=10,max-tx=5", true).expect("radio");
    for (name, with_light, active_ns, with_radio) in runs.iter().chain(runs.iter()).copied() {
        let mut link: Link<u32> = Link::new(heavy.clone(), QueueConfig::default(), opts, 1);
        let mut burst = Burst::new(light.clone(), None, BurstOptions { pdo_bytes: 1504, idle_ns: MS, active_ns });
        let mut sink = Count(0, with_radio.then(|| Radio::new(radio.clone(), 1)), 0);
        let t0 = Instant::now();
        for (i, &t) in times.iter().enumerate() {
            if with_light {
                burst.enqueue(1504, i as u32, t, &mut link, &mut sink);
            } else {
                link.enqueue(1504, i as u32, t, &mut sink);
            }
        }
        let end = times[times.len() - 1] + 1_000 * MS;
        if with_light {
            burst.advance_to(end, &mut link, &mut sink);
        } else {
            link.advance_to(end, &mut sink);
        }
        let ns = t0.elapsed().as_nanos() as f64 / n as f64;
        assert_eq!(sink.0, 1504 * n as u64, "every packet delivered");
        println!("{name:>15}: {ns:.1} ns per packet ({n} packets)");
    }
}
