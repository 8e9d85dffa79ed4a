//! What `tcplab server` says about its clients: one event when a client
//! connects, one per trial it runs, one when it leaves.

use crate::report::SideReport;
use record::{LoadSide, TrialParams};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;

/// One line of the server's log.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ServerEvent {
    /// A client said hello.
    Connected {
        /// The client's control address.
        peer: SocketAddr,
        /// The client's self-description (`tcplab 0.1.0`).
        client: String,
    },
    /// A trial ended on this server, well or not.
    Trial {
        /// The client's control address.
        peer: SocketAddr,
        /// The test (`tcp-stream`, …).
        test: String,
        /// Connections or flows.
        parallel: u32,
        /// What this server did: `sender` or `receiver`.
        role: String,
        /// Payload bytes this server moved.
        bytes: u64,
        /// Seconds from the server's first to last byte (receivers) or of
        /// its work (senders).
        seconds: f64,
        /// Bits per second over `seconds`, this server's view.
        throughput_bps: Option<f64>,
        /// `ok` or `failed`.
        result: String,
        /// Why it failed.
        error: Option<String>,
    },
    /// A connection was turned away before it was served.
    Refused {
        /// The connection's address.
        peer: SocketAddr,
        /// Why, as the client was told.
        reason: String,
    },
    /// A client's control connection closed.
    Disconnected {
        /// The client's control address.
        peer: SocketAddr,
        /// Trials it ran.
        trials: u32,
    },
}

/// Receives the server's events (the binary prints them).
pub type ServerLog = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

/// The event of a trial that ended with this side's `report`, or failed
/// before it with `error`.
pub fn trial_event(
    peer: SocketAddr,
    p: &TrialParams,
    outcome: Result<&SideReport, &str>,
) -> ServerEvent {
    let role = match crate::workloads::side_of(p, false) {
        LoadSide::Sender => "sender",
        LoadSide::Receiver => "receiver",
    };
    let (bytes, seconds, error) = match outcome {
        Ok(r) => {
            let seconds = r.delay_s.filter(|d| *d > 0.0).unwrap_or(r.wall_s);
            let error = (!r.errors.is_empty()).then(|| r.errors.join("; "));
            (r.bytes, seconds, error)
        }
        Err(e) => (0, 0.0, Some(e.to_string())),
    };
    ServerEvent::Trial {
        peer,
        test: p.test.name().to_string(),
        parallel: p.parallel.max(1),
        role: role.to_string(),
        bytes,
        seconds,
        throughput_bps: (seconds > 0.0 && bytes > 0).then(|| bytes as f64 * 8.0 / seconds),
        result: if error.is_none() { "ok" } else { "failed" }.to_string(),
        error,
    }
}
