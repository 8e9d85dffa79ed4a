//! Time as the stack sees it: nanoseconds from an arbitrary origin, read
//! from a [`Clock`] the caller injects. Tests drive a [`ManualClock`], so a
//! retransmission timeout is a call to `advance`, never a sleep; devices
//! use [`MonotonicClock`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A point in time, in nanoseconds since the clock's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(pub u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);

    /// Nanoseconds since the origin.
    pub fn nanos(self) -> u64 {
        self.0
    }

    /// The time `d` later (saturating).
    pub fn after(self, d: Duration) -> Instant {
        Instant(
            self.0
                .saturating_add(d.as_nanos().min(u64::MAX as u128) as u64),
        )
    }

    /// How long after `earlier` this is (zero if it is not later).
    pub fn since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

/// Where the stack reads the time.
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Instant;
}

/// A clock that moves only when told to: for deterministic tests.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock at `start`.
    pub fn new(start: Instant) -> ManualClock {
        ManualClock(AtomicU64::new(start.0))
    }

    /// Moves the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        self.0.fetch_add(d.as_nanos() as u64, Ordering::SeqCst);
    }

    /// Sets the clock to `t` (never backwards).
    pub fn set(&self, t: Instant) {
        self.0.fetch_max(t.0, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant(self.0.load(Ordering::SeqCst))
    }
}

/// The host's monotonic clock, from the moment this value was made.
#[derive(Debug)]
pub struct MonotonicClock(std::time::Instant);

impl Default for MonotonicClock {
    fn default() -> MonotonicClock {
        MonotonicClock(std::time::Instant::now())
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Instant {
        Instant(self.0.elapsed().as_nanos() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_never_back() {
        let c = ManualClock::new(Instant(5));
        assert_eq!(c.now(), Instant(5));
        c.advance(Duration::from_micros(2));
        assert_eq!(c.now(), Instant(2005));
        c.set(Instant(1));
        assert_eq!(c.now(), Instant(2005));
        assert_eq!(c.now().since(Instant(5)), Duration::from_micros(2));
        assert_eq!(Instant(5).since(c.now()), Duration::ZERO);
    }

    #[test]
    fn the_monotonic_clock_moves_forward() {
        let c = MonotonicClock::default();
        let a = c.now();
        std::thread::sleep(Duration::from_millis(2));
        assert!(c.now().since(a) >= Duration::from_millis(2));
    }
}
