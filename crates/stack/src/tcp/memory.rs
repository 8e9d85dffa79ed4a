//! What one connection costs in memory: its struct and every heap
//! allocation it owns, by capacity (what the allocator handed out, not
//! what is in use), so a socket set can report bytes per connection.
//!
//! The buffers grow on demand: the send and receive queues start empty
//! (`VecDeque::new()`, no allocation) and grow to what the application
//! and the peer actually queue, up to `send_buffer`/`recv_buffer`; the
//! reassembly queue and the SACK scoreboard hold only what is out of
//! order. An idle established connection therefore owns its struct, its
//! RTT estimator and its congestion controller, nothing more.

use super::tcb::Connection;

/// Heap bytes a `BTreeMap` of `len` entries of `K` and `V` holds at most:
/// std's nodes hold 11 entries and, but for the root, at least 5; an
/// internal node holds 12 edges more.
pub(crate) fn btree_heap_bytes<K, V>(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let entries = 11 * (std::mem::size_of::<K>() + std::mem::size_of::<V>());
    let leaf = (16 + entries).next_multiple_of(8);
    let internal = leaf + 12 * std::mem::size_of::<usize>();
    let leaves = len.div_ceil(5);
    let internals = if leaves > 1 { leaves.div_ceil(5) } else { 0 };
    leaves * leaf + internals * internal
}

impl Connection {
    /// Heap bytes owned beyond the struct itself: buffers by capacity, the
    /// reassembly queue, the scoreboard, the boxed estimator and controller.
    pub fn heap_bytes(&self) -> usize {
        self.send_buf.capacity()
            + self.recv_buf.capacity()
            + self.reassembly.heap_bytes()
            + self.scoreboard.heap_bytes()
            + self.rtt_timer.heap_bytes()
            + std::mem::size_of_val(&*self.rtt)
            + std::mem::size_of_val(&*self.cc)
    }

    /// The connection's memory: `size_of::<Connection>()` plus
    /// [`Connection::heap_bytes`].
    pub fn memory_bytes(&self) -> usize {
        std::mem::size_of::<Connection>() + self.heap_bytes()
    }
}
