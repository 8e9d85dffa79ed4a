//! What probing stored on disk, per point: the records the probes took,
//! the bytes kept (records, or the path summary in their place with
//! `--probe-keep summary`, and CPU samples) and the bytes per second of
//! probing, read from each trial's `probe.stored` details.

use crate::factor_text::point_label;
use analysis::PointSummary;
use record::StoredRun;

/// One point's probe storage, summed over its trials.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointStorage {
    /// Probed trials.
    pub trials: u32,
    /// Records the probes took.
    pub records: f64,
    /// Bytes stored in all.
    pub bytes: f64,
    /// Bytes of raw records.
    pub record_bytes: f64,
    /// Bytes of path summaries kept in place of records.
    pub summary_bytes: f64,
    /// Bytes of CPU samples.
    pub profile_bytes: f64,
    /// Seconds the probes ran.
    pub probed_s: f64,
}

impl PointStorage {
    /// As JSON: the fields by name.
    pub fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "trials": self.trials,
            "records": self.records,
            "bytes": self.bytes,
            "record_bytes": self.record_bytes,
            "summary_bytes": self.summary_bytes,
            "profile_bytes": self.profile_bytes,
            "probed_s": self.probed_s,
        })
    }
}

/// The probe storage of each point of `run` that has probed trials, in
/// the order of `points`.
pub fn point_storage<'a>(
    run: &StoredRun,
    points: &'a [PointSummary],
) -> Vec<(&'a PointSummary, PointStorage)> {
    points
        .iter()
        .filter_map(|p| {
            let mut s = PointStorage::default();
            for t in run.trials.iter().filter(|t| t.point_id == p.point_id) {
                let d = &t.outcome.details["probe"]["stored"];
                if d.is_null() {
                    continue;
                }
                let n = |k: &str| d[k].as_f64().unwrap_or(0.0);
                s.trials += 1;
                s.records += n("records");
                s.bytes += n("bytes");
                s.record_bytes += n("record_bytes");
                s.summary_bytes += n("summary_bytes");
                s.profile_bytes += n("profile_bytes");
                s.probed_s += n("probed_s");
            }
            (s.trials > 0).then_some((p, s))
        })
        .collect()
}

/// Bytes as MB (10⁶) with two significant decimals.
fn mb(bytes: f64) -> String {
    let m = bytes / 1e6;
    if m >= 10.0 {
        format!("{m:.1} MB")
    } else if m >= 0.1 {
        format!("{m:.2} MB")
    } else {
        format!("{m:.3} MB")
    }
}

/// One line per probed point: "point 0 (write_size=1K): 2 trials, 206738
/// records, 13.3 MB stored (records 13.2 MB, CPU samples 0.11 MB) for 0.60 s
/// of probing, 22.1 MB/s".
pub fn storage_lines(run: &StoredRun, points: &[PointSummary], varying: &[String]) -> Vec<String> {
    point_storage(run, points)
        .into_iter()
        .map(|(p, s)| {
            let label = point_label(p, varying);
            let which = if label.is_empty() {
                format!("point {}", p.index)
            } else {
                format!("point {} ({label})", p.index)
            };
            let mut parts = Vec::new();
            if s.record_bytes > 0.0 {
                parts.push(format!("records {}", mb(s.record_bytes)));
            }
            if s.summary_bytes > 0.0 {
                parts.push(format!("path summary {}", mb(s.summary_bytes)));
            }
            if s.profile_bytes > 0.0 {
                parts.push(format!("CPU samples {}", mb(s.profile_bytes)));
            }
            let rate = if s.probed_s > 0.0 {
                format!(
                    " for {:.2} s of probing, {}/s",
                    s.probed_s,
                    mb(s.bytes / s.probed_s)
                )
            } else {
                String::new()
            };
            let dropped = if s.summary_bytes > 0.0 && s.record_bytes == 0.0 {
                format!("; {}", crate::path_source::RAW_NOT_KEPT)
            } else {
                String::new()
            };
            let kinds = if parts.is_empty() {
                String::new()
            } else {
                format!(" ({})", parts.join(", "))
            };
            format!(
                "{which}: {} trial{}, {:.0} records, {} stored{kinds}{rate}{dropped}",
                s.trials,
                if s.trials == 1 { "" } else { "s" },
                s.records,
                mb(s.bytes),
            )
        })
        .collect()
}
