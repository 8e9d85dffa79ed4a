//! The stack's TCP against Linux's: a TUN (`IFF_TUN|IFF_NO_PI`, MTU 1500)
//! or TAP device in a network namespace of its own
//! (`tcplab-interop-<pid>-<n>`, deleted on drop, so on panic too), Linux
//! at 10.82.N.1 inside it, the stack at 10.82.N.2 on a thread the test
//! starts and joins. Every byte moved is checked against a deterministic
//! pattern. Skipped, with a message, without root or TUN.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::phy::fault::{FaultConfig, FaultInjector, Faults};
use stack::phy::tracer::Tracer;
use stack::phy::tun::{TunKind, TunTap};
use stack::phy::{Device, Medium};
use stack::socket::TcpSocketError;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::{Counters, TcpConfig};
use stack::time::{Clock, Instant, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::fs::File;
use std::io::{BufWriter, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// What each bulk test moves.
const BULK_BYTES: u64 = 10 * 1000 * 1000;
/// How long any one test may take before it fails instead of hanging.
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// The byte at offset `i` of every stream: not periodic at any small
/// length, so a lost, duplicated or misplaced segment shows.
fn pattern(i: u64) -> u8 {
    ((i % 251) as u8) ^ ((i >> 11) as u8).wrapping_mul(31)
}

fn fill_pattern(start: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = pattern(start + k as u64);
    }
}

/// The offset of the first byte of `data` (at stream offset `start`) that
/// breaks the pattern.
fn first_mismatch(start: u64, data: &[u8]) -> Option<u64> {
    data.iter()
        .enumerate()
        .find(|&(k, &b)| b != pattern(start + k as u64))
        .map(|(k, _)| start + k as u64)
}

/// One test's setting: the namespace, the device, both addresses.
struct Setup {
    ns: Netns,
    device: TunTap,
    kind: TunKind,
    linux: Ipv4Addr,
    ours: Ipv4Addr,
}

fn setup(kind: TunKind, subnet: u8) -> Option<Setup> {
    let ns = Netns::new("interop")?;
    let linux = Ipv4Addr::new(10, 82, subnet, 1);
    let ours = Ipv4Addr::new(10, 82, subnet, 2);
    let device = ns.device(kind, &format!("{linux}/24"));
    Some(Setup {
        ns,
        device,
        kind,
        linux,
        ours,
    })
}

/// The stack on `device` at `ours`/24 with the default TCP config.
fn new_stack<D: Device>(
    device: D,
    kind: TunKind,
    ours: Ipv4Addr,
    clock: Arc<dyn Clock>,
) -> Stack<D> {
    let medium = if kind == TunKind::Tap {
        Medium::Ethernet
    } else {
        Medium::Ip
    };
    let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap();
    let iface = stack::iface::InterfaceConfig::new(medium, cidr);
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).expect("an ISN secret");
    Stack::new(device, iface, TcpConfig::default(), isn, clock)
}

/// What the stack's side of a bulk transfer saw.
#[derive(Debug)]
struct StackSide {
    bytes: u64,
    mismatch: Option<u64>,
    seconds: f64,
    states: Vec<State>,
    counters: Counters,
    error: Option<TcpSocketError>,
}

fn elapsed(clock: &dyn Clock, since: Instant) -> f64 {
    clock.now().since(since).as_secs_f64()
}

/// Remembers each state the connection passes through (as polled).
fn note_state(states: &mut Vec<State>, state: State) {
    if states.last() != Some(&state) {
        states.push(state);
    }
}

/// The stack listens on `port` (telling `ready` once it does), accepts
/// one connection, reads and checks every byte until the peer's FIN,
/// then closes, and runs until the connection is gone.
fn stack_receives<D: Device>(
    mut stack: Stack<D>,
    clock: Arc<dyn Clock>,
    port: u16,
    ready: mpsc::Sender<()>,
) -> (StackSide, Stack<D>) {
    let start = clock.now();
    let limit = start.after(TEST_LIMIT);
    let listener = stack.tcp.listen(port, 4).expect("listen");
    ready.send(()).unwrap();
    let mut side = StackSide {
        bytes: 0,
        mismatch: None,
        seconds: 0.0,
        states: Vec::new(),
        counters: Counters::default(),
        error: None,
    };
    let mut conn = None;
    let mut buf = vec![0u8; 64 * 1024];
    while clock.now() < limit && side.error.is_none() {
        let now = clock.now();
        stack
            .run_until(now.after(Duration::from_millis(20)))
            .expect("the stack loop");
        if conn.is_none() {
            conn = stack.tcp.accept(listener).expect("accept");
        }
        let Some(c) = conn else { continue };
        let connection = stack.tcp.connection(c).expect("the connection");
        side.counters = connection.counters();
        note_state(&mut side.states, connection.state());
        loop {
            match stack.tcp.recv(c, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if side.mismatch.is_none() {
                        side.mismatch = first_mismatch(side.bytes, &buf[..n]);
                    }
                    side.bytes += n as u64;
                }
                Err(e) => {
                    side.error = Some(e);
                    break;
                }
            }
        }
        if side.error.is_none() && stack.tcp.peer_finished(c).expect("the connection") {
            side.seconds = elapsed(&*clock, start);
            stack.tcp.close(c).expect("close");
            // Run on until LAST-ACK ends (the connection is removed then).
            let until = clock.now().after(Duration::from_secs(5));
            while clock.now() < until && stack.tcp.connections().next().is_some() {
                let now = clock.now();
                stack
                    .run_until(now.after(Duration::from_millis(20)))
                    .unwrap();
                if let Some(state) = stack.tcp.connections().next().map(|c| c.state()) {
                    note_state(&mut side.states, state);
                }
            }
            if stack.tcp.connections().next().is_none() {
                note_state(&mut side.states, State::Closed);
            }
            break;
        }
    }
    (side, stack)
}

/// Linux connects to `to`, writes `bytes` of the pattern, shuts down its
/// sending side and reads until the stack's FIN. Returns the seconds the
/// writes took to the FIN exchange's end.
fn linux_sends(to: SocketAddrV4, bytes: u64) -> f64 {
    let start = std::time::Instant::now();
    let mut s = TcpStream::connect_timeout(&to.into(), Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut sent = 0u64;
    while sent < bytes {
        let n = chunk.len().min((bytes - sent) as usize);
        fill_pattern(sent, &mut chunk[..n]);
        s.write_all(&chunk[..n]).expect("write");
        sent += n as u64;
    }
    s.shutdown(Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    let n = s
        .read_to_end(&mut rest)
        .expect("reading to the stack's FIN");
    assert_eq!(n, 0, "the stack sent nothing back");
    start.elapsed().as_secs_f64()
}

fn mbit_per_s(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 * 8.0 / seconds / 1e6
}

/// (a) and (c): Linux opens (handshake Linux → stack), sends 10 MB the
/// stack checks, and closes first: the stack goes CLOSE-WAIT → LAST-ACK
/// → CLOSED and Linux's socket sits in TIME-WAIT.
fn linux_to_stack(kind: TunKind, subnet: u8) {
    let Some(setup) = setup(kind, subnet) else {
        return;
    };
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let stack = new_stack(setup.device, setup.kind, setup.ours, clock.clone());
    let (ready_tx, ready_rx) = mpsc::channel();
    let stack_thread = std::thread::spawn(move || stack_receives(stack, clock, 5001, ready_tx));
    ready_rx.recv().expect("the stack listens");
    let to = SocketAddrV4::new(setup.ours, 5001);
    let linux_seconds = setup
        .ns
        .run(move || linux_sends(to, BULK_BYTES))
        .join()
        .expect("Linux's side");
    let (side, _stack) = stack_thread.join().expect("the stack thread");
    let (_, time_wait) = setup.ns.exec(&["ss", "-tanH", "state", "time-wait"]);
    eprintln!(
        "{kind:?} Linux → stack: {} bytes in {:.2} s = {:.0} Mbit/s (debug build unless --release); \
         states {:?}; {:?}",
        side.bytes,
        side.seconds,
        mbit_per_s(side.bytes, side.seconds),
        side.states,
        side.counters
    );
    eprintln!("Linux {linux_seconds:.2} s; TIME-WAIT in the namespace: {time_wait}");
    assert_eq!(side.error, None);
    assert_eq!(side.mismatch, None, "the first wrong byte");
    assert_eq!(side.bytes, BULK_BYTES);
    assert!(
        side.states.ends_with(&[State::LastAck, State::Closed])
            || side.states.ends_with(&[State::CloseWait, State::Closed]),
        "the stack closed second: {:?}",
        side.states
    );
    assert!(
        time_wait.contains(&format!("{}:5001", setup.ours)),
        "Linux, which closed first, is in TIME-WAIT: {time_wait:?}"
    );
}

#[test]
fn linux_connects_and_sends_10_mb_to_the_stack_over_tun() {
    linux_to_stack(TunKind::Tun, 1);
}

#[test]
fn linux_connects_and_sends_10_mb_to_the_stack_over_tap() {
    linux_to_stack(TunKind::Tap, 2);
}

/// The stack connects to `to`, sends `bytes` of the pattern, closes
/// first and runs until its connection reaches TIME-WAIT (or ends).
fn stack_sends<D: Device>(
    mut stack: Stack<D>,
    clock: Arc<dyn Clock>,
    local: Ipv4Addr,
    to: SocketAddrV4,
    bytes: u64,
) -> (StackSide, Stack<D>) {
    let start = clock.now();
    let limit = start.after(TEST_LIMIT);
    let c = stack.tcp.connect(local, to, start).expect("connect");
    let mut side = StackSide {
        bytes: 0,
        mismatch: None,
        seconds: 0.0,
        states: vec![stack.tcp.connection(c).expect("the connection").state()],
        counters: Counters::default(),
        error: None,
    };
    let mut chunk = vec![0u8; 64 * 1024];
    let mut shut = false;
    while clock.now() < limit {
        let now = clock.now();
        stack
            .run_until(now.after(Duration::from_millis(20)))
            .expect("the stack loop");
        let connection = stack.tcp.connection(c).expect("the connection");
        side.counters = connection.counters();
        let state = connection.state();
        note_state(&mut side.states, state);
        if let Some(e) = connection.error() {
            side.error = Some(e.into());
            break;
        }
        if state == State::TimeWait || state == State::Closed {
            side.seconds = elapsed(&*clock, start);
            break;
        }
        while side.bytes < bytes {
            let n = chunk.len().min((bytes - side.bytes) as usize);
            fill_pattern(side.bytes, &mut chunk[..n]);
            match stack.tcp.send(c, &chunk[..n]) {
                Ok(0) => break,
                Ok(sent) => side.bytes += sent as u64,
                Err(e) => {
                    side.error = Some(e);
                    break;
                }
            }
        }
        if side.bytes == bytes && !shut {
            stack.tcp.shutdown(c).expect("shutdown");
            shut = true;
        }
    }
    (side, stack)
}

/// Linux accepts one connection on `listener`, reads to EOF checking
/// every byte, then closes. Returns (bytes, first mismatch).
fn linux_receives(listener: TcpListener) -> (u64, Option<u64>) {
    let (mut s, _) = listener.accept().expect("accept");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    let (mut bytes, mut mismatch) = (0u64, None);
    loop {
        let n = s.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        if mismatch.is_none() {
            mismatch = first_mismatch(bytes, &buf[..n]);
        }
        bytes += n as u64;
    }
    (bytes, mismatch)
}

/// The port Linux listens on when the stack connects.
const LINUX_PORT: u16 = 5002;

/// Linux listening on [`LINUX_PORT`] in the namespace, receiving and checking
/// what one connection sends ([`linux_receives`]); returns once it listens.
fn linux_listens(setup: &Setup) -> std::thread::JoinHandle<(u64, Option<u64>)> {
    let listen_at = SocketAddrV4::new(setup.linux, LINUX_PORT);
    let (ready_tx, ready_rx) = mpsc::channel();
    let linux_thread = setup.ns.run(move || {
        let listener = TcpListener::bind(listen_at).expect("bind");
        ready_tx.send(()).unwrap();
        linux_receives(listener)
    });
    ready_rx.recv().expect("Linux listens");
    linux_thread
}

/// (b) and (c): the stack opens (handshake stack → Linux), sends 10 MB
/// Linux checks, and closes first: it passes FIN-WAIT-1, FIN-WAIT-2 (or
/// CLOSING) and ends in TIME-WAIT.
fn stack_to_linux(kind: TunKind, subnet: u8) {
    let Some(setup) = setup(kind, subnet) else {
        return;
    };
    let listen_at = SocketAddrV4::new(setup.linux, LINUX_PORT);
    let linux_thread = linux_listens(&setup);
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let stack = new_stack(setup.device, setup.kind, setup.ours, clock.clone());
    let ours = setup.ours;
    let stack_thread =
        std::thread::spawn(move || stack_sends(stack, clock, ours, listen_at, BULK_BYTES));
    let (linux_bytes, linux_mismatch) = linux_thread.join().expect("Linux's side");
    let (side, _stack) = stack_thread.join().expect("the stack thread");
    eprintln!(
        "{kind:?} stack → Linux: {} bytes in {:.2} s = {:.0} Mbit/s (debug build unless --release); \
         states {:?}; {:?}",
        side.bytes,
        side.seconds,
        mbit_per_s(side.bytes, side.seconds),
        side.states,
        side.counters
    );
    assert_eq!(side.error, None);
    assert_eq!(linux_mismatch, None, "the first wrong byte Linux got");
    assert_eq!(linux_bytes, BULK_BYTES);
    assert_eq!(
        side.states.first(),
        Some(&State::SynSent),
        "{:?}",
        side.states
    );
    assert!(side.states.contains(&State::Established));
    assert_eq!(
        side.states.last(),
        Some(&State::TimeWait),
        "the stack closed first: {:?}",
        side.states
    );
}

#[test]
fn the_stack_connects_and_sends_10_mb_to_linux_over_tun() {
    stack_to_linux(TunKind::Tun, 3);
}

#[test]
fn the_stack_connects_and_sends_10_mb_to_linux_over_tap() {
    stack_to_linux(TunKind::Tap, 4);
}

/// (d): Linux's connect to a stack port nobody listens on is refused:
/// the stack answers the SYN with RST,ACK.
fn refused(kind: TunKind, subnet: u8) {
    let Some(setup) = setup(kind, subnet) else {
        return;
    };
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let mut stack = new_stack(setup.device, setup.kind, setup.ours, clock.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let stack_thread = std::thread::spawn(move || {
        while !stopping.load(Ordering::Relaxed) {
            let now = clock.now();
            stack
                .run_until(now.after(Duration::from_millis(10)))
                .unwrap();
        }
        stack
    });
    let to = SocketAddrV4::new(setup.ours, 5003);
    let result = setup
        .ns
        .run(move || TcpStream::connect_timeout(&to.into(), Duration::from_secs(5)).map(|_| ()))
        .join()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let stack = stack_thread.join().expect("the stack thread");
    let err = result.expect_err("nobody listens on 5003");
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}");
    assert!(stack.tcp.counters().no_socket >= 1);
    assert!(stack.tcp.counters().segments_out >= 1, "the RST");
}

#[test]
fn linux_connecting_to_a_closed_stack_port_is_refused_over_tun() {
    refused(TunKind::Tun, 5);
}

#[test]
fn linux_connecting_to_a_closed_stack_port_is_refused_over_tap() {
    refused(TunKind::Tap, 10);
}

/// 1% loss, 1% reordering and 1% duplication each way.
fn one_percent_faults(seed: u64) -> FaultConfig {
    let faults = Faults {
        loss: 0.01,
        reorder: 0.01,
        duplicate: 0.01,
        corrupt: 0.0,
    };
    FaultConfig {
        transmit: faults,
        receive: faults,
        seed,
    }
}

/// (e) Linux → stack under 1% loss, reordering and duplication, every
/// byte checked; the stack's view of it traced to pcapng, which tshark's
/// expert analysis reads without a malformed packet.
fn lossy_linux_to_stack(kind: TunKind, subnet: u8) {
    let Some(setup) = setup(kind, subnet) else {
        return;
    };
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let trace_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("interop-lossy-{kind:?}.pcapng").to_lowercase());
    let file = BufWriter::new(File::create(&trace_path).expect("creating the trace"));
    let faulty = FaultInjector::new(setup.device, one_percent_faults(18));
    let traced = Tracer::new(faulty, file, clock.clone()).expect("the tracer");
    let stack = new_stack(traced, setup.kind, setup.ours, clock.clone());
    let (ready_tx, ready_rx) = mpsc::channel();
    let stack_thread = std::thread::spawn(move || stack_receives(stack, clock, 5001, ready_tx));
    ready_rx.recv().expect("the stack listens");
    let to = SocketAddrV4::new(setup.ours, 5001);
    setup
        .ns
        .run(move || linux_sends(to, BULK_BYTES))
        .join()
        .expect("Linux's side");
    let (side, mut stack) = stack_thread.join().expect("the stack thread");
    let (tx, rx) = (
        stack.device.inner_mut().transmit_stats(),
        stack.device.inner_mut().receive_stats(),
    );
    let frames = stack.device.frames();
    stack.device.finish().expect("finishing the trace");
    eprintln!(
        "{kind:?} lossy Linux → stack: {} bytes in {:.2} s = {:.0} Mbit/s; faults out {tx:?}, in {rx:?}; {:?}",
        side.bytes,
        side.seconds,
        mbit_per_s(side.bytes, side.seconds),
        side.counters
    );
    assert_eq!(side.error, None);
    assert_eq!(side.mismatch, None, "the first wrong byte");
    assert_eq!(side.bytes, BULK_BYTES);
    assert!(
        rx.dropped > 0 && rx.reordered > 0 && rx.duplicated > 0,
        "{rx:?}"
    );
    assert!(tx.dropped > 0, "{tx:?}");
    tshark_reads_cleanly(&trace_path, frames);
}

/// tshark's expert information over the trace has no malformed packet
/// (without tshark, a skip through testkit).
fn tshark_reads_cleanly(path: &std::path::Path, frames: u64) {
    if !testkit::need_tool("tshark") {
        return;
    }
    let out = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .args(["-q", "-z", "expert"])
        .output()
        .expect("running tshark");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{} ({frames} frames):\n{text}", path.display());
    assert!(out.status.success(), "tshark failed: {text}");
    assert!(!text.to_lowercase().contains("malformed"), "{text}");
    let count = Command::new("tshark")
        .arg("-r")
        .arg(path)
        .output()
        .expect("tshark");
    let lines = String::from_utf8_lossy(&count.stdout).lines().count() as u64;
    assert_eq!(lines, frames, "tshark read every frame of the trace");
}

/// (e) stack → Linux under 1% loss, reordering and duplication, every
/// byte checked by Linux; the stack recovers and closes to TIME-WAIT; its
/// trace, too, reads without a malformed packet.
fn lossy_stack_to_linux(kind: TunKind, subnet: u8) {
    let Some(setup) = setup(kind, subnet) else {
        return;
    };
    let listen_at = SocketAddrV4::new(setup.linux, LINUX_PORT);
    let linux_thread = linux_listens(&setup);
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let trace_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("interop-lossy-send-{kind:?}.pcapng").to_lowercase());
    let file = BufWriter::new(File::create(&trace_path).expect("creating the trace"));
    let faulty = FaultInjector::new(setup.device, one_percent_faults(19));
    let traced = Tracer::new(faulty, file, clock.clone()).expect("the tracer");
    let stack = new_stack(traced, setup.kind, setup.ours, clock.clone());
    let ours = setup.ours;
    let stack_thread =
        std::thread::spawn(move || stack_sends(stack, clock, ours, listen_at, BULK_BYTES));
    let (linux_bytes, linux_mismatch) = linux_thread.join().expect("Linux's side");
    let (side, mut stack) = stack_thread.join().expect("the stack thread");
    let tx = stack.device.inner_mut().transmit_stats();
    let frames = stack.device.frames();
    stack.device.finish().expect("finishing the trace");
    let (_, nstat) = setup.ns.exec(&["nstat", "-az"]);
    let drops: Vec<&str> = nstat
        .lines()
        .filter(|l| {
            let l = l.to_lowercase();
            (l.contains("drop")
                || l.contains("prune")
                || l.contains("ofo")
                || l.contains("paws")
                || l.contains("csum"))
                && l.split_whitespace().nth(1).is_none_or(|v| v != "0")
        })
        .collect();
    eprintln!("Linux's drop counters: {drops:?}");
    eprintln!(
        "{kind:?} lossy stack → Linux: {} bytes in {:.2} s = {:.0} Mbit/s; faults out {tx:?}; states {:?}; {:?}",
        side.bytes,
        side.seconds,
        mbit_per_s(side.bytes, side.seconds),
        side.states,
        side.counters
    );
    assert_eq!(side.error, None);
    assert_eq!(linux_mismatch, None, "the first wrong byte Linux got");
    assert_eq!(linux_bytes, BULK_BYTES);
    assert!(
        tx.dropped > 0 && tx.reordered > 0 && tx.duplicated > 0,
        "{tx:?}"
    );
    assert!(side.counters.retransmits > 0, "{:?}", side.counters);
    assert_eq!(
        side.states.last(),
        Some(&State::TimeWait),
        "{:?}",
        side.states
    );
    tshark_reads_cleanly(&trace_path, frames);
}

#[test]
fn linux_sends_10_mb_to_the_stack_under_loss_reordering_and_duplication_over_tun() {
    lossy_linux_to_stack(TunKind::Tun, 6);
}

#[test]
fn linux_sends_10_mb_to_the_stack_under_loss_reordering_and_duplication_over_tap() {
    lossy_linux_to_stack(TunKind::Tap, 8);
}

#[test]
fn the_stack_sends_10_mb_to_linux_under_loss_reordering_and_duplication_over_tun() {
    lossy_stack_to_linux(TunKind::Tun, 7);
}

#[test]
fn the_stack_sends_10_mb_to_linux_under_loss_reordering_and_duplication_over_tap() {
    lossy_stack_to_linux(TunKind::Tap, 9);
}
