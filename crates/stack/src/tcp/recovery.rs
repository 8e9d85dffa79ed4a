//! What an acceptable ACK does to the sender: new data acknowledged (RTT
//! sample by Karn's rule, congestion control, the retransmission timer),
//! duplicate ACKs, and fast retransmit with NewReno recovery (RFC 6582) or
//! SACK-based recovery (RFC 6675) as [`RecoveryKind`](super::tcb::RecoveryKind) says.
//!
//! A period controller changes that ([`FastRecovery`]): Tahoe's fast
//! retransmit enters no recovery (cwnd is one segment, slow start
//! follows), and 4.3BSD-Reno's recovery ends on the first ACK of new
//! data, partial or not. Neither has RFC 6582's `recover` guard, nor uses
//! the SACK scoreboard to recover.

use super::cc::FastRecovery;
use super::sack::DEFAULT_DUP_THRESH;
use super::tcb::{Connection, Segment};
use super::timers::TimerKind;
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::TcpRepr;

impl Connection {
    /// Feeds the ACK's SACK blocks to the scoreboard; returns the bytes
    /// newly SACKed. Counts the ranges its cap dropped.
    pub(crate) fn update_scoreboard(&mut self, seg: &TcpRepr<'_>, ack: SeqNumber) -> usize {
        if !self.sack_ok {
            return 0;
        }
        let update = self.scoreboard.on_ack(ack, &seg.sack_ranges);
        self.counters.sack_ranges_pruned += update.pruned as u64;
        update.newly_sacked
    }

    /// SND.UNA < ack ≤ SND.MAX: data (and perhaps our FIN) acknowledged.
    pub(crate) fn on_new_ack(&mut self, ack: SeqNumber, now: Instant, out: &mut Vec<Segment>) {
        let acked = ack - self.snd_una;
        let fin_seq = self.fin_seq();
        if self.fin_queued && ack > fin_seq {
            self.fin_acked = true;
        }
        let data_acked = acked.min(self.send_buf.len());
        {
            let _b = crate::account::enter(crate::account::Block::BufferManagement);
            self.send_buf.drain(..data_acked);
        }
        self.snd_una = ack;
        // The scoreboard's HighACK follows SND.UNA on every path (the
        // full path's SACK update has already moved it: then a no-op;
        // empty blocks: O(1)), or after 2 GiB of ACKs on the fast path it
        // reads as ahead of HighData.
        self.scoreboard.on_ack(ack, &[None; 3]);
        if self.snd_nxt < self.snd_una {
            self.snd_nxt = self.snd_una;
        }
        self.rtt_on_ack(ack, acked, now);
        // RFC 6298 §5.2–5.3.
        if self.snd_una == self.snd_max {
            self.timers.cancel(TimerKind::Retransmit);
        } else {
            self.timers
                .arm_after(TimerKind::Retransmit, now, self.rto_in_force());
        }
        self.recovery.dup_acks = 0;
        self.recovery.consecutive_timeouts = 0;
        let ends_on_new_ack = self.cc.fast_recovery() == FastRecovery::EndsOnNewAck;
        match self.recovery.point {
            Some(point) if ack >= point || ends_on_new_ack => {
                self.recovery.point = None;
                self.recovery.inflation = 0;
                self.scoreboard.on_recovery_exit();
                self.cc.on_recovery_exit(now);
                self.note_cwnd(super::cwnd_trace::CwndCause::RecoveryExit, now);
            }
            Some(_) => self.on_partial_ack(acked, now, out),
            None => self.cc_on_ack(acked, data_acked, now),
        }
        self.pull_up_recover();
        self.loss_probe_on_ack(ack, now);
    }

    /// Outside recovery, RFC 6582's `recover` follows SND.UNA once SND.UNA
    /// has passed it. Only whether SND.UNA has reached `recover` matters
    /// (§3.2 step 2), and that answer is kept; but a `recover` left where
    /// the last loss put it falls 2^31 octets behind after 2 GiB without
    /// a loss, where the modular comparison reads it as ahead of SND.UNA
    /// and fast retransmit would stay off until a timeout.
    pub(super) fn pull_up_recover(&mut self) {
        if self.recovery.point.is_none() && self.recovery.recover < self.snd_una {
            self.recovery.recover = self.snd_una;
        }
    }

    /// An ACK inside recovery that does not reach the recovery point.
    fn on_partial_ack(&mut self, acked: usize, now: Instant, out: &mut Vec<Segment>) {
        if self.sack_recovery() {
            // RFC 6675: the transmission loop in `output` does the work.
            return;
        }
        // RFC 6582 §3.2 step 5: retransmit the first unacknowledged
        // segment, deflate by the amount acknowledged, add back one SMSS
        // if at least one was acknowledged.
        let mss = self.data_mss();
        let add_back = if acked >= mss { mss } else { 0 };
        self.recovery.inflation = self.recovery.inflation.saturating_sub(acked) + add_back;
        self.retransmit_first(now, out);
    }

    /// Retransmits one segment at SND.UNA.
    pub(crate) fn retransmit_first(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let len = self.data_mss().min(self.send_buf.len());
        if len > 0 {
            if self.sack_recovery() {
                self.scoreboard.on_retransmit(self.snd_una, len);
            }
            self.send_range(self.snd_una, len, now, out);
        }
    }

    /// RFC 3042's limited transmit: on the first two duplicate ACKs outside
    /// recovery, up to two segments of new data beyond cwnd, so a small
    /// window still brings the third duplicate ACK instead of a timeout.
    /// Not for the 1990 controllers (`tahoe`, `reno90`), which predate it.
    pub(crate) fn limited_transmit_allowance(&self) -> usize {
        if self.recovery.point.is_some()
            || self.cc.fast_recovery() != FastRecovery::UntilRecoveryPoint
        {
            return 0;
        }
        self.recovery.dup_acks.min(DEFAULT_DUP_THRESH - 1) * self.data_mss()
    }

    /// How many duplicate ACKs one stands for: one, or one per segment
    /// its SACK blocks newly cover. Linux compresses the duplicate ACKs it
    /// sends for out-of-order data (`tcp_comp_sack_nr`: one ACK per
    /// millisecond or so, its SACK blocks covering every segment that
    /// arrived since), so counting ACKs alone undercounts what left the
    /// network: fast retransmit came late and NewReno's inflation stayed
    /// below the flight, and a retransmission timeout ended recovery.
    /// The 1990 controllers count ACKs, as BSD's `t_dupacks` did.
    fn dup_ack_weight(&self, newly_sacked: usize) -> usize {
        if newly_sacked == 0 || self.cc.fast_recovery() != FastRecovery::UntilRecoveryPoint {
            1
        } else {
            newly_sacked.div_ceil(self.data_mss())
        }
    }

    /// A duplicate ACK (RFC 5681 §2's definition, or RFC 6675's: one whose
    /// SACK blocks cover new data), weighted by the segments it newly SACKs.
    pub(crate) fn on_dup_ack(&mut self, newly_sacked: usize, now: Instant, out: &mut Vec<Segment>) {
        let weight = self.dup_ack_weight(newly_sacked);
        self.counters.dup_acks += 1;
        let before = self.recovery.dup_acks;
        self.recovery.dup_acks += weight;
        if self.recovery.point.is_some() {
            if !self.sack_recovery() {
                // RFC 6582 §3.2 step 4: inflate by one SMSS per segment
                // that left the network.
                self.recovery.inflation += weight * self.data_mss();
            }
            return;
        }
        let lost = self.sack_recovery() && self.scoreboard.is_lost(self.snd_una);
        if self.recovery.dup_acks < DEFAULT_DUP_THRESH && !lost {
            return;
        }
        let style = self.cc.fast_recovery();
        if style == FastRecovery::None && before >= DEFAULT_DUP_THRESH {
            // Tahoe: only the third duplicate ACK retransmits (BSD's
            // `++t_dupacks == tcprexmtthresh`).
            return;
        }
        // RFC 6582 §3.2 step 2: only if the ACK covers more than "recover",
        // the highest sequence number sent, which is SND.MAX − 1 here
        // (`recover` holds SND.MAX): an ACK of exactly SND.MAX qualifies.
        if style == FastRecovery::UntilRecoveryPoint && self.snd_una < self.recovery.recover {
            return;
        }
        self.counters.fast_retransmits += 1;
        let flight = self.snd_max - self.snd_una;
        self.cc.on_fast_retransmit(flight, now);
        self.note_cwnd(super::cwnd_trace::CwndCause::FastRetransmit, now);
        self.recovery.recover = self.snd_max;
        self.timers.cancel(TimerKind::LossProbe);
        if style == FastRecovery::None {
            self.retransmit_first(now, out);
            return;
        }
        self.recovery.point = Some(self.snd_max);
        if !self.sack_recovery() {
            // RFC 6582 §3.2 step 3's "+ 3·SMSS" is the segments that left
            // the network; a compressed ACK may stand for more.
            let left = self.recovery.dup_acks.max(DEFAULT_DUP_THRESH) * self.data_mss();
            self.recovery.inflation = left.min(flight);
        }
        self.retransmit_first(now, out);
    }
}
