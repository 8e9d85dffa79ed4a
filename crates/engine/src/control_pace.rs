//! The server's own work for a key's control channel, paced per key (a
//! keyless server trusts its clients and is not paced): the control frames its clients send (a `check`, a
//! `setup`, each one authenticated and parsed) and the handshakes it
//! completes (each a thread). Neither is a trial's, so neither falls in a
//! trial's CPU budget or a key's `max_cpu`: an attacker's review found 16
//! clients of a key with `max_cpu` 0.5 sending `check` back to back took
//! a whole CPU of the server (70,000 a second), and another key's stream
//! fell 45%; handshakes completed and dropped at 8,500 a second took 1.1.
//!
//! Frames beyond `--key-frame-rate` ([`FRAMES_PER_SECOND`] by default,
//! after a burst of [`FRAMES_BURST`] or two seconds' worth) wait in the
//! client's own thread, which sleeps: the key's clients slow down, the
//! server's CPU does not go up. Handshakes beyond `--key-handshake-rate`
//! ([`GREETINGS_PER_SECOND`], after [`GREETINGS_BURST`] or two seconds'
//! worth) are refused before a thread is started, with how long to wait.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Control frames a key's clients together may send a second, past the
/// burst: a sweep of the shortest trials sends a few per trial.
pub const FRAMES_PER_SECOND: f64 = 200.0;
/// Control frames a key's clients may send at once.
pub const FRAMES_BURST: f64 = 400.0;
/// Handshakes a key's holders together may complete a second, past the
/// burst.
pub const GREETINGS_PER_SECOND: f64 = 20.0;
/// Handshakes a key's holders may complete at once (a fleet connecting).
pub const GREETINGS_BURST: f64 = 64.0;
/// Owners tracked at once; the least recently seen are forgotten (a
/// forgotten owner starts again with a full burst).
const TRACKED: usize = 4096;

/// A token bucket: tokens earned at a rate, up to a burst.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Takes one token at `now` (it may go below zero: what is owed);
    /// how long the taker must wait until it was earned.
    fn take(&mut self, now: Instant, burst: f64, per_second: f64) -> Duration {
        if !per_second.is_finite() {
            return Duration::ZERO;
        }
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * per_second).min(burst) - 1.0;
        self.at = now;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / per_second)
        }
    }

    /// Gives back a token taken in vain (a refused handshake).
    fn give_back(&mut self) {
        self.tokens += 1.0;
    }
}

/// Each owner's frame and handshake buckets.
#[derive(Debug)]
pub struct ControlPace<O> {
    owners: Mutex<HashMap<O, (Bucket, Bucket)>>,
}

impl<O> Default for ControlPace<O> {
    fn default() -> Self {
        ControlPace {
            owners: Mutex::default(),
        }
    }
}

impl<O: std::hash::Hash + Eq + Clone> ControlPace<O> {
    fn with<T>(&self, owner: &O, now: Instant, f: impl FnOnce(&mut (Bucket, Bucket)) -> T) -> T {
        let mut m = self.owners.lock().unwrap_or_else(|e| e.into_inner());
        if !m.contains_key(owner) && m.len() >= TRACKED {
            if let Some(k) = m
                .iter()
                .min_by_key(|(_, b)| b.0.at.max(b.1.at))
                .map(|(k, _)| k.clone())
            {
                m.remove(&k);
            }
        }
        let full = |burst| Bucket {
            tokens: burst,
            at: now,
        };
        let b = m
            .entry(owner.clone())
            .or_insert_with(|| (full(FRAMES_BURST), full(GREETINGS_BURST)));
        f(b)
    }

    /// Counts a control frame of `owner`'s, paced at `per_second`; how
    /// long its client's thread waits before the server works on it.
    pub fn frame(&self, owner: &O, now: Instant, per_second: f64) -> Duration {
        let burst = FRAMES_BURST.max(2.0 * per_second);
        self.with(owner, now, |b| b.0.take(now, burst, per_second))
    }

    /// Counts a completed handshake of `owner`'s, paced at `per_second`:
    /// `None` if it may be served, or how long to wait when it is over the
    /// rate (and is then not counted).
    pub fn greeting(&self, owner: &O, now: Instant, per_second: f64) -> Option<Duration> {
        let burst = GREETINGS_BURST.max(2.0 * per_second);
        self.with(owner, now, |b| {
            let wait = b.1.take(now, burst, per_second);
            if wait.is_zero() {
                None
            } else {
                b.1.give_back();
                Some(wait)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_past_the_burst_wait_at_the_rate_and_owners_are_apart() {
        let p = ControlPace::<&str>::default();
        let t = Instant::now();
        for _ in 0..FRAMES_BURST as usize {
            assert_eq!(p.frame(&"a", t, FRAMES_PER_SECOND), Duration::ZERO);
        }
        // The next one waits one token's time, the one after two.
        let one = Duration::from_secs_f64(1.0 / FRAMES_PER_SECOND);
        assert_eq!(p.frame(&"a", t, FRAMES_PER_SECOND), one);
        assert_eq!(p.frame(&"a", t, FRAMES_PER_SECOND), 2 * one);
        // Another owner has its own burst.
        assert_eq!(p.frame(&"b", t, FRAMES_PER_SECOND), Duration::ZERO);
        // A second later, what was earned pays the debt and more.
        let later = t + Duration::from_secs(1);
        assert_eq!(p.frame(&"a", later, FRAMES_PER_SECOND), Duration::ZERO);
        // Unpaced at an infinite rate (a server bench starts for itself).
        for _ in 0..10_000 {
            assert_eq!(p.frame(&"c", t, f64::INFINITY), Duration::ZERO);
        }
    }

    #[test]
    fn handshakes_past_the_burst_are_refused_with_the_wait_and_not_counted() {
        let p = ControlPace::<&str>::default();
        let t = Instant::now();
        for _ in 0..GREETINGS_BURST as usize {
            assert_eq!(p.greeting(&"a", t, GREETINGS_PER_SECOND), None);
        }
        let wait = p.greeting(&"a", t, GREETINGS_PER_SECOND).unwrap();
        assert_eq!(wait, Duration::from_secs_f64(1.0 / GREETINGS_PER_SECOND));
        // Refusals are not counted: the wait does not grow.
        assert_eq!(p.greeting(&"a", t, GREETINGS_PER_SECOND), Some(wait));
        assert_eq!(p.greeting(&"a", t + wait, GREETINGS_PER_SECOND), None);
        assert_eq!(p.greeting(&"b", t, GREETINGS_PER_SECOND), None);
    }
}
