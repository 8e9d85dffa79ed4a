//! What the connection tells its congestion controller, beside losses:
//! each ACK of new data with the smoothed RTT (RFC 9438 §4.2's RTT) and
//! whether the sender used its window, and the restart after idle.
//!
//! Congestion-window validation: cwnd grows only while the sender uses
//! it, as Linux's `tcp_is_cwnd_limited` decides and RFC 7661 §4.3 (no
//! growth in the non-validated phase) and RFC 9438 §5.8 ask. The flight
//! at each ACK (SND.MAX − SND.UNA before it) is the most that was in
//! flight since the ACK before, as only ACKs shrink it; the largest over
//! this round trip and the last is what the sender used. In slow start
//! cwnd grows while it is below twice that (each ACK of a full flight
//! opens two segments, so a flight that filled half the window before the
//! last growth still counts); in congestion avoidance while the flight
//! came within one segment of cwnd. An ACK that finds the window unused
//! tells the controller so ([`CongestionControl::on_app_limited_ack`]):
//! CUBIC leaves that time out of its curve's t.
//!
//! After an idle period longer than the RTO (nothing in flight, no data
//! sent), cwnd restarts from RFC 5681 §4.1's restart window,
//! min(IW, cwnd), before new data leaves. Linux instead halves cwnd per
//! RTO idle (RFC 2861's decay, `tcp_cwnd_restart`) down to the same
//! window; RFC 7661 would keep cwnd for up to five minutes (its
//! non-validated period). We keep to RFC 5681, the standard-track rule.
//!
//! [`CongestionControl::on_app_limited_ack`]: super::cc::CongestionControl::on_app_limited_ack

use super::tcb::Connection;
use crate::time::Instant;
use crate::wire::seq::SeqNumber;

/// The sender's use of its window over the last round trips.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CwndUse {
    /// The round trip ends when SND.UNA reaches this (SND.MAX when it
    /// began); None before the first ACK.
    round_end: Option<SeqNumber>,
    /// The largest flight seen at an ACK in this round trip, octets.
    max_flight: usize,
    /// The same for the round trip before.
    last_max_flight: usize,
}

impl CwndUse {
    /// An ACK found `flight` octets outstanding; it moved SND.UNA to
    /// `snd_una`, with SND.MAX at `snd_max`.
    fn on_ack(&mut self, flight: usize, snd_una: SeqNumber, snd_max: SeqNumber) {
        self.max_flight = self.max_flight.max(flight);
        if self.round_end.is_none_or(|end| snd_una >= end) {
            self.last_max_flight = self.max_flight;
            self.max_flight = 0;
            self.round_end = Some(snd_max);
        }
    }

    /// SND.UNA moved to `snd_una` outside [`CwndUse::on_ack`] (a
    /// predicted ACK): a round end it passed is pulled up to it, so the
    /// next ACK still ends that round however far SND.UNA went meanwhile
    /// (a sequence number 2 GiB behind would compare backwards).
    pub(crate) fn pull_up(&mut self, snd_una: SeqNumber) {
        if let Some(end) = self.round_end {
            if snd_una >= end {
                self.round_end = Some(snd_una);
            }
        }
    }

    /// The most the sender had in flight lately.
    fn used(&self) -> usize {
        self.max_flight.max(self.last_max_flight)
    }
}

impl Connection {
    /// `acked` octets (`data_acked` of them data) newly acknowledged
    /// outside recovery: the controller grows cwnd, aiming with the
    /// smoothed RTT, if the sender used its window; else it hears that
    /// the window was not used.
    pub(crate) fn cc_on_ack(&mut self, acked: usize, data_acked: usize, now: Instant) {
        let flight = (self.snd_max - self.snd_una) + acked;
        self.cwnd_use.on_ack(flight, self.snd_una, self.snd_max);
        if self.cwnd_limited() {
            self.cc.on_ack(data_acked, self.rtt.srtt(), now);
        } else {
            self.cc.on_app_limited_ack(now);
        }
    }

    /// Whether the sender used its window lately (Linux's
    /// `tcp_is_cwnd_limited`, in octets).
    pub(crate) fn cwnd_limited(&self) -> bool {
        let (cwnd, used) = (self.cc.cwnd(), self.cwnd_use.used());
        if cwnd < self.cc.ssthresh() {
            cwnd < used.saturating_mul(2)
        } else {
            used + self.data_mss() > cwnd
        }
    }

    /// RFC 5681 §4.1: before sending after more than an RTO with nothing
    /// sent and nothing in flight, cwnd falls to the restart window.
    pub(crate) fn restart_after_idle(&mut self, now: Instant) {
        if self.snd_una != self.snd_max {
            return;
        }
        let Some(last) = self.counters.data_out.last else {
            return;
        };
        if now.since(last) > self.rto_in_force() {
            self.cc.on_idle_restart(now);
        }
    }
}

#[cfg(test)]
#[path = "cc_events_tests.rs"]
mod tests;
