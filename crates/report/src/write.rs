//! Writing a report: the HTML file and its raw data files beside it.
//!
//! Each file is written to a temporary file in the same directory and
//! renamed into place, data files first and the HTML last, so a failure
//! never leaves a half-written page (nor a page linking to missing data).

use crate::doc::{DataLink, Report};
use crate::error::ReportError;
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
/// them from the report's "Raw data" section.
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
    let html = render_html(&doc)?;
    for (d, p) in data.iter().zip(&paths) {
        atomic_write(p, &d.bytes)?;
    }
    atomic_write(out, html.as_bytes())?;
    Ok(Written {
        html: out.to_path_buf(),
        data: paths,
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
