//! When a connection measures the round trip, on two connections back to
//! back on a `ManualClock`: RFC 6298 §5.7's 3 s timeout when the handshake
//! gave no sample because the SYN or SYN-ACK was retransmitted; with
//! timestamps (RFC 7323 §4), a sample from every ACK of new data, the
//! retransmitted data's ACK included (Karn's rule lifted).

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::state::State;
use stack::tcp::tcb::{Segment, TcpConfig};
use stack::tcp::window::{DelayedAckPolicy, SenderPolicy};
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

/// A sender without Nagle or tail loss probes, a receiver that
/// acknowledges every segment at once; timestamps as `ts` says.
fn eager(ts: bool) -> (TcpConfig, TcpConfig) {
    let a = TcpConfig {
        timestamps: ts,
        sender: SenderPolicy {
            nagle: false,
            ..SenderPolicy::default()
        },
        tail_loss_probe: false,
        ..TcpConfig::default()
    };
    let b = TcpConfig {
        timestamps: ts,
        delayed_ack: DelayedAckPolicy::Off,
        ..TcpConfig::default()
    };
    (a, b)
}

/// A sends one segment now; then, 6 ms later (B has sent its ACK, which
/// is still on the way), the path's one-way delay becomes `later` and A
/// sends a second. Returns A's SRTT once both are
/// acknowledged.
fn srtt_after_two_segments(ts: bool, later: Duration) -> Duration {
    let (a, b) = eager(ts);
    let mut p = Pair::established(a, b, 5 * MS);
    p.app_a.to_write = vec![1; 1000];
    p.kick();
    let t = p.now().after(6 * MS);
    p.run_to(t);
    p.delay = later;
    p.app_a.to_write.extend([2; 1000]);
    p.kick();
    p.run_until(|p| p.app_b.read.len() == 2000);
    p.run_until(|p| {
        let (una, nxt, _) = p.a.sequence_points();
        una == nxt
    });
    p.a.srtt().expect("an SRTT")
}

#[test]
fn with_timestamps_every_ack_of_new_data_gives_a_sample() {
    // The first segment is timed (10 ms); the second, sent while the first
    // was being timed, takes 100 ms. Without timestamps only one segment
    // per round trip is timed, so SRTT stays at 10 ms; with them the
    // second ACK gives a sample too (RFC 7323 §4).
    assert_eq!(srtt_after_two_segments(false, 50 * MS), 10 * MS);
    let srtt = srtt_after_two_segments(true, 50 * MS);
    assert!(
        srtt > 15 * MS && srtt < 100 * MS,
        "SRTT {srtt:?}: the second ACK (a 100 ms round trip) gave no sample"
    );
}

#[test]
fn with_timestamps_the_ack_of_a_retransmission_gives_a_sample() {
    // A's first data segment of three is lost: two duplicate ACKs are too
    // few for fast retransmit, so the timer (1 s) resends it and backs
    // the RTO off to 2 s. Its ACK ends the backoff only if it gives a
    // sample: with timestamps the echo names the copy (RFC 7323 §4);
    // without, Karn's rule leaves the RTO backed off.
    for ts in [false, true] {
        let (a, b) = eager(ts);
        let mut p = Pair::established(a, b, 5 * MS);
        let mut dropped = false;
        p.drop = Box::new(move |dir, seg: &Segment| {
            if dir == Dir::AtoB && !seg.payload.is_empty() && !dropped {
                dropped = true;
                return true;
            }
            false
        });
        p.app_a.to_write = vec![3; 3000];
        p.kick();
        p.run_until(|p| p.a.counters().timeouts == 1);
        assert_eq!(p.a.rto(), Duration::from_secs(2), "backed off");
        p.run_until(|p| {
            let (una, nxt, _) = p.a.sequence_points();
            una == nxt && p.app_b.read.len() == 3000
        });
        let want = if ts {
            Duration::from_secs(1)
        } else {
            Duration::from_secs(2)
        };
        assert_eq!(
            p.a.rto(),
            want,
            "timestamps {ts}: RTO after the retransmission's ACK"
        );
    }
}
