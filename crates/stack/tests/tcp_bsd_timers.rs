//! `--timers bsd` on two connections back to back on a `ManualClock`
//! (issue 29): RTT samples in slow ticks (a 10 ms round trip measures 0
//! or 1 tick by its phase against the 500 ms clock), retransmission
//! timeouts at slow tick boundaries, floored at 1 s and backed off by
//! `tcp_backoff[]`, and delayed ACKs at the next 200 ms fast tick; and,
//! on the exact clock, none of it.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::bsd_clock::BsdClock;
use stack::tcp::rtt::{BsdRenoConfig, Rfc6298Config, RttEstimatorKind};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::tcp::timers::{TimerClock, TimerConfig};
use stack::tcp::window::{DelayedAckPolicy, SenderPolicy};
use stack::time::Instant;
use tcp_pair::{Dir, Pair, START};

const MS: Duration = Duration::from_millis(1);
const SLOW: u64 = 500_000_000;
const FAST: u64 = 200_000_000;

fn config(bsd: bool, rtt: RttEstimatorKind) -> TcpConfig {
    TcpConfig {
        rtt,
        timestamps: false,
        tail_loss_probe: false,
        sender: SenderPolicy {
            nagle: false,
            ..SenderPolicy::default()
        },
        delayed_ack: DelayedAckPolicy::Timer(200 * MS),
        timers: TimerConfig {
            clock: if bsd {
                TimerClock::Bsd(BsdClock::default())
            } else {
                TimerClock::Exact
            },
            ..TimerConfig::default()
        },
        ..TcpConfig::default()
    }
}

fn rfc6298(min_rto: Duration) -> RttEstimatorKind {
    RttEstimatorKind::Rfc6298(Rfc6298Config {
        min_rto,
        ..Rfc6298Config::default()
    })
}

fn bsd_reno() -> RttEstimatorKind {
    RttEstimatorKind::BsdReno(BsdRenoConfig::default())
}

/// The handshake's 10 ms round trip (5 ms each way) begun `phase` after
/// a slow tick: (A's SRTT, A's RTO) once established.
fn after_handshake_at(phase: Duration, c: TcpConfig) -> (Option<Duration>, Duration) {
    let mut p = Pair::new(c.clone(), c, 5 * MS);
    p.clock.set(START.after(phase));
    p.kick();
    p.run_until(|p| p.a.state() == State::Established && p.b.state() == State::Established);
    (p.a.srtt(), p.a.rto())
}

#[test]
fn a_10_ms_round_trip_measures_0_or_1_slow_tick_by_its_phase() {
    // START is on a slow tick. The SYN's round trip crosses none at +100
    // ms, the one at +500 ms when sent at +495 ms.
    let bsd = config(true, bsd_reno());
    // t_rtt 1: srtt 8/8 tick, rttvar 2/4: RTO (1 + 2) ticks.
    assert_eq!(
        after_handshake_at(100 * MS, bsd.clone()),
        (Some(500 * MS), 1500 * MS)
    );
    // t_rtt 2: srtt 2 ticks, rttvar 4/4: RTO (2 + 4) ticks.
    assert_eq!(
        after_handshake_at(495 * MS, bsd),
        (Some(1000 * MS), 3000 * MS)
    );
    // RFC 6298's estimator fed the ticks: 0 or 500 ms.
    let rfc = config(true, rfc6298(Duration::from_secs(1)));
    assert_eq!(
        after_handshake_at(100 * MS, rfc.clone()),
        (Some(Duration::ZERO), 1000 * MS)
    );
    // SRTT 500 ms, RTTVAR 250 ms: 1.5 s, three ticks.
    assert_eq!(
        after_handshake_at(495 * MS, rfc),
        (Some(500 * MS), 1500 * MS)
    );
    // The exact clock measures 10 ms at either phase.
    let exact = config(false, bsd_reno());
    assert_eq!(
        after_handshake_at(100 * MS, exact.clone()).0,
        Some(500 * MS)
    );
    let exact = config(false, rfc6298(200 * MS));
    assert_eq!(
        after_handshake_at(100 * MS, exact.clone()),
        (Some(10 * MS), 200 * MS)
    );
    assert_eq!(
        after_handshake_at(495 * MS, exact),
        (Some(10 * MS), 200 * MS)
    );
}

/// A sends 1000 octets `phase` after a slow tick and B's ACKs are all
/// lost: the times of A's data segment and its first `n` retransmissions.
fn retransmission_times(c: TcpConfig, phase: Duration, n: u64) -> Vec<Instant> {
    let mut p = Pair::established(c.clone(), c, 5 * MS);
    let base = p.now().nanos() / SLOW * SLOW + SLOW;
    p.run_to(Instant(base).after(phase));
    p.drop = Box::new(|dir, _| dir == Dir::BtoA);
    p.app_a.to_write = vec![7; 1000];
    p.kick();
    p.run_until(|p| p.a.counters().retransmits >= n);
    p.sent(Dir::AtoB)
        .iter()
        .filter(|s| !s.seg.payload.is_empty())
        .map(|s| s.at)
        .collect()
}

fn gaps_ms(times: &[Instant]) -> Vec<f64> {
    times
        .windows(2)
        .map(|w| w[1].since(w[0]).as_secs_f64() * 1e3)
        .collect()
}

#[test]
fn retransmissions_leave_at_slow_ticks_1_s_floor_and_tcp_backoff() {
    // A Linux-like 200 ms floor under RFC 6298: one tick before the
    // floor, which BSD applies after tcp_backoff[] (TCPT_RANGESET of
    // TCP_REXMTVAL x tcp_backoff[shift]): 2 ticks, 2, 4, 8, 16. The first
    // timeout comes 0.5-1 s after the send, by phase; every one at a
    // tick boundary.
    for phase in [10 * MS, 250 * MS, 490 * MS] {
        let times = retransmission_times(config(true, rfc6298(200 * MS)), phase, 5);
        assert_eq!(times.len(), 6, "{times:?}");
        for t in &times[1..] {
            assert_eq!(t.nanos() % SLOW, 0, "a retransmission off a slow tick");
        }
        let gaps = gaps_ms(&times);
        let first = 1000.0 - phase.as_secs_f64() * 1e3;
        assert_eq!(gaps, [first, 1000.0, 2000.0, 4000.0, 8000.0], "+{phase:?}");
    }
    // 4.3BSD-Reno's estimator after a 0-tick handshake sample: 3 ticks,
    // then tcp_backoff[] 2, 4, 8, 16 times that.
    let times = retransmission_times(config(true, bsd_reno()), 100 * MS, 4);
    assert_eq!(gaps_ms(&times), [1400.0, 3000.0, 6000.0, 12000.0,]);
    // The exact clock: 200 ms, doubling, from the send itself.
    let times = retransmission_times(config(false, rfc6298(200 * MS)), 250 * MS, 4);
    assert_eq!(gaps_ms(&times), [200.0, 400.0, 800.0, 1600.0]);
}

#[test]
fn the_backoff_stops_at_64_s() {
    let times = retransmission_times(
        config(true, rfc6298(Duration::from_secs(1))),
        Duration::ZERO,
        9,
    );
    let gaps = gaps_ms(&times);
    assert_eq!(
        &gaps[1..],
        [2000.0, 4000.0, 8000.0, 16000.0, 32000.0, 64000.0, 64000.0, 64000.0]
    );
}

/// B receives 100-octet segments from A sent at `offsets` past a slow
/// tick (each after the last's ACK): (arrival, ACK) times at B.
fn delayed_acks(bsd: bool, offsets: &[u64]) -> Vec<(Instant, Instant)> {
    let c = config(bsd, rfc6298(Duration::from_secs(1)));
    let mut p = Pair::established(c.clone(), c, 5 * MS);
    // The first data segment's reading opens the window past what the
    // SYN offered: a window update, at once. Not timed.
    p.app_a.to_write = vec![1; 100];
    p.kick();
    p.run_until(|p| p.app_b.read.len() == 100);
    p.run_to(p.now().after(Duration::from_secs(1)));
    let logged = p.log.len();
    let base = p.now().nanos() / SLOW * SLOW + SLOW;
    let mut start = Instant(base);
    for &off in offsets {
        p.run_to(start.after(Duration::from_millis(off)));
        p.app_a.to_write.extend([1; 100]);
        p.kick();
        let want = p.app_a.to_write.len();
        p.run_until(|p| {
            let (una, nxt, _) = p.a.sequence_points();
            una == nxt && p.app_b.read.len() == want
        });
        start = start.after(Duration::from_secs(1));
    }
    let data: Vec<Instant> = p.log[logged..]
        .iter()
        .filter(|s| s.dir == Dir::AtoB && !s.seg.payload.is_empty())
        .map(|s| s.at.after(5 * MS))
        .collect();
    let acks: Vec<Instant> = p.log[logged..]
        .iter()
        .filter(|s| s.dir == Dir::BtoA && s.seg.payload.is_empty())
        .map(|s| s.at)
        .collect();
    assert_eq!(data.len(), offsets.len());
    assert_eq!(acks.len(), offsets.len(), "one ACK a segment");
    data.into_iter().zip(acks).collect()
}

#[test]
fn a_delayed_ack_leaves_at_the_next_fast_tick() {
    let offsets = [0, 37, 110, 190, 260, 333, 420, 480];
    let bsd = delayed_acks(true, &offsets);
    let mut delays = Vec::new();
    for (arrived, acked) in &bsd {
        assert_eq!(acked.nanos() % FAST, 0, "an ACK off a fast tick");
        let d = acked.since(*arrived);
        assert!(d > Duration::ZERO && d <= 200 * MS, "{d:?}");
        delays.push(d.as_millis());
    }
    // Arrivals spread over a 500 ms tick: the waits spread over 0-200 ms.
    let (min, max) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
    assert!(*min < 50 && *max > 150, "delays {delays:?} ms");
    eprintln!("delayed ACKs on the fast clock after {delays:?} ms");
    // The exact clock: 200 ms after each.
    for (arrived, acked) in delayed_acks(false, &offsets) {
        assert_eq!(acked.since(arrived), 200 * MS);
    }
}

#[test]
fn time_wait_on_slow_ticks_is_never_said_to_have_begun_earlier_than_it_did() {
    for bsd in [false, true] {
        let c = config(bsd, rfc6298(Duration::from_secs(1)));
        let mut p = Pair::established(c.clone(), c, 5 * MS);
        p.run_to(p.now().after(123 * MS));
        p.app_a.close_when_written = true;
        p.app_b.close_when_written = true;
        p.kick();
        p.run_until(|p| p.a.state() == State::TimeWait);
        let entered = p.now();
        let since = p.a.time_wait_since().expect("in TIME-WAIT");
        let left = p.a.poll_at().unwrap().since(entered);
        assert!(since >= entered, "bsd {bsd}: {since:?} before {entered:?}");
        if bsd {
            assert!(since.since(entered) < 500 * MS);
            assert!(left > Duration::from_millis(239_500) && left <= Duration::from_secs(240));
        } else {
            assert_eq!(since, entered);
        }
    }
}

/// A bulk stream whose ACKs are predicted (header prediction on) and then
/// cut: the retransmission timer the predicted ACKs armed is BSD's, two
/// slow ticks at least, so it fires 500-1000 ms after the last ACK, not
/// on the next tick (found by a review: the fast path re-armed it with the
/// exact RTO, 90-480 ms after the last ACK).
#[test]
fn a_predicted_ack_arms_bsds_retransmission_timer() {
    let cfg = |header_prediction: bool| TcpConfig {
        header_prediction,
        recv_buffer: 8 * 1024,
        delayed_ack: DelayedAckPolicy::Timer(40 * MS),
        ..config(
            true,
            RttEstimatorKind::Rfc6298(Rfc6298Config {
                min_rto: 200 * MS,
                ..Rfc6298Config::default()
            }),
        )
    };
    for header_prediction in [true, false] {
        for cut_ms in [1000u64, 1130, 1260, 1390] {
            let mut p = Pair::established(cfg(header_prediction), cfg(header_prediction), 5 * MS);
            p.app_b.auto_read = true;
            p.app_a.to_write = vec![3u8; 4_000_000];
            p.kick();
            p.run_to(p.now().after(Duration::from_millis(cut_ms)));
            p.drop = Box::new(|dir, _| dir == Dir::BtoA);
            let timeouts = p.a.counters().timeouts;
            p.run_until(|p| p.a.counters().timeouts > timeouts);
            let last_ack = p
                .log
                .iter()
                .filter(|s| s.dir == Dir::BtoA && !s.dropped)
                .map(|s| s.at.after(5 * MS))
                .max()
                .unwrap();
            let after = p.now().since(last_ack);
            let hits = p.a.counters().header_prediction_hits;
            eprintln!(
                "header prediction {header_prediction}, cut at {cut_ms} ms: {hits} hits; the timer fired {:.1} ms after the last ACK",
                after.as_secs_f64() * 1e3
            );
            if header_prediction {
                assert!(hits > 0, "no ACK was predicted");
            }
            assert!(
                after >= 500 * MS && after <= 1000 * MS,
                "header prediction {header_prediction}: fired {after:?} after the last ACK"
            );
        }
    }
}

/// BSD had no tail loss probe: on its clocks none is sent, whatever the
/// phase of the send against the 500 ms tick (2·SRTT would round to the
/// next tick, which may come milliseconds after the send).
#[test]
fn no_loss_probe_on_bsds_clocks() {
    for phase_ms in [10u64, 250, 480, 495] {
        let cfg = TcpConfig {
            tail_loss_probe: true,
            delayed_ack: DelayedAckPolicy::Timer(40 * MS),
            ..config(
                true,
                RttEstimatorKind::Rfc6298(Rfc6298Config {
                    min_rto: 200 * MS,
                    ..Rfc6298Config::default()
                }),
            )
        };
        let mut p = Pair::established(cfg.clone(), cfg, 5 * MS);
        let base = p.now().nanos() / SLOW * SLOW + SLOW;
        p.run_to(Instant(base).after(Duration::from_millis(phase_ms)));
        p.app_a.to_write.extend([2u8; 100]);
        p.kick();
        let want = p.app_a.to_write.len();
        p.run_until(|p| p.app_b.read.len() == want);
        p.run_to(p.now().after(Duration::from_secs(2)));
        assert_eq!(
            p.a.counters().loss_probes,
            0,
            "sent {phase_ms} ms past a tick"
        );
    }
}
