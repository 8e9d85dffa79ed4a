//! The connection counters the interop rows read (retransmitted bytes,
//! the most octets in flight, zero windows advertised), pinned on two
//! connections back to back on a `ManualClock` against the segments each
//! end actually sent.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::cc::CongestionControlKind;
use stack::tcp::tcb::{RecoveryKind, Segment, TcpConfig};
use stack::tcp::window::ReceiverSws;
use stack::wire::tcp::TcpControl;
use tcp_pair::{pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);

/// Drops the `nths` (1-based) first copies of the data segments A sends.
fn drop_data_segments(nths: Vec<usize>) -> tcp_pair::DropFilter {
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
        nths.contains(&first_seqs.len())
    })
}

#[test]
fn retransmitted_bytes_are_the_payload_of_the_segments_sent_again() {
    let config = TcpConfig {
        recovery: RecoveryKind::Sack,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(config.clone(), config, 5 * MS);
    p.drop = drop_data_segments(vec![30, 32, 34]);
    p.app_a.to_write = pattern(400_000);
    p.kick();
    p.run_until(|p| p.app_b.read.len() >= 400_000);
    assert!(p.app_b.read == pattern(400_000));
    let dropped: u64 = p
        .log
        .iter()
        .filter(|s| s.dropped)
        .map(|s| s.seg.payload.len() as u64)
        .sum();
    let a = p.a.counters();
    assert_eq!(a.retransmits, 3, "{a:?}");
    assert_eq!(dropped, 3 * 1448);
    assert_eq!(a.retransmitted_bytes, dropped, "{a:?}");
    assert_eq!(p.b.counters().retransmitted_bytes, 0);
}

#[test]
fn max_in_flight_is_the_largest_unacknowledged_span() {
    let config = TcpConfig {
        recv_buffer: 4 << 20,
        send_buffer: 8 << 20,
        congestion: CongestionControlKind::None,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(config.clone(), config, 20 * MS);
    p.app_a.to_write = pattern(6 << 20);
    p.kick();
    p.run_until(|p| p.app_b.read.len() >= 6 << 20);
    // At each of A's sends, the span from the newest ACK delivered to A
    // by then (sent `delay` earlier) to the end of what A has sent.
    // ACKs delivered at the very instant of a send may be taken before or
    // after it (several arrive at once): bound the span both ways.
    let delivered_by = |t, same_instant: bool| {
        p.log
            .iter()
            .filter(|s| s.dir == Dir::BtoA && !s.dropped)
            .filter(|s| s.at.after(p.delay) < t || (same_instant && s.at.after(p.delay) == t))
            .filter_map(|s| s.seg.header.ack_number)
            .map(|a| a.0)
            .max()
    };
    let data: Vec<_> = p
        .sent(Dir::AtoB)
        .into_iter()
        .filter(|s| !s.seg.payload.is_empty())
        .collect();
    let first = data[0].seg.header.seq_number.0;
    let mut high = first;
    let (mut at_least, mut at_most) = (0u32, 0u32);
    for s in &data {
        high = high.max(s.seg.header.seq_number.0 + s.seg.payload.len() as u32);
        let newest = delivered_by(s.at, true).unwrap_or(first).max(first);
        let oldest = delivered_by(s.at, false).unwrap_or(first).max(first);
        at_least = at_least.max(high - newest);
        at_most = at_most.max(high - oldest);
    }
    let a = p.a.counters();
    assert!(a.max_in_flight > 1 << 20, "{a:?}");
    assert!(a.max_in_flight <= 4 << 20, "within B's window: {a:?}");
    assert!(
        (u64::from(at_least)..=u64::from(at_most)).contains(&a.max_in_flight),
        "{a:?} not in {at_least}..={at_most}"
    );
    assert_eq!(p.b.counters().max_in_flight, 0, "B sent no data");
}

#[test]
fn zero_windows_sent_counts_each_segment_advertising_a_closed_window() {
    let b_config = TcpConfig {
        recv_buffer: 8192,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(TcpConfig::default(), b_config, 5 * MS);
    p.app_b.auto_read = false;
    p.app_a.to_write = pattern(40_000);
    p.kick();
    p.run_until(|p| p.a.counters().window_probes == 2);
    let zero: u64 = p
        .sent(Dir::BtoA)
        .iter()
        .filter(|s| s.seg.header.control == TcpControl::None && s.seg.header.window_len == 0)
        .count() as u64;
    let b = p.b.counters();
    assert!(
        zero >= 2,
        "the closing ACK and the first probe's answer (the second probe is on the link): {zero}"
    );
    assert_eq!(b.zero_windows_sent, zero, "{b:?}");
    assert_eq!(p.a.counters().zero_windows_sent, 0);
    p.app_b.auto_read = true;
    p.kick();
    p.run_until(|p| p.app_b.read.len() == 40_000);
    assert!(p.app_b.read == pattern(40_000));
    assert_eq!(p.b.counters().zero_windows_sent, zero, "none once reading");
}

#[test]
fn a_zero_window_probe_does_not_make_the_data_after_it_a_retransmission() {
    let b_config = TcpConfig {
        recv_buffer: 8192,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(TcpConfig::default(), b_config, 5 * MS);
    p.app_b.auto_read = false;
    p.app_a.to_write = pattern(40_000);
    p.kick();
    p.run_until(|p| p.a.counters().window_probes == 2);
    p.app_b.auto_read = true;
    p.kick();
    p.run_until(|p| p.app_b.read.len() == 40_000);
    assert!(p.app_b.read == pattern(40_000));
    let a = p.a.counters();
    assert_eq!(a.timeouts, 0, "{a:?}");
    assert_eq!(
        (a.retransmits, a.retransmitted_bytes),
        (0, 0),
        "nothing was lost: the probe's octet sent again when the window \
         opened is not a retransmission ({a:?})"
    );
}

/// The SWS counters against the segments B sent: a reader taking 512
/// bytes at a time from a full 8 KB buffer moves B's right edge by a read
/// or a few at a time with receiver SWS avoidance off (small updates),
/// and by at least min(4096, MSS) with it on (none small).
#[test]
fn small_window_updates_count_the_right_edge_moves_below_rfc1122s_step() {
    for sws in [ReceiverSws::Off, ReceiverSws::Rfc1122] {
        let b_config = TcpConfig {
            recv_buffer: 8192,
            receiver_sws: sws,
            ..TcpConfig::default()
        };
        let mut p = Pair::established(TcpConfig::default(), b_config, 5 * MS);
        p.app_b.auto_read = false;
        p.app_a.to_write = pattern(40_000);
        p.kick();
        p.run_until(|p| p.b.recv_queued() == 8192);
        let mut read = 0;
        while read < 40_000 {
            let mut buf = [0u8; 512];
            read += p.b.recv(&mut buf);
            let out = p.b.poll_output(p.now());
            p.transmit(Dir::BtoA, out);
            let t = p.now().after(MS);
            p.run_to(t);
        }
        // Right-edge moves from the log: ACK + window, from B's first ACK.
        let mut edge: Option<u32> = None;
        let mut moves = Vec::new();
        for s in p.sent(Dir::BtoA) {
            let Some(ack) = s.seg.header.ack_number else {
                continue;
            };
            let e = ack.0 + u32::from(s.seg.header.window_len);
            let prev = *edge.get_or_insert(ack.0);
            if e > prev {
                moves.push(e - prev);
                edge = Some(e);
            }
        }
        let b = p.b.counters().sws;
        let small = moves.iter().filter(|d| **d < 1460).count() as u64;
        assert_eq!(b.window_updates, moves.len() as u64, "{sws:?}");
        assert_eq!(b.small_window_updates, small, "{sws:?}");
        match sws {
            ReceiverSws::Off => {
                assert!(small >= 3, "{moves:?}");
                assert!(b.min_window_update <= Some(512), "{b:?}");
            }
            ReceiverSws::Rfc1122 => {
                assert_eq!(small, 0, "{moves:?}");
                assert!(b.min_window_update >= Some(1460), "{b:?}");
            }
        }
    }
}
