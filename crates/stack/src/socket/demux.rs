//! The 4-tuple → connection map with a one-entry cache in front: a bulk
//! transfer's segments all name the same connection, so most lookups are
//! answered by one comparison instead of hashing the tuple (SipHash was
//! about 1.5% of a Linux → tcplab stream's samples). Any insert or removal
//! empties the cache, so it never names a stale entry.

use super::pcb_list::{PcbList, PcbListCounters};
use crate::tcp::isn::FourTuple;
use std::cell::Cell;
use std::collections::HashMap;

/// Connections by 4-tuple, the last one found remembered.
#[derive(Debug, Default)]
pub struct TupleMap {
    map: HashMap<FourTuple, usize>,
    last: Cell<Option<(FourTuple, usize)>>,
}

impl TupleMap {
    /// The connection index for `tuple`, if any.
    pub fn get(&self, tuple: &FourTuple) -> Option<usize> {
        if let Some((t, index)) = self.last.get() {
            if t == *tuple {
                return Some(index);
            }
        }
        let index = *self.map.get(tuple)?;
        self.last.set(Some((*tuple, index)));
        Some(index)
    }

    /// Whether `tuple` names a connection.
    pub fn contains(&self, tuple: &FourTuple) -> bool {
        self.get(tuple).is_some()
    }

    /// `tuple` now names connection `index`.
    pub fn insert(&mut self, tuple: FourTuple, index: usize) {
        self.last.set(None);
        self.map.insert(tuple, index);
    }

    /// The underlying map (for memory accounting).
    pub fn map(&self) -> &HashMap<FourTuple, usize> {
        &self.map
    }

    /// `tuple` names no connection any more.
    pub fn remove(&mut self, tuple: &FourTuple) {
        self.last.set(None);
        self.map.remove(tuple);
    }
}

/// How an incoming segment finds its connection (`--pcb-lookup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PcbLookupKind {
    /// The hash map by 4-tuple behind its one-entry cache ([`TupleMap`]).
    #[default]
    Hash,
    /// BSD's linear PCB list behind `tcp_last_inpcb`
    /// ([`super::pcb_list::PcbList`]).
    List,
}

/// The socket set's demultiplexer: the tuple map (which the set's own
/// bookkeeping always uses) and, under [`PcbLookupKind::List`], the PCB
/// list an incoming segment is looked up in.
#[derive(Debug, Default)]
pub struct Demux {
    map: TupleMap,
    list: Option<PcbList>,
}

impl Demux {
    /// Which lookup incoming segments take.
    pub fn kind(&self) -> PcbLookupKind {
        match self.list {
            Some(_) => PcbLookupKind::List,
            None => PcbLookupKind::Hash,
        }
    }

    /// Switches to `kind`: a list is built from the map and `listeners`
    /// (port, entry), in no particular order.
    pub fn set_kind(&mut self, kind: PcbLookupKind, listeners: &[(u16, usize)]) {
        self.list = match kind {
            PcbLookupKind::Hash => None,
            PcbLookupKind::List => {
                let mut list = PcbList::default();
                for &(port, index) in listeners {
                    list.listen(port, index);
                }
                for (tuple, &index) in &self.map.map {
                    list.insert(*tuple, index);
                }
                Some(list)
            }
        };
    }

    /// The connection index for exactly `tuple` (the map's answer).
    pub fn get(&self, tuple: &FourTuple) -> Option<usize> {
        self.map.get(tuple)
    }

    /// Whether `tuple` names a connection.
    pub fn contains(&self, tuple: &FourTuple) -> bool {
        self.map.contains(tuple)
    }

    /// An incoming segment's lookup: under the list, the entry of the best
    /// match, which may be a listener's.
    pub fn lookup_input(&self, tuple: &FourTuple) -> Option<usize> {
        match &self.list {
            Some(list) => list.lookup(tuple),
            None => self.map.get(tuple),
        }
    }

    /// `tuple` now names connection `index`.
    pub fn insert(&mut self, tuple: FourTuple, index: usize) {
        self.map.insert(tuple, index);
        if let Some(list) = &mut self.list {
            list.insert(tuple, index);
        }
    }

    /// `tuple` names no connection any more.
    pub fn remove(&mut self, tuple: &FourTuple) {
        self.map.remove(tuple);
        if let Some(list) = &mut self.list {
            list.remove(tuple);
        }
    }

    /// A listener (entry `index`) on `port`.
    pub fn listen(&mut self, port: u16, index: usize) {
        if let Some(list) = &mut self.list {
            list.listen(port, index);
        }
    }

    /// The listener at entry `index` is gone.
    pub fn unlisten(&mut self, index: usize) {
        if let Some(list) = &mut self.list {
            list.unlisten(index);
        }
    }

    /// The list's counters (zero under the hash).
    pub fn list_counters(&self) -> PcbListCounters {
        self.list
            .as_ref()
            .map(PcbList::counters)
            .unwrap_or_default()
    }

    /// The underlying map (for memory accounting).
    pub fn map(&self) -> &HashMap<FourTuple, usize> {
        &self.map.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn tuple(port: u16) -> FourTuple {
        FourTuple {
            local: SocketAddr::from(([10, 0, 0, 2], port)),
            remote: SocketAddr::from(([10, 0, 0, 1], 5001)),
        }
    }

    #[test]
    fn a_cached_tuple_is_forgotten_when_removed_or_remapped() {
        let mut m = TupleMap::default();
        m.insert(tuple(1), 7);
        assert_eq!(m.get(&tuple(1)), Some(7));
        assert_eq!(m.get(&tuple(1)), Some(7), "from the cache");
        m.remove(&tuple(1));
        assert_eq!(m.get(&tuple(1)), None);
        m.insert(tuple(1), 8);
        assert_eq!(m.get(&tuple(1)), Some(8));
        m.insert(tuple(1), 9);
        assert_eq!(m.get(&tuple(1)), Some(9));
        assert!(!m.contains(&tuple(2)));
    }

    #[test]
    fn under_the_list_a_segment_finds_a_listener_the_map_never_names() {
        let mut d = Demux::default();
        d.insert(tuple(1), 7);
        d.set_kind(PcbLookupKind::List, &[(2, 3)]);
        assert_eq!(d.kind(), PcbLookupKind::List);
        assert_eq!(d.lookup_input(&tuple(1)), Some(7));
        assert_eq!(d.lookup_input(&tuple(2)), Some(3), "the listener");
        assert_eq!(d.get(&tuple(2)), None);
        d.remove(&tuple(1));
        assert_eq!(d.lookup_input(&tuple(1)), None);
        d.unlisten(3);
        assert_eq!(d.lookup_input(&tuple(2)), None);
        let c = d.list_counters();
        assert_eq!(c.cache_misses + c.cache_hits, 4);
    }
}
