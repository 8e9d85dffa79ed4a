//! Writes a study run's HTML report (assembled by `studies::document`)
//! beside its raw data and prints its summary. `tcplab study` writes it
//! after the run; `tcplab report RUN` rewrites it, with the other hosts
//! imported since.

use anyhow::Context;
use record::Store;
use std::path::Path;

/// Writes the report of study run `run_id` to `out`, `warnings` shown
/// under its experiments; prints its summary (unless `silent`: `study
/// --json` prints one document instead) and returns the number of finding
/// sentences and what was written.
pub fn write(
    store: &Store,
    run_id: i64,
    warnings: &[String],
    out: &Path,
    silent: bool,
) -> anyhow::Result<(usize, report::Written)> {
    let doc = studies::document::document(store, run_id, warnings)?;
    let w = report::write_report(&doc.report, out, doc.data_files)
        .with_context(|| format!("writing the report {}", out.display()))?;
    if !silent {
        println!("{}", report::summary_text(&doc.report));
        println!("report: {}", w.html.display());
    }
    Ok((doc.findings, w))
}
