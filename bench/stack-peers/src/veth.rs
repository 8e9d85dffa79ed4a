//! Kernel to kernel: two namespaces (`tcplab-perf-veth{a,b}-<pid>`) joined
//! by a veth pair at MTU 1500 with the kernel's default offloads, the same
//! socket buffers as the user-space runs; the receiver in one, the sender
//! (or the request/response client) in the other.

use crate::netns::{LinkPackets, Netns};
use anyhow::Result;
use std::net::Ipv4Addr;

/// The two namespaces and their addresses.
pub struct VethPair {
    /// The server's namespace.
    pub a: Netns,
    /// The client's namespace.
    pub b: Netns,
    /// The server's address (in `a`).
    pub server: Ipv4Addr,
}

/// The veth end in `a`.
pub const VETH_A: &str = "tperfa";

impl VethPair {
    /// Both namespaces, the pair between them, addresses, up.
    pub fn new() -> Result<VethPair> {
        let a = Netns::new("vetha")?;
        let b = Netns::new("vethb")?;
        a.ip(&[
            "link", "add", VETH_A, "mtu", "1500", "type", "veth", "peer", "name", "tperfb", "mtu",
            "1500", "netns", &b.name,
        ])?;
        a.ip(&["addr", "add", "10.84.0.1/24", "dev", VETH_A])?;
        b.ip(&["addr", "add", "10.84.0.2/24", "dev", "tperfb"])?;
        a.ip(&["link", "set", VETH_A, "up"])?;
        b.ip(&["link", "set", "tperfb", "up"])?;
        Ok(VethPair {
            a,
            b,
            server: Ipv4Addr::new(10, 84, 0, 1),
        })
    }

    /// Packets on `a`'s end.
    pub fn packets(&self) -> Result<LinkPackets> {
        self.a.packets(VETH_A)
    }
}
