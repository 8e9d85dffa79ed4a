//! How much of the host's CPU others took while a measurement ran.
//!
//! A [`Window`] reads the host's CPU ticks (`/proc/stat`) and this test's
//! own (the test process, every live descendant, and the children it has
//! reaped: `tcplab` runs, `ip netns exec`, a server it started) when it
//! opens and when it closes. What the host spent beyond ours was others'
//! work (another session's build, a niced compile); steal is what the
//! hypervisor gave other guests. Both are shares of all the host's CPUs
//! over the window. Interrupt time is left out of both, and kernel
//! threads count as ours: on loopback and veth the receive path of our
//! own traffic runs in softirq (in `ksoftirqd` when it overflows), and a
//! namespace the test deleted is torn down by a kernel worker (measured
//! here: 14 ticks of kernel threads around a 2 s veth trial, most of them
//! `kworker …netns`). Another session's work runs in processes.
//!
//! Ticks are `USER_HZ` (100 per second): a window shorter than about a
//! second sees contention coarsely.
//!
//! Test support: a `/proc` that cannot be read fails the calling test.

use std::time::{Duration, Instant};

/// A host's CPU time by kind, ticks (`/proc/stat`'s first line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct HostTicks {
    /// user + nice + system.
    busy: u64,
    /// steal.
    steal: u64,
}

fn host_ticks() -> HostTicks {
    let stat = std::fs::read_to_string("/proc/stat").expect("reading /proc/stat");
    parse_host(&stat).unwrap_or_else(|| panic!("no cpu line in /proc/stat: {stat}"))
}

/// The host's ticks from `/proc/stat`'s text.
fn parse_host(stat: &str) -> Option<HostTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal …
    (v.len() >= 8).then(|| HostTicks {
        busy: v[0] + v[1] + v[2],
        steal: v[7],
    })
}

/// (utime + stime, cutime + cstime) of `/proc/<pid>/stat`'s text.
fn parse_process(stat: &str) -> Option<(u64, u64)> {
    let after = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    (f.len() == 4).then(|| (f[0] + f[1], f[2] + f[3]))
}

/// The process's own ticks and its reaped children's (`None` once it is
/// gone).
fn process_ticks(pid: u32) -> Option<(u64, u64)> {
    parse_process(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The live children of `pid` (of all its threads).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// `PF_KTHREAD` in `/proc/<pid>/stat`'s flags: a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Whether `/proc/<pid>/stat`'s text is a kernel thread's.
fn is_kernel_thread(stat: &str) -> bool {
    stat.get(stat.rfind(')').map_or(0, |i| i + 2)..)
        .and_then(|after| after.split_whitespace().nth(6))
        .and_then(|flags| flags.parse::<u64>().ok())
        .is_some_and(|flags| flags & PF_KTHREAD != 0)
}

/// Ticks of every kernel thread on the host.
fn kernel_thread_ticks() -> u64 {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| is_kernel_thread(stat))
        .filter_map(|stat| parse_process(&stat).map(|(own, _)| own))
        .sum()
}

/// Ticks of this process, its reaped children and every live
/// descendant, plus `extra` processes (not descendants: a server started
/// elsewhere) with their live descendants, plus every kernel thread.
fn our_ticks(extra: &[u32]) -> u64 {
    kernel_thread_ticks() + our_process_ticks(extra)
}

/// [`our_ticks`] without the kernel threads.
fn our_process_ticks(extra: &[u32]) -> u64 {
    let me = std::process::id();
    let mut total = process_ticks(me).map_or(0, |(own, reaped)| own + reaped);
    let mut todo: Vec<u32> = children(me);
    todo.extend(extra.iter().copied().filter(|&p| p != me));
    let mut seen = std::collections::BTreeSet::new();
    while let Some(pid) = todo.pop() {
        if !seen.insert(pid) {
            continue;
        }
        // A descendant's reaped children are counted too: a process that
        // ran and ended inside it (a shell's command) spent our time.
        if let Some((own, reaped)) = process_ticks(pid) {
            total += own + reaped;
        }
        todo.extend(children(pid));
    }
    total
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// The CPUs this process may run on.
pub fn cpu_count() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}

/// What others took of the host's CPUs over a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Contention {
    /// Other processes' user and system time, as a share of all CPUs.
    pub others: f64,
    /// The hypervisor's steal, as a share of all CPUs.
    pub steal: f64,
    /// Other processes' time, clock ticks.
    pub others_ticks: u64,
    /// Steal, clock ticks.
    pub steal_ticks: u64,
    /// The window's length.
    pub span: Duration,
}

impl Contention {
    /// From tick counts over `span` on `cpus` CPUs at `hz`.
    fn from_ticks(others: u64, steal: u64, span: Duration, hz: f64, cpus: f64) -> Contention {
        let capacity = hz * cpus * span.as_secs_f64().max(1e-9);
        Contention {
            others: others as f64 / capacity,
            steal: steal as f64 / capacity,
            others_ticks: others,
            steal_ticks: steal,
            span,
        }
    }
}

impl std::fmt::Display for Contention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "others {:.1}% and steal {:.1}% of the CPUs over {:.2} s",
            self.others * 100.0,
            self.steal * 100.0,
            self.span.as_secs_f64()
        )
    }
}

/// A measurement window: the host's and our CPU ticks when it opened.
#[derive(Debug, Clone)]
pub struct Window {
    host: HostTicks,
    ours: u64,
    at: Instant,
    extra: Vec<u32>,
}

impl Window {
    /// Opens a window; `extra` names processes whose CPU time is ours
    /// although they are not this test's descendants.
    pub fn open(extra: &[u32]) -> Window {
        Window {
            ours: our_ticks(extra),
            host: host_ticks(),
            at: Instant::now(),
            extra: extra.to_vec(),
        }
    }

    /// What others took since the window opened.
    pub fn contention(&self) -> Contention {
        let host = host_ticks();
        let ours = our_ticks(&self.extra);
        let span = self.at.elapsed();
        let host_busy = host.busy.saturating_sub(self.host.busy);
        let ours = ours.saturating_sub(self.ours);
        Contention::from_ticks(
            host_busy.saturating_sub(ours),
            host.steal.saturating_sub(self.host.steal),
            span,
            ticks_per_second(),
            cpu_count(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_parse_and_bad_ones_do_not() {
        let stat = "cpu  100 5 20 900 3 1 2 7 0 0\ncpu0 50 2 10 450 1 0 1 3 0 0\n";
        assert_eq!(
            parse_host(stat),
            Some(HostTicks {
                busy: 125,
                steal: 7
            })
        );
        assert_eq!(parse_host("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse_host("cpu  1 2 x 4 5 6 7 8\n"), None);
        let me = "12 (a (weird) name) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15";
        // utime 11 + stime 12, cutime 13 + cstime 14.
        assert_eq!(parse_process(me), Some((23, 27)));
        assert_eq!(parse_process("12 (x) S 1 2"), None);
        // Flags (the 9th field) with PF_KTHREAD set, and without.
        let kthread = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 5 9 0 0";
        assert!(is_kernel_thread(kthread));
        assert!(!is_kernel_thread(me));
        assert!(is_kernel_thread(
            &std::fs::read_to_string("/proc/2/stat").unwrap()
        ));
        assert!(!is_kernel_thread(
            &std::fs::read_to_string("/proc/self/stat").unwrap()
        ));
    }

    #[test]
    fn shares_are_of_all_cpus_over_the_window() {
        let c = Contention::from_ticks(50, 10, Duration::from_secs(1), 100.0, 2.0);
        assert!((c.others - 0.25).abs() < 1e-12 && (c.steal - 0.05).abs() < 1e-12);
        assert_eq!((c.others_ticks, c.steal_ticks), (50, 10));
        assert_eq!(
            c.to_string(),
            "others 25.0% and steal 5.0% of the CPUs over 1.00 s"
        );
    }

    /// A shell loop that burns about half a second of CPU, then sleeps
    /// (so its ticks can be read while it lives).
    const BURN: &str = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 30";

    /// Starts [`BURN`] as an orphan (its parent shell exits at once), so
    /// it is not this test's descendant: its pid.
    fn stranger() -> u32 {
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("sh -c '{BURN}' >/dev/null 2>&1 & echo $!")])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }

    /// Waits until `pid` sleeps (its burn is done): its ticks then.
    fn burned(pid: u32) -> u64 {
        let t0 = Instant::now();
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let state = stat[stat.rfind(')').unwrap() + 2..].chars().next();
            if state == Some('S') {
                return parse_process(&stat).unwrap().0;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the burn never ended"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A stranger's CPU time is others'; named as ours it is not; a
    /// child's, reaped or alive, is ours.
    #[test]
    fn a_strangers_cpu_is_others_and_a_childs_is_ours() {
        let _lock = crate::timing_lock();
        let w = Window::open(&[]);
        let before = our_process_ticks(&[]);
        let pid = stranger();
        let spent = burned(pid);
        let c = w.contention();
        let ours = our_process_ticks(&[]) - before;
        let named = our_process_ticks(&[pid]) - before;
        // SAFETY: kill has no memory preconditions; the pid is the
        // stranger this test started, still asleep.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        assert!(spent >= 10, "the burn took only {spent} ticks");
        assert!(
            ours < spent / 4,
            "{ours} of the stranger's {spent} ticks counted as ours"
        );
        assert!(
            named >= spent,
            "named, {named} ticks of its {spent} are ours"
        );
        let capacity = ticks_per_second() * cpu_count() * c.span.as_secs_f64();
        assert!(
            c.others * capacity >= 0.8 * spent as f64,
            "{c}: the stranger's {spent} ticks are not in others'"
        );

        let before = our_process_ticks(&[]);
        let mut child = std::process::Command::new("sh")
            .args(["-c", &BURN.replace("sleep 30", "true")])
            .spawn()
            .unwrap();
        child.wait().unwrap();
        let reaped = our_process_ticks(&[]) - before;
        assert!(reaped >= 10, "a reaped child's {reaped} ticks are not ours");
    }
}
