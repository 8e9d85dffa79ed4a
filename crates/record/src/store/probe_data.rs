//! What the probes recorded beside a trial: its probe records (one blob)
//! and its CPU samples (one JSON document), each kept apart from `trials`
//! so listing and loading runs never reads them.

use super::{Store, StoreError};
use crate::cpu_profile::CpuProfile;
use crate::run::EventBlob;
use rusqlite::{params, OptionalExtension};

impl Store {
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

    /// The path analysis kept in place of a trial's probe records
    /// (`--probe-keep summary`), as JSON, if it has one.
    pub fn load_path_summary(&self, trial_id: i64) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT json FROM trial_path_summaries WHERE trial_id = ?1",
                params![trial_id],
                |r| r.get(0),
            )
            .optional()?)
    }
}
