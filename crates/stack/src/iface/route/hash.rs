//! A routing table as one hash map per prefix length, probed from the
//! longest length in use down to the shortest: at most 33 probes, usually
//! as many as there are distinct lengths.

use super::{mask, Ipv4Cidr, Route, RouteTable, RouteTableKind};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// Routes keyed by network address, one map per prefix length.
#[derive(Debug, Clone)]
pub struct HashTable {
    by_len: Vec<HashMap<u32, Route>>,
    /// The prefix lengths that hold a route, longest first.
    lengths: Vec<u8>,
    count: usize,
}

impl Default for HashTable {
    fn default() -> HashTable {
        HashTable {
            by_len: vec![HashMap::new(); 33],
            lengths: Vec::new(),
            count: 0,
        }
    }
}

impl HashTable {
    fn refresh_lengths(&mut self) {
        self.lengths = (0..=32u8)
            .rev()
            .filter(|&l| !self.by_len[usize::from(l)].is_empty())
            .collect();
    }
}

impl RouteTable for HashTable {
    fn add(&mut self, route: Route) -> Option<Route> {
        let len = route.cidr.prefix_len();
        let map = &mut self.by_len[usize::from(len)];
        let was_empty = map.is_empty();
        let old = map.insert(route.cidr.bits(), route);
        if old.is_none() {
            self.count += 1;
        }
        if was_empty {
            self.refresh_lengths();
        }
        old
    }

    fn remove(&mut self, cidr: Ipv4Cidr) -> Option<Route> {
        let map = &mut self.by_len[usize::from(cidr.prefix_len())];
        let old = map.remove(&cidr.bits())?;
        self.count -= 1;
        if map.is_empty() {
            self.refresh_lengths();
        }
        Some(old)
    }

    fn lookup(&self, dst: Ipv4Addr) -> Option<Route> {
        let dst = u32::from(dst);
        self.lengths
            .iter()
            .find_map(|&l| self.by_len[usize::from(l)].get(&(dst & mask(l))))
            .copied()
    }

    fn len(&self) -> usize {
        self.count
    }

    fn kind(&self) -> RouteTableKind {
        RouteTableKind::Hash
    }
}
