//! Mahimahi trace files: one millisecond timestamp per line, each line one
//! delivery opportunity of 1504 bytes.
//!
//! The parser enforces mm-link's own checks (non-empty, non-decreasing, last
//! timestamp > 0) and reports every problem with the file and line, because a
//! silently wrong trace is the most expensive bug a link emulator can have.
//! Opportunities are stored grouped per millisecond, so a 5 Gbit/s trace costs
//! 8 bytes per millisecond instead of 8 bytes per opportunity.

use std::fmt;
use std::path::Path;

/// One millisecond that holds `count` opportunities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    pub ms: u64,
    pub count: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub source: String,
    pub groups: Vec<Group>,
    /// Number of opportunities (lines) in one period.
    pub opportunities: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.file, l, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for TraceError {}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let name = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| TraceError {
            file: name.clone(),
            line: None,
            message: format!("cannot read trace file: {e}"),
        })?;
        let text = String::from_utf8(text).map_err(|_| TraceError {
            file: name.clone(),
            line: None,
            message: "trace file is not text (expected one integer millisecond timestamp per line)".into(),
        })?;
        Trace::parse(&name, &text)
    }

    /// Parse trace text. Blank lines are rejected like any other non-integer,
    /// except a single trailing newline at the end of the file.
    pub fn parse(name: &str, text: &str) -> Result<Trace, TraceError> {
        let err = |line: Option<usize>, message: String| TraceError {
            file: name.to_string(),
            line,
            message,
        };
        let mut groups: Vec<Group> = Vec::new();
        let mut opportunities = 0u64;
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let s = raw.trim_end_matches('\r').trim();
            if s.is_empty() {
                return Err(err(Some(line_no), "empty line (expected one integer millisecond timestamp per line)".into()));
            }
            if !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(Some(line_no), format!("not a non-negative integer millisecond timestamp: {s:?}")));
            }
            let ms: u64 = s.parse().map_err(|_| err(Some(line_no), format!("timestamp out of range: {s:?}")))?;
            if ms > (1u64 << 40) {
                return Err(err(Some(line_no), format!("timestamp {ms} ms is absurdly large (over 34 years)")));
            }
            match groups.last_mut() {
                Some(g) if g.ms == ms => {
                    if g.count == u32::MAX {
                        return Err(err(Some(line_no), "too many opportunities in one millisecond".into()));
                    }
                    g.count += 1
                }
                Some(g) if g.ms > ms => {
                    return Err(err(
                        Some(line_no),
                        format!("timestamp {ms} is smaller than the previous one ({}); timestamps must be non-decreasing", g.ms),
                    ))
                }
                _ => groups.push(Group { ms, count: 1 }),
            }
            opportunities += 1;
            last_line = line_no;
        }
        let Some(last) = groups.last() else {
            return Err(err(None, "trace is empty (expected one integer millisecond timestamp per line)".into()));
        };
        if last.ms == 0 {
            return Err(err(Some(last_line), "last timestamp is 0; the trace period (last timestamp) must be > 0".into()));
        }
        Ok(Trace { source: name.to_string(), groups, opportunities })
    }

    /// Loop period in milliseconds (mm-link: the last timestamp).
    pub fn period_ms(&self) -> u64 {
        self.groups.last().map(|g| g.ms).unwrap_or(0)
    }

    /// Average capacity over one period in bits per second.
    pub fn mean_bps(&self) -> f64 {
        self.opportunities as f64 * crate::OPPORTUNITY_BYTES as f64 * 8.0 / (self.period_ms() as f64 / 1000.0)
    }

    /// Opportunities in millisecond `ms` of the unrolled (looping) trace, by
    /// binary search (a shared cell asks this for every UE every slot).
    pub fn opportunities_in_ms(&self, ms: u64) -> u64 {
        let p = self.period_ms();
        let (j, r) = (ms / p, ms % p);
        let at = |x: u64| self.groups.binary_search_by_key(&x, |g| g.ms).map_or(0, |i| self.groups[i].count as u64);
        // The previous loop's last millisecond (ms == period) is this loop's first.
        at(r) + if r == 0 && j >= 1 { at(p) } else { 0 }
    }

    /// Opportunities in `[from_ms, to_ms)` of the unrolled (looping) trace.
    pub fn opportunities_between(&self, from_ms: u64, to_ms: u64) -> u64 {
        let mut n = 0;
        let period = self.period_ms();
        // A group at the period's own millisecond (ms == period) of one loop
        // lands in the next: start a loop early.
        let mut base = ((from_ms / period) * period).saturating_sub(period);
        while base < to_ms {
            for g in &self.groups {
                let t = base + g.ms;
                if t >= from_ms && t < to_ms {
                    n += g.count as u64;
                }
            }
            base += period;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_repeated_timestamps() {
        let t = Trace::parse("t", "1\n1\n2\n5\n5\n5\n").unwrap();
        assert_eq!(t.groups, vec![Group { ms: 1, count: 2 }, Group { ms: 2, count: 1 }, Group { ms: 5, count: 3 }]);
        assert_eq!(t.opportunities, 6);
        assert_eq!(t.period_ms(), 5);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Trace::parse("up.trace", "1\n3\n2\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.to_string().starts_with("up.trace:3:"), "{e}");
        assert!(Trace::parse("x", "").unwrap_err().message.contains("empty"));
        assert_eq!(Trace::parse("x", "1\nabc\n").unwrap_err().line, Some(2));
        assert_eq!(Trace::parse("x", "0\n0\n").unwrap_err().line, Some(2));
        assert_eq!(Trace::parse("x", "1\n-3\n").unwrap_err().line, Some(2));
        assert_eq!(Trace::parse("x", "1\n\n2\n").unwrap_err().line, Some(2));
    }

    #[test]
    fn counts_opportunities_across_loops() {
        let t = Trace::parse("t", "1\n1\n4\n").unwrap();
        // period 4: opportunities at 1,1,4,5,5,8,9,9,12
        assert_eq!(t.opportunities_between(0, 10), 8);
        assert_eq!(t.opportunities_between(4, 9), 4); // 4, 5, 5, 8
        let every_ms = Trace::parse("t", "1\n1\n").unwrap(); // period 1: two opportunities in every millisecond
        assert_eq!(every_ms.opportunities_between(5, 6), 2);
        assert_eq!(every_ms.opportunities_between(0, 3), 4); // at 1 and 2
        for text in ["1\n1\n4\n", "0\n0\n3\n7\n7\n7\n", "1\n1\n", "5\n"] {
            let t = Trace::parse("t", text).unwrap();
            for ms in 0..40 {
                assert_eq!(t.opportunities_in_ms(ms), t.opportunities_between(ms, ms + 1), "{text:?} ms {ms}");
            }
        }
    }
}
