//! What a shared cell costs per slot: every UE with its own channel (a
//! constant 10 Mbit/s trace) and an uplink flooded so the scheduler has work
//! every slot, TS 38.321 signalling on, for 12 and 100 UEs and each
//! scheduler. Prints the mean wall time per slot (the cell's whole step:
//! reports, the scheduler, the links serving their shares) against the
//! 0.5 ms slot it must fit in many times over. Issue #18's target: <= 20 us
//! per slot at 100 UEs.
//!
//!     cargo run --release --example cell_bench [SECONDS]

use mahimahi_link::cell::{scheduler, Cell, CellConfig, SchedulerParams, UeClass, UplinkSignalling};
use mahimahi_link::link::{Link, LinkOptions, Sink};
use mahimahi_link::queue::{QueueConfig, Queued};
use mahimahi_link::trace::Trace;
use std::sync::Arc;
use std::time::Instant;

struct Count(u64);
impl Sink<()> for Count {
    fn departure(&mut self, _t: u64, p: Queued<()>) {
        self.0 += p.size as u64;
    }
}

fn run(ues: usize, name: &str, seconds: u64) -> (f64, f64) {
    // 10 Mbit/s: 831 opportunities per second, as one-ms groups of 0 or 1.
    let text: String = (1..=1000u64).filter(|ms| (ms * 831) / 1000 != ((ms - 1) * 831) / 1000).map(|ms| format!("{ms}\n")).collect();
    let trace = Arc::new(Trace::parse("10mbps", &text).expect("trace"));
    let links = (0..ues).map(|_| Link::new(trace.clone(), QueueConfig::default(), LinkOptions::default(), 1)).collect();
    let cfg = CellConfig { uplink: Some(UplinkSignalling::default()), ..Default::default() };
    let classes = (0..ues).map(|i| if i % 2 == 0 { UeClass::LatencyCritical { slo_slots: 200 } } else { UeClass::BestEffort }).collect();
    let sched = scheduler(name, &SchedulerParams { classes, ..Default::default() }).expect("scheduler");
    let mut cell = Cell::new(links, cfg, sched);
    let mut sinks: Vec<Count> = (0..ues).map(|_| Count(0)).collect();
    let slots = seconds * 2000;
    let t0 = Instant::now();
    for s in 0..slots {
        let now = s * cfg.slot_ns;
        for ue in 0..ues {
            if cell.links[ue].queued_bytes() < 30_000 {
                cell.enqueue(ue, 1500, (), now, &mut sinks);
            }
        }
        cell.advance_to(now + cfg.slot_ns - 1, &mut sinks);
    }
    let wall = t0.elapsed().as_secs_f64();
    let moved: u64 = sinks.iter().map(|c| c.0).sum();
    (wall / slots as f64 * 1e6, moved as f64 * 8.0 / seconds as f64 / 1e6)
}

fn main() {
    let seconds: u64 = std::env::args().nth(1).map(|a| a.parse().expect("SECONDS")).unwrap_or(10);
    println!("shared cell, uplink with SR/BSR/k2, 51 blocks, 0.5 ms slots, {seconds} s emulated per row");
    println!("{:>5} {:>6} {:>14} {:>12} {:>16}", "UEs", "sched", "us per slot", "of a slot", "cell Mbit/s");
    for ues in [12, 100] {
        for name in ["rr", "pf", "smec"] {
            let (us, mbps) = run(ues, name, seconds);
            println!("{ues:>5} {name:>6} {us:>14.2} {:>11.1}% {mbps:>16.1}", us / 500.0 * 100.0);
        }
    }
}
