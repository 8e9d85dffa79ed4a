//! Horizontal stacked bar charts (shares of a whole), each segment
//! labelled with its value when it fits.

use super::axes::Axis;
use super::frame::{draw_err, finish_svg, legend_size};
use super::style::{dark, fill_color, text_width, DESC_PX, FONT, GRID, LEGEND_ROW, TICK_PX, WIDTH};
use crate::doc::{StackedBars, TickFormat};
use crate::error::ReportError;
use crate::format::compact;
use plotters::prelude::*;

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
