//! Reading just enough of an Ethernet frame to shape it: which IP version,
//! the IP length that mm-link charges, addresses and ports for the bypass
//! filter and the per-destination core delay.

use std::net::IpAddr;

pub const ETH_HLEN: usize = 14;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// IP total length (header + payload); mm-link charges this + 4.
    pub ip_len: u32,
    pub src: IpAddr,
    pub dst: IpAddr,
    /// Transport ports for TCP/UDP; None otherwise.
    pub ports: Option<(u16, u16)>,
    /// UDP (the protocol of the edge's request notices).
    pub proto_udp: bool,
}

/// None for frames that are not IP (ARP and the like): those are forwarded
/// unshaped, since they are link-layer plumbing, not cellular traffic.
pub fn parse(frame: &[u8]) -> Option<Meta> {
    if frame.len() < ETH_HLEN {
        return None;
    }
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let ip = &frame[ETH_HLEN..];
    let (ip_len, src, dst, proto, l4) = match ethertype {
        0x0800 if ip.len() >= 20 => {
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            let total = u16::from_be_bytes([ip[2], ip[3]]) as u32;
            let src: [u8; 4] = ip[12..16].try_into().ok()?;
            let dst: [u8; 4] = ip[16..20].try_into().ok()?;
            let frag_off = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
            let l4 = if frag_off == 0 && ip.len() >= ihl + 4 { Some(&ip[ihl..]) } else { None };
            (total, IpAddr::from(src), IpAddr::from(dst), ip[9], l4)
        }
        0x86dd if ip.len() >= 40 => {
            let total = u16::from_be_bytes([ip[4], ip[5]]) as u32 + 40;
            let src: [u8; 16] = ip[8..24].try_into().ok()?;
            let dst: [u8; 16] = ip[24..40].try_into().ok()?;
            let l4 = if ip.len() >= 44 { Some(&ip[40..]) } else { None };
            (total, IpAddr::from(src), IpAddr::from(dst), ip[6], l4)
        }
        _ => return None,
    };
    let ports = match (proto, l4) {
        (6 | 17, Some(l)) => Some((u16::from_be_bytes([l[0], l[1]]), u16::from_be_bytes([l[2], l[3]]))),
        _ => None,
    };
    Some(Meta { ip_len, src, dst, ports, proto_udp: proto == 17 })
}

/// An address prefix such as 10.0.0.0/8 or fd00::/64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    pub fn parse(s: &str) -> Result<Prefix, String> {
        let (a, l) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = a.parse().map_err(|_| format!("{s:?} is not an IP address or prefix (e.g. 10.0.2.0/24)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match l {
            None => max,
            Some(l) => l.parse::<u8>().ok().filter(|l| *l <= max).ok_or_else(|| format!("{s:?}: prefix length must be 0..={max}"))?,
        };
        Ok(Prefix { addr, len })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                let mask = if self.len == 0 { 0 } else { u32::MAX << (32 - self.len) };
                (u32::from(p) & mask) == (u32::from(a) & mask)
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                let mask = if self.len == 0 { 0 } else { u128::MAX << (128 - self.len) };
                (u128::from(p) & mask) == (u128::from(a) & mask)
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// Traffic that bypasses the trace (still forwarded): to or from `prefix`,
/// and when `port` is set, only TCP/UDP with that source or destination port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BypassRule {
    pub prefix: Prefix,
    pub port: Option<u16>,
}

impl BypassRule {
    /// `10.0.2.0/24`, `10.0.2.1:1883`, `10.0.2.0/24:1883`, `[fd00::/64]:1883`.
    pub fn parse(s: &str) -> Result<BypassRule, String> {
        let bad = |why: &str| format!("bypass rule {s:?}: {why}; expected PREFIX, PREFIX:PORT or [IPV6PREFIX]:PORT");
        if let Some(rest) = s.strip_prefix('[') {
            let (p, port) = rest.split_once(']').ok_or_else(|| bad("missing ]"))?;
            let port = match port.strip_prefix(':') {
                Some(x) => Some(x.parse::<u16>().map_err(|_| bad("bad port"))?),
                None if port.is_empty() => None,
                None => return Err(bad("junk after ]")),
            };
            return Ok(BypassRule { prefix: Prefix::parse(p).map_err(|e| bad(&e))?, port });
        }
        if s.matches(':').count() == 1 {
            let (p, port) = s.split_once(':').expect("one colon");
            let port = port.parse::<u16>().map_err(|_| bad("bad port"))?;
            return Ok(BypassRule { prefix: Prefix::parse(p).map_err(|e| bad(&e))?, port: Some(port) });
        }
        Ok(BypassRule { prefix: Prefix::parse(s).map_err(|e| bad(&e))?, port: None })
    }

    pub fn matches(&self, m: &Meta) -> bool {
        if !(self.prefix.contains(m.src) || self.prefix.contains(m.dst)) {
            return false;
        }
        match (self.port, m.ports) {
            (None, _) => true,
            (Some(p), Some((s, d))) => p == s || p == d,
            (Some(_), None) => false,
        }
    }
}

/// One-way core-network delay for traffic to (uplink) or from (downlink) a prefix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayRule {
    pub prefix: Prefix,
    pub delay_ns: u64,
}

impl DelayRule {
    /// `10.0.3.0/24=0.5` (milliseconds, microsecond precision).
    pub fn parse(s: &str) -> Result<DelayRule, String> {
        let bad = |why: String| format!("delay rule {s:?}: {why}; expected PREFIX=MILLISECONDS, e.g. 10.0.3.0/24=0.5");
        let (p, ms) = s.split_once('=').ok_or_else(|| bad("missing =".into()))?;
        let ms: f64 = ms.trim().parse().map_err(|_| bad(format!("{ms:?} is not a number")))?;
        if !(0.0..=3_600_000.0).contains(&ms) || !ms.is_finite() {
            return Err(bad("delay must be between 0 and 3600000 ms".into()));
        }
        Ok(DelayRule { prefix: Prefix::parse(p.trim()).map_err(bad)?, delay_ns: (ms * 1e6).round() as u64 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4_udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 28 + payload];
        f[12] = 0x08;
        f[14] = 0x45;
        let total = (28 + payload) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[23] = 17;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sport.to_be_bytes());
        f[36..38].copy_from_slice(&dport.to_be_bytes());
        f
    }

    #[test]
    fn parses_ipv4_udp() {
        let f = ipv4_udp([10, 0, 1, 2], [10, 0, 3, 4], 5000, 1883, 100);
        let m = parse(&f).unwrap();
        assert_eq!(m.ip_len, 128);
        assert_eq!(m.ports, Some((5000, 1883)));
        assert!(BypassRule::parse("10.0.3.0/24").unwrap().matches(&m));
        assert!(BypassRule::parse("10.0.3.0/24:1883").unwrap().matches(&m));
        assert!(!BypassRule::parse("10.0.3.0/24:22").unwrap().matches(&m));
        assert!(!BypassRule::parse("10.9.0.0/16").unwrap().matches(&m));
    }

    #[test]
    fn rejects_bad_rules() {
        assert!(BypassRule::parse("10.0.0.0/33").is_err());
        assert!(BypassRule::parse("nonsense").is_err());
        assert!(DelayRule::parse("10.0.0.0/8").is_err());
        assert!(DelayRule::parse("10.0.0.0/8=-1").is_err());
        assert_eq!(DelayRule::parse("10.0.0.0/8=0.0125").unwrap().delay_ns, 12_500);
        assert!(parse(&[0u8; 10]).is_none());
    }
}
