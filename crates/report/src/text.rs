//! A concise terminal summary of a report: its title, each section's
//! title, the finding sentences (this host's and the papers'), warnings,
//! and the key tables as aligned text.

use crate::doc::{Block, Report, Table};

/// The terminal summary of a report (ends with a newline).
pub fn summary_text(r: &Report) -> String {
    let mut s = String::new();
    s.push_str(&r.title);
    s.push('\n');
    if let Some(sub) = &r.subtitle {
        s.push_str(sub);
        s.push('\n');
    }
    for sec in &r.sections {
        s.push('\n');
        s.push_str(&sec.title);
        s.push('\n');
        let figures = sec
            .blocks
            .iter()
            .filter(|b| {
                matches!(
                    b,
                    Block::Figure(_) | Block::StackedBars(_) | Block::Histogram(_)
                )
            })
            .count();
        for b in &sec.blocks {
            match b {
                Block::Finding { text } => {
                    s.push_str("  • ");
                    s.push_str(text);
                    s.push('\n');
                }
                Block::PaperFinding { citation, text } => {
                    s.push_str(&format!("  paper ({citation}): {text}\n"));
                }
                Block::Warning(t) => {
                    s.push_str(&format!("  warning: {t}\n"));
                }
                Block::Table(t) if t.key => {
                    for line in table_text(t).lines() {
                        s.push_str("  ");
                        s.push_str(line);
                        s.push('\n');
                    }
                }
                _ => {}
            }
        }
        if figures > 0 {
            s.push_str(&format!(
                "  ({figures} figure{} in the report)\n",
                if figures == 1 { "" } else { "s" }
            ));
        }
    }
    s
}

/// A table as aligned plain text: header, a rule, rows; numeric columns
/// right-aligned.
pub fn table_text(t: &Table) -> String {
    let cols = t
        .rows
        .iter()
        .map(Vec::len)
        .chain(std::iter::once(t.header.len()))
        .max()
        .unwrap_or(0);
    let cell = |r: &[String], i: usize| r.get(i).cloned().unwrap_or_default();
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            std::iter::once(cell(&t.header, i))
                .chain(t.rows.iter().map(|r| cell(r, i)))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |r: &[String]| {
        let cells: Vec<String> = (0..cols)
            .map(|i| {
                let c = cell(r, i);
                let pad = width[i].saturating_sub(c.chars().count());
                if t.is_numeric(i) {
                    format!("{}{c}", " ".repeat(pad))
                } else {
                    format!("{c}{}", " ".repeat(pad))
                }
            })
            .collect();
        cells.join("  ").trim_end().to_string()
    };
    let mut s = String::new();
    if let Some(c) = &t.caption {
        s.push_str(c);
        s.push('\n');
    }
    if !t.header.is_empty() {
        s.push_str(&line(&t.header));
        s.push('\n');
        let total = width.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
        s.push_str(&"─".repeat(total));
        s.push('\n');
    }
    for r in &t.rows {
        s.push_str(&line(r));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Section;

    #[test]
    fn summary_has_titles_findings_and_key_tables() {
        let mut r = Report::new("Run 7");
        let mut s = Section::new("Results");
        s.finding("Throughput rises with write size.");
        s.paper_finding("Abrams & Chen 1991", "It rose too.");
        let mut t = Table::new(["write_size", "Mbit/s"]).key();
        t.row(["1K", "12.3 ± 0.4"]);
        t.row(["64K", "1234 ± 56"]);
        s.push(t);
        let mut other = Table::new(["hidden"]);
        other.row(["x"]);
        s.push(other);
        r.push(s);
        r.push(Section::new("Host"));
        let text = summary_text(&r);
        assert!(text.starts_with("Run 7\n"));
        assert!(text.contains("• Throughput rises"));
        assert!(text.contains("paper (Abrams & Chen 1991): It rose too."));
        assert!(text.contains("          1K  12.3 ± 0.4\n"), "{text}");
        assert!(text.contains("         64K   1234 ± 56\n"), "{text}");
        assert!(!text.contains("hidden"));
        assert!(text.contains("\nHost\n"));
    }
}
