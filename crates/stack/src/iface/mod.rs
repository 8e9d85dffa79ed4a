//! The interface layer: addresses, the ARP cache, IP input and output, and
//! the routing table behind a trait (issue 18, item 2).

pub mod arp_cache;
pub mod route;
