use std::collections::VecDeque;

use super::super::cc::CongestionControlKind;
use super::super::isn::{FourTuple, IsnGenerator, IsnPolicy};
use super::super::sack::Scoreboard;
use super::super::state::State;
use super::super::tcb::{Connection, RecoveryKind, TcpConfig};
use crate::time::Instant;

/// An established Reno sender in slow start with MSS 1460 (no
/// timestamps), 20 segments in flight, SACK on.
fn sender() -> Connection {
    let tuple = FourTuple {
        local: "10.0.0.1:40000".parse().unwrap(),
        remote: "10.0.0.2:5001".parse().unwrap(),
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [9; 32]);
    let config = TcpConfig {
        congestion: CongestionControlKind::Reno,
        recovery: RecoveryKind::Sack,
        timestamps: false,
        ..TcpConfig::default()
    };
    let mut c = Connection::open_active(config, tuple, &isn, Instant::ZERO);
    c.state = State::Established;
    c.snd_mss = 1460;
    c.sack_ok = true;
    c.cc = c.config.congestion.build(c.data_mss());
    c.snd_wnd = 1 << 20;
    c.max_snd_wnd = c.snd_wnd;
    let flight = 20 * 1460;
    c.send_buf = VecDeque::from(vec![1u8; flight]);
    c.snd_una = c.iss + 1;
    c.scoreboard = Scoreboard::new(c.snd_una, c.data_mss());
    c.snd_nxt = c.snd_una + flight;
    c.snd_max = c.snd_nxt;
    c.scoreboard.on_send(c.snd_max);
    c
}

#[test]
fn a_smaller_path_mtu_reaches_the_congestion_controller_and_the_scoreboard() {
    let mut c = sender();
    assert!(c.on_path_mtu(1000));
    assert_eq!(c.data_mss(), 960);
    // Slow start grows cwnd by at most one (new) MSS per ACK.
    let before = c.cwnd();
    let mut out = Vec::new();
    let now = Instant(1_000_000_000);
    let una = c.snd_una;
    c.on_new_ack(una + 1920, now, &mut out);
    assert_eq!(c.cwnd() - before, 960, "slow start added the old MSS");
    // 2880 SACKed octets in one block are more than (DupThresh − 1)·SMSS
    // = 1920: the first octet is lost. With the old 1460 (2920) it was not.
    let una = c.snd_una;
    let blocks = [Some((una + 960, una + 3840)), None, None];
    c.scoreboard.on_ack(una, &blocks);
    assert!(
        c.scoreboard.is_lost(una),
        "IsLost by the scoreboard's stale MSS"
    );
}
