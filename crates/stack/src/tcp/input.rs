//! RFC 9293 §3.10.7 "SEGMENT ARRIVES" for the unsynchronized states:
//! CLOSED (§3.10.7.1), LISTEN (§3.10.7.2) and SYN-SENT (§3.10.7.3, with
//! simultaneous open), the handshake (its options negotiated in
//! `options`), and the
//! entry point that dispatches to the header-prediction fast path or the
//! synchronized states' full path (`input_sync`).

use super::reassembly::Reassembly;
use super::sack::Scoreboard;
use super::state::State;
use super::tcb::{Connection, ConnectionError, Segment};
use super::timers::TimerKind;
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::{TcpControl, TcpRepr};

/// The reset RFC 9293 §3.10.7.1 answers an unexpected segment with:
/// `<SEQ=SEG.ACK><CTL=RST>` if it had an ACK, else
/// `<SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>`; none for a RST.
pub fn reset_for(seg: &TcpRepr<'_>) -> Option<Segment> {
    if seg.control == TcpControl::Rst {
        return None;
    }
    let mut h = TcpRepr::bare(seg.dst_port, seg.src_port, SeqNumber(0));
    h.control = TcpControl::Rst;
    match seg.ack_number {
        Some(ack) => h.seq_number = ack,
        None => h.ack_number = Some(seg.seq_number + seg.segment_len()),
    }
    Some(Segment::new(h, Vec::new()))
}

impl Connection {
    /// A segment for this connection arrived at `now`; returns the
    /// segments to send in reply (ACKs, RSTs, data the ACK let out).
    pub fn on_segment(&mut self, seg: &TcpRepr<'_>, now: Instant) -> Vec<Segment> {
        let mut out = Vec::new();
        if self.input(seg, now, &mut out) {
            self.output(now, &mut out);
        }
        out
    }

    /// [`Connection::on_segment`] for a segment read in a batch: in
    /// ESTABLISHED, when the segment answered nothing at once and left no
    /// gap in the sequence space, its reply (the ACK, data the ACK let
    /// out) waits for the next [`Connection::poll_output`], so a batch of
    /// in-order segments is answered by one ACK after the batch (as
    /// Linux's GRO does), not one every second segment. Out-of-order data
    /// and everything outside ESTABLISHED is answered at once, so the
    /// peer still sees each duplicate ACK. Returns what to send now and
    /// whether output is left for `poll_output`.
    pub fn on_segment_in_batch(&mut self, seg: &TcpRepr<'_>, now: Instant) -> (Vec<Segment>, bool) {
        let mut out = Vec::new();
        if !self.input(seg, now, &mut out) {
            return (out, false);
        }
        let defer = out.is_empty()
            && self.state == State::Established
            && seg.control == TcpControl::None
            && self.reassembly.is_empty();
        if !defer {
            self.output(now, &mut out);
        }
        (out, defer)
    }

    /// The input half of `on_segment`: returns whether output follows.
    fn input(&mut self, seg: &TcpRepr<'_>, now: Instant, out: &mut Vec<Segment>) -> bool {
        self.counters.segments_in += 1;
        self.seg_tsecr = seg
            .timestamp
            .filter(|_| seg.ack_number.is_some())
            .map(|(_, ecr)| ecr);
        let full = self.data_mss();
        self.counters.sws.on_data_in(seg.payload.len(), full);
        match self.state {
            State::Closed => {
                if let Some(rst) = reset_for(seg) {
                    self.counters.segments_out += 1;
                    out.push(rst);
                }
                return false;
            }
            State::Listen => self.input_listen(seg, now, out),
            State::SynSent => self.input_syn_sent(seg, now, out),
            _ => {
                if !(self.config.header_prediction && self.fast_path(seg, now)) {
                    self.input_synchronized(seg, now, out);
                } else {
                    crate::account::relabel(
                        crate::account::Block::TcpInputSlow,
                        crate::account::Block::TcpInputFast,
                    );
                }
            }
        }
        if self.config.keepalive && self.state.is_synchronized() && self.state != State::TimeWait {
            self.timers.on_peer_heard(now);
        }
        true
    }

    fn reply_reset(&mut self, seg: &TcpRepr<'_>, out: &mut Vec<Segment>) {
        if let Some(rst) = reset_for(seg) {
            self.counters.segments_out += 1;
            out.push(rst);
        }
    }

    /// §3.10.7.2: RST ignored, ACK answered with RST, SYN → SYN-RECEIVED.
    fn input_listen(&mut self, seg: &TcpRepr<'_>, now: Instant, out: &mut Vec<Segment>) {
        if seg.control == TcpControl::Rst {
            return;
        }
        if seg.ack_number.is_some() {
            self.reply_reset(seg, out);
            return;
        }
        if seg.control != TcpControl::Syn {
            return;
        }
        self.accept_peer_syn(seg, now);
        self.snd_wnd = seg.window_len as usize;
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = seg.seq_number;
        self.snd_wl2 = self.iss;
        self.state = State::SynReceived;
        self.snd_nxt = self.iss;
    }

    /// §3.10.7.3: our SYN is out; the peer's SYN-ACK (or, in a
    /// simultaneous open, its SYN) or a RST arrives.
    fn input_syn_sent(&mut self, seg: &TcpRepr<'_>, now: Instant, out: &mut Vec<Segment>) {
        if let Some(ack) = seg.ack_number {
            if ack <= self.iss || ack > self.snd_max {
                self.reply_reset(seg, out);
                return;
            }
        }
        if seg.control == TcpControl::Rst {
            // RFC 5961 §3: acceptable only if it acknowledges our SYN.
            if seg.ack_number.is_some() {
                self.enter_closed(Some(ConnectionError::Refused));
            }
            return;
        }
        if seg.control != TcpControl::Syn {
            return;
        }
        self.accept_peer_syn(seg, now);
        self.snd_wnd = seg.window_len as usize;
        self.max_snd_wnd = self.snd_wnd;
        self.snd_wl1 = seg.seq_number;
        match seg.ack_number {
            Some(ack) => {
                self.snd_una = ack;
                self.snd_wl2 = ack;
                self.recovery.consecutive_timeouts = 0;
                self.rtt_on_ack(ack, 1, now);
                self.on_handshake_done();
                self.timers.cancel(TimerKind::Retransmit);
                self.scoreboard = Scoreboard::new(self.snd_una, self.data_mss());
                self.state = State::Established;
                self.ack_now = true;
            }
            None => {
                // Simultaneous open: SYN-ACK with our same ISS.
                self.snd_wl2 = self.iss;
                self.state = State::SynReceived;
                self.snd_nxt = self.iss;
            }
        }
    }

    /// Takes the peer's SYN: IRS, RCV.NXT, and the options it offers
    /// (negotiated in `options`), then sizes the congestion controller
    /// and the scoreboard to the MSS that leaves.
    fn accept_peer_syn(&mut self, seg: &TcpRepr<'_>, now: Instant) {
        self.irs = seg.seq_number;
        self.rcv_nxt = seg.seq_number + 1;
        self.rcv_adv = self.rcv_nxt;
        self.reassembly = Reassembly::new(self.rcv_nxt, self.config.recv_buffer);
        self.negotiate_options(seg, now);
        self.cc = self
            .config
            .congestion
            .build_with(self.data_mss(), self.config.initial_window);
        self.scoreboard = Scoreboard::new(self.iss + 1, self.data_mss());
    }
}
