//! 4.3BSD's two periodic TCP clocks (`--timers bsd`, issue 29): the slow
//! timeout every 500 ms (`PR_SLOWHZ` = 2, `tcp_slowtimo`), which counts
//! down the retransmit, persist, keepalive and 2MSL timers in whole ticks
//! and increments `t_rtt` while a segment is timed, and the fast timeout
//! every 200 ms (`PR_FASTHZ` = 5, `tcp_fasttimo`), which sends the delayed
//! ACKs flagged since the last one.
//!
//! Both tick on the stack's clock at whole multiples of their period from
//! its origin (the stack's start, the same for every connection, as BSD's
//! callouts are). So a timer set for n slow ticks fires at the n-th tick
//! boundary after it was set: between (n−1)·500 and n·500 ms later; a
//! delayed ACK leaves at the next fast tick, 0–200 ms after the segment;
//! and an RTT sample is the number of slow tick boundaries the round trip
//! crossed (a 10 ms round trip measures 0 or 1 tick, by phase).

use std::time::Duration;

use crate::time::Instant;

/// `TCPTV_MIN`: the RTO floor (2 slow ticks).
pub const RTO_MIN: Duration = Duration::from_secs(1);
/// `TCPTV_REXMTMAX`: the RTO ceiling (128 slow ticks).
pub const RTO_MAX: Duration = Duration::from_secs(64);
/// `tcp_backoff[]`: the RTO's multiplier after each expiry (`TCP_MAXRXTSHIFT`
/// is 12, the last index).
pub const BACKOFF: [u32; 13] = [1, 2, 4, 8, 16, 32, 64, 64, 64, 64, 64, 64, 64];

/// The periods of BSD's two TCP clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BsdClock {
    /// The slow timeout's period (1 / `PR_SLOWHZ`: 500 ms).
    pub slow: Duration,
    /// The fast timeout's period (1 / `PR_FASTHZ`: 200 ms).
    pub fast: Duration,
}

impl Default for BsdClock {
    fn default() -> BsdClock {
        BsdClock {
            slow: Duration::from_millis(500),
            fast: Duration::from_millis(200),
        }
    }
}

fn period_ns(d: Duration) -> u64 {
    (d.as_nanos().min(u128::from(u64::MAX)) as u64).max(1)
}

/// The first multiple of `period` strictly after `now`.
fn boundary_after(now: Instant, period: Duration) -> Instant {
    let p = period_ns(period);
    Instant((now.nanos() / p).saturating_add(1).saturating_mul(p))
}

impl BsdClock {
    /// Whole slow ticks for an interval: rounded up, at least one (BSD
    /// keeps its intervals in ticks; a zero would mean "off").
    pub fn slow_ticks(&self, interval: Duration) -> u32 {
        let p = u128::from(period_ns(self.slow));
        interval
            .as_nanos()
            .div_ceil(p)
            .clamp(1, u128::from(u32::MAX)) as u32
    }

    /// When a timer set at `now` to `ticks` slow ticks fires: at the
    /// `ticks`-th slow tick boundary after `now`.
    pub fn slow_deadline(&self, now: Instant, ticks: u32) -> Instant {
        let first = boundary_after(now, self.slow);
        first.after(self.slow * ticks.saturating_sub(1))
    }

    /// When a delayed ACK flagged at `now` leaves: the next fast tick.
    pub fn next_fast_tick(&self, now: Instant) -> Instant {
        boundary_after(now, self.fast)
    }

    /// Slow tick boundaries in (`from`, `to`]: what `t_rtt` counted
    /// beyond its start at 1 for a segment sent at `from` and acknowledged
    /// at `to`.
    pub fn ticks_crossed(&self, from: Instant, to: Instant) -> u32 {
        let p = period_ns(self.slow);
        let n = (to.nanos() / p).saturating_sub(from.nanos() / p);
        n.min(u64::from(u32::MAX)) as u32
    }

    /// An RTT sample as BSD's slow clock measures a round trip of `rtt`
    /// that ended at `now`: the ticks crossed, as a duration.
    pub fn quantize_sample(&self, rtt: Duration, now: Instant) -> Duration {
        let sent = Instant(now.nanos().saturating_sub(rtt.as_nanos() as u64));
        self.slow * self.ticks_crossed(sent, now)
    }

    /// The retransmission timeout in slow ticks for an estimator whose
    /// timeout before backoff is `base`, after `backoffs` expiries:
    /// `base` rounded up to whole ticks, times `tcp_backoff[backoffs]`,
    /// kept within [`RTO_MIN`, `RTO_MAX`] (`TCPT_RANGESET`).
    pub fn rto_ticks(&self, base: Duration, backoffs: u32) -> u32 {
        let shift = (backoffs as usize).min(BACKOFF.len() - 1);
        let ticks = self.slow_ticks(base).saturating_mul(BACKOFF[shift]);
        ticks.clamp(self.slow_ticks(RTO_MIN), self.slow_ticks(RTO_MAX))
    }
}

#[cfg(test)]
#[path = "bsd_clock_tests.rs"]
mod tests;
