//! Slower hosts: CPU quotas through cgroups (v1 `cpu` controller, or v2
//! `cpu.max` in a threaded subtree) applied to single threads, and CPU
//! pinning. A thread's children inherit both, so entering the endpoint's
//! first thread places all of its connection threads.

use crate::error::LabError;
use std::path::{Path, PathBuf};

const V1_ROOT: &str = "/sys/fs/cgroup/cpu";
const V2_ROOT: &str = "/sys/fs/cgroup";
/// CFS period used for quotas, µs: a quota of F is F × this per period.
pub const QUOTA_PERIOD_US: u64 = 100_000;
const PERIOD_US: u64 = QUOTA_PERIOD_US;

/// Which cgroup hierarchy carries the CPU controller here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// cgroup v1 with a `cpu` hierarchy: threads move by writing their tid to `tasks`.
    V1,
    /// cgroup v2 with the `cpu` controller: threads move within a threaded subtree.
    V2,
}

/// The hierarchy this host offers for CPU quotas, if any.
pub fn cgroup_version() -> Option<CgroupVersion> {
    if Path::new(V1_ROOT).join("cpu.cfs_quota_us").exists() {
        return Some(CgroupVersion::V1);
    }
    let controllers =
        std::fs::read_to_string(Path::new(V2_ROOT).join("cgroup.controllers")).ok()?;
    controllers
        .split_whitespace()
        .any(|c| c == "cpu")
        .then_some(CgroupVersion::V2)
}

fn write(path: &Path, value: &str) -> Result<(), LabError> {
    std::fs::write(path, value)
        .map_err(|e| LabError::io(format!("writing {value:?} to {}", path.display()), e))
}

fn gettid() -> i64 {
    // SAFETY: gettid has no arguments.
    unsafe { libc::syscall(libc::SYS_gettid) }
}

/// A CPU quota of a fraction of one CPU, as a cgroup named `tcplab-…`.
#[derive(Debug)]
pub struct CpuQuota {
    dir: PathBuf,
    version: CgroupVersion,
    /// v2 only: the threaded-subtree root holding the process, and the
    /// cgroup the process came from.
    v2_parent: Option<(PathBuf, PathBuf)>,
}

impl CpuQuota {
    /// Creates cgroup `name` limited to `fraction` of one CPU.
    pub fn create(name: &str, fraction: f64) -> Result<CpuQuota, LabError> {
        if !(fraction > 0.0 && fraction <= 64.0) {
            return Err(LabError::Spec(format!(
                "a host speed must be above 0, got {fraction}"
            )));
        }
        let quota = ((fraction * PERIOD_US as f64) as u64).max(1000);
        match cgroup_version() {
            Some(CgroupVersion::V1) => {
                let dir = Path::new(V1_ROOT).join(name);
                std::fs::create_dir(&dir).map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
                let q = CpuQuota { dir, version: CgroupVersion::V1, v2_parent: None };
                write(&q.dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                write(&q.dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                Ok(q)
            }
            Some(CgroupVersion::V2) => CpuQuota::create_v2(name, quota),
            None => Err(LabError::Unsupported(
                "no cgroup CPU controller here (neither v1 /sys/fs/cgroup/cpu nor v2 cpu.max); --host-speed needs one".into(),
            )),
        }
    }

    /// cgroup v2: the process moves into `tcplab-…-root` (a threaded-subtree
    /// root), and the quota is a threaded child of it.
    fn create_v2(name: &str, quota: u64) -> Result<CpuQuota, LabError> {
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|e| LabError::io("reading /proc/self/cgroup", e))?;
        let rel = own
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .ok_or_else(|| {
                LabError::Unsupported("this process is not in a cgroup v2 hierarchy".into())
            })?;
        let origin = Path::new(V2_ROOT).join(rel.trim_start_matches('/'));
        let parent = Path::new(V2_ROOT).join(format!("{name}-root"));
        std::fs::create_dir(&parent)
            .map_err(|e| LabError::io(format!("creating {}", parent.display()), e))?;
        write(
            &parent.join("cgroup.procs"),
            &std::process::id().to_string(),
        )?;
        write(&parent.join("cgroup.subtree_control"), "+cpu")?;
        let dir = parent.join(name);
        std::fs::create_dir(&dir)
            .map_err(|e| LabError::io(format!("creating {}", dir.display()), e))?;
        let q = CpuQuota {
            dir,
            version: CgroupVersion::V2,
            v2_parent: Some((parent, origin)),
        };
        write(&q.dir.join("cgroup.type"), "threaded")?;
        write(&q.dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
        Ok(q)
    }

    /// Moves the calling thread into the quota.
    pub fn enter_current_thread(&self) -> Result<(), LabError> {
        let file = match self.version {
            CgroupVersion::V1 => "tasks",
            CgroupVersion::V2 => "cgroup.threads",
        };
        write(&self.dir.join(file), &gettid().to_string())
    }

    /// The cgroup's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        match self.version {
            CgroupVersion::V1 => {
                let _ = evacuate(&self.dir.join("tasks"), &Path::new(V1_ROOT).join("tasks"));
                let _ = std::fs::remove_dir(&self.dir);
            }
            CgroupVersion::V2 => {
                if let Some((parent, origin)) = &self.v2_parent {
                    let _ = evacuate(
                        &self.dir.join("cgroup.threads"),
                        &parent.join("cgroup.threads"),
                    );
                    let _ = std::fs::remove_dir(&self.dir);
                    let _ =
                        std::fs::write(origin.join("cgroup.procs"), std::process::id().to_string());
                    let _ = std::fs::remove_dir(parent);
                }
            }
        }
    }
}

/// Moves every id listed in `from` into `to`.
fn evacuate(from: &Path, to: &Path) -> std::io::Result<()> {
    for id in std::fs::read_to_string(from)?.lines() {
        let _ = std::fs::write(to, id);
    }
    Ok(())
}

/// Pins the calling thread (and threads it spawns later) to `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<(), LabError> {
    if cpu >= online_cpus().min(1024) {
        return Err(LabError::Spec(format!(
            "CPU {cpu} does not exist (this host has CPUs 0..{})",
            online_cpus()
        )));
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET stays within it (cpu < 1024).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(LabError::io(
                format!("pinning to CPU {cpu}"),
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

/// Number of online CPUs.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf with a valid name.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    n.max(1) as usize
}

/// Existing cgroups named `tcplab-…` in either hierarchy.
pub fn list_cgroups() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in [V1_ROOT, V2_ROOT] {
        if let Ok(d) = std::fs::read_dir(root) {
            for e in d.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(crate::names::PREFIX)
                    && e.path().is_dir()
                {
                    out.push(e.path());
                }
            }
        }
    }
    out
}

/// Removes a leftover cgroup (and, for v2, its children), moving any
/// threads back to the hierarchy's root first.
pub fn remove_cgroup(dir: &Path) -> Result<(), LabError> {
    if let Ok(d) = std::fs::read_dir(dir) {
        for e in d.flatten() {
            if e.path().is_dir() {
                remove_cgroup(&e.path())?;
            }
        }
    }
    let root = if dir.starts_with(V1_ROOT) {
        V1_ROOT
    } else {
        V2_ROOT
    };
    let (file, dest) = if root == V1_ROOT {
        ("tasks", "tasks")
    } else {
        ("cgroup.procs", "cgroup.procs")
    };
    let _ = evacuate(&dir.join(file), &Path::new(root).join(dest));
    if root == V2_ROOT {
        let _ = evacuate(
            &dir.join("cgroup.threads"),
            &Path::new(root).join("cgroup.procs"),
        );
    }
    std::fs::remove_dir(dir).map_err(|e| LabError::io(format!("removing {}", dir.display()), e))
}
