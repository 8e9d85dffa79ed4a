//! What a connection sends now (RFC 9293 §3.8, RFC 1122 §4.2.3): the SYN
//! or SYN-ACK (its options from `options`), data within min(cwnd, the peer's window)
//! as the sender SWS/Nagle switch allows, the FIN, ACKs as the delayed-ACK
//! policy says with SACK blocks from the reassembly queue, and the timers:
//! retransmission with Karn's rule, delayed ACK, persist probes, TIME-WAIT.
//! Under rate-based flow control new data also waits for the pacer, whose
//! next send time is a timer, so the event loop wakes for it.

use super::sack::NextSeg;
use super::state::State;
use super::tcb::{Connection, Segment};
use super::timers::{KeepaliveAction, TimerKind};
use super::window::{SendDecision, SendState};
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::{TcpControl, TcpRepr};

impl Connection {
    /// Sends whatever is due after the application's calls (`send`,
    /// `recv`, `close`): data, a FIN, a window update.
    pub fn poll_output(&mut self, now: Instant) -> Vec<Segment> {
        let mut out = Vec::new();
        self.output(now, &mut out);
        out
    }

    /// [`Connection::poll_output`] appending to `out`, so a caller sending
    /// a window's worth of segments reuses one buffer instead of growing a
    /// new one each time.
    pub fn poll_output_into(&mut self, now: Instant, out: &mut Vec<Segment>) {
        self.output(now, out);
    }

    /// Runs the timers that are due at `now` and returns what they send.
    pub fn on_timer(&mut self, now: Instant) -> Vec<Segment> {
        let mut out = Vec::new();
        self.on_timer_into(now, &mut out);
        out
    }

    /// [`Connection::on_timer`] appending to `out`.
    pub fn on_timer_into(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let timers = crate::account::enter(crate::account::Block::Timers);
        while let Some(kind) = self.timers.poll_expired(now) {
            match kind {
                TimerKind::Retransmit => self.on_retransmit_timeout(now),
                TimerKind::DelayedAck => self.ack_now = true,
                TimerKind::Persist => self.on_persist_expiry(now, out),
                TimerKind::TimeWait => self.enter_closed(None),
                TimerKind::Keepalive => self.on_keepalive_expiry(now, out),
                TimerKind::LossProbe => self.on_loss_probe(now, out),
                // The pacer lets data go: the output pass below sends it.
                TimerKind::Pace => {}
                TimerKind::FinWait2 => self.on_fin_wait_2_timeout(out),
            }
        }
        drop(timers);
        self.output(now, out);
    }

    /// A header from this end at `seq` with ACK (once the peer's ISN is
    /// known), the window to advertise and the timestamps.
    pub(crate) fn header(&mut self, seq: SeqNumber, now: Instant) -> TcpRepr<'static> {
        let mut h = TcpRepr::bare(self.local_port(), self.remote_port(), seq);
        if self.state != State::SynSent {
            h.ack_number = Some(self.rcv_nxt);
        }
        let wnd = self.receive_window();
        h.window_len = (wnd >> self.rcv_shift).min(u16::MAX as usize) as u16;
        self.segment_options(&mut h, now);
        h
    }

    /// Counts a segment out and records the ACK it carries.
    pub(crate) fn emit(
        &mut self,
        header: TcpRepr<'static>,
        payload: Vec<u8>,
        out: &mut Vec<Segment>,
    ) {
        self.emit_segment(Segment::new(header, payload), out);
    }

    /// [`Connection::emit`] for a segment built whole (its payload
    /// perhaps left in the send buffer).
    fn emit_segment(&mut self, segment: Segment, out: &mut Vec<Segment>) {
        let header = &segment.header;
        if header.ack_number.is_some() {
            self.last_ack_sent = self.rcv_nxt;
            let shift = if header.control == TcpControl::Syn {
                0
            } else {
                self.rcv_shift
            };
            let edge = self.rcv_nxt + ((header.window_len as usize) << shift);
            if edge > self.rcv_adv {
                // Once the peer's FIN is in, its sequence number moves the
                // edge by one without opening anything: no update.
                if self.state.receives_data() {
                    let step = (self.config.recv_buffer / 2).min(self.snd_mss);
                    self.counters
                        .sws
                        .on_window_update(edge - self.rcv_adv, step, 1 << shift);
                }
                self.rcv_adv = edge;
            }
            self.delack.on_ack_sent();
            self.timers.cancel(TimerKind::DelayedAck);
            self.ack_now = false;
            if header.window_len == 0 {
                self.counters.zero_windows_sent += 1;
            }
        }
        self.count_segments_out(segment.payload_len());
        out.push(segment);
    }

    fn arm_retransmit_if_idle(&mut self, now: Instant) {
        if self.timers.deadline(TimerKind::Retransmit).is_none() {
            self.timers
                .arm_after(TimerKind::Retransmit, now, self.rto_in_force());
        }
    }

    /// The SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED) with its options.
    fn send_syn(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let mut h = self.header(self.iss, now);
        h.control = TcpControl::Syn;
        h.window_len = self.receive_window().min(u16::MAX as usize) as u16;
        self.syn_options(&mut h, now);
        if self.snd_max != self.iss {
            self.counters.retransmits += 1;
            self.rtt_timer.on_retransmit();
        } else {
            self.rtt_timer.on_send(self.iss + 1, now);
        }
        self.snd_nxt = self.iss + 1;
        self.snd_max = self.iss + 1;
        self.emit(h, Vec::new(), out);
        self.arm_retransmit_if_idle(now);
    }

    /// Sends `len` octets of the send buffer from `seq` (new data when
    /// `seq` is SND.NXT, a retransmission when below SND.MAX).
    pub(crate) fn send_range(
        &mut self,
        seq: SeqNumber,
        len: usize,
        now: Instant,
        out: &mut Vec<Segment>,
    ) {
        let offset = seq - self.snd_una;
        let end_offset = (offset + len).min(self.send_buf.len());
        let len = end_offset - offset;
        let payload = if self.payload_in_place {
            Vec::new()
        } else {
            self.copy_payload(offset, end_offset)
        };
        let end = seq + len;
        let mut h = self.header(seq, now);
        h.push = end_offset == self.send_buf.len();
        // A send from a zero-window probe's octet, with nothing sent past
        // it, is that data's first send: the probe was expected to be
        // dropped (Linux's carries no data at all), so it is no loss.
        let after_probe = self.window_probe.take() == Some(seq) && self.snd_max == seq + 1;
        let retransmission = seq < self.snd_max && !after_probe;
        let full = self.data_mss();
        self.counters.sws.on_data_out(len, full);
        if retransmission {
            self.counters.retransmits += self.wire_segments(len);
            self.counters.retransmitted_bytes += len as u64;
            self.rtt_timer.on_retransmit();
            self.note_retransmission(seq);
        } else {
            self.rtt_timer.on_send(end, now);
        }
        if seq == self.snd_nxt {
            self.snd_nxt = end;
        }
        if end > self.snd_max {
            self.snd_max = end;
        }
        let in_flight = (self.snd_max - self.snd_una) as u64;
        self.counters.max_in_flight = self.counters.max_in_flight.max(in_flight);
        self.scoreboard.on_send(self.snd_max);
        // The payload may still be in the send ring (`payload` empty):
        // count `len`, the octets the segment carries.
        self.note_data_sent(len, now);
        let segment = Segment {
            header: h,
            payload,
            in_send_buffer: if self.payload_in_place { len } else { 0 },
        };
        self.emit_segment(segment, out);
        self.arm_retransmit_if_idle(now);
        if !retransmission {
            self.schedule_loss_probe(now);
        }
    }

    /// A data segment of `len` payload octets leaves at `now`: the pacer
    /// charges it (retransmissions too, so they take from the rate) and
    /// the achieved-rate span counts it.
    fn note_data_sent(&mut self, len: usize, now: Instant) {
        self.pacer.on_sent(len, now);
        self.counters.pacing_dropped_ns = self.pacer.dropped_ns();
        self.counters.data_out.on_sent(len, now);
    }

    /// The send buffer's octets `offset..end_offset` (from SND.UNA) in a
    /// payload buffer of their own (a spare one from the pool if lent).
    fn copy_payload(&mut self, offset: usize, end_offset: usize) -> Vec<u8> {
        // The ring's one or two slices, copied whole (not a byte at a time).
        let (front, back) = self.send_buf.as_slices();
        let mut payload = self.payload_pool.pop().unwrap_or_default();
        payload.clear();
        payload.reserve(end_offset - offset);
        if offset < front.len() {
            payload.extend_from_slice(&front[offset..end_offset.min(front.len())]);
        }
        if end_offset > front.len() {
            payload.extend_from_slice(
                &back[offset.saturating_sub(front.len())..end_offset - front.len()],
            );
        }
        payload
    }

    /// Where our FIN sits (or will): after the last queued octet.
    pub(crate) fn fin_seq(&self) -> SeqNumber {
        self.snd_una + self.send_buf.len()
    }

    fn send_fin(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let seq = self.fin_seq();
        let mut h = self.header(seq, now);
        h.control = TcpControl::Fin;
        if seq < self.snd_max {
            self.counters.retransmits += 1;
            self.rtt_timer.on_retransmit();
        }
        self.snd_nxt = seq + 1;
        if self.snd_nxt > self.snd_max {
            self.snd_max = self.snd_nxt;
        }
        self.emit(h, Vec::new(), out);
        self.arm_retransmit_if_idle(now);
    }

    /// The sequence number of a segment without data: RFC 9293's SND.NXT,
    /// the next new octet, which is SND.MAX here, as a retransmission
    /// timeout takes `snd_nxt` back to SND.UNA to resend from there
    /// (BSD's go-back-N). An ACK at `snd_nxt` would then lie left of the
    /// window of a peer that has the data, and be dropped, ACK field and
    /// all; two ends gone back at once dropped each other's ACKs and
    /// answered each with another, forever (issue 27, found by
    /// `tcp_long_property`). While a zero-window probe's octet is out
    /// (SND.MAX just past it), `snd_nxt`: the probe took SND.MAX one octet
    /// past the peer's window. Not merely while the persist timer runs:
    /// it may be armed after a go-back with data out, and an abort's RST
    /// at SND.UNA would then go unheard (the re-review).
    pub(crate) fn ack_seq(&self) -> SeqNumber {
        let probe_out = self.window_probe == Some(self.snd_nxt) && self.snd_max == self.snd_nxt + 1;
        if probe_out {
            self.snd_nxt
        } else {
            self.snd_max
        }
    }

    /// Bytes queued and not yet sent.
    pub(crate) fn unsent(&self) -> usize {
        let sent = if self.snd_nxt > self.snd_una {
            self.snd_nxt - self.snd_una
        } else {
            0
        };
        self.send_buf.len().saturating_sub(sent)
    }

    /// Whether RFC 6675's recovery drives the sender.
    pub(crate) fn sack_recovery(&self) -> bool {
        self.sack_ok
            && self.config.recovery == super::tcb::RecoveryKind::Sack
            && self.cc.fast_recovery() == super::cc::FastRecovery::UntilRecoveryPoint
    }

    /// One output pass: everything due now.
    pub(crate) fn output(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let _b = crate::account::enter(crate::account::Block::TcpOutput);
        match self.state {
            State::Closed | State::Listen => return,
            State::SynSent | State::SynReceived => {
                if self.snd_nxt == self.iss {
                    self.send_syn(now, out);
                } else if self.ack_now && self.state == State::SynReceived {
                    // A challenge or duplicate ACK while the SYN-ACK is out.
                    let h = self.header(self.snd_nxt, now);
                    self.emit(h, Vec::new(), out);
                }
                return;
            }
            _ => {}
        }
        let before = out.len();
        if self.state != State::TimeWait {
            if self.sack_recovery() && self.recovery.point.is_some() {
                self.send_sack_recovery(now, out);
            }
            self.send_new_data(now, out);
            let all_sent = self.snd_nxt == self.fin_seq();
            if self.fin_queued && all_sent && !self.fin_acked {
                self.send_fin(now, out);
            }
        }
        if out.len() == before && self.ack_now {
            let _ack = crate::account::enter(crate::account::Block::AckGeneration);
            let h = self.header(self.ack_seq(), now);
            self.emit(h, Vec::new(), out);
        }
        self.arm_persist_if_blocked(now);
        self.arm_fin_wait_2_if_released(now);
        self.update_limit_clocks(now);
    }

    /// New data (or go-back-N retransmission after a timeout) within
    /// min(cwnd, SND.WND) as the sender policy decides, when the pacer
    /// lets it go (else its timer wakes the loop then).
    fn send_new_data(&mut self, now: Instant, out: &mut Vec<Segment>) {
        self.restart_after_idle(now);
        loop {
            let queued = self.unsent();
            if queued == 0 {
                return;
            }
            let in_flight = self.snd_nxt - self.snd_una;
            let cwnd = self
                .cc
                .cwnd()
                .saturating_add(self.recovery.inflation)
                .saturating_add(self.limited_transmit_allowance());
            let limit = if self.sack_recovery() && self.recovery.point.is_some() {
                // RFC 6675: new data only while pipe leaves room (NextSeg did it).
                return;
            } else {
                cwnd.min(self.snd_wnd)
            };
            let state = SendState {
                queued,
                usable_window: limit.saturating_sub(in_flight),
                max_send_window: self.max_snd_wnd,
                mss: self.data_mss(),
                in_flight,
                push: true,
                override_expired: false,
                fin_queued: self.fin_queued,
            };
            let decision = self.config.sender.decide(&state);
            if let (SendDecision::Send(_), Some(at)) = (decision, self.pacer.hold_until(now)) {
                self.timers.arm(TimerKind::Pace, at);
                return;
            }
            match decision {
                SendDecision::Send(n) => {
                    let n = self.super_segment_len(n, &state);
                    self.send_range(self.snd_nxt, n, now, out)
                }
                SendDecision::Wait => {
                    if self.config.sender.nagle {
                        let without = super::window::SenderPolicy {
                            nagle: false,
                            ..self.config.sender
                        };
                        if without.decide(&state) != SendDecision::Wait {
                            self.counters.nagle_holds += 1;
                        }
                    }
                    return;
                }
            }
        }
    }

    /// RFC 6675 §5's transmission loop: while cwnd − pipe ≥ 1 SMSS, send
    /// what NextSeg() says.
    fn send_sack_recovery(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let mss = self.data_mss();
        for _ in 0..1024 {
            let pipe = self.scoreboard.pipe();
            if self.cc.cwnd().saturating_sub(pipe) < mss {
                return;
            }
            let new_ready = self.unsent() > 0
                && (self.snd_max - self.snd_una) + mss.min(self.unsent()) <= self.snd_wnd;
            match self.scoreboard.next_seg(new_ready, true) {
                Some(NextSeg::RetransmitLost(r)) | Some(NextSeg::RetransmitUnsacked(r)) => {
                    let len = r.len.min(mss);
                    self.scoreboard.on_retransmit(r.start, len);
                    self.send_range(r.start, len, now, out);
                }
                Some(NextSeg::Rescue(r)) => {
                    let len = r.len.min(mss);
                    if let Some(point) = self.recovery.point {
                        self.scoreboard.on_rescue(point);
                    }
                    self.send_range(r.start, len, now, out);
                }
                Some(NextSeg::NewData) => {
                    let n = self.unsent().min(mss);
                    self.send_range(self.snd_max, n, now, out);
                    self.snd_nxt = self.snd_max;
                }
                None => return,
            }
        }
    }

    /// Data waits but nothing is in flight and nothing could be sent (a
    /// closed window, or one the sender's SWS avoidance will not use): the
    /// persist timer will probe or force a segment (BSD's `tcp_setpersist`,
    /// which also serves as RFC 1122's SWS override timer).
    fn arm_persist_if_blocked(&mut self, now: Instant) {
        let blocked = self.unsent() > 0
            && self.snd_nxt == self.snd_una
            && self.state.is_synchronized()
            && self.state != State::TimeWait;
        if blocked {
            if self.timers.deadline(TimerKind::Persist).is_none() {
                self.timers.arm_persist(now, self.rto_in_force());
            }
        } else {
            self.timers.on_window_open();
        }
    }

    /// The persist timer fired. A closed window gets a zero-window probe:
    /// one octet past it, SND.NXT left where it is (an ACK of it is an ACK
    /// of something sent, as SND.MAX covers it; `window_probe` marks the
    /// octet, so sending it as data later is not counted, nor excluded from
    /// RTT sampling, as a retransmission). An open but small window gets
    /// what fits, as the SWS override allows.
    fn on_persist_expiry(&mut self, now: Instant, out: &mut Vec<Segment>) {
        let unsent = self.unsent();
        if unsent == 0 || self.snd_nxt != self.snd_una {
            return;
        }
        if self.snd_wnd > 0 {
            let n = unsent.min(self.snd_wnd).min(self.data_mss());
            self.send_range(self.snd_nxt, n, now, out);
            return;
        }
        let seq = self.snd_nxt;
        let offset = seq - self.snd_una;
        let byte = self.send_buf[offset];
        let h = self.header(seq, now);
        if seq + 1 > self.snd_max {
            self.snd_max = seq + 1;
            self.window_probe = Some(seq);
        }
        self.counters.window_probes += 1;
        self.note_data_sent(1, now);
        self.emit(h, vec![byte], out);
        self.timers.on_persist_probe(now, self.rto_in_force());
    }

    /// The keepalive timer fired: a probe one octet below SND.UNA, which
    /// the peer must answer with an ACK (RFC 1122 §4.2.3.6), or, after too
    /// many unanswered ones, the end of the connection.
    fn on_keepalive_expiry(&mut self, now: Instant, out: &mut Vec<Segment>) {
        if !self.state.is_synchronized() || self.state == State::TimeWait {
            return;
        }
        match self.timers.on_keepalive_fired(now) {
            KeepaliveAction::Probe(_) => {
                self.counters.keepalive_probes += 1;
                let h = self.header(self.snd_una - 1, now);
                self.emit(h, Vec::new(), out);
            }
            KeepaliveAction::GiveUp => {
                self.enter_closed(Some(super::tcb::ConnectionError::TimedOut));
            }
        }
    }

    /// The retransmission timer expired (RFC 6298 §5.4–5.7): back off,
    /// collapse cwnd, and go back to SND.UNA.
    fn on_retransmit_timeout(&mut self, now: Instant) {
        self.counters.timeouts += 1;
        self.recovery.consecutive_timeouts += 1;
        if self.recovery.consecutive_timeouts > self.config.max_retransmits {
            self.enter_closed(Some(super::tcb::ConnectionError::TimedOut));
            return;
        }
        self.rtt.on_retransmit_timeout();
        self.rtt_timer.on_retransmit();
        self.loss_detection_on_timeout();
        match self.state {
            State::SynSent | State::SynReceived => self.snd_nxt = self.iss,
            State::Closed | State::Listen | State::TimeWait => {}
            _ => {
                let flight = self.snd_max - self.snd_una;
                self.cc.on_retransmit_timeout(flight, now);
                self.note_cwnd(super::cwnd_trace::CwndCause::Timeout, now);
                self.snd_nxt = self.snd_una;
                self.recovery.point = None;
                self.recovery.inflation = 0;
                self.recovery.dup_acks = 0;
                self.recovery.recover = self.snd_max;
                self.scoreboard.on_recovery_exit();
            }
        }
    }

    /// Accrues time limited by the peer's window and by the send buffer.
    /// Window-limited, as Linux's `tcp_snd_wnd_test` counts it: data waits
    /// and the next segment (a full one, or all that waits) does not fit
    /// in what the offered window leaves, while the congestion window
    /// still has room (else the congestion window is what holds it). A
    /// window that is open but smaller than the next segment counts: the
    /// sender then waits for an ACK, as it does for a closed one.
    fn update_limit_clocks(&mut self, now: Instant) {
        let in_flight = self.snd_nxt - self.snd_una;
        let next = self.unsent().min(self.data_mss());
        let usable = self.snd_wnd.saturating_sub(in_flight);
        let rwnd_limited = next > 0 && usable < next && self.cc.cwnd() > in_flight;
        let sndbuf_limited = self.send_buf.len() >= self.config.send_buffer;
        self.counters.rwnd_limited_ns += self.rwnd_clock.update(rwnd_limited, now);
        self.counters.sndbuf_limited_ns += self.sndbuf_clock.update(sndbuf_limited, now);
    }
}
