//! The close at its edges, two connections back to back on a
//! `ManualClock`: a FIN that overtakes the data before it, with the
//! header-prediction fast path on and off; FIN-WAIT-2 with a peer that
//! never closes, bounded for a released connection only; which SYN may
//! end TIME-WAIT (RFC 6191).

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::state::State;
use stack::tcp::tcb::{ConnectionError, Segment, TcpConfig};
use stack::tcp::timers::TimerConfig;
use stack::wire::seq::SeqNumber;
use stack::wire::tcp::{TcpControl, TcpRepr};
use tcp_pair::{is, pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);

#[test]
fn a_fin_that_overtakes_its_data_closes_the_receiver_when_the_data_arrives() {
    for header_prediction in [false, true] {
        let config = TcpConfig {
            header_prediction,
            ..TcpConfig::default()
        };
        let mut p = Pair::established(config.clone(), config, 5 * MS);
        // A's last 100 octets and its FIN leave together; the data segment
        // is held 3 ms on the link, so B gets the FIN (at SEQ + 100) first.
        p.fate = Box::new(|dir, seg: &Segment| {
            let late = dir == Dir::AtoB && !seg.payload.is_empty();
            vec![if late { 3 * MS } else { Duration::ZERO }]
        });
        p.app_a.to_write = pattern(100);
        p.app_a.close_when_written = true;
        p.kick();
        let sent: Vec<_> = p.sent(Dir::AtoB).iter().map(|s| s.seg.clone()).collect();
        let fin = sent.last().expect("A sent");
        assert!(is(fin, TcpControl::Fin));
        assert!(fin.payload.is_empty(), "the FIN goes alone, after the data");
        p.run_until(|p| p.app_b.read.len() == 100);
        assert_eq!(
            p.b.state(),
            State::CloseWait,
            "header prediction {header_prediction}: the early FIN is applied \
             when the data before it arrives"
        );
        p.run_until(|p| p.a.state() == State::FinWait2);
        assert_eq!(
            p.a.counters().retransmits,
            0,
            "header prediction {header_prediction}: the FIN was acknowledged \
             without a retransmission"
        );
        assert!(p.app_b.read == pattern(100));
    }
}

/// A (closing first) and B established, B's application never closing:
/// A reaches FIN-WAIT-2 and B CLOSE-WAIT, for good unless A's bound ends it.
fn a_waits_in_fin_wait_2(release: bool) -> Pair {
    let config = TcpConfig {
        timers: TimerConfig {
            fin_wait_2: Duration::from_secs(10),
            ..TimerConfig::default()
        },
        ..TcpConfig::default()
    };
    let mut p = Pair::established(config, TcpConfig::default(), 5 * MS);
    if release {
        p.a.release();
    } else {
        p.a.close();
    }
    p.kick();
    p.run_until(|p| p.a.state() == State::FinWait2 && p.b.state() == State::CloseWait);
    p
}

#[test]
fn a_released_connection_leaves_fin_wait_2_after_its_bound_and_resets_the_peer() {
    let mut p = a_waits_in_fin_wait_2(true);
    let entered = p.now();
    assert_eq!(p.a.poll_at(), Some(entered.after(Duration::from_secs(10))));
    p.run_to(entered.after(Duration::from_millis(9_999)));
    assert_eq!(p.a.state(), State::FinWait2, "not before the bound");
    p.run_to(entered.after(Duration::from_secs(11)));
    assert_eq!(p.a.state(), State::Closed);
    assert_eq!(p.a.error(), Some(ConnectionError::TimedOut));
    assert_eq!(p.a.poll_at(), None, "no timer outlives it");
    let rst = p.sent(Dir::AtoB).last().expect("A sent").seg.clone();
    assert!(is(&rst, TcpControl::Rst), "{rst:?}");
    assert_eq!(p.b.state(), State::Closed, "the peer learns from the RST");
    assert_eq!(p.b.error(), Some(ConnectionError::Reset));
}

#[test]
fn a_half_closed_connection_waits_in_fin_wait_2_as_long_as_the_peer_likes() {
    let mut p = a_waits_in_fin_wait_2(false);
    assert_eq!(p.a.poll_at(), None, "no bound on a half close");
    // B may still send, and A still reads, long after the bound.
    let later = p.now().after(Duration::from_secs(600));
    p.run_to(later);
    p.app_b.to_write = pattern(1000);
    p.app_b.close_when_written = true;
    p.kick();
    p.run_until(|p| p.a.state() == State::TimeWait);
    assert!(p.app_a.read == pattern(1000));
}

#[test]
fn release_in_fin_wait_2_starts_the_bound_then() {
    let mut p = a_waits_in_fin_wait_2(false);
    let later = p.now().after(Duration::from_secs(600));
    p.run_to(later);
    p.a.release();
    p.kick();
    assert_eq!(p.a.poll_at(), Some(later.after(Duration::from_secs(10))));
    p.run_to(later.after(Duration::from_secs(10)));
    assert_eq!(p.a.state(), State::Closed);
}

/// A in TIME-WAIT after an orderly close it began; returns it with
/// RCV.NXT and the TSval of B's FIN (A's TS.Recent), if timestamps were on.
fn a_in_time_wait(timestamps: bool) -> (Pair, SeqNumber, Option<u32>) {
    let config = TcpConfig {
        timestamps,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(config.clone(), config, 5 * MS);
    p.a.close();
    p.kick();
    p.run_until(|p| p.a.state() == State::FinWait2 && p.b.state() == State::CloseWait);
    p.b.close();
    p.kick();
    p.run_until(|p| p.a.state() == State::TimeWait && p.b.state() == State::Closed);
    let fin = p
        .sent(Dir::BtoA)
        .into_iter()
        .rfind(|s| is(&s.seg, TcpControl::Fin))
        .expect("B's FIN")
        .seg
        .header
        .clone();
    let rcv_nxt = p.a.sequence_points().2;
    assert_eq!(rcv_nxt, fin.seq_number + 1);
    (p, rcv_nxt, fin.timestamp.map(|(val, _)| val))
}

/// A SYN from B's port to A's at `seq`, with `tsval` if any.
fn syn_at(seq: SeqNumber, tsval: Option<u32>) -> TcpRepr<'static> {
    let mut syn = TcpRepr::bare(80, 40000, seq);
    syn.control = TcpControl::Syn;
    syn.window_len = 65535;
    syn.timestamp = tsval.map(|val| (val, 0));
    syn
}

#[test]
fn rfc_6191_a_newer_timestamp_or_sequence_number_lets_a_syn_end_time_wait() {
    let (p, rcv_nxt, recent) = a_in_time_wait(true);
    let recent = recent.expect("timestamps on");
    let (newer, older) = (rcv_nxt + 1000, rcv_nxt - 1000);
    let cases = [
        // (SYN's sequence number, its TSval, the new incarnation uses
        // timestamps, accepted)
        (older, Some(recent + 1), true, true),
        (newer, Some(recent - 1), true, false),
        (newer, Some(recent), true, true),
        (older, Some(recent), true, false),
        // The new incarnation without timestamps: the sequence number.
        (newer, Some(recent - 1), false, true),
        (older, Some(recent + 1), false, false),
        (newer, None, true, true),
        (older, None, true, false),
        // "Greater than the last sequence number seen" (the FIN's).
        (rcv_nxt, None, true, true),
        (rcv_nxt - 1, None, true, false),
    ];
    for (seq, tsval, timestamps_on, accepted) in cases {
        assert_eq!(
            p.a.time_wait_accepts_syn(&syn_at(seq, tsval), timestamps_on),
            accepted,
            "SYN at {seq:?} (RCV.NXT {rcv_nxt:?}), TSval {tsval:?} \
             (TS.Recent {recent}), timestamps {timestamps_on}"
        );
    }
    let mut syn_ack = syn_at(newer, Some(recent + 1));
    syn_ack.ack_number = Some(p.a.sequence_points().1);
    assert!(
        !p.a.time_wait_accepts_syn(&syn_ack, true),
        "a SYN-ACK never"
    );
    assert!(
        !p.b.time_wait_accepts_syn(&syn_at(newer, None), true),
        "only in TIME-WAIT"
    );

    // Without timestamps on the old incarnation, the sequence number alone.
    let (p, rcv_nxt, recent) = a_in_time_wait(false);
    assert_eq!(recent, None);
    assert!(p
        .a
        .time_wait_accepts_syn(&syn_at(rcv_nxt + 1, Some(1)), true));
    assert!(!p
        .a
        .time_wait_accepts_syn(&syn_at(rcv_nxt - 2, Some(u32::MAX / 2)), true));
}
