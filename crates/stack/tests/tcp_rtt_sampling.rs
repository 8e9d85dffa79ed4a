//! When a connection measures the round trip, on two connections back to
//! back on a `ManualClock`: RFC 6298 §5.7's 3 s timeout when the handshake
//! gave no sample because the SYN or SYN-ACK was retransmitted.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::wire::tcp::TcpControl;
use tcp_pair::{Dir, Pair};

const MS: Duration = Duration::from_millis(1);

fn no_timestamps() -> TcpConfig {
    TcpConfig {
        timestamps: false,
        ..TcpConfig::default()
    }
}

/// A pair whose first SYN (from A) or first SYN-ACK (from B) is lost.
fn handshake_losing_first(dir: Dir, config: TcpConfig) -> Pair {
    let mut p = Pair::new(config.clone(), config, 5 * MS);
    let mut lost = false;
    p.drop = Box::new(move |d, seg| {
        if d == dir && seg.header.control == TcpControl::Syn && !lost {
            lost = true;
            return true;
        }
        false
    });
    p.kick();
    p.run_until(|p| p.a.state() == State::Established && p.b.state() == State::Established);
    p
}

#[test]
fn after_a_syn_timeout_without_a_sample_the_rto_is_three_seconds() {
    // RFC 6298 §5.7: the SYN timed out, Karn's rule leaves the handshake
    // without a sample, so data transmission begins with RTO = 3 s.
    let p = handshake_losing_first(Dir::AtoB, no_timestamps());
    assert_eq!(p.a.counters().timeouts, 1);
    assert_eq!(p.a.srtt(), None, "Karn: no sample from a retransmitted SYN");
    assert_eq!(p.a.rto(), Duration::from_secs(3), "A, whose SYN timed out");
    // The passive side: its SYN-ACK timed out.
    let p = handshake_losing_first(Dir::BtoA, no_timestamps());
    assert!(p.b.counters().timeouts >= 1);
    assert_eq!(p.b.srtt(), None);
    assert_eq!(
        p.b.rto(),
        Duration::from_secs(3),
        "B, whose SYN-ACK timed out"
    );
    // A handshake without loss keeps its sample's RTO (1 s floor).
    let mut p = Pair::established(no_timestamps(), no_timestamps(), 5 * MS);
    p.kick();
    assert_eq!(p.a.srtt(), Some(10 * MS));
    assert_eq!(p.a.rto(), Duration::from_secs(1));
}
