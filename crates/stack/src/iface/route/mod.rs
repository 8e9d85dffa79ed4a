//! Routing tables: longest-prefix match of an IPv4 destination, behind one
//! trait with three structures, so issue 19's `--route-table
//! linear|hash|trie` can set their lookup costs side by side (Huang &
//! Chen's Table 2):
//! - [`linear::LinearTable`]: a list scanned whole, as 4.3BSD's `rtalloc`
//!   scanned its chains;
//! - [`hash::HashTable`]: one hash map per prefix length, probed from /32
//!   down;
//! - [`trie::TrieTable`]: a binary, path-compressed trie.

pub mod cache;
pub mod hash;
pub mod linear;
pub mod trie;

use std::net::Ipv4Addr;

/// An IPv4 prefix: an address with all bits past `len` zero, and a length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    bits: u32,
    len: u8,
}

/// Why a route could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// A prefix length over 32.
    #[error("prefix length {0} is over 32")]
    PrefixTooLong(u8),
}

impl Ipv4Cidr {
    /// The prefix of `addr`'s first `len` bits (later bits are cleared).
    pub fn new(addr: Ipv4Addr, len: u8) -> Result<Ipv4Cidr, RouteError> {
        if len > 32 {
            return Err(RouteError::PrefixTooLong(len));
        }
        Ok(Ipv4Cidr {
            bits: u32::from(addr) & mask(len),
            len,
        })
    }

    /// The network address.
    pub fn address(self) -> Ipv4Addr {
        Ipv4Addr::from(self.bits)
    }

    /// The address as a number, host bits zero.
    pub fn bits(self) -> u32 {
        self.bits
    }

    /// The prefix length.
    pub fn prefix_len(self) -> u8 {
        self.len
    }

    /// Whether `addr` is inside the prefix.
    pub fn contains(self, addr: Ipv4Addr) -> bool {
        u32::from(addr) & mask(self.len) == self.bits
    }
}

/// The netmask of a prefix length (0..=32).
pub fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// Where a route sends a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NextHop {
    /// The destination is on the link: send to it directly.
    Direct,
    /// Send to this gateway on the link.
    Gateway(Ipv4Addr),
}

/// One route: a prefix and where its packets go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Route {
    /// The destinations the route covers.
    pub cidr: Ipv4Cidr,
    /// Where they go.
    pub next_hop: NextHop,
}

/// Which structure a table is (issue 19's `--route-table`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteTableKind {
    /// [`linear::LinearTable`].
    Linear,
    /// [`hash::HashTable`].
    Hash,
    /// [`trie::TrieTable`].
    Trie,
}

/// A routing table: routes by prefix, looked up by longest prefix match.
pub trait RouteTable {
    /// Adds `route`, replacing (and returning) any route for the same
    /// prefix.
    fn add(&mut self, route: Route) -> Option<Route>;

    /// Removes the route for exactly `cidr`, returning it.
    fn remove(&mut self, cidr: Ipv4Cidr) -> Option<Route>;

    /// The route with the longest prefix containing `dst`, if any.
    fn lookup(&self, dst: Ipv4Addr) -> Option<Route>;

    /// How many routes the table holds.
    fn len(&self) -> usize;

    /// Whether the table holds no route.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Which structure this is.
    fn kind(&self) -> RouteTableKind;
}

/// An empty table of `kind`.
pub fn new_table(kind: RouteTableKind) -> Box<dyn RouteTable + Send> {
    match kind {
        RouteTableKind::Linear => Box::new(linear::LinearTable::default()),
        RouteTableKind::Hash => Box::new(hash::HashTable::default()),
        RouteTableKind::Trie => Box::new(trie::TrieTable::default()),
    }
}

#[cfg(test)]
mod tests;
