//! The papers' throughput models, as functions of measured inputs.
//!
//! - The receive-window bound: a window-limited flow moves at most one
//!   window per round trip (window / RTT).
//! - Abrams & Chen's optimal bound for mismatched hosts (§3.5): a sender
//!   that can produce at λ and a receiver that can consume at μ move data at
//!   most at min(λ, μ).
//! - Markatos' model (2002, §4): throughput = 1 / (1/mem_bw + C/cpu_score),
//!   i.e. a per-byte memory cost plus a per-byte processing cost that
//!   shrinks with CPU speed; fitted by least squares on 1/throughput
//!   against 1/cpu_score.
//! - Mileage (Markatos §4.1): MB moved per CPU-second, per unit of CPU
//!   score, so hosts of different speeds compare.
//!
//! Huang & Chen's per-packet plus per-byte regression is
//! [`crate::cpu::fit_packet_byte`].

use thiserror::Error;

/// Why a model could not be evaluated or fitted.
#[derive(Debug, Error, PartialEq)]
pub enum ModelError {
    /// A fit needs more observations than it got.
    #[error("{needed} observations needed, {got} given")]
    TooFew {
        /// Observations the fit needs.
        needed: usize,
        /// Observations given.
        got: usize,
    },
    /// An input that must be positive and finite was not.
    #[error("{what} must be positive and finite, got {value}")]
    NotPositive {
        /// The input's name.
        what: &'static str,
        /// Its value.
        value: f64,
    },
    /// Every observation has the same x: no slope can be fitted.
    #[error("all observations have the same {0}: nothing to fit a slope to")]
    NoSpread(&'static str),
}

fn positive(what: &'static str, value: f64) -> Result<f64, ModelError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ModelError::NotPositive { what, value })
    }
}

/// The most a window-limited flow can move: one window per round trip,
/// bytes/s.
pub fn window_bound(window_bytes: f64, rtt_s: f64) -> Result<f64, ModelError> {
    Ok(positive("window", window_bytes)? / positive("rtt", rtt_s)?)
}

/// Abrams & Chen's optimal bound for a sender that produces at `lambda` and
/// a receiver that consumes at `mu` (same units): min(λ, μ).
pub fn mismatch_bound(lambda: f64, mu: f64) -> Result<f64, ModelError> {
    Ok(positive("lambda", lambda)?.min(positive("mu", mu)?))
}

/// Which side the mismatch bound says limits the transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limiter {
    /// λ < μ: the sender.
    Sender,
    /// μ < λ: the receiver.
    Receiver,
    /// Within `tie` of each other.
    Balanced,
}

/// The side that limits, with λ and μ within a relative `tie` counted as
/// balanced (ρ = λ/μ near 1, where Abrams & Chen saw the most loss of
/// throughput to buffering).
pub fn limiter(lambda: f64, mu: f64, tie: f64) -> Result<Limiter, ModelError> {
    let rho = positive("lambda", lambda)? / positive("mu", mu)?;
    Ok(if (rho - 1.0).abs() <= tie {
        Limiter::Balanced
    } else if rho < 1.0 {
        Limiter::Sender
    } else {
        Limiter::Receiver
    })
}

/// A straight line fitted by ordinary least squares, with standard errors.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearFit {
    /// Observations.
    pub n: usize,
    /// Value at x = 0.
    pub intercept: f64,
    /// Standard error of the intercept (NaN with two observations).
    pub intercept_se: f64,
    /// Change of y per unit x.
    pub slope: f64,
    /// Standard error of the slope (NaN with two observations).
    pub slope_se: f64,
    /// Coefficient of determination.
    pub r2: f64,
}

/// Fits y = intercept + slope·x by ordinary least squares.
pub fn linear_fit(points: &[(f64, f64)]) -> Result<LinearFit, ModelError> {
    let n = points.len();
    if n < 2 {
        return Err(ModelError::TooFew { needed: 2, got: n });
    }
    let nf = n as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = points.iter().map(|p| p.1).sum::<f64>() / nf;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx <= f64::EPSILON * (mx * mx * nf).max(f64::MIN_POSITIVE) {
        return Err(ModelError::NoSpread("x"));
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let sse: f64 = points
        .iter()
        .map(|p| (p.1 - intercept - slope * p.0).powi(2))
        .sum();
    let (slope_se, intercept_se) = if n > 2 {
        let s2 = sse / (nf - 2.0);
        let sxx_raw: f64 = points.iter().map(|p| p.0 * p.0).sum();
        ((s2 / sxx).sqrt(), (s2 * sxx_raw / (nf * sxx)).sqrt())
    } else {
        (f64::NAN, f64::NAN)
    };
    Ok(LinearFit {
        n,
        intercept,
        intercept_se,
        slope,
        slope_se,
        r2: if syy > 0.0 { 1.0 - sse / syy } else { 1.0 },
    })
}

/// One observation for Markatos' model: a host (or an emulated CPU speed)
/// with its CPU score and the throughput it reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedObservation {
    /// The host's CPU score (calibrate's integer workload rate).
    pub cpu_score: f64,
    /// Throughput measured, bytes/s.
    pub throughput: f64,
}

/// Markatos' model fitted to observations.
#[derive(Debug, Clone, PartialEq)]
pub struct MarkatosFit {
    /// Memory bandwidth term, bytes/s (fitted, or given).
    pub mem_bw: f64,
    /// Whether `mem_bw` was fitted (false: taken from calibration).
    pub mem_bw_fitted: bool,
    /// The processing constant C: seconds per byte times CPU score.
    pub c: f64,
    /// Standard error of C.
    pub c_se: f64,
    /// Observations.
    pub n: usize,
    /// Root mean square of (predicted − measured) / measured throughput.
    pub rms_rel_error: f64,
    /// Largest |predicted − measured| / measured.
    pub max_rel_error: f64,
}

impl MarkatosFit {
    /// Throughput the model predicts at a CPU score, bytes/s.
    pub fn predict(&self, cpu_score: f64) -> f64 {
        1.0 / (1.0 / self.mem_bw + self.c / cpu_score)
    }

    /// The throughput the model tends to on an infinitely fast CPU: the
    /// memory bound.
    pub fn ceiling(&self) -> f64 {
        self.mem_bw
    }
}

/// Fits throughput = 1 / (1/mem_bw + C/cpu_score). With `mem_bw` given
/// (calibrate's copy bandwidth), only C is fitted, through the origin of
/// 1/throughput − 1/mem_bw against 1/cpu_score; without, both terms are
/// fitted as intercept and slope. Errors are reported on throughput itself.
pub fn fit_markatos(
    obs: &[SpeedObservation],
    mem_bw: Option<f64>,
) -> Result<MarkatosFit, ModelError> {
    for o in obs {
        positive("cpu score", o.cpu_score)?;
        positive("throughput", o.throughput)?;
    }
    let pts: Vec<(f64, f64)> = obs
        .iter()
        .map(|o| (1.0 / o.cpu_score, 1.0 / o.throughput))
        .collect();
    let (mem_bw, fitted, c, c_se) = match mem_bw {
        Some(bw) => {
            let bw = positive("memory bandwidth", bw)?;
            if obs.is_empty() {
                return Err(ModelError::TooFew { needed: 1, got: 0 });
            }
            // Least squares through the origin: y' = C x.
            let sxx: f64 = pts.iter().map(|p| p.0 * p.0).sum();
            let sxy: f64 = pts.iter().map(|p| p.0 * (p.1 - 1.0 / bw)).sum();
            let c = sxy / sxx;
            let n = pts.len() as f64;
            let c_se = if pts.len() > 1 {
                let sse: f64 = pts.iter().map(|p| (p.1 - 1.0 / bw - c * p.0).powi(2)).sum();
                (sse / (n - 1.0) / sxx).sqrt()
            } else {
                f64::NAN
            };
            (bw, false, c, c_se)
        }
        None => {
            if obs.len() < 3 {
                return Err(ModelError::TooFew {
                    needed: 3,
                    got: obs.len(),
                });
            }
            let f = linear_fit(&pts).map_err(|e| match e {
                ModelError::NoSpread(_) => ModelError::NoSpread("cpu score"),
                e => e,
            })?;
            // A non-positive intercept means no memory bound is visible in
            // these points: the model degenerates to pure CPU cost.
            let bw = if f.intercept > 0.0 {
                1.0 / f.intercept
            } else {
                f64::INFINITY
            };
            (bw, true, f.slope, f.slope_se)
        }
    };
    let mut fit = MarkatosFit {
        mem_bw,
        mem_bw_fitted: fitted,
        c,
        c_se,
        n: obs.len(),
        rms_rel_error: 0.0,
        max_rel_error: 0.0,
    };
    let rel: Vec<f64> = obs
        .iter()
        .map(|o| (fit.predict(o.cpu_score) - o.throughput) / o.throughput)
        .collect();
    fit.rms_rel_error = (rel.iter().map(|r| r * r).sum::<f64>() / rel.len() as f64).sqrt();
    fit.max_rel_error = rel.iter().fold(0.0, |m: f64, r| m.max(r.abs()));
    Ok(fit)
}

/// Markatos' constant C from measurements apart from the throughput it
/// predicts: the sender's CPU seconds per byte (1 / `bytes_per_cpu_s`) are
/// the model's 1/mem_bw + C/cpu_score, so C = cpu_score × (1/bytes_per_cpu_s
/// − 1/mem_bw), in CPU-score units × seconds per byte. An error when the
/// sender moves more bytes per CPU-second than memory copies (C ≤ 0).
pub fn markatos_constant(
    bytes_per_cpu_s: f64,
    mem_bw: f64,
    cpu_score: f64,
) -> Result<f64, ModelError> {
    let per_byte = 1.0 / positive("bytes per CPU-second", bytes_per_cpu_s)?;
    let c = positive("cpu score", cpu_score)?
        * (per_byte - 1.0 / positive("memory bandwidth", mem_bw)?);
    positive("C (CPU time per byte beyond the memory copies)", c)
}

/// The throughput Markatos' model predicts, bytes/s: 1 / (1/mem_bw +
/// C/cpu_score).
pub fn markatos_throughput(mem_bw: f64, c: f64, cpu_score: f64) -> Result<f64, ModelError> {
    Ok(1.0
        / (1.0 / positive("memory bandwidth", mem_bw)?
            + positive("C", c)? / positive("cpu score", cpu_score)?))
}

/// Mileage (Markatos §4.1): MB (10⁶ bytes) moved per CPU-second, per unit
/// of CPU score.
pub fn mileage(bytes_per_cpu_s: f64, cpu_score: f64) -> Result<f64, ModelError> {
    Ok(
        positive("bytes per CPU-second", bytes_per_cpu_s)?
            / 1e6
            / positive("cpu score", cpu_score)?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    #[test]
    fn window_bound_is_one_window_per_round_trip() {
        // 64 KiB per 10 ms: 6.5536 MB/s.
        assert!(close(
            window_bound(65536.0, 0.01).unwrap(),
            6_553_600.0,
            1e-12
        ));
        assert!(matches!(
            window_bound(65536.0, 0.0),
            Err(ModelError::NotPositive { what: "rtt", .. })
        ));
    }

    #[test]
    fn mismatch_bound_is_the_slower_side() {
        assert_eq!(mismatch_bound(3.0, 5.0).unwrap(), 3.0);
        assert_eq!(mismatch_bound(7.0, 5.0).unwrap(), 5.0);
        assert_eq!(limiter(3.0, 5.0, 0.05).unwrap(), Limiter::Sender);
        assert_eq!(limiter(7.0, 5.0, 0.05).unwrap(), Limiter::Receiver);
        assert_eq!(limiter(5.1, 5.0, 0.05).unwrap(), Limiter::Balanced);
        assert!(mismatch_bound(f64::NAN, 1.0).is_err());
    }

    #[test]
    fn linear_fit_recovers_a_known_line_and_its_errors() {
        let pts: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 2.0 + 0.5 * i as f64)).collect();
        let f = linear_fit(&pts).unwrap();
        assert!(close(f.intercept, 2.0, 1e-12) && close(f.slope, 0.5, 1e-12));
        assert!(f.slope_se < 1e-12 && close(f.r2, 1.0, 1e-12));
        // Known textbook case: x = 1..5, y = 2,4,5,4,5 → y = 2.2 + 0.6 x,
        // R² = 0.6, slope SE = sqrt(2.4/3 / 10) = 0.2828.
        let f = linear_fit(&[(1.0, 2.0), (2.0, 4.0), (3.0, 5.0), (4.0, 4.0), (5.0, 5.0)]).unwrap();
        assert!(close(f.intercept, 2.2, 1e-12) && close(f.slope, 0.6, 1e-12));
        assert!(close(f.r2, 0.6, 1e-12));
        assert!(close(f.slope_se, (0.08f64).sqrt(), 1e-9));
        assert_eq!(
            linear_fit(&[(1.0, 1.0), (1.0, 2.0)]),
            Err(ModelError::NoSpread("x"))
        );
    }

    #[test]
    fn markatos_fit_recovers_memory_and_cpu_terms() {
        let (bw, c) = (2e9, 0.004);
        let obs: Vec<SpeedObservation> = [50.0, 100.0, 200.0, 400.0, 800.0]
            .iter()
            .map(|&s| SpeedObservation {
                cpu_score: s,
                throughput: 1.0 / (1.0 / bw + c / s / 1e6),
            })
            .collect();
        // c above is per MB; the fitted C is per byte.
        let f = fit_markatos(&obs, None).unwrap();
        assert!(f.mem_bw_fitted);
        assert!(close(f.mem_bw, bw, 1e-6), "mem_bw {}", f.mem_bw);
        assert!(close(f.c, c / 1e6, 1e-6), "c {}", f.c);
        assert!(f.rms_rel_error < 1e-9);
        assert!(close(f.predict(100.0), obs[1].throughput, 1e-9));
        // With the memory term given, C alone.
        let g = fit_markatos(&obs, Some(bw)).unwrap();
        assert!(!g.mem_bw_fitted && close(g.c, c / 1e6, 1e-9));
        // A faster CPU never predicts less, and the ceiling is the memory.
        assert!(g.predict(1e9) <= g.ceiling() && g.predict(1e9) > 0.99 * g.ceiling());
    }

    #[test]
    fn markatos_fit_reports_its_error_on_noisy_data() {
        let (bw, c) = (1e9, 2e-9);
        let noise = [1.05, 0.97, 1.02, 0.95, 1.01, 1.0];
        let obs: Vec<SpeedObservation> = [10.0, 20.0, 40.0, 80.0, 160.0, 320.0]
            .iter()
            .zip(noise)
            .map(|(&s, k)| SpeedObservation {
                cpu_score: s,
                throughput: k / (1.0 / bw + c / s),
            })
            .collect();
        let f = fit_markatos(&obs, None).unwrap();
        assert!(f.rms_rel_error > 0.005 && f.rms_rel_error < 0.06, "{f:?}");
        assert!(f.max_rel_error >= f.rms_rel_error);
        assert!(f.c_se > 0.0);
        assert_eq!(
            fit_markatos(&obs[..2], None),
            Err(ModelError::TooFew { needed: 3, got: 2 })
        );
    }

    #[test]
    fn markatos_prediction_comes_from_cpu_time_per_byte_and_memory_bandwidth() {
        // 1 ns per byte of CPU with 4 GB/s memory: C = 1000 × 0.75 ns.
        let c = markatos_constant(1e9, 4e9, 1000.0).unwrap();
        assert!(close(c, 0.75e-9 * 1000.0, 1e-12), "{c}");
        // At the score it came from, the model gives the bytes per CPU-second.
        assert!(close(
            markatos_throughput(4e9, c, 1000.0).unwrap(),
            1e9,
            1e-12
        ));
        // A tenth of the score: only the CPU term grows tenfold.
        let slow = markatos_throughput(4e9, c, 100.0).unwrap();
        assert!(close(slow, 1.0 / (0.25e-9 + 7.5e-9), 1e-12), "{slow}");
        // More bytes per CPU-second than memory copies: no positive C.
        assert!(matches!(
            markatos_constant(5e9, 4e9, 1000.0),
            Err(ModelError::NotPositive { .. })
        ));
    }

    #[test]
    fn mileage_is_mb_per_cpu_second_per_score() {
        assert!(close(mileage(500e6, 250.0).unwrap(), 2.0, 1e-12));
        assert!(mileage(500e6, 0.0).is_err());
    }
}
