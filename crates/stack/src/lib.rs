//! tcplab's own TCP/IP stack: a reference implementation that interoperates
//! with Linux over TUN and TAP, written so that each mechanism (flow
//! control, ACK policy, SWS avoidance, Nagle, header prediction, checksum,
//! RTT estimator, route lookup, congestion control) can be switched and
//! each function block timed (issues 18 and 19).
//!
//! It depends on no other tcplab crate. The layout follows the layers:
//! - [`wire`]: zero-copy packet views (`Packet<T>` with `check_len`) and
//!   `Repr` parse/emit for Ethernet, ARP, IPv4, ICMP, UDP and TCP, and the
//!   checksum variants;
//! - [`time`]: the injected clock, so protocol tests are deterministic and
//!   never sleep;
//! - [`iface`]: the interface (addresses, ARP, IPv4 in and out with
//!   fragment reassembly, ICMP echo replies, UDP sockets), the routing
//!   tables behind one trait (linear as in 4.3BSD, a hash per prefix
//!   length, a path-compressed trie) and the ARP cache;
//! - [`tcp`]: the RFC 9293 connection (all eleven states, RFC 5961
//!   challenge ACKs, PAWS, header prediction, NewReno or SACK recovery,
//!   RFC 8985 tail loss probes, lost-retransmission detection, persist and
//!   keepalive, super-segments for a TSO device, TIME-WAIT reuse) built from TCP's blocks, each switchable: RTT
//!   estimators (RFC 6298 in ns, 4.3BSD-Reno's integer EWMA), congestion
//!   control (Reno, CUBIC, none), the reassembly queue, the RFC 6675 SACK
//!   scoreboard, RFC 6528 ISNs, the timers, and SWS avoidance, Nagle and
//!   delayed-ACK policies;
//! - [`phy`]: devices (TUN, TUN with virtio-net-header offloads, TAP, an
//!   in-memory loopback) and wrappers that are devices themselves (a
//!   pcapng tracer, a seeded fault injector).
//! - [`socket`]: TCP sockets over the interface (listen with a backlog,
//!   accept, connect, send, recv, shutdown, close; RST for no socket);
//! - [`stack`]: the whole stack on one device and its loop on the
//!   caller's thread, sleeping until the next frame or TCP timer.
//! - [`account`]: cost accounting per function block (issue 19): the
//!   code paths above are bracketed with the cycle counter, off by default
//!   (a branch per bracket); on a thread that starts it, each block's
//!   exclusive time, ns per packet and per byte, an entry/exit timeline,
//!   and checks against the thread's CPU time and wall time.
//!
//! Fuzzing: `tests/wire_fuzz.rs` feeds arbitrary and mutated bytes to
//! every wire parser (no panic, no allocation, truncations refused);
//! `tests/tcp_fuzz.rs` feeds segments that reach the state machine into a
//! connection in each of the eleven states, and frames into a whole stack
//! over IP and Ethernet (no panic, bounded work and memory, state changes
//! along the diagram's arcs). 256 cases per property, so CI stays well
//! under 10 s. `scripts/fuzz-stack` runs long campaigns of both (the same
//! tests with more cases, in release mode; a failure prints the minimal
//! input and saves its seed in `tests/<test>.proptest-regressions`,
//! replayed first next time: commit it with the fix).
//!
//! The bench runs its trials on this stack through `crates/stackend`
//! (`tcplab bench --stack tcplab`); `bench/stack-peers` and
//! `scripts/bench-stack` measure it against smoltcp, the TUN device's
//! per-packet limit and kernel-to-kernel veth.

pub mod account;
pub mod iface;
pub mod phy;
pub mod socket;
pub mod stack;
pub mod tcp;
pub mod time;
pub mod wire;
