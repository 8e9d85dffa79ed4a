//! End-to-end tests of the `tcplab` binary: real sockets, a real SQLite
//! database, real signals.

mod common;

use assert_cmd::cargo::cargo_bin;
use common::{json_of, tcplab, tcplab_command, temp_db, usage_error_line};
use rusqlite::Connection;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn count(db: &Path, sql: &str) -> i64 {
    let c = Connection::open(db).unwrap();
    c.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Waits (at most 60 s) until `count_sql` on the run database reaches `n`,
/// while another process is writing to it.
fn wait_for_trials(db: &Path, count_sql: &str, n: i64) {
    let t0 = Instant::now();
    loop {
        let have = Connection::open(db)
            .ok()
            .filter(|_| db.exists())
            .and_then(|c| c.query_row(count_sql, [], |r| r.get::<_, i64>(0)).ok())
            .unwrap_or(0);
        if have >= n {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no trial completed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether something listens on TCP `port` of 127.0.0.1 (from
/// /proc/net/tcp, without connecting to it, which the server would log as
/// a client).
fn listening(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1] == local && f[3] == "0A"
    })
}

/// Waits (at most 10 s) until `server` listens on `port`; fails the test
/// if it exits first or never does.
fn wait_until_listening(server: &mut std::process::Child, port: u16) {
    let t0 = Instant::now();
    while !listening(port) {
        if let Some(status) = server.try_wait().unwrap() {
            panic!("the server exited before it listened on {port}: {status}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the server did not listen on {port} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bad_input_exits_2_with_one_line_and_stores_nothing() {
    let (_dir, db) = temp_db();
    let cases: &[&[&str]] = &[
        &["bench", "tcp-stream", "--write-size", "abc"],
        &["bench", "tcp-stream", "--write-size", "10,,20"],
        &["bench", "tcp-stream", "--write-size", "0"],
        &["bench", "tcp-stream", "--bytes", "1M", "--duration", "1s"],
        &["bench", "udp-stream", "--write-size", "4"],
        &["bench", "tcp-rr", "--api", "sendfile"],
        &["bench", "tcp-stream", "--api", "carrier-pigeon"],
        &["bench", "tcp-stream", "--load", "both:3"],
        &["bench", "tcp-stream", "--send-rate", "fast"],
        &["bench", "tcp-stream", "--to", "host:notaport"],
        &["bench", "tcp-stream", "--precision", "95"],
        &["bench", "tcp-stream", "--repeat", "0"],
        &["bench", "tcp-stream", "--parallel", "0"],
        &["bench", "tcp-stream", "--rcvlowat", "0"],
        &["bench", "tcp-stream", "--rcvlowat", "soon"],
        &["bench", "tcp-rr", "--rcvlowat", "32K"],
        &["bench", "udp-stream", "--quickack"],
        &["bench", "tcp-stream", "--quickack", "sometimes"],
        &["bench", "no-such-test"],
        &["bench", "tcp-stream", "--no-such-flag"],
        &["show", "abc"],
        &["show", "999"],
        &["export", "latest", "--format", "xml"],
        &["server", "--bind", "not-an-ip"],
    ];
    for args in cases {
        let out = tcplab(&db, args);
        let err = usage_error_line(&out, &format!("{args:?}"));
        assert!(err.starts_with("tcplab: "), "{args:?}: {err}");
    }
    // Nothing was stored: the database either does not exist or has no runs.
    if db.exists() {
        assert_eq!(count(&db, "SELECT COUNT(*) FROM runs"), 0);
    }
}

#[test]
fn every_test_type_runs_through_the_cli_and_is_stored() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    for test in ["tcp-stream", "udp-stream", "tcp-rr", "tcp-crr", "http"] {
        let out = tcplab(
            &db,
            &[
                "bench",
                test,
                "--duration",
                "200ms",
                "--repeat",
                "2",
                "--json",
            ],
        );
        let doc = json_of(&out);
        assert!(doc["run_id"].as_i64().unwrap() > 0);
        let p = &doc["points"][0];
        assert_eq!(p["params"]["test"], test);
        assert_eq!(p["trials_ok"], 2, "{test}: {p}");
        let metric = if test.ends_with("stream") {
            "throughput_bps"
        } else {
            "transactions_per_s"
        };
        let m = &p["metrics"][metric];
        assert_eq!(m["n"], 2);
        assert!(m["mean"].as_f64().unwrap() > 0.0);
        assert!(m["sd"].is_number() && m["ci95"].is_number(), "{m}");
        for k in ["cpu_sender_s", "cpu_receiver_s"] {
            assert!(p["metrics"][k]["mean"].is_number(), "{test} lacks {k}");
        }
        if test == "udp-stream" {
            assert!(p["metrics"]["loss_rate"]["mean"].is_number());
        }
        if test.ends_with("rr") || test == "http" {
            assert!(p["metrics"]["latency_p99_s"]["mean"].as_f64().unwrap() > 0.0);
        }
    }
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM runs WHERE status = 'completed'"),
        5
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM trials WHERE status = 'ok'"),
        10
    );
    // runs, show, export read it back.
    let runs = tcplab(&db, &["runs"]);
    assert!(String::from_utf8_lossy(&runs.stdout).contains("udp-stream"));
    let shown = json_of(&tcplab(&db, &["show", "latest", "--json"]));
    assert_eq!(shown["kind"], "http");
    let table = String::from_utf8_lossy(&tcplab(&db, &["show", "1"]).stdout).to_string();
    assert!(
        table.contains("throughput (") && table.contains("bit/s)") && table.contains(" ± "),
        "{table}"
    );
    let csv = tcplab(&db, &["export", "2", "--format", "csv"]);
    let text = String::from_utf8_lossy(&csv.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.lines().next().unwrap().contains("loss_rate"));
    let exported = json_of(&tcplab(&db, &["export", "3", "--format", "json"]));
    assert_eq!(exported["trials"].as_array().unwrap().len(), 2);
    assert!(exported["host"]["sysctls"]["net.ipv4.tcp_rmem"].is_string());
}

#[test]
fn sweep_covers_the_cartesian_product_in_seeded_random_order() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let args = [
        "bench",
        "tcp-stream",
        "--bytes",
        "256K",
        "--write-size",
        "1K,2K,4K",
        "--nodelay",
        "on,off",
        "--repeat",
        "2",
        "--json",
    ];
    let run = |seed: &str| {
        let mut a = args.to_vec();
        a.extend(["--seed", seed]);
        json_of(&tcplab(&db, &a))
    };
    let order = |run_id: i64| -> Vec<i64> {
        let c = Connection::open(&db).unwrap();
        let mut st = c
            .prepare("SELECT p.idx FROM trials t JOIN points p ON p.id = t.point_id WHERE t.run_id = ?1 ORDER BY t.seq")
            .unwrap();
        st.query_map([run_id], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let a = run("7");
    let b = run("7");
    let c = run("8");
    assert_eq!(a["seed"], 7);
    assert_eq!(a["points"].as_array().unwrap().len(), 6);
    let (oa, ob, oc) = (
        order(a["run_id"].as_i64().unwrap()),
        order(b["run_id"].as_i64().unwrap()),
        order(c["run_id"].as_i64().unwrap()),
    );
    assert_eq!(oa.len(), 12);
    assert_eq!(oa, ob, "same seed, same order");
    assert_ne!(oa, oc, "another seed, another order");
    assert_ne!(
        oa,
        vec![0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5],
        "order is not the cartesian order"
    );
    // Each round runs every point once before any point repeats.
    let mut first: Vec<i64> = oa[..6].to_vec();
    first.sort();
    assert_eq!(first, vec![0, 1, 2, 3, 4, 5]);
    let ws: Vec<i64> = a["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["params"]["write_size"].as_i64().unwrap())
        .collect();
    assert_eq!(ws, vec![1024, 1024, 2048, 2048, 4096, 4096]);
}

#[test]
fn precision_target_stops_at_the_target_or_the_cap() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    // A loose target is met quickly: stops once the half-width is within 50 %.
    let doc = json_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-rr",
            "--duration",
            "100ms",
            "--precision",
            "95,50",
            "--repeat",
            "2",
            "--max-repeat",
            "10",
            "--json",
        ],
    ));
    let m = &doc["points"][0]["metrics"]["transactions_per_s"];
    let n = m["n"].as_u64().unwrap();
    assert!((2..=10).contains(&n));
    if n < 10 {
        assert!(
            m["ci95"].as_f64().unwrap() <= 0.5 * m["mean"].as_f64().unwrap(),
            "{m}"
        );
    }
    // An impossible target runs exactly to the cap.
    let doc = json_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-rr",
            "--duration",
            "50ms",
            "--precision",
            "99,0.0001",
            "--max-repeat",
            "4",
            "--json",
        ],
    ));
    assert_eq!(doc["points"][0]["metrics"]["transactions_per_s"]["n"], 4);
}

#[test]
fn ctrl_c_keeps_completed_trials_and_marks_the_run_interrupted() {
    // Real transfers, and the interrupt is held to 5 s of wall clock: one
    // timed test at a time.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let child = tcplab_command(&db)
        .args([
            "bench",
            "tcp-stream",
            "--duration",
            "500ms",
            "--write-size",
            "1K,2K,4K,8K",
            "--repeat",
            "5",
            "-q",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_trials(&db, "SELECT COUNT(*) FROM trials", 2);
    // SAFETY: signalling our own child by pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        t1.elapsed() < Duration::from_secs(5),
        "interrupt took {:?}",
        t1.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        count(
            &db,
            "SELECT COUNT(*) FROM runs WHERE status = 'interrupted' AND finished_at IS NOT NULL"
        ),
        1
    );
    let ok = count(&db, "SELECT COUNT(*) FROM trials WHERE status = 'ok'");
    assert!(ok >= 2, "completed trials kept: {ok}");
    assert!(ok < 20, "the run stopped early");
    // The trial cut short is recorded as failed, never as a measurement.
    assert_eq!(count(&db, "SELECT COUNT(*) FROM trials t JOIN metrics m ON m.trial_id = t.id WHERE t.status = 'failed'"), 0);
}

#[test]
fn peer_that_disappears_fails_the_trial_and_the_sweep_continues() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let port = free_port();
    let mut server = Command::new(cargo_bin("tcplab"))
        .args(["server", "--bind", "127.0.0.1", "--port", &port.to_string()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The bench's first trial needs the server there: wait until it
    // listens (a fixed sleep lost the race on a busy host).
    wait_until_listening(&mut server, port);
    let to = format!("127.0.0.1:{port}");
    let bench = tcplab_command(&db)
        .args([
            "bench",
            "tcp-stream",
            "--to",
            &to,
            "--duration",
            "1s",
            "--write-size",
            "1K,2K",
            "--repeat",
            "2",
            "--json",
            "--seed",
            "1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill the server once the first trial is stored, in the middle of the second.
    wait_for_trials(&db, "SELECT COUNT(*) FROM trials WHERE status = 'ok'", 1);
    std::thread::sleep(Duration::from_millis(300));
    server.kill().unwrap();
    server.wait().unwrap();
    let out = bench.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["status"], "completed");
    let failed: u64 = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["trials_failed"].as_u64().unwrap())
        .sum();
    let ok: u64 = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["trials_ok"].as_u64().unwrap())
        .sum();
    assert_eq!(failed + ok, 4, "every planned trial was attempted");
    assert!(ok >= 1 && failed >= 2, "ok {ok} failed {failed}");
    let reasons: Vec<String> = doc["points"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| {
            p["failures"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap().to_string())
        })
        .collect();
    assert!(reasons.iter().all(|r| !r.is_empty()));
    assert!(
        count(
            &db,
            "SELECT COUNT(*) FROM trials WHERE status = 'failed' AND error IS NOT NULL"
        ) >= 2
    );
    // The report shows failed trials as failed, never as zeros: the trials
    // column counts them, and a point with no good trial reads "failed".
    let page = db.with_extension("html");
    let run_id = doc["run_id"].as_i64().unwrap().to_string();
    let rep = tcplab(&db, &["report", &run_id, "--out", page.to_str().unwrap()]);
    assert!(
        rep.status.success(),
        "{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(" failed)"), "no failed count in the report");
    for p in doc["points"].as_array().unwrap() {
        if p["trials_ok"].as_u64() == Some(0) {
            assert!(html.contains(">failed<"), "a point with no good trial");
        }
    }
}
