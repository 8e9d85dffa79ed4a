//! What can go wrong with probes, in words a user can act on.

/// A probe session could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The kernel or the process lacks something the probes need.
    #[error("{0}")]
    Unsupported(String),
    /// `--probe` named something that is not a probe group.
    #[error("unknown probe group {0:?} (expected queues, tcp, sched, cpu or all)")]
    UnknownGroup(String),
    /// `--probe-depth` named something that is not a depth.
    #[error("unknown probe depth {0:?} (expected full, filter or empty)")]
    UnknownDepth(String),
    /// libbpf failed to open, load or attach the programs.
    #[error("{what}: {detail}")]
    Bpf {
        /// The step that failed.
        what: &'static str,
        /// libbpf's message.
        detail: String,
    },
    /// The probe thread died.
    #[error("probe thread failed: {0}")]
    Thread(String),
}

impl ProbeError {
    /// Wraps a libbpf error, turning the common causes into explanations.
    pub(crate) fn bpf(what: &'static str, e: libbpf_rs::Error) -> ProbeError {
        let detail = format!("{e:#}");
        let lower = detail.to_lowercase();
        // EPERM is a missing privilege; EACCES ("permission denied") is the
        // verifier refusing a program, which is a bug to report, not a
        // privilege to grant.
        if lower.contains("operation not permitted") {
            return ProbeError::Unsupported(format!(
                "{what}: not permitted; probes need root (or CAP_BPF and CAP_PERFMON)"
            ));
        }
        ProbeError::Bpf { what, detail }
    }
}
