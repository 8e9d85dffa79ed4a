//! http: one page load as lmbench's lat_http did it for Markatos §3.9 — a
//! 10 KB page, then 12 objects totalling 40 KB, all fetched with HTTP/1.1
//! GETs on one keep-alive connection. One transaction is one page load,
//! from connect to close.

use super::Amount;
use crate::cancel::{Canceller, StopFlag};
use crate::cpu::CpuTime;
use crate::pattern::Pattern;
use crate::report::ConnResult;
use crate::sockopt;
use crate::workloads::rr::latency_histogram;
use record::TrialParams;
use socket2::Socket;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Instant;

/// Size of the page.
pub const PAGE_BYTES: usize = 10 * 1024;
/// Number of objects after the page.
pub const OBJECTS: usize = 12;
/// Total size of the objects.
pub const OBJECT_BYTES: usize = 40 * 1024;

/// Paths and body sizes of one page load, in request order.
pub fn resources() -> Vec<(String, usize)> {
    let mut v = vec![("/index.html".to_string(), PAGE_BYTES)];
    let (base, extra) = (OBJECT_BYTES / OBJECTS, OBJECT_BYTES % OBJECTS);
    for i in 0..OBJECTS {
        v.push((format!("/obj/{i}.bin"), base + usize::from(i < extra)));
    }
    v
}

/// Body bytes of one page load.
pub fn page_load_bytes() -> u64 {
    (PAGE_BYTES + OBJECT_BYTES) as u64
}

/// Prebuilt responses (headers and body in one buffer, so each response is
/// one write and Nagle never splits header from body).
pub struct Responses {
    by_path: Vec<(String, Vec<u8>)>,
    not_found: Vec<u8>,
}

impl Responses {
    /// Builds the responses from the pattern.
    pub fn new(pattern: &Pattern) -> Responses {
        let by_path = resources()
            .into_iter()
            .map(|(path, len)| {
                let mut r = format!(
                    "HTTP/1.1 200 OK\r\nServer: tcplab\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n\r\n"
                )
                .into_bytes();
                r.extend_from_slice(pattern.window(0, len));
                (path, r)
            })
            .collect();
        let not_found = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec();
        Responses { by_path, not_found }
    }

    /// The whole response (headers and body) to a GET of `path`; a 404
    /// for paths that are not part of the page.
    pub fn get(&self, path: &str) -> &[u8] {
        self.by_path
            .iter()
            .find(|(p, _)| p == path)
            .map_or(&self.not_found, |(_, r)| r)
    }
}

/// A buffered reader over a stream that parses HTTP messages.
struct Conn<'a> {
    s: &'a Socket,
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl<'a> Conn<'a> {
    fn new(s: &'a Socket) -> Conn<'a> {
        Conn {
            s,
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
        }
    }

    /// Reads more bytes; Ok(false) at end of stream.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Err(std::io::Error::other("HTTP header too large"));
        }
        let n = (&mut &*self.s).read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n > 0)
    }

    /// Reads one request; returns its path, or None at a clean end of stream.
    fn read_request(&mut self) -> std::io::Result<Option<String>> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&self.buf[self.start..self.end]) {
                Ok(httparse::Status::Complete(n)) => {
                    let path = req.path.unwrap_or("/").to_string();
                    self.start += n;
                    return Ok(Some(path));
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Err(std::io::Error::other(format!("bad HTTP request: {e}"))),
            }
            if !self.fill()? {
                return if self.start == self.end {
                    Ok(None)
                } else {
                    Err(std::io::ErrorKind::UnexpectedEof.into())
                };
            }
        }
    }

    /// Reads one response; returns its status and body.
    fn read_response(&mut self, body: &mut Vec<u8>) -> std::io::Result<u16> {
        let (status, len) = loop {
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&self.buf[self.start..self.end]) {
                Ok(httparse::Status::Complete(n)) => {
                    let len = resp
                        .headers
                        .iter()
                        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                        .and_then(|h| {
                            std::str::from_utf8(h.value)
                                .ok()?
                                .trim()
                                .parse::<usize>()
                                .ok()
                        })
                        .ok_or_else(|| {
                            std::io::Error::other("HTTP response without Content-Length")
                        })?;
                    self.start += n;
                    break (resp.code.unwrap_or(0), len);
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Err(std::io::Error::other(format!("bad HTTP response: {e}"))),
            }
            if !self.fill()? {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        };
        body.clear();
        while body.len() < len {
            if self.start == self.end && !self.fill()? {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            let take = (len - body.len()).min(self.end - self.start);
            body.extend_from_slice(&self.buf[self.start..self.start + take]);
            self.start += take;
        }
        Ok(status)
    }
}

/// One page load on a new connection; returns body bytes and whether all
/// bodies matched the pattern.
fn page_load(
    addr: SocketAddr,
    p: &TrialParams,
    pattern: &Pattern,
    body: &mut Vec<u8>,
    token: Option<&super::Nonce>,
    cancel: &Canceller,
) -> Result<(u64, bool), String> {
    let sock = sockopt::tcp_socket(&addr, p).map_err(|e| e.to_string())?;
    let _reg = cancel.register(&sock);
    sock.connect(&addr.into())
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    super::send_token(&sock, token).map_err(|e| format!("sending the trial's token: {e}"))?;
    let mut c = Conn::new(&sock);
    let mut bytes = 0u64;
    let mut ok = true;
    for (path, len) in resources() {
        let req = format!("GET {path} HTTP/1.1\r\nHost: tcplab\r\nUser-Agent: tcplab\r\n\r\n");
        (&mut &*c.s)
            .write_all(req.as_bytes())
            .map_err(|e| format!("sending GET {path}: {e}"))?;
        let status = c
            .read_response(body)
            .map_err(|e| format!("reading {path}: {e}"))?;
        if status != 200 {
            return Err(format!("GET {path} returned status {status}"));
        }
        ok &= body.len() == len && pattern.matches(0, body);
        bytes += body.len() as u64;
    }
    Ok((bytes, ok))
}

/// The http client: page loads until the amount or `stop`.
pub fn client(
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
    let mut hist = latency_histogram();
    let limit = match amount {
        Amount::Bytes(b) => b.div_ceil(page_load_bytes()),
        Amount::Until => u64::MAX,
    };
    let mut body = Vec::with_capacity(PAGE_BYTES);
    while r.transactions < limit && !stop.is_raised() && !cancel.is_cancelled() {
        let t0 = Instant::now();
        match page_load(addr, p, pattern, &mut body, token, cancel) {
            Ok((bytes, ok)) => {
                hist.saturating_record(t0.elapsed().as_nanos() as u64);
                r.integrity_errors += u64::from(!ok);
                r.bytes += bytes;
                r.transactions += 1;
            }
            Err(e) => {
                r.error = Some(format!("page load {}: {e}", r.transactions));
                break;
            }
        }
    }
    r.ended = Instant::now();
    r.latency = Some(hist);
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

/// The http server: serves admitted connections until the listener is shut
/// down; connections from other addresses or without the trial's token are
/// closed unserved.
pub(crate) fn server(
    gate: &super::Gate,
    p: &TrialParams,
    responses: &Responses,
    cancel: &Canceller,
) -> ConnResult {
    let cpu0 = CpuTime::thread_now();
    let mut r = ConnResult::start();
    while let Ok((sock, _)) = gate.admit() {
        let _ = sockopt::apply_accepted(&sock, p);
        let _reg = cancel.register(&sock);
        let mut c = Conn::new(&sock);
        loop {
            match c.read_request() {
                Ok(Some(path)) => {
                    let resp = responses.get(&path);
                    if let Err(e) = (&mut &*c.s).write_all(resp) {
                        r.error.get_or_insert(format!("writing response: {e}"));
                        break;
                    }
                    r.bytes += resp.len() as u64;
                    r.transactions += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    r.error.get_or_insert(format!("reading request: {e}"));
                    break;
                }
            }
        }
    }
    r.ended = Instant::now();
    r.cpu = CpuTime::thread_now().since(cpu0);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_total_40k() {
        let r = resources();
        assert_eq!(r.len(), 13);
        assert_eq!(r[0].1, 10240);
        assert_eq!(r[1..].iter().map(|x| x.1).sum::<usize>(), 40960);
    }
}
