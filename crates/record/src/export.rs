//! Exports of a stored run: one CSV row per trial, or the raw run as JSON.

use crate::factor::{param_keys, TrialParams};
use crate::probe_event::{ProbeEvent, ProbeId};
use crate::run::{PointRecord, TrialRecord};
use crate::store::{StoreError, StoredRun};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Display;
use std::io::Write;

/// The leading columns that identify a trial.
const TRIAL_COLUMNS: [&str; 6] = ["run_id", "point", "seq", "repetition", "status", "error"];

/// The prefix of every parameter column of [`trials_csv`] (`param_bytes`,
/// the `--bytes` setting, beside the measured `bytes`).
pub const PARAM_PREFIX: &str = "param_";

/// The prefix a metric column gets when its name is already taken by an
/// earlier column (a metric named `status` would be `metric_status`).
pub const CLASHING_METRIC_PREFIX: &str = "metric_";

/// Writes one CSV row per trial of `run` (in `seq` order) to `out`.
///
/// Columns, every name once: `run_id, point, seq, repetition, status,
/// error`, then every [`TrialParams`] field as `param_<key>` (empty for
/// `None`), then one column per metric name found in any trial of the run,
/// sorted, empty where a trial lacks it (a metric whose name an earlier
/// column has is written as `metric_<name>`). `point` is the point's index
/// in the plan. A metric is written with [`crate::numbers::METRIC_DIGITS`]
/// significant digits and a setting with
/// [`crate::numbers::SETTING_DIGITS`], each as the shortest text that reads
/// back as the rounded value (`0.2308`, not `0.23079999999999998`).
pub fn trials_csv<W: Write>(run: &StoredRun, out: W) -> Result<(), StoreError> {
    let metrics = metric_names(run);
    let points: HashMap<i64, &PointRecord> = run.points.iter().map(|p| (p.id, p)).collect();
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(trial_header(&metrics))?;
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

/// The header row of [`trials_csv`]: the trial columns, every
/// [`TrialParams`] key with [`PARAM_PREFIX`] (the test, then the factor
/// table's order), then the metrics, each name once.
pub fn trial_header(metrics: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = TRIAL_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(param_keys().map(|k| format!("{PARAM_PREFIX}{k}")))
        .collect();
    for m in metrics {
        let mut name = m.to_string();
        while names.contains(&name) {
            name = format!("{CLASHING_METRIC_PREFIX}{name}");
        }
        names.push(name);
    }
    names
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
    row.extend(metrics.iter().map(|name| {
        trial
            .outcome
            .metrics
            .get(*name)
            .map_or_else(String::new, |v| crate::numbers::metric_text(*v))
    }));
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
    /// Every field of the record (`x` holds the per-probe values raw).
    #[serde(flatten)]
    pub event: crate::probe_event::ProbeEvent,
    /// The per-probe values by what they hold for this tracepoint
    /// ([`ProbeId::extra_names`]), `return_value` signed.
    #[serde(flatten)]
    pub named: BTreeMap<&'static str, i64>,
}

/// The rows of one trial's records.
pub fn record_rows(trial: u32, events: &[crate::probe_event::ProbeEvent]) -> Vec<RecordRow> {
    events
        .iter()
        .map(|e| RecordRow {
            trial,
            tracepoint: e.probe_id().tracepoint(),
            event: *e,
            named: named_extras(e).collect(),
        })
        .collect()
}

/// The record's per-probe values that its probe uses, by name.
fn named_extras(e: &ProbeEvent) -> impl Iterator<Item = (&'static str, i64)> + '_ {
    e.probe_id()
        .extra_names()
        .into_iter()
        .zip(e.x)
        .filter_map(|(name, v)| {
            let name = name?;
            let value = if name == "return_value" {
                i64::from(v as i32)
            } else {
                i64::from(v)
            };
            Some((name, value))
        })
}

/// The columns every record has, before the per-probe ones.
const RECORD_COLUMNS: [&str; 14] = [
    "trial",
    "tracepoint",
    "ts_ns",
    "id",
    "len",
    "seq",
    "ack",
    "ifindex",
    "sport",
    "dport",
    "win",
    "probe_id",
    "flags",
    "cpu",
];

/// The header of [`records_csv`]: [`RECORD_COLUMNS`], `tid`, then every
/// per-probe value name of any probe ([`ProbeId::extra_names`]) once, in
/// probe order.
pub fn records_header() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = RECORD_COLUMNS.to_vec();
    names.push("tid");
    for p in ProbeId::ALL {
        for n in p.extra_names().into_iter().flatten() {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// Writes probe records as CSV, one row per record: the columns of
/// [`records_header`]; a per-probe column is empty in the rows of probes
/// that do not have it (`cwnd_segments` is filled only by `tcp_probe`).
pub fn records_csv<W: Write>(rows: &[RecordRow], out: W) -> Result<(), StoreError> {
    let header = records_header();
    let mut w = csv::Writer::from_writer(out);
    w.write_record(&header)?;
    for r in rows {
        let e = &r.event;
        let mut row = vec![
            r.trial.to_string(),
            r.tracepoint.to_string(),
            e.ts_ns.to_string(),
            e.id.to_string(),
            e.len.to_string(),
            e.seq.to_string(),
            e.ack.to_string(),
            e.ifindex.to_string(),
            e.sport.to_string(),
            e.dport.to_string(),
            e.win.to_string(),
            e.probe.to_string(),
            e.flags.to_string(),
            e.cpu.to_string(),
            e.tid.to_string(),
        ];
        row.extend(
            header[row.len()..]
                .iter()
                .map(|name| opt(r.named.get(name))),
        );
        w.write_record(&row)?;
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
        let h = trial_header(&["throughput_bps"]);
        assert_eq!(h[..TRIAL_COLUMNS.len()], TRIAL_COLUMNS);
        assert_eq!(h[TRIAL_COLUMNS.len()], format!("param_{TEST_KEY}"));
        let factor_columns = &h[TRIAL_COLUMNS.len() + 1..h.len() - 1];
        let table: Vec<String> = FACTORS.iter().map(|f| format!("param_{}", f.key)).collect();
        assert_eq!(factor_columns, table);
        assert_eq!(h.last().map(String::as_str), Some("throughput_bps"));
    }

    #[test]
    fn every_column_name_is_unique_even_when_a_metric_shares_a_name() {
        // `bytes` is both a factor (--bytes) and a metric (bytes moved);
        // `status` and `param_bytes` would clash with fixed columns.
        let h = trial_header(&["bytes", "status", "param_bytes", "throughput_bps"]);
        let unique: BTreeSet<&String> = h.iter().collect();
        assert_eq!(unique.len(), h.len(), "{h:?}");
        assert!(h.contains(&"param_bytes".to_string()));
        assert!(h.contains(&"bytes".to_string()));
        assert!(h.contains(&"metric_status".to_string()));
        assert!(h.contains(&"metric_param_bytes".to_string()));
    }

    #[test]
    fn records_csv_names_each_value_by_what_it_holds_for_its_probe() {
        let event = |probe: ProbeId, x: [u32; 4]| ProbeEvent {
            ts_ns: 1,
            id: 2,
            len: 3,
            seq: 4,
            ack: 5,
            ifindex: 6,
            x,
            sport: 7,
            dport: 8,
            win: 9,
            probe: probe as u8,
            flags: 0,
            cpu: 1,
            tid: 10,
        };
        let events = [
            event(ProbeId::TcpProbe, [10, 250, 65535, 131072]),
            event(ProbeId::SendApp, [(-11i32) as u32, 4096, 212992, 0]),
        ];
        let mut out = Vec::new();
        records_csv(&record_rows(0, &events), &mut out).unwrap();
        let mut reader = csv::Reader::from_reader(out.as_slice());
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        let unique: BTreeSet<&String> = header.iter().collect();
        assert_eq!(unique.len(), header.len(), "{header:?}");
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        let at = |row: usize, name: &str| {
            rows[row][header.iter().position(|h| h == name).unwrap()].to_string()
        };
        assert_eq!(at(0, "tracepoint"), "tcp_probe");
        assert_eq!(at(0, "cwnd_segments"), "10");
        assert_eq!(at(0, "srtt_us"), "250");
        assert_eq!(at(0, "rcv_wnd_bytes"), "131072");
        assert_eq!(at(0, "return_value"), "");
        assert_eq!(at(1, "return_value"), "-11");
        assert_eq!(at(1, "sndbuf_bytes"), "212992");
        assert_eq!(at(1, "cwnd_segments"), "");
        assert_eq!(at(1, "tid"), "10");
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
