//! What an ICMP destination unreachable does to a connection: RFC 1122
//! §4.2.3.9 makes it a soft error (recorded, reported, the connection
//! goes on: the network may recover before the retransmission timer gives
//! up), and RFC 1191's fragmentation needed lowers the MSS to what the
//! path carries. RFC 5927 §4.1: only an error quoting a sequence number
//! in flight is believed.
//!
//! A lower MSS reaches the congestion controller and the SACK scoreboard
//! too, and what is in flight is sent again at once in segments that fit
//! (RFC 1191 §6.5's "retransmit immediately"; Linux's
//! `tcp_simple_retransmit`): the segments that did not fit were dropped
//! by the router that sent the error, and waiting for the retransmission
//! timer would stall the connection a whole RTO. This is not congestion:
//! cwnd and ssthresh stay (cwnd in bytes, so it now holds more, smaller
//! segments). The connection keeps no segment boundaries, so the whole
//! flight goes again from SND.UNA, not only the segments larger than the
//! new MSS (which are all of them in a bulk transfer); like a timeout,
//! this leaves loss recovery, and `recover` moves to SND.MAX so the old
//! flight's duplicate ACKs do not start a fast retransmit.

use super::state::State;
use super::tcb::Connection;
use crate::wire::seq::SeqNumber;

/// The smallest path MTU believed (RFC 1191 §3 would go to 68; Linux's
/// `min_pmtu` is 552).
pub const MIN_PATH_MTU: usize = 552;
/// IPv4 and TCP headers without options.
const HEADERS: usize = 40;

impl Connection {
    /// Whether `seq`, quoted by an ICMP error, is something we sent and
    /// is not yet acknowledged (our SYN in SYN-SENT).
    pub fn quotes_our_flight(&self, seq: SeqNumber) -> bool {
        if self.state == State::SynSent {
            return seq == self.iss;
        }
        self.state.is_synchronized() && seq >= self.snd_una && seq < self.snd_max
    }

    /// RFC 1191: the path carries at most `mtu` bytes; the MSS drops to
    /// fit (never below [`MIN_PATH_MTU`]'s), for the congestion
    /// controller and the scoreboard too. Returns whether it dropped; if
    /// it did, the next output pass ([`Connection::poll_output`]) resends
    /// the flight from SND.UNA in segments that fit.
    pub fn on_path_mtu(&mut self, mtu: usize) -> bool {
        let mss = mtu.max(MIN_PATH_MTU) - HEADERS;
        if mss >= self.snd_mss {
            return false;
        }
        self.snd_mss = mss;
        let data_mss = self.data_mss();
        self.cc.set_mss(data_mss);
        self.scoreboard.set_mss(data_mss);
        if self.state.is_synchronized() && self.snd_una < self.snd_max {
            self.snd_nxt = self.snd_una;
            self.recovery.point = None;
            self.recovery.inflation = 0;
            self.recovery.dup_acks = 0;
            self.recovery.recover = self.snd_max;
            self.scoreboard.on_recovery_exit();
        }
        true
    }
}

#[cfg(test)]
#[path = "icmp_tests.rs"]
mod tests;
