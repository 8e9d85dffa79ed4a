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
