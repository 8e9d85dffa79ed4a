//! The look of every chart: sizes, the font, the palette, and each
//! series' color, marker and dash pattern.
//!
//! Every chart uses one palette of colors that stay apart in grayscale
//! (the Okabe–Ito colors, darkened), and every series of an XY figure also
//! has its own marker and dash pattern, so a black-and-white print still
//! tells them apart.

use plotters::prelude::*;

/// Width of every chart, px (the HTML scales it to the page).
pub const WIDTH: u32 = 760;
/// Height of an XY figure's plot area with its axes, px.
pub(super) const PLOT_HEIGHT: u32 = 380;
/// Font family of every label.
pub(super) const FONT: &str = "sans-serif";
/// Font size of tick labels and legend entries, px.
pub(super) const TICK_PX: u32 = 15;
/// Font size of axis descriptions, px.
pub(super) const DESC_PX: u32 = 16;
/// Height of one legend row, px.
pub(super) const LEGEND_ROW: u32 = 20;
/// Series with more points than this get dots instead of markers.
pub(super) const DENSE: usize = 150;

/// The palette: Okabe–Ito, darkened where needed so that lines on white
/// and neighbouring bars stay distinct in grayscale.
pub(super) const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x5a, 0x9c), // blue
    RGBColor(0xd5, 0x5e, 0x00), // vermillion
    RGBColor(0x00, 0x9e, 0x73), // bluish green
    RGBColor(0x33, 0x33, 0x33), // near black
    RGBColor(0xe6, 0x9f, 0x00), // orange
    RGBColor(0xb0, 0x5a, 0x90), // reddish purple
    RGBColor(0x56, 0xb4, 0xe9), // sky blue
    RGBColor(0x8c, 0x6d, 0x00), // dark yellow
];
/// Color of the reference (paper) curve.
pub(super) const REFERENCE: RGBColor = RGBColor(0x8a, 0x8a, 0x8a);
/// Color of the grid lines.
pub(super) const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);

/// Fill colors for stacked bars: the palette, then lighter tints of it, so
/// up to 16 categories are distinct.
pub(super) fn fill_color(i: usize) -> RGBColor {
    let c = PALETTE[i % PALETTE.len()];
    if (i / PALETTE.len()) & 1 == 0 {
        c
    } else {
        let t = |v: u8| (v as u16 + (255 - v as u16) / 2) as u8;
        RGBColor(t(c.0), t(c.1), t(c.2))
    }
}

/// Whether text on this fill should be white.
pub(super) fn dark(c: RGBColor) -> bool {
    let l = 0.299 * f64::from(c.0) + 0.587 * f64::from(c.1) + 0.114 * f64::from(c.2);
    l < 140.0
}

/// A point marker; the hollow ones tell series apart in grayscale.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Marker {
    Circle,
    Triangle,
    Square,
    Cross,
    HollowCircle,
    HollowTriangle,
    HollowSquare,
    Diamond,
}

/// Markers in the order series get them.
pub(super) const MARKERS: [Marker; 8] = [
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
pub(super) const DASHES: [(u32, u32); 4] = [(0, 0), (8, 4), (2, 3), (14, 4)];

/// How series `i` is drawn.
#[derive(Clone, Copy)]
pub(super) struct Look {
    pub(super) color: RGBColor,
    pub(super) marker: Marker,
    pub(super) dash: (u32, u32),
}

/// The look of the `i`-th series: palette color, marker and dash.
pub(super) fn look(i: usize) -> Look {
    Look {
        color: PALETTE[i % PALETTE.len()],
        marker: MARKERS[i % MARKERS.len()],
        dash: DASHES[i % DASHES.len()],
    }
}

/// The look of the reference curve: gray, hollow circles, dashed.
pub(super) fn reference_look() -> Look {
    Look {
        color: REFERENCE,
        marker: Marker::HollowCircle,
        dash: (6, 4),
    }
}

/// Estimated width of a text in px at `px` font size (a little generous).
pub(super) fn text_width(s: &str, px: u32) -> u32 {
    (s.chars().count() as f64 * px as f64 * 0.6).ceil() as u32
}
