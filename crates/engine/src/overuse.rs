//! What a key (or a keyless address) took beyond its trials' grants, carried
//! from one trial to the next. Each trial is held to its grant while it
//! runs, with a slack for its first writes and its threads' start; a client
//! that runs short trials back to back would otherwise spend that slack
//! again and again. What each trial moved beyond its grant × its time, and
//! the CPU beyond its budget × its time, is a debt of its owner that the
//! owner pays back over time ([`PAYBACK_S`] per allowance); a new trial is
//! refused, with the wait, while a debt is over its allowance.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Instant;

/// Seconds in which an owner's debt falls by one allowance: in the long
/// run an owner takes at most its allowance per this many seconds beyond
/// its grants.
pub const PAYBACK_S: f64 = 2.0;
/// Owners whose debts are kept at once (the smallest are forgotten first).
const TRACKED: usize = 4096;

/// What one trial took beyond its grant and budget, and the allowances
/// (the most an owner may owe before its next trial waits).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overuse {
    /// Bytes moved beyond the granted rate × the trial's time.
    pub bytes: f64,
    /// The bytes an owner may owe (the trial's burst allowance).
    pub bytes_allowed: f64,
    /// CPU-seconds beyond the CPU budget × the trial's time.
    pub cpu_s: f64,
    /// The CPU-seconds an owner may owe.
    pub cpu_allowed: f64,
}

#[derive(Debug, Clone, Copy)]
struct Debt {
    owed: Overuse,
    at: Instant,
}

impl Debt {
    /// The debt paid back until `now`.
    fn at(mut self, now: Instant) -> Debt {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        let o = &mut self.owed;
        o.bytes = (o.bytes - o.bytes_allowed / PAYBACK_S * dt).max(0.0);
        o.cpu_s = (o.cpu_s - o.cpu_allowed / PAYBACK_S * dt).max(0.0);
        self.at = now;
        self
    }

    fn is_paid(&self) -> bool {
        self.owed.bytes <= 0.0 && self.owed.cpu_s <= 0.0
    }
}

/// Every owner's debt, by whatever names an owner (`key_usage::Owner`).
#[derive(Debug)]
pub struct Debts<Owner> {
    owed: Mutex<HashMap<Owner, Debt>>,
}

impl<Owner> Default for Debts<Owner> {
    fn default() -> Self {
        Debts {
            owed: Mutex::new(HashMap::new()),
        }
    }
}

impl<Owner: Clone + Eq + Hash> Debts<Owner> {
    /// Adds what a trial of `owner` took beyond its grant (the allowances
    /// are the latest trial's).
    pub fn charge(&self, owner: &Owner, took: Overuse) {
        if took.bytes <= 0.0 && took.cpu_s <= 0.0 {
            return;
        }
        let now = Instant::now();
        let mut owed = self.owed.lock().unwrap_or_else(|e| e.into_inner());
        if owed.len() >= TRACKED && !owed.contains_key(owner) {
            owed.retain(|_, d| !d.at(now).is_paid());
            if owed.len() >= TRACKED {
                return;
            }
        }
        let d = owed.entry(owner.clone()).or_insert(Debt {
            owed: Overuse::default(),
            at: now,
        });
        *d = d.at(now);
        let o = &mut d.owed;
        o.bytes += took.bytes.max(0.0);
        o.cpu_s += took.cpu_s.max(0.0);
        if took.bytes_allowed > 0.0 {
            o.bytes_allowed = took.bytes_allowed;
        }
        if took.cpu_allowed > 0.0 {
            o.cpu_allowed = took.cpu_allowed;
        }
    }

    /// Why `owner` (named `who`) must wait before its next trial, if its
    /// debt is over its allowance.
    pub fn refusal(&self, owner: &Owner, who: &str) -> Option<String> {
        let now = Instant::now();
        let mut owed = self.owed.lock().unwrap_or_else(|e| e.into_inner());
        let d = owed.get_mut(owner)?;
        *d = d.at(now);
        let o = d.owed;
        let wait = |owes: f64, allowed: f64| {
            (allowed > 0.0 && owes > allowed).then(|| (owes - allowed) / (allowed / PAYBACK_S))
        };
        let (what, wait) = match (wait(o.bytes, o.bytes_allowed), wait(o.cpu_s, o.cpu_allowed)) {
            (Some(w), _) => (
                format!(
                    "{} B beyond their grants (more than the {} B allowed)",
                    o.bytes.round(),
                    o.bytes_allowed.round()
                ),
                w,
            ),
            (None, Some(w)) => (
                format!(
                    "{:.2} CPU-seconds beyond their budgets (more than the {:.2} allowed)",
                    o.cpu_s, o.cpu_allowed
                ),
                w,
            ),
            (None, None) => return None,
        };
        Some(format!(
            "{who}'s recent trials took {what}: the next may start in {:.1} s",
            wait.max(0.1)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_usage::Owner;
    use std::time::Duration;

    #[test]
    fn a_debt_over_its_allowance_waits_and_is_paid_back_in_time() {
        let d = Debts::<Owner>::default();
        let k = Owner::Key("b".into());
        let took = Overuse {
            bytes: 600.0,
            bytes_allowed: 1000.0,
            cpu_s: 0.0,
            cpu_allowed: 0.2,
        };
        // Within the allowance: no wait.
        d.charge(&k, took);
        assert_eq!(d.refusal(&k, "key \"b\""), None);
        // Twice over it: 200 B over, paid back at 500 B/s.
        d.charge(&k, took);
        let why = d.refusal(&k, "key \"b\"").unwrap();
        assert!(
            why.starts_with("key \"b\"'s recent trials took 1200 B beyond their grants (more than the 1000 B allowed): the next may start in 0.")
                || why.contains("1199 B"),
            "{why}"
        );
        // Another owner owes nothing.
        assert_eq!(d.refusal(&Owner::Key("a".into()), "key \"a\""), None);
        std::thread::sleep(Duration::from_millis(450));
        assert_eq!(d.refusal(&k, "key \"b\""), None);
        // CPU the same way.
        d.charge(
            &k,
            Overuse {
                cpu_s: 0.5,
                cpu_allowed: 0.2,
                ..Overuse::default()
            },
        );
        let why = d.refusal(&k, "key \"b\"").unwrap();
        assert!(
            why.contains("CPU-seconds beyond their budgets (more than the 0.20 allowed)"),
            "{why}"
        );
        // Nothing over: nothing charged.
        d.charge(&Owner::Key("c".into()), Overuse::default());
        assert!(d
            .owed
            .lock()
            .unwrap()
            .get(&Owner::Key("c".into()))
            .is_none());
    }
}
