//! Sequence bookkeeping of a UDP receiver in a bounded window: loss,
//! duplicates, reordering and RFC 1889 jitter, in memory fixed per flow
//! whatever sequence numbers the datagrams carry.
//!
//! The tracker remembers which of the [`WINDOW`] sequence numbers up to the
//! highest seen have arrived (a sliding bitmap, as IPsec's anti-replay
//! window). A datagram above the window slides it forward; one below it
//! (older than `WINDOW` behind the highest) cannot be told from a duplicate
//! and counts as out-of-window, neither distinct nor duplicate.

use crate::report::UdpCounters;

/// Sequence numbers the window spans behind the highest seen (8 KiB of
/// bitmap per flow). A datagram delayed past this many later ones is
/// out-of-window.
pub const WINDOW: u32 = 1 << 16;
const WORDS: usize = (WINDOW / 64) as usize;

/// A receiver's sequence tracker, shared by every implementation of a
/// receiving end (the kernel engine's and tcplab's own stack's).
#[derive(Debug)]
pub struct SeqTracker {
    /// Bit `s % WINDOW` is set once `s` (within the window) has arrived.
    seen: Box<[u64; WORDS]>,
    /// The highest sequence number seen.
    top: Option<u32>,
    pub(crate) counters: UdpCounters,
    last_transit: Option<i64>,
}

impl Default for SeqTracker {
    fn default() -> SeqTracker {
        SeqTracker {
            seen: Box::new([0; WORDS]),
            top: None,
            counters: UdpCounters::default(),
            last_transit: None,
        }
    }
}

fn slot(seq: u32) -> (usize, u64) {
    let i = seq % WINDOW;
    ((i / 64) as usize, 1u64 << (i % 64))
}

impl SeqTracker {
    /// Counts data datagram `seq`, sent at `send_us` and received at
    /// `recv_us` (both from [`super::udp::now_us32`]).
    pub fn record(&mut self, seq: u32, send_us: u32, recv_us: u32) {
        self.counters.received += 1;
        match self.top {
            Some(top) if seq <= top => {
                if top - seq >= WINDOW {
                    self.counters.out_of_window += 1;
                    return;
                }
                let (w, b) = slot(seq);
                if self.seen[w] & b != 0 {
                    self.counters.duplicates += 1;
                    return;
                }
                self.seen[w] |= b;
                if seq < top {
                    self.counters.reordered += 1;
                }
            }
            Some(top) => {
                self.slide(top, seq);
                self.set(seq);
            }
            None => {
                self.top = Some(seq);
                self.set(seq);
            }
        }
        self.counters.distinct += 1;
        // RFC 1889 §6.3.1: J += (|D| - J) / 16, D the change in transit time.
        let transit = i64::from(recv_us.wrapping_sub(send_us) as i32);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).abs() as f64 * 1e-6;
            self.counters.jitter_s += (d - self.counters.jitter_s) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// Moves the window's top from `top` to `to` (> `top`), forgetting the
    /// slots the numbers in between reuse.
    fn slide(&mut self, top: u32, to: u32) {
        if to - top >= WINDOW {
            self.seen.fill(0);
        } else {
            let mut s = top.wrapping_add(1);
            // Bit by bit up to a word boundary, then whole words.
            while s != to.wrapping_add(1) {
                let (w, b) = slot(s);
                if s.is_multiple_of(64) && to - s >= 63 {
                    self.seen[w] = 0;
                    s = s.wrapping_add(64);
                } else {
                    self.seen[w] &= !b;
                    s = s.wrapping_add(1);
                }
            }
        }
        self.top = Some(to);
    }

    fn set(&mut self, seq: u32) {
        let (w, b) = slot(seq);
        self.seen[w] |= b;
    }

    /// The counters so far.
    pub fn counters(&self) -> UdpCounters {
        self.counters.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn track(seqs: impl IntoIterator<Item = u32>) -> UdpCounters {
        let mut t = SeqTracker::default();
        for s in seqs {
            t.record(s, 0, 10);
        }
        t.counters()
    }

    #[test]
    fn tracker_separates_loss_reorder_and_duplicates() {
        let c = track([0u32, 1, 3, 2, 2, 5, 130]);
        assert_eq!(c.received, 7);
        assert_eq!(c.distinct, 6);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.reordered, 1);
        assert_eq!(c.out_of_window, 0);
        assert_eq!(c.jitter_s, 0.0);
    }

    #[test]
    fn loss_is_what_never_arrived() {
        // Every third of 300_000 lost: the window slides many times over.
        let c = track((0..300_000u32).filter(|s| s % 3 != 0));
        assert_eq!(c.distinct, 200_000);
        assert_eq!((c.duplicates, c.reordered, c.out_of_window), (0, 0, 0));
    }

    #[test]
    fn duplicates_and_reordering_are_told_within_the_window() {
        let top = 3 * WINDOW + 17;
        let mut seqs: Vec<u32> = (0..=top).collect();
        // The oldest number still inside the window arrives late, twice,
        // and a recent one is repeated.
        seqs.retain(|&s| s != top - WINDOW + 1);
        seqs.extend([top - WINDOW + 1, top - WINDOW + 1, top - 5]);
        let c = track(seqs);
        assert_eq!(c.distinct, u64::from(top) + 1);
        assert_eq!(c.reordered, 1);
        assert_eq!(c.duplicates, 2);
        assert_eq!(c.out_of_window, 0);
    }

    #[test]
    fn old_datagrams_are_out_of_window_not_duplicates() {
        let top = WINDOW + 100;
        let mut seqs: Vec<u32> = (0..=top).collect();
        // 0 and 100 arrived already and are now past the window; 101 is
        // the oldest number the window still holds.
        seqs.extend([0, 100, 101]);
        let c = track(seqs);
        assert_eq!(c.out_of_window, 2);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.distinct, u64::from(top) + 1);
        assert_eq!(c.received, u64::from(top) + 4);
    }

    #[test]
    fn a_far_future_datagram_slides_the_window_and_costs_no_memory() {
        let mut t = SeqTracker::default();
        for s in 0..1000u32 {
            t.record(s, 0, 10);
        }
        let before = std::mem::size_of_val(&*t.seen);
        for far in [0xFFFF_FFFD, 0xFFFF_FFFC, 0x8000_0000] {
            t.record(far, 0, 10);
        }
        assert_eq!(std::mem::size_of_val(&*t.seen), before);
        assert_eq!(before, (WINDOW / 8) as usize);
        let c = t.counters();
        // 0xFFFFFFFC is within the window below the new top; 0x80000000
        // and the flow's own next numbers are far behind it.
        t.record(1000, 0, 10);
        let c2 = t.counters();
        assert_eq!(c.distinct, 1002);
        assert_eq!(c.reordered, 1);
        assert_eq!(c.out_of_window, 1);
        assert_eq!(c2.out_of_window, 2);
    }

    #[test]
    fn jitter_follows_rfc1889() {
        let mut t = SeqTracker::default();
        // transit alternates 100 µs and 200 µs: |D| = 100 µs each step.
        for i in 0..1000u32 {
            let transit = if i % 2 == 0 { 100 } else { 200 };
            t.record(i, 1000 * i, 1000 * i + transit);
        }
        assert!(
            (t.counters.jitter_s - 100e-6).abs() < 1e-6,
            "{}",
            t.counters.jitter_s
        );
    }
}
