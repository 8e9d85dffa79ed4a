//! Markatos' model used as a prediction, not a fit: C comes from the
//! sender's CPU time per byte in the full-speed loopback experiment and the
//! memory bandwidth from calibrate, and the predicted throughput at each
//! emulated CPU speed is set against the measured one and its CI. Nothing
//! is fitted to the points it is compared with.

use analysis::findings::CurvePoint;
use analysis::models::{markatos_constant, markatos_throughput, ModelError};
use report::format::throughput_of_bytes;
use report::{measure, Unit};

/// The measured inputs of the prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Inputs {
    /// Calibrate's memory copy bandwidth, bytes/s.
    pub mem_bw: f64,
    /// Calibrate's CPU score at full speed.
    pub cpu_score: f64,
    /// Loopback MB (10⁶ B) per sender CPU-second at full speed: mean ± CI.
    pub mb_per_cpu_s: CurvePoint,
}

/// The model's constant and its range from the MB per CPU-second CI.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Constant {
    /// C, CPU-score units × seconds per byte.
    pub c: f64,
    /// C from the upper end of the MB per CPU-second CI (the smallest C).
    pub c_low: f64,
    /// C from the lower end (the largest C; infinite when that end is not
    /// positive).
    pub c_high: f64,
}

/// C from the inputs.
pub(super) fn constant(i: &Inputs) -> Result<Constant, ModelError> {
    let at = |mb: f64| markatos_constant(mb * 1e6, i.mem_bw, i.cpu_score);
    let c = at(i.mb_per_cpu_s.mean)?;
    Ok(Constant {
        c,
        c_low: at(i.mb_per_cpu_s.mean + i.mb_per_cpu_s.ci).unwrap_or(c),
        c_high: at(i.mb_per_cpu_s.mean - i.mb_per_cpu_s.ci).unwrap_or(f64::INFINITY),
    })
}

/// The prediction at one emulated CPU speed against the measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SpeedCheck {
    /// The CPU share (1 = full speed).
    pub share: f64,
    /// Predicted throughput, bytes/s.
    pub predicted: f64,
    /// Its range from C's range, bytes/s (low, high).
    pub range: (f64, f64),
    /// Measured throughput, bytes/s: mean ± 95% CI half-width.
    pub measured: CurvePoint,
}

impl SpeedCheck {
    /// Whether the prediction lies within the measurement's 95% CI.
    pub fn within(&self) -> bool {
        (self.predicted - self.measured.mean).abs() <= self.measured.ci
    }
}

/// The prediction at each measured CPU share (`curve`: x = share, bytes/s).
pub(super) fn checks(i: &Inputs, k: &Constant, curve: &[CurvePoint]) -> Vec<SpeedCheck> {
    curve
        .iter()
        .filter_map(|p| {
            let score = i.cpu_score * p.x;
            let at = |c: f64| markatos_throughput(i.mem_bw, c, score).ok();
            Some(SpeedCheck {
                share: p.x,
                predicted: at(k.c)?,
                range: (at(k.c_high).unwrap_or(0.0), at(k.c_low)?),
                measured: *p,
            })
        })
        .collect()
}

fn bytes_per_s(v: f64) -> String {
    measure(v, None, Unit::Si("B/s"))
}

/// Mean and CI of MB (10⁶ B) per CPU-second in B/CPU-s, as bench writes it.
pub(super) fn per_cpu_s(mb: f64, ci: f64) -> String {
    measure(mb * 1e6, Some(ci * 1e6), Unit::Si("B/CPU-s"))
}

/// The findings: where C comes from, how each speed's prediction stands
/// against its measurement, and, where the full-speed prediction overshoots,
/// how busy the sender was.
pub(super) fn sentences(i: &Inputs, k: &Constant, checks: &[SpeedCheck]) -> Vec<String> {
    let mut out = Vec::new();
    let each: Vec<String> = checks
        .iter()
        .map(|x| {
            format!(
                "at CPU share {} it predicts {} against {} measured ({})",
                x.share,
                throughput_of_bytes(x.predicted, None),
                throughput_of_bytes(x.measured.mean, Some(x.measured.ci)),
                if x.within() {
                    "within the 95% CI".to_string()
                } else {
                    format!(
                        "outside the 95% CI, {:+.0}%",
                        (x.predicted / x.measured.mean - 1.0) * 100.0
                    )
                }
            )
        })
        .collect();
    let hits = checks.iter().filter(|x| x.within()).count();
    out.push(format!(
        "Markatos' model as a prediction: from calibrate's memory bandwidth ({}), the CPU score \
         ({:.0}) and the {} the sender moves at full speed on loopback, C = {:.3e} \
         score·s per byte; {}. It predicts {hits} of {} CPU speeds within the measurement's CI.",
        bytes_per_s(i.mem_bw),
        i.cpu_score,
        per_cpu_s(i.mb_per_cpu_s.mean, i.mb_per_cpu_s.ci),
        k.c,
        each.join("; "),
        checks.len(),
    ));
    if let Some(full) = checks.iter().find(|x| x.share == 1.0) {
        if !full.within() && full.measured.mean < full.predicted {
            // At full speed the model gives the MB per CPU-second itself:
            // the rate of a sender busy all the time.
            out.push(format!(
                "At full speed the model's throughput is what the sender would move if it were \
                 busy all the time; it moved {:.0}% of that, so its CPU was idle the rest of the \
                 time and something other than its CPU held the transfer back there, which the \
                 model does not describe.",
                full.measured.mean / full.predicted * 100.0
            ));
        }
    }
    out
}
