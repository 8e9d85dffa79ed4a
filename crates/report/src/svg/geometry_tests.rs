//! The geometry of rendered figures, read back from the SVG: every error
//! bar lies inside the plot area, a log axis has ticks at the values it
//! plots (1460 among them) with labels that do not overlap, and the lines
//! of a time–sequence plot stay apart by dash and marker.

use super::axes::Axis;
use super::render_figure;
use super::style::{text_width, TICK_PX};
use crate::doc::{Figure, Point, Series, SeriesStyle, TickFormat};

/// One SVG element: its name and attributes, in document order.
#[derive(Debug)]
struct Element {
    name: String,
    attrs: Vec<(String, String)>,
}

impl Element {
    fn attr(&self, k: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.as_str())
    }

    /// The points of a polyline or polygon, px.
    fn points(&self) -> Vec<(i32, i32)> {
        self.attr("points")
            .unwrap_or("")
            .split_whitespace()
            .filter_map(|p| {
                let (x, y) = p.split_once(',')?;
                Some((x.parse().ok()?, y.parse().ok()?))
            })
            .collect()
    }
}

/// A small XML walk: every start tag with its attributes.
fn elements(svg: &str) -> Vec<Element> {
    svg.split('<')
        .skip(1)
        .filter(|t| !t.starts_with('/') && !t.starts_with('!'))
        .map(|t| {
            let tag = &t[..t.find('>').unwrap_or(t.len())];
            let name = tag.split_whitespace().next().unwrap_or("").to_string();
            let mut attrs = Vec::new();
            let mut rest = &tag[name.len()..];
            while let Some(eq) = rest.find("=\"") {
                let key = rest[..eq].trim().to_string();
                let after = &rest[eq + 2..];
                let end = after.find('"').unwrap_or(after.len());
                attrs.push((key, after[..end].to_string()));
                rest = &after[(end + 1).min(after.len())..];
            }
            Element { name, attrs }
        })
        .collect()
}

/// The plot area (top, bottom) in px: the y axis, the first black
/// vertical polyline.
fn plot_rows(els: &[Element]) -> (i32, i32) {
    els.iter()
        .filter(|e| e.name == "polyline" && e.attr("stroke") == Some("#000000"))
        .map(Element::points)
        .find(|p| p.len() == 2 && p[0].0 == p[1].0 && (p[0].1 - p[1].1).abs() > 100)
        .map(|p| (p[0].1.min(p[1].1), p[0].1.max(p[1].1)))
        .expect("a y axis")
}

/// The vertical 1 px polylines (whiskers) in `color`, as (x, top, bottom).
fn whiskers(els: &[Element], color: &str) -> Vec<(i32, i32, i32)> {
    els.iter()
        .filter(|e| {
            e.name == "polyline"
                && e.attr("stroke") == Some(color)
                && e.attr("stroke-width") == Some("1")
        })
        .map(Element::points)
        .filter(|p| p.len() == 2 && p[0].0 == p[1].0 && p[0].1 != p[1].1)
        .map(|p| (p[0].0, p[0].1.min(p[1].1), p[0].1.max(p[1].1)))
        .collect()
}

const BLUE: &str = "#005A9C";
const VERMILLION: &str = "#D55E00";
const GREEN: &str = "#009E73";

fn wide_bars(log_y: bool) -> Figure {
    let mut f = Figure::new("T", "x", "y");
    f.log_y = log_y;
    f.series.push(Series::new(
        "a",
        vec![
            Point::with_ci(1.0, 10.0, 1.0),
            Point::with_ci(2.0, 16.0, 140.0),
            Point::with_ci(3.0, 2.0, 0.5),
        ],
    ));
    f
}

#[test]
fn every_error_bar_lies_inside_the_plot_area_with_both_caps() {
    for log_y in [false, true] {
        let svg = render_figure(&wide_bars(log_y)).unwrap();
        let els = elements(&svg);
        let (top, bottom) = plot_rows(&els);
        let bars = whiskers(&els, BLUE);
        assert_eq!(bars.len(), 3, "log_y {log_y}: {bars:?}");
        for (x, hi, lo) in &bars {
            assert!(
                *hi >= top && *lo <= bottom,
                "log_y {log_y}: bar at x {x} runs {hi}..{lo}, plot {top}..{bottom}"
            );
        }
        // The widest bar reaches near both edges: the axis was widened
        // for it, not the bar cut.
        let (_, hi, lo) = bars.iter().max_by_key(|b| b.2 - b.1).unwrap();
        assert!(*hi - top < 40, "log_y {log_y}: top of the widest bar {hi}");
        assert!(bottom - *lo < 40, "log_y {log_y}: bottom {lo}");
    }
    // Linear: every bar ends in a cap at both ends (a horizontal 10 px
    // line centred on it).
    let svg = render_figure(&wide_bars(false)).unwrap();
    let els = elements(&svg);
    let caps: Vec<Vec<(i32, i32)>> = els
        .iter()
        .filter(|e| e.name == "polyline" && e.attr("stroke") == Some(BLUE))
        .map(Element::points)
        .filter(|p| p.len() == 2 && p[0].1 == p[1].1 && p[1].0 - p[0].0 == 10)
        .collect();
    for (x, hi, lo) in whiskers(&els, BLUE) {
        for y in [hi, lo] {
            assert!(
                caps.iter().any(|c| c[0].1 == y && c[0].0 + 5 == x),
                "no cap at ({x}, {y})"
            );
        }
    }
}

#[test]
fn on_a_log_axis_a_bar_reaching_zero_ends_at_the_floor_in_an_arrow() {
    // 16 ± 140 reaches below zero: cut at a tenth of the smallest value
    // plotted (1.5, the lower end of 2 ± 0.5).
    let f = wide_bars(true);
    assert_eq!(super::log_floor(&f), Some(0.15));
    let svg = render_figure(&f).unwrap();
    let els = elements(&svg);
    let arrows: Vec<Vec<(i32, i32)>> = els
        .iter()
        .filter(|e| e.name == "polyline" && e.attr("stroke") == Some(BLUE))
        .map(Element::points)
        .filter(|p| p.len() == 3 && p[1].1 > p[0].1 && p[1].1 > p[2].1)
        .collect();
    assert_eq!(arrows.len(), 1, "one open arrowhead pointing down");
    let (_, bottom) = plot_rows(&els);
    assert!(arrows[0][1].1 <= bottom, "the arrow's tip inside the plot");
    // Bars that stay above zero need no floor, nor does a linear axis.
    let mut f = wide_bars(true);
    f.series[0].points.remove(1);
    assert_eq!(super::log_floor(&f), None);
    assert_eq!(super::log_floor(&wide_bars(false)), None);
}

/// The raw value of a tick at plotting-space position `p` on a log axis.
fn raw(p: f64) -> f64 {
    10f64.powf(p)
}

#[test]
fn a_log_axis_has_ticks_at_the_few_values_it_plots() {
    for format in [TickFormat::Bytes, TickFormat::Number] {
        let values = [64.0, 1460.0, 65536.0, 1460.0];
        let a = Axis::x(&values, &values, true, &format, 600);
        let near = a.ticks.iter().find(|t| (raw(t.0) - 1460.0).abs() <= 146.0);
        assert_eq!(
            near.map(|t| t.1.as_str()),
            Some("1460"),
            "{format:?}: {a:?}"
        );
        assert_eq!(a.ticks.len(), 3, "{format:?}: {:?}", a.ticks);
    }
    // Values within 1% share the tick with the shorter label.
    let values = [512.0, 65507.0, 65536.0];
    let a = Axis::x(&values, &values, true, &TickFormat::Bytes, 600);
    let labels: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
    assert_eq!(labels, ["512", "64K"]);
    // Many values: ticks at powers of two (bytes) or 1-2-5 steps of the
    // decades (numbers), not at each value.
    let many: Vec<f64> = (0..20).map(|i| 50.0 * 1.5f64.powi(i)).collect();
    let a = Axis::x(&many, &many, true, &TickFormat::Bytes, 600);
    assert!(
        a.ticks.iter().all(|t| raw(t.0).log2().fract().abs() < 1e-9),
        "{:?}",
        a.ticks
    );
    let a = Axis::x(&many, &many, true, &TickFormat::Number, 600);
    let steps: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
    assert!(
        steps.contains(&"100") && steps.contains(&"200"),
        "{steps:?}"
    );
    assert!(steps.contains(&"500"), "{steps:?}");
    // The rendered figure labels 1460.
    let mut f = Figure::new("T", "write size (bytes)", "y");
    f.log_x = true;
    f.x_ticks = TickFormat::Bytes;
    f.series.push(Series::new(
        "a",
        [64.0, 1460.0, 65536.0].map(|x| Point::new(x, 1.0)).to_vec(),
    ));
    // A reference curve's x values widen the axis but get no ticks, so
    // its 1024 cannot crowd out the measured 1460.
    f.reference = Some(Series::new(
        "paper",
        vec![Point::new(1024.0, 1.0), Point::new(131072.0, 1.0)],
    ));
    let svg = render_figure(&f).unwrap();
    assert!(svg.contains("\n1460\n"), "{svg}");
    assert!(
        !svg.contains("\n1K\n") && !svg.contains("\n128K\n"),
        "{svg}"
    );
}

#[test]
fn tick_labels_along_x_do_not_overlap() {
    let px = 600;
    for (values, format) in [
        (
            vec![1000.0, 1024.0, 1100.0, 1460.0, 2048.0, 4096.0, 65536.0],
            TickFormat::Bytes,
        ),
        (
            (0..=12).map(|k| 10f64.powi(k)).collect(),
            TickFormat::Number,
        ),
        (
            (1..=12).map(|k| 1000.0 * k as f64).collect(),
            TickFormat::Number,
        ),
    ] {
        let a = Axis::x(&values, &values, true, &format, px);
        let at = |p: f64| (p - a.lo) / (a.hi - a.lo) * f64::from(px);
        for w in a.ticks.windows(2) {
            let room = at(w[1].0) - at(w[0].0);
            let need = f64::from(text_width(&w[0].1, TICK_PX) + text_width(&w[1].1, TICK_PX)) / 2.0;
            assert!(
                room >= need,
                "{} and {} overlap: {:?}",
                w[0].1,
                w[1].1,
                a.ticks
            );
        }
        // The first and the last value keep their labels.
        let first = a.ticks.first().unwrap();
        let last = a.ticks.last().unwrap();
        assert!(
            (raw(first.0) / values[0] - 1.0).abs() < 0.1,
            "{:?}",
            a.ticks
        );
        assert!(
            (raw(last.0) / values[values.len() - 1] - 1.0).abs() < 0.1,
            "{:?}",
            a.ticks
        );
        assert!(a.ticks.len() >= 3, "{:?}", a.ticks);
    }
}

/// A time–sequence figure as the path section builds it: dense data dots,
/// and the acknowledged line right under them, the window edge above.
fn time_sequence() -> Figure {
    let mut f = Figure::new("Time–sequence", "time (ms)", "stream position (KB)");
    let line = |off: f64| -> Vec<Point> {
        (0..400)
            .map(|i| Point::new(i as f64, i as f64 * 10.0 + off))
            .collect()
    };
    f.series
        .push(Series::new("data sent", line(0.0)).with_style(SeriesStyle::Points));
    f.series
        .push(Series::new("acknowledged", line(-5.0)).with_style(SeriesStyle::Path));
    f.series
        .push(Series::new("window edge", line(300.0)).with_style(SeriesStyle::Path));
    f
}

/// Lengths of the 2 px polyline pieces in `color` (a dashed line is drawn
/// as many short pieces, a solid one as one long one).
fn piece_lengths(els: &[Element], color: &str) -> Vec<f64> {
    els.iter()
        .filter(|e| {
            e.name == "polyline"
                && e.attr("stroke") == Some(color)
                && e.attr("stroke-width") == Some("2")
        })
        .map(|e| {
            e.points()
                .windows(2)
                .map(|w| f64::from((w[1].0 - w[0].0).pow(2) + (w[1].1 - w[0].1).pow(2)).sqrt())
                .sum()
        })
        .collect()
}

#[test]
fn time_sequence_lines_differ_by_dash_and_marker_and_lie_over_the_dots() {
    let svg = render_figure(&time_sequence()).unwrap();
    let els = elements(&svg);
    // Dashes: the acknowledged line in 8 px dashes, the window edge in 2 px
    // dots; both in many pieces.
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ack = piece_lengths(&els, VERMILLION);
    let edge = piece_lengths(&els, GREEN);
    assert!(
        ack.len() > 20 && edge.len() > 20,
        "{} {}",
        ack.len(),
        edge.len()
    );
    let (ack_dash, edge_dash) = (median(ack), median(edge));
    assert!(
        (ack_dash - 8.0).abs() <= 2.0 && (edge_dash - 2.0).abs() <= 1.5,
        "dashes {ack_dash} and {edge_dash}"
    );
    // Markers: triangles on the acknowledged line, squares on the window
    // edge, a few each (not one per point), plus one each in the legend.
    let count = |name: &str, color: &str| {
        els.iter()
            .filter(|e| e.name == name && e.attr("fill") == Some(color))
            .count()
    };
    let triangles = count("polygon", VERMILLION);
    let squares = count("rect", GREEN);
    assert!((4..=20).contains(&triangles), "{triangles} triangles");
    assert!((4..=20).contains(&squares), "{squares} squares");
    // The data dots come first, so the acknowledged line is drawn over
    // them and shows between its dashes.
    let last_dot = els
        .iter()
        .rposition(|e| {
            e.name == "circle" && e.attr("fill") == Some(BLUE) && e.attr("r") == Some("1")
        })
        .expect("data dots");
    let first_ack = els
        .iter()
        .position(|e| e.name == "polyline" && e.attr("stroke") == Some(VERMILLION))
        .expect("the acknowledged line");
    assert!(
        last_dot < first_ack,
        "dots {last_dot} after the line {first_ack}"
    );
}
