//! Rate-based flow control (Abrams & Chen 1991 §3.5, issue 19's
//! `--flow-control rate:RATE`): the sender paces its data segments at a
//! set rate, and the windows (the peer's, and cwnd) only bound what may be
//! outstanding. [`Pacer`] keeps a virtual departure time per connection:
//! a segment may leave once the clock has reached it, and each segment
//! sent moves it on by its payload's time at the rate. When the event
//! loop wakes late, the virtual time may trail the clock by at most the
//! burst allowance, so segments catch up in a short burst instead of the
//! rate being lost; after an idle spell no more than that burst leaves at
//! once. RATE counts payload octets (what a trial's throughput counts),
//! not headers. Every data segment is charged, retransmissions included,
//! but only new data (and a timeout's go-back-N) waits for the pacer: a
//! fast retransmit, a loss probe and RFC 6675's recovery loop leave at
//! once and push later data back instead.
//!
//! [`SendSpan`] measures what was achieved: payload octets sent and the
//! times of the first and last data segment, whether paced or not.
//!
//! Both take the time as an argument, read from the stack's clock by the
//! caller, so tests drive them on a `ManualClock`.

use crate::time::Instant;
use std::time::Duration;

/// How far the virtual departure time may trail the clock, so how much
/// leaves at once after a late wake-up: the burst allowance of
/// [`FlowControl::rate`]. On a loaded 2-CPU VM the stack's thread woke up
/// to 7 ms late (75 of 4,316 wake-ups over 2 ms in a 1 s trial at
/// 50 Mbit/s); with a 2 ms allowance those cost the trial 8–16% of its
/// rate, with 10 ms none.
pub const DEFAULT_PACING_BURST: Duration = Duration::from_millis(10);

/// How the sender decides when data may leave: the `--flow-control` switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowControl {
    /// Window flow control: whatever min(cwnd, the peer's window) allows
    /// leaves at once.
    #[default]
    Window,
    /// Rate-based: data segments leave at `bits_per_s` of payload; after
    /// a late wake-up at most `burst` of the rate's worth catches up.
    Rate {
        /// The pacing rate, payload bits per second (at least 1).
        bits_per_s: u64,
        /// The burst allowance.
        burst: Duration,
    },
}

impl FlowControl {
    /// Rate-based flow control at `bits_per_s` with the default burst.
    pub fn rate(bits_per_s: u64) -> FlowControl {
        FlowControl::Rate {
            bits_per_s,
            burst: DEFAULT_PACING_BURST,
        }
    }
}

/// A connection's pacing state: when its next data segment may leave.
#[derive(Debug, Clone, Default)]
pub struct Pacer {
    /// (bits per second, burst in ns); None for window flow control.
    rate: Option<(u64, u64)>,
    /// The virtual departure time of the next segment (None before the first).
    next: Option<Instant>,
    /// What the last division left over, in bit-nanoseconds per second
    /// (so rounding never accumulates).
    carry: u128,
    /// Schedule given up, ns: how far the virtual time had fallen behind
    /// the clock beyond the burst allowance, summed.
    dropped_ns: u64,
}

impl Pacer {
    /// A pacer for `flow` (one that never holds data back for `Window`).
    pub fn new(flow: FlowControl) -> Pacer {
        let rate = match flow {
            FlowControl::Window => None,
            FlowControl::Rate { bits_per_s, burst } => Some((
                bits_per_s.max(1),
                burst.as_nanos().min(u128::from(u64::MAX)) as u64,
            )),
        };
        Pacer {
            rate,
            next: None,
            carry: 0,
            dropped_ns: 0,
        }
    }

    /// Whether it paces at all.
    pub fn is_pacing(&self) -> bool {
        self.rate.is_some()
    }

    /// When the next data segment may leave, if not at `now`: the event
    /// loop should wake then.
    pub fn hold_until(&self, now: Instant) -> Option<Instant> {
        self.rate?;
        self.next.filter(|&at| at > now)
    }

    /// A data segment of `len` payload octets left at `now`: the next one
    /// may leave `len · 8 / rate` seconds after this one's virtual time,
    /// which may trail `now` by no more than the burst allowance.
    pub fn on_sent(&mut self, len: usize, now: Instant) {
        let Some((bps, burst_ns)) = self.rate else {
            return;
        };
        let floor = Instant(now.nanos().saturating_sub(burst_ns));
        if let Some(next) = self.next.filter(|&at| at < floor) {
            self.dropped_ns += floor.nanos() - next.nanos();
        }
        let base = self.next.map_or(now, |at| at.max(floor));
        let scaled = len as u128 * 8 * 1_000_000_000 + self.carry;
        let ns = scaled / u128::from(bps);
        self.carry = scaled % u128::from(bps);
        self.next = Some(Instant(
            base.nanos()
                .saturating_add(ns.min(u128::from(u64::MAX)) as u64),
        ));
    }

    /// Nanoseconds of its schedule the pacer gave up: time with nothing
    /// sent for longer than the burst allowance, beyond it. A bulk sender
    /// that always has data gives up time only when its thread was held
    /// off, or is too slow for the rate: its trial fell short of the rate
    /// by this much.
    pub fn dropped_ns(&self) -> u64 {
        self.dropped_ns
    }

    /// The most payload one segment may carry when pacing (a super-segment
    /// for a TSO device is cut down to this): the burst allowance's worth
    /// in whole `mss`-sized segments, at least one; unbounded otherwise.
    pub fn segment_cap(&self, mss: usize) -> usize {
        let Some((bps, burst_ns)) = self.rate else {
            return usize::MAX;
        };
        let mss = mss.max(1);
        let bytes = u128::from(bps) * u128::from(burst_ns) / 8 / 1_000_000_000;
        let whole = (bytes.min(usize::MAX as u128) as usize) / mss * mss;
        whole.max(mss)
    }
}

/// The payload a connection sent and when: its achieved sending rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SendSpan {
    /// Payload octets sent in data segments (retransmissions included).
    pub bytes: u64,
    /// When the first data segment left.
    pub first: Option<Instant>,
    /// When the last data segment left.
    pub last: Option<Instant>,
    /// The last data segment's payload octets.
    pub last_len: u64,
}

impl SendSpan {
    /// Records a data segment of `len` payload octets sent at `now`.
    pub fn on_sent(&mut self, len: usize, now: Instant) {
        if len == 0 {
            return;
        }
        self.bytes += len as u64;
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.last_len = len as u64;
    }

    /// Joins two spans (connections of one end, on one clock): the bytes
    /// add, the span runs from the earlier first to the later last.
    pub fn merge(self, other: SendSpan) -> SendSpan {
        let (later, earlier) = if other.last > self.last {
            (other, self)
        } else {
            (self, other)
        };
        let first = match (self.first, other.first) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        SendSpan {
            bytes: self.bytes + other.bytes,
            first,
            last: later.last.or(earlier.last),
            last_len: if later.last.is_some() {
                later.last_len
            } else {
                earlier.last_len
            },
        }
    }

    /// The achieved sending rate in payload bits per second: every octet
    /// but the last segment's over the time from the first segment's
    /// departure to the last's (the last segment's octets leave at the
    /// end of the span, not within it). None with fewer than two segments
    /// apart in time.
    pub fn rate_bps(&self) -> Option<f64> {
        let (first, last) = (self.first?, self.last?);
        let span = last.since(first).as_secs_f64();
        (span > 0.0).then(|| (self.bytes - self.last_len) as f64 * 8.0 / span)
    }
}

#[cfg(test)]
#[path = "pacing_tests.rs"]
mod tests;
