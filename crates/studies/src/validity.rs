//! Which measured points a report may show as data. A point whose
//! throughput exceeds its place's calibrated line rate by more than its
//! confidence interval is impossible (the link cannot carry more than its
//! rate), and a UDP receive rate computed from a handful of datagrams says
//! more about the first datagram's timing than about the path: both are
//! flagged with their reason and kept out of curves, findings and the
//! verdict. So is a rate over a shaped link measured across too short an
//! interval: a token bucket lets its burst through at the host's speed, and
//! a late emulator wake-up delivers the frames that were due at once, so
//! over a few milliseconds the receiver sees more than the line rate.
//!
//! The line rate is the one the run stored with each trial, in the trial's
//! `details.lab.calibration.line_rate_bps` (measured by `tcplab` when it
//! set the place up); it is a physical cap only on a place with an
//! emulated link (`details.lab.place.link` set), so only there is a point
//! checked against it.

use crate::data::StudyData;
use analysis::findings::{size_words, CurvePoint};
use analysis::PointSummary;
use record::{TestKind, TrialParams, TrialStatus};
use report::{measure, Unit};

/// The fewest received datagrams a UDP receive rate is computed from. The
/// rate is the bytes received over the time from the first datagram to the
/// last: the first datagram's bytes are counted but not its time on the
/// wire, so n datagrams overstate the rate by about 1/(n − 1); from 100
/// datagrams on that error is about 1% or less.
pub const MIN_DATAGRAMS_FOR_RATE: f64 = 100.0;

/// The fewest datagrams sent (mean per trial) a UDP loss rate is given
/// for: below 100 one lost datagram moves the rate by more than 1%, and a
/// few datagrams that fit in the queues say nothing of the path.
pub const MIN_DATAGRAMS_FOR_LOSS: f64 = 100.0;

/// Whether a UDP loss rate rests on too few datagrams sent (fewer than
/// [`MIN_DATAGRAMS_FOR_LOSS`] per trial) to be given.
pub fn too_few_for_loss(sent: f64) -> bool {
    sent.is_nan() || sent < MIN_DATAGRAMS_FOR_LOSS
}

/// The shortest first-to-last interval, s, a rate over an emulated link is
/// computed from. The kernel's token buckets hold 1 ms at the rate, and the
/// emulator's wake-ups come up to about a millisecond late on a loaded
/// virtual machine; over 20 ms either moves a rate by at most about 5%,
/// less than the headers and framing that separate TCP's goodput from the
/// line rate (6% at a 1448-byte MSS). Over a 2 ms transfer (256 KB at
/// 1 Gbit/s) the bucket alone doubled the rate: 2.2 Gbit/s through lan1g.
pub const MIN_RATE_INTERVAL_S: f64 = 0.02;

/// Whether a rate's first-to-last interval (mean per trial, s) is too short
/// ([`MIN_RATE_INTERVAL_S`]) for a rate over an emulated link.
pub fn too_short_interval(interval_s: f64) -> bool {
    interval_s.is_nan() || interval_s < MIN_RATE_INTERVAL_S
}

/// Whether a mean throughput (with its 95% CI half-width) exceeds the line
/// rate by more than its CI, i.e. is impossible on that link. A CI that is
/// not finite (a single trial) counts as zero.
pub fn above_line_rate(mean_bps: f64, ci_bps: f64, line_rate_bps: f64) -> bool {
    let ci = if ci_bps.is_finite() { ci_bps } else { 0.0 };
    line_rate_bps > 0.0 && mean_bps - ci > line_rate_bps
}

/// Whether a UDP receive rate rests on too few received datagrams (fewer
/// than [`MIN_DATAGRAMS_FOR_RATE`]) to be given as a rate.
pub fn too_few_datagrams(received: f64) -> bool {
    received.is_nan() || received < MIN_DATAGRAMS_FOR_RATE
}

/// Why a point's throughput is not shown as data.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// The mean exceeds the place's calibrated line rate by more than its
    /// CI.
    AboveLineRate {
        /// Mean throughput, bit/s.
        mean_bps: f64,
        /// Its 95% CI half-width, bit/s.
        ci_bps: f64,
        /// The place's calibrated line rate, bit/s.
        line_rate_bps: f64,
    },
    /// A UDP receive rate from fewer than [`MIN_DATAGRAMS_FOR_RATE`]
    /// datagrams received (mean per trial).
    TooFewDatagrams {
        /// Datagrams received, mean per trial.
        received: f64,
    },
    /// A rate over an emulated link from a first-to-last interval shorter
    /// than [`MIN_RATE_INTERVAL_S`] (mean per trial).
    TooShortInterval {
        /// The interval, s.
        interval_s: f64,
    },
}

impl Invalid {
    /// The reason, in words, for a report.
    pub fn reason(&self) -> String {
        match self {
            Invalid::AboveLineRate {
                mean_bps,
                ci_bps,
                line_rate_bps,
            } => format!(
                "invalid: {:.1} ± {:.1} Mbit/s exceeds the place's calibrated line rate of {:.1} Mbit/s \
                 by more than its CI",
                mean_bps / 1e6,
                if ci_bps.is_finite() { *ci_bps } else { 0.0 } / 1e6,
                line_rate_bps / 1e6
            ),
            Invalid::TooFewDatagrams { received } => format!(
                "n/a: the receive rate would rest on {received:.0} datagrams received per trial, \
                 fewer than the {MIN_DATAGRAMS_FOR_RATE:.0} a rate needs"
            ),
            Invalid::TooShortInterval { interval_s } => format!(
                "n/a: the rate would rest on {:.1} ms from first byte to last, shorter than the \
                 {:.0} ms a rate over a shaped link needs (its bucket and timers let a short \
                 transfer through faster than the line rate)",
                interval_s * 1e3,
                MIN_RATE_INTERVAL_S * 1e3
            ),
        }
    }
}

/// The calibrated line rate of the place a point ran in, bit/s, when that
/// place has an emulated link (read from the point's first successful
/// trial: all trials of a point share their place).
pub fn line_rate_bps(d: &StudyData, point: &PointSummary) -> Option<f64> {
    let t = d
        .run
        .trials
        .iter()
        .find(|t| t.point_id == point.point_id && t.status == TrialStatus::Ok)?;
    let lab = &t.outcome.details["lab"];
    if lab["place"]["link"].is_null() {
        return None;
    }
    lab["calibration"]["line_rate_bps"]
        .as_f64()
        .filter(|l| *l > 0.0)
}

/// Whether a point's `throughput_bps` may be shown: `Err` with the reason
/// when it exceeds its place's line rate beyond CI, when it was measured
/// over an emulated link across too short an interval, or when it is a UDP
/// receive rate from too few datagrams. A point without the metric is
/// `Ok` (there is nothing to show).
pub fn throughput_validity(d: &StudyData, point: &PointSummary) -> Result<(), Invalid> {
    if let (Some(thr), Some(line)) = (point.metrics.get("throughput_bps"), line_rate_bps(d, point))
    {
        if let Some(interval) = point.metrics.get("delay_s") {
            if too_short_interval(interval.mean) {
                return Err(Invalid::TooShortInterval {
                    interval_s: interval.mean,
                });
            }
        }
        if above_line_rate(thr.mean, thr.ci95, line) {
            return Err(Invalid::AboveLineRate {
                mean_bps: thr.mean,
                ci_bps: thr.ci95,
                line_rate_bps: line,
            });
        }
    }
    if point.params.test == TestKind::UdpStream {
        let received = point
            .metrics
            .get("datagrams_received")
            .map_or(0.0, |s| s.mean);
        if too_few_datagrams(received) {
            return Err(Invalid::TooFewDatagrams { received });
        }
    }
    Ok(())
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
    /// Points of the same search whose mean exceeded their line rate,
    /// though within CI: a share above 100% says nothing of how close the
    /// link came to its rate, so they are not counted (only when this is
    /// the best of several, see [`best_link_share`]).
    pub not_counted: usize,
}

impl LinkShare {
    /// The figure as evidence: "TCP reached 96.6 ± 0.2 % of the 10.0 Mbit/s
    /// line rate (mean of 3 trials, tcp-stream 8 KB writes on ether10)".
    pub fn evidence(&self) -> String {
        let not_counted = match self.not_counted {
            0 => String::new(),
            1 => "; 1 point whose mean exceeded its line rate within CI is not counted".into(),
            n => format!(
                "; {n} points whose means exceeded their line rate within CI are not counted"
            ),
        };
        format!(
            "TCP reached {} of the {:.1} Mbit/s line rate (mean of {} trials, {} {} writes on {}{not_counted})",
            measure(self.share, Some(self.share_ci), Unit::Percent),
            self.line_rate_bps / 1e6,
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
        not_counted: 0,
    })
}

/// The link share the data support best over the points of the given
/// experiments: of the valid TCP points whose mean is at most their line
/// rate, the one with the highest lower end of its CI (share − CI), so
/// that a short, noisy transfer whose mean is high but whose interval is
/// wide does not outrank a long one measured precisely. Points whose mean
/// exceeds the line rate within CI are counted in `not_counted`.
pub fn best_link_share<'a>(
    d: &StudyData,
    experiments: impl IntoIterator<Item = &'a str>,
) -> Option<LinkShare> {
    let (over, within): (Vec<LinkShare>, Vec<LinkShare>) = experiments
        .into_iter()
        .flat_map(|id| d.points_of(id))
        .filter_map(|p| link_share(d, p))
        .partition(|l| l.share > 1.0);
    within
        .into_iter()
        .max_by(|a, b| (a.share - a.share_ci).total_cmp(&(b.share - b.share_ci)))
        .map(|best| LinkShare {
            not_counted: over.len(),
            ..best
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn above_the_line_rate_only_beyond_the_ci() {
        // 12 ± 0.5 Mbit/s on a 10 Mbit/s link: impossible.
        assert!(above_line_rate(12e6, 0.5e6, 10e6));
        // 11 ± 1.5 Mbit/s: the interval reaches the line rate, not flagged.
        assert!(!above_line_rate(11e6, 1.5e6, 10e6));
        // Below the line rate: never.
        assert!(!above_line_rate(9.7e6, 0.01e6, 10e6));
        // A single trial (NaN CI) is held to its mean.
        assert!(above_line_rate(10.1e6, f64::NAN, 10e6));
        assert!(!above_line_rate(9.9e6, f64::NAN, 10e6));
        // No calibration, no verdict.
        assert!(!above_line_rate(12e6, 0.0, 0.0));
    }

    #[test]
    fn a_rate_needs_enough_datagrams() {
        assert!(too_few_datagrams(6.0));
        assert!(too_few_datagrams(99.0));
        assert!(too_few_datagrams(f64::NAN));
        assert!(!too_few_datagrams(100.0));
        assert!(!too_few_datagrams(33820.0));
    }

    #[test]
    fn a_rate_over_a_link_needs_a_long_enough_interval() {
        assert!(too_short_interval(0.002));
        assert!(too_short_interval(0.0199));
        assert!(too_short_interval(f64::NAN));
        assert!(!too_short_interval(0.02));
        assert!(!too_short_interval(0.21));
    }

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
        };
        let point = PointRecord {
            id: 1,
            index: 0,
            params,
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

    #[test]
    fn reasons_state_the_numbers() {
        let a = Invalid::AboveLineRate {
            mean_bps: 11.7e6,
            ci_bps: 0.02e6,
            line_rate_bps: 10.02e6,
        };
        assert_eq!(
            a.reason(),
            "invalid: 11.7 ± 0.0 Mbit/s exceeds the place's calibrated line rate of 10.0 Mbit/s \
             by more than its CI"
        );
        let b = Invalid::TooFewDatagrams { received: 6.0 };
        assert!(b
            .reason()
            .starts_with("n/a: the receive rate would rest on 6 datagrams"));
        let c = Invalid::TooShortInterval { interval_s: 0.0021 };
        assert!(c.reason().starts_with(
            "n/a: the rate would rest on 2.1 ms from first byte to last, shorter than the 20 ms"
        ));
    }
}
