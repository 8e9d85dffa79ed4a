//! CUBIC congestion control (RFC 9438). After a congestion event the
//! window follows W_cubic(t) = C·(t − K)³ + W_max (§4.2) with
//! K = ∛((W_max − cwnd_epoch)/C), C = 0.4, β = 0.7; it never grows slower
//! than Reno would (the Reno-friendly region, §4.3, W_est with
//! α = 3(1 − β)/(1 + β)); and with fast convergence (§4.7) a flow that
//! loses below its last W_max gives some of it up. A loss sets ssthresh to
//! β·FlightSize (§4.6; β·cwnd, as Linux does, is a switch); after a
//! timeout cwnd slow-starts from one segment and the first congestion
//! avoidance starts with K = 0 and W_max = its own window (§4.8). Windows are kept in
//! segments as floating point, as the RFC writes them.

use std::time::Duration;

use super::{CongestionControl, InitialWindow};
use crate::time::Instant;

/// What β multiplies on a congestion event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReductionBase {
    /// RFC 9438 §4.6: ssthresh = FlightSize·β.
    #[default]
    FlightSize,
    /// cwnd·β, as Linux and Windows do (§4.6 notes it).
    Cwnd,
}

/// CUBIC's constants (RFC 9438 §4.1, §4.6, §4.7).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CubicConfig {
    /// C: the curve's aggressiveness, segments / s³.
    pub c: f64,
    /// β_cubic: the multiplicative decrease.
    pub beta: f64,
    /// Fast convergence on or off.
    pub fast_convergence: bool,
    /// What β multiplies.
    pub reduction_base: ReductionBase,
}

impl Default for CubicConfig {
    fn default() -> CubicConfig {
        CubicConfig {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reduction_base: ReductionBase::FlightSize,
        }
    }
}

/// The current congestion-avoidance epoch (§4.2: starts at the first ACK
/// after a congestion event).
#[derive(Debug, Clone, Copy)]
struct Epoch {
    start: Instant,
    k: f64,
    /// W_est of the Reno-friendly region, segments.
    w_est: f64,
}

/// CUBIC's state.
#[derive(Debug, Clone)]
pub struct Cubic {
    config: CubicConfig,
    mss: usize,
    /// cwnd in segments.
    cwnd: f64,
    ssthresh: usize,
    /// W_max in segments: the window before the last reduction.
    w_max: f64,
    epoch: Option<Epoch>,
    /// The smoothed RTT, for W_cubic(t + RTT).
    rtt: Duration,
    /// When the last ACK of new data came (the epoch moves on by the time
    /// between ACKs the sender was application-limited, §5.8).
    last_ack: Option<Instant>,
    /// A retransmission timeout was the last congestion event: the next
    /// epoch starts with K = 0 and W_max = its own cwnd (§4.8).
    after_timeout: bool,
    /// The initial (and restart) window's rule.
    iw: InitialWindow,
}

impl Cubic {
    /// A sender at RFC 5681's initial window with RFC 9438's constants.
    pub fn new(mss: usize) -> Cubic {
        Cubic::with_config(mss, CubicConfig::default())
    }

    /// A sender with other constants.
    pub fn with_config(mss: usize, config: CubicConfig) -> Cubic {
        Cubic::with_config_and_window(mss, config, InitialWindow::Rfc5681)
    }

    /// A sender at initial window `iw` with RFC 9438's constants.
    pub fn with_initial_window(mss: usize, iw: InitialWindow) -> Cubic {
        Cubic::with_config_and_window(mss, CubicConfig::default(), iw)
    }

    fn with_config_and_window(mss: usize, config: CubicConfig, iw: InitialWindow) -> Cubic {
        Cubic {
            iw,
            config,
            mss,
            cwnd: iw.bytes(mss) as f64 / mss as f64,
            ssthresh: usize::MAX,
            w_max: 0.0,
            epoch: None,
            rtt: Duration::ZERO,
            last_ack: None,
            after_timeout: false,
        }
    }

    /// Sets cwnd and ssthresh in bytes (tests, cached route metrics).
    pub fn with_windows(mut self, cwnd: usize, ssthresh: usize) -> Cubic {
        self.cwnd = cwnd as f64 / self.mss as f64;
        self.ssthresh = ssthresh;
        self
    }

    /// W_max, segments.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// K of the current epoch, seconds (None before its first ACK).
    pub fn k(&self) -> Option<f64> {
        self.epoch.map(|e| e.k)
    }

    /// W_cubic(t), segments, for t seconds into the current epoch.
    pub fn w_cubic(&self, t: f64) -> Option<f64> {
        self.epoch
            .map(|e| self.config.c * (t - e.k).powi(3) + self.w_max)
    }

    /// The epoch, started at `now` if none is running.
    fn epoch(&mut self, now: Instant) -> Epoch {
        if let Some(e) = self.epoch {
            return e;
        }
        if self.after_timeout || self.w_max < self.cwnd {
            // No reduction yet (or cwnd passed W_max), or the first
            // congestion avoidance after a timeout (§4.8: K = 0, W_max =
            // the window at its start): the curve starts on its plateau.
            self.w_max = self.cwnd;
        }
        self.after_timeout = false;
        let e = Epoch {
            start: now,
            k: ((self.w_max - self.cwnd) / self.config.c).cbrt(),
            w_est: self.cwnd,
        };
        self.epoch = Some(e);
        e
    }

    /// §4.6–4.7: W_max (with fast convergence), then ssthresh and cwnd
    /// from β, at least two segments.
    fn reduce(&mut self, flight_size: usize) {
        let beta = self.config.beta;
        self.w_max = if self.config.fast_convergence && self.cwnd < self.w_max {
            self.cwnd * (1.0 + beta) / 2.0
        } else {
            self.cwnd
        };
        let base = match self.config.reduction_base {
            ReductionBase::FlightSize => flight_size as f64 / self.mss as f64,
            ReductionBase::Cwnd => self.cwnd,
        };
        let ssthresh = (base * beta).max(2.0);
        self.ssthresh = (ssthresh * self.mss as f64) as usize;
        self.cwnd = ssthresh;
        self.epoch = None;
        self.after_timeout = false;
    }
}

impl CongestionControl for Cubic {
    fn on_ack(&mut self, acked_bytes: usize, srtt: Option<Duration>, now: Instant) {
        if let Some(srtt) = srtt {
            self.rtt = srtt;
        }
        self.last_ack = Some(now);
        let mss = self.mss as f64;
        if self.cwnd() < self.ssthresh {
            self.cwnd += acked_bytes.min(self.mss) as f64 / mss;
            return;
        }
        let mut epoch = self.epoch(now);
        let acked = acked_bytes as f64 / mss;
        let t = now.since(epoch.start).as_secs_f64();
        // §4.3: Reno's growth with α_cubic, then α = 1 once past W_max.
        let beta = self.config.beta;
        let alpha = if epoch.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - beta) / (1.0 + beta)
        };
        epoch.w_est += alpha * acked / self.cwnd;
        self.epoch = Some(epoch);
        let w_cubic_now = self.config.c * (t - epoch.k).powi(3) + self.w_max;
        if w_cubic_now < epoch.w_est {
            self.cwnd = self.cwnd.max(epoch.w_est);
            return;
        }
        // §4.4–4.5: towards W_cubic(t + RTT), within [cwnd, 1.5·cwnd].
        let ahead = t + self.rtt.as_secs_f64();
        let target = (self.config.c * (ahead - epoch.k).powi(3) + self.w_max)
            .clamp(self.cwnd, 1.5 * self.cwnd);
        self.cwnd += (target - self.cwnd) / self.cwnd * acked;
    }

    fn on_fast_retransmit(&mut self, flight_size: usize, _now: Instant) {
        self.reduce(flight_size);
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.cwnd = self.ssthresh as f64 / self.mss as f64;
    }

    fn on_retransmit_timeout(&mut self, flight_size: usize, _now: Instant) {
        // §4.8: ssthresh by β as for a loss, then the loss window; the
        // congestion avoidance after the slow start back to ssthresh
        // starts a curve of its own (K = 0).
        self.reduce(flight_size);
        self.cwnd = 1.0;
        self.after_timeout = true;
    }

    fn cwnd(&self) -> usize {
        (self.cwnd * self.mss as f64) as usize
    }

    fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    fn set_mss(&mut self, mss: usize) {
        let bytes = self.cwnd();
        self.mss = mss;
        self.cwnd = bytes as f64 / mss as f64;
    }

    fn on_app_limited_ack(&mut self, now: Instant) {
        // §5.8: t must not include the time cwnd was not used; the curve
        // (and W_est) resume where they stopped.
        if let (Some(epoch), Some(last)) = (&mut self.epoch, self.last_ack) {
            epoch.start = epoch.start.after(now.since(last));
        }
        self.last_ack = Some(now);
    }

    fn on_idle_restart(&mut self, _now: Instant) {
        // RFC 5681 §4.1's restart window; the congestion avoidance after
        // the slow start back to ssthresh is a new epoch, so the idle
        // time is not in its t (§5.8).
        let iw = self.iw.bytes(self.mss) as f64 / self.mss as f64;
        self.cwnd = self.cwnd.min(iw);
        self.epoch = None;
    }
}

#[cfg(test)]
#[path = "cubic_tests.rs"]
mod tests;
