//! Descriptive statistics and Student's t confidence intervals.
//!
//! Every function here ignores non-finite inputs (NaN, ±∞): a value that is
//! not a number is not a measurement. Functions that need at least one value
//! return `None` when none is left.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of [`Summary::ci95`].
pub const CI95: f64 = 0.95;

/// Mean, spread and 95% confidence interval of a sample.
///
/// Non-finite fields (e.g. `ci95` of a single value) serialize as JSON
/// `null` and deserialize from `null` back to NaN.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of (finite) values.
    pub n: u32,
    /// Arithmetic mean.
    #[serde(with = "finite_or_null")]
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); 0 for a single value.
    #[serde(with = "finite_or_null")]
    pub sd: f64,
    /// Half-width of the 95% confidence interval of the mean,
    /// t<sub>0.975, n−1</sub> · sd / √n; NaN for a single value.
    #[serde(with = "finite_or_null")]
    pub ci95: f64,
    /// The median (the mean of the middle two of an even count), as
    /// hyperfine's JSON gives it; NaN (`null`) in summaries stored before
    /// it was kept.
    #[serde(with = "finite_or_null", default = "not_a_number")]
    pub median: f64,
    /// The smallest value.
    #[serde(with = "finite_or_null", default = "not_a_number")]
    pub min: f64,
    /// The largest value.
    #[serde(with = "finite_or_null", default = "not_a_number")]
    pub max: f64,
}

/// NaN, for summaries serialized without median, min or max.
fn not_a_number() -> f64 {
    f64::NAN
}

impl Summary {
    /// Summarizes the finite values of a sample; `None` when there are none.
    pub fn new(values: &[f64]) -> Option<Summary> {
        let finite: Vec<f64> = finite_values(values).collect();
        let n = finite.len();
        if n == 0 {
            return None;
        }
        let mean = finite.iter().sum::<f64>() / n as f64;
        let sd = if n < 2 {
            0.0
        } else {
            let ss: f64 = finite.iter().map(|v| (v - mean) * (v - mean)).sum();
            (ss / (n - 1) as f64).sqrt()
        };
        let mut summary = Summary {
            n: u32::try_from(n).unwrap_or(u32::MAX),
            mean,
            sd,
            ci95: f64::NAN,
            median: median(&finite).unwrap_or(f64::NAN),
            min: finite.iter().copied().fold(f64::INFINITY, f64::min),
            max: finite.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        };
        summary.ci95 = summary.half_width(CI95);
        Some(summary)
    }

    /// Half-width of the two-sided confidence interval of the mean at
    /// `confidence` (e.g. 0.99): t<sub>(1+confidence)/2, n−1</sub> · sd / √n.
    ///
    /// NaN when `n < 2` or `confidence` is not in (0, 1).
    pub fn half_width(&self, confidence: f64) -> f64 {
        if self.n < 2 {
            return f64::NAN;
        }
        t_quantile(confidence, self.n - 1) * self.sd / f64::from(self.n).sqrt()
    }

    /// Half-width relative to the magnitude of the mean, `ci95 / |mean|`.
    ///
    /// NaN when `n < 2`; +∞ (or NaN) when the mean is 0.
    pub fn rel_ci95(&self) -> f64 {
        self.ci95 / self.mean.abs()
    }
}

/// Summarizes the finite values of a sample; `None` when there are none.
///
/// Same as [`Summary::new`].
pub fn summarize(values: &[f64]) -> Option<Summary> {
    Summary::new(values)
}

/// The two-sided Student's t critical value: for `confidence` 0.95 and `df`
/// degrees of freedom it returns t<sub>0.975, df</sub>.
///
/// NaN when `df` is 0 or `confidence` is not strictly between 0 and 1.
pub fn t_quantile(confidence: f64, df: u32) -> f64 {
    if df == 0 || !(confidence > 0.0 && confidence < 1.0) {
        return f64::NAN;
    }
    match StudentsT::new(0.0, 1.0, f64::from(df)) {
        Ok(t) => t.inverse_cdf(0.5 + confidence / 2.0),
        Err(_) => f64::NAN,
    }
}

/// Half-width of the two-sided confidence interval of the mean of the finite
/// values at `confidence`.
///
/// `None` when fewer than two finite values are left (no interval exists);
/// NaN inside `Some` when `confidence` is not in (0, 1).
pub fn ci_half_width(values: &[f64], confidence: f64) -> Option<f64> {
    let s = Summary::new(values)?;
    (s.n >= 2).then(|| s.half_width(confidence))
}

/// Whether a sample is precise enough to stop repeating (the stopping rule of
/// `--precision`).
///
/// True iff there are at least `max(min_n, 2)` finite values and the
/// half-width of the `confidence` interval of the mean is at most
/// `rel_half_width · |mean|`.
///
/// This is netperf's `-I confidence,width` done right, with one difference:
/// netperf compares the interval's *full* width with `width`, whereas here
/// the *half*-width is compared, so `rel_half_width = 0.05` means "the mean
/// is known to ±5%" (netperf's `-I 95,10`).
pub fn precision_reached(values: &[f64], confidence: f64, rel_half_width: f64, min_n: u32) -> bool {
    let Some(s) = Summary::new(values) else {
        return false;
    };
    if s.n < min_n.max(2) {
        return false;
    }
    // NaN (bad confidence or rel_half_width) compares false: not reached.
    s.half_width(confidence) <= rel_half_width * s.mean.abs()
}

/// How a point ended against a `--precision` target: the half-width its
/// `values` reached after `trials` trials, and whether that met
/// `rel_half_width` at `confidence` (by [`precision_reached`], the rule the
/// runner stopped by).
pub fn precision_outcome(
    values: &[f64],
    trials: u32,
    confidence: f64,
    rel_half_width: f64,
    max_repeat: u32,
) -> record::PrecisionOutcome {
    let reached = Summary::new(values)
        .filter(|s| s.n >= 2)
        .map(|s| s.half_width(confidence) / s.mean.abs())
        .filter(|r| !r.is_nan());
    record::PrecisionOutcome {
        confidence,
        target_rel_half_width: rel_half_width,
        reached_rel_half_width: reached,
        trials,
        max_repeat,
        met: precision_reached(values, confidence, rel_half_width, 2),
    }
}

/// The median of the finite values (mean of the middle two for an even
/// count); `None` when there are none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = finite_values(values).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

fn finite_values(values: &[f64]) -> impl Iterator<Item = f64> + '_ {
    values.iter().copied().filter(|v| v.is_finite())
}

/// Serde helper for `f64` fields: non-finite values serialize as `null`, and
/// `null` deserializes as NaN.
pub mod finite_or_null {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes a finite `f64` as a number and anything else as `null`.
    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            serializer.serialize_f64(*value)
        } else {
            serializer.serialize_none()
        }
    }

    /// Deserializes a number, or `null` as NaN.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOL: f64 = 1e-5;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= TOL
    }

    #[test]
    fn t_quantiles_match_tables() {
        for (conf, df, want) in [
            (0.95, 1, 12.706205),
            (0.95, 4, 2.776445),
            (0.95, 9, 2.262157),
            (0.95, 29, 2.045230),
            (0.99, 9, 3.249836),
        ] {
            let got = t_quantile(conf, df);
            assert!(close(got, want), "t({conf}, {df}) = {got}, want {want}");
        }
    }

    #[test]
    fn t_quantile_rejects_bad_input() {
        assert!(t_quantile(0.95, 0).is_nan());
        assert!(t_quantile(0.0, 5).is_nan());
        assert!(t_quantile(1.0, 5).is_nan());
        assert!(t_quantile(f64::NAN, 5).is_nan());
    }

    #[test]
    fn summarize_one_to_five() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(s.n, 5);
        assert!(close(s.mean, 3.0));
        assert!(close(s.sd, 1.5811388));
        assert!(close(s.ci95, 1.9632432));
        assert!(close(s.rel_ci95(), 1.9632432 / 3.0));
    }

    #[test]
    fn constant_sample_has_zero_spread() {
        let s = summarize(&[10.0; 5]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.mean, 10.0);
        assert_eq!(s.sd, 0.0);
        assert_eq!(s.ci95, 0.0);
    }

    #[test]
    fn empty_sample_is_none() {
        assert!(summarize(&[]).is_none());
        assert!(summarize(&[f64::NAN, f64::INFINITY]).is_none());
        assert!(median(&[]).is_none());
        assert!(ci_half_width(&[], 0.95).is_none());
    }

    #[test]
    fn single_value_has_no_interval_and_serializes_null() {
        let s = summarize(&[42.0]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!(s.mean, 42.0);
        assert_eq!(s.sd, 0.0);
        assert!(!s.ci95.is_finite());
        assert!(ci_half_width(&[42.0], 0.95).is_none());

        let json = serde_json::to_value(s).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"n": 1, "mean": 42.0, "sd": 0.0, "ci95": null,
                "median": 42.0, "min": 42.0, "max": 42.0})
        );
        let back: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(back.n, 1);
        assert_eq!(back.mean, 42.0);
        assert!(back.ci95.is_nan());
    }

    #[test]
    fn finite_summary_round_trips() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let text = serde_json::to_string(&s).unwrap();
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn non_finite_inputs_are_ignored() {
        let s = summarize(&[
            1.0,
            f64::NAN,
            2.0,
            3.0,
            f64::INFINITY,
            4.0,
            5.0,
            f64::NEG_INFINITY,
        ])
        .unwrap();
        assert_eq!(s, summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap());
        assert_eq!(median(&[f64::NAN, 3.0, 1.0, 2.0]), Some(2.0));
        assert!(close(
            ci_half_width(&[1.0, 2.0, f64::NAN, 3.0, 4.0, 5.0], 0.95).unwrap(),
            1.9632432
        ));
        assert!(precision_reached(&[100.0, f64::NAN, 100.0], 0.95, 0.05, 2));
    }

    #[test]
    fn ci_half_width_at_other_confidence() {
        let values: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = summarize(&values).unwrap();
        let hw = ci_half_width(&values, 0.99).unwrap();
        assert!(close(hw, 3.249836 * s.sd / 10f64.sqrt()));
        assert!(close(ci_half_width(&values, 0.95).unwrap(), s.ci95));
        assert!(ci_half_width(&values, 1.5).unwrap().is_nan());
    }

    #[test]
    fn summaries_give_median_min_and_max() {
        let s = Summary::new(&[3.0, f64::NAN, 1.0, 10.0, 2.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (4, 2.5, 1.0, 10.0));
        let json = serde_json::to_value(s).unwrap();
        assert_eq!(json["median"], 2.5);
        assert_eq!(json["min"], 1.0);
        assert_eq!(json["max"], 10.0);
        // A summary stored before they were kept reads back with NaN.
        let old: Summary =
            serde_json::from_str(r#"{"n":2,"mean":1.0,"sd":0.0,"ci95":0.0}"#).unwrap();
        assert!(old.median.is_nan() && old.min.is_nan() && old.max.is_nan());
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[5.0]), Some(5.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[-1.0, -3.0]), Some(-2.0));
    }

    #[test]
    fn precision_rule_around_the_boundary() {
        // [1..5]: mean 3, 95% half-width 1.9632432, i.e. 65.44% of the mean.
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        let rel = 1.9632432 / 3.0;
        assert!(precision_reached(&v, 0.95, rel + 1e-6, 2));
        assert!(!precision_reached(&v, 0.95, rel - 1e-6, 2));
        // A stricter confidence widens the interval past the same target.
        assert!(!precision_reached(&v, 0.99, rel + 1e-6, 2));
        // Negative means use |mean|.
        let neg: Vec<f64> = v.iter().map(|x| -x).collect();
        assert!(precision_reached(&neg, 0.95, rel + 1e-6, 2));
        assert!(!precision_reached(&neg, 0.95, rel - 1e-6, 2));
    }

    #[test]
    fn precision_outcome_says_what_was_reached() {
        let v = [100.0, 110.0, 90.0];
        let half = t_quantile(0.95, 2) * 10.0 / 3f64.sqrt();
        let missed = precision_outcome(&v, 3, 0.95, 0.05, 3);
        assert!(!missed.met);
        assert!((missed.reached_rel_half_width.unwrap() - half / 100.0).abs() < 1e-12);
        assert_eq!((missed.trials, missed.max_repeat), (3, 3));
        let met = precision_outcome(&v, 3, 0.95, 0.5, 3);
        assert!(met.met);
        let one = precision_outcome(&[100.0], 1, 0.95, 0.5, 3);
        assert_eq!((one.met, one.reached_rel_half_width), (false, None));
    }

    #[test]
    fn precision_rule_needs_enough_values() {
        let v = [10.0; 5];
        assert!(precision_reached(&v, 0.95, 0.05, 5));
        assert!(!precision_reached(&v, 0.95, 0.05, 6));
        // Never with fewer than two values, whatever min_n says.
        assert!(!precision_reached(&[10.0], 0.95, 0.05, 0));
        assert!(!precision_reached(&[10.0], 0.95, 0.05, 1));
        assert!(precision_reached(&[10.0, 10.0], 0.95, 0.05, 0));
        assert!(!precision_reached(&[], 0.95, 0.05, 0));
        // Bad confidence never reaches.
        assert!(!precision_reached(&v, 1.0, 0.05, 2));
    }
}
