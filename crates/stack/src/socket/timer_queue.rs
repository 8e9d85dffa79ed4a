//! The socket set's timer queue: one entry per (deadline, socket) in a
//! binary min-heap, so finding the earliest deadline is O(1) and taking
//! the due ones is O(due · log n), however many idle connections there are.
//!
//! Invalidation is lazy: when a connection's earliest deadline changes, a
//! new entry is pushed and the old one stays; the owner (the socket set)
//! keeps each socket's current deadline and treats an entry that does not
//! match it as stale, dropped when it reaches the top. So that stale
//! entries cannot pile up (a bulk transfer re-arms its retransmission
//! timer on every ACK), the owner rebuilds the heap from the live
//! deadlines once it holds twice as many entries as after the last
//! rebuild: O(1) amortised per push.

use crate::time::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Entries below this never trigger a rebuild.
const MIN_REBUILD_LEN: usize = 64;

/// A min-heap of (deadline, socket index) with lazy invalidation.
#[derive(Debug, Default)]
pub(crate) struct TimerQueue {
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Rebuild once the heap grows past this many entries.
    rebuild_at: usize,
}

impl TimerQueue {
    /// Adds an entry: socket `index` wants its timers run at `at`.
    pub(crate) fn push(&mut self, at: Instant, index: usize) {
        self.heap.push(Reverse((at, index)));
    }

    /// The earliest entry, stale or not.
    pub(crate) fn peek(&self) -> Option<(Instant, usize)> {
        self.heap.peek().map(|Reverse(entry)| *entry)
    }

    /// Removes the earliest entry.
    pub(crate) fn pop(&mut self) -> Option<(Instant, usize)> {
        self.heap.pop().map(|Reverse(entry)| entry)
    }

    /// Entries held, stale ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether stale entries are now numerous enough to rebuild.
    pub(crate) fn wants_rebuild(&self) -> bool {
        self.heap.len() > self.rebuild_at.max(MIN_REBUILD_LEN)
    }

    /// Replaces every entry with `live` (each socket's current deadline).
    pub(crate) fn rebuild(&mut self, live: impl Iterator<Item = (Instant, usize)>) {
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.clear();
        entries.extend(live.map(Reverse));
        self.heap = BinaryHeap::from(entries);
        self.rebuild_at = 2 * self.heap.len();
    }

    /// Heap bytes the queue holds (its capacity).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.heap.capacity() * std::mem::size_of::<Reverse<(Instant, usize)>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_deadline_order_then_index() {
        let mut q = TimerQueue::default();
        q.push(Instant(30), 1);
        q.push(Instant(10), 7);
        q.push(Instant(10), 2);
        q.push(Instant(20), 0);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (Instant(10), 2),
                (Instant(10), 7),
                (Instant(20), 0),
                (Instant(30), 1)
            ]
        );
    }

    #[test]
    fn rebuild_keeps_only_live_entries_and_doubles_the_threshold() {
        let mut q = TimerQueue::default();
        for i in 0..200 {
            q.push(Instant(i), 0);
        }
        assert!(q.wants_rebuild());
        q.rebuild([(Instant(5), 3), (Instant(4), 9)].into_iter());
        assert_eq!(q.len(), 2);
        assert!(!q.wants_rebuild());
        assert_eq!(q.peek(), Some((Instant(4), 9)));
    }
}
