//! ACKs per batch (`Connection::on_segment_in_batch`, the default of
//! `TcpSockets`): a batch of in-order segments read together is answered
//! by one ACK after the batch instead of one per second segment, while an
//! out-of-order segment still draws its duplicate ACK at once (the peer's
//! fast retransmit counts them). Two connections back to back on a
//! `ManualClock`.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use stack::tcp::cc::CongestionControlKind;
use stack::tcp::tcb::{Segment, TcpConfig};
use std::time::Duration;
use tcp_pair::{pattern, Pair};

/// An established pair and a flight of A's data segments, not delivered
/// (A without congestion control, so the whole flight leaves at once).
fn flight(segments: usize) -> (Pair, Vec<Segment>) {
    let sender = TcpConfig {
        congestion: CongestionControlKind::None,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(sender, TcpConfig::default(), Duration::ZERO);
    let mss = p.a.send_mss();
    assert_eq!(p.a.send(&pattern(segments * mss)), segments * mss);
    let out: Vec<Segment> =
        p.a.poll_output(p.now())
            .into_iter()
            .filter(|s| !s.payload.is_empty())
            .collect();
    assert!(out.len() >= segments, "A sent {} segments", out.len());
    (p, out)
}

#[test]
fn ten_in_order_segments_in_a_batch_draw_one_ack_for_all_of_them() {
    let (mut p, flight) = flight(10);
    let now = p.now();
    for seg in &flight[..10] {
        let (out, deferred) = p.b.on_segment_in_batch(&seg.repr(), now);
        assert!(out.is_empty(), "nothing sent inside the batch: {out:?}");
        assert!(deferred);
    }
    let acks = p.b.poll_output(now);
    assert_eq!(acks.len(), 1, "one ACK after the batch: {acks:?}");
    let last = &flight[9];
    let end = last.header.seq_number + last.payload.len();
    assert_eq!(acks[0].header.ack_number, Some(end));
}

#[test]
fn the_same_segments_one_at_a_time_draw_an_ack_every_second_segment() {
    let (mut p, flight) = flight(10);
    let now = p.now();
    let acks: usize = flight[..10]
        .iter()
        .map(|seg| p.b.on_segment(&seg.repr(), now).len())
        .sum();
    assert_eq!(acks, 5);
}

#[test]
fn an_out_of_order_segment_in_a_batch_is_answered_at_once_with_a_duplicate_ack() {
    let (mut p, flight) = flight(4);
    let now = p.now();
    let (out, deferred) = p.b.on_segment_in_batch(&flight[0].repr(), now);
    assert!(out.is_empty() && deferred);
    // The second segment is lost: the third and fourth leave a gap.
    for seg in &flight[2..4] {
        let (out, deferred) = p.b.on_segment_in_batch(&seg.repr(), now);
        assert!(!deferred);
        let acks: Vec<_> = out.iter().filter(|s| s.payload.is_empty()).collect();
        assert_eq!(acks.len(), 1, "a duplicate ACK at once: {out:?}");
        assert_eq!(acks[0].header.ack_number, Some(flight[1].header.seq_number));
    }
}
