//! Round-trip time estimation and the retransmission timeout, behind one
//! trait so issue 19's `--rtt-estimator bsd|rfc6298` is a choice made when
//! a connection is built:
//! - [`Rfc6298`]: RFC 6298 in nanoseconds (SRTT, RTTVAR, RTO = SRTT +
//!   max(G, 4·RTTVAR), a configurable floor, a 60 s ceiling, doubling
//!   backoff);
//! - [`BsdReno`]: 4.3BSD-Reno's integer EWMA in slow-timeout ticks (srtt
//!   scaled ×8, rttvar ×4), as in `tcp_xmit_timer` of `netinet/tcp_input.c`
//!   (4.3BSD-Reno, Net/2, 4.4BSD-Lite) and its `TCP_REXMTVAL`,
//!   `TCPT_RANGESET` and `tcp_backoff[]` of `tcp_var.h`/`tcp_timer.c`.
//!
//! Karn's rule lives in [`RttTimer`]: only a segment that was never
//! retransmitted gives a sample. With timestamps every ACK of new data
//! gives one, and the timestamp echo lifts Karn's rule (RFC 7323 §4; the
//! connection's side is in `rtt_sampling`); RFC 6298's estimator then
//! weighs each of the round trip's samples as RFC 7323 Appendix G says.

use std::collections::VecDeque;
use std::fmt::Debug;
use std::time::Duration;

use super::bsd_clock::{BsdClock, BACKOFF};
use crate::time::Instant;
use crate::wire::seq::SeqNumber;

/// An RTT estimator: fed samples, it says how long to wait before
/// retransmitting.
pub trait RttEstimator: Debug + Send {
    /// Takes one RTT measurement (already filtered by Karn's rule). It also
    /// ends any backoff, as a fresh sample recomputes the RTO.
    fn sample(&mut self, rtt: Duration) {
        self.sample_one_of(rtt, 1);
    }
    /// Takes one of about `per_rtt` measurements this round trip gives
    /// (timestamps: one per ACK). RFC 7323 Appendix G: with more than one
    /// sample per round trip, α and β are divided by their number, so
    /// SRTT and RTTVAR keep the memory, in round trips, they were tuned
    /// for.
    fn sample_one_of(&mut self, rtt: Duration, per_rtt: u32);
    /// The retransmission timeout to arm now, backoff included.
    fn rto(&self) -> Duration;
    /// The retransmission timeout before backoff.
    fn base_rto(&self) -> Duration;
    /// The timeout to arm now on BSD's clocks (`--timers bsd`), in slow
    /// ticks: [`BsdClock::rto_ticks`] of the timeout before backoff and
    /// the backoffs so far (whole ticks, `tcp_backoff[]`, 1 to 64 s).
    fn rto_ticks(&self, clock: &BsdClock) -> u32 {
        clock.rto_ticks(self.base_rto(), self.backoffs())
    }
    /// The retransmission timer expired: back the timeout off.
    fn on_retransmit_timeout(&mut self);
    /// The smoothed RTT, once there is a sample.
    fn srtt(&self) -> Option<Duration>;
    /// The RTT variation, once there is a sample.
    fn rttvar(&self) -> Option<Duration>;
    /// How many times the timeout has been backed off since the last sample.
    fn backoffs(&self) -> u32;
    /// The handshake is done, the SYN or SYN-ACK timed out, and no sample
    /// was taken (Karn's rule): RFC 6298 §5.7 begins data transmission
    /// with an RTO of [`SYN_FALLBACK_RTO`] if it was less.
    fn on_handshake_without_sample(&mut self);
}

/// RFC 6298 §5.7's RTO after a SYN timeout (the 3 s of RFC 1122).
pub const SYN_FALLBACK_RTO: Duration = Duration::from_secs(3);

/// Which estimator a connection uses, with its settings: the switch
/// issue 19 turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RttEstimatorKind {
    /// RFC 6298 in nanoseconds.
    Rfc6298(Rfc6298Config),
    /// 4.3BSD-Reno's integer EWMA in ticks.
    BsdReno(BsdRenoConfig),
}

impl RttEstimatorKind {
    /// A fresh estimator of this kind.
    pub fn build(self) -> Box<dyn RttEstimator> {
        match self {
            RttEstimatorKind::Rfc6298(c) => Box::new(Rfc6298::new(c)),
            RttEstimatorKind::BsdReno(c) => Box::new(BsdReno::new(c)),
        }
    }
}

/// RFC 6298's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc6298Config {
    /// The RTO before any sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: Duration,
    /// The RTO floor (RFC 6298 §2.4: 1 s; Linux uses 200 ms).
    pub min_rto: Duration,
    /// The RTO ceiling (RFC 6298 §2.5 allows one of at least 60 s).
    pub max_rto: Duration,
    /// The clock granularity G.
    pub granularity: Duration,
}

impl Default for Rfc6298Config {
    fn default() -> Rfc6298Config {
        Rfc6298Config {
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            granularity: Duration::from_nanos(1),
        }
    }
}

/// RFC 6298's estimator, kept in nanoseconds (α = 1/8, β = 1/4, K = 4).
#[derive(Debug, Clone)]
pub struct Rfc6298 {
    config: Rfc6298Config,
    /// (SRTT, RTTVAR) in ns, once measured.
    smoothed: Option<(u64, u64)>,
    /// The RTO before backoff, in ns.
    base_rto: u64,
    backoffs: u32,
}

impl Rfc6298 {
    /// An estimator with no sample yet.
    pub fn new(config: Rfc6298Config) -> Rfc6298 {
        Rfc6298 {
            config,
            smoothed: None,
            base_rto: nanos(config.initial_rto),
            backoffs: 0,
        }
    }

    fn clamp(&self, rto: u64) -> u64 {
        rto.clamp(nanos(self.config.min_rto), nanos(self.config.max_rto))
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl RttEstimator for Rfc6298 {
    fn sample_one_of(&mut self, rtt: Duration, per_rtt: u32) {
        let r = nanos(rtt);
        let n = u128::from(per_rtt.max(1));
        let (srtt, rttvar) = match self.smoothed {
            // §2.2: the first measurement.
            None => (r, r / 2),
            // §2.3: RTTVAR first, with the old SRTT; β = 1/4 and α = 1/8,
            // each divided by n (RFC 7323 Appendix G).
            Some((srtt, rttvar)) => {
                let dev = u128::from(srtt.abs_diff(r));
                let rttvar = ((4 * n - 1) * u128::from(rttvar) + dev) / (4 * n);
                let srtt = ((8 * n - 1) * u128::from(srtt) + u128::from(r)) / (8 * n);
                (srtt as u64, rttvar as u64)
            }
        };
        self.smoothed = Some((srtt, rttvar));
        let k_rttvar = rttvar.saturating_mul(4);
        self.base_rto =
            self.clamp(srtt.saturating_add(k_rttvar.max(nanos(self.config.granularity))));
        self.backoffs = 0;
    }

    fn rto(&self) -> Duration {
        // §5.5: each expiry doubles the RTO, up to the ceiling.
        let shifted = self.base_rto.saturating_mul(1u64 << self.backoffs.min(32));
        Duration::from_nanos(self.clamp(shifted))
    }

    fn base_rto(&self) -> Duration {
        Duration::from_nanos(self.base_rto)
    }

    fn on_retransmit_timeout(&mut self) {
        if self.rto() < self.config.max_rto {
            self.backoffs += 1;
        }
    }

    fn srtt(&self) -> Option<Duration> {
        self.smoothed.map(|(s, _)| Duration::from_nanos(s))
    }

    fn rttvar(&self) -> Option<Duration> {
        self.smoothed.map(|(_, v)| Duration::from_nanos(v))
    }

    fn backoffs(&self) -> u32 {
        self.backoffs
    }

    fn on_handshake_without_sample(&mut self) {
        if self.smoothed.is_none() {
            let rto = nanos(self.config.initial_rto).max(nanos(SYN_FALLBACK_RTO));
            self.base_rto = self.clamp(rto);
            self.backoffs = 0;
        }
    }
}

/// 4.3BSD-Reno's parameters, in ticks of its slow timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsdRenoConfig {
    /// One tick (`PR_SLOWHZ` = 2: 500 ms).
    pub tick: Duration,
    /// The RTO floor in ticks (`TCPTV_MIN`: 2 ticks, 1 s).
    pub min_ticks: u32,
    /// The RTO ceiling in ticks (`TCPTV_REXMTMAX`: 128 ticks, 64 s).
    pub max_ticks: u32,
    /// The assumed RTT before any sample (`TCPTV_SRTTDFLT`: 6 ticks, 3 s).
    pub default_rtt_ticks: u32,
}

impl Default for BsdRenoConfig {
    fn default() -> BsdRenoConfig {
        BsdRenoConfig {
            tick: Duration::from_millis(500),
            min_ticks: 2,
            max_ticks: 128,
            default_rtt_ticks: 6,
        }
    }
}

/// `TCP_RTT_SHIFT`: srtt is kept ×8.
const RTT_SHIFT: u32 = 3;
/// `TCP_RTTVAR_SHIFT`: rttvar is kept ×4.
const RTTVAR_SHIFT: u32 = 2;
/// `TCP_MAXRXTSHIFT`.
const MAX_RXT_SHIFT: u32 = 12;

/// 4.3BSD-Reno's estimator: integers in ticks, as `tcp_xmit_timer` keeps
/// them (`t_srtt` ×8, `t_rttvar` ×4, `t_rxtcur`, `t_rxtshift`).
#[derive(Debug, Clone)]
pub struct BsdReno {
    config: BsdRenoConfig,
    /// `t_srtt`: ticks ×8; 0 means no sample.
    srtt: i32,
    /// `t_rttvar`: ticks ×4.
    rttvar: i32,
    /// `t_rxtcur`: the current timeout in ticks.
    rxtcur: u32,
    /// `t_rxtshift`.
    rxtshift: u32,
}

impl BsdReno {
    /// An estimator with no sample: `tcp_newtcpcb`'s start, an RTO of
    /// (0/4 + default×4)/2 ticks (6 s with the defaults).
    pub fn new(config: BsdRenoConfig) -> BsdReno {
        let rttvar = (config.default_rtt_ticks as i32) << RTTVAR_SHIFT;
        let mut b = BsdReno {
            config,
            srtt: 0,
            rttvar,
            rxtcur: 0,
            rxtshift: 0,
        };
        b.rxtcur = b.range(rttvar as u32 >> 1);
        b
    }

    /// `TCPT_RANGESET`: clamps a timeout in ticks.
    fn range(&self, ticks: u32) -> u32 {
        ticks.clamp(self.config.min_ticks, self.config.max_ticks)
    }

    /// `TCP_REXMTVAL`: srtt + 4·rttvar in ticks (rttvar is already ×4).
    fn rexmtval(&self) -> u32 {
        ((self.srtt >> RTT_SHIFT) + self.rttvar).max(0) as u32
    }

    /// The timer's count when the ACK came (`t_rtt`, which `tcp_output`
    /// starts at 1 and each slow timeout increments): 1 + whole ticks.
    pub fn ticks_of(&self, rtt: Duration) -> i32 {
        let ticks = rtt.as_nanos() / self.config.tick.as_nanos().max(1);
        (ticks.min(i32::MAX as u128 - 1) as i32) + 1
    }

    /// `tcp_xmit_timer(tp, rtt)` with `rtt` the tick count `t_rtt`.
    pub fn sample_ticks(&mut self, rtt: i32) {
        if self.srtt != 0 {
            // srtt += (rtt − 1) − srtt/8, i.e. srtt = 7/8 srtt + 1/8 rtt.
            let mut delta = rtt - 1 - (self.srtt >> RTT_SHIFT);
            self.srtt += delta;
            if self.srtt <= 0 {
                self.srtt = 1;
            }
            // rttvar = 3/4 rttvar + 1/4 |delta|.
            delta = delta.abs() - (self.rttvar >> RTTVAR_SHIFT);
            self.rttvar += delta;
            if self.rttvar <= 0 {
                self.rttvar = 1;
            }
        } else {
            self.srtt = rtt << RTT_SHIFT;
            self.rttvar = rtt << (RTTVAR_SHIFT - 1);
        }
        self.rxtshift = 0;
        self.rxtcur = self.range(self.rexmtval());
    }

    /// The current timeout in ticks (`t_rxtcur`).
    pub fn rto_ticks(&self) -> u32 {
        self.rxtcur
    }

    /// The scaled state (`t_srtt` ×8, `t_rttvar` ×4), for tests and counters.
    pub fn scaled(&self) -> (i32, i32) {
        (self.srtt, self.rttvar)
    }
}

impl RttEstimator for BsdReno {
    /// Every sample counts in full, however many the round trip gives:
    /// 4.4BSD-Lite fed each ACK's timestamp echo to `tcp_xmit_timer` so.
    /// In ticks of 500 ms a path's samples are mostly the same count, so
    /// more of them move srtt no faster; rttvar settles sooner.
    fn sample_one_of(&mut self, rtt: Duration, _per_rtt: u32) {
        let ticks = self.ticks_of(rtt);
        self.sample_ticks(ticks);
    }

    fn rto(&self) -> Duration {
        self.config.tick * self.rxtcur
    }

    fn base_rto(&self) -> Duration {
        self.config.tick * self.range(self.rexmtval())
    }

    /// `t_rxtcur` itself when the slow clock ticks as this estimator
    /// counts (it already holds `tcp_backoff[]`'s multiple).
    fn rto_ticks(&self, clock: &BsdClock) -> u32 {
        if clock.slow == self.config.tick {
            self.rxtcur
        } else {
            clock.rto_ticks(self.rto(), 0)
        }
    }

    /// `tcp_timers`' TCPT_REXMT case: one more shift, the timeout from
    /// `tcp_backoff[]`, and after a quarter of the allowed shifts srtt is
    /// folded into rttvar and forgotten.
    fn on_retransmit_timeout(&mut self) {
        self.rxtshift = (self.rxtshift + 1).min(MAX_RXT_SHIFT);
        let rexmt = self.rexmtval() * BACKOFF[self.rxtshift as usize];
        self.rxtcur = self.range(rexmt);
        if self.rxtshift > MAX_RXT_SHIFT / 4 {
            self.rttvar += self.srtt >> RTT_SHIFT;
            self.srtt = 0;
        }
    }

    fn srtt(&self) -> Option<Duration> {
        (self.srtt != 0).then(|| self.config.tick * self.srtt as u32 / (1 << RTT_SHIFT))
    }

    fn rttvar(&self) -> Option<Duration> {
        (self.srtt != 0).then(|| self.config.tick * self.rttvar as u32 / (1 << RTTVAR_SHIFT))
    }

    fn backoffs(&self) -> u32 {
        self.rxtshift
    }

    /// 4.3BSD-Reno has no such rule (it predates RFC 6298): its timeout
    /// before any sample is already 6 s, and it keeps its backoff.
    fn on_handshake_without_sample(&mut self) {}
}

/// What an ACK gave [`RttTimer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timed {
    /// A round trip measured from a timed segment's send time.
    Sample(Duration),
    /// It covers data sent before the last retransmission: Karn's rule
    /// gives nothing (a timestamp echo would).
    Ambiguous,
    /// It covers no whole timed segment.
    Nothing,
}

/// The most segments [`RttTimer`] times at once when timing every one
/// (a 4 MB window of 1448-octet segments is about 2,900); beyond it a
/// segment goes untimed and its ACK falls back on the timestamp echo.
pub const MAX_TIMED: usize = 4096;

/// Times segments for RTT samples and applies Karn's rule: a
/// retransmission voids what was being timed.
///
/// By default it times one segment at a time, as BSD's `t_rtt`/`t_rtseq`
/// do: one sample per round trip. With timestamps (RFC 7323 §4) it times
/// every segment sent once, so every ACK that moves SND.UNA gives a
/// sample from the oldest segment it newly covers (Linux's per-`skb`
/// send times, to the nanosecond, where the echoed TSval would give
/// whole milliseconds); an ACK that covers data sent before the last
/// retransmission gives none here, and the connection takes the
/// timestamp echo instead, which names the copy ([`RttTimer::on_ack`]).
#[derive(Debug, Clone, Default)]
pub struct RttTimer {
    /// Segments sent once and timed: (end, when sent), ascending.
    timed: VecDeque<(SeqNumber, Instant)>,
    every_segment: bool,
    /// The highest end sent when something was last retransmitted:
    /// data below it may be a retransmission's.
    ambiguous_below: Option<SeqNumber>,
    /// The highest end passed to `on_send`.
    high: Option<SeqNumber>,
    /// The highest ACK seen.
    acked: Option<SeqNumber>,
}

impl RttTimer {
    /// Times every segment (with timestamps) or one at a time.
    pub fn time_every_segment(&mut self, on: bool) {
        self.every_segment = on;
    }

    /// A segment ending at `seq_end` was sent at `now` for the first time:
    /// timed if nothing is (or, timing every segment, if there is room).
    pub fn on_send(&mut self, seq_end: SeqNumber, now: Instant) {
        self.high = Some(self.high.map_or(seq_end, |h| h.max(seq_end)));
        let room = if self.every_segment {
            self.timed.len() < MAX_TIMED
        } else {
            self.timed.is_empty()
        };
        if room && self.timed.back().is_none_or(|&(end, _)| seq_end > end) {
            self.timed.push_back((seq_end, now));
        }
    }

    /// Something was retransmitted: by Karn's rule the ACK of anything
    /// sent so far could be for either copy, so what was timed is dropped.
    pub fn on_retransmit(&mut self) {
        self.timed.clear();
        if let Some(high) = self.high {
            self.ambiguous_below = Some(self.ambiguous_below.map_or(high, |a| a.max(high)));
        }
    }

    /// An ACK for `ack` came at `now`: a sample from the oldest timed
    /// segment it covers, unless it also covers data sent before the last
    /// retransmission (see [`RttTimer::on_ack_timed`]).
    pub fn on_ack(&mut self, ack: SeqNumber, now: Instant) -> Option<Duration> {
        match self.on_ack_timed(ack, now) {
            Timed::Sample(rtt) => Some(rtt),
            Timed::Ambiguous | Timed::Nothing => None,
        }
    }

    /// [`RttTimer::on_ack`], saying why there is no sample: timing every
    /// segment, an ACK that newly covers data sent before the last
    /// retransmission is [`Timed::Ambiguous`] (Linux's
    /// `FLAG_RETRANS_DATA_ACKED`: the copy is unknown, and a segment behind
    /// the repaired hole waited for it), one that covers no whole timed
    /// segment [`Timed::Nothing`].
    pub fn on_ack_timed(&mut self, ack: SeqNumber, now: Instant) -> Timed {
        let mut oldest = None;
        while let Some(&(end, sent)) = self.timed.front() {
            if end > ack {
                break;
            }
            oldest.get_or_insert(sent);
            self.timed.pop_front();
        }
        let ambiguous = match self.ambiguous_below {
            Some(below) => {
                let newly = self.acked.is_none_or(|a| a < below && ack > a);
                if ack >= below {
                    self.ambiguous_below = None;
                }
                newly
            }
            None => false,
        };
        if self.acked.is_none_or(|a| ack > a) {
            self.acked = Some(ack);
        }
        match oldest {
            _ if ambiguous && self.every_segment => Timed::Ambiguous,
            Some(sent) => Timed::Sample(now.since(sent)),
            None if ambiguous => Timed::Ambiguous,
            None => Timed::Nothing,
        }
    }

    /// Whether a segment is being timed.
    pub fn is_timing(&self) -> bool {
        !self.timed.is_empty()
    }

    /// Heap bytes held: the timed segments' capacity.
    pub fn heap_bytes(&self) -> usize {
        self.timed.capacity() * std::mem::size_of::<(SeqNumber, Instant)>()
    }
}

#[cfg(test)]
#[path = "rtt_tests.rs"]
mod tests;
