//! The process that owns a running run, identified so that a reused pid is
//! not mistaken for it: its host, the pid, the boot it ran in, and its
//! start time since that boot (`/proc/PID/stat`, field 22, in clock ticks).

/// The process that created a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOwner {
    /// The host it ran on (`/proc/sys/kernel/hostname`).
    pub hostname: String,
    /// Its process id.
    pub pid: u32,
    /// `/proc/sys/kernel/random/boot_id` of the boot it ran in.
    pub boot_id: String,
    /// Its start time after boot, in clock ticks.
    pub start_ticks: u64,
}

/// A one-line kernel value (empty if the kernel does not say).
fn proc_value(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// This boot's id (empty if the kernel does not say).
fn boot_id() -> String {
    proc_value("/proc/sys/kernel/random/boot_id")
}

/// This host's name.
fn hostname() -> String {
    proc_value("/proc/sys/kernel/hostname")
}

/// The start time after boot of process `pid`, if it exists.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces or
    // parentheses itself: count fields after its last ')'. The state is
    // field 3, the start time field 22.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

impl RunOwner {
    /// This process.
    pub fn current() -> RunOwner {
        let pid = std::process::id();
        RunOwner {
            hostname: hostname(),
            pid,
            boot_id: boot_id(),
            start_ticks: start_ticks(pid).unwrap_or(0),
        }
    }

    /// Whether the owner is known to have ended: it ran on this host, and
    /// either in an earlier boot or its pid no longer belongs to a process
    /// that started at the same tick. An owner on another host (a run copied
    /// from elsewhere) or one that cannot be identified (no `/proc`) is not
    /// known to have ended, so a run is never marked killed on a guess.
    pub fn is_gone(&self) -> bool {
        let boot = boot_id();
        if boot.is_empty() || self.boot_id.is_empty() || self.start_ticks == 0 {
            return false;
        }
        if self.hostname != hostname() {
            return false;
        }
        boot != self.boot_id || start_ticks(self.pid) != Some(self.start_ticks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reused_pid_is_not_its_owner() {
        let me = RunOwner::current();
        assert!(me.start_ticks > 0, "no start time in /proc/self/stat");
        assert!(!me.is_gone());
        let reused = RunOwner {
            start_ticks: me.start_ticks + 1,
            ..me.clone()
        };
        assert!(reused.is_gone());
        let other_boot = RunOwner {
            boot_id: "another-boot".into(),
            ..me.clone()
        };
        assert!(other_boot.is_gone());
        let other_host = RunOwner {
            hostname: format!("not-{}", me.hostname),
            boot_id: "another-boot".into(),
            ..me.clone()
        };
        assert!(
            !other_host.is_gone(),
            "another host's process is not judged"
        );
    }

    #[test]
    fn a_process_that_exited_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let ticks = start_ticks(pid);
        child.wait().unwrap();
        let gone = RunOwner {
            hostname: hostname(),
            pid,
            boot_id: boot_id(),
            start_ticks: ticks.unwrap_or(1),
        };
        assert!(gone.is_gone());
    }
}
