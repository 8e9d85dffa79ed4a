//! When the connection measures the round trip and what it does with the
//! estimator outside the samples: RFC 6298 §5.7's 3 s timeout after a
//! handshake whose SYN or SYN-ACK timed out and gave no sample.

use super::tcb::Connection;

impl Connection {
    /// Our SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED) was just acknowledged.
    /// If it had timed out and no sample came of it (Karn's rule), the
    /// estimator begins data transmission at RFC 6298 §5.7's 3 s, as
    /// Linux's `tcp_init_transfer` does when the handshake gave no RTT.
    pub(crate) fn on_handshake_done(&mut self) {
        if self.counters.timeouts > 0 && self.rtt.srtt().is_none() {
            self.rtt.on_handshake_without_sample();
        }
    }
}
