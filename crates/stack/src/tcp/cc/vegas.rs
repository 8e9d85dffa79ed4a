//! TCP Vegas's congestion avoidance and slow start (Brakmo & Peterson,
//! SIGCOMM 1994 and IEEE JSAC 13(8), 1995), `--cc vegas`.
//!
//! BaseRTT is the smallest RTT sample seen. Once per round trip (one
//! window's worth of bytes acknowledged since the round began) the
//! sender compares Expected = cwnd/BaseRTT with Actual = cwnd/RTT, RTT
//! being the round's smallest sample (as Linux's `tcp_vegas` does, so a
//! delayed ACK does not count as queueing), as the number of segments it
//! keeps queued in the network: Diff = (Expected − Actual)·BaseRTT =
//! cwnd·(RTT − BaseRTT)/RTT. In congestion avoidance cwnd grows by one
//! segment when Diff < α (1 segment), shrinks by one when Diff > β (3),
//! and holds between. In slow start cwnd doubles only every other round
//! trip (the rounds between hold it, so RTT is measured at a fixed
//! window), and slow start ends when Diff > γ (1 segment): cwnd falls
//! to the window that would keep one segment queued,
//! min(cwnd, W·BaseRTT/RTT + 1 segment), W the window at the round's
//! start, and ssthresh to it.
//!
//! Losses are handled as Reno (ssthresh = max(FlightSize/2, 2·MSS),
//! NewReno recovery by the state machine, one segment after a timeout);
//! Vegas's own retransmission changes (its fine-grained timeout check on
//! duplicate ACKs, and the 3/4 reduction the paper gives) are not here.
//! A round with no RTT sample (Karn's rule withheld all) grows cwnd by a
//! segment in congestion avoidance, as Reno would.

use std::time::Duration;

use super::{half_flight, CongestionControl, InitialWindow};
use crate::time::Instant;

/// Vegas's thresholds, segments queued in the network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VegasConfig {
    /// Below this, congestion avoidance grows cwnd by a segment.
    pub alpha: f64,
    /// Above this, congestion avoidance shrinks cwnd by a segment.
    pub beta: f64,
    /// Above this, slow start ends.
    pub gamma: f64,
}

impl Default for VegasConfig {
    /// The paper's α = 1, β = 3, γ = 1.
    fn default() -> VegasConfig {
        VegasConfig {
            alpha: 1.0,
            beta: 3.0,
            gamma: 1.0,
        }
    }
}

/// What the end of a round trip decided (for tests and traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VegasDecision {
    /// cwnd grew (by a segment, or doubled over a slow-start round).
    Increase,
    /// cwnd held.
    Hold,
    /// cwnd shrank by a segment.
    Decrease,
    /// Slow start ended at Diff > γ.
    LeaveSlowStart,
}

/// Vegas's state.
#[derive(Debug, Clone)]
pub struct Vegas {
    config: VegasConfig,
    mss: usize,
    cwnd: usize,
    ssthresh: usize,
    iw: InitialWindow,
    base_rtt: Option<Duration>,
    round_min_rtt: Option<Duration>,
    /// Bytes acknowledged in this round, and the window it began with.
    round_acked: usize,
    round_window: usize,
    /// In slow start: whether this round is one that grows cwnd.
    grow_this_round: bool,
    last: Option<VegasDecision>,
}

impl Vegas {
    /// A sender at initial window `iw` with the paper's thresholds.
    pub fn new(mss: usize, iw: InitialWindow) -> Vegas {
        let cwnd = iw.bytes(mss);
        Vegas {
            config: VegasConfig::default(),
            mss,
            cwnd,
            ssthresh: usize::MAX,
            iw,
            base_rtt: None,
            round_min_rtt: None,
            round_acked: 0,
            round_window: cwnd,
            grow_this_round: true,
            last: None,
        }
    }

    /// Sets cwnd and ssthresh directly (tests); a new round begins.
    pub fn with_windows(mut self, cwnd: usize, ssthresh: usize) -> Vegas {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self.new_round();
        self
    }

    /// The smallest RTT seen.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    /// What the last round's end decided.
    pub fn last_decision(&self) -> Option<VegasDecision> {
        self.last
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn new_round(&mut self) {
        self.round_acked = 0;
        self.round_window = self.cwnd.max(self.mss);
        self.round_min_rtt = None;
    }

    /// Diff, segments: W·(RTT − BaseRTT)/RTT, W the window the round's
    /// samples were taken at (its start; a slow-start round grows cwnd
    /// before it ends).
    fn diff(&self, base: Duration, rtt: Duration) -> f64 {
        let segments = self.round_window as f64 / self.mss as f64;
        let rtt_s = rtt.as_secs_f64().max(1e-9);
        segments * (rtt_s - base.as_secs_f64()).max(0.0) / rtt_s
    }

    fn end_of_round(&mut self) {
        let sample = self.base_rtt.zip(self.round_min_rtt);
        let decision = match sample {
            Some((base, rtt)) if self.in_slow_start() => {
                let diff = self.diff(base, rtt);
                if diff > self.config.gamma {
                    let target = self.round_window as f64 * base.as_secs_f64() / rtt.as_secs_f64();
                    let floor = 2 * self.mss;
                    self.cwnd = self.cwnd.min(target as usize + self.mss).max(floor);
                    self.ssthresh = self.cwnd;
                    VegasDecision::LeaveSlowStart
                } else {
                    self.slow_start_round()
                }
            }
            None if self.in_slow_start() => self.slow_start_round(),
            Some((base, rtt)) => {
                let diff = self.diff(base, rtt);
                if diff < self.config.alpha {
                    self.cwnd += self.mss;
                    VegasDecision::Increase
                } else if diff > self.config.beta {
                    self.cwnd = self.cwnd.saturating_sub(self.mss).max(2 * self.mss);
                    // A decrease stays in congestion avoidance (Linux's
                    // tcp_vegas_ssthresh): without this, a cwnd cut below
                    // ssthresh would slow-start, doubling as a queue builds.
                    self.ssthresh = self.ssthresh.min(self.cwnd);
                    VegasDecision::Decrease
                } else {
                    VegasDecision::Hold
                }
            }
            None => {
                self.cwnd += self.mss;
                VegasDecision::Increase
            }
        };
        self.last = Some(decision);
        self.new_round();
    }

    /// A slow-start round ended below γ: the next one grows if this one
    /// held, and holds if this one grew.
    fn slow_start_round(&mut self) -> VegasDecision {
        let grew = self.grow_this_round;
        self.grow_this_round = !grew;
        if grew {
            VegasDecision::Increase
        } else {
            VegasDecision::Hold
        }
    }

    fn after_loss(&mut self) {
        self.grow_this_round = true;
        self.new_round();
    }
}

impl CongestionControl for Vegas {
    fn on_ack(&mut self, acked_bytes: usize, _srtt: Option<Duration>, _now: Instant) {
        if self.in_slow_start() && self.grow_this_round {
            self.cwnd = self.cwnd.saturating_add(acked_bytes.min(self.mss));
        }
        self.round_acked += acked_bytes;
        if self.round_acked >= self.round_window {
            self.end_of_round();
        }
    }

    fn on_rtt_sample(&mut self, rtt: Duration, _now: Instant) {
        self.base_rtt = Some(self.base_rtt.map_or(rtt, |b| b.min(rtt)));
        self.round_min_rtt = Some(self.round_min_rtt.map_or(rtt, |r| r.min(rtt)));
    }

    fn on_fast_retransmit(&mut self, flight_size: usize, _now: Instant) {
        self.ssthresh = half_flight(flight_size, self.mss);
        self.cwnd = self.ssthresh;
        self.after_loss();
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.cwnd = self.ssthresh;
        self.new_round();
    }

    fn on_retransmit_timeout(&mut self, flight_size: usize, _now: Instant) {
        self.ssthresh = half_flight(flight_size, self.mss);
        self.cwnd = self.mss;
        self.after_loss();
    }

    fn cwnd(&self) -> usize {
        self.cwnd
    }

    fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    fn set_mss(&mut self, mss: usize) {
        self.mss = mss;
    }

    fn on_app_limited_ack(&mut self, _now: Instant) {}

    fn on_idle_restart(&mut self, _now: Instant) {
        self.cwnd = self.cwnd.min(self.iw.bytes(self.mss));
        self.new_round();
    }
}

#[cfg(test)]
#[path = "vegas_tests.rs"]
mod tests;
