//! The SQLite store: runs, their points, trials and metrics.
//!
//! One database file holds every run. The schema is versioned through
//! `PRAGMA user_version` by `rusqlite_migration`; opening a store brings an
//! older file up to date.
//!
//! [`Store`]'s methods are split by concern:
//!
//! - `schema`: opening a store and migrating its schema.
//! - `error`: [`StoreError`].
//! - `runs`: creating, finishing, deleting and loading a run.
//! - `deleting`: deleting runs whole, several at once (`tcplab runs delete`).
//! - `trials`: storing and loading points and trials.
//! - `probe_data`: the probe records and CPU samples of a trial.
//! - `host_profiles`: host profiles and the profile a run references.
//! - `across_runs`: the run list, `latest`, and each host's newest run.

mod across_runs;
mod deleting;
mod error;
mod host_profiles;
mod probe_data;
mod runs;
mod schema;
mod trials;

pub use across_runs::RunSummary;
pub use deleting::DeletedRun;
pub use error::StoreError;
pub(crate) use host_profiles::insert_host_profile;
pub(crate) use runs::seed_to_sql;
pub use runs::StoredRun;
use rusqlite::Connection;
pub use schema::SCHEMA_VERSION;
pub(crate) use trials::insert_trial;

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
