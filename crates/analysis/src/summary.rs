//! Per-point summaries of a run's trials.

use crate::stats::Summary;
use record::{PointRecord, TrialParams, TrialRecord, TrialStatus};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The error text recorded for a failed trial that stored none.
pub const NO_ERROR_TEXT: &str = "(no error text)";

/// What the trials of one point of a sweep measured.
#[derive(Debug, Clone, Serialize)]
pub struct PointSummary {
    /// Database id of the point.
    pub point_id: i64,
    /// Index of the point in the plan.
    pub index: u32,
    /// The factors of the point.
    pub params: TrialParams,
    /// Number of trials that produced a measurement.
    pub trials_ok: u32,
    /// Number of trials that failed.
    pub trials_failed: u32,
    /// The distinct error texts of the failed trials, in order of first appearance.
    pub failures: Vec<String>,
    /// Summary of each metric over the Ok trials that reported a finite value
    /// for it; empty when no trial succeeded (failed trials are never zeros).
    pub metrics: BTreeMap<String, Summary>,
    /// How the point ended against the run's `--precision` target, as
    /// stored with it; `None` without a target.
    pub precision: Option<record::PrecisionOutcome>,
}

impl PointSummary {
    /// What a table shows in place of this point's values when it has none:
    /// "not run" if no trial of it ran (the run was interrupted or killed
    /// first), "failed" if every trial failed; `None` when one measured.
    pub fn unmeasured(&self) -> Option<&'static str> {
        match (self.trials_ok, self.trials_failed) {
            (0, 0) => Some("not run"),
            (0, _) => Some("failed"),
            _ => None,
        }
    }
}

/// Summarizes the trials of each point, returning one entry per point in
/// plan order (by `index`, then `id`).
///
/// Only trials with status Ok contribute to `metrics`; failed trials are
/// counted and their error texts collected. Trials whose `point_id` matches
/// no point are ignored. A metric whose values are all non-finite is left out.
pub fn summarize_points(points: &[PointRecord], trials: &[TrialRecord]) -> Vec<PointSummary> {
    let mut by_point: HashMap<i64, Vec<&TrialRecord>> = HashMap::new();
    for trial in trials {
        by_point.entry(trial.point_id).or_default().push(trial);
    }

    let mut ordered: Vec<&PointRecord> = points.iter().collect();
    ordered.sort_by_key(|p| (p.index, p.id));

    ordered
        .into_iter()
        .map(|point| {
            let own = by_point.get(&point.id).map(Vec::as_slice).unwrap_or(&[]);
            summarize_point(point, own)
        })
        .collect()
}

/// Summarizes every point of a stored run; see [`summarize_points`].
pub fn summarize_run(run: &record::StoredRun) -> Vec<PointSummary> {
    summarize_points(&run.points, &run.trials)
}

fn summarize_point(point: &PointRecord, trials: &[&TrialRecord]) -> PointSummary {
    let mut trials_ok = 0u32;
    let mut trials_failed = 0u32;
    let mut failures: Vec<String> = Vec::new();
    let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();

    for trial in trials {
        match trial.status {
            TrialStatus::Ok => {
                trials_ok += 1;
                for (name, &value) in &trial.outcome.metrics {
                    values.entry(name.as_str()).or_default().push(value);
                }
            }
            TrialStatus::Failed => {
                trials_failed += 1;
                let text = trial.error.as_deref().unwrap_or(NO_ERROR_TEXT);
                if !failures.iter().any(|f| f == text) {
                    failures.push(text.to_owned());
                }
            }
        }
    }

    let metrics = values
        .into_iter()
        .filter_map(|(name, v)| Summary::new(&v).map(|s| (name.to_owned(), s)))
        .collect();

    PointSummary {
        point_id: point.id,
        index: point.index,
        params: point.params.clone(),
        trials_ok,
        trials_failed,
        failures,
        metrics,
        precision: point.precision,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::{TestKind, TrialOutcome};

    fn point(id: i64, index: u32) -> PointRecord {
        PointRecord {
            id,
            index,
            params: TrialParams::defaults(TestKind::TcpStream),
            precision: None,
        }
    }

    fn ok(point_id: i64, metrics: &[(&str, f64)]) -> TrialRecord {
        TrialRecord {
            id: 0,
            point_id,
            seq: 0,
            repetition: 0,
            started_at: "2024-01-01T00:00:00Z".into(),
            status: TrialStatus::Ok,
            error: None,
            outcome: TrialOutcome {
                metrics: metrics.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                details: serde_json::Value::Null,
                events: None,
                profile: None,
                path_summary: None,
            },
        }
    }

    fn failed(point_id: i64, error: Option<&str>) -> TrialRecord {
        TrialRecord {
            status: TrialStatus::Failed,
            error: error.map(str::to_owned),
            ..ok(point_id, &[])
        }
    }

    #[test]
    fn groups_by_point_in_index_order() {
        let points = [point(20, 1), point(10, 0), point(30, 2)];
        let trials = [
            ok(20, &[("throughput_bps", 4.0)]),
            ok(10, &[("throughput_bps", 1.0), ("delay_s", 0.5)]),
            ok(20, &[("throughput_bps", 6.0)]),
            ok(10, &[("throughput_bps", 3.0), ("delay_s", 0.7)]),
            ok(99, &[("throughput_bps", 1e9)]), // no such point
        ];
        let s = summarize_points(&points, &trials);
        assert_eq!(
            s.iter().map(|p| (p.index, p.point_id)).collect::<Vec<_>>(),
            [(0, 10), (1, 20), (2, 30)]
        );

        assert_eq!(s[0].trials_ok, 2);
        assert_eq!(s[0].metrics["throughput_bps"].mean, 2.0);
        assert_eq!(s[0].metrics["throughput_bps"].n, 2);
        assert!((s[0].metrics["delay_s"].mean - 0.6).abs() < 1e-12);

        assert_eq!(s[1].trials_ok, 2);
        assert_eq!(s[1].metrics["throughput_bps"].mean, 5.0);
        assert!(!s[1].metrics.contains_key("delay_s"));

        // A point without trials.
        assert_eq!(s[2].trials_ok, 0);
        assert_eq!(s[2].trials_failed, 0);
        assert!(s[2].metrics.is_empty());
    }

    #[test]
    fn failed_trials_are_never_zeros() {
        let points = [point(1, 0), point(2, 1)];
        let trials = [
            ok(1, &[("throughput_bps", 10.0)]),
            failed(1, Some("connection refused")),
            ok(1, &[("throughput_bps", 20.0)]),
            failed(1, Some("timeout")),
            failed(1, Some("connection refused")),
            failed(2, Some("timeout")),
            failed(2, None),
        ];
        let s = summarize_points(&points, &trials);

        assert_eq!(s[0].trials_ok, 2);
        assert_eq!(s[0].trials_failed, 3);
        assert_eq!(s[0].failures, ["connection refused", "timeout"]);
        assert_eq!(s[0].metrics["throughput_bps"].n, 2);
        assert_eq!(s[0].metrics["throughput_bps"].mean, 15.0);

        assert_eq!(s[1].trials_ok, 0);
        assert_eq!(s[1].trials_failed, 2);
        assert_eq!(s[1].failures, ["timeout", NO_ERROR_TEXT]);
        assert!(s[1].metrics.is_empty());
        assert_eq!(
            (s[0].unmeasured(), s[1].unmeasured()),
            (None, Some("failed"))
        );
    }

    #[test]
    fn a_point_no_trial_of_which_ran_is_not_run_not_failed() {
        let points = [point(1, 0), point(2, 1)];
        let trials = [failed(1, Some("timeout"))];
        let s = summarize_points(&points, &trials);
        assert_eq!(s[1].trials_ok + s[1].trials_failed, 0);
        assert_eq!(s[1].unmeasured(), Some("not run"));
        assert_eq!(s[0].unmeasured(), Some("failed"));
    }

    #[test]
    fn non_finite_metrics_are_dropped() {
        let points = [point(1, 0)];
        let trials = [
            ok(1, &[("a", f64::NAN), ("b", 1.0)]),
            ok(1, &[("a", f64::INFINITY), ("b", 3.0)]),
        ];
        let s = summarize_points(&points, &trials);
        assert!(!s[0].metrics.contains_key("a"));
        assert_eq!(s[0].metrics["b"].mean, 2.0);
    }

    #[test]
    fn serializes_with_nulls_for_single_trials() {
        let points = [point(1, 0)];
        let trials = [ok(1, &[("throughput_bps", 5.0)])];
        let s = summarize_points(&points, &trials);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(
            json[0]["metrics"]["throughput_bps"]["ci95"],
            serde_json::Value::Null
        );
        assert_eq!(json[0]["metrics"]["throughput_bps"]["mean"], 5.0);
        assert_eq!(json[0]["params"]["test"], "tcp-stream");
        assert_eq!(json[0]["trials_ok"], 1);
    }

    #[test]
    fn summarize_run_uses_points_and_trials() {
        let run = record::StoredRun {
            meta: record::RunMeta {
                id: 1,
                kind: "tcp-stream".into(),
                command: "tcplab tcp-stream".into(),
                seed: 7,
                place: "loopback".into(),
                started_at: "2024-01-01T00:00:00Z".into(),
                finished_at: None,
                status: record::RunStatus::Completed,
                host: record::HostFacts::default(),
                settings: serde_json::Value::Null,
                tool_version: "0.1.0".into(),
            },
            points: vec![point(2, 1), point(1, 0)],
            trials: vec![
                ok(1, &[("x", 1.0)]),
                ok(2, &[("x", 2.0)]),
                ok(1, &[("x", 3.0)]),
            ],
        };
        let s = summarize_run(&run);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].point_id, 1);
        assert_eq!(s[0].metrics["x"].mean, 2.0);
        assert_eq!(s[1].metrics["x"].n, 1);
    }
}
