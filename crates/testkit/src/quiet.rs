//! A timed measurement counts only when it ran quietly: [`until_quiet`]
//! repeats it until one run's [`Contention`] is within the limits, and
//! fails the test, with every run's contention, when none is. So a check
//! of a rate or a delay holds on a busy 2-CPU host by waiting for a quiet
//! moment, never by giving up and passing.

use crate::contention::{Contention, Window};
use std::time::{Duration, Instant};

/// Ticks of others' time a window may show whatever its length: the
/// counters' own resolution (a tick read early at one end and late at the
/// other), and the kernel's housekeeping threads.
pub const OTHERS_TICKS_ALLOWED: u64 = 2;

/// How quiet a measurement must be, and how hard to try.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuietLimits {
    /// The most of the CPUs other processes may take meanwhile (or
    /// [`OTHERS_TICKS_ALLOWED`] ticks, in a window too short to resolve
    /// the share).
    pub others: f64,
    /// The most of the CPUs the hypervisor may steal meanwhile.
    pub steal: f64,
    /// Steal ticks a window may show whatever its length: 2 (the
    /// resolution) by default; 0 for a check that compares a wall clock
    /// with a CPU clock, which steal sets apart directly.
    pub steal_ticks: u64,
    /// Runs before the test may fail.
    pub attempts: usize,
    /// How long, from the first run, the test goes on trying once its
    /// runs are spent: contention on a VM comes in spells (hypervisor
    /// steal of 20–30% for a minute or two has been seen here), which a
    /// test waits out rather than fails on.
    pub patience: Duration,
    /// How long, before each run, to wait for a quiet moment (idle
    /// itself: it sleeps).
    pub settle: Duration,
}

impl Default for QuietLimits {
    /// Others at most 5% and steal at most 2% of the CPUs (or 2 ticks of
    /// each); at least six runs, and runs for four minutes, each after up
    /// to 10 s of waiting for a quiet moment.
    fn default() -> QuietLimits {
        QuietLimits {
            others: 0.05,
            steal: 0.02,
            steal_ticks: 2,
            attempts: 6,
            patience: Duration::from_secs(240),
            settle: Duration::from_secs(10),
        }
    }
}

impl QuietLimits {
    /// For a check that compares the cycle counter (or any wall clock)
    /// with a thread's CPU clock: steal at most 0.5% of the CPUs, and in
    /// a window too short to resolve that, no steal tick at all.
    pub fn no_steal() -> QuietLimits {
        QuietLimits {
            steal: 0.005,
            steal_ticks: 0,
            ..QuietLimits::default()
        }
    }

    /// Whether a window's contention is within these limits.
    pub fn admit(&self, c: &Contention) -> bool {
        (c.others <= self.others || c.others_ticks <= OTHERS_TICKS_ALLOWED)
            && (c.steal <= self.steal || c.steal_ticks <= self.steal_ticks)
    }
}

impl std::fmt::Display for QuietLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "others at most {:.1}% and steal at most {:.1}% of the CPUs",
            self.others * 100.0,
            self.steal * 100.0
        )
    }
}

/// A quiet run's value, with its contention and the runs before it.
#[derive(Debug, Clone)]
pub struct Quiet<T> {
    /// What the quiet run measured.
    pub value: T,
    /// Its contention.
    pub contention: Contention,
    /// The contention of each run that was not quiet, in order.
    pub noisy: Vec<Contention>,
}

impl<T> Quiet<T> {
    /// One line: the quiet run's contention, and how many came before it.
    pub fn describe(&self) -> String {
        format!(
            "{} (after {} contended tries)",
            self.contention,
            self.noisy.len()
        )
    }
}

/// How long the quiet moment before a measurement lasts: the window a
/// measurement is judged by starts with it, so a measurement of a few
/// milliseconds (shorter than the clock tick contention is counted in)
/// is judged over at least this long, not waved through.
pub const QUIET_LEAD: Duration = Duration::from_millis(250);

/// Sleeps, in [`QUIET_LEAD`]s, until one is within `limits` (at least
/// one is checked; more until `limits.settle` has passed): the window
/// opened at its start, for the measurement to run on in; or the last
/// one's contention, when none was quiet.
fn wait_for_quiet(limits: &QuietLimits, extra: &[u32]) -> Result<Window, Contention> {
    let t0 = Instant::now();
    loop {
        let w = Window::open(extra);
        std::thread::sleep(QUIET_LEAD);
        let c = w.contention();
        if limits.admit(&c) {
            return Ok(w);
        }
        if t0.elapsed() >= limits.settle {
            return Err(c);
        }
    }
}

/// Runs `measure` until a run is quiet and returns that run. A try waits
/// for a quiet moment ([`QUIET_LEAD`], up to `limits.settle`), then runs
/// the measurement; it counts when the window from the start of that
/// moment to the end of the measurement is within `limits` (`extra`
/// names processes whose CPU is the measurement's although they are not
/// this test's descendants, such as a server it did not spawn). A try
/// that found no quiet moment does not run the measurement. Panics,
/// naming `what` and every try's contention, when `limits.attempts`
/// tries were all contended and `limits.patience` has passed since the
/// first.
#[track_caller]
pub fn until_quiet<T>(
    what: &str,
    limits: QuietLimits,
    extra: &[u32],
    mut measure: impl FnMut() -> T,
) -> Quiet<T> {
    let mut noisy = Vec::new();
    let started = Instant::now();
    while noisy.len() < limits.attempts.max(1) || started.elapsed() < limits.patience {
        let w = match wait_for_quiet(&limits, extra) {
            Ok(w) => w,
            Err(c) => {
                noisy.push(c);
                continue;
            }
        };
        let value = measure();
        let contention = w.contention();
        if limits.admit(&contention) {
            return Quiet {
                value,
                contention,
                noisy,
            };
        }
        noisy.push(contention);
    }
    let runs: Vec<String> = noisy
        .iter()
        .enumerate()
        .map(|(i, c)| format!("try {}: {c}", i + 1))
        .collect();
    panic!(
        "{what}: the host was never quiet enough to measure ({limits}) in {} tries over {:.0} s; {}",
        noisy.len(),
        started.elapsed().as_secs_f64(),
        runs.join("; ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(others: u64, steal: u64, ms: u64) -> Contention {
        let capacity = 100.0 * crate::contention::cpu_count() * ms as f64 / 1e3;
        Contention {
            others: others as f64 / capacity,
            steal: steal as f64 / capacity,
            others_ticks: others,
            steal_ticks: steal,
            span: Duration::from_millis(ms),
        }
    }

    /// Shares decide over a long window; in a short one, two ticks are the
    /// counters' resolution, three are contention; and a clock check
    /// admits no steal tick at all.
    #[test]
    fn limits_admit_by_share_or_by_a_short_windows_ticks() {
        let l = QuietLimits::default();
        assert!(l.admit(&window(0, 0, 100)));
        assert!(l.admit(&window(2, 2, 100)), "2 ticks in 0.1 s");
        assert!(!l.admit(&window(3, 0, 100)), "3 ticks of others in 0.1 s");
        assert!(!l.admit(&window(0, 3, 100)), "3 ticks of steal in 0.1 s");
        let long = 10_000;
        let cap = 100.0 * crate::contention::cpu_count() * 10.0;
        assert!(l.admit(&window((0.05 * cap) as u64, (0.02 * cap) as u64, long)));
        assert!(!l.admit(&window((0.06 * cap) as u64, 0, long)));
        assert!(!l.admit(&window(0, (0.03 * cap) as u64, long)));
        let exact = QuietLimits::no_steal();
        assert!(exact.admit(&window(2, 0, 100)));
        assert!(!exact.admit(&window(0, 1, 100)), "one steal tick");
    }

    /// A spinning thread of this process is ours, not contention: the
    /// first run counts.
    #[test]
    fn our_own_work_is_quiet() {
        let _lock = crate::timing_lock();
        // Two tries and no patience: our own spin counted as others'
        // fails here at once, not after minutes.
        let limits = QuietLimits {
            attempts: 2,
            patience: Duration::ZERO,
            ..QuietLimits::default()
        };
        let q = until_quiet("a spin", limits, &[], || {
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_millis(300) {
                std::hint::spin_loop();
            }
            7
        });
        assert_eq!(q.value, 7);
        assert!(q.noisy.len() <= 1, "{:?}", q.noisy);
        // Judged from the quiet moment before it to its end.
        assert!(q.contention.span >= Duration::from_millis(300) + QUIET_LEAD);
    }

    /// A measurement beside a process that is not ours burning a CPU is
    /// never quiet, and the failure names the contention of each run.
    #[test]
    fn a_busy_stranger_fails_the_measurement_with_its_contention() {
        let _lock = crate::timing_lock();
        // A stranger: orphaned by its shell, so not our descendant.
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
            ])
            .output()
            .unwrap();
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        let limits = QuietLimits {
            attempts: 2,
            patience: Duration::ZERO,
            settle: Duration::ZERO,
            ..QuietLimits::default()
        };
        let failed = std::panic::catch_unwind(|| {
            // A measurement of a millisecond: judged over the quiet
            // moment before it too, so not waved through.
            until_quiet("beside a stranger", limits, &[], || {
                std::thread::sleep(Duration::from_millis(1))
            })
        });
        // SAFETY: kill has no memory preconditions; the pid is the loop
        // this test started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let message = *failed
            .expect_err("a run beside a busy CPU was called quiet")
            .downcast::<String>()
            .unwrap();
        assert!(
            message.starts_with("beside a stranger: the host was never quiet enough"),
            "{message}"
        );
        assert!(
            message.contains("try 1: others ") && message.contains("try 2: others "),
            "{message}"
        );
        // The loop took about one of the two CPUs.
        let share: f64 = message["beside a stranger".len()..]
            .split("try 1: others ")
            .nth(1)
            .and_then(|s| s.split('%').next())
            .and_then(|s| s.parse().ok())
            .unwrap();
        assert!(
            share > 100.0 / crate::contention::cpu_count() / 2.0,
            "{message}"
        );
    }
}
