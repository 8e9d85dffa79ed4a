//! Where the commands get their store and their runs: the database path,
//! opening the store, resolving a RUN argument, and the Ctrl-C flag of the
//! commands that measure.

use crate::usage::usage;
use anyhow::Context;
use record::{Store, StoreError};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The database path: `--db`, `$TCPLAB_DB`, or the user's data directory.
fn db_path(db: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = db {
        return Ok(p);
    }
    let base = dirs::data_dir().context("no data directory for the database; pass --db PATH")?;
    Ok(base.join("tcplab").join("tcplab.db"))
}

/// Opens the store at the database path.
pub fn open_store(db: Option<PathBuf>) -> anyhow::Result<Store> {
    let path = db_path(db)?;
    Store::open(&path).with_context(|| format!("opening database {}", path.display()))
}

/// Opens the existing store at the database path for a command that only
/// reads: nothing is created or written; a missing database is bad input
/// ("no database at PATH").
pub fn open_store_read_only(db: Option<PathBuf>) -> anyhow::Result<Store> {
    let path = db_path(db)?;
    Store::open_read_only(&path).map_err(|e| match e {
        StoreError::NoDatabase(_) => usage(e),
        other => anyhow::Error::new(other).context(format!("opening database {}", path.display())),
    })
}

/// Resolves RUN; an unknown or malformed run is bad input.
pub fn resolve(store: &Store, spec: &str) -> anyhow::Result<i64> {
    store.resolve_run(spec).map_err(|e| match e {
        StoreError::BadRunSpec(_) | StoreError::NoSuchRun(_) | StoreError::NoRuns => usage(e),
        other => other.into(),
    })
}

/// Installs the Ctrl-C / SIGTERM handler: the first signal interrupts the run
/// gracefully, a second one exits at once.
pub fn interrupt_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ntcplab: interrupted; finishing the current trial's bookkeeping (Ctrl-C again to quit at once)");
    })
    .context("installing the Ctrl-C handler")?;
    Ok(flag)
}
