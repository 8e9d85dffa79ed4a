//! The 4-tuple → connection map with a one-entry cache in front: a bulk
//! transfer's segments all name the same connection, so most lookups are
//! answered by one comparison instead of hashing the tuple (SipHash was
//! about 1.5% of a Linux → tcplab stream's samples). Any insert or removal
//! empties the cache, so it never names a stale entry.

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
}
