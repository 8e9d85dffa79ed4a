use super::*;
use crate::time::{Clock, ManualClock};

const MSS: usize = 1448;

/// An event loop on a manual clock with endless data: at each wake-up it
/// sends segments of `MSS` while the pacer lets it, then sleeps until the
/// pacer's time plus `late(wake-up number)`. Returns each departure.
fn paced_loop(
    pacer: &mut Pacer,
    clock: &ManualClock,
    segments: usize,
    late: impl Fn(usize) -> Duration,
) -> Vec<Instant> {
    let mut sent = Vec::new();
    let mut wake = 0;
    while sent.len() < segments {
        let now = clock.now();
        while sent.len() < segments && pacer.hold_until(now).is_none() {
            pacer.on_sent(MSS, now);
            sent.push(now);
        }
        if let Some(at) = pacer.hold_until(now) {
            clock.set(at.after(late(wake)));
            wake += 1;
        }
    }
    sent
}

fn span_of(sent: &[Instant]) -> SendSpan {
    let mut s = SendSpan::default();
    for &t in sent {
        s.on_sent(MSS, t);
    }
    s
}

#[test]
fn a_punctual_loop_sends_one_segment_per_segment_time_at_exactly_the_rate() {
    let clock = ManualClock::new(Instant(1_000_000));
    let mut pacer = Pacer::new(FlowControl::rate(50_000_000));
    let sent = paced_loop(&mut pacer, &clock, 1000, |_| Duration::ZERO);
    // 1448 octets at 50 Mbit/s: 231.68 µs apart, the fraction carried.
    for w in sent.windows(2) {
        let gap = w[1].nanos() - w[0].nanos();
        assert!((231_679..=231_681).contains(&gap), "{gap} ns");
    }
    let rate = span_of(&sent).rate_bps().unwrap();
    assert!((rate / 50e6 - 1.0).abs() < 1e-6, "{rate}");
}

#[test]
fn the_fraction_of_a_nanosecond_is_carried_not_lost() {
    // 1 octet at 3 bit/s is 8/3 s: three of them take exactly 8 s.
    let mut pacer = Pacer::new(FlowControl::Rate {
        bits_per_s: 3,
        burst: Duration::ZERO,
    });
    let t0 = Instant(0);
    pacer.on_sent(1, t0);
    let t1 = pacer.hold_until(t0).unwrap();
    pacer.on_sent(1, t1);
    let t2 = pacer.hold_until(t1).unwrap();
    pacer.on_sent(1, t2);
    assert_eq!(pacer.hold_until(t2), Some(Instant(8_000_000_000)));
}

#[test]
fn a_late_loop_catches_up_within_the_burst_and_keeps_the_rate() {
    let clock = ManualClock::new(Instant(0));
    let mut pacer = Pacer::new(FlowControl::rate(200_000_000));
    // Every wake-up 300 µs late (a scheduler's slack), under the burst.
    let sent = paced_loop(&mut pacer, &clock, 5000, |_| Duration::from_micros(300));
    let rate = span_of(&sent).rate_bps().unwrap();
    assert!((rate / 200e6 - 1.0).abs() < 0.002, "{rate}");
    assert_eq!(pacer.dropped_ns(), 0, "nothing given up within the burst");
    // Never ahead of the rate by more than the burst and one segment.
    let t0 = sent[0];
    for (i, &t) in sent.iter().enumerate() {
        let allowed = t.since(t0).as_secs_f64() * 200e6 / 8.0
            + 200e6 * DEFAULT_PACING_BURST.as_secs_f64() / 8.0
            + MSS as f64;
        assert!(((i * MSS) as f64) <= allowed, "segment {i} at {t:?}");
    }
    // Segments left in bursts: several at one instant.
    assert!(sent.windows(2).any(|w| w[0] == w[1]));
}

#[test]
fn a_stall_longer_than_the_burst_loses_rate_and_then_bursts_no_more_than_it() {
    let clock = ManualClock::new(Instant(0));
    let mut pacer = Pacer::new(FlowControl::rate(100_000_000));
    // The 100th wake-up is 40 ms late, four bursts' worth.
    let sent = paced_loop(&mut pacer, &clock, 2000, |i| {
        if i == 100 {
            Duration::from_millis(40)
        } else {
            Duration::ZERO
        }
    });
    let rate = span_of(&sent).rate_bps().unwrap();
    // 2000 segments are 231.7 ms at the rate; 30 ms were lost, and the
    // pacer says so.
    assert!(rate < 100e6 * 0.9 && rate > 100e6 * 0.85, "{rate}");
    assert_eq!(pacer.dropped_ns(), 30_000_000);
    // After the stall: 10 ms at 100 Mbit/s is 125,000 octets, so 87
    // segments (86 of credit and the one due) at one instant, and no more.
    let mut most_at_once = 1;
    let mut run = 1;
    for w in sent.windows(2) {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        most_at_once = most_at_once.max(run);
    }
    assert_eq!(most_at_once, 125_000 / MSS + 1);
}

#[test]
fn window_flow_control_never_holds_data_back() {
    let mut pacer = Pacer::new(FlowControl::Window);
    assert!(!pacer.is_pacing());
    for i in 0..100 {
        pacer.on_sent(65_000, Instant(i));
        assert_eq!(pacer.hold_until(Instant(i)), None);
    }
    assert_eq!(pacer.segment_cap(MSS), usize::MAX);
    let paced = Pacer::new(FlowControl::rate(1_000_000));
    assert!(paced.is_pacing());
    // Before its first segment a pacer holds nothing back either.
    assert_eq!(paced.hold_until(Instant(5)), None);
}

#[test]
fn a_segment_is_capped_at_the_bursts_worth_of_whole_segments() {
    // 10 ms at 100 Mbit/s is 125,000 octets: 86 segments of 1448.
    let p = Pacer::new(FlowControl::rate(100_000_000));
    assert_eq!(p.segment_cap(MSS), 86 * MSS);
    // 10 ms at 1 Mbit/s is 1250 octets: still one whole segment.
    let p = Pacer::new(FlowControl::rate(1_000_000));
    assert_eq!(p.segment_cap(MSS), MSS);
}

#[test]
fn a_send_span_rates_all_but_the_last_segment_over_first_to_last() {
    let mut s = SendSpan::default();
    assert_eq!(s.rate_bps(), None);
    s.on_sent(1000, Instant(0));
    assert_eq!(s.rate_bps(), None, "one segment spans no time");
    s.on_sent(0, Instant(5));
    assert_eq!(s.last, Some(Instant(0)), "a bare ACK is not data");
    s.on_sent(1000, Instant(1_000_000));
    s.on_sent(500, Instant(2_000_000));
    // 2000 octets in 2 ms: 8 Mbit/s (the last 500 leave at its end).
    assert_eq!(s.rate_bps(), Some(8e6));
    let mut t = SendSpan::default();
    t.on_sent(3000, Instant(1_500_000));
    t.on_sent(100, Instant(4_000_000));
    let m = s.merge(t);
    assert_eq!(m.bytes, 5600);
    assert_eq!(
        (m.first, m.last),
        (Some(Instant(0)), Some(Instant(4_000_000)))
    );
    assert_eq!(m.last_len, 100);
    assert_eq!(m, t.merge(s));
    assert_eq!(m.merge(SendSpan::default()), m);
}
