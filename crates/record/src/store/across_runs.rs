//! Queries across runs: the run list, the latest run, resolving a run
//! reference, and each host's newest completed run of a kind.

use super::runs::{current_status, parse_run_status, read_owner, require_run, OWNER_COLUMNS};
use super::{Store, StoreError};
use crate::run::RunStatus;
use serde::Serialize;
use std::collections::BTreeMap;

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

impl Store {
    /// The id of the most recently created run, if any.
    pub fn latest_run_id(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT MAX(id) FROM runs", [], |row| row.get(0))?)
    }

    /// Every run with its point and trial counts, newest first.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        let mut stmt = self.conn.prepare(&format!(
            "SELECT r.id, r.kind, r.started_at, r.status, r.place,
                    (SELECT COUNT(*) FROM points p WHERE p.run_id = r.id),
                    (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'ok'),
                    (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'failed'),
                    {OWNER_COLUMNS}
             FROM runs r ORDER BY r.id DESC"
        ))?;
        let rows = stmt.query_map([], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                [row.get::<_, u32>(5)?, row.get(6)?, row.get(7)?],
                read_owner(row, 8)?,
            ))
        })?;
        rows.map(|row| {
            let (id, kind, started_at, status, place, [points, ok, failed], owner) = row?;
            Ok(RunSummary {
                id,
                kind,
                started_at,
                status: current_status(parse_run_status(id, &status)?, owner.as_ref()),
                place,
                points,
                trials_ok: ok,
                trials_failed: failed,
            })
        })
        .collect()
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
}
