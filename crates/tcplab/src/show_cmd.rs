//! Reading stored runs back: `tcplab runs` lists them, `tcplab show` prints
//! one (table or JSON), `tcplab export` writes one as CSV or JSON, or its
//! probe records.

use crate::cli::{ExportArgs, Format, ShowArgs};
use crate::store_access::{open_store_read_only, resolve};
use crate::usage::usage;
use anyhow::Context;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `tcplab runs` (`--json`: the list as JSON).
pub fn runs(db: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let store = open_store_read_only(db)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&store.list_runs()?)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::UTF8_FULL_CONDENSED);
    t.set_header([
        "run",
        "kind",
        "started",
        "status",
        "place",
        "points",
        "trials ok",
        "failed",
    ]);
    for r in store.list_runs()? {
        t.add_row([
            r.id.to_string(),
            r.kind,
            r.started_at,
            r.status.as_str().to_string(),
            r.place,
            r.points.to_string(),
            r.trials_ok.to_string(),
            r.trials_failed.to_string(),
        ]);
    }
    println!("{t}");
    Ok(ExitCode::SUCCESS)
}

/// Runs `tcplab show`.
pub fn show(db: Option<PathBuf>, a: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_read_only(db)?;
    let id = resolve(&store, &a.run)?;
    let run = store.load_run(id)?;
    let points = analysis::summarize_run(&run);
    if a.json {
        let mut doc = sections::run_json::run_json(&run, &points, false);
        // The host profile (tcplab calibrate) the run references, or null.
        doc["host_profile_id"] = store.run_host_profile_id(id)?.into();
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let varying = sections::terminal::varying_factors(&points);
    let test = points
        .first()
        .map(|p| p.params.test)
        .unwrap_or(record::TestKind::TcpStream);
    println!("{}", sections::terminal::run_header(&run.meta));
    let left_out = analysis::validity::left_out(&run.trials, &points);
    println!(
        "{}",
        sections::terminal::table(test, &points, &varying, &left_out)
    );
    for l in sections::terminal::failure_lines(&points, &varying) {
        println!("{l}");
    }
    for l in sections::streams::stream_lines(&run, &points, &varying) {
        println!("{l}");
    }
    for l in sections::terminal::left_out_lines(&points, &varying, &left_out) {
        println!("{l}");
    }
    for l in sections::terminal::precision_lines(&points, &varying) {
        println!("{l}");
    }
    if let Some(l) = sections::terminal::steal_warning(&points) {
        println!("{l}");
    }
    if let Some(l) = sections::terminal::probe_loss_warning(&points) {
        println!("{l}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `tcplab export`.
pub fn export(db: Option<PathBuf>, a: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_store_read_only(db)?;
    let id = resolve(&store, &a.run)?;
    let run = store.load_run(id)?;
    let mut buf = Vec::new();
    if a.records {
        let mut rows = Vec::new();
        for t in &run.trials {
            if a.trial.is_some_and(|s| s != t.seq) {
                continue;
            }
            if let Some(blob) = store.load_events(t.id)? {
                let events = record::probe_event::decode_all(&blob.data);
                rows.extend(record::export::record_rows(t.seq, &events));
            }
        }
        if rows.is_empty()
            && run
                .trials
                .iter()
                .filter(|t| a.trial.is_none_or(|s| s == t.seq))
                .any(sections::path_source::kept_summary_only)
        {
            return Err(usage(format!(
                "run {id}: {}; bench with --probe-keep all to export them",
                sections::path_source::RAW_NOT_KEPT
            )));
        }
        if rows.is_empty() {
            return Err(usage(format!(
                "run {id} has no probe records{} (bench with --probe queues,tcp,sched)",
                a.trial
                    .map(|s| format!(" in trial {s}"))
                    .unwrap_or_default()
            )));
        }
        match a.format {
            Format::Json => {
                serde_json::to_writer_pretty(&mut buf, &rows)?;
                buf.push(b'\n');
            }
            Format::Csv => record::export::records_csv(&rows, &mut buf)?,
        }
    } else {
        match a.format {
            Format::Json => {
                let points = analysis::summarize_run(&run);
                let mut doc = sections::run_json::run_json(&run, &points, true);
                // The host profile the run references, so that an import
                // elsewhere (tcplab import) keeps the host's figures.
                doc["host_profile"] =
                    serde_json::to_value(store.run_host_profile(id)?.map(|p| p.1))?;
                serde_json::to_writer_pretty(&mut buf, &doc)?;
                buf.push(b'\n');
            }
            Format::Csv => record::export::trials_csv(&run, &mut buf)?,
        }
    }
    match a.out {
        Some(path) => {
            std::fs::write(&path, &buf).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().write_all(&buf)?,
    }
    Ok(ExitCode::SUCCESS)
}
