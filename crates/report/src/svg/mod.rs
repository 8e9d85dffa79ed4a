//! Figures as inline SVG strings, drawn with plotters' SVG backend.
//!
//! Every chart uses one palette of colors that stay apart in grayscale
//! (the Okabe–Ito colors, darkened), and every series of an XY figure also
//! has its own marker and dash pattern, so a black-and-white print still
//! tells them apart; a dense line (a time–sequence trace) gets a marker
//! every so many pixels, and dense dots are drawn under the lines. Log
//! axes are drawn by plotting log10 of the values on a linear axis, with
//! ticks at the plotted x values when they are few. The axes hold every
//! error bar whole. Legends sit under the plot, never over the data.
//!
//! The charts are split by concern:
//!
//! - `style`: sizes, the font, the palette and each series' look.
//! - `axes`: the plotting-space axis, its ticks and their labels.
//! - `frame`: what every chart shares: the XY plot area, markers, the
//!   legend, the finished `<svg>` element with its title.
//! - `lines`: XY figures ([`render_figure`]).
//! - `bars`: stacked bar charts ([`render_stacked_bars`]).
//! - `histogram`: histograms ([`render_histogram`]).

mod axes;
mod bars;
mod frame;
#[cfg(test)]
mod geometry_tests;
mod histogram;
mod lines;
mod style;
#[cfg(test)]
mod tests;

pub use bars::render_stacked_bars;
pub use histogram::render_histogram;
pub use lines::{log_floor, render_figure};
pub use style::WIDTH;
