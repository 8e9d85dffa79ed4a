use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at_ms(n: u64) -> Instant {
    Instant(n * 1_000_000)
}

#[test]
fn an_rtt_sample_counts_the_slow_tick_boundaries_crossed_so_its_phase_matters() {
    let c = BsdClock::default();
    // A 10 ms round trip: no boundary crossed, or the one at 500 ms.
    assert_eq!(c.ticks_crossed(at_ms(100), at_ms(110)), 0);
    assert_eq!(c.ticks_crossed(at_ms(495), at_ms(505)), 1);
    assert_eq!(c.quantize_sample(ms(10), at_ms(110)), Duration::ZERO);
    assert_eq!(c.quantize_sample(ms(10), at_ms(505)), ms(500));
    // A boundary counts when the ACK comes at it, not when the send does.
    assert_eq!(c.ticks_crossed(at_ms(490), at_ms(500)), 1);
    assert_eq!(c.ticks_crossed(at_ms(500), at_ms(510)), 0);
    // 1.2 s measures 2 or 3 ticks, by phase.
    assert_eq!(c.ticks_crossed(at_ms(0), at_ms(1200)), 2);
    assert_eq!(c.ticks_crossed(at_ms(400), at_ms(1600)), 3);
    // Every phase of a 10 ms round trip over one tick: one in 50 crosses.
    let crossed: u32 = (0..500)
        .map(|p| c.ticks_crossed(at_ms(1000 + p), at_ms(1010 + p)))
        .sum();
    assert_eq!(crossed, 10);
}

#[test]
fn a_timer_of_n_slow_ticks_fires_at_the_nth_boundary_between_n_minus_1_and_n_ticks_later() {
    let c = BsdClock::default();
    assert_eq!(c.slow_deadline(at_ms(1), 2), at_ms(1000));
    assert_eq!(c.slow_deadline(at_ms(499), 2), at_ms(1000));
    // Set at a boundary, the next one is the first to count.
    assert_eq!(c.slow_deadline(at_ms(500), 2), at_ms(1500));
    for phase in (0..500).step_by(7) {
        let now = at_ms(10_000 + phase);
        for n in 1..6u32 {
            let after = c.slow_deadline(now, n).since(now);
            assert!(
                after > ms(500) * (n - 1) && after <= ms(500) * n,
                "{n} ticks at +{phase}: {after:?}"
            );
            assert_eq!(c.slow_deadline(now, n).nanos() % 500_000_000, 0);
        }
    }
    // Intervals round up to whole ticks, at least one.
    assert_eq!(c.slow_ticks(Duration::ZERO), 1);
    assert_eq!(c.slow_ticks(ms(500)), 1);
    assert_eq!(c.slow_ticks(ms(501)), 2);
    assert_eq!(c.slow_ticks(Duration::from_secs(60)), 120);
}

#[test]
fn a_delayed_ack_leaves_at_the_next_fast_tick_0_to_200_ms_on() {
    let c = BsdClock::default();
    assert_eq!(c.next_fast_tick(at_ms(1)), at_ms(200));
    assert_eq!(c.next_fast_tick(at_ms(199)), at_ms(200));
    assert_eq!(c.next_fast_tick(at_ms(200)), at_ms(400));
    let mut delays: Vec<Duration> = (0..200)
        .map(|p| c.next_fast_tick(at_ms(3_000 + p)).since(at_ms(3_000 + p)))
        .collect();
    delays.sort();
    assert_eq!(delays.first(), Some(&ms(1)));
    assert_eq!(delays.last(), Some(&ms(200)));
}

#[test]
fn the_rto_is_whole_slow_ticks_floored_at_2_and_backed_off_by_tcp_backoff_to_64_s() {
    let c = BsdClock::default();
    // Rounded up to whole ticks; a Linux-like 200 ms is floored at 1 s.
    assert_eq!(c.rto_ticks(ms(200), 0), 2);
    assert_eq!(c.rto_ticks(ms(1000), 0), 2);
    assert_eq!(c.rto_ticks(ms(1001), 0), 3);
    assert_eq!(c.rto_ticks(ms(2600), 0), 6);
    // tcp_backoff[]: 1, 2, 4, 8, 16, 32, 64, 64…, ceiling 128 ticks.
    let seconds: Vec<f64> = (0..10)
        .map(|b| (c.slow * c.rto_ticks(ms(1000), b)).as_secs_f64())
        .collect();
    assert_eq!(
        seconds,
        [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 64.0, 64.0, 64.0]
    );
    // A 1.5 s base: 3, 6, 12, … ticks until the 64 s ceiling.
    let ticks: Vec<u32> = (0..8).map(|b| c.rto_ticks(ms(1500), b)).collect();
    assert_eq!(ticks, [3, 6, 12, 24, 48, 96, 128, 128]);
    assert_eq!(c.rto_ticks(Duration::from_secs(100), 0), 128);
    assert_eq!(c.rto_ticks(ms(1000), 40), 128);
}
