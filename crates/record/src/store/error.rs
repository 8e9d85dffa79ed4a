//! Why a store operation failed.

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
    /// What was offered for import is not a tcplab database or run export.
    #[error("cannot import: {0}")]
    BadImport(String),
    /// A read-only command was pointed at a database that does not exist.
    #[error("no database at {}", .0.display())]
    NoDatabase(std::path::PathBuf),
    /// The database holds a value this version cannot interpret.
    #[error("corrupt store: {0}")]
    Corrupt(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_read_well() {
        assert_eq!(StoreError::NoSuchRun(7).to_string(), "no run with id 7");
        assert_eq!(
            StoreError::BadRunSpec("abc".into()).to_string(),
            "invalid run \"abc\": expected a run id or \"latest\""
        );
    }
}
