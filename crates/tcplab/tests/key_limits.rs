//! Limits per key (issue 17, item 2): `tcplab server --keys FILE.toml`
//! with real server processes and real sockets. Each key's caps refuse a
//! setup over them with one line on both sides (bench's pre-flight: exit 2,
//! nothing stored; a setup during a run: the trial fails with the reason)
//! and pass one just under; a key's disallowed test or reverse mode is
//! refused; two keys on one server each get their own limits (the server
//! paces an unpaced reverse stream to its key's rate); an unknown key is
//! refused; the server's stderr has one JSON line per accepted and refused
//! client and per trial, naming the key.

mod common;

use common::server::ServerChild;
use common::{assert_success, tcplab, usage_error_line};
use engine::{Client, EngineError, Key};
use record::{TestKind, TrialParams};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// A directory with key files `a.key`, `b.key`, `stranger.key` and a keys
/// file `keys.toml` listing `a` (tight limits) and `b` (a rate cap only).
struct Keys {
    dir: tempfile::TempDir,
}

const KEYS_TOML: &str = r#"
[[key]]
file = "a.key"
name = "client-a"
max_rate = "100mbit"
max_duration = "1s"
max_bytes = "1M"
max_parallel = 2
tests = ["tcp-stream", "udp-stream", "tcp-rr"]
reverse = false

[[key]]
file = "b.key"
max_rate = "20mbit"
"#;

impl Keys {
    fn new() -> Keys {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a", "b", "stranger"] {
            Key::generate()
                .unwrap()
                .write_new(&dir.path().join(format!("{name}.key")))
                .unwrap();
        }
        std::fs::write(dir.path().join("keys.toml"), KEYS_TOML).unwrap();
        Keys { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn key(&self, name: &str) -> Key {
        Key::read_file(&self.path(&format!("{name}.key"))).unwrap()
    }

    fn server(&self) -> ServerChild {
        let toml = self.path("keys.toml");
        ServerChild::start(None, "127.0.0.1", &["--keys", toml.to_str().unwrap()])
    }
}

/// `tcplab bench ARGS… --to SERVER --key KEY --quiet` into `db`.
fn bench(db: &Path, server: &ServerChild, key: &Path, args: &[&str]) -> Output {
    let to = server.addr.to_string();
    let mut all = vec!["bench"];
    all.extend(args);
    all.extend([
        "--to",
        &to,
        "--key",
        key.to_str().unwrap(),
        "--repeat",
        "1",
        "--quiet",
    ]);
    tcplab(db, &all)
}

fn events<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|e| e["event"] == kind).collect()
}

#[test]
fn each_limit_of_a_key_refuses_in_one_line_on_both_sides_and_just_under_passes() {
    // Its trials just under the caps are real transfers: not beside a
    // timed test.
    let _timing = testkit::timing_lock();
    let keys = Keys::new();
    let server = keys.server();
    let a = keys.path("a.key");
    let refused: [(&[&str], &str); 7] = [
        (
            &["tcp-stream", "--parallel", "3", "--send-rate", "10mbit", "--duration", "0.3"],
            "key \"client-a\" allows at most 2 parallel flows (asked 3)",
        ),
        (
            &["tcp-stream", "--send-rate", "10mbit", "--duration", "2"],
            "key \"client-a\" allows at most 1 s per trial (asked --duration 2 s)",
        ),
        (
            &["tcp-stream", "--send-rate", "10mbit", "--bytes", "2M"],
            "key \"client-a\" allows at most 1M per trial (asked --bytes 2M)",
        ),
        (
            &["tcp-stream", "--parallel", "2", "--send-rate", "60mbit", "--duration", "0.3"],
            "key \"client-a\" allows at most 100mbit per trial (asked --send-rate 2 × 60mbit = 120mbit)",
        ),
        (
            &["udp-stream", "--duration", "0.3"],
            "key \"client-a\" allows at most 100mbit per trial: give --send-rate (the server cannot pace a client that sends)",
        ),
        (
            &["tcp-stream", "--send-rate", "10mbit", "--duration", "0.3", "--reverse", "on"],
            "key \"client-a\" does not allow --reverse",
        ),
        (
            &["tcp-crr", "--duration", "0.3"],
            "key \"client-a\" does not allow tcp-crr (it allows tcp-stream, udp-stream, tcp-rr)",
        ),
    ];
    let db = keys.path("x.db");
    for (args, why) in refused {
        let out = bench(&db, &server, &a, args);
        let line = usage_error_line(&out, why);
        assert_eq!(line, format!("tcplab: server refused the trial: {why}\n"));
    }
    assert!(!db.exists(), "a refused pre-flight stored something");
    // Just under each cap: served and stored.
    for args in [
        &[
            "tcp-stream",
            "--parallel",
            "2",
            "--send-rate",
            "50mbit",
            "--duration",
            "1",
        ][..],
        &["tcp-stream", "--send-rate", "100mbit", "--bytes", "1M"],
        &["udp-stream", "--send-rate", "20mbit", "--duration", "0.3"],
        &["tcp-rr", "--duration", "0.3"],
    ] {
        assert_success(&bench(&db, &server, &a, args));
    }
    let log = server.json_log();
    let refusals = events(&log, "refused");
    assert_eq!(refusals.len(), refused.len(), "{log:#?}");
    for (e, (_, why)) in refusals.iter().zip(refused) {
        assert_eq!(e["key"], "client-a", "{e}");
        assert_eq!(e["reason"], why, "{e}");
        assert!(e["peer"].as_str().unwrap().starts_with("127.0.0.1:"));
        assert!(e["time"].is_string());
    }
    let accepted = events(&log, "connected");
    assert_eq!(accepted.len(), refused.len() + 4, "{log:#?}");
    assert!(accepted.iter().all(|e| e["key"] == "client-a"), "{log:#?}");
    let trials = events(&log, "trial");
    assert_eq!(trials.len(), 4, "{log:#?}");
    assert!(
        trials
            .iter()
            .all(|e| e["key"] == "client-a" && e["result"] == "ok"),
        "{log:#?}"
    );
}

fn connect(server: &ServerChild, key: &Key) -> Result<Client, EngineError> {
    Client::connect_with_key(server.addr, Duration::from_secs(5), Some(key))
}

#[test]
fn a_setup_over_the_keys_limit_fails_the_trial_with_the_reason_and_is_logged() {
    // Its second trial is a real transfer: not beside a timed test.
    let _timing = testkit::timing_lock();
    let keys = Keys::new();
    let server = keys.server();
    let mut client = connect(&server, &keys.key("a")).unwrap();
    assert_eq!(client.key_name(), Some("client-a"));
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.parallel = 16;
    p.send_rate_bps = Some(1_000_000);
    p.duration_s = Some(0.3);
    let stop = Arc::new(AtomicBool::new(false));
    let e = client.run_trial(&p, &stop).unwrap_err();
    assert_eq!(
        e.to_string(),
        "server refused the trial: key \"client-a\" allows at most 2 parallel flows (asked 16)"
    );
    // The connection stays usable: the next trial, within the limits, runs.
    p.parallel = 2;
    let o = client.run_trial(&p, &stop).unwrap();
    assert!(o.metrics["bytes"] > 0.0);
    drop(client);
    let log = server.json_log();
    let trials = events(&log, "trial");
    assert_eq!(trials.len(), 2, "{log:#?}");
    assert_eq!(trials[0]["result"], "refused");
    assert_eq!(
        trials[0]["error"],
        "key \"client-a\" allows at most 2 parallel flows (asked 16)"
    );
    assert_eq!(trials[0]["parallel"], 16);
    assert_eq!(trials[1]["result"], "ok");
    assert!(trials.iter().all(|t| t["key"] == "client-a"));
}

/// The stored throughput (bit/s) of each trial of the latest run in `db`.
fn stored_throughputs(db: &Path) -> Vec<f64> {
    let out = tcplab(db, &["export", "latest"]);
    assert_success(&out);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["outcome"]["metrics"]["throughput_bps"].as_f64().unwrap())
        .collect()
}

#[test]
fn two_keys_on_one_server_each_get_their_own_limits() {
    // The paced reverse stream's rate is timed: one timed test at a time.
    let _timing = testkit::timing_lock();
    let keys = Keys::new();
    let server = keys.server();
    // Key b allows reverse and any test, but paces the server's unpaced
    // sending to its 20 Mbit/s; key a refuses the same trial.
    let reverse = [
        "tcp-stream",
        "--reverse",
        "on",
        "--duration",
        "1",
        "--parallel",
        "2",
    ];
    let a_db = keys.path("a.db");
    let out = bench(&a_db, &server, &keys.path("a.key"), &reverse);
    usage_error_line(&out, "key a refuses reverse");
    let b_db = keys.path("b.db");
    // The server (our child) paces on a quiet host: the stream counts
    // when others left the CPUs alone; `latest` is the quiet run.
    let q = testkit::until_quiet(
        "key b's paced reverse stream",
        testkit::QuietLimits::default(),
        &[],
        || assert_success(&bench(&b_db, &server, &keys.path("b.key"), &reverse)),
    );
    eprintln!("key b's paced reverse stream: {}", q.describe());
    let paced = stored_throughputs(&b_db);
    assert!(!paced.is_empty());
    for bps in &paced {
        assert!(
            (10e6..=22e6).contains(bps),
            "key b's reverse stream ran at {bps} bit/s, not paced to 20 Mbit/s"
        );
    }
    // Key b has no parallel cap of its own: 3 flows pass where a's 2 stop.
    let three = [
        "tcp-stream",
        "--parallel",
        "3",
        "--send-rate",
        "5mbit",
        "--duration",
        "0.3",
    ];
    assert_success(&bench(&b_db, &server, &keys.path("b.key"), &three));
    let out = bench(&a_db, &server, &keys.path("a.key"), &three);
    usage_error_line(&out, "key a's parallel cap");
    // Key a's rate cap is 100mbit; key b's 20mbit refuses 2 × 15mbit.
    let thirty = [
        "tcp-stream",
        "--parallel",
        "2",
        "--send-rate",
        "15mbit",
        "--duration",
        "0.3",
    ];
    assert_success(&bench(&a_db, &server, &keys.path("a.key"), &thirty));
    let out = bench(&b_db, &server, &keys.path("b.key"), &thirty);
    let line = usage_error_line(&out, "key b's rate cap");
    assert_eq!(
        line,
        "tcplab: server refused the trial: key \"b\" allows at most 20mbit per trial (asked --send-rate 2 × 15mbit = 30mbit)\n"
    );
    let log = server.json_log();
    let names: Vec<&str> = events(&log, "connected")
        .iter()
        .map(|e| e["key"].as_str().unwrap())
        .collect();
    // Key b connected once per attempt at the paced stream.
    let streams = vec!["b"; q.noisy.len() + 1];
    let expected = [
        &["client-a"][..],
        &streams,
        &["b", "client-a", "client-a", "b"],
    ]
    .concat();
    assert_eq!(names, expected);
}

#[test]
fn an_unknown_key_is_refused_on_both_sides() {
    let keys = Keys::new();
    let server = keys.server();
    let db = keys.path("x.db");
    let stranger = keys.path("stranger.key");
    let out = bench(&db, &server, &stranger, &["tcp-rr", "--duration", "0.2"]);
    let why = format!(
        "authentication failed: the client's key differs (this server has no key with id {})",
        keys.key("stranger").id()
    );
    assert_eq!(
        usage_error_line(&out, "unknown key"),
        format!("tcplab: {} refused the client: {why}\n", server.addr)
    );
    assert!(!db.exists());
    let log = server.json_log();
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(log[0]["event"], "refused");
    assert_eq!(log[0]["reason"], why.as_str());
    assert_eq!(log[0]["key"], Value::Null);
}

#[test]
fn a_bad_keys_file_is_one_line_naming_the_entry_and_field() {
    let keys = Keys::new();
    let bad = keys.path("bad.toml");
    std::fs::write(
        &bad,
        "[[key]]\nfile = \"a.key\"\n[[key]]\nfile = \"b.key\"\nmax_rate = \"fast\"\n",
    )
    .unwrap();
    let out = tcplab(
        &keys.path("x.db"),
        &[
            "server",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--keys",
            bad.to_str().unwrap(),
        ],
    );
    let line = usage_error_line(&out, "bad keys file");
    assert!(
        line.starts_with(&format!(
            "tcplab: --keys {}: key entry 2 (\"b\"): max_rate \"fast\": ",
            bad.display()
        )),
        "{line}"
    );
    let both = tcplab(
        &keys.path("x.db"),
        &[
            "server",
            "--port",
            "0",
            "--keys",
            bad.to_str().unwrap(),
            "--key",
            keys.path("a.key").to_str().unwrap(),
        ],
    );
    assert_eq!(both.status.code(), Some(2));
}

/// The server's two logs: text on stdout (nothing with `--quiet`), and
/// always one JSON line per event on stderr; `--key FILE` names its key
/// after the file.
#[test]
fn json_lines_go_to_stderr_always_and_quiet_silences_stdout() {
    // Its tcp-rr trials are real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let keys = Keys::new();
    let a = keys.path("a.key");
    let db = keys.path("x.db");
    let rr = ["tcp-rr", "--duration", "0.2"];
    let texty = ServerChild::start(None, "127.0.0.1", &["--key", a.to_str().unwrap()]);
    assert_success(&bench(&db, &texty, &a, &rr));
    let (text, json) = texty.logs();
    assert!(text.contains(" connected (tcplab "), "{text}");
    assert!(text.contains(" with key a"), "{text}");
    assert!(text.contains(" tcp-rr receiver: "), "{text}");
    let kinds: Vec<&str> = json.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["connected", "trial", "disconnected"], "{json:#?}");
    assert_eq!(json[0]["key"], "a");
    assert_eq!(json[1]["key"], "a");
    assert_eq!(json[1]["result"], "ok");
    let quiet = ServerChild::start(
        None,
        "127.0.0.1",
        &["--key", a.to_str().unwrap(), "--quiet"],
    );
    assert_success(&bench(&db, &quiet, &a, &rr));
    let (text, json) = quiet.logs();
    assert_eq!(text, "", "--quiet printed on stdout");
    assert_eq!(json.len(), 3, "{json:#?}");
}
