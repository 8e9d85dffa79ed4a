//! Congestion control behind one trait, so issue 19's `--cc reno|cubic|none`
//! is a choice made when a connection is built. Windows are in bytes.
//!
//! The recovery logic (NewReno's RFC 6582 inflation or RFC 6675's pipe)
//! belongs to the state machine: the controller only says what cwnd and
//! ssthresh are on each event.

use std::fmt::Debug;
use std::time::Duration;

use crate::time::Instant;

pub mod cubic;
pub mod reno;

pub use cubic::{Cubic, CubicConfig, ReductionBase};
pub use reno::Reno;

/// A congestion controller.
pub trait CongestionControl: Debug + Send {
    /// New data was acknowledged: `acked_bytes` newly covered, with the
    /// smoothed RTT once there is one (RFC 9438 §4.2's RTT; the latest
    /// sample alone would let one delayed ACK throw the target far ahead).
    /// Not called for duplicate ACKs or inside fast recovery.
    fn on_ack(&mut self, acked_bytes: usize, srtt: Option<Duration>, now: Instant);
    /// Fast retransmit (three duplicate ACKs or RFC 6675's loss): enter
    /// recovery with `flight_size` bytes outstanding.
    fn on_fast_retransmit(&mut self, flight_size: usize, now: Instant);
    /// Recovery ended (the recovery point was acknowledged).
    fn on_recovery_exit(&mut self, now: Instant);
    /// The retransmission timer expired with `flight_size` bytes outstanding.
    fn on_retransmit_timeout(&mut self, flight_size: usize, now: Instant);
    /// The congestion window, bytes.
    fn cwnd(&self) -> usize;
    /// The slow-start threshold, bytes.
    fn ssthresh(&self) -> usize;
    /// The sender's maximum segment size changed (after the handshake).
    fn set_mss(&mut self, mss: usize);
    /// New data was acknowledged while the sender did not use its window
    /// (RFC 7661's non-validated phase; RFC 9438 §5.8): cwnd does not
    /// grow, and a controller whose growth follows the clock leaves the
    /// time since the last ACK out of it.
    fn on_app_limited_ack(&mut self, now: Instant);
    /// Nothing was sent for longer than the retransmission timeout (RFC
    /// 5681 §4.1): cwnd falls to the restart window, min(IW, cwnd).
    fn on_idle_restart(&mut self, now: Instant);
}

/// Which controller a connection uses: the switch issue 19 turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CongestionControlKind {
    /// RFC 5681.
    #[default]
    Reno,
    /// RFC 9438.
    Cubic,
    /// No congestion control: cwnd is unbounded.
    None,
}

impl CongestionControlKind {
    /// A fresh controller for a sender with this MSS.
    pub fn build(self, mss: usize) -> Box<dyn CongestionControl> {
        match self {
            CongestionControlKind::Reno => Box::new(Reno::new(mss)),
            CongestionControlKind::Cubic => Box::new(Cubic::new(mss)),
            CongestionControlKind::None => Box::new(Unlimited),
        }
    }
}

/// RFC 5681 §3.1's initial window: min(4·MSS, max(2·MSS, 4380 bytes)).
pub fn initial_window(mss: usize) -> usize {
    (4 * mss).min((2 * mss).max(4380))
}

/// RFC 5681 §3.1 (4): ssthresh after a loss, max(FlightSize/2, 2·MSS).
pub fn half_flight(flight_size: usize, mss: usize) -> usize {
    (flight_size / 2).max(2 * mss)
}

/// No congestion control: only the peer's window limits the sender.
#[derive(Debug, Clone, Copy, Default)]
pub struct Unlimited;

impl CongestionControl for Unlimited {
    fn on_ack(&mut self, _: usize, _: Option<Duration>, _: Instant) {}
    fn on_fast_retransmit(&mut self, _: usize, _: Instant) {}
    fn on_recovery_exit(&mut self, _: Instant) {}
    fn on_retransmit_timeout(&mut self, _: usize, _: Instant) {}
    fn cwnd(&self) -> usize {
        usize::MAX
    }
    fn ssthresh(&self) -> usize {
        usize::MAX
    }
    fn set_mss(&mut self, _: usize) {}
    fn on_app_limited_ack(&mut self, _: Instant) {}
    fn on_idle_restart(&mut self, _: Instant) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_initial_window_follows_rfc5681() {
        assert_eq!(initial_window(1460), 4380);
        assert_eq!(initial_window(536), 2144);
        assert_eq!(initial_window(9000), 18000);
        assert_eq!(half_flight(100_000, 1000), 50_000);
        assert_eq!(half_flight(1000, 1000), 2000);
    }

    #[test]
    fn none_never_limits_and_ignores_loss() {
        let mut c = CongestionControlKind::None.build(1000);
        c.on_fast_retransmit(50_000, Instant::ZERO);
        c.on_retransmit_timeout(50_000, Instant::ZERO);
        assert_eq!(c.cwnd(), usize::MAX);
        assert_eq!(c.ssthresh(), usize::MAX);
    }
}
