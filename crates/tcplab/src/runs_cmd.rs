//! `tcplab runs delete ID…`: deletes runs with everything stored with them,
//! all or none, and says what went.

use crate::store_access::{open_store, resolve};
use crate::usage::usage;
use record::StoreError;
use std::path::PathBuf;
use std::process::ExitCode;

/// Runs `tcplab runs delete`.
pub fn delete(db: Option<PathBuf>, runs: &[String], json: bool) -> anyhow::Result<ExitCode> {
    let mut store = open_store(db)?;
    // Every id is resolved before anything is deleted: one unknown id
    // refuses the whole command.
    let ids = runs
        .iter()
        .map(|spec| resolve(&store, spec))
        .collect::<anyhow::Result<Vec<i64>>>()?;
    let deleted = store.delete_runs(&ids).map_err(|e| match e {
        StoreError::NoSuchRun(_) => usage(e),
        other => other.into(),
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&deleted)?);
        return Ok(ExitCode::SUCCESS);
    }
    for d in &deleted {
        println!(
            "deleted run {} ({}, {}): {} points, {} trials, {} metric values{}",
            d.id,
            d.kind,
            d.started_at,
            d.points,
            d.trials,
            d.metrics,
            if d.probe_record_blobs + d.cpu_sample_blobs > 0 {
                format!(
                    ", probe data of {} trials ({} bytes)",
                    d.probe_record_blobs.max(d.cpu_sample_blobs),
                    d.probe_bytes
                )
            } else {
                String::new()
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}
