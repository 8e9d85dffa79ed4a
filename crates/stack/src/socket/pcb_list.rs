//! BSD's linear PCB list (`--pcb-lookup list`, issue 29): 4.3BSD's and
//! Net/3's `in_pcblookup` walks every protocol control block, comparing
//! the 4-tuple, a listener's unbound foreign address and port (and an
//! unbound local address) matching anything as a wildcard; an exact match
//! ends the walk, otherwise the match with the fewest wildcards wins. In
//! front of it, `tcp_input`'s one-entry cache (`tcp_last_inpcb`): the PCB
//! the last segment found is compared first, and a hit skips the walk.
//!
//! New PCBs go at the head of the list (`in_pcballoc`'s `insque` after
//! the head), so the walk meets the newest first; here they are pushed at
//! the end of a vector walked backwards, the same order.

use crate::tcp::isn::FourTuple;
use std::cell::Cell;
use std::net::IpAddr;

/// One PCB: its addresses (a zero address or port is a wildcard) and the
/// socket-set entry it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pcb {
    local_addr: u32,
    local_port: u16,
    foreign_addr: u32,
    foreign_port: u16,
    index: usize,
}

/// What the list's lookups did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PcbListCounters {
    /// Lookups the one-entry cache answered.
    pub cache_hits: u64,
    /// Lookups that walked the list.
    pub cache_misses: u64,
    /// PCBs compared by the walks.
    pub walked: u64,
}

/// The PCB list with its one-entry cache.
#[derive(Debug, Default)]
pub struct PcbList {
    pcbs: Vec<Pcb>,
    /// The position of the PCB the last lookup found.
    last: Cell<Option<usize>>,
    counters: Cell<PcbListCounters>,
}

fn v4(addr: IpAddr) -> u32 {
    match addr {
        IpAddr::V4(a) => u32::from(a),
        IpAddr::V6(_) => unreachable!("the stack is IPv4 only"),
    }
}

impl Pcb {
    fn exact(tuple: &FourTuple, index: usize) -> Pcb {
        Pcb {
            local_addr: v4(tuple.local.ip()),
            local_port: tuple.local.port(),
            foreign_addr: v4(tuple.remote.ip()),
            foreign_port: tuple.remote.port(),
            index,
        }
    }

    fn is_exactly(&self, tuple: &FourTuple) -> bool {
        self.foreign_port == tuple.remote.port()
            && self.local_port == tuple.local.port()
            && self.foreign_addr == v4(tuple.remote.ip())
            && self.local_addr == v4(tuple.local.ip())
    }
}

impl PcbList {
    /// How many PCBs the list holds (listeners included).
    pub fn len(&self) -> usize {
        self.pcbs.len()
    }

    /// Whether the list holds none.
    pub fn is_empty(&self) -> bool {
        self.pcbs.is_empty()
    }

    /// The counters so far.
    pub fn counters(&self) -> PcbListCounters {
        self.counters.get()
    }

    /// A connection's PCB, at the head.
    pub fn insert(&mut self, tuple: FourTuple, index: usize) {
        self.remove(&tuple);
        self.pcbs.push(Pcb::exact(&tuple, index));
    }

    /// A listener's PCB on `port` of every local address, foreign address
    /// and port unbound.
    pub fn listen(&mut self, port: u16, index: usize) {
        self.pcbs.push(Pcb {
            local_addr: 0,
            local_port: port,
            foreign_addr: 0,
            foreign_port: 0,
            index,
        });
    }

    /// Drops the PCB naming entry `index` (a listener's).
    pub fn unlisten(&mut self, index: usize) {
        self.last.set(None);
        self.pcbs
            .retain(|p| !(p.index == index && p.foreign_port == 0));
    }

    /// Drops the connection PCB for exactly `tuple`.
    pub fn remove(&mut self, tuple: &FourTuple) {
        if let Some(at) = self.pcbs.iter().rposition(|p| p.is_exactly(tuple)) {
            self.last.set(None);
            self.pcbs.remove(at);
        }
    }

    /// `in_pcblookup` behind `tcp_last_inpcb`: the entry whose PCB matches
    /// `tuple` with the fewest wildcards (a listener's, when no
    /// connection's matches exactly).
    pub fn lookup(&self, tuple: &FourTuple) -> Option<usize> {
        let mut c = self.counters.get();
        if let Some(at) = self.last.get() {
            if self.pcbs[at].is_exactly(tuple) {
                c.cache_hits += 1;
                self.counters.set(c);
                return Some(self.pcbs[at].index);
            }
        }
        c.cache_misses += 1;
        let (laddr, lport) = (v4(tuple.local.ip()), tuple.local.port());
        let (faddr, fport) = (v4(tuple.remote.ip()), tuple.remote.port());
        let mut best: Option<(usize, u8)> = None;
        for (at, p) in self.pcbs.iter().enumerate().rev() {
            c.walked += 1;
            if p.local_port != lport {
                continue;
            }
            let mut wildcard = 0u8;
            if p.local_addr == 0 {
                wildcard += 1;
            } else if p.local_addr != laddr {
                continue;
            }
            if p.foreign_addr == 0 {
                wildcard += 1;
            } else if p.foreign_addr != faddr || p.foreign_port != fport {
                continue;
            }
            if best.is_none_or(|(_, w)| wildcard < w) {
                best = Some((at, wildcard));
                if wildcard == 0 {
                    break;
                }
            }
        }
        self.counters.set(c);
        let (at, _) = best?;
        self.last.set(Some(at));
        Some(self.pcbs[at].index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, SocketAddr};

    /// `local` ← `remote`.
    fn tuple(local: (Ipv4Addr, u16), remote: (Ipv4Addr, u16)) -> FourTuple {
        FourTuple {
            local: SocketAddr::from(local),
            remote: SocketAddr::from(remote),
        }
    }

    const US: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const PEER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

    #[test]
    fn the_exact_match_wins_over_a_wildcard_listener() {
        let mut l = PcbList::default();
        l.listen(80, 1);
        l.insert(tuple((US, 80), (PEER, 5000)), 2);
        l.insert(tuple((US, 81), (PEER, 5000)), 3);
        assert_eq!(l.lookup(&tuple((US, 80), (PEER, 5000))), Some(2));
        // A new peer port on the listener's port: only the wildcard fits.
        assert_eq!(l.lookup(&tuple((US, 80), (PEER, 5001))), Some(1));
        assert_eq!(l.lookup(&tuple((US, 82), (PEER, 5000))), None);
        // The listener newer than the connection: the walk (newest first)
        // meets the listener first, goes on past it and picks the exact
        // match.
        let mut m = PcbList::default();
        m.insert(tuple((US, 80), (PEER, 5000)), 2);
        m.listen(80, 1);
        assert_eq!(m.lookup(&tuple((US, 80), (PEER, 5000))), Some(2));
        assert_eq!(m.counters().walked, 2, "past the listener to the end");
    }

    #[test]
    fn the_one_entry_cache_counts_hits_and_misses() {
        let mut l = PcbList::default();
        for port in 0..10 {
            l.insert(tuple((US, 1000 + port), (PEER, 80)), port as usize);
        }
        let a = tuple((US, 1000), (PEER, 80));
        let b = tuple((US, 1009), (PEER, 80));
        assert_eq!(l.lookup(&a), Some(0));
        assert_eq!(l.lookup(&a), Some(0));
        assert_eq!(l.lookup(&a), Some(0));
        let c = l.counters();
        assert_eq!((c.cache_hits, c.cache_misses), (2, 1));
        assert_eq!(c.walked, 10, "the oldest is last in the walk");
        assert_eq!(l.lookup(&b), Some(9));
        assert_eq!(l.lookup(&a), Some(0));
        let c = l.counters();
        assert_eq!((c.cache_hits, c.cache_misses), (2, 3));
        assert_eq!(c.walked, 10 + 1 + 10, "the newest is first");
        // A removal empties the cache: the next lookup walks.
        l.remove(&b);
        assert_eq!(l.lookup(&a), Some(0));
        assert_eq!(l.counters().cache_misses, 4);
        assert_eq!(l.lookup(&b), None);
        assert_eq!(l.len(), 9);
    }

    #[test]
    fn an_unlistened_port_finds_nothing() {
        let mut l = PcbList::default();
        l.listen(80, 1);
        assert_eq!(l.lookup(&tuple((US, 80), (PEER, 9))), Some(1));
        l.unlisten(1);
        assert_eq!(l.lookup(&tuple((US, 80), (PEER, 9))), None);
        assert!(l.is_empty());
    }
}
