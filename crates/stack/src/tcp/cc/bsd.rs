//! The 4.3BSD controllers, `--cc tahoe` and `--cc reno90`: one ACK, one
//! step, as BSD's `tcp_input.c` opened `snd_cwnd` — a whole segment per
//! ACK in slow start (cwnd ≤ ssthresh), and in congestion avoidance
//!
//! - Tahoe (Jacobson 1988; 4.3BSD-Tahoe's `tcp_input.c`):
//!   `incr = MAX(incr * incr / snd_cwnd, 1)`, mss²/cwnd per ACK;
//! - Reno (4.4BSD's `tcp_input.c`; which 1990 release first had the
//!   eighth is not settled: the one 4.3BSD-Reno-dated copy read has the
//!   plain `incr * incr / cw`):
//!   `incr = incr * incr / cw + incr / 8`, mss²/cwnd + mss/8 per ACK —
//!   "a constant fraction of a packet (maxseg/8) to help larger windows
//!   open quickly enough" (the comment beside it), which makes the growth
//!   superlinear: about 1 + cwnd/(8·mss) segments per round trip.
//!
//! Both count ACKs, not bytes (no RFC 3465 byte counting): a delayed ACK
//! of two segments grows cwnd once. On a loss both set ssthresh =
//! max(FlightSize/2, 2·MSS). Tahoe's fast retransmit then drops cwnd to
//! one segment and slow-starts ([`FastRecovery::None`]); Reno's keeps
//! cwnd at ssthresh, which the state machine inflates by the duplicate
//! ACKs until the first new ACK ([`FastRecovery::EndsOnNewAck`]). A
//! timeout drops either to one segment.

use std::time::Duration;

use super::{half_flight, CongestionControl, FastRecovery, InitialWindow};
use crate::time::Instant;

/// Which 4.3BSD release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BsdVariant {
    /// 4.3BSD-Tahoe (1988).
    Tahoe,
    /// 4.3BSD-Reno (1990).
    Reno,
}

/// A 4.3BSD sender's windows.
#[derive(Debug, Clone)]
pub struct Bsd {
    variant: BsdVariant,
    mss: usize,
    cwnd: usize,
    ssthresh: usize,
}

impl Bsd {
    /// A sender at initial window `iw`, ssthresh unbounded.
    pub fn new(variant: BsdVariant, mss: usize, iw: InitialWindow) -> Bsd {
        Bsd {
            variant,
            mss,
            cwnd: iw.bytes(mss),
            ssthresh: usize::MAX,
        }
    }

    /// Sets cwnd and ssthresh directly (tests).
    pub fn with_windows(mut self, cwnd: usize, ssthresh: usize) -> Bsd {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self
    }

    /// What one ACK adds to cwnd now, bytes.
    pub fn increment(&self) -> usize {
        let mss = self.mss;
        if self.cwnd <= self.ssthresh {
            return mss;
        }
        let linear = mss * mss / self.cwnd.max(1);
        match self.variant {
            BsdVariant::Tahoe => linear.max(1),
            BsdVariant::Reno => linear + mss / 8,
        }
    }
}

/// BSD's ceiling on cwnd: `TCP_MAXWIN << TCP_MAX_WINSHIFT`.
const MAX_CWND: usize = 65_535 << 14;

impl Bsd {
    /// Opens cwnd by one ACK's step, as `tcp_input.c` did on every ACK of
    /// new data, up to BSD's ceiling.
    fn open(&mut self) {
        self.cwnd = self.cwnd.saturating_add(self.increment()).min(MAX_CWND);
    }
}

impl CongestionControl for Bsd {
    fn on_ack(&mut self, _acked_bytes: usize, _srtt: Option<Duration>, _now: Instant) {
        self.open();
    }

    fn on_fast_retransmit(&mut self, flight_size: usize, _now: Instant) {
        self.ssthresh = half_flight(flight_size, self.mss);
        self.cwnd = match self.variant {
            BsdVariant::Tahoe => self.mss,
            BsdVariant::Reno => self.ssthresh,
        };
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        if self.variant == BsdVariant::Reno {
            // Net/2 deflates to ssthresh and, on the same ACK, opens cwnd
            // (cw ≤ ssthresh: a whole segment).
            self.cwnd = self.ssthresh;
            self.open();
        }
    }

    fn on_retransmit_timeout(&mut self, flight_size: usize, _now: Instant) {
        self.ssthresh = half_flight(flight_size, self.mss);
        self.cwnd = self.mss;
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

    /// Not BSD's: BSD opened cwnd on every ACK of new data, whether or not
    /// the sender used its window; here, as for the stack's other
    /// controllers, an ACK that finds the window unused does not grow it
    /// (RFC 7661), so an application-limited sender's cwnd does not run
    /// far past what it ever sent.
    fn on_app_limited_ack(&mut self, _now: Instant) {}

    /// BSD restarted at one segment (`snd_cwnd = t_maxseg`), whatever the
    /// initial window.
    fn on_idle_restart(&mut self, _now: Instant) {
        self.cwnd = self.mss;
    }

    fn fast_recovery(&self) -> FastRecovery {
        match self.variant {
            BsdVariant::Tahoe => FastRecovery::None,
            BsdVariant::Reno => FastRecovery::EndsOnNewAck,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1000;
    const T: Instant = Instant::ZERO;

    #[test]
    fn tahoe_falls_to_one_segment_on_fast_retransmit_and_slow_starts() {
        let mut c = Bsd::new(BsdVariant::Tahoe, MSS, InitialWindow::Segments(1));
        assert_eq!(c.cwnd(), MSS);
        for _ in 0..19 {
            c.on_ack(MSS, None, T);
        }
        assert_eq!(c.cwnd(), 20 * MSS, "one segment per ACK in slow start");
        c.on_fast_retransmit(20 * MSS, T);
        assert_eq!((c.cwnd(), c.ssthresh()), (MSS, 10 * MSS));
        assert_eq!(c.fast_recovery(), FastRecovery::None);
        for _ in 0..9 {
            c.on_ack(MSS, None, T);
        }
        assert_eq!(c.cwnd(), 10 * MSS, "slow start up to ssthresh");
        c.on_ack(MSS, None, T);
        assert_eq!(c.cwnd(), 11 * MSS, "cwnd = ssthresh still slow-starts");
        c.on_ack(MSS, None, T);
        assert_eq!(c.cwnd(), 11 * MSS + MSS * MSS / (11 * MSS));
        // The timeout: one segment too, ssthresh from the flight.
        c.on_retransmit_timeout(3 * MSS, T);
        assert_eq!((c.cwnd(), c.ssthresh()), (MSS, 2 * MSS));
    }

    #[test]
    fn reno90_keeps_half_and_grows_by_the_eighth() {
        let mut c = Bsd::new(BsdVariant::Reno, MSS, InitialWindow::Rfc5681);
        assert_eq!(c.fast_recovery(), FastRecovery::EndsOnNewAck);
        c.on_fast_retransmit(40 * MSS, T);
        assert_eq!((c.cwnd(), c.ssthresh()), (20 * MSS, 20 * MSS));
        // The exit ACK deflates to ssthresh and, as cwnd = ssthresh still
        // slow-starts (BSD's `>`), opens a whole segment.
        c.on_recovery_exit(T);
        assert_eq!(c.cwnd(), 21 * MSS);
        // Above: mss²/cwnd + mss/8 = 1000²/21000 + 125 = 47 + 125.
        c.on_ack(MSS, None, T);
        assert_eq!(c.cwnd(), 21 * MSS + 47 + 125);
    }

    #[test]
    fn the_eighth_makes_reno90_outgrow_tahoe_in_congestion_avoidance() {
        // One round trip of per-segment ACKs at 100 segments: Tahoe's rule
        // adds about one segment (less: BSD's division truncates, 10⁶/100,010
        // is 9), Reno's about 1 + 100/8.
        let grow = |variant| {
            let mut c =
                Bsd::new(variant, MSS, InitialWindow::Rfc5681).with_windows(100 * MSS, 50 * MSS);
            for _ in 0..100 {
                c.on_ack(MSS, None, T);
            }
            c.cwnd() - 100 * MSS
        };
        let (tahoe, reno) = (grow(BsdVariant::Tahoe), grow(BsdVariant::Reno));
        assert!((900..=1000).contains(&tahoe), "Tahoe grew {tahoe}");
        assert!((13_300..=13_500).contains(&reno), "Reno grew {reno}");
        // Tahoe's floor of one byte per ACK at an enormous window.
        let c =
            Bsd::new(BsdVariant::Tahoe, MSS, InitialWindow::Rfc5681).with_windows(10_000_000, MSS);
        assert_eq!(c.increment(), 1);
    }
}
