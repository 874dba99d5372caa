//! mahimahi-link: a Mahimahi-compatible, trace-driven cellular link emulator
//! that works as a pass-through hop between two interfaces.
//!
//! Layers, from pure to I/O:
//! - [`trace`]: the trace format and its checks;
//! - [`queue`]: mm-link's queue disciplines;
//! - [`link`]: the emulation core of one direction, driven by an injected clock;
//! - [`cell`]: a shared cell: UEs' links splitting resource blocks slot by slot (MAC schedulers);
//! - [`mecanic`]: MECaNIC's ingress queueing (the edge stage's core: priorities, ranges, aging);
//! - [`pdcell`]: pDCell's CU: per-UE queues in one buffer, thresholds from the cell's grants, credits;
//! - [`mmlog`]: mm-link's log format;
//! - [`packet`]: frame parsing, bypass filter and core-delay rules;
//! - [`timeline`]: changes to links at set times (outages, trace switches, delays);
//! - [`gso`]: TCP super-frames taken whole, charged per segment, released in parts;
//! - [`sys`]: every unsafe system call (AF_PACKET rings, timers, namespaces);
//! - [`writer`]: file output on its own thread, so a slow disk never stalls the loop;
//! - [`forward`]: the event loop serving many links in one thread;
//! - [`shell`]: mm-link-style `-- command` mode;
//! - [`options`]: the command line.

#![deny(unsafe_code)] // every unsafe call is in sys.rs (which allows it), as said above

/// `eprintln!` that never panics: stderr is often a log file, and a full disk
/// must end the emulator with its own error, not a panic (exit 101).
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

pub mod burst;
pub mod cell;
pub mod forward;
pub mod gso;
pub mod link;
pub mod mecanic;
pub mod mmlog;
pub mod options;
pub mod pdcell;
pub mod packet;
pub mod queue;
pub mod radio;
pub mod rng;
pub mod rps;
pub mod shell;
pub mod sys;
pub mod timeline;
pub mod trace;
pub mod writer;

/// Time in nanoseconds since the link was created.
pub type Nanos = u64;

/// Bytes one delivery opportunity carries (mm-link's PACKET_SIZE: a 1500-byte
/// IP packet plus the 4-byte TUN header).
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}
