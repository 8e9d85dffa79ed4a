use std::collections::VecDeque;
use std::time::Duration;

use super::super::cc::{CongestionControl, CongestionControlKind, Cubic};
use super::super::isn::{FourTuple, IsnGenerator, IsnPolicy};
use super::super::state::State;
use super::super::tcb::{Connection, TcpConfig};
use crate::time::Instant;

const MS: Duration = Duration::from_millis(1);

/// An established connection of `kind` with `flight` octets sent and
/// unacknowledged (and as many more queued), its estimator at SRTT
/// 100 ms.
fn sender(kind: CongestionControlKind, flight: usize) -> Connection {
    let tuple = FourTuple {
        local: "10.0.0.1:40000".parse().unwrap(),
        remote: "10.0.0.2:5001".parse().unwrap(),
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [5; 32]);
    let config = TcpConfig {
        congestion: kind,
        timestamps: false,
        ..TcpConfig::default()
    };
    let mut c = Connection::open_active(config, tuple, &isn, Instant::ZERO);
    c.state = State::Established;
    c.snd_mss = 1000;
    c.snd_wnd = 1 << 30;
    c.max_snd_wnd = c.snd_wnd;
    c.send_buf = VecDeque::from(vec![7u8; 2 * flight]);
    c.snd_una = c.iss + 1;
    c.snd_nxt = c.snd_una + flight;
    c.snd_max = c.snd_nxt;
    c.scoreboard.on_send(c.snd_max);
    c.rtt.sample(100 * MS);
    c
}

/// CUBIC just after a loss at 100 segments: cwnd 70, W_max 100, in
/// congestion avoidance.
fn cubic_after_loss() -> Cubic {
    let mut c = Cubic::new(1000).with_windows(100_000, 1000);
    c.on_fast_retransmit(100_000, Instant::ZERO);
    c
}

#[test]
fn cubic_aims_at_w_cubic_t_plus_the_smoothed_rtt_not_the_latest_sample() {
    let mut c = sender(CongestionControlKind::Cubic, 100_000);
    c.cc = Box::new(cubic_after_loss());
    let t0 = Instant(10_000_000_000);
    // The first ACK starts the epoch; the second, 2 s later, acknowledges
    // a segment timed from t0: a 2 s sample against an SRTT of 100 ms.
    let mut out = Vec::new();
    let first = c.snd_una + 1000;
    c.on_new_ack(first, t0, &mut out);
    c.rtt_timer.on_send(first + 1000, t0);
    let t1 = t0.after(2000 * MS);
    c.on_new_ack(first + 1000, t1, &mut out);
    let srtt = c.srtt().expect("an SRTT");
    assert!(srtt < 500 * MS, "SRTT {srtt:?} after the 2 s sample");
    let mut by_srtt = cubic_after_loss();
    by_srtt.on_ack(1000, Some(100 * MS), t0);
    by_srtt.on_ack(1000, Some(srtt), t1);
    let mut by_sample = cubic_after_loss();
    by_sample.on_ack(1000, Some(100 * MS), t0);
    by_sample.on_ack(1000, Some(2000 * MS), t1);
    assert_ne!(
        by_srtt.cwnd(),
        by_sample.cwnd(),
        "the test tells them apart"
    );
    assert_eq!(
        c.cwnd(),
        by_srtt.cwnd(),
        "cwnd {} follows W_cubic(t + SRTT) ({}), not the sample ({})",
        c.cwnd(),
        by_srtt.cwnd(),
        by_sample.cwnd()
    );
}
