//! What the connection tells its congestion controller, beside losses:
//! each ACK of new data with the smoothed RTT (RFC 9438 §4.2's RTT), and
//! whether the window was the limit.

use super::tcb::Connection;
use crate::time::Instant;

impl Connection {
    /// `acked` octets of new data acknowledged outside recovery: the
    /// controller grows cwnd, aiming with the smoothed RTT.
    pub(crate) fn cc_on_ack(&mut self, acked: usize, now: Instant) {
        self.cc.on_ack(acked, self.rtt.srtt(), now);
    }
}

#[cfg(test)]
#[path = "cc_events_tests.rs"]
mod tests;
