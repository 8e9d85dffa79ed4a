//! The receiver's out-of-order queue: segments kept by sequence range,
//! overlapping and duplicate bytes trimmed (the first copy to arrive wins),
//! contiguous data released in order, everything held within a byte bound
//! (the receive window), and the SACK blocks it would report (RFC 2018 §4:
//! the block holding the latest segment first, then the others from the
//! most recently changed).

use crate::wire::seq::SeqNumber;
use crate::wire::tcp::SackBlocks;

/// The largest byte bound: RFC 7323's largest window, 2³⁰ bytes.
pub const MAX_CAPACITY: usize = 1 << 30;

/// One stored run of bytes.
#[derive(Debug, Clone)]
struct Piece {
    start: SeqNumber,
    data: Vec<u8>,
    /// When a segment last arrived in this piece (a counter, not a time).
    touched: u64,
}

impl Piece {
    fn end(&self) -> SeqNumber {
        self.start + self.data.len()
    }
}

/// What an insert did with a segment's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InsertOutcome {
    /// Bytes newly stored.
    pub stored: usize,
    /// Bytes already received (before `rcv_nxt`, or already queued).
    pub duplicate: usize,
    /// Bytes beyond the byte bound, dropped.
    pub beyond_bound: usize,
}

/// The out-of-order queue from `rcv_nxt` up to `rcv_nxt + capacity`.
#[derive(Debug, Clone)]
pub struct Reassembly {
    rcv_nxt: SeqNumber,
    capacity: usize,
    /// Sorted by sequence, disjoint, none empty; adjacent pieces are not
    /// merged (each keeps its arrival), runs are computed when asked.
    pieces: Vec<Piece>,
    held: usize,
    arrivals: u64,
}

impl Reassembly {
    /// An empty queue expecting `rcv_nxt`, holding at most `capacity` bytes
    /// (at most 2³⁰, RFC 7323's largest window, so sequence comparisons
    /// inside it hold).
    pub fn new(rcv_nxt: SeqNumber, capacity: usize) -> Reassembly {
        Reassembly {
            rcv_nxt,
            capacity: capacity.min(MAX_CAPACITY),
            pieces: Vec::new(),
            held: 0,
            arrivals: 0,
        }
    }

    /// Heap bytes held: the piece list's capacity and each piece's buffer.
    pub fn heap_bytes(&self) -> usize {
        self.pieces.capacity() * std::mem::size_of::<Piece>()
            + self.pieces.iter().map(|p| p.data.capacity()).sum::<usize>()
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

    /// Stored pieces (a cost the accounting of issue 19 may report).
    pub fn piece_count(&self) -> usize {
        self.pieces.len()
    }

    /// Whether any byte above `rcv_nxt` is missing before held data: the
    /// queue holds out-of-order data.
    pub fn has_gap(&self) -> bool {
        self.pieces.first().is_some_and(|p| p.start != self.rcv_nxt)
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
        self.rcv_nxt = self.rcv_nxt + len;
        true
    }

    /// Stores the bytes of a segment starting at `seq` that are new and
    /// within the bound.
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
        let end = start + bytes.len();
        // Fill the gaps between the pieces the segment overlaps.
        let mut new_pieces = Vec::new();
        let mut cursor = start;
        for piece in self.pieces.iter_mut() {
            if piece.end() <= cursor {
                continue;
            }
            if piece.start >= end {
                break;
            }
            piece.touched = stamp;
            if piece.start > cursor {
                let gap = &bytes[cursor - start..piece.start - start];
                new_pieces.push(Piece {
                    start: cursor,
                    data: gap.to_vec(),
                    touched: stamp,
                });
            }
            cursor = piece.end().min(end);
        }
        if cursor < end {
            new_pieces.push(Piece {
                start: cursor,
                data: bytes[cursor - start..].to_vec(),
                touched: stamp,
            });
        }
        let added: usize = new_pieces.iter().map(|p| p.data.len()).sum();
        outcome.stored = added;
        outcome.duplicate += bytes.len() - added;
        self.held += added;
        for piece in new_pieces {
            let rcv_nxt = self.rcv_nxt;
            let at = self
                .pieces
                .partition_point(|p| p.start - rcv_nxt < piece.start - rcv_nxt);
            self.pieces.insert(at, piece);
        }
        outcome
    }

    /// Moves the data contiguous with `rcv_nxt` to `out`, advancing
    /// `rcv_nxt`; returns how many bytes.
    pub fn drain_ready(&mut self, out: &mut Vec<u8>) -> usize {
        let ready = self
            .pieces
            .iter()
            .scan(self.rcv_nxt, |next, p| {
                (p.start == *next).then(|| {
                    *next = p.end();
                })
            })
            .count();
        let mut moved = 0;
        for piece in self.pieces.drain(..ready) {
            moved += piece.data.len();
            out.extend_from_slice(&piece.data);
        }
        self.rcv_nxt = self.rcv_nxt + moved;
        self.held -= moved;
        moved
    }

    /// The out-of-order runs `[left, right)`, the most recently changed
    /// first (RFC 2018 §4's order), at most `limit` of them.
    pub fn sack_runs(&self, limit: usize) -> Vec<(SeqNumber, SeqNumber)> {
        let mut runs: Vec<(SeqNumber, SeqNumber, u64)> = Vec::new();
        for p in &self.pieces {
            match runs.last_mut() {
                Some(run) if run.1 == p.start => {
                    run.1 = p.end();
                    run.2 = run.2.max(p.touched);
                }
                _ => runs.push((p.start, p.end(), p.touched)),
            }
        }
        runs.retain(|r| r.0 != self.rcv_nxt);
        runs.sort_by_key(|r| std::cmp::Reverse(r.2));
        runs.into_iter().take(limit).map(|r| (r.0, r.1)).collect()
    }

    /// Up to three SACK blocks for the next ACK, in RFC 2018's order.
    pub fn sack_blocks(&self) -> SackBlocks {
        let mut blocks: SackBlocks = [None; 3];
        if self.pieces.is_empty() {
            // In order (every segment of a clean transfer): nothing to
            // collect, sort or allocate.
            return blocks;
        }
        for (slot, run) in blocks.iter_mut().zip(self.sack_runs(3)) {
            *slot = Some(run);
        }
        blocks
    }
}

#[cfg(test)]
#[path = "reassembly_tests.rs"]
mod tests;
