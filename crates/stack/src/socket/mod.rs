//! Sockets over the interface (issue 18, item 4).
//!
//! - [`tcp::TcpSockets`]: the TCP sockets of one interface, its
//!   [`crate::iface::IpHandler`] for TCP: segments demultiplexed by
//!   4-tuple to RFC 9293 [`crate::tcp::tcb::Connection`]s, listeners
//!   that make a connection per arriving SYN (up to a backlog), RST for
//!   segments to no socket, checksums with the IPv4 pseudo-header by the
//!   interface's method, and the earliest timer so a loop sleeps exactly
//!   until then;
//! - `timer_queue`: the sockets' deadlines in a min-heap with lazy
//!   invalidation, so `poll_at` is O(1) and a poll costs O((due + dirty)
//!   · log n) with any number of idle connections (10,000 in
//!   `tests/scale.rs`);
//! - [`demux::TupleMap`]: the 4-tuple map with a one-entry cache, and
//!   [`demux::Demux`], which puts [`pcb_list::PcbList`] (BSD's linear
//!   PCB list, `--pcb-lookup list`) in front of it for incoming segments;
//! - [`error::TcpSocketError`]: why a socket call failed.
//!
//! UDP sockets live beside the interface ([`crate::iface::udp`]).

pub mod demux;
pub mod error;
pub mod pcb_list;
pub mod tcp;
mod timer_queue;

pub use error::TcpSocketError;
pub use tcp::{TcpHandle, TcpSockets, TcpSocketsCounters};
