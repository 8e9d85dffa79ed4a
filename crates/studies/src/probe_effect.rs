//! What observing cost, experiment by experiment (issue 30, rule 1): a
//! probed experiment's figures carry its probes' cost, which its unprobed
//! twin (the same sweep without `--probe`) measures. Each probed
//! experiment's effect is its primary metric (throughput or transaction
//! rate) probed over unprobed, point by point; findings that use probed
//! trials name it, and the report lists it for every probed experiment.

use crate::data::StudyData;
use crate::spec::UNPROBED_PREFIX;
use report::{measure, Section, Table, Unit};

/// One probed experiment's cost of observation.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeEffect {
    /// The probed experiment's id.
    pub id: String,
    /// The metric compared (`throughput_bps`, `transactions_per_s`).
    pub metric: &'static str,
    /// Per point, the probed mean over the unprobed mean, in point order.
    pub ratios: Vec<f64>,
    /// Per point, (probed mean, its CI, unprobed mean, its CI).
    pub means: Vec<(f64, f64, f64, f64)>,
}

impl ProbeEffect {
    /// The smallest and largest ratio over the points.
    pub fn range(&self) -> (f64, f64) {
        let lo = self.ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self
            .ratios
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }

    /// "the probes ran it at 0.50× its unprobed twin's throughput (9.10
    /// against 18.2 Gbit/s)" for one point; "at 0.48–0.93× its unprobed
    /// twin's throughput over 4 points" for several.
    pub fn words(&self) -> String {
        let what = match self.metric {
            "transactions_per_s" => "transaction rate",
            _ => "throughput",
        };
        let unit = match self.metric {
            "transactions_per_s" => Unit::Fixed("/s"),
            _ => Unit::Si("bit/s"),
        };
        let (lo, hi) = self.range();
        if self.ratios.len() == 1 {
            let (p, pc, u, uc) = self.means[0];
            let ci = |c: f64| c.is_finite().then_some(c);
            format!(
                "the probes ran {} at {lo:.2}× its unprobed twin's {what} ({} against {})",
                self.id,
                measure(p, ci(pc), unit),
                measure(u, ci(uc), unit)
            )
        } else {
            format!(
                "the probes ran {} at {lo:.2}–{hi:.2}× its unprobed twin's {what} over {} points",
                self.id,
                self.ratios.len()
            )
        }
    }
}

impl StudyData {
    /// The probe effect of experiment `id`: `None` when it has no unprobed
    /// twin in this run, or no point both measured.
    pub fn probe_effect(&self, id: &str) -> Option<ProbeEffect> {
        let probed = self.points_of(id);
        let twin = self.points_of(&format!("{UNPROBED_PREFIX}{id}"));
        let metric = probed.first()?.params.test.primary_metric();
        let mut ratios = Vec::new();
        let mut means = Vec::new();
        // The twin is the same sweep: its points come in the same order.
        for (p, u) in probed.iter().zip(&twin) {
            let (Some(a), Some(b)) = (p.metrics.get(metric), u.metrics.get(metric)) else {
                continue;
            };
            let r = a.mean / b.mean;
            if r.is_finite() {
                ratios.push(r);
                means.push((a.mean, a.ci95, b.mean, b.ci95));
            }
        }
        (!ratios.is_empty()).then(|| ProbeEffect {
            id: id.to_string(),
            metric,
            ratios,
            means,
        })
    }

    /// Every probed experiment's effect, in the run's order.
    pub fn probe_effects(&self) -> Vec<ProbeEffect> {
        self.settings
            .experiments
            .iter()
            .filter(|e| !e.id.starts_with(UNPROBED_PREFIX))
            .filter_map(|e| self.probe_effect(&e.id))
            .collect()
    }
}

/// The sentence a finding from probed trials of experiment `id` carries
/// (issue 30, rule 1): that its figures include what observing cost, and
/// how much its twin says that was, or that no twin measured it.
pub fn cost_sentence(d: &StudyData, id: &str) -> String {
    match d.probe_effect(id) {
        Some(e) => format!(
            "These figures come from probed trials and carry what probing cost: {}.",
            e.words()
        ),
        None => format!(
            "These figures come from probed trials and carry what probing cost, which no \
             unprobed twin of {id} measured in this run."
        ),
    }
}

/// The section listing each probed experiment's effect, so that every
/// figure from a probed trial can be read with what observing it cost;
/// `None` when the run has no probed experiment with a twin.
pub fn probe_effect_section(d: &StudyData) -> Option<Section> {
    let effects = d.probe_effects();
    if effects.is_empty() {
        return None;
    }
    let mut s = Section::new("Probe effect, experiment by experiment");
    let mut t = Table::new(["probed experiment", "metric", "points", "probed / unprobed"])
        .with_caption(
            "Each probed experiment's primary metric over its unprobed twin's (the same sweep \
         without --probe, run beside it), point by point: what every figure from its probed \
         trials carries",
        );
    for e in &effects {
        let (lo, hi) = e.range();
        t.row([
            e.id.clone(),
            e.metric.to_string(),
            e.ratios.len().to_string(),
            if e.ratios.len() == 1 {
                format!("{lo:.2}×")
            } else {
                format!("{lo:.2}–{hi:.2}×")
            },
        ]);
    }
    s.push(t);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::twin_run as run;

    #[test]
    fn a_probed_experiments_cost_is_measured_against_its_twin() {
        let d = run(&[9.1e9], Some(&[18.2e9]));
        let e = d.probe_effect("blocks").unwrap();
        assert_eq!(e.ratios.len(), 1);
        assert!((e.ratios[0] - 0.5).abs() < 1e-9);
        assert!(
            e.words().starts_with(
                "the probes ran blocks at 0.50× its unprobed twin's throughput (9.10 ± 0.23 \
                 Gbit/s against 18.2 ± 0.5 Gbit/s)"
            ),
            "{}",
            e.words()
        );
        // Several points: the range.
        let d = run(&[9e9, 9.3e9], Some(&[10e9, 10e9]));
        let e = d.probe_effect("blocks").unwrap();
        assert_eq!(
            e.words(),
            "the probes ran blocks at 0.90–0.93× its unprobed twin's throughput over 2 points"
        );
        let s = probe_effect_section(&d).unwrap();
        let t = s
            .blocks
            .iter()
            .find_map(|b| match b {
                report::Block::Table(t) => Some(t),
                _ => None,
            })
            .unwrap();
        assert_eq!(t.rows[0], ["blocks", "throughput_bps", "2", "0.90–0.93×"]);
        assert_eq!(
            cost_sentence(&d, "blocks"),
            "These figures come from probed trials and carry what probing cost: the probes ran \
             blocks at 0.90–0.93× its unprobed twin's throughput over 2 points."
        );
        // No twin: no effect, and no section.
        let d = run(&[9e9], None);
        assert_eq!(d.probe_effect("blocks"), None);
        assert!(probe_effect_section(&d).is_none());
        assert!(cost_sentence(&d, "blocks")
            .ends_with("which no unprobed twin of blocks measured in this run."));
    }
}
