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

/// The line rate of the link of the place a point ran in, bit/s, when that
/// place has an emulated link with a rate (see
/// [`analysis::validity::LinkRates`]).
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

/// How far a shaper's long-run rate may stray from its set rate: within
/// 1% on the development VM (`lab::shaper`'s burst).
const SHAPER_RATE_ERROR: f64 = 0.01;

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
    /// The link's line rate, bit/s.
    pub line_rate_bps: f64,
    /// The most payload that line rate carries in full frames at the
    /// point's MSS, bit/s.
    pub payload_ceiling_bps: f64,
    /// The MSS that ceiling is for (the point's mean `snd_mss`, 1448 when
    /// not measured).
    pub mss: f64,
    /// The place's calibrated goodput, bit/s (NaN when not stored).
    pub calibrated_goodput_bps: f64,
    /// What the point lost or resent, in words, when it did (issue 30,
    /// rule 2: loss travels with throughput).
    pub loss: Option<String>,
    /// The point's params.
    pub params: TrialParams,
    /// Trials the mean is over.
    pub trials: u32,
}

impl LinkShare {
    /// The figure as evidence, each rate named as
    /// [`analysis::validity::LinkRates`] names it: "TCP reached 94.5 ± 0.2 %
    /// of the link's 10.0 Mbit/s line rate (9.45 Mbit/s; its payload ceiling
    /// at MSS 1448 is 9.41 Mbit/s; the place's calibration transfer
    /// delivered 9.39 Mbit/s; mean of 3 trials, tcp-stream 8 KB writes on
    /// ether10)".
    pub fn evidence(&self) -> String {
        let calibrated = if self.calibrated_goodput_bps.is_finite() {
            format!(
                "; the place's calibration transfer delivered {}",
                number(self.calibrated_goodput_bps, Unit::Si("bit/s"))
            )
        } else {
            String::new()
        };
        // A mean a little above the ceiling is within the shaper's own rate
        // error (lab::shaper: within 1% on the development VM); say so
        // rather than let the two numbers contradict each other silently.
        let loss = self
            .loss
            .as_ref()
            .map(|l| format!("; {l}"))
            .unwrap_or_default();
        let over = self.mean_bps / self.payload_ceiling_bps - 1.0;
        let above = if over > SHAPER_RATE_ERROR {
            format!(
                ", {:.1} % above it, more than the shaper's own rate error of about 1 % \
                 allows: a figure to doubt",
                over * 100.0
            )
        } else if over > 0.0 {
            format!(
                ", {:.1} % above it, within the shaper's own rate error of about 1 %",
                over * 100.0
            )
        } else {
            String::new()
        };
        format!(
            "TCP reached {} of the link's {} line rate ({}; its payload ceiling at MSS {:.0} \
             is {}{above}{calibrated}{loss}; mean of {} trials, {} {} writes on {})",
            measure(self.share, Some(self.share_ci), Unit::Percent),
            number(self.line_rate_bps, Unit::Si("bit/s")),
            number(self.mean_bps, Unit::Si("bit/s")),
            self.mss,
            number(self.payload_ceiling_bps, Unit::Si("bit/s")),
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
    let rates = analysis::validity::link_rates(&d.run.trials, point)?;
    let line = rates.line_rate_bps;
    let thr = point.metrics.get("throughput_bps")?;
    let mss = point
        .metrics
        .get("snd_mss")
        .map(|m| m.mean)
        .filter(|m| *m > 0.0)
        .unwrap_or(1448.0);
    Some(LinkShare {
        payload_ceiling_bps: rates.payload_ceiling_bps(mss),
        mss,
        calibrated_goodput_bps: rates.calibrated_goodput_bps,
        loss: crate::lossy::loss_words(point),
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
        point_over_ether10_at(interval_s, 9.4e6)
    }

    /// As [`point_over_ether10`], at `bps`, MSS 1448, with Ethernet's
    /// framing and the calibration goodput (9.393 Mbit/s).
    fn point_over_ether10_at(interval_s: f64, bps: f64) -> (StudyData, PointSummary) {
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
                    ("throughput_bps".to_string(), bps),
                    ("delay_s".to_string(), interval_s),
                    ("snd_mss".to_string(), 1448.0),
                ]),
                ..TrialOutcome::default()
            };
            o.details = serde_json::json!({"lab": {
                "place": {"link": {"rate_bps": 10e6, "framing_bytes": 24}},
                "calibration": {"goodput_bps": 9.393e6, "line_rate_bps": 9.977e6}
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

    /// Issue 30, rule 3: the share is of the link's set rate, with the
    /// payload ceiling and the calibration beside it, each named; a stored
    /// calibration "line rate" (derived from the calibration's goodput) is
    /// not a second definition.
    #[test]
    fn a_link_share_names_the_line_rate_the_ceiling_and_the_calibration() {
        let (d, p) = point_over_ether10_at(3.0, 9.40e6);
        let s = link_share(&d, &p).unwrap();
        assert_eq!(s.line_rate_bps, 10e6);
        assert!((s.payload_ceiling_bps - 10e6 * 1448.0 / 1538.0).abs() < 1.0);
        let e = s.evidence();
        assert!(
            e.starts_with(
                "TCP reached 94.0 ± 0 % of the link's 10.0 Mbit/s line rate (9.40 Mbit/s; \
                 its payload ceiling at MSS 1448 is 9.41 Mbit/s; the place's calibration \
                 transfer delivered 9.39 Mbit/s; mean of 3 trials"
            ),
            "{e}"
        );
        // The example: 9.45 Mbit/s is above the ceiling, and says so.
        let (d, p) = point_over_ether10_at(3.0, 9.45e6);
        let e = link_share(&d, &p).unwrap().evidence();
        assert!(
            e.contains("94.5 ± 0 % of the link's 10.0 Mbit/s line rate"),
            "{e}"
        );
        assert!(
            e.contains("is 9.41 Mbit/s, 0.4 % above it, within the shaper's own rate error"),
            "{e}"
        );
        assert!(!e.contains("retransmitted"), "{e}");
        // Beyond the shaper's error: doubted in the same sentence.
        let (d, p) = point_over_ether10_at(3.0, 9.60e6);
        let e = link_share(&d, &p).unwrap().evidence();
        assert!(
            e.contains("2.0 % above it, more than the shaper's own rate error of about 1 % allows"),
            "{e}"
        );
        // Rule 2: what the point resent travels with its share.
        let (d, mut p) = point_over_ether10_at(3.0, 9.40e6);
        p.metrics.insert(
            "retransmits".into(),
            analysis::summarize(&[5.0, 5.0, 5.0]).unwrap(),
        );
        let e = link_share(&d, &p).unwrap().evidence();
        assert!(
            e.contains(
                "transfer delivered 9.39 Mbit/s; 5.0 segments retransmitted per trial; mean of 3"
            ),
            "{e}"
        );
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
