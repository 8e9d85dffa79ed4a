//! The sender's SACK scoreboard for RFC 6675 loss recovery: which ranges
//! the peer has SACKed, `IsLost`, the `pipe` estimate and `NextSeg`.
//! The recovery state machine (when to enter and leave recovery, the
//! DupAck count) uses it; this module only keeps and reads the scoreboard.
//!
//! Sequence numbers are octets: the RFC's "segment of up to SMSS octets
//! starting at S" is a range here, and `HighRxt` is kept as the end of the
//! highest retransmitted range.
//!
//! Cost (issue 27): an ACK costs O(log n) in the n SACKed ranges held, plus
//! the ranges it merges or the cumulative ACK removes (each range goes
//! once). The ranges live in a `BTreeMap` keyed by their unwrapped 64-bit
//! offset, merged when they overlap or touch. `IsLost` and the lost
//! boundary walk down from the highest range and stop after DupThresh
//! ranges; `pipe()` reads two sums kept as ranges come and go and as
//! HighRxt moves; `NextSeg()` looks up only the first hole at or above
//! HighRxt and, for the rescue, the last hole. None of them lists the
//! holes (so RFC 6675 §5's transmission loop of up to 1024 passes an ACK
//! costs O(log n) a pass).
//!
//! Cap (a deliberate bound, as Linux's sender has one: it refuses to split
//! its queue further past its memory limit, the fix for CVE-2019-11478):
//! at most [`Scoreboard::max_ranges`], one range per [`BYTES_PER_RANGE`]
//! bytes in flight and at least [`MIN_RANGES`]: 512 for the default
//! 256 KiB send buffer. Measured by `benches/ooo_flood.rs`, a range costs
//! 34 bytes of heap by the allocator's count (50 by
//! [`Scoreboard::heap_bytes`], an upper estimate), and an ACK 90 to 130 ns
//! whatever the flood. A peer that SACKs whole segments of 512 bytes or
//! more never reaches it. A block that would make one range too many is
//! ignored when it would be the highest; otherwise the highest range is
//! forgotten to make room. Both only make the sender more cautious: a
//! forgotten range counts as in flight, not lost, and is sent again only
//! when the holes below it are done or a timeout comes. [`AckUpdate`]
//! counts them (`pruned`), and the connection
//! (`Counters::sack_ranges_pruned`).

use std::collections::BTreeMap;

use super::memory::btree_heap_bytes;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::SackBlocks;

/// RFC 6675's DupThresh.
pub const DEFAULT_DUP_THRESH: usize = 3;

/// The range cap allows one SACKed range per this many bytes in flight.
pub const BYTES_PER_RANGE: usize = 512;

/// The range cap whatever the flight.
pub const MIN_RANGES: usize = 64;

/// HighACK's offset when the scoreboard is made: octets up to 2³¹ below
/// it have offsets too, so offsets compare as sequence numbers do.
const ORIGIN: u64 = 1 << 32;

/// What an ACK changed on the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckUpdate {
    /// Bytes newly acknowledged cumulatively that had not been SACKed
    /// (so `newly_acked + newly_sacked` is RFC 6937's DeliveredData).
    pub newly_acked: usize,
    /// Bytes newly SACKed (RFC 6675 §2's "duplicate acknowledgment" test:
    /// an ACK whose SACK blocks cover new data).
    pub newly_sacked: usize,
    /// SACKed ranges the range cap dropped: blocks ignored, or the highest
    /// ranges forgotten to make room for them.
    pub pruned: usize,
}

/// A range of octets to send: `[start, start + len)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqRange {
    /// The first octet.
    pub start: SeqNumber,
    /// How many octets.
    pub len: usize,
}

/// What `NextSeg` says to send (RFC 6675 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextSeg {
    /// Rule 1: retransmit `[start, start + len)`, deemed lost.
    RetransmitLost(SeqRange),
    /// Rule 2: send new data.
    NewData,
    /// Rule 3: retransmit `[start, start + len)`, not yet deemed lost.
    RetransmitUnsacked(SeqRange),
    /// Rule 4: the rescue retransmission of `[start, start + len)`.
    Rescue(SeqRange),
}

/// The scoreboard of one connection's sender.
#[derive(Debug, Clone)]
pub struct Scoreboard {
    mss: usize,
    dup_thresh: usize,
    /// HighACK: the cumulative ACK point (SND.UNA).
    high_ack: SeqNumber,
    /// HighACK's offset in the unwrapped stream ([`ORIGIN`] at first).
    ack_off: u64,
    /// HighData: one past the highest octet sent.
    high_data: SeqNumber,
    /// One past the highest octet retransmitted (HighRxt + 1).
    high_rxt: SeqNumber,
    /// RescueRxt: the recovery point when the rescue retransmission was sent.
    rescue_rxt: Option<SeqNumber>,
    /// SACKed ranges within [HighACK, HighData), start offset to end
    /// offset: disjoint, none empty, none adjacent to another (merged).
    sacked: BTreeMap<u64, u64>,
    /// Octets in `sacked`.
    sacked_bytes: usize,
    /// Octets in `sacked` below HighRxt.
    sacked_below_rxt: usize,
}

/// The octets of `[a, b)` below `limit`.
fn below(a: u64, b: u64, limit: u64) -> usize {
    (b.min(limit).saturating_sub(a)) as usize
}

impl Scoreboard {
    /// An empty scoreboard at SND.UNA = `snd_una`.
    pub fn new(snd_una: SeqNumber, mss: usize) -> Scoreboard {
        Scoreboard {
            mss,
            dup_thresh: DEFAULT_DUP_THRESH,
            high_ack: snd_una,
            ack_off: ORIGIN,
            high_data: snd_una,
            high_rxt: snd_una,
            rescue_rxt: None,
            sacked: BTreeMap::new(),
            sacked_bytes: 0,
            sacked_below_rxt: 0,
        }
    }

    /// Heap bytes held: the SACKed-range map's nodes at their least fill
    /// (an upper estimate).
    pub fn heap_bytes(&self) -> usize {
        btree_heap_bytes::<u64, u64>(self.sacked.len())
    }

    /// `seq`'s offset: sequence numbers within 2³¹ of HighACK map in order.
    fn off(&self, seq: SeqNumber) -> u64 {
        let delta = i64::from(seq.0.wrapping_sub(self.high_ack.0) as i32);
        self.ack_off.wrapping_add_signed(delta)
    }

    /// The sequence number at offset `off`.
    fn seq_at(&self, off: u64) -> SeqNumber {
        SeqNumber(
            self.high_ack
                .0
                .wrapping_add(off.wrapping_sub(self.ack_off) as u32),
        )
    }

    /// SACKed octets in `[lo, hi)`: O(log n) plus the ranges inside.
    fn sacked_in(&self, lo: u64, hi: u64) -> usize {
        if lo >= hi {
            return 0;
        }
        let mut n = 0;
        if let Some((_, &b)) = self.sacked.range(..lo).next_back() {
            n += below(lo, b, hi);
        }
        for (&a, &b) in self.sacked.range(lo..hi) {
            n += below(a, b, hi);
        }
        n
    }

    /// HighRxt = max(HighRxt, `to`), keeping the SACKed octets below it.
    fn raise_rxt(&mut self, to: SeqNumber) {
        if to > self.high_rxt {
            let (from, to_off) = (self.off(self.high_rxt), self.off(to));
            self.sacked_below_rxt += self.sacked_in(from, to_off);
            self.high_rxt = to;
        }
    }

    /// The most SACKed ranges kept: one per [`BYTES_PER_RANGE`] in flight,
    /// at least [`MIN_RANGES`].
    pub fn max_ranges(&self) -> usize {
        ((self.high_data - self.high_ack) / BYTES_PER_RANGE).max(MIN_RANGES)
    }

    /// A retransmission was lost (found by the caller): everything
    /// retransmitted so far may be sent again (HighRxt back to HighACK).
    pub fn on_lost_retransmission(&mut self) {
        self.high_rxt = self.high_ack;
        self.sacked_below_rxt = 0;
    }

    /// The sender's MSS changed (a smaller path MTU): `IsLost` and
    /// `NextSeg` count in the new one.
    pub fn set_mss(&mut self, mss: usize) {
        self.mss = mss;
    }

    /// Another DupThresh.
    pub fn with_dup_thresh(mut self, dup_thresh: usize) -> Scoreboard {
        self.dup_thresh = dup_thresh.max(1);
        self
    }

    /// HighACK.
    pub fn high_ack(&self) -> SeqNumber {
        self.high_ack
    }

    /// HighData.
    pub fn high_data(&self) -> SeqNumber {
        self.high_data
    }

    /// The SACKed ranges, ascending (a copy: O(n)).
    pub fn sacked(&self) -> Vec<(SeqNumber, SeqNumber)> {
        self.sacked
            .iter()
            .map(|(&a, &b)| (self.seq_at(a), self.seq_at(b)))
            .collect()
    }

    /// How many SACKed ranges are held.
    pub fn range_count(&self) -> usize {
        self.sacked.len()
    }

    /// Data up to `end` has been sent.
    pub fn on_send(&mut self, end: SeqNumber) {
        self.high_data = self.high_data.max(end);
    }

    /// `[start, start + len)` was retransmitted by rule 1 or 3.
    pub fn on_retransmit(&mut self, start: SeqNumber, len: usize) {
        self.raise_rxt(start + len);
    }

    /// The rescue retransmission (rule 4) was sent during the recovery
    /// that ends at `recovery_point`: RescueRxt = RecoveryPoint, and HighRxt
    /// is not moved (§4), so there is one rescue per recovery.
    pub fn on_rescue(&mut self, recovery_point: SeqNumber) {
        self.rescue_rxt = Some(recovery_point);
    }

    /// Loss recovery ended: RescueRxt is forgotten (RFC 6675 §5).
    pub fn on_recovery_exit(&mut self) {
        self.rescue_rxt = None;
    }

    /// An ACK arrived: moves HighACK and records its SACK blocks (§5's
    /// "update the scoreboard"). Blocks at or below the ACK (D-SACK) and
    /// parts beyond HighData are ignored.
    pub fn on_ack(&mut self, ack: SeqNumber, blocks: &SackBlocks) -> AckUpdate {
        let mut update = AckUpdate::default();
        if ack > self.high_ack && ack <= self.high_data {
            update.newly_acked = ack - self.high_ack;
            self.raise_rxt(ack);
            let cut = self.off(ack);
            let removed = self.clip_below(cut);
            self.sacked_bytes -= removed;
            // All of it lay below the ACK, so below HighRxt.
            self.sacked_below_rxt -= removed;
            self.high_ack = ack;
            self.ack_off = cut;
            // SACKed bytes now covered by the ACK are not "newly acked".
            update.newly_acked -= removed;
        }
        let flight = self.high_data - self.high_ack;
        let inside = |s: SeqNumber, ack: SeqNumber| s.0.wrapping_sub(ack.0) as usize <= flight;
        for &(left, right) in blocks.iter().flatten() {
            let left = left.max(self.high_ack);
            let right = right.min(self.high_data);
            if left < right && inside(left, self.high_ack) && inside(right, self.high_ack) {
                let (new, pruned) = self.add_sacked(self.off(left), self.off(right));
                update.newly_sacked += new;
                update.pruned += pruned;
            }
        }
        update
    }

    /// Removes the SACKed octets below offset `cut`; returns how many.
    fn clip_below(&mut self, cut: u64) -> usize {
        let mut removed = 0;
        while let Some((&a, &b)) = self.sacked.first_key_value() {
            if a >= cut {
                break;
            }
            self.sacked.pop_first();
            if b > cut {
                self.sacked.insert(cut, b);
                removed += (cut - a) as usize;
                break;
            }
            removed += (b - a) as usize;
        }
        removed
    }

    /// Merges `[l, r)` (offsets); returns how many bytes were new and how
    /// many ranges the cap dropped.
    fn add_sacked(&mut self, l: u64, r: u64) -> (usize, usize) {
        let rxt = self.off(self.high_rxt);
        let (mut nl, mut nr) = (l, r);
        let (mut covered, mut covered_below_rxt) = (0, 0);
        let mut pruned = 0;
        // A range starting before `l` that reaches it (overlaps or touches).
        let left = match self.sacked.range(..l).next_back() {
            Some((&a, &b)) if b >= l => Some((a, b)),
            _ => None,
        };
        let touches = left.is_some() || self.sacked.range(l..=r).next().is_some();
        if !touches && self.sacked.len() >= self.max_ranges() {
            match self.sacked.last_key_value() {
                Some((&a, &b)) if a > l => {
                    self.sacked.pop_last();
                    self.sacked_bytes -= (b - a) as usize;
                    self.sacked_below_rxt -= below(a, b, rxt);
                    pruned += 1;
                }
                _ => return (0, 1),
            }
        }
        if let Some((a, b)) = left {
            self.sacked.remove(&a);
            nl = a;
            nr = nr.max(b);
            covered += (b - a) as usize;
            covered_below_rxt += below(a, b, rxt);
        }
        while let Some((&a, &b)) = self.sacked.range(l..=nr).next() {
            self.sacked.remove(&a);
            nr = nr.max(b);
            covered += (b - a) as usize;
            covered_below_rxt += below(a, b, rxt);
        }
        self.sacked.insert(nl, nr);
        let new = (nr - nl) as usize - covered;
        self.sacked_bytes += new;
        self.sacked_below_rxt = self.sacked_below_rxt + below(nl, nr, rxt) - covered_below_rxt;
        (new, pruned)
    }

    /// Whether octet `seq` has been SACKed.
    pub fn is_sacked(&self, seq: SeqNumber) -> bool {
        let o = self.off(seq);
        self.sacked
            .range(..=o)
            .next_back()
            .is_some_and(|(_, &b)| o < b)
    }

    /// RFC 6675's `IsLost(SeqNum)`: DupThresh discontiguous SACKed ranges
    /// lie wholly above `seq`, or more than (DupThresh − 1)·SMSS SACKed
    /// octets do. Walks down from the highest range: at most DupThresh
    /// of them.
    pub fn is_lost(&self, seq: SeqNumber) -> bool {
        let s = self.off(seq);
        let above = s + 1;
        let limit = (self.dup_thresh - 1) * self.mss;
        let (mut ranges, mut bytes) = (0, 0);
        for (&l, &r) in self.sacked.iter().rev() {
            if r <= above {
                break;
            }
            bytes += (r - l.max(above)) as usize;
            if l > s {
                ranges += 1;
            }
            if ranges >= self.dup_thresh || bytes > limit {
                return true;
            }
            if l <= s {
                // Every range below ends below `l`: nothing above `seq`.
                break;
            }
        }
        false
    }

    /// Every unSACKed octet below this offset is lost (the condition only
    /// grows as the sequence number falls), with the SACKed octets at and
    /// above it; HighACK and all SACKed octets when none is.
    fn lost_boundary_off(&self) -> (u64, usize) {
        let mut bytes = 0;
        for (k, (&l, &r)) in self.sacked.iter().rev().enumerate() {
            bytes += (r - l) as usize;
            if k + 1 >= self.dup_thresh || bytes > (self.dup_thresh - 1) * self.mss {
                return (l, bytes);
            }
        }
        (self.ack_off, self.sacked_bytes)
    }

    /// Every unSACKed octet below this is lost; HighACK when none is.
    #[cfg(test)]
    fn lost_boundary(&self) -> SeqNumber {
        self.seq_at(self.lost_boundary_off().0)
    }

    /// The unSACKed ranges (holes) in [HighACK, HighData), ascending (a
    /// list of them all: O(n), for inspection; the per-ACK paths do not
    /// use it).
    pub fn holes(&self) -> Vec<(SeqNumber, SeqNumber)> {
        let mut holes = Vec::new();
        let mut cursor = self.ack_off;
        for (&l, &r) in &self.sacked {
            if l > cursor {
                holes.push((self.seq_at(cursor), self.seq_at(l)));
            }
            cursor = cursor.max(r);
        }
        let high_data = self.off(self.high_data);
        if high_data > cursor {
            holes.push((self.seq_at(cursor), self.high_data));
        }
        holes
    }

    /// RFC 6675's `SetPipe()`: octets in flight, counting each unSACKed
    /// octet once if not lost and once more if retransmitted.
    pub fn pipe(&self) -> usize {
        let high_data = self.off(self.high_data);
        // UnSACKed octets not lost: [lost boundary, HighData) less the
        // SACKed ones there.
        let (lost_below, sacked_above) = self.lost_boundary_off();
        let not_lost = (high_data - lost_below) as usize - sacked_above;
        // UnSACKed octets retransmitted: [HighACK, HighRxt) within
        // [HighACK, HighData), less the SACKed ones there.
        let rxt = self.off(self.high_rxt).min(high_data);
        let retransmitted = (rxt - self.ack_off) as usize - self.sacked_below_rxt;
        not_lost + retransmitted
    }

    /// RFC 6675's `NextSeg()`. `new_data_ready` says whether unsent data
    /// is queued and the receive window admits one segment (rule 2);
    /// `in_recovery` enables the rescue retransmission (rule 4).
    pub fn next_seg(&self, new_data_ready: bool, in_recovery: bool) -> Option<NextSeg> {
        let high_data = self.off(self.high_data);
        // Rules 1 and 3 look at the first unSACKed octet above HighRxt
        // and below the highest SACKed octet; the holes above it come
        // later in the same order, so only that one is a candidate.
        let candidate = self.sacked.last_key_value().and_then(|(_, &highest)| {
            let mut start = self.off(self.high_rxt);
            if let Some((_, &b)) = self.sacked.range(..=start).next_back() {
                start = start.max(b);
            }
            let hole_end = self
                .sacked
                .range(start..)
                .next()
                .map_or(high_data, |(&a, _)| a);
            let end = hole_end.min(highest).min(high_data);
            (start < end).then(|| (start, ((end - start) as usize).min(self.mss)))
        });
        // IsLost(s) for an unSACKed s is s < the lost boundary.
        let lost_below = self.lost_boundary_off().0;
        if let Some((start, len)) = candidate.filter(|&(s, _)| s < lost_below) {
            return Some(NextSeg::RetransmitLost(SeqRange {
                start: self.seq_at(start),
                len,
            }));
        }
        if new_data_ready {
            return Some(NextSeg::NewData);
        }
        if let Some((start, len)) = candidate {
            return Some(NextSeg::RetransmitUnsacked(SeqRange {
                start: self.seq_at(start),
                len,
            }));
        }
        let rescue_due = self.rescue_rxt.is_none_or(|r| self.high_ack > r);
        if in_recovery && rescue_due {
            // One segment holding the highest unSACKed octet.
            if let Some((a, b)) = self.last_hole(high_data) {
                let start = a.max(b - (self.mss as u64).min(b - a));
                return Some(NextSeg::Rescue(SeqRange {
                    start: self.seq_at(start),
                    len: (b - start) as usize,
                }));
            }
        }
        None
    }

    /// The highest hole, by offsets: O(log n).
    fn last_hole(&self, high_data: u64) -> Option<(u64, u64)> {
        let mut top = self.sacked.iter().rev();
        match top.next() {
            None => (high_data > self.ack_off).then_some((self.ack_off, high_data)),
            Some((_, &b)) if b < high_data => Some((b, high_data)),
            Some((&a, _)) => {
                let below = top.next().map_or(self.ack_off, |(_, &pb)| pb);
                (a > below).then_some((below, a))
            }
        }
    }
}

#[cfg(test)]
#[path = "sack_tests.rs"]
mod tests;
