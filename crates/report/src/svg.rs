//! Figures as inline SVG strings, drawn with plotters' SVG backend.
//!
//! Every chart uses one palette of colors that stay apart in grayscale
//! (the Okabe–Ito colors, darkened), and every series of an XY figure also
//! has its own marker and dash pattern, so a black-and-white print still
//! tells them apart. Log axes are drawn by plotting log10 of the values on
//! a linear axis with ticks at decades (or powers of two for byte sizes).
//! Legends sit under the plot, never over the data.

use crate::doc::{Figure, Histogram, Point, Series, SeriesStyle, StackedBars, TickFormat};
use crate::error::ReportError;
use crate::format::{bytes_short, compact};
use plotters::coord::ranged1d::Ranged;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Width of every chart, px (the HTML scales it to the page).
pub const WIDTH: u32 = 760;
/// Height of an XY figure's plot area with its axes, px.
const PLOT_HEIGHT: u32 = 380;
const FONT: &str = "sans-serif";
const TICK_PX: u32 = 15;
const DESC_PX: u32 = 16;
const LEGEND_ROW: u32 = 20;
/// Series with more points than this get dots instead of markers.
const DENSE: usize = 150;

/// The palette: Okabe–Ito, darkened where needed so that lines on white
/// and neighbouring bars stay distinct in grayscale.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x5a, 0x9c), // blue
    RGBColor(0xd5, 0x5e, 0x00), // vermillion
    RGBColor(0x00, 0x9e, 0x73), // bluish green
    RGBColor(0x33, 0x33, 0x33), // near black
    RGBColor(0xe6, 0x9f, 0x00), // orange
    RGBColor(0xb0, 0x5a, 0x90), // reddish purple
    RGBColor(0x56, 0xb4, 0xe9), // sky blue
    RGBColor(0x8c, 0x6d, 0x00), // dark yellow
];
const REFERENCE: RGBColor = RGBColor(0x8a, 0x8a, 0x8a);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);

/// Fill colors for stacked bars: the palette, then lighter tints of it, so
/// up to 16 categories are distinct.
fn fill_color(i: usize) -> RGBColor {
    let c = PALETTE[i % PALETTE.len()];
    if (i / PALETTE.len()) & 1 == 0 {
        c
    } else {
        let t = |v: u8| (v as u16 + (255 - v as u16) / 2) as u8;
        RGBColor(t(c.0), t(c.1), t(c.2))
    }
}

/// Whether text on this fill should be white.
fn dark(c: RGBColor) -> bool {
    let l = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    l < 140.0
}

#[derive(Clone, Copy, PartialEq)]
enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
    HollowCircle,
    HollowTriangle,
    HollowSquare,
    Diamond,
}

const MARKERS: [Marker; 8] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Cross,
    Marker::HollowCircle,
    Marker::HollowTriangle,
    Marker::HollowSquare,
    Marker::Diamond,
];

/// Dash patterns (dash, gap) in px; (0, 0) is solid.
const DASHES: [(u32, u32); 4] = [(0, 0), (8, 4), (2, 3), (14, 4)];

/// How series `i` is drawn.
#[derive(Clone, Copy)]
struct Look {
    color: RGBColor,
    marker: Marker,
    dash: (u32, u32),
}

fn look(i: usize) -> Look {
    Look {
        color: PALETTE[i % PALETTE.len()],
        marker: MARKERS[i % MARKERS.len()],
        dash: DASHES[i % DASHES.len()],
    }
}

fn reference_look() -> Look {
    Look {
        color: REFERENCE,
        marker: Marker::HollowCircle,
        dash: (6, 4),
    }
}

fn draw_err(what: &str, e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw {
        figure: what.to_string(),
        why: e.to_string(),
    }
}

/// One axis in plotting space (log10 of the values on a log axis), with its
/// ticks and their labels.
#[derive(Debug, Clone)]
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
}

impl Axis {
    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log10()
        } else {
            v
        }
    }

    fn ok(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    fn coord(&self) -> Axis {
        self.clone()
    }

    fn label(&self, v: f64) -> String {
        let eps = (self.hi - self.lo).abs() * 1e-6;
        self.ticks
            .iter()
            .find(|t| (t.0 - v).abs() <= eps)
            .map(|t| t.1.clone())
            .unwrap_or_default()
    }

    /// Builds an axis over raw values (finite; positive when `log`).
    fn new(values: &[f64], log: bool, format: &TickFormat, from_zero: bool) -> Axis {
        let vals: Vec<f64> = values
            .iter()
            .copied()
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let (mut min, mut max) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &v| {
                (a.min(v), b.max(v))
            });
        if !min.is_finite() {
            (min, max) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if !log && from_zero && min > 0.0 {
            min = 0.0;
        }
        if !log && from_zero && max < 0.0 {
            max = 0.0;
        }
        let (mut lo, mut hi) = if log {
            (min.log10(), max.log10())
        } else {
            (min, max)
        };
        if hi - lo <= 0.0 {
            let d = if log {
                0.5
            } else if lo == 0.0 {
                1.0
            } else {
                lo.abs() * 0.1
            };
            lo -= d;
            hi += d;
        }
        let pad = (hi - lo) * 0.05;
        let zero_floor = !log && from_zero && lo == 0.0;
        if !zero_floor {
            lo -= pad;
        }
        hi += pad;
        let ticks = ticks(lo, hi, log, format);
        Axis { log, lo, hi, ticks }
    }
}

/// The axis as plotters' coordinate: linear over [lo, hi] in plotting
/// space, with exactly our ticks (and no light mesh lines).
impl Ranged for Axis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let r = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (r * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.iter().map(|t| t.0).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// A "nice" step near `raw`: 1, 2, 2.5 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let f = raw / p;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * p
}

fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let mut v = Vec::new();
    let mut k = (lo / step).ceil();
    while k * step <= hi + step * 1e-9 && v.len() < 50 {
        let x = k * step;
        v.push(if x.abs() < step * 1e-9 { 0.0 } else { x });
        k += 1.0;
    }
    v
}

/// Tick positions (in plotting space) and labels for an axis over [lo, hi].
fn ticks(lo: f64, hi: f64, log: bool, format: &TickFormat) -> Vec<(f64, String)> {
    let raw = |p: f64| if log { 10f64.powf(p) } else { p };
    let to = |v: f64| if log { v.log10() } else { v };
    match format {
        TickFormat::Labels(l) => l
            .iter()
            .filter(|(v, _)| v.is_finite() && (!log || *v > 0.0))
            .map(|(v, s)| (to(*v), s.clone()))
            .filter(|(p, _)| *p >= lo - 1e-9 && *p <= hi + 1e-9)
            .collect(),
        TickFormat::Bytes => {
            let (a, b) = (raw(lo), raw(hi));
            let mut vals: Vec<f64> = Vec::new();
            if log {
                let e0 = a.log2().ceil() as i32;
                let e1 = b.log2().floor() as i32;
                if e1 - e0 >= 1 {
                    let every = ((e1 - e0 + 1) as f64 / 8.0).ceil().max(1.0) as i32;
                    // Keep ticks on multiples of `every` so 1K, 4K, 16K … line up.
                    let mut e = e0 + (every - e0.rem_euclid(every)) % every;
                    while e <= e1 {
                        vals.push(2f64.powi(e));
                        e += every;
                    }
                }
            }
            if vals.len() < 2 {
                let step = 2f64.powf(((b - a) / 6.0).max(1.0).log2().ceil());
                vals = linear_ticks(a, b, step);
            }
            vals.into_iter()
                .filter(|v| !log || *v > 0.0)
                .map(|v| (to(v), bytes_short(v)))
                .collect()
        }
        TickFormat::Number => {
            let mut vals: Vec<f64> = Vec::new();
            if log {
                let k0 = lo.ceil() as i32;
                let k1 = hi.floor() as i32;
                for k in k0..=k1 {
                    vals.push(10f64.powi(k));
                }
                if vals.len() < 3 {
                    vals.clear();
                    for k in (lo.floor() as i32)..=(hi.ceil() as i32) {
                        for m in [1.0, 2.0, 5.0] {
                            let v = m * 10f64.powi(k);
                            let p = v.log10();
                            if p >= lo && p <= hi {
                                vals.push(v);
                            }
                        }
                    }
                }
            }
            if vals.len() < 2 {
                let (a, b) = (raw(lo), raw(hi));
                vals = linear_ticks(a, b, nice_step((b - a) / 5.0));
                if log {
                    vals.retain(|v| *v > 0.0);
                }
            }
            vals.into_iter().map(|v| (to(v), compact(v))).collect()
        }
    }
}

/// Estimated width of a text in px at `px` font size (a little generous).
fn text_width(s: &str, px: u32) -> u32 {
    (s.chars().count() as f64 * px as f64 * 0.6).ceil() as u32
}

fn y_area(ticks: &[(f64, String)]) -> u32 {
    let w = ticks
        .iter()
        .map(|t| text_width(&t.1, TICK_PX))
        .max()
        .unwrap_or(20);
    w + 14 + DESC_PX + 14
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws a marker centred on pixel `(x, y)` of `area`.
fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    m: Marker,
    c: RGBColor,
) -> Result<(), String> {
    let e = |e: plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let filled = c.filled();
    let stroke = c.stroke_width(2);
    let white = WHITE.filled();
    let tri = vec![(x, y - 5), (x + 5, y + 4), (x - 5, y + 4)];
    let sq = [(x - 4, y - 4), (x + 4, y + 4)];
    match m {
        Marker::Circle => area.draw(&Circle::new((x, y), 4, filled)).map_err(e)?,
        Marker::HollowCircle => {
            area.draw(&Circle::new((x, y), 4, white)).map_err(e)?;
            area.draw(&Circle::new((x, y), 4, stroke)).map_err(e)?;
        }
        Marker::Triangle => area.draw(&Polygon::new(tri, filled)).map_err(e)?,
        Marker::HollowTriangle => {
            area.draw(&Polygon::new(tri.clone(), white)).map_err(e)?;
            let mut closed = tri;
            closed.push((x, y - 5));
            area.draw(&PathElement::new(closed, stroke)).map_err(e)?;
        }
        Marker::Square => area.draw(&Rectangle::new(sq, filled)).map_err(e)?,
        Marker::HollowSquare => {
            area.draw(&Rectangle::new(sq, white)).map_err(e)?;
            area.draw(&Rectangle::new(sq, stroke)).map_err(e)?;
        }
        Marker::Cross => {
            area.draw(&PathElement::new(
                vec![(x - 4, y - 4), (x + 4, y + 4)],
                stroke,
            ))
            .map_err(e)?;
            area.draw(&PathElement::new(
                vec![(x - 4, y + 4), (x + 4, y - 4)],
                stroke,
            ))
            .map_err(e)?;
        }
        Marker::Diamond => area
            .draw(&Polygon::new(
                vec![(x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y)],
                filled,
            ))
            .map_err(e)?,
    }
    Ok(())
}

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
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(10)
            .margin_right(24)
            .margin_left(6)
            .x_label_area_size(TICK_PX + DESC_PX + 26)
            .y_label_area_size(y_area(&ya.ticks))
            .build_cartesian_2d(xa.coord(), ya.coord())
            .map_err(|e| draw_err(&f.title, e))?;
        let xf = |v: &f64| xa.label(*v);
        let yf = |v: &f64| ya.label(*v);
        chart
            .configure_mesh()
            .x_desc(f.x_label.as_str())
            .y_desc(f.y_label.as_str())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(TRANSPARENT)
            .axis_style(BLACK.stroke_width(1))
            .label_style((FONT, TICK_PX))
            .axis_desc_style((FONT, DESC_PX))
            .draw()
            .map_err(|e| draw_err(&f.title, e))?;

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

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;

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

/// Columns and height of a legend with these entries.
fn legend_size<'a>(names: impl Iterator<Item = &'a str>) -> (u32, u32) {
    let names: Vec<&str> = names.collect();
    if names.is_empty() {
        return (1, 0);
    }
    let widest = names
        .iter()
        .map(|n| text_width(n, TICK_PX))
        .max()
        .unwrap_or(0)
        + 50;
    let cols = (WIDTH.saturating_sub(60) / widest.max(1)).clamp(1, 3);
    let rows = (names.len() as u32).div_ceil(cols);
    (cols, rows * LEGEND_ROW + 12)
}

fn draw_legend(
    area: &Area<'_>,
    entries: &[(String, Look, SeriesStyle)],
    cols: u32,
) -> Result<(), String> {
    let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
    let col_w = (WIDTH - 60) / cols;
    for (i, (name, lk, style)) in entries.iter().enumerate() {
        let x = 60 + (i as u32 % cols) * col_w;
        let y = 4 + (i as u32 / cols) * LEGEND_ROW + LEGEND_ROW / 2;
        let (x, y) = (x as i32, y as i32);
        match style {
            SeriesStyle::Bars => {
                area.draw(&Rectangle::new(
                    [(x, y - 6), (x + 30, y + 6)],
                    lk.color.filled(),
                ))
                .map_err(e)?;
            }
            _ => {
                if matches!(style, SeriesStyle::Line | SeriesStyle::Path) {
                    let st = lk.color.stroke_width(2);
                    if lk.dash.0 == 0 {
                        area.draw(&PathElement::new(vec![(x, y), (x + 30, y)], st))
                            .map_err(e)?;
                    } else {
                        let mut a = x;
                        while a < x + 30 {
                            let b = (a + lk.dash.0 as i32).min(x + 30);
                            area.draw(&PathElement::new(vec![(a, y), (b, y)], st))
                                .map_err(e)?;
                            a = b + lk.dash.1 as i32;
                        }
                    }
                }
                if *style != SeriesStyle::Path {
                    draw_marker(area, (x + 15, y), lk.marker, lk.color)?;
                }
            }
        }
        area.draw(&Text::new(
            name.clone(),
            (x + 38, y - (TICK_PX as i32) / 2 - 1),
            (FONT, TICK_PX).into_font().color(&BLACK),
        ))
        .map_err(e)?;
    }
    Ok(())
}

/// Renders a horizontal stacked bar chart: one bar per entry, segments in
/// category order, each labelled with its value (and category name when it
/// fits), a legend of categories under the chart.
pub fn render_stacked_bars(s: &StackedBars) -> Result<String, ReportError> {
    let n = s.bars.len().max(1);
    let totals: Vec<f64> = s
        .bars
        .iter()
        .map(|b| b.1.iter().filter(|v| v.is_finite() && **v > 0.0).sum())
        .collect();
    let max = totals.iter().copied().fold(0.0, f64::max);
    let xa = Axis::new(&[0.0, max.max(1e-12)], false, &TickFormat::Number, true);
    let label_w = s
        .bars
        .iter()
        .map(|b| text_width(&b.0, TICK_PX))
        .max()
        .unwrap_or(40)
        + 16;
    let ya = Axis {
        log: false,
        lo: 0.0,
        hi: n as f64,
        ticks: s
            .bars
            .iter()
            .enumerate()
            .map(|(i, b)| ((n - 1 - i) as f64 + 0.5, b.0.clone()))
            .collect(),
    };
    let legend: Vec<&str> = s.categories.iter().map(String::as_str).collect();
    let (cols, legend_h) = legend_size(legend.iter().copied());
    let plot_h = n as u32 * 34 + TICK_PX + DESC_PX + 40;
    let height = plot_h + legend_h;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&s.title, e))?;
        let (plot, leg) = root.split_vertically(plot_h);
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(8)
            .margin_right(24)
            .x_label_area_size(TICK_PX + DESC_PX + 22)
            .y_label_area_size(label_w)
            .build_cartesian_2d(xa.coord(), ya.coord())
            .map_err(|e| draw_err(&s.title, e))?;
        let xf = |v: &f64| xa.label(*v);
        let yf = |v: &f64| ya.label(*v);
        chart
            .configure_mesh()
            .x_desc(s.value_label.as_str())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .disable_y_mesh()
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(TRANSPARENT)
            .axis_style(BLACK.stroke_width(1))
            .label_style((FONT, TICK_PX))
            .axis_desc_style((FONT, DESC_PX))
            .draw()
            .map_err(|e| draw_err(&s.title, e))?;
        let px_per_unit = (WIDTH - label_w - 24) as f64 / (xa.hi - xa.lo);
        for (i, (_, vals)) in s.bars.iter().enumerate() {
            let y0 = (n - 1 - i) as f64 + 0.18;
            let y1 = (n - 1 - i) as f64 + 0.82;
            let mut acc = 0.0;
            for (k, v) in vals.iter().enumerate() {
                if !(v.is_finite() && *v > 0.0) {
                    continue;
                }
                let c = fill_color(k);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(acc, y0), (acc + v, y1)],
                        c.filled(),
                    )))
                    .map_err(|e| draw_err(&s.title, e))?;
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(acc, y0), (acc + v, y1)],
                        WHITE.stroke_width(1),
                    )))
                    .map_err(|e| draw_err(&s.title, e))?;
                let w = v * px_per_unit;
                let name = s.categories.get(k).map(String::as_str).unwrap_or("");
                let value = compact((v * 10.0).round() / 10.0);
                let full = format!("{name} {value}");
                let text = if text_width(&full, 11) + 6 < w as u32 {
                    Some(full)
                } else if text_width(&value, 11) + 6 < w as u32 {
                    Some(value)
                } else {
                    None
                };
                if let Some(t) = text {
                    let color = if dark(c) { WHITE } else { BLACK };
                    let style = (FONT, 11).into_font().color(&color).pos(
                        plotters::style::text_anchor::Pos::new(
                            plotters::style::text_anchor::HPos::Center,
                            plotters::style::text_anchor::VPos::Center,
                        ),
                    );
                    chart
                        .draw_series(std::iter::once(Text::new(
                            t,
                            (acc + v / 2.0, (y0 + y1) / 2.0),
                            style,
                        )))
                        .map_err(|e| draw_err(&s.title, e))?;
                }
                acc += v;
            }
        }
        let e = |e: plotters::drawing::DrawingAreaErrorKind<std::io::Error>| e.to_string();
        let col_w = (WIDTH - 60) / cols;
        for (i, name) in legend.iter().enumerate() {
            let x = (60 + (i as u32 % cols) * col_w) as i32;
            let y = (4 + (i as u32 / cols) * LEGEND_ROW + LEGEND_ROW / 2) as i32;
            leg.draw(&Rectangle::new(
                [(x, y - 6), (x + 14, y + 6)],
                fill_color(i).filled(),
            ))
            .map_err(e)
            .map_err(|w| draw_err(&s.title, w))?;
            leg.draw(&Text::new(
                name.to_string(),
                (x + 20, y - (TICK_PX as i32) / 2 - 1),
                (FONT, TICK_PX).into_font().color(&BLACK),
            ))
            .map_err(e)
            .map_err(|w| draw_err(&s.title, w))?;
        }
        root.present().map_err(|e| draw_err(&s.title, e))?;
    }
    Ok(finish_svg(buf, &s.title))
}

/// Renders a histogram: filled bars for one series, step outlines (each
/// with its own color and dash) for several; the overflow bin, if any,
/// is labelled "≥ last edge".
pub fn render_histogram(h: &Histogram) -> Result<String, ReportError> {
    let mut edges: Vec<f64> = h.edges.iter().copied().filter(|e| e.is_finite()).collect();
    if edges.len() < 2 {
        edges = vec![0.0, 1.0];
    }
    let last = *edges.last().unwrap_or(&1.0);
    if h.overflow {
        let w = edges[edges.len() - 1] - edges[edges.len() - 2];
        edges.push(last + w);
    }
    let nb = edges.len() - 1;
    let maxc = h
        .series
        .iter()
        .flat_map(|s| s.1.iter().take(nb))
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let mut xa = Axis::new(&[edges[0], edges[nb]], false, &TickFormat::Number, false);
    xa.lo = edges[0];
    xa.hi = edges[nb];
    let plain_end = if h.overflow { last } else { edges[nb] };
    xa.ticks = linear_ticks(edges[0], plain_end, nice_step((plain_end - edges[0]) / 6.0))
        .into_iter()
        // The overflow bin's label stands where the last edge's would.
        .filter(|v| !h.overflow || *v < last - 1e-9)
        .map(|v| (v, compact(v)))
        .collect();
    if h.overflow {
        xa.ticks
            .push(((last + edges[nb]) / 2.0, format!("≥{}", compact(last))));
    }
    let ya = Axis::new(&[0.0, maxc.max(1.0)], false, &TickFormat::Number, true);
    let legend: Vec<(String, Look, SeriesStyle)> = if h.series.len() > 1 {
        h.series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.0.clone(), look(i), SeriesStyle::Path))
            .collect()
    } else {
        Vec::new()
    };
    let (cols, legend_h) = legend_size(legend.iter().map(|l| l.0.as_str()));
    let plot_h = 300;
    let mut buf = String::new();
    {
        let root =
            SVGBackend::with_string(&mut buf, (WIDTH, plot_h + legend_h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(&h.title, e))?;
        let (plot, leg) = root.split_vertically(plot_h);
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(10)
            .margin_right(24)
            .margin_left(6)
            .x_label_area_size(TICK_PX + DESC_PX + 26)
            .y_label_area_size(y_area(&ya.ticks))
            .build_cartesian_2d(xa.coord(), ya.coord())
            .map_err(|e| draw_err(&h.title, e))?;
        let xf = |v: &f64| xa.label(*v);
        let yf = |v: &f64| ya.label(*v);
        chart
            .configure_mesh()
            .x_desc(h.x_label.as_str())
            .y_desc(h.y_label.as_str())
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .bold_line_style(GRID.stroke_width(1))
            .light_line_style(TRANSPARENT)
            .axis_style(BLACK.stroke_width(1))
            .label_style((FONT, TICK_PX))
            .axis_desc_style((FONT, DESC_PX))
            .draw()
            .map_err(|e| draw_err(&h.title, e))?;
        let single = h.series.len() == 1;
        for (i, (_, counts)) in h.series.iter().enumerate() {
            let lk = look(i);
            if single {
                chart
                    .draw_series(
                        counts
                            .iter()
                            .take(nb)
                            .enumerate()
                            .filter(|(_, c)| **c > 0.0)
                            .map(|(b, c)| {
                                Rectangle::new(
                                    [(edges[b], 0.0), (edges[b + 1], *c)],
                                    lk.color.mix(0.75).filled(),
                                )
                            }),
                    )
                    .map_err(|e| draw_err(&h.title, e))?;
                chart
                    .draw_series(
                        counts
                            .iter()
                            .take(nb)
                            .enumerate()
                            .filter(|(_, c)| **c > 0.0)
                            .map(|(b, c)| {
                                Rectangle::new(
                                    [(edges[b], 0.0), (edges[b + 1], *c)],
                                    WHITE.stroke_width(1),
                                )
                            }),
                    )
                    .map_err(|e| draw_err(&h.title, e))?;
            } else {
                let mut path = vec![(edges[0], 0.0)];
                for (b, c) in counts.iter().take(nb).enumerate() {
                    let c = if c.is_finite() { *c } else { 0.0 };
                    path.push((edges[b], c));
                    path.push((edges[b + 1], c));
                }
                path.push((edges[nb.min(counts.len())], 0.0));
                let st = lk.color.stroke_width(2);
                if lk.dash.0 == 0 {
                    chart.draw_series(LineSeries::new(path, st))
                } else {
                    chart.draw_series(DashedLineSeries::new(path, lk.dash.0, lk.dash.1, st))
                }
                .map_err(|e| draw_err(&h.title, e))?;
            }
        }
        draw_legend(&leg, &legend, cols).map_err(|e| draw_err(&h.title, e))?;
        root.present().map_err(|e| draw_err(&h.title, e))?;
    }
    Ok(finish_svg(buf, &h.title))
}

/// Makes plotters' SVG fit a page: a `<title>` for screen readers and
/// tooltips, and `role="img"`.
fn finish_svg(svg: String, title: &str) -> String {
    let Some(start) = svg.find("<svg") else {
        return svg;
    };
    let Some(end) = svg[start..].find('>').map(|i| start + i) else {
        return svg;
    };
    let mut out = String::with_capacity(svg.len() + title.len() + 64);
    out.push_str(&svg[start..end]);
    out.push_str(" role=\"img\" class=\"plot\">");
    out.push_str("<title>");
    out.push_str(&crate::html::escape(title));
    out.push_str("</title>");
    out.push_str(&svg[end + 1..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Series;

    fn fig(log_x: bool) -> Figure {
        let mut f = Figure::new("Throughput", "write size (bytes)", "Mbit/s");
        f.log_x = log_x;
        f.x_ticks = TickFormat::Bytes;
        f.series.push(Series::new(
            "write",
            vec![
                Point::with_ci(1024.0, 100.0, 10.0),
                Point::with_ci(8192.0, 400.0, 20.0),
                Point::with_ci(65536.0, 900.0, 30.0),
            ],
        ));
        f
    }

    #[test]
    fn error_bars_have_whiskers_and_caps() {
        let svg = render_figure(&fig(false)).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..100]);
        assert!(svg.contains("<title>Throughput</title>"));
        // Each point: one vertical whisker and two 10 px caps, all 1 px wide
        // in the series color.
        let color = "#005A9C";
        let whiskers = svg
            .lines()
            .filter(|l| l.contains(color) && l.contains("stroke-width=\"1\""))
            .count();
        assert!(whiskers >= 9, "{whiskers} whisker lines in\n{svg}");
        assert!(svg.contains("write size (bytes)"));
        assert!(svg.contains("\n64K\n"), "{svg}");
    }

    #[test]
    fn log_axis_ticks_at_powers_of_two_and_decades() {
        let a = Axis::new(&[1024.0, 65536.0], true, &TickFormat::Bytes, false);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["1K", "2K", "4K", "8K", "16K", "32K", "64K"]);
        let a = Axis::new(&[10.0, 1e5], true, &TickFormat::Number, false);
        let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(labels, ["10", "100", "1000", "10k", "100k"]);
        // Positions are log10 of the values.
        assert!((a.ticks[1].0 - 2.0).abs() < 1e-12);
        let svg = render_figure(&fig(true)).unwrap();
        assert!(svg.contains("\n1K\n") && svg.contains("\n64K\n"));
    }

    #[test]
    fn wide_error_bars_are_cut_at_the_edges() {
        let mut f = Figure::new("T", "x", "y");
        f.series.push(Series::new(
            "a",
            vec![
                Point::with_ci(1.0, 10.0, 1.0),
                Point::with_ci(2.0, 16.0, 140.0),
            ],
        ));
        let svg = render_figure(&f).unwrap();
        // The y axis stops at 0 and near 2 × 16, not at −124 and 156.
        assert!(!svg.contains("\n-"), "negative ticks in\n{svg}");
        assert!(!svg.contains("\n150\n"), "{svg}");
        assert!(svg.contains("\n30\n"), "{svg}");
    }

    #[test]
    fn linear_axis_starts_at_zero() {
        let a = Axis::new(&[3.0, 97.0], false, &TickFormat::Number, true);
        assert_eq!(a.lo, 0.0);
        assert_eq!(a.ticks[0].1, "0");
        assert!(a.ticks.iter().any(|t| t.1 == "100"));
    }

    #[test]
    fn many_series_get_a_legend_and_dashes() {
        let mut f = fig(true);
        for i in 0..4 {
            let mut s = f.series[0].clone();
            s.name = format!("series {i}");
            f.series.push(s);
        }
        f.reference = Some(Series::new("paper", vec![Point::new(2048.0, 50.0)]));
        let svg = render_figure(&f).unwrap();
        for i in 0..4 {
            assert!(svg.contains(&format!("\nseries {i}\n")));
        }
        assert!(svg.contains("\npaper\n"));
    }

    #[test]
    fn stacked_bars_and_histogram_render() {
        let s = StackedBars {
            title: "CPU".into(),
            value_label: "share (%)".into(),
            categories: vec!["TCP".into(), "copy".into(), "other".into()],
            bars: vec![
                ("sender".into(), vec![40.0, 35.0, 25.0]),
                ("receiver".into(), vec![20.0, 60.0, 20.0]),
            ],
            ..StackedBars::default()
        };
        let svg = render_stacked_bars(&s).unwrap();
        assert!(
            svg.contains("\nsender\n") && svg.contains("\nTCP 40\n"),
            "{svg}"
        );
        let h = Histogram {
            title: "delays".into(),
            x_label: "µs".into(),
            y_label: "packets".into(),
            edges: (0..=4).map(|i| i as f64 * 50.0).collect(),
            overflow: true,
            series: vec![("a".into(), vec![5.0, 3.0, 0.0, 1.0, 2.0])],
            ..Histogram::default()
        };
        let svg = render_histogram(&h).unwrap();
        assert!(svg.contains("≥200"), "{svg}");
    }
}
