//! The trial schedule: rounds over the sweep's points, each round in a fresh
//! random order drawn from a recorded seed, until every point has its
//! repetitions or meets its precision target.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A confidence-interval target (netperf's -I, on the half-width).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// Confidence level, e.g. 0.95.
    pub confidence: f64,
    /// Target half-width relative to the mean, e.g. 0.05.
    pub rel_half_width: f64,
}

/// When a point has had enough trials.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Successful trials every point gets (`--repeat`).
    pub repeat: u32,
    /// Precision target, if any (`--precision`).
    pub precision: Option<Precision>,
    /// Most attempts per point when chasing precision (`--max-repeat`).
    pub max_repeat: u32,
}

impl StopRule {
    /// True if a point with these successful values of its primary metric
    /// after `attempts` attempts needs another trial.
    pub fn needs_more(
        &self,
        ok_values: &[f64],
        attempts: u32,
        precise: impl Fn(&[f64], f64, f64) -> bool,
    ) -> bool {
        match self.precision {
            None => attempts < self.repeat,
            Some(pr) => {
                if attempts >= self.max_repeat {
                    return false;
                }
                (ok_values.len() as u32) < self.repeat.max(2)
                    || !precise(ok_values, pr.confidence, pr.rel_half_width)
            }
        }
    }
}

/// Draws each round's order from a seeded generator.
#[derive(Debug, Clone)]
pub struct Scheduler {
    seed: u64,
    rng: ChaCha8Rng,
}

impl Scheduler {
    /// A scheduler whose orders are fixed by `seed`.
    pub fn new(seed: u64) -> Scheduler {
        Scheduler {
            seed,
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// The seed, for the record.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The points of the next round in random order.
    pub fn order(&mut self, mut pending: Vec<usize>) -> Vec<usize> {
        pending.shuffle(&mut self.rng);
        pending
    }
}

/// A random seed from the operating system.
pub fn fresh_seed() -> u64 {
    rand::random()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_order_and_orders_differ() {
        let mut a = Scheduler::new(42);
        let mut b = Scheduler::new(42);
        let r1 = a.order((0..20).collect());
        assert_eq!(r1, b.order((0..20).collect()));
        assert_ne!(r1, (0..20).collect::<Vec<_>>());
        let r2 = a.order((0..20).collect());
        assert_ne!(r1, r2);
        let mut sorted = r2.clone();
        sorted.sort();
        assert_eq!(sorted, (0..20).collect::<Vec<_>>());
    }

    #[test]
    fn stop_rule() {
        let fixed = StopRule {
            repeat: 3,
            precision: None,
            max_repeat: 30,
        };
        let never = |_: &[f64], _: f64, _: f64| false;
        let always = |_: &[f64], _: f64, _: f64| true;
        assert!(fixed.needs_more(&[1.0, 1.0], 2, never));
        assert!(!fixed.needs_more(&[1.0, 1.0, 1.0], 3, never));
        let pr = StopRule {
            repeat: 3,
            precision: Some(Precision {
                confidence: 0.95,
                rel_half_width: 0.05,
            }),
            max_repeat: 10,
        };
        assert!(pr.needs_more(&[1.0, 1.0], 2, always));
        assert!(!pr.needs_more(&[1.0, 1.0, 1.0], 3, always));
        assert!(pr.needs_more(&[1.0, 1.0, 1.0], 3, never));
        assert!(!pr.needs_more(&[1.0; 10], 10, never));
    }
}
