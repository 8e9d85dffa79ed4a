//! The interface layer: addresses, the ARP cache, IP input and output, and
//! the routing table behind a trait (issue 18, item 2).
//!
//! - [`interface::Interface`]: one device's medium, MAC, addresses,
//!   routes, ARP cache, checksum method and [`counters`]; `poll` reads
//!   frames (input in `input.rs`: ARP, IPv4, [`fragment`] reassembly,
//!   ICMP echo) and `send_ip` writes them (output in `output.rs`: route,
//!   source address, IPv4 header, ARP resolution holding one packet per
//!   next hop);
//! - [`upper::IpHandler`]: where UDP datagrams and TCP segments for us go,
//!   so the transports plug in without `iface` knowing them;
//! - [`udp::UdpSockets`]: bind, send to, receive from;
//! - [`offload`]: the virtio-net header of an offload device, stripped on
//!   input (super-packets up whole, checksums the kernel vouched for not
//!   verified) and written on output (partial checksums, TSO);
//! - `fragment_out`: datagrams over the MTU sent in fragments (UDP; DF
//!   respected when the switch is off);
//! - `tx_batch`: frames held within a round of the stack and written
//!   back to back at its end (`InterfaceConfig::tx_batch`);
//! - [`icmp_error`]: destination unreachable out (port, protocol; rate
//!   limited) and in (to the transport, as [`icmp_error::IcmpError`]).

pub mod arp_cache;
pub mod counters;
pub mod fragment;
mod fragment_out;
pub mod icmp_error;
mod input;
pub mod interface;
pub mod offload;
mod output;
pub mod route;
mod tx_batch;
pub mod udp;
pub mod upper;

pub use counters::{DropReason, InterfaceCounters};
pub use interface::{IfaceError, Interface, InterfaceConfig, SendOutcome};
pub use upper::{Delivery, IpHandler, NoTransport};
