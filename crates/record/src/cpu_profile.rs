//! A trial's CPU samples: every sampled stack with its count, symbolized
//! when the trial ended (kernel addresses through /proc/kallsyms, user
//! addresses through the process's own ELF symbols). Stacks are kept whole,
//! not only their layer totals, so a later layer table can re-attribute an
//! old run.

use serde::{Deserialize, Serialize};

/// Layout version of [`CpuProfile`].
pub const PROFILE_VERSION: u32 = 1;

/// All samples of one trial.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuProfile {
    /// Layout version ([`PROFILE_VERSION`]).
    pub version: u32,
    /// Mean time between samples on a busy CPU (the period, ns).
    pub period_ns: u64,
    /// The event that drove the samples: `cycles` (the PMU) or `cpu-clock`.
    #[serde(default)]
    pub clock: String,
    /// CPUs sampled.
    pub cpus: u32,
    /// Seconds the sampler ran.
    pub duration_s: f64,
    /// Function names, indexed by the stacks' frames.
    pub symbols: Vec<String>,
    /// Threads that were sampled, with their role in the trial.
    pub threads: Vec<ProfiledThread>,
    /// Distinct (thread, kernel stack, user stack) with their sample counts.
    pub stacks: Vec<ProfiledStack>,
    /// CPU seconds the host's CPUs were busy while sampling (/proc/stat:
    /// user, nice, system, irq, softirq), to check the samples against.
    pub busy_s: f64,
    /// CPU seconds they were idle (/proc/stat idle and iowait). Idle CPUs
    /// are not sampled reliably (the cpu-clock event pauses in deep idle),
    /// so idle time comes from here, not from samples.
    pub idle_s: f64,
    /// Samples not counted: the in-kernel table was full.
    pub lost_samples: u64,
    /// Samples whose stack could not be kept (no free stack slot); they are
    /// counted, under an empty stack.
    pub broken_stacks: u64,
}

/// What a sampled thread was doing for the trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadRole {
    /// A thread that sent the trial's data (its CPU time is the engine's
    /// sender CPU).
    Sender,
    /// A thread that received it.
    Receiver,
    /// Another thread of the tcplab process (control, probe reader).
    Tcplab,
    /// A kernel softirq thread (`ksoftirqd/N`): network receive work
    /// deferred out of the interrupted threads.
    Softirqd,
    /// The idle task (interrupts and softirqs taken while idle included).
    Idle,
    /// Any other thread on the host.
    Other,
}

impl ThreadRole {
    /// Every role, in report order.
    pub const ALL: [ThreadRole; 6] = [
        ThreadRole::Sender,
        ThreadRole::Receiver,
        ThreadRole::Tcplab,
        ThreadRole::Softirqd,
        ThreadRole::Idle,
        ThreadRole::Other,
    ];

    /// The role's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            ThreadRole::Sender => "sender",
            ThreadRole::Receiver => "receiver",
            ThreadRole::Tcplab => "tcplab",
            ThreadRole::Softirqd => "softirqd",
            ThreadRole::Idle => "idle",
            ThreadRole::Other => "other",
        }
    }
}

/// One sampled thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledThread {
    /// Thread id (0: the idle task).
    pub tid: u32,
    /// Its process id.
    pub tgid: u32,
    /// Its name when first sampled.
    pub comm: String,
    /// What it did for the trial.
    pub role: ThreadRole,
}

/// One distinct sampled stack, or the time a thread ran between samples
/// that no sample hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledStack {
    /// The thread sampled.
    pub tid: u32,
    /// True for the thread's running time that no sample hit (no stack):
    /// analysis spreads it over the thread's sampled stacks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsampled: bool,
    /// Kernel frames, innermost first, as indices into `symbols` (empty
    /// when the sample hit user mode).
    pub kernel: Vec<u32>,
    /// User frames, innermost first (kept for the experiment's threads only).
    pub user: Vec<u32>,
    /// Samples with exactly this stack.
    pub samples: u64,
    /// Time the thread ran attributed to this stack, ns: each sample is
    /// worth the time since the thread's previous sample or since it was
    /// switched in, so a thread's stacks add up to the time it ran.
    pub ns: u64,
}

impl CpuProfile {
    /// Samples counted in all.
    pub fn total_samples(&self) -> u64 {
        self.stacks.iter().map(|s| s.samples).sum()
    }

    /// CPU seconds a thread ran while sampled (all its stacks' time).
    pub fn thread_s(&self, tid: u32) -> f64 {
        self.stacks
            .iter()
            .filter(|s| s.tid == tid)
            .map(|s| s.ns)
            .sum::<u64>() as f64
            * 1e-9
    }

    /// The role of a thread (Other if it was not listed).
    pub fn role_of(&self, tid: u32) -> ThreadRole {
        self.threads
            .iter()
            .find(|t| t.tid == tid)
            .map_or(ThreadRole::Other, |t| t.role)
    }

    /// The name of a frame.
    pub fn symbol(&self, index: u32) -> &str {
        self.symbols
            .get(index as usize)
            .map_or("[unknown]", String::as_str)
    }

    /// Share of the time threads ran (outside the idle task) that samples
    /// hit directly, rather than reaching their stacks by time weighting:
    /// near 1 when every running stretch was sampled; low when threads ran
    /// in bursts shorter than the period or the kernel throttled sampling.
    pub fn coverage(&self) -> f64 {
        let busy = self.stacks.iter().filter(|s| s.tid != 0);
        let total: u64 = busy.clone().map(|s| s.ns).sum();
        if total == 0 {
            return 0.0;
        }
        let unsampled: u64 = busy.filter(|s| s.unsampled).map(|s| s.ns).sum();
        1.0 - unsampled as f64 / total as f64
    }
}
