//! Runs, points and trials as they are stored.

use crate::host::HostFacts;
use crate::params::TrialParams;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A run's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Trials are being executed.
    Running,
    /// Every planned trial was attempted.
    Completed,
    /// Stopped by Ctrl-C (or SIGTERM); completed trials are kept.
    Interrupted,
    /// The runner itself failed (not a single trial).
    Failed,
    /// Its process ended without finishing it (SIGKILL, a crash, a reboot):
    /// found `running` with its owner gone when a store was opened.
    Killed,
}

impl RunStatus {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Killed => "killed",
        }
    }

    /// Parses the stored text.
    pub fn parse(s: &str) -> Option<RunStatus> {
        match s {
            "running" => Some(RunStatus::Running),
            "completed" => Some(RunStatus::Completed),
            "interrupted" => Some(RunStatus::Interrupted),
            "failed" => Some(RunStatus::Failed),
            "killed" => Some(RunStatus::Killed),
            _ => None,
        }
    }
}

/// What is known about a run before its first trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunMeta {
    /// Database id; 0 until stored.
    pub id: i64,
    /// The test, or a study name.
    pub kind: String,
    /// The command line that started the run.
    pub command: String,
    /// Seed of the randomized trial order.
    pub seed: u64,
    /// Where the trials ran (e.g. `loopback` or `remote HOST:PORT`).
    pub place: String,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time, RFC 3339 UTC, once finished.
    pub finished_at: Option<String>,
    /// State.
    pub status: RunStatus,
    /// Facts about the host at the start of the run.
    pub host: HostFacts,
    /// The full plan settings (repeat, precision, factors), as JSON.
    pub settings: serde_json::Value,
    /// tcplab version.
    pub tool_version: String,
}

/// One point of the sweep within a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PointRecord {
    /// Database id; 0 until stored.
    pub id: i64,
    /// Index of the point in the plan (0-based, in cartesian order).
    pub index: u32,
    /// The factors.
    pub params: TrialParams,
    /// How the point ended against the run's `--precision` target; `None`
    /// for a run without one (or a point that never finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<PrecisionOutcome>,
}

/// How a point ended against a `--precision` target: the target, the
/// half-width its trials reached and how many trials it took.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrecisionOutcome {
    /// Confidence level of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Target half-width relative to the mean, e.g. 0.05 for ±5%.
    pub target_rel_half_width: f64,
    /// Half-width reached relative to the mean; `None` with fewer than two
    /// measurements (no interval exists).
    pub reached_rel_half_width: Option<f64>,
    /// Trials the point ran (failed ones included).
    pub trials: u32,
    /// The cap on trials (`--max-repeat`).
    pub max_repeat: u32,
    /// Whether the target was met.
    pub met: bool,
}

impl PrecisionOutcome {
    /// The reached half-width as a percentage of the mean, as text ("10.3%",
    /// or "no interval" with fewer than two measurements).
    pub fn reached_text(&self) -> String {
        match self.reached_rel_half_width {
            Some(r) if r.is_finite() => format!("±{}%", percent(r)),
            _ => "no interval".into(),
        }
    }

    /// The target as text: "±5% at 95%".
    pub fn target_text(&self) -> String {
        format!(
            "±{}% at {}%",
            percent(self.target_rel_half_width),
            percent(self.confidence)
        )
    }
}

/// A fraction as a percentage with up to three significant decimals and no
/// trailing zeros: 0.103 → "10.3", 0.05 → "5", 0.00001 → "0.001".
fn percent(fraction: f64) -> String {
    let p = fraction * 100.0;
    let text = if p.abs() >= 10.0 {
        format!("{p:.1}")
    } else if p.abs() >= 0.1 {
        format!("{p:.2}")
    } else {
        format!("{p:.4}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Whether a trial produced a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialStatus {
    /// Measured; metrics are valid.
    Ok,
    /// Failed; `error` says why and metrics must not be used.
    Failed,
}

impl TrialStatus {
    /// The stored text.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialStatus::Ok => "ok",
            TrialStatus::Failed => "failed",
        }
    }

    /// Parses the stored text.
    pub fn parse(s: &str) -> Option<TrialStatus> {
        match s {
            "ok" => Some(TrialStatus::Ok),
            "failed" => Some(TrialStatus::Failed),
            _ => None,
        }
    }
}

/// What the engine returns for one trial.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TrialOutcome {
    /// Scalar metrics by name (e.g. `throughput_bps`, `delay_s`).
    pub metrics: BTreeMap<String, f64>,
    /// Structured details: TCP_INFO per side, UDP counters, integrity, etc.
    pub details: serde_json::Value,
    /// Probe records of the trial (fixed-size binary records, see the probe
    /// crate), stored in their own table; not part of the JSON forms.
    #[serde(skip)]
    pub events: Option<EventBlob>,
    /// CPU samples of the trial (`--probe cpu`), stored in their own table;
    /// not part of the JSON forms.
    #[serde(skip)]
    pub profile: Option<crate::cpu_profile::CpuProfile>,
    /// The path analysis derived from the probe records, as JSON, when the
    /// records themselves are not kept (`--probe-keep summary`); stored in
    /// its own table; not part of the JSON forms.
    #[serde(skip)]
    pub path_summary: Option<String>,
}

/// A trial's probe records as one binary blob.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EventBlob {
    /// Layout version of the records.
    pub version: u32,
    /// Size of one record in bytes.
    pub record_size: u32,
    /// The records back to back.
    pub data: Vec<u8>,
}

impl EventBlob {
    /// Number of records.
    pub fn count(&self) -> usize {
        if self.record_size == 0 {
            0
        } else {
            self.data.len() / self.record_size as usize
        }
    }
}

/// A stored trial.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Database id; 0 until stored.
    pub id: i64,
    /// The point this trial measured.
    pub point_id: i64,
    /// Position in execution order within the run (0-based).
    pub seq: u32,
    /// Repetition number of this point (0-based).
    pub repetition: u32,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// Ok or failed.
    pub status: TrialStatus,
    /// Failure reason for a failed trial.
    pub error: Option<String>,
    /// Metrics and details (empty for a failed trial).
    pub outcome: TrialOutcome,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_texts() {
        let o = PrecisionOutcome {
            confidence: 0.95,
            target_rel_half_width: 0.05,
            reached_rel_half_width: Some(0.1033),
            trials: 6,
            max_repeat: 6,
            met: false,
        };
        assert_eq!(o.target_text(), "±5% at 95%");
        assert_eq!(o.reached_text(), "±10.3%");
        let tiny = PrecisionOutcome {
            confidence: 0.99,
            target_rel_half_width: 0.00001,
            reached_rel_half_width: None,
            ..o
        };
        assert_eq!(tiny.target_text(), "±0.001% at 99%");
        assert_eq!(tiny.reached_text(), "no interval");
        assert_eq!(percent(0.0123), "1.23");
    }
}
