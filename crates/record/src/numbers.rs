//! Numbers as stored values are written out, for every crate above: the
//! CSV export's text of a metric or a setting (the shortest text that reads
//! back as the value rounded to a fixed number of significant digits;
//! whole numbers exactly), and
//! a setting's level as its flag takes it (`64K`, `100mbit`, `1ms`).
//!
//! How people read means and intervals (the significant-digit rule of
//! tables and sentences) is `report::format`; this module is only the
//! part the store's own exports need.

/// Significant digits a measured metric keeps in CSV and JSON exports:
/// 6, beyond what any trial resolves (`0.23079999999999998` is `0.2308`).
pub const METRIC_DIGITS: i32 = 6;

/// Significant digits a setting keeps in the CSV export: 12, enough to
/// write back anything a user types and few enough to drop the artefacts
/// of arithmetic on `f64` (`0.30000000000000004` is `0.3`).
pub const SETTING_DIGITS: i32 = 12;

/// `v` rounded to `digits` significant digits (`v` itself when it is 0 or
/// not finite).
pub fn round_significant(v: f64, digits: i32) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let magnitude = v.abs().log10().floor() as i32;
    let decimals = digits - 1 - magnitude;
    // Scale by an exact power of ten on the side that keeps it exact.
    if decimals >= 0 {
        let p = 10f64.powi(decimals);
        let r = (v * p).round() / p;
        if r.is_finite() {
            r
        } else {
            v
        }
    } else {
        let p = 10f64.powi(-decimals);
        (v / p).round() * p
    }
}

/// The text of a value rounded to `digits` significant digits: the
/// shortest decimal that reads back as the rounded value (Rust's `{}` of an
/// `f64`), empty when the value is not finite.
pub fn shortest(v: f64, digits: i32) -> String {
    if v.is_finite() {
        round_significant(v, digits).to_string()
    } else {
        String::new()
    }
}

/// A measured metric's text in CSV: a whole number (a count of bytes,
/// datagrams, retransmits) exactly, anything else with [`METRIC_DIGITS`]
/// significant digits.
pub fn metric_text(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 2f64.powi(53) {
        format!("{v:.0}")
    } else {
        shortest(v, METRIC_DIGITS)
    }
}

/// A setting's text in CSV: [`SETTING_DIGITS`] significant digits.
pub fn setting_text(v: f64) -> String {
    shortest(v, SETTING_DIGITS)
}

/// A byte count as tcplab's size flags take it, in powers of 1024: `512`,
/// `1K`, `1.5K`, `64K`, `1M`; a size that is no short multiple (`1460`)
/// stays in bytes.
pub fn size_text(v: f64) -> String {
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

/// A rate in bit/s as `--send-rate` and `--link rate=` take it: the
/// largest decimal prefix that leaves a number of at least 1, written
/// exactly: `100mbit`, `1.5gbit`, `64kbit`, `999bit`.
pub fn rate_text(bps: f64) -> String {
    let a = bps.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "gbit")
    } else if a >= 1e6 {
        (1e6, "mbit")
    } else if a >= 1e3 {
        (1e3, "kbit")
    } else {
        (1.0, "bit")
    };
    format!("{}{s}", setting_text(bps / d))
}

/// A duration in nanoseconds as a duration flag takes it: `0`, `500ns`,
/// `2us`, `1ms`, `1.5ms`.
pub fn nanos_text(ns: f64) -> String {
    if ns == 0.0 {
        return "0".into();
    }
    let a = ns.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "s")
    } else if a >= 1e6 {
        (1e6, "ms")
    } else if a >= 1e3 {
        (1e3, "us")
    } else {
        (1.0, "ns")
    };
    format!("{}{s}", setting_text(ns / d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_drop_f64_artefacts_and_keep_six_digits() {
        assert_eq!(metric_text(0.23079999999999998), "0.2308");
        assert_eq!(metric_text(0.1 + 0.2), "0.3");
        assert_eq!(metric_text(6222756903.369763), "6222760000");
        assert_eq!(metric_text(2.292540217782457), "2.29254");
        assert_eq!(metric_text(0.000010631502191328507), "0.0000106315");
        assert_eq!(metric_text(229.0), "229");
        // Counts stay exact.
        assert_eq!(metric_text(76829696.0), "76829696");
        assert_eq!(metric_text(-11.0), "-11");
        assert_eq!(metric_text(0.0), "0");
        assert_eq!(metric_text(f64::NAN), "");
    }

    #[test]
    fn settings_keep_what_was_typed() {
        assert_eq!(setting_text(0.1), "0.1");
        assert_eq!(setting_text(0.5), "0.5");
        assert_eq!(setting_text(0.123456789), "0.123456789");
        assert_eq!(setting_text(0.1 * 3.0), "0.3");
    }

    #[test]
    fn levels_read_as_their_flags_take_them() {
        assert_eq!(size_text(65536.0), "64K");
        assert_eq!(size_text(1536.0), "1.5K");
        assert_eq!(size_text(1460.0), "1460");
        assert_eq!(size_text(4096.0), "4K");
        assert_eq!(rate_text(100e6), "100mbit");
        assert_eq!(rate_text(1.5e9), "1.5gbit");
        assert_eq!(rate_text(8e6), "8mbit");
        assert_eq!(rate_text(123456.0), "123.456kbit");
        assert_eq!(rate_text(999.0), "999bit");
        assert_eq!(nanos_text(1e6), "1ms");
        assert_eq!(nanos_text(2500.0), "2.5us");
        assert_eq!(nanos_text(0.0), "0");
    }
}
