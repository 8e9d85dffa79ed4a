//! `bench --to` a server that cannot be used fails once, fast, before
//! anything is stored: one line on stderr, exit 2, no database. Real
//! sockets: a port nobody listens on, an iperf3 server, a peer speaking
//! another protocol version, and (as root) an address whose packets are
//! dropped.

mod common;

use common::{tcplab, tcplab_command, temp_db, usage_error_line};
use engine::proto::{read_message, write_frame};
use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// [`bench_to`] until a run was quiet: its wall-clock time (a debug
/// binary's start included) is held to a ceiling a busy host can pass.
/// The caller holds the timing lock.
fn quiet_bench_to(what: &str, to: &str, extra: &[&str]) -> (String, Duration, tempfile::TempDir) {
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || {
        bench_to(to, extra)
    });
    eprintln!("{what}: {}", q.describe());
    q.value
}

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `bench tcp-stream --to TO` with extra arguments; returns its one
/// error line (after checking exit 2 and one line) and how long it took.
fn bench_to(to: &str, extra: &[&str]) -> (String, Duration, tempfile::TempDir) {
    let (dir, db) = temp_db();
    let mut args = vec!["bench", "tcp-stream", "--to", to, "--repeat", "5", "-q"];
    args.extend_from_slice(extra);
    let t0 = Instant::now();
    let out = tcplab(&db, &args);
    let took = t0.elapsed();
    let line = usage_error_line(&out, to);
    assert!(!db.exists(), "{to}: a database was created");
    assert!(out.stdout.is_empty(), "{to}: printed a table");
    (line, took, dir)
}

#[test]
fn a_refused_connection_fails_at_once_and_stores_nothing() {
    // Timed against a wall clock: one timed test at a time, on a quiet run.
    let _timing = testkit::timing_lock();
    let to = format!("127.0.0.1:{}", free_port());
    let (line, took, _dir) = quiet_bench_to("a refused connection", &to, &[]);
    assert_eq!(
        line,
        format!("tcplab: cannot reach {to}: connection refused\n")
    );
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

/// Whether something listens on TCP `port` of 127.0.0.1 (from
/// /proc/net/tcp, without connecting to it).
fn listening(port: u16) -> bool {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 3 && f[1] == local && f[3] == "0A"
    })
}

#[test]
fn an_iperf3_server_is_not_a_tcplab_server() {
    if !testkit::need_tool("iperf3") {
        return;
    }
    // Timed against a wall clock: one timed test at a time, on a quiet run.
    let _timing = testkit::timing_lock();
    let port = free_port();
    let mut iperf3 = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !listening(port) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "iperf3 did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let to = format!("127.0.0.1:{port}");
    let (line, took, _dir) = quiet_bench_to("an iperf3 server", &to, &["--connect-timeout", "1s"]);
    iperf3.kill().unwrap();
    iperf3.wait().unwrap();
    assert_eq!(
        line,
        format!("tcplab: {to} is not a tcplab server (no welcome within 1 s)\n")
    );
    // Once, not once per trial (5 trials).
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

/// A peer that answers every hello with a well-formed frame of protocol
/// version `version`, on its own thread.
fn peer_speaking(version: u16) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            if read_message(&mut s).is_ok() {
                let body = br#"{"type":"welcome","server":"tcplab from the future"}"#;
                let _ = write_frame(&mut s, version, body);
            }
        }
    });
    addr
}

#[test]
fn a_server_of_another_protocol_version_is_named_as_such() {
    let to = peer_speaking(engine::proto::VERSION + 1).to_string();
    let (line, _, _dir) = bench_to(&to, &[]);
    assert_eq!(
        line,
        format!(
            "tcplab: {to} speaks tcplab control protocol version {}; this tcplab speaks version {}\n",
            engine::proto::VERSION + 1,
            engine::proto::VERSION
        )
    );
}

#[test]
fn a_host_that_drops_packets_costs_one_timeout_not_one_per_trial() {
    if !testkit::need_root("a namespace whose packets go nowhere needs root") {
        return;
    }
    // Timed against a wall clock: one timed test at a time, on a quiet run.
    let _timing = testkit::timing_lock();
    // A namespace of our own: 192.0.2.1 (TEST-NET-1) is a neighbour on a
    // veth whose peer accepts nothing, so every SYN is dropped and nothing
    // leaves the namespace.
    struct Netns(String);
    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }
    let ns = Netns(format!("reach-drop-{}", std::process::id()));
    let ip = |args: &str| {
        let st = Command::new("ip")
            .args(["-n", &ns.0])
            .args(args.split_whitespace())
            .status()
            .unwrap();
        assert!(st.success(), "ip -n {} {args}", ns.0);
    };
    assert!(Command::new("ip")
        .args(["netns", "add", &ns.0])
        .status()
        .unwrap()
        .success());
    ip("link set lo up");
    ip("link add v0 type veth peer name v1");
    ip("addr add 192.0.2.2/24 dev v0");
    ip("link set v0 up");
    ip("link set v1 up");
    ip("neigh add 192.0.2.1 lladdr 02:00:00:00:00:01 dev v0 nud permanent");
    let (_dir, db) = temp_db();
    let bin = tcplab_command(&db).get_program().to_owned();
    let q = testkit::until_quiet(
        "a dropping host",
        testkit::QuietLimits::default(),
        &[],
        || {
            let t0 = Instant::now();
            let out = Command::new("ip")
                .args(["netns", "exec", &ns.0])
                .arg(&bin)
                .arg("--db")
                .arg(&db)
                .args(["bench", "tcp-stream", "--to", "192.0.2.1:5301"])
                .args(["--repeat", "5", "--connect-timeout", "1s", "-q"])
                .stdin(Stdio::null())
                .output()
                .unwrap();
            (out, t0.elapsed())
        },
    );
    eprintln!("a dropping host: {}", q.describe());
    let (out, took) = q.value;
    let line = usage_error_line(&out, "dropping host");
    assert_eq!(
        line,
        "tcplab: cannot reach 192.0.2.1:5301: no answer within 1 s\n"
    );
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert!(!db.exists(), "a database was created");
}

#[test]
fn connect_timeout_is_checked_as_input() {
    let (_dir, db) = temp_db();
    let out = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--to",
            "127.0.0.1:1",
            "--connect-timeout",
            "0",
        ],
    );
    let line = usage_error_line(&out, "--connect-timeout 0");
    assert!(line.contains("positive duration"), "{line}");
    let out = tcplab(&db, &["bench", "tcp-stream", "--connect-timeout", "1s"]);
    let line = usage_error_line(&out, "--connect-timeout without --to");
    assert_eq!(
        line,
        "tcplab: --connect-timeout needs --to (without it, bench's own server is on loopback)\n"
    );
    assert!(!db.exists());
}
