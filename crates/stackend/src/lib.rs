//! A trial's end played by tcplab's own TCP/IP stack (`--stack tcplab`,
//! `--server-stack tcplab`; issue 18).
//!
//! The user-space end lives in a network namespace of its own behind a TUN
//! device ([`place::StackPlace`]); the other end is Linux's TCP in that
//! namespace, run by the engine's own workloads, or a second user-space
//! stack behind a second TUN device, with the namespace routing between
//! them. The stack runs on the trial's own thread, so its CPU (and the
//! kernel work its TUN writes cause) is charged to that end as a kernel
//! end's is. Its ends speak the engine's wire protocols (the same pattern,
//! requests and HTTP page), so either end can be either implementation and
//! every byte is checked against the pattern.

pub mod account_profile;
pub mod config;
pub mod dilation;
mod driver;
mod end_device;
pub mod error;
mod http;
pub mod iface_config;
pub mod metrics;
pub mod place;
mod read_pacing;
mod rr;
mod stream;
mod udp;
mod work;

pub use error::StackEndError;
pub use place::StackPlace;
