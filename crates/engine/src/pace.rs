//! Application-level pacing of a sender (`--send-rate`), emulating a slower
//! sender λ: writes follow an absolute schedule, so sleeps that overshoot are
//! caught up by the next writes and the mean rate stays exact.

use crate::cancel::StopFlag;
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

    /// Accounts for `bytes` just sent and sleeps until the schedule allows
    /// more, or until `stop` is raised (the duration ended or the trial was
    /// cancelled): the sleep looks at the flag every [`crate::cancel::SLICE`].
    pub fn sent(&mut self, bytes: usize, stop: &StopFlag) {
        self.sent_bytes += bytes as u64;
        let due = Duration::from_secs_f64(self.sent_bytes as f64 * 8.0 / self.bits_per_s);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            stop.sleep(due - elapsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_the_rate() {
        // The pace is timed (a late wake-up on a busy host runs over): one
        // timed test at a time, on a quiet host.
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "100 KB paced at 1 MB/s",
            testkit::QuietLimits::default(),
            &[],
            || {
                let mut p = Pacer::new(8_000_000); // 1 MB/s
                let t = Instant::now();
                let stop = StopFlag::new();
                for _ in 0..100 {
                    p.sent(1000, &stop);
                }
                t.elapsed().as_secs_f64()
            },
        );
        eprintln!("100 KB paced at 1 MB/s: {}", q.describe());
        let s = q.value;
        assert!((0.095..0.2).contains(&s), "took {s}");
    }

    #[test]
    fn a_cancelled_trial_ends_a_days_long_sleep() {
        // The cancel is timed (under 1 s): one timed test at a time.
        let _timing = testkit::timing_lock();
        let cancel = crate::cancel::Canceller::new();
        let stop = StopFlag::tied_to(&cancel);
        let mut p = Pacer::new(1); // one bit per second: 128K takes 12 days
        let c = cancel.clone();
        let t = Instant::now();
        let h = std::thread::spawn(move || p.sent(128 << 10, &stop));
        std::thread::sleep(Duration::from_millis(50));
        c.cancel();
        h.join().unwrap();
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
}
