//! XY figures: curves with markers and CI whiskers, grouped bars, and a
//! gray reference curve.

use super::axes::Axis;
use super::frame::{draw_err, draw_legend, draw_marker, finish_svg, legend_size, xy_chart, Chart};
use super::style::{look, reference_look, Look, DENSE, PLOT_HEIGHT, WIDTH};
use crate::doc::{Figure, Point, Series, SeriesStyle};
use crate::error::ReportError;
use plotters::prelude::*;

/// Renders an XY figure: series with markers, lines, CI whiskers, a gray
/// reference curve, and a legend under the plot when there is more than
/// one series or a reference.
pub fn render_figure(f: &Figure) -> Result<String, ReportError> {
    let all: Vec<&Series> = f.reference.iter().chain(f.series.iter()).collect();
    let bars = f.series.iter().any(|s| s.style == SeriesStyle::Bars);
    let from_zero = f.y_from_zero || bars;
    let mut xs = Vec::new();
    let mut means = Vec::new();
    let mut bounds = Vec::new();
    for s in &all {
        for p in &s.points {
            xs.push(p.x);
            means.push(p.y);
            bounds.extend(p.ci_lo);
            bounds.extend(p.ci_hi);
        }
    }
    // Error bars widen the axis, but only so far: below zero when every
    // mean is positive on a from-zero axis, or beyond twice the largest
    // mean, they are cut at the edge (and drawn without a cap there).
    let finite = means.iter().copied().filter(|v| v.is_finite());
    let top = finite.clone().fold(f64::NEG_INFINITY, f64::max);
    let bottom = finite.fold(f64::INFINITY, f64::min);
    let mut ys = means.clone();
    for b in bounds {
        let b = if !f.log_y && top > 0.0 {
            b.min(2.0 * top)
        } else {
            b
        };
        let b = if !f.log_y && from_zero && bottom >= 0.0 {
            b.max(0.0)
        } else {
            b
        };
        ys.push(b);
    }
    let xa = Axis::new(&xs, f.log_x, &f.x_ticks, false);
    let ya = Axis::new(&ys, f.log_y, &f.y_ticks, from_zero);

    let legend: Vec<(String, Look, SeriesStyle)> = {
        let mut v = Vec::new();
        if let Some(r) = &f.reference {
            v.push((r.name.clone(), reference_look(), r.style));
        }
        for (i, s) in f.series.iter().enumerate() {
            v.push((s.name.clone(), look(i), s.style));
        }
        if v.len() > 1 {
            v
        } else {
            Vec::new()
        }
    };
    let (cols, legend_h) = legend_size(legend.iter().map(|l| l.0.as_str()));
    let height = PLOT_HEIGHT + legend_h;

    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&f.title, e))?;
        let (plot, leg) = root.split_vertically(PLOT_HEIGHT);
        let mut chart = xy_chart(&plot, &xa, &ya, &f.x_label, &f.y_label, &f.title)?;

        let nbars = f
            .series
            .iter()
            .filter(|s| s.style == SeriesStyle::Bars)
            .count();
        let bar_slot = bar_width(&f.series, &xa);
        let mut bar_i = 0usize;
        let mut markers = Vec::new();
        if let Some(r) = &f.reference {
            let at = draw_series(&mut chart, r, reference_look(), &xa, &ya, None)
                .map_err(|e| draw_err(&f.title, e))?;
            markers.push((at, reference_look()));
        }
        for (i, s) in f.series.iter().enumerate() {
            let bar = if s.style == SeriesStyle::Bars {
                bar_i += 1;
                Some((bar_i - 1, nbars, bar_slot))
            } else {
                None
            };
            let at = draw_series(&mut chart, s, look(i), &xa, &ya, bar)
                .map_err(|e| draw_err(&f.title, e))?;
            markers.push((at, look(i)));
        }
        for (at, lk) in markers {
            let dense = at.len() > DENSE;
            for p in at {
                if dense {
                    root.draw(&Circle::new(p, 1, lk.color.filled()))
                        .map_err(|e| draw_err(&f.title, e))?;
                } else {
                    draw_marker(&root, p, lk.marker, lk.color)
                        .map_err(|e| draw_err(&f.title, e))?;
                }
            }
        }
        draw_legend(&leg, &legend, cols).map_err(|e| draw_err(&f.title, e))?;
        root.present().map_err(|e| draw_err(&f.title, e))?;
    }
    Ok(finish_svg(buf, &f.title))
}

/// Width of one bar group in plotting space: 80% of the smallest x gap.
fn bar_width(series: &[Series], xa: &Axis) -> f64 {
    let mut xs: Vec<f64> = series
        .iter()
        .filter(|s| s.style == SeriesStyle::Bars)
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .filter(|x| xa.ok(*x))
        .map(|x| xa.t(x))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let gap = xs
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min);
    let gap = if gap.is_finite() && gap > 0.0 {
        gap
    } else {
        (xa.hi - xa.lo) / 4.0
    };
    gap * 0.8
}

/// Draws one series (line or bars, then CI whiskers) and returns the
/// pixel positions where its markers go (none for bars and paths).
fn draw_series(
    chart: &mut Chart<'_, '_>,
    s: &Series,
    lk: Look,
    xa: &Axis,
    ya: &Axis,
    bar: Option<(usize, usize, f64)>,
) -> Result<Vec<(i32, i32)>, String> {
    let mut pts: Vec<&Point> = s
        .points
        .iter()
        .filter(|p| xa.ok(p.x) && ya.ok(p.y))
        .collect();
    pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (xa.t(p.x), ya.t(p.y))).collect();
    let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let line = lk.color.stroke_width(2);
    match (s.style, bar) {
        (SeriesStyle::Bars, Some((k, n, slot))) => {
            let w = slot / n as f64;
            let base = if ya.log { ya.lo } else { 0f64.max(ya.lo) };
            chart
                .draw_series(xy.iter().map(|&(x, y)| {
                    let x0 = x - slot / 2.0 + k as f64 * w;
                    Rectangle::new([(x0, base), (x0 + w * 0.92, y)], lk.color.filled())
                }))
                .map_err(e)?;
        }
        (SeriesStyle::Line | SeriesStyle::Path, _) | (SeriesStyle::Bars, None) => {
            if lk.dash.0 == 0 {
                chart
                    .draw_series(LineSeries::new(xy.iter().copied(), line))
                    .map_err(e)?;
            } else {
                chart
                    .draw_series(DashedLineSeries::new(
                        xy.iter().copied(),
                        lk.dash.0,
                        lk.dash.1,
                        line,
                    ))
                    .map_err(e)?;
            }
        }
        (SeriesStyle::Points, _) => {}
    }
    // CI whiskers: a vertical line from lo to hi with 10 px caps.
    let whisker = lk.color.stroke_width(1);
    for p in &pts {
        let (Some(lo), Some(hi)) = (p.ci_lo, p.ci_hi) else {
            continue;
        };
        let x = xa.t(p.x)
            + bar.map_or(0.0, |(k, n, slot)| {
                -slot / 2.0 + (k as f64 + 0.46) * slot / n as f64
            });
        if !ya.ok(hi) {
            continue;
        }
        let (top, upper_cap) = if ya.t(hi) > ya.hi {
            (ya.hi, false)
        } else {
            (ya.t(hi), true)
        };
        let (bottom, lower_cap) = if ya.ok(lo) && ya.t(lo) >= ya.lo {
            (ya.t(lo), true)
        } else {
            (ya.lo, false)
        };
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, bottom), (x, top)],
                whisker,
            )))
            .map_err(e)?;
        let mut caps = Vec::new();
        if upper_cap {
            caps.push((x, top));
        }
        if lower_cap {
            caps.push((x, bottom));
        }
        chart
            .draw_series(
                caps.into_iter().map(|c| {
                    EmptyElement::at(c) + PathElement::new(vec![(-5, 0), (5, 0)], whisker)
                }),
            )
            .map_err(e)?;
    }
    if bar.is_none() && s.style != SeriesStyle::Path {
        return Ok(xy.iter().map(|c| chart.backend_coord(c)).collect());
    }
    Ok(Vec::new())
}
