//! Ephemeral ports for active opens, and taking over a TIME-WAIT tuple of
//! ours when `TcpConfig::time_wait_reuse` allows it.

use super::{Entry, TcpSockets, EPHEMERAL_FIRST, TIME_WAIT_REUSE_AFTER};
use crate::socket::TcpSocketError;
use crate::tcp::isn::FourTuple;
use crate::time::Instant;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};

impl TcpSockets {
    /// A 4-tuple to `remote` with an ephemeral local port no listener
    /// holds and no connection to `remote` uses.
    pub(super) fn free_tuple(
        &mut self,
        local: Ipv4Addr,
        remote: SocketAddrV4,
        reuse: bool,
        now: Instant,
    ) -> Result<FourTuple, TcpSocketError> {
        let span = u32::from(u16::MAX - EPHEMERAL_FIRST) + 1;
        for _ in 0..span {
            let port = self.next_ephemeral;
            self.next_ephemeral = if port == u16::MAX {
                EPHEMERAL_FIRST
            } else {
                port + 1
            };
            let tuple = FourTuple {
                local: SocketAddr::new(IpAddr::V4(local), port),
                remote: SocketAddr::V4(remote),
            };
            if self.listeners.contains_key(&port) {
                continue;
            }
            match self.by_tuple.get(&tuple) {
                None => return Ok(tuple),
                // Ports are handed out in turn, so the next one's TIME-WAIT
                // is the oldest: take it over as Linux's tcp_tw_reuse does.
                Some(index) if reuse && self.time_wait_reusable(index, now) => {
                    self.by_tuple.remove(&tuple);
                    self.remove_entry(index);
                    self.counters.time_wait_reused += 1;
                    return Ok(tuple);
                }
                Some(_) => {}
            }
        }
        Err(TcpSocketError::NoEphemeralPort)
    }

    /// Whether the connection at `index` is ours (released), in TIME-WAIT
    /// for at least a second, with timestamps on.
    fn time_wait_reusable(&self, index: usize, now: Instant) -> bool {
        let Some(Some(Entry::Socket(s))) = self.entries.get(index) else {
            return false;
        };
        s.released
            && s.conn.sack_and_timestamps().1
            && s.conn
                .time_wait_since()
                .is_some_and(|t| now.since(t) >= TIME_WAIT_REUSE_AFTER)
    }
}
