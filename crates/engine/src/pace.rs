//! Application-level pacing of a sender (`--send-rate`), emulating a slower
//! sender λ: writes follow an absolute schedule, so sleeps that overshoot are
//! caught up by the next writes and the mean rate stays exact.

use std::time::{Duration, Instant};

/// Paces a stream of writes to a rate in bits per second.
#[derive(Debug)]
pub struct Pacer {
    start: Instant,
    bits_per_s: f64,
    sent_bytes: u64,
}

impl Pacer {
    /// A pacer starting now at `bits_per_s`.
    pub fn new(bits_per_s: u64) -> Pacer {
        Pacer {
            start: Instant::now(),
            bits_per_s: bits_per_s as f64,
            sent_bytes: 0,
        }
    }

    /// Accounts for `bytes` just sent and sleeps until the schedule allows more.
    pub fn sent(&mut self, bytes: usize) {
        self.sent_bytes += bytes as u64;
        let due = Duration::from_secs_f64(self.sent_bytes as f64 * 8.0 / self.bits_per_s);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_rate() {
        let mut p = Pacer::new(8_000_000); // 1 MB/s
        let t = Instant::now();
        for _ in 0..100 {
            p.sent(1000);
        }
        let s = t.elapsed().as_secs_f64();
        assert!((0.095..0.2).contains(&s), "took {s}");
    }
}
