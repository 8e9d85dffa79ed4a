//! What reading the store leaves behind: the commands that only read never
//! create or write a database. Real processes and SQLite files.

mod common;

use common::{json_of, tcplab, temp_db, usage_error_line};
use record::{HostFacts, RunMeta, RunStatus, Store};
use std::path::Path;

/// A store holding one completed run, closed cleanly.
fn store_with_one_run(db: &Path) {
    let mut store = Store::open(db).unwrap();
    let meta = RunMeta {
        id: 0,
        kind: "tcp-stream".into(),
        command: "tcplab bench tcp-stream".into(),
        seed: 1,
        place: "loopback".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        finished_at: None,
        status: RunStatus::Running,
        host: HostFacts::default(),
        settings: serde_json::json!({}),
        tool_version: "0.1.0".into(),
    };
    let id = store.create_run(&meta).unwrap();
    store
        .finish_run(id, RunStatus::Completed, "2026-01-01T00:00:01Z")
        .unwrap();
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The commands that only read the store.
const READERS: &[&[&str]] = &[
    &["runs"],
    &["show", "latest"],
    &["show", "latest", "--json"],
    &["export", "latest", "--format", "csv"],
    &["export", "latest", "--format", "json"],
    &["compare", "latest", "latest"],
    &["probes", "latest"],
    &["report", "latest", "--out", "REPORT"],
    &["calibrate", "--show", "latest"],
];

#[test]
fn read_only_commands_never_create_a_database() {
    let (dir, _) = temp_db();
    let missing = dir.path().join("missing_dir").join("x.db");
    let report = dir.path().join("r.html");
    for args in READERS {
        let args: Vec<&str> = args
            .iter()
            .map(|a| {
                if *a == "REPORT" {
                    report.to_str().unwrap()
                } else {
                    a
                }
            })
            .collect();
        let out = tcplab(&missing, &args);
        let line = usage_error_line(&out, &format!("{args:?}"));
        assert_eq!(
            line,
            format!("tcplab: no database at {}\n", missing.display()),
            "{args:?}"
        );
        assert!(
            !dir.path().join("missing_dir").exists(),
            "{args:?} created the folder"
        );
    }
}

#[test]
fn read_only_commands_leave_the_database_as_it_was() {
    let (dir, db) = temp_db();
    store_with_one_run(&db);
    let files = names_in(dir.path());
    assert_eq!(files, ["t.db"]);
    let before = std::fs::read(&db).unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let report = out_dir.path().join("r.html");
    for args in READERS {
        let args: Vec<&str> = args
            .iter()
            .map(|a| {
                if *a == "REPORT" {
                    report.to_str().unwrap()
                } else {
                    a
                }
            })
            .collect();
        // Some have nothing to say about this run (no probes, no host
        // profile): only what they leave behind matters here.
        let _ = tcplab(&db, &args);
        assert_eq!(names_in(dir.path()), files, "{args:?} left files behind");
        assert!(
            std::fs::read(&db).unwrap() == before,
            "{args:?} changed the database"
        );
    }
    let doc = json_of(&tcplab(&db, &["show", "latest", "--json"]));
    assert_eq!(doc["status"], "completed");
}
