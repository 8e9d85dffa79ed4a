//! `tcplab server` against the budget attacks of issue 28 (items 3, 4, 6,
//! 9 and 10's "memory is not returned"): each runs against a real server
//! child on loopback, and asserts the attack now fails: a trial's buffers
//! are counted (and refused in one line), descriptors are budgeted per key,
//! a key's rate holds across its connections and is measured and enforced,
//! a trial over its CPU budget is ended, and memory a trial raised is
//! given back.

mod common;

use common::server::{Constraints, ServerChild};
use common::{tcplab, temp_db, usage_error_line};
use engine::proto::{read_message, write_message, Message};
use engine::{Client, Key};
use record::{TestKind, TrialParams};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.trim().split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc status"))
}

/// Resident KiB of `pid`.
fn rss_kib(pid: u32) -> u64 {
    status(pid, "VmRSS:")
}

/// Resets `pid`'s peak RSS to its current RSS.
fn reset_peak(pid: u32) {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").unwrap();
}

fn trial(test: TestKind, parallel: u32, write: u64, read: u64) -> TrialParams {
    let mut p = TrialParams::defaults(test);
    p.parallel = parallel;
    if test != TestKind::Http {
        p.write_size = write;
    }
    p.read_size = read;
    p.duration_s = Some(0.5);
    p
}

fn run(addr: SocketAddr, key: Option<&Key>, p: &TrialParams) -> Result<f64, String> {
    let mut c =
        Client::connect_with_key(addr, Duration::from_secs(5), key).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let o = c.run_trial(p, &stop).map_err(|e| e.to_string())?;
    Ok(o.metrics.get("bytes").copied().unwrap_or(0.0))
}

/// Item 3: the attack `tcp-rr --parallel 128 --write-size 16M --read-size 1`
/// (2,073 MiB RSS per trial before) is refused in one line, and the server's
/// RSS does not move.
#[test]
fn the_rr_buffer_attack_is_refused_in_one_line() {
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let pid = server.child.id();
    let before = rss_kib(pid);
    let (_dir, db) = temp_db();
    let to = server.addr.to_string();
    let args = [
        "bench",
        "tcp-rr",
        "--to",
        &to,
        "--parallel",
        "128",
        "--write-size",
        "16M",
        "--read-size",
        "1",
        "--duration",
        "2",
        "--repeat",
        "1",
    ];
    let out = tcplab(&db, &args);
    assert_eq!(
        usage_error_line(&out, "the rr buffer attack"),
        "tcplab: server refused the trial: server limit: tcp-rr --parallel 128 --write-size 16M needs 2.0 GiB of buffers on the server, over the server's 256 MiB per client (--max-client-memory)\n"
    );
    let after = rss_kib(pid);
    assert!(after < before + 16 * 1024, "RSS {before} → {after} KiB");
}

/// Item 3: for every test, the server's peak RSS during a trial stays
/// within what `trial_cost` counted for it (plus thread stacks' slack), and
/// the big-buffer tests really allocate most of it (the model is not a
/// loose guess). Item 10: after a big trial the RSS returns near its level
/// before.
#[test]
fn each_tests_buffers_are_counted_and_given_back() {
    let _timing = testkit::timing_lock();
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let pid = server.child.id();
    let mut fwd = trial(TestKind::TcpStream, 4, 8 << 20, 8 << 20);
    fwd.send_rate_bps = None;
    let mut rev = trial(TestKind::TcpStream, 4, 8 << 20, 8 << 20);
    rev.reverse = true;
    let mut udp = trial(TestKind::UdpStream, 8, 60_000, 60_000);
    udp.send_rate_bps = Some(50_000_000);
    let mut udp_rev = udp.clone();
    udp_rev.reverse = true;
    let cases: [(&str, TrialParams, bool); 7] = [
        ("tcp-stream", fwd, true),
        ("tcp-stream --reverse", rev, false),
        ("tcp-rr", trial(TestKind::TcpRr, 4, 8 << 20, 1), true),
        ("tcp-crr", trial(TestKind::TcpCrr, 2, 4 << 20, 1), true),
        ("http", trial(TestKind::Http, 4, 0, 1), false),
        ("udp-stream", udp, false),
        ("udp-stream --reverse", udp_rev, false),
    ];
    for (name, p, dense) in cases {
        let model_kib = engine::trial_cost::server_cost(&p).memory / 1024;
        std::thread::sleep(Duration::from_millis(300));
        let base = rss_kib(pid);
        reset_peak(pid);
        run(server.addr, None, &p).unwrap_or_else(|e| panic!("{name}: {e}"));
        let peak = status(pid, "VmHWM:").saturating_sub(base);
        eprintln!("{name}: peak RSS growth {peak} KiB, counted {model_kib} KiB");
        assert!(
            peak <= model_kib + 4 * 1024,
            "{name}: the trial took {peak} KiB, more than the {model_kib} KiB counted"
        );
        if dense {
            assert!(
                peak * 2 >= model_kib,
                "{name}: the trial took {peak} KiB of the {model_kib} KiB counted"
            );
        }
    }
    // A big trial's memory is given back once it ends.
    std::thread::sleep(Duration::from_millis(300));
    let before = rss_kib(pid);
    let mut big = trial(TestKind::TcpRr, 8, 16 << 20, 1);
    big.duration_s = Some(1.0);
    reset_peak(pid);
    run(server.addr, None, &big).unwrap();
    let peak = status(pid, "VmHWM:");
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(pid);
    eprintln!("RSS before {before} KiB, peak {peak} KiB, after {after} KiB");
    assert!(peak > before + 100 * 1024, "the big trial did not run big");
    assert!(
        after < before + 16 * 1024,
        "RSS {before} KiB before, {after} KiB after the trial"
    );
}

/// A directory with keys `attacker` and `victim` (and `b`, 20 Mbit/s) and
/// their keys file.
struct Keys {
    dir: tempfile::TempDir,
}

impl Keys {
    fn new(extra: &str) -> Keys {
        let dir = tempfile::tempdir().unwrap();
        let mut toml = String::new();
        for name in ["attacker", "victim", "b"] {
            Key::generate()
                .unwrap()
                .write_new(&dir.path().join(format!("{name}.key")))
                .unwrap();
        }
        toml += "[[key]]\nfile = \"attacker.key\"\n";
        toml += extra;
        toml += "\n[[key]]\nfile = \"victim.key\"\n";
        toml += "\n[[key]]\nfile = \"b.key\"\nmax_rate = \"20mbit\"\n";
        std::fs::write(dir.path().join("keys.toml"), toml).unwrap();
        Keys { dir }
    }

    /// A server child on loopback with these keys.
    fn server(&self) -> ServerChild {
        self.server_with(&[])
    }

    /// A server of these keys with `extra` flags.
    fn server_with(&self, extra: &[&str]) -> ServerChild {
        let toml = self.toml();
        let mut args = vec!["--keys", toml.to_str().unwrap()];
        args.extend_from_slice(extra);
        ServerChild::start_unlogged(None, "127.0.0.1", &args)
    }

    fn toml(&self) -> PathBuf {
        self.dir.path().join("keys.toml")
    }

    fn key(&self, name: &str) -> Key {
        Key::read_file(&self.dir.path().join(format!("{name}.key"))).unwrap()
    }
}

/// Item 4: under an open-file limit of 600, twelve keyed UDP trials of 48
/// flows (576 sockets) held by one key cannot take what a legitimate
/// trial of another key needs: the key gets at most half of what the limit
/// leaves for trials, the rest is refused in one line, and the victim's
/// trial runs.
#[test]
fn many_wide_udp_trials_of_one_key_leave_descriptors_for_another() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let toml = keys.toml();
    // 13 clients from 127.0.0.1 handshake at once, past the default of 8
    // pending per address: each proves its key in its first frame, so
    // none is closed to make room for another.
    let server = ServerChild::start_constrained(
        None,
        "127.0.0.1",
        &["--keys", toml.to_str().unwrap(), "--max-per-address", "16"],
        Constraints {
            nofile: Some((600, 600)),
            cpu: None,
        },
    );
    let attacker = keys.key("attacker");
    let mut p = trial(TestKind::UdpStream, 48, 1000, 1000);
    p.send_rate_bps = Some(100_000);
    p.duration_s = Some(6.0);
    let addr = server.addr;
    let attacks: Vec<_> = (0..12)
        .map(|_| {
            let (k, p) = (attacker.clone(), p.clone());
            std::thread::spawn(move || run(addr, Some(&k), &p))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut v = trial(TestKind::UdpStream, 8, 1000, 1000);
    v.send_rate_bps = Some(1_000_000);
    let victim = run(addr, Some(&keys.key("victim")), &v);
    let results: Vec<_> = attacks.into_iter().map(|h| h.join().unwrap()).collect();
    let refused: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    eprintln!(
        "attack trials: {} ran, {} refused: {:?}",
        12 - refused.len(),
        refused.len(),
        refused.first()
    );
    assert!(victim.is_ok(), "the victim's trial failed: {victim:?}");
    assert!(!refused.is_empty(), "every attack trial ran");
    assert!(
        refused
            .iter()
            .all(|e| e.contains("descriptors") && e.contains("for key \"attacker\"")),
        "{refused:?}"
    );
}

/// Item 6: a key with `max_rate` 20mbit gets at most its rate in total
/// from 4 and from 32 connections each asking for all of it.
#[test]
fn a_keys_rate_holds_across_its_connections() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let toml = keys.toml();
    let server = ServerChild::start_unlogged(
        None,
        "127.0.0.1",
        &["--keys", toml.to_str().unwrap(), "--max-per-address", "32"],
    );
    let b = keys.key("b");
    let mut p = trial(TestKind::TcpStream, 1, 128 << 10, 128 << 10);
    p.send_rate_bps = Some(20_000_000);
    p.duration_s = Some(1.5);
    for conns in [4, 32] {
        let t0 = Instant::now();
        let addr = server.addr;
        let hs: Vec<_> = (0..conns)
            .map(|_| {
                let (k, p) = (b.clone(), p.clone());
                std::thread::spawn(move || run(addr, Some(&k), &p))
            })
            .collect();
        let results: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        let secs = t0.elapsed().as_secs_f64();
        let bytes: f64 = results.iter().filter_map(|r| r.as_ref().ok()).sum();
        let ran = results.iter().filter(|r| r.is_ok()).count();
        let total_mbit = bytes * 8.0 / secs / 1e6;
        eprintln!("{conns} connections: {ran} trials ran, {total_mbit:.1} Mbit/s in total over {secs:.1} s");
        assert!(
            total_mbit <= 22.0,
            "{conns} connections took {total_mbit:.1} Mbit/s"
        );
        assert!(ran >= 1);
        let why = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert!(
            why.contains("key \"b\" allows at most 20mbit in total (max_rate)")
                || why.contains("key \"b\" allows at most 16 clients")
                // 32 handshakes of one key at once from one address pass
                // twice --max-pending-per-address: its oldest make room.
                || why.contains("key \"b\" holds more than its 2 (a quarter)"),
            "{why}"
        );
    }
}

/// Item 6: tcp-rr under a key's 20mbit is held to it: with 16M writes
/// (16.3 Gbit/s before) it is refused before it runs, as two such writes
/// are more than 2 s of the grant; with 1M writes it is ended once it
/// moves more than the rate the server granted.
#[test]
fn tcp_rr_with_huge_writes_is_held_to_the_keys_rate() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let mut p = trial(TestKind::TcpRr, 1, 16 << 20, 1);
    p.duration_s = Some(5.0);
    let e = run(keys.server().addr, Some(&keys.key("b")), &p).unwrap_err();
    assert!(
        e.contains("may have 33554432 B in flight at once, more than 2 s of the 20mbit granted"),
        "{e}"
    );
    p.write_size = 1 << 20;
    let t0 = Instant::now();
    let e = run(keys.server().addr, Some(&keys.key("b")), &p).unwrap_err();
    eprintln!("tcp-rr 1M under 20mbit: {e} after {:?}", t0.elapsed());
    assert!(
        e.contains("key \"b\": the trial moved") && e.contains("20mbit the server granted"),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3));
}

/// Item 6: a forward stream that declares `--send-rate 20mbit` and sends
/// unpaced (39.6 Gbit/s accepted before) is ended with a one-line reason.
#[test]
fn an_unpaced_stream_that_declared_a_rate_is_ended() {
    let _timing = testkit::timing_lock();
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let mut c = TcpStream::connect(server.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write_message(
        &mut c,
        &Message::Hello {
            client: "attacks_budget".into(),
        },
    )
    .unwrap();
    assert!(matches!(
        read_message(&mut c).unwrap(),
        Message::Welcome { .. }
    ));
    let mut p = trial(TestKind::TcpStream, 1, 128 << 10, 128 << 10);
    p.send_rate_bps = Some(20_000_000);
    p.duration_s = Some(5.0);
    write_message(&mut c, &Message::Setup { params: p }).unwrap();
    let (port, token) = match read_message(&mut c).unwrap() {
        Message::Ready { ports, token } => (ports[0], token.expect("every trial has a token")),
        other => panic!("expected ready, got {other:?}"),
    };
    let t0 = Instant::now();
    let mut data = TcpStream::connect(("127.0.0.1", port)).unwrap();
    // Every data connection begins with the trial's token.
    data.write_all(&engine::auth::from_hex(&token).expect("a hex token"))
        .unwrap();
    data.set_write_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let block = vec![0u8; 1 << 20];
    let mut sent = 0u64;
    while t0.elapsed() < Duration::from_secs(5) {
        match data.write(&block) {
            Ok(n) => sent += n as u64,
            Err(_) => break,
        }
    }
    let cut_off = t0.elapsed();
    let why = match read_message(&mut c).unwrap() {
        Message::Error { message } => message,
        other => panic!("expected the trial to be ended, got {other:?}"),
    };
    eprintln!(
        "unpaced after declaring 20mbit: {why}; {} MB sent, cut off after {cut_off:?}",
        sent >> 20
    );
    assert!(
        why.contains("the trial moved") && why.contains("20mbit the server granted"),
        "{why}"
    );
    assert!(!why.contains('\n'));
    assert!(cut_off < Duration::from_secs(4), "{cut_off:?}");
}

/// Item 9: `--read-size 1`, and `--recv-work 10ms` on 8 flows, under a
/// key's `max_cpu` 0.5 are ended with a one-line reason, and the server's
/// CPU over the trial stays within the budget plus one window at two CPUs
/// (they took 1.18 and 1.67 CPU-s/s for as long as they ran before; a
/// recv-work trial runs until its buffered data is worked through, close
/// to a minute here). On a host busy with other work the trial gets less
/// CPU than its budget and ends later: the bound on CPU holds either way.
#[test]
fn trials_over_their_cpu_budget_are_ended() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("max_cpu = 0.5\n");
    let server = keys.server();
    let k = keys.key("attacker");
    let mut small_reads = trial(TestKind::TcpStream, 1, 128 << 10, 1);
    small_reads.duration_s = Some(8.0);
    let mut work = trial(TestKind::TcpStream, 8, 128 << 10, 128 << 10);
    work.recv_work_ns_per_kb = Some(10_000_000);
    work.duration_s = Some(8.0);
    for (name, p) in [
        ("--read-size 1", small_reads),
        ("--recv-work 10ms × 8", work),
    ] {
        let (t0, c0) = (Instant::now(), server.cpu_s());
        let e = run(server.addr, Some(&k), &p).unwrap_err();
        let (secs, used) = (t0.elapsed().as_secs_f64(), server.cpu_s() - c0);
        eprintln!("{name}: {e}; the server used {used:.2} CPU-s in {secs:.1} s");
        assert!(
            e.contains("CPU-seconds per second") && e.contains("over its budget of 0.5"),
            "{e}"
        );
        assert!(
            used <= 0.5 * secs + 4.0,
            "{name}: {used:.2} CPU-s in {secs:.1} s"
        );
    }
}

/// Item 9's other half: while a key's `--recv-work 10ms × 8` trial runs
/// into its `max_cpu` 0.5 (it took 1.67 CPU-s/s before, and another
/// client fell from 28.1 to 12.6 Gbit/s), another key's 10 s stream keeps
/// most of its throughput: the attack is ended within its window, so at
/// most its first seconds overlap. Unloaded runs before and after it.
#[test]
fn a_cpu_hungry_trial_leaves_another_client_its_throughput() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("max_cpu = 0.5\n");
    let server = keys.server();
    let (attacker, victim) = (keys.key("attacker"), keys.key("victim"));
    let mut stream = trial(TestKind::TcpStream, 1, 128 << 10, 128 << 10);
    stream.duration_s = Some(10.0);
    let mut work = trial(TestKind::TcpStream, 8, 128 << 10, 128 << 10);
    work.recv_work_ns_per_kb = Some(10_000_000);
    work.duration_s = Some(3.0);
    let addr = server.addr;
    let gbit = |bytes: f64| bytes * 8.0 / 10.0 / 1e9;
    let alone_before = gbit(run(addr, Some(&victim), &stream).unwrap());
    let attack = std::thread::spawn(move || run(addr, Some(&attacker), &work));
    std::thread::sleep(Duration::from_millis(300));
    let loaded = gbit(run(addr, Some(&victim), &stream).unwrap());
    let t0 = Instant::now();
    let ended = attack.join().unwrap().unwrap_err();
    eprintln!(
        "the attack's client returned {:?} after the loaded run",
        t0.elapsed()
    );
    let alone_after = gbit(run(addr, Some(&victim), &stream).unwrap());
    let alone = (alone_before + alone_after) / 2.0;
    eprintln!(
        "another key's stream: {alone_before:.2} and {alone_after:.2} Gbit/s alone, {loaded:.2} beside the attack \
         ({:.2}×); the attack: {ended}",
        loaded / alone
    );
    assert!(ended.contains("over its budget of 0.5"), "{ended}");
    // Before the budget the attack ran on and the other client got 0.45×;
    // now at most the window's 2 s of its 10 s overlap.
    assert!(
        loaded >= 0.65 * alone,
        "{loaded:.2} Gbit/s beside the attack against {alone:.2} alone"
    );
}

/// Item 6 for connections shorter than the server's look at a trial (ten
/// a second): http page loads and tcp-crr transactions of 256 KiB each
/// way, 4 at a time, under a key's 20mbit. Before their closed
/// connections were counted, http moved 3.8 Gbit/s for its 3 s.
#[test]
fn short_connections_are_held_to_the_keys_rate() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    for test in [TestKind::Http, TestKind::TcpCrr] {
        // A server each: the first trial's excess is the key's debt there.
        let server = keys.server();
        let mut p = trial(test, 4, 256 << 10, 256 << 10);
        p.duration_s = Some(3.0);
        let t0 = Instant::now();
        let e = run(server.addr, Some(&keys.key("b")), &p).unwrap_err();
        eprintln!("{test:?} under 20mbit: {e} after {:?}", t0.elapsed());
        assert!(
            e.contains("key \"b\": the trial moved") && e.contains("20mbit the server granted"),
            "{e}"
        );
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }
}

/// Trials shorter than the server's first look at them (a tenth of a
/// second): each is held to the key's rate once its threads have ended,
/// and what it took beyond its grant is the key's debt: its next trial
/// waits until that is paid back. Before, 0.05 s of tcp-crr transactions
/// of 256 KiB each way under a key's 20mbit moved 88 MB and was reported
/// as run, and the next could do the same at once.
#[test]
fn a_trial_shorter_than_the_first_look_is_held_to_the_keys_rate() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let server = keys.server();
    let mut p = trial(TestKind::TcpCrr, 4, 256 << 10, 256 << 10);
    p.duration_s = Some(0.05);
    let e = run(server.addr, Some(&keys.key("b")), &p).unwrap_err();
    eprintln!("0.05 s of tcp-crr under 20mbit: {e}");
    assert!(
        e.contains("key \"b\": the trial moved") && e.contains("20mbit the server granted"),
        "{e}"
    );
    // The next trial of the key, however small, waits for the debt.
    let mut small = trial(TestKind::TcpCrr, 1, 100, 100);
    small.duration_s = Some(0.05);
    let e = run(server.addr, Some(&keys.key("b")), &small).unwrap_err();
    eprintln!("then: {e}");
    assert!(
        e.contains("key \"b\"'s recent trials took")
            && e.contains("beyond their grants")
            && e.contains("the next may start in"),
        "{e}"
    );
    // Another key's trial runs.
    let bytes = run(server.addr, Some(&keys.key("victim")), &small).unwrap();
    assert!(bytes > 0.0);
}

/// The watch's slack is two writes per flow: under a key's 20mbit, 2 flows
/// of 16 MiB writes could burst 64 MiB (26 s of the grant) before a look
/// could end them. Such a trial is refused before it runs; one whose
/// writes fit in 2 s of the grant runs.
#[test]
fn writes_too_large_for_the_grant_are_refused_before_they_burst() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let server = keys.server();
    let mut p = trial(TestKind::TcpStream, 2, 16 << 20, 128 << 10);
    p.send_rate_bps = Some(10_000_000);
    let e = run(server.addr, Some(&keys.key("b")), &p).unwrap_err();
    assert!(
        e.contains("key \"b\": 2 flows of 16777216 B writes may have 67108864 B in flight at once, more than 2 s of the 20mbit granted"),
        "{e}"
    );
    p.write_size = 128 << 10;
    let bytes = run(server.addr, Some(&keys.key("b")), &p).unwrap();
    assert!(bytes > 0.0);
}

/// `--load` workers on the server burn CPU for the trial: they count in
/// its CPU budget. Eight of them under a key's `max_cpu 0.5` ran as "ok"
/// at 4.3 × the budget and cut another key's stream to 0.21 × before; now
/// a trial asking more workers than its budget is refused before it runs.
#[test]
fn load_workers_on_the_server_count_in_the_trials_cpu_budget() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("max_cpu = 0.5\n");
    let server = keys.server();
    let mut p = trial(TestKind::TcpStream, 1, 128 << 10, 128 << 10);
    p.send_rate_bps = Some(10_000_000);
    p.load = Some(record::LoadSpec {
        side: record::LoadSide::Receiver,
        workers: 8,
    });
    let e = run(server.addr, Some(&keys.key("attacker")), &p).unwrap_err();
    assert!(
        e.contains("key \"attacker\": --load with 8 workers on the server would use 8 CPU-seconds per second, over the trial's budget of 0.5"),
        "{e}"
    );
    // Without a CPU limit of its own, a key's trial with one worker runs.
    p.load = Some(record::LoadSpec {
        side: record::LoadSide::Receiver,
        workers: 1,
    });
    p.duration_s = Some(0.5);
    assert!(run(server.addr, Some(&keys.key("victim")), &p).unwrap() > 0.0);
}

/// A key's `max_cpu` holds for its running trials together, by what they
/// use (see `trials_together_are_held_to`); a light second trial runs
/// beside a first (when each trial reserved what was left of the key's
/// budget, the second was refused, and a key ran one trial at a time).
#[test]
fn a_keys_max_cpu_holds_for_all_its_trials_together() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("max_cpu = 0.5\n");
    let server = keys.server();
    trials_together_are_held_to(&keys, &server, "(max_cpu)");
    beside_a_running_trial(&keys, server.addr, None, |second| {
        assert!(second.unwrap() > 0.0);
    });
}

/// With several keys, a key without `max_cpu` holds its running trials
/// together to `--max-trial-cpu` (three trials at about 1.2 CPU-s/s each,
/// each under its own budget, took both of this host's CPUs before, and
/// another key's stream fell 29%).
#[test]
fn a_keys_trials_together_are_held_to_one_trials_cpu() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let server = keys.server_with(&["--max-trial-cpu", "0.5"]);
    trials_together_are_held_to(
        &keys,
        &server,
        "(--max-trial-cpu for each key's trials together)",
    );
}

/// Three 4 s streams of key "attacker" at once, each using about 0.34
/// CPU-s/s on the server (paced at 8 Mbit/s, with `--recv-work` of 350 µs
/// per KB: 0.33 CPU-s/s of work), each under the budget of 0.5: together
/// they are over it, so the busiest is ended, one line naming `field`,
/// until the rest fit (two together are still over: one runs to its end).
fn trials_together_are_held_to(keys: &Keys, server: &ServerChild, field: &str) {
    let mut p = trial(TestKind::TcpStream, 1, 16 << 10, 16 << 10);
    p.send_rate_bps = Some(8_000_000);
    p.recv_work_ns_per_kb = Some(350_000);
    p.duration_s = Some(4.0);
    let trials: Vec<_> = (0..3)
        .map(|_| {
            let (k, p, addr) = (keys.key("attacker"), p.clone(), server.addr);
            std::thread::spawn(move || run(addr, Some(&k), &p))
        })
        .collect();
    let ends: Vec<_> = trials.into_iter().map(|t| t.join().unwrap()).collect();
    eprintln!("three trials of one key at once: {ends:?}");
    let ended: Vec<_> = ends.iter().filter_map(|e| e.as_ref().err()).collect();
    assert!(ends.iter().any(|e| e.is_ok()), "{ends:?}");
    assert!(!ended.is_empty(), "all three ran: {ends:?}");
    for e in ended {
        assert!(
            e.contains("running trials used")
                && e.contains("CPU-seconds per second together")
                && e.contains(field)
                && e.contains("the busiest"),
            "{e}"
        );
    }
}

/// Runs a 3 s paced stream of key "attacker" (with `load` workers on the
/// server); while it runs, a second 0.5 s one of the same key (with one
/// worker if `load`) is tried, `second` checks how it ended, and another
/// key's runs; the first ends "ok".
fn beside_a_running_trial(
    keys: &Keys,
    addr: SocketAddr,
    load: Option<u32>,
    second: impl FnOnce(Result<f64, String>),
) {
    let workers = |n| record::LoadSpec {
        side: record::LoadSide::Receiver,
        workers: n,
    };
    let mut p = trial(TestKind::TcpStream, 1, 16 << 10, 16 << 10);
    p.send_rate_bps = Some(1_000_000);
    p.duration_s = Some(3.0);
    p.load = load.map(workers);
    let first = {
        let (k, p) = (keys.key("attacker"), p.clone());
        std::thread::spawn(move || run(addr, Some(&k), &p))
    };
    std::thread::sleep(Duration::from_millis(800));
    let mut short = p.clone();
    short.duration_s = Some(0.5);
    short.load = load.map(|_| workers(1));
    let beside = run(addr, Some(&keys.key("attacker")), &short);
    let other = run(addr, Some(&keys.key("victim")), &short);
    eprintln!("the key's second trial: {beside:?}; another key's: {other:?}");
    second(beside);
    assert!(other.unwrap() > 0.0);
    assert!(first.join().unwrap().unwrap() > 0.0);
}

/// With several keys, one key's trials run at most half of the server's
/// `--load` workers, and their total is the host's CPUs by default: two
/// trials of one key with 8 workers each took all 16 and every CPU before,
/// and another key's `--load receiver:1` was refused.
#[test]
fn one_key_runs_at_most_half_the_servers_load_workers() {
    let _timing = testkit::timing_lock();
    let keys = Keys::new("");
    let server = keys.server_with(&["--max-total-load-workers", "4"]);
    beside_a_running_trial(&keys, server.addr, Some(2), |second| {
        let second = second.unwrap_err();
        assert!(
            second.contains("key \"attacker\" may run at most 2 of the server's 4 --load workers"),
            "{second}"
        );
    });
}
