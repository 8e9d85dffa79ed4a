//! Host-wide CPU time from /proc/stat, to tell a user when a trial was
//! disturbed: on a virtual machine the hypervisor may run other guests
//! ("steal"), and timing-sensitive measurements then come out slow.

/// Jiffies of all CPUs, split the way /proc/stat splits them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostCpu {
    /// Busy: user + nice + system + irq + softirq.
    pub busy: u64,
    /// Idle and iowait.
    pub idle: u64,
    /// Time the hypervisor gave to other guests.
    pub steal: u64,
}

impl HostCpu {
    /// Reads the aggregate `cpu` line of /proc/stat (zeros if unreadable).
    pub fn now() -> HostCpu {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let Some(line) = text.lines().find(|l| l.starts_with("cpu ")) else {
            return HostCpu::default();
        };
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        let g = |i: usize| f.get(i).copied().unwrap_or(0);
        HostCpu {
            busy: g(0) + g(1) + g(2) + g(5) + g(6),
            idle: g(3) + g(4),
            steal: g(7),
        }
    }

    /// The fraction of all CPU time since `earlier` that was stolen.
    pub fn steal_fraction_since(self, earlier: HostCpu) -> f64 {
        let busy = self.busy.saturating_sub(earlier.busy);
        let idle = self.idle.saturating_sub(earlier.idle);
        let steal = self.steal.saturating_sub(earlier.steal);
        let total = busy + idle + steal;
        if total == 0 {
            0.0
        } else {
            steal as f64 / total as f64
        }
    }
}

/// Ticks of one CPU, split the way /proc/stat splits them (in USER_HZ).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreTicks {
    /// User and nice.
    pub user: u64,
    /// System, not counting interrupts.
    pub system: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Softirq: among others, the network stack's receive processing.
    pub softirq: u64,
    /// Idle and iowait.
    pub idle: u64,
    /// Time the hypervisor gave to other guests.
    pub steal: u64,
}

impl CoreTicks {
    /// Busy ticks: user, system, irq and softirq.
    pub fn busy(&self) -> u64 {
        self.user + self.system + self.irq + self.softirq
    }

    /// Every tick of the interval.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.steal
    }

    fn since(&self, e: &CoreTicks) -> CoreTicks {
        CoreTicks {
            user: self.user.saturating_sub(e.user),
            system: self.system.saturating_sub(e.system),
            irq: self.irq.saturating_sub(e.irq),
            softirq: self.softirq.saturating_sub(e.softirq),
            idle: self.idle.saturating_sub(e.idle),
            steal: self.steal.saturating_sub(e.steal),
        }
    }
}

/// Per-CPU ticks (/proc/stat) and NET_RX softirq counts (/proc/softirqs)
/// at one moment: which CPU did a trial's protocol work, and how much.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CoreStat {
    /// Ticks of each CPU, by CPU number.
    pub ticks: Vec<CoreTicks>,
    /// NET_RX softirqs each CPU has served.
    pub net_rx: Vec<u64>,
}

impl CoreStat {
    /// Reads /proc/stat and /proc/softirqs (empty if unreadable).
    pub fn now() -> CoreStat {
        CoreStat::parse(
            &std::fs::read_to_string("/proc/stat").unwrap_or_default(),
            &std::fs::read_to_string("/proc/softirqs").unwrap_or_default(),
        )
    }

    /// From the text of /proc/stat and /proc/softirqs.
    pub fn parse(stat: &str, softirqs: &str) -> CoreStat {
        let mut ticks = Vec::new();
        for line in stat.lines() {
            let mut f = line.split_whitespace();
            let Some(n) = f
                .next()
                .and_then(|name| name.strip_prefix("cpu"))
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
            let g = |i: usize| v.get(i).copied().unwrap_or(0);
            if ticks.len() <= n {
                ticks.resize(n + 1, CoreTicks::default());
            }
            ticks[n] = CoreTicks {
                user: g(0) + g(1),
                system: g(2),
                irq: g(5),
                softirq: g(6),
                idle: g(3) + g(4),
                steal: g(7),
            };
        }
        let net_rx = softirqs
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("NET_RX:"))
            .map(|rest| {
                rest.split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        CoreStat { ticks, net_rx }
    }

    /// The ticks of CPU `cpu` since `earlier` (None if it is not listed).
    pub fn core_since(&self, earlier: &CoreStat, cpu: usize) -> Option<CoreTicks> {
        Some(self.ticks.get(cpu)?.since(earlier.ticks.get(cpu)?))
    }

    /// The share of all NET_RX softirqs since `earlier` that CPU `cpu`
    /// served (None when there were none).
    pub fn net_rx_share_since(&self, earlier: &CoreStat, cpu: usize) -> Option<f64> {
        let delta: Vec<u64> = self
            .net_rx
            .iter()
            .zip(earlier.net_rx.iter().chain(std::iter::repeat(&0)))
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        let all: u64 = delta.iter().sum();
        (all > 0).then(|| delta.get(cpu).copied().unwrap_or(0) as f64 / all as f64)
    }
}

/// Seconds per /proc/stat tick (USER_HZ, 100 on Linux).
pub const SECONDS_PER_TICK: f64 = 0.01;

/// Metrics of the CPU a side was pinned to over a trial, named
/// `core_<side>_…`: the CPU's number (`core_<side>_index`), its whole busy
/// time (`…_busy_s`: user, system, irq and softirq — the endpoint's own
/// work, the protocol work done in softirq there, and anything else that
/// ran on that CPU), each part (`…_user_s`, `…_system_s`, `…_irq_s`,
/// `…_softirq_s`, `…_steal_s`), the ticks behind them (`…_ticks`) and the
/// share of the host's NET_RX softirqs it served (`…_net_rx_share`).
pub fn core_metrics(
    before: &CoreStat,
    after: &CoreStat,
    side: &str,
    cpu: usize,
) -> Vec<(String, f64)> {
    let Some(t) = after.core_since(before, cpu) else {
        return Vec::new();
    };
    let s = |x: u64| x as f64 * SECONDS_PER_TICK;
    let mut m = vec![
        ("index", cpu as f64),
        ("busy_s", s(t.busy())),
        ("user_s", s(t.user)),
        ("system_s", s(t.system)),
        ("irq_s", s(t.irq)),
        ("softirq_s", s(t.softirq)),
        ("steal_s", s(t.steal)),
        ("ticks", t.total() as f64),
    ];
    if let Some(share) = after.net_rx_share_since(before, cpu) {
        m.push(("net_rx_share", share));
    }
    m.into_iter()
        .map(|(k, v)| (format!("core_{side}_{k}"), v))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT0: &str = "cpu  10 0 10 100 0 0 0 0 0 0\n\
        cpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0\nintr 1\n";
    const STAT1: &str = "cpu  0 0 0 0 0 0 0 0 0 0\n\
        cpu0 85 0 25 50 0 0 10 0 0 0\ncpu1 5 0 5 140 0 0 60 1 0 0\n";
    const SIRQ0: &str = "                    CPU0       CPU1\n          HI:  1 1\n      NET_RX:        10         20\n";
    const SIRQ1: &str =
        "                    CPU0       CPU1\n      NET_RX:        20         110\n";

    #[test]
    fn a_core_gets_its_own_ticks_and_net_rx_share() {
        let (a, b) = (CoreStat::parse(STAT0, SIRQ0), CoreStat::parse(STAT1, SIRQ1));
        let m: std::collections::HashMap<String, f64> =
            core_metrics(&a, &b, "receiver", 1).into_iter().collect();
        assert_eq!(m["core_receiver_index"], 1.0);
        assert!((m["core_receiver_softirq_s"] - 0.60).abs() < 1e-9);
        assert!((m["core_receiver_busy_s"] - 0.60).abs() < 1e-9);
        assert!((m["core_receiver_steal_s"] - 0.01).abs() < 1e-9);
        assert_eq!(m["core_receiver_ticks"], 151.0);
        assert!((m["core_receiver_net_rx_share"] - 0.9).abs() < 1e-9);
        let s: std::collections::HashMap<String, f64> =
            core_metrics(&a, &b, "sender", 0).into_iter().collect();
        assert!((s["core_sender_busy_s"] - 1.10).abs() < 1e-9);
        assert!((s["core_sender_softirq_s"] - 0.10).abs() < 1e-9);
        assert!((s["core_sender_net_rx_share"] - 0.1).abs() < 1e-9);
        assert!(core_metrics(&a, &b, "sender", 7).is_empty());
    }
}

/// A pinned side's whole CPU time, and what else ran on its CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WholeSideCpu {
    /// The side's own threads plus the interrupt and softirq time of its
    /// CPU (its protocol work, once receive processing is steered there),
    /// capped by the CPU's busy time.
    pub whole_s: f64,
    /// Busy time of the CPU beyond that: other processes that ran there.
    pub other_s: f64,
}

/// A side's whole CPU from its CPU's busy time, its threads' CPU time and
/// the interrupt plus softirq time of its CPU. With tick accounting a tick
/// in softirq on top of the side's own thread counts in both, so
/// `thread + softirq` may exceed the truth; capping it by the CPU's busy
/// time bounds it on a quiet host, and on a shared one (other processes on
/// the CPU) the busy time would overstate it instead.
pub fn whole_side_cpu(busy_s: f64, thread_s: f64, softirq_s: f64) -> WholeSideCpu {
    let own = thread_s + softirq_s;
    WholeSideCpu {
        whole_s: own.min(busy_s),
        other_s: (busy_s - own).max(0.0),
    }
}

#[cfg(test)]
mod whole_tests {
    use super::*;

    #[test]
    fn whole_cpu_is_own_work_capped_by_the_cpu_and_the_rest_is_other() {
        // A quiet CPU: the side's thread and its softirq fill it.
        let q = whole_side_cpu(1.0, 0.7, 0.4);
        assert!((q.whole_s - 1.0).abs() < 1e-12 && q.other_s == 0.0);
        // A shared CPU: others ran there too.
        let s = whole_side_cpu(2.0, 0.4, 0.3);
        assert!((s.whole_s - 0.7).abs() < 1e-12 && (s.other_s - 1.3).abs() < 1e-12);
    }
}
