//! mm-link's log format, so existing Mahimahi analysis scripts
//! (mm-throughput-graph, mm-delay-graph) read our logs unchanged:
//!
//! ```text
//! # mahimahi mm-link (Uplink) [up.trace] > up.log
//! # command line: ...
//! # queue: infinite
//! # init timestamp: 1700000000000
//! # base timestamp: 0
//! 12 # 1504          delivery opportunity
//! 12 + 1504          arrival of a packet of that charged size
//! 13 - 1504 1        departure, with its delay in ms
//! 13 d 1 1504        drop of 1 packet, 1504 bytes
//! ```
//! Times are integer milliseconds since the init timestamp, as in mm-link.

use crate::link::MS;
use crate::Nanos;
use std::fs::File;
use std::io::{BufWriter, Write};

pub struct MmLog {
    w: BufWriter<File>,
    pub path: String,
    failed: Option<std::io::Error>,
}

pub struct Header<'a> {
    pub direction: &'a str,
    pub trace: &'a str,
    pub command_line: &'a str,
    pub queue: &'a str,
    pub init_timestamp_ms: u64,
    pub base_timestamp_ms: u64,
}

impl MmLog {
    pub fn create(path: &str, h: &Header) -> std::io::Result<MmLog> {
        let f = File::create(path)?;
        let mut w = BufWriter::with_capacity(1 << 20, f);
        writeln!(w, "# mahimahi mm-link ({}) [{}] > {}", h.direction, h.trace, path)?;
        writeln!(w, "# command line: {}", h.command_line)?;
        writeln!(w, "# queue: {}", h.queue)?;
        writeln!(w, "# init timestamp: {}", h.init_timestamp_ms)?;
        writeln!(w, "# base timestamp: {}", h.base_timestamp_ms)?;
        Ok(MmLog { w, path: path.to_string(), failed: None })
    }

    fn line(&mut self, args: std::fmt::Arguments) {
        if self.failed.is_none() {
            if let Err(e) = self.w.write_fmt(args) {
                self.failed = Some(e);
            }
        }
    }

    pub fn opportunity(&mut self, t: Nanos) {
        self.line(format_args!("{} # {}\n", t / MS, crate::OPPORTUNITY_BYTES));
    }
    pub fn arrival(&mut self, t: Nanos, size: u32) {
        self.line(format_args!("{} + {}\n", t / MS, size));
    }
    pub fn departure(&mut self, t: Nanos, size: u32, arrival: Nanos) {
        self.line(format_args!("{} - {} {}\n", t / MS, size, t / MS - arrival / MS));
    }
    pub fn drop(&mut self, t: Nanos, packets: u64, bytes: u64) {
        self.line(format_args!("{} d {} {}\n", t / MS, packets, bytes));
    }

    /// Flush buffered lines; the first write error is reported once.
    pub fn flush(&mut self) -> Result<(), String> {
        if self.failed.is_none() {
            if let Err(e) = self.w.flush() {
                self.failed = Some(e);
            }
        }
        match self.failed.take() {
            Some(e) => Err(format!("writing log {}: {e}", self.path)),
            None => Ok(()),
        }
    }
}
