//! What each owner's running trials use of the CPU together, as their
//! watches measure it (`server_budget`), held to the owner's budget: a
//! key's `max_cpu`, or, on a server with several keys, `--max-trial-cpu`
//! plus the `--load` workers its trials run. Each trial is also held to
//! its own budget; this is what keeps three trials of one key, each under
//! its own, from taking every CPU together (three at 1.2 CPU-s/s each took
//! both of this host's CPUs, and another key's stream fell 29%).
//!
//! When an owner's trials together are over its budget, the busiest of
//! them is ended at its next look: the one that uses most, not the one
//! that happened to look first.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One running trial's last measured use and what it adds to its owner's
/// budget.
#[derive(Debug, Clone, Copy, Default)]
struct Use {
    /// CPU-seconds per second at its last look.
    rate: f64,
    /// CPU-seconds per second the trial adds to its owner's budget (its
    /// `--load` workers, where those are not inside the budget).
    extra: f64,
}

/// Every owner's running trials' CPU use.
#[derive(Debug)]
pub struct OwnerCpu<O> {
    trials: Mutex<HashMap<O, HashMap<u64, Use>>>,
    next: AtomicU64,
}

impl<O> Default for OwnerCpu<O> {
    fn default() -> Self {
        OwnerCpu {
            trials: Mutex::default(),
            next: AtomicU64::new(0),
        }
    }
}

/// An owner's trials over their budget together, as one trial saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Over {
    /// CPU-seconds per second the owner's trials use together.
    pub sum: f64,
    /// The owner's budget (its base and its trials' extras).
    pub budget: f64,
    /// The owner's running trials.
    pub trials: usize,
    /// What the trial that saw it uses.
    pub own: f64,
}

impl<O: Hash + Eq + Clone> OwnerCpu<O> {
    /// Counts a new trial of `owner` that adds `extra` CPU-seconds per
    /// second to the owner's budget; it leaves when the meter drops.
    pub fn join(self: &Arc<Self>, owner: O, base: f64, extra: f64) -> Meter<O> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock()
            .entry(owner.clone())
            .or_default()
            .insert(id, Use { rate: 0.0, extra });
        Meter {
            cpu: self.clone(),
            owner,
            id,
            base,
        }
    }

    /// What `owner`'s running trials use together and add to its budget.
    pub fn used(&self, owner: &O) -> (f64, f64) {
        self.lock().get(owner).map_or((0.0, 0.0), |t| {
            t.values()
                .fold((0.0, 0.0), |(r, e), u| (r + u.rate, e + u.extra))
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<O, HashMap<u64, Use>>> {
        self.trials.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One running trial's place among its owner's.
#[derive(Debug)]
pub struct Meter<O: Hash + Eq + Clone> {
    cpu: Arc<OwnerCpu<O>>,
    owner: O,
    id: u64,
    /// The owner's budget before its trials' extras.
    base: f64,
}

impl<O: Hash + Eq + Clone> Meter<O> {
    /// Records that the trial uses `rate` CPU-seconds per second now; if
    /// the owner's trials together are over its budget and this one is
    /// the busiest of them (the newest, among equals), says so: it is the
    /// one to end, and from now on it no longer counts among its owner's
    /// (while its threads stop, the others' looks must not count it and
    /// end another: two of three trials over together by 0.02 CPU-s/s
    /// were both ended, 1 run in 4).
    pub fn report(&self, rate: f64) -> Option<Over> {
        let mut all = self.cpu.lock();
        let mine = all.get_mut(&self.owner)?;
        mine.get_mut(&self.id)?.rate = rate;
        let (sum, extra) = mine
            .values()
            .fold((0.0, 0.0), |(r, e), u| (r + u.rate, e + u.extra));
        let budget = self.base + extra;
        // A lone trial is held by its own budget.
        if mine.len() < 2 || sum <= budget || rate <= 0.0 {
            return None;
        }
        let busiest = mine
            .iter()
            .max_by(|a, b| a.1.rate.total_cmp(&b.1.rate).then(a.0.cmp(b.0)))
            .map(|(id, _)| *id);
        if busiest != Some(self.id) {
            return None;
        }
        let trials = mine.len();
        mine.remove(&self.id);
        Some(Over {
            sum,
            budget,
            trials,
            own: rate,
        })
    }
}

impl<O: Hash + Eq + Clone> Drop for Meter<O> {
    fn drop(&mut self) {
        let mut all = self.cpu.lock();
        if let Some(mine) = all.get_mut(&self.owner) {
            mine.remove(&self.id);
            if mine.is_empty() {
                all.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busiest_trial_of_an_owner_over_its_budget_is_the_one_ended() {
        let cpu = Arc::new(OwnerCpu::<&str>::default());
        let a = cpu.join("k", 1.0, 0.0);
        let b = cpu.join("k", 1.0, 0.0);
        let other = cpu.join("v", 1.0, 0.0);
        // Together under the budget: nothing.
        assert_eq!(a.report(0.45), None);
        assert_eq!(b.report(0.5), None);
        // Another owner's use is not this owner's.
        assert_eq!(other.report(0.9), None);
        // Over together: only the busiest is told, whichever looks.
        let over = b.report(0.7).unwrap();
        assert_eq!((over.trials, over.budget, over.own), (2, 1.0, 0.7));
        assert!((over.sum - 1.15).abs() < 1e-9);
        assert_eq!(a.report(0.6), None);
        // Told, it no longer counts while it ends, nor is told again.
        assert_eq!(cpu.used(&"k").0, 0.6);
        assert_eq!(b.report(0.7), None);
        // Once it has left, the rest fit again; a lone trial is held by
        // its own budget only.
        drop(b);
        assert_eq!(a.report(1.6), None);
        assert_eq!(cpu.used(&"k").0, 1.6);
        drop((a, other));
        assert!(cpu.lock().is_empty());
    }

    #[test]
    fn a_trials_load_workers_widen_its_owners_budget_while_it_runs() {
        let cpu = Arc::new(OwnerCpu::<&str>::default());
        let plain = cpu.join("k", 1.5, 0.0);
        let loaded = cpu.join("k", 1.5, 2.0);
        assert_eq!(plain.report(1.0), None);
        assert_eq!(loaded.report(2.4), None);
        assert_eq!(cpu.used(&"k"), (3.4, 2.0));
        drop(loaded);
        assert_eq!(plain.report(1.0), None);
        let twin = cpu.join("k", 1.5, 0.0);
        // Equal use: the newest is the one told.
        assert_eq!(plain.report(1.0), None);
        assert!(twin.report(1.0).is_some());
        assert_eq!(plain.report(0.5), None);
        assert_eq!(twin.report(1.0), None);
    }

    /// Three trials over together: the busiest is told and leaves the
    /// count, and the two left, at their old rates (the told one still
    /// stopping), are over only if they are over without it.
    #[test]
    fn a_trial_told_to_end_does_not_get_another_ended() {
        let cpu = Arc::new(OwnerCpu::<&str>::default());
        let t: Vec<_> = (0..3).map(|_| cpu.join("k", 0.5, 0.0)).collect();
        assert_eq!(t[0].report(0.2), None);
        assert_eq!(t[1].report(0.2), None);
        assert!(t[2].report(0.26).is_some());
        // 0.2 + 0.2 fit 0.5 once the third is out of the count.
        assert_eq!(t[0].report(0.2), None);
        assert_eq!(t[1].report(0.2), None);
        // Two over together without it: one of them is told.
        assert!(t[1].report(0.31).is_some());
        assert_eq!(t[0].report(0.2), None);
    }
}
