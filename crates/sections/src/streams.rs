//! What `--parallel` and `--interval` stored with each stream trial: each
//! connection's share of a point's throughput (the trial details'
//! `streams`) and the interval series (`intervals`), as the rows under
//! bench's and show's table and as the JSON of a point.

use analysis::{PointSummary, Summary};
use record::{StoredRun, TrialRecord, TrialStatus};
use report::format::{column, Unit};
use serde::Serialize;
use serde_json::Value;

/// One connection of a point, over the point's measured trials.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamSummary {
    /// The connection, from 1.
    pub stream: u32,
    /// Its share of each trial's throughput (bit/s).
    pub throughput_bps: Summary,
    /// Payload bytes it moved.
    pub bytes: Summary,
    /// Segments it retransmitted (TCP, when the client sent).
    pub retransmits: Option<Summary>,
}

/// A point's connections and their sum (the trials' throughput).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointStreams {
    /// Each connection.
    pub streams: Vec<StreamSummary>,
    /// Their sum, trial by trial.
    pub sum_bps: Summary,
}

fn point_trials<'a>(run: &'a StoredRun, p: &PointSummary) -> impl Iterator<Item = &'a TrialRecord> {
    let id = p.point_id;
    run.trials
        .iter()
        .filter(move |t| t.point_id == id && t.status == TrialStatus::Ok)
}

fn field(v: &Value, k: &str) -> Option<f64> {
    v.get(k).and_then(Value::as_f64)
}

/// The point's connections as stored with its measured trials, or `None`
/// when none stored any (not a stream test, or a run before they were
/// stored).
pub fn point_streams(run: &StoredRun, p: &PointSummary) -> Option<PointStreams> {
    // Per stream: (throughput, bytes, retransmits) of each trial.
    let mut per: Vec<(Vec<f64>, Vec<f64>, Vec<f64>)> = Vec::new();
    let mut sums = Vec::new();
    for t in point_trials(run, p) {
        let Some(list) = t.outcome.details.get("streams").and_then(Value::as_array) else {
            continue;
        };
        let mut sum = 0.0;
        for (i, s) in list.iter().enumerate() {
            if per.len() <= i {
                per.resize_with(i + 1, Default::default);
            }
            let rate = field(s, "throughput_bps").unwrap_or(f64::NAN);
            sum += rate;
            per[i].0.push(rate);
            per[i].1.extend(field(s, "bytes"));
            per[i].2.extend(field(s, "retransmits"));
        }
        sums.push(sum);
    }
    let streams: Vec<StreamSummary> = per
        .iter()
        .enumerate()
        .filter_map(|(i, (rate, bytes, retr))| {
            Some(StreamSummary {
                stream: i as u32 + 1,
                throughput_bps: Summary::new(rate)?,
                bytes: Summary::new(bytes)?,
                retransmits: Summary::new(retr),
            })
        })
        .collect();
    Some(PointStreams {
        sum_bps: Summary::new(&sums)?,
        streams,
    })
    .filter(|s| !s.streams.is_empty())
}

/// The interval series of each of the point's measured trials that has
/// one (`--interval`): `[{"seq": 0, "intervals": [...]}, ...]`, or `None`.
pub fn point_intervals(run: &StoredRun, p: &PointSummary) -> Option<Value> {
    let list: Vec<Value> = point_trials(run, p)
        .filter_map(|t| {
            let i = t.outcome.details.get("intervals")?;
            Some(serde_json::json!({ "seq": t.seq, "intervals": i }))
        })
        .collect();
    (!list.is_empty()).then_some(Value::Array(list))
}

/// The rows under the table for each point with `--parallel` above 1: each
/// connection's mean share of the throughput (± 95% CI) and their sum, as
/// iperf3 prints per-stream rows and `[SUM]`.
pub fn stream_lines(run: &StoredRun, points: &[PointSummary], varying: &[String]) -> Vec<String> {
    let mut lines = Vec::new();
    for p in points.iter().filter(|p| p.params.parallel > 1) {
        let Some(s) = point_streams(run, p) else {
            continue;
        };
        let label: Vec<String> = varying
            .iter()
            .map(|k| {
                let v = p
                    .params
                    .value(k)
                    .map_or_else(|| "—".into(), |v| v.table_text());
                format!("{k}={v}")
            })
            .collect();
        let mut values: Vec<(f64, Option<f64>)> = s
            .streams
            .iter()
            .map(|c| (c.throughput_bps.mean, Some(c.throughput_bps.ci95)))
            .collect();
        values.push((s.sum_bps.mean, Some(s.sum_bps.ci95)));
        let (unit, cells) = column(&values, Unit::Si("bit/s"));
        let width = cells.iter().map(|c| c.chars().count()).max().unwrap_or(0);
        let what = if label.is_empty() {
            String::new()
        } else {
            format!(" {}", label.join(" "))
        };
        let n = s.sum_bps.n;
        lines.push(format!(
            "point {}{what}: per stream, mean ± 95% CI of {n} trial{}",
            p.index,
            if n == 1 { "" } else { "s" }
        ));
        for (c, cell) in s.streams.iter().zip(&cells) {
            lines.push(format!("  [{:>3}]  {cell:>width$} {unit}", c.stream));
        }
        if let Some(cell) = cells.last() {
            lines.push(format!("  [SUM]  {cell:>width$} {unit}"));
        }
    }
    lines
}
