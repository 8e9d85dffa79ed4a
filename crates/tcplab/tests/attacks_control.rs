//! Issue 28, items 2, 7 and 8: attacks on a real keyed `tcplab server`'s
//! control port, each run for real and bounded, each asserting it fails.
//!
//! - Lockout (item 2): silent connections that take every `--max-clients`
//!   slot, reopened as the server closes them: from 8 addresses (4 each), from
//!   32 addresses of one IPv6 /64 (a namespace of the test's own), and from
//!   the client's own address. A keyed client must be served (welcomed, and a
//!   real trial run) in every try.
//! - Log injection and flood (item 7): a key id carrying a forged
//!   "connected … with key" line and an ANSI clear-screen, a client name
//!   doing the same after a real handshake, and 1 MiB pre-auth frames on
//!   48 connections: no raw newline or escape reaches the log, the frames are
//!   refused at their header, the log stays small and the server's memory
//!   does not grow by tens of MB.
//! - On-path takeover (item 8): a relay forwards a real client's handshake,
//!   drops the client and sends its own `setup`: the server must not run it.

mod common;

use common::control::keyed_handshake;
use common::lockout::{enter_netns, ip, Flood, Netns};
use common::server::ServerChild;
use common::{tcplab, temp_db};
use engine::proto::{read_message, write_frame, write_message, FrameError, Message, VERSION};
use engine::{Client, Key};
use record::{TestKind, TrialParams};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A new key file in `dir`.
fn new_key(dir: &Path) -> PathBuf {
    let path = dir.join("lab.key");
    let out = tcplab(
        &dir.join("unused.db"),
        &["key", "new", "--out", path.to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    path
}

/// A short real trial.
fn small_trial() -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.duration_s = None;
    p.bytes = Some(256 << 10);
    p.write_size = 64 << 10;
    p.read_size = 64 << 10;
    p
}

/// `tries` tries of a keyed client `every` apart (from namespace `netns`):
/// each connects, authenticates and runs a real trial. The tries served,
/// and the failures' errors.
fn tries_served(
    addr: SocketAddr,
    key: &Key,
    tries: usize,
    every: Duration,
    netns: Option<&str>,
) -> (usize, Vec<String>) {
    let key = key.clone();
    let netns = netns.map(str::to_string);
    std::thread::spawn(move || {
        if let Some(ns) = &netns {
            enter_netns(ns);
        }
        let mut served = 0;
        let mut errors = Vec::new();
        for _ in 0..tries {
            let t0 = Instant::now();
            let r = Client::connect_with_key(addr, Duration::from_secs(3), Some(&key))
                .and_then(|mut c| c.run_trial(&small_trial(), &Arc::new(AtomicBool::new(false))));
            match r {
                Ok(o) if o.metrics["bytes"] == (256 << 10) as f64 => served += 1,
                Ok(o) => errors.push(format!("{} bytes", o.metrics["bytes"])),
                Err(e) => errors.push(e.to_string()),
            }
            std::thread::sleep(every.saturating_sub(t0.elapsed()));
        }
        (served, errors)
    })
    .join()
    .unwrap()
}

/// A keyed server on `bind` (in `netns`) whose handshakes time out after
/// 1 s, so the flood's connections are closed and reopened during the tries.
fn keyed_server(dir: &Path, netns: Option<&str>, bind: &str) -> (ServerChild, Key) {
    let path = new_key(dir);
    let key = Key::read_file(&path).unwrap();
    let server = ServerChild::start_unlogged(
        netns,
        bind,
        &["--key", path.to_str().unwrap(), "--handshake-timeout", "1s"],
    );
    (server, key)
}

/// Tries of the keyed client under each lockout pattern.
const TRIES: usize = 12;
/// Between tries: 12 tries span 3 s, three handshake timeouts.
const EVERY: Duration = Duration::from_millis(250);

#[test]
fn silent_connections_from_8_addresses_reopened_as_they_close_lock_no_one_out() {
    let _timing = testkit::timing_lock();
    let (dir, _db) = temp_db();
    let (server, key) = keyed_server(dir.path(), None, "127.0.0.1");
    // 32 = --max-clients' default: before, they held every slot.
    let sources: Vec<IpAddr> = (0..32)
        .map(|i| format!("127.0.28.{}", i / 4 + 1).parse().unwrap())
        .collect();
    let flood = Flood::start(sources, server.addr, None);
    let (served, errors) = tries_served(server.addr, &key, TRIES, EVERY, None);
    let reopened = flood.reopened();
    drop(flood);
    println!("8 addresses × 4 silent connections: {served} of {TRIES} tries served; {reopened} connections reopened");
    assert!(
        reopened >= 32,
        "the flood was not closed and reopened: {reopened}"
    );
    assert_eq!(served, TRIES, "{errors:?}");
}

#[test]
fn silent_connections_from_the_clients_own_address_lock_it_out_no_more() {
    let _timing = testkit::timing_lock();
    let (dir, _db) = temp_db();
    let (server, key) = keyed_server(dir.path(), None, "127.0.0.1");
    // A NAT neighbour: 4 = --max-per-address's default.
    let sources = vec!["127.0.0.1".parse().unwrap(); 4];
    let flood = Flood::start(sources, server.addr, None);
    let (served, errors) = tries_served(server.addr, &key, TRIES, EVERY, None);
    let reopened = flood.reopened();
    drop(flood);
    println!("4 silent connections from the client's address: {served} of {TRIES} tries served; {reopened} reopened");
    assert!(reopened >= 4, "{reopened}");
    assert_eq!(served, TRIES, "{errors:?}");
}

#[test]
fn silent_connections_from_32_addresses_of_one_slash_64_lock_no_one_out() {
    if !testkit::need_root("IPv6 addresses in a namespace of the test's own need root") {
        return;
    }
    let _timing = testkit::timing_lock();
    let ns = Netns::create("ctl64");
    ip(&[
        "-n",
        &ns.0,
        "addr",
        "add",
        "2001:db8:28::1/128",
        "dev",
        "lo",
        "nodad",
    ]);
    let sources: Vec<IpAddr> = (1..=32)
        .map(|i| format!("2001:db8:28:64::{i:x}").parse().unwrap())
        .collect();
    for a in &sources {
        ip(&[
            "-n",
            &ns.0,
            "addr",
            "add",
            &format!("{a}/128"),
            "dev",
            "lo",
            "nodad",
        ]);
    }
    let (dir, _db) = temp_db();
    let (server, key) = keyed_server(dir.path(), Some(&ns.0), "2001:db8:28::1");
    let flood = Flood::start(sources, server.addr, Some(ns.0.clone()));
    let (served, errors) = tries_served(server.addr, &key, TRIES, EVERY, Some(&ns.0));
    let reopened = flood.reopened();
    drop(flood);
    println!(
        "32 silent connections from one /64: {served} of {TRIES} tries served; {reopened} reopened"
    );
    assert!(reopened >= 32, "{reopened}");
    assert_eq!(served, TRIES, "{errors:?}");
}

/// The server's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap()
}

#[test]
fn forged_log_lines_ansi_escapes_and_megabyte_frames_do_not_reach_the_log() {
    let _timing = testkit::timing_lock();
    let (dir, _db) = temp_db();
    let path = new_key(dir.path());
    let key = Key::read_file(&path).unwrap();
    let server = ServerChild::start(None, "127.0.0.1", &["--key", path.to_str().unwrap()]);
    let forged =
        "\n2026-11-28T15:00:00.000Z 10.9.9.9:4242 connected (tcplab 0.1.0) with key lab\x1b[2J";
    // A key id carrying a forged line and a clear-screen.
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = Message::AuthHello {
        client: format!("evil{forged}"),
        nonce: "ab".repeat(32),
        key_id: Some(format!("0123456789abcdef{forged}")),
        early: None,
    };
    write_message(&mut s, &hello).unwrap();
    let Ok(Message::Error { message }) = read_message(&mut s) else {
        panic!("the forged key id was not refused")
    };
    assert!(message.contains("key id is not 16 hex digits"), "{message}");
    // The same in a client name, after a real handshake.
    let k = keyed_handshake(server.addr, &key, &format!("evil{forged}"));
    assert!(
        matches!(k.answer, Message::Welcome { .. }),
        "{:?}",
        k.answer
    );
    drop(k);

    // 48 connections, each a 1 MiB auth_hello.
    std::thread::sleep(Duration::from_millis(300));
    let pid = server.child.id();
    let before = rss_kib(pid);
    let big = format!(
        r#"{{"type":"auth_hello","client":"x","nonce":"{}","key_id":"{}"}}"#,
        "ab".repeat(32),
        "a".repeat(1 << 20)
    );
    let mut refused = 0;
    let mut conns = Vec::new();
    for _ in 0..48 {
        let mut c = TcpStream::connect(server.addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        // The server closes after the header: the rest may not go.
        let _ = write_frame(&mut c, VERSION, big.as_bytes());
        match read_message(&mut c) {
            Ok(Message::Error { message }) => {
                assert!(
                    message.contains("exceeds the limit of 4096 before authentication"),
                    "{message}"
                );
                refused += 1;
            }
            Err(FrameError::Io(e)) if e.kind() == ErrorKind::ConnectionReset => refused += 1,
            other => panic!("a 1 MiB pre-auth frame: {other:?}"),
        }
        conns.push(c);
    }
    let after = rss_kib(pid);
    drop(conns);
    // The rate limiter says how many lines it dropped once it may.
    std::thread::sleep(Duration::from_millis(1500));
    let (log, json) = server.logs();
    println!(
        "48 × 1 MiB pre-auth frames: {refused} refused; server RSS {before} -> {after} KiB; text log {} bytes, {} lines",
        log.len(),
        log.lines().count()
    );
    println!("{log}");
    assert_eq!(refused, 48);
    assert!(after < before + 8 * 1024, "RSS {before} -> {after} KiB");
    assert!(!log.contains('\x1b'), "a raw escape in the log:\n{log}");
    // One line per event: every line starts with its time.
    for line in log.lines() {
        assert!(
            line.starts_with("20") && line.as_bytes()[4] == b'-',
            "{line:?}"
        );
        // The forged event is text inside the real line, never a line.
        let event = line.split_once(' ').map_or("", |(_, rest)| rest);
        assert!(!event.starts_with("10.9.9.9:4242"), "forged: {line:?}");
    }
    let connected: Vec<&str> = log.lines().filter(|l| l.contains(" connected (")).collect();
    assert_eq!(connected.len(), 1, "{connected:?}");
    assert!(connected[0].contains("(evil\\n2026-11-28T15:00:00.000Z 10.9.9.9:4242 connected (tcplab 0.1.0) with key lab\\u{1b}[2J) with key lab"), "{}", connected[0]);
    // Rate-limited: 20 lines from 127.0.0.1, then the count of the rest.
    assert!(log.len() < 16 << 10, "{} bytes of log", log.len());
    let dropped: u64 = json
        .iter()
        .filter(|e| e["event"] == "suppressed")
        .map(|e| e["dropped"].as_u64().unwrap())
        .sum();
    let refusals = json.iter().filter(|e| e["event"] == "refused").count() as u64;
    assert_eq!(refusals + dropped, 49, "{json:?}");
    assert!(dropped >= 25, "{dropped}");
}

/// Forwards one frame from `from` to `to`; its bytes.
fn forward_frame(from: &mut TcpStream, to: &mut TcpStream) -> Vec<u8> {
    let mut head = [0u8; 10];
    from.read_exact(&mut head).unwrap();
    let len = u32::from_be_bytes(head[6..10].try_into().unwrap()) as usize;
    let mut frame = head.to_vec();
    frame.resize(10 + len, 0);
    from.read_exact(&mut frame[10..]).unwrap();
    to.write_all(&frame).unwrap();
    frame
}

#[test]
fn a_relay_that_forwards_the_handshake_cannot_run_trials_under_the_key() {
    let _timing = testkit::timing_lock();
    let (dir, _db) = temp_db();
    let path = new_key(dir.path());
    let key = Key::read_file(&path).unwrap();
    let server = ServerChild::start(None, "127.0.0.1", &["--key", path.to_str().unwrap()]);
    let relay = TcpListener::bind("127.0.0.1:0").unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let to = server.addr;
    let on_path = std::thread::spawn(move || {
        let (mut client, _) = relay.accept().unwrap();
        let mut up = TcpStream::connect(to).unwrap();
        up.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        forward_frame(&mut client, &mut up); // auth_hello
        forward_frame(&mut up, &mut client); // auth_challenge
        forward_frame(&mut client, &mut up); // auth_proof
        forward_frame(&mut up, &mut client); // welcome
                                             // The client is dropped; the relay runs its own trial.
        drop(client);
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.duration_s = Some(1.0);
        write_message(&mut up, &Message::Setup { params: p }).unwrap();
        let mut answers = Vec::new();
        loop {
            match read_message(&mut up) {
                Ok(m) => answers.push(format!("{m:?}")),
                Err(e) => {
                    answers.push(format!("end: {e}"));
                    break;
                }
            }
        }
        answers
    });
    // The real client is welcomed through the relay.
    let c = Client::connect_with_key(relay_addr, Duration::from_secs(5), Some(&key));
    assert!(c.is_ok(), "{:?}", c.err());
    let answers = on_path.join().unwrap();
    println!("the relay's setup got: {answers:?}");
    assert!(
        !answers.iter().any(|a| a.starts_with("Ready")),
        "the relay ran a trial: {answers:?}"
    );
    // The server ended the connection on the untagged frame.
    assert!(answers.last().unwrap().starts_with("end:"), "{answers:?}");
    let json = server.json_log();
    assert!(
        !json.iter().any(|e| e["event"] == "trial"),
        "a trial ran: {json:?}"
    );
}

/// Review F4 of issue 28: connections that pipeline thousands of frames
/// before authenticating are each answered at most four times and closed
/// (the fifth frame says why), so none holds the one handshake loop; a key
/// holder's handshakes meanwhile take the usual few milliseconds.
#[test]
fn connections_pipelining_frames_before_the_handshake_are_closed_after_four() {
    let _timing = testkit::timing_lock();
    let (dir, _db) = temp_db();
    let path = new_key(dir.path());
    let key = Key::read_file(&path).unwrap();
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &["--key", path.to_str().unwrap()]);
    let mut junk = Vec::new();
    for _ in 0..20_000 {
        write_frame(&mut junk, VERSION, br#"{"type":"setup"}"#).unwrap();
    }
    let junk = Arc::new(junk);
    let to = server.addr;
    let attackers: Vec<_> = (0..8)
        .map(|_| {
            let junk = junk.clone();
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(to).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let t0 = Instant::now();
                // The server closes with most of it unread: the writes end
                // in a reset.
                let _ = s.write_all(&junk);
                let mut replies = Vec::new();
                let end = loop {
                    match read_message(&mut s) {
                        Ok(Message::Error { message }) => replies.push(message),
                        Ok(other) => panic!("a reply before authentication: {other:?}"),
                        Err(e) => break e.to_string(),
                    }
                };
                (replies, end, t0.elapsed())
            })
        })
        .collect();
    let mut handshakes = Vec::new();
    for _ in 0..8 {
        let t0 = Instant::now();
        let k = keyed_handshake(server.addr, &key, "meanwhile");
        assert!(
            matches!(k.answer, Message::Welcome { .. }),
            "{:?}",
            k.answer
        );
        handshakes.push(t0.elapsed());
    }
    for a in attackers {
        let (replies, end, took) = a.join().unwrap();
        println!(
            "{} replies to 20,000 pre-auth frames, then {end:?} after {took:?}; last {:?}",
            replies.len(),
            replies.last()
        );
        assert!(replies.len() <= 5, "{replies:?}");
        if replies.len() == 5 {
            assert!(
                replies[4].contains("more than 4 frames before the handshake completed"),
                "{replies:?}"
            );
        }
        assert!(took < Duration::from_secs(3), "{took:?}");
    }
    handshakes.sort();
    println!("keyed handshakes meanwhile: {handshakes:?}");
    assert!(handshakes[4] < Duration::from_millis(500), "{handshakes:?}");
}
