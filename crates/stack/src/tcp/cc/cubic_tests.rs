use super::*;

const MSS: usize = 1000;

/// One round trip of `rtt` starting at `start`: one ACK per segment of the
/// window, spread evenly over the round trip. Returns the round trip's end.
fn round_trip(c: &mut Cubic, start: Instant, rtt: Duration) -> Instant {
    let segments = (c.cwnd() / MSS).max(1);
    for i in 0..segments {
        let at = start.after(rtt * i as u32 / segments as u32);
        c.on_ack(MSS, Some(rtt), at);
    }
    start.after(rtt)
}

/// A CUBIC sender that has just lost at a window of `w` segments, in
/// congestion avoidance.
fn after_loss_at(w: usize) -> Cubic {
    let mut c = Cubic::new(MSS).with_windows(w * MSS, MSS);
    c.on_fast_retransmit(w * MSS, Instant::ZERO);
    c
}

#[test]
fn a_loss_multiplies_the_window_by_beta() {
    let c = after_loss_at(100);
    assert_eq!(c.cwnd(), 70 * MSS);
    assert_eq!(c.ssthresh(), 70 * MSS);
    assert_eq!(c.w_max(), 100.0);
    let mut rto = Cubic::new(MSS).with_windows(100 * MSS, MSS);
    rto.on_retransmit_timeout(100 * MSS, Instant::ZERO);
    assert_eq!((rto.cwnd(), rto.ssthresh()), (MSS, 70 * MSS));
    // An application-limited sender: RFC 9438 multiplies FlightSize,
    // Linux cwnd; W_max is cwnd either way.
    let mut rfc = Cubic::new(MSS).with_windows(100 * MSS, MSS);
    rfc.on_fast_retransmit(40 * MSS, Instant::ZERO);
    assert_eq!(
        (rfc.cwnd(), rfc.ssthresh(), rfc.w_max()),
        (28 * MSS, 28 * MSS, 100.0)
    );
    let linux = CubicConfig {
        reduction_base: ReductionBase::Cwnd,
        ..CubicConfig::default()
    };
    let mut like_linux = Cubic::with_config(MSS, linux).with_windows(100 * MSS, MSS);
    like_linux.on_fast_retransmit(40 * MSS, Instant::ZERO);
    assert_eq!(like_linux.cwnd(), 70 * MSS);
    // Never below two segments.
    let mut tiny = Cubic::new(MSS).with_windows(2 * MSS, MSS);
    tiny.on_fast_retransmit(MSS, Instant::ZERO);
    assert_eq!(tiny.cwnd(), 2 * MSS);
}

#[test]
fn the_curve_matches_rfc9438s_formula_and_the_window_follows_it() {
    let rtt = Duration::from_millis(100);
    let mut c = after_loss_at(1000);
    let mut now = Instant(1_000_000_000);
    let origin = now;
    now = round_trip(&mut c, now, rtt);
    // K = ∛(W_max(1 − β)/C) = ∛(1000·0.3/0.4).
    let k = (1000.0f64 * 0.3 / 0.4).cbrt();
    assert!((c.k().unwrap() - k).abs() < 1e-9);
    for t in [0.0, 1.0, 4.5, k, 12.0] {
        let formula = 0.4 * (t - k).powi(3) + 1000.0;
        assert!((c.w_cubic(t).unwrap() - formula).abs() < 1e-9);
    }
    assert!(
        (c.w_cubic(0.0).unwrap() - 700.0).abs() < 1e-9,
        "starts at β·W_max"
    );
    assert!(
        (c.w_cubic(k).unwrap() - 1000.0).abs() < 1e-9,
        "plateau at K"
    );
    // Driven one round trip at a time, cwnd stays within 2% of the curve.
    let mut checked = 0;
    for _ in 0..130 {
        now = round_trip(&mut c, now, rtt);
        let t = now.since(origin).as_secs_f64();
        if [2.0, 5.0, 9.0, 12.0].iter().any(|x| (t - x).abs() < 1e-6) {
            let expect = 0.4 * (t - k).powi(3) + 1000.0;
            let got = c.cwnd() as f64 / MSS as f64;
            assert!(
                (got - expect).abs() / expect < 0.02,
                "t = {t}: cwnd {got} segments, W_cubic {expect}"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}

#[test]
fn in_the_reno_friendly_region_the_window_grows_like_reno() {
    // A small W_max and a short RTT: Reno's line is above the curve.
    let rtt = Duration::from_millis(10);
    let mut c = after_loss_at(10);
    let mut now = Instant::ZERO;
    for _ in 0..20 {
        now = round_trip(&mut c, now, rtt);
    }
    let t = now.nanos() as f64 / 1e9;
    let cubic = c.w_cubic(t).unwrap();
    let segments = c.cwnd() as f64 / MSS as f64;
    // W_est grows by α = 3·0.3/1.7 ≈ 0.53 segment per round trip until
    // W_max, then by one.
    let mut reno_line = 7.0;
    for _ in 0..20 {
        reno_line += if reno_line < 10.0 {
            3.0 * 0.3 / 1.7
        } else {
            1.0
        };
    }
    assert!(
        segments > cubic + 10.0,
        "cwnd {segments} vs W_cubic {cubic}"
    );
    // (A round trip here acknowledges whole segments only, so a little less.)
    assert!(
        (segments - reno_line).abs() < 1.5,
        "cwnd {segments} vs Reno's {reno_line}"
    );
}

#[test]
fn fast_convergence_releases_bandwidth_on_a_loss_below_the_last_peak() {
    let mut c = after_loss_at(100); // W_max 100, cwnd 70
    c.on_fast_retransmit(70 * MSS, Instant::ZERO);
    assert!((c.w_max() - 70.0 * 1.7 / 2.0).abs() < 1e-9);
    let mut off = Cubic::with_config(
        MSS,
        CubicConfig {
            fast_convergence: false,
            ..CubicConfig::default()
        },
    )
    .with_windows(100 * MSS, MSS);
    off.on_fast_retransmit(100 * MSS, Instant::ZERO);
    off.on_fast_retransmit(70 * MSS, Instant::ZERO);
    assert_eq!(off.w_max(), 70.0);
}

#[test]
fn slow_start_doubles_per_round_trip_below_ssthresh() {
    let mut c = Cubic::new(MSS);
    let mut now = Instant::ZERO;
    let mut seen = vec![];
    for _ in 0..3 {
        now = round_trip(&mut c, now, Duration::from_millis(10));
        seen.push(c.cwnd() / MSS);
    }
    assert_eq!(seen, [8, 16, 32]);
}

#[test]
fn far_past_k_the_window_grows_at_most_half_per_round_trip() {
    // §4.5: the target is capped at 1.5·cwnd, however far the curve is.
    let rtt = Duration::from_millis(100);
    let mut c = after_loss_at(100);
    let start = round_trip(&mut c, Instant::ZERO, rtt);
    let late = start.after(Duration::from_secs(100));
    let before = c.cwnd() / MSS;
    assert!(c.w_cubic(100.0).unwrap() > 10.0 * before as f64);
    round_trip(&mut c, late, rtt);
    let after = c.cwnd() as f64 / MSS as f64;
    let expect = 1.5 * before as f64;
    assert!(
        (after - expect).abs() < 1.0,
        "{before} → {after} segments, not ×1.5"
    );
}

#[test]
fn after_a_timeout_the_first_epoch_starts_on_its_own_window_with_k_zero() {
    // RFC 9438 §4.8: after a timeout cwnd slow-starts from one segment to
    // ssthresh (β·FlightSize); the congestion avoidance that follows uses
    // K = 0 and W_max = the window at its start, not the W_max of before.
    let rtt = Duration::from_millis(100);
    let mut c = Cubic::new(MSS).with_windows(100 * MSS, MSS);
    c.on_retransmit_timeout(100 * MSS, Instant::ZERO);
    assert_eq!((c.cwnd(), c.ssthresh()), (MSS, 70 * MSS));
    let mut now = Instant(1_000_000_000);
    while c.k().is_none() {
        now = round_trip(&mut c, now, rtt);
    }
    assert_eq!(c.k(), Some(0.0), "K after a timeout (W_max {})", c.w_max());
    assert_eq!(c.w_max(), 70.0, "W_max is the window the epoch began at");
    // The curve starts at the window and rises from there at once.
    assert!((c.w_cubic(0.0).unwrap() - 70.0).abs() < 1e-9);
    // A later loss is an ordinary congestion event again.
    c.on_fast_retransmit(c.cwnd(), now);
    round_trip(&mut c, now, rtt);
    assert!(c.k().unwrap() > 0.0);
}

#[test]
fn time_the_window_went_unused_is_left_out_of_the_curve() {
    // §5.8: ACKs that find the window unused do not grow it, and t skips
    // the time between them, so the curve resumes where it stopped.
    let rtt = Duration::from_millis(100);
    let mut limited = after_loss_at(100);
    let mut steady = after_loss_at(100);
    let mut now = Instant(1_000_000_000);
    for _ in 0..10 {
        round_trip(&mut limited, now, rtt);
        now = round_trip(&mut steady, now, rtt);
    }
    let cwnd = limited.cwnd();
    // Ten seconds of one application-limited ACK per round trip.
    let mut later = now;
    for _ in 0..100 {
        later = later.after(rtt);
        limited.on_app_limited_ack(later);
    }
    assert_eq!(limited.cwnd(), cwnd, "no growth while the window is unused");
    round_trip(&mut limited, later, rtt);
    round_trip(&mut steady, now, rtt);
    // (Within the share of a round trip between the last ACK and the
    // pause, which the limited sender also leaves out.)
    let (l, s) = (limited.cwnd() as f64, steady.cwnd() as f64);
    assert!(
        (l - s).abs() < 1e-3 * s,
        "cwnd {l} after the pause, {s} without it"
    );
}
