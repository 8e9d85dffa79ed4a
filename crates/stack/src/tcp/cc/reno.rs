//! Reno congestion control (RFC 5681): slow start, congestion avoidance by
//! byte counting (RFC 3465 with L = 1, one MSS per cwnd of bytes
//! acknowledged), ssthresh = max(FlightSize/2, 2·MSS) on loss, one MSS
//! after a timeout.

use std::time::Duration;

use super::{half_flight, CongestionControl, InitialWindow};
use crate::time::Instant;

/// Reno's state.
#[derive(Debug, Clone)]
pub struct Reno {
    mss: usize,
    cwnd: usize,
    ssthresh: usize,
    /// Bytes acknowledged in congestion avoidance since cwnd last grew.
    bytes_acked: usize,
    /// The initial (and restart) window's rule.
    iw: InitialWindow,
}

impl Reno {
    /// A sender at RFC 5681's initial window, ssthresh unbounded.
    pub fn new(mss: usize) -> Reno {
        Reno::with_initial_window(mss, InitialWindow::Rfc5681)
    }

    /// A sender at initial window `iw`, ssthresh unbounded.
    pub fn with_initial_window(mss: usize, iw: InitialWindow) -> Reno {
        Reno {
            mss,
            cwnd: iw.bytes(mss),
            ssthresh: usize::MAX,
            bytes_acked: 0,
            iw,
        }
    }

    /// Sets cwnd and ssthresh directly (for tests and for a state machine
    /// that caches them per route).
    pub fn with_windows(mut self, cwnd: usize, ssthresh: usize) -> Reno {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self
    }
}

impl CongestionControl for Reno {
    fn on_ack(&mut self, acked_bytes: usize, _srtt: Option<Duration>, _now: Instant) {
        if self.cwnd < self.ssthresh {
            // §3.1 (2): at most one MSS per ACK in slow start.
            self.cwnd = self.cwnd.saturating_add(acked_bytes.min(self.mss));
        } else {
            // §3.1 (3) with byte counting: one MSS per cwnd acknowledged.
            self.bytes_acked += acked_bytes;
            if self.bytes_acked >= self.cwnd {
                self.bytes_acked -= self.cwnd;
                self.cwnd = self.cwnd.saturating_add(self.mss);
            }
        }
    }

    fn on_fast_retransmit(&mut self, flight_size: usize, _now: Instant) {
        self.ssthresh = half_flight(flight_size, self.mss);
        self.cwnd = self.ssthresh;
        self.bytes_acked = 0;
    }

    fn on_recovery_exit(&mut self, _now: Instant) {
        self.cwnd = self.ssthresh;
    }

    fn on_retransmit_timeout(&mut self, flight_size: usize, _now: Instant) {
        // §3.1 (4) and the loss window of one segment.
        self.ssthresh = half_flight(flight_size, self.mss);
        self.cwnd = self.mss;
        self.bytes_acked = 0;
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
        self.bytes_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: usize = 1000;

    /// One round trip: every segment of the current window acknowledged,
    /// one ACK per segment.
    fn round_trip(r: &mut Reno) {
        let segments = r.cwnd() / MSS;
        for _ in 0..segments {
            r.on_ack(MSS, None, Instant::ZERO);
        }
    }

    #[test]
    fn slow_start_doubles_per_round_trip() {
        let mut r = Reno::new(MSS);
        assert_eq!(r.cwnd(), 4 * MSS);
        let mut seen = vec![];
        for _ in 0..4 {
            round_trip(&mut r);
            seen.push(r.cwnd() / MSS);
        }
        assert_eq!(seen, [8, 16, 32, 64]);
    }

    #[test]
    fn slow_start_grows_by_at_most_one_mss_per_ack() {
        let mut r = Reno::new(MSS);
        r.on_ack(10 * MSS, None, Instant::ZERO); // a stretch ACK
        assert_eq!(r.cwnd(), 5 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_round_trip() {
        let mut r = Reno::new(MSS).with_windows(20 * MSS, 10 * MSS);
        let mut seen = vec![];
        for _ in 0..3 {
            round_trip(&mut r);
            seen.push(r.cwnd() / MSS);
        }
        assert_eq!(seen, [21, 22, 23]);
        // Half a round trip is not enough.
        for _ in 0..11 {
            r.on_ack(MSS, None, Instant::ZERO);
        }
        assert_eq!(r.cwnd(), 23 * MSS);
    }

    #[test]
    fn loss_halves_and_a_timeout_drops_to_one_segment() {
        let mut r = Reno::new(MSS).with_windows(40 * MSS, 20 * MSS);
        r.on_fast_retransmit(40 * MSS, Instant::ZERO);
        assert_eq!((r.cwnd(), r.ssthresh()), (20 * MSS, 20 * MSS));
        r.on_recovery_exit(Instant::ZERO);
        assert_eq!(r.cwnd(), 20 * MSS);
        // The halving is of what was in flight, not of cwnd.
        r.on_retransmit_timeout(6 * MSS, Instant::ZERO);
        assert_eq!((r.cwnd(), r.ssthresh()), (MSS, 3 * MSS));
        // Slow start again up to ssthresh, then linear.
        for _ in 0..2 {
            r.on_ack(MSS, None, Instant::ZERO);
        }
        assert_eq!(r.cwnd(), 3 * MSS);
        r.on_ack(MSS, None, Instant::ZERO);
        assert_eq!(r.cwnd(), 3 * MSS, "in congestion avoidance now");
    }
}
