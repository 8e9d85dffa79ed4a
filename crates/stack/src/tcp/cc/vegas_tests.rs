use super::*;

const MSS: usize = 1000;

fn ms(x: f64) -> Duration {
    Duration::from_secs_f64(x / 1000.0)
}

/// One round trip at the current window: every segment acknowledged
/// with RTT `rtt`, one ACK per segment.
fn round_trip(v: &mut Vegas, rtt: Duration, now: &mut Instant) {
    let segments = v.cwnd() / MSS;
    for _ in 0..segments {
        *now = now.after(rtt / segments as u32);
        v.on_rtt_sample(rtt, *now);
        v.on_ack(MSS, Some(rtt), *now);
    }
}

/// A Vegas sender in congestion avoidance at 20 segments that has seen
/// a 10 ms BaseRTT.
fn avoiding() -> (Vegas, Instant) {
    let mut v = Vegas::new(MSS, InitialWindow::Rfc5681);
    v.on_rtt_sample(ms(10.0), Instant::ZERO);
    (v.with_windows(20 * MSS, 10 * MSS), Instant::ZERO)
}

#[test]
fn little_queueing_grows_cwnd_by_one_segment_per_round_trip() {
    let (mut v, mut now) = avoiding();
    // Diff = 20·0.2/10.2 = 0.39 < α.
    round_trip(&mut v, ms(10.2), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::Increase));
    assert_eq!(v.cwnd(), 21 * MSS);
    round_trip(&mut v, ms(10.2), &mut now);
    assert_eq!(v.cwnd(), 22 * MSS);
    // Part of a round trip decides nothing.
    for _ in 0..10 {
        v.on_rtt_sample(ms(50.0), now);
        v.on_ack(MSS, None, now);
    }
    assert_eq!(v.cwnd(), 22 * MSS);
}

#[test]
fn a_standing_queue_above_beta_shrinks_cwnd_and_between_holds_it() {
    let (mut v, mut now) = avoiding();
    // Diff = 20·5/15 = 6.7 > β.
    round_trip(&mut v, ms(15.0), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::Decrease));
    assert_eq!(v.cwnd(), 19 * MSS);
    // Diff = 19·1.5/11.5 = 2.5: between α and β.
    round_trip(&mut v, ms(11.5), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::Hold));
    assert_eq!(v.cwnd(), 19 * MSS);
    // The round's smallest sample counts, not its last: one short sample
    // in a round of long ones reads as no queue.
    v.on_rtt_sample(ms(10.1), now);
    round_trip(&mut v, ms(15.0), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::Increase));
    assert_eq!(v.base_rtt(), Some(ms(10.0)));
}

#[test]
fn slow_start_doubles_every_other_round_trip_and_ends_past_gamma() {
    let mut v = Vegas::new(MSS, InitialWindow::Segments(2));
    let mut now = Instant::ZERO;
    let mut seen = vec![];
    for _ in 0..6 {
        round_trip(&mut v, ms(10.0), &mut now);
        seen.push(v.cwnd() / MSS);
    }
    assert_eq!(seen, [4, 4, 8, 8, 16, 16], "grow, hold, grow, hold…");
    assert_eq!(v.ssthresh(), usize::MAX);
    // A queue: Diff = 16·4/14 = 4.6 > γ. Slow start ends at the window
    // that keeps one segment queued: 16·10/14 + 1 = 12.4 segments.
    round_trip(&mut v, ms(14.0), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::LeaveSlowStart));
    assert_eq!(v.cwnd(), 16 * MSS * 10 / 14 + MSS);
    assert_eq!(v.ssthresh(), v.cwnd());
}

#[test]
fn losses_are_handled_as_reno() {
    let (mut v, _) = avoiding();
    v.on_fast_retransmit(20 * MSS, Instant::ZERO);
    assert_eq!((v.cwnd(), v.ssthresh()), (10 * MSS, 10 * MSS));
    v.on_retransmit_timeout(10 * MSS, Instant::ZERO);
    assert_eq!((v.cwnd(), v.ssthresh()), (MSS, 5 * MSS));
}

/// A decrease that takes cwnd to or below ssthresh stays in congestion
/// avoidance: the next round with a queue decreases by one segment again,
/// not doubling as slow start would (found by a review: the decrease left
/// ssthresh above cwnd).
#[test]
fn a_decrease_at_ssthresh_stays_in_congestion_avoidance() {
    let mut v = Vegas::new(MSS, InitialWindow::Rfc5681);
    v.on_rtt_sample(ms(10.0), Instant::ZERO);
    let mut v = v.with_windows(10 * MSS, 10 * MSS);
    let mut now = Instant::ZERO;
    // Diff = 10·5/15 = 3.3 > β: one segment less.
    round_trip(&mut v, ms(15.0), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::Decrease));
    assert_eq!(v.cwnd(), 9 * MSS);
    assert!(v.ssthresh() <= v.cwnd(), "ssthresh {}", v.ssthresh());
    // Diff = 9·10/20 = 4.5 > β: one less again, never a slow-start round.
    round_trip(&mut v, ms(20.0), &mut now);
    assert_eq!(v.last_decision(), Some(VegasDecision::Decrease));
    assert_eq!(v.cwnd(), 8 * MSS);
}
