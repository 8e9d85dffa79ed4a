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
            match store.import_run(f, provenance)? {
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
