//! What the per-segment and per-byte fit (Figs 8–9) may claim. A cost whose
//! 95% interval lies below zero, or a fit that does worse than the mean
//! (R² below 0), is a failed fit and is reported as one, with the reason the
//! data give; a cost whose interval contains zero is "not distinguishable
//! from zero", with the smallest cost the trials could have detected.

use analysis::cpu::PacketByteFit;
use analysis::findings::{differ, CurvePoint};
use report::{measure, Unit};

/// Where one fitted cost stands against zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum CostVerdict {
    /// Its 95% interval lies above zero.
    Positive,
    /// Its 95% interval contains zero.
    ContainsZero,
    /// Its 95% interval lies below zero: no stack has a negative cost.
    Negative,
}

/// One fitted cost with its 95% interval half-width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Cost {
    /// The estimate.
    pub value: f64,
    /// Half-width of its 95% interval (Student's t on n − 2 degrees of
    /// freedom).
    pub ci: f64,
}

impl Cost {
    fn verdict(&self) -> CostVerdict {
        if self.value - self.ci > 0.0 {
            CostVerdict::Positive
        } else if self.value + self.ci < 0.0 {
            CostVerdict::Negative
        } else {
            CostVerdict::ContainsZero
        }
    }
}

/// The fit's two costs with their intervals: per segment (µs) and per
/// byte (ns).
pub(super) fn costs(fit: &PacketByteFit) -> (Cost, Cost) {
    let df = fit.n.saturating_sub(2) as u32;
    let t = analysis::t_quantile(0.95, df);
    let t = if t.is_finite() { t } else { f64::INFINITY };
    (
        Cost {
            value: fit.per_packet_us,
            ci: t * fit.per_packet_se_us,
        },
        Cost {
            value: fit.per_byte_ns,
            ci: t * fit.per_byte_se_ns,
        },
    )
}

/// Whether the fit failed: a cost below zero beyond its interval, or R²
/// below 0.
pub(super) fn failed(fit: &PacketByteFit) -> bool {
    let (seg, byte) = costs(fit);
    fit.r2 < 0.0
        || seg.verdict() == CostVerdict::Negative
        || byte.verdict() == CostVerdict::Negative
}

/// The smallest and the largest MSS of the sweep set side by side: the
/// segments each sent per 20 MB and the sender's CPU per 20 MB (mean ± 95%
/// CI half-width), the evidence for why a fit fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct MssContrast {
    /// The smallest MSS, bytes.
    pub small_mss: f64,
    /// The largest MSS, bytes.
    pub large_mss: f64,
    /// Segments per 20 MB at the smallest MSS over those at the largest.
    pub segments_ratio: f64,
    /// Sender CPU seconds per 20 MB at the smallest MSS.
    pub cpu_small: CurvePoint,
    /// Sender CPU seconds per 20 MB at the largest MSS.
    pub cpu_large: CurvePoint,
    /// The trials ran with segmentation and receive offloads off, so the
    /// stack handled every segment.
    pub offloads_off: bool,
}

/// Why the fit failed, from the data: CPU time that does not follow the
/// segment count, or a fit no better than the mean.
fn failure_reason(fit: &PacketByteFit, contrast: Option<&MssContrast>) -> String {
    if let Some(c) = contrast {
        let rose = c.cpu_small.mean > c.cpu_large.mean && differ(&c.cpu_small, &c.cpu_large);
        if c.segments_ratio > 1.5 && !rose {
            let why = if c.offloads_off {
                "with segmentation and receive offloads off, so offload does not explain it: \
                 these trials are too few or too noisy to show a per-segment cost"
            } else {
                "as when segmentation offload hands the stack 64 KB segments whatever the MSS, \
                 so there is no per-segment cost to find"
            };
            return format!(
                "at MSS {:.0} the sender sent {:.1}× the segments per 20 MB it sent at MSS {:.0}, \
                 yet used {} of CPU per 20 MB against {} ({}): its CPU time does not follow \
                 the segment count, {why}",
                c.small_mss,
                c.segments_ratio,
                c.large_mss,
                measure(c.cpu_small.mean, Some(c.cpu_small.ci), Unit::Si("s")),
                measure(c.cpu_large.mean, Some(c.cpu_large.ci), Unit::Si("s")),
                if c.cpu_small.mean < c.cpu_large.mean && differ(&c.cpu_small, &c.cpu_large) {
                    "less, beyond the 95% CIs"
                } else {
                    "no more beyond the 95% CIs"
                },
            );
        }
    }
    format!(
        "the trials' CPU times scatter around any per-segment plus per-byte line (rms error \
         {:.1}%) more than the segment counts move them",
        fit.rms_rel_error * 100.0
    )
}

/// The finding under the per-segment / per-byte fit. `contrast` is the
/// evidence for a failure's reason.
pub(super) fn packet_byte_sentence(fit: &PacketByteFit, contrast: Option<&MssContrast>) -> String {
    let (seg, byte) = costs(fit);
    let quality = format!(
        "R² {:.2}, rms error {:.1}%, {} trials",
        fit.r2,
        fit.rms_rel_error * 100.0,
        fit.n
    );
    let seg_words = measure(seg.value, Some(seg.ci), Unit::Fixed("µs per segment"));
    let byte_words = measure(byte.value, Some(byte.ci), Unit::Fixed("ns per byte"));
    if failed(fit) {
        let what = match (seg.verdict(), byte.verdict()) {
            (CostVerdict::Negative, _) => format!(
                "a negative per-segment cost ({seg_words}, its 95% CI entirely below zero), \
                 which no stack can have"
            ),
            (_, CostVerdict::Negative) => format!(
                "a negative per-byte cost ({byte_words}, its 95% CI entirely below zero), \
                 which no stack can have"
            ),
            _ => format!(
                "R² {:.2}: the fit predicts the trials' CPU times worse than their mean",
                fit.r2
            ),
        };
        return format!(
            "The per-segment and per-byte fit failed ({quality}): it gives {what}, so neither \
             cost is reported. Why: {}.",
            failure_reason(fit, contrast)
        );
    }
    let detect = |c: &Cost, unit: &str| {
        format!(
            "a cost below {:.3} {unit} (the CI half-width) could not have been detected by these \
             trials",
            c.ci
        )
    };
    let body = match (seg.verdict(), byte.verdict()) {
        (CostVerdict::Positive, CostVerdict::Positive) => {
            // At 1 KB segments, per 1024 bytes: one segment against 1024 bytes.
            let per_segment = seg.value * 1e3;
            let per_bytes = byte.value * 1024.0;
            format!(
                "The sender's CPU costs {seg_words} plus {byte_words} ({quality}): at 1 KB \
                 segments the per-segment part is {:.0}% of the total",
                per_segment / (per_segment + per_bytes) * 100.0
            )
        }
        (CostVerdict::ContainsZero, CostVerdict::Positive) => format!(
            "The sender's CPU costs {byte_words} ({quality}); the per-segment cost is not \
             distinguishable from zero ({seg_words}): {}",
            detect(&seg, "µs per segment")
        ),
        (CostVerdict::Positive, _) => format!(
            "The sender's CPU costs {seg_words} ({quality}); the per-byte cost is not \
             distinguishable from zero ({byte_words}): {}",
            detect(&byte, "ns per byte")
        ),
        _ => format!(
            "Neither the per-segment ({seg_words}) nor the per-byte cost ({byte_words}) is \
             distinguishable from zero ({quality}): {} and {}",
            detect(&seg, "µs per segment"),
            detect(&byte, "ns per byte")
        ),
    };
    let spread = if fit.r2 < 0.5 {
        format!(
            "; the fit explains only {:.0}% of the spread between trials",
            fit.r2 * 100.0
        )
    } else {
        String::new()
    };
    format!("{body}{spread}.")
}

/// The sentence on a curve's shape; a flat curve says how large a change
/// could have gone unseen, in `unit`.
pub(super) fn shape_finding(
    what: &str,
    factor: &str,
    curve: &[CurvePoint],
    unit: &str,
    fmt_x: &dyn Fn(f64) -> String,
) -> String {
    analysis::findings::shape_finding(what, factor, curve, fmt_x, &|r| {
        format!("{} {unit}", significant(r))
    })
}

/// A positive number with three significant digits.
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
}
