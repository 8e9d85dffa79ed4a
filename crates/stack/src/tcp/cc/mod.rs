//! Congestion control behind one trait, so issue 19's `--cc reno|cubic|none`
//! and issue 29's period controllers (`tahoe`, `reno90`, `vegas`) are a
//! choice made when a connection is built. Windows are in bytes.
//!
//! The recovery logic (NewReno's RFC 6582 inflation or RFC 6675's pipe)
//! belongs to the state machine: the controller only says what cwnd and
//! ssthresh are on each event, and which fast recovery it had
//! ([`FastRecovery`]): none (Tahoe), 4.3BSD-Reno's that ends on the first
//! new ACK, or NewReno's that stays in over partial ACKs (`reno`, the
//! name stored runs carry, is RFC 6582 NewReno and stays so).

use std::fmt::Debug;
use std::time::Duration;

use crate::time::Instant;

pub mod bsd;
pub mod cubic;
pub mod reno;
pub mod vegas;

pub use bsd::{Bsd, BsdVariant};
pub use cubic::{Cubic, CubicConfig, ReductionBase};
pub use reno::Reno;
pub use vegas::{Vegas, VegasConfig};

/// What the state machine does between a fast retransmit and the ACK of
/// everything that was outstanding then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastRecovery {
    /// 4.3BSD-Tahoe: none. The fast retransmit sets cwnd to one segment
    /// and slow start follows; duplicate ACKs past the third do nothing.
    None,
    /// 4.3BSD-Reno (1990): cwnd inflated by duplicate ACKs, and the first
    /// ACK of new data, partial or not, ends recovery. A later loss in
    /// the same window takes three new duplicate ACKs and halves again.
    EndsOnNewAck,
    /// RFC 6582 NewReno (or RFC 6675 with SACK): recovery lasts until
    /// everything outstanding at the fast retransmit is acknowledged.
    UntilRecoveryPoint,
}

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
    /// A round-trip sample (Karn's rule or a timestamp echo), for a
    /// controller that reads delay (Vegas).
    fn on_rtt_sample(&mut self, _rtt: Duration, _now: Instant) {}
    /// The fast recovery this controller's era had.
    fn fast_recovery(&self) -> FastRecovery {
        FastRecovery::UntilRecoveryPoint
    }
}

/// Which controller a connection uses: the switch issue 19 turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CongestionControlKind {
    /// RFC 5681 with RFC 6582 NewReno recovery (the `--cc reno` of
    /// stored runs).
    #[default]
    Reno,
    /// RFC 9438.
    Cubic,
    /// No congestion control: cwnd is unbounded.
    None,
    /// 4.3BSD-Tahoe (Jacobson 1988): no fast recovery.
    Tahoe,
    /// 4.3BSD-Reno (1990): fast recovery that ends on the first new ACK,
    /// congestion avoidance by mss²/cwnd + mss/8 per ACK.
    Reno90,
    /// TCP Vegas (Brakmo & Peterson 1995).
    Vegas,
}

impl CongestionControlKind {
    /// The 4.3BSD controllers, older than SACK (RFC 2018, 1996): a
    /// connection under them offers none.
    pub fn predates_sack(self) -> bool {
        matches!(
            self,
            CongestionControlKind::Tahoe | CongestionControlKind::Reno90
        )
    }

    /// A fresh controller for a sender with this MSS, starting at RFC
    /// 5681's initial window.
    pub fn build(self, mss: usize) -> Box<dyn CongestionControl> {
        self.build_with(mss, InitialWindow::Rfc5681)
    }

    /// A fresh controller for a sender with this MSS and initial window.
    pub fn build_with(self, mss: usize, iw: InitialWindow) -> Box<dyn CongestionControl> {
        match self {
            CongestionControlKind::Reno => Box::new(Reno::with_initial_window(mss, iw)),
            CongestionControlKind::Cubic => Box::new(Cubic::with_initial_window(mss, iw)),
            CongestionControlKind::None => Box::new(Unlimited),
            CongestionControlKind::Tahoe => Box::new(Bsd::new(BsdVariant::Tahoe, mss, iw)),
            CongestionControlKind::Reno90 => Box::new(Bsd::new(BsdVariant::Reno, mss, iw)),
            CongestionControlKind::Vegas => Box::new(Vegas::new(mss, iw)),
        }
    }
}

/// The window a connection starts with (`--initial-window`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InitialWindow {
    /// RFC 5681 §3.1's rule, [`initial_window`].
    #[default]
    Rfc5681,
    /// This many full segments (1 as 4.3BSD, 2 as RFC 2581, 4 as RFC 3390
    /// allows only at MSS ≤ 1095 bytes, 10 as RFC 6928 and Linux).
    Segments(u32),
}

impl InitialWindow {
    /// The window in bytes for this MSS.
    pub fn bytes(self, mss: usize) -> usize {
        match self {
            InitialWindow::Rfc5681 => initial_window(mss),
            InitialWindow::Segments(n) => (n as usize).max(1) * mss,
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
    fn the_initial_window_factor_counts_segments() {
        for n in [1, 2, 4, 10] {
            let iw = InitialWindow::Segments(n);
            assert_eq!(iw.bytes(1448), n as usize * 1448);
            for kind in [
                CongestionControlKind::Reno,
                CongestionControlKind::Cubic,
                CongestionControlKind::Tahoe,
                CongestionControlKind::Reno90,
                CongestionControlKind::Vegas,
            ] {
                let c = kind.build_with(1448, iw);
                assert_eq!(c.cwnd(), n as usize * 1448, "{kind:?} IW {n}");
            }
        }
        assert_eq!(InitialWindow::Rfc5681.bytes(1460), 4380);
        assert_eq!(CongestionControlKind::Reno.build(1460).cwnd(), 4380);
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
