//! Fuzzing at scale: the trace parser and the option parser on a million
//! generated inputs each (`CONTINUUM_FUZZ_CASES`, default 1,000,000).
//!
//! These are `#[ignore]`d because a million cases take minutes; the test
//! command runs the 2,000-case versions in parser_properties.rs, and
//! docs/reliability.md records the figures of the full runs:
//!
//!     cargo test --release --test fuzz_at_scale -- --ignored --nocapture
//!
//! The inputs are built from the pieces that break parsers (signs, unicode
//! digits, huge numbers, CR/LF mixes, empty lines, every option name with
//! valid and invalid values) rather than uniform noise, so most cases get
//! past the first check. Each case checks the parser against what its input
//! should give, not only that it did not panic.

use mahimahi_link::options;
use mahimahi_link::trace::Trace;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::sync::atomic::{AtomicU64, Ordering};

fn cases() -> u32 {
    std::env::var("CONTINUUM_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000)
}

fn runner() -> TestRunner {
    // No failure file: a failure is printed with its shrunk input instead.
    TestRunner::new(Config { cases: cases(), failure_persistence: None, max_shrink_iters: 10_000, ..Config::default() })
}

/// A piece that mm-link rejects or that sits at a numeric edge.
fn odd_line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "", " ", "\t", "0", "00", "007", "-1", "+3", "1.5", "1e3", "0x10", "٣", "１", "\u{feff}5",
            "1099511627776", "1099511627777", "18446744073709551615", "18446744073709551616",
            "99999999999999999999999999", " 12", "12 ", "1 2", "\r", "12\r",
        ])
        .prop_map(String::from),
        1 => "\\PC{0,6}",
    ]
}

/// Non-decreasing timestamps (from the deltas) with a few lines replaced by
/// odd ones; a third of the cases have none, so both outcomes are common.
fn trace_text(deltas: &[u64], odd: &[(usize, String)], crlf: bool, trailing: bool) -> String {
    let mut t = 0u64;
    let mut lines: Vec<String> = deltas
        .iter()
        .map(|d| {
            t += d;
            t.to_string()
        })
        .collect();
    for (i, o) in odd {
        if !lines.is_empty() {
            let n = lines.len();
            lines[i % n] = o.clone();
        }
    }
    let mut s = lines.join(if crlf { "\r\n" } else { "\n" });
    if trailing && !lines.is_empty() {
        s.push('\n');
    }
    s
}

/// What mm-link's rules say about a trace text: Ok(period) or Err(line).
fn expected(text: &str) -> Result<u64, Option<usize>> {
    let mut prev: Option<u64> = None;
    for (i, raw) in text.lines().enumerate() {
        let s = raw.trim_end_matches('\r').trim();
        let ms = match s.parse::<u64>() {
            Ok(v) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && v <= 1 << 40 => v,
            _ => return Err(Some(i + 1)),
        };
        if prev.is_some_and(|p| ms < p) {
            return Err(Some(i + 1));
        }
        prev = Some(ms);
    }
    match prev {
        None => Err(None),
        Some(0) => Err(Some(text.lines().count())),
        Some(p) => Ok(p),
    }
}

#[test]
#[ignore = "a million cases: run with --ignored (docs/reliability.md)"]
fn trace_parser_million() {
    let (accepted, rejected) = (AtomicU64::new(0), AtomicU64::new(0));
    let odd = prop::collection::vec((any::<usize>(), odd_line()), 0..3);
    let strategy = (prop::collection::vec(0u64..4, 0..120), odd, any::<bool>(), any::<bool>());
    runner()
        .run(&strategy, |(deltas, odd, crlf, trailing)| {
            let text = trace_text(&deltas, &odd, crlf, trailing);
            let got = Trace::parse("f.trace", &text);
            match (&got, expected(&text)) {
                (Ok(t), Ok(period)) => {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    prop_assert_eq!(t.period_ms(), period);
                    prop_assert_eq!(t.opportunities as usize, text.lines().count());
                    prop_assert_eq!(t.groups.iter().map(|g| g.count as u64).sum::<u64>(), t.opportunities);
                    prop_assert!(t.groups.windows(2).all(|w| w[0].ms < w[1].ms));
                }
                (Err(e), Err(line)) => {
                    rejected.fetch_add(1, Ordering::Relaxed);
                    prop_assert_eq!(e.line, line, "{}", e);
                    prop_assert!(e.to_string().starts_with("f.trace"));
                    prop_assert!(e.message.len() > 10, "unclear: {}", e);
                }
                (g, want) => prop_assert!(false, "{:?}: parser said {:?}, rules say {:?}", text, g, want),
            }
            Ok(())
        })
        .unwrap();
    let (a, r) = (accepted.into_inner(), rejected.into_inner());
    println!("trace parser: {} cases, {a} accepted, {r} rejected with file and line, 0 panics", a + r);
    assert!(a > 0 && r > 0, "the generator must reach both outcomes");
}

const OPTIONS: &[&str] = &[
    "--uplink-queue", "--downlink-queue", "--uplink-queue-args", "--downlink-queue-args", "--queue", "--queue-args",
    "--uplink-log", "--downlink-log", "--once", "--ms-bursts", "--gso", "--quiet", "--uplink-loss", "--downlink-loss",
    "--seed", "--bypass", "--delay", "--stats", "--stats-interval-ms", "--link", "--cpu", "--batch-us",
    "--ring-frames", "--coalesce-us", "--nonsense", "--",
];

fn option_value() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "", "0", "1", "-1", "0.5", "1.0000001", "NaN", "inf", "1e309", "16", "65536", "65537", "1000", "1001",
            "10000", "99999999999999999999", "droptail", "drophead", "codel", "pie", "infinite", "red",
            "packets=100", "packets=100, bytes=150000", "target=5, interval=100", "qdelay_ref=15, max_burst=150",
            "packets=x", "bytes=", "=", ",", "10.0.3.0/24", "10.0.3.1:1883", "[fd00::/64]:1883", "[fd00::/64",
            "10.0.3.0/33", "::/0", "10.0.3.0/24=0.5", "10.0.3.0/24=-1", "10.0.3.0/24=3600001", "x=1",
            "name=a,ue=u0,core=c0,up=t1,down=t2", "name=a,ue=u0,core=c0,up=t1,down=t2,netns=n",
            "ue=u0,core=c0,up=t1", "name=a,ue=u0,bogus=1", "ue", "/tmp/{name}.log",
        ])
        .prop_map(String::from),
        1 => "\\PC{0,12}",
    ]
}

fn argument() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        // --key=value, --key value, a bare flag, a positional
        3 => (prop::sample::select(OPTIONS), option_value()).prop_map(|(k, v)| vec![format!("{k}={v}")]),
        2 => (prop::sample::select(OPTIONS), option_value()).prop_map(|(k, v)| vec![k.to_string(), v]),
        1 => prop::sample::select(OPTIONS).prop_map(|k| vec![k.to_string()]),
        1 => "\\PC{0,10}".prop_map(|p| vec![p]),
    ]
}

#[test]
#[ignore = "a million cases: run with --ignored (docs/reliability.md)"]
fn option_parser_million() {
    let (accepted, rejected, errors) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let strategy = (prop::collection::vec(argument(), 0..10), any::<bool>());
    runner()
        .run(&strategy, |(groups, simulate)| {
            let args: Vec<String> = groups.into_iter().flatten().collect();
            match options::parse(&args, simulate) {
                Ok(p) => {
                    accepted.fetch_add(1, Ordering::Relaxed);
                    let c = &p.common;
                    prop_assert!((0.0..=1.0).contains(&c.up_loss) && (0.0..=1.0).contains(&c.down_loss));
                    prop_assert!(c.stats_interval_ms > 0 && c.batch_us <= 1000 && c.coalesce_us <= 10_000);
                    prop_assert!(c.ring_frames.is_none_or(|r| (16..=65_536).contains(&r)));
                    prop_assert!(c.delays.iter().all(|d| d.delay_ns <= 3_600_000_000_000));
                    for l in &p.links {
                        prop_assert!(![&l.name, &l.ue, &l.core, &l.up, &l.down].iter().any(|v| v.is_empty()), "{:?}", l);
                    }
                }
                Err(es) => {
                    rejected.fetch_add(1, Ordering::Relaxed);
                    errors.fetch_add(es.len() as u64, Ordering::Relaxed);
                    prop_assert!(!es.is_empty());
                    for e in &es {
                        // names the option it is about, and says more than that
                        prop_assert!(e.starts_with("--") && e.len() > 12, "unclear error {:?} for {:?}", e, args);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    let (a, r) = (accepted.into_inner(), rejected.into_inner());
    println!(
        "option parser: {} cases, {a} accepted, {r} rejected ({} errors, each naming its option), 0 panics",
        a + r,
        errors.into_inner()
    );
    assert!(a > 0 && r > 0, "the generator must reach both outcomes");
}
