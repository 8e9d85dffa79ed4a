//! Header prediction as Van Jacobson wrote it (Net/3's `tcps_predack`),
//! on two connections back to back on the injected clock: a pure ACK is
//! predicted only while cwnd is at least the peer's window, and a
//! predicted ACK does not grow cwnd (only the full path does).

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::cc::CongestionControlKind;
use stack::tcp::tcb::TcpConfig;
use tcp_pair::Pair;

const MS: Duration = Duration::from_millis(1);

/// A's stream of `bytes` into B, whose receive buffer is `window`:
/// (A's predicted ACKs, A's cwnd at the end).
fn stream(window: usize, bytes: usize) -> (u64, usize) {
    let a = TcpConfig {
        congestion: CongestionControlKind::Reno,
        header_prediction: true,
        ..TcpConfig::default()
    };
    let b = TcpConfig {
        recv_buffer: window,
        ..TcpConfig::default()
    };
    let mut p = Pair::established(a, b, 5 * MS);
    p.app_b.auto_read = true;
    p.app_a.to_write = vec![7u8; bytes];
    p.kick();
    p.run_until(|p| p.app_b.read.len() == bytes);
    assert!(p.app_b.read.iter().all(|&x| x == 7));
    (p.a.counters().header_prediction_hits, p.a.cwnd())
}

#[test]
fn a_pure_ack_is_predicted_only_once_cwnd_reaches_the_window_and_then_cwnd_stays() {
    let mss = TcpConfig::default().mss as usize;
    // B's window of 64 KB: cwnd passes it within a few round trips, then
    // ACKs are predicted and cwnd grows no further. (At 8 KB none was:
    // B's window, advertised before its application read, changed from
    // ACK to ACK, and VJ's predicate wants it unchanged.)
    let (hits, cwnd) = stream(64 * 1024, 4 << 20);
    eprintln!("64 KB window: {hits} predicted ACKs, cwnd {cwnd} at the end");
    assert!(hits > 100, "{hits} predicted");
    assert!(
        cwnd <= 64 * 1024 + 2 * mss,
        "cwnd grew to {cwnd} on predicted ACKs"
    );
    // A window far above what 4 MB lets cwnd reach: no ACK is predicted.
    let (hits, cwnd) = stream(16 << 20, 4 << 20);
    eprintln!("16 MB window: {hits} predicted ACKs, cwnd {cwnd} at the end");
    assert_eq!(hits, 0, "predicted with cwnd {cwnd} under the window");
}
