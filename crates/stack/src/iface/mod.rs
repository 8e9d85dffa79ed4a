//! The interface layer: addresses, the ARP cache, IP input and output, and
//! the routing table behind a trait (issue 18, item 2).

pub mod arp_cache;
pub mod route;
pub mod counters;
pub mod fragment;
mod input;
pub mod interface;
mod output;
pub mod udp;
pub mod upper;

pub use counters::{DropReason, InterfaceCounters};
pub use interface::{IfaceError, Interface, InterfaceConfig, SendOutcome};
pub use upper::{Delivery, IpHandler, NoTransport};
