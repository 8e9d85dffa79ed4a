//! Whether a measured mean changed against a baseline, as a claim with its
//! evidence: raised or lowered (by how much) when the 95% confidence
//! intervals do not overlap, else "no change", with the smallest change
//! the trials could have seen.

use analysis::stats::Summary;
use report::{measure, Unit};

/// A mean over trials with the half-width of its 95% CI (NaN for fewer
/// than two trials).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Estimate {
    /// The mean.
    pub mean: f64,
    /// The 95% CI half-width; NaN when `n < 2`.
    pub ci: f64,
    /// Trials behind it.
    pub n: u32,
}

impl Estimate {
    /// From a summary, scaled (e.g. bit/s to Mbit/s).
    pub fn of(s: &Summary, scale: f64) -> Estimate {
        Estimate {
            mean: s.mean * scale,
            ci: s.ci95 * scale,
            n: s.n,
        }
    }

    /// From per-trial values; `None` without any finite one.
    pub fn from_values(v: &[f64]) -> Option<Estimate> {
        Summary::new(v).map(|s| Estimate::of(&s, 1.0))
    }

    /// The same estimate in another unit: mean and CI times `k`.
    pub fn scaled(self, k: f64) -> Estimate {
        Estimate {
            mean: self.mean * k,
            ci: self.ci * k,
            ..self
        }
    }

    /// "mean ± ci unit" by the one number rule of `report::format`
    /// (`9.41 ± 0.12 Gbit/s`), or "mean unit (one trial)".
    pub fn words(&self, unit: Unit) -> String {
        if self.ci.is_finite() {
            measure(self.mean, Some(self.ci), unit)
        } else {
            format!("{} (one trial)", measure(self.mean, None, unit))
        }
    }
}

/// How a measurement stands against its baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Change {
    /// Higher beyond both CIs: `ratio` = measured / baseline.
    Raised {
        /// measured / baseline.
        ratio: f64,
    },
    /// Lower beyond both CIs.
    Lowered {
        /// measured / baseline.
        ratio: f64,
    },
    /// Within the CIs: a difference smaller than `detectable` (in the
    /// metric's unit) could not have been seen.
    Unchanged {
        /// The smallest difference the trials could have detected: the
        /// two CI half-widths summed, plus 1% of the larger mean.
        detectable: f64,
    },
    /// A side has fewer than two trials: no CI, so no difference can be
    /// claimed either way.
    TooFewTrials,
}

/// Compares `other` with `base` by the overlap of their 95% CIs (the rule
/// of [`analysis::findings::differ`]).
pub(crate) fn compare(base: &Estimate, other: &Estimate) -> Change {
    if base.n < 2 || other.n < 2 || !base.ci.is_finite() || !other.ci.is_finite() {
        return Change::TooFewTrials;
    }
    let detectable = analysis::findings::resolution_of(base.mean, base.ci, other.mean, other.ci);
    let diff = other.mean - base.mean;
    if diff.abs() <= detectable {
        Change::Unchanged { detectable }
    } else if diff > 0.0 {
        Change::Raised {
            ratio: other.mean / base.mean,
        }
    } else {
        Change::Lowered {
            ratio: other.mean / base.mean,
        }
    }
}
