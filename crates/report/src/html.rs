//! A report as one self-contained HTML page.
//!
//! Everything is inline: the style sheet, every figure as SVG. There is no
//! `<script>`, no web font and no external URL — the only links are the
//! page's own anchors and relative links to the data files written beside
//! it — so the page opens offline and prints as it looks (figures and
//! tables are not split across pages, text turns black).

use crate::command_line::command_html;
use crate::doc::{Block, FigureLinks, Report, Table};
use crate::error::ReportError;
use crate::escape::escape;
use crate::svg;
use std::fmt::Write as _;

/// A relative link target for a data file: only a plain file name is
/// allowed, anything else (a scheme, a path, `..`) becomes `#`.
fn safe_href(name: &str) -> String {
    let plain = !name.is_empty()
        && !name.contains(['/', '\\', ':'])
        && name != ".."
        && name != "."
        && !name.starts_with('#');
    if plain {
        escape(name)
    } else {
        "#".into()
    }
}

const STYLE: &str = r#"
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", "Helvetica Neue", Arial, sans-serif;
  line-height: 1.45; color: #1a1a1a; background: #fff; max-width: 62rem; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.6rem; margin: 0 0 .2rem; }
h2 { font-size: 1.3rem; margin: 2rem 0 .6rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; }
h3 { font-size: 1.05rem; margin: 1.4rem 0 .4rem; }
p.subtitle { color: #444; margin: 0 0 1rem; }
nav.toc { background: #f6f6f6; border: 1px solid #e2e2e2; padding: .5rem 1rem; margin: 1rem 0; }
nav.toc h2 { font-size: 1rem; border: 0; margin: .2rem 0; padding: 0; }
nav.toc ol { margin: .2rem 0; padding-left: 1.4rem; columns: 2; }
a { color: #005a9c; }
.table-wrap { overflow-x: auto; margin: .6rem 0 1rem; }
table { border-collapse: collapse; font-size: .88rem; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: .2rem 0 .4rem; }
th, td { border-bottom: 1px solid #ddd; padding: .22rem .6rem; text-align: left; vertical-align: top; }
th { border-bottom: 2px solid #999; background: #fafafa; }
td.num, th.num { text-align: right; }
td.num { white-space: nowrap; }
figure { margin: 1rem 0 1.6rem; }
figure .fig-title { font-weight: 600; margin-bottom: .3rem; }
figure svg { display: block; width: 100%; max-width: 760px; height: auto; }
svg text { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", Arial, sans-serif; }
figcaption { font-size: .88rem; color: #333; margin-top: .3rem; max-width: 760px; }
p.fig-data { font-size: .82rem; color: #444; margin: .2rem 0 0; }
p.finding { border-left: 4px solid #005a9c; background: #eef4fa; padding: .4rem .8rem; }
p.warning { border-left: 4px solid #d55e00; background: #fff3e8; padding: .4rem .8rem; }
blockquote.paper { border-left: 4px solid #8a8a8a; background: #f4f4f4; margin: .6rem 0; padding: .4rem .8rem; }
blockquote.paper p { margin: 0; font-style: italic; }
blockquote.paper cite { display: block; font-size: .85rem; color: #444; margin-top: .2rem; font-style: normal; }
dl.kv { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1.2rem; margin: .6rem 0 1rem; font-size: .92rem; }
dl.kv dt { font-weight: 600; }
dl.kv dd { margin: 0; overflow-wrap: anywhere; }
p.cmdline { font-size: .92rem; margin: .6rem 0; }
p.cmdline .cmd-label { font-weight: 600; margin-right: .6rem; }
code.cmd { overflow-wrap: normal; }
code.cmd .arg { white-space: nowrap; }
footer { margin-top: 3rem; font-size: .8rem; color: #555; }
@media print {
  @page { margin: 14mm; }
  body { max-width: none; padding: 0; color: #000; font-size: 10pt; }
  a { color: #000; text-decoration: none; }
  nav.toc { background: none; }
  figure, table, dl.kv, p.finding, p.warning, blockquote.paper, .table-wrap { break-inside: avoid; page-break-inside: avoid; }
  h2, h3, figure .fig-title, caption { break-after: avoid; page-break-after: avoid; }
  .table-wrap { overflow: visible; }
  p.finding, p.warning, blockquote.paper, th { background: none; }
  figcaption, p.subtitle, footer { color: #000; }
}
"#;

/// Renders a report as one self-contained HTML page (UTF-8).
pub fn render_html(r: &Report) -> Result<String, ReportError> {
    let mut h = String::with_capacity(64 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str("<meta name=\"generator\" content=\"tcplab\">\n");
    let _ = writeln!(h, "<title>{}</title>", escape(&r.title));
    let _ = writeln!(h, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(h, "<header>\n<h1>{}</h1>", escape(&r.title));
    if let Some(s) = &r.subtitle {
        let _ = writeln!(h, "<p class=\"subtitle\">{}</p>", escape(s));
    }
    h.push_str("</header>\n");

    h.push_str("<nav class=\"toc\">\n<h2>Contents</h2>\n<ol>\n");
    for (i, s) in r.sections.iter().enumerate() {
        let _ = writeln!(
            h,
            "<li><a href=\"#s{}\">{}</a></li>",
            i + 1,
            escape(&s.title)
        );
    }
    if !r.data_files.is_empty() {
        h.push_str("<li><a href=\"#data\">Raw data</a></li>\n");
    }
    h.push_str("</ol>\n</nav>\n<main>\n");

    let mut fig_no = 0usize;
    for (i, s) in r.sections.iter().enumerate() {
        let _ = writeln!(
            h,
            "<section id=\"s{}\">\n<h2>{}</h2>",
            i + 1,
            escape(&s.title)
        );
        for b in &s.blocks {
            block(&mut h, b, &mut fig_no, r.figure_links.as_ref())?;
        }
        h.push_str("</section>\n");
    }
    if !r.data_files.is_empty() {
        h.push_str(
            "<section id=\"data\">\n<h2>Raw data</h2>\n<p>Written beside this page:</p>\n<ul>\n",
        );
        for d in &r.data_files {
            let _ = writeln!(
                h,
                "<li><a href=\"{}\">{}</a> — {}</li>",
                safe_href(&d.href),
                escape(&d.href),
                escape(&d.description)
            );
        }
        h.push_str("</ul>\n</section>\n");
    }
    h.push_str("</main>\n<footer>Made by tcplab. Means are given ± the half-width of their 95% confidence interval (Student's t, n − 1 degrees of freedom); error bars show the same interval.</footer>\n</body>\n</html>\n");
    Ok(h)
}

/// One figure on the page.
struct Fig<'a> {
    no: usize,
    title: &'a str,
    svg: String,
    caption: Option<&'a str>,
    /// A sentence the renderer adds under the caption (the log floor).
    note: Option<String>,
}

fn figure(h: &mut String, f: Fig<'_>, links: Option<&FigureLinks>) {
    let no = f.no;
    let _ = writeln!(
        h,
        "<figure id=\"fig{no}\">\n<div class=\"fig-title\">Figure {no}. {}</div>",
        escape(f.title)
    );
    h.push_str(&f.svg);
    h.push('\n');
    let caption = [f.caption.map(str::to_string), f.note]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    if !caption.is_empty() {
        let _ = writeln!(h, "<figcaption>{}</figcaption>", escape(&caption));
    }
    if let Some(file) = links.and_then(|l| l.figures.get(no - 1)) {
        let _ = write!(
            h,
            "<p class=\"fig-data\">Data: <a href=\"{}\">{}</a> — the values plotted, with their intervals",
            safe_href(file),
            escape(file)
        );
        if let Some(rows) = links.and_then(|l| l.rows.as_ref()) {
            let _ = write!(
                h,
                "; <a href=\"{}\">{}</a> — {}",
                safe_href(&rows.href),
                escape(&rows.href),
                escape(&rows.description)
            );
        }
        h.push_str("</p>\n");
    }
    h.push_str("</figure>\n");
}

fn block(
    h: &mut String,
    b: &Block,
    fig_no: &mut usize,
    links: Option<&FigureLinks>,
) -> Result<(), ReportError> {
    match b {
        Block::Heading(t) => {
            let _ = writeln!(h, "<h3>{}</h3>", escape(t));
        }
        Block::Paragraph(t) => {
            let _ = writeln!(h, "<p>{}</p>", escape(t));
        }
        Block::Finding { text } => {
            let _ = writeln!(
                h,
                "<p class=\"finding\"><strong>This host:</strong> {}</p>",
                escape(text)
            );
        }
        Block::PaperFinding { citation, text } => {
            let _ = writeln!(
                h,
                "<blockquote class=\"paper\"><p>{}</p><cite>— {}</cite></blockquote>",
                escape(text),
                escape(citation)
            );
        }
        Block::Warning(t) => {
            let _ = writeln!(
                h,
                "<p class=\"warning\"><strong>Warning:</strong> {}</p>",
                escape(t)
            );
        }
        Block::KeyValues(kv) => {
            h.push_str("<dl class=\"kv\">\n");
            for (k, v) in kv {
                let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(v));
            }
            h.push_str("</dl>\n");
        }
        Block::Command { label, line } => {
            let _ = writeln!(
                h,
                "<p class=\"cmdline\"><span class=\"cmd-label\">{}</span> {}</p>",
                escape(label),
                command_html(line)
            );
        }
        Block::Table(t) => table(h, t),
        Block::Figure(f) => {
            *fig_no += 1;
            let fig = Fig {
                no: *fig_no,
                title: &f.title,
                svg: svg::render_figure(f)?,
                caption: f.caption.as_deref(),
                note: svg::log_floor(f).map(|fl| {
                    format!(
                        "Error bars ending in an open arrowhead reach zero or below; \
                         the log y axis cuts them at {}, a tenth of the smallest value plotted.",
                        crate::format::compact(fl)
                    )
                }),
            };
            figure(h, fig, links);
        }
        Block::StackedBars(s) => {
            *fig_no += 1;
            let fig = Fig {
                no: *fig_no,
                title: &s.title,
                svg: svg::render_stacked_bars(s)?,
                caption: s.caption.as_deref(),
                note: None,
            };
            figure(h, fig, links);
        }
        Block::Histogram(x) => {
            *fig_no += 1;
            let fig = Fig {
                no: *fig_no,
                title: &x.title,
                svg: svg::render_histogram(x)?,
                caption: x.caption.as_deref(),
                note: None,
            };
            figure(h, fig, links);
        }
    }
    Ok(())
}

fn table(h: &mut String, t: &Table) {
    let cols = t
        .rows
        .iter()
        .map(Vec::len)
        .chain(std::iter::once(t.header.len()))
        .max()
        .unwrap_or(0);
    let num: Vec<bool> = (0..cols).map(|i| t.is_numeric(i)).collect();
    let cls = |i: usize| if num[i] { " class=\"num\"" } else { "" };
    h.push_str("<div class=\"table-wrap\">\n<table>\n");
    if let Some(c) = &t.caption {
        let _ = writeln!(h, "<caption>{}</caption>", escape(c));
    }
    if !t.header.is_empty() {
        h.push_str("<thead><tr>");
        for i in 0..cols {
            let text = t.header.get(i).map(String::as_str).unwrap_or("");
            let _ = write!(h, "<th{}>{}</th>", cls(i), escape(text));
        }
        h.push_str("</tr></thead>\n");
    }
    h.push_str("<tbody>\n");
    for r in &t.rows {
        h.push_str("<tr>");
        for i in 0..cols {
            let text = r.get(i).map(String::as_str).unwrap_or("");
            let cell = if t.commands.get(i).copied().unwrap_or(false) {
                command_html(text)
            } else {
                escape(text)
            };
            let _ = write!(h, "<td{}>{}</td>", cls(i), cell);
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody>\n</table>\n</div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{DataLink, Figure, Point, Section, Series};

    #[test]
    fn escapes_everything() {
        let mut r = Report::new("<script>alert(1)</script>");
        let mut s = Section::new("A & B");
        s.paragraph("x < y");
        s.finding("\"quoted\"");
        let mut t = Table::new(["<x-th>"]);
        t.row(["<x-td>"]);
        s.push(t);
        s.push(Block::KeyValues(vec![("<k>".into(), "<v>".into())]));
        r.push(s);
        r.data_files.push(DataLink {
            href: "javascript:alert(1)".into(),
            description: "<evil>".into(),
        });
        let h = render_html(&r).unwrap();
        assert!(!h.contains("<script"), "{h}");
        assert!(h.contains("&lt;script&gt;"));
        assert!(h.contains("A &amp; B") && h.contains("x &lt; y"));
        assert!(!h.contains("<x-th>") && !h.contains("<x-td>") && !h.contains("<evil>"));
        assert!(
            h.contains("href=\"#\""),
            "a link with a scheme is neutralized"
        );
        assert!(!h.contains("href=\"javascript"));
    }

    #[test]
    fn a_command_never_breaks_inside_a_flag() {
        let cmd = "tcplab bench tcp-stream --write-size 1K,64K --to 127.0.0.1:5201 -q";
        let mut r = Report::new("Run 1");
        let mut s = Section::new("Parameters");
        s.push(Block::Command {
            label: "command".into(),
            line: cmd.into(),
        });
        s.push(Block::KeyValues(vec![(
            "note".into(),
            "tcplab --write-size 1K".into(),
        )]));
        let mut t = Table::new(["experiment", "command", "text"]);
        t.commands = vec![false, true];
        t.row(["a", cmd, cmd]);
        s.push(t);
        r.push(s);
        let h = render_html(&r).unwrap();
        // Each flag with its value in one span the style sheet keeps on one
        // line; between spans, plain spaces (a copied command still runs).
        let spans = "<code class=\"cmd\"><span class=\"arg\">tcplab</span> \
                     <span class=\"arg\">bench</span> <span class=\"arg\">tcp-stream</span> \
                     <span class=\"arg\">--write-size 1K,64K</span> \
                     <span class=\"arg\">--to 127.0.0.1:5201</span> \
                     <span class=\"arg\">-q</span></code>";
        assert!(
            h.contains(&format!(
                "<p class=\"cmdline\"><span class=\"cmd-label\">command</span> {spans}</p>"
            )),
            "{h}"
        );
        assert!(h.contains(&format!("<td>{spans}</td>")), "{h}");
        assert!(h.contains("code.cmd .arg { white-space: nowrap; }"));
        // Text that is not marked as a command is left as it is.
        assert!(h.contains("<dd>tcplab --write-size 1K</dd>"), "{h}");
        assert!(h.contains(&format!("<td>{cmd}</td>")), "{h}");
        assert!(!h.contains("&nbsp;"));
    }

    #[test]
    fn a_log_floor_is_stated_under_the_figure() {
        // 4 ± (4 − lo): its lower end is `lo`; the smallest positive value
        // plotted is 4, so the floor is 0.4.
        let fig = |lo: f64| {
            let mut f = Figure::new("T", "x", "y").with_series(Series::new(
                "a",
                vec![
                    Point::with_ci(1.0, 10.0, 2.0),
                    Point::with_ci(2.0, 4.0, 4.0 - lo),
                ],
            ));
            f.log_y = true;
            f
        };
        let page = |f: Figure| {
            let mut r = Report::new("Run 1");
            let mut s = Section::new("Results");
            s.push(f);
            r.push(s);
            render_html(&r).unwrap()
        };
        let h = page(fig(-1.0));
        assert!(
            h.contains("the log y axis cuts them at 0.4, a tenth of the smallest value plotted"),
            "{h}"
        );
        assert!(!page(fig(1.0)).contains("arrowhead"));
    }

    #[test]
    fn page_is_self_contained() {
        let mut r = Report::new("Run 1").with_subtitle("host x");
        let mut s = Section::new("Results");
        s.push(Figure::new("T", "x", "y").with_series(Series::new(
            "a",
            vec![Point::with_ci(1.0, 2.0, 0.5), Point::with_ci(2.0, 3.0, 0.5)],
        )));
        let mut t = Table::new(["size", "Mbit/s"]);
        t.row(["1K", "12.3 ± 0.4"]);
        s.push(t);
        r.push(s);
        r.data_files.push(DataLink {
            href: "run-1.csv".into(),
            description: "trials".into(),
        });
        let h = render_html(&r).unwrap();
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(h.contains("<meta charset=\"utf-8\">"));
        assert!(h.contains("<svg") && h.contains("Figure 1. T"));
        assert!(h.contains("@media print"));
        assert!(h.contains("<a href=\"run-1.csv\">"));
        assert!(h.contains("<td class=\"num\">12.3 ± 0.4</td>"));
        assert!(!h.contains("<script"));
        assert!(!h.contains("http://") || !h.contains("href=\"http"));
        assert!(!h.contains("url("));
        for attr in ["src=\"http", "href=\"http", "href=\"//"] {
            assert!(!h.contains(attr), "{attr}");
        }
    }
}
