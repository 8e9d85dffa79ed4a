//! What every chart shares around its data: the plot area of an XY chart
//! (margins, axes, grid), drawing errors, markers, the legend under the
//! plot (never over the data), and the finished `<svg>` element with its
//! title.

use super::axes::{y_area, Axis};
use super::style::{text_width, Look, Marker, DESC_PX, FONT, GRID, LEGEND_ROW, TICK_PX, WIDTH};
use crate::doc::SeriesStyle;
use crate::error::ReportError;
use crate::escape::escape;
use plotters::coord::Shift;
use plotters::prelude::*;

/// A drawing failure in the figure titled `what`.
pub(super) fn draw_err(what: &str, e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw {
        figure: what.to_string(),
        why: e.to_string(),
    }
}

/// The drawing area of an SVG chart (or part of one).
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// An XY chart in plotting space.
pub(super) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;

/// Room left of an XY chart's plot area, px.
const MARGIN_LEFT: u32 = 6;
/// Room right of an XY chart's plot area, px (the last x label).
const MARGIN_RIGHT: u32 = 24;

/// Width of the plot area of an XY chart whose y axis is `ya`, px.
pub(super) fn plot_width(ya: &Axis) -> u32 {
    WIDTH - MARGIN_LEFT - MARGIN_RIGHT - y_area(&ya.ticks)
}

/// The plot area of an XY figure or a histogram: its margins, both axes
/// with exactly our ticks and their descriptions, and light grid lines.
pub(super) fn xy_chart<'a, 'b>(
    plot: &'a Area<'b>,
    xa: &Axis,
    ya: &Axis,
    x_desc: &str,
    y_desc: &str,
    title: &str,
) -> Result<Chart<'a, 'b>, ReportError> {
    let mut chart = ChartBuilder::on(plot)
        .margin_top(10)
        .margin_right(MARGIN_RIGHT)
        .margin_left(MARGIN_LEFT)
        .x_label_area_size(TICK_PX + DESC_PX + 26)
        .y_label_area_size(y_area(&ya.ticks))
        .build_cartesian_2d(xa.coord(), ya.coord())
        .map_err(|e| draw_err(title, e))?;
    let xf = |v: &f64| xa.label(*v);
    let yf = |v: &f64| ya.label(*v);
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(&xf)
        .y_label_formatter(&yf)
        .bold_line_style(GRID.stroke_width(1))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.stroke_width(1))
        .label_style((FONT, TICK_PX))
        .axis_desc_style((FONT, DESC_PX))
        .draw()
        .map_err(|e| draw_err(title, e))?;
    Ok(chart)
}

/// Draws a marker centred on pixel `(x, y)` of `area`.
pub(super) fn draw_marker<DB: DrawingBackend>(
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

/// Columns and height of a legend with these entries.
pub(super) fn legend_size<'a>(names: impl Iterator<Item = &'a str>) -> (u32, u32) {
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

/// Draws the legend entries (line, marker or bar swatch, then the name)
/// in `cols` columns.
pub(super) fn draw_legend(
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
                draw_marker(area, (x + 15, y), lk.marker, lk.color)?;
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

/// Makes plotters' SVG fit a page: a `<title>` for screen readers and
/// tooltips, and `role="img"`.
pub(super) fn finish_svg(svg: String, title: &str) -> String {
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
    out.push_str(&escape(title));
    out.push_str("</title>");
    out.push_str(&svg[end + 1..]);
    out
}
