//! Ephemeral ports for active opens, and a TIME-WAIT tuple of ours taken
//! over: by an active open when `TcpConfig::time_wait_reuse` allows it,
//! or by a new SYN for a listener as RFC 6191 allows it.

use super::{Entry, TcpSockets, EPHEMERAL_FIRST, TIME_WAIT_REUSE_AFTER};
use crate::socket::TcpSocketError;
use crate::tcp::isn::FourTuple;
use crate::tcp::state::State;
use crate::time::Instant;
use crate::wire::{TcpControl, TcpRepr};
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

    /// RFC 6191: `seg`, for the connection at `index`, is a SYN that ends
    /// its TIME-WAIT ([`crate::tcp::tcb::Connection::time_wait_accepts_syn`])
    /// and a listener on its port has room for it. If so the connection is
    /// closed and its tuple unmapped, for the listener to take the SYN,
    /// and its SND.MAX returned: the new incarnation's ISN goes above it.
    pub(super) fn syn_ends_time_wait(
        &mut self,
        index: usize,
        seg: &TcpRepr<'_>,
    ) -> Option<crate::wire::seq::SeqNumber> {
        // Cheap tests first: this runs for every segment of a connection.
        let in_time_wait = matches!(self.entries.get(index),
            Some(Some(Entry::Socket(s))) if s.conn.state() == State::TimeWait);
        if seg.control != TcpControl::Syn || !in_time_wait {
            return None;
        }
        let listener = self.listeners.get(&seg.dst_port).copied();
        let Some(Some(Entry::Listener(l))) = listener.map(|li| &self.entries[li]) else {
            return None;
        };
        let timestamps_on = l.config.timestamps;
        let room = l.pending.len() < l.backlog;
        let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) else {
            return None;
        };
        if !room || !s.conn.time_wait_accepts_syn(seg, timestamps_on) {
            return None;
        }
        let old_snd_max = s.conn.snd_max;
        s.conn.enter_closed(None);
        let tuple = s.conn.tuple();
        self.by_tuple.remove(&tuple);
        self.counters.time_wait_recycled += 1;
        // Removed now if the application released it (as it has, unless
        // it half-closed and holds the handle still).
        self.touched(index);
        Some(old_snd_max)
    }
}
