//! What the TCP sockets cost in memory: every allocation the set owns,
//! by capacity, so `tests/scale.rs` can report bytes per connection and
//! check the sum against a counting allocator.

use super::{Entry, Listener, Segment, Socket, TcpSockets};
use crate::tcp::isn::FourTuple;
use std::collections::HashMap;

impl TcpSockets {
    /// Heap bytes the socket set owns: every socket's box with its
    /// connection's buffers, listeners and their pending queues, the slot
    /// table, the 4-tuple and port maps, the timer queue, the dirty and
    /// free lists, the outbox and the spare payload buffers, each by
    /// capacity. Divided by the number
    /// of connections it is the memory per connection.
    pub fn memory_bytes(&self) -> usize {
        let sockets: usize = self
            .entries
            .iter()
            .flatten()
            .map(|e| match e {
                Entry::Socket(s) => std::mem::size_of::<Socket>() + s.conn.heap_bytes(),
                Entry::Listener(l) => {
                    std::mem::size_of::<Listener>()
                        + l.pending.capacity() * std::mem::size_of::<usize>()
                }
            })
            .sum();
        let outbox: usize = self.outbox.capacity() * std::mem::size_of::<(FourTuple, Segment)>()
            + self
                .outbox
                .iter()
                .map(|(_, s)| s.payload.capacity())
                .sum::<usize>();
        let pool = self.payload_pool.capacity() * std::mem::size_of::<Vec<u8>>()
            + self.payload_pool.iter().map(Vec::capacity).sum::<usize>();
        sockets
            + self.entries.capacity() * std::mem::size_of::<Option<Entry>>()
            + (self.free.capacity() + self.dirty.capacity() + self.visit.capacity())
                * std::mem::size_of::<usize>()
            + self.timers.heap_bytes()
            + hash_map_bytes(self.by_tuple.map())
            + hash_map_bytes(&self.listeners)
            + outbox
            + pool
    }
}

/// The bytes a std `HashMap` allocated for its capacity: hashbrown's
/// buckets (a power of two, 7/8 of them usable beyond 8) of entries, then
/// one control byte per bucket and a 16-byte group, the entries rounded
/// up to the group's alignment.
fn hash_map_bytes<K, V>(map: &HashMap<K, V>) -> usize {
    const GROUP: usize = 16;
    let capacity = map.capacity();
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        capacity + 1
    } else {
        capacity * 8 / 7
    };
    let entries = (buckets * std::mem::size_of::<(K, V)>()).next_multiple_of(GROUP);
    entries + buckets + GROUP
}
