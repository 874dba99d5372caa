//! pDCell's CU in the forwarder (issue 41): the transport's datagrams from the
//! core side to a downlink cell's member end here ([`crate::pdcell::Cu`]).
//! An RTS goes no further; data the CU admits joins the member's downlink
//! queue (the CU's queue for that UE, see the core's documentation) and
//! reaches the UE over the radio; data it does not admit is dropped and
//! credited again. Every slot the CU reads the DU's view of each member
//! ([`crate::cell::CellCore::du_views`]) and sends its credits back to the
//! sources, through the same core delay as any packet to them; when a flow's
//! last packet has left over the air its source gets a DONE. The remaining
//! flow sizes go to the downlink scheduler as pDCell's metadata (MRFS).

use super::*;
use crate::cell::MemberLinks;
use std::collections::HashMap;
use crate::pdcell::{self, wire, Alpha, Arrival, Cu};

/// The CU from the command line (`--cu`).
#[derive(Clone, Debug)]
pub struct CuSpec {
    pub port: u16,
    pub cfg: pdcell::Config,
}

impl CuSpec {
    /// `port=P[,buffer-bytes=B|inf][,window-us=W][,alpha-us=A|alpha-lowest-bps=R][,unscheduled=N][,rtt-us=R][,phost[,fronthaul-bps=F]]`;
    /// the slot is the downlink cell's.
    pub fn parse(s: &str) -> Result<CuSpec, String> {
        let bad = |why: String| format!("--cu={s}: {why}; expected port=P[,buffer-bytes=B|inf][,window-us=W][,alpha-us=A|alpha-lowest-bps=R][,unscheduled=N][,rtt-us=R][,phost][,fronthaul-bps=F]");
        let mut port = None;
        let mut cfg = pdcell::Config { buffer_bytes: 3_000_000, slot_ns: 1_000_000, mtu: 1500, window_ns: 1_000_000, alpha: Alpha::Fixed(0), unscheduled: 2,
                                       rtt_ns: 2_000_000, coupled: true, fronthaul_bytes_per_slot: 0 };
        let mut fronthaul_bps = 10_000_000_000u64;
        let mut alpha_set = 0;
        for part in s.split(',').filter(|p| !p.is_empty()) {
            if part == "phost" {
                cfg.coupled = false;
                continue;
            }
            let (k, v) = part.split_once('=').ok_or_else(|| bad(format!("{part:?} is not KEY=VALUE")))?;
            let num = |what: &str| v.parse::<u64>().ok().ok_or_else(|| bad(format!("{k}: {v:?} is not a non-negative integer ({what})")));
            match k {
                "port" => port = Some(num("UDP port")?.clamp(1, 65_535) as u16),
                "buffer-bytes" if v == "inf" => cfg.buffer_bytes = u64::MAX,
                "buffer-bytes" => cfg.buffer_bytes = num("bytes")?.max(cfg.mtu as u64),
                "window-us" => cfg.window_ns = num("µs")?.max(1) * 1000,
                "alpha-us" => {
                    cfg.alpha = Alpha::Fixed(num("µs")? * 1000);
                    alpha_set += 1;
                }
                "alpha-lowest-bps" => {
                    cfg.alpha = Alpha::Queue { lowest_bps: num("bit/s")?.max(1) };
                    alpha_set += 1;
                }
                "unscheduled" => cfg.unscheduled = num("packets")?.min(1_000_000) as u32,
                "rtt-us" => cfg.rtt_ns = num("µs")? * 1000,
                "fronthaul-bps" => fronthaul_bps = num("bit/s")?.max(1),
                other => return Err(bad(format!("unknown key {other:?}"))),
            }
        }
        if alpha_set > 1 {
            return Err(bad("alpha-us and alpha-lowest-bps are two ways to set α: give one".into()));
        }
        let port = port.ok_or_else(|| bad("port= is missing".into()))?;
        cfg.fronthaul_bytes_per_slot = fronthaul_bps / 8 / 1000; // per ms, scaled to the slot by `with_slot`
        Ok(CuSpec { port, cfg })
    }

    /// The downlink cell's slot, and the fronthaul's bytes in one.
    pub fn with_slot(mut self, slot_ns: Nanos) -> CuSpec {
        self.cfg.fronthaul_bytes_per_slot = self.cfg.fronthaul_bytes_per_slot * slot_ns / 1_000_000;
        self.cfg.slot_ns = slot_ns;
        self
    }
}

/// A flow: its source's address and port, and the source's flow number.
type Key = (u32, u16, u32);

/// How to answer a flow's source: the link its data came in on, the addresses
/// (the credit comes from the UE's address), and the Ethernet addresses reversed.
#[derive(Clone, Copy)]
struct Answer {
    li: usize,
    ue_ip: [u8; 4],
    src_ip: [u8; 4],
    sport: u16,
    macs: [u8; 12],
}

pub(super) struct RunCu {
    core: Cu<Key>,
    port: u16,
    answers: HashMap<Key, Answer>,
    /// The next slot start at which credits are due (None: no flow).
    next_slot: Option<Nanos>,
    log: Option<Appender>,
    buf: String,
}

/// An IPv4 UDP datagram's addresses, ports and where its payload starts.
struct Udp {
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    payload: usize,
}

fn udp(frame: &[u8]) -> Option<Udp> {
    if frame.len() < 14 + 20 + 8 || frame[12..14] != [0x08, 0x00] || frame[14] >> 4 != 4 || frame[23] != 17 {
        return None;
    }
    let l4 = 14 + (frame[14] & 0x0f) as usize * 4;
    let port = |i: usize| frame.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    Some(Udp { src: frame[26..30].try_into().ok()?, dst: frame[30..34].try_into().ok()?, sport: port(l4)?, dport: port(l4 + 2)?, payload: l4 + 8 })
}

/// A CU datagram to a source: Ethernet, IPv4 (EF: credits ride the high-priority queues), UDP without checksum, the header.
fn datagram(a: &Answer, port: u16, h: &wire::Header) -> Frame {
    let mut f = Vec::with_capacity(14 + 20 + 8 + wire::HEADER);
    f.extend_from_slice(&a.macs);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + wire::HEADER) as u16;
    let mut ip = [0x45, 0xb8, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[12..16].copy_from_slice(&a.ue_ip);
    ip[16..20].copy_from_slice(&a.src_ip);
    let sum = ip.chunks(2).fold(0u32, |s, w| s + u16::from_be_bytes([w[0], w[1]]) as u32);
    let folded = (sum & 0xffff) + (sum >> 16);
    ip[10..12].copy_from_slice(&(!(((folded & 0xffff) + (folded >> 16)) as u16)).to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&port.to_be_bytes());
    f.extend_from_slice(&a.sport.to_be_bytes());
    f.extend_from_slice(&((8 + wire::HEADER) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&h.bytes());
    Frame { data: f, vnet: Default::default() }
}

fn flow_name(k: &Key) -> String {
    let ip = k.0.to_be_bytes();
    format!("{}.{}.{}.{}:{}/{}", ip[0], ip[1], ip[2], ip[3], k.1, k.2)
}

impl RunCu {
    pub(super) fn open(spec: &CuSpec, members: usize, log_path: Option<&str>, command_line: &str, writer: &Writer) -> Result<RunCu, String> {
        let log = match log_path {
            None => None,
            Some(path) => {
                use std::io::Write as _;
                let mut f = std::fs::File::create(path).map_err(|e| format!("--cu-log: cannot create {path}: {e}"))?;
                let c = &spec.cfg;
                let buffer = if c.buffer_bytes == u64::MAX { "inf".to_string() } else { c.buffer_bytes.to_string() };
                writeln!(f, "# mahimahi-link cu mode={} port={} buffer_bytes={buffer} slot_ns={} window_ns={} alpha={:?} unscheduled={} members={members}\n# {command_line}\n\
                             # r T UE FLOW SIZE LAST (an RTS) | a T UE FLOW SEQ BYTES admitted|not|dup | c T UE FLOW SEQ TS_US WINDOW_US (a credit)\n\
                             # d T UE FLOW SEQ BYTES (left over the air) | f T UE FLOW (done) | o T TOTAL OCC... THRESHOLD... (each slot with flows)\n\
                             # t0 UNIX_NS; at the end: u UE PEAK CREDITS EXPIRED ADMITTED NOT_ADMITTED DUPLICATES, and P PEAK_TOTAL",
                         if c.coupled { "pdcell" } else { "phost" }, spec.port, c.slot_ns, c.window_ns, c.alpha, c.unscheduled)
                    .map_err(|e| format!("--cu-log: cannot write {path}: {e}"))?;
                Some(writer.register(path, f))
            }
        };
        Ok(RunCu { core: Cu::new(spec.cfg, members), port: spec.port, answers: HashMap::new(), next_slot: None, log, buf: String::new() })
    }

    pub(super) fn begin(&mut self, t0_unix_ns: u64) {
        if self.log.is_some() {
            let _ = writeln!(self.buf, "t0 {t0_unix_ns}");
        }
    }

    pub(super) fn next_event(&self) -> Option<Nanos> {
        self.next_slot
    }

    pub(super) fn flush(&mut self) {
        if let Some(log) = &self.log {
            if !self.buf.is_empty() {
                log.append(std::mem::take(&mut self.buf).into_bytes());
            }
        }
    }

    pub(super) fn finish(&mut self) {
        if self.log.is_some() {
            for (i, u) in self.core.ues.iter().enumerate() {
                let _ = writeln!(self.buf, "u {i} {} {} {} {} {} {}", u.peak_occupancy, u.credits, u.expired, u.admitted_packets, u.not_admitted, u.duplicates);
            }
            let _ = writeln!(self.buf, "P {}", self.core.peak_total);
        }
        self.flush();
    }
}

impl Forwarder {
    /// Whether a downlink frame of link `li` is the transport's: UDP to the CU's port for a cell member.
    pub(super) fn for_cu(&self, li: usize, m: &packet::Meta) -> Option<usize> {
        let cu = self.cu.as_ref()?;
        (m.proto_udp && m.ports.is_some_and(|(_, d)| d == cu.port)).then_some(())?;
        self.member_of[1][li]
    }

    /// A datagram for UE `ue` at the CU (past the core delay).
    pub(super) fn cu_arrive(&mut self, li: usize, ue: usize, frame: Frame, now: Nanos, deps: &mut Vec<(Nanos, Pkt)>) {
        self.advance_cell(false, now);
        let Some(cu) = self.cu.as_mut() else { return };
        let Some(u) = udp(&frame.data) else { return };
        let Some(h) = frame.data.get(u.payload..).and_then(wire::Header::parse) else { return };
        if !matches!(h.kind, wire::Kind::Rts | wire::Kind::Data) {
            return;
        }
        let key: Key = (u32::from_be_bytes(u.src), u.sport, h.flow);
        let mut macs = [0u8; 12];
        macs[..6].copy_from_slice(&frame.data[6..12]);
        macs[6..].copy_from_slice(&frame.data[..6]);
        cu.answers.entry(key).or_insert(Answer { li, ue_ip: u.dst, src_ip: u.src, sport: u.sport, macs });
        let ip_len = (frame.data.len() - 14) as u32;
        let data = (h.kind == wire::Kind::Data).then_some((h.seq, ip_len));
        let got = cu.core.arrive(now, &key, key.0 as u64, ue, h.size, h.last, wire::PAYLOAD, data);
        let name = flow_name(&key);
        if cu.log.is_some() {
            let _ = match got {
                None => writeln!(cu.buf, "r {now} {ue} {name} {} {}", h.size, u8::from(h.last)),
                Some(a) => writeln!(cu.buf, "a {now} {ue} {name} {} {ip_len} {}", h.seq,
                                    match a { Arrival::Admitted => "admitted", Arrival::NotAdmitted => "not", Arrival::Duplicate => "dup" }),
            };
        }
        if cu.next_slot.is_none() {
            let slot = cu.core.cfg.slot_ns;
            cu.next_slot = Some(now / slot * slot);
        }
        let rem = cu.core.remaining(ue);
        if let Some(cell) = self.cells[1].as_mut() {
            cell.flow_remaining(ue, rem);
        }
        if got == Some(Arrival::Admitted) {
            self.shape(li, false, frame, ip_len, now, deps);
            self.downlink_departures(li, deps);
        }
    }

    /// A frame of link `li` left over the air: if it is the transport's data, the CU's queue shrinks.
    pub(super) fn cu_departed(&mut self, li: usize, frame: &Frame, now: Nanos) {
        let Some(ue) = self.member_of[1][li] else { return };
        let Some(cu) = self.cu.as_mut() else { return };
        let Some(u) = udp(&frame.data).filter(|u| u.dport == cu.port) else { return };
        let Some(h) = frame.data.get(u.payload..).and_then(wire::Header::parse).filter(|h| h.kind == wire::Kind::Data) else { return };
        let key: Key = (u32::from_be_bytes(u.src), u.sport, h.flow);
        let ip_len = (frame.data.len() - 14) as u32;
        let payload = (frame.data.len() - u.payload - wire::HEADER) as u32;
        let done = cu.core.depart(&key, ip_len, payload);
        let name = flow_name(&key);
        if cu.log.is_some() {
            let _ = writeln!(cu.buf, "d {now} {ue} {name} {} {ip_len}", h.seq);
            if done {
                let _ = writeln!(cu.buf, "f {now} {ue} {name}");
            }
        }
        let rem = cu.core.remaining(ue);
        if done {
            if let Some(a) = cu.answers.remove(&key) {
                let h = wire::Header { kind: wire::Kind::Done, last: true, flow: key.2, seq: 0, size: h.size, ts_us: 0, window_us: 0 };
                let f = datagram(&a, cu.port, &h);
                self.cu_send(a, f, now);
            }
        }
        if let Some(cell) = self.cells[1].as_mut() {
            cell.flow_remaining(ue, rem);
        }
    }

    /// Into the core delay toward the source, out of the link's core side.
    fn cu_send(&mut self, a: Answer, frame: Frame, now: Nanos) {
        let di = delay_index(&self.cfg.delays, std::net::IpAddr::from(a.src_ip));
        self.send_to_core(a.li, di, now, frame);
    }

    /// Slots due by `now`: the latest one's credits (a late round issues them once, from the current view).
    pub(super) fn serve_cu(&mut self, now: Nanos) {
        let Some(due) = self.cu.as_ref().and_then(|c| c.next_slot) else { return };
        if due > now {
            return;
        }
        self.advance_cell(false, now);
        let (Some(cell), Some(spec)) = (self.cells[1].as_ref(), self.cfg.cells[1].as_ref()) else { return };
        let du = cell.du_views(&DownMembers { links: &self.links, members: &spec.members });
        let Some(cu) = self.cu.as_mut() else { return };
        let slot = cu.core.cfg.slot_ns;
        let start = now / slot * slot;
        let credits = cu.core.slot(start, &du);
        if cu.log.is_some() {
            let occ: Vec<String> = cu.core.ues.iter().map(|u| u.occupancy.to_string()).chain(cu.core.ues.iter().map(|u| u.threshold.to_string())).collect();
            let _ = writeln!(cu.buf, "o {start} {} {}", cu.core.total, occ.join(" "));
        }
        let mut out = Vec::with_capacity(credits.len());
        for c in credits {
            let Some(a) = cu.answers.get(&c.flow).copied() else { continue };
            let h = wire::Header { kind: wire::Kind::Credit, last: false, flow: c.flow.2, seq: c.seq, size: 0,
                                   ts_us: ((c.ts - start) / 1000) as u32, window_us: ((c.te - c.ts) / 1000) as u32 };
            if cu.log.is_some() {
                let _ = writeln!(cu.buf, "c {start} {} {} {} {} {}", c.ue, flow_name(&c.flow), c.seq, h.ts_us, h.window_us);
            }
            out.push((a, datagram(&a, cu.port, &h)));
        }
        cu.next_slot = (cu.core.flows() > 0).then_some(start + slot);
        for (a, f) in out {
            self.cu_send(a, f, now);
        }
    }
}

/// The downlink cell's members, read only (the DU's view for the CU).
struct DownMembers<'a> {
    links: &'a [RunLink],
    members: &'a [usize],
}

impl MemberLinks<Pkt> for DownMembers<'_> {
    fn count(&self) -> usize {
        self.members.len()
    }
    fn link(&self, i: usize) -> &Link<Pkt> {
        &self.links[self.members[i]].down.link
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credit_datagram_is_valid_ipv4_udp_back_to_the_source() {
        let a = Answer { li: 0, ue_ip: [10, 0, 0, 2], src_ip: [10, 1, 0, 5], sport: 40_000, macs: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12] };
        let h = wire::Header { kind: wire::Kind::Credit, last: false, flow: 3, seq: 9, size: 0, ts_us: 0, window_us: 1000 };
        let f = datagram(&a, 47_200, &h);
        let u = udp(&f.data).expect("udp");
        assert_eq!((u.src, u.dst, u.sport, u.dport), ([10, 0, 0, 2], [10, 1, 0, 5], 47_200, 40_000));
        assert_eq!(wire::Header::parse(&f.data[u.payload..]), Some(h));
        // The header checksum sums to 0xffff.
        let sum = f.data[14..34].chunks(2).fold(0u32, |s, w| s + u16::from_be_bytes([w[0], w[1]]) as u32);
        assert_eq!((sum & 0xffff) + (sum >> 16), 0xffff);
        let m = packet::parse(&f.data).expect("ip");
        assert_eq!(m.ip_len as usize, f.data.len() - 14);
    }

    #[test]
    fn options_name_what_is_wrong() {
        assert!(CuSpec::parse("buffer-bytes=1000").unwrap_err().contains("port= is missing"));
        assert!(CuSpec::parse("port=1,alpha-us=1,alpha-lowest-bps=5").unwrap_err().contains("give one"));
        assert!(CuSpec::parse("port=1,bogus=2").unwrap_err().contains("unknown key \"bogus\""));
        let s = CuSpec::parse("port=47200,buffer-bytes=inf,phost,fronthaul-bps=8000000000").unwrap().with_slot(500_000);
        assert_eq!((s.port, s.cfg.buffer_bytes, s.cfg.coupled, s.cfg.fronthaul_bytes_per_slot, s.cfg.slot_ns), (47_200, u64::MAX, false, 500_000, 500_000));
    }
}
