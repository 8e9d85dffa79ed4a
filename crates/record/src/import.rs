//! Importing runs made elsewhere: from another tcplab database (every run,
//! with its probe records, CPU samples and host profile) or from a run's
//! JSON export (`tcplab export RUN --format json`: parameters, trials and
//! metrics, and the host profile when the export has one). Imported runs
//! get new ids here, keep their own host facts and host profile, and carry
//! where they came from in their settings (`imported`). A run already
//! present (same kind, start time, seed and hostname) is skipped, so
//! importing twice stores nothing twice.

use crate::host_profile::HostProfile;
use crate::run::{PointRecord, RunMeta, TrialRecord};
use crate::store::{insert_host_profile, insert_trial, seed_to_sql, Store, StoreError, StoredRun};
use rusqlite::{params, OptionalExtension, Transaction};
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// What happened to one run offered for import.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportOutcome {
    /// Stored under this new id.
    Imported(i64),
    /// Already here, as this run.
    AlreadyPresent(i64),
}

/// A run to import, complete: its trials' outcomes hold their probe
/// records and CPU samples where it has them.
#[derive(Debug, Clone)]
pub struct ForeignRun {
    /// The run as it was stored where it was made (ids are that store's).
    pub run: StoredRun,
    /// The host profile that run referenced, if any.
    pub host_profile: Option<HostProfile>,
}

/// The part of a `tcplab export RUN --format json` document an import reads.
#[derive(Debug, Deserialize)]
struct ExportDoc {
    run_id: i64,
    kind: String,
    command: String,
    seed: u64,
    place: String,
    started_at: String,
    finished_at: Option<String>,
    status: crate::run::RunStatus,
    host: crate::host::HostFacts,
    settings: serde_json::Value,
    tool_version: String,
    points: Vec<ExportPoint>,
    trials: Option<Vec<TrialRecord>>,
    #[serde(default)]
    host_profile: Option<HostProfile>,
}

#[derive(Debug, Deserialize)]
struct ExportPoint {
    index: u32,
    point_id: Option<i64>,
    params: crate::params::TrialParams,
    #[serde(default)]
    precision: Option<crate::run::PrecisionOutcome>,
}

/// Reads a run's JSON export back as a run to import. The export carries
/// no probe records or CPU samples, so neither does the run.
pub fn read_json_export(text: &str) -> Result<ForeignRun, StoreError> {
    let doc: ExportDoc = serde_json::from_str(text)
        .map_err(|e| StoreError::BadImport(format!("not a tcplab run export: {e}")))?;
    let trials = doc.trials.ok_or_else(|| {
        StoreError::BadImport("the export has no trials (export it with tcplab export)".into())
    })?;
    let mut points = Vec::with_capacity(doc.points.len());
    for p in doc.points {
        let id = p.point_id.ok_or_else(|| {
            StoreError::BadImport(
                "the export's points have no ids (made by an older tcplab: export it again)".into(),
            )
        })?;
        points.push(PointRecord {
            id,
            index: p.index,
            params: p.params,
            precision: p.precision,
        });
    }
    Ok(ForeignRun {
        run: StoredRun {
            meta: RunMeta {
                id: doc.run_id,
                kind: doc.kind,
                command: doc.command,
                seed: doc.seed,
                place: doc.place,
                started_at: doc.started_at,
                finished_at: doc.finished_at,
                status: doc.status,
                host: doc.host,
                settings: doc.settings,
                tool_version: doc.tool_version,
            },
            points,
            trials,
        },
        host_profile: doc.host_profile,
    })
}

impl Store {
    /// Every run of another tcplab database, complete, oldest first. The
    /// other database is read from a snapshot (`VACUUM INTO` a temporary
    /// file, migrated there), so it is never written to, even when its
    /// schema is older.
    pub fn read_foreign_database(path: &Path) -> Result<Vec<ForeignRun>, StoreError> {
        if !path.is_file() {
            return Err(StoreError::BadImport(format!(
                "{}: no such file",
                path.display()
            )));
        }
        let dir = tempfile::tempdir()?;
        let snap = dir.path().join("snapshot.db");
        {
            let src = rusqlite::Connection::open_with_flags(
                path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )?;
            let has_runs: bool = src
                .query_row(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'",
                    [],
                    |_| Ok(()),
                )
                .optional()
                .map_err(|e| StoreError::BadImport(format!("{}: {e}", path.display())))?
                .is_some();
            if !has_runs {
                return Err(StoreError::BadImport(format!(
                    "{} is not a tcplab database (no runs table)",
                    path.display()
                )));
            }
            src.execute("VACUUM INTO ?1", [snap.to_string_lossy()])?;
        }
        let other = Store::open(&snap)?;
        let mut ids: Vec<i64> = other.list_runs()?.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.into_iter()
            .map(|id| {
                let mut run = other.load_run(id)?;
                for t in &mut run.trials {
                    t.outcome.events = other.load_events(t.id)?;
                    t.outcome.profile = other.load_profile(t.id)?;
                    t.outcome.path_summary = other.load_path_summary(t.id)?;
                }
                let host_profile = other.run_host_profile(id)?.map(|(_, p)| p);
                Ok(ForeignRun { run, host_profile })
            })
            .collect()
    }

    /// Stores a run made elsewhere, in one transaction: its host profile
    /// (unless the same profile is here already), the run referencing that
    /// profile, its points and its trials with their metrics, probe records
    /// and CPU samples. `provenance` goes into the run's settings under
    /// `imported`. A run already here is not stored again.
    pub fn import_run(
        &mut self,
        f: &ForeignRun,
        provenance: serde_json::Value,
    ) -> Result<ImportOutcome, StoreError> {
        let meta = &f.run.meta;
        let tx = self.write_tx()?;
        if let Some(id) = find_same_run(&tx, meta)? {
            return Ok(ImportOutcome::AlreadyPresent(id));
        }
        let profile_id = f
            .host_profile
            .as_ref()
            .map(|p| profile_id_for(&tx, p))
            .transpose()?;
        let mut settings = meta.settings.clone();
        if let Some(obj) = settings.as_object_mut() {
            obj.insert("imported".into(), provenance);
        } else {
            settings = serde_json::json!({ "original": settings, "imported": provenance });
        }
        tx.execute(
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
                serde_json::to_string(&meta.host)?,
                serde_json::to_string(&settings)?,
                meta.tool_version,
                profile_id,
            ],
        )?;
        let run_id = tx.last_insert_rowid();
        let mut point_ids = HashMap::new();
        for p in &f.run.points {
            let precision = p
                .precision
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?;
            tx.execute(
                "INSERT INTO points (run_id, idx, params_json, precision_json)
                 VALUES (?1, ?2, ?3, ?4)",
                params![
                    run_id,
                    p.index,
                    serde_json::to_string(&p.params)?,
                    precision
                ],
            )?;
            point_ids.insert(p.id, tx.last_insert_rowid());
        }
        for t in &f.run.trials {
            let point_id = *point_ids.get(&t.point_id).ok_or_else(|| {
                StoreError::BadImport(format!(
                    "trial {} of run {} belongs to point {}, which the run does not have",
                    t.seq, meta.id, t.point_id
                ))
            })?;
            let mut t = t.clone();
            t.point_id = point_id;
            insert_trial(&tx, run_id, &t)?;
        }
        tx.commit()?;
        Ok(ImportOutcome::Imported(run_id))
    }
}

/// The run here that is `meta` (same kind, start, seed and hostname), if any.
fn find_same_run(tx: &Transaction<'_>, meta: &RunMeta) -> Result<Option<i64>, StoreError> {
    let mut stmt = tx.prepare(
        "SELECT id, host_json FROM runs WHERE kind = ?1 AND started_at = ?2 AND seed = ?3",
    )?;
    let rows = stmt.query_map(
        params![meta.kind, meta.started_at, seed_to_sql(meta.seed)],
        |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
    )?;
    for row in rows {
        let (id, host_json) = row?;
        let host: crate::host::HostFacts = serde_json::from_str(&host_json)?;
        if host.hostname == meta.host.hostname {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The id of host profile `p` here: the stored one with the same hostname
/// and creation time, or a new one.
fn profile_id_for(tx: &Transaction<'_>, p: &HostProfile) -> Result<i64, StoreError> {
    let found: Option<i64> = tx
        .query_row(
            "SELECT id FROM host_profiles WHERE hostname = ?1 AND created_at = ?2",
            params![p.hostname, p.created_at],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(id) = found {
        return Ok(id);
    }
    insert_host_profile(tx, p)
}
