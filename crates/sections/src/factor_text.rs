//! A point's factors as the reports show them: a factor's axis label, its
//! level as text or as a number, a point's label. Everything comes from the
//! factor table (`record::factor`) and the typed levels; only the
//! formatting (`report::format`) is decided here.

use analysis::findings::size_words;
use analysis::PointSummary;
use record::factor::{factor_info, FactorKind, Level};
use record::TrialParams;
use report::format::{compact, number};
use report::Unit;

/// Whether factor `f`'s levels are byte sizes.
pub fn is_size(f: &str) -> bool {
    factor_info(f).is_some_and(|i| i.kind.is_bytes())
}

/// A factor's name for axes and headers, with its unit (the table's label).
pub fn factor_label(f: &str) -> String {
    factor_info(f).map_or_else(|| f.replace('_', " "), |i| i.label.to_string())
}

/// A factor's level as text.
pub fn factor_text(params: &TrialParams, f: &str) -> String {
    let Some(v) = params.value(f) else {
        return "—".into();
    };
    match &v.level {
        Level::Auto(_) => "auto".into(),
        Level::Unset => "—".into(),
        Level::Switch(b) => if *b { "on" } else { "off" }.into(),
        // Numbers as their flags take them (64K, 100mbit, 1ms), as the
        // terminal table and progress lines write them.
        Level::Int(_) | Level::Float(_) => v.typed_text(),
        Level::Name(s) => s.clone(),
        Level::Load(_) | Level::HostSpeed(_) | Level::Pin(_) => v
            .fields()
            .unwrap_or_default()
            .iter()
            .map(|x| x.as_str().map_or(x.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(":"),
    }
}

/// A factor's level as a number, when it is one.
pub fn factor_number(params: &TrialParams, f: &str) -> Option<f64> {
    params.value(f).and_then(|v| v.number())
}

/// `write_size=64K, api=write` for the given factors.
pub fn point_label(p: &PointSummary, factors: &[String]) -> String {
    factors
        .iter()
        .map(|f| format!("{f}={}", factor_text(&p.params, f)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A numeric factor's levels per point (None where a point has no number).
pub fn numeric_factor(points: &[PointSummary], f: &str) -> Option<Vec<Option<f64>>> {
    let xs: Vec<Option<f64>> = points.iter().map(|p| factor_number(&p.params, f)).collect();
    let mut distinct: Vec<f64> = xs.iter().flatten().copied().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    (distinct.len() >= 2).then_some(xs)
}

/// A numeric level of factor `f` in words (`64 KB`, `10 Mbit/s`).
pub fn fmt_level(f: &str, v: f64) -> String {
    match factor_info(f).map(|i| i.kind) {
        Some(FactorKind::Bytes) => size_words(v),
        Some(FactorKind::Rate) => number(v, Unit::Si("bit/s")),
        _ => compact(v),
    }
}
