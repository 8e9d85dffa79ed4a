//! Live output as iperf3 users expect it, on loopback with real sockets:
//! `--interval` lines while a stream trial runs (and the series stored with
//! the trial), `--parallel`'s per-stream rows and their sum, and `tcplab
//! server`'s log of each client and trial (a real server process, killed
//! by its pid afterwards).

mod common;

use common::{assert_usage_error, json_of, stdout_of, tcplab, tcplab_command, temp_db};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

/// The interval lines of stream `id` (`"  1"`, `"SUM"`) between a trial's
/// column header and its closing separator.
fn interval_lines<'a>(out: &'a str, id: &str) -> Vec<&'a str> {
    let mut inside = false;
    let mut lines = Vec::new();
    for l in out.lines() {
        if l.starts_with("[ ID]") {
            inside = true;
        } else if l.starts_with("- - -") {
            inside = false;
        } else if inside && l.starts_with(&format!("[{id}]")) {
            lines.push(l);
        }
    }
    lines
}

/// The stored trials of the latest run (`export`), each with its details.
fn trials(db: &std::path::Path) -> Vec<Value> {
    let doc = json_of(&tcplab(db, &["export", "latest"]));
    doc["trials"].as_array().unwrap().clone()
}

fn series_bytes(trial: &Value) -> u64 {
    trial["outcome"]["details"]["intervals"]
        .as_array()
        .expect("an interval series")
        .iter()
        .map(|i| i["bytes"].as_u64().unwrap())
        .sum()
}

/// `duration / interval` lines, or one more when a loaded host stretched
/// the trial past its last whole interval by more than the tenth of an
/// interval that is merged into the one before.
fn assert_interval_count(lines: &[&str], whole: usize, out: &str) {
    assert!(
        lines.len() == whole || lines.len() == whole + 1,
        "{} lines, want {whole} (or {} on a loaded host):\n{out}",
        lines.len(),
        whole + 1
    );
}

fn within_1_percent(got: f64, want: f64, what: &str) {
    assert!(want > 0.0, "{what}: nothing measured");
    let off = (got - want).abs() / want;
    assert!(off <= 0.01, "{what}: intervals sum to {got}, total {want}");
}

#[test]
fn tcp_interval_lines_sum_to_the_trial_total_and_count_duration_over_interval() {
    // Real transfers on loopback: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let out = stdout_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--duration",
            "1",
            "--interval",
            "0.25s",
            "--repeat",
            "1",
        ],
    ));
    assert!(out.contains("Retr      Cwnd"), "{out}");
    let lines = interval_lines(&out, "  1");
    assert_interval_count(&lines, 4, &out);
    assert!(lines[0].contains("   0.00-0.25"), "{}", lines[0]);
    // A TCP sender's line ends with retransmits and the congestion window.
    assert!(lines.iter().all(|l| l.ends_with('B')), "{out}");
    let t = &trials(&db)[0];
    let total = t["outcome"]["metrics"]["bytes"].as_f64().unwrap();
    within_1_percent(series_bytes(t) as f64, total, "tcp-stream");
    let series = t["outcome"]["details"]["intervals"].as_array().unwrap();
    assert_eq!(series.len(), lines.len());
    assert!(series[0]["retransmits"].is_u64() && series[0]["streams"][0]["cwnd_bytes"].is_u64());
    // show --json gives the series too.
    let show = json_of(&tcplab(&db, &["show", "latest", "--json"]));
    let shown = &show["points"][0]["intervals"][0]["intervals"];
    assert_eq!(shown.as_array().unwrap().len(), lines.len());
}

#[test]
fn udp_interval_lines_sum_to_what_the_sender_sent() {
    // Real transfers on loopback: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let out = stdout_of(&tcplab(
        &db,
        &[
            "bench",
            "udp-stream",
            "--duration",
            "1",
            "--interval",
            "0.25s",
            "--send-rate",
            "50mbit",
            "--repeat",
            "1",
        ],
    ));
    let lines = interval_lines(&out, "  1");
    assert_interval_count(&lines, 4, &out);
    // No TCP columns for UDP.
    assert!(!out.contains("Retr"), "{out}");
    let t = &trials(&db)[0];
    let m = &t["outcome"]["metrics"];
    // The client sends: its intervals count what it sent.
    let sent = m["datagrams_sent"].as_f64().unwrap() * 1472.0;
    within_1_percent(series_bytes(t) as f64, sent, "udp-stream");
}

#[test]
fn parallel_streams_have_rows_that_add_up_to_their_sum() {
    // Real transfers on loopback: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let out = stdout_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--parallel",
            "3",
            "--duration",
            "0.3",
            "--repeat",
            "2",
            "-q",
        ],
    ));
    for id in ["[  1]", "[  2]", "[  3]", "[SUM]"] {
        assert!(out.contains(id), "{id} missing:\n{out}");
    }
    assert!(!out.contains("[  4]"), "{out}");
    // Each trial: the streams' shares add up to its throughput.
    for t in trials(&db) {
        let streams = t["outcome"]["details"]["streams"].as_array().unwrap();
        assert_eq!(streams.len(), 3);
        let sum: f64 = streams
            .iter()
            .map(|s| s["throughput_bps"].as_f64().unwrap())
            .sum();
        let rate = t["outcome"]["metrics"]["throughput_bps"].as_f64().unwrap();
        assert!((sum - rate).abs() <= rate * 1e-9, "{sum} vs {rate}");
        let bytes: u64 = streams.iter().map(|s| s["bytes"].as_u64().unwrap()).sum();
        assert_eq!(
            bytes as f64,
            t["outcome"]["metrics"]["bytes"].as_f64().unwrap()
        );
    }
    // The point: three per-stream means that add up to the sum's mean.
    let show = json_of(&tcplab(&db, &["show", "latest", "--json"]));
    let s = &show["points"][0]["streams"];
    let means: f64 = s["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["throughput_bps"]["mean"].as_f64().unwrap())
        .sum();
    let sum = s["sum_bps"]["mean"].as_f64().unwrap();
    assert!((means - sum).abs() <= sum * 1e-9, "{means} vs {sum}");
    let point_mean = show["points"][0]["metrics"]["throughput_bps"]["mean"]
        .as_f64()
        .unwrap();
    assert!((sum - point_mean).abs() <= point_mean * 1e-9);
    // show prints the same rows as bench did.
    let shown = stdout_of(&tcplab(&db, &["show", "latest"]));
    assert!(shown.contains("[SUM]"), "{shown}");
}

#[test]
fn parallel_intervals_print_each_stream_and_a_sum_line() {
    // Real transfers on loopback: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (_dir, db) = temp_db();
    let out = stdout_of(&tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--parallel",
            "2",
            "--duration",
            "0.6",
            "--interval",
            "0.2s",
            "--repeat",
            "1",
        ],
    ));
    let sums = interval_lines(&out, "SUM");
    assert_interval_count(&sums, 3, &out);
    assert_eq!(interval_lines(&out, "  1").len(), sums.len());
    assert_eq!(interval_lines(&out, "  2").len(), sums.len());
    let t = &trials(&db)[0];
    let total = t["outcome"]["metrics"]["bytes"].as_f64().unwrap();
    within_1_percent(series_bytes(t) as f64, total, "tcp-stream ×2");
}

#[test]
fn interval_is_refused_where_it_means_nothing() {
    let (_dir, db) = temp_db();
    let out = tcplab(&db, &["bench", "tcp-rr", "--interval", "1s"]);
    assert_usage_error(&out, "--interval applies to tcp-stream and udp-stream");
    let out = tcplab(&db, &["bench", "tcp-stream", "--interval", "1ms"]);
    assert_usage_error(&out, "shortest interval");
    assert!(!db.exists());
}

/// A `tcplab server` on a loopback port of its choosing, and that port.
fn start_server(json: bool) -> (Child, u16) {
    let (_dir, db) = temp_db();
    let mut c = tcplab_command(&db);
    c.args(["server", "--bind", "127.0.0.1", "--port", "0"]);
    if json {
        c.arg("--json");
    }
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stderr.as_mut().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {first:?}"));
    (child, port)
}

/// Reads the server's stdout until a line contains `last` (the client's
/// departure is logged once the server sees its connection close), then
/// stops the server by its pid; returns the lines read.
fn log_until(mut child: Child, last: &str) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let mut log = String::new();
    while let Ok(l) = rx.recv_timeout(std::time::Duration::from_secs(10)) {
        log.push_str(&l);
        log.push('\n');
        if l.contains(last) {
            break;
        }
    }
    // SAFETY: kill(2) on the pid of the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let _ = child.wait();
    log
}

#[test]
fn the_server_logs_each_client_and_trial_as_json_lines() {
    // Real transfers on loopback: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (server, port) = start_server(true);
    let (_dir, db) = temp_db();
    let to = format!("127.0.0.1:{port}");
    let bench = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--to",
            &to,
            "--duration",
            "0.3",
            "--repeat",
            "2",
            "-q",
        ],
    );
    let log = log_until(server, "disconnected");
    stdout_of(&bench);
    let events: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["connected", "trial", "trial", "disconnected"],
        "{log}"
    );
    for e in &events {
        assert!(e["peer"].as_str().unwrap().starts_with("127.0.0.1:"), "{e}");
        assert!(e["time"].is_string());
    }
    // The client's trials, as the client stored them: the server received
    // every byte the client measured.
    let stored = trials(&db);
    for (e, t) in events[1..3].iter().zip(&stored) {
        assert_eq!(e["test"], "tcp-stream");
        assert_eq!(e["role"], "receiver");
        assert_eq!(e["result"], "ok");
        assert_eq!(
            e["bytes"].as_f64(),
            t["outcome"]["metrics"]["bytes"].as_f64()
        );
    }
    assert_eq!(events[3]["trials"], 2);
}

#[test]
fn the_server_logs_text_lines_by_default() {
    // Real transfers on loopback: not beside a timed test.
    let _timing = testkit::timing_lock();
    let (server, port) = start_server(false);
    let (_dir, db) = temp_db();
    let to = format!("127.0.0.1:{port}");
    let bench = tcplab(
        &db,
        &[
            "bench",
            "udp-stream",
            "--to",
            &to,
            "--duration",
            "0.2",
            "--repeat",
            "1",
            "-q",
        ],
    );
    let log = log_until(server, "disconnected");
    stdout_of(&bench);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 3, "{log}");
    assert!(lines[0].contains(" 127.0.0.1:") && lines[0].contains(" connected (tcplab "));
    assert!(lines[1].contains(" udp-stream receiver: "), "{}", lines[1]);
    assert!(lines[1].ends_with(", ok"), "{}", lines[1]);
    assert!(
        lines[2].ends_with(" disconnected after 1 trial"),
        "{}",
        lines[2]
    );
}
