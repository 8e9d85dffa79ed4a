//! Numbers a person can read (issue 16, item 3), through the binary: bench,
//! show and report write a metric in the same unit with the same digits;
//! JSON summaries carry median, min and max; the CSV export writes the
//! shortest text of each value; a mean of two wild trials carries the
//! small-sample mark, and only then.

mod common;

use common::{assert_success, json_of, stdout_of, tcplab};
use serde_json::Value;
use std::path::Path;

/// A quick real loopback sweep: two write sizes, two trials each.
const BENCH: [&str; 8] = [
    "bench",
    "tcp-stream",
    "--bytes",
    "4M",
    "--write-size",
    "8K,64K",
    "--repeat",
    "2",
];

/// The box-drawn table of a bench or show output, line by line.
fn table_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with('┌'))
        .map(String::from)
        .collect();
    let end = lines.iter().position(|l| l.starts_with('└')).unwrap();
    lines.truncate(end + 1);
    lines
}

/// The cells of a table row (`│ a ┆ b │`), trimmed.
fn cells(row: &str) -> Vec<String> {
    row.trim_matches('│')
        .split('┆')
        .map(|c| c.trim().to_string())
        .collect()
}

/// The header and the cells of the column whose header starts with `name`.
fn column_of(table: &[String], name: &str) -> (String, Vec<String>) {
    let header = cells(&table[1]);
    let at = header
        .iter()
        .position(|h| h.starts_with(name))
        .unwrap_or_else(|| panic!("no {name} column: {table:#?}"));
    let rows = table
        .iter()
        .filter(|l| l.starts_with('│'))
        .skip(1)
        .map(|l| cells(l)[at].clone())
        .collect();
    (header[at].clone(), rows)
}

fn bench(db: &Path, extra: &[&str]) -> String {
    let mut args = BENCH.to_vec();
    args.extend_from_slice(extra);
    let out = tcplab(db, &args);
    assert_success(&out);
    stdout_of(&out)
}

#[test]
fn bench_show_and_report_write_a_metric_in_one_unit_with_the_same_digits() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let benched = table_lines(&bench(&db, &[]));
    let shown = table_lines(&stdout_of(&tcplab(&db, &["show", "1"])));
    assert_eq!(benched, shown);
    // Sizes as --write-size takes them; throughput in bit/s with one prefix.
    let (header, throughput) = column_of(&shown, "throughput");
    assert!(
        ["throughput (Mbit/s)", "throughput (Gbit/s)"].contains(&header.as_str()),
        "{shown:#?}"
    );
    let sizes = column_of(&shown, "write_size").1;
    let mut sorted = sizes.clone();
    sorted.sort();
    assert_eq!(sorted, ["64K", "8K"]);
    for c in &throughput {
        assert!(c.contains(" ± "), "{c}");
        // Never the 17 digits of an f64: at most six significant digits.
        let digits = c
            .chars()
            .take_while(|ch| *ch != '±')
            .filter(char::is_ascii_digit);
        assert!(digits.count() <= 6, "{c}");
    }
    let page = dir.path().join("r.html");
    assert_success(&tcplab(&db, &["report", "1", "-o", page.to_str().unwrap()]));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!(">{header}</th>")), "{header}");
    for (c, size) in throughput.iter().zip(&sizes) {
        let cell = c.replace('‡', "").trim().to_string();
        assert!(
            html.contains(&format!("<td class=\"num\">{c}</td>"))
                || html.contains(&format!("<td class=\"num\">{cell} ‡</td>")),
            "{size}: {c} not in the report"
        );
    }
}

#[test]
fn json_summaries_carry_median_min_and_max_and_csv_the_shortest_text() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let benched: Value = serde_json::from_str(&bench(&db, &["--json"])).unwrap();
    let shown = json_of(&tcplab(&db, &["show", "1", "--json"]));
    let exported = json_of(&tcplab(&db, &["export", "1", "--format", "json"]));
    for doc in [&benched, &shown, &exported] {
        for p in doc["points"].as_array().unwrap() {
            let m = &p["metrics"]["throughput_bps"];
            let (min, median, max) = (
                m["min"].as_f64().unwrap(),
                m["median"].as_f64().unwrap(),
                m["max"].as_f64().unwrap(),
            );
            assert!(min <= median && median <= max, "{m}");
            // Of two trials the median is their mean.
            assert_eq!(m["n"], 2);
            assert!((median - m["mean"].as_f64().unwrap()).abs() <= 1e-6 * median);
        }
    }
    // min and max are the trials' own values.
    let trials: Vec<f64> = exported["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"]["metrics"]["throughput_bps"].as_f64().unwrap())
        .collect();
    let lowest = trials.iter().copied().fold(f64::INFINITY, f64::min);
    let points = exported["points"].as_array().unwrap();
    assert!(points
        .iter()
        .any(|p| p["metrics"]["throughput_bps"]["min"].as_f64() == Some(lowest)));

    let csv = stdout_of(&tcplab(&db, &["export", "1", "--format", "csv"]));
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    for row in reader.records().map(Result::unwrap) {
        // Counts stay exact.
        assert!(row[at("bytes")].parse::<u64>().unwrap() >= 4 << 20);
        for cell in row.iter().filter(|c| c.parse::<f64>().is_ok()) {
            let v: f64 = cell.parse().unwrap();
            if v.fract() != 0.0 {
                // The shortest text of the value rounded to six digits.
                let significant = cell
                    .trim_start_matches(['-', '0', '.'])
                    .chars()
                    .filter(char::is_ascii_digit)
                    .count();
                assert!(significant <= 6, "{cell}");
                assert_eq!(v.to_string(), cell, "{cell}");
            }
        }
    }
}

/// Imports `run` (an export) with its trials' throughputs set to
/// `throughputs` and every other metric the same in each trial; returns
/// the database.
fn imported(dir: &Path, name: &str, run: &Value, throughputs: [f64; 2]) -> std::path::PathBuf {
    let mut run = run.clone();
    let trials = run["trials"].as_array_mut().unwrap();
    let first = trials[0]["outcome"]["metrics"].clone();
    for (t, v) in trials.iter_mut().zip(throughputs) {
        t["outcome"]["metrics"] = first.clone();
        t["outcome"]["metrics"]["throughput_bps"] = v.into();
    }
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, serde_json::to_vec(&run).unwrap()).unwrap();
    let db = dir.join(format!("{name}.db"));
    assert_success(&tcplab(&db, &["import", file.to_str().unwrap()]));
    db
}

#[test]
fn two_wild_trials_carry_the_small_sample_mark_and_two_close_ones_do_not() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs.db");
    let out = tcplab(
        &theirs,
        &["bench", "tcp-stream", "--bytes", "4M", "--repeat", "2"],
    );
    assert_success(&out);
    let run = json_of(&tcplab(&theirs, &["export", "1", "--format", "json"]));
    let note = "‡ fewer than 5 trials and a CI wider than the mean";

    // 1 and 55 Gbit/s: 28 ± 343 Gbit/s, the "28057.7 ± 122656.1".
    let wild = imported(dir.path(), "wild", &run, [1e9, 55e9]);
    let shown = stdout_of(&tcplab(&wild, &["show", "1"]));
    let table = table_lines(&shown);
    let (header, cells) = column_of(&table, "throughput");
    assert_eq!(header, "throughput (Gbit/s)");
    assert_eq!(cells, ["28 ± 343 ‡"]);
    assert!(shown.contains(note), "{shown}");
    let page = dir.path().join("wild.html");
    assert_success(&tcplab(
        &wild,
        &["report", "1", "-o", page.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<td class=\"num\">28 ± 343 ‡</td>"));
    assert!(html.contains(note));

    // 30 and 31 Gbit/s: a CI narrower than the mean, no mark.
    let tame = imported(dir.path(), "tame", &run, [30e9, 31e9]);
    let shown = stdout_of(&tcplab(&tame, &["show", "1"]));
    let (_, cells) = column_of(&table_lines(&shown), "throughput");
    assert_eq!(cells, ["30.5 ± 6.4"]);
    assert!(!shown.contains('‡'), "{shown}");
    let page = dir.path().join("tame.html");
    assert_success(&tcplab(
        &tame,
        &["report", "1", "-o", page.to_str().unwrap()],
    ));
    assert!(!std::fs::read_to_string(&page).unwrap().contains('‡'));
}
