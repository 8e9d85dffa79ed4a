//! Congestion-window validation on two connections back to back on a
//! `ManualClock`: a sender that does not fill its window does not grow it
//! (RFC 7661's non-validated phase, RFC 9438 §5.8), with Reno and CUBIC,
//! in slow start and in congestion avoidance; and a sender idle for longer
//! than the retransmission timeout starts again from the restart window
//! (RFC 5681 §4.1), while a shorter pause keeps its window.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::cc::{initial_window, CongestionControlKind};
use stack::tcp::tcb::{Segment, TcpConfig};
use tcp_pair::{pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);

fn cfg(kind: CongestionControlKind) -> TcpConfig {
    TcpConfig {
        congestion: kind,
        ..TcpConfig::default()
    }
}

/// A writes `len` more bytes; runs until B has read everything.
fn write(p: &mut Pair, len: usize) {
    let more = pattern(p.app_a.to_write.len() + len);
    p.app_a.to_write = more;
    p.kick();
    let want = p.app_a.to_write.len();
    p.run_until(|p| p.app_b.read.len() >= want);
    assert!(p.app_b.read == p.app_a.to_write, "bytes differ");
}

/// Drops A's `nth` (1-based) data segment, first copy only.
fn drop_nth_data_segment(nth: usize) -> tcp_pair::DropFilter {
    let mut seen = 0;
    Box::new(move |dir, seg: &Segment| {
        if dir == Dir::AtoB && !seg.payload.is_empty() {
            seen += 1;
            return seen == nth;
        }
        false
    })
}

/// One small write per round trip, `rounds` times: the flight is one
/// segment, far below cwnd.
fn trickle(p: &mut Pair, rounds: usize) {
    for _ in 0..rounds {
        write(p, 500);
    }
}

#[test]
fn an_application_limited_sender_does_not_grow_its_window_in_slow_start() {
    for kind in [CongestionControlKind::Reno, CongestionControlKind::Cubic] {
        let mut p = Pair::established(cfg(kind), cfg(kind), 5 * MS);
        let iw = p.a.cwnd();
        assert_eq!(iw, initial_window(p.a.send_mss() - 12));
        trickle(&mut p, 30);
        assert_eq!(
            p.a.cwnd(),
            iw,
            "{kind:?}: 30 one-segment flights grew cwnd from {iw} to {}",
            p.a.cwnd()
        );
        // A sender that fills the window grows it again.
        write(&mut p, 200_000);
        assert!(p.a.cwnd() > 4 * iw, "{kind:?}: cwnd {}", p.a.cwnd());
    }
}

#[test]
fn an_application_limited_sender_does_not_grow_its_window_in_congestion_avoidance() {
    for kind in [CongestionControlKind::Reno, CongestionControlKind::Cubic] {
        let mut p = Pair::established(cfg(kind), cfg(kind), 5 * MS);
        p.drop = drop_nth_data_segment(40);
        write(&mut p, 300_000);
        assert_eq!(p.a.counters().fast_retransmits, 1, "{kind:?}");
        let before = p.a.cwnd();
        // 60 one-segment round trips, each about 210 ms (B's delayed ACK):
        // more than 12 s in which CUBIC's curve would have run far ahead.
        trickle(&mut p, 60);
        assert_eq!(
            p.a.cwnd(),
            before,
            "{kind:?}: an application-limited sender grew cwnd from {before} to {}",
            p.a.cwnd()
        );
        // Filling the window again, CUBIC goes on along its curve from
        // where it stopped (§5.8: t leaves the limited time out), not
        // 12 s further on, where each round trip would add the most
        // §4.5 allows, half the window.
        let start = p.now();
        p.app_a.to_write = pattern(p.app_a.to_write.len() + 2_000_000);
        p.kick();
        p.run_to(start.after(30 * MS));
        let grown = p.a.cwnd() as f64 / before as f64;
        assert!(
            grown < 1.2,
            "{kind:?}: cwnd {before} → {} in three round trips",
            p.a.cwnd()
        );
    }
}

/// The data octets A sent at the instant `at`.
fn sent_at(p: &Pair, at: stack::time::Instant) -> usize {
    p.sent(Dir::AtoB)
        .iter()
        .filter(|s| s.at == at)
        .map(|s| s.seg.payload_len())
        .sum()
}

#[test]
fn after_an_idle_period_longer_than_the_rto_the_sender_restarts_from_the_restart_window() {
    for kind in [CongestionControlKind::Reno, CongestionControlKind::Cubic] {
        let mut p = Pair::established(cfg(kind), cfg(kind), 5 * MS);
        write(&mut p, 1 << 20);
        let big = p.a.cwnd();
        let iw = initial_window(p.a.send_mss() - 12);
        assert!(big > 20 * iw, "{kind:?}: cwnd {big}");
        // A pause shorter than the RTO (1 s): the window is kept.
        let resume = p.now().after(500 * MS);
        p.run_to(resume);
        write(&mut p, 200_000);
        let burst = sent_at(&p, resume);
        assert!(burst > 10 * iw, "{kind:?}: {burst} octets after 0.5 s");
        // Idle for 3 s, longer than the RTO: at most the restart window
        // leaves before the first ACK returns.
        let resume = p.now().after(3000 * MS);
        p.run_to(resume);
        assert!(p.a.cwnd() > 20 * iw);
        write(&mut p, 200_000);
        let burst = sent_at(&p, resume);
        assert!(
            burst <= iw,
            "{kind:?}: {burst} octets left at once after 3 s idle (restart window {iw})"
        );
    }
}
