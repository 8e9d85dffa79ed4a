//! RFC 9293 §3.10.7.4 "SEGMENT ARRIVES" in the synchronized states: PAWS
//! (RFC 7323 §5, checked in `options`), the sequence acceptability test, RST and SYN with RFC
//! 5961's challenge ACKs (§3, §4), ACK acceptability (§5) and processing,
//! the window update rules, data into the receive buffer or the
//! reassembly queue, FIN and the close states through TIME-WAIT (and RFC
//! 6191's rule for a new SYN in it). 4.3BSD-Reno's header prediction, the
//! switchable fast path in front of it, is `header_prediction`.
//!
//! Where this departs from the RFCs' words, on purpose:
//! - A RST in SYN-RECEIVED closes a passive open rather than returning it
//!   to LISTEN (§3.10.7.4): the LISTEN is the socket layer's listener,
//!   which stays; the connection was made for one SYN, and is dropped as
//!   BSD and Linux drop an embryonic connection.
//! - A SYN in TIME-WAIT that RFC 6191 does not let in is answered with an
//!   ACK (RFC 9293's and RFC 5961's answer in TIME-WAIT) rather than
//!   dropped silently as RFC 6191 words it, as Linux answers it: the
//!   peer's RST to that ACK then clears the way.
//! - A SYN that RFC 6191 lets in ends TIME-WAIT at once, and the new
//!   incarnation opens with an ISN a window above the old one's SND.MAX
//!   (RFC 9293 §3.6.1's first condition, as Linux). Its second condition,
//!   going back to TIME-WAIT should the SYN prove an old duplicate, is not
//!   met, as Linux does not: the old incarnation's state is gone; an old
//!   duplicate SYN draws a SYN-ACK the peer answers with a RST.

use std::time::Duration;

use super::state::State;
use super::tcb::{Connection, ConnectionError, Segment};
use super::timers::TimerKind;
use super::window::AckDecision;
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::{TcpControl, TcpRepr};

impl Connection {
    /// RCV.WND as last advertised: what remains open to the right of RCV.NXT.
    pub(super) fn open_window(&self) -> usize {
        if self.rcv_adv > self.rcv_nxt {
            self.rcv_adv - self.rcv_nxt
        } else {
            0
        }
    }

    /// §3.10.7.4's four-case acceptability test, with the allowance for a
    /// zero window: a segment at RCV.NXT is taken for its ACK and RST.
    fn acceptable(&self, seg: &TcpRepr<'_>) -> bool {
        let wnd = self.open_window();
        let seq = seg.seq_number;
        let len = seg.segment_len();
        let (start, end) = (self.rcv_nxt, self.rcv_nxt + wnd);
        match (len, wnd) {
            (0, 0) => seq == self.rcv_nxt,
            (0, _) => seq.in_range(start, end),
            (_, 0) => seq == self.rcv_nxt,
            _ => seq.in_range(start, end) || (seq + (len - 1)).in_range(start, end),
        }
    }

    /// A challenge ACK (RFC 5961), within the per-second limit of §7.
    fn challenge_ack(&mut self, now: Instant) {
        if let Some(limit) = self.config.challenge_ack_limit {
            let (start, sent) = &mut self.challenge_window;
            if now.since(*start) >= Duration::from_secs(1) {
                *start = now;
                *sent = 0;
            }
            if *sent >= limit {
                self.counters.challenge_acks_suppressed += 1;
                return;
            }
            *sent += 1;
        }
        self.counters.challenge_acks += 1;
        self.ack_now = true;
    }

    /// The full path for SYN-RECEIVED and every later state.
    pub(crate) fn input_synchronized(
        &mut self,
        seg: &TcpRepr<'_>,
        now: Instant,
        out: &mut Vec<Segment>,
    ) {
        if self.lacks_timestamp(seg) {
            return;
        }
        if self.fails_paws(seg, now) {
            self.counters.paws_drops += 1;
            self.ack_now = true;
            return;
        }
        if !self.acceptable(seg) {
            if seg.control != TcpControl::Rst {
                self.ack_now = true;
            }
            if self.state == State::TimeWait && seg.control == TcpControl::Fin {
                // The peer's FIN again: our ACK was lost. Restart 2·MSL.
                self.timers.enter_time_wait(now);
            }
            return;
        }
        match seg.control {
            TcpControl::Rst => return self.input_reset(seg, now),
            // RFC 5961 §4: any SYN here gets a challenge ACK.
            TcpControl::Syn => return self.challenge_ack(now),
            _ => {}
        }
        let Some(ack) = seg.ack_number else {
            return;
        };
        if self.state == State::SynReceived {
            if ack <= self.snd_una || ack > self.snd_max {
                if let Some(rst) = super::input::reset_for(seg) {
                    self.counters.segments_out += 1;
                    out.push(rst);
                }
                return;
            }
            // Our SYN is acknowledged; the ACK's data part goes on below.
            self.snd_una = self.iss + 1;
            self.recovery.consecutive_timeouts = 0;
            if self.snd_nxt < self.snd_una {
                self.snd_nxt = self.snd_una;
            }
            self.rtt_on_ack(self.snd_una, 1, now);
            self.on_handshake_done();
            if self.snd_una == self.snd_max {
                self.timers.cancel(TimerKind::Retransmit);
            }
            // A close() in SYN-RECEIVED waited for this (§3.10.4).
            self.state = if self.fin_queued {
                State::FinWait1
            } else {
                State::Established
            };
            self.snd_wnd = (seg.window_len as usize) << self.snd_shift;
            self.max_snd_wnd = self.max_snd_wnd.max(self.snd_wnd);
            self.snd_wl1 = seg.seq_number;
            self.snd_wl2 = ack;
        }
        if !self.input_ack(seg, ack, now, out) {
            return;
        }
        self.note_timestamp(seg, now);
        match self.state {
            State::FinWait1 if self.fin_acked => self.state = State::FinWait2,
            State::Closing if self.fin_acked => self.enter_time_wait(now),
            State::LastAck if self.fin_acked => {
                self.enter_closed(None);
                return;
            }
            State::TimeWait if seg.control == TcpControl::Fin => {
                // A retransmitted FIN: acknowledge it and restart 2·MSL.
                self.ack_now = true;
                self.timers.enter_time_wait(now);
                return;
            }
            _ => {}
        }
        self.input_data(seg, now);
    }

    /// RFC 5961 §3: a RST exactly at RCV.NXT resets; one elsewhere in the
    /// window only draws a challenge ACK.
    fn input_reset(&mut self, seg: &TcpRepr<'_>, now: Instant) {
        if seg.seq_number != self.rcv_nxt {
            self.challenge_ack(now);
            return;
        }
        // §3.10.7.4 returns a passive open in SYN-RECEIVED to LISTEN. Here
        // the LISTEN is the socket layer's listener, which stays; this
        // connection was made for one SYN's 4-tuple, and is dropped as BSD
        // and Linux drop an embryonic connection (its backlog slot is
        // freed when the socket layer reaps it). Kept in LISTEN it would
        // hold the slot forever: nothing accepts or reaps a LISTEN one.
        let error = if self.state == State::SynReceived {
            ConnectionError::Refused
        } else {
            ConnectionError::Reset
        };
        match self.state {
            State::Closing | State::LastAck | State::TimeWait => self.enter_closed(None),
            _ => self.enter_closed(Some(error)),
        }
    }

    /// ACK acceptability (RFC 5961 §5), processing and the window update;
    /// false if the segment is to be dropped.
    fn input_ack(
        &mut self,
        seg: &TcpRepr<'_>,
        ack: SeqNumber,
        now: Instant,
        out: &mut Vec<Segment>,
    ) -> bool {
        if ack > self.snd_max {
            // Acknowledges something not yet sent.
            self.ack_now = true;
            return false;
        }
        if ack < self.snd_una - self.max_snd_wnd {
            self.challenge_ack(now);
            return false;
        }
        let window = (seg.window_len as usize) << self.snd_shift;
        let newly_sacked = self.update_scoreboard(seg, ack);
        if ack > self.snd_una {
            self.on_new_ack(ack, now, out);
        } else if ack == self.snd_una
            && self.snd_max > self.snd_una
            && seg.payload.is_empty()
            && seg.control == TcpControl::None
            && (window == self.snd_wnd || newly_sacked > 0)
        {
            self.on_dup_ack(newly_sacked, now, out);
        }
        self.detect_lost_retransmission(seg, ack, now, out);
        // §3.10.7.4's window update rule.
        if ack >= self.snd_una
            && (self.snd_wl1 < seg.seq_number
                || (self.snd_wl1 == seg.seq_number && self.snd_wl2 <= ack))
        {
            self.snd_wnd = window;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
            self.snd_wl1 = seg.seq_number;
            self.snd_wl2 = ack;
        }
        true
    }

    /// Data and FIN: trimmed to the window, into the receive buffer (via
    /// the reassembly queue when out of order), acknowledged per the
    /// delayed-ACK policy.
    fn input_data(&mut self, seg: &TcpRepr<'_>, now: Instant) {
        let mut fin_at =
            (seg.control == TcpControl::Fin).then(|| seg.seq_number + seg.payload.len());
        if !self.state.receives_data() {
            if !seg.payload.is_empty() || fin_at.is_some() {
                self.ack_now = true;
            }
            return;
        }
        let mut seq = seg.seq_number;
        let mut payload = seg.payload;
        if seq < self.rcv_nxt {
            let cut = (self.rcv_nxt - seq).min(payload.len());
            payload = &payload[cut..];
            seq = self.rcv_nxt;
        }
        let room = self.open_window().saturating_sub(seq - self.rcv_nxt);
        if payload.len() > room {
            payload = &payload[..room];
            fin_at = None;
            self.ack_now = true;
        }
        if !payload.is_empty() {
            let had_gap = !self.reassembly.is_empty();
            let in_order = seq == self.rcv_nxt;
            let stored = self.take_data(seq, payload);
            let out_of_order = !in_order || had_gap || !self.reassembly.is_empty();
            self.on_data_received(payload.len(), out_of_order || stored == 0, now);
        } else if !seg.payload.is_empty() {
            // All old: a duplicate, acknowledged at once.
            self.ack_now = true;
        }
        if let Some(at) = fin_at {
            self.peer_fin_at = Some(at);
            self.ack_now = true;
        }
        if self.peer_fin_at == Some(self.rcv_nxt) {
            self.peer_fin_at = None;
            self.input_fin(now);
        }
    }

    /// Takes `payload` at `seq` (inside the window) into the receive
    /// buffer: straight there when it is in order with nothing queued
    /// (one copy, no allocation), else through the reassembly queue.
    /// Returns the bytes newly stored.
    pub(super) fn take_data(&mut self, seq: SeqNumber, payload: &[u8]) -> usize {
        if self.reassembly.accept_in_order(seq, payload.len()) {
            let _b = crate::account::enter(crate::account::Block::BufferManagement);
            self.recv_buf.extend(payload);
            self.rcv_nxt = self.reassembly.rcv_nxt();
            return payload.len();
        }
        let _b = crate::account::enter(crate::account::Block::Reassembly);
        let outcome = self.reassembly.insert(seq, payload);
        self.counters.ooo_pruned_bytes += (outcome.pruned + outcome.evicted) as u64;
        if !self.reassembly.has_gap() && !self.reassembly.is_empty() {
            let mut ready = Vec::new();
            self.reassembly.drain_ready(&mut ready);
            self.recv_buf.extend(ready);
            self.rcv_nxt = self.reassembly.rcv_nxt();
        }
        outcome.stored
    }

    /// The delayed-ACK decision for `len` bytes just taken.
    pub(super) fn on_data_received(&mut self, len: usize, out_of_order: bool, now: Instant) {
        let _b = crate::account::enter(crate::account::Block::AckGeneration);
        let segment = self.data_mss().min(self.config.mss as usize);
        let full = len >= segment;
        if len >= 2 * segment {
            // A super-packet (the kernel's GRO or TSO left it whole) stands
            // for several full-sized segments: ACK as for the second.
            self.delack.on_data(true, out_of_order);
        }
        match self.delack.on_data(full, out_of_order) {
            AckDecision::Now => self.ack_now = true,
            AckDecision::Delay(d) => {
                if self.timers.deadline(TimerKind::DelayedAck).is_none() {
                    self.timers.arm_after(TimerKind::DelayedAck, now, d);
                }
            }
            AckDecision::Hold => {}
        }
    }

    /// The peer's FIN reached RCV.NXT.
    fn input_fin(&mut self, now: Instant) {
        self.rcv_nxt = self.rcv_nxt + 1;
        self.ack_now = true;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 if self.fin_acked => self.enter_time_wait(now),
            State::FinWait1 => self.state = State::Closing,
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    /// RFC 6191 §2: whether `seg`, a SYN for this connection's 4-tuple
    /// while it is in TIME-WAIT, may end it for a new incarnation, which a
    /// listener then opens; `timestamps_on` says whether the new one would
    /// use timestamps (the SYN offers them and the listener is configured
    /// to). With timestamps on both incarnations, a TSval above TS.Recent
    /// qualifies, or an equal one with a newer sequence number; otherwise a
    /// sequence number above the last one seen (the FIN's, RCV.NXT − 1).
    /// A SYN that does not qualify is answered as RFC 9293 answers any
    /// segment in TIME-WAIT (an ACK, or RFC 5961's challenge ACK; RFC 6191
    /// would drop it silently): the peer's RST to that ACK then clears the
    /// way, as with Linux, which also answers it.
    pub fn time_wait_accepts_syn(&self, seg: &TcpRepr<'_>, timestamps_on: bool) -> bool {
        if self.state != State::TimeWait
            || seg.control != TcpControl::Syn
            || seg.ack_number.is_some()
        {
            return false;
        }
        let newer_seq = seg.seq_number > self.rcv_nxt - 1;
        let recent = self.ts_recent.filter(|_| self.ts_ok);
        match (recent, seg.timestamp.filter(|_| timestamps_on)) {
            (Some(recent), Some((val, _))) => {
                let ahead = val.wrapping_sub(recent) as i32;
                ahead > 0 || (ahead == 0 && newer_seq)
            }
            _ => newer_seq,
        }
    }

    pub(crate) fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        self.timers.enter_time_wait(now);
    }
}
