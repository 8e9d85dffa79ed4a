//! Numbers as people read them, by one rule everywhere tcplab prints a
//! measured value (bench and show tables, reports, compare, study
//! sentences):
//!
//! * A mean is written with [`MEAN_DIGITS`] (3) significant digits and its
//!   95% CI half-width to the same decimal place: `9.41 ± 0.12 Gbit/s`.
//! * A value that needs more digits gets them: when the half-width would
//!   round to nothing at that place, the mean gets digits down to the
//!   half-width's first significant digit (`96.075 ± 0.008`), at most
//!   [`MAX_DIGITS`] in all.
//! * A wide CI gets fewer: the half-width never shows more than
//!   [`CI_MAX_DIGITS`] (3) significant digits, and the mean stops at the
//!   same place (`28 ± 123`, not `28.1 ± 122.7`).
//! * One unit per metric (throughput in bit/s, bytes per CPU second in
//!   B/CPU-s, times in s), with the SI prefix chosen per column or figure,
//!   not per cell ([`column`], [`scale_for_values`]).
//! * [`SMALL_SAMPLE_MARK`] beside a mean of fewer than 5 trials whose CI is
//!   wider than the mean itself ([`small_sample`]).
//!
//! Exports keep the stored values (`record::numbers`).

/// The unit of a value, which decides its prefix and suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// An SI base unit that takes a prefix: `Si("bit/s")` gives Gbit/s,
    /// `Si("s")` gives µs, `Si("B/CPU-s")` gives MB/CPU-s.
    Si(&'static str),
    /// A fraction shown as a percentage (0.0123 → 1.23 %).
    Percent,
    /// A number with a fixed suffix and no prefix, e.g. `Fixed("µs/KB")`
    /// for values already in µs per KB.
    Fixed(&'static str),
    /// A plain number (counts, ratios).
    Plain,
}

const PREFIXES: [(f64, &str); 8] = [
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-3, "m"),
    (1e-6, "µ"),
    (1e-9, "n"),
];

impl Unit {
    /// The factor to multiply values of magnitude `magnitude` by, and the
    /// unit text to write after them.
    pub fn scale_for(self, magnitude: f64) -> (f64, String) {
        match self {
            Unit::Si(base) => {
                let m = magnitude.abs();
                let (f, p) = if !m.is_finite() || m == 0.0 {
                    (1.0, "")
                } else {
                    PREFIXES
                        .iter()
                        .find(|(f, _)| m >= *f * 0.9995)
                        .copied()
                        .unwrap_or((1e-9, "n"))
                };
                (1.0 / f, format!("{p}{base}"))
            }
            Unit::Percent => (100.0, "%".into()),
            Unit::Fixed(s) => (1.0, s.into()),
            Unit::Plain => (1.0, String::new()),
        }
    }
}

/// Decimals that show `sig` significant digits of `v` (0 when `v` is 0).
fn decimals_for(v: f64, sig: i32) -> usize {
    if v == 0.0 || !v.is_finite() {
        return 0;
    }
    let mag = v.abs().log10().floor() as i32;
    let d = (sig - 1 - mag).clamp(0, 12);
    // 0.99996 with three digits rounds to 1.00, not 1.000.
    let p = 10f64.powi(d);
    if d > 0 && ((v.abs() * p).round() / p) >= 10f64.powi(mag + 1) {
        return (d - 1) as usize;
    }
    d as usize
}

fn join(number: String, unit: &str) -> String {
    if unit.is_empty() {
        number
    } else {
        format!("{number} {unit}")
    }
}

/// A single value with three significant digits and its unit, e.g.
/// `9.41 Gbit/s`, `18.2 µs`, `1.23 %`; `—` when it is not finite.
pub fn number(v: f64, unit: Unit) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let (f, u) = unit.scale_for(v);
    let s = v * f;
    join(format!("{s:.*}", decimals_for(s, 3)), &u)
}

/// Significant digits of a mean (and of a single value).
pub const MEAN_DIGITS: i32 = 3;

/// The most significant digits a CI half-width shows; a mean with a wider
/// CI shows fewer digits than [`MEAN_DIGITS`].
pub const CI_MAX_DIGITS: i32 = 3;

/// The most significant digits a mean shows, however narrow its CI.
pub const MAX_DIGITS: i32 = 6;

/// The mark beside a mean of fewer than [`SMALL_SAMPLE_TRIALS`] trials
/// whose CI is wider than the mean.
pub const SMALL_SAMPLE_MARK: &str = "‡";

/// Fewer trials than this may carry [`SMALL_SAMPLE_MARK`].
pub const SMALL_SAMPLE_TRIALS: u32 = 5;

/// The footnote under a table with a [`SMALL_SAMPLE_MARK`].
pub const SMALL_SAMPLE_NOTE: &str = "‡ fewer than 5 trials and a CI wider than the mean";

/// Whether a mean of `n` trials with half-width `ci` carries
/// [`SMALL_SAMPLE_MARK`]: fewer than 5 trials and a CI wider than the mean.
pub fn small_sample(n: u32, mean: f64, ci: Option<f64>) -> bool {
    n < SMALL_SAMPLE_TRIALS && ci.is_some_and(|c| c.is_finite() && c > mean.abs())
}

/// The power of ten of a value's first significant digit.
fn magnitude(v: f64) -> i32 {
    v.abs().log10().floor() as i32
}

/// The power of ten of the last digit written for `mean ± ci` (both
/// already scaled to their prefix), by the rule in the module's doc.
fn last_place(mean: f64, ci: f64) -> i32 {
    let ci_lead = magnitude(ci);
    let ci_finest = ci_lead - (CI_MAX_DIGITS - 1);
    if mean == 0.0 {
        return ci_lead.max(ci_finest);
    }
    let mean_place = magnitude(mean) - (MEAN_DIGITS - 1);
    let finest = magnitude(mean) - (MAX_DIGITS - 1);
    mean_place.min(ci_lead).max(ci_finest).max(finest)
}

/// `v` written to the decimal place `10^place` (whole numbers rounded to
/// tens, hundreds… when `place` is above 0).
fn to_place(v: f64, place: i32) -> String {
    if place <= 0 {
        format!("{v:.*}", (-place) as usize)
    } else {
        let p = 10f64.powi(place);
        format!("{:.0}", (v / p).round() * p)
    }
}

/// A mean with its 95% CI half-width: `9.41 ± 0.12 Gbit/s`, by the rule
/// in the module's doc (three significant digits, the half-width to the
/// same place; more digits for a narrow CI, fewer for a wide one).
///
/// The prefix follows the mean. Without a half-width (`None`, NaN: a
/// single trial) the mean alone is written with three significant digits;
/// a zero half-width (identical trials), or one that rounds to nothing at
/// the sixth significant digit, is `± 0`. `—` when the mean is not
/// finite.
pub fn measure(mean: f64, ci: Option<f64>, unit: Unit) -> String {
    if !mean.is_finite() {
        return "—".into();
    }
    let ci = ci.filter(|c| c.is_finite() && *c >= 0.0);
    let magnitude = if mean != 0.0 { mean } else { ci.unwrap_or(0.0) };
    let (f, u) = unit.scale_for(magnitude);
    let m = mean * f;
    match ci {
        None => join(format!("{m:.*}", decimals_for(m, MEAN_DIGITS)), &u),
        Some(0.0) => join(format!("{m:.*} ± 0", decimals_for(m, MEAN_DIGITS)), &u),
        Some(c) => {
            let c = c * f;
            let place = last_place(m, c);
            if c < 0.5 * 10f64.powi(place) {
                // Below the finest digit a mean shows (the rounding noise
                // of identical trials, or a CI under a millionth of the
                // mean): `± 0`, never `0.961538 ± 0.000000`.
                return join(format!("{m:.*} ± 0", decimals_for(m, MEAN_DIGITS)), &u);
            }
            join(
                format!("{} ± {}", to_place(m, place), to_place(c, place)),
                &u,
            )
        }
    }
}

/// A network throughput a study computed in bytes per second, written as
/// throughput is everywhere: in bit/s (`measure` of 8× the value), so a
/// figure never reads as both `36.8 Gbit/s` and `4.60 GB/s`. Memory and
/// copy rates stay in B/s.
pub fn throughput_of_bytes(bytes_per_s: f64, ci: Option<f64>) -> String {
    measure(bytes_per_s * 8.0, ci.map(|c| c * 8.0), Unit::Si("bit/s"))
}

/// The prefix for a whole axis or column: the factor to multiply values by
/// and the unit text, chosen for the largest magnitude among `values`.
pub fn scale_for_values(values: impl IntoIterator<Item = f64>, unit: Unit) -> (f64, String) {
    let max = values
        .into_iter()
        .filter(|v| v.is_finite())
        .map(f64::abs)
        .fold(0.0, f64::max);
    unit.scale_for(max)
}

/// A table column of means with CI half-widths sharing one prefix: the
/// unit text for the header (e.g. `Gbit/s`) and one cell per value, each
/// `measure`d without its unit (`9.41 ± 0.12`). The prefix is chosen for
/// the largest mean.
pub fn column(values: &[(f64, Option<f64>)], unit: Unit) -> (String, Vec<String>) {
    let (f, u) = scale_for_values(values.iter().map(|v| v.0), unit);
    let cells = values
        .iter()
        .map(|(m, c)| measure(m * f, c.map(|c| c * f), Unit::Plain))
        .collect();
    (u, cells)
}

/// A byte count in powers of 1024 as tcplab's flags write them: 512, 1K,
/// 1.5K, 64K, 1M (`record::numbers::size_text`).
pub fn bytes_short(v: f64) -> String {
    record::numbers::size_text(v)
}

/// A tick label: a compact number with an SI suffix for large values
/// (0.5, 20, 1.5k, 2M).
pub fn compact(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    let (d, s) = if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    let mut t = format!("{x:.3}");
    if t.contains('.') {
        t = t.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{t}{s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_ci_rounds_to_the_ci() {
        assert_eq!(
            measure(9.4123e9, Some(0.1234e9), Unit::Si("bit/s")),
            "9.41 ± 0.12 Gbit/s"
        );
        assert_eq!(
            measure(18.234e-6, Some(0.56e-6), Unit::Si("s")),
            "18.2 ± 0.6 µs"
        );
        assert_eq!(measure(512.0, Some(37.0), Unit::Plain), "512 ± 37");
        assert_eq!(
            measure(0.0123, Some(0.0021), Unit::Percent),
            "1.23 ± 0.21 %"
        );
        // Whole numbers round to the same place: three digits of the mean.
        assert_eq!(measure(15428.0, Some(3685.0), Unit::Plain), "15400 ± 3700");
    }

    #[test]
    fn float_noise_of_identical_trials_is_a_zero_ci_and_a_real_narrow_ci_is_not() {
        // Five identical 25/26 ratios: Student's t leaves ~1e-17.
        assert_eq!(
            measure(0.961_538_461_5, Some(1.2e-17), Unit::Plain),
            "0.962 ± 0"
        );
        // A millionth of the mean is measured, and written to its digit.
        assert_eq!(
            measure(0.961_538, Some(0.000_001), Unit::Plain),
            "0.961538 ± 0.000001"
        );
    }

    #[test]
    fn a_narrow_ci_gives_the_mean_more_digits() {
        // Three digits would write 96.1 ± 0.0: the CI's first digit shows.
        assert_eq!(
            measure(96.0746e6, Some(0.0082e6), Unit::Si("bit/s")),
            "96.075 ± 0.008 Mbit/s"
        );
        assert_eq!(measure(2.0, Some(0.0004), Unit::Plain), "2.0000 ± 0.0004");
        // …but never more than six significant digits: a CI below the
        // sixth is written as none.
        assert_eq!(measure(1.0, Some(1e-9), Unit::Plain), "1.00 ± 0");
    }

    #[test]
    fn a_wide_ci_gives_the_mean_fewer_digits() {
        // The "28057.7 ± 122656.1 Mbit/s".
        assert_eq!(
            measure(28057.7e6, Some(122656.1e6), Unit::Si("bit/s")),
            "28 ± 123 Gbit/s"
        );
        assert_eq!(measure(2.04, Some(13.6), Unit::Plain), "2.0 ± 13.6");
        assert_eq!(measure(0.0, Some(0.3), Unit::Plain), "0.0 ± 0.3");
    }

    #[test]
    fn the_small_sample_mark_needs_few_trials_and_a_ci_wider_than_the_mean() {
        assert!(small_sample(2, 28.0, Some(123.0)));
        assert!(small_sample(4, -1.0, Some(1.5)));
        assert!(!small_sample(5, 28.0, Some(123.0)));
        assert!(!small_sample(2, 28.0, Some(20.0)));
        assert!(!small_sample(1, 28.0, None));
        assert!(!small_sample(2, 28.0, Some(f64::NAN)));
    }

    #[test]
    fn single_trials_and_edge_cases() {
        assert_eq!(measure(9.4123e9, None, Unit::Si("bit/s")), "9.41 Gbit/s");
        assert_eq!(
            measure(9.4123e9, Some(f64::NAN), Unit::Si("bit/s")),
            "9.41 Gbit/s"
        );
        assert_eq!(measure(3.0, Some(0.0), Unit::Plain), "3.00 ± 0");
        assert_eq!(measure(f64::NAN, Some(1.0), Unit::Plain), "—");
        assert_eq!(measure(0.0, None, Unit::Fixed("µs/KB")), "0 µs/KB");
        // 999.96 Mbit/s is 1.00 Gbit/s, not "1000 Mbit/s".
        assert_eq!(number(999.96e6, Unit::Si("bit/s")), "1.00 Gbit/s");
        assert_eq!(number(250e-6, Unit::Si("s")), "250 µs");
        assert_eq!(number(3.2e8, Unit::Si("B/CPU-s")), "320 MB/CPU-s");
    }

    #[test]
    fn columns_share_a_prefix() {
        let (u, cells) = column(
            &[(2.5e9, Some(0.1e9)), (25e9, Some(1.25e9)), (900e6, None)],
            Unit::Si("bit/s"),
        );
        assert_eq!(u, "Gbit/s");
        assert_eq!(cells, ["2.50 ± 0.10", "25.0 ± 1.2", "0.900"]);
    }

    #[test]
    fn short_forms() {
        assert_eq!(bytes_short(65536.0), "64K");
        assert_eq!(bytes_short(1536.0), "1.5K");
        assert_eq!(bytes_short(1460.0), "1460");
        assert_eq!(bytes_short(10.0), "10");
        assert_eq!(compact(25000.0), "25k");
        assert_eq!(compact(0.25), "0.25");
        assert_eq!(compact(2_000_000.0), "2M");
    }
}
