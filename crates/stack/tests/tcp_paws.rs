//! The timestamp rules on arrival (RFC 7323 §3.2, §5), on two connections
//! back to back on a `ManualClock`: TS.Recent expires after 24 days idle
//! (§5.5), so a peer whose timestamp clock ran on past 2^31 ms is heard
//! again, while a segment older than TS.Recent is still dropped before;
//! and once timestamps are in use a segment without one is dropped
//! silently, a RST excepted (§3.2).

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::wire::tcp::{TcpControl, TcpRepr};
use tcp_pair::{Dir, Pair};

const MS: Duration = Duration::from_millis(1);
const DAY: Duration = Duration::from_secs(86_400);

fn established() -> Pair {
    let mut p = Pair::established(TcpConfig::default(), TcpConfig::default(), 5 * MS);
    p.kick();
    p.run_to(p.now().after(500 * MS));
    p
}

/// A data segment from A as A would send it now, with `tsval` (None: no
/// timestamps option).
fn from_a(p: &Pair, tsval: Option<u32>, payload: &'static [u8]) -> TcpRepr<'static> {
    let (_, a_nxt, a_rcv) = p.a.sequence_points();
    let mut seg = TcpRepr::bare(40000, 80, a_nxt);
    seg.ack_number = Some(a_rcv);
    seg.window_len = 1000;
    seg.payload = payload;
    seg.timestamp = tsval.map(|v| (v, 0));
    seg
}

/// The TSval A's last segment carried (B's TS.Recent).
fn last_tsval(p: &Pair) -> u32 {
    p.sent(Dir::AtoB)
        .last()
        .and_then(|s| s.seg.header.timestamp)
        .expect("A's segments carry timestamps")
        .0
}

#[test]
fn after_24_days_idle_ts_recent_expires_and_the_peer_is_heard_again() {
    let mut p = established();
    // 25 days on, A's millisecond clock has run 2.16e9 past TS.Recent,
    // beyond 2^31: by PAWS's serial comparison its TSval is "older".
    let idle = p.now().after(25 * DAY);
    p.clock.set(idle);
    p.app_a.to_write = vec![9; 3000];
    p.kick();
    p.run_to(idle.after(1000 * MS));
    assert_eq!(
        p.app_b.read.len(),
        3000,
        "B took {} of 3000 bytes; {} PAWS drops",
        p.app_b.read.len(),
        p.b.counters().paws_drops
    );
    assert_eq!(p.b.counters().paws_drops, 0);
    assert_eq!(p.b.state(), State::Established);
}

#[test]
fn within_24_days_an_older_timestamp_is_still_dropped_and_after_them_taken() {
    let mut p = established();
    let recent = last_tsval(&p);
    let t = p.now().after(23 * DAY);
    p.clock.set(t);
    assert!(
        p.inject(true, &from_a(&p, Some(recent - 1), b"stale"))
            .len()
            == 1
    );
    assert_eq!(p.b.counters().paws_drops, 1, "23 days: still PAWS");
    assert_eq!(p.b.recv_queued(), 0);
    let t = t.after(2 * DAY);
    p.clock.set(t);
    p.inject(true, &from_a(&p, Some(recent - 1), b"taken"));
    assert_eq!(p.b.counters().paws_drops, 1, "25 days: TS.Recent expired");
    assert_eq!(p.b.recv_queued(), 5);
}

#[test]
fn once_timestamps_are_in_use_a_segment_without_one_is_dropped_silently() {
    let mut p = established();
    let out = p.inject(true, &from_a(&p, None, b"bare"));
    assert!(out.is_empty(), "dropped silently, not answered: {out:?}");
    assert_eq!(p.b.recv_queued(), 0, "its data was taken");
    assert_eq!(p.b.counters().timestamp_missing_drops, 1);
    // With its timestamp the same segment is taken.
    let ts = last_tsval(&p);
    p.inject(true, &from_a(&p, Some(ts), b"bare"));
    assert_eq!(p.b.recv_queued(), 4);
    // A RST needs none (§3.2).
    let (_, a_nxt, _) = p.a.sequence_points();
    let mut rst = TcpRepr::bare(40000, 80, a_nxt + 4);
    rst.control = TcpControl::Rst;
    p.inject(true, &rst);
    assert_eq!(p.b.state(), State::Closed);
}
