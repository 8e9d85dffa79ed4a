//! Which measured points a study's report may show as data: the rules
//! live in [`analysis::validity`] (above the line rate, too few datagrams,
//! too short an interval over an emulated link, too few datagrams for a
//! loss rate), shared with the run report, `tcplab compare` and the
//! terminal table; here they are applied to a study's experiments, and the
//! link share its sections and verdict print is computed from the valid
//! points.

use crate::data::StudyData;
use analysis::findings::{size_words, CurvePoint};
pub use analysis::validity::{
    above_line_rate, too_few_datagrams, too_few_for_loss, too_short_interval, Invalid,
    MIN_DATAGRAMS_FOR_LOSS, MIN_DATAGRAMS_FOR_RATE, MIN_RATE_INTERVAL_S,
};
use analysis::PointSummary;
use record::{TestKind, TrialParams};
use report::{measure, number, Unit};

/// The calibrated line rate of the place a point ran in, bit/s, when that
/// place has an emulated link (see [`analysis::validity::line_rate_bps`]).
pub fn line_rate_bps(d: &StudyData, point: &PointSummary) -> Option<f64> {
    analysis::validity::line_rate_bps(&d.run.trials, point)
}

/// Whether a point's `throughput_bps` may be shown, with the line rate of
/// its place in the study's run (see
/// [`analysis::validity::throughput_validity`]).
pub fn throughput_validity(d: &StudyData, point: &PointSummary) -> Result<(), Invalid> {
    analysis::validity::throughput_validity(point, line_rate_bps(d, point))
}

/// A curve of an experiment's points with only the valid ones (see
/// [`throughput_validity`]), and the left-out points' params with their
/// reasons. Arguments as [`StudyData::curve`].
pub fn valid_curve(
    d: &StudyData,
    id: &str,
    metric: &str,
    scale: f64,
    x: impl Fn(&TrialParams) -> Option<f64>,
    keep: impl Fn(&TrialParams) -> bool,
) -> (Vec<CurvePoint>, Vec<(TrialParams, Invalid)>) {
    let invalid: Vec<(TrialParams, Invalid)> = d
        .points_of(id)
        .into_iter()
        .filter(|p| keep(&p.params))
        .filter_map(|p| {
            throughput_validity(d, p)
                .err()
                .map(|e| (p.params.clone(), e))
        })
        .collect();
    let curve = d.curve(id, metric, scale, x, |p| {
        keep(p) && !invalid.iter().any(|(q, _)| q == p)
    });
    (curve, invalid)
}

/// The share of its place's line rate a TCP point reached: the figure both
/// a study's section and the verdict print.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkShare {
    /// Mean throughput over line rate.
    pub share: f64,
    /// The 95% CI half-width of that share (0 for a single trial).
    pub share_ci: f64,
    /// Mean throughput, bit/s.
    pub mean_bps: f64,
    /// The place's calibrated line rate, bit/s.
    pub line_rate_bps: f64,
    /// The point's params.
    pub params: TrialParams,
    /// Trials the mean is over.
    pub trials: u32,
}

impl LinkShare {
    /// The figure as evidence: "TCP reached 96.6 ± 0.2 % of the 10.0 Mbit/s
    /// line rate (mean of 3 trials, tcp-stream 8 KB writes on ether10)".
    pub fn evidence(&self) -> String {
        format!(
            "TCP reached {} of the {} line rate (mean of {} trials, {} {} writes on {})",
            measure(self.share, Some(self.share_ci), Unit::Percent),
            number(self.line_rate_bps, Unit::Si("bit/s")),
            self.trials,
            self.params.test.name(),
            size_words(self.params.write_size as f64),
            self.params.topology.name()
        )
    }
}

/// The link share of one point: a TCP stream on a place with an emulated
/// link whose throughput is valid; `None` otherwise.
pub fn link_share(d: &StudyData, point: &PointSummary) -> Option<LinkShare> {
    if point.params.test != TestKind::TcpStream || throughput_validity(d, point).is_err() {
        return None;
    }
    let line = line_rate_bps(d, point)?;
    let thr = point.metrics.get("throughput_bps")?;
    Some(LinkShare {
        share: thr.mean / line,
        share_ci: if thr.ci95.is_finite() {
            thr.ci95 / line
        } else {
            0.0
        },
        mean_bps: thr.mean,
        line_rate_bps: line,
        params: point.params.clone(),
        trials: thr.n,
    })
}

/// The link share the data support best over the points of the given
/// experiments: of the valid TCP points (a mean above the line rate is
/// invalid, see [`throughput_validity`]), the one with the highest lower
/// end of its CI (share − CI), so that a short, noisy transfer whose mean
/// is high but whose interval is wide does not outrank a long one measured
/// precisely.
pub fn best_link_share<'a>(
    d: &StudyData,
    experiments: impl IntoIterator<Item = &'a str>,
) -> Option<LinkShare> {
    experiments
        .into_iter()
        .flat_map(|id| d.points_of(id))
        .filter_map(|p| link_share(d, p))
        .max_by(|a, b| (a.share - a.share_ci).total_cmp(&(b.share - b.share_ci)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A study run of one tcp-stream point on ether10 (line rate 10 Mbit/s)
    /// whose three trials ran at 9.4 Mbit/s, each from first byte to last
    /// in `interval_s`.
    fn point_over_ether10(interval_s: f64) -> (StudyData, PointSummary) {
        use crate::data::{ExperimentRecord, StudySettings};
        use crate::fixtures::{ok_trial, stored_study_run};
        use record::{PointRecord, TrialOutcome};
        use std::collections::BTreeMap;
        let mut params = TrialParams::defaults(TestKind::TcpStream);
        params.topology = "ether10".into();
        let mut trials = Vec::new();
        for k in 0..3 {
            let mut o = TrialOutcome {
                metrics: BTreeMap::from([
                    ("throughput_bps".to_string(), 9.4e6),
                    ("delay_s".to_string(), interval_s),
                ]),
                ..TrialOutcome::default()
            };
            o.details = serde_json::json!({"lab": {
                "calibration": {"line_rate_bps": 10e6},
                "place": {"link": "ether10"}
            }});
            trials.push(ok_trial(&trials, 1, k, o));
        }
        let settings = StudySettings {
            study: "abrams91".into(),
            quick: true,
            experiments: vec![ExperimentRecord {
                id: "x".into(),
                title: "x".into(),
                command: String::new(),
                first_point: 0,
                points: 1,
            }],
            skipped: Vec::new(),
        };
        let point = PointRecord {
            id: 1,
            index: 0,
            params,
            precision: None,
        };
        let run = stored_study_run(settings, "ether10", vec![point], trials);
        let summaries = analysis::summarize_run(&run);
        let p = summaries[0].clone();
        let d = StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap();
        (d, p)
    }

    #[test]
    fn a_short_transfer_over_a_link_is_not_a_rate() {
        let (d, p) = point_over_ether10(0.002);
        assert_eq!(
            throughput_validity(&d, &p),
            Err(Invalid::TooShortInterval { interval_s: 0.002 })
        );
        let (d, p) = point_over_ether10(0.2);
        assert_eq!(throughput_validity(&d, &p), Ok(()));
    }
}
