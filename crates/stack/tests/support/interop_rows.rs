//! Shared by the stack-against-Linux rows of issue 18's interop matrix
//! (`interop_windows.rs`, `interop_sack.rs`, `interop_rst.rs`): the byte
//! pattern every transfer checks, a namespace with a TUN or TAP device
//! watched by [`Watched`], the stack's sending and receiving loops with
//! hooks for what a row does mid-transfer, Linux's sending and receiving
//! sides, and `ss -tinH` read from the namespace.

#![allow(dead_code)]

use crate::netns::Netns;
use crate::segment_log::{DropPlan, SegmentLog, Watched};
use stack::phy::tun::{TunKind, TunTap};
use stack::phy::Medium;
use stack::socket::tcp::TcpHandle;
use stack::socket::TcpSocketError;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::{Counters, TcpConfig};
use stack::time::{Clock, Instant, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::process::Command;
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// How long any one row may run before it fails instead of hanging.
pub const ROW_LIMIT: Duration = Duration::from_secs(90);
/// The port the stack listens on when Linux connects.
pub const STACK_PORT: u16 = 5001;
/// The port Linux listens on when the stack connects.
pub const LINUX_PORT: u16 = 5002;

/// The byte at offset `i` of every stream: not periodic at any small
/// length, so a lost, duplicated or misplaced segment shows.
pub fn pattern(i: u64) -> u8 {
    ((i % 251) as u8) ^ ((i >> 11) as u8).wrapping_mul(31)
}

/// Fills `buf` with the pattern from stream offset `start`.
pub fn fill_pattern(start: u64, buf: &mut [u8]) {
    for (k, b) in buf.iter_mut().enumerate() {
        *b = pattern(start + k as u64);
    }
}

/// The stream offset of the first byte of `data` (at `start`) off the pattern.
pub fn first_mismatch(start: u64, data: &[u8]) -> Option<u64> {
    data.iter()
        .enumerate()
        .find(|&(k, &b)| b != pattern(start + k as u64))
        .map(|(k, _)| start + k as u64)
}

/// The stack whose device is watched by the segment log.
pub type WatchedStack = Stack<Watched<TunTap>>;

/// One row's setting: the namespace, the watched stack, both addresses.
pub struct Row {
    /// The namespace (deleted when the row ends).
    pub ns: Netns,
    /// TUN or TAP.
    pub kind: TunKind,
    /// Linux's address (x.1).
    pub linux: Ipv4Addr,
    /// The stack's address (x.2).
    pub ours: Ipv4Addr,
    /// Linux's device name in the namespace.
    pub dev: String,
    /// The stack, not yet running.
    pub stack: Option<WatchedStack>,
    /// Every TCP segment the stack's device passed.
    pub log: Arc<Mutex<SegmentLog>>,
    /// The stack's clock.
    pub clock: Arc<dyn Clock>,
}

/// A namespace `tcplab-<what>-…` with a `kind` device, Linux at
/// 10.83.`subnet`.1, the stack at .2 built from `config` on a device
/// that drops as `plan` says; `None` (skipped) without root or TUN.
pub fn row(
    what: &str,
    kind: TunKind,
    subnet: u8,
    config: TcpConfig,
    plan: DropPlan,
) -> Option<Row> {
    let ns = Netns::new(what)?;
    let linux = Ipv4Addr::new(10, 83, subnet, 1);
    let ours = Ipv4Addr::new(10, 83, subnet, 2);
    let device = ns.device(kind, &format!("{linux}/24"));
    let dev = device.name().to_string();
    let (watched, log) = Watched::new(device, plan);
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let medium = if kind == TunKind::Tap {
        Medium::Ethernet
    } else {
        Medium::Ip
    };
    let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap();
    let iface = stack::iface::InterfaceConfig::new(medium, cidr);
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).expect("an ISN secret");
    let stack = Stack::new(watched, iface, config, isn, clock.clone());
    Some(Row {
        ns,
        kind,
        linux,
        ours,
        dev,
        stack: Some(stack),
        log,
        clock,
    })
}

/// What the stack's side of a transfer saw.
#[derive(Debug, Default)]
pub struct StackSide {
    /// Bytes sent or received (and checked).
    pub bytes: u64,
    /// The first byte received off the pattern.
    pub mismatch: Option<u64>,
    /// Seconds from start to the end of the data.
    pub seconds: f64,
    /// The states passed through, as polled.
    pub states: Vec<State>,
    /// The connection's counters, last seen.
    pub counters: Counters,
    /// The socket error that ended it, if any.
    pub error: Option<TcpSocketError>,
    /// The negotiated send MSS, once synchronized.
    pub send_mss: usize,
    /// (send, receive) window shifts.
    pub shifts: (u8, u8),
    /// (SACK, timestamps) negotiated.
    pub sack_ts: (bool, bool),
    /// The largest send window (scaled) Linux offered.
    pub max_send_window: usize,
}

impl StackSide {
    fn note(&mut self, stack: &WatchedStack, c: TcpHandle) -> Option<State> {
        let conn = stack.tcp.connection(c).ok()?;
        self.counters = conn.counters();
        let state = conn.state();
        if self.states.last() != Some(&state) {
            self.states.push(state);
        }
        if state.is_synchronized() && state != State::SynReceived {
            self.send_mss = conn.send_mss();
            self.shifts = conn.window_shifts();
            self.sack_ts = conn.sack_and_timestamps();
            self.max_send_window = self.max_send_window.max(conn.send_window());
        }
        if let Some(e) = conn.error() {
            self.error = Some(e.into());
        }
        Some(state)
    }
}

fn seconds_since(clock: &dyn Clock, since: Instant) -> f64 {
    clock.now().since(since).as_secs_f64()
}

/// When the stack's reader stops reading, and for how long.
#[derive(Debug, Clone, Copy)]
pub struct ReadPause {
    /// After this many bytes.
    pub after: u64,
    /// For this long.
    pub hold: Duration,
}

/// The stack listens on [`STACK_PORT`] (telling `ready`), accepts one
/// connection, reads and checks every byte (stopping for `pause`) until
/// Linux's FIN, closes and runs until the connection is gone.
pub fn stack_receives(
    mut stack: WatchedStack,
    clock: Arc<dyn Clock>,
    pause: Option<ReadPause>,
    ready: mpsc::Sender<()>,
) -> (StackSide, WatchedStack) {
    let start = clock.now();
    let limit = start.after(ROW_LIMIT);
    let listener = stack.tcp.listen(STACK_PORT, 4).expect("listen");
    ready.send(()).unwrap();
    let mut side = StackSide::default();
    let mut conn = None;
    let mut buf = vec![0u8; 64 * 1024];
    let mut paused_until: Option<Instant> = None;
    while clock.now() < limit && side.error.is_none() {
        let now = clock.now();
        stack
            .run_until(now.after(Duration::from_millis(10)))
            .expect("the stack loop");
        if conn.is_none() {
            conn = stack.tcp.accept(listener).expect("accept");
        }
        let Some(c) = conn else { continue };
        side.note(&stack, c);
        if let Some(p) = pause {
            if side.bytes >= p.after && paused_until.is_none() {
                paused_until = Some(clock.now().after(p.hold));
            }
        }
        if paused_until.is_some_and(|until| clock.now() < until) {
            continue;
        }
        loop {
            match stack.tcp.recv(c, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if side.mismatch.is_none() {
                        side.mismatch = first_mismatch(side.bytes, &buf[..n]);
                    }
                    side.bytes += n as u64;
                    if pause.is_some_and(|p| side.bytes >= p.after) && paused_until.is_none() {
                        break;
                    }
                }
                Err(e) => {
                    side.error = Some(e);
                    break;
                }
            }
        }
        if side.error.is_none() && stack.tcp.peer_finished(c).expect("the connection") {
            side.seconds = seconds_since(&*clock, start);
            stack.tcp.close(c).expect("close");
            let until = clock.now().after(Duration::from_secs(5));
            while clock.now() < until && stack.tcp.connections().next().is_some() {
                let now = clock.now();
                stack
                    .run_until(now.after(Duration::from_millis(10)))
                    .unwrap();
                side.note(&stack, c);
            }
            break;
        }
    }
    (side, stack)
}

/// The stack connects to `to`, sends `bytes` of the pattern (calling
/// `hook` after each loop turn, for rows that act mid-transfer), closes
/// first and runs until TIME-WAIT, CLOSED or an error.
pub fn stack_sends(
    mut stack: WatchedStack,
    clock: Arc<dyn Clock>,
    local: Ipv4Addr,
    to: SocketAddrV4,
    bytes: u64,
    mut hook: impl FnMut(&mut WatchedStack, TcpHandle, &StackSide),
) -> (StackSide, WatchedStack) {
    let start = clock.now();
    let limit = start.after(ROW_LIMIT);
    let c = stack.tcp.connect(local, to, start).expect("connect");
    let mut side = StackSide::default();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut shut = false;
    while clock.now() < limit {
        let now = clock.now();
        stack
            .run_until(now.after(Duration::from_millis(10)))
            .expect("the stack loop");
        let Some(state) = side.note(&stack, c) else {
            break;
        };
        if side.error.is_some() {
            break;
        }
        if state == State::TimeWait || state == State::Closed {
            side.seconds = seconds_since(&*clock, start);
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
        hook(&mut stack, c, &side);
    }
    (side, stack)
}

/// `ss -tinH` for connections to `peer`, run in namespace `ns`.
pub fn ss_to(ns: &str, peer: Ipv4Addr) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ss", "-tinH", "dst"])
        .arg(peer.to_string())
        .output()
        .expect("running ss");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The value of `name:` in an `ss -ti` line (`wscale:7,7` gives "7,7").
pub fn ss_field<'a>(ss: &'a str, name: &str) -> Option<&'a str> {
    ss.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix(':'))
}

/// A numeric `ss -ti` field.
pub fn ss_number(ss: &str, name: &str) -> Option<u64> {
    ss_field(ss, name)?.parse().ok()
}

/// What Linux's side of a transfer saw.
#[derive(Debug, Default)]
pub struct LinuxSide {
    /// Bytes moved (and checked, when receiving).
    pub bytes: u64,
    /// The first byte received off the pattern.
    pub mismatch: Option<u64>,
    /// The error that ended it, if any.
    pub error: Option<ErrorKind>,
    /// `ss -tinH` once the data was all acknowledged (sending) or
    /// received (receiving), before the close.
    pub ss: String,
    /// Seconds the transfer took on Linux's side.
    pub seconds: f64,
}

/// Linux connects to `to`, writes `bytes` of the pattern, waits until
/// `ss` shows none unacknowledged, records `ss`, shuts down its sending
/// side and reads to the stack's FIN. Runs inside namespace `ns`.
pub fn linux_sends(ns: String, to: SocketAddrV4, bytes: u64) -> LinuxSide {
    let start = std::time::Instant::now();
    let mut s = TcpStream::connect_timeout(&to.into(), Duration::from_secs(5)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut side = LinuxSide::default();
    let mut chunk = vec![0u8; 64 * 1024];
    while side.bytes < bytes {
        let n = chunk.len().min((bytes - side.bytes) as usize);
        fill_pattern(side.bytes, &mut chunk[..n]);
        s.write_all(&chunk[..n]).expect("write");
        side.bytes += n as u64;
    }
    let peer = *to.ip();
    for _ in 0..500 {
        side.ss = ss_to(&ns, peer);
        if ss_field(&side.ss, "unacked").is_none() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    s.shutdown(Shutdown::Write).expect("shutdown");
    let mut rest = Vec::new();
    if let Err(e) = s.read_to_end(&mut rest) {
        side.error = Some(e.kind());
    }
    side.seconds = start.elapsed().as_secs_f64();
    side
}

/// Linux listens on `at` with `SO_RCVBUF` = `rcvbuf` when given (before
/// any SYN, so the window scale follows it); returns once it listens,
/// with a thread that accepts one connection, sleeps `hold` before its
/// first read, then reads to EOF checking every byte, records `ss` and
/// closes.
pub fn linux_receives(
    ns: &Netns,
    at: SocketAddrV4,
    rcvbuf: Option<usize>,
    hold: Duration,
) -> std::thread::JoinHandle<LinuxSide> {
    let (ready_tx, ready_rx) = mpsc::channel();
    let name = ns.name.clone();
    let thread = ns.run(move || {
        let listener = TcpListener::bind(at).expect("bind");
        if let Some(size) = rcvbuf {
            nix::sys::socket::setsockopt(
                &listener.as_fd(),
                nix::sys::socket::sockopt::RcvBuf,
                &size,
            )
            .expect("SO_RCVBUF");
        }
        ready_tx.send(()).unwrap();
        let (mut s, peer) = listener.accept().expect("accept");
        let start = std::time::Instant::now();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        std::thread::sleep(hold);
        let mut side = LinuxSide::default();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if side.mismatch.is_none() {
                        side.mismatch = first_mismatch(side.bytes, &buf[..n]);
                    }
                    side.bytes += n as u64;
                }
                Err(e) => {
                    side.error = Some(e.kind());
                    break;
                }
            }
        }
        let std::net::IpAddr::V4(peer) = peer.ip() else {
            unreachable!("IPv4 only")
        };
        side.ss = ss_to(&name, peer);
        side.seconds = start.elapsed().as_secs_f64();
        side
    });
    ready_rx.recv().expect("Linux listens");
    thread
}
