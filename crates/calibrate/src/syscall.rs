//! Null system call latency (lmbench's lat_syscall null; Markatos §3.3):
//! the cost of entering and leaving the kernel.

use std::time::Instant;

/// Seconds per `getppid` system call, issued through syscall(2) so no
/// library cache answers it, over `calls` calls.
pub fn null_syscall(calls: u64) -> f64 {
    let t0 = Instant::now();
    for _ in 0..calls {
        // SAFETY: getppid takes no arguments and cannot fail.
        std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
    t0.elapsed().as_secs_f64() / calls as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_null_system_call_takes_nanoseconds_to_microseconds() {
        // Timed: one timed test at a time, on a quiet host.
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "100,000 null system calls",
            testkit::QuietLimits::default(),
            &[],
            || null_syscall(100_000),
        );
        eprintln!("100,000 null system calls: {}", q.describe());
        let t = q.value;
        // Tens of ns on bare metal, a few hundred under a hypervisor or
        // with mitigations; never below 10 ns nor above 100 µs.
        assert!((1e-8..1e-4).contains(&t), "{t} s per call");
    }
}
