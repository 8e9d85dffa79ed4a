//! Data transfer through two connections back to back on a `ManualClock`:
//! every byte checked, chosen segments lost (fast retransmit with NewReno
//! and with SACK, the retransmission timer with each RTT estimator), a
//! zero window and its probes, delayed ACKs and Nagle, and every switch
//! combination under a fixed loss pattern.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use stack::tcp::cc::CongestionControlKind;
use stack::tcp::rtt::{BsdRenoConfig, Rfc6298Config, RttEstimatorKind};
use stack::tcp::state::State;
use stack::tcp::tcb::{RecoveryKind, Segment, TcpConfig};
use stack::tcp::window::{DelayedAckPolicy, SenderPolicy};
use stack::time::Instant;
use stack::wire::tcp::TcpControl;
use tcp_pair::{pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);

fn cfg() -> TcpConfig {
    TcpConfig::default()
}

/// Drops the `nths` (1-based) data segments A sends, first copies only.
fn drop_data_segments(nths: Vec<usize>) -> tcp_pair::DropFilter {
    let seen = Rc::new(Cell::new(0usize));
    let mut first_seqs: Vec<u32> = Vec::new();
    Box::new(move |dir, seg: &Segment| {
        if dir != Dir::AtoB || seg.payload.is_empty() {
            return false;
        }
        let seq = seg.header.seq_number.0;
        if first_seqs.contains(&seq) {
            return false;
        }
        first_seqs.push(seq);
        seen.set(seen.get() + 1);
        nths.contains(&seen.get())
    })
}

/// Runs A → B (and optionally B → A) transfers to completion.
fn transfer(p: &mut Pair, a_to_b: usize, b_to_a: usize) -> Instant {
    p.app_a.to_write = pattern(a_to_b);
    p.app_b.to_write = pattern(b_to_a);
    p.kick();
    p.run_until(|p| p.app_b.read.len() >= a_to_b && p.app_a.read.len() >= b_to_a);
    assert!(p.app_b.read == pattern(a_to_b), "A → B bytes differ");
    assert!(p.app_a.read == pattern(b_to_a), "B → A bytes differ");
    p.now()
}

#[test]
fn bulk_data_both_ways_arrives_byte_for_byte_without_retransmission() {
    let mut p = Pair::established(cfg(), cfg(), 5 * MS);
    transfer(&mut p, 1 << 20, 300_000);
    let (a, b) = (p.a.counters(), p.b.counters());
    assert_eq!(a.retransmits + b.retransmits, 0);
    assert!(a.header_prediction_hits > 100, "{a:?}");
    assert!(b.header_prediction_hits > 100, "{b:?}");
    // Slow start grew the window well past the initial one.
    assert!(p.a.cwnd() > 100_000, "cwnd {}", p.a.cwnd());
    // The path's 10 ms; with timestamps every ACK is a sample, the last
    // one the delayed ACK (200 ms) of the transfer's odd last segment.
    let srtt = p.a.srtt().unwrap();
    assert!(
        srtt >= 10 * MS && srtt <= 10 * MS + 210 * MS / 8,
        "{srtt:?}"
    );
    // Then both close and the TCBs end.
    p.a.close();
    p.b.close();
    p.kick();
    p.run_until(|p| p.a.state() == State::Closed && p.b.state() == State::Closed);
}

#[test]
fn header_prediction_off_takes_the_full_path_for_the_same_bytes() {
    let mut c = cfg();
    c.header_prediction = false;
    let mut p = Pair::established(c.clone(), c, 5 * MS);
    transfer(&mut p, 200_000, 50_000);
    assert_eq!(p.a.counters().header_prediction_hits, 0);
    assert_eq!(p.b.counters().header_prediction_hits, 0);
}

/// Without loss, the 1-based number of the first data segment of the
/// largest flight (segments sent at one instant) among the first 60.
fn first_of_the_largest_early_flight(c: &TcpConfig) -> usize {
    let mut p = Pair::established(c.clone(), c.clone(), 5 * MS);
    transfer(&mut p, 300_000, 0);
    let data: Vec<Instant> = p
        .sent(Dir::AtoB)
        .iter()
        .filter(|s| !s.seg.payload.is_empty())
        .map(|s| s.at)
        .take(60)
        .collect();
    let mut best = (0, 0);
    let mut i = 0;
    for run in data.chunk_by(|x, y| x == y) {
        if run.len() > best.1 {
            best = (i + 1, run.len());
        }
        i += run.len();
    }
    assert!(best.1 >= 6, "flights {best:?}");
    best.0
}

#[test]
fn one_lost_segment_is_fast_retransmitted_after_three_duplicate_acks() {
    for recovery in [RecoveryKind::NewReno, RecoveryKind::Sack] {
        let mut c = cfg();
        c.recovery = recovery;
        // Lose the first segment of a flight, so the rest of that flight
        // brings its duplicate ACKs at one instant.
        let lost = first_of_the_largest_early_flight(&c);
        let mut p = Pair::established(c.clone(), c, 5 * MS);
        p.drop = drop_data_segments(vec![lost]);
        transfer(&mut p, 300_000, 0);
        let a = p.a.counters();
        assert_eq!(a.fast_retransmits, 1, "{recovery:?} {a:?}");
        assert_eq!(a.timeouts, 0, "{recovery:?}");
        assert_eq!(a.retransmits, 1, "{recovery:?}");
        assert!(a.dup_acks >= 3);
        // During recovery the window let new data out (NewReno's inflation
        // by duplicate ACKs, RFC 6582 step 4; RFC 6675's pipe), before the
        // ACK that ended recovery.
        let lost_seq = p
            .log
            .iter()
            .find(|d| d.dropped)
            .unwrap()
            .seg
            .header
            .seq_number;
        let rxt_index = p
            .log
            .iter()
            .position(|s| !s.dropped && s.dir == Dir::AtoB && s.seg.header.seq_number == lost_seq)
            .unwrap();
        let rxt_at = p.log[rxt_index].at;
        let highest_before = p.log[..rxt_index]
            .iter()
            .filter(|s| s.dir == Dir::AtoB)
            .map(|s| s.seg.header.seq_number + s.seg.payload.len())
            .fold(lost_seq, |m, x| m.max(x));
        // Sent after the fast retransmit and before its ACK could return.
        let new_in_recovery = p.log[rxt_index + 1..]
            .iter()
            .filter(|s| s.dir == Dir::AtoB && s.at < rxt_at.after(10 * MS))
            .filter(|s| !s.seg.payload.is_empty() && s.seg.header.seq_number >= highest_before)
            .count();
        assert!(
            new_in_recovery > 0,
            "{recovery:?}: no new data during recovery"
        );
        // The retransmission followed the third duplicate ACK at once.
        let lost = p.log.iter().find(|s| s.dropped).unwrap();
        let again = p
            .log
            .iter()
            .find(|s| !s.dropped && s.seg.header.seq_number == lost.seg.header.seq_number)
            .unwrap();
        let third_dup = p
            .log
            .iter()
            .filter(|s| {
                s.dir == Dir::BtoA && s.seg.header.ack_number == Some(lost.seg.header.seq_number)
            })
            .nth(3)
            .expect("an ACK and three duplicates");
        assert_eq!(again.at, third_dup.at.after(5 * MS), "{recovery:?}");
    }
}

/// B's duplicate ACKs compressed as Linux's `tcp_comp_sack_nr` does:
/// of the SACK-carrying ACKs for one cumulative point, only the first of
/// every `keep_one_in` reaches A, its SACK blocks covering every segment
/// B got since.
fn compress_duplicate_acks(keep_one_in: usize) -> tcp_pair::DropFilter {
    let mut run: Option<(u32, usize)> = None;
    Box::new(move |dir, seg: &Segment| {
        let Some(ack) = seg.header.ack_number else {
            return false;
        };
        if dir != Dir::BtoA || !seg.payload.is_empty() || seg.header.sack_ranges[0].is_none() {
            return false;
        }
        let n = match run {
            Some((at, n)) if at == ack.0 => n + 1,
            _ => 0,
        };
        run = Some((ack.0, n));
        n % keep_one_in != 0
    })
}

#[test]
fn compressed_duplicate_acks_count_by_the_segments_they_sack_so_newreno_needs_no_timeout() {
    // The lossy stack → Linux slowness of issue 18: Linux sends one
    // duplicate ACK and then one per ~1 ms covering several segments, and
    // counting ACKs rather than SACKed segments left NewReno short of
    // three, or its inflation short of the flight: a 1 s timeout.
    for recovery in [RecoveryKind::NewReno, RecoveryKind::Sack] {
        let mut c = cfg();
        c.recovery = recovery;
        let lost = first_of_the_largest_early_flight(&c);
        let mut p = Pair::established(c.clone(), c, 5 * MS);
        let mut lose = drop_data_segments(vec![lost]);
        let mut compress = compress_duplicate_acks(10);
        p.drop = Box::new(move |dir, seg| lose(dir, seg) || compress(dir, seg));
        transfer(&mut p, 300_000, 0);
        let a = p.a.counters();
        assert_eq!(a.timeouts, 0, "{recovery:?} {a:?}");
        assert_eq!(a.fast_retransmits, 1, "{recovery:?} {a:?}");
        assert_eq!(a.retransmits, 1, "{recovery:?} {a:?}");
        // The duplicate ACKs that reached A before its retransmission: the
        // first (one segment SACKed) and the eleventh (ten more).
        let lost_seq = p
            .log
            .iter()
            .find(|s| s.dropped && !s.seg.payload.is_empty())
            .unwrap()
            .seg
            .header
            .seq_number;
        let resent = p
            .log
            .iter()
            .find(|s| s.dir == Dir::AtoB && !s.dropped && s.seg.header.seq_number == lost_seq)
            .unwrap()
            .at;
        let dup_acks_delivered = p
            .log
            .iter()
            .filter(|s| s.dir == Dir::BtoA && !s.dropped && s.at.after(5 * MS) == resent)
            .filter(|s| s.seg.header.ack_number == Some(lost_seq))
            .filter(|s| s.seg.header.sack_ranges[0].is_some())
            .count();
        // Fewer than three, so counting ACKs alone could not have started
        // fast retransmit; the retransmission went out as they arrived.
        assert!(dup_acks_delivered < 3, "{recovery:?} {dup_acks_delivered}");
        let first_dup = p
            .log
            .iter()
            .find(|s| s.dir == Dir::BtoA && s.seg.header.ack_number == Some(lost_seq))
            .unwrap()
            .at;
        assert_eq!(resent, first_dup.after(5 * MS), "{recovery:?}");
    }
}

#[test]
fn sack_recovery_repairs_several_holes_in_one_round_trip_where_newreno_takes_one_each() {
    let mut finish = Vec::new();
    for recovery in [RecoveryKind::NewReno, RecoveryKind::Sack] {
        let mut c = cfg();
        c.recovery = recovery;
        let mut p = Pair::established(c.clone(), c, 5 * MS);
        p.drop = drop_data_segments(vec![30, 32, 34]);
        let start = p.now();
        p.app_a.to_write = pattern(400_000);
        p.kick();
        // The holes are in the first 34 segments: time until B has 40.
        p.run_until(|p| p.app_b.read.len() >= 40 * 1448);
        let repaired = p.now();
        transfer(&mut p, 400_000, 0);
        let a = p.a.counters();
        assert_eq!(a.timeouts, 0, "{recovery:?} {a:?}");
        assert_eq!(a.fast_retransmits, 1, "{recovery:?} {a:?}");
        assert_eq!(a.retransmits, 3, "{recovery:?} {a:?}");
        // When the three holes were refilled, relative to the first.
        let resent: Vec<Instant> = p
            .log
            .iter()
            .filter(|s| s.dir == Dir::AtoB && !s.dropped)
            .filter(|s| {
                p.log
                    .iter()
                    .any(|d| d.dropped && d.seg.header.seq_number == s.seg.header.seq_number)
            })
            .map(|s| s.at)
            .collect();
        assert_eq!(resent.len(), 3);
        let spread = resent[2].since(resent[0]);
        match recovery {
            // One hole per round trip (10 ms): partial ACKs.
            RecoveryKind::NewReno => assert!(spread >= 20 * MS, "{spread:?}"),
            // The scoreboard finds the later holes lost as SACKs arrive and
            // refills them within one round trip of the first.
            RecoveryKind::Sack => assert!(spread <= 10 * MS, "{spread:?}"),
        }
        finish.push(repaired.since(start));
    }
    assert!(finish[1] < finish[0], "SACK repairs sooner: {finish:?}");
}

/// The times at which A's SYN went out when the first `lost` copies are lost.
fn syn_times(rtt: RttEstimatorKind, lost: usize) -> Vec<Instant> {
    let mut c = cfg();
    c.rtt = rtt;
    let mut p = Pair::new(c, cfg(), 5 * MS);
    let mut syns = 0;
    p.drop = Box::new(move |dir, seg| {
        if dir == Dir::AtoB && seg.header.control == TcpControl::Syn {
            syns += 1;
            return syns <= lost;
        }
        false
    });
    p.kick();
    p.run_until(|p| p.a.state() == State::Established);
    p.sent(Dir::AtoB)
        .iter()
        .filter(|s| s.seg.header.control == TcpControl::Syn)
        .map(|s| s.at)
        .collect()
}

#[test]
fn a_lost_syn_is_retransmitted_on_each_estimators_timeout_with_backoff() {
    let rfc = syn_times(RttEstimatorKind::Rfc6298(Rfc6298Config::default()), 2);
    // RFC 6298 §2.1 and §5.5: 1 s, then doubled.
    assert_eq!(rfc[1].since(rfc[0]), Duration::from_secs(1));
    assert_eq!(rfc[2].since(rfc[1]), Duration::from_secs(2));
    let bsd_kind = RttEstimatorKind::BsdReno(BsdRenoConfig::default());
    let bsd = syn_times(bsd_kind, 2);
    let mut oracle = bsd_kind.build();
    let first = oracle.rto();
    oracle.on_retransmit_timeout();
    let second = oracle.rto();
    // 4.3BSD-Reno: 6 s before any sample (TCPTV_SRTTDFLT), then backed off.
    assert_eq!(first, Duration::from_secs(6));
    assert_eq!(bsd[1].since(bsd[0]), first);
    assert_eq!(bsd[2].since(bsd[1]), second);
    assert!(second > first);
}

#[test]
fn a_lost_last_segment_is_recovered_by_the_retransmission_timer() {
    for rtt in [
        RttEstimatorKind::Rfc6298(Rfc6298Config {
            min_rto: Duration::from_millis(200),
            ..Rfc6298Config::default()
        }),
        RttEstimatorKind::BsdReno(BsdRenoConfig::default()),
    ] {
        let mut c = cfg();
        c.rtt = rtt;
        // The timer alone (the tail loss probe would recover first:
        // tests/tcp_loss_detection.rs).
        c.tail_loss_probe = false;
        let mut p = Pair::established(c, cfg(), 5 * MS);
        // 10 full segments; the last is lost, so no duplicate ACK follows.
        let mss = p.a.send_mss() - 12;
        p.drop = drop_data_segments(vec![10]);
        p.app_a.to_write = pattern(10 * mss);
        p.kick();
        p.run_until(|p| p.a.counters().timeouts == 0 && p.log.iter().any(|s| s.dropped));
        // Run up to just before the timeout and read the RTO in force.
        p.run_until(|p| p.app_b.read.len() == 9 * mss);
        let last_ack_at = p.now().after(5 * MS);
        p.run_to(last_ack_at);
        let rto = p.a.rto();
        p.run_until(|p| p.app_b.read.len() == 10 * mss);
        assert!(p.app_b.read == pattern(10 * mss));
        let a = p.a.counters();
        assert_eq!(
            (a.timeouts, a.fast_retransmits, a.retransmits),
            (1, 0, 1),
            "{rtt:?}"
        );
        let again = p
            .log
            .iter()
            .rev()
            .find(|s| s.dir == Dir::AtoB && !s.seg.payload.is_empty())
            .unwrap();
        assert_eq!(again.at, last_ack_at.after(rto), "{rtt:?}");
        match rtt {
            RttEstimatorKind::Rfc6298(_) => assert_eq!(rto, Duration::from_millis(200)),
            // One-tick samples: srtt 8/8 + rttvar 2 = 3 ticks of 500 ms.
            RttEstimatorKind::BsdReno(_) => assert_eq!(rto, Duration::from_millis(1500)),
        }
    }
}

#[test]
fn a_zero_window_is_probed_by_the_persist_timer_until_the_reader_opens_it() {
    let mut b_cfg = cfg();
    b_cfg.recv_buffer = 8192;
    let mut p = Pair::established(cfg(), b_cfg, 5 * MS);
    p.app_b.auto_read = false;
    p.app_a.to_write = pattern(40_000);
    p.kick();
    p.run_until(|p| p.a.send_window() == 0 && p.b.recv_queued() == 8192);
    let closed_at = p.now();
    // Nothing in flight: the persist timer probes at persist_min (5 s).
    p.run_until(|p| p.a.counters().window_probes == 2);
    let probes: Vec<_> = p
        .sent(Dir::AtoB)
        .into_iter()
        .filter(|s| s.at > closed_at && s.seg.payload.len() == 1)
        .map(|s| s.at)
        .collect();
    assert_eq!(probes.len(), 2);
    assert_eq!(probes[0].since(closed_at), Duration::from_secs(5));
    // BSD's tcp_setpersist: the RTO doubled per probe, at least 5 s.
    assert_eq!(probes[1].since(probes[0]), Duration::from_secs(5));
    assert_eq!(p.b.recv_queued(), 8192, "the probe's byte is not taken");
    assert_eq!(p.a.counters().timeouts, 0);
    // The reader drains: a window update reopens the flow.
    p.app_b.auto_read = true;
    p.kick();
    p.run_until(|p| p.app_b.read.len() == 40_000);
    assert!(p.app_b.read == pattern(40_000));
    assert!(p.a.counters().rwnd_limited_ns >= 10_000_000_000);
}

#[test]
fn delayed_acks_cover_every_second_full_segment_or_wait_for_the_timer() {
    let mut b_cfg = cfg();
    b_cfg.delayed_ack = DelayedAckPolicy::EverySecond(Duration::from_millis(200));
    // A buffer the SYN-ACK's unscaled window covers, so reading does not
    // owe a window update (the zero-window test exercises that rule).
    b_cfg.recv_buffer = 65535;
    let mut p = Pair::established(cfg(), b_cfg, 5 * MS);
    let mss = p.a.send_mss() - 12;
    let before = p.sent(Dir::BtoA).len();
    p.app_a.to_write = pattern(2 * mss);
    p.kick();
    p.run_until(|p| p.a.sequence_points().0 == p.a.sequence_points().1);
    let acks = &p.sent(Dir::BtoA)[before..];
    assert_eq!(acks.len(), 1, "one ACK for two full segments");
    // One small segment: acknowledged when the 200 ms timer fires.
    let before = p.sent(Dir::BtoA).len();
    p.app_a.to_write.extend_from_slice(b"tail");
    p.kick();
    let sent_at = p.now();
    p.run_until(|p| p.a.sequence_points().0 == p.a.sequence_points().1);
    let acks = &p.sent(Dir::BtoA)[before..];
    assert_eq!(acks.len(), 1);
    assert_eq!(acks[0].at.since(sent_at), Duration::from_millis(205));
}

#[test]
fn nagle_holds_a_small_segment_while_data_is_unacknowledged() {
    for nagle in [true, false] {
        let mut c = cfg();
        c.sender = SenderPolicy {
            nagle,
            sws_avoidance: true,
        };
        let mut p = Pair::established(c, cfg(), 5 * MS);
        let before = p.sent(Dir::AtoB).len();
        p.a.send(b"first");
        let out = p.a.poll_output(p.now());
        p.transmit(Dir::AtoB, out);
        p.a.send(b"second");
        let out = p.a.poll_output(p.now());
        p.transmit(Dir::AtoB, out);
        let now_sent = p.sent(Dir::AtoB).len() - before;
        assert_eq!(now_sent, if nagle { 1 } else { 2 }, "nagle {nagle}");
        // The counter saw the hold (and nothing without Nagle); both
        // writes were short segments.
        assert_eq!(p.a.counters().nagle_holds, u64::from(nagle));
        p.run_until(|p| p.app_b.read.len() == 11);
        assert_eq!(p.a.counters().sws.small_segments_out, 2);
        assert_eq!(p.b.counters().sws.small_segments_in, 2);
        assert_eq!(p.b.counters().sws.min_segment_in, Some(5));
        assert_eq!(p.app_b.read, b"firstsecond");
    }
}

#[test]
fn nagle_lets_the_last_small_segment_go_when_the_application_closes() {
    // Linux's tcp_nagle_test sends a small segment that carries the FIN:
    // held, it would wait for the ACK of the data before it, which a
    // receiver delaying its ACKs sends only when its timer fires.
    for close in [false, true] {
        let mut p = Pair::established(cfg(), cfg(), 5 * MS);
        let before = p.sent(Dir::AtoB).len();
        p.a.send(b"first");
        let out = p.a.poll_output(p.now());
        p.transmit(Dir::AtoB, out);
        p.a.send(b"second");
        if close {
            p.a.close();
        }
        let out = p.a.poll_output(p.now());
        p.transmit(Dir::AtoB, out);
        let sent = &p.sent(Dir::AtoB)[before..];
        let second_sent = sent.iter().any(|s| s.seg.payload == b"second");
        assert_eq!(second_sent, close, "close {close}");
        assert_eq!(p.a.counters().nagle_holds, u64::from(!close));
    }
}

#[test]
fn every_switch_combination_survives_a_fixed_loss_pattern_both_ways() {
    for cc in [
        CongestionControlKind::Reno,
        CongestionControlKind::Cubic,
        CongestionControlKind::None,
        CongestionControlKind::Tahoe,
        CongestionControlKind::Reno90,
        CongestionControlKind::Vegas,
    ] {
        for recovery in [RecoveryKind::NewReno, RecoveryKind::Sack] {
            for rtt in [
                RttEstimatorKind::Rfc6298(Rfc6298Config::default()),
                RttEstimatorKind::BsdReno(BsdRenoConfig::default()),
            ] {
                let mut c = cfg();
                c.congestion = cc;
                c.recovery = recovery;
                c.rtt = rtt;
                c.delayed_ack = DelayedAckPolicy::Off;
                let mut p = Pair::established(c.clone(), c, 2 * MS);
                let mut n = 0u64;
                // Every 37th segment either way is lost, retransmissions too.
                p.drop = Box::new(move |_, _| {
                    n += 1;
                    n.is_multiple_of(37)
                });
                transfer(&mut p, 150_000, 60_000);
                assert!(p.a.counters().retransmits > 0, "{cc:?} {recovery:?}");
            }
        }
    }
}

#[test]
fn window_scaling_carries_a_4_mib_window() {
    let mut c = cfg();
    c.recv_buffer = 4 << 20;
    c.send_buffer = 8 << 20;
    c.congestion = CongestionControlKind::None;
    let mut p = Pair::established(c.clone(), c, 20 * MS);
    assert_eq!(p.a.window_shifts(), (7, 7));
    transfer(&mut p, 6 << 20, 0);
    let shift = p.b.window_shifts().1;
    let largest = p
        .sent(Dir::BtoA)
        .iter()
        .filter(|s| s.seg.header.control == TcpControl::None)
        .map(|s| (s.seg.header.window_len as usize) << shift)
        .max()
        .unwrap();
    assert!(largest >= (4 << 20) - 128, "largest window {largest}");
    // A used it: more than 64 KiB in flight at once.
    let most_in_one_instant = p
        .sent(Dir::AtoB)
        .chunk_by(|x, y| x.at == y.at)
        .map(|run| run.iter().map(|s| s.seg.payload.len()).sum::<usize>())
        .max()
        .unwrap();
    assert!(most_in_one_instant > 1 << 20, "{most_in_one_instant}");
}

#[test]
fn a_window_smaller_than_two_segments_is_counted_as_time_limited_by_the_window() {
    // B's buffer offers 2000 bytes: one 1448-byte segment fits, and the
    // 552 left are less than the next one, so A waits for each ACK with
    // its window open but too small: window-limited, as Linux counts it.
    let mut b_cfg = cfg();
    b_cfg.recv_buffer = 2000;
    let mut p = Pair::established(cfg(), b_cfg, 10 * MS);
    let start = p.now();
    transfer(&mut p, 100_000, 0);
    let took = p.now().since(start).as_nanos() as u64;
    let a = p.a.counters();
    assert!(a.rwnd_limited_ns > took / 2, "{a:?} of {took} ns");
    // The same transfer into a window that never binds: none of it.
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    transfer(&mut p, 100_000, 0);
    assert_eq!(p.a.counters().rwnd_limited_ns, 0, "{:?}", p.a.counters());
}

#[test]
fn a_small_send_buffer_is_counted_as_time_limited_by_the_send_buffer() {
    let mut a_cfg = cfg();
    a_cfg.send_buffer = 8192;
    let mut p = Pair::established(a_cfg, cfg(), 10 * MS);
    let start = p.now();
    transfer(&mut p, 200_000, 0);
    let took = p.now().since(start).as_nanos() as u64;
    let a = p.a.counters();
    assert!(a.sndbuf_limited_ns > took / 2, "{a:?} of {took} ns");
    assert_eq!(a.rwnd_limited_ns, 0);
}

#[test]
fn loss_reordering_and_duplication_both_ways_never_corrupt_a_byte() {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    for seed in 0..36u64 {
        let mut c = cfg();
        c.recovery = if seed % 2 == 0 {
            RecoveryKind::Sack
        } else {
            RecoveryKind::NewReno
        };
        c.congestion = [
            CongestionControlKind::Reno,
            CongestionControlKind::Cubic,
            CongestionControlKind::None,
            CongestionControlKind::Tahoe,
            CongestionControlKind::Reno90,
            CongestionControlKind::Vegas,
        ][(seed / 2 % 6) as usize];
        c.header_prediction = seed % 4 < 2;
        c.timestamps = seed % 5 != 0;
        c.recv_buffer = 32_768;
        let mut p = Pair::established(c.clone(), c, 5 * MS);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        p.fate = Box::new(move |_, _| {
            let roll: f64 = rng.random();
            let jitter = Duration::from_micros(rng.random_range(0..3000));
            if roll < 0.03 {
                vec![] // lost
            } else if roll < 0.05 {
                vec![Duration::ZERO, jitter] // duplicated
            } else {
                vec![jitter] // reordered within 3 ms
            }
        });
        transfer(&mut p, 120_000, 80_000);
        p.a.close();
        p.b.close();
        p.kick();
        p.run_until(|p| p.a.state() == State::Closed && p.b.state() == State::Closed);
        assert_eq!(p.a.error(), None, "seed {seed}");
        assert_eq!(p.b.error(), None, "seed {seed}");
    }
}

#[test]
fn the_off_and_drain_ack_policies_acknowledge_each_segment_or_on_reading() {
    // Off: an ACK for every data segment, at once.
    let mut b_cfg = cfg();
    b_cfg.delayed_ack = DelayedAckPolicy::Off;
    b_cfg.recv_buffer = 65535;
    let mut p = Pair::established(cfg(), b_cfg, 5 * MS);
    let mss = p.a.send_mss() - 12;
    let before = p.sent(Dir::BtoA).len();
    p.app_a.to_write = pattern(2 * mss);
    p.kick();
    p.run_until(|p| p.a.sequence_points().0 == p.a.sequence_points().1);
    assert_eq!(p.sent(Dir::BtoA).len() - before, 2);
    // Drain: nothing until the application has read everything.
    let mut b_cfg = cfg();
    b_cfg.delayed_ack = DelayedAckPolicy::Drain;
    b_cfg.recv_buffer = 65535;
    // No tail loss probe either: it too would draw an ACK.
    let mut a_cfg = cfg();
    a_cfg.tail_loss_probe = false;
    let mut p = Pair::established(a_cfg, b_cfg, 5 * MS);
    p.app_b.auto_read = false;
    let before = p.sent(Dir::BtoA).len();
    p.app_a.to_write = b"request".to_vec();
    p.kick();
    p.run_until(|p| p.b.recv_queued() == 7);
    let held_at = p.now();
    // (Short of the sender's 1 s RTO, which would resend and draw an ACK.)
    p.run_to(held_at.after(Duration::from_millis(900)));
    assert_eq!(p.sent(Dir::BtoA).len(), before, "no ACK while unread");
    let mut buf = [0u8; 16];
    assert_eq!(p.b.recv(&mut buf), 7);
    let out = p.b.poll_output(p.now());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.ack_number, Some(p.b.sequence_points().2));
}
