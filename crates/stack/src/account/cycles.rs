//! The cycle counter and the clocks it is checked against: `rdtsc`
//! between two `lfence`s on x86_64 (the first lets earlier instructions
//! finish before the count is read, the second keeps later ones from
//! starting before it: Intel's serialised read), `CLOCK_MONOTONIC` in ns
//! elsewhere; whether the TSC is invariant (counts time at one rate
//! through frequency changes and deep sleep); the counter's rate
//! calibrated against `CLOCK_MONOTONIC`; the calling thread's CPU time.

use std::sync::OnceLock;
use std::time::Duration;

/// How long the rate calibration watches both clocks.
pub const CALIBRATION: Duration = Duration::from_millis(60);

/// The counter now: TSC cycles on x86_64, ns elsewhere.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: lfence and rdtsc have no memory effects; every x86_64
        // CPU has both (SSE2 is in the x86_64 baseline).
        unsafe {
            core::arch::x86_64::_mm_lfence();
            let count = core::arch::x86_64::_rdtsc();
            core::arch::x86_64::_mm_lfence();
            count
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// What says the TSC counts time: CPUID's invariant-TSC bit and the
/// kernel's flags for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TscCheck {
    /// CPUID leaf 0x8000_0007, EDX bit 8 (invariant TSC). A hypervisor may
    /// hide it from a guest whose TSC is in fact stable (KVM without
    /// `invtsc`).
    pub cpuid_invariant: bool,
    /// `/proc/cpuinfo`'s `constant_tsc`: one rate at every P-state.
    pub constant_tsc: bool,
    /// `/proc/cpuinfo`'s `nonstop_tsc`: it runs in deep C-states.
    pub nonstop_tsc: bool,
}

impl TscCheck {
    /// Invariant by CPUID, or by both of the kernel's flags.
    pub fn invariant(&self) -> bool {
        self.cpuid_invariant || (self.constant_tsc && self.nonstop_tsc)
    }
}

/// Whether the counter is an invariant TSC (`None` where the counter is
/// `CLOCK_MONOTONIC`, which needs no check). Without it the counter's
/// rate moves with the CPU's frequency, and counts are not time: the
/// accountant warns ([`crate::account::Report::table`]) rather than
/// refuses, as the calibration against `CLOCK_MONOTONIC` and the CPU
/// check still bound the error.
pub fn tsc_check() -> Option<TscCheck> {
    #[cfg(target_arch = "x86_64")]
    {
        static CHECK: OnceLock<TscCheck> = OnceLock::new();
        Some(*CHECK.get_or_init(|| {
            let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            let flags: Vec<&str> = flags
                .lines()
                .find(|l| l.starts_with("flags"))
                .map(|l| l.split_whitespace().collect())
                .unwrap_or_default();
            TscCheck {
                cpuid_invariant: cpuid_invariant_tsc(),
                constant_tsc: flags.contains(&"constant_tsc"),
                nonstop_tsc: flags.contains(&"nonstop_tsc"),
            }
        }))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        None
    }
}

/// CPUID 0x8000_0007 EDX bit 8, if the CPU has that leaf.
#[cfg(target_arch = "x86_64")]
fn cpuid_invariant_tsc() -> bool {
    // cpuid exists on every x86_64 CPU (safe there); leaf 0x8000_0000
    // gives the highest extended leaf, and 0x8000_0007 is read only below.
    let max = core::arch::x86_64::__cpuid(0x8000_0000).eax;
    max >= 0x8000_0007 && core::arch::x86_64::__cpuid(0x8000_0007).edx & (1 << 8) != 0
}

/// `clock_gettime(id)` in ns.
fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec the call writes; the ids used here
    // exist on every Linux.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `CLOCK_MONOTONIC` in ns (wall time, steal included).
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// `CLOCK_THREAD_CPUTIME_ID` in ns: the calling thread's CPU time, user
/// and system (without the hypervisor's steal).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The calling thread's run-queue delay (`/proc/thread-self/schedstat`,
/// second field): ns it was runnable but waited for a CPU, during which
/// the cycle counter runs and its CPU clock does not. `None` where the
/// kernel has no schedstat.
pub fn thread_run_delay_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().nth(1)?.parse().ok()
}

/// All CPUs' steal time so far (`/proc/stat`'s `cpu` line, 8th value, in
/// ns): time the hypervisor ran something else on this VM's vCPUs, which
/// the cycle counter counts and thread CPU clocks do not. `None` where
/// `/proc/stat` has no steal column.
pub fn steal_ns() -> Option<u64> {
    proc_stat_ns(&[8])
}

/// All CPUs' hard and soft interrupt time so far (`/proc/stat`'s `cpu`
/// line, 6th and 7th values, in ns). The kernel charges a softirq run at
/// the end of a thread's system call (a TUN write handing a packet to
/// Linux's TCP) to interrupts, not to the thread: the cycle counter
/// counts it in the block that made the call, the thread's CPU clock
/// does not.
pub fn irq_ns() -> Option<u64> {
    proc_stat_ns(&[6, 7])
}

/// The sum of `/proc/stat`'s `cpu` line values at `fields`, in ns.
fn proc_stat_ns(fields: &[usize]) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<&str> = line.split_whitespace().collect();
    let mut ticks = 0u64;
    for &f in fields {
        ticks += values.get(f)?.parse::<u64>().ok()?;
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks * 1_000_000_000 / hz as u64)
}

/// Counts per ns, measured once per process against `CLOCK_MONOTONIC`
/// over [`CALIBRATION`] (1.0 where the counter is in ns already).
pub fn counts_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| calibrate(CALIBRATION))
}

/// The counter and `CLOCK_MONOTONIC` read together, as (counter, clock
/// ns): of five tries, the one whose two clock reads lie closest around
/// the counter's, the clock taken at their midpoint. One pair read back
/// to back is put apart by a preemption (or a stolen vCPU) between the
/// reads, and a rate from it is off by that much.
pub fn paired_now() -> (u64, u64) {
    (0..5)
        .map(|_| {
            let m0 = monotonic_ns();
            let c = now();
            let m1 = monotonic_ns();
            (m1 - m0, c, m0 + (m1 - m0) / 2)
        })
        .min()
        .map(|(_, c, m)| (c, m))
        .expect("five tries")
}

/// The counter's rate against `CLOCK_MONOTONIC` over `span`: both read
/// together ([`paired_now`]) at the start and the end, with a busy wait
/// between (a sleep would let the CPU change frequency on machines
/// without an invariant TSC, and the rate would not be that of a busy
/// stack).
pub fn calibrate(span: Duration) -> f64 {
    let (c0, m0) = paired_now();
    let end = m0 + span.as_nanos() as u64;
    while monotonic_ns() < end {}
    let (c1, m1) = paired_now();
    (c1 - c0) as f64 / (m1 - m0) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_predicts_a_second_interval() {
        let _timing = testkit::timing_lock();
        let rate = counts_per_ns();
        assert!(rate > 0.1 && rate < 10.0, "{rate} counts per ns");
        let (c0, m0) = paired_now();
        std::thread::sleep(Duration::from_millis(30));
        let (c1, m1) = paired_now();
        let predicted = (c1 - c0) as f64 / rate;
        let actual = (m1 - m0) as f64;
        assert!(
            (predicted - actual).abs() / actual < 0.01,
            "{predicted} ns from the counter, {actual} ns by CLOCK_MONOTONIC"
        );
    }

    #[test]
    fn the_tsc_check_reads_cpuid_and_the_kernels_flags() {
        let Some(check) = tsc_check() else {
            assert!(std::env::consts::ARCH != "x86_64", "no TSC check on x86_64");
            return;
        };
        // The kernel sets its flags from CPUID (or, in a guest, from what
        // the hypervisor vouches for): each one it shows agrees with ours.
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
        let flags = cpuinfo.lines().find(|l| l.starts_with("flags")).unwrap();
        let has = |f: &str| flags.split_whitespace().any(|x| x == f);
        assert_eq!(check.constant_tsc, has("constant_tsc"));
        assert_eq!(check.nonstop_tsc, has("nonstop_tsc"));
        assert_eq!(
            check.invariant(),
            check.cpuid_invariant || (has("constant_tsc") && has("nonstop_tsc"))
        );
    }

    #[test]
    fn run_delay_and_steal_are_read_here() {
        // Both exist on the kernels tcplab runs on; a missing one is a
        // kernel without schedstat, reported as such by the accountant.
        assert!(
            thread_run_delay_ns().is_some(),
            "no /proc/thread-self/schedstat"
        );
        assert!(steal_ns().is_some(), "no steal column in /proc/stat");
        assert!(irq_ns().is_some(), "no irq columns in /proc/stat");
    }

    #[test]
    fn thread_cpu_grows_with_work_and_not_with_sleep() {
        let _timing = testkit::timing_lock();
        let t0 = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_ns() - t0;
        // Spin until 10 ms of CPU, giving up after 2 s of wall time (a
        // loaded machine gives a niced test a small share of a CPU).
        let t1 = thread_cpu_ns();
        let give_up = monotonic_ns() + 2_000_000_000;
        while thread_cpu_ns() - t1 < 10_000_000 && monotonic_ns() < give_up {}
        let spun = thread_cpu_ns() - t1;
        assert!(slept < 5_000_000, "{slept} ns of CPU asleep");
        assert!(spun >= 10_000_000, "{spun} ns of CPU in 2 s of spinning");
    }
}
