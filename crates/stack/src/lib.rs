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
//!   never sleep.
//!
//! Later modules: `iface` (addresses, ARP cache, IP in and out, routing
//! tables behind a trait), `tcp` (the state machine split by concern),
//! `socket`, and `phy` (TUN, TAP, tracer, fault injector).

pub mod tcp;
pub mod time;
pub mod wire;
