//! The sequence number a segment without data carries (RFC 9293 §3.10.7.4
//! sends `<SEQ=SND.NXT><ACK=RCV.NXT><CTL=ACK>`, where SND.NXT is the next
//! new octet). After a retransmission timeout this stack goes back to
//! SND.UNA (BSD's go-back-N), so its SND.NXT may sit below what the peer
//! has received; an ACK must then carry SND.MAX, as BSD's `tcp_output`
//! does, or the peer finds it left of its window and drops it, ACK field
//! and all. Found by `tcp_long_property` (issue 27): when both ends went
//! back at once, each dropped the other's ACKs and answered each with an
//! ACK of its own, forever.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use stack::tcp::tcb::TcpConfig;
use tcp_pair::{pattern, Pair};

/// A and B each send three full segments at once; all the data arrives,
/// every ACK is lost until both have timed out and gone back; then the
/// link is clean: the ACKs that follow are taken, and both transfers end
/// within a few round trips, not in an endless exchange of ACKs.
#[test]
fn after_both_ends_time_out_their_acks_are_still_acceptable_to_each_other() {
    let cfg = TcpConfig::default();
    let mut p = Pair::established(cfg.clone(), cfg, Duration::from_millis(10));
    let mss = p.a.send_mss() - 12;
    let losing = Rc::new(Cell::new(true));
    let lose = losing.clone();
    p.drop = Box::new(move |_, seg| lose.get() && seg.payload.is_empty());
    p.app_a.to_write = pattern(3 * mss);
    p.app_b.to_write = pattern(3 * mss);
    p.kick();
    p.run_until(|p| p.a.counters().timeouts >= 1 && p.b.counters().timeouts >= 1);
    let (a_una, a_nxt, _) = p.a.sequence_points();
    let (b_una, b_nxt, _) = p.b.sequence_points();
    assert!(a_nxt - a_una < 3 * mss, "A went back: {a_una:?} {a_nxt:?}");
    assert!(b_nxt - b_una < 3 * mss, "B went back: {b_una:?} {b_nxt:?}");
    assert_eq!(p.app_b.read, pattern(3 * mss), "B has all of A's data");
    assert_eq!(p.app_a.read, pattern(3 * mss), "A has all of B's data");
    losing.set(false);
    let healed = p.log.len();
    let settled = |p: &Pair| {
        p.a.sequence_points().0 == p.b.sequence_points().2
            && p.b.sequence_points().0 == p.a.sequence_points().2
    };
    for _ in 0..200 {
        if settled(&p) {
            break;
        }
        p.step();
    }
    let after = p.log.len() - healed;
    let (a_una, _, a_rcv) = p.a.sequence_points();
    let (b_una, _, b_rcv) = p.b.sequence_points();
    assert_eq!(
        (a_una, b_una),
        (b_rcv, a_rcv),
        "each end's data acknowledged after the heal ({after} segments since; A {:?}, B {:?})",
        p.a.counters(),
        p.b.counters()
    );
    assert!(after <= 20, "{after} segments to settle");
}

/// The RST of an abort is a segment without data too: after a timeout
/// took SND.NXT back below what the peer holds, it must carry SND.MAX, or
/// the peer finds it left of its window, drops it unheard (RFC 9293
/// §3.10.7.4, RFC 5961 §3) and keeps the connection forever. Found by the
/// issue's second review.
#[test]
fn an_abort_after_a_timeout_resets_a_peer_that_holds_everything_sent() {
    let cfg = TcpConfig::default();
    let mut p = Pair::established(cfg.clone(), cfg, Duration::from_millis(10));
    let mss = p.a.send_mss() - 12;
    // Every ACK B sends is lost: A's data all arrives, A times out.
    p.drop = Box::new(|dir, seg| matches!(dir, tcp_pair::Dir::BtoA) && seg.payload.is_empty());
    p.app_a.to_write = pattern(4 * mss);
    p.kick();
    p.run_until(|p| p.a.counters().timeouts >= 1);
    assert_eq!(p.app_b.read, pattern(4 * mss), "B holds all of A's data");
    let (a_una, a_nxt, _) = p.a.sequence_points();
    assert!(a_nxt - a_una < 4 * mss, "A went back: {a_una:?} {a_nxt:?}");
    let rst = p.a.abort().expect("a RST for an established connection");
    let replies = p.inject(true, &rst.repr());
    assert_eq!(
        p.b.state(),
        stack::tcp::state::State::Closed,
        "B took A's RST at {:?} (B's RCV.NXT {:?}); it replied {replies:?}",
        rst.header.seq_number,
        p.b.sequence_points().2
    );
}
