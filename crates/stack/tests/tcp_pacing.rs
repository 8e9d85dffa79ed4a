//! Rate-based flow control on two connections back to back on a
//! `ManualClock` (the pacer's timer is what moves the clock between
//! ACKs): the paced sender's data segments leave one segment time apart
//! at the rate, its own `data_out` span agrees with the segments on the
//! link, window flow control is far faster over the same path, and the
//! window still bounds what is in flight when the rate is above what it
//! allows.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::cc::CongestionControlKind;
use stack::tcp::pacing::FlowControl;
use stack::tcp::tcb::{TcpConfig, MAX_SUPER_SEGMENT};
use stack::time::Instant;
use tcp_pair::{pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);
const BYTES: usize = 1 << 20;

/// A sends `BYTES` to B with `flow` over a link of `delay` each way;
/// returns the pair when B has read everything. Nagle is off, so the
/// short last segment does not wait for B's delayed ACK (200 ms): when
/// data leaves is the pacer's and the windows' decision alone.
fn transfer(
    flow: FlowControl,
    congestion: CongestionControlKind,
    recv_buffer: usize,
    delay: Duration,
) -> Pair {
    let mut a = TcpConfig {
        flow_control: flow,
        congestion,
        send_buffer: 4 << 20,
        ..TcpConfig::default()
    };
    a.sender.nagle = false;
    let b = TcpConfig {
        recv_buffer,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(a, b, delay);
    p.app_a.to_write = pattern(BYTES);
    p.kick();
    p.run_until(|p| p.app_b.read.len() >= BYTES);
    assert!(p.app_b.read == pattern(BYTES), "the bytes arrive intact");
    p
}

/// (departure, payload) of every data segment A sent.
fn data_segments(p: &Pair) -> Vec<(Instant, usize)> {
    p.sent(Dir::AtoB)
        .into_iter()
        .filter(|s| !s.seg.payload.is_empty())
        .map(|s| (s.at, s.seg.payload.len()))
        .collect()
}

/// Payload bits per second on the link: all but the last segment's
/// octets over first to last departure.
fn link_rate(segs: &[(Instant, usize)]) -> f64 {
    let bytes: usize = segs[..segs.len() - 1].iter().map(|s| s.1).sum();
    let span = segs.last().unwrap().0.since(segs[0].0).as_secs_f64();
    bytes as f64 * 8.0 / span
}

#[test]
fn a_paced_sender_sends_at_the_rate_one_segment_time_apart() {
    // No congestion control: only the pacer and B's 4 MB window decide,
    // as Abrams & Chen's rate-based sender.
    let rate = 20_000_000;
    let p = transfer(
        FlowControl::rate(rate),
        CongestionControlKind::None,
        4 << 20,
        2 * MS,
    );
    let segs = data_segments(&p);
    let on_link = link_rate(&segs);
    assert!((on_link / rate as f64 - 1.0).abs() < 0.001, "{on_link}");
    // The clock moved only to events: each segment left exactly when the
    // one before had used its time at the rate (1448 octets: 579.2 µs).
    for w in segs.windows(2) {
        let gap = w[1].0.since(w[0].0).as_nanos() as f64;
        let due = w[0].1 as f64 * 8.0 / rate as f64 * 1e9;
        assert!((gap - due).abs() <= 1.0, "{gap} ns after {} octets", w[0].1);
    }
    // The connection's own span says the same.
    let span = p.a.counters().data_out;
    assert_eq!(span.bytes as usize, BYTES);
    assert_eq!(span.first, Some(segs[0].0));
    let counted = span.rate_bps().unwrap();
    assert!(
        (counted / on_link - 1.0).abs() < 1e-9,
        "{counted} against {on_link}"
    );
    // And the pacer's timer, not a retransmission, kept it going.
    assert_eq!(p.a.counters().retransmits, 0);
}

#[test]
fn with_reno_slow_start_holds_data_back_and_the_pacer_makes_it_up_within_its_burst() {
    let rate = 20_000_000;
    let p = transfer(
        FlowControl::rate(rate),
        CongestionControlKind::Reno,
        4 << 20,
        2 * MS,
    );
    let segs = data_segments(&p);
    // cwnd limits the first round trips (slow start from the initial
    // window): segments wait for ACKs, far longer than a segment's time
    // at the rate (579 µs) ...
    let longest_early_gap = segs[..20]
        .windows(2)
        .map(|w| w[1].0.since(w[0].0))
        .max()
        .unwrap();
    assert!(longest_early_gap > 2 * MS, "{longest_early_gap:?}");
    // ... and the pacer, behind by less than its burst allowance, makes
    // the time up: the transfer as a whole is at the rate, nothing given up.
    let whole = link_rate(&segs);
    assert!((whole / rate as f64 - 1.0).abs() < 0.001, "{whole}");
    assert_eq!(p.a.counters().pacing_dropped_ns, 0);
}

#[test]
fn window_flow_control_on_the_same_path_is_far_faster_than_a_low_rate() {
    let reno = CongestionControlKind::Reno;
    let paced = transfer(FlowControl::rate(20_000_000), reno, 4 << 20, 2 * MS);
    let window = transfer(FlowControl::Window, reno, 4 << 20, 2 * MS);
    let paced_rate = link_rate(&data_segments(&paced));
    let window_rate = link_rate(&data_segments(&window));
    eprintln!("window {window_rate:.3e} against paced {paced_rate:.3e} bit/s");
    assert!(
        window_rate > 5.0 * paced_rate,
        "{window_rate} vs {paced_rate}"
    );
}

#[test]
fn the_window_still_bounds_what_is_in_flight_above_the_rate_it_allows() {
    // 64 KB over a 20 ms round trip allows about 26 Mbit/s: a 1 Gbit/s
    // pacer is bounded by the window, not the rate.
    let p = transfer(
        FlowControl::rate(1_000_000_000),
        CongestionControlKind::None,
        64 << 10,
        10 * MS,
    );
    let on_link = link_rate(&data_segments(&p));
    let a = p.a.counters();
    assert!(a.max_in_flight <= 64 << 10, "{a:?}");
    assert!(on_link < 30e6, "{on_link}");
}

#[test]
fn on_a_device_that_cuts_super_segments_a_paced_one_is_at_most_the_burst() {
    let rate = 20_000_000;
    let mut a = TcpConfig {
        flow_control: FlowControl::rate(rate),
        congestion: CongestionControlKind::None,
        send_buffer: 4 << 20,
        ..TcpConfig::default()
    };
    a.sender.nagle = false;
    let b = TcpConfig {
        recv_buffer: 4 << 20,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(a, b, 2 * MS);
    p.a.allow_super_segments(MAX_SUPER_SEGMENT);
    p.app_a.to_write = pattern(BYTES);
    p.kick();
    p.run_until(|p| p.app_b.read.len() >= BYTES);
    assert!(p.app_b.read == pattern(BYTES));
    let segs = data_segments(&p);
    // 10 ms at 20 Mbit/s is 25,000 octets: 17 segments of 1448.
    let largest = segs.iter().map(|s| s.1).max().unwrap();
    assert_eq!(largest, 17 * 1448, "super-segments cut to the burst");
    let on_link = link_rate(&segs);
    assert!((on_link / rate as f64 - 1.0).abs() < 0.001, "{on_link}");
}
