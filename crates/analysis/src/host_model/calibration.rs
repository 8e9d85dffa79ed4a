//! A model's calibration on this host (see the module above): the
//! transfers, and the search for the speeds at which each class takes the
//! model's time.

use super::{
    reference_costs, speeds, ClassCosts, HostModelError, CALIBRATION_ROUNDS, CONVERGED, MIN_SLOWED,
};
use crate::models::linear_fit;
use record::factor::{ClassSpeeds, HostModel, WorkClass};
use serde::Serialize;

/// One calibration transfer: the speeds it ran at (`None`: this CPU's)
/// and this host's own cost per segment in it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Round {
    /// The sender's speeds, as `--cpu-speed` takes them.
    #[serde(serialize_with = "speeds_text")]
    pub at: Option<ClassSpeeds>,
    /// This host's own µs per segment, by class.
    pub host: ClassCosts,
}

fn speeds_text<S: serde::Serializer>(at: &Option<ClassSpeeds>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&at.map_or("1".to_string(), |a| a.to_string()))
}

/// A model's calibration on this host: its transfers in order, and what
/// they give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    /// The model's cost per segment at its reference MSS, µs.
    pub model: ClassCosts,
    /// The transfers so far.
    pub rounds: Vec<Round>,
}

impl Calibration {
    /// A calibration of `model` with no transfer yet.
    pub fn new(model: HostModel) -> Calibration {
        Calibration {
            model: reference_costs(model),
            rounds: Vec::new(),
        }
    }

    /// The speeds the next transfer runs at (`None`: undilated), or
    /// `Done` with the final speeds: once at least [`MIN_SLOWED`] slowed
    /// transfers have run and the last took the model's time within
    /// [`CONVERGED`], or after [`CALIBRATION_ROUNDS`] transfers, the
    /// speeds that solve the line through every slowed transfer (which
    /// pools this host's drift from one transfer to the next).
    pub fn next(&self) -> Result<Next, HostModelError> {
        let Some(first) = self.rounds.first() else {
            return Ok(Next::Run(None));
        };
        if self.rounds.len() == 1 {
            return Ok(Next::Run(Some(speeds(first.host, self.model)?)));
        }
        let solved = self.solve()?;
        let slowed = self.rounds.len() - 1;
        if (slowed >= MIN_SLOWED && self.converged()) || self.rounds.len() >= CALIBRATION_ROUNDS {
            Ok(Next::Done(solved))
        } else {
            Ok(Next::Run(Some(solved)))
        }
    }

    /// Records a transfer at `at` that cost this host `host` per segment.
    pub fn record(&mut self, at: Option<ClassSpeeds>, host: ClassCosts) {
        self.rounds.push(Round { at, host });
    }

    /// The slowed transfers as (speed, slowed cost) per class.
    fn points(&self, c: WorkClass) -> Vec<(f64, f64)> {
        self.rounds
            .iter()
            .filter_map(|r| r.at.map(|at| (at.of(c), r.host.of(c) / at.of(c))))
            .filter(|(f, d)| *f > 0.0 && *d > 0.0)
            .collect()
    }

    /// The speeds at which each class's line through the slowed
    /// transfers, ln(slowed cost) against ln(speed), meets the model's
    /// cost. With one transfer (or no spread of speeds) the line has
    /// slope −1: this host's own cost taken as fixed. The slope is kept
    /// within −3..−0.25 and each step within 10× of the last speed, so
    /// noise cannot throw the search far.
    pub fn solve(&self) -> Result<ClassSpeeds, HostModelError> {
        let last = self.rounds.last().and_then(|r| r.at);
        let mut f = [1.0; 3];
        for (slot, c) in f.iter_mut().zip(WorkClass::ALL) {
            let pts = self.points(c);
            let logs: Vec<(f64, f64)> = pts.iter().map(|(f, d)| (f.ln(), d.ln())).collect();
            let target = self.model.of(c).ln();
            let (slope, intercept) = match linear_fit(&logs) {
                Ok(fit) if fit.slope.is_finite() => {
                    let b = fit.slope.clamp(-3.0, -0.25);
                    let (mx, my) = mean_point(&logs);
                    (b, my - b * mx)
                }
                _ => {
                    let (x, y) = *logs.last().ok_or(HostModelError::Missing(
                        "a slowed calibration transfer".into(),
                    ))?;
                    (-1.0, y + x)
                }
            };
            let mut solved = ((target - intercept) / slope).exp();
            if let Some(l) = last {
                solved = solved.clamp(l.of(c) / 10.0, l.of(c) * 10.0);
            }
            *slot = solved.clamp(1e-4, 1.0);
        }
        // Each speed was clamped into the range speeds are taken in.
        Ok(ClassSpeeds::from_fractions(f).expect("speeds clamped to 0.0001..=1"))
    }

    /// The last transfer's slowed cost per class over the model's: 1 when
    /// it took the model's time.
    pub fn last_ratio(&self) -> Option<ClassCosts> {
        let r = self.rounds.last()?;
        let at = r.at?;
        let ratio = |c: WorkClass| r.host.of(c) / at.of(c) / self.model.of(c);
        Some(ClassCosts {
            compute: ratio(WorkClass::Compute),
            data: ratio(WorkClass::Data),
            device: ratio(WorkClass::Device),
        })
    }

    /// Whether the last transfer took the model's time within
    /// [`CONVERGED`] in every class.
    pub fn converged(&self) -> bool {
        self.last_ratio().is_some_and(|r| {
            WorkClass::ALL
                .into_iter()
                .all(|c| (r.of(c) - 1.0).abs() <= CONVERGED)
        })
    }
}

fn mean_point(v: &[(f64, f64)]) -> (f64, f64) {
    let n = v.len() as f64;
    (
        v.iter().map(|p| p.0).sum::<f64>() / n,
        v.iter().map(|p| p.1).sum::<f64>() / n,
    )
}

/// What a calibration does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Another transfer, at these speeds (`None`: undilated).
    Run(Option<ClassSpeeds>),
    /// The final speeds.
    Done(ClassSpeeds),
}
