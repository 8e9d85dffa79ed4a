//! tcp-rr and tcp-crr: request/response of `write_size` bytes each way, on
//! one connection (rr) or a new connection per transaction (crr). Every
//! transaction's latency goes into an HDR histogram.

use super::Amount;
use crate::buffer::PageBuf;
use crate::cancel::{Canceller, StopFlag};
use crate::cpu::CpuTime;
use crate::pattern::Pattern;
use crate::report::ConnResult;
use crate::sockopt;
use crate::tcpinfo::TcpInfo;
use hdrhistogram::Histogram;
use record::TrialParams;
use socket2::Socket;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::time::Instant;

/// A histogram of latencies from 1 ns to 100 s at 3 significant digits.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// How many transactions an amount allows (`Until` = unbounded).
fn transaction_limit(amount: Amount, bytes_per_txn: u64) -> u64 {
    match amount {
        Amount::Bytes(b) => b.div_ceil(bytes_per_txn.max(1)),
        Amount::Until => u64::MAX,
    }
}

/// One request/response exchange on an open connection; returns false on a
/// response that differs from the pattern.
fn exchange(mut s: &Socket, pattern: &Pattern, off: u64, buf: &mut [u8]) -> std::io::Result<bool> {
    s.write_all(pattern.window(off, buf.len()))?;
    s.read_exact(buf)?;
    Ok(pattern.matches(off, buf))
}

/// The rr client: transactions on one connection until the amount or `stop`.
pub fn rr_client(
    s: &Socket,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    stop: &StopFlag,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let ws = p.write_size as usize;
    let mut buf = PageBuf::zeroed(ws);
    let mut hist = latency_histogram();
    let limit = transaction_limit(amount, p.write_size);
    let mut off = 0u64;
    while r.transactions < limit && !stop.is_raised() {
        let t0 = Instant::now();
        match exchange(s, pattern, off, &mut buf) {
            Ok(ok) => {
                hist.saturating_record(t0.elapsed().as_nanos() as u64);
                r.integrity_errors += u64::from(!ok);
            }
            Err(e) => {
                r.error = Some(format!("transaction {}: {e}", r.transactions));
                break;
            }
        }
        r.transactions += 1;
        off += ws as u64;
    }
    r.ended = Instant::now();
    r.bytes = 2 * off;
    r.tcp_info = TcpInfo::read(s.as_fd()).ok();
    r.latency = Some(hist);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// Serves one connection's requests: reads `write_size` bytes, answers as many,
/// until the client closes.
pub fn serve_requests(mut s: &Socket, p: &TrialParams, pattern: &Pattern, r: &mut ConnResult) {
    let ws = p.write_size as usize;
    let mut buf = PageBuf::zeroed(ws);
    let mut off = 0u64;
    loop {
        match read_request(s, &mut buf) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                r.error = Some(format!("reading request: {e}"));
                break;
            }
        }
        r.integrity_errors += u64::from(!pattern.matches(off, &buf));
        if let Err(e) = s.write_all(&buf) {
            r.error = Some(format!("writing response: {e}"));
            break;
        }
        r.transactions += 1;
        r.bytes += 2 * ws as u64;
        off += ws as u64;
    }
}

/// Reads one request; Ok(false) on a clean end of stream before it.
fn read_request(mut s: &Socket, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The rr server side of one connection.
pub fn rr_server(s: &Socket, p: &TrialParams, pattern: &Pattern) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    serve_requests(s, p, pattern, &mut r);
    r.ended = Instant::now();
    r.tcp_info = TcpInfo::read(s.as_fd()).ok();
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// The crr client: connect, request, response, close, repeated.
pub fn crr_client(
    addr: SocketAddr,
    p: &TrialParams,
    pattern: &Pattern,
    amount: Amount,
    token: Option<&super::Nonce>,
    stop: &StopFlag,
    cancel: &Canceller,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let ws = p.write_size as usize;
    let mut buf = PageBuf::zeroed(ws);
    let mut hist = latency_histogram();
    let limit = transaction_limit(amount, p.write_size);
    while r.transactions < limit && !stop.is_raised() && !cancel.is_cancelled() {
        let t0 = Instant::now();
        let res = sockopt::tcp_socket(&addr, p)
            .map_err(|e| e.to_string())
            .and_then(|sock| {
                sock.connect(&addr.into())
                    .map(|_| sock)
                    .map_err(|e| format!("connecting to {addr}: {e}"))
            })
            .and_then(|sock| {
                super::send_token(&sock, token)
                    .map(|_| sock)
                    .map_err(|e| format!("sending the trial's token: {e}"))
            })
            .and_then(|sock| {
                let _reg = cancel.register(&sock);
                exchange(&sock, pattern, 0, &mut buf).map_err(|e| format!("exchanging: {e}"))
            });
        match res {
            Ok(ok) => {
                hist.saturating_record(t0.elapsed().as_nanos() as u64);
                r.integrity_errors += u64::from(!ok);
                r.transactions += 1;
                r.bytes += 2 * ws as u64;
            }
            Err(e) => {
                r.error = Some(format!("transaction {}: {e}", r.transactions));
                break;
            }
        }
    }
    r.ended = Instant::now();
    r.latency = Some(hist);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// The crr server: serves one request per admitted connection until the
/// listener is shut down; connections from other addresses or without the
/// trial's token are closed unserved.
pub(crate) fn crr_server(
    gate: &super::Gate,
    p: &TrialParams,
    pattern: &Pattern,
    cancel: &Canceller,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    let ws = p.write_size as usize;
    let mut buf = PageBuf::zeroed(ws);
    while let Ok((sock, _)) = gate.admit() {
        let _ = sockopt::apply_accepted(&sock, p);
        let _reg = cancel.register(&sock);
        let mut s = &sock;
        match read_request(s, &mut buf) {
            Ok(true) => {
                r.integrity_errors += u64::from(!pattern.matches(0, &buf));
                if s.write_all(&buf).is_ok() {
                    r.transactions += 1;
                    r.bytes += 2 * ws as u64;
                }
                // Wait for the client's close so it, not we, holds TIME_WAIT.
                let mut sink = [0u8; 64];
                while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
            }
            Ok(false) => {}
            Err(e) => {
                // Keep serving; the first failure is reported with the trial.
                r.error.get_or_insert(format!("reading request: {e}"));
            }
        }
    }
    r.ended = Instant::now();
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}
