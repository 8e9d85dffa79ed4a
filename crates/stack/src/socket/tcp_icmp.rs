//! ICMP destination unreachables for the TCP sockets (RFC 1122
//! §4.2.3.9, RFC 1191, RFC 5927): the connection an error quotes takes it
//! as a soft error, and fragmentation needed lowers its MSS.

use super::{Entry, TcpHandle, TcpSocketError, TcpSockets};
use crate::iface::icmp_error::{IcmpError, UnreachableCode};
use crate::iface::Delivery;
use crate::tcp::isn::FourTuple;
use std::net::SocketAddr;

impl TcpSockets {
    /// The last ICMP destination unreachable a connection took, if any
    /// (a soft error: the connection goes on).
    pub fn soft_error(&self, handle: TcpHandle) -> Result<Option<UnreachableCode>, TcpSocketError> {
        Ok(self.socket_ref(handle)?.soft_error)
    }

    /// An ICMP destination unreachable about a segment we sent: the
    /// connection it names takes it as a soft error if it quotes a
    /// sequence number in flight, and lowers its MSS on fragmentation
    /// needed, resending its flight in the next `on_timers`.
    pub fn icmp_error(&mut self, error: &IcmpError) -> Delivery {
        let tuple = FourTuple {
            local: SocketAddr::V4(error.local),
            remote: SocketAddr::V4(error.remote),
        };
        let Some(index) = self.by_tuple.get(&tuple) else {
            self.counters.icmp_ignored += 1;
            return Delivery::NoListener;
        };
        let Some(Entry::Socket(s)) = &mut self.entries[index] else {
            self.counters.icmp_ignored += 1;
            return Delivery::NoListener;
        };
        if !error
            .tcp_seq
            .is_some_and(|seq| s.conn.quotes_our_flight(seq))
        {
            self.counters.icmp_ignored += 1;
            return Delivery::Accepted;
        }
        s.soft_error = Some(error.code);
        self.counters.icmp_soft_errors += 1;
        if let Some(mtu) = error.next_hop_mtu {
            if s.conn.on_path_mtu(usize::from(mtu)) {
                self.counters.pmtu_reductions += 1;
                // What no longer fits goes again in this poll's output.
                self.mark_dirty(index);
            }
        }
        Delivery::Accepted
    }
}
