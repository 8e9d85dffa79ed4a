//! `--recv-work` on the stack's end: the slower receiver μ of a kernel
//! end, without a sleep or a burn. A kernel receiver burns `ns_per_kb` of
//! CPU per KB it reads, so it reads at most 1024/`ns_per_kb` bytes per ns;
//! the stack's end is one event loop, and a burn there would stall its
//! protocol work too. So the application here is busy with what it read
//! until that much time has passed on the stack's clock, and reads
//! nothing meanwhile, while the loop goes on serving the connection (it
//! wakes for the next read as for a timer). The rate is the kernel end's;
//! the end's CPU does not include the work, and the work is spread over
//! every read rather than charged per whole KB.

use stack::time::Instant;
use std::time::Duration;

/// How much lateness of the loop's wake-up a backlogged reader makes up:
/// about the device wait's granularity (poll(2) takes milliseconds).
const CATCH_UP: Duration = Duration::from_millis(1);

/// The application's reading pace.
#[derive(Debug, Clone)]
pub(crate) struct ReadPacing {
    ns_per_kb: u64,
    /// Work owed below a nanosecond, in 1/1024 ns.
    carry: u64,
    /// When the application is done with what it read.
    ready_at: Instant,
    /// Data was still waiting after the last read, so the next work
    /// follows the last without a gap.
    backlogged: bool,
}

impl ReadPacing {
    /// A reader that works `ns_per_kb` per 1024 bytes; None for no work.
    pub fn new(ns_per_kb: Option<u64>) -> Option<ReadPacing> {
        ns_per_kb.filter(|&ns| ns > 0).map(|ns_per_kb| ReadPacing {
            ns_per_kb,
            carry: 0,
            ready_at: Instant::ZERO,
            backlogged: false,
        })
    }

    /// Whether the application may read at `now`.
    pub fn ready(&self, now: Instant) -> bool {
        now >= self.ready_at
    }

    /// When the application may read next.
    pub fn ready_at(&self) -> Instant {
        self.ready_at
    }

    /// The application read `bytes` at `now`, and `more` bytes still wait:
    /// it is busy with them for their work time. A reader that had data
    /// waiting starts its work where the last ended (up to [`CATCH_UP`]
    /// before `now`), so a late wake-up does not slow it below its rate.
    pub fn consumed(&mut self, bytes: usize, now: Instant, more: bool) {
        let start = if self.backlogged {
            let earliest = Instant(now.nanos().saturating_sub(CATCH_UP.as_nanos() as u64));
            self.ready_at.max(earliest).min(now)
        } else {
            now
        };
        let owed = (bytes as u64)
            .saturating_mul(self.ns_per_kb)
            .saturating_add(self.carry);
        self.carry = owed % 1024;
        self.ready_at = start.after(Duration::from_nanos(owed / 1024));
        self.backlogged = more;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn no_work_is_no_pacing() {
        assert!(ReadPacing::new(None).is_none());
        assert!(ReadPacing::new(Some(0)).is_none());
    }

    #[test]
    fn a_read_keeps_the_reader_busy_for_its_share_of_a_kb() {
        let mut p = ReadPacing::new(Some(4 * MS)).unwrap();
        assert!(p.ready(Instant(0)));
        p.consumed(256, Instant(10 * MS), false);
        // 256 bytes of 4 ms per KB: 1 ms.
        assert_eq!(p.ready_at(), Instant(11 * MS));
        assert!(!p.ready(Instant(11 * MS - 1)));
        assert!(p.ready(Instant(11 * MS)));
    }

    #[test]
    fn fractions_of_a_nanosecond_carry_to_the_next_read() {
        let mut p = ReadPacing::new(Some(1000)).unwrap();
        // 1 byte at 1000 ns per KB: 0.98 ns each; 1024 of them, 1000 ns.
        let mut now = Instant(0);
        for _ in 0..1024 {
            p.consumed(1, now, true);
            now = p.ready_at();
        }
        assert_eq!(now, Instant(1000));
    }

    #[test]
    fn a_backlogged_reader_makes_up_a_late_wake_up_and_an_idle_one_does_not() {
        let mut p = ReadPacing::new(Some(4 * MS)).unwrap();
        p.consumed(256, Instant(0), true);
        // Woken 0.5 ms late with data waiting: the work runs from 1 ms.
        p.consumed(256, Instant(1_500_000), true);
        assert_eq!(p.ready_at(), Instant(2 * MS));
        // Woken 5 ms late: at most CATCH_UP is made up.
        p.consumed(256, Instant(7 * MS), false);
        assert_eq!(p.ready_at(), Instant(7 * MS));
        // Nothing was waiting: the next work starts when it is read.
        p.consumed(256, Instant(20 * MS), false);
        assert_eq!(p.ready_at(), Instant(21 * MS));
    }
}
