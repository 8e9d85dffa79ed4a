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
    /// No control connection could be opened to the server.
    #[error("cannot reach {addr}: {reason}")]
    Unreachable {
        /// The server's control address.
        addr: std::net::SocketAddr,
        /// Why, for a human ("connection refused", "no answer within 3 s").
        reason: String,
    },
    /// Something answered at the server's address, but not a tcplab server.
    #[error("{addr} is not a tcplab server ({detail})")]
    NotTcplab {
        /// The server's control address.
        addr: std::net::SocketAddr,
        /// What it did instead of welcoming us.
        detail: String,
    },
    /// The server speaks another version of the control protocol.
    #[error(
        "{addr} speaks tcplab control protocol version {theirs}; this tcplab speaks version {}",
        crate::proto::VERSION
    )]
    VersionMismatch {
        /// The server's control address.
        addr: std::net::SocketAddr,
        /// The version its frames carry.
        theirs: u16,
    },
    /// The peer broke the control protocol or sent something unexpected.
    #[error("control protocol: {0}")]
    Protocol(String),
    /// The key handshake failed on this side: the server could not prove
    /// it holds the client's key.
    #[error("authentication failed: {0}")]
    Authentication(String),
    /// The server refused the request and said why.
    #[error("server refused: {0}")]
    Rejected(String),
    /// The server turned a trial's setup (or its pre-flight `check`) down
    /// and said why: the client's key's limits or the server's.
    #[error("server refused the trial: {0}")]
    TrialRefused(String),
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

/// An OS error as a short phrase: "connection refused", not
/// "Connection refused (os error 111)".
pub(crate) fn os_phrase(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = match text.find(" (os error") {
        Some(i) => &text[..i],
        None => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text.to_string(),
    }
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
