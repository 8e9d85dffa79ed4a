//! Authentication (issue 17, item 1): `tcplab key new`, the key files'
//! modes, the HMAC handshake between `bench --key` and `server --key` on
//! real sockets (a wrong key refused on both sides, a recorded handshake
//! replayed on a new connection refused), and `--insecure` on a
//! non-loopback address (a veth address in a namespace of the test's own).

mod common;

use common::control::{keyed_handshake, Keyed};
use common::server::ServerChild as ServerProc;
use common::{assert_success, tcplab, tcplab_command};
use engine::auth::{fresh_nonce, nonce_from_hex, to_hex, Key, SERVER_LABEL};
use engine::proto::{read_message, write_message, Message};
use record::{TestKind, TrialParams};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// A new key file in `dir`, made by `tcplab key new --out`.
fn new_key(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let out = tcplab(
        &dir.join("unused.db"),
        &["key", "new", "--out", path.to_str().unwrap()],
    );
    assert_success(&out);
    path
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn bench_to(db: &Path, addr: SocketAddr, key: Option<&Path>) -> Output {
    let to = addr.to_string();
    let mut args = vec![
        "bench",
        "tcp-rr",
        "--to",
        &to,
        "--duration",
        "0.2s",
        "--quiet",
    ];
    if let Some(k) = key {
        args.extend(["--key", k.to_str().unwrap()]);
    }
    tcplab(db, &args)
}

#[test]
fn key_new_writes_a_private_file_once_and_prints_keys_that_differ() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_key(dir.path(), "k");
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(Key::from_line(&text).is_some(), "{text:?}");
    assert_eq!(text.len(), 65, "64 hex digits and a newline");
    let again = tcplab(
        &dir.path().join("x.db"),
        &["key", "new", "--out", path.to_str().unwrap()],
    );
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(
        stderr_of(&again),
        format!(
            "tcplab: {}: already exists; a key file is never overwritten\n",
            path.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "overwritten");
    let printed =
        |_| String::from_utf8(tcplab(&dir.path().join("x.db"), &["key", "new"]).stdout).unwrap();
    let (a, b) = (printed(0), printed(1));
    assert!(Key::from_line(&a).is_some() && Key::from_line(&b).is_some());
    assert_ne!(a, b);
}

#[test]
fn a_key_file_others_may_read_is_refused_by_server_and_bench() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_key(dir.path(), "k");
    let db = dir.path().join("x.db");
    for mode in [0o640, 0o604] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let want = format!(
            "tcplab: --key {p}: readable by group or others (mode {mode:03o}); run chmod 600 {p}\n",
            p = path.display()
        );
        let server = tcplab(
            &db,
            &[
                "server",
                "--bind",
                "127.0.0.1",
                "--port",
                "0",
                "--key",
                path.to_str().unwrap(),
            ],
        );
        assert_eq!(server.status.code(), Some(2));
        assert_eq!(stderr_of(&server), want);
        let bench = bench_to(&db, "127.0.0.1:9".parse().unwrap(), Some(&path));
        assert_eq!(bench.status.code(), Some(2));
        assert_eq!(stderr_of(&bench), want);
    }
    assert!(!db.exists(), "a refused bench stored something");
}

#[test]
fn a_wrong_key_is_refused_on_both_sides_and_the_right_one_is_served() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let (right, wrong) = (new_key(dir.path(), "right"), new_key(dir.path(), "wrong"));
    let server = ServerProc::start(None, "127.0.0.1", &["--key", right.to_str().unwrap()]);
    let db = dir.path().join("x.db");
    let refused = bench_to(&db, server.addr, Some(&wrong));
    assert_eq!(refused.status.code(), Some(2));
    // The client names its key by its id; the server has no key with it.
    let wrong_id = Key::read_file(&wrong).unwrap().id();
    assert_eq!(
        stderr_of(&refused),
        format!(
            "tcplab: {} refused the client: authentication failed: the client's key differs (this server has no key with id {wrong_id})\n",
            server.addr
        )
    );
    let keyless = bench_to(&db, server.addr, None);
    assert_eq!(keyless.status.code(), Some(2));
    assert_eq!(
        stderr_of(&keyless),
        format!(
            "tcplab: {} refused the client: authentication required: this server has a key (bench --key FILE)\n",
            server.addr
        )
    );
    assert!(!db.exists(), "a refused bench stored something");
    let served = bench_to(&db, server.addr, Some(&right));
    assert_success(&served);
    let log = server.log();
    let lines: Vec<&str> = log.lines().collect();
    assert!(
        lines[0].ends_with(&format!(
            "refused: authentication failed: the client's key differs (this server has no key with id {wrong_id})"
        )),
        "{log}"
    );
    assert!(
        lines[1].contains("refused: authentication required"),
        "{log}"
    );
    assert!(lines[2].contains("connected (tcplab "), "{log}");
    assert!(log.contains("tcp-rr receiver"), "{log}");
}

#[test]
fn a_keyed_bench_refuses_a_server_without_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = new_key(dir.path(), "k");
    let server = ServerProc::start(None, "127.0.0.1", &[]);
    let out = bench_to(&dir.path().join("x.db"), server.addr, Some(&key));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        format!(
            "tcplab: {} refused the client: authentication not set up: this server runs without --key (connect without --key)\n",
            server.addr
        )
    );
}

/// Runs the client's side of the handshake with `key`, as bench does, and
/// returns the control connection, every byte it sent and the server's
/// last answer.
fn handshake_recorded(addr: SocketAddr, key: &Key) -> (Keyed, Vec<u8>, Message) {
    let k = keyed_handshake(addr, key, "replay test");
    let (sent, answer) = (k.sent.clone(), k.answer.clone());
    (k, sent, answer)
}

fn hex_bytes(text: &str) -> Vec<u8> {
    engine::auth::from_hex(text).unwrap()
}

#[test]
fn a_recorded_handshake_replayed_on_a_new_connection_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = new_key(dir.path(), "k");
    let key = Key::read_file(&path).unwrap();
    let server = ServerProc::start(None, "127.0.0.1", &["--key", path.to_str().unwrap()]);
    let (_ctrl, recorded, answer) = handshake_recorded(server.addr, &key);
    assert!(matches!(answer, Message::Welcome { .. }), "{answer:?}");
    // The attacker has the bytes but not the key: it replays them whole.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&recorded).unwrap();
    let Message::AuthChallenge { .. } = read_message(&mut s).unwrap() else {
        panic!("no challenge")
    };
    assert_eq!(
        read_message(&mut s).unwrap(),
        Message::Error {
            message: "authentication failed: the client's key differs".into()
        }
    );
    assert!(
        matches!(read_message(&mut s), Err(engine::proto::FrameError::Closed)),
        "the server kept a refused connection open"
    );
    let log = server.log();
    assert_eq!(log.matches("connected (replay test)").count(), 1, "{log}");
    assert!(
        log.contains("refused: authentication failed: the client's key differs"),
        "{log}"
    );
}

#[test]
fn a_server_on_a_non_loopback_address_needs_a_key_or_insecure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let out = tcplab(&db, &["server", "--bind", "0.0.0.0", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        "tcplab: --bind 0.0.0.0 is not a loopback address: give --key FILE (tcplab key new), or --insecure to serve anyone who can reach it\n"
    );
    if !testkit::need_root("a veth address in a namespace needs root") {
        return;
    }
    // Building a namespace is work a timed test beside it would see.
    let _timing = testkit::timing_lock();
    struct Netns(String);
    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }
    let id = std::process::id();
    let ns = Netns(format!("tcplab-auth-{id}"));
    let ip_cmd = |args: &str| {
        let st = Command::new("ip")
            .args(args.split_whitespace())
            .status()
            .unwrap();
        assert!(st.success(), "ip {args}");
    };
    ip_cmd(&format!("netns add {}", ns.0));
    ip_cmd(&format!("-n {} link add va type veth peer name vb", ns.0));
    ip_cmd(&format!("-n {} addr add 10.93.0.1/24 dev va", ns.0));
    ip_cmd(&format!("-n {} link set va up", ns.0));
    ip_cmd(&format!("-n {} link set vb up", ns.0));
    let refused = Command::new("ip")
        .args(["netns", "exec", &ns.0])
        .arg(tcplab_command(&db).get_program())
        .args(["server", "--bind", "10.93.0.1", "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert_eq!(
        stderr_of(&refused),
        "tcplab: --bind 10.93.0.1 is not a loopback address: give --key FILE (tcplab key new), or --insecure to serve anyone who can reach it\n"
    );
    let insecure = ServerProc::start(Some(&ns.0), "10.93.0.1", &["--insecure"]);
    assert_eq!(insecure.addr.ip().to_string(), "10.93.0.1");
    drop(insecure);
    let key = new_key(dir.path(), "k");
    let keyed = ServerProc::start(Some(&ns.0), "10.93.0.1", &["--key", key.to_str().unwrap()]);
    assert_eq!(keyed.addr.ip().to_string(), "10.93.0.1");
}

/// An authenticated control connection to a keyed server, with a reverse
/// trial of `test` set up: the connection, the data port and the token.
fn reverse_trial(server: &ServerProc, key: &Key, test: TestKind) -> (Keyed, u16, Vec<u8>) {
    let (mut c, _, welcome) = handshake_recorded(server.addr, key);
    assert!(matches!(welcome, Message::Welcome { .. }), "{welcome:?}");
    let mut p = TrialParams::defaults(test);
    p.reverse = true;
    p.duration_s = Some(1.0);
    if test == TestKind::UdpStream {
        p.write_size = 1200;
        p.send_rate_bps = Some(10_000_000);
    }
    c.send(&Message::Setup { params: p }).unwrap();
    match c.recv().unwrap() {
        Message::Ready {
            ports,
            token: Some(token),
        } => (c, ports[0], hex_bytes(&token)),
        other => panic!("expected ready with a token, got {other:?}"),
    }
}

#[test]
fn a_data_connection_without_the_trials_token_is_refused() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let path = new_key(dir.path(), "k");
    let key = Key::read_file(&path).unwrap();
    let server = ServerProc::start(None, "127.0.0.1", &["--key", path.to_str().unwrap()]);
    let (_ctrl, port, token) = reverse_trial(&server, &key, TestKind::TcpStream);
    assert_eq!(token.len(), 32);
    let data = SocketAddr::new(server.addr.ip(), port);
    let mut buf = vec![0u8; 1 << 16];
    // From the client's own address, but with a wrong token, and with none.
    let mut wrong = TcpStream::connect(data).unwrap();
    wrong.write_all(&[0x5a; 32]).unwrap();
    wrong
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(
        wrong.read(&mut buf).unwrap_or(0),
        0,
        "sent data without the token"
    );
    let mut silent = TcpStream::connect(data).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(8)))
        .unwrap();
    assert_eq!(
        silent.read(&mut buf).unwrap_or(0),
        0,
        "sent data without the token"
    );
    let mut right = TcpStream::connect(data).unwrap();
    right.write_all(&token).unwrap();
    right
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(
        right.read(&mut buf).unwrap() > 0,
        "the token's holder got no data"
    );
}

#[test]
fn a_udp_hello_without_the_trials_token_gets_nothing() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let path = new_key(dir.path(), "k");
    let key = Key::read_file(&path).unwrap();
    let server = ServerProc::start(None, "127.0.0.1", &["--key", path.to_str().unwrap()]);
    let (_ctrl, port, token) = reverse_trial(&server, &key, TestKind::UdpStream);
    let data = SocketAddr::new(server.addr.ip(), port);
    let hello = engine::workloads::udp::header(u32::MAX - 1, 0, &engine::workloads::udp::NO_TAG);
    let hello = hello.to_vec();
    let mut buf = [0u8; 2048];
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    stranger
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    for forged in [hello.clone(), [hello.as_slice(), &[0x5a; 32]].concat()] {
        stranger.send_to(&forged, data).unwrap();
        let r = stranger.recv_from(&mut buf);
        assert!(r.is_err(), "sent to a hello without the token: {r:?}");
    }
    stranger
        .send_to(&[hello.as_slice(), &token].concat(), data)
        .unwrap();
    stranger
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let (n, from) = stranger.recv_from(&mut buf).unwrap();
    assert!(n > 0 && from == data, "{n} bytes from {from}");
}

#[test]
fn a_keyed_bench_runs_every_test_with_tokens() {
    // Real transfers: not beside a timed test.
    let _timing = testkit::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let key = new_key(dir.path(), "k");
    let server = ServerProc::start(None, "127.0.0.1", &["--key", key.to_str().unwrap()]);
    let db = dir.path().join("x.db");
    let to = server.addr.to_string();
    for test in [
        &["tcp-stream", "--reverse", "off,on"][..],
        &["tcp-rr"],
        &["tcp-crr"],
        &["http"],
        &["udp-stream", "--reverse", "off,on", "--send-rate", "50mbit"],
    ] {
        let mut args = vec!["bench"];
        args.extend(test);
        args.extend([
            "--to",
            &to,
            "--key",
            key.to_str().unwrap(),
            "--duration",
            "0.3s",
            "--repeat",
            "1",
            "--quiet",
        ]);
        let out = tcplab(&db, &args);
        assert_success(&out);
    }
}

/// A server that knows the client's key id (it is no secret) but not its
/// key: bench checks the server's proof before proving anything itself,
/// refuses in one line and tells the impostor why.
#[test]
fn an_impostor_that_answers_the_key_id_without_the_key_is_refused_by_bench() {
    let dir = tempfile::tempdir().unwrap();
    let key = new_key(dir.path(), "k");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let want_id = Key::read_file(&key).unwrap().id();
    let impostor = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let Message::AuthHello { key_id, nonce, .. } = read_message(&mut s).unwrap() else {
            panic!("no auth_hello")
        };
        assert_eq!(key_id.as_deref(), Some(want_id.as_str()));
        let guess = Key::generate().unwrap();
        let ours = fresh_nonce().unwrap();
        let theirs = nonce_from_hex(&nonce).unwrap();
        let challenge = Message::AuthChallenge {
            server: "impostor".into(),
            nonce: to_hex(&ours),
            proof: to_hex(&guess.proof(SERVER_LABEL, &theirs, &ours)),
        };
        write_message(&mut s, &challenge).unwrap();
        read_message(&mut s).unwrap()
    });
    let out = bench_to(&dir.path().join("x.db"), addr, Some(&key));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr_of(&out),
        "tcplab: authentication failed: the server's key differs\n"
    );
    assert_eq!(
        impostor.join().unwrap(),
        Message::Error {
            message: "authentication failed: the server's key differs".into()
        }
    );
    assert!(!dir.path().join("x.db").exists());
}
