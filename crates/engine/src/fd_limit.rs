//! The server's open-file limit: enough descriptors for its limits, or a
//! one-line reason why the host will not give them.
//!
//! Each client holds one control connection for its whole stay; a
//! connection turned away holds one while it is told why; one client's
//! trial holds its data listener and up to `max_parallel` connections; the
//! process itself needs a few (the listener, standard streams, `/proc`
//! reads). Many hosts start processes with a soft limit of 1024, below what
//! `--max-clients 1000` needs, while the hard limit allows far more: the
//! server raises its soft limit to the hard one when it would run short.

use crate::limits::Limits;
use thiserror::Error;

/// Descriptors the process uses besides its clients' (listener, standard
/// streams, `/proc` and log files, a refused connection being told why).
const FIXED_DESCRIPTORS: u64 = 64;

/// Why the open-file limit could not be made large enough.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FdLimitError {
    /// getrlimit or setrlimit failed.
    #[error("reading or setting the open-file limit failed: {0}")]
    Syscall(String),
    /// The hard limit itself is below what the server needs.
    #[error("the open-file limit is {hard} (hard), below the {need} descriptors that --max-clients {max_clients} needs; raise it (ulimit -n) or lower --max-clients")]
    HardTooLow {
        /// The hard limit (the soft one is raised to it).
        hard: u64,
        /// Descriptors the limits need.
        need: u64,
        /// The server's `--max-clients`.
        max_clients: usize,
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

/// Descriptors a server with `limits` may hold at once: every client's
/// control connection, one client's trial at its widest (a listener and
/// `max_parallel` connections), and [`FIXED_DESCRIPTORS`].
pub fn needed(limits: &Limits) -> u64 {
    (limits.max_clients as u64)
        .saturating_add(u64::from(limits.max_parallel) + 1)
        .saturating_add(FIXED_DESCRIPTORS)
}

/// The soft limit to set, given the current soft and hard limits and the
/// need: unchanged when it suffices, else the hard limit.
pub fn soft_to_set(soft: u64, hard: u64, need: u64) -> u64 {
    if soft >= need {
        soft
    } else {
        hard.max(soft)
    }
}

/// Raises this process's soft open-file limit to its hard limit when it is
/// below what `limits` need; an error (the limit is still raised as far as
/// it goes) when even the hard limit is too low.
pub fn ensure(limits: &Limits) -> Result<FdLimit, FdLimitError> {
    let need = needed(limits);
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
    let soft = soft_to_set(soft_before, hard, need);
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
    fn need_counts_clients_one_wide_trial_and_the_process() {
        let l = Limits {
            max_clients: 1000,
            ..Limits::default()
        };
        assert_eq!(needed(&l), 1000 + 129 + 64);
        assert_eq!(needed(&Limits::default()), 32 + 129 + 64);
    }

    #[test]
    fn soft_limit_rises_to_the_hard_one_only_when_short() {
        assert_eq!(soft_to_set(20_000, 20_000, 1193), 20_000);
        assert_eq!(soft_to_set(1024, 1_048_576, 1193), 1_048_576);
        assert_eq!(soft_to_set(1024, 1024, 1193), 1024);
        assert_eq!(soft_to_set(1024, 1024, 100), 1024);
    }

    #[test]
    fn ensure_leaves_a_sufficient_limit_alone_and_names_a_short_one() {
        // This process's limit suffices for the default server (tests run
        // with at least 1024), so ensure changes nothing.
        let got = ensure(&Limits::default()).unwrap();
        assert_eq!(got.soft, got.soft_before);
        assert!(got.soft >= needed(&Limits::default()));
        // No host allows this many: the error names the flag and numbers,
        // and the soft limit has gone to the hard one.
        let huge = Limits {
            max_clients: usize::MAX / 2,
            ..Limits::default()
        };
        match ensure(&huge) {
            Err(FdLimitError::HardTooLow { hard, need, .. }) => {
                assert_eq!(hard, got.hard);
                assert!(need > hard);
            }
            other => panic!("expected HardTooLow, got {other:?}"),
        }
        let after = ensure(&Limits::default()).unwrap();
        assert_eq!(after.soft, got.hard);
        let e = ensure(&huge).unwrap_err().to_string();
        assert!(
            e.contains("--max-clients") && e.contains("ulimit -n"),
            "{e}"
        );
    }
}
