//! Opening a store: the connection's settings (lock wait, WAL, foreign
//! keys) and the versioned schema every database is migrated to.
//!
//! The schema is versioned through `PRAGMA user_version` by
//! `rusqlite_migration`; opening a store brings an older file up to date.

use super::{Store, StoreError};
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};
use rusqlite_migration::{Migrations, M};
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

/// Version 5: how each point ended against a `--precision` target (JSON,
/// NULL without one), and the path analysis kept in place of a trial's
/// probe records (`--probe-keep summary`), apart from `trials` like them.
const SCHEMA_V5: &str = "
ALTER TABLE points ADD COLUMN precision_json TEXT NULL;
CREATE TABLE trial_path_summaries (
    trial_id INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
    json     TEXT NOT NULL
);
";

/// Version 6: the process that owns a run (host, pid, boot id, start time),
/// so a run whose process died is found and marked `killed`.
const SCHEMA_V6: &str = "
ALTER TABLE runs ADD COLUMN owner_host TEXT NULL;
ALTER TABLE runs ADD COLUMN owner_pid INTEGER NULL;
ALTER TABLE runs ADD COLUMN owner_boot_id TEXT NULL;
ALTER TABLE runs ADD COLUMN owner_start_ticks INTEGER NULL;
";

/// The schema steps in order; a store at version n has the first n applied.
const SCHEMA_STEPS: [&str; SCHEMA_VERSION] = [
    SCHEMA_V1, SCHEMA_V2, SCHEMA_V3, SCHEMA_V4, SCHEMA_V5, SCHEMA_V6,
];

/// The schema version a store is migrated to (`PRAGMA user_version`).
pub const SCHEMA_VERSION: usize = 6;

fn migrations() -> Migrations<'static> {
    Migrations::new(SCHEMA_STEPS.iter().map(|s| M::up(s)).collect())
}

impl Store {
    /// Opens (creating if needed) the database at `path`, with its parent
    /// directories, brings its schema up to date, and marks the runs whose
    /// process is gone `killed`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut store = Store::init(Connection::open(path)?)?;
        store.mark_killed_runs()?;
        Ok(store)
    }

    /// Opens the existing database at `path` for reading only: nothing is
    /// created, and no statement can write ([`StoreError::NoDatabase`] if
    /// there is no file). An older schema is still brought up to date
    /// first, as [`Store::open`] would. The connection is read-write with
    /// `query_only` on, so that closing it removes the `-wal` and `-shm`
    /// files as a writer's close does (a `SQLITE_OPEN_READ_ONLY` connection
    /// leaves them behind); a file this process may not write is opened
    /// `SQLITE_OPEN_READ_ONLY`. Runs whose process is gone read as
    /// `killed` without being rewritten.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        if !path.is_file() {
            return Err(StoreError::NoDatabase(path.to_path_buf()));
        }
        let existing = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        let mut conn =
            match Connection::open_with_flags(path, existing | OpenFlags::SQLITE_OPEN_READ_WRITE) {
                Ok(c) if !c.is_readonly(rusqlite::MAIN_DB).unwrap_or(true) => c,
                _ => {
                    Connection::open_with_flags(path, existing | OpenFlags::SQLITE_OPEN_READ_ONLY)?
                }
            };
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version > SCHEMA_VERSION as i64 {
            return Err(StoreError::Corrupt(format!(
                "{} has schema version {version}, newer than this tcplab's {SCHEMA_VERSION}",
                path.display()
            )));
        }
        if version < SCHEMA_VERSION as i64 {
            migrations().to_latest(&mut conn)?;
        }
        conn.pragma_update(None, "query_only", "ON")?;
        Ok(Store { conn })
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
}
