//! The figures of a run report: metrics against the numeric factors that
//! vary, and the finding sentences read off their curves. A measure the
//! validity rules leave out (`analysis::validity`) is never plotted nor
//! read into a finding; the section names it with its reason.

use crate::factor_text::{factor_label, fmt_level, is_size, numeric_factor, point_label};
use crate::metrics::{capitalize, ci_of, figure_groups, test_of, Metric};
use analysis::findings::{shape_finding, CurvePoint};
use analysis::validity::{why_left_out, LeftOut};
use analysis::{PointSummary, Summary};
use report::format::{number, scale_for_values};
use report::{Figure, Point, Section, Series, SeriesStyle, TickFormat};

/// One figure: metrics of `group` against factor `f`, one series per
/// combination of the other varying factors (and per metric when several).
/// Returns the figure and the finding sentences of its curves; the
/// measures in `left_out` are not drawn.
fn factor_figure(
    points: &[PointSummary],
    varying: &[String],
    f: &str,
    xs: &[Option<f64>],
    title: &str,
    group: &[Metric],
    left_out: &[LeftOut],
) -> Option<(Figure, Vec<String>)> {
    let others: Vec<String> = varying.iter().filter(|v| *v != f).cloned().collect();
    let unit = group[0].unit;
    let (scale, u) = scale_for_values(
        group
            .iter()
            .flat_map(|m| (0..points.len()).filter_map(|i| plotted(points, i, m, left_out)))
            .map(|s| s.mean),
        unit,
    );
    let mut series: Vec<(String, Vec<Point>, Vec<CurvePoint>)> = Vec::new();
    for m in group {
        for (i, (p, x)) in points.iter().zip(xs).enumerate() {
            let (Some(x), Some(sm)) = (x, plotted(points, i, m, left_out)) else {
                continue;
            };
            let combo = point_label(p, &others);
            let name = match (group.len() > 1, combo.is_empty()) {
                (true, true) => m.name.to_string(),
                (true, false) => format!("{} · {combo}", m.name),
                (false, true) => m.name.to_string(),
                (false, false) => combo,
            };
            let ci = ci_of(sm).unwrap_or(0.0);
            let idx = match series.iter().position(|s| s.0 == name) {
                Some(i) => i,
                None => {
                    series.push((name, Vec::new(), Vec::new()));
                    series.len() - 1
                }
            };
            series[idx]
                .1
                .push(Point::with_ci(*x, sm.mean * scale, ci * scale));
            series[idx].2.push(CurvePoint {
                x: *x,
                mean: sm.mean,
                ci,
            });
        }
    }
    if series.iter().all(|s| s.1.is_empty()) {
        return None;
    }
    let all_x: Vec<f64> = xs.iter().flatten().copied().collect();
    let (lo, hi) = all_x
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
            (a.min(v), b.max(v))
        });
    let what = group
        .iter()
        .map(|m| m.name)
        .collect::<Vec<_>>()
        .join(" and ");
    let y_label = if u.is_empty() {
        what.clone()
    } else {
        format!("{what} ({u})")
    };
    let mut fig = Figure::new(
        format!("{title} against {}", f.replace('_', " ")),
        factor_label(f),
        y_label,
    );
    fig.log_x = lo > 0.0 && hi / lo > 30.0;
    fig.x_ticks = if is_size(f) {
        TickFormat::Bytes
    } else {
        TickFormat::Number
    };
    let mut findings = Vec::new();
    let describe = series.len() <= 4;
    for (name, pts, curve) in series {
        if describe {
            let label = if name == what || name.is_empty() {
                capitalize(&what)
            } else if group.len() > 1 {
                capitalize(&name)
            } else {
                format!("{} ({name})", capitalize(&what))
            };
            findings.push(shape_finding(
                &label,
                &f.replace('_', " "),
                &curve,
                &|v| fmt_level(f, v),
                &|r| number(r, unit),
            ));
        }
        fig.series.push(Series::new(name, pts));
    }
    fig.caption = Some(format!(
        "Means over each point's trials; error bars: 95% CI (Student's t).{}",
        if fig.log_x {
            " Logarithmic x axis."
        } else {
            ""
        }
    ));
    Some((fig, findings))
}

/// Point `i`'s summary of metric `m`, when it has one the figures may
/// draw (not in `left_out`).
fn plotted<'a>(
    points: &'a [PointSummary],
    i: usize,
    m: &Metric,
    left_out: &[LeftOut],
) -> Option<&'a Summary> {
    if why_left_out(left_out, i, m.key).is_some() {
        return None;
    }
    points[i].metrics.get(m.key)
}

/// The Figures section: each metric group against each numeric varying
/// factor, with the shape of each curve in words; bars per point when only
/// categorical factors vary. The measures in `left_out` (computed over
/// `points`) are not drawn: a warning names each with its reason.
pub fn figures_section(
    points: &[PointSummary],
    varying: &[String],
    left_out: &[LeftOut],
) -> Section {
    let test = test_of(points);
    let mut s = Section::new("Figures");
    let drawn: Vec<&str> = figure_groups(test)
        .iter()
        .flat_map(|(_, g)| g.iter().map(|m| m.key))
        .collect();
    if points.len() >= 2 {
        for w in crate::left_out::left_out_lines(points, varying, left_out, |k| drawn.contains(&k))
        {
            s.warning(format!("Not plotted: {w}"));
        }
    }
    let numeric: Vec<(String, Vec<Option<f64>>)> = varying
        .iter()
        .filter_map(|f| numeric_factor(points, f).map(|xs| (f.clone(), xs)))
        .collect();
    if points.len() < 2 {
        s.paragraph("The run has one point: there is no curve to draw; see the table above.");
        return s;
    }
    if numeric.is_empty() {
        // Only categorical factors vary: one bar per point.
        let labels: Vec<(f64, String)> = points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64, point_label(p, varying)))
            .collect();
        for (title, group) in figure_groups(test) {
            let m = group[0];
            let (scale, u) = scale_for_values(
                (0..points.len())
                    .filter_map(|i| plotted(points, i, &m, left_out))
                    .map(|x| x.mean),
                m.unit,
            );
            let pts: Vec<Point> = (0..points.len())
                .filter_map(|i| {
                    plotted(points, i, &m, left_out).map(|sm| {
                        Point::with_ci(i as f64, sm.mean * scale, ci_of(sm).unwrap_or(0.0) * scale)
                    })
                })
                .collect();
            if pts.is_empty() {
                continue;
            }
            let y = if u.is_empty() {
                m.name.to_string()
            } else {
                format!("{} ({u})", m.name)
            };
            let mut fig = Figure::new(format!("{title} per point"), "point", y);
            fig.x_ticks = TickFormat::Labels(labels.clone());
            fig.series
                .push(Series::new(m.name, pts).with_style(SeriesStyle::Bars));
            fig.caption = Some("Means; error bars: 95% CI (Student's t).".into());
            s.push(fig);
        }
        return s;
    }
    for (f, xs) in &numeric {
        for (title, group) in figure_groups(test) {
            if let Some((fig, findings)) =
                factor_figure(points, varying, f, xs, title, &group, left_out)
            {
                s.push(fig);
                for t in findings {
                    s.finding(t);
                }
            }
        }
    }
    s
}
