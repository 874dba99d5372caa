//! Property tests: the trace, queue and option parsers never panic, and every
//! input they reject gets an error that says where and why.

use mahimahi_link::options;
use mahimahi_link::queue::QueueConfig;
use mahimahi_link::trace::Trace;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn trace_parser_never_panics(text in "\\PC*") {
        match Trace::parse("f.trace", &text) {
            Ok(t) => {
                prop_assert!(t.period_ms() > 0);
                prop_assert_eq!(t.opportunities as usize, text.lines().count());
            }
            Err(e) => {
                prop_assert!(e.to_string().starts_with("f.trace"));
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    #[test]
    fn trace_parser_on_number_lines(lines in proptest::collection::vec(0u64..50, 0..40), junk in proptest::option::of(0usize..40)) {
        let mut v: Vec<String> = lines.iter().map(|x| x.to_string()).collect();
        if let Some(j) = junk { if j < v.len() { v[j] = "x1".into(); } }
        let text = v.join("\n");
        let ok_expected = junk.is_none_or(|j| j >= lines.len()) && !lines.is_empty()
            && lines.windows(2).all(|w| w[0] <= w[1]) && *lines.last().unwrap() > 0;
        let r = Trace::parse("t", &text);
        prop_assert_eq!(r.is_ok(), ok_expected, "{:?}", r);
        if let Err(e) = r { prop_assert!(e.line.is_some() || lines.is_empty()); }
    }

    #[test]
    fn queue_args_never_panic(kind in "(infinite|droptail|drophead|codel|pie|[a-z]{0,6})", args in "[a-z_=, 0-9]{0,40}") {
        if let Err(e) = QueueConfig::parse(&kind, &args) { prop_assert!(!e.is_empty()); }
    }

    #[test]
    fn options_never_panic(args in proptest::collection::vec("(--[a-z-]{1,20}(=[a-z0-9.,/=:]{0,12})?|[a-z0-9./]{1,8}|--)", 0..8)) {
        match options::parse(&args, false) {
            Ok(_) => {}
            Err(errors) => { prop_assert!(!errors.is_empty()); prop_assert!(errors.iter().all(|e| !e.is_empty())); }
        }
    }
}
