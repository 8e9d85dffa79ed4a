//! The document model: what a report says, as plain data.
//!
//! A [`Report`] is a title, [`Section`]s and links to raw data files. A
//! section is a list of [`Block`]s. Builders (`tcplab report`, a study)
//! fill these with numbers they computed; [`crate::html`] and
//! [`crate::text`] render them. Nothing here knows where numbers came from.

use record::HostFacts;

/// A whole report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// The page title (`<h1>` and `<title>`).
    pub title: String,
    /// One line under the title (run, host, date), if any.
    pub subtitle: Option<String>,
    /// The sections, in order; each gets an entry in the table of contents.
    pub sections: Vec<Section>,
    /// Raw data files written beside the report, linked from its end.
    /// [`crate::write_report`] adds the files it writes.
    pub data_files: Vec<DataLink>,
    /// The data files linked under each figure; [`crate::write_report`]
    /// sets them when it writes each figure's numbers beside the page.
    pub figure_links: Option<FigureLinks>,
}

/// The links under each figure: the file of the numbers it plots, and the
/// file of the rows they were computed from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FigureLinks {
    /// The file of each figure's plotted numbers, by page number (Figure 1's
    /// first).
    pub figures: Vec<String>,
    /// The file of the rows behind every figure (a run's trials), if any.
    pub rows: Option<DataLink>,
}

impl Report {
    /// An empty report with a title.
    pub fn new(title: impl Into<String>) -> Report {
        Report {
            title: title.into(),
            ..Report::default()
        }
    }

    /// Sets the subtitle.
    pub fn with_subtitle(mut self, subtitle: impl Into<String>) -> Report {
        self.subtitle = Some(subtitle.into());
        self
    }

    /// Appends a section.
    pub fn push(&mut self, section: Section) -> &mut Report {
        self.sections.push(section);
        self
    }
}

/// A link to a raw data file beside the report.
#[derive(Debug, Clone, PartialEq)]
pub struct DataLink {
    /// The file name, relative to the report (no directories).
    pub href: String,
    /// What the file holds.
    pub description: String,
}

/// A titled part of a report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Section {
    /// The heading (`<h2>`), also its table-of-contents entry.
    pub title: String,
    /// The content, in order.
    pub blocks: Vec<Block>,
}

impl Section {
    /// An empty section.
    pub fn new(title: impl Into<String>) -> Section {
        Section {
            title: title.into(),
            blocks: Vec::new(),
        }
    }

    /// Appends a block.
    pub fn push(&mut self, block: impl Into<Block>) -> &mut Section {
        self.blocks.push(block.into());
        self
    }

    /// Appends a paragraph.
    pub fn paragraph(&mut self, text: impl Into<String>) -> &mut Section {
        self.push(Block::Paragraph(text.into()))
    }

    /// Appends a finding computed from this host's data.
    pub fn finding(&mut self, text: impl Into<String>) -> &mut Section {
        self.push(Block::Finding { text: text.into() })
    }

    /// Appends a paper's finding, for comparison.
    pub fn paper_finding(
        &mut self,
        citation: impl Into<String>,
        text: impl Into<String>,
    ) -> &mut Section {
        self.push(Block::PaperFinding {
            citation: citation.into(),
            text: text.into(),
        })
    }

    /// Appends a warning.
    pub fn warning(&mut self, text: impl Into<String>) -> &mut Section {
        self.push(Block::Warning(text.into()))
    }

    /// The figures of the section (XY figures only), in order.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Figure(f) => Some(f),
            _ => None,
        })
    }
}

/// One piece of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A smaller heading inside a section (`<h3>`).
    Heading(String),
    /// Running text.
    Paragraph(String),
    /// A sentence computed from this host's data (shown highlighted and in
    /// the terminal summary).
    Finding {
        /// The sentence.
        text: String,
    },
    /// What a paper found, set beside this host's finding.
    PaperFinding {
        /// The source, e.g. "Abrams & Chen 1991, Fig. 3".
        citation: String,
        /// What it found.
        text: String,
    },
    /// Something the reader must not miss (lost probe records, steal time).
    Warning(String),
    /// Name–value pairs (host facts, parameters).
    KeyValues(Vec<(String, String)>),
    /// A command line (the run's `tcplab bench …`), set so that a page
    /// wraps it only between flag groups, never inside `--write-size 1K`.
    Command {
        /// What it is, e.g. "command".
        label: String,
        /// The command line as typed.
        line: String,
    },
    /// A table.
    Table(Table),
    /// An XY plot.
    Figure(Figure),
    /// A horizontal stacked bar chart (shares).
    StackedBars(StackedBars),
    /// A histogram.
    Histogram(Histogram),
}

impl From<Table> for Block {
    fn from(t: Table) -> Block {
        Block::Table(t)
    }
}

impl From<Figure> for Block {
    fn from(f: Figure) -> Block {
        Block::Figure(f)
    }
}

impl From<StackedBars> for Block {
    fn from(s: StackedBars) -> Block {
        Block::StackedBars(s)
    }
}

impl From<Histogram> for Block {
    fn from(h: Histogram) -> Block {
        Block::Histogram(h)
    }
}

/// A table of text cells.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    /// A caption above the table.
    pub caption: Option<String>,
    /// Column headings.
    pub header: Vec<String>,
    /// The rows; each as many cells as `header` (missing cells render empty).
    pub rows: Vec<Vec<String>>,
    /// Per column, whether it holds numbers (right-aligned). Columns beyond
    /// this list are detected: numeric when every non-empty cell starts
    /// like a number.
    pub numeric: Vec<bool>,
    /// A key table: also printed in the terminal summary.
    pub key: bool,
    /// Per column, whether it holds command lines (wrapped only between
    /// flag groups, as a [`Block::Command`]). Columns beyond this list
    /// hold text.
    pub commands: Vec<bool>,
}

impl Table {
    /// A table with these headings and no rows.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        Table {
            header: header.into_iter().map(Into::into).collect(),
            ..Table::default()
        }
    }

    /// Sets the caption.
    pub fn with_caption(mut self, caption: impl Into<String>) -> Table {
        self.caption = Some(caption.into());
        self
    }

    /// Marks the table as a key table (printed in the terminal summary).
    pub fn key(mut self) -> Table {
        self.key = true;
        self
    }

    /// Appends a row.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) -> &mut Table {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Whether column `i` is right-aligned: as set in `numeric`, else
    /// detected from its cells.
    pub fn is_numeric(&self, i: usize) -> bool {
        if let Some(&n) = self.numeric.get(i) {
            return n;
        }
        let mut any = false;
        for r in &self.rows {
            let c = r.get(i).map(|s| s.trim()).unwrap_or("");
            if c.is_empty() || c == "—" {
                continue;
            }
            any = true;
            let first = c.chars().next().unwrap_or(' ');
            if !(first.is_ascii_digit() || first == '-' || first == '−' || first == '+') {
                return false;
            }
        }
        any
    }
}

/// How an axis labels its ticks.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum TickFormat {
    /// Numbers with SI suffixes for large values (1k, 2.5M); decades on log axes.
    #[default]
    Number,
    /// Byte sizes, powers of 1024: 512, 1K, 64K, 1M; powers of two on log axes.
    Bytes,
    /// These ticks only: (data value, label). Categorical axes use 0, 1, 2 …
    Labels(Vec<(f64, String)>),
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SeriesStyle {
    /// Markers joined by a line (dashed differently per series).
    #[default]
    Line,
    /// Markers only (small dots when a series has more than 150 points).
    Points,
    /// A line for dense series (time–sequence traces), with a marker every
    /// so many pixels (not at every point) so lines drawn over each other
    /// stay apart by dash and marker.
    Path,
    /// Vertical bars from the axis.
    Bars,
}

/// One point of a series, with an optional confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Horizontal value.
    pub x: f64,
    /// Vertical value (a mean).
    pub y: f64,
    /// Lower end of the error bar.
    pub ci_lo: Option<f64>,
    /// Upper end of the error bar.
    pub ci_hi: Option<f64>,
}

impl Point {
    /// A point without an interval.
    pub fn new(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            ci_lo: None,
            ci_hi: None,
        }
    }

    /// A mean with a symmetric CI half-width; no interval when `half` is
    /// not a finite positive number (a single trial).
    pub fn with_ci(x: f64, mean: f64, half: f64) -> Point {
        if half.is_finite() && half > 0.0 {
            Point {
                x,
                y: mean,
                ci_lo: Some(mean - half),
                ci_hi: Some(mean + half),
            }
        } else {
            Point::new(x, mean)
        }
    }
}

/// A named series of points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points (drawn in x order).
    pub points: Vec<Point>,
    /// How it is drawn.
    pub style: SeriesStyle,
}

impl Series {
    /// A line series.
    pub fn new(name: impl Into<String>, points: Vec<Point>) -> Series {
        Series {
            name: name.into(),
            points,
            style: SeriesStyle::Line,
        }
    }

    /// Sets the style.
    pub fn with_style(mut self, style: SeriesStyle) -> Series {
        self.style = style;
        self
    }
}

/// An XY figure: one or more series against a common x, with CI error bars.
///
/// The axes hold every error bar whole, both ends. On a log y axis a bar
/// whose lower end is at or below zero cannot be drawn whole: it is cut at
/// a floor a tenth of the smallest positive value plotted, ends there in an
/// open arrowhead instead of a cap, and the figure's caption says so.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Figure {
    /// Title above the plot.
    pub title: String,
    /// Text under the plot.
    pub caption: Option<String>,
    /// Horizontal axis label (with its unit).
    pub x_label: String,
    /// Vertical axis label (with its unit).
    pub y_label: String,
    /// Logarithmic x axis (non-positive x values are left out).
    pub log_x: bool,
    /// Logarithmic y axis (non-positive y values are left out).
    pub log_y: bool,
    /// Tick labels of the x axis.
    pub x_ticks: TickFormat,
    /// Tick labels of the y axis.
    pub y_ticks: TickFormat,
    /// Start a linear y axis at zero (the default for [`Figure::new`]).
    pub y_from_zero: bool,
    /// The measured series.
    pub series: Vec<Series>,
    /// A paper's curve for comparison, drawn in gray behind the series.
    pub reference: Option<Series>,
}

impl Figure {
    /// A figure with axis labels, a linear y axis from zero, no series.
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Figure {
        Figure {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            y_from_zero: true,
            ..Figure::default()
        }
    }

    /// Appends a series.
    pub fn with_series(mut self, s: Series) -> Figure {
        self.series.push(s);
        self
    }

    /// Sets the caption.
    pub fn with_caption(mut self, caption: impl Into<String>) -> Figure {
        self.caption = Some(caption.into());
        self
    }
}

/// A horizontal stacked bar chart: per bar, values per category (e.g. the
/// share of CPU time per layer for the sender and for the receiver).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StackedBars {
    /// Title above the chart.
    pub title: String,
    /// Text under the chart.
    pub caption: Option<String>,
    /// Label of the value axis, e.g. "share of CPU time (%)".
    pub value_label: String,
    /// The categories, in stacking order (the legend).
    pub categories: Vec<String>,
    /// The bars, top to bottom: (label, one value per category).
    pub bars: Vec<(String, Vec<f64>)>,
}

/// A histogram over common bins, one or more series (drawn as filled bars
/// for one series, as step outlines for several).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    /// Title above the chart.
    pub title: String,
    /// Text under the chart.
    pub caption: Option<String>,
    /// Horizontal axis label (the binned quantity and its unit).
    pub x_label: String,
    /// Vertical axis label (e.g. "packets" or "share (%)").
    pub y_label: String,
    /// Bin edges, ascending: `bins + 1` values.
    pub edges: Vec<f64>,
    /// Whether each series has one more count, for values beyond the last
    /// edge (drawn as one more bin labelled "≥ last edge").
    pub overflow: bool,
    /// (name, count per bin).
    pub series: Vec<(String, Vec<f64>)>,
}

/// The host's facts as name–value pairs: host name, CPU, cores, kernel, OS
/// and the default congestion control.
pub fn host_facts(h: &HostFacts) -> Block {
    Block::KeyValues(vec![
        ("host".into(), h.hostname.clone()),
        ("CPU".into(), h.cpu_model.clone()),
        ("cores".into(), h.cores.to_string()),
        ("kernel".into(), h.kernel.clone()),
        ("OS".into(), h.os.clone()),
        ("congestion control".into(), h.congestion_control.clone()),
    ])
}

/// The host's recorded sysctls as a two-column table.
pub fn host_sysctls(h: &HostFacts) -> Table {
    let mut t =
        Table::new(["sysctl", "value"]).with_caption("Network sysctls at the start of the run");
    t.numeric = vec![false, false];
    for (k, v) in &h.sysctls {
        t.row([k.clone(), v.clone()]);
    }
    t
}
