//! CPU time of the calling thread, and CPU burning for the slow-receiver
//! emulation (`--recv-work`).

use std::time::Duration;

/// User and system CPU time of one thread.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTime {
    /// User time in seconds.
    pub user_s: f64,
    /// System time in seconds.
    pub sys_s: f64,
}

impl CpuTime {
    /// The calling thread's CPU time so far (getrusage RUSAGE_THREAD).
    pub fn thread_now() -> CpuTime {
        // SAFETY: getrusage writes a plain struct; RUSAGE_THREAD is valid on Linux.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        if rc != 0 {
            return CpuTime::default();
        }
        CpuTime {
            user_s: tv_secs(ru.ru_utime),
            sys_s: tv_secs(ru.ru_stime),
        }
    }

    /// Elapsed CPU time since `earlier`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user_s: (self.user_s - earlier.user_s).max(0.0),
            sys_s: (self.sys_s - earlier.sys_s).max(0.0),
        }
    }

    /// Sum of two CPU times.
    pub fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user_s: self.user_s + other.user_s,
            sys_s: self.sys_s + other.sys_s,
        }
    }

    /// User plus system seconds.
    pub fn total_s(self) -> f64 {
        self.user_s + self.sys_s
    }
}

fn tv_secs(tv: libc::timeval) -> f64 {
    tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6
}

/// Nanoseconds of CPU the calling thread has used (CLOCK_THREAD_CPUTIME_ID).
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Burns `cpu` of this thread's CPU time (not wall time), so a receiver slowed
/// by `--recv-work` does the same work whether or not it shares its core.
/// Stops early once `abandon()` is true (it is asked every few hundred ns).
pub fn burn(cpu: Duration, abandon: impl Fn() -> bool) {
    let target = thread_cpu_ns() + cpu.as_nanos() as u64;
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while thread_cpu_ns() < target && !abandon() {
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
    }
}

/// Accumulates received bytes and burns `ns_per_kb` per full KB received.
#[derive(Debug)]
pub struct RecvWork {
    ns_per_kb: u64,
    pending_bytes: u64,
}

impl RecvWork {
    /// A receiver that burns `ns_per_kb` nanoseconds of CPU per 1024 bytes.
    pub fn new(ns_per_kb: u64) -> RecvWork {
        RecvWork {
            ns_per_kb,
            pending_bytes: 0,
        }
    }

    /// Accounts for `bytes` read and burns the CPU they cost, or less if
    /// `abandon()` turns true (the trial was cancelled).
    pub fn consumed(&mut self, bytes: usize, abandon: impl Fn() -> bool) {
        self.pending_bytes += bytes as u64;
        let kb = self.pending_bytes / 1024;
        if kb > 0 {
            self.pending_bytes %= 1024;
            burn(
                Duration::from_nanos(kb.saturating_mul(self.ns_per_kb)),
                abandon,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burn_uses_cpu_of_this_thread() {
        // Burns CPU or bounds wall time: one such test at a time.
        let _timing = testkit::timing_lock();
        let before = CpuTime::thread_now();
        burn(Duration::from_millis(50), || false);
        let used = CpuTime::thread_now().since(before).total_s();
        assert!(used >= 0.045, "used {used}");
        assert!(used < 0.5, "used {used}");
    }

    #[test]
    fn an_abandoned_burn_stops() {
        let before = CpuTime::thread_now();
        let t0 = std::time::Instant::now();
        burn(Duration::from_secs(3600), || {
            t0.elapsed() > Duration::from_millis(20)
        });
        let used = CpuTime::thread_now().since(before).total_s();
        assert!(used < 1.0, "used {used}");
    }
}
