//! The lab's error type.

use thiserror::Error;

/// What can go wrong while building, using or tearing down a place.
#[derive(Debug, Error)]
pub enum LabError {
    /// A link or host specification is invalid (bad input).
    #[error("{0}")]
    Spec(String),
    /// The kernel lacks a feature the request needs.
    #[error("{0}")]
    Unsupported(String),
    /// An external command (ip, tc, ethtool) failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed on stderr.
        stderr: String,
    },
    /// A system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl LabError {
    /// An I/O error with context.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> LabError {
        LabError::Io {
            context: context.into(),
            source,
        }
    }
}
