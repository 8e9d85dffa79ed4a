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
//! Fuzzing: `tests/wire_fuzz.rs` feeds arbitrary and mutated bytes to
//! every wire parser (no panic, no allocation, truncations refused), 256
//! cases per property so CI stays well under 10 s. A longer campaign is
//! the same tests with more cases, in release mode:
//! `PROPTEST_CASES=1000000 cargo test -p stack --release --test wire_fuzz`
//! (a failure prints the minimal input and saves its seed in
//! `tests/wire_fuzz.proptest-regressions`, replayed first next time:
//! commit it with the fix).
//!
//! Later modules: `iface` (addresses, ARP cache, IP in and out, routing
//! tables behind a trait), `tcp` (the state machine split by concern),
//! `socket`, and `phy` (TUN, TAP, tracer, fault injector).

pub mod iface;
pub mod phy;
pub mod time;
pub mod wire;
