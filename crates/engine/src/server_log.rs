//! What `tcplab server` says about its clients: one event when a client
//! is accepted or refused, one per trial it runs or is refused, one when
//! it leaves; with a key, each names the client's key.

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
        /// The name of the key it proved (`None`: a server without keys).
        key: Option<String>,
    },
    /// A trial ended on this server, well or not.
    Trial {
        /// The client's control address.
        peer: SocketAddr,
        /// The client's key's name.
        key: Option<String>,
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
        /// `ok`, `failed`, or `refused` (its setup was turned down: the
        /// key's or the server's limits; nothing ran).
        result: String,
        /// Why it failed or was refused, as the client was told.
        error: Option<String>,
    },
    /// A connection was turned away before it was served.
    Refused {
        /// The connection's address.
        peer: SocketAddr,
        /// The client's key's name, once known (a refused pre-flight
        /// `check`).
        key: Option<String>,
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

/// How a trial ended on this server, for its event.
#[derive(Debug, Clone, Copy)]
pub enum TrialEnd<'a> {
    /// It ran; this side's report.
    Ran(&'a SideReport),
    /// It failed after its setup was accepted.
    Failed(&'a str),
    /// Its setup was refused; nothing ran.
    Refused(&'a str),
}

/// The event of a trial of the client holding `key` that ended as `end`.
pub fn trial_event(
    peer: SocketAddr,
    key: Option<&str>,
    p: &TrialParams,
    end: TrialEnd,
) -> ServerEvent {
    let role = match crate::workloads::side_of(p, false) {
        LoadSide::Sender => "sender",
        LoadSide::Receiver => "receiver",
    };
    let (bytes, seconds, error) = match end {
        TrialEnd::Ran(r) => {
            let seconds = r.delay_s.filter(|d| *d > 0.0).unwrap_or(r.wall_s);
            let error = (!r.errors.is_empty()).then(|| r.errors.join("; "));
            (r.bytes, seconds, error)
        }
        TrialEnd::Failed(e) | TrialEnd::Refused(e) => (0, 0.0, Some(e.to_string())),
    };
    let result = match (end, &error) {
        (TrialEnd::Refused(_), _) => "refused",
        (_, None) => "ok",
        (_, Some(_)) => "failed",
    };
    ServerEvent::Trial {
        peer,
        key: key.map(str::to_string),
        test: p.test.name().to_string(),
        parallel: p.parallel.max(1),
        role: role.to_string(),
        bytes,
        seconds,
        throughput_bps: (seconds > 0.0 && bytes > 0).then(|| bytes as f64 * 8.0 / seconds),
        result: result.to_string(),
        error,
    }
}
