//! `tcplab import FILE…`: brings runs made on other hosts into this
//! database, from other tcplab databases or from runs' JSON exports. Every
//! file is read and checked before anything is stored; each run is then
//! stored whole in one transaction, or not at all.

use crate::cli::ImportArgs;
use crate::usage::usage;
use record::{ForeignRun, ImportOutcome, Store};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Runs `tcplab import`.
pub fn import(mut store: Store, a: ImportArgs) -> anyhow::Result<ExitCode> {
    let ours = store.path().map(|p| Path::new(p).canonicalize());
    let mut offered: Vec<(String, Vec<ForeignRun>)> = Vec::new();
    for f in &a.files {
        if let (Some(Ok(ours)), Ok(theirs)) = (&ours, f.canonicalize()) {
            if *ours == theirs {
                return Err(usage(format!(
                    "{}: that is this database; import another one",
                    f.display()
                )));
            }
        }
        offered.push((f.display().to_string(), read(f)?));
    }
    let (mut new, mut present) = (0, 0);
    let mut done = Vec::new();
    for (file, runs) in &offered {
        let name = Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        for f in runs {
            let m = &f.run.meta;
            let what = format!(
                "{} run {} ({} on {}, {})",
                name, m.id, m.kind, m.host.hostname, m.started_at
            );
            let provenance = json!({
                "from": name,
                "run": m.id,
                "at": crate::runner::now(),
            });
            let outcome = store.import_run(f, provenance)?;
            let (what_happened, here) = match outcome {
                ImportOutcome::Imported(id) => ("imported", id),
                ImportOutcome::AlreadyPresent(id) => ("already_here", id),
            };
            done.push(json!({
                "file": file,
                "source_run": m.id,
                "kind": m.kind,
                "host": m.host.hostname,
                "started_at": m.started_at,
                "outcome": what_happened,
                "run": here,
                "with_host_profile": f.host_profile.is_some(),
            }));
            match outcome {
                ImportOutcome::Imported(_) if a.json => new += 1,
                ImportOutcome::AlreadyPresent(_) if a.json => present += 1,
                ImportOutcome::Imported(id) => {
                    new += 1;
                    println!(
                        "imported {what} as run {id}{}",
                        if f.host_profile.is_some() {
                            ", with its host profile"
                        } else {
                            ""
                        }
                    );
                }
                ImportOutcome::AlreadyPresent(id) => {
                    present += 1;
                    println!("skipped {what}: already here as run {id}");
                }
            }
        }
    }
    if a.json {
        let doc = json!({ "imported": new, "already_here": present, "runs": done });
        println!("{}", serde_json::to_string_pretty(&doc)?);
    }
    eprintln!("tcplab: {new} runs imported, {present} already here");
    Ok(ExitCode::SUCCESS)
}

/// The runs in one file: a tcplab database or a run's JSON export.
fn read(path: &Path) -> anyhow::Result<Vec<ForeignRun>> {
    let bytes =
        std::fs::read(path).map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
    if bytes.starts_with(SQLITE_MAGIC) {
        return Store::read_foreign_database(path).map_err(|e| match e {
            record::StoreError::BadImport(m) => usage(m),
            other => usage(format!("{}: {other}", path.display())),
        });
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        usage(format!(
            "{}: neither a tcplab database nor a JSON export",
            path.display()
        ))
    })?;
    let run = record::import::read_json_export(text)
        .map_err(|e| usage(format!("{}: {e}", path.display())))?;
    Ok(vec![run])
}
