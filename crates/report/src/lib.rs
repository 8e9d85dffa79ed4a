//! `report`: tcplab's reports.
//!
//! A report is plain data — a [`Report`] of [`Section`]s of [`Block`]s
//! (paragraphs, finding sentences, the paper's finding beside them, tables,
//! figures, key–value lists) — built by whoever has the numbers (the
//! `tcplab report` command, a study) and rendered here without any
//! knowledge of where they came from:
//!
//! - [`doc`]: the document model.
//! - [`format`]: numbers as people read them: `mean ± CI` with significant
//!   digits and SI prefixes (`9.41 ± 0.12 Gbit/s`, `18.2 µs`).
//! - [`svg`]: a [`Figure`] (curves with CI error bars, linear or log axes),
//!   a [`StackedBars`] chart (shares) or a [`Histogram`] as an inline SVG
//!   string, drawn with plotters.
//! - [`command_line`]: a tcplab command line in flag groups, so a page
//!   never breaks inside a flag (`--write-size 1K` stays on one line).
//! - [`escape`]: text made safe for HTML element content and attributes,
//!   used by both the page and its figures.
//! - [`html`]: the whole report as one self-contained HTML page: inline
//!   styles and SVG, no scripts, no external fonts or URLs, print rules.
//! - [`text`]: a concise terminal summary (section titles, findings, key
//!   tables).
//! - [`figure_data`]: the numbers each figure plots, as one CSV per figure.
//! - [`write`]: the HTML file, its raw data files and each figure's CSV
//!   side by side, each written to a temporary file and renamed into place.
//!
//! This crate depends on `record` only (for [`HostFacts`](record::HostFacts));
//! statistics are computed by the caller and passed in as numbers.

pub mod command_line;
pub mod doc;
pub mod error;
pub mod escape;
pub mod figure_data;
pub mod format;
pub mod html;
pub mod svg;
pub mod text;
pub mod write;

pub use doc::{
    Block, DataLink, Figure, FigureLinks, Histogram, Point, Report, Section, Series, SeriesStyle,
    StackedBars, Table, TickFormat,
};
pub use error::ReportError;
pub use format::{column, measure, number, Unit};
pub use html::render_html;
pub use text::summary_text;
pub use write::{write_report, DataFile, Written};
