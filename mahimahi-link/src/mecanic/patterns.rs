//! MECaNIC's payload pattern matching: which of a stage's patterns a packet's
//! transport payload holds, and the IPv4 option that carries the answer to
//! the host.

/// MECaNIC's payload pattern matching (issue 40): the patterns a stage looks for in the transport
/// payload of the packets it scans. The result is the lowest-numbered pattern found (1-based), 0 for
/// none; it reaches the host in the packet as an IPv4 option ([`mark`]), since nothing else of a
/// packet reaches an application's socket (a NIC would put it in the receive descriptor).
#[derive(Clone, Debug)]
pub struct Patterns {
    ac: aho_corasick::AhoCorasick,
    pub count: usize,
}

/// The most patterns, and the longest (the paper's NIC matches 100 of up to 128 bytes).
pub const MAX_PATTERNS: usize = 1024;
pub const MAX_PATTERN_BYTES: usize = 128;

impl Patterns {
    pub fn new(patterns: &[Vec<u8>]) -> Result<Patterns, String> {
        if patterns.is_empty() || patterns.len() > MAX_PATTERNS {
            return Err(format!("{} patterns: 1 to {MAX_PATTERNS}", patterns.len()));
        }
        if let Some((i, p)) = patterns.iter().enumerate().find(|(_, p)| p.is_empty() || p.len() > MAX_PATTERN_BYTES) {
            return Err(format!("pattern {} has {} bytes: 1 to {MAX_PATTERN_BYTES}", i + 1, p.len()));
        }
        let ac = aho_corasick::AhoCorasick::new(patterns).map_err(|e| e.to_string())?;
        Ok(Patterns { ac, count: patterns.len() })
    }

    /// The patterns from a file: one per line, in hex ("#" lines and blank lines skipped).
    pub fn load(path: &str) -> Result<Patterns, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bytes = (line.len().is_multiple_of(2) && line.bytes().all(|b| b.is_ascii_hexdigit()))
                .then(|| (0..line.len()).step_by(2).map(|i| u8::from_str_radix(&line[i..i + 2], 16).expect("hex")).collect::<Vec<u8>>())
                .ok_or_else(|| format!("{path}:{}: {line:?} is not hex bytes (one pattern per line, e.g. 47455420 for \"GET \")", n + 1))?;
            out.push(bytes);
        }
        Patterns::new(&out).map_err(|e| format!("{path}: {e}"))
    }

    /// The lowest-numbered pattern anywhere in `payload` (1-based), 0 for none.
    pub fn scan(&self, payload: &[u8]) -> u16 {
        self.ac.find_overlapping_iter(payload).map(|m| m.pattern().as_usize() + 1).min().unwrap_or(0) as u16
    }
}

/// The IPv4 option that carries a scan's result: option type 158 (RFC 4727's experimental
/// number 30, copied on fragmentation), length 4, the result (u16, big-endian).
pub const MATCH_OPTION: u8 = 0x9E;

/// Put a scan's result into an Ethernet + IPv4 frame as [`MATCH_OPTION`], the IP header grown by
/// 4 bytes and its checksum redone. False (the frame unchanged) where it has no room: the header
/// is at its 60 bytes, or the packet would exceed `mtu`, or it is not IPv4.
pub fn mark(frame: &mut Vec<u8>, value: u16, mtu: usize) -> bool {
    use crate::packet::ETH_HLEN;
    let ip = ETH_HLEN;
    if frame.len() < ip + 20 || frame[12..14] != [0x08, 0x00] || frame[ip] >> 4 != 4 {
        return false;
    }
    let ihl = (frame[ip] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([frame[ip + 2], frame[ip + 3]]) as usize;
    if ihl + 4 > 60 || total + 4 > mtu || frame.len() < ip + ihl {
        return false;
    }
    let v = value.to_be_bytes();
    frame.splice(ip + ihl..ip + ihl, [MATCH_OPTION, 4, v[0], v[1]]);
    frame[ip] = 0x40 | ((ihl + 4) / 4) as u8;
    frame[ip + 2..ip + 4].copy_from_slice(&((total + 4) as u16).to_be_bytes());
    frame[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let c = !crate::gso::fold(crate::gso::ones_sum(&frame[ip..ip + ihl + 4]));
    frame[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    true
}

#[cfg(test)]
mod pattern_tests {
    use super::*;

    #[test]
    fn the_lowest_numbered_pattern_found_is_the_result() {
        let p = Patterns::new(&[b"attack".to_vec(), b"GET /admin".to_vec(), b"tac".to_vec()]).unwrap();
        assert_eq!(p.scan(b"GET /admin/attack"), 1); // both 1 and 2 are there (and 3 inside 1): 1 wins
        assert_eq!(p.scan(b"GET /admin/x"), 2);
        assert_eq!(p.scan(b"stack"), 3);
        assert_eq!(p.scan(b"nothing"), 0);
        assert!(Patterns::new(&[]).is_err() && Patterns::new(&[vec![0; 129]]).unwrap_err().contains("pattern 1 has 129 bytes"));
    }

    #[test]
    fn a_mark_is_an_ipv4_option_with_the_header_checksum_redone() {
        // Ethernet + IPv4 (20 bytes) + UDP (8) + 4 bytes of payload
        let mut f = vec![0u8; 12];
        f.extend([0x08, 0x00, 0x45, 0, 0, 32, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 200, 0, 2, 10, 202, 0, 2]);
        f.extend([0x9c, 0x40, 0x13, 0x88, 0, 12, 0, 0, b'd', b'a', b't', b'a']);
        let c = !crate::gso::fold(crate::gso::ones_sum(&f[14..34]));
        f[24..26].copy_from_slice(&c.to_be_bytes());
        assert!(mark(&mut f, 7, 1500));
        assert_eq!((f[14], u16::from_be_bytes([f[16], f[17]])), (0x46, 36));
        assert_eq!(&f[34..38], &[MATCH_OPTION, 4, 0, 7]);
        assert_eq!(crate::gso::fold(crate::gso::ones_sum(&f[14..38])), 0xffff); // a valid header sums to all ones
        assert_eq!(&f[38..40], &[0x9c, 0x40]); // the UDP header follows, unchanged
        assert_eq!(&f[f.len() - 4..], b"data");
        // no room: past the MTU, or a header already at 60 bytes
        let mut g = f.clone();
        assert!(!mark(&mut g, 1, 36 + 3) && g == f);
        g[14] = 0x4f;
        assert!(!mark(&mut g, 1, 1500));
    }
}
