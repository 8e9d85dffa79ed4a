//! What an ICMP destination unreachable does to a connection: RFC 1122
//! §4.2.3.9 makes it a soft error (recorded, reported, the connection
//! goes on: the network may recover before the retransmission timer gives
//! up), and RFC 1191's fragmentation needed lowers the MSS to what the
//! path carries. RFC 5927 §4.1: only an error quoting a sequence number
//! in flight is believed.

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
    /// fit (never below [`MIN_PATH_MTU`]'s). Returns whether it dropped.
    /// The segments now too big are resent smaller by the retransmission
    /// timer.
    pub fn on_path_mtu(&mut self, mtu: usize) -> bool {
        let mss = mtu.max(MIN_PATH_MTU) - HEADERS;
        if mss >= self.snd_mss {
            return false;
        }
        self.snd_mss = mss;
        true
    }
}
