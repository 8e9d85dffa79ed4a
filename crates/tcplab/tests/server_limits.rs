//! `tcplab server` against the attacks of issue 17 (items 1–7):
//! each attack runs against a real `tcplab server` child on loopback (or in
//! a namespace of the test's own), and the server's threads and descriptors
//! are read from /proc/PID while it happens. After each attack the server's
//! thread count is back at its idle level within a second of the client
//! leaving, and a real client (`tcplab bench --to`) is served.

mod common;

use common::server::ServerChild as ServerProc;
use common::{json_of, tcplab, temp_db, usage_error_line};
use engine::proto::{read_message, write_message, Message};
use record::{LoadSide, LoadSpec, ProtocolLayer, TestKind, TrialParams};
use std::io::Write;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::process::Command;
use std::time::{Duration, Instant};

/// A `tcplab server` child with its log discarded, watched through
/// /proc/PID.
impl ServerProc {
    /// Starts `tcplab server --bind 127.0.0.1 --port 0 EXTRA…`.
    fn loopback(extra: &[&str]) -> ServerProc {
        ServerProc::start_with(None, "127.0.0.1".parse().unwrap(), extra)
    }

    /// Starts the server (inside namespace `netns`, if given) bound to `ip`,
    /// once it is down to its one idle thread.
    fn start_with(netns: Option<&str>, ip: IpAddr, extra: &[&str]) -> ServerProc {
        let s = ServerProc::start_unlogged(netns, &ip.to_string(), extra);
        s.settle(1, Duration::from_secs(5));
        s
    }

    fn proc_status(&self, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().split(' ').next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc status"))
    }

    /// The server process's CPU time (user + system), in clock ticks.
    fn cpu_ticks(&self) -> u64 {
        common::server::cpu_ticks(self.child.id())
    }

    /// The server process's threads.
    fn threads(&self) -> u64 {
        self.proc_status("Threads:")
    }

    /// The server process's resident memory, in KiB.
    fn rss_kib(&self) -> u64 {
        self.proc_status("VmRSS:")
    }

    /// The server process's open descriptors.
    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .count()
    }

    /// What each open descriptor is (socket, pipe, file), for a message
    /// that says which one stayed.
    fn fd_targets(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .filter_map(|e| {
                let e = e.ok()?;
                let t = std::fs::read_link(e.path()).ok()?;
                Some(format!(
                    "{}→{}",
                    e.file_name().to_string_lossy(),
                    t.display()
                ))
            })
            .collect();
        v.sort();
        v
    }

    /// Waits up to `within` for the thread count to fall to `threads`;
    /// returns how long it took.
    fn settle(&self, threads: u64, within: Duration) -> Duration {
        let t0 = Instant::now();
        while self.threads() > threads {
            assert!(
                t0.elapsed() < within,
                "the server still has {} threads {within:?} on (idle: {threads})",
                self.threads()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        t0.elapsed()
    }

    /// Runs a short real trial with `tcplab bench --to`; its throughput.
    fn serves_a_real_client(&self) -> f64 {
        let (_dir, db) = temp_db();
        let to = self.addr.to_string();
        let args = [
            "bench",
            "tcp-stream",
            "--to",
            &to,
            "--bytes",
            "4M",
            "--repeat",
            "1",
            "--json",
        ];
        let doc = json_of(&tcplab(&db, &args));
        let bps = doc["points"][0]["metrics"]["throughput_bps"]["mean"]
            .as_f64()
            .unwrap_or_else(|| panic!("no throughput in {doc}"));
        assert!(bps > 0.0);
        bps
    }
}

/// A control connection that has said hello.
fn greeted(addr: SocketAddr) -> TcpStream {
    try_greeted(addr).expect("the server refused the connection")
}

/// A control connection that has said hello, or None if the server
/// refused it (busy).
fn try_greeted(addr: SocketAddr) -> Option<TcpStream> {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let hello = Message::Hello {
        client: "server_limits test".into(),
    };
    write_message(&mut c, &hello).unwrap();
    match read_message(&mut c).unwrap() {
        Message::Welcome { .. } => Some(c),
        Message::Error { message } if message.starts_with("server busy") => None,
        other => panic!("expected welcome, got {other:?}"),
    }
}

/// Sends `setup` on a greeted connection; the server's answer.
fn setup(c: &mut TcpStream, params: &TrialParams) -> Message {
    write_message(
        c,
        &Message::Setup {
            params: params.clone(),
        },
    )
    .unwrap();
    read_message(c).unwrap()
}

/// A TCP connection to `to` (IPv4) from the source address `from`.
fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(to) = to else {
        panic!("IPv4 only")
    };
    let sin = |ip: [u8; 4], port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: a fresh socket, owned by the TcpStream made from it; both
    // addresses are valid sockaddr_in of the stated length.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let stream = TcpStream::from_raw_fd(fd);
        let a = sin(from, 0);
        assert_eq!(
            libc::bind(fd, (&a as *const libc::sockaddr_in).cast(), len),
            0
        );
        let b = sin(to.ip().octets(), to.port());
        assert_eq!(
            libc::connect(fd, (&b as *const libc::sockaddr_in).cast(), len),
            0
        );
        stream
    }
}

fn ports(m: Message) -> Vec<u16> {
    ready(m).0
}

/// A ready's data ports and the trial's token (every trial has one).
fn ready(m: Message) -> (Vec<u16>, Vec<u8>) {
    match m {
        Message::Ready { ports, token } => {
            let token = engine::auth::from_hex(&token.expect("every trial has a token"))
                .expect("a hex token");
            (ports, token)
        }
        other => panic!("expected ready, got {other:?}"),
    }
}

/// A data connection to `port` that begins with the trial's `token`.
fn data_conn(ip: IpAddr, port: u16, token: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect((ip, port)).unwrap();
    s.write_all(token).unwrap();
    s
}

/// A UDP hello datagram carrying the trial's `token`.
fn hello_with(token: &[u8]) -> Vec<u8> {
    let h = engine::workloads::udp::header(u32::MAX - 1, 0, &engine::workloads::udp::NO_TAG);
    [h.as_slice(), token].concat()
}

fn refusal(m: Message) -> String {
    match m {
        Message::Error { message } => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn stream(reverse: bool) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.reverse = reverse;
    p
}

/// Item 1: a reverse trial paced at 1 bit/s sleeps for days per write; its
/// client leaving ends it at once. The default server refuses the rate.
#[test]
fn paced_trials_end_when_their_client_leaves() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let strict = ServerProc::loopback(&[]);
    let mut p = stream(true);
    p.send_rate_bps = Some(1);
    p.duration_s = Some(1.0);
    let mut c = greeted(strict.addr);
    assert_eq!(
        refusal(setup(&mut c, &p)),
        "--send-rate 1bit is below the limit of 64kbit"
    );
    p.recv_work_ns_per_kb = Some(2_000_000_000);
    p.send_rate_bps = None;
    assert_eq!(
        refusal(setup(&mut c, &p)),
        "--recv-work 2s per KB exceeds the limit of 10ms per KB"
    );
    drop(c);

    // The limits lifted, so the pacing itself is what is tested.
    let server = ServerProc::loopback(&[
        "--min-send-rate",
        "1bit",
        "--idle-timeout",
        "10000000s",
        "--max-per-address",
        "64",
    ]);
    let idle = server.threads();
    let mut p = stream(true);
    p.send_rate_bps = Some(1);
    p.duration_s = Some(1.0);
    let mut held = Vec::new();
    for _ in 0..32 {
        let mut c = greeted(server.addr);
        let (ports, token) = ready(setup(&mut c, &p));
        held.push(data_conn(server.addr.ip(), ports[0], &token));
        held.push(c);
    }
    std::thread::sleep(Duration::from_millis(300));
    assert!(server.threads() >= 32 * 2, "{} threads", server.threads());
    drop(held);
    let took = server.settle(idle, Duration::from_secs(1));
    eprintln!("32 paced trials: idle again {took:?} after their clients left");
    server.serves_a_real_client();
}

/// Item 1: a receiver burning --recv-work stops burning when its client
/// leaves (the server's CPU time stops growing).
#[test]
fn receive_work_ends_when_its_client_leaves() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[]);
    let mut p = stream(false);
    p.recv_work_ns_per_kb = Some(10_000_000); // the limit: 164 s of CPU per 16 MiB read
    p.read_size = 1 << 20;
    let mut c = greeted(server.addr);
    let (ports, token) = ready(setup(&mut c, &p));
    let before = server.cpu_ticks();
    let mut data = data_conn(server.addr.ip(), ports[0], &token);
    data.set_write_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let _ = data.write_all(&vec![0u8; 4 << 20]);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    // The receiver burns while its client is there: a fifth of a CPU
    // second of it, waited for (a busy host gives it less CPU per second).
    let t0 = std::time::Instant::now();
    let burning = loop {
        let burning = server.cpu_ticks() - before;
        if burning >= hz / 5 || t0.elapsed() > Duration::from_secs(10) {
            break burning;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        burning >= hz / 5,
        "the receiver burned only {burning} ticks in 10 s with its client there: nothing to stop"
    );
    drop(data);
    drop(c);
    server.settle(1, Duration::from_secs(1));
    // Its CPU time stops growing: over the next second, at most 2 ticks
    // (the idle server's own wake-ups), where a receiver still burning
    // would take a whole second's worth.
    let left = server.cpu_ticks();
    std::thread::sleep(Duration::from_secs(1));
    let after = server.cpu_ticks() - left;
    assert!(
        after <= 2,
        "the server used {after} ticks (of {hz} a second) after its client left"
    );
}

/// Item 2: abandoned setups leave no thread behind (no timer per trial
/// sleeping for the trial's duration).
#[test]
fn abandoned_setups_leave_no_threads() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[]);
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.reverse = true;
    p.write_size = 1024;
    p.duration_s = Some(3600.0);
    let t0 = Instant::now();
    let mut ready_n = 0;
    let mut n = 0;
    while n < 1000 && t0.elapsed() < Duration::from_secs(5) {
        // The previous connections' slots may not be free yet (each thread
        // sees its hangup within 100 ms, later on a loaded host): a refused
        // greeting waits a moment and is not counted as a setup.
        let Some(mut c) = try_greeted(server.addr) else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        n += 1;
        if let m @ Message::Ready { .. } = setup(&mut c, &p) {
            ready_n += 1;
            let (ports, token) = ready(m);
            let u = UdpSocket::bind("127.0.0.1:0").unwrap();
            u.send_to(&hello_with(&token), (server.addr.ip(), ports[0]))
                .unwrap();
        }
    }
    assert!(n >= 100, "only {n} greetings in 5 s");
    assert!(
        ready_n * 10 > n * 9,
        "only {ready_n} of {n} setups were served"
    );
    let took = server.settle(1, Duration::from_secs(1));
    eprintln!(
        "{n} setups in {:?}: idle again {took:?} later",
        t0.elapsed()
    );
    server.serves_a_real_client();
}

/// Item 2: under a pid limit the server refuses what it cannot start, in
/// one line, and goes on serving what fits.
#[test]
fn a_pid_limit_gets_a_reason_not_a_panic() {
    if !testkit::need_root("a pids cgroup needs root") {
        return;
    }
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let root = std::path::Path::new("/sys/fs/cgroup/pids");
    let unified = std::path::Path::new("/sys/fs/cgroup/cgroup.subtree_control");
    let base = if root.join("cgroup.procs").exists() {
        root.to_path_buf()
    } else if std::fs::read_to_string(unified).is_ok_and(|s| s.contains("pids")) {
        std::path::PathBuf::from("/sys/fs/cgroup")
    } else {
        testkit::skip("the cgroup pids controller (neither v1 pids nor v2 with pids)");
        return;
    };
    struct Cgroup(std::path::PathBuf);
    impl Drop for Cgroup {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir(&self.0);
        }
    }
    let cg = Cgroup(base.join(format!("tcplab-harden-test-{}", std::process::id())));
    std::fs::create_dir(&cg.0).unwrap();
    std::fs::write(cg.0.join("pids.max"), "8").unwrap();
    let server = ServerProc::loopback(&[]);
    std::fs::write(cg.0.join("cgroup.procs"), server.child.id().to_string()).unwrap();
    let (_dir, db) = temp_db();
    let to = server.addr.to_string();
    let out = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--to",
            &to,
            "--parallel",
            "16",
            "--bytes",
            "16M",
            "--repeat",
            "1",
        ],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(text.contains("cannot start"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(
        server.child.id() > 0 && std::fs::metadata(format!("/proc/{}", server.child.id())).is_ok()
    );
    server.settle(1, Duration::from_secs(1));
    server.serves_a_real_client();
    drop(server);
}

/// Item 5: 40 connections trickling a byte a second from one address: at
/// most --max-pending-per-address (8) of them wait in their handshake (each
/// newer one closes the oldest, with the reason), those lose their place at
/// the handshake timeout, no connection gets a thread, and a real client
/// from another address is served meanwhile.
#[test]
fn trickling_connections_do_not_lock_out_a_real_client() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[
        "--handshake-timeout",
        "2s",
        "--max-pending-per-address",
        "8",
    ]);
    let mut tricklers: Vec<TcpStream> = (0..40)
        .map(|_| connect_from([127, 0, 0, 2], server.addr))
        .collect();
    let mut frame = Vec::new();
    write_message(
        &mut frame,
        &Message::Hello {
            client: "x".repeat(100),
        },
    )
    .unwrap();
    let t0 = Instant::now();
    for b in &frame[..3] {
        for t in &mut tricklers {
            let _ = t.write_all(&[*b]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // Handshakes take no thread: the main thread and the event loop's.
    assert!(server.threads() <= 2, "{} threads", server.threads());
    server.serves_a_real_client();
    // Each trickler is refused or closed by the handshake deadline.
    let mut refused = 0;
    for t in &mut tricklers {
        t.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        match read_message(t) {
            Ok(Message::Error { message }) if message.contains("127.0.0.2") => refused += 1,
            Ok(Message::Error { message }) => {
                assert!(message.contains("no hello within 2 s"), "{message}")
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
    // Connected within 100 ms of each other, before any frame: up to
    // twice the bound (16) are kept, the 24 oldest were closed for newer
    // ones, and the last 16 timed out.
    assert_eq!(refused, 24);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    server.settle(1, Duration::from_secs(1));
}

/// Item 5: a client that sets up a trial and goes quiet loses it after the
/// handshake and message limits, not the 4000 s trial cap; so does one whose
/// data connection goes quiet in a byte-bound trial, after the idle limit.
#[test]
fn a_quiet_setup_loses_its_slot() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[
        "--handshake-timeout",
        "1s",
        "--message-timeout",
        "1s",
        "--idle-timeout",
        "1s",
    ]);
    let mut c = greeted(server.addr);
    let mut p = stream(false);
    p.duration_s = Some(3600.0);
    let t0 = Instant::now();
    ports(setup(&mut c, &p));
    let why = refusal(read_message(&mut c).unwrap());
    assert!(why.contains("no client_done within 1 s"), "{why}");
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    server.settle(2, Duration::from_secs(1));

    p.duration_s = None;
    p.bytes = Some(1 << 40);
    let t0 = Instant::now();
    let (ports, token) = ready(setup(&mut c, &p));
    let mut data = data_conn(server.addr.ip(), ports[0], &token);
    data.write_all(&[0u8; 1024]).unwrap();
    let why = refusal(read_message(&mut c).unwrap());
    assert!(why.contains("no client_done within 1 s"), "{why}");
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    server.settle(2, Duration::from_secs(1));
}

/// Item 6: an abandoned layer-rate eth trial (an AF_PACKET receiver, which
/// shutdown(2) does not wake) gives back its threads and descriptors.
#[test]
fn an_abandoned_eth_trial_frees_its_threads_and_descriptors() {
    if !testkit::need_root("AF_PACKET sockets and namespaces need root") {
        return;
    }
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    struct Netns(String);
    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }
    let id = std::process::id();
    let ns = Netns(format!("harden-eth-{id}"));
    let (host_end, ns_end) = (
        format!("hdn{}h", id % 100_000),
        format!("hdn{}n", id % 100_000),
    );
    let k = id % 250;
    let run = |args: &str| {
        let st = Command::new("ip")
            .args(args.split_whitespace())
            .status()
            .unwrap();
        assert!(st.success(), "ip {args}");
    };
    run(&format!("netns add {}", ns.0));
    run(&format!(
        "link add {host_end} type veth peer name {ns_end} netns {}",
        ns.0
    ));
    run(&format!("addr add 198.18.{k}.1/24 dev {host_end}"));
    run(&format!("link set {host_end} up"));
    run(&format!(
        "-n {} addr add 198.18.{k}.2/24 dev {ns_end}",
        ns.0
    ));
    run(&format!("-n {} link set {ns_end} up", ns.0));
    run(&format!("-n {} link set lo up", ns.0));
    let ip: IpAddr = format!("198.18.{k}.2").parse().unwrap();
    let server = ServerProc::start_with(Some(&ns.0), ip, &["--insecure"]);
    // The server makes its poller when its loop starts, which a loaded
    // host may reach after `start_with` returns: one greeting, closed,
    // makes sure the loop runs before the idle count is taken.
    drop(greeted(server.addr));
    let t0 = Instant::now();
    while server
        .fd_targets()
        .iter()
        .filter(|t| t.contains("socket:"))
        .count()
        > 1
        && t0.elapsed() < Duration::from_secs(2)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let (threads, fds) = (server.threads(), server.fds());
    let mut p = TrialParams::defaults(TestKind::LayerRate);
    p.layer = Some(ProtocolLayer::Eth);
    p.topology = record::PlaceName::from_name("veth");
    p.write_size = 1500;
    p.duration_s = Some(60.0);
    for _ in 0..3 {
        let mut c = greeted(server.addr);
        ports(setup(&mut c, &p));
        // The trial's threads start (within 2 s on a loaded host).
        let t0 = Instant::now();
        while server.threads() <= threads && t0.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let running = (server.threads(), server.fds());
        assert!(running.0 > threads, "the trial started no thread");
        drop(c);
        let took = server.settle(threads, Duration::from_secs(1));
        // The last thread out closes the descriptors just after it ends:
        // they follow within a second, or they leaked.
        let t1 = Instant::now();
        while server.fds() > fds && t1.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!(
            "eth trial: idle {threads} threads {fds} fds, running {running:?}, {took:?} after leaving {} threads {} fds",
            server.threads(),
            server.fds()
        );
        assert_eq!(
            server.fds(),
            fds,
            "descriptors leaked: {:?}",
            server.fd_targets()
        );
    }
}

/// Item 7: load workers and receive memory per client are bounded, and a
/// refusal is one line on both sides.
#[test]
fn load_and_memory_per_client_are_refused_in_one_line() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[]);
    let rss_idle = server.rss_kib();
    let mut c = greeted(server.addr);
    let mut p = stream(false);
    p.load = Some(LoadSpec {
        side: LoadSide::Receiver,
        workers: 64,
    });
    assert_eq!(
        refusal(setup(&mut c, &p)),
        "server limit: --load with 64 workers, over the server's 8 per client"
    );
    drop(c);
    let (_dir, db) = temp_db();
    let to = server.addr.to_string();
    let out = tcplab(
        &db,
        &[
            "bench",
            "tcp-stream",
            "--to",
            &to,
            "--parallel",
            "128",
            "--read-size",
            "16M",
            "--repeat",
            "1",
        ],
    );
    // Refused by bench's pre-flight check: one line, exit 2, nothing stored.
    assert_eq!(
        usage_error_line(&out, "memory over the limit"),
        "tcplab: server refused the trial: server limit: tcp-stream --parallel 128 --write-size 128K --read-size 16M needs 2.0 GiB of buffers on the server, over the server's 256 MiB per client (--max-client-memory)\n"
    );
    assert!(!db.exists(), "a refused pre-flight stored something");
    assert!(
        server.rss_kib() < rss_idle + 64 * 1024,
        "RSS {} KiB",
        server.rss_kib()
    );
    server.settle(1, Duration::from_secs(1));
}

/// Item 7: load workers are bounded for all clients together: a second
/// client is refused while the first holds the server's total, and served
/// once the first leaves.
#[test]
fn load_workers_are_bounded_in_total() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server =
        ServerProc::loopback(&["--max-load-workers", "2", "--max-total-load-workers", "2"]);
    let mut p = stream(false);
    p.duration_s = Some(60.0);
    p.load = Some(LoadSpec {
        side: LoadSide::Receiver,
        workers: 2,
    });
    let mut first = greeted(server.addr);
    ports(setup(&mut first, &p));
    p.load = Some(LoadSpec {
        side: LoadSide::Receiver,
        workers: 1,
    });
    let mut second = greeted(server.addr);
    assert_eq!(
        refusal(setup(&mut second, &p)),
        "server limit: --load with 1 workers, but 2 of the server's 2 are running for other clients"
    );
    drop(first);
    server.settle(2, Duration::from_secs(1));
    p.duration_s = Some(0.2);
    ports(setup(&mut second, &p));
}

/// The limits are flags, listed with their defaults by `server --help`.
#[test]
fn server_help_lists_the_limits() {
    let (_dir, db) = temp_db();
    let out = tcplab(&db, &["server", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--max-per-address <N>",
        "[default: 4]",
        "--handshake-timeout <DURATION>",
        "[default: 10s]",
        "--message-timeout <DURATION>",
        "--idle-timeout <DURATION>",
        "--min-send-rate <RATE>",
        "[default: 64kbit]",
        "--max-recv-work <DURATION>",
        "--max-load-workers <N>",
        "--max-total-load-workers <N>",
        "--max-client-memory <SIZE>",
        "[default: 256M]",
        "--keys <FILE.toml>",
        "max_rate",
        "max_duration",
        "max_bytes",
        "max_parallel",
        "reverse",
    ] {
        assert!(help.contains(flag), "no {flag} in:\n{help}");
    }
}

/// Item 4: a stranger (another source address) that connects to a trial's
/// data port is closed unserved; the control connection's peer gets the data.
#[test]
fn a_data_connection_from_another_address_is_closed_unserved() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[]);
    let mut c = greeted(server.addr);
    let mut p = stream(true);
    p.duration_s = Some(1.0);
    let (ports, token) = ready(setup(&mut c, &p));
    let data = SocketAddr::new(server.addr.ip(), ports[0]);
    let mut stranger = connect_from([127, 0, 0, 2], data);
    stranger
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let got = std::io::Read::read(&mut stranger, &mut buf).unwrap_or(0);
    assert_eq!(got, 0, "the stranger was sent data");
    let mut client = connect_from([127, 0, 0, 1], data);
    client.write_all(&token).unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let got = std::io::Read::read(&mut client, &mut buf).unwrap();
    assert!(got > 0, "the control connection's peer got no data");
}

/// Item 3: a forged UDP hello from another address gets nothing sent to
/// it; the control connection's peer's hello gets the trial's data.
#[test]
fn a_udp_hello_from_another_address_gets_nothing() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[]);
    let mut c = greeted(server.addr);
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.reverse = true;
    p.duration_s = Some(1.0);
    p.write_size = 1200;
    p.send_rate_bps = Some(10_000_000);
    let (ports, token) = ready(setup(&mut c, &p));
    let data = SocketAddr::new(server.addr.ip(), ports[0]);
    let hello = hello_with(&token);
    let forger = UdpSocket::bind("127.0.0.2:0").unwrap();
    forger
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 2048];
    for _ in 0..5 {
        forger.send_to(&hello, data).unwrap();
        let r = forger.recv_from(&mut buf);
        assert!(r.is_err(), "the server sent to a third address: {r:?}");
    }
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    client.send_to(&hello, data).unwrap();
    let (n, from) = client.recv_from(&mut buf).unwrap();
    assert!(n > 0 && from == data, "{n} bytes from {from}");
    assert!(
        forger.recv_from(&mut buf).is_err(),
        "the forger got data later"
    );
}

/// Forges datagrams from 127.0.0.2 to each of a trial's data ports as
/// soon as the server announces them, before the client's first datagram.
struct Forger;

impl engine::TrialObserver for Forger {
    fn start(&mut self, _: &TrialParams, ports: &[u16]) -> Result<(), String> {
        let forger = UdpSocket::bind("127.0.0.2:0").unwrap();
        let junk = [[7u8; 4].as_slice(), &[0; 4], &[0xab; 1192]].concat();
        let fin = [u32::MAX.to_le_bytes(), [0; 4]].concat();
        for &port in ports {
            let to = SocketAddr::from(([127, 0, 0, 1], port));
            for d in [&junk, &junk, &fin, &fin, &fin] {
                forger.send_to(d, to).unwrap();
            }
        }
        Ok(())
    }
    fn finish(&mut self, _: &mut record::TrialOutcome) -> Result<(), String> {
        Ok(())
    }
    fn abort(&mut self) {}
}

/// Item 4: junk and FIN datagrams from another address neither end a real
/// client's udp-stream trial nor count as its integrity errors.
#[test]
fn forged_datagrams_from_another_address_do_not_touch_a_udp_trial() {
    // The server must settle within a second, and its threads, CPU and
    // counts are read in fixed time: one timed test at a time.
    let _timing = testkit::timing_lock();
    let server = ServerProc::loopback(&[]);
    let mut c = engine::Client::connect(server.addr, Duration::from_secs(5)).unwrap();
    c.set_observer(Some(Box::new(Forger)));
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.duration_s = Some(0.5);
    p.write_size = 1200;
    p.send_rate_bps = Some(10_000_000);
    let interrupt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let o = c
        .run_trial(&p, &interrupt)
        .expect("forged datagrams broke the trial");
    let received = o.metrics["bytes"];
    assert!(received > 500_000.0, "only {received} bytes arrived");
}
