//! Numbers as people read them: a mean with its 95% CI half-width rounded
//! to the CI's second significant digit, SI prefixes (Gbit/s, µs, MB),
//! percentages.

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

/// A mean with its 95% CI half-width: `9.41 ± 0.12 Gbit/s`.
///
/// The half-width is rounded to two significant digits and the mean to the
/// same decimal place; the prefix follows the mean. Without a half-width
/// (`None`, NaN: a single trial) the mean alone is written with three
/// significant digits; a zero half-width (identical trials) is `± 0`.
/// `—` when the mean is not finite.
pub fn measure(mean: f64, ci: Option<f64>, unit: Unit) -> String {
    if !mean.is_finite() {
        return "—".into();
    }
    let ci = ci.filter(|c| c.is_finite() && *c >= 0.0);
    let magnitude = if mean != 0.0 { mean } else { ci.unwrap_or(0.0) };
    let (f, u) = unit.scale_for(magnitude);
    let m = mean * f;
    match ci {
        None => join(format!("{m:.*}", decimals_for(m, 3)), &u),
        Some(0.0) => join(format!("{m:.*} ± 0", decimals_for(m, 3)), &u),
        Some(c) => {
            let c = c * f;
            let d = decimals_for(c, 2);
            join(format!("{m:.d$} ± {c:.d$}"), &u)
        }
    }
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
/// 1.5K, 64K, 1M.
pub fn bytes_short(v: f64) -> String {
    const K: f64 = 1024.0;
    let (d, s) = if v.abs() >= K * K * K {
        (K * K * K, "G")
    } else if v.abs() >= K * K {
        (K * K, "M")
    } else if v.abs() >= K {
        (K, "K")
    } else {
        (1.0, "")
    };
    let x = v / d;
    let whole = |y: f64| (y - y.round()).abs() < 1e-9;
    let t = if whole(x) {
        format!("{}", x.round())
    } else if whole(x * 4.0) {
        format!("{x:.2}").trim_end_matches('0').to_string()
    } else if whole(v) && v.abs() < 1e6 {
        return format!("{}", v.round());
    } else {
        format!("{x:.1}")
    };
    format!("{t}{s}")
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
            "18.23 ± 0.56 µs"
        );
        assert_eq!(
            measure(1234.6e6, Some(35e6), Unit::Si("bit/s")),
            "1.235 ± 0.035 Gbit/s"
        );
        assert_eq!(measure(512.0, Some(37.0), Unit::Plain), "512 ± 37");
        assert_eq!(
            measure(0.0123, Some(0.0021), Unit::Percent),
            "1.23 ± 0.21 %"
        );
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
