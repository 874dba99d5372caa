//! MECaNIC's classification: which class (and so which queue range and
//! priorities) a packet belongs to, by its 5-tuple and one L7 keyword, and
//! the classes as the command line gives them.

use super::Rule;

/// What a rule looks for in a packet beside its 5-tuple (issue 40's L7 keywords).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Keyword {
    /// Bytes at an offset of the transport payload, compared under a mask.
    Raw { offset: usize, bytes: Vec<u8>, mask: Vec<u8> },
    /// An MQTT PUBLISH whose topic starts with this (the packet holding the message's start).
    MqttTopic(Vec<u8>),
    /// An HTTP request line whose path starts with this ("GET /path ...", any method).
    HttpPath(Vec<u8>),
}

/// A classification rule: every given field must match (None: any).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Match {
    pub proto: Option<u8>,
    pub src: Option<crate::packet::Prefix>,
    pub dst: Option<crate::packet::Prefix>,
    pub sport: Option<(u16, u16)>,
    pub dport: Option<(u16, u16)>,
    pub keyword: Option<Keyword>,
}

/// A named class: what it matches and the queueing it gets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Class {
    pub name: String,
    pub when: Match,
    pub rule: Rule,
}

/// What the classifier reads of a frame.
pub struct Dissected<'a> {
    pub proto: u8,
    pub src: std::net::IpAddr,
    pub dst: std::net::IpAddr,
    pub ports: Option<(u16, u16)>,
    /// The transport payload (after the TCP or UDP header; empty for other protocols).
    pub payload: &'a [u8],
}

/// An Ethernet frame's IP protocol, addresses, ports and transport payload (IPv4, or IPv6 with no
/// extension header; None for anything else and for fragments past the first).
pub fn dissect(frame: &[u8]) -> Option<Dissected<'_>> {
    let m = crate::packet::parse(frame)?;
    let ip = &frame[crate::packet::ETH_HLEN..];
    let (proto, l4) = match m.src {
        std::net::IpAddr::V4(_) => {
            let ihl = ((ip[0] & 0x0f) as usize) * 4;
            let frag_off = u16::from_be_bytes([ip[6], ip[7]]) & 0x1fff;
            let end = (m.ip_len as usize).min(ip.len());
            (ip[9], if frag_off == 0 && end >= ihl { &ip[ihl..end] } else { return None })
        }
        std::net::IpAddr::V6(_) => (ip[6], ip.get(40..(m.ip_len as usize).min(ip.len()))?),
    };
    let payload = match proto {
        6 if l4.len() >= 20 => l4.get(((l4[12] >> 4) as usize) * 4..)?,
        17 if l4.len() >= 8 => &l4[8..],
        _ => &[][..],
    };
    Some(Dissected { proto, src: m.src, dst: m.dst, ports: m.ports, payload })
}

impl Keyword {
    pub fn matches(&self, payload: &[u8]) -> bool {
        match self {
            Keyword::Raw { offset, bytes, mask } => payload
                .get(*offset..offset + bytes.len())
                .is_some_and(|got| got.iter().zip(bytes).zip(mask).all(|((g, b), m)| g & m == b & m)),
            Keyword::MqttTopic(prefix) => {
                // fixed header: type 3 (PUBLISH) in the high nibble; remaining length: 1-4 bytes, 7 bits each
                if payload.first().is_none_or(|b| b >> 4 != 3) {
                    return false;
                }
                let mut i = 1;
                while payload.get(i).is_some_and(|b| b & 0x80 != 0) && i < 4 {
                    i += 1;
                }
                let Some(len) = payload.get(i + 1..i + 3).map(|l| u16::from_be_bytes([l[0], l[1]]) as usize) else { return false };
                payload.get(i + 3..i + 3 + len).is_some_and(|topic| topic.starts_with(prefix))
            }
            Keyword::HttpPath(prefix) => {
                let Some(sp) = payload.iter().take(8).position(|&b| b == b' ') else { return false };
                payload[..sp].iter().all(u8::is_ascii_uppercase) && payload[sp + 1..].starts_with(prefix)
            }
        }
    }
}

/// The first class whose rule the frame matches (None: unclassified, the stage's default class).
pub fn classify<'a>(classes: &'a [Class], frame: &[u8]) -> Option<&'a Class> {
    let Dissected { proto, src, dst, ports, payload } = dissect(frame)?;
    let within = |range: Option<(u16, u16)>, port: Option<u16>| range.is_none_or(|(a, b)| port.is_some_and(|p| a <= p && p <= b));
    classes.iter().find(|c| {
        let w = &c.when;
        w.proto.is_none_or(|p| p == proto)
            && w.src.is_none_or(|p| p.contains(src))
            && w.dst.is_none_or(|p| p.contains(dst))
            && within(w.sport, ports.map(|p| p.0))
            && within(w.dport, ports.map(|p| p.1))
            && w.keyword.as_ref().is_none_or(|k| k.matches(payload))
    })
}

#[cfg(test)]
mod classify_tests {
    use super::*;
    use crate::packet::Prefix;

    /// An Ethernet + IPv4 + TCP (data offset 5) or UDP frame carrying `payload`.
    fn frame(proto: u8, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
        let l4h = if proto == 6 { 20 } else { 8 };
        let total = (20 + l4h + payload.len()) as u16;
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00]);
        f.extend([0x45, 0, (total >> 8) as u8, total as u8, 0, 0, 0x40, 0, 64, proto, 0, 0, 10, 200, 0, 2]);
        f.extend(dst);
        let mut l4 = vec![0u8; l4h];
        l4[0..2].copy_from_slice(&40000u16.to_be_bytes());
        l4[2..4].copy_from_slice(&dport.to_be_bytes());
        if proto == 6 {
            l4[12] = 5 << 4;
        }
        f.extend(l4);
        f.extend(payload);
        f
    }

    fn publish(topic: &str, body: &[u8]) -> Vec<u8> {
        let rest = 2 + topic.len() + body.len();
        let mut p = vec![0x30];
        let mut n = rest;
        loop {
            let b = (n % 128) as u8;
            n /= 128;
            p.push(if n > 0 { b | 0x80 } else { b });
            if n == 0 {
                break;
            }
        }
        p.extend((topic.len() as u16).to_be_bytes());
        p.extend(topic.as_bytes());
        p.extend(body);
        p
    }

    fn class(name: &str, when: Match) -> Class {
        Class { name: name.into(), when, rule: Rule { lo: 0, hi: 0, pr: 0, pl: 1 } }
    }

    #[test]
    fn the_first_class_that_matches_wins_by_5_tuple_and_keyword() {
        let edge = Prefix::parse("10.202.0.0/16").unwrap();
        let classes = vec![
            class("urgent", Match { keyword: Some(Keyword::Raw { offset: 0, bytes: b"URG".to_vec(), mask: vec![0xff; 3] }), ..Default::default() }),
            class("mqtt-video", Match { proto: Some(6), dport: Some((1883, 1883)), keyword: Some(Keyword::MqttTopic(b"video/".to_vec())), ..Default::default() }),
            class("http-api", Match { keyword: Some(Keyword::HttpPath(b"/api/".to_vec())), ..Default::default() }),
            class("to-edge-udp", Match { proto: Some(17), dst: Some(edge), ..Default::default() }),
        ];
        let name = |f: &[u8]| classify(&classes, f).map(|c| c.name.as_str());
        assert_eq!(name(&frame(17, [10, 202, 0, 2], 9000, b"URGENT data")), Some("urgent"));
        assert_eq!(name(&frame(17, [10, 202, 0, 2], 9000, b"plain")), Some("to-edge-udp"));
        assert_eq!(name(&frame(17, [10, 203, 0, 2], 9000, b"plain")), None); // the cloud's net
        // a PUBLISH whose remaining length takes two bytes still has its topic found
        let long = publish("video/cam1", &[7u8; 300]);
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 1883, &long)), Some("mqtt-video"));
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 1883, &publish("audio/x", b"b"))), None);
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 1884, &publish("video/x", b"b"))), None); // another port
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 80, b"GET /api/v1 HTTP/1.1\r\n")), Some("http-api"));
        assert_eq!(name(&frame(6, [10, 202, 0, 2], 80, b"GET /index HTTP/1.1\r\n")), None);
        // masked bytes: only the bits under the mask count
        let flag = vec![class("flag", Match { keyword: Some(Keyword::Raw { offset: 2, bytes: vec![0x80], mask: vec![0x80] }), ..Default::default() })];
        assert!(classify(&flag, &frame(17, [10, 202, 0, 2], 1, &[0, 0, 0x81])).is_some());
        assert!(classify(&flag, &frame(17, [10, 202, 0, 2], 1, &[0, 0, 0x7f])).is_none());
        assert!(classify(&flag, &frame(17, [10, 202, 0, 2], 1, &[0, 0])).is_none()); // too short: no match
    }
}

/// A class from the command line: `NAME:LO:HI:PR:PL` then `,KEY=VALUE` conditions, each optional:
/// `proto=tcp|udp|N`, `src=PREFIX`, `dst=PREFIX`, `sport=P[-Q]`, `dport=P[-Q]`, and one keyword:
/// `raw=OFFSET:HEX[/MASKHEX]`, `mqtt=TOPIC_PREFIX` or `http=PATH_PREFIX`.
pub fn parse_class(spec: &str) -> Result<Class, String> {
    let bad = |why: String| format!("{spec:?}: {why}; expected NAME:LO:HI:PR:PL[,proto=tcp|udp][,src=PREFIX][,dst=PREFIX][,sport=P[-Q]][,dport=P[-Q]][,raw=OFFSET:HEX[/MASK]|,mqtt=TOPIC|,http=PATH]");
    let mut parts = spec.split(',');
    let head: Vec<&str> = parts.next().unwrap_or("").split(':').collect();
    let [name, lo, hi, pr, pl] = head.as_slice() else { return Err(bad("the class needs NAME:LO:HI:PR:PL".into())) };
    let int = |what: &str, v: &str| v.parse::<u64>().map_err(|_| bad(format!("{what} {v:?} is not a non-negative integer")));
    let (lo, hi) = (int("LO", lo)? as usize, int("HI", hi)? as usize);
    if name.is_empty() || lo > hi {
        return Err(bad("a name, and LO <= HI".into()));
    }
    let rule = Rule { lo, hi, pr: int("PR", pr)? as u32, pl: int("PL", pl)? };
    let hex = |v: &str| -> Result<Vec<u8>, String> {
        if v.is_empty() || !v.len().is_multiple_of(2) {
            return Err(bad(format!("{v:?} is not hex bytes")));
        }
        (0..v.len()).step_by(2).map(|i| u8::from_str_radix(&v[i..i + 2], 16).map_err(|_| bad(format!("{v:?} is not hex bytes")))).collect()
    };
    let ports = |v: &str| -> Result<(u16, u16), String> {
        let (a, b) = v.split_once('-').unwrap_or((v, v));
        match (a.parse::<u16>(), b.parse::<u16>()) {
            (Ok(a), Ok(b)) if a <= b => Ok((a, b)),
            _ => Err(bad(format!("ports {v:?}: P or P-Q, P <= Q"))),
        }
    };
    let mut when = Match::default();
    for cond in parts {
        let (k, v) = cond.split_once('=').ok_or_else(|| bad(format!("{cond:?} is not KEY=VALUE")))?;
        let keyword = |when: &Match| if when.keyword.is_some() { Err(bad("one keyword per class".into())) } else { Ok(()) };
        match k {
            "proto" => when.proto = Some(match v { "tcp" => 6, "udp" => 17, n => n.parse().map_err(|_| bad(format!("proto {n:?}: tcp, udp or a number")))? }),
            "src" => when.src = Some(crate::packet::Prefix::parse(v).map_err(bad)?),
            "dst" => when.dst = Some(crate::packet::Prefix::parse(v).map_err(bad)?),
            "sport" => when.sport = Some(ports(v)?),
            "dport" => when.dport = Some(ports(v)?),
            "raw" => {
                keyword(&when)?;
                let (off, bytes) = v.split_once(':').ok_or_else(|| bad(format!("raw={v}: OFFSET:HEX[/MASK]")))?;
                let (bytes, mask) = bytes.split_once('/').map_or((bytes, None), |(b, m)| (b, Some(m)));
                let bytes = hex(bytes)?;
                let mask = mask.map_or(Ok(vec![0xff; bytes.len()]), hex)?;
                if mask.len() != bytes.len() {
                    return Err(bad("the mask has as many bytes as the pattern".into()));
                }
                when.keyword = Some(Keyword::Raw { offset: int("OFFSET", off)? as usize, bytes, mask });
            }
            "mqtt" => {
                keyword(&when)?;
                when.keyword = Some(Keyword::MqttTopic(v.as_bytes().to_vec()));
            }
            "http" => {
                keyword(&when)?;
                when.keyword = Some(Keyword::HttpPath(v.as_bytes().to_vec()));
            }
            other => return Err(bad(format!("unknown condition {other:?}"))),
        }
    }
    Ok(Class { name: name.to_string(), when, rule })
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn a_class_from_the_command_line_and_every_problem_named() {
        let c = parse_class("urllc:0:19:5:200,proto=udp,dst=10.202.0.0/16,dport=5000-5010,raw=4:55524700/ffffff00").unwrap();
        assert_eq!((c.name.as_str(), c.rule), ("urllc", Rule { lo: 0, hi: 19, pr: 5, pl: 200 }));
        assert_eq!((c.when.proto, c.when.dport), (Some(17), Some((5000, 5010))));
        assert_eq!(c.when.keyword, Some(Keyword::Raw { offset: 4, bytes: vec![0x55, 0x52, 0x47, 0], mask: vec![0xff, 0xff, 0xff, 0] }));
        assert_eq!(parse_class("v:0:9:3:50,mqtt=video/").unwrap().when.keyword, Some(Keyword::MqttTopic(b"video/".to_vec())));
        for (spec, why) in [
            ("x:0:9:3", "NAME:LO:HI:PR:PL"),
            ("x:9:0:3:5", "LO <= HI"),
            ("x:0:9:3:5,proto=sctp", "tcp, udp or a number"),
            ("x:0:9:3:5,dport=9-1", "P <= Q"),
            ("x:0:9:3:5,raw=0:zz", "not hex"),
            ("x:0:9:3:5,raw=0:ab/ffff", "as many bytes"),
            ("x:0:9:3:5,mqtt=a,http=/b", "one keyword"),
            ("x:0:9:3:5,colour=red", "unknown condition"),
        ] {
            let e = parse_class(spec).unwrap_err();
            assert!(e.contains(why) && e.contains(spec), "{spec}: {e}");
        }
    }
}
