//! The stack sender's accounting read back from a trial's CPU profile
//! (`--account`, clock "tsc"): its busy and idle time, its wall time, and
//! each block's exclusive time, for the stack-side Fig. 5 and Table 6.

use crate::data::StudyData;
use record::cpu_profile::{CpuProfile, ThreadRole};
use record::TrialRecord;
use std::collections::BTreeMap;

/// The symbols' common prefix.
const PREFIX: &str = "tcplab_stack::";
/// Time the brackets themselves cost.
pub(super) const BRACKETS: &str = "accounting_brackets";
/// Busy time no bracket covered: the stack between its modules.
pub(super) const UNATTRIBUTED: &str = "unattributed";

/// How far busy plus idle may stray from the wall time, as a share of it,
/// before a trial's accounting is called impossible.
pub(super) const WALL_TOLERANCE: f64 = 0.05;

/// One accounted sender.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Accounted {
    /// Busy seconds.
    pub busy_s: f64,
    /// Idle seconds (blocked in poll).
    pub idle_s: f64,
    /// The accounting run's wall time, s.
    pub wall_s: f64,
    /// Each block's exclusive seconds, by block name (without the prefix),
    /// the brackets' cost and the unattributed time among them.
    pub blocks: BTreeMap<String, f64>,
}

impl Accounted {
    /// |busy + idle − wall| / wall.
    pub fn wall_error(&self) -> f64 {
        ((self.busy_s + self.idle_s) - self.wall_s).abs() / self.wall_s
    }

    /// Whether busy plus idle is the wall time, within [`WALL_TOLERANCE`].
    pub fn adds_up(&self) -> bool {
        self.wall_s > 0.0 && self.wall_error() <= WALL_TOLERANCE
    }

    /// Time inside modules: every block but the brackets and the
    /// unattributed time.
    pub fn in_modules_s(&self) -> f64 {
        self.blocks
            .iter()
            .filter(|(b, _)| *b != BRACKETS && *b != UNATTRIBUTED)
            .map(|(_, s)| s)
            .sum()
    }
}

/// The sender's accounting in a profile: the accounting clock ("tsc…"),
/// one thread, the sender, and its blocks. `None` for a sampled profile,
/// a receiver's, or one with both ends accounted (its busy and idle time
/// are the two ends' together, not the sender's).
pub(super) fn sender_of(p: &CpuProfile) -> Option<Accounted> {
    if !p.clock.starts_with("tsc") || p.threads.len() != 1 {
        return None;
    }
    let t = p.threads.iter().find(|t| t.role == ThreadRole::Sender)?;
    let mut blocks = BTreeMap::new();
    for s in p.stacks.iter().filter(|s| s.tid == t.tid) {
        let Some(name) = s
            .kernel
            .first()
            .or(s.user.first())
            .and_then(|&i| p.symbols.get(i as usize))
        else {
            continue;
        };
        let name = name.strip_prefix(PREFIX).unwrap_or(name);
        *blocks.entry(name.to_string()).or_insert(0.0) += s.ns as f64 * 1e-9;
    }
    Some(Accounted {
        busy_s: p.busy_s,
        idle_s: p.idle_s,
        wall_s: p.duration_s,
        blocks,
    })
}

/// The accounted senders of experiment `id`'s trials, with each trial and
/// its parameters.
pub(super) fn accounted<'a>(
    d: &'a StudyData,
    id: &str,
) -> Vec<(&'a TrialRecord, &'a record::TrialParams, Accounted)> {
    d.trials_of(id)
        .into_iter()
        .filter_map(|(t, p)| Some((t, p, sender_of(d.profiles.get(&t.id)?)?)))
        .collect()
}

/// The warnings for trials whose busy and idle do not add up to their wall
/// time: impossible, and left out.
pub(super) fn impossible(
    id: &str,
    rows: &[(&TrialRecord, &record::TrialParams, Accounted)],
) -> Vec<String> {
    rows.iter()
        .filter(|(_, _, a)| !a.adds_up())
        .map(|(t, _, a)| {
            format!(
                "Trial {} of {id}: busy {:.4} s plus idle {:.4} s is not its wall time {:.4} s \
                 (off by {:.1}%, more than {:.0}%): its accounting is impossible and left out.",
                t.id,
                a.busy_s,
                a.idle_s,
                a.wall_s,
                a.wall_error() * 100.0,
                WALL_TOLERANCE * 100.0
            )
        })
        .collect()
}

/// Test support: a profile with one accounted sender thread.
#[cfg(test)]
pub(super) fn profile(busy_s: f64, idle_s: f64, wall_s: f64, blocks: &[(&str, f64)]) -> CpuProfile {
    use record::cpu_profile::{ProfiledStack, ProfiledThread, PROFILE_VERSION};
    let symbols: Vec<String> = blocks.iter().map(|(b, _)| format!("{PREFIX}{b}")).collect();
    CpuProfile {
        version: PROFILE_VERSION,
        period_ns: 1,
        clock: "tsc".into(),
        cpus: 1,
        duration_s: wall_s,
        symbols,
        threads: vec![ProfiledThread {
            tid: 7,
            tgid: 7,
            comm: "tcplab-stack".into(),
            role: ThreadRole::Sender,
        }],
        stacks: blocks
            .iter()
            .enumerate()
            .map(|(i, (_, s))| ProfiledStack {
                tid: 7,
                unsampled: false,
                kernel: Vec::new(),
                user: vec![i as u32],
                samples: 1,
                ns: (s * 1e9) as u64,
            })
            .collect(),
        busy_s,
        idle_s,
        lost_samples: 0,
        broken_stacks: 0,
    }
}
