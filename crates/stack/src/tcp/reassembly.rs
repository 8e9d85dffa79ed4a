//! The receiver's out-of-order queue: segments kept by sequence range,
//! overlapping and duplicate bytes trimmed (the first copy to arrive wins),
//! contiguous data released in order, everything held within a byte bound
//! (the receive window), and the SACK blocks it would report (RFC 2018 §4:
//! the block holding the latest segment first, then the others from the
//! most recently changed).
//!
//! Cost (issue 27): a segment costs O(log n) in the n runs held, plus a
//! copy of its own bytes and of the smaller runs it joins. The runs live
//! in a `BTreeMap` keyed by their unwrapped 64-bit stream offset, and a
//! segment is merged at once with every run it overlaps or touches, so no
//! two runs are adjacent. When runs join, the smaller one's bytes move
//! into the larger (each byte moves at most log₂ of the window times).
//! One segment lands in exactly one run, so each run's last arrival is
//! unique, and a second map from it to the run gives RFC 2018's block
//! order: three blocks cost O(log n), not a walk of every run.
//!
//! Cap (a deliberate bound, as Linux's `tcp_prune_ofo_queue` and
//! smoltcp's fixed contig count have one): at most [`max_pieces`] runs,
//! one per [`BYTES_PER_PIECE`] bytes of the byte bound and at least
//! [`MIN_PIECES`]: 512 for the default 256 KiB window. Measured by
//! `benches/ooo_flood.rs`, a one-byte run costs 128 bytes of heap by the
//! allocator's count (185 by [`Reassembly::heap_bytes`], an upper
//! estimate), so at the cap the bookkeeping is a quarter of the window,
//! and `heap_bytes` stays within 2 · held + 256 · `max_pieces` + 1 KiB.
//! A one-byte segment costs 100 to 170 ns however many came before (the
//! unmerged, uncapped list took 1.3 ms a segment by the 262,144th). Runs of whole segments
//! of 512 bytes or more (every MSS in use: IPv4's smallest is 536) take
//! 513 bytes of window each with their hole, so a window holds fewer of
//! them than the cap. A segment that would make one run too many is
//! dropped when it would be the highest; otherwise the highest run is
//! dropped to make room (what Linux prunes first: the data furthest from
//! `rcv_nxt`). Dropping data already SACKed is RFC 2018 §8's reneging;
//! the sender keeps it until it is acknowledged cumulatively and sends it
//! again. [`InsertOutcome`] says what the cap dropped, and the connection
//! counts it (`Counters::ooo_pruned_bytes`).

use std::collections::{BTreeMap, VecDeque};

use super::memory::btree_heap_bytes;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::SackBlocks;

/// The largest byte bound: RFC 7323's largest window, 2³⁰ bytes.
pub const MAX_CAPACITY: usize = 1 << 30;

/// The piece cap allows one run per this many bytes of the byte bound.
pub const BYTES_PER_PIECE: usize = 512;

/// The piece cap whatever the byte bound.
pub const MIN_PIECES: usize = 64;

/// The most runs a queue of `capacity` bytes holds: one per
/// [`BYTES_PER_PIECE`], at least [`MIN_PIECES`].
pub fn max_pieces(capacity: usize) -> usize {
    (capacity.min(MAX_CAPACITY) / BYTES_PER_PIECE).max(MIN_PIECES)
}

/// One stored run of bytes (its start is its key).
#[derive(Debug, Clone)]
struct Piece {
    data: VecDeque<u8>,
    /// When a segment last arrived in this run (a counter, not a time).
    touched: u64,
}

/// What an insert did with a segment's bytes: `stored + duplicate +
/// beyond_bound + pruned` is the segment's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InsertOutcome {
    /// Bytes newly stored.
    pub stored: usize,
    /// Bytes already received (before `rcv_nxt`, or already queued).
    pub duplicate: usize,
    /// Bytes beyond the byte bound, dropped.
    pub beyond_bound: usize,
    /// Bytes dropped by the piece cap: the segment would have made a run
    /// too many, above every run held.
    pub pruned: usize,
    /// Bytes of the highest run, dropped by the piece cap to make room
    /// for this segment's run.
    pub evicted: usize,
}

/// The out-of-order queue from `rcv_nxt` up to `rcv_nxt + capacity`.
#[derive(Debug, Clone)]
pub struct Reassembly {
    rcv_nxt: SeqNumber,
    /// `rcv_nxt` as an offset in the stream since the queue was made
    /// (it never wraps: 2⁶⁴ bytes).
    nxt_off: u64,
    capacity: usize,
    max_pieces: usize,
    /// The runs by start offset: disjoint, none empty, none adjacent to
    /// another (adjacent ones are merged).
    pieces: BTreeMap<u64, Piece>,
    /// Each run's `touched` to its start offset.
    recent: BTreeMap<u64, u64>,
    held: usize,
    arrivals: u64,
}

/// Puts `bytes` in front of `run`, in order.
fn prepend<'a>(
    run: &mut VecDeque<u8>,
    bytes: impl DoubleEndedIterator<Item = &'a u8> + ExactSizeIterator,
) {
    run.reserve(bytes.len());
    for &b in bytes.rev() {
        run.push_front(b);
    }
}

impl Reassembly {
    /// An empty queue expecting `rcv_nxt`, holding at most `capacity` bytes
    /// (at most 2³⁰, RFC 7323's largest window, so sequence comparisons
    /// inside it hold) in at most [`max_pieces`] runs.
    pub fn new(rcv_nxt: SeqNumber, capacity: usize) -> Reassembly {
        Reassembly {
            rcv_nxt,
            nxt_off: 0,
            capacity: capacity.min(MAX_CAPACITY),
            max_pieces: max_pieces(capacity),
            pieces: BTreeMap::new(),
            recent: BTreeMap::new(),
            held: 0,
            arrivals: 0,
        }
    }

    /// Heap bytes held: each run's buffer by capacity, and the two maps'
    /// nodes counted at their least fill (an upper estimate).
    pub fn heap_bytes(&self) -> usize {
        btree_heap_bytes::<u64, Piece>(self.pieces.len())
            + btree_heap_bytes::<u64, u64>(self.recent.len())
            + self
                .pieces
                .values()
                .map(|p| p.data.capacity())
                .sum::<usize>()
    }

    /// The next sequence number expected in order.
    pub fn rcv_nxt(&self) -> SeqNumber {
        self.rcv_nxt
    }

    /// Bytes held, in order or not.
    pub fn held_bytes(&self) -> usize {
        self.held
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Stored runs (a cost the accounting of issue 19 may report).
    pub fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// The most runs this queue holds ([`max_pieces`] of its bound).
    pub fn max_pieces(&self) -> usize {
        self.max_pieces
    }

    /// Whether any byte above `rcv_nxt` is missing before held data: the
    /// queue holds out-of-order data.
    pub fn has_gap(&self) -> bool {
        self.pieces
            .first_key_value()
            .is_some_and(|(&start, _)| start != self.nxt_off)
    }

    /// The common case without a copy into the queue: when nothing is
    /// held and `len` bytes arrive at `rcv_nxt` within the bound, they are
    /// in order as they stand, so `rcv_nxt` advances past them and the
    /// caller moves them straight to its receive buffer (no piece, no
    /// allocation). Returns false, changing nothing, otherwise: `insert`.
    pub fn accept_in_order(&mut self, seq: SeqNumber, len: usize) -> bool {
        if !self.pieces.is_empty() || seq != self.rcv_nxt || len > self.capacity {
            return false;
        }
        self.arrivals += 1;
        self.advance(len);
        true
    }

    fn advance(&mut self, len: usize) {
        self.rcv_nxt = self.rcv_nxt + len;
        self.nxt_off += len as u64;
    }

    /// The sequence number at stream offset `off` (at or above `rcv_nxt`).
    fn seq_at(&self, off: u64) -> SeqNumber {
        self.rcv_nxt + (off - self.nxt_off) as usize
    }

    /// Removes the run at `start`, forgetting its arrival.
    fn take(&mut self, start: u64) -> Option<Piece> {
        let piece = self.pieces.remove(&start)?;
        self.recent.remove(&piece.touched);
        Some(piece)
    }

    /// Stores the bytes of a segment starting at `seq` that are new and
    /// within the bound, merged with the runs they overlap or touch.
    pub fn insert(&mut self, seq: SeqNumber, data: &[u8]) -> InsertOutcome {
        let mut outcome = InsertOutcome::default();
        self.arrivals += 1;
        let stamp = self.arrivals;
        // Trim what lies before rcv_nxt (modulo 2³²: "before" is within 2³¹).
        let (mut start, mut bytes) = (seq, data);
        if start < self.rcv_nxt {
            let old = (self.rcv_nxt - start).min(bytes.len());
            outcome.duplicate += old;
            bytes = &bytes[old..];
            start = self.rcv_nxt;
        }
        // Trim what lies beyond the bound.
        let room = self.capacity.saturating_sub(start - self.rcv_nxt);
        if bytes.len() > room {
            outcome.beyond_bound = bytes.len() - room;
            bytes = &bytes[..room];
        }
        if bytes.is_empty() {
            return outcome;
        }
        let s = self.nxt_off + (start - self.rcv_nxt) as u64;
        let e = s + bytes.len() as u64;
        // The segment's bytes in [from, to) (offsets within it).
        let part = |from: u64, to: u64| &bytes[(from - s) as usize..(to - s) as usize];
        // The run that starts before the segment and reaches it.
        let left = match self.pieces.range(..s).next_back() {
            Some((&a, p)) if a + p.data.len() as u64 >= s => Some(a),
            _ => None,
        };
        let touches = left.is_some() || self.pieces.range(s..=e).next().is_some();
        if !touches && self.pieces.len() >= self.max_pieces {
            // The cap: a run too many. Linux's prune from the highest end.
            match self.pieces.last_key_value() {
                Some((&highest, _)) if highest > s => {
                    if let Some(p) = self.take(highest) {
                        outcome.evicted = p.data.len();
                        self.held -= p.data.len();
                    }
                }
                _ => {
                    outcome.pruned = bytes.len();
                    return outcome;
                }
            }
        }
        // The merged run [run_start, run_end) with `run` its bytes so far.
        let (run_start, mut run_end, mut run) = match left.and_then(|a| Some((a, self.take(a)?))) {
            Some((a, p)) => (a, a + p.data.len() as u64, p.data),
            None => (s, s, VecDeque::new()),
        };
        let mut added = 0;
        while let Some(next) = self.pieces.range(s..=e).next().map(|(&k, _)| k) {
            let Some(p) = self.take(next) else { break };
            let gap = part(run_end.max(s), next);
            added += gap.len();
            let next_end = next + p.data.len() as u64;
            // The smaller side's bytes move into the larger.
            if run.len() >= p.data.len() {
                run.extend(gap);
                run.extend(p.data.iter());
            } else {
                let mut bigger = p.data;
                prepend(&mut bigger, gap.iter());
                prepend(&mut bigger, run.iter());
                run = bigger;
            }
            run_end = next_end;
        }
        if run_end < e {
            let tail = part(run_end.max(s), e);
            added += tail.len();
            if run.is_empty() {
                run = VecDeque::from(tail.to_vec());
            } else {
                run.extend(tail);
            }
        }
        outcome.stored = added;
        outcome.duplicate += bytes.len() - added;
        self.held += added;
        self.pieces.insert(
            run_start,
            Piece {
                data: run,
                touched: stamp,
            },
        );
        self.recent.insert(stamp, run_start);
        outcome
    }

    /// Moves the data contiguous with `rcv_nxt` to `out`, advancing
    /// `rcv_nxt`; returns how many bytes.
    pub fn drain_ready(&mut self, out: &mut Vec<u8>) -> usize {
        if self.has_gap() {
            return 0;
        }
        let Some(piece) = self.take(self.nxt_off) else {
            return 0;
        };
        let (a, b) = piece.data.as_slices();
        out.extend_from_slice(a);
        out.extend_from_slice(b);
        let moved = piece.data.len();
        self.advance(moved);
        self.held -= moved;
        moved
    }

    /// The out-of-order runs, the most recently changed first (one
    /// starting at `rcv_nxt`, not yet drained, is in order: not one).
    fn runs_by_recency(&self) -> impl Iterator<Item = (SeqNumber, SeqNumber)> + '_ {
        self.recent
            .values()
            .rev()
            .filter(|&&start| start != self.nxt_off)
            .filter_map(|&start| {
                let p = self.pieces.get(&start)?;
                let left = self.seq_at(start);
                Some((left, left + p.data.len()))
            })
    }

    /// The out-of-order runs `[left, right)`, the most recently changed
    /// first (RFC 2018 §4's order), at most `limit` of them.
    pub fn sack_runs(&self, limit: usize) -> Vec<(SeqNumber, SeqNumber)> {
        self.runs_by_recency().take(limit).collect()
    }

    /// Up to three SACK blocks for the next ACK, in RFC 2018's order.
    pub fn sack_blocks(&self) -> SackBlocks {
        let mut blocks: SackBlocks = [None; 3];
        for (slot, run) in blocks.iter_mut().zip(self.runs_by_recency()) {
            *slot = Some(run);
        }
        blocks
    }
}

#[cfg(test)]
#[path = "reassembly_tests.rs"]
mod tests;
