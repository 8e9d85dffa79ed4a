//! `analysis`: pure functions over stored tcplab runs.
//!
//! Nothing here does I/O or measures anything: the functions take the
//! records that `record` stores and return statistics.
//!
//! - [`stats`]: sample summaries (mean, sample standard deviation, Student's
//!   t confidence intervals), the median, and the `--precision` stopping rule.
//! - [`summary`]: one [`PointSummary`] per point of a run, summarizing each
//!   metric over the point's successful trials.
//! - [`path`]: one probed trial's records turned into hop delays, queue
//!   lengths, packet classes and idle time.
//! - [`layers`]: the versioned kernel function → layer and → block tables.
//! - [`cpu`]: a trial's CPU samples attributed per role, layer, block and
//!   function; the per-packet / per-byte cost fit over a run's trials.
//! - [`trial_cost`]: a sampled trial's CPU cost per side against the
//!   engine's, and the per-packet / per-byte fit over a run's trials.
//! - [`findings`]: sentences computed from measured curves (shape, knee,
//!   crossover) for reports.
//! - [`host_model`]: a paper's machine on tcplab's stack: the paper's cost
//!   per segment in each work class, and the speeds that dilate this host's
//!   to it (`--host-model`).
//! - [`models`]: the window bound, Abrams & Chen's min(λ, μ), Markatos'
//!   memory-and-CPU throughput model and mileage.
//! - [`validity`]: which measured points a report may show (line rate,
//!   datagram counts, the interval a rate over a link needs).

pub mod cpu;
pub mod findings;
pub mod host_model;
pub mod layers;
pub mod models;
pub mod path;
pub mod stats;
pub mod summary;
pub mod trial_cost;
pub mod validity;

pub use stats::{
    ci_half_width, median, precision_outcome, precision_reached, summarize, t_quantile, Summary,
    CI95,
};
pub use summary::{summarize_points, summarize_run, PointSummary};
