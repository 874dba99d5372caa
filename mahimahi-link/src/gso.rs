//! TCP and UDP super-frames (segmentation offload) taken whole and released in parts.
//!
//! Why: per-packet costs, not bytes, capped the link near 2.4 Gbit/s. Every
//! MTU packet cost a ring slot and a copy in the emulator, and a pass through
//! the sending and receiving host stacks. A host's TCP stack already hands out
//! up-to-64 KB super-frames (TSO/GSO). With `PACKET_VNET_HDR` the emulator
//! receives such a frame whole, with a virtio-net header that says how the
//! kernel would cut it (segment size, checksum position). Each MTU segment is
//! still charged and timed exactly as mm-link would do it (its own IP
//! length plus 4, its own arrival, departure and log lines). The segments that leave
//! together are then sent on as one smaller super-frame. The receiving stack
//! takes that frame as it takes any GRO'd frame, so on the wire inside the
//! receiver nothing differs from MTU packets arriving at the same instants.
//!
//! UDP super-frames (UDP GSO: a sender's `UDP_SEGMENT`, QUIC stacks' habit)
//! are the same with datagrams for segments: each is charged as mm-link
//! would charge that datagram, and the ones that leave together go on as one
//! UDP GSO frame, which the receiving stack cuts into the same datagrams.
//!
//! Pure code (no I/O): headers in, headers out, tested below.

/// Size of `struct virtio_net_hdr` (no `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;
pub const F_NEEDS_CSUM: u8 = 1;
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
pub const GSO_TCPV6: u8 = 4;
/// VIRTIO_NET_HDR_GSO_UDP_L4: UDP GSO (segments are whole datagrams), IPv4 or IPv6.
pub const GSO_UDP_L4: u8 = 5;
pub const GSO_ECN: u8 = 0x80;

const ETH_HLEN: usize = crate::packet::ETH_HLEN;
/// TCP flag bits in header byte 13.
const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const CWR: u8 = 0x80;

/// `struct virtio_net_hdr`, little-endian as on every host this runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vnet {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl Vnet {
    pub fn read(b: &[u8]) -> Vnet {
        let u = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Vnet { flags: b[0], gso_type: b[1], hdr_len: u(2), gso_size: u(4), csum_start: u(6), csum_offset: u(8) }
    }

    pub fn write(&self, out: &mut [u8]) {
        out[0] = self.flags;
        out[1] = self.gso_type;
        out[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        out[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        out[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        out[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
    }

    pub fn is_gso(&self) -> bool {
        self.gso_type & !GSO_ECN != GSO_NONE
    }

    /// The header to send a received frame on with: the same, but of the
    /// flags only a pending checksum (DATA_VALID means nothing on transmit).
    pub fn for_resend(&self) -> Vnet {
        Vnet { flags: self.flags & F_NEEDS_CSUM, ..*self }
    }
}

/// A received TCP or UDP super-frame: headers once, then the payload of
/// `segments()` MTU segments (UDP: datagrams) of `mss` bytes (the last one shorter).
#[derive(Debug)]
pub struct SuperFrame {
    frame: Vec<u8>,
    ihl: usize,
    l4: usize,
    payload: usize,
    mss: usize,
    v6: bool,
    ecn: bool,
    udp: bool,
}

impl SuperFrame {
    /// Take apart a frame whose header says GSO. TCP and UDP over IPv4 or
    /// IPv6 (no extension headers) are split; anything else is an error naming it.
    pub fn new(frame: Vec<u8>, v: &Vnet) -> Result<SuperFrame, String> {
        let base = v.gso_type & !GSO_ECN;
        let ecn = v.gso_type & GSO_ECN != 0;
        let mss = v.gso_size as usize;
        let udp = base == GSO_UDP_L4;
        if base != GSO_TCPV4 && base != GSO_TCPV6 && !udp {
            return Err(format!("segmentation offload type {} is neither TCP nor UDP (only those super-frames can be split)", v.gso_type));
        }
        let what = if udp { "UDP" } else { "TCP" };
        if mss == 0 {
            return Err(format!("a {what} super-frame with segment size 0"));
        }
        if frame.len() < ETH_HLEN + 20 {
            return Err("a super-frame too short for an IP header".into());
        }
        let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
        let (v6, ihl, proto) = match ethertype {
            0x0800 => (false, ((frame[ETH_HLEN] & 0x0f) as usize) * 4, frame[ETH_HLEN + 9]),
            0x86dd if frame.len() >= ETH_HLEN + 40 => (true, 40, frame[ETH_HLEN + 6]),
            _ => return Err(format!("a super-frame with ethertype {ethertype:#06x} (only plain IPv4/IPv6 ones are split)")),
        };
        if proto != if udp { 17 } else { 6 } {
            return Err(format!("a {what} super-frame whose IP header says protocol {proto}"));
        }
        let l4 = ETH_HLEN + ihl;
        if frame.len() < l4 + if udp { 8 } else { 20 } {
            return Err(format!("a super-frame too short for its {what} header"));
        }
        let payload = l4 + if udp { 8 } else { ((frame[l4 + 12] >> 4) as usize) * 4 };
        if payload >= frame.len() {
            return Err(format!("a {what} super-frame without payload"));
        }
        Ok(SuperFrame { frame, ihl, l4, payload, mss, v6, ecn, udp })
    }

    pub fn segments(&self) -> usize {
        (self.frame.len() - self.payload).div_ceil(self.mss)
    }

    fn segment_payload(&self, i: usize) -> usize {
        self.mss.min(self.frame.len() - self.payload - i * self.mss)
    }

    /// IP length of segment `i` (what mm-link charges, minus its 4 bytes).
    pub fn segment_ip_len(&self, i: usize) -> u32 {
        (self.payload - ETH_HLEN + self.segment_payload(i)) as u32
    }

    /// Segments `i..j` as one frame, with the header to send it with: a
    /// super-frame again when it holds several segments, else a plain frame.
    /// IP length, IPv4 id and checksum, TCP sequence number and flags (UDP:
    /// its length) are those the kernel's own segmentation would give the
    /// same segments; the L4 checksum is left to the kernel (pseudo-header
    /// sum + NEEDS_CSUM).
    pub fn build(&self, i: usize, j: usize) -> (Vnet, Vec<u8>) {
        let n = self.segments();
        assert!(i < j && j <= n, "segments {i}..{j} of {n}");
        let start = self.payload + i * self.mss;
        let end = (self.payload + j * self.mss).min(self.frame.len());
        let mut out = Vec::with_capacity(self.payload + end - start);
        out.extend_from_slice(&self.frame[..self.payload]);
        out.extend_from_slice(&self.frame[start..end]);
        let ip = ETH_HLEN;
        let (l4, l4_len) = (self.l4, out.len() - self.l4);
        let mut sum: u32 = if self.udp { 17 } else { 6 } + l4_len as u32;
        if self.v6 {
            let len = (out.len() - ip - 40) as u16;
            out[ip + 4..ip + 6].copy_from_slice(&len.to_be_bytes());
            sum += ones_sum(&out[ip + 8..ip + 40]);
        } else {
            let len = (out.len() - ip) as u16;
            out[ip + 2..ip + 4].copy_from_slice(&len.to_be_bytes());
            let id = u16::from_be_bytes([out[ip + 4], out[ip + 5]]).wrapping_add(i as u16);
            out[ip + 4..ip + 6].copy_from_slice(&id.to_be_bytes());
            out[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
            let c = !fold(ones_sum(&out[ip..ip + self.ihl]));
            out[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
            sum += ones_sum(&out[ip + 12..ip + 20]);
        }
        if self.udp {
            // the datagram's length covers what this frame carries; the kernel's
            // UDP segmentation rewrites it per datagram, as it does the checksum
            out[l4 + 4..l4 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
            out[l4 + 6..l4 + 8].copy_from_slice(&fold(sum).to_be_bytes());
        } else {
            let seq = u32::from_be_bytes(out[l4 + 4..l4 + 8].try_into().expect("4 bytes")).wrapping_add((i * self.mss) as u32);
            out[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if i > 0 {
                out[l4 + 13] &= !CWR;
            }
            if j < n {
                out[l4 + 13] &= !(FIN | PSH);
            }
            out[l4 + 16..l4 + 18].copy_from_slice(&fold(sum).to_be_bytes());
        }
        let mut v = Vnet { flags: F_NEEDS_CSUM, csum_start: l4 as u16, csum_offset: if self.udp { 6 } else { 16 }, ..Vnet::default() };
        if j - i > 1 {
            let base = if self.udp { GSO_UDP_L4 } else if self.v6 { GSO_TCPV6 } else { GSO_TCPV4 };
            v.gso_type = base | if self.ecn && i == 0 && !self.udp { GSO_ECN } else { 0 };
            v.gso_size = self.mss as u16;
            v.hdr_len = self.payload as u16;
        }
        (v, out)
    }
}

/// One's-complement sum of big-endian 16-bit words (odd byte padded).
pub fn ones_sum(b: &[u8]) -> u32 {
    let mut s: u32 = 0;
    let mut c = b.chunks_exact(2);
    for w in &mut c {
        s += u16::from_be_bytes([w[0], w[1]]) as u32;
    }
    if let [x] = c.remainder() {
        s += (*x as u32) << 8;
    }
    s
}

pub fn fold(mut s: u32) -> u16 {
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Complete a transport checksum that the sender left to "hardware"
/// (CHECKSUM_PARTIAL on veth): sum the L4 bytes, whose checksum field already
/// holds the pseudo-header sum, and store the folded complement.
pub fn complete_l4_checksum(frame: &mut [u8]) {
    let eth = crate::packet::ETH_HLEN;
    if frame.len() < eth + 20 {
        return;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let (l4, proto, end) = match ethertype {
        0x0800 => {
            let ip = &frame[eth..];
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            if u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff != 0 {
                return;
            }
            (eth + ihl, ip[9], eth + total)
        }
        0x86dd if frame.len() >= eth + 40 => {
            let ip = &frame[eth..];
            (eth + 40, ip[6], eth + 40 + u16::from_be_bytes([ip[4], ip[5]]) as usize)
        }
        _ => return,
    };
    let off = match proto {
        6 => 16,
        17 => 6,
        _ => return,
    };
    if end > frame.len() || l4 + off + 2 > end {
        return;
    }
    let mut c = !fold(ones_sum(&frame[l4..end]));
    if c == 0 && proto == 17 {
        c = 0xffff;
    }
    frame[l4 + off..l4 + off + 2].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4/IPv6 + TCP frame (with 12 bytes of TCP options)
    /// carrying `payload`, flags as given, TCP checksum field = pseudo sum.
    fn frame(v6: bool, payload: &[u8], flags: u8, seq: u32, id: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        let tcp_len = 32 + payload.len();
        if v6 {
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&(tcp_len as u16).to_be_bytes());
            f.extend_from_slice(&[6, 64]);
            f.extend_from_slice(&[0xfd; 16]);
            f.extend_from_slice(&[0xfe; 16]);
        } else {
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&((20 + tcp_len) as u16).to_be_bytes());
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&[0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        }
        f.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
        f.extend_from_slice(&seq.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 1, 0x80, flags, 0x10, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        f.extend_from_slice(payload);
        f
    }

    /// What the kernel's segmentation would produce for segment k: the
    /// reference the split frames must match byte for byte (checksum aside).
    #[allow(clippy::too_many_arguments)] // a test helper spelling out a TCP header
    fn kernel_segment(v6: bool, payload: &[u8], mss: usize, k: usize, n: usize, flags: u8, seq: u32, id: u16) -> Vec<u8> {
        let part = &payload[k * mss..((k + 1) * mss).min(payload.len())];
        let mut fl = flags;
        if k > 0 {
            fl &= !CWR;
        }
        if k + 1 < n {
            fl &= !(FIN | PSH);
        }
        let mut f = frame(v6, part, fl, seq.wrapping_add((k * mss) as u32), id.wrapping_add(k as u16));
        if !v6 {
            let c = !fold(ones_sum(&f[14..34]));
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        f
    }

    /// Finish the TCP checksum as the kernel would (NEEDS_CSUM) and check it.
    fn tcp_checksum_ok(f: &[u8], l4: usize) -> bool {
        let mut g = f.to_vec();
        let c = !fold(ones_sum(&g[l4..]));
        g[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
        // A correct segment sums (pseudo header + segment) to 0xffff.
        let (pseudo, tcp_len) = if f[12] == 0x86 { (ones_sum(&g[22..54]), g.len() - 54) } else { (ones_sum(&g[26..34]), g.len() - 34) };
        fold(pseudo + 6 + tcp_len as u32 + ones_sum(&g[l4..])) == 0xffff
    }

    fn split_all_ways(v6: bool) {
        let payload: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mss = 1448;
        let flags = CWR | PSH | FIN | 0x10;
        let (seq, id) = (0xffff_f000, 0xfffe);
        let sf = frame(v6, &payload, flags, seq, id);
        let gso = if v6 { GSO_TCPV6 } else { GSO_TCPV4 } | GSO_ECN;
        let s = SuperFrame::new(sf, &Vnet { gso_type: gso, gso_size: mss as u16, flags: F_NEEDS_CSUM, ..Vnet::default() }).unwrap();
        let n = payload.len().div_ceil(mss);
        assert_eq!(s.segments(), n);
        let hdr = if v6 { 40 + 32 } else { 20 + 32 };
        for k in 0..n {
            assert_eq!(s.segment_ip_len(k) as usize, hdr + (payload.len() - k * mss).min(mss));
        }
        let l4 = if v6 { 54 } else { 34 };
        for i in 0..n {
            for j in i + 1..=n {
                let (v, out) = s.build(i, j);
                assert!(tcp_checksum_ok(&out, l4), "checksum {i}..{j}");
                assert_eq!((v.flags, v.csum_start, v.csum_offset), (F_NEEDS_CSUM, l4 as u16, 16));
                if j - i == 1 {
                    // One segment: byte for byte what the kernel would send.
                    let mut want = kernel_segment(v6, &payload, mss, i, n, flags, seq, id);
                    let mut got = out.clone();
                    want[l4 + 16..l4 + 18].fill(0);
                    got[l4 + 16..l4 + 18].fill(0);
                    assert_eq!(got, want, "segment {i}");
                    assert_eq!(v.gso_type, GSO_NONE);
                } else {
                    assert_eq!(v.gso_size as usize, mss);
                    assert_eq!(v.hdr_len as usize, l4 + 32);
                    assert_eq!(v.gso_type & GSO_ECN != 0, i == 0);
                    // Cut again as the kernel would: the same segments as from the original.
                    let again = SuperFrame::new(out, &v).unwrap();
                    assert_eq!(again.segments(), j - i);
                    for k in 0..j - i {
                        let (_, mut a) = again.build(k, k + 1);
                        let (_, mut b) = s.build(i + k, i + k + 1);
                        a[l4 + 16..l4 + 18].fill(0);
                        b[l4 + 16..l4 + 18].fill(0);
                        assert_eq!(a, b, "segment {k} of {i}..{j}");
                    }
                }
            }
        }
    }

    #[test]
    fn split_ipv4_super_frames_match_the_kernels_segments() {
        split_all_ways(false);
    }

    #[test]
    fn split_ipv6_super_frames_match_the_kernels_segments() {
        split_all_ways(true);
    }

    /// An Ethernet + IPv4/IPv6 + UDP frame carrying `payload` (UDP length and
    /// checksum field as a sender's UDP GSO leaves them: the whole, pseudo sum).
    fn udp_frame(v6: bool, payload: &[u8], id: u16) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
        let udp_len = 8 + payload.len();
        if v6 {
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&(udp_len as u16).to_be_bytes());
            f.extend_from_slice(&[17, 64]);
            f.extend_from_slice(&[0xfd; 16]);
            f.extend_from_slice(&[0xfe; 16]);
        } else {
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&((20 + udp_len) as u16).to_be_bytes());
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&[0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
            let c = !fold(ones_sum(&f[14..34]));
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        f.extend_from_slice(&[0x9c, 0x40, 0x11, 0x51]);
        f.extend_from_slice(&(udp_len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(payload);
        f
    }

    fn udp_checksum_ok(f: &[u8], l4: usize) -> bool {
        let mut g = f.to_vec();
        let c = !fold(ones_sum(&g[l4..]));
        g[l4 + 6..l4 + 8].copy_from_slice(&c.to_be_bytes());
        let (pseudo, udp_len) = if f[12] == 0x86 { (ones_sum(&g[22..54]), g.len() - 54) } else { (ones_sum(&g[26..34]), g.len() - 34) };
        fold(pseudo + 17 + udp_len as u32 + ones_sum(&g[l4..])) == 0xffff
    }

    fn split_udp_all_ways(v6: bool) {
        let payload: Vec<u8> = (0..9_000u32).map(|i| (i * 5 + 1) as u8).collect();
        let size = 1200; // a QUIC stack's datagram size
        let id = 0xfffe;
        let s = SuperFrame::new(udp_frame(v6, &payload, id), &Vnet { gso_type: GSO_UDP_L4, gso_size: size as u16, flags: F_NEEDS_CSUM, ..Vnet::default() }).unwrap();
        let n = payload.len().div_ceil(size);
        assert_eq!(s.segments(), n);
        let l4 = if v6 { 54 } else { 34 };
        for k in 0..n {
            // what mm-link charges for each datagram: its IP length
            assert_eq!(s.segment_ip_len(k) as usize, l4 - 14 + 8 + (payload.len() - k * size).min(size));
        }
        for i in 0..n {
            for j in i + 1..=n {
                let (v, out) = s.build(i, j);
                assert!(udp_checksum_ok(&out, l4), "checksum {i}..{j}");
                assert_eq!((v.flags, v.csum_start, v.csum_offset), (F_NEEDS_CSUM, l4 as u16, 6));
                assert_eq!(u16::from_be_bytes([out[l4 + 4], out[l4 + 5]]) as usize, out.len() - l4);
                if j - i == 1 {
                    // One datagram: byte for byte what the sender's own segmentation would send.
                    let part = &payload[i * size..((i + 1) * size).min(payload.len())];
                    let mut want = udp_frame(v6, part, id.wrapping_add(i as u16));
                    let mut got = out.clone();
                    want[l4 + 6..l4 + 8].fill(0);
                    got[l4 + 6..l4 + 8].fill(0);
                    assert_eq!(got, want, "datagram {i}");
                    assert_eq!(v.gso_type, GSO_NONE);
                } else {
                    assert_eq!((v.gso_type, v.gso_size as usize, v.hdr_len as usize), (GSO_UDP_L4, size, l4 + 8));
                    let again = SuperFrame::new(out, &v).unwrap();
                    assert_eq!(again.segments(), j - i);
                    for k in 0..j - i {
                        let (_, mut a) = again.build(k, k + 1);
                        let (_, mut b) = s.build(i + k, i + k + 1);
                        a[l4 + 6..l4 + 8].fill(0);
                        b[l4 + 6..l4 + 8].fill(0);
                        assert_eq!(a, b, "datagram {k} of {i}..{j}");
                    }
                }
            }
        }
    }

    #[test]
    fn split_ipv4_udp_super_frames_into_the_senders_datagrams() {
        split_udp_all_ways(false);
    }

    #[test]
    fn split_ipv6_udp_super_frames_into_the_senders_datagrams() {
        split_udp_all_ways(true);
    }

    #[test]
    fn vnet_header_round_trips() {
        let v = Vnet { flags: 1, gso_type: 0x81, hdr_len: 66, gso_size: 1448, csum_start: 34, csum_offset: 16 };
        let mut b = [0u8; VNET_HDR_LEN];
        v.write(&mut b);
        assert_eq!(Vnet::read(&b), v);
        assert!(v.is_gso());
        assert_eq!(v.for_resend(), v);
        assert_eq!(Vnet { flags: 2, ..v }.for_resend(), Vnet { flags: 0, ..v });
    }

    #[test]
    fn what_cannot_be_split_is_an_error_that_says_why() {
        let f = frame(false, &[0u8; 3000], 0x10, 1, 1);
        let udp = Vnet { gso_type: GSO_UDP_L4, gso_size: 1400, ..Vnet::default() };
        assert!(SuperFrame::new(f.clone(), &udp).unwrap_err().contains("UDP super-frame whose IP header says protocol 6"));
        let sctp = Vnet { gso_type: 6, gso_size: 1400, ..Vnet::default() };
        assert!(SuperFrame::new(f.clone(), &sctp).unwrap_err().contains("neither TCP nor UDP"));
        let zero = Vnet { gso_type: GSO_TCPV4, gso_size: 0, ..Vnet::default() };
        assert!(SuperFrame::new(f.clone(), &zero).unwrap_err().contains("size 0"));
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert!(SuperFrame::new(arp, &Vnet { gso_type: GSO_TCPV4, gso_size: 1400, ..Vnet::default() }).unwrap_err().contains("ethertype"));
        let empty = frame(false, &[], 0x10, 1, 1);
        assert!(SuperFrame::new(empty, &Vnet { gso_type: GSO_TCPV4, gso_size: 1400, ..Vnet::default() }).unwrap_err().contains("without payload"));
        let short = f[..20].to_vec();
        assert!(SuperFrame::new(short, &Vnet { gso_type: GSO_TCPV4, gso_size: 1400, ..Vnet::default() }).is_err());
    }
}
