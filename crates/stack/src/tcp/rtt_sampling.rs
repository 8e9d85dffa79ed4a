//! When the connection measures the round trip, and what it does with the
//! estimator outside the samples.
//!
//! - Without timestamps, one segment a round trip is timed and Karn's
//!   rule drops its sample when anything was retransmitted meanwhile.
//! - With timestamps (RFC 7323 §4), every ACK that moves SND.UNA past a
//!   whole segment gives one sample: from the send time of the oldest
//!   segment it newly covers (kept to the nanosecond by
//!   [`RttTimer`](super::rtt::RttTimer)), or, when it covers data sent
//!   before a retransmission, from its TSecr, the echo of the TSval of
//!   the copy that reached the peer: Karn's rule is lifted. TSvals are
//!   whole milliseconds, so an echo sample is now less the start of the
//!   echoed millisecond: at most 1 ms long, never short (a short RTO is
//!   the dangerous error). An ACK inside a segment (the peer's ACKs of
//!   the pieces of a super-segment a device cut) gives none, as its only
//!   sample would be such an echo. RFC 6298's estimator weighs each of the round
//!   trip's samples by 1/ExpectedSamples, ⌈FlightSize / (2·SMSS)⌉ (RFC
//!   7323 Appendix G); 4.3BSD-Reno's takes each in full, as 4.4BSD-Lite
//!   took every echo. Linux samples the same way from per-`skb` send
//!   times and falls back on TSecr after retransmissions.
//! - RFC 6298 §5.7: a handshake whose SYN or SYN-ACK timed out and gave
//!   no sample begins data transmission with a 3 s RTO.
//! - On BSD's clocks (`--timers bsd`) a sample is the number of slow tick
//!   boundaries the round trip crossed, in ticks (`tcp_now` less the
//!   echoed timestamp; BSD's `t_rtt` is one more, which the 4.3BSD-Reno
//!   estimator adds back), whatever the estimator, and
//!   the RTO in force is the estimator's in whole slow ticks
//!   ([`BsdClock::rto_ticks`](super::bsd_clock::BsdClock::rto_ticks)).

use std::time::Duration;

use super::rtt::Timed;
use super::tcb::Connection;
use super::timers::TimerClock;
use crate::time::Instant;
use crate::wire::seq::SeqNumber;

/// An echo older than this is not believed (twice the MSL).
const MAX_ECHO_AGE_MS: i32 = 240_000;

impl Connection {
    /// An ACK moved SND.UNA to `ack`, `acked` octets on: one RTT sample
    /// if the rules above give one, taken by the estimator.
    pub(crate) fn rtt_on_ack(&mut self, ack: SeqNumber, acked: usize, now: Instant) {
        let rtt = match self.rtt_timer.on_ack_timed(ack, now) {
            Timed::Sample(rtt) => rtt,
            Timed::Ambiguous => match self.echo_sample(now) {
                Some(rtt) => rtt,
                None => return,
            },
            Timed::Nothing => return,
        };
        // The controller takes the fine-grained sample (Vegas read its
        // own clock on every send, whatever BSD's timers); the estimator
        // takes it in slow ticks on BSD's clocks.
        self.cc.on_rtt_sample(rtt, now);
        let rtt = match self.config.timers.clock {
            TimerClock::Exact => rtt,
            TimerClock::Bsd(c) => c.quantize_sample(rtt, now),
        };
        let per_rtt = if self.ts_ok {
            let flight = (self.snd_max - self.snd_una) + acked;
            flight.div_ceil(2 * self.data_mss()).max(1)
        } else {
            1
        };
        self.rtt
            .sample_one_of(rtt, u32::try_from(per_rtt).unwrap_or(u32::MAX));
    }

    /// The retransmission timeout in force: the estimator's, or on BSD's
    /// clocks its whole slow ticks (floor 1 s, ceiling 64 s,
    /// `tcp_backoff[]`).
    pub(crate) fn rto_in_force(&self) -> Duration {
        match self.config.timers.clock {
            TimerClock::Exact => self.rtt.rto(),
            TimerClock::Bsd(c) => c.slow * self.rtt.rto_ticks(&c),
        }
    }

    /// The round trip the segment's TSecr names (RFC 7323 §4.1), if
    /// timestamps are in use and it is a time we sent.
    fn echo_sample(&self, now: Instant) -> Option<Duration> {
        let ecr = self.seg_tsecr.filter(|_| self.ts_ok)?;
        let ms = Connection::ts_val(now).wrapping_sub(ecr) as i32;
        if !(0..=MAX_ECHO_AGE_MS).contains(&ms) {
            return None;
        }
        Some(Duration::from_nanos(
            ms as u64 * 1_000_000 + now.nanos() % 1_000_000,
        ))
    }

    /// Our SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED) was just acknowledged
    /// (after its sample, if any).
    /// If it had timed out and no sample came of it (Karn's rule), the
    /// estimator begins data transmission at RFC 6298 §5.7's 3 s, as
    /// Linux's `tcp_init_transfer` does when the handshake gave no RTT.
    pub(crate) fn on_handshake_done(&mut self) {
        if self.counters.timeouts > 0 && self.rtt.srtt().is_none() {
            self.rtt.on_handshake_without_sample();
        }
    }
}
