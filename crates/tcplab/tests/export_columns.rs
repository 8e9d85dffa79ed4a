//! Every export form has each column name once (the `--bytes` setting is
//! `param_bytes`, the measured bytes `bytes`), a CSV read back and written
//! again is the same bytes and holds the same values as the JSON export,
//! what `export` writes `import` reads, and probe records name their
//! per-probe values by what they hold.

mod common;

use common::{assert_success, json_of, tcplab};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// The header and rows of a CSV document, parsed with the `csv` crate.
fn parse_csv(bytes: &[u8]) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut r = csv::Reader::from_reader(bytes);
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r.records().map(Result::unwrap).collect();
    (header, rows)
}

/// Fails unless every name in `header` is there once.
fn assert_unique(header: &[String], what: &str) {
    let mut seen = BTreeSet::new();
    let twice: Vec<&String> = header.iter().filter(|h| !seen.insert(*h)).collect();
    assert!(
        twice.is_empty(),
        "{what}: {twice:?} more than once in {header:?}"
    );
}

/// A CSV read with the `csv` crate and written again is the same document.
fn assert_round_trips(bytes: &[u8], what: &str) {
    let (header, rows) = parse_csv(bytes);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header).unwrap();
    for r in &rows {
        w.write_record(r).unwrap();
    }
    let again = w.into_inner().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(bytes),
        "{what} changed through csv"
    );
}

/// `tcplab --db DB ARGS…`'s stdout, failing the test unless it succeeded.
fn stdout(db: &Path, args: &[&str]) -> Vec<u8> {
    let out = tcplab(db, args);
    assert_success(&out);
    out.stdout
}

#[test]
fn every_export_form_names_each_column_once_and_keeps_every_value() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let bench = [
        "bench",
        "tcp-stream",
        "--bytes",
        "64K",
        "--write-size",
        "8K,16K",
        "--repeat",
        "1",
        "--json",
    ];
    json_of(&tcplab(&db, &bench));

    // The trials as CSV: `bytes` is there once as the setting and once as
    // the measurement, under two names.
    let csv_bytes = stdout(&db, &["export", "1", "--format", "csv"]);
    let (header, rows) = parse_csv(&csv_bytes);
    assert_unique(&header, "export --format csv");
    for name in ["param_bytes", "bytes", "param_write_size", "throughput_bps"] {
        assert!(header.iter().any(|h| h == name), "no {name} in {header:?}");
    }
    assert_round_trips(&csv_bytes, "export --format csv");

    // Each trial's values in the CSV are those of the JSON export.
    let doc: Value = serde_json::from_slice(&stdout(&db, &["export", "1"])).unwrap();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let trials = doc["trials"].as_array().unwrap();
    assert_eq!(rows.len(), trials.len());
    for t in trials {
        let seq = t["seq"].to_string();
        let row = rows.iter().find(|r| r[col("seq")] == seq).unwrap();
        assert_eq!(
            row[col("status")],
            t["status"].as_str().unwrap().to_string()
        );
        assert_eq!(&row[col("param_bytes")], "65536");
        let metrics = t["outcome"]["metrics"].as_object().unwrap();
        assert!(metrics.contains_key("bytes"));
        // The CSV writes each as the shortest text of the value rounded to
        // six significant digits (counts exactly).
        for (name, value) in metrics {
            let text = &row[col(name)];
            let v = value.as_f64().unwrap();
            assert_eq!(
                text,
                &record::numbers::metric_text(v),
                "trial {seq} metric {name}: CSV {text:?}, JSON {value}"
            );
            let back: f64 = text.parse().unwrap();
            assert!(
                (back - v).abs() <= 5e-6 * v.abs(),
                "trial {seq} metric {name}: CSV {text:?}, JSON {value}"
            );
        }
    }
    let sizes: BTreeSet<&str> = rows.iter().map(|r| &r[col("param_write_size")]).collect();
    assert_eq!(sizes, BTreeSet::from(["8192", "16384"]));

    // What export writes, import reads: the JSON export imported into
    // another database exports the same CSV (but for the run id).
    let export = dir.path().join("run.json");
    assert_success(&tcplab(
        &db,
        &["export", "1", "--out", export.to_str().unwrap()],
    ));
    let other = dir.path().join("other.db");
    let imported = json_of(&tcplab(
        &other,
        &["import", export.to_str().unwrap(), "--json"],
    ));
    assert_eq!(imported["imported"], 1, "{imported}");
    let (header2, rows2) = parse_csv(&stdout(&other, &["export", "1", "--format", "csv"]));
    assert_eq!(header2, header);
    let without_run_id =
        |r: &csv::StringRecord| r.iter().skip(1).map(String::from).collect::<Vec<_>>();
    assert_eq!(
        rows2.iter().map(without_run_id).collect::<Vec<_>>(),
        rows.iter().map(without_run_id).collect::<Vec<_>>()
    );

    // The report's CSV and compare's CSV name each column once too.
    json_of(&tcplab(&db, &bench));
    let html = dir.path().join("r.html");
    assert_success(&tcplab(
        &db,
        &["report", "1", "--out", html.to_str().unwrap()],
    ));
    let (h, _) = parse_csv(&std::fs::read(dir.path().join("r.csv")).unwrap());
    assert_unique(&h, "report CSV");
    let cmp = dir.path().join("cmp.html");
    assert_success(&tcplab(
        &db,
        &["compare", "1", "2", "--out", cmp.to_str().unwrap()],
    ));
    let cmp_csv = std::fs::read(dir.path().join("cmp.csv")).unwrap();
    let (h, _) = parse_csv(&cmp_csv);
    assert_unique(&h, "compare CSV");
    assert_round_trips(&cmp_csv, "compare CSV");
}

#[test]
fn probe_records_name_their_values_by_what_they_hold() {
    if !testkit::need_root("probes need root") {
        return;
    }
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    json_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--bytes",
            "256K",
            "--repeat",
            "1",
            "--probe",
            "tcp",
            "--json",
        ],
    ));
    let csv_bytes = stdout(&db, &["export", "1", "--records", "--format", "csv"]);
    let (header, rows) = parse_csv(&csv_bytes);
    assert_unique(&header, "export --records --format csv");
    assert!(!header.iter().any(|h| h.starts_with('x')), "{header:?}");
    assert_round_trips(&csv_bytes, "export --records");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let tcp_probe: Vec<&csv::StringRecord> = rows
        .iter()
        .filter(|r| &r[col("tracepoint")] == "tcp_probe")
        .collect();
    assert!(!tcp_probe.is_empty(), "no tcp_probe records");
    for r in &tcp_probe {
        let cwnd: u32 = r[col("cwnd_segments")].parse().unwrap();
        assert!(cwnd > 0, "{r:?}");
        assert!(r[col("srtt_us")].parse::<u32>().is_ok(), "{r:?}");
    }
    // Other tracepoints leave tcp_probe's columns empty.
    assert!(rows
        .iter()
        .filter(|r| &r[col("tracepoint")] != "tcp_probe")
        .all(|r| r[col("cwnd_segments")].is_empty()));
    let json = json_of(&tcplab(
        &db,
        &["export", "1", "--records", "--format", "json"],
    ));
    let first = json
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tracepoint"] == "tcp_probe")
        .unwrap();
    assert!(first["cwnd_segments"].as_u64().unwrap() > 0, "{first}");
}
