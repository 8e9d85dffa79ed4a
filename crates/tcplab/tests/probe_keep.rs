//! What probing costs on disk, and `--probe-keep summary`: the same short
//! probed run kept whole and kept as a summary. Real BPF (root and the
//! kernel's BTF, or a skip through testkit; a run that fails is a
//! failure): the summary
//! stores a small fraction of the bytes, `tcplab probes` still gives the
//! path analysis, and the views that need the records say they were not
//! kept.

mod common;

use common::{assert_usage_error, json_of, tcplab, temp_db};
use serde_json::Value;
use std::path::Path;

/// One probed 1 s tcp-stream trial kept as `keep`: the run's JSON and
/// its stderr (the run must succeed).
fn probed(db: &Path, keep: &str) -> (Value, String) {
    let out = tcplab(
        db,
        &[
            "bench",
            "tcp-stream",
            "--duration",
            "1s",
            "--repeat",
            "1",
            "--probe",
            "queues,tcp,sched",
            "--probe-keep",
            keep,
            "--json",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    (json_of(&out), err)
}

/// Whether this host can probe: root and the kernel's BTF (a skip
/// through testkit otherwise).
fn can_probe() -> bool {
    testkit::need_root("--probe needs root")
        && testkit::need_path("/sys/kernel/btf/vmlinux", "kernel BTF for the CO-RE probes")
}

/// Rows of `table` in the database at `db`.
fn rows(db: &Path, table: &str) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_summary_keeps_the_analysis_in_a_fraction_of_the_bytes() {
    if !can_probe() {
        return;
    }
    // Real probed transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_a, all_db) = temp_db();
    let (_s, summary_db) = temp_db();
    let (all, all_err) = probed(&all_db, "all");
    let (summary, summary_err) = probed(&summary_db, "summary");

    // Each run says what it stored, on stderr and in its JSON.
    let stored = |doc: &Value| doc["points"][0]["probe_stored"].clone();
    let (a, s) = (stored(&all), stored(&summary));
    let records = |doc: &Value| doc["points"][0]["metrics"]["probe_records"]["mean"].as_f64();
    assert_eq!(a["records"].as_f64(), records(&all), "{a}");
    assert_eq!(s["records"].as_f64(), records(&summary), "{s}");
    assert!(a["records"].as_f64().unwrap() > 1000.0, "{a}");
    assert_eq!(
        a["record_bytes"].as_f64().unwrap(),
        a["records"].as_f64().unwrap() * 64.0
    );
    assert_eq!(a["summary_bytes"], 0.0);
    assert_eq!(s["record_bytes"], 0.0);
    assert!(s["summary_bytes"].as_f64().unwrap() > 0.0, "{s}");
    // The summary is bounded (at most 2000 points per time-sequence
    // series) while records grow with the run: against the records this
    // same run would have kept, and against the other run's. A second of
    // probing gives tens of thousands of records even on a slow host (a
    // CI run of 300 ms gave 24k, 1.5 MB, against a 164 KB summary).
    let (a_bytes, s_bytes) = (a["bytes"].as_f64().unwrap(), s["bytes"].as_f64().unwrap());
    let s_records_bytes = s["records"].as_f64().unwrap() * 64.0;
    for (records_bytes, whose) in [
        (a_bytes, "the kept run's"),
        (s_records_bytes, "its own run's"),
    ] {
        assert!(
            s_bytes * 10.0 < records_bytes,
            "the summary ({s_bytes} B) should be under a tenth of {whose} records ({records_bytes} B)"
        );
    }
    for (err, what) in [(&all_err, "(records "), (&summary_err, "(path summary ")] {
        let line = err
            .lines()
            .find(|l| l.starts_with("tcplab: probe data of point 0: 1 trial, "))
            .unwrap_or_else(|| panic!("no storage line in {err}"));
        assert!(line.contains(what) && line.contains(" MB/s"), "{line}");
    }
    assert!(summary_err.contains("raw records were not kept (--probe-keep summary)"));
    assert!(!all_err.contains("not kept"), "{all_err}");
    // The database holds the records, or the analysis in their place.
    assert_eq!(
        (
            rows(&all_db, "trial_events"),
            rows(&all_db, "trial_path_summaries")
        ),
        (1, 0)
    );
    assert_eq!(
        (
            rows(&summary_db, "trial_events"),
            rows(&summary_db, "trial_path_summaries")
        ),
        (0, 1)
    );

    // `tcplab probes` gives the derived analysis either way.
    let path =
        |db: &Path| json_of(&tcplab(db, &["probes", "latest", "--json"]))["trials"][0].clone();
    let (pa, ps) = (path(&all_db), path(&summary_db));
    assert_eq!(pa["records_kept"], true);
    assert_eq!(ps["records_kept"], false);
    assert_eq!(ps["analysis"]["records"].as_f64(), s["records"].as_f64());
    for t in [&pa, &ps] {
        assert!(!t["analysis"]["hops"].as_array().unwrap().is_empty(), "{t}");
        assert!(
            !t["analysis"]["packets"].as_array().unwrap().is_empty(),
            "{t}"
        );
        assert!(
            !t["analysis"]["threads"].as_array().unwrap().is_empty(),
            "{t}"
        );
    }
    // What needs the records themselves says they were not kept.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("t.pcapng");
    let needs_records = [
        vec!["probes", "latest", "--pcapng", cap.to_str().unwrap()],
        vec!["export", "latest", "--records"],
    ];
    for args in &needs_records {
        assert_usage_error(
            &tcplab(&summary_db, args),
            "raw records were not kept (--probe-keep summary)",
        );
    }
    assert!(!cap.exists());
}

#[test]
fn probe_keep_needs_probe_and_a_known_choice() {
    let (_dir, db) = temp_db();
    assert_usage_error(
        &tcplab(&db, &["bench", "tcp-stream", "--probe-keep", "summary"]),
        "--probe-keep applies only with --probe",
    );
    assert_usage_error(
        &tcplab(
            &db,
            &[
                "bench",
                "tcp-stream",
                "--probe",
                "all",
                "--probe-keep",
                "some",
            ],
        ),
        "invalid value 'some' for '--probe-keep <WHAT>'",
    );
    assert!(!db.exists(), "nothing stored");
}
