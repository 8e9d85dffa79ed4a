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
/// and a listener, with the connections waiting for their token, and
/// `max_parallel` sockets, two each with sendfile's memfd), two per pending handshake (up to twice the bound is spared for
/// proven and fresh handshakes), and [`FIXED_DESCRIPTORS`].
pub fn needed(limits: &Limits, pending: usize) -> u64 {
    let listener = 1 + crate::workloads::admission::HELD_MOST as u64;
    let per_trial = limits
        .max_client_descriptors
        .min(2 * u64::from(limits.max_parallel) + listener);
    (limits.max_clients as u64)
        .saturating_mul(per_trial + 1)
        .saturating_add(2 * pending as u64)
        .saturating_add(FIXED_DESCRIPTORS)
}

/// At most this share (1/N) of what the control connections leave goes to
/// handshakes under way, when the open-file limit is short.
pub const PENDING_SHARE: u64 = 4;

/// How an open-file limit is split between handshakes and trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// `--max-pending` as the limit allows it (handshakes hold up to twice
    /// that).
    pub pending: usize,
    /// Descriptors all trials together may hold.
    pub trials: u64,
}

/// Splits an open-file limit of `soft`: the process's own
/// ([`FIXED_DESCRIPTORS`]), every control connection (at most half of
/// what is left, when the limit is short), twice `pending` handshakes (at
/// most 1/[`PENDING_SHARE`] of the rest: the bound is lowered to fit), and
/// the trials, which get the remainder. A short limit refuses trials in
/// one line instead of failing them, or a handshake, with "Too many open
/// files".
pub fn split(limits: &Limits, pending: usize, soft: u64) -> Split {
    let left = soft.saturating_sub(FIXED_DESCRIPTORS);
    let rest = left - (limits.max_clients as u64).min(left / 2);
    let cap = (rest / PENDING_SHARE / 2).max(1);
    let pending = (pending as u64).min(cap);
    Split {
        pending: pending as usize,
        trials: rest.saturating_sub(2 * pending),
    }
}

/// This process's soft open-file limit.
pub fn soft_limit() -> u64 {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid rlimit to write into.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return 1024;
    }
    rl.rlim_cur
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
            trials: split(limits, pending, soft).trials,
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
        assert_eq!(needed(&l, 0), 1000 * 338 + 64);
        assert_eq!(needed(&Limits::default(), 1024), 32 * 338 + 2048 + 64);
    }

    #[test]
    fn a_short_limit_lowers_the_pending_bound_to_a_quarter_of_the_rest() {
        let l = Limits::default();
        // 600: 536 after the process's own, 504 after 32 control
        // connections; handshakes get 126 (63 pending, twice), trials 378.
        assert_eq!(
            split(&l, 1024, 600),
            Split {
                pending: 63,
                trials: 378
            }
        );
        // A roomy limit keeps the bound and gives trials the rest.
        assert_eq!(
            split(&l, 1024, 1 << 20),
            Split {
                pending: 1024,
                trials: (1 << 20) - 64 - 32 - 2048
            }
        );
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
