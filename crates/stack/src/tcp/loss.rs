//! Loss detection beyond duplicate ACKs, each a [`TcpConfig`] switch:
//!
//! - **Tail loss probe** (RFC 8985 §7, `tail_loss_probe`): when the last
//!   segments of a flight are lost, or every ACK for them is, no
//!   duplicate ACK comes and only the retransmission timer (1 s floor)
//!   would recover. A probe timeout (PTO) of 2·SRTT plus the peer's
//!   worst-case delayed ACK when under two full segments are in flight
//!   (the peer may be holding its ACK for them), and 2 ms of slack
//!   (Linux's), armed after new data and each ACK while not in recovery,
//!   sends one new segment or retransmits the last one; its ACK carries
//!   SACK blocks that start fast recovery in one round trip.
//! - **Lost-retransmission detection** (`lost_retransmit_detection`): in
//!   recovery, a retransmission that is itself lost is invisible to
//!   NewReno and to RFC 6675 (both wait for the timer). Once an ACK's
//!   SACK blocks report DupThresh segments' worth of data *sent after the
//!   retransmission* delivered (RFC 6675's IsLost applied to what was sent
//!   later, the reasoning of RACK, RFC 8985 §6.2, counted in segments
//!   rather than time), the retransmission is taken as lost and sent
//!   again.
//!
//! Not done here: RFC 8985 §7.4's congestion response when a probe
//! repaired a loss, and RACK's time-based marking of every segment (which
//! needs a per-segment send time).
//!
//! [`TcpConfig`]: super::tcb::TcpConfig

use std::time::Duration;

use super::sack::DEFAULT_DUP_THRESH;
use super::state::State;
use super::tcb::{Connection, Segment};
use super::timers::{TimerClock, TimerKind};
use crate::time::Instant;
use crate::wire::seq::SeqNumber;
use crate::wire::tcp::TcpRepr;

/// RFC 8985's WCDelAckT: the peer's worst-case delayed-ACK time, added to
/// the PTO when a single segment is in flight (it may be held for it).
pub const WORST_CASE_DELAYED_ACK: Duration = Duration::from_millis(200);

/// Added to every PTO, so one of a few microseconds (SRTT over a TUN)
/// does not fire on ordinary ACK jitter, nor at the very instant the
/// peer's delayed-ACK timer would answer: Linux's `TCP_TIMEOUT_MIN`, 2 ms.
pub const PROBE_SLACK: Duration = Duration::from_millis(2);

/// The loss detectors' per-connection state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LossState {
    /// RFC 8985's TLPRxtOut/TLP.end_seq: SND.MAX when a probe went out;
    /// no other probe until the ACK passes it.
    pub(crate) probe_end: Option<SeqNumber>,
    /// The last retransmission in recovery: (its first octet, SND.MAX
    /// when it was sent).
    pub(crate) retransmitted: Option<(SeqNumber, SeqNumber)>,
}

impl Connection {
    /// Whether a loss probe may be armed or sent: data or our FIN in
    /// flight, all of it sent once (no go-back-N after a timeout), not in
    /// recovery, no probe outstanding. Never on BSD's clocks: BSD had no
    /// loss probe, and on its 500 ms ticks 2·SRTT rounds to the next tick,
    /// which may come milliseconds after the send, before any ACK could.
    fn probe_eligible(&self) -> bool {
        self.config.tail_loss_probe
            && matches!(self.config.timers.clock, TimerClock::Exact)
            && self.state.is_synchronized()
            && self.state != State::TimeWait
            && self.snd_max > self.snd_una
            && self.snd_nxt == self.snd_max
            && self.recovery.point.is_none()
            && self.loss.probe_end.is_none()
    }

    /// Arms the probe timer 2·SRTT + [`PROBE_SLACK`] from `now` (+
    /// WCDelAckT when less than two full segments are in flight) unless the retransmission timer fires first;
    /// cancels it when no probe is allowed. Called after new data is sent
    /// and after each ACK of new data (RFC 8985 §7.2).
    pub(crate) fn schedule_loss_probe(&mut self, now: Instant) {
        let srtt = self.rtt.srtt().filter(|_| self.probe_eligible());
        let Some(srtt) = srtt else {
            self.timers.cancel(TimerKind::LossProbe);
            return;
        };
        let mut pto = srtt * 2 + PROBE_SLACK;
        // Under two full segments outstanding the peer may hold its ACK
        // for its delayed-ACK timer (RFC 1122 §4.2.3.2): RFC 8985's
        // one-segment case, widened to every flight the timer can hold.
        if self.snd_max - self.snd_una < 2 * self.data_mss() {
            pto += WORST_CASE_DELAYED_ACK;
        }
        // Armed first (on BSD's clocks its deadline is a slow tick's), then
        // dropped if the retransmission timer fires no later.
        self.timers.arm_after(TimerKind::LossProbe, now, pto);
        if let (Some(rto_at), Some(at)) = (
            self.timers.deadline(TimerKind::Retransmit),
            self.timers.deadline(TimerKind::LossProbe),
        ) {
            if rto_at <= at {
                self.timers.cancel(TimerKind::LossProbe);
            }
        }
    }

    /// The probe timer fired (RFC 8985 §7.3): one new segment if the
    /// window allows, else the last segment again; the retransmission
    /// timer restarts from now.
    pub(crate) fn on_loss_probe(&mut self, now: Instant, out: &mut Vec<Segment>) {
        if !self.probe_eligible() {
            return;
        }
        self.loss.probe_end = Some(self.snd_max);
        let mss = self.data_mss();
        let flight = self.snd_max - self.snd_una;
        let unsent = self.unsent();
        let new = unsent.min(mss);
        let fin_seq = self.fin_seq();
        if unsent > 0 && self.snd_wnd.saturating_sub(flight) >= new {
            self.send_range(self.snd_nxt, new, now, out);
        } else if fin_seq.min(self.snd_max) > self.snd_una {
            let end = fin_seq.min(self.snd_max);
            let start = if end - self.snd_una > mss {
                end - mss
            } else {
                self.snd_una
            };
            self.send_range(start, end - start, now, out);
        } else {
            // Only our FIN is out: the retransmission timer resends it.
            return;
        }
        self.counters.loss_probes += 1;
        self.loss.probe_end = Some(self.snd_max);
        self.timers
            .arm_after(TimerKind::Retransmit, now, self.rto_in_force());
    }

    /// After an ACK of new data: a probe is answered once the ACK passes
    /// its end; the next probe is scheduled.
    pub(crate) fn loss_probe_on_ack(&mut self, ack: SeqNumber, now: Instant) {
        if self.loss.probe_end.is_some_and(|end| ack >= end) {
            self.loss.probe_end = None;
        }
        self.schedule_loss_probe(now);
    }

    /// The retransmission timer fired: probes and marks start over.
    pub(crate) fn loss_detection_on_timeout(&mut self) {
        self.loss = LossState::default();
        self.timers.cancel(TimerKind::LossProbe);
    }

    /// A segment from `seq` is being sent again: in recovery, remember it
    /// and what had been sent by then.
    pub(crate) fn note_retransmission(&mut self, seq: SeqNumber) {
        if self.recovery.point.is_some() {
            self.loss.retransmitted = Some((seq, self.snd_max));
        }
    }

    /// Checks an ACK in recovery for a lost retransmission: DupThresh
    /// segments' worth of data sent after it SACKed while it is still
    /// unacknowledged. If so, it is sent again (NewReno) or the scoreboard
    /// forgets what was retransmitted so NextSeg() sends it again (SACK).
    pub(crate) fn detect_lost_retransmission(
        &mut self,
        seg: &TcpRepr<'_>,
        ack: SeqNumber,
        now: Instant,
        out: &mut Vec<Segment>,
    ) {
        if !self.config.lost_retransmit_detection || !self.sack_ok {
            return;
        }
        if self.recovery.point.is_none() {
            self.loss.retransmitted = None;
            return;
        }
        let Some((start, sent_by_then)) = self.loss.retransmitted else {
            return;
        };
        if ack > start {
            // The retransmission (or the original) arrived.
            self.loss.retransmitted = None;
            return;
        }
        let delivered_later: usize = seg
            .sack_ranges
            .iter()
            .flatten()
            .map(|&(left, right)| {
                let left = left.max(sent_by_then);
                if right > left {
                    right - left
                } else {
                    0
                }
            })
            .sum();
        if delivered_later < DEFAULT_DUP_THRESH * self.data_mss() {
            return;
        }
        self.counters.lost_retransmits += 1;
        self.loss.retransmitted = None;
        if self.sack_recovery() {
            self.scoreboard.on_lost_retransmission();
        } else {
            self.retransmit_first(now, out);
        }
    }
}
