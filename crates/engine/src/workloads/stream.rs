//! tcp-stream: bulk transfer of a "file" in writes of `write_size` bytes
//! (Abrams & Chen §2.1). The receiver times first byte to last byte.

use super::Amount;
use crate::buffer::PageBuf;
use crate::cancel::{Canceller, StopFlag};
use crate::cpu::{CpuTime, RecvWork};
use crate::pace::Pacer;
use crate::pattern::Pattern;
use crate::report::ConnResult;
use crate::sockopt::setsockopt_int;
use crate::tcpinfo::TcpInfo;
use crate::workloads::sender::ChunkSender;
use record::TrialParams;
use socket2::Socket;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Sends this connection's share of the stream, then shuts down writing and
/// waits for the receiver to close, so TCP_INFO is read after the last ACK.
/// The running byte count goes to `progress` after each write (`--interval`).
pub fn send(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    stop: &StopFlag,
    progress: &AtomicU64,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let fd = sock.as_raw_fd();
    let mut sender = match ChunkSender::new(fd, p.api, p.cork, pattern) {
        Ok(s) => s,
        Err(e) => return ConnResult::failed(format!("preparing {} sender: {e}", p.api.name())),
    };
    let mut pacer = p.send_rate_bps.map(Pacer::new);
    let ws = p.write_size as usize;
    let mut off = 0u64;
    let limit = match amount {
        Amount::Bytes(b) => b,
        Amount::Until => u64::MAX,
    };
    while off < limit && !stop.is_raised() {
        let len = ws.min((limit - off) as usize);
        match sender.send(off, len) {
            Ok(n) => {
                off += n as u64;
                progress.store(off, Ordering::Relaxed);
                r.calls += 1;
                if let Some(pc) = &mut pacer {
                    pc.sent(n, stop);
                }
            }
            Err(e) => {
                r.error = Some(format!("sending: {e}"));
                break;
            }
        }
    }
    r.ended = Instant::now();
    r.bytes = off;
    match sender.finish() {
        Ok(z) => r.zerocopy = z,
        Err(e) => r.error = r.error.or(Some(format!("zero-copy completions: {e}"))),
    }
    if r.error.is_none() {
        if let Err(e) = sock.shutdown(std::net::Shutdown::Write) {
            r.error = Some(format!("shutting down: {e}"));
        } else {
            wait_for_eof(sock);
        }
    }
    r.tcp_info = TcpInfo::read(sock.as_fd()).ok();
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// Blocks until the peer closes (drains anything it sends).
fn wait_for_eof(sock: &Socket) {
    let mut buf = [0u8; 512];
    loop {
        // SAFETY: buf is writable.
        let n = unsafe { libc::read(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n > 0 {
            continue;
        }
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return;
    }
}

/// Reads until end of stream, checking every read against the pattern; the
/// running byte count goes to `progress` after each read. `--recv-work`
/// burns stop when `cancel` is cancelled.
pub fn receive(
    sock: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    cancel: &Canceller,
    progress: &AtomicU64,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let fd = sock.as_raw_fd();
    let rs = p.read_size as usize;
    let mut buf = PageBuf::zeroed(rs);
    let mut work = p.recv_work_ns_per_kb.map(RecvWork::new);
    let mut off = 0u64;
    let mut first = None;
    let mut last = None;
    let lowat = p.effective_rcvlowat();
    loop {
        // SAFETY: buf is writable for rs bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), rs) };
        // After shutdown(2) a TCP socket still takes a sender's data:
        // a cancelled trial stops reading (and so closes) at once.
        if cancel.is_cancelled() {
            r.error = Some("cancelled".into());
            break;
        }
        if n > 0 {
            let now = Instant::now();
            if first.is_none() {
                first = Some(now);
                r.first_read_bytes = n as u64;
                // Batch wake-ups only after the first byte, so its arrival time stays exact.
                if lowat > 1 {
                    let v = lowat.min(i32::MAX as u64) as libc::c_int;
                    if let Err(e) = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, v) {
                        r.error = Some(format!("setting SO_RCVLOWAT {lowat}: {e}"));
                        break;
                    }
                }
            }
            last = Some(now);
            r.calls += 1;
            // Quick-ACK mode lasts only until the kernel's next delayed
            // ACK decision: re-arm it after every read.
            if p.quickack {
                if let Err(e) = setsockopt_int(fd, libc::IPPROTO_TCP, libc::TCP_QUICKACK, 1) {
                    r.error = Some(format!("setting TCP_QUICKACK: {e}"));
                    break;
                }
            }
            let n = n as usize;
            if !pattern.matches(off, &buf[..n]) {
                r.integrity_errors += 1;
            }
            off += n as u64;
            progress.store(off, Ordering::Relaxed);
            if let Some(w) = &mut work {
                w.consumed(n, || cancel.is_cancelled());
                // A slower receiver μ is done with a byte when it has worked
                // through it: end the delay there, or the last read's work
                // (up to --read-size of it) would fall outside the delay and
                // the measured rate would exceed μ.
                last = Some(Instant::now());
            }
            continue;
        }
        if n == 0 {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        r.error = Some(if e.raw_os_error() == Some(libc::EAGAIN) {
            "receiving: no data within the server's idle limit".into()
        } else {
            format!("receiving: {e}")
        });
        break;
    }
    r.ended = Instant::now();
    r.bytes = off;
    r.first_data = first;
    r.last_data = last;
    r.tcp_info = TcpInfo::read(sock.as_fd()).ok();
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}
