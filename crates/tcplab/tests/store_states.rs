//! What the store says after a run died, and what reading it leaves behind:
//! a SIGKILLed bench's run reads `killed` with its points "not run", and
//! the commands that only read never create, migrate away or write a
//! database. Real processes, signals, sockets and SQLite files.

mod common;

use common::{json_of, stdout_of, tcplab, tcplab_command, temp_db, usage_error_line};
use engine::proto::{read_message, write_message, Message};
use record::{HostFacts, RunMeta, RunStatus, Store};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A control peer that greets every client and then never answers a setup:
/// a bench against it stores its run and points, then waits in its first
/// trial without using the CPU.
fn silent_server() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for mut s in l.incoming().flatten() {
            if read_message(&mut s).is_ok() {
                let welcome = Message::Welcome {
                    server: "silent".into(),
                    key: None,
                    checks: false,
                };
                let _ = write_message(&mut s, &welcome);
                held.push(s);
            }
        }
    });
    addr
}

/// Runs `sql` (one integer) on the database, 0 if it cannot yet.
fn count(db: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or(0)
}

#[test]
fn a_killed_bench_reads_killed_and_its_points_not_run() {
    let (_dir, db) = temp_db();
    let to = silent_server().to_string();
    let mut bench = tcplab_command(&db)
        .args(["bench", "tcp-stream", "--to", &to, "--write-size", "1K,2K"])
        .args(["--repeat", "3", "-q"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while count(&db, "SELECT COUNT(*) FROM points") < 2 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no run was stored");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Its owner is alive: still running.
    let doc = json_of(&tcplab(&db, &["show", "latest", "--json"]));
    assert_eq!(doc["status"], "running");

    bench.kill().unwrap(); // SIGKILL, by pid
    bench.wait().unwrap();

    let doc = json_of(&tcplab(&db, &["show", "latest", "--json"]));
    assert_eq!(doc["status"], "killed");
    for p in doc["points"].as_array().unwrap() {
        assert_eq!(
            (p["trials_ok"].as_u64(), p["trials_failed"].as_u64()),
            (Some(0), Some(0))
        );
    }
    let table = stdout_of(&tcplab(&db, &["show", "latest"]));
    assert!(table.contains(" killed "), "{table}");
    assert!(table.contains("not run"), "{table}");
    assert!(!table.contains("failed"), "{table}");
    let runs = stdout_of(&tcplab(&db, &["runs"]));
    let row = runs.lines().find(|l| l.contains("tcp-stream")).unwrap();
    assert!(row.contains(" killed "), "{runs}");
    // Those commands only read: the file still says running (a command
    // that writes, such as the next bench, records it as killed).
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM runs WHERE status = 'running'"),
        1
    );
    drop(Store::open(&db).unwrap());
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM runs WHERE status = 'killed'"),
        1
    );
}

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
