//! Tests of the SVG charts: whiskers and caps, log and linear ticks, wide
//! error bars, legends, stacked bars and histograms. The geometry of
//! error bars, ticks and time–sequence lines is tested in
//! `geometry_tests`.

use super::axes::Axis;
use super::{render_figure, render_histogram, render_stacked_bars};
use crate::doc::{Figure, Histogram, Point, Series, StackedBars, TickFormat};

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
fn wide_error_bars_widen_the_axis() {
    let mut f = Figure::new("T", "x", "y");
    f.series.push(Series::new(
        "a",
        vec![
            Point::with_ci(1.0, 10.0, 1.0),
            Point::with_ci(2.0, 16.0, 140.0),
        ],
    ));
    let svg = render_figure(&f).unwrap();
    // The y axis reaches −124 and 156, the ends of the second bar (it
    // used to stop at 0 and near 2 × 16).
    assert!(svg.contains("\n-100\n"), "no tick at −100 in\n{svg}");
    assert!(svg.contains("\n100\n"), "no tick at 100 in\n{svg}");
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
