//! `tcplab server` under attack on the data plane (issue 28, items 1, 5
//! and 10): each test runs the attack against a real `tcplab server` child
//! (with a key where it matters) on loopback or in a namespace of its own,
//! and asserts it now fails: forged sequence numbers cost no memory,
//! datagrams without the trial's token neither count nor end a flow, a
//! stranger's data connection is refused at once, a raw-IP FIN from
//! another address does not end a layer-rate trial, and the layer-rate
//! requests bench never sends are refused.

mod common;

use common::server::ServerChild;
use engine::auth::{nonce_from_hex, Nonce};
use engine::proto::{read_message, write_message, Message};
use engine::workloads::udp::{header, tag_of, FIN, NO_TAG};
use engine::{Client, Key, TrialObserver};
use record::{PlaceName, ProtocolLayer, TestKind, TrialOutcome, TrialParams};
use std::io::Write;
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A key file in a temporary directory.
struct KeyFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
    key: Key,
}

impl KeyFile {
    fn new() -> KeyFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lab.key");
        let key = Key::generate().unwrap();
        key.write_new(&path).unwrap();
        KeyFile {
            _dir: dir,
            path,
            key,
        }
    }

    fn server(&self) -> ServerChild {
        ServerChild::start_unlogged(None, "127.0.0.1", &["--key", self.path.to_str().unwrap()])
    }

    fn client(&self, server: &ServerChild) -> Client {
        Client::connect_with_key(server.addr, Duration::from_secs(5), Some(&self.key)).unwrap()
    }
}

fn proc_status(server: &ServerChild, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.trim().split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc status"))
}

/// A control connection that has said hello to a keyless server.
fn greeted(addr: SocketAddr) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let hello = Message::Hello {
        client: "attacks_data test".into(),
    };
    write_message(&mut c, &hello).unwrap();
    match read_message(&mut c).unwrap() {
        Message::Welcome { .. } => c,
        other => panic!("expected welcome, got {other:?}"),
    }
}

/// Sets up `p`; the data ports and the trial's token.
fn setup(c: &mut TcpStream, p: &TrialParams) -> Result<(Vec<u16>, Nonce), String> {
    let setup = Message::Setup { params: p.clone() };
    write_message(c, &setup).unwrap();
    match read_message(c).unwrap() {
        Message::Ready { ports, token } => {
            let token = token.expect("every trial has a token");
            Ok((ports, nonce_from_hex(&token).expect("a 32-byte token")))
        }
        Message::Error { message } => Err(message),
        other => panic!("expected ready, got {other:?}"),
    }
}

fn run(c: &mut Client, p: &TrialParams) -> TrialOutcome {
    let interrupt = Arc::new(AtomicBool::new(false));
    c.run_trial(p, &interrupt)
        .expect("the attack broke the trial")
}

fn udp_forward() -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.duration_s = Some(0.5);
    p.write_size = 1200;
    p.send_rate_bps = Some(20_000_000);
    p
}

/// Item 1: a client holding the token sends one datagram with sequence
/// number 0xFFFFFFFD (and a few others far apart) to each of 8 flows. The
/// tracker's window is fixed: the server's RSS stays within 32 MiB of what
/// it was (each flow's bitmap grew to 512 MiB before).
#[test]
fn far_sequence_numbers_cost_the_server_no_memory() {
    let _timing = testkit::timing_lock();
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let mut c = greeted(server.addr);
    let mut p = TrialParams::defaults(TestKind::UdpStream);
    p.parallel = 8;
    p.duration_s = Some(5.0);
    p.write_size = 64;
    let (ports, token) = setup(&mut c, &p).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let rss0 = proc_status(&server, "VmRSS:");
    let tag = tag_of(&token);
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    for &port in &ports {
        for seq in [0u32, 0xFFFF_FFFD, 0x7FFF_FFFF, 0xFFFF_FFF0, 1] {
            let mut d = header(seq, 0, &tag).to_vec();
            d.resize(64, 0);
            s.send_to(&d, ("127.0.0.1", port)).unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let rss = proc_status(&server, "VmRSS:");
    eprintln!(
        "RSS before {rss0} KiB, after 40 datagrams to 8 flows {rss} KiB, VmHWM {} KiB",
        proc_status(&server, "VmHWM:")
    );
    assert!(rss < rss0 + 32 * 1024, "RSS grew from {rss0} to {rss} KiB");
    assert!(proc_status(&server, "VmHWM:") < rss0 + 32 * 1024);
}

/// Sends FINs and junk at a trial's data ports as soon as the server
/// announces them: from 127.0.0.2, and from the client's own address
/// without the token (in tcplab's old 8-byte header and in the new one
/// with the empty tag).
struct Forger;

impl Forger {
    fn fire(ports: &[u16]) {
        let junk = [[7u8; 4].as_slice(), &[0; 12], &[0xab; 1184]].concat();
        let old_fin = [u32::MAX.to_le_bytes(), [0; 4]].concat();
        let new_fin = header(FIN, 0, &NO_TAG).to_vec();
        for from in ["127.0.0.2:0", "127.0.0.1:0"] {
            let s = UdpSocket::bind(from).unwrap();
            for &port in ports {
                let to = SocketAddr::from(([127, 0, 0, 1], port));
                for d in [&junk, &junk, &old_fin, &old_fin, &old_fin] {
                    s.send_to(d, to).unwrap();
                }
                for _ in 0..3 {
                    s.send_to(&new_fin, to).unwrap();
                    s.send_to(&[], to).unwrap();
                }
            }
        }
    }
}

impl TrialObserver for Forger {
    fn start(&mut self, _: &TrialParams, ports: &[u16]) -> Result<(), String> {
        Forger::fire(ports);
        Ok(())
    }
    fn finish(&mut self, _: &mut TrialOutcome) -> Result<(), String> {
        Ok(())
    }
    fn abort(&mut self) {}
}

/// Item 5: FINs, empty datagrams and junk from 127.0.0.2 and from the
/// client's own address without the token, queued before the server's
/// first datagram, neither end nor alter a keyed forward udp-stream trial
/// (before: 3 of 5 trials aborted, 131–253 integrity errors).
#[test]
fn fins_and_junk_without_the_token_do_not_touch_a_keyed_udp_trial() {
    let _timing = testkit::timing_lock();
    let key = KeyFile::new();
    let server = key.server();
    let mut c = key.client(&server);
    c.set_observer(Some(Box::new(Forger)));
    for i in 0..5 {
        let o = run(&mut c, &udp_forward());
        let m = &o.metrics;
        let integrity = o.details["server"]["integrity_errors"].as_u64().unwrap();
        eprintln!(
            "trial {i}: {} bytes, {} datagrams rejected, {integrity} integrity errors",
            m["bytes"], m["datagrams_rejected"]
        );
        assert_eq!(integrity, 0);
        assert!(m["bytes"] > 1_000_000.0, "only {} bytes", m["bytes"]);
        assert!(m["datagrams_rejected"] >= 1.0, "nothing was rejected");
        assert_eq!(m["datagrams_lost"], 0.0);
    }
}

/// Watches /proc/net/udp for sockets bound to 127.0.0.1 that were not
/// there at the start and fires FINs (and junk) at each new port, as an
/// unprivileged local process could.
fn proc_watcher(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let ports = |text: &str| -> Vec<u16> {
        text.lines()
            .skip(1)
            .filter_map(|l| {
                let local = l.split_whitespace().nth(1)?;
                let (ip, port) = local.split_once(':')?;
                (ip == "0100007F")
                    .then(|| u16::from_str_radix(port, 16).ok())
                    .flatten()
            })
            .collect()
    };
    let mut seen: std::collections::BTreeSet<u16> =
        ports(&std::fs::read_to_string("/proc/net/udp").unwrap())
            .into_iter()
            .collect();
    std::thread::spawn(move || {
        let mut fired = 0;
        while !stop.load(Ordering::Relaxed) {
            let text = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
            let new: Vec<u16> = ports(&text)
                .into_iter()
                .filter(|p| seen.insert(*p))
                .collect();
            if !new.is_empty() {
                Forger::fire(&new);
                fired += new.len() as u64;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        fired
    })
}

/// Item 5: a process watching /proc/net/udp for new server ports fires
/// FINs first; 5 of 5 keyed forward udp-stream trials are still served
/// whole (before: 5 of 5 failed).
#[test]
fn a_proc_net_udp_watcher_cannot_fail_a_keyed_udp_trial() {
    let _timing = testkit::timing_lock();
    let key = KeyFile::new();
    let server = key.server();
    let mut c = key.client(&server);
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = proc_watcher(stop.clone());
    let mut ok = 0;
    for _ in 0..5 {
        let interrupt = Arc::new(AtomicBool::new(false));
        match c.run_trial(&udp_forward(), &interrupt) {
            Ok(o) if o.details["server"]["integrity_errors"] == 0 => ok += 1,
            Ok(o) => eprintln!("altered: {}", o.details["server"]),
            Err(e) => eprintln!("failed: {e}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let fired = watcher.join().unwrap();
    eprintln!("{ok} of 5 trials ok; the watcher fired at {fired} new ports");
    assert!(fired >= 5, "the watcher never fired ({fired})");
    assert_eq!(ok, 5);
}

/// Connects to a trial's TCP data port before the client: three
/// strangers from the client's own address that send nothing, and one
/// that sends 2.9 MB of junk.
struct Strangers(Vec<TcpStream>);

impl TrialObserver for Strangers {
    fn start(&mut self, _: &TrialParams, ports: &[u16]) -> Result<(), String> {
        let to = SocketAddr::from(([127, 0, 0, 1], ports[0]));
        for _ in 0..3 {
            self.0.push(TcpStream::connect(to).unwrap());
        }
        let mut loud = TcpStream::connect(to).unwrap();
        loud.set_write_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let junk = vec![0x5au8; 64 * 1024];
        let mut sent = 0;
        while sent < 2_900_000 {
            match loud.write(&junk) {
                Ok(n) => sent += n,
                Err(_) => break, // refused: the server closed it
            }
        }
        self.0.push(loud);
        Ok(())
    }
    fn finish(&mut self, _: &mut TrialOutcome) -> Result<(), String> {
        self.0.clear();
        Ok(())
    }
    fn abort(&mut self) {
        self.0.clear();
    }
}

/// Item 10: strangers connecting first to a tcp-stream trial's data port
/// are refused at once (no 5 s wait each) and their bytes never count
/// (before: 5 s per silent stranger; a keyless trial reported "ok" with a
/// stranger's 2.9 MB).
#[test]
fn a_stranger_connecting_first_is_refused_fast_and_never_counted() {
    let _timing = testkit::timing_lock();
    for keyed in [false, true] {
        let key = KeyFile::new();
        let (server, mut c) = if keyed {
            let s = key.server();
            let c = key.client(&s);
            (s, c)
        } else {
            let s = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
            let c = Client::connect(s.addr, Duration::from_secs(5)).unwrap();
            (s, c)
        };
        c.set_observer(Some(Box::new(Strangers(Vec::new()))));
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.bytes = Some(10_000_000);
        p.duration_s = None;
        let t0 = Instant::now();
        let o = run(&mut c, &p);
        let took = t0.elapsed();
        let server_bytes = o.details["server"]["bytes"].as_u64().unwrap();
        let integrity = o.details["server"]["integrity_errors"].as_u64().unwrap();
        eprintln!("keyed {keyed}: {took:?}, server counted {server_bytes} bytes, {integrity} integrity errors");
        assert_eq!(server_bytes, 10_000_000);
        assert_eq!(integrity, 0);
        assert!(
            took < Duration::from_secs(3),
            "the strangers held the trial {took:?}"
        );
        drop(server);
    }
}

/// Item 10: the layer-rate setups bench never sends (no layer, or over
/// the host's loopback) are refused in one line.
#[test]
fn layer_rate_requests_bench_never_sends_are_refused() {
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let mut c = greeted(server.addr);
    let mut p = TrialParams::defaults(TestKind::LayerRate);
    p.layer = Some(ProtocolLayer::Ip);
    let why = setup(&mut c, &p).unwrap_err();
    assert_eq!(
        why,
        "layer-rate needs --layer and a --topology of two namespaces (veth or another place), never loopback"
    );
    p.topology = PlaceName::from_name("veth");
    p.layer = None;
    assert_eq!(setup(&mut c, &p).unwrap_err(), why);
}

/// A namespace with a veth pair to the host: host end 198.18.K.1 (and .3,
/// the forger's), namespace end 198.18.K.2.
struct Veth {
    ns: String,
    k: u32,
}

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

impl Veth {
    fn new() -> Veth {
        let id = std::process::id();
        let v = Veth {
            ns: format!("tcplab-atk-{id}"),
            k: id % 250,
        };
        let (h, n) = (
            format!("tla{}h", id % 100_000),
            format!("tla{}n", id % 100_000),
        );
        let run = |args: String| {
            let st = Command::new("ip")
                .args(args.split_whitespace())
                .status()
                .unwrap();
            assert!(st.success(), "ip {args}");
        };
        let (ns, k) = (&v.ns, v.k);
        run(format!("netns add {ns}"));
        run(format!("link add {h} type veth peer name {n} netns {ns}"));
        run(format!("addr add 198.18.{k}.1/24 dev {h}"));
        run(format!("addr add 198.18.{k}.3/24 dev {h}"));
        run(format!("link set {h} up"));
        run(format!("-n {ns} addr add 198.18.{k}.2/24 dev {n}"));
        run(format!("-n {ns} link set {n} up"));
        run(format!("-n {ns} link set lo up"));
        v
    }
}

/// Fires raw protocol-253 FINs at the server from the host's second
/// address, before and while the client sends.
struct RawFinForger {
    from: std::net::Ipv4Addr,
    to: std::net::Ipv4Addr,
}

impl TrialObserver for RawFinForger {
    fn start(&mut self, _: &TrialParams, _: &[u16]) -> Result<(), String> {
        use socket2::{Domain, Protocol, Socket, Type};
        let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::from(253))).unwrap();
        s.bind(&SocketAddr::from((self.from, 0)).into()).unwrap();
        let to = SocketAddr::from((self.to, 0)).into();
        for tag in [NO_TAG, [0xff; 8]] {
            for _ in 0..3 {
                s.send_to(&header(FIN, 0, &tag), &to).unwrap();
                s.send_to(&[u32::MAX.to_le_bytes(), [0; 4]].concat(), &to)
                    .unwrap();
            }
        }
        Ok(())
    }
    fn finish(&mut self, _: &mut TrialOutcome) -> Result<(), String> {
        Ok(())
    }
    fn abort(&mut self) {}
}

/// Item 10: FINs from another address do not end a keyed layer-rate ip
/// trial early (before: one ended at 93 of 200 datagrams).
#[test]
fn a_fin_from_another_address_does_not_end_a_layer_rate_ip_trial() {
    if !testkit::need_root("raw IP sockets and namespaces need root") {
        return;
    }
    let _timing = testkit::timing_lock();
    let veth = Veth::new();
    let key = KeyFile::new();
    let server_ip = format!("198.18.{}.2", veth.k);
    let server = ServerChild::start_unlogged(
        Some(&veth.ns),
        &server_ip,
        &["--key", key.path.to_str().unwrap()],
    );
    let mut c = key.client(&server);
    c.set_observer(Some(Box::new(RawFinForger {
        from: format!("198.18.{}.3", veth.k).parse().unwrap(),
        to: server_ip.parse().unwrap(),
    })));
    let mut p = TrialParams::defaults(TestKind::LayerRate);
    p.layer = Some(ProtocolLayer::Ip);
    p.topology = PlaceName::from_name("veth");
    p.write_size = 1000;
    // Room for all 200 in the receiver's buffer: only a FIN could end it.
    p.rcvbuf = Some(4 << 20);
    // 200 datagrams of the ip layer's payload.
    p.bytes = Some(200 * ProtocolLayer::Ip.payload(1000, 16));
    p.duration_s = None;
    let o = run(&mut c, &p);
    let got = o.metrics["datagrams_received"];
    eprintln!(
        "layer-rate ip: {got} of 200 datagrams received, {} rejected",
        o.metrics["datagrams_rejected"]
    );
    assert!(got >= 190.0, "the trial ended at {got} of 200 datagrams");
    assert!(o.metrics["datagrams_rejected"] >= 6.0);
}

/// Silent connections from the client's own address to a tcp-crr trial's
/// data port wait for the token in one place per trial, at most 16 (and
/// 64 newcomers on probation for 50 ms), and the server holds no more
/// descriptors for them (before: 64 per accepting
/// thread, 1,033 descriptors for a 16-flow trial, and another client's
/// trial failed with "Too many open files").
#[test]
fn silent_data_connections_hold_at_most_the_trials_waiting_places() {
    let _timing = testkit::timing_lock();
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let fds = || {
        std::fs::read_dir(format!("/proc/{}/fd", server.child.id()))
            .unwrap()
            .count()
    };
    let mut c = greeted(server.addr);
    let idle = fds();
    let mut p = TrialParams::defaults(TestKind::TcpCrr);
    p.parallel = 16;
    p.duration_s = Some(10.0);
    let (ports, _token) = setup(&mut c, &p).unwrap();
    let to = SocketAddr::new(server.addr.ip(), ports[0]);
    // The trial's listener and threads are up.
    let with_trial = fds();
    let silent: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect_timeout(&to, Duration::from_millis(200)).ok())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let held = fds();
    eprintln!(
        "{} silent connections: the server holds {held} descriptors (idle {idle}, with the trial set up {with_trial})",
        silent.len()
    );
    assert!(silent.len() >= 100, "only {} connected", silent.len());
    assert!(
        held <= with_trial + engine::workloads::HELD_MOST + 2,
        "{held} descriptors with {} silent connections (set up: {with_trial})",
        silent.len()
    );
    drop(silent);
    drop(c);
}

/// At a tcp-crr trial's start, a process running as another local user
/// (nobody, 65534) opens 5,000 silent connections to its data port and
/// keeps them: past the SYN queue (4,096), syncookies complete them
/// without the listener's deferral, so the gate accepts them. The
/// server's descriptors are counted before and after.
struct NobodysFlood {
    server_pid: u32,
    child: Option<std::process::Child>,
    /// The server's descriptors before the flood and with it.
    fds: Arc<std::sync::Mutex<(usize, usize)>>,
}

impl NobodysFlood {
    fn server_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.server_pid))
            .unwrap()
            .count()
    }
}

impl TrialObserver for NobodysFlood {
    fn start(&mut self, _: &TrialParams, ports: &[u16]) -> Result<(), String> {
        use std::io::{BufRead, BufReader};
        use std::os::unix::process::CommandExt;
        std::thread::sleep(Duration::from_millis(200));
        let before = self.server_fds();
        let script = format!(
            "import socket,sys\n\
             import resource\n\
             resource.setrlimit(resource.RLIMIT_NOFILE,(8192,8192))\n\
             s=[]\n\
             for _ in range(5000):\n\
             \x20 try: s.append(socket.create_connection(('127.0.0.1',{}),timeout=0.2))\n\
             \x20 except OSError: pass\n\
             print(len(s),flush=True)\n\
             sys.stdin.read()",
            ports[0]
        );
        let mut child = Command::new("python3")
            .args(["-c", &script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .uid(65534)
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let made: usize = line.trim().parse().map_err(|e| format!("{e}: {line}"))?;
        assert!(made > 4500, "the flood made only {made} connections");
        std::thread::sleep(Duration::from_millis(300));
        *self.fds.lock().unwrap() = (before, self.server_fds());
        self.child = Some(child);
        Ok(())
    }
    fn finish(&mut self, _: &mut TrialOutcome) -> Result<(), String> {
        self.abort();
        Ok(())
    }
    fn abort(&mut self) {
        if let Some(mut c) = self.child.take() {
            drop(c.stdin.take());
            let _ = c.wait();
        }
    }
}

/// Another local user's silent connections to a trial's data port (5,000
/// from a process running as nobody, from the client's own address) are
/// closed as they are accepted, because their other end is not owned by
/// the user whose control connection asked for the trial: none takes a
/// waiting place or a place on probation, the server holds no descriptor
/// for them, and the trial is served (before: they took its waiting
/// places, 16 descriptors here, and a sustained flood of them aborted
/// keyed tcp-crr trials 3 of 3).
#[test]
fn another_users_data_connections_hold_no_place() {
    let _timing = testkit::timing_lock();
    let server = ServerChild::start_unlogged(None, "127.0.0.1", &[]);
    let mut c = Client::connect(server.addr, Duration::from_secs(5)).unwrap();
    let fds = Arc::new(std::sync::Mutex::new((0, 0)));
    c.set_observer(Some(Box::new(NobodysFlood {
        server_pid: server.child.id(),
        child: None,
        fds: fds.clone(),
    })));
    let mut p = TrialParams::defaults(TestKind::TcpCrr);
    p.parallel = 2;
    p.duration_s = Some(2.5);
    let o = run(&mut c, &p);
    let (before, with_flood) = *fds.lock().unwrap();
    eprintln!(
        "5,000 silent connections from another user, past the SYN queue: the server held {with_flood} descriptors (before {before}); {:?}",
        o.details["server"]
    );
    assert!(
        with_flood <= before + 2 * p.parallel as usize,
        "{with_flood} descriptors with another user's 5,000 silent connections (before: {before})"
    );
}
