use super::*;
use crate::tcp::bsd_clock::BsdClock;
use crate::time::{Clock, ManualClock};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn the_earliest_deadline_fires_first_and_the_loop_sleeps_until_it() {
    let clock = ManualClock::new(Instant(1_000));
    let mut t = Timers::new(TimerConfig {
        delayed_ack: ms(40),
        ..TimerConfig::default()
    });
    assert_eq!(t.next(), None);
    assert_eq!(t.sleep_for(clock.now()), None);
    t.arm_after(TimerKind::Retransmit, clock.now(), ms(200));
    t.arm_delayed_ack(clock.now());
    assert_eq!(
        t.next(),
        Some((TimerKind::DelayedAck, clock.now().after(ms(40))))
    );
    assert_eq!(t.sleep_for(clock.now()), Some(ms(40)));

    clock.advance(ms(39));
    assert_eq!(t.poll_expired(clock.now()), None);
    // A later segment does not push the delayed ACK back.
    t.arm_delayed_ack(clock.now());
    clock.advance(ms(1));
    assert_eq!(t.poll_expired(clock.now()), Some(TimerKind::DelayedAck));
    assert_eq!(t.poll_expired(clock.now()), None);
    assert_eq!(t.sleep_for(clock.now()), Some(ms(160)));

    // Re-arming moves the deadline; cancelling removes it.
    t.arm_after(TimerKind::Retransmit, clock.now(), ms(500));
    assert_eq!(t.sleep_for(clock.now()), Some(ms(500)));
    t.cancel(TimerKind::Retransmit);
    assert_eq!(t.next(), None);
}

#[test]
fn several_expired_timers_come_out_in_deadline_order() {
    let clock = ManualClock::new(Instant::ZERO);
    let mut t = Timers::new(TimerConfig::default());
    let now = clock.now();
    t.arm_after(TimerKind::Keepalive, now, ms(30));
    t.arm_after(TimerKind::Retransmit, now, ms(20));
    t.arm_after(TimerKind::Persist, now, ms(10));
    t.arm_after(TimerKind::DelayedAck, now, ms(20));
    clock.advance(ms(25));
    let mut fired = vec![];
    while let Some(k) = t.poll_expired(clock.now()) {
        fired.push(k);
    }
    assert_eq!(
        fired,
        [
            TimerKind::Persist,
            TimerKind::Retransmit,
            TimerKind::DelayedAck
        ]
    );
    assert_eq!(t.sleep_for(clock.now()), Some(ms(5)));
}

#[test]
fn persist_probes_back_off_from_the_rto_within_five_and_sixty_seconds() {
    let clock = ManualClock::new(Instant::ZERO);
    let mut t = Timers::new(TimerConfig::default());
    let rto = Duration::from_secs(3);
    t.arm_persist(clock.now(), rto);
    let mut intervals = vec![];
    for _ in 0..6 {
        let at = t.deadline(TimerKind::Persist).unwrap();
        intervals.push(at.since(clock.now()).as_secs());
        clock.set(at);
        assert_eq!(t.poll_expired(clock.now()), Some(TimerKind::Persist));
        t.on_persist_probe(clock.now(), rto);
    }
    assert_eq!(intervals, [5, 6, 12, 24, 48, 60]);
    t.on_window_open();
    assert_eq!(t.deadline(TimerKind::Persist), None);
    assert_eq!(t.persist_interval(rto), Duration::from_secs(5));
    assert_eq!(t.persist_interval(ms(200)), Duration::from_secs(5));
}

#[test]
fn keepalive_waits_the_idle_time_probes_and_gives_up() {
    let clock = ManualClock::new(Instant::ZERO);
    let mut t = Timers::new(TimerConfig {
        keepalive_probes: 3,
        ..TimerConfig::default()
    });
    t.on_peer_heard(clock.now());
    assert_eq!(t.sleep_for(clock.now()), Some(Duration::from_secs(7200)));
    clock.advance(Duration::from_secs(7200));
    let mut actions = vec![];
    while actions.last() != Some(&KeepaliveAction::GiveUp) {
        assert_eq!(t.poll_expired(clock.now()), Some(TimerKind::Keepalive));
        actions.push(t.on_keepalive_fired(clock.now()));
        if let Some(d) = t.sleep_for(clock.now()) {
            assert_eq!(d, Duration::from_secs(75));
            clock.advance(d);
        }
    }
    use KeepaliveAction::*;
    assert_eq!(actions, [Probe(1), Probe(2), Probe(3), GiveUp]);
    assert_eq!(t.next(), None);
    // An answer in between starts over.
    t.on_peer_heard(clock.now());
    clock.advance(Duration::from_secs(7200));
    assert_eq!(t.poll_expired(clock.now()), Some(TimerKind::Keepalive));
    assert_eq!(t.on_keepalive_fired(clock.now()), Probe(1));
}

#[test]
fn time_wait_lasts_two_msl_and_stops_the_other_timers() {
    let clock = ManualClock::new(Instant(5));
    let mut t = Timers::new(TimerConfig::default());
    t.arm_after(TimerKind::Retransmit, clock.now(), ms(200));
    t.on_peer_heard(clock.now());
    t.enter_time_wait(clock.now());
    assert_eq!(
        t.next(),
        Some((
            TimerKind::TimeWait,
            clock.now().after(Duration::from_secs(240))
        ))
    );
    let mut short = Timers::new(TimerConfig {
        msl: Duration::from_secs(30),
        ..TimerConfig::default()
    });
    short.enter_time_wait(clock.now());
    clock.advance(Duration::from_secs(59));
    assert_eq!(short.poll_expired(clock.now()), None);
    clock.advance(Duration::from_secs(1));
    assert_eq!(short.poll_expired(clock.now()), Some(TimerKind::TimeWait));
}

#[test]
fn the_retransmit_timer_follows_either_estimators_backoff_on_the_clock() {
    use crate::tcp::rtt::{BsdRenoConfig, Rfc6298Config, RttEstimatorKind};
    let kinds = [
        RttEstimatorKind::Rfc6298(Rfc6298Config {
            min_rto: ms(200),
            ..Rfc6298Config::default()
        }),
        RttEstimatorKind::BsdReno(BsdRenoConfig::default()),
    ];
    let mut fired_at = vec![];
    for kind in kinds {
        let clock = ManualClock::new(Instant::ZERO);
        let mut rtt = kind.build();
        rtt.sample(ms(100));
        let mut t = Timers::new(TimerConfig::default());
        t.arm_after(TimerKind::Retransmit, clock.now(), rtt.rto());
        let mut times = vec![];
        for _ in 0..3 {
            let wait = t.sleep_for(clock.now()).unwrap();
            clock.advance(wait);
            assert_eq!(t.poll_expired(clock.now()), Some(TimerKind::Retransmit));
            times.push(clock.now().since(Instant::ZERO).as_millis());
            rtt.on_retransmit_timeout();
            t.arm_after(TimerKind::Retransmit, clock.now(), rtt.rto());
        }
        fired_at.push(times);
    }
    // RFC 6298: RTO 100 + 4·50 = 300 ms, then 600, 1200.
    assert_eq!(fired_at[0], [300, 900, 2100]);
    // BSD: t_rtt 1 → 3 ticks (1.5 s), then 6 and 12 ticks.
    assert_eq!(fired_at[1], [1500, 4500, 10_500]);
}

/// The scan `poll_at` uses agrees with `next` on every combination of
/// armed kinds, ties (the earlier kind wins) and the far end of time.
#[test]
fn next_deadline_is_the_deadline_of_next() {
    let points = [
        Instant(5),
        Instant(5),
        Instant(3),
        Instant(u64::MAX),
        Instant(9),
        Instant(3),
        Instant(2),
    ];
    for armed in 0u32..128 {
        let mut t = Timers::new(TimerConfig::default());
        for (i, &kind) in KINDS.iter().enumerate() {
            if armed & (1 << i) != 0 {
                t.arm(kind, points[i]);
            }
        }
        let expected = KINDS
            .iter()
            .filter_map(|&k| t.deadline(k).map(|at| (k, at)))
            .min_by_key(|&(k, at)| (at, k));
        assert_eq!(t.next(), expected, "{armed:07b}");
        assert_eq!(t.next_deadline(), expected.map(|(_, at)| at), "{armed:07b}");
    }
}

#[test]
fn on_bsd_clocks_timers_fire_on_slow_ticks_delayed_acks_on_fast_ones_and_the_pacer_exactly() {
    let clock = ManualClock::new(Instant(7_130_000_000));
    let mut t = Timers::new(TimerConfig {
        clock: TimerClock::Bsd(BsdClock::default()),
        delayed_ack: ms(40),
        ..TimerConfig::default()
    });
    let now = clock.now();
    // 1 s: two ticks, the second boundary after 7.13 s.
    t.arm_after(TimerKind::Retransmit, now, ms(1000));
    assert_eq!(
        t.deadline(TimerKind::Retransmit),
        Some(Instant(8_000_000_000))
    );
    // Whatever the configured 40 ms: the next 200 ms tick.
    t.arm_delayed_ack(now);
    assert_eq!(
        t.deadline(TimerKind::DelayedAck),
        Some(Instant(7_200_000_000))
    );
    t.arm_after(TimerKind::Pace, now, ms(3));
    assert_eq!(t.deadline(TimerKind::Pace), Some(now.after(ms(3))));
    // Persist's 5 s floor: ten ticks; TIME-WAIT's 2·MSL likewise whole.
    t.arm_persist(now, ms(1000));
    assert_eq!(
        t.deadline(TimerKind::Persist),
        Some(Instant(12_000_000_000))
    );
    t.enter_time_wait(now);
    let tw = t.deadline(TimerKind::TimeWait).unwrap();
    assert_eq!(tw.nanos() % 500_000_000, 0);
    assert!(tw.since(now) <= ms(240_000) && tw.since(now) > ms(239_500));
}
