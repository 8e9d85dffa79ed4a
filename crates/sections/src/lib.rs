//! `sections`: report sections built from stored runs, one builder per
//! section, shared by `tcplab report`, `tcplab compare`, `tcplab probes`
//! and the studies.
//!
//! - [`run_report`]: the report of one run (title, results, parameters) and
//!   the probe and CPU sections of probed runs.
//! - [`figures`]: a run's metrics against the factors that vary.
//! - [`path`]: one probed trial's path (time-sequence, hop delays, packet
//!   classes, idle time), with the hop-delay histogram and the packet-class
//!   table the studies share.
//! - [`path_source`]: a probed trial's records, or the path analysis kept
//!   in their place (`--probe-keep summary`).
//! - [`cpu`]: where a sampled run's CPU time went.
//! - [`host`]: host facts, the host profile table and the aliasing note.
//! - [`methods`]: what a run controlled and what it left as the host had it.
//! - [`compare`], [`compare_html`]: runs side by side on one metric.
//! - [`probes_text`], [`cpu_text`]: what `tcplab probes` prints.
//! - [`metrics`], [`factor_text`]: the metrics and the factors' texts.
//! - [`left_out`]: the measures the validity rules keep out of tables and
//!   figures, each with its reason.
//! - [`precision`]: the points that missed a `--precision` target.
//! - [`probe_storage`]: what probing stored on disk, per point.
//! - [`streams`]: each connection's share under `--parallel`, and the
//!   `--interval` series, as stored with the trials.
//! - [`run_json`], [`terminal`]: a run as JSON and as the terminal's table.
//!
//! Builders return `report` documents, sections, text or JSON; the binary
//! resolves runs, writes files and prints.

pub mod compare;
pub mod compare_html;
pub mod cpu;
pub mod cpu_claims;
pub mod cpu_text;
pub mod factor_text;
pub mod figures;
pub mod host;
pub mod left_out;
pub mod methods;
pub mod methods_rerun;
pub mod metrics;
pub mod path;
pub mod path_source;
pub mod precision;
pub mod probe_storage;
pub mod probes_text;
pub mod run_json;
pub mod run_report;
pub mod streams;
pub mod terminal;

#[cfg(test)]
mod tests;

/// Why a report section cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum SectionsError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] record::StoreError),
    /// A trial's probe records were stored in a layout this build does not
    /// read.
    #[error("trial {seq} has probe records of layout version {stored}, this tcplab reads {reads}")]
    EventLayout {
        /// The trial's sequence number.
        seq: u32,
        /// The stored layout version.
        stored: u32,
        /// The layout version this build reads.
        reads: u32,
    },
}
