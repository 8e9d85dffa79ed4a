//! `--probe` through the binary: records stored with each trial, losses
//! reported, bad groups and missing privileges refused with one line.

use assert_cmd::cargo::cargo_bin;
use rusqlite::Connection;
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn tcplab(db: &Path, args: &[&str]) -> Output {
    Command::new(cargo_bin("tcplab"))
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn assert_usage_error(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(needle), "expected {needle:?} in {err}");
}

#[test]
fn probed_trials_store_their_records() {
    if !is_root() {
        eprintln!("SKIP: --probe needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let out = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--duration",
            "300ms",
            "--repeat",
            "2",
            "--probe",
            "all",
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &doc["points"][0]["metrics"];
    let records = m["probe_records"]["mean"].as_f64().unwrap();
    assert!(records > 1000.0, "{records} records");
    assert_eq!(m["probe_lost"]["mean"].as_f64(), Some(0.0));
    let c = Connection::open(&db).unwrap();
    let mut st = c
        .prepare(
            "SELECT e.count, length(e.data), m.value FROM trial_events e
             JOIN metrics m ON m.trial_id = e.trial_id AND m.name = 'probe_records'",
        )
        .unwrap();
    let rows: Vec<(i64, i64, f64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2, "one blob per trial");
    for (n, bytes, metric) in rows {
        assert_eq!(n as f64, metric);
        assert_eq!(bytes, n * 64);
    }
}

#[test]
fn unknown_or_unbuilt_groups_are_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    assert_usage_error(
        &tcplab(&db, &["bench", "tcp-stream", "--probe", "disk"]),
        "unknown probe group",
    );
    assert_usage_error(
        &tcplab(&db, &["bench", "tcp-stream", "--probe", "queues,,tcp"]),
        "unknown probe group",
    );
    assert!(!db.exists(), "nothing may be stored");
}

#[test]
fn without_privileges_probe_fails_with_one_line() {
    if !is_root() {
        eprintln!("SKIP: needs root to drop to an unprivileged user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let db = dir.path().join("t.db");
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(cargo_bin("tcplab"))
        .arg("--db")
        .arg(&db)
        .args([
            "bench",
            "tcp-stream",
            "--probe",
            "queues",
            "--duration",
            "100ms",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux)");
    assert_usage_error(&out, "root");
    assert!(!db.exists(), "nothing may be stored");
}
