//! A routing table as a binary, path-compressed trie (in the manner of
//! BSD's radix tree): each node is a prefix; a node has children only where
//! routes diverge, so a lookup visits at most one node per distinct branch
//! point on the way to the destination (at most 33), whatever the table's
//! size. Nodes live in one vector and refer to each other by index.

use super::{mask, Ipv4Cidr, Route, RouteTable, RouteTableKind};
use std::net::Ipv4Addr;

#[derive(Debug, Clone)]
struct Node {
    /// The node's prefix, host bits zero.
    bits: u32,
    len: u8,
    route: Option<Route>,
    /// The subtrees whose next bit (bit `len`) is 0 and 1.
    child: [Option<usize>; 2],
}

impl Node {
    fn new(bits: u32, len: u8, route: Option<Route>) -> Node {
        Node {
            bits,
            len,
            route,
            child: [None, None],
        }
    }
}

/// A path-compressed binary trie of routes.
#[derive(Debug, Clone)]
pub struct TrieTable {
    /// Node 0 is the root, the empty prefix.
    nodes: Vec<Node>,
    count: usize,
}

impl Default for TrieTable {
    fn default() -> TrieTable {
        TrieTable {
            nodes: vec![Node::new(0, 0, None)],
            count: 0,
        }
    }
}

/// Bit `i` of `bits`, counted from the most significant (0..32).
fn bit(bits: u32, i: u8) -> usize {
    ((bits >> (31 - u32::from(i))) & 1) as usize
}

/// The length of the common prefix of two prefixes.
fn common_len(a: u32, a_len: u8, b: u32, b_len: u8) -> u8 {
    let differ = (a ^ b).leading_zeros().min(32) as u8;
    differ.min(a_len).min(b_len)
}

impl TrieTable {
    /// The node holding exactly `cidr`, if there is one.
    fn find(&self, cidr: Ipv4Cidr) -> Option<usize> {
        let mut n = 0;
        loop {
            let node = &self.nodes[n];
            if node.len == cidr.prefix_len() {
                return (node.bits == cidr.bits()).then_some(n);
            }
            if node.len > cidr.prefix_len() || cidr.bits() & mask(node.len) != node.bits {
                return None;
            }
            n = node.child[bit(cidr.bits(), node.len)]?;
        }
    }

    fn push(&mut self, node: Node) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }
}

impl RouteTable for TrieTable {
    fn add(&mut self, route: Route) -> Option<Route> {
        let (bits, len) = (route.cidr.bits(), route.cidr.prefix_len());
        let mut n = 0;
        loop {
            // Node n's prefix is a prefix of the route's.
            if self.nodes[n].len == len {
                let old = self.nodes[n].route.replace(route);
                if old.is_none() {
                    self.count += 1;
                }
                return old;
            }
            let side = bit(bits, self.nodes[n].len);
            let Some(c) = self.nodes[n].child[side] else {
                let leaf = self.push(Node::new(bits, len, Some(route)));
                self.nodes[n].child[side] = Some(leaf);
                self.count += 1;
                return None;
            };
            let (c_bits, c_len) = (self.nodes[c].bits, self.nodes[c].len);
            let common = common_len(c_bits, c_len, bits, len);
            if common == c_len {
                n = c;
                continue;
            }
            // The route and the child part ways (or the route sits above
            // the child) at bit `common`: put a node there.
            let at = if common == len {
                self.push(Node::new(bits, len, Some(route)))
            } else {
                let mid = self.push(Node::new(bits & mask(common), common, None));
                let leaf = self.push(Node::new(bits, len, Some(route)));
                self.nodes[mid].child[bit(bits, common)] = Some(leaf);
                mid
            };
            self.nodes[at].child[bit(c_bits, common)] = Some(c);
            self.nodes[n].child[side] = Some(at);
            self.count += 1;
            return None;
        }
    }

    /// Removes the route; its node stays as a branch point (tables in the
    /// studies are built once, so nodes are not merged back).
    fn remove(&mut self, cidr: Ipv4Cidr) -> Option<Route> {
        let n = self.find(cidr)?;
        let old = self.nodes[n].route.take();
        if old.is_some() {
            self.count -= 1;
        }
        old
    }

    fn lookup(&self, dst: Ipv4Addr) -> Option<Route> {
        let dst = u32::from(dst);
        let mut node = &self.nodes[0];
        let mut best = node.route;
        while node.len < 32 {
            let Some(c) = node.child[bit(dst, node.len)] else {
                break;
            };
            node = &self.nodes[c];
            if dst & mask(node.len) != node.bits {
                break;
            }
            if node.route.is_some() {
                best = node.route;
            }
        }
        best
    }

    fn len(&self) -> usize {
        self.count
    }

    fn kind(&self) -> RouteTableKind {
        RouteTableKind::Trie
    }
}
