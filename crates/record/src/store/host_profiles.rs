//! Host profiles from `tcplab calibrate`, and the profile each run
//! references (the newest of its host when the run was created).

use super::runs::require_run;
use super::{Store, StoreError};
use crate::host_profile::HostProfile;
use rusqlite::{params, Connection, OptionalExtension};

impl Store {
    /// Stores a host profile and returns its id. Runs created after it on
    /// the same host reference it.
    pub fn add_host_profile(&mut self, p: &HostProfile) -> Result<i64, StoreError> {
        insert_host_profile(&self.conn, p)
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
}

/// Inserts host profile `p` (on a connection or in a transaction) and
/// returns its id.
pub(crate) fn insert_host_profile(conn: &Connection, p: &HostProfile) -> Result<i64, StoreError> {
    conn.execute(
        "INSERT INTO host_profiles (created_at, hostname, version, json)
         VALUES (?1, ?2, ?3, ?4)",
        params![
            p.created_at,
            p.hostname,
            p.version,
            serde_json::to_string(p)?
        ],
    )?;
    Ok(conn.last_insert_rowid())
}
