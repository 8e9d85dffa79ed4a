//! The SQLite store: runs, their points, trials and metrics.
//!
//! One database file holds every run. The schema is versioned through
//! `PRAGMA user_version` by `rusqlite_migration`; opening a store brings an
//! older file up to date.

use crate::cpu_profile::CpuProfile;
use crate::host_profile::HostProfile;
use crate::params::TrialParams;
use crate::run::{
    EventBlob, PointRecord, RunMeta, RunStatus, TrialOutcome, TrialRecord, TrialStatus,
};
use rusqlite::{params, Connection, OptionalExtension, Row, Transaction, TransactionBehavior};
use rusqlite_migration::{Migrations, M};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

/// How long a statement waits for another connection's lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Schema version 1: runs, points, trials and metrics.
const SCHEMA_V1: &str = "
CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    kind          TEXT NOT NULL,
    command       TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    place         TEXT NOT NULL,
    started_at    TEXT NOT NULL,
    finished_at   TEXT NULL,
    status        TEXT NOT NULL,
    host_json     TEXT NOT NULL,
    settings_json TEXT NOT NULL,
    tool_version  TEXT NOT NULL
);
CREATE TABLE points (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    params_json TEXT NOT NULL,
    UNIQUE (run_id, idx)
);
CREATE TABLE trials (
    id           INTEGER PRIMARY KEY,
    run_id       INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    point_id     INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    repetition   INTEGER NOT NULL,
    started_at   TEXT NOT NULL,
    status       TEXT NOT NULL,
    error        TEXT NULL,
    details_json TEXT NOT NULL
);
CREATE TABLE metrics (
    trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    name     TEXT NOT NULL,
    value    REAL NOT NULL,
    PRIMARY KEY (trial_id, name)
);
CREATE INDEX trials_run_id ON trials(run_id);
CREATE INDEX trials_point_id ON trials(point_id);
CREATE INDEX points_run_id ON points(run_id);
";

/// Version 2: probe records, one blob per trial (kept apart from `trials`
/// so listing and loading runs never reads them).
const SCHEMA_V2: &str = "
CREATE TABLE trial_events (
    trial_id    INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    record_size INTEGER NOT NULL,
    count       INTEGER NOT NULL,
    data        BLOB NOT NULL
);
";

/// Version 3: CPU samples (`--probe cpu`), one JSON document per trial,
/// apart from `trials` for the same reason as the probe records.
const SCHEMA_V3: &str = "
CREATE TABLE trial_profiles (
    trial_id INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
    version  INTEGER NOT NULL,
    samples  INTEGER NOT NULL,
    json     TEXT NOT NULL
);
";

/// Version 4: host profiles from `tcplab calibrate`; each run references
/// the newest profile of its host when it was created.
const SCHEMA_V4: &str = "
CREATE TABLE host_profiles (
    id         INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    hostname   TEXT NOT NULL,
    version    INTEGER NOT NULL,
    json       TEXT NOT NULL
);
CREATE INDEX host_profiles_hostname ON host_profiles(hostname);
ALTER TABLE runs ADD COLUMN host_profile_id INTEGER NULL REFERENCES host_profiles(id);
";

/// The schema steps in order; a store at version n has the first n applied.
const SCHEMA_STEPS: [&str; SCHEMA_VERSION] = [SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4];

/// The schema version a store is migrated to (`PRAGMA user_version`).
pub const SCHEMA_VERSION: usize = 4;

fn migrations() -> Migrations<'static> {
    Migrations::new(SCHEMA_STEPS.iter().map(|s| M::up(s)).collect())
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite reported an error.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The schema could not be brought up to date.
    #[error("database schema migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    /// A JSON column could not be written or read back.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// A file system operation failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// CSV export failed.
    #[error("CSV error: {0}")]
    Csv(#[from] csv::Error),
    /// No run has this id.
    #[error("no run with id {0}")]
    NoSuchRun(i64),
    /// No host profile has this id.
    #[error("no host profile with id {0}")]
    NoSuchProfile(i64),
    /// The run has no point with this id.
    #[error("run {run} has no point with id {point}")]
    NoSuchPoint {
        /// The run asked about.
        run: i64,
        /// The point id that is not in the run.
        point: i64,
    },
    /// `latest` was asked for but the store holds no run.
    #[error("no runs recorded yet")]
    NoRuns,
    /// A run reference is neither an id nor `latest`.
    #[error("invalid run {0:?}: expected a run id or \"latest\"")]
    BadRunSpec(String),
    /// The database holds a value this version cannot interpret.
    /// What was offered for import is not a tcplab database or run export.
    #[error("cannot import: {0}")]
    BadImport(String),
    #[error("corrupt store: {0}")]
    Corrupt(String),
}

/// One line of the run list.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// The test, or a study name.
    pub kind: String,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// State.
    pub status: RunStatus,
    /// Where the trials ran.
    pub place: String,
    /// Number of points stored.
    pub points: u32,
    /// Number of trials that measured.
    pub trials_ok: u32,
    /// Number of trials that failed.
    pub trials_failed: u32,
}

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

/// A handle on the SQLite database that keeps every run.
pub struct Store {
    pub(crate) conn: Connection,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.conn.path())
            .finish()
    }
}

impl Store {
    /// Opens (creating if needed) the database at `path`, with its parent
    /// directories, and brings its schema up to date.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        Store::init(Connection::open(path)?)
    }

    /// Opens a fresh private database in memory (for tests and dry runs).
    pub fn open_in_memory() -> Result<Store, StoreError> {
        Store::init(Connection::open_in_memory()?)
    }

    /// Configures the connection and runs pending migrations.
    fn init(mut conn: Connection) -> Result<Store, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // Returns the resulting mode: "wal" for files, "memory" in memory.
        let _mode: String =
            conn.pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrations().to_latest(&mut conn)?;
        Ok(Store { conn })
    }

    /// The database file's path (`None` in memory).
    pub fn path(&self) -> Option<&str> {
        self.conn.path().filter(|p| !p.is_empty())
    }

    /// Starts a write transaction that takes the write lock immediately.
    pub(crate) fn write_tx(&mut self) -> Result<Transaction<'_>, StoreError> {
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// Stores a new run and returns its id (`meta.id` is ignored).
    pub fn create_run(&mut self, meta: &RunMeta) -> Result<i64, StoreError> {
        let host_json = serde_json::to_string(&meta.host)?;
        let settings_json = serde_json::to_string(&meta.settings)?;
        let profile = self.latest_host_profile(&meta.host.hostname)?.map(|p| p.0);
        self.conn.execute(
            "INSERT INTO runs (kind, command, seed, place, started_at, finished_at,
                               status, host_json, settings_json, tool_version, host_profile_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
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
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Stores a host profile and returns its id. Runs created after it on
    /// the same host reference it.
    pub fn add_host_profile(&mut self, p: &HostProfile) -> Result<i64, StoreError> {
        self.conn.execute(
            "INSERT INTO host_profiles (created_at, hostname, version, json)
             VALUES (?1, ?2, ?3, ?4)",
            params![
                p.created_at,
                p.hostname,
                p.version,
                serde_json::to_string(p)?
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The host profile with this id.
    pub fn load_host_profile(&self, id: i64) -> Result<HostProfile, StoreError> {
        let json: String = self
            .conn
            .query_row("SELECT json FROM host_profiles WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()?
            .ok_or(StoreError::NoSuchProfile(id))?;
        Ok(serde_json::from_str(&json)?)
    }

    /// The newest profile of `hostname`, with its id.
    pub fn latest_host_profile(
        &self,
        hostname: &str,
    ) -> Result<Option<(i64, HostProfile)>, StoreError> {
        let row: Option<(i64, String)> = self
            .conn
            .query_row(
                "SELECT id, json FROM host_profiles WHERE hostname = ?1 ORDER BY id DESC LIMIT 1",
                [hostname],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        row.map(|(id, j)| Ok((id, serde_json::from_str(&j)?)))
            .transpose()
    }

    /// The id of the host profile a run references (the newest of its host
    /// when it was created), if there was one.
    pub fn run_host_profile_id(&self, run_id: i64) -> Result<Option<i64>, StoreError> {
        require_run(&self.conn, run_id)?;
        Ok(self.conn.query_row(
            "SELECT host_profile_id FROM runs WHERE id = ?1",
            [run_id],
            |r| r.get(0),
        )?)
    }

    /// The profile a run references (the newest of its host when it was
    /// created), with its id, if there was one.
    pub fn run_host_profile(&self, run_id: i64) -> Result<Option<(i64, HostProfile)>, StoreError> {
        self.run_host_profile_id(run_id)?
            .map(|id| Ok((id, self.load_host_profile(id)?)))
            .transpose()
    }

    /// Stores a point of run `run_id` and returns its id (`point.id` is ignored).
    pub fn add_point(&mut self, run_id: i64, point: &PointRecord) -> Result<i64, StoreError> {
        let params_json = serde_json::to_string(&point.params)?;
        let tx = self.write_tx()?;
        require_run(&tx, run_id)?;
        tx.execute(
            "INSERT INTO points (run_id, idx, params_json) VALUES (?1, ?2, ?3)",
            params![run_id, point.index, params_json],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
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

    /// The probe records stored with a trial, if it has any.
    pub fn load_events(&self, trial_id: i64) -> Result<Option<EventBlob>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT version, record_size, data FROM trial_events WHERE trial_id = ?1",
                params![trial_id],
                |r| {
                    Ok(EventBlob {
                        version: r.get(0)?,
                        record_size: r.get(1)?,
                        data: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// The CPU samples stored with a trial, if it has any.
    pub fn load_profile(&self, trial_id: i64) -> Result<Option<CpuProfile>, StoreError> {
        let json: Option<String> = self
            .conn
            .query_row(
                "SELECT json FROM trial_profiles WHERE trial_id = ?1",
                params![trial_id],
                |r| r.get(0),
            )
            .optional()?;
        Ok(json.map(|j| serde_json::from_str(&j)).transpose()?)
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

    /// Deletes a run with its points, trials and metrics.
    pub fn delete_run(&mut self, run_id: i64) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute("DELETE FROM runs WHERE id = ?1", [run_id])?;
        expect_one_run(changed, run_id)
    }

    /// The id of the most recently created run, if any.
    pub fn latest_run_id(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT MAX(id) FROM runs", [], |row| row.get(0))?)
    }

    /// Every run with its point and trial counts, newest first.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.kind, r.started_at, r.status, r.place,
                    (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id),
                    (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'ok'),
                    (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'failed')
             FROM runs r ORDER BY r.id DESC",
        )?;
        let rows = stmt.query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                [row.get::<_, u32>(5)?, row.get(6)?, row.get(7)?],
            ))
        })?;
        rows.map(|row| {
            let (id, kind, started_at, status, place, [points, ok, failed]) = row?;
            Ok(RunSummary {
                id,
                kind,
                started_at,
                status: parse_run_status(id, &status)?,
                place,
                points,
                trials_ok: ok,
                trials_failed: failed,
            })
        })
        .collect()
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

    /// For each host with a completed run of `kind`, its newest such run:
    /// (hostname, run id), by hostname. Studies use it to set this host's
    /// results beside other hosts' (imported with `tcplab import`).
    pub fn latest_completed_run_per_host(
        &self,
        kind: &str,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, host_json FROM runs WHERE kind = ?1 AND status = 'completed'
             ORDER BY started_at, id",
        )?;
        let rows = stmt.query_map([kind], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut newest: BTreeMap<String, i64> = BTreeMap::new();
        for row in rows {
            let (id, host_json) = row?;
            let host: crate::host::HostFacts = serde_json::from_str(&host_json)?;
            newest.insert(host.hostname, id);
        }
        Ok(newest.into_iter().collect())
    }

    /// Resolves a run reference: `latest` or a run id. The run must exist.
    pub fn resolve_run(&self, spec: &str) -> Result<i64, StoreError> {
        let spec = spec.trim();
        if spec.eq_ignore_ascii_case("latest") {
            return self.latest_run_id()?.ok_or(StoreError::NoRuns);
        }
        let id: i64 = spec
            .parse()
            .map_err(|_| StoreError::BadRunSpec(spec.to_string()))?;
        require_run(&self.conn, id)?;
        Ok(id)
    }

    /// The `runs` row of `run_id`.
    fn load_meta(&self, run_id: i64) -> Result<RunMeta, StoreError> {
        self.conn
            .query_row(
                "SELECT id, kind, command, seed, place, started_at, finished_at, status,
                        host_json, settings_json, tool_version
                 FROM runs WHERE id = ?1",
                [run_id],
                RunRow::read,
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(run_id))?
            .into_meta()
    }

    /// The points of `run_id`, by index.
    fn load_points(&self, run_id: i64) -> Result<Vec<PointRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, idx, params_json FROM points WHERE run_id = ?1 ORDER BY idx")?;
        let rows = stmt.query_map([run_id], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, u32>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?;
        rows.map(|row| {
            let (id, index, params_json) = row?;
            let params: TrialParams = serde_json::from_str(&params_json)?;
            Ok(PointRecord { id, index, params })
        })
        .collect()
    }

    /// The trials of `run_id`, by `seq`, without metrics.
    fn load_trials(&self, run_id: i64) -> Result<Vec<TrialRecord>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, point_id, seq, repetition, started_at, status, error, details_json
             FROM trials WHERE run_id = ?1 ORDER BY seq, id",
        )?;
        let rows = stmt.query_map([run_id], TrialRow::read)?;
        rows.map(|row| row?.into_trial()).collect()
    }

    /// Fills `outcome.metrics` of the loaded trials of `run_id`.
    fn attach_metrics(&self, run_id: i64, trials: &mut [TrialRecord]) -> Result<(), StoreError> {
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
        })
    }

    /// Decodes the status, seed and JSON columns.
    fn into_meta(self) -> Result<RunMeta, StoreError> {
        Ok(RunMeta {
            id: self.id,
            status: parse_run_status(self.id, &self.status)?,
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

/// Fails with [`StoreError::NoSuchRun`] unless run `run_id` exists.
fn require_run(conn: &Connection, run_id: i64) -> Result<(), StoreError> {
    conn.query_row("SELECT 1 FROM runs WHERE id = ?1", [run_id], |_| Ok(()))
        .optional()?
        .ok_or(StoreError::NoSuchRun(run_id))
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

/// Maps the row count of a single-run update or delete to a result.
fn expect_one_run(changed: usize, run_id: i64) -> Result<(), StoreError> {
    if changed == 0 {
        Err(StoreError::NoSuchRun(run_id))
    } else {
        Ok(())
    }
}

/// Parses a stored run status.
fn parse_run_status(run_id: i64, text: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("run {run_id} has unknown status {text:?}")))
}

/// Parses a stored trial status.
fn parse_trial_status(trial_id: i64, text: &str) -> Result<TrialStatus, StoreError> {
    TrialStatus::parse(text)
        .ok_or_else(|| StoreError::Corrupt(format!("trial {trial_id} has unknown status {text:?}")))
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
    fn migrations_are_valid() {
        migrations().validate().unwrap();
    }

    #[test]
    fn a_v3_database_migrates_to_v4_keeping_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v3.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            Migrations::new(SCHEMA_STEPS[..3].iter().map(|s| M::up(s)).collect())
                .to_latest(&mut conn)
                .unwrap();
            conn.execute(
                "INSERT INTO runs (kind, command, seed, place, started_at, finished_at,
                                   status, host_json, settings_json, tool_version)
                 VALUES ('tcp-stream', 'tcplab bench tcp-stream', 7, 'loopback',
                         '2026-01-01T00:00:00Z', NULL, 'completed', ?1, '{}', '0.1.0')",
                [serde_json::to_string(&crate::HostFacts {
                    hostname: "box".into(),
                    ..Default::default()
                })
                .unwrap()],
            )
            .unwrap();
            let v: i64 = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .unwrap();
            assert_eq!(v, 3);
        }
        let store = Store::open(&path).unwrap();
        let v: i64 = store
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v as usize, SCHEMA_VERSION);
        let runs = store.list_runs().unwrap();
        assert_eq!(runs.len(), 1);
        let run = store.load_run(runs[0].id).unwrap();
        assert_eq!((run.meta.seed, run.meta.host.hostname.as_str()), (7, "box"));
        // The old run references no profile, and no profile exists yet.
        assert_eq!(store.run_host_profile_id(run.meta.id).unwrap(), None);
        assert!(store.latest_host_profile("box").unwrap().is_none());
    }

    #[test]
    fn seeds_round_trip_all_64_bits() {
        for seed in [0, 1, u64::MAX, 1 << 63, 0xdead_beef_cafe_f00d] {
            assert_eq!(seed_from_sql(seed_to_sql(seed)), seed);
        }
    }

    #[test]
    fn error_messages_read_well() {
        assert_eq!(StoreError::NoSuchRun(7).to_string(), "no run with id 7");
        assert_eq!(
            StoreError::BadRunSpec("abc".into()).to_string(),
            "invalid run \"abc\": expected a run id or \"latest\""
        );
    }
}
