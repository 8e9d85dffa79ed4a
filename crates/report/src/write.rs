//! Writing a report: the HTML file and its raw data files beside it.
//!
//! Each file is written to a temporary file in the same directory and
//! renamed into place, data files first and the HTML last, so a failure
//! never leaves a half-written page (nor a page linking to missing data).

use crate::doc::{DataLink, FigureLinks, Report};
use crate::error::ReportError;
use crate::figure_data::figure_csvs;
use crate::html::render_html;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A raw data file to write beside the report.
#[derive(Debug, Clone, PartialEq)]
pub struct DataFile {
    /// Appended to the report's file stem: suffix `csv` beside
    /// `run-3.html` is `run-3.csv`; `probes.json` is `run-3.probes.json`.
    pub suffix: String,
    /// What the file holds (shown beside its link).
    pub description: String,
    /// The contents.
    pub bytes: Vec<u8>,
}

impl DataFile {
    /// A data file.
    pub fn new(
        suffix: impl Into<String>,
        description: impl Into<String>,
        bytes: Vec<u8>,
    ) -> DataFile {
        DataFile {
            suffix: suffix.into(),
            description: description.into(),
            bytes,
        }
    }
}

/// What [`write_report`] wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The HTML file.
    pub html: PathBuf,
    /// The data files, in the order given.
    pub data: Vec<PathBuf>,
    /// Each figure's plotted numbers (Figure 1's first), linked under it.
    pub figures: Vec<PathBuf>,
}

/// The path of a data file with `suffix` beside the report at `out`.
pub fn data_path(out: &Path, suffix: &str) -> Result<PathBuf, ReportError> {
    if suffix.is_empty() || suffix.contains(['/', '\\']) || suffix.contains("..") {
        return Err(ReportError::BadDataName(suffix.to_string()));
    }
    let stem = out
        .file_stem()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ReportError::BadOutPath(out.to_path_buf()))?;
    let mut name = stem.to_os_string();
    name.push(".");
    name.push(suffix);
    Ok(out.with_file_name(name))
}

/// Writes `report` as HTML to `out` and each data file beside it, linking
/// them from the report's "Raw data" section, and each figure's plotted
/// numbers as `STEM.figN.csv`, linked under the figure together with the
/// first CSV data file (the rows behind every figure).
///
/// The page is rendered before anything is written; each file goes to a
/// temporary file in its directory and is renamed into place, the HTML
/// last.
pub fn write_report(
    report: &Report,
    out: &Path,
    data: Vec<DataFile>,
) -> Result<Written, ReportError> {
    if out.file_name().is_none() {
        return Err(ReportError::BadOutPath(out.to_path_buf()));
    }
    let mut doc = report.clone();
    let mut paths = Vec::with_capacity(data.len());
    for d in &data {
        let p = data_path(out, &d.suffix)?;
        let href = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !doc.data_files.iter().any(|l| l.href == href) {
            doc.data_files.push(DataLink {
                href,
                description: d.description.clone(),
            });
        }
        paths.push(p);
    }
    let figures = figure_csvs(&doc);
    let mut figure_paths = Vec::with_capacity(figures.len());
    for f in &figures {
        figure_paths.push(data_path(out, &f.suffix())?);
    }
    let file_name = |p: &PathBuf| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if !figures.is_empty() {
        let rows = data
            .iter()
            .zip(&paths)
            .find(|(d, _)| d.suffix == "csv")
            .map(|(d, p)| DataLink {
                href: file_name(p),
                description: d.description.clone(),
            });
        doc.figure_links = Some(FigureLinks {
            figures: figure_paths.iter().map(file_name).collect(),
            rows,
        });
    }
    let html = render_html(&doc)?;
    for (d, p) in data.iter().zip(&paths) {
        atomic_write(p, &d.bytes)?;
    }
    for (f, p) in figures.iter().zip(&figure_paths) {
        atomic_write(p, &f.bytes)?;
    }
    atomic_write(out, html.as_bytes())?;
    Ok(Written {
        html: out.to_path_buf(),
        data: paths,
        figures: figure_paths,
    })
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, and renames
/// it to `path`; the temporary file is removed on failure.
fn atomic_write(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let name = path
        .file_name()
        .ok_or_else(|| ReportError::BadOutPath(path.to_path_buf()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(err(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Section;

    #[test]
    fn writes_page_and_data_side_by_side() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run-3.html");
        let mut r = Report::new("Run 3");
        r.push(Section::new("Results"));
        let w = write_report(
            &r,
            &out,
            vec![
                DataFile::new("csv", "one row per trial", b"a,b\n1,2\n".to_vec()),
                DataFile::new("json", "everything", b"{}".to_vec()),
            ],
        )
        .unwrap();
        assert_eq!(
            w.data,
            [dir.path().join("run-3.csv"), dir.path().join("run-3.json")]
        );
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("<a href=\"run-3.csv\">run-3.csv</a> — one row per trial"));
        assert_eq!(std::fs::read(dir.path().join("run-3.json")).unwrap(), b"{}");
        // Nothing temporary is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn each_figure_links_its_numbers_and_the_rows_and_every_link_is_written() {
        use crate::doc::{Figure, Point, Series};
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("study-run-2.html");
        let mut r = Report::new("Run 2");
        let mut s = Section::new("Results");
        for t in ["A", "B"] {
            s.push(Figure::new(t, "x", "y").with_series(Series::new(
                "s",
                vec![Point::new(1.0, 2.0), Point::new(2.0, 3.0)],
            )));
        }
        r.push(s);
        let w = write_report(
            &r,
            &out,
            vec![
                DataFile::new("json", "everything", b"{}".to_vec()),
                DataFile::new("csv", "every trial", b"a\n".to_vec()),
            ],
        )
        .unwrap();
        assert_eq!(
            w.figures,
            [
                dir.path().join("study-run-2.fig1.csv"),
                dir.path().join("study-run-2.fig2.csv")
            ]
        );
        let html = std::fs::read_to_string(&out).unwrap();
        let fig2 = &html[html.find("<figure id=\"fig2\"").unwrap()..];
        let fig2 = &fig2[..fig2.find("</figure>").unwrap()];
        assert!(
            fig2.contains("<a href=\"study-run-2.fig2.csv\">")
                && fig2.contains(
                    "; <a href=\"study-run-2.csv\">study-run-2.csv</a> — every trial</p>"
                ),
            "{fig2}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("study-run-2.fig1.csv")).unwrap(),
            "series,x,y,ci_low,ci_high\ns,1,2,,\ns,2,3,,\n"
        );
        // Every relative link on the page names a file written beside it.
        let mut rest = html.as_str();
        let mut links = 0;
        while let Some(i) = rest.find("href=\"") {
            rest = &rest[i + 6..];
            let href = &rest[..rest.find('"').unwrap()];
            if !href.starts_with('#') {
                links += 1;
                assert!(dir.path().join(href).exists(), "{href} is not written");
            }
        }
        assert_eq!(
            links,
            2 + 2 * 2,
            "two data files, two links under each figure"
        );
        // A page without figures writes no figure files and links none.
        let plain = dir.path().join("plain.html");
        let w = write_report(&Report::new("x"), &plain, vec![]).unwrap();
        assert!(w.figures.is_empty());
        assert!(!std::fs::read_to_string(&plain)
            .unwrap()
            .contains("class=\"fig-data\""));
    }

    #[test]
    fn bad_paths_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("r.html");
        let r = Report::new("x");
        let e = write_report(&r, &out, vec![DataFile::new("../x", "", vec![])]).unwrap_err();
        assert!(matches!(e, ReportError::BadDataName(_)));
        assert!(!out.exists());
        let missing = dir.path().join("no/such/dir/r.html");
        let e = write_report(&r, &missing, vec![]).unwrap_err();
        assert!(matches!(e, ReportError::Write { .. }), "{e}");
    }
}
