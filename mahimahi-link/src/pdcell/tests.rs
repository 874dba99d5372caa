use super::*;

const MS: Nanos = 1_000_000;

fn cfg(coupled: bool, buffer: u64) -> Config {
    Config { buffer_bytes: buffer, slot_ns: MS, mtu: 1500, window_ns: MS, alpha: Alpha::Fixed(3 * MS), unscheduled: 2, rtt_ns: 4 * MS,
             coupled, fronthaul_bytes_per_slot: 6000 }
}

fn data(cu: &mut Cu<u32>, now: Nanos, flow: u32, ue: usize, size: u64, seq: u32) -> Arrival {
    cu.arrive(now, &flow, 0, ue, size, true, 1448, Some((seq, 1500))).expect("data")
}

#[test]
fn thresholds_follow_the_grants_over_the_credit_loop() {
    let mut cu: Cu<u32> = Cu::new(cfg(true, 1_000_000), 2);
    // UE 0 granted 3000 bytes a slot while backlogged, UE 1 idle on a 6000-byte channel beside it.
    let du = [DuView { grant_bytes: 3000, channel_bytes: 6000, backlogged: true }, DuView { grant_bytes: 0, channel_bytes: 6000, backlogged: false }];
    for s in 0..200 {
        cu.slot(s * MS, &du);
    }
    // forecast → UE 0 active alone: max(3000, 6000 / 1) = 6000; UE 1 idle: 6000 / (1 + 1) = 3000;
    // horizon 4 ms / 1 ms + 2 = 6 slots
    assert_eq!(cu.ues[0].threshold, 36_000);
    assert_eq!(cu.ues[1].threshold, 18_000);
    // The buffer caps the sum: 20 000 bytes split in proportion (2:1).
    let mut small: Cu<u32> = Cu::new(cfg(true, 20_000), 2);
    for s in 0..200 {
        small.slot(s * MS, &du);
    }
    assert_eq!((small.ues[0].threshold, small.ues[1].threshold), (13_333, 6_666));
}

#[test]
fn credits_fill_the_threshold_after_the_unscheduled_packets_and_no_further() {
    let mut cu: Cu<u32> = Cu::new(cfg(true, 1_000_000), 1);
    let du = [DuView { grant_bytes: 0, channel_bytes: 1500, backlogged: false }];
    for s in 0..200 {
        cu.slot(s * MS, &du);
    }
    // forecast 1500 (alone: channel / 1), horizon 6 slots: 9000 bytes = 6 packets
    assert_eq!(cu.ues[0].threshold, 9000);
    let t = 200 * MS;
    assert_eq!(cu.arrive(t, &7, 0, 0, 20 * 1448, true, 1448, None), None); // the RTS
    assert_eq!(data(&mut cu, t, 7, 0, 20 * 1448, 0), Arrival::Admitted);
    assert_eq!(data(&mut cu, t, 7, 0, 20 * 1448, 1), Arrival::Admitted);
    let c = cu.slot(t, &du);
    // 2 admitted + 4 credits = 6 packets; the credits start after the unscheduled ones
    assert_eq!(c.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![2, 3, 4, 5]);
    assert!(c.iter().all(|c| c.ts == t && c.te == t + MS));
    assert!(cu.slot(t + MS, &du).is_empty()); // nothing more until something leaves or arrives
    assert!(!cu.depart(&7, 1500, 1448));
    let c = cu.slot(t + 2 * MS, &du);
    assert_eq!(c.iter().map(|c| c.seq).collect::<Vec<_>>(), vec![6]);
    assert_eq!(cu.remaining(0), Some(19 * 1448));
}

#[test]
fn the_shortest_flow_of_a_ue_gets_its_credits_first() {
    let mut c = cfg(true, 1_000_000);
    c.unscheduled = 0;
    let mut cu: Cu<u32> = Cu::new(c, 1);
    cu.arrive(0, &1, 0, 0, 100 * 1448, true, 1448, None);
    cu.arrive(0, &2, 0, 0, 3 * 1448, true, 1448, None);
    cu.arrive(0, &3, 0, 0, 3 * 1448, true, 1448, None);
    let du = [DuView { grant_bytes: 0, channel_bytes: 3750, backlogged: false }];
    let got: Vec<(u32, u32)> = cu.slot(0, &du).iter().map(|c| (c.flow, c.seq)).collect();
    // threshold: forecast 3750 (its channel, alone) × 6 = 22500 bytes: 15 credits; 2 before 3 (older), then 1
    assert_eq!(got, vec![(2, 0), (2, 1), (2, 2), (3, 0), (3, 1), (3, 2), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (1, 7), (1, 8)]);
}

#[test]
fn a_full_buffer_shrinks_the_longest_queue_and_drops_nothing_admitted() {
    let mut cu: Cu<u32> = Cu::new(cfg(true, 4500), 2);
    assert_eq!(data(&mut cu, 0, 1, 0, 10 * 1448, 0), Arrival::Admitted);
    assert_eq!(data(&mut cu, 0, 1, 0, 10 * 1448, 1), Arrival::Admitted);
    assert_eq!(data(&mut cu, 0, 2, 1, 10 * 1448, 0), Arrival::Admitted);
    assert_eq!(cu.total, 4500);
    // Full: UE 0's queue (3000 bytes) is the longest; its shrink grows, the arrival is not admitted.
    assert_eq!(data(&mut cu, 0, 2, 1, 10 * 1448, 1), Arrival::NotAdmitted);
    assert_eq!((cu.ues[0].shrink, cu.ues[1].not_admitted, cu.total, cu.peak_total), (1500, 1, 4500, 4500));
    // UE 1's packet leaves: the one not admitted is credited first, UE 0 (shrunk to one MTU, holding two) gets none.
    cu.depart(&2, 1500, 1448);
    let du = [DuView { grant_bytes: 1500, channel_bytes: 1500, backlogged: true }; 2];
    let c: Vec<(u32, u32)> = cu.slot(MS, &du).iter().map(|c| (c.flow, c.seq)).collect();
    assert_eq!(c, vec![(2, 1)]);
    assert_eq!(cu.total + c.len() as u64 * 1500, 4500);
    // A duplicate (a packet already admitted, sent again) is not queued twice.
    assert_eq!(data(&mut cu, MS, 1, 0, 10 * 1448, 0), Arrival::Duplicate);
    // The shrink ends when UE 0's queue empties.
    cu.depart(&1, 1500, 1448);
    assert_eq!(cu.ues[0].shrink, 1500);
    cu.depart(&1, 1500, 1448);
    assert_eq!(cu.ues[0].shrink, 0);
}

#[test]
fn a_credit_that_brings_no_data_is_sent_again_after_the_ues_alpha() {
    let mut c = cfg(true, 1_000_000);
    c.unscheduled = 0;
    c.alpha = Alpha::Queue { lowest_bps: 8_000_000 }; // 1 byte per µs
    let mut cu: Cu<u32> = Cu::new(c, 1);
    cu.arrive(0, &1, 0, 0, 1448, true, 1448, None);
    let du = [DuView { grant_bytes: 0, channel_bytes: 1500, backlogged: false }];
    let first = cu.slot(0, &du);
    assert_eq!(first.len(), 1);
    // given up at te + 2 RTT = 1 + 8 ms; at 10 ms it is credited again, from the next TTI + α
    assert!(cu.slot(9 * MS, &du).is_empty());
    let again = cu.slot(10 * MS, &du);
    assert_eq!((again.len(), cu.ues[0].expired), (1, 1));
    assert_eq!(again[0].seq, 0);
    assert_eq!(again[0].ts, 11 * MS); // α = 0 bytes queued
    // with 3000 bytes queued α is 3 ms
    let mut c2 = c;
    c2.unscheduled = 2;
    let mut cu: Cu<u32> = Cu::new(c2, 1);
    data(&mut cu, 0, 1, 0, 3 * 1448, 0);
    data(&mut cu, 0, 1, 0, 3 * 1448, 1);
    let _ = cu.slot(0, &[DuView { grant_bytes: 0, channel_bytes: 30_000, backlogged: false }]);
    let again = cu.slot(10 * MS, &[DuView { grant_bytes: 0, channel_bytes: 30_000, backlogged: false }]);
    assert_eq!(again.iter().map(|c| c.ts).collect::<Vec<_>>(), vec![11 * MS + 3 * MS]);
    // data from it clears the backoff; the RTT sample is taken
    assert_eq!(data(&mut cu, 15 * MS, 1, 0, 3 * 1448, 2), Arrival::Admitted);
    assert!(!cu.ues[0].backoff);
    assert!(cu.rtt_ns(0) < 4 * MS + MS, "{}", cu.rtt_ns(0));
    // the first credit's data, long after it was given up on, still measures the loop (15 ms)
    let before = cu.rtt_ns(0);
    assert_eq!(cu.arrive(16 * MS, &1, 0, 0, 3 * 1448, true, 1448, Some((2, 1500))), Some(Arrival::Duplicate));
    assert!(cu.rtt_ns(0) > before);
}

#[test]
fn each_source_has_its_own_loop_and_a_ue_covers_its_longest() {
    let mut c = cfg(true, 1_000_000);
    c.unscheduled = 0;
    let mut cu: Cu<u32> = Cu::new(c, 2);
    let du = [DuView { grant_bytes: 0, channel_bytes: 6000, backlogged: false }; 2];
    // flow 1 from a near source (1), flow 2 from a far one (2), both to UE 0; flow 3 from the near one to UE 1
    // (thresholds 6000 / 2 active x (4 ms first estimate + 2) slots = 12 credits a UE: flow 1's 10, 2 of flow 2)
    cu.arrive(0, &1, 1, 0, 10 * 1448, true, 1448, None);
    cu.arrive(0, &2, 2, 0, 10 * 1448, true, 1448, None);
    cu.arrive(0, &3, 1, 1, 10 * 1448, true, 1448, None);
    let sent = cu.slot(0, &du);
    let seq0 = |flow: u32| sent.iter().find(|c| c.flow == flow).map(|c| c.seq).expect("a credit");
    // their data: 2 ms back from the near source, 10 ms from the far one
    assert_eq!(cu.arrive(2 * MS, &1, 1, 0, 10 * 1448, true, 1448, Some((seq0(1), 1500))), Some(Arrival::Admitted));
    assert_eq!(cu.arrive(2 * MS, &3, 1, 1, 10 * 1448, true, 1448, Some((seq0(3), 1500))), Some(Arrival::Admitted));
    assert_eq!(cu.arrive(10 * MS, &2, 2, 0, 10 * 1448, true, 1448, Some((seq0(2), 1500))), Some(Arrival::Admitted));
    assert_eq!((cu.base_rtt_ns(1), cu.base_rtt_ns(2)), (2 * MS, 10 * MS));
    cu.slot(11 * MS, &du);
    // UE 0 (flows from both): 6000 / 2 active x (10 + 2) slots; UE 1 (the near one only): 3000 x (2 + 2)
    assert_eq!((cu.ues[0].threshold, cu.ues[1].threshold), (36_000, 12_000));
    // the far source's credits are given up on later than the near one's
    assert!(cu.rtt_ns(2) > cu.rtt_ns(1));
}

#[test]
fn the_wireless_unaware_cu_credits_at_the_fronthaul_rate_up_to_the_buffer() {
    let mut c = cfg(false, 12_000);
    c.unscheduled = 0;
    let mut cu: Cu<u32> = Cu::new(c, 2);
    cu.arrive(0, &1, 0, 0, 50 * 1448, true, 1448, None);
    cu.arrive(0, &2, 0, 1, 2 * 1448, true, 1448, None);
    let du = [DuView::default(); 2];
    // 6000 bytes a slot = 4 credits: the shorter flow (UE 1's) first, whichever UE
    let got: Vec<u32> = cu.slot(0, &du).iter().map(|c| c.flow).collect();
    assert_eq!(got, vec![2, 2, 1, 1]);
    assert_eq!(cu.slot(MS, &du).len(), 4);
    // 8 outstanding = 12 000 bytes: the buffer's bound
    assert!(cu.slot(2 * MS, &du).is_empty());
}

#[test]
fn the_header_reads_back_what_was_written_and_refuses_other_datagrams() {
    use wire::*;
    let h = Header { kind: Kind::Credit, last: true, flow: 0xdead_beef, seq: 7, size: 1 << 40, ts_us: 1500, window_us: 1000 };
    assert_eq!(Header::parse(&h.bytes()), Some(h));
    // the same bytes as edge-systems/pdcell/wire.py's (tests/mahimahi_link/test_pdcell_live.py)
    let hex: String = h.bytes().iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, "50440301deadbeef000000070000010000000000000005dc000003e8");
    assert_eq!(PAYLOAD, 1444);
    let mut b = h.bytes();
    b[2] = 9;
    assert_eq!(Header::parse(&b), None);
    assert_eq!(Header::parse(&h.bytes()[..27]), None);
    assert_eq!(Header::parse(b"XD\x03\x00aaaaaaaaaaaaaaaaaaaaaaaa"), None);
}

#[test]
fn a_flow_is_done_when_its_last_packet_leaves() {
    let mut cu: Cu<u32> = Cu::new(cfg(true, 100_000), 1);
    data(&mut cu, 0, 1, 0, 1448 + 100, 0);
    cu.arrive(0, &1, 0, 0, 1448 + 100, true, 1448, Some((1, 152)));
    assert_eq!(cu.remaining(0), Some(1548));
    assert!(!cu.depart(&1, 1500, 1448));
    assert!(cu.depart(&1, 152, 100));
    assert_eq!((cu.flows(), cu.total, cu.remaining(0)), (0, 0, None));
}

#[test]
fn a_late_copy_of_a_finished_flows_packet_is_a_duplicate_not_a_flow_to_credit() {
    // A flow of 3 packets: two unscheduled, the third on credit; then a second copy of the third comes (its
    // credit had been given up on and the packet sent again) after the flow went out whole.
    let mut cu: Cu<u32> = Cu::new(cfg(true, 1_000_000), 1);
    let du = [DuView { grant_bytes: 0, channel_bytes: 30_000, backlogged: false }];
    for seq in 0..2 {
        assert_eq!(data(&mut cu, 0, 7, 0, 3 * 1448, seq), Arrival::Admitted);
    }
    assert_eq!(cu.slot(0, &du).iter().map(|c| c.seq).collect::<Vec<_>>(), vec![2]);
    assert_eq!(data(&mut cu, MS, 7, 0, 3 * 1448, 2), Arrival::Admitted);
    assert!(!cu.depart(&7, 1500, 1448) && !cu.depart(&7, 1500, 1448) && cu.depart(&7, 1500, 1448));
    assert_eq!(data(&mut cu, 20 * MS, 7, 0, 3 * 1448, 2), Arrival::Duplicate);
    assert_eq!(cu.arrive(20 * MS, &7, 0, 0, 3 * 1448, true, 1448, None), None); // nor does an RTS bring it back
    for s in 20..60 {
        assert!(cu.slot(s * MS, &du).is_empty(), "slot {s}: a finished flow credited again");
    }
    assert_eq!((cu.ues[0].credits, cu.ues[0].expired, cu.ues[0].duplicates), (1, 0, 1));
    assert_eq!(data(&mut cu, 60 * MS, 8, 0, 1448, 0), Arrival::Admitted); // another flow is one
}
