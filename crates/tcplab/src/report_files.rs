//! Writing report documents: the output path checked before anything is
//! built, the report and its data files written (an unwritable path is bad
//! input), and what was written printed.

use crate::usage::usage;
use report::{DataFile, Report, ReportError};
use std::path::Path;

/// The report's output path must be a file in an existing directory.
pub fn check_out(out: &Path) -> anyhow::Result<()> {
    if out.is_dir() {
        return Err(usage(format!(
            "{} is a directory: give --out a file name such as {}/report.html",
            out.display(),
            out.display()
        )));
    }
    if out.file_stem().is_none_or(|s| s.is_empty()) {
        return Err(usage(format!("{}: no file name to write", out.display())));
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(usage(format!(
            "cannot write {}: directory {} does not exist",
            out.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Writes the report; a path that cannot be written is bad input.
pub fn write(rep: &Report, out: &Path, data: Vec<DataFile>) -> anyhow::Result<report::Written> {
    report::write_report(rep, out, data).map_err(|e| match e {
        ReportError::Write { .. } | ReportError::BadOutPath(_) | ReportError::BadDataName(_) => {
            usage(e)
        }
        other => anyhow::Error::new(other),
    })
}

/// Prints the report's summary and the files written.
pub fn print_written(rep: &Report, w: &report::Written) {
    print!("{}", report::summary_text(rep));
    println!();
    println!("report: {}", w.html.display());
    for d in &w.data {
        println!("data:   {}", d.display());
    }
}
