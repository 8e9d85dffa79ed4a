//! Exports of a stored run: one CSV row per trial, or the raw run as JSON.

use crate::factor::{param_keys, TrialParams};
use crate::run::{PointRecord, TrialRecord};
use crate::store::{StoreError, StoredRun};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Display;
use std::io::Write;

/// The leading columns that identify a trial.
const TRIAL_COLUMNS: [&str; 6] = ["run_id", "point", "seq", "repetition", "status", "error"];

/// Writes one CSV row per trial of `run` (in `seq` order) to `out`.
///
/// Columns: `run_id, point, seq, repetition, status, error`, then every
/// [`TrialParams`] field by name (empty for `None`), then one column per
/// metric name found in any trial of the run, sorted, empty where a trial
/// lacks it. `point` is the point's index in the plan.
pub fn trials_csv<W: Write>(run: &StoredRun, out: W) -> Result<(), StoreError> {
    let metrics = metric_names(run);
    let points: HashMap<i64, &PointRecord> = run.points.iter().map(|p| (p.id, p)).collect();
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(header(&metrics))?;
    for trial in &run.trials {
        let point = points.get(&trial.point_id).copied();
        writer.write_record(trial_row(run.meta.id, trial, point, &metrics))?;
    }
    writer.flush()?;
    Ok(())
}

/// The raw run (`meta`, `points`, `trials`) as JSON.
///
/// Non-finite metric values, which JSON cannot express, become `null`.
pub fn run_json(run: &StoredRun) -> serde_json::Value {
    // Serializing to a `Value` can only fail on non-string map keys, and
    // every map in a run is keyed by strings.
    serde_json::to_value(run)
        .unwrap_or_else(|e| serde_json::json!({ "error": format!("cannot serialize run: {e}") }))
}

/// Every metric name in any trial of the run, sorted.
fn metric_names(run: &StoredRun) -> Vec<&str> {
    let names: BTreeSet<&str> = run
        .trials
        .iter()
        .flat_map(|t| t.outcome.metrics.keys().map(String::as_str))
        .collect();
    names.into_iter().collect()
}

/// The header row: the trial columns, every [`TrialParams`] key (the
/// test, then the factor table's order), then the metrics.
fn header<'a>(metrics: &[&'a str]) -> Vec<&'a str> {
    let fixed: Vec<&'a str> = TRIAL_COLUMNS.iter().copied().chain(param_keys()).collect();
    fixed.into_iter().chain(metrics.iter().copied()).collect()
}

/// The row of one trial; parameter columns are empty if its point is unknown.
fn trial_row(
    run_id: i64,
    trial: &TrialRecord,
    point: Option<&PointRecord>,
    metrics: &[&str],
) -> Vec<String> {
    let mut row = vec![
        run_id.to_string(),
        opt(point.map(|p| p.index)),
        trial.seq.to_string(),
        trial.repetition.to_string(),
        trial.status.as_str().to_string(),
        opt(trial.error.as_ref()),
    ];
    match point {
        Some(p) => row.extend(param_values(&p.params)),
        None => row.extend(param_keys().map(|_| String::new())),
    }
    row.extend(
        metrics
            .iter()
            .map(|name| opt(trial.outcome.metrics.get(*name))),
    );
    row
}

/// The CSV texts of every [`TrialParams`] key for `p`, in [`param_keys`] order.
fn param_values(p: &TrialParams) -> impl Iterator<Item = String> + '_ {
    param_keys().map(|k| p.value(k).map(|v| v.csv_text()).unwrap_or_default())
}

/// The value as text, or an empty string for `None`.
fn opt<T: Display>(value: Option<T>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

/// One probe record of a trial, flattened for CSV and JSON export.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RecordRow {
    /// The trial's `seq`.
    pub trial: u32,
    /// The record's tracepoint (`probe` is its numeric id).
    pub tracepoint: &'static str,
    /// Every field of the record.
    #[serde(flatten)]
    pub event: crate::probe_event::ProbeEvent,
}

/// The rows of one trial's records.
pub fn record_rows(trial: u32, events: &[crate::probe_event::ProbeEvent]) -> Vec<RecordRow> {
    events
        .iter()
        .map(|e| RecordRow {
            trial,
            tracepoint: e.probe_id().tracepoint(),
            event: *e,
        })
        .collect()
}

/// Writes probe records as CSV: `trial, tracepoint, ts_ns, id, len, seq, ack,
/// ifindex, x0…x3, sport, dport, win, probe_id, flags, cpu, tid`.
pub fn records_csv<W: Write>(rows: &[RecordRow], out: W) -> Result<(), StoreError> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "trial",
        "tracepoint",
        "ts_ns",
        "id",
        "len",
        "seq",
        "ack",
        "ifindex",
        "x0",
        "x1",
        "x2",
        "x3",
        "sport",
        "dport",
        "win",
        "probe_id",
        "flags",
        "cpu",
        "tid",
    ])?;
    for r in rows {
        let e = &r.event;
        w.write_record([
            r.trial.to_string(),
            r.tracepoint.to_string(),
            e.ts_ns.to_string(),
            e.id.to_string(),
            e.len.to_string(),
            e.seq.to_string(),
            e.ack.to_string(),
            e.ifindex.to_string(),
            e.x[0].to_string(),
            e.x[1].to_string(),
            e.x[2].to_string(),
            e.x[3].to_string(),
            e.sport.to_string(),
            e.dport.to_string(),
            e.win.to_string(),
            e.probe.to_string(),
            e.flags.to_string(),
            e.cpu.to_string(),
            e.tid.to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::factor::{TestKind, FACTORS, TEST_KEY};

    #[test]
    fn the_header_is_the_trial_columns_then_the_factor_table_then_metrics() {
        let h = header(&["throughput_bps"]);
        assert_eq!(h[..TRIAL_COLUMNS.len()], TRIAL_COLUMNS);
        assert_eq!(h[TRIAL_COLUMNS.len()], TEST_KEY);
        let factor_columns = &h[TRIAL_COLUMNS.len() + 1..h.len() - 1];
        let table: Vec<&str> = FACTORS.iter().map(|f| f.key).collect();
        assert_eq!(factor_columns, table);
        assert_eq!(h.last(), Some(&"throughput_bps"));
    }

    #[test]
    fn a_row_has_one_text_per_parameter_column() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.load = Some(crate::factor::LoadSpec {
            side: crate::factor::LoadSide::Sender,
            workers: 2,
        });
        let row: Vec<String> = param_values(&p).collect();
        assert_eq!(row.len(), param_keys().count());
        assert_eq!(row[0], "tcp-stream");
        let at = |k: &str| &row[param_keys().position(|x| x == k).unwrap()];
        assert_eq!(at("duration_s"), "1");
        assert_eq!(at("bytes"), "");
        assert_eq!(at("load"), "sender:2");
        assert_eq!(at("checksum_offload"), "true");
    }
}
