//! `engine`: tcplab's test endpoints and the control protocol between them.
//!
//! A trial runs between a client (`bench`) and a server (`tcplab server`,
//! or one embedded in `bench`). The client sends the trial's factors over
//! its control connection; the server opens data sockets and both sides run
//! their role of the test's workload ([`workloads`]) in blocking threads
//! with a lean data path; each side measures itself (bytes, first/last byte
//! times, per-thread CPU, TCP_INFO, UDP counters, latency histograms) and
//! the client combines both reports into the trial's metrics.

pub mod auth;
pub mod buffer;
pub mod cancel;
pub mod client;
mod control_conn;
pub mod control_pace;
pub mod cpu;
pub mod deadline;
pub mod early_proof;
pub mod error;
pub mod fd_limit;
mod handshake;
pub mod hoststat;
pub mod interval;
pub mod key_policy;
pub mod key_usage;
pub mod limits;
pub mod load;
pub mod metrics;
pub mod overuse;
pub mod owner_cpu;
pub mod pace;
pub mod pattern;
pub mod peer_owner;
pub mod pending;
pub mod proto;
pub mod report;
mod room;
pub mod server;
mod server_budget;
pub mod server_log;
mod server_state;
pub mod session;
pub mod sockopt;
pub mod tcpinfo;
pub mod trial_cost;
mod trial_wait;
pub mod watch;
pub mod workloads;

pub use auth::Key;
pub use client::{Client, TrialObserver};
pub use error::EngineError;
pub use key_policy::{KeyPolicy, KeyRing};
pub use limits::{admit, validate, Limits};
pub use pending::PendingLimits;
pub use server::{Server, ServerHandle, DEFAULT_PORT};
pub use workloads::PlaceHook;
