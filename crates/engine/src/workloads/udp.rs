//! udp-stream: datagrams carrying a 32-bit sequence number and a 32-bit send
//! timestamp (µs, wrapping), then pattern payload. The receiver counts loss,
//! reordering and duplicates separately and keeps RFC 1889 jitter.
//!
//! Header (little endian): `seq: u32`, `send_us: u32`. `seq == u32::MAX`
//! marks an end-of-flow datagram (FIN); `seq == u32::MAX - 1` is the hello a
//! receiving client sends so a sending server learns its address.

use super::{Amount, DataWaits};
use crate::auth::Nonce;
use crate::buffer::PageBuf;
use crate::cancel::StopFlag;
use crate::cpu::{CpuTime, RecvWork};
use crate::pace::Pacer;
use crate::pattern::Pattern;
use crate::report::{ConnResult, KernelUdpDeltas, UdpCounters};
use record::TrialParams;
use socket2::{SockAddr, Socket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Bytes of the datagram header; the smallest datagram tcplab sends.
pub const HEADER: usize = 8;
/// The sequence number of an end-of-flow datagram.
pub const FIN: u32 = u32::MAX;
/// FIN datagrams a sender ends with (several, since any may be dropped).
pub const FINS: u64 = 3;
/// The sequence number of a receiving client's hello.
pub const HELLO: u32 = u32::MAX - 1;
/// Largest sequence number of a data datagram.
pub const MAX_SEQ: u32 = u32::MAX - 2;

/// Monotonic clock in µs, truncated to 32 bits (the send timestamp).
pub fn now_us32() -> u32 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock and out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000) as u32
}

fn send_raw(fd: i32, header: &[u8; HEADER], payload: &[u8]) -> isize {
    send_raw_to(fd, None, header, payload)
}

/// Sends one datagram, to `dest` when the socket cannot be connected
/// (AF_PACKET).
fn send_raw_to(fd: i32, dest: Option<&SockAddr>, header: &[u8; HEADER], payload: &[u8]) -> isize {
    let mut iov = [
        libc::iovec {
            iov_base: header.as_ptr() as *mut libc::c_void,
            iov_len: HEADER,
        },
        libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: payload.len(),
        },
    ];
    // SAFETY: both iovecs point at live buffers, and `dest` (if any) at a
    // live address of its stated length.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = iov.as_mut_ptr();
        msg.msg_iovlen = if payload.is_empty() { 1 } else { 2 };
        if let Some(d) = dest {
            msg.msg_name = d.as_ptr() as *mut libc::c_void;
            msg.msg_namelen = d.len();
        }
        libc::sendmsg(fd, &msg, 0)
    }
}

/// A datagram's header: its sequence number and send time (µs).
pub fn header(seq: u32, us: u32) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(&seq.to_le_bytes());
    h[4..].copy_from_slice(&us.to_le_bytes());
    h
}

/// Sends datagrams of `write_size` bytes on a connected socket until the
/// amount is sent or `stop` is raised, then three FIN datagrams.
pub fn send(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    stop: &StopFlag,
    progress: &AtomicU64,
) -> ConnResult {
    send_to(sock, None, p, pattern, amount, stop, progress)
}

/// [`send`], naming `dest` in every datagram when given (for sockets that
/// cannot connect, layer-rate's AF_PACKET frames, and for an unconnected
/// sender, `--connect off`). The running byte count goes to `progress`
/// after each datagram (`--interval`).
pub fn send_to(
    sock: &Socket,
    dest: Option<&SockAddr>,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    stop: &StopFlag,
    progress: &AtomicU64,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let fd = sock.as_raw_fd();
    let plen = p.write_size as usize - HEADER;
    let count = match amount {
        Amount::Bytes(b) => b.div_ceil(p.write_size).min(u64::from(MAX_SEQ)),
        Amount::Until => u64::from(MAX_SEQ),
    };
    let mut pacer = p.send_rate_bps.map(Pacer::new);
    let mut c = UdpCounters::default();
    let mut seq: u32 = 0;
    while u64::from(seq) < count && !stop.is_raised() {
        let h = header(seq, now_us32());
        let rc = send_raw_to(fd, dest, &h, pattern.window(u64::from(seq), plen));
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                // Transient: the datagram was not sent; count it and go on.
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    c.send_errors += 1;
                    continue;
                }
                _ => {
                    r.error = Some(format!("sending datagram {seq}: {e}"));
                    break;
                }
            }
        }
        seq += 1;
        r.bytes += p.write_size;
        progress.store(r.bytes, Ordering::Relaxed);
        if let Some(pc) = &mut pacer {
            pc.sent(p.write_size as usize, stop);
        }
    }
    r.ended = Instant::now();
    c.sent = u64::from(seq);
    for _ in 0..FINS {
        send_raw_to(fd, dest, &header(FIN, c.sent as u32), &[]);
    }
    r.udp = Some(c);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// Sequence bookkeeping of a receiver: loss, duplicates, reordering and
/// RFC 1889 jitter, shared by every implementation of a receiving end.
#[derive(Debug, Default)]
pub struct SeqTracker {
    seen: Vec<u64>,
    max_seen: Option<u32>,
    counters: UdpCounters,
    last_transit: Option<i64>,
}

impl SeqTracker {
    /// Counts data datagram `seq`, sent at `send_us` and received at
    /// `recv_us` (both from [`now_us32`]).
    pub fn record(&mut self, seq: u32, send_us: u32, recv_us: u32) {
        let c = &mut self.counters;
        c.received += 1;
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= self.seen.len() {
            self.seen.resize((word + 1).next_power_of_two(), 0);
        }
        if self.seen[word] & (1 << bit) != 0 {
            c.duplicates += 1;
            return;
        }
        self.seen[word] |= 1 << bit;
        c.distinct += 1;
        match self.max_seen {
            Some(m) if seq < m => c.reordered += 1,
            _ => self.max_seen = Some(seq),
        }
        // RFC 1889 §6.3.1: J += (|D| - J) / 16, D the change in transit time.
        let transit = i64::from(recv_us.wrapping_sub(send_us) as i32);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).abs() as f64 * 1e-6;
            c.jitter_s += (d - c.jitter_s) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// The counters so far.
    pub fn counters(&self) -> UdpCounters {
        self.counters.clone()
    }
}

/// How a receiver's flow begins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Opening {
    /// The receiver is the client: it sends hellos (with the trial's
    /// token, if any) so a sending server learns its address.
    Hello(Option<Nonce>),
    /// The receiver is the server: the first datagram must arrive within
    /// `first`, and each next within `stall`, or the flow ends with an
    /// error (a client that set up a trial and went quiet does not hold it).
    Expect(DataWaits),
}

/// Receives one flow until its FIN, or until `finish` is raised and the
/// socket has been quiet for `quiet`; the running byte count goes to
/// `progress` after each datagram. A `finish` tied to the trial's canceller
/// ends the flow within 50 ms of a cancel, even on sockets shutdown(2) does
/// not wake (AF_PACKET).
pub fn receive(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    finish: &StopFlag,
    opening: Opening,
    progress: &AtomicU64,
) -> ConnResult {
    receive_datagrams(sock, p, pattern, finish, opening, false, progress)
}

/// [`receive`]; with `ip_header`, each datagram starts with an IPv4 header
/// to skip (a raw IP socket's view).
pub fn receive_datagrams(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    finish: &StopFlag,
    opening: Opening,
    ip_header: bool,
    progress: &AtomicU64,
) -> ConnResult {
    let hello_payload: Option<Vec<u8>> = match opening {
        Opening::Hello(token) => Some(token.map_or(Vec::new(), |t| t.to_vec())),
        Opening::Expect(_) => None,
    };
    let hello = hello_payload.is_some();
    let hello_payload = hello_payload.unwrap_or_default();
    let started = Instant::now();
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let fd = sock.as_raw_fd();
    let quiet = Duration::from_millis(250);
    let _ = sock.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = PageBuf::zeroed((p.write_size as usize).max(HEADER) + 64);
    let mut work = p.recv_work_ns_per_kb.map(RecvWork::new);
    let mut t = SeqTracker::default();
    let mut last_rx = Instant::now();
    let mut fins = 0u64;
    if hello {
        send_raw(fd, &header(HELLO, 0), &hello_payload);
    }
    // A server's UDP socket takes datagrams only from the control
    // connection's peer: until the first one arrives, each sender is looked
    // at; then the socket is connected to it and the kernel drops the rest.
    let mut awaiting = match opening {
        Opening::Expect(w) if !ip_header && is_inet_datagram(sock) => w.from,
        _ => None,
    };
    let mut failed = None;
    loop {
        if finish.is_cancelled() {
            r.error.get_or_insert_with(|| "cancelled".into());
            break;
        }
        let n = match awaiting {
            Some(peer) => match recv_from_peer(sock, &mut buf, peer) {
                Ok(Some(n)) => {
                    awaiting = None;
                    n as isize
                }
                Ok(None) => continue,
                Err(e) => {
                    failed = Some(e);
                    -1
                }
            },
            // SAFETY: buf is writable.
            None => unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) },
        };
        if n < 0 {
            let e = failed.take().unwrap_or_else(std::io::Error::last_os_error);
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN) => {
                    if let Opening::Expect(w) = opening {
                        if t.counters.received == 0 && fins == 0 && started.elapsed() >= w.first {
                            r.error = Some(format!(
                                "no datagram arrived within {} s of the setup",
                                w.first.as_secs_f64()
                            ));
                            break;
                        }
                        if t.counters.received > 0 && last_rx.elapsed() >= w.stall {
                            r.error = Some(format!("no datagram for {} s", w.stall.as_secs_f64()));
                            break;
                        }
                    }
                    if fins > 0 {
                        break; // the other FINs were dropped
                    }
                    if hello
                        && t.counters.received == 0
                        && last_rx.elapsed() < Duration::from_secs(5)
                    {
                        send_raw(fd, &header(HELLO, 0), &hello_payload);
                    }
                    if finish.is_raised() && last_rx.elapsed() >= quiet {
                        break;
                    }
                    continue;
                }
                Some(libc::ECONNREFUSED) => continue,
                _ => {
                    r.error = Some(format!("receiving: {e}"));
                    break;
                }
            }
        }
        let mut n = n as usize;
        if n == 0 {
            break; // tcplab never sends empty datagrams: the socket was shut down
        }
        if ip_header {
            let ihl = usize::from(buf[0] & 0x0f) * 4;
            if n < ihl + HEADER {
                r.integrity_errors += 1;
                continue;
            }
            buf.copy_within(ihl..n, 0);
            n -= ihl;
        }
        if n < HEADER {
            r.integrity_errors += 1;
            continue;
        }
        let seq = u32::from_le_bytes(buf[..4].try_into().expect("4"));
        let send_us = u32::from_le_bytes(buf[4..8].try_into().expect("4"));
        if seq == FIN {
            // Wait for the remaining FINs (or their loss) so the kernel's
            // drop counter covers the whole flow when it is read.
            fins += 1;
            if fins == FINS {
                break;
            }
            continue;
        }
        if seq == HELLO {
            continue;
        }
        let now = Instant::now();
        last_rx = now;
        r.first_data.get_or_insert(now);
        r.last_data = Some(now);
        if n != p.write_size as usize || !pattern.matches(u64::from(seq), &buf[HEADER..n]) {
            r.integrity_errors += 1;
        }
        t.record(seq, send_us, now_us32());
        r.bytes += n as u64;
        progress.store(r.bytes, Ordering::Relaxed);
        if let Some(w) = &mut work {
            w.consumed(n, || finish.is_cancelled());
        }
    }
    r.ended = Instant::now();
    // Drops of data datagrams only: FINs that never arrived were dropped too.
    let fin_drops = if fins > 0 { FINS - fins } else { 0 };
    t.counters.socket_drops = socket_drops(sock).unwrap_or(0).saturating_sub(fin_drops);
    r.udp = Some(t.counters);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// Whether `sock` is a UDP socket of IPv4 or IPv6 (not a raw or packet one).
fn is_inet_datagram(sock: &Socket) -> bool {
    let inet = sock.local_addr().is_ok_and(|a| a.as_socket().is_some());
    inet && sock.r#type().is_ok_and(|t| t == socket2::Type::DGRAM)
}

/// Receives one datagram into `buf`. One from `peer` connects the socket
/// to its sender (the kernel then drops other senders' datagrams) and
/// gives its length; one from elsewhere is dropped (`None`). An empty read
/// (a shutdown) is `Some(0)`.
fn recv_from_peer(
    sock: &Socket,
    buf: &mut [u8],
    peer: std::net::IpAddr,
) -> std::io::Result<Option<usize>> {
    // SAFETY: MaybeUninit<u8> has u8's layout, and the bytes are already
    // initialised; recv_from only writes to them.
    let uninit = unsafe {
        std::slice::from_raw_parts_mut(
            buf.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
            buf.len(),
        )
    };
    let (n, from) = sock.recv_from(uninit)?;
    if n == 0 {
        return Ok(Some(0));
    }
    if !crate::sockopt::is_from(&from, Some(peer)) {
        return Ok(None);
    }
    sock.connect(&from)?;
    Ok(Some(n))
}

/// Waits up to `within` for a receiving client's hello from `waits.from`
/// carrying `waits.token` (each if set) and connects the socket to its
/// sender; any other hello is ignored, so nothing is ever sent to a third
/// address or to a sender without the token.
pub fn await_hello(sock: &Socket, within: Duration, waits: &DataWaits) -> std::io::Result<()> {
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 64];
    let end = Instant::now() + within;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::other(format!(
                "no hello arrived within {} s of the setup",
                within.as_secs_f64()
            )));
        }
        sock.set_read_timeout(Some(left))?;
        let (n, from) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            // Only a shutdown (cancel) yields an empty read here.
            return Err(std::io::Error::other("cancelled before the client's hello"));
        }
        if n >= 4 {
            // SAFETY: recv_from initialised the first n bytes.
            let b: Vec<u8> = buf[..4]
                .iter()
                .map(|x| unsafe { x.assume_init() })
                .collect();
            // SAFETY: recv_from initialised the first n bytes.
            let payload: Vec<u8> = buf[HEADER.min(n)..n]
                .iter()
                .map(|x| unsafe { x.assume_init() })
                .collect();
            let token_ok = waits
                .token
                .as_ref()
                .is_none_or(|t| super::tokens_match(t, &payload));
            if u32::from_le_bytes(b.try_into().expect("4")) == HELLO
                && crate::sockopt::is_from(&from, waits.from)
                && token_ok
            {
                return sock.connect(&from);
            }
        }
    }
}

/// The kernel's drop count for this socket, from the calling thread's
/// namespace (/proc/thread-self/net/udp or udp6: /proc/net follows the
/// process's first thread, which may be in another namespace).
pub fn socket_drops(sock: &Socket) -> Option<u64> {
    let addr = sock.local_addr().ok()?.as_socket()?;
    let file = if addr.is_ipv4() {
        "/proc/thread-self/net/udp"
    } else {
        "/proc/thread-self/net/udp6"
    };
    let text = std::fs::read_to_string(file).ok()?;
    let port = format!(":{:04X}", addr.port());
    // Match by inode too, in case another socket shares the port.
    let inode = socket_inode(sock);
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let local_ok = f.get(1).is_some_and(|a| a.ends_with(&port));
        let inode_ok = inode.is_none_or(|i| f.get(9).is_some_and(|x| *x == i.to_string()));
        (local_ok && inode_ok)
            .then(|| f.last()?.parse().ok())
            .flatten()
    })
}

fn socket_inode(sock: &Socket) -> Option<u64> {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", sock.as_raw_fd())).ok()?;
    let s = link.to_str()?;
    s.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// Snapshot of kernel-wide UDP drop counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct KernelUdpSnapshot {
    rcvbuf_errors: u64,
    in_errors: u64,
    backlog_drops: u64,
}

impl KernelUdpSnapshot {
    /// Reads /proc/net/snmp (or snmp6) and /proc/net/softnet_stat.
    pub fn take(ipv6: bool) -> KernelUdpSnapshot {
        let (rcvbuf_errors, in_errors) = if ipv6 { snmp6() } else { snmp4() };
        KernelUdpSnapshot {
            rcvbuf_errors,
            in_errors,
            backlog_drops: softnet_drops(),
        }
    }

    /// Counts since `earlier`.
    pub fn since(self, earlier: KernelUdpSnapshot) -> KernelUdpDeltas {
        KernelUdpDeltas {
            rcvbuf_errors: self.rcvbuf_errors.saturating_sub(earlier.rcvbuf_errors),
            in_errors: self.in_errors.saturating_sub(earlier.in_errors),
            backlog_drops: self.backlog_drops.saturating_sub(earlier.backlog_drops),
        }
    }
}

fn snmp4() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/net/snmp").unwrap_or_default();
    let mut lines = text.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
        return (0, 0);
    };
    let get = |key: &str| {
        names
            .split_whitespace()
            .position(|n| n == key)
            .and_then(|i| values.split_whitespace().nth(i))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (get("RcvbufErrors"), get("InErrors"))
}

fn snmp6() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/thread-self/net/snmp6").unwrap_or_default();
    let get = |key: &str| {
        text.lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some(key))
                    .then(|| f.next()?.parse().ok())
                    .flatten()
            })
            .unwrap_or(0)
    };
    (get("Udp6RcvbufErrors"), get("Udp6InErrors"))
}

fn softnet_drops() -> u64 {
    let text = std::fs::read_to_string("/proc/thread-self/net/softnet_stat").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter_map(|h| u64::from_str_radix(h, 16).ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracker_separates_loss_reorder_and_duplicates() {
        let mut t = SeqTracker::default();
        for s in [0u32, 1, 3, 2, 2, 5, 130] {
            t.record(s, 0, 10);
        }
        let c = &t.counters;
        assert_eq!(c.received, 7);
        assert_eq!(c.distinct, 6);
        assert_eq!(c.duplicates, 1);
        assert_eq!(c.reordered, 1);
        assert_eq!(c.jitter_s, 0.0);
    }

    #[test]
    fn jitter_follows_rfc1889() {
        let mut t = SeqTracker::default();
        // transit alternates 100 µs and 200 µs: |D| = 100 µs each step.
        for i in 0..1000u32 {
            let transit = if i % 2 == 0 { 100 } else { 200 };
            t.record(i, 1000 * i, 1000 * i + transit);
        }
        assert!(
            (t.counters.jitter_s - 100e-6).abs() < 1e-6,
            "{}",
            t.counters.jitter_s
        );
    }
}
