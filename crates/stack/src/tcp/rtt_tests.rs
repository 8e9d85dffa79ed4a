use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn us(n: u64) -> Duration {
    Duration::from_micros(n)
}

#[test]
fn rfc6298_follows_its_formulas_on_a_hand_computed_sequence() {
    let mut e = Rfc6298::new(Rfc6298Config {
        min_rto: ms(200),
        ..Rfc6298Config::default()
    });
    assert_eq!(e.rto(), ms(1000), "§2.1: 1 s before any sample");
    // §2.2: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4·RTTVAR.
    e.sample(ms(100));
    assert_eq!((e.srtt(), e.rttvar()), (Some(ms(100)), Some(ms(50))));
    assert_eq!(e.rto(), ms(300));
    // §2.3: RTTVAR = 3/4·50 + 1/4·|100 − 140| = 47.5; SRTT = 7/8·100 + 140/8 = 105.
    e.sample(ms(140));
    assert_eq!((e.srtt(), e.rttvar()), (Some(ms(105)), Some(us(47_500))));
    assert_eq!(e.rto(), ms(295));
    // RTTVAR = 3/4·47.5 + 1/4·45 = 46.875; SRTT = 7/8·105 + 60/8 = 99.375.
    e.sample(ms(60));
    assert_eq!((e.srtt(), e.rttvar()), (Some(us(99_375)), Some(us(46_875))));
    assert_eq!(e.rto(), us(286_875));
}

#[test]
fn rfc6298_keeps_nanoseconds_and_applies_the_granularity_and_floor() {
    let mut e = Rfc6298::new(Rfc6298Config {
        min_rto: Duration::ZERO,
        granularity: us(10),
        ..Rfc6298Config::default()
    });
    e.sample(Duration::from_nanos(13_001));
    assert_eq!(e.srtt(), Some(Duration::from_nanos(13_001)));
    assert_eq!(e.rttvar(), Some(Duration::from_nanos(6_500)));
    assert_eq!(e.rto(), Duration::from_nanos(13_001 + 26_000));
    // A steady RTT drives RTTVAR towards 0, and then G is the margin.
    for _ in 0..200 {
        e.sample(Duration::from_nanos(13_001));
    }
    assert_eq!(e.rto(), Duration::from_nanos(13_001 + 10_000));

    let mut floored = Rfc6298::new(Rfc6298Config::default());
    floored.sample(ms(100));
    assert_eq!(floored.rto(), ms(1000), "§2.4: the 1 s floor");
}

#[test]
fn rfc6298_backoff_doubles_up_to_the_ceiling_and_a_sample_ends_it() {
    let mut e = Rfc6298::new(Rfc6298Config::default());
    e.sample(ms(2000)); // RTO = 2 + 4 = 6 s
    assert_eq!(e.rto(), ms(6000));
    let mut seen = vec![];
    for _ in 0..6 {
        e.on_retransmit_timeout();
        seen.push(e.rto().as_secs());
    }
    assert_eq!(seen, [12, 24, 48, 60, 60, 60]);
    assert_eq!(e.backoffs(), 4);
    e.sample(ms(2000));
    assert_eq!(e.backoffs(), 0);
    assert!(e.rto() < ms(6000));
}

#[test]
fn bsd_reno_starts_at_six_seconds_and_follows_tcp_xmit_timer() {
    let mut b = BsdReno::new(BsdRenoConfig::default());
    assert_eq!(b.rto_ticks(), 12, "(0 + 6<<2) >> 1 ticks");
    assert_eq!(b.rto(), ms(6000));
    assert_eq!(b.srtt(), None);
    // t_rtt = 3: srtt = 3<<3 = 24, rttvar = 3<<1 = 6, REXMTVAL = 3 + 6.
    b.sample_ticks(3);
    assert_eq!(b.scaled(), (24, 6));
    assert_eq!(b.rto_ticks(), 9);
    // t_rtt = 2: delta = 2−1−3 = −2, srtt 22; |−2| − 6>>2 = 1, rttvar 7; 2 + 7.
    b.sample_ticks(2);
    assert_eq!(b.scaled(), (22, 7));
    assert_eq!(b.rto_ticks(), 9);
    // t_rtt = 5: delta = 5−1−2 = 2, srtt 24; 2 − 7>>2 = 1, rttvar 8; 3 + 8.
    b.sample_ticks(5);
    assert_eq!(b.scaled(), (24, 8));
    assert_eq!(b.rto_ticks(), 11);
    assert_eq!(b.rto(), ms(5500));
    assert_eq!(b.srtt(), Some(ms(1500)));
    assert_eq!(b.rttvar(), Some(ms(1000)));
}

#[test]
fn bsd_reno_counts_whole_ticks_plus_one_and_floors_at_two_ticks() {
    let mut b = BsdReno::new(BsdRenoConfig::default());
    assert_eq!(b.ticks_of(ms(10)), 1);
    assert_eq!(b.ticks_of(ms(499)), 1);
    assert_eq!(b.ticks_of(ms(500)), 2);
    // A LAN RTT: t_rtt = 1, srtt 8, rttvar 2, REXMTVAL 3 ticks.
    b.sample(ms(1));
    assert_eq!(b.scaled(), (8, 2));
    assert_eq!(b.rto_ticks(), 3);
    // More LAN samples: srtt sinks below one tick (the −1 in
    // tcp_xmit_timer) while rttvar sticks at 3 (3>>2 = 0 never pulls it
    // down), so BSD's LAN RTO settles at 3 ticks, 1.5 s.
    for _ in 0..100 {
        b.sample(ms(1));
    }
    assert_eq!(b.scaled(), (7, 3));
    assert_eq!(b.rto_ticks(), 3);
    assert_eq!(b.rto(), ms(1500));

    let mut fine = BsdReno::new(BsdRenoConfig {
        tick: ms(10),
        min_ticks: 1,
        ..BsdRenoConfig::default()
    });
    fine.sample(ms(25)); // t_rtt = 3
    assert_eq!(fine.rto(), ms(90));
}

#[test]
fn bsd_reno_backs_off_by_its_table_and_forgets_srtt_after_three_shifts() {
    let mut b = BsdReno::new(BsdRenoConfig::default());
    b.sample_ticks(3); // REXMTVAL 9
    let mut seen = vec![];
    for _ in 0..5 {
        b.on_retransmit_timeout();
        seen.push(b.rto_ticks());
    }
    // 9·2, 9·4, 9·8, then at shift 4 srtt is folded: rttvar 6 + 3 = 9,
    // srtt 0, so REXMTVAL stays 9 and ×16 = 144 → the 128-tick ceiling.
    assert_eq!(seen, [18, 36, 72, 128, 128]);
    assert_eq!(b.srtt(), None);
    assert_eq!(b.backoffs(), 5);
    b.sample_ticks(2);
    assert_eq!(b.backoffs(), 0);
}

#[test]
fn the_switch_builds_either_estimator_behind_the_trait() {
    let mut a = RttEstimatorKind::Rfc6298(Rfc6298Config::default()).build();
    let mut b = RttEstimatorKind::BsdReno(BsdRenoConfig::default()).build();
    a.sample(ms(1200));
    b.sample(ms(1200));
    assert_eq!(a.rto(), ms(3600));
    assert_eq!(b.rto(), ms(4500)); // t_rtt 3 → 9 ticks
}

#[test]
fn karns_rule_drops_a_measurement_a_retransmission_made_ambiguous() {
    let t0 = Instant(1_000);
    let mut t = RttTimer::default();
    t.on_send(SeqNumber(1100), t0);
    t.on_send(SeqNumber(1200), t0.after(us(5))); // already timing one
    assert_eq!(t.on_ack(SeqNumber(1050), t0.after(us(50))), None);
    assert_eq!(t.on_ack(SeqNumber(1100), t0.after(us(80))), Some(us(80)));
    assert!(!t.is_timing());

    t.on_send(SeqNumber(1300), t0.after(us(100)));
    t.on_retransmit();
    assert_eq!(t.on_ack(SeqNumber(1300), t0.after(us(900))), None);
}

#[test]
fn timing_every_segment_samples_each_ack_from_the_oldest_segment_it_covers() {
    let t0 = Instant(1_000_000);
    let mut t = RttTimer::default();
    t.time_every_segment(true);
    for i in 0..4u32 {
        t.on_send(
            SeqNumber(1000 + 100 * (i + 1)),
            t0.after(us(10 * u64::from(i))),
        );
    }
    // A delayed ACK of two segments: the older one's round trip.
    assert_eq!(t.on_ack(SeqNumber(1200), t0.after(us(500))), Some(us(500)));
    // An ACK inside a segment covers none whole: no sample.
    assert_eq!(
        t.on_ack_timed(SeqNumber(1250), t0.after(us(510))),
        Timed::Nothing
    );
    assert_eq!(t.on_ack(SeqNumber(1300), t0.after(us(520))), Some(us(500)));
    // Segment 4 (sent at 30 µs) is retransmitted: its ACK is ambiguous,
    // and so is one that covers it with data sent after the retransmission.
    t.on_retransmit();
    t.on_send(SeqNumber(1500), t0.after(us(600)));
    assert_eq!(
        t.on_ack_timed(SeqNumber(1500), t0.after(us(700))),
        Timed::Ambiguous,
        "the connection takes the timestamp echo then"
    );
    // Data sent after it, acknowledged alone: a sample again.
    t.on_send(SeqNumber(1600), t0.after(us(800)));
    assert_eq!(t.on_ack(SeqNumber(1600), t0.after(us(850))), Some(us(50)));
    assert!(!t.is_timing());
}

#[test]
fn many_samples_per_round_trip_keep_the_memory_of_one_per_round_trip() {
    // RFC 7323 Appendix G: with n samples a round trip, α/n and β/n. After
    // the path's RTT steps from 100 ms to 200 ms, SRTT after k round trips
    // of 20 samples each is where one sample a round trip leaves it, and
    // RTTVAR too; taken at full weight, 20 a round trip would forget the
    // old path within one.
    let config = Rfc6298Config::default();
    let mut one = Rfc6298::new(config);
    let mut many = Rfc6298::new(config);
    one.sample(ms(100));
    many.sample(ms(100));
    for round in 1..=8 {
        one.sample(ms(200));
        for _ in 0..20 {
            many.sample_one_of(ms(200), 20);
        }
        let (a, b) = (one.srtt().unwrap(), many.srtt().unwrap());
        let off = a.as_secs_f64() / b.as_secs_f64() - 1.0;
        assert!(off.abs() < 0.03, "round {round}: SRTT {a:?} vs {b:?}");
        let (a, b) = (one.rttvar().unwrap(), many.rttvar().unwrap());
        let off = a.as_secs_f64() / b.as_secs_f64() - 1.0;
        assert!(off.abs() < 0.1, "round {round}: RTTVAR {a:?} vs {b:?}");
    }
    // And a sample alone is a sample of one.
    let mut a = Rfc6298::new(config);
    let mut b = Rfc6298::new(config);
    for r in [100, 140, 60] {
        a.sample(ms(r));
        b.sample_one_of(ms(r), 1);
    }
    assert_eq!((a.srtt(), a.rttvar()), (b.srtt(), b.rttvar()));
}
