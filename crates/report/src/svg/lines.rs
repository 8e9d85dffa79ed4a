//! XY figures: curves with markers and CI whiskers, grouped bars, and a
//! gray reference curve.

use super::axes::Axis;
use super::frame::{
    draw_err, draw_legend, draw_marker, finish_svg, legend_size, plot_width, xy_chart, Chart,
};
use super::style::{look, reference_look, Look, DENSE, PLOT_HEIGHT, WIDTH};
use crate::doc::{Figure, Point, Series, SeriesStyle};
use crate::error::ReportError;
use plotters::prelude::*;

/// The floor of a log y axis under error bars that reach zero or below: a
/// tenth of the smallest positive value plotted (mean or end of an error
/// bar). Such a bar is drawn down to the floor and ends there in an open
/// arrowhead instead of a cap. `None` when no bar needs it.
pub fn log_floor(f: &Figure) -> Option<f64> {
    if !f.log_y {
        return None;
    }
    let points = || {
        f.reference
            .iter()
            .chain(f.series.iter())
            .flat_map(|s| s.points.iter())
            .filter(|p| p.y.is_finite() && p.y > 0.0)
    };
    let cut = points().any(|p| p.ci_lo.is_some_and(|lo| lo <= 0.0) && p.ci_hi.is_some());
    if !cut {
        return None;
    }
    let smallest = points()
        .flat_map(|p| [Some(p.y), p.ci_lo, p.ci_hi])
        .flatten()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    smallest.is_finite().then_some(smallest / 10.0)
}

/// Renders an XY figure: series with markers, lines, CI whiskers, a gray
/// reference curve, and a legend under the plot when there is more than
/// one series or a reference. Every error bar lies inside the plot: the
/// y axis holds both ends (on a log axis, a lower end at or below zero is
/// cut at [`log_floor`] and drawn as an open arrowhead).
pub fn render_figure(f: &Figure) -> Result<String, ReportError> {
    let all: Vec<&Series> = f.reference.iter().chain(f.series.iter()).collect();
    let bars = f.series.iter().any(|s| s.style == SeriesStyle::Bars);
    let from_zero = f.y_from_zero || bars;
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for s in &all {
        for p in &s.points {
            xs.push(p.x);
            ys.push(p.y);
            ys.extend(p.ci_lo);
            ys.extend(p.ci_hi);
        }
    }
    // The y axis holds every error bar whole; on a log axis a lower end at
    // or below zero is cut at the floor, which the axis then holds.
    let floor = log_floor(f);
    ys.extend(floor);
    let ya = Axis::new(&ys, f.log_y, &f.y_ticks, from_zero);
    // Ticks at the measured x values, not at the reference curve's.
    let measured: Vec<f64> = f
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .collect();
    let xa = Axis::x(&xs, &measured, f.log_x, &f.x_ticks, plot_width(&ya));

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
        // Dense series are drawn as dots at once, under the lines that
        // follow (so a line over a cloud of dots still shows); the markers
        // of the other series go on top of everything.
        let mut markers = Vec::new();
        let drawn = f
            .reference
            .iter()
            .map(|r| (r, reference_look(), None))
            .chain(f.series.iter().enumerate().map(|(i, s)| {
                let bar = (s.style == SeriesStyle::Bars).then(|| {
                    bar_i += 1;
                    (bar_i - 1, nbars, bar_slot)
                });
                (s, look(i), bar)
            }));
        for (k, (s, lk, bar)) in drawn.enumerate() {
            let at = draw_series(&mut chart, s, lk, &xa, &ya, (bar, floor))
                .map_err(|e| draw_err(&f.title, e))?;
            if s.style == SeriesStyle::Path {
                markers.push((sparse_markers(&at, k), lk));
            } else if at.len() > DENSE {
                for p in at {
                    root.draw(&Circle::new(p, 1, lk.color.filled()))
                        .map_err(|e| draw_err(&f.title, e))?;
                }
            } else {
                markers.push((at, lk));
            }
        }
        for (at, lk) in markers {
            for p in at {
                draw_marker(&root, p, lk.marker, lk.color).map_err(|e| draw_err(&f.title, e))?;
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

/// Draws one series (line or bars, then CI whiskers cut at the log
/// floor, if any) and returns the pixel positions of its points (none for
/// bars).
fn draw_series(
    chart: &mut Chart<'_, '_>,
    s: &Series,
    lk: Look,
    xa: &Axis,
    ya: &Axis,
    (bar, floor): (Option<(usize, usize, f64)>, Option<f64>),
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
        let top = ya.t(hi);
        let (bottom, arrow) = match floor {
            Some(fl) if !ya.ok(lo) => (ya.t(fl), true),
            _ => (ya.t(lo), false),
        };
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(x, bottom), (x, top)],
                whisker,
            )))
            .map_err(e)?;
        let cap =
            |y: f64| EmptyElement::at((x, y)) + PathElement::new(vec![(-5, 0), (5, 0)], whisker);
        chart.draw_series(std::iter::once(cap(top))).map_err(e)?;
        if arrow {
            // An open arrowhead pointing down: the bar goes on below the floor.
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((x, bottom))
                        + PathElement::new(vec![(-5, -8), (0, 0), (5, -8)], whisker),
                ))
                .map_err(e)?;
        } else {
            chart.draw_series(std::iter::once(cap(bottom))).map_err(e)?;
        }
    }
    if bar.is_none() {
        return Ok(xy.iter().map(|c| chart.backend_coord(c)).collect());
    }
    Ok(Vec::new())
}

/// Least distance along x between two markers on a line without markers
/// of its own (a [`SeriesStyle::Path`]), px.
const PATH_MARKER_EVERY_PX: i32 = 64;

/// Where a path's markers go: points at least [`PATH_MARKER_EVERY_PX`]
/// apart along x, starting `k` × 21 px in, so that two paths drawn over
/// each other show their markers side by side, not on top of each other.
fn sparse_markers(at: &[(i32, i32)], k: usize) -> Vec<(i32, i32)> {
    let Some(first) = at.first() else {
        return Vec::new();
    };
    let mut next = first.0 + (k as i32 * 21) % PATH_MARKER_EVERY_PX;
    let mut out = Vec::new();
    for &p in at {
        if p.0 >= next {
            out.push(p);
            next = p.0 + PATH_MARKER_EVERY_PX;
        }
    }
    out
}
