//! Runs: creating one, recording how it ended, deleting it, and loading
//! it whole (metadata, points, trials with their metrics).

use super::{Store, StoreError};
use crate::owner::RunOwner;
use crate::run::{PointRecord, RunMeta, RunStatus, TrialRecord};
use rusqlite::{params, Connection, OptionalExtension, Row};
use serde::Serialize;

/// A whole run as stored: metadata, points by index, trials by execution order.
#[derive(Debug, Clone, Serialize)]
pub struct StoredRun {
    /// Run metadata (with its database id).
    pub meta: RunMeta,
    /// Points ordered by index.
    pub points: Vec<PointRecord>,
    /// Trials ordered by `seq`, with their metrics and details.
    pub trials: Vec<TrialRecord>,
}

impl Store {
    /// Stores a new run and returns its id (`meta.id` is ignored). This
    /// process is recorded as its owner: if the run is still `running` when
    /// the owner is gone, the run reads as `killed`.
    pub fn create_run(&mut self, meta: &RunMeta) -> Result<i64, StoreError> {
        let host_json = serde_json::to_string(&meta.host)?;
        let settings_json = serde_json::to_string(&meta.settings)?;
        let profile = self.latest_host_profile(&meta.host.hostname)?.map(|p| p.0);
        let owner = RunOwner::current();
        self.conn.execute(
            "INSERT INTO runs (kind, command, seed, place, started_at, finished_at,
                               status, host_json, settings_json, tool_version, host_profile_id,
                               owner_host, owner_pid, owner_boot_id, owner_start_ticks)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            params![
                meta.kind,
                meta.command,
                seed_to_sql(meta.seed),
                meta.place,
                meta.started_at,
                meta.finished_at,
                meta.status.as_str(),
                host_json,
                settings_json,
                meta.tool_version,
                profile,
                owner.hostname,
                owner.pid,
                owner.boot_id,
                i64::try_from(owner.start_ticks).unwrap_or(0),
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Marks `killed` every `running` run whose owner process is gone.
    pub(super) fn mark_killed_runs(&mut self) -> Result<(), StoreError> {
        let dead: Vec<i64> = {
            let mut stmt = self.conn.prepare(&format!(
                "SELECT id, {OWNER_COLUMNS} FROM runs WHERE status = 'running'"
            ))?;
            let rows =
                stmt.query_map([], |row| Ok((row.get::<_, i64>(0)?, read_owner(row, 1)?)))?;
            let mut dead = Vec::new();
            for row in rows {
                let (id, owner) = row?;
                if owner.is_some_and(|o| o.is_gone()) {
                    dead.push(id);
                }
            }
            dead
        };
        for id in dead {
            self.conn.execute(
                "UPDATE runs SET status = 'killed' WHERE id = ?1 AND status = 'running'",
                [id],
            )?;
        }
        Ok(())
    }

    /// Records the final state and end time of a run.
    pub fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        finished_at: &str,
    ) -> Result<(), StoreError> {
        let changed = self.conn.execute(
            "UPDATE runs SET status = ?1, finished_at = ?2 WHERE id = ?3",
            params![status.as_str(), finished_at, run_id],
        )?;
        expect_one_run(changed, run_id)
    }

    /// Adds `value` under `key` to a run's stored settings (what the run
    /// found before its trials, such as a host model's calibration).
    pub fn add_run_setting(
        &mut self,
        run_id: i64,
        key: &str,
        value: serde_json::Value,
    ) -> Result<(), StoreError> {
        let text: String = self
            .conn
            .query_row(
                "SELECT settings_json FROM runs WHERE id = ?1",
                params![run_id],
                |r| r.get(0),
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(run_id))?;
        let mut settings: serde_json::Value = serde_json::from_str(&text)?;
        if !settings.is_object() {
            settings = serde_json::json!({});
        }
        settings[key] = value;
        let changed = self.conn.execute(
            "UPDATE runs SET settings_json = ?1 WHERE id = ?2",
            params![serde_json::to_string(&settings)?, run_id],
        )?;
        expect_one_run(changed, run_id)
    }

    /// Deletes a run with its points, trials and metrics.
    pub fn delete_run(&mut self, run_id: i64) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [run_id])?;
        expect_one_run(changed, run_id)
    }

    /// Loads a whole run: metadata, points by index, trials by `seq` with
    /// their metrics and details.
    pub fn load_run(&self, run_id: i64) -> Result<StoredRun, StoreError> {
        let meta = self.load_meta(run_id)?;
        let points = self.load_points(run_id)?;
        let mut trials = self.load_trials(run_id)?;
        self.attach_metrics(run_id, &mut trials)?;
        Ok(StoredRun {
            meta,
            points,
            trials,
        })
    }

    /// The `runs` row of `run_id`.
    fn load_meta(&self, run_id: i64) -> Result<RunMeta, StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT id, kind, command, seed, place, started_at, finished_at, status,
                            host_json, settings_json, tool_version, {OWNER_COLUMNS}
                     FROM runs WHERE id = ?1"
                ),
                [run_id],
                RunRow::read,
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(run_id))?
            .into_meta()
    }
}

/// A `runs` row as stored, before its text columns are decoded.
struct RunRow {
    id: i64,
    kind: String,
    command: String,
    seed: i64,
    place: String,
    started_at: String,
    finished_at: Option<String>,
    status: String,
    host_json: String,
    settings_json: String,
    tool_version: String,
    owner: Option<RunOwner>,
}

/// The owner columns of `runs`, in the order [`read_owner`] reads them.
pub(super) const OWNER_COLUMNS: &str = "owner_host, owner_pid, owner_boot_id, owner_start_ticks";

/// The run's owner from the [`OWNER_COLUMNS`] starting at column `first`
/// (`None` for runs stored before owners were).
pub(super) fn read_owner(row: &Row<'_>, first: usize) -> rusqlite::Result<Option<RunOwner>> {
    let hostname: Option<String> = row.get(first)?;
    let pid: Option<u32> = row.get(first + 1)?;
    let boot_id: Option<String> = row.get(first + 2)?;
    let start: Option<i64> = row.get(first + 3)?;
    Ok(match (hostname, pid, boot_id, start) {
        (Some(hostname), Some(pid), Some(boot_id), Some(start)) => Some(RunOwner {
            hostname,
            pid,
            boot_id,
            start_ticks: u64::try_from(start).unwrap_or(0),
        }),
        _ => None,
    })
}

/// The status a run has now: a stored `running` whose owner is gone is
/// `killed` (a read-only store cannot rewrite it).
pub(super) fn current_status(stored: RunStatus, owner: Option<&RunOwner>) -> RunStatus {
    match (stored, owner) {
        (RunStatus::Running, Some(o)) if o.is_gone() => RunStatus::Killed,
        (s, _) => s,
    }
}

impl RunRow {
    /// Reads the columns of `SELECT id, kind, ..., tool_version` in table order.
    fn read(row: &Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: row.get(0)?,
            kind: row.get(1)?,
            command: row.get(2)?,
            seed: row.get(3)?,
            place: row.get(4)?,
            started_at: row.get(5)?,
            finished_at: row.get(6)?,
            status: row.get(7)?,
            host_json: row.get(8)?,
            settings_json: row.get(9)?,
            tool_version: row.get(10)?,
            owner: read_owner(row, 11)?,
        })
    }

    /// Decodes the status, seed and JSON columns.
    fn into_meta(self) -> Result<RunMeta, StoreError> {
        Ok(RunMeta {
            id: self.id,
            status: current_status(
                parse_run_status(self.id, &self.status)?,
                self.owner.as_ref(),
            ),
            seed: seed_from_sql(self.seed),
            host: serde_json::from_str(&self.host_json)?,
            settings: serde_json::from_str(&self.settings_json)?,
            kind: self.kind,
            command: self.command,
            place: self.place,
            started_at: self.started_at,
            finished_at: self.finished_at,
            tool_version: self.tool_version,
        })
    }
}

/// Fails with [`StoreError::NoSuchRun`] unless run `run_id` exists.
pub(super) fn require_run(conn: &Connection, run_id: i64) -> Result<(), StoreError> {
    conn.query_row("SELECT 1 FROM runs WHERE id = ?1", [run_id], |_| Ok(()))
        .optional()?
        .ok_or(StoreError::NoSuchRun(run_id))
}

/// Maps the row count of a single-run update or delete to a result.
fn expect_one_run(changed: usize, run_id: i64) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::NoSuchRun(run_id))
    } else {
        Ok(())
    }
}

/// Parses a stored run status.
pub(super) fn parse_run_status(run_id: i64, text: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("run {run_id} has unknown status {text:?}")))
}

/// A seed as SQLite stores it: the same 64 bits as a signed integer.
pub(crate) fn seed_to_sql(seed: u64) -> i64 {
    i64::from_ne_bytes(seed.to_ne_bytes())
}

/// The inverse of [`seed_to_sql`].
fn seed_from_sql(stored: i64) -> u64 {
    u64::from_ne_bytes(stored.to_ne_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_round_trip_all_64_bits() {
        for seed in [0, 1, u64::MAX, 1 << 63, 0xdead_beef_cafe_f00d] {
            assert_eq!(seed_from_sql(seed_to_sql(seed)), seed);
        }
    }
}
