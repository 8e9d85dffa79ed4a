//! Header prediction as Van Jacobson wrote it (4.3BSD-Reno's and Net/3's
//! `tcp_input.c` fast path, issue 29): in ESTABLISHED, a segment with no
//! flags but ACK, at RCV.NXT, the window unchanged and nothing being
//! retransmitted (SND.NXT = SND.MAX) is one of two cases, each handled
//! here in full, never by the full path's ACK processing:
//! - **a pure ACK of new data**, only while `snd_cwnd ≥ snd_wnd` and
//!   outside recovery: the RTT sample if one is timed, the acknowledged
//!   bytes dropped from the send buffer (`sbdrop`), SND.UNA advanced, the
//!   retransmission timer stopped or restarted, the writer woken (here:
//!   the socket layer's next poll sees the room) and output tried (the
//!   caller's `output` after input). **The congestion window is not
//!   grown**, as in Net/3: its predicate demands cwnd ≥ the peer's
//!   window, when growing cwnd cannot let more out (the peer's window
//!   limits first), so VJ left the growth to the full path;
//! - **pure in-sequence data** acknowledging nothing new, with nothing
//!   queued out of order and room in the receive buffer: appended
//!   (`sbappend`), RCV.NXT advanced, the ACK delayed.
//!
//! What this adds to VJ's, each because this stack's other state would
//! otherwise go stale: the timestamp echo (RFC 7323, which Net/3's
//! prediction also takes), the SACK scoreboard's HighACK and NewReno's
//! `recover` following SND.UNA (both O(1); left behind they read as ahead
//! after 2 GiB), the duplicate-ACK count cleared, and the tail-loss probe
//! rescheduled. Not done, as in Net/3: the congestion controller's ACK
//! event and the cwnd-validation record of the window used.

use super::state::State;
use super::tcb::Connection;
use super::timers::TimerKind;
use crate::time::Instant;
use crate::wire::tcp::{TcpControl, TcpRepr};

impl Connection {
    /// The fast path: returns false (having changed nothing) to take the
    /// full path.
    pub(crate) fn fast_path(&mut self, seg: &TcpRepr<'_>, now: Instant) -> bool {
        let predicted = seg.ack_number.is_some()
            && self.state == State::Established
            && seg.control == TcpControl::None
            && seg.seq_number == self.rcv_nxt
            && (seg.window_len as usize) << self.snd_shift == self.snd_wnd
            && self.snd_nxt == self.snd_max
            && self.recovery.point.is_none()
            && seg.sack_ranges.iter().all(Option::is_none)
            && !self.fails_paws(seg, now)
            && (!self.ts_ok || seg.timestamp.is_some());
        if !predicted {
            return false;
        }
        let hit = if seg.payload.is_empty() {
            self.predicted_ack(seg, now)
        } else {
            self.predicted_data(seg, now)
        };
        if hit {
            self.counters.header_prediction_hits += 1;
        }
        hit
    }

    /// A pure ACK of new data, as Net/3's `tcps_predack` case.
    fn predicted_ack(&mut self, seg: &TcpRepr<'_>, now: Instant) -> bool {
        let ack = seg.ack_number.expect("checked by the caller");
        if ack <= self.snd_una
            || ack > self.snd_max
            || self.cc.cwnd() < self.snd_wnd
            || (self.fin_queued && ack > self.fin_seq())
        {
            return false;
        }
        self.note_timestamp(seg, now);
        let acked = ack - self.snd_una;
        {
            let _b = crate::account::enter(crate::account::Block::BufferManagement);
            let data_acked = acked.min(self.send_buf.len());
            self.send_buf.drain(..data_acked);
        }
        self.snd_una = ack;
        self.rtt_on_ack(ack, acked, now);
        if self.snd_una == self.snd_max {
            self.timers.cancel(TimerKind::Retransmit);
        } else {
            self.timers
                .arm_after(TimerKind::Retransmit, now, self.rto_in_force());
        }
        self.scoreboard.on_ack(ack, &[None; 3]);
        self.recovery.dup_acks = 0;
        self.recovery.consecutive_timeouts = 0;
        self.pull_up_recover();
        self.cwnd_use.pull_up(ack);
        self.loss_probe_on_ack(ack, now);
        // What the full path's window-update rule would do (the window
        // is unchanged): both edges follow the segment.
        self.snd_wl1 = seg.seq_number;
        self.snd_wl2 = ack;
        true
    }

    /// In-order data acknowledging nothing new, as Net/3's
    /// `tcps_preddat` case.
    fn predicted_data(&mut self, seg: &TcpRepr<'_>, now: Instant) -> bool {
        // A FIN that came ahead of its data waits in `peer_fin_at` (BSD
        // keeps it in the reassembly queue, which its prediction checks):
        // the full path applies it when the data reaches it.
        if seg.ack_number != Some(self.snd_una)
            || !self.reassembly.is_empty()
            || self.peer_fin_at.is_some()
            || seg.payload.len() > self.open_window()
        {
            return false;
        }
        self.note_timestamp(seg, now);
        // The window is unchanged, but SND.WL1 must follow SEG.SEQ as the
        // full path's update rule would move it: left behind, it reads as
        // ahead of SEG.SEQ after 2 GiB received and the rule then ignores
        // the peer's window (4.4BSD's bug, which FreeBSD fixed the same
        // way).
        self.snd_wl1 = seg.seq_number;
        self.snd_wl2 = self.snd_una;
        self.take_data(seg.seq_number, seg.payload);
        self.on_data_received(seg.payload.len(), false, now);
        true
    }
}
