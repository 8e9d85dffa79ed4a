//! The close at its edges, two connections back to back on a
//! `ManualClock`: a FIN that overtakes the data before it, with the
//! header-prediction fast path on and off.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::tcp::state::State;
use stack::tcp::tcb::{Segment, TcpConfig};
use tcp_pair::{pattern, Dir, Pair};

const MS: Duration = Duration::from_millis(1);

#[test]
fn a_fin_that_overtakes_its_data_closes_the_receiver_when_the_data_arrives() {
    for header_prediction in [false, true] {
        let config = TcpConfig {
            header_prediction,
            ..TcpConfig::default()
        };
        let mut p = Pair::established(config.clone(), config, 5 * MS);
        // A's last 100 octets and its FIN leave together; the data segment
        // is held 3 ms on the link, so B gets the FIN (at SEQ + 100) first.
        p.fate = Box::new(|dir, seg: &Segment| {
            let late = dir == Dir::AtoB && !seg.payload.is_empty();
            vec![if late { 3 * MS } else { Duration::ZERO }]
        });
        p.app_a.to_write = pattern(100);
        p.app_a.close_when_written = true;
        p.kick();
        let sent: Vec<_> = p.sent(Dir::AtoB).iter().map(|s| s.seg.clone()).collect();
        let fin = sent.last().expect("A sent");
        assert!(tcp_pair::is(fin, stack::wire::tcp::TcpControl::Fin));
        assert!(fin.payload.is_empty(), "the FIN goes alone, after the data");
        p.run_until(|p| p.app_b.read.len() == 100);
        assert_eq!(
            p.b.state(),
            State::CloseWait,
            "header prediction {header_prediction}: the early FIN is applied \
             when the data before it arrives"
        );
        p.run_until(|p| p.a.state() == State::FinWait2);
        assert_eq!(
            p.a.counters().retransmits,
            0,
            "header prediction {header_prediction}: the FIN was acknowledged \
             without a retransmission"
        );
        assert!(p.app_b.read == pattern(100));
    }
}
