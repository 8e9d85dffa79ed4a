//! The numbers behind each figure as CSV: one file per figure, written
//! beside the report and linked under the figure, so a reader can open the
//! values a plot draws (and their intervals) without reading them off the
//! SVG. Figures are numbered as the page numbers them: every XY figure,
//! stacked-bar chart and histogram in document order, from 1.

use crate::doc::{Block, Figure, Histogram, Report, StackedBars};

/// One figure's data.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureCsv {
    /// The figure's number on the page (Figure 1 is 1).
    pub number: usize,
    /// Its title.
    pub title: String,
    /// The CSV text.
    pub bytes: Vec<u8>,
}

impl FigureCsv {
    /// The data-file suffix of the figure: `fig3.csv` beside `run-1.html`
    /// is `run-1.fig3.csv`.
    pub fn suffix(&self) -> String {
        suffix(self.number)
    }
}

/// The data-file suffix of figure `number`.
pub fn suffix(number: usize) -> String {
    format!("fig{number}.csv")
}

/// The data of every figure of the report, in page order.
pub fn figure_csvs(r: &Report) -> Vec<FigureCsv> {
    let mut out = Vec::new();
    for b in r.sections.iter().flat_map(|s| &s.blocks) {
        let (title, rows) = match b {
            Block::Figure(f) => (&f.title, xy_rows(f)),
            Block::StackedBars(s) => (&s.title, bar_rows(s)),
            Block::Histogram(h) => (&h.title, histogram_rows(h)),
            _ => continue,
        };
        let mut text = String::new();
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
            text.push_str(&cells.join(","));
            text.push('\n');
        }
        out.push(FigureCsv {
            number: out.len() + 1,
            title: title.clone(),
            bytes: text.into_bytes(),
        });
    }
    out
}

/// A number as a CSV cell: every digit it has, empty when not finite.
fn num(v: f64) -> String {
    if v.is_finite() {
        v.to_string()
    } else {
        String::new()
    }
}

/// A CSV cell, quoted when it holds a comma, a quote or a line break.
fn cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// An XY figure: series, x, y, CI low and high (the reference curve as
/// series "reference: NAME").
fn xy_rows(f: &Figure) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "series".to_string(),
        f.x_label.clone(),
        f.y_label.clone(),
        "ci_low".into(),
        "ci_high".into(),
    ]];
    let reference = f
        .reference
        .iter()
        .map(|r| (format!("reference: {}", r.name), r));
    let measured = f.series.iter().map(|s| (s.name.clone(), s));
    for (name, s) in measured.chain(reference) {
        for p in &s.points {
            rows.push(vec![
                name.clone(),
                num(p.x),
                num(p.y),
                p.ci_lo.map_or(String::new(), num),
                p.ci_hi.map_or(String::new(), num),
            ]);
        }
    }
    rows
}

/// A stacked-bar chart: bar, category, value.
fn bar_rows(s: &StackedBars) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "bar".to_string(),
        "category".into(),
        s.value_label.clone(),
    ]];
    for (bar, values) in &s.bars {
        for (cat, v) in s.categories.iter().zip(values) {
            rows.push(vec![bar.clone(), cat.clone(), num(*v)]);
        }
    }
    rows
}

/// A histogram: series, bin's low and high edge (high empty for the
/// overflow bin), count.
fn histogram_rows(h: &Histogram) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "series".to_string(),
        format!("{} from", h.x_label),
        format!("{} to", h.x_label),
        h.y_label.clone(),
    ]];
    for (name, counts) in &h.series {
        for (i, c) in counts.iter().enumerate() {
            let lo = h.edges.get(i).copied();
            let hi = h.edges.get(i + 1).copied();
            let Some(lo) = lo else { break };
            rows.push(vec![
                name.clone(),
                num(lo),
                hi.map_or(String::new(), num),
                num(*c),
            ]);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Point, Section, Series};

    #[test]
    fn each_figure_gets_its_numbers_in_page_order() {
        let mut r = Report::new("r");
        let mut a = Section::new("a");
        a.paragraph("text");
        a.push(
            Figure::new("Rate, by size", "write size (bytes)", "Mbit/s").with_series(Series::new(
                "tcp",
                vec![Point::with_ci(1024.0, 9.4, 0.1), Point::new(65536.0, 9.6)],
            )),
        );
        r.push(a);
        let mut b = Section::new("b");
        b.push(StackedBars {
            title: "CPU".into(),
            value_label: "share (%)".into(),
            categories: vec!["copy".into(), "tcp".into()],
            bars: vec![("sender".into(), vec![60.0, 40.0])],
            ..StackedBars::default()
        });
        b.push(Histogram {
            title: "sizes".into(),
            x_label: "bytes".into(),
            y_label: "packets".into(),
            edges: vec![0.0, 100.0, 200.0],
            overflow: true,
            series: vec![("rx".into(), vec![3.0, 4.0, 5.0])],
            ..Histogram::default()
        });
        r.push(b);
        let f = figure_csvs(&r);
        assert_eq!(f.len(), 3);
        assert_eq!(
            (f[0].number, f[0].suffix().as_str(), f[0].title.as_str()),
            (1, "fig1.csv", "Rate, by size")
        );
        assert_eq!(
            String::from_utf8(f[0].bytes.clone()).unwrap(),
            "series,write size (bytes),Mbit/s,ci_low,ci_high\n\
             tcp,1024,9.4,9.3,9.5\n\
             tcp,65536,9.6,,\n"
        );
        assert_eq!(
            String::from_utf8(f[1].bytes.clone()).unwrap(),
            "bar,category,share (%)\nsender,copy,60\nsender,tcp,40\n"
        );
        assert_eq!(
            String::from_utf8(f[2].bytes.clone()).unwrap(),
            "series,bytes from,bytes to,packets\nrx,0,100,3\nrx,100,200,4\nrx,200,,5\n"
        );
    }

    #[test]
    fn cells_with_commas_are_quoted() {
        assert_eq!(cell("a, b"), "\"a, b\"");
        assert_eq!(cell("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(cell("plain"), "plain");
        assert_eq!(num(f64::NAN), "");
    }
}
