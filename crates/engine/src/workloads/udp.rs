//! udp-stream: datagrams carrying a 32-bit sequence number, a 32-bit send
//! timestamp (µs, wrapping) and the trial's 8-byte tag, then pattern
//! payload. The receiver counts loss, reordering and duplicates separately
//! (in a bounded window: [`SeqTracker`]) and keeps RFC 1889 jitter.
//!
//! Header (little endian): `seq: u32`, `send_us: u32`, `tag: [u8; 8]`.
//! `seq == u32::MAX` marks an end-of-flow datagram (FIN); `seq == u32::MAX -
//! 1` is the hello a receiving client sends so a sending server learns its
//! address. The tag ([`tag_of`] the trial's token) is on every datagram,
//! FINs and hellos too; a receiver that knows the token refuses (counts as
//! rejected and otherwise ignores) every datagram without it.

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
pub const HEADER: usize = 16;
/// Bytes of the trial's tag in each datagram's header.
pub const TAG_BYTES: usize = 8;
/// A datagram's proof that it belongs to the trial.
pub type Tag = [u8; TAG_BYTES];
/// The tag of a trial without a token (an old server, or tcplab's own
/// stack, which has no control connection): receivers without a token
/// check none.
pub const NO_TAG: Tag = [0; TAG_BYTES];

pub use super::seq_window::SeqTracker;

/// The datagram tag of a trial's token: the first 8 bytes of
/// HMAC-SHA256(token, "tcplab datagram tag"), computed once per flow, so a
/// datagram's check is one 8-byte compare and the tag gives away nothing of
/// the token that TCP data connections begin with.
pub fn tag_of(token: &Nonce) -> Tag {
    use hmac::{Hmac, Mac};
    let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(token).expect("any key length");
    m.update(b"tcplab datagram tag");
    let full = m.finalize().into_bytes();
    let mut t = NO_TAG;
    t.copy_from_slice(&full[..TAG_BYTES]);
    t
}

/// The tag for an optional token ([`NO_TAG`] without one).
pub fn tag_for(token: Option<&Nonce>) -> Tag {
    token.map_or(NO_TAG, tag_of)
}
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

/// Sends one whole datagram on a connected socket.
fn send_raw(fd: i32, datagram: &[u8]) -> isize {
    // SAFETY: the buffer is live for the call.
    unsafe { libc::send(fd, datagram.as_ptr().cast(), datagram.len(), 0) }
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

/// A datagram's header: its sequence number, send time (µs) and the
/// trial's tag.
pub fn header(seq: u32, us: u32, tag: &Tag) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(&seq.to_le_bytes());
    h[4..8].copy_from_slice(&us.to_le_bytes());
    h[8..].copy_from_slice(tag);
    h
}

/// Whether datagram `d` (at least [`HEADER`] bytes) carries `tag`.
#[inline]
/// Compared in constant time: how long the check takes says nothing
/// about how many of a forged tag's bytes were right.
pub fn has_tag(d: &[u8], tag: &Tag) -> bool {
    use subtle::ConstantTimeEq;
    d[8..HEADER].ct_eq(&tag[..]).into()
}

/// Sends datagrams of `write_size` bytes, each with `tag`, on a connected
/// socket until the amount is sent or `stop` is raised, then three FIN
/// datagrams.
pub fn send(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    tag: &Tag,
    stop: &StopFlag,
    progress: &AtomicU64,
) -> ConnResult {
    send_to(sock, None, p, pattern, amount, tag, stop, progress)
}

/// [`send`], naming `dest` in every datagram when given (for sockets that
/// cannot connect, layer-rate's AF_PACKET frames, and for an unconnected
/// sender, `--connect off`). The running byte count goes to `progress`
/// after each datagram (`--interval`).
#[allow(clippy::too_many_arguments)]
pub fn send_to(
    sock: &Socket,
    dest: Option<&SockAddr>,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    tag: &Tag,
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
        let h = header(seq, now_us32(), tag);
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
        send_raw_to(fd, dest, &header(FIN, c.sent as u32, tag), &[]);
    }
    r.udp = Some(c);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
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
/// to skip (a raw IP socket's view), whose source address is checked
/// against the control connection's peer.
///
/// What counts: a datagram counts (as data, hello or FIN) only if it
/// carries the trial's tag (when the receiver knows the token) and comes
/// from the control connection's peer. A server's UDP socket is connected
/// to the sender of the first such datagram; datagrams that were queued
/// before that `connect()` (which the kernel does not filter) are checked
/// by address until the queue has once run empty. Everything else is
/// counted as rejected and ignored: it never counts as data, and never
/// ends the flow.
pub fn receive_datagrams(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    finish: &StopFlag,
    opening: Opening,
    ip_header: bool,
    progress: &AtomicU64,
) -> ConnResult {
    let (hello, token, from) = match opening {
        Opening::Hello(token) => (true, token, None),
        Opening::Expect(w) => (false, w.token, w.from),
    };
    let tag = token.as_ref().map(tag_of);
    let hello_datagram: Vec<u8> = match &token {
        Some(t) => [&header(HELLO, 0, &tag_for(Some(t)))[..], &t[..]].concat(),
        None => header(HELLO, 0, &NO_TAG).to_vec(),
    };
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
    let mut rejected = 0u64;
    if hello {
        send_raw(fd, &hello_datagram);
    }
    // Who a server's UDP socket takes datagrams from: until the first
    // datagram of the trial arrives, any sender of the peer's address
    // (then the socket is connected to it); after, the connected sender,
    // checked until the queue from before the connect has drained.
    let inet = !ip_header && is_inet_datagram(sock);
    let mut filter = match from {
        Some(ip) if inet => Filter::Address(ip),
        _ => Filter::Kernel,
    };
    let raw_from: Option<[u8; 4]> = match from {
        Some(std::net::IpAddr::V4(a)) if ip_header => Some(a.octets()),
        _ => None,
    };
    loop {
        if finish.is_cancelled() {
            r.error.get_or_insert_with(|| "cancelled".into());
            break;
        }
        let got = match filter {
            Filter::Kernel => {
                // SAFETY: buf is writable.
                let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
                if n < 0 {
                    Err(std::io::Error::last_os_error())
                } else {
                    Ok((n as usize, None))
                }
            }
            _ => recv_with_sender(sock, &mut buf).map(|(n, a)| (n, Some(a))),
        };
        let (mut n, sender) = match got {
            Ok(x) => x,
            Err(e) => {
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EAGAIN) => {
                        if let Filter::Connected(_) = filter {
                            // The queue ran empty: what comes now the
                            // kernel filtered by the connected address.
                            filter = Filter::Kernel;
                        }
                        if let Opening::Expect(w) = opening {
                            if t.counters.received == 0 && fins == 0 && started.elapsed() >= w.first
                            {
                                r.error = Some(format!(
                                    "no datagram arrived within {} s of the setup{}",
                                    w.first.as_secs_f64(),
                                    rejected_note(rejected)
                                ));
                                break;
                            }
                            if t.counters.received > 0 && last_rx.elapsed() >= w.stall {
                                r.error =
                                    Some(format!("no datagram for {} s", w.stall.as_secs_f64()));
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
                            send_raw(fd, &hello_datagram);
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
        };
        if n == 0 {
            // A shut-down socket reads empty: only a cancel shuts it down,
            // and the loop's top ends the flow. tcplab never sends empty
            // datagrams: anyone else's is refused.
            if !finish.is_cancelled() {
                rejected += 1;
            }
            continue;
        }
        let from_ok = match (&filter, &sender) {
            (Filter::Address(ip), Some(a)) => crate::sockopt::is_from(a, Some(*ip)),
            (Filter::Connected(peer), Some(a)) => a.as_socket() == peer.as_socket(),
            _ => true,
        };
        if !from_ok {
            rejected += 1;
            continue;
        }
        if ip_header {
            let ihl = usize::from(buf[0] & 0x0f) * 4;
            let src_ok = raw_from.is_none_or(|want| n >= 20 && buf[12..16] == want);
            if n < ihl + HEADER || ihl < 20 || !src_ok {
                rejected += 1;
                continue;
            }
            buf.copy_within(ihl..n, 0);
            n -= ihl;
        }
        if n < HEADER {
            match tag {
                Some(_) => rejected += 1,
                None => r.integrity_errors += 1,
            }
            continue;
        }
        if tag.as_ref().is_some_and(|tg| !has_tag(&buf[..n], tg)) {
            rejected += 1;
            continue;
        }
        if let (Filter::Address(_), Some(a)) = (&filter, &sender) {
            // The trial's first datagram: take only its sender from now on.
            if let Err(e) = sock.connect(a) {
                r.error = Some(format!("connecting to the sender: {e}"));
                break;
            }
            filter = Filter::Connected(a.clone());
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
    t.counters.rejected = rejected;
    r.udp = Some(t.counters);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// Which senders a receiving socket's reads must be checked against.
enum Filter {
    /// None: the kernel filters (a connected client socket, or a server's
    /// socket after the queue from before its connect drained), or nothing
    /// can be (raw sockets check the IP header instead).
    Kernel,
    /// Any sender of this address (a server's socket before the trial's
    /// first datagram).
    Address(std::net::IpAddr),
    /// Only the sender the socket was connected to, until the queue from
    /// before the connect has drained.
    Connected(SockAddr),
}

/// ", N datagrams without the trial's token refused" (or nothing).
fn rejected_note(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} datagrams without the trial's token or from another address refused)")
    }
}

/// Whether `sock` is a UDP socket of IPv4 or IPv6 (not a raw or packet one).
fn is_inet_datagram(sock: &Socket) -> bool {
    let inet = sock.local_addr().is_ok_and(|a| a.as_socket().is_some());
    inet && sock.r#type().is_ok_and(|t| t == socket2::Type::DGRAM)
}

/// Receives one datagram into `buf` with its sender's address.
fn recv_with_sender(sock: &Socket, buf: &mut [u8]) -> std::io::Result<(usize, SockAddr)> {
    // SAFETY: MaybeUninit<u8> has u8's layout, and the bytes are already
    // initialised; recv_from only writes to them.
    let uninit = unsafe {
        std::slice::from_raw_parts_mut(
            buf.as_mut_ptr().cast::<std::mem::MaybeUninit<u8>>(),
            buf.len(),
        )
    };
    sock.recv_from(uninit)
}

/// Waits up to `within` for a receiving client's hello from `waits.from`
/// carrying `waits.token` (each if set) and connects the socket to its
/// sender; any other datagram is ignored, so nothing is ever sent to a
/// third address or to a sender without the token.
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
        if n == 0 && from.as_socket().is_none() {
            // A shutdown (cancel) reads empty with no sender; an empty
            // datagram has one, and is ignored as any other non-hello.
            return Err(std::io::Error::other("cancelled before the client's hello"));
        }
        if n >= HEADER {
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
    fn the_header_carries_the_tag_and_the_tag_is_not_the_token() {
        let token = [7u8; 32];
        let t = tag_of(&token);
        assert_ne!(t, NO_TAG);
        assert_ne!(t[..], token[..TAG_BYTES]);
        assert_eq!(t, tag_for(Some(&token)));
        let h = header(5, 9, &t);
        assert!(has_tag(&h, &t));
        assert!(!has_tag(&h, &NO_TAG));
        assert_eq!(h[..4], 5u32.to_le_bytes());
    }
}
