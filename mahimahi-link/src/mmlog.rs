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
use crate::writer::{Appender, Writer};
use std::fs::File;
use std::io::Write;

/// Lines are formatted into memory and handed to the writer thread on
/// `flush` (or when a megabyte has gathered), never written from the loop.
pub struct MmLog {
    buf: Vec<u8>,
    out: Appender,
    pub path: String,
    base_timestamp_ms: u64,
}

const HAND_OVER_BYTES: usize = 1 << 20;

pub struct Header<'a> {
    pub direction: &'a str,
    pub trace: &'a str,
    pub command_line: &'a str,
    pub queue: &'a str,
    pub base_timestamp_ms: u64,
}

impl MmLog {
    pub fn create(path: &str, h: &Header, writer: &Writer) -> std::io::Result<MmLog> {
        let mut w = File::create(path)?;
        writeln!(w, "# mahimahi mm-link ({}) [{}] > {}", h.direction, h.trace, path)?;
        writeln!(w, "# command line: {}", h.command_line)?;
        writeln!(w, "# queue: {}", h.queue)?;
        Ok(MmLog { buf: Vec::new(), out: writer.register(path, w), path: path.to_string(), base_timestamp_ms: h.base_timestamp_ms })
    }

    /// The rest of the header, when the link's clock starts: event times are
    /// milliseconds since this init timestamp (wall clock), as in mm-link.
    pub fn begin(&mut self, init_timestamp_ms: u64) {
        let base = self.base_timestamp_ms;
        self.line(format_args!("# init timestamp: {}\n# base timestamp: {}\n", init_timestamp_ms, base));
    }

    fn line(&mut self, args: std::fmt::Arguments) {
        let _ = self.buf.write_fmt(args);
        if self.buf.len() >= HAND_OVER_BYTES {
            self.flush();
        }
    }

    pub fn opportunity(&mut self, t: Nanos) {
        self.line(format_args!("{} # {}\n", t / MS, crate::OPPORTUNITY_BYTES));
    }
    /// `n` opportunity lines of one millisecond: formatted once, copied n times.
    pub fn opportunities(&mut self, t: Nanos, n: u32) {
        let start = self.buf.len();
        let _ = writeln!(self.buf, "{} # {}", t / MS, crate::OPPORTUNITY_BYTES);
        let len = self.buf.len() - start;
        let want = len * n as usize;
        self.buf.reserve(want - len);
        while self.buf.len() - start < want {
            let have = self.buf.len() - start;
            self.buf.extend_from_within(start..start + have.min(want - have));
        }
        if self.buf.len() >= HAND_OVER_BYTES {
            self.flush();
        }
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

    /// Hand the gathered lines to the writer thread (write errors surface
    /// through `Writer::take_error`).
    pub fn flush(&mut self) {
        let full = std::mem::take(&mut self.buf);
        self.out.append(full);
    }
}
