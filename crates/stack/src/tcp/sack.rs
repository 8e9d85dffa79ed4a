//! The sender's SACK scoreboard for RFC 6675 loss recovery: which ranges
//! the peer has SACKed, `IsLost`, the `pipe` estimate and `NextSeg`.
//! The recovery state machine (when to enter and leave recovery, the
//! DupAck count) uses it; this module only keeps and reads the scoreboard.
//!
//! Sequence numbers are octets: the RFC's "segment of up to SMSS octets
//! starting at S" is a range here, and `HighRxt` is kept as the end of the
//! highest retransmitted range.

use crate::wire::seq::SeqNumber;
use crate::wire::tcp::SackBlocks;

/// RFC 6675's DupThresh.
pub const DEFAULT_DUP_THRESH: usize = 3;

/// What an ACK changed on the scoreboard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckUpdate {
    /// Bytes newly acknowledged cumulatively that had not been SACKed
    /// (so `newly_acked + newly_sacked` is RFC 6937's DeliveredData).
    pub newly_acked: usize,
    /// Bytes newly SACKed (RFC 6675 §2's "duplicate acknowledgment" test:
    /// an ACK whose SACK blocks cover new data).
    pub newly_sacked: usize,
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
    /// HighData: one past the highest octet sent.
    high_data: SeqNumber,
    /// One past the highest octet retransmitted (HighRxt + 1).
    high_rxt: SeqNumber,
    /// RescueRxt: the recovery point when the rescue retransmission was sent.
    rescue_rxt: Option<SeqNumber>,
    /// SACKed ranges within [HighACK, HighData): sorted, disjoint, merged.
    sacked: Vec<(SeqNumber, SeqNumber)>,
}

impl Scoreboard {
    /// An empty scoreboard at SND.UNA = `snd_una`.
    pub fn new(snd_una: SeqNumber, mss: usize) -> Scoreboard {
        Scoreboard {
            mss,
            dup_thresh: DEFAULT_DUP_THRESH,
            high_ack: snd_una,
            high_data: snd_una,
            high_rxt: snd_una,
            rescue_rxt: None,
            sacked: Vec::new(),
        }
    }

    /// Heap bytes held: the SACKed-range list's capacity.
    pub fn heap_bytes(&self) -> usize {
        self.sacked.capacity() * std::mem::size_of::<(SeqNumber, SeqNumber)>()
    }

    /// A retransmission was lost (found by the caller): everything
    /// retransmitted so far may be sent again (HighRxt back to HighACK).
    pub fn on_lost_retransmission(&mut self) {
        self.high_rxt = self.high_ack;
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

    /// The SACKed ranges, ascending.
    pub fn sacked(&self) -> &[(SeqNumber, SeqNumber)] {
        &self.sacked
    }

    /// Data up to `end` has been sent.
    pub fn on_send(&mut self, end: SeqNumber) {
        self.high_data = self.high_data.max(end);
    }

    /// `[start, start + len)` was retransmitted by rule 1 or 3.
    pub fn on_retransmit(&mut self, start: SeqNumber, len: usize) {
        self.high_rxt = self.high_rxt.max(start + len);
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
            let before = self.sacked_total();
            self.high_ack = ack;
            self.high_rxt = self.high_rxt.max(ack);
            self.clip_sacked();
            // SACKed bytes now covered by the ACK are not "newly acked".
            update.newly_acked -= before - self.sacked_total();
        }
        for &(left, right) in blocks.iter().flatten() {
            let left = left.max(self.high_ack);
            let right = right.min(self.high_data);
            if left < right {
                update.newly_sacked += self.add_sacked(left, right);
            }
        }
        update
    }

    fn sacked_total(&self) -> usize {
        self.sacked.iter().map(|&(l, r)| r - l).sum()
    }

    fn clip_sacked(&mut self) {
        let high_ack = self.high_ack;
        self.sacked.retain(|&(_, r)| r > high_ack);
        if let Some(first) = self.sacked.first_mut() {
            first.0 = first.0.max(high_ack);
        }
    }

    /// Merges `[left, right)`; returns how many bytes were new.
    fn add_sacked(&mut self, left: SeqNumber, right: SeqNumber) -> usize {
        let before = self.sacked_total();
        let base = self.high_ack;
        let (mut l, mut r) = (left, right);
        let mut kept = Vec::with_capacity(self.sacked.len() + 1);
        for &(a, b) in &self.sacked {
            if b < l || a > r {
                kept.push((a, b));
            } else {
                l = l.min(a);
                r = r.max(b);
            }
        }
        kept.push((l, r));
        kept.sort_by_key(|&(a, _)| a - base);
        self.sacked = kept;
        self.sacked_total() - before
    }

    /// Whether octet `seq` has been SACKed.
    pub fn is_sacked(&self, seq: SeqNumber) -> bool {
        self.sacked.iter().any(|&(l, r)| seq.in_range(l, r))
    }

    /// RFC 6675's `IsLost(SeqNum)`: DupThresh discontiguous SACKed ranges
    /// lie wholly above `seq`, or more than (DupThresh − 1)·SMSS SACKed
    /// octets do.
    pub fn is_lost(&self, seq: SeqNumber) -> bool {
        let above = seq + 1;
        let ranges = self.sacked.iter().filter(|&&(l, _)| l > seq).count();
        let bytes: usize = self
            .sacked
            .iter()
            .filter(|&&(_, r)| r > above)
            .map(|&(l, r)| r - l.max(above))
            .sum();
        ranges >= self.dup_thresh || bytes > (self.dup_thresh - 1) * self.mss
    }

    /// Every unSACKed octet below this is lost (the condition only grows
    /// as the sequence number falls); HighACK when none is.
    fn lost_boundary(&self) -> SeqNumber {
        let mut bytes = 0;
        for (k, &(l, r)) in self.sacked.iter().rev().enumerate() {
            bytes += r - l;
            if k + 1 >= self.dup_thresh || bytes > (self.dup_thresh - 1) * self.mss {
                return l;
            }
        }
        self.high_ack
    }

    /// The unSACKed ranges (holes) in [HighACK, HighData), ascending.
    pub fn holes(&self) -> Vec<(SeqNumber, SeqNumber)> {
        let mut holes = Vec::new();
        let mut cursor = self.high_ack;
        for &(l, r) in &self.sacked {
            if l > cursor {
                holes.push((cursor, l));
            }
            cursor = cursor.max(r);
        }
        if self.high_data > cursor {
            holes.push((cursor, self.high_data));
        }
        holes
    }

    /// RFC 6675's `SetPipe()`: octets in flight, counting each unSACKed
    /// octet once if not lost and once more if retransmitted.
    pub fn pipe(&self) -> usize {
        let lost_below = self.lost_boundary();
        let overlap = |(a, b): (SeqNumber, SeqNumber), (c, d): (SeqNumber, SeqNumber)| {
            let (lo, hi) = (a.max(c), b.min(d));
            if lo < hi {
                hi - lo
            } else {
                0
            }
        };
        self.holes()
            .into_iter()
            .map(|hole| {
                overlap(hole, (lost_below, self.high_data))
                    + overlap(hole, (self.high_ack, self.high_rxt))
            })
            .sum()
    }

    /// RFC 6675's `NextSeg()`. `new_data_ready` says whether unsent data
    /// is queued and the receive window admits one segment (rule 2);
    /// `in_recovery` enables the rescue retransmission (rule 4).
    pub fn next_seg(&self, new_data_ready: bool, in_recovery: bool) -> Option<NextSeg> {
        let highest_sacked = self.sacked.last().map(|&(_, r)| r);
        // Candidates for rules 1 and 3: unSACKed, above HighRxt, below the
        // highest SACKed octet.
        let candidates: Vec<(SeqNumber, usize)> = self
            .holes()
            .into_iter()
            .filter_map(|(a, b)| {
                let start = a.max(self.high_rxt);
                let end = highest_sacked.map_or(start, |h| b.min(h));
                (start < end).then(|| (start, (end - start).min(self.mss)))
            })
            .collect();
        // IsLost(s) for an unSACKed s is s < the lost boundary: one pass.
        let lost_below = self.lost_boundary();
        if let Some(&(start, len)) = candidates.iter().find(|&&(s, _)| s < lost_below) {
            return Some(NextSeg::RetransmitLost(SeqRange { start, len }));
        }
        if new_data_ready {
            return Some(NextSeg::NewData);
        }
        if let Some(&(start, len)) = candidates.first() {
            return Some(NextSeg::RetransmitUnsacked(SeqRange { start, len }));
        }
        let rescue_due = self.rescue_rxt.is_none_or(|r| self.high_ack > r);
        if in_recovery && rescue_due {
            // One segment holding the highest unSACKed octet.
            if let Some(&(a, b)) = self.holes().last() {
                let start = a.max(b - self.mss.min(b - a));
                return Some(NextSeg::Rescue(SeqRange {
                    start,
                    len: b - start,
                }));
            }
        }
        None
    }
}

#[cfg(test)]
#[path = "sack_tests.rs"]
mod tests;
