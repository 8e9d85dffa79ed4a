//! Deleting runs whole: the run, its points, trials, metrics, probe records
//! and CPU samples (the schema's `ON DELETE CASCADE`), several at once in
//! one transaction, or none when any of them is unknown.

use super::{Store, StoreError};
use rusqlite::{OptionalExtension, Transaction};
use serde::Serialize;

/// What deleting one run removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DeletedRun {
    /// The run's id.
    pub id: i64,
    /// Its kind (`tcp-stream`, `study:abrams91`, …).
    pub kind: String,
    /// When it started.
    pub started_at: String,
    /// Points removed.
    pub points: i64,
    /// Trials removed.
    pub trials: i64,
    /// Metric values removed.
    pub metrics: i64,
    /// Trials whose probe records were removed.
    pub probe_record_blobs: i64,
    /// Trials whose CPU samples (`--probe cpu`) were removed.
    pub cpu_sample_blobs: i64,
    /// Bytes of probe records and CPU sample documents removed.
    pub probe_bytes: i64,
}

impl Store {
    /// Deletes the runs `ids` and everything stored with them, in one
    /// transaction: when any id is not a stored run, nothing is deleted and
    /// the error names the first unknown one. Host profiles stay (other
    /// runs may reference them). Returns what each run had, in `ids` order.
    pub fn delete_runs(&mut self, ids: &[i64]) -> Result<Vec<DeletedRun>, StoreError> {
        let tx = self.write_tx()?;
        let mut deleted = Vec::with_capacity(ids.len());
        for &id in ids {
            if deleted.iter().any(|d: &DeletedRun| d.id == id) {
                continue;
            }
            deleted.push(census(&tx, id)?.ok_or(StoreError::NoSuchRun(id))?);
        }
        for d in &deleted {
            tx.execute("DELETE FROM runs WHERE id = ?1", [d.id])?;
        }
        tx.commit()?;
        Ok(deleted)
    }
}

/// What is stored with run `id`, or `None` when there is no such run.
fn census(tx: &Transaction<'_>, id: i64) -> Result<Option<DeletedRun>, StoreError> {
    let Some((kind, started_at)) = tx
        .query_row(
            "SELECT kind, started_at FROM runs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
    else {
        return Ok(None);
    };
    let count =
        |sql: &str| -> Result<i64, StoreError> { Ok(tx.query_row(sql, [id], |r| r.get(0))?) };
    Ok(Some(DeletedRun {
        id,
        kind,
        started_at,
        points: count("SELECT COUNT(*) FROM points WHERE run_id = ?1")?,
        trials: count("SELECT COUNT(*) FROM trials WHERE run_id = ?1")?,
        metrics: count(
            "SELECT COUNT(*) FROM metrics m JOIN trials t ON t.id = m.trial_id WHERE t.run_id = ?1",
        )?,
        probe_record_blobs: count(
            "SELECT COUNT(*) FROM trial_events e JOIN trials t ON t.id = e.trial_id WHERE t.run_id = ?1",
        )?,
        cpu_sample_blobs: count(
            "SELECT COUNT(*) FROM trial_profiles p JOIN trials t ON t.id = p.trial_id WHERE t.run_id = ?1",
        )?,
        probe_bytes: count(
            "SELECT COALESCE(SUM(LENGTH(e.data)), 0) FROM trial_events e JOIN trials t ON t.id = e.trial_id WHERE t.run_id = ?1",
        )? + count(
            "SELECT COALESCE(SUM(LENGTH(p.json)), 0) FROM trial_profiles p JOIN trials t ON t.id = p.trial_id WHERE t.run_id = ?1",
        )?,
    }))
}
