//! The loss detectors beyond duplicate ACKs (`tcp::loss`), on two
//! connections over a 5 ms link on a `ManualClock`: the tail loss probe
//! recovers a lost last segment and lost duplicate ACKs in about two round
//! trips where the timer needs its floor, and a retransmission lost in
//! recovery is found from SACKs of later data and sent again, under
//! NewReno and under RFC 6675, without a timeout. Each case also runs
//! with its switch off, to show the timeout it replaces.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::collections::HashMap;
use std::time::Duration;

use stack::tcp::tcb::{RecoveryKind, Segment, TcpConfig};
use tcp_pair::{pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);

/// Drops A's data segments starting at the `nth` (1-based) distinct
/// sequence number, its first `copies` transmissions.
fn drop_copies_of(nth: usize, copies: usize) -> tcp_pair::DropFilter {
    let mut order: Vec<u32> = Vec::new();
    let mut times: HashMap<u32, usize> = HashMap::new();
    Box::new(move |dir, seg: &Segment| {
        if dir != Dir::AtoB || seg.payload.is_empty() {
            return false;
        }
        let seq = seg.header.seq_number.0;
        if !order.contains(&seq) {
            order.push(seq);
        }
        let sent = times.entry(seq).or_insert(0);
        *sent += 1;
        order.get(nth - 1) == Some(&seq) && *sent <= copies
    })
}

fn transfer(p: &mut Pair, bytes: usize) {
    p.app_a.to_write = pattern(bytes);
    p.kick();
    p.run_until(|p| p.app_b.read.len() >= bytes);
    assert!(p.app_b.read == pattern(bytes), "bytes differ");
}

/// When A sent its last data segment to B (first copy or not).
fn data_sends(p: &Pair) -> Vec<(stack::time::Instant, u32)> {
    p.log
        .iter()
        .filter(|s| s.dir == Dir::AtoB && !s.seg.payload.is_empty())
        .map(|s| (s.at, s.seg.header.seq_number.0))
        .collect()
}

#[test]
fn a_lost_last_segment_is_recovered_by_the_tail_loss_probe_without_a_timeout() {
    for tlp in [true, false] {
        let c = TcpConfig {
            tail_loss_probe: tlp,
            ..TcpConfig::default()
        };
        let mut p = Pair::established(c, TcpConfig::default(), 5 * MS);
        let mss = p.a.send_mss() - 12;
        p.drop = drop_copies_of(10, 1);
        let started = p.now();
        transfer(&mut p, 10 * mss);
        let a = p.a.counters();
        let sends = data_sends(&p);
        let (last_at, _) = *sends.last().unwrap();
        if tlp {
            assert_eq!((a.timeouts, a.loss_probes), (0, 1), "{a:?}");
            assert_eq!(a.retransmits, 1, "the probe resent the last segment");
            // The probe went 2·SRTT (+ 200 ms for one segment in flight)
            // after the last ACK, far short of the 1 s RTO floor.
            let srtt = p.a.srtt().unwrap();
            assert!(srtt >= 10 * MS && srtt < 20 * MS, "{srtt:?}");
            assert!(
                last_at.since(started) < Duration::from_millis(400),
                "probe at {:?}",
                last_at.since(started)
            );
        } else {
            assert_eq!((a.timeouts, a.loss_probes), (1, 0), "{a:?}");
            assert!(last_at.since(started) >= Duration::from_secs(1));
        }
    }
}

#[test]
fn lost_duplicate_acks_are_replaced_by_the_probes_ack_which_starts_fast_recovery() {
    // The 30th segment is lost, and so is every ACK B sends for the rest
    // of that flight: only the answer to what A sends next (the probe,
    // or the timer's retransmission) reaches A.
    for tlp in [true, false] {
        let c = TcpConfig {
            tail_loss_probe: tlp,
            ..TcpConfig::default()
        };
        let mut p = Pair::established(c, TcpConfig::default(), 5 * MS);
        let mss = p.a.send_mss() - 12;
        let mut data_filter = drop_copies_of(30, 1);
        let (mut lost_seen, mut acks_lost, mut a_spoke_again) = (false, false, false);
        p.drop = Box::new(move |dir, seg: &Segment| {
            if dir == Dir::AtoB {
                a_spoke_again |= acks_lost && !seg.payload.is_empty();
                let drop = data_filter(dir, seg);
                lost_seen |= drop;
                return drop;
            }
            let drop = lost_seen && !a_spoke_again;
            acks_lost |= drop;
            drop
        });
        transfer(&mut p, 45 * mss);
        let a = p.a.counters();
        if tlp {
            assert_eq!(a.timeouts, 0, "{a:?}");
            assert!(a.loss_probes >= 1, "{a:?}");
            assert_eq!(a.fast_retransmits, 1, "the probe's ACK SACKs enough: {a:?}");
        } else {
            assert_eq!(a.timeouts, 1, "{a:?}");
        }
    }
}

#[test]
fn a_lost_retransmission_is_found_from_later_sacks_and_sent_again_without_a_timeout() {
    for recovery in [RecoveryKind::NewReno, RecoveryKind::Sack] {
        for detect in [true, false] {
            let c = TcpConfig {
                recovery,
                lost_retransmit_detection: detect,
                ..TcpConfig::default()
            };
            let mut p = Pair::established(c, TcpConfig::default(), 5 * MS);
            // The 20th segment and its fast retransmission are lost.
            p.drop = drop_copies_of(20, 2);
            transfer(&mut p, 300_000);
            let a = p.a.counters();
            let lost_seq = p
                .log
                .iter()
                .find(|s| s.dropped)
                .unwrap()
                .seg
                .header
                .seq_number;
            let copies = p
                .log
                .iter()
                .filter(|s| s.dir == Dir::AtoB && s.seg.header.seq_number == lost_seq)
                .count();
            assert_eq!(
                copies, 3,
                "{recovery:?} {detect}: original, lost and repair"
            );
            if detect {
                assert_eq!(
                    (a.timeouts, a.lost_retransmits, a.fast_retransmits),
                    (0, 1, 1),
                    "{recovery:?} {a:?}"
                );
            } else {
                assert_eq!(
                    (a.timeouts, a.lost_retransmits),
                    (1, 0),
                    "{recovery:?} {a:?}"
                );
            }
        }
    }
}
