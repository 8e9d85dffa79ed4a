//! A point's factors as text, labels and numbers for the reports: which
//! factors are sizes, a factor's axis label, its level as text or as a
//! number, and a point's label. Kept together as one unit (the factor
//! table of issue 14 replaces this module as a whole).

use analysis::findings::size_words;
use analysis::PointSummary;
use report::format::{bytes_short, compact, number};
use report::Unit;
use serde_json::Value;

/// Factors whose values are byte sizes.
pub const SIZE_FACTORS: [&str; 7] = [
    "bytes",
    "write_size",
    "read_size",
    "sndbuf",
    "rcvbuf",
    "rcvlowat",
    "mss",
];

/// Whether factor `f`'s levels are byte sizes.
pub fn is_size(f: &str) -> bool {
    SIZE_FACTORS.contains(&f)
}

/// A factor's name for axes and headers, with its unit.
pub fn factor_label(f: &str) -> String {
    match f {
        "send_rate_bps" => "send rate (bit/s)".into(),
        "recv_work_ns_per_kb" => "receiver work (ns per KB)".into(),
        "duration_s" => "duration (s)".into(),
        "parallel" => "parallel connections".into(),
        _ if is_size(f) => format!("{} (bytes)", f.replace('_', " ")),
        _ => f.replace('_', " "),
    }
}

/// A point's parameters as JSON, keyed by factor.
pub fn params_json(p: &PointSummary) -> Value {
    serde_json::to_value(&p.params).unwrap_or(Value::Null)
}

/// A factor's value as text.
pub fn factor_text(params: &Value, f: &str) -> String {
    match params.get(f) {
        None | Some(Value::Null) if f == "rcvlowat" => "auto".into(),
        None | Some(Value::Null) => "—".into(),
        Some(Value::Bool(b)) => if *b { "on" } else { "off" }.into(),
        Some(Value::Number(n)) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            if is_size(f) {
                bytes_short(v)
            } else if f == "send_rate_bps" {
                number(v, Unit::Si("bit/s"))
            } else if f == "recv_work_ns_per_kb" {
                number(v * 1e-9, Unit::Si("s")) + "/KB"
            } else {
                n.to_string()
            }
        }
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => o
            .values()
            .map(|x| x.as_str().map_or(x.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(":"),
        Some(v) => v.to_string(),
    }
}

/// A factor's level as a number, when it is one.
pub fn factor_number(params: &Value, f: &str) -> Option<f64> {
    params.get(f).and_then(Value::as_f64)
}

/// `write_size=64K, api=write` for the given factors.
pub fn point_label(p: &PointSummary, factors: &[String]) -> String {
    let j = params_json(p);
    factors
        .iter()
        .map(|f| format!("{f}={}", factor_text(&j, f)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A numeric factor's levels per point (None where a point has no number).
pub fn numeric_factor(points: &[PointSummary], f: &str) -> Option<Vec<Option<f64>>> {
    let xs: Vec<Option<f64>> = points
        .iter()
        .map(|p| factor_number(&params_json(p), f))
        .collect();
    let mut distinct: Vec<f64> = xs.iter().flatten().copied().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    (distinct.len() >= 2).then_some(xs)
}

/// A numeric level of factor `f` in words (`64 KB`, `10 Mbit/s`).
pub fn fmt_level(f: &str, v: f64) -> String {
    if is_size(f) {
        size_words(v)
    } else if f == "send_rate_bps" {
        number(v, Unit::Si("bit/s"))
    } else {
        compact(v)
    }
}
