//! `tcplab import` through the binary: runs measured into one database
//! come into another whole (trials, metrics, host profile) and only once;
//! bad files are refused in one line with exit status 2, storing nothing.

mod common;

use common::{assert_success, json_of, tcplab, usage_error_line};

#[test]
fn a_database_and_an_export_import_once_each() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("theirs.db");
    let bench = tcplab(
        &theirs,
        &[
            "bench",
            "tcp-stream",
            "--bytes",
            "4M",
            "--write-size",
            "8192,65536",
            "--repeat",
            "2",
        ],
    );
    assert!(
        bench.status.success(),
        "{}",
        String::from_utf8_lossy(&bench.stderr)
    );
    let src = json_of(&tcplab(&theirs, &["show", "latest", "--json"]));
    let ours = dir.path().join("ours.db");
    let out = tcplab(&ours, &["import", theirs.to_str().unwrap()]);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("imported theirs.db run 1"));
    let got = json_of(&tcplab(&ours, &["show", "latest", "--json"]));
    // The same points with the same summaries, and where it came from.
    assert_eq!(got["points"], src["points"]);
    assert_eq!(got["host"], src["host"]);
    assert_eq!(got["settings"]["imported"]["from"], "theirs.db");
    // Again: nothing new.
    let again = tcplab(&ours, &["import", theirs.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already here as run 1"));
    // Its JSON export is the same run: also already here.
    let export = dir.path().join("run.json");
    let e = tcplab(
        &theirs,
        &[
            "export",
            "1",
            "--format",
            "json",
            "--out",
            export.to_str().unwrap(),
        ],
    );
    assert!(e.status.success());
    let third = tcplab(&ours, &["import", export.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&third.stdout).contains("already here as run 1"));
    let runs = String::from_utf8_lossy(&tcplab(&ours, &["runs"]).stdout).into_owned();
    assert_eq!(runs.matches("tcp-stream").count(), 1, "{runs}");
}

#[test]
fn bad_files_are_refused_in_one_line_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("ours.db");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "hello").unwrap();
    let json = dir.path().join("other.json");
    std::fs::write(&json, "{\"something\": 1}").unwrap();
    let missing = dir.path().join("missing.db");
    // Creates our database (read-only commands such as `runs` no longer
    // do), so that importing it into itself is refused.
    drop(record::Store::open(&ours).unwrap());
    for (f, says) in [
        (&text, "notes.txt"),
        (&json, "not a tcplab run export"),
        (&missing, "cannot read"),
        (&ours, "that is this database"),
    ] {
        let out = tcplab(&ours, &["import", f.to_str().unwrap()]);
        let err = usage_error_line(&out, &format!("{f:?}"));
        assert!(err.contains(says), "{err}");
    }
    // Nothing was stored.
    let runs = tcplab(&ours, &["runs"]);
    assert!(!String::from_utf8_lossy(&runs.stdout).contains("tcp-stream"));
}
