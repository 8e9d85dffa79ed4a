//! What the CPU sampler counted, before symbolization: the shared data of
//! the sampler, which fills it, and the symbolizer, which reads it.

use std::collections::HashMap;

/// One distinct sample as the kernel counted it, before symbolization.
#[derive(Debug, Clone)]
pub struct RawSample {
    /// Thread sampled (0: idle).
    pub tid: u32,
    /// Its process.
    pub tgid: u32,
    /// Kernel return addresses, innermost first.
    pub kernel: Vec<u64>,
    /// User addresses, innermost first.
    pub user: Vec<u64>,
    /// Samples with this key.
    pub count: u64,
    /// Time the thread ran attributed to this key, ns.
    pub ns: u64,
    /// The thread's time that no sample hit (kept under no stack).
    pub unsampled: bool,
}

/// Everything the sampler counted, before symbolization.
#[derive(Debug, Clone, Default)]
pub struct RawProfile {
    /// Sampling period, ns.
    pub period_ns: u64,
    /// CPUs sampled.
    pub cpus: u32,
    /// Seconds sampled.
    pub duration_s: f64,
    /// Distinct samples.
    pub samples: Vec<RawSample>,
    /// Thread names.
    pub comms: HashMap<u32, String>,
    /// Samples lost because the count table was full.
    pub lost: u64,
    /// Samples whose stack could not be stored.
    pub broken: u64,
    /// Busy CPU seconds on the host while sampling (/proc/stat).
    pub busy_s: f64,
    /// Idle CPU seconds on the host while sampling (/proc/stat).
    pub idle_s: f64,
    /// The experiment's process.
    pub tgid: u32,
    /// The event that drove the samples (`cycles` or `cpu-clock`).
    pub clock: String,
    /// Per thread, over its whole stints while sampling: (wall ns, ns the
    /// scheduler charged). Their ratio takes stolen time out of the weights.
    pub stints: HashMap<u32, (u64, u64)>,
}
