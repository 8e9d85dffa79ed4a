//! A host profile: what `tcplab calibrate` measured about the machine —
//! memory copy bandwidth, checksum bandwidth, system call and context
//! switch latency, and a CPU score — which studies and models reference
//! (Markatos' throughput model, mileage).

use serde::{Deserialize, Serialize};

/// Layout version of [`HostProfile`].
pub const HOST_PROFILE_VERSION: u32 = 1;

/// One calibration measurement over repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Median of the repetitions.
    pub median: f64,
    /// Mean of the repetitions.
    pub mean: f64,
    /// Half-width of the mean's 95% confidence interval (Student's t).
    pub ci95: f64,
    /// Repetitions.
    pub n: u32,
    /// SI unit of the values: `B/s`, `s`, or `1` for the score.
    pub unit: String,
}

/// What `tcplab calibrate` measured on a host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostProfile {
    /// [`HOST_PROFILE_VERSION`] when written.
    pub version: u32,
    /// When it was measured, RFC 3339 UTC.
    pub created_at: String,
    /// The host's name.
    pub hostname: String,
    /// CPU model.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores: u32,
    /// Kernel release and version.
    pub kernel: String,
    /// Whether it was a `--quick` calibration (fewer, shorter repetitions).
    pub quick: bool,
    /// memcpy bandwidth of a buffer that stays in the L1/L2 cache, B/s.
    pub copy_cache: Measured,
    /// The same in-cache memcpy with the destination 16 bytes past a 4 KiB
    /// multiple from the source, B/s: some CPUs (this development VM's AMD
    /// EPYC, with fast short `rep movsb`) copy ~17× slower at such a
    /// distance, which the kernel's socket copies meet too. `None` in
    /// profiles stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_cache_aliased: Option<Measured>,
    /// memcpy bandwidth of buffers far larger than the last-level cache, B/s.
    pub copy_dram: Measured,
    /// Internet checksum, the plain RFC 1071 loop, on an in-cache buffer, B/s.
    pub checksum_rfc1071: Measured,
    /// Internet checksum, tcplab's fast implementation, same buffer, B/s.
    pub checksum_fast: Measured,
    /// A null system call (getppid through syscall(2)), s.
    pub null_syscall: Measured,
    /// One context switch: a pipe ping-pong between two threads on one
    /// CPU, per switch, s (lmbench's lat_ctx method).
    pub context_switch: Measured,
    /// The pipe write + read itself in one thread, per pass, s: subtract it
    /// from `context_switch` for the switch alone.
    pub pipe_overhead: Measured,
    /// The switch alone, s: per repetition, `context_switch` minus
    /// `pipe_overhead` measured right after it (what lmbench's lat_ctx
    /// reports). `None` in profiles stored before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_switch_net: Option<Measured>,
    /// The CPU score: iterations per second of tcplab's fixed integer
    /// workload (see the calibrate crate), a stand-in for SPECint.
    pub cpu_score: Measured,
}
