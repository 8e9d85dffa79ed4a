//! The server's open-file limit: enough descriptors for its limits, or a
//! one-line reason why the host will not give them.
//!
//! Each client holds one control connection for its whole stay; a
//! connection turned away holds one while it is told why; each client's
//! trial holds up to `max_client_descriptors` (its data sockets, counted by
//! `trial_cost`); the process itself needs a few (the listener, standard
//! streams, `/proc` reads). Many hosts start processes with a soft limit
//! of 1024 while the hard limit allows far more: the server raises its soft
//! limit to the hard one at start, and trials together get what is left
//! after the control connections (`key_usage`), so a short limit refuses
//! trials in one line instead of failing them with "Too many open files".

use crate::limits::Limits;
use thiserror::Error;

/// Descriptors the process uses besides its clients' (listener, standard
/// streams, `/proc` and log files, a refused connection being told why).
pub const FIXED_DESCRIPTORS: u64 = 64;

/// Why the open-file limit could not be made large enough.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FdLimitError {
    /// getrlimit or setrlimit failed.
    #[error("reading or setting the open-file limit failed: {0}")]
    Syscall(String),
    /// The hard limit itself is below what the server needs.
    #[error("the open-file limit is {hard} (hard), below the {need} descriptors that --max-clients {max_clients} with a widest trial each and --max-pending {pending} handshakes need; trials will be refused past {trials} descriptors in total; raise it (ulimit -n) or lower --max-clients or --max-pending")]
    HardTooLow {
        /// The hard limit (the soft one is raised to it).
        hard: u64,
        /// Descriptors the limits need.
        need: u64,
        /// The server's `--max-clients`.
        max_clients: usize,
        /// The server's `--max-pending`.
        pending: usize,
        /// Descriptors left for all trials together.
        trials: u64,
    },
}

/// The open-file limit before and after [`ensure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdLimit {
    /// The soft limit the process started with.
    pub soft_before: u64,
    /// The soft limit now.
    pub soft: u64,
    /// The hard limit.
    pub hard: u64,
}

/// Descriptors a server with `limits` and `pending` handshakes under way
/// (`--max-pending`) may hold at once: every client's control connection
/// and its trial at its widest (the smaller of `max_client_descriptors`
/// and a listener with `max_parallel` sockets, two each with sendfile's
/// memfd), one per pending handshake, and [`FIXED_DESCRIPTORS`].
pub fn needed(limits: &Limits, pending: usize) -> u64 {
    let per_trial = limits
        .max_client_descriptors
        .min(2 * u64::from(limits.max_parallel) + 1);
    (limits.max_clients as u64)
        .saturating_mul(per_trial + 1)
        .saturating_add(pending as u64)
        .saturating_add(FIXED_DESCRIPTORS)
}

/// The descriptors trials may hold together under an open-file limit of
/// `soft`: what is left after every control connection (at most half of
/// what the process's own leave, when the limit is short) and the
/// process's own.
pub fn trial_descriptors(limits: &Limits, soft: u64) -> u64 {
    let left = soft.saturating_sub(FIXED_DESCRIPTORS);
    left - (limits.max_clients as u64).min(left / 2)
}

/// The soft limit to set, given the current soft and hard limits: the hard
/// limit (never lower than the soft one).
pub fn soft_to_set(soft: u64, hard: u64) -> u64 {
    hard.max(soft)
}

/// Raises this process's soft open-file limit to its hard limit; an error
/// (the limit is still raised) when even the hard limit is below what
/// `limits` and `pending` handshakes need.
pub fn ensure(limits: &Limits, pending: usize) -> Result<FdLimit, FdLimitError> {
    let need = needed(limits, pending);
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid rlimit to write into.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(FdLimitError::Syscall(
            std::io::Error::last_os_error().to_string(),
        ));
    }
    let soft_before = rl.rlim_cur;
    // An unlimited hard limit still stops at the kernel's fs.nr_open.
    let hard = if rl.rlim_max == libc::RLIM_INFINITY {
        kernel_ceiling()
    } else {
        rl.rlim_max
    };
    let soft = soft_to_set(soft_before, hard);
    if soft != soft_before {
        rl.rlim_cur = soft;
        // SAFETY: rl holds a soft limit no higher than the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &rl) } != 0 {
            return Err(FdLimitError::Syscall(
                std::io::Error::last_os_error().to_string(),
            ));
        }
    }
    if soft < need {
        return Err(FdLimitError::HardTooLow {
            hard,
            need,
            max_clients: limits.max_clients,
            pending,
            trials: trial_descriptors(limits, soft),
        });
    }
    Ok(FdLimit {
        soft_before,
        soft,
        hard,
    })
}

/// The kernel's most descriptors per process (`fs.nr_open`).
fn kernel_ceiling() -> u64 {
    std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(1 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_counts_every_clients_widest_trial_and_the_process() {
        let l = Limits {
            max_clients: 1000,
            ..Limits::default()
        };
        assert_eq!(needed(&l, 0), 1000 * 258 + 64);
        assert_eq!(needed(&Limits::default(), 1024), 32 * 258 + 1024 + 64);
    }

    #[test]
    fn soft_limit_rises_to_the_hard_one() {
        assert_eq!(soft_to_set(20_000, 20_000), 20_000);
        assert_eq!(soft_to_set(1024, 1_048_576), 1_048_576);
        assert_eq!(soft_to_set(1024, 1024), 1024);
    }

    #[test]
    fn ensure_raises_the_soft_limit_and_names_a_short_hard_one() {
        let got = ensure(&Limits::default(), 1024).unwrap();
        assert_eq!(got.soft, got.hard.max(got.soft_before));
        assert!(got.soft >= needed(&Limits::default(), 1024));
        // No host allows this many: the error names the flag and numbers.
        let huge = Limits {
            max_clients: usize::MAX / 2,
            ..Limits::default()
        };
        match ensure(&huge, 1024) {
            Err(FdLimitError::HardTooLow { hard, need, .. }) => {
                assert_eq!(hard, got.hard);
                assert!(need > hard);
            }
            other => panic!("expected HardTooLow, got {other:?}"),
        }
        let e = ensure(&huge, 1024).unwrap_err().to_string();
        assert!(
            e.contains("--max-clients") && e.contains("ulimit -n"),
            "{e}"
        );
    }
}
