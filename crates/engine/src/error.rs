//! The engine's error type.

use thiserror::Error;

/// Everything that can go wrong while running or serving a trial.
#[derive(Debug, Error)]
pub enum EngineError {
    /// A system call failed; `context` says what tcplab was doing.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The peer broke the control protocol or sent something unexpected.
    #[error("control protocol: {0}")]
    Protocol(String),
    /// The server refused the request and said why.
    #[error("server refused: {0}")]
    Rejected(String),
    /// Received data differed from what was sent.
    #[error("data integrity check failed: {0}")]
    Integrity(String),
    /// The trial was cancelled by Ctrl-C.
    #[error("interrupted")]
    Interrupted,
    /// The trial did not finish in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// One or more endpoint threads failed.
    #[error("{0}")]
    Endpoint(String),
    /// The trial's observer (probes) failed; the trial is not trusted.
    #[error("probes: {0}")]
    Observer(String),
}

impl EngineError {
    /// An I/O error with context.
    pub fn io(context: &str, source: std::io::Error) -> EngineError {
        EngineError::Io {
            context: context.to_string(),
            source,
        }
    }
}
