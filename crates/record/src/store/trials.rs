//! Points and trials: storing them (a trial with its metrics, probe
//! records and CPU samples, in one transaction) and loading them back.

use super::runs::require_run;
use super::{Store, StoreError};
use crate::params::TrialParams;
use crate::run::{PointRecord, PrecisionOutcome, TrialOutcome, TrialRecord, TrialStatus};
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction};
use std::collections::{BTreeMap, HashMap};

impl Store {
    /// Stores a point of run `run_id` and returns its id (`point.id` is ignored).
    pub fn add_point(&mut self, run_id: i64, point: &PointRecord) -> Result<i64, StoreError> {
        let params_json = serde_json::to_string(&point.params)?;
        let precision_json = point
            .precision
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        let tx = self.write_tx()?;
        require_run(&tx, run_id)?;
        tx.execute(
            "INSERT INTO points (run_id, idx, params_json, precision_json)
             VALUES (?1, ?2, ?3, ?4)",
            params![run_id, point.index, params_json, precision_json],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// Records how point `point_id` ended against the run's `--precision`
    /// target.
    pub fn set_point_precision(
        &mut self,
        point_id: i64,
        outcome: &PrecisionOutcome,
    ) -> Result<(), StoreError> {
        let changed = self.conn.execute(
            "UPDATE points SET precision_json = ?1 WHERE id = ?2",
            params![serde_json::to_string(outcome)?, point_id],
        )?;
        if changed == 0 {
            return Err(StoreError::Corrupt(format!("no point with id {point_id}")));
        }
        Ok(())
    }

    /// Stores a trial of run `run_id` with its finite metrics, in one
    /// transaction, and returns its id (`trial.id` is ignored).
    ///
    /// Non-finite metric values are not stored, and a failed trial stores no
    /// metrics at all.
    pub fn add_trial(&mut self, run_id: i64, trial: &TrialRecord) -> Result<i64, StoreError> {
        let tx = self.write_tx()?;
        let trial_id = insert_trial(&tx, run_id, trial)?;
        tx.commit()?;
        Ok(trial_id)
    }

    /// The points of `run_id`, by index.
    pub(super) fn load_points(&self, run_id: i64) -> Result<Vec<PointRecord>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, idx, params_json, precision_json FROM points
                 WHERE run_id = ?1 ORDER BY idx",
        )?;
        let rows = stmt.query_map([run_id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, u32>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, Option<String>>(3)?,
            ))
        })?;
        rows.map(|row| {
            let (id, index, params_json, precision_json) = row?;
            let params: TrialParams = serde_json::from_str(&params_json)?;
            let precision = precision_json
                .map(|j| serde_json::from_str(&j))
                .transpose()?;
            Ok(PointRecord {
                id,
                index,
                params,
                precision,
            })
        })
        .collect()
    }

    /// The trials of `run_id`, by `seq`, without metrics.
    pub(super) fn load_trials(&self, run_id: i64) -> Result<Vec<TrialRecord>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, point_id, seq, repetition, started_at, status, error, details_json
             FROM trials WHERE run_id = ?1 ORDER BY seq, id",
        )?;
        let rows = stmt.query_map([run_id], TrialRow::read)?;
        rows.map(|row| row?.into_trial()).collect()
    }

    /// Fills `outcome.metrics` of the loaded trials of `run_id`.
    pub(super) fn attach_metrics(
        &self,
        run_id: i64,
        trials: &mut [TrialRecord],
    ) -> Result<(), StoreError> {
        let by_id: HashMap<i64, usize> =
            trials.iter().enumerate().map(|(i, t)| (t.id, i)).collect();
        let mut stmt = self.conn.prepare(
            "SELECT m.trial_id, m.name, m.value
             FROM metrics m JOIN trials t ON t.id = m.trial_id
             WHERE t.run_id = ?1",
        )?;
        let rows = stmt.query_map([run_id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, f64>(2)?,
            ))
        })?;
        for row in rows {
            let (trial_id, name, value) = row?;
            if let Some(&i) = by_id.get(&trial_id) {
                trials[i].outcome.metrics.insert(name, value);
            }
        }
        Ok(())
    }
}

/// A `trials` row as stored, before its text columns are decoded.
struct TrialRow {
    id: i64,
    point_id: i64,
    seq: u32,
    repetition: u32,
    started_at: String,
    status: String,
    error: Option<String>,
    details_json: String,
}

impl TrialRow {
    /// Reads the columns of `SELECT id, point_id, ..., details_json` in table order
    /// (without `run_id`).
    fn read(row: &Row<'_>) -> rusqlite::Result<TrialRow> {
        Ok(TrialRow {
            id: row.get(0)?,
            point_id: row.get(1)?,
            seq: row.get(2)?,
            repetition: row.get(3)?,
            started_at: row.get(4)?,
            status: row.get(5)?,
            error: row.get(6)?,
            details_json: row.get(7)?,
        })
    }

    /// Decodes the status and details; metrics are left empty.
    fn into_trial(self) -> Result<TrialRecord, StoreError> {
        Ok(TrialRecord {
            id: self.id,
            point_id: self.point_id,
            seq: self.seq,
            repetition: self.repetition,
            status: parse_trial_status(self.id, &self.status)?,
            started_at: self.started_at,
            error: self.error,
            outcome: TrialOutcome {
                metrics: BTreeMap::new(),
                details: serde_json::from_str(&self.details_json)?,
                events: None,
                profile: None,
                path_summary: None,
            },
        })
    }
}

/// Inserts a trial of `run_id` in `tx`: its row, and for a successful trial
/// its finite metrics, probe records and CPU samples. Returns its id.
pub(crate) fn insert_trial(
    tx: &Transaction<'_>,
    run_id: i64,
    trial: &TrialRecord,
) -> Result<i64, StoreError> {
    let details_json = serde_json::to_string(&trial.outcome.details)?;
    require_point_of_run(tx, run_id, trial.point_id)?;
    tx.execute(
        "INSERT INTO trials (run_id, point_id, seq, repetition, started_at,
                             status, error, details_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            run_id,
            trial.point_id,
            trial.seq,
            trial.repetition,
            trial.started_at,
            trial.status.as_str(),
            trial.error,
            details_json,
        ],
    )?;
    let trial_id = tx.last_insert_rowid();
    if trial.status == TrialStatus::Ok {
        insert_metrics(tx, trial_id, &trial.outcome.metrics)?;
        if let Some(ev) = &trial.outcome.events {
            tx.execute(
                "INSERT INTO trial_events (trial_id, version, record_size, count, data)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    trial_id,
                    ev.version,
                    ev.record_size,
                    ev.count() as i64,
                    ev.data
                ],
            )?;
        }
        if let Some(json) = &trial.outcome.path_summary {
            tx.execute(
                "INSERT INTO trial_path_summaries (trial_id, json) VALUES (?1, ?2)",
                params![trial_id, json],
            )?;
        }
        if let Some(p) = &trial.outcome.profile {
            tx.execute(
                "INSERT INTO trial_profiles (trial_id, version, samples, json)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    trial_id,
                    p.version,
                    p.total_samples() as i64,
                    serde_json::to_string(p)?
                ],
            )?;
        }
    }
    Ok(trial_id)
}

/// Inserts the finite metrics of a trial.
fn insert_metrics(
    tx: &Transaction<'_>,
    trial_id: i64,
    metrics: &BTreeMap<String, f64>,
) -> Result<(), StoreError> {
    let mut stmt = tx.prepare("INSERT INTO metrics (trial_id, name, value) VALUES (?1, ?2, ?3)")?;
    for (name, value) in metrics.iter().filter(|(_, v)| v.is_finite()) {
        stmt.execute(params![trial_id, name, value])?;
    }
    Ok(())
}

/// Fails unless point `point_id` exists and belongs to run `run_id`.
fn require_point_of_run(conn: &Connection, run_id: i64, point_id: i64) -> Result<(), StoreError> {
    let owner: Option<i64> = conn
        .query_row(
            "SELECT run_id FROM points WHERE id = ?1",
            [point_id],
            |row| row.get(0),
        )
        .optional()?;
    match owner {
        Some(owner) if owner == run_id => Ok(()),
        _ => {
            require_run(conn, run_id)?;
            Err(StoreError::NoSuchPoint {
                run: run_id,
                point: point_id,
            })
        }
    }
}

/// Parses a stored trial status.
fn parse_trial_status(trial_id: i64, text: &str) -> Result<TrialStatus, StoreError> {
    TrialStatus::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("trial {trial_id} has unknown status {text:?}")))
}
