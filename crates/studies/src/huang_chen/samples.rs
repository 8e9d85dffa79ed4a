//! Counting a trial's CPU samples: a role's samples, and those whose kernel
//! stack passes through named functions (inclusive: the function and what
//! it called), for shares that say how many samples they rest on.

use record::{CpuProfile, ThreadRole};

/// A kernel function's name without the compiler's suffix (`.part.0`,
/// `.isra.0`, `.constprop.0`, `.cold`).
pub(super) fn base_name(symbol: &str) -> &str {
    symbol.split('.').next().unwrap_or(symbol)
}

/// Samples of some roles' threads in one trial, and how many of them
/// passed through the functions asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct StackCount {
    /// The roles' samples in all.
    pub total: u64,
    /// Those whose kernel stack holds one of the functions.
    pub hit: u64,
}

/// Counts the samples of `roles`' threads, and those whose kernel stack
/// holds a function of `any` and, when `also` is not empty, a function of
/// `also` too (e.g. the trie walk under an output route lookup).
pub(super) fn count_stacks(
    p: &CpuProfile,
    roles: &[ThreadRole],
    any: &[&str],
    also: &[&str],
) -> StackCount {
    let mut c = StackCount::default();
    for s in p.stacks.iter().filter(|s| !s.unsampled) {
        if !roles.contains(&p.role_of(s.tid)) {
            continue;
        }
        c.total += s.samples;
        let holds = |names: &[&str]| {
            s.kernel
                .iter()
                .any(|f| names.contains(&base_name(p.symbol(*f))))
        };
        if holds(any) && (also.is_empty() || holds(also)) {
            c.hit += s.samples;
        }
    }
    c
}

/// A role's samples in one trial.
pub(super) fn role_samples(p: &CpuProfile, role: ThreadRole) -> u64 {
    count_stacks(p, &[role], &[], &[]).total
}
