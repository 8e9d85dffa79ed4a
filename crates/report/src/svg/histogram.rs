//! Histograms: filled bars for one series, step outlines for several,
//! and an optional overflow bin.

use super::axes::{linear_ticks, nice_step, Axis};
use super::frame::{draw_err, draw_legend, finish_svg, legend_size, xy_chart};
use super::style::{look, Look, WIDTH};
use crate::doc::{Histogram, SeriesStyle, TickFormat};
use crate::error::ReportError;
use crate::format::compact;
use plotters::prelude::*;

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
        let mut chart = xy_chart(&plot, &xa, &ya, &h.x_label, &h.y_label, &h.title)?;
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
