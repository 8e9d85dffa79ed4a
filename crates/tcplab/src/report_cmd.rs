//! `tcplab report`: a stored run as a self-contained HTML report beside its
//! raw data (built by the `sections` crate, or by `studies` for a study
//! run).

use crate::cli::ReportArgs;
use crate::report_files::{check_out, print_written, write};
use crate::store_access::resolve;
use analysis::PointSummary;
use record::Store;
use report::DataFile;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `tcplab report`.
pub fn report(store: Store, a: ReportArgs) -> anyhow::Result<ExitCode> {
    let id = resolve(&store, &a.run)?;
    let out = a
        .out
        .unwrap_or_else(|| PathBuf::from(format!("tcplab-run-{id}.html")));
    check_out(&out)?;
    if studies::document::is_study_run(&store, id)? {
        // A study run gets its study's report, with the other hosts
        // imported since it ran.
        crate::study_report::write(&store, id, &[], &out, false)?;
        return Ok(ExitCode::SUCCESS);
    }
    let run = store.load_run(id)?;
    let points = analysis::summarize_run(&run);
    let varying = sections::terminal::varying_factors(&points);
    let warnings = result_warnings(&points, &varying);
    let rep = sections::run_report::run_report(&store, &run, &points, &varying, &warnings)?;

    let mut csv = Vec::new();
    record::export::trials_csv(&run, &mut csv)?;
    let mut json = serde_json::to_vec_pretty(&sections::run_json::run_json(&run, &points, true))?;
    json.push(b'\n');
    let data = vec![
        DataFile::new(
            "csv",
            "one row per trial: parameters and every metric (as `tcplab export --format csv`)",
            csv,
        ),
        DataFile::new(
            "json",
            "the run, per-point summaries and every trial with its details (as `tcplab export --format json`)",
            json,
        ),
    ];
    let w = write(&rep, &out, data)?;
    print_written(&rep, &w);
    Ok(ExitCode::SUCCESS)
}

/// The warnings under the results table: the terminal's steal and probe
/// loss warnings, and the first ten points' failures.
fn result_warnings(points: &[PointSummary], varying: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for w in [
        sections::terminal::steal_warning(points),
        sections::terminal::probe_loss_warning(points),
    ]
    .into_iter()
    .flatten()
    {
        out.push(w.trim_start_matches("warning: ").to_string());
    }
    out.extend(
        sections::terminal::failure_lines(points, varying)
            .into_iter()
            .take(10),
    );
    out
}
