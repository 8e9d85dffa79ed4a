//! http on the stack: the page load of the engine's http test (a 10 KB
//! page and 12 objects, HTTP/1.1 GETs on one keep-alive connection, one
//! connection per load), as client or server.

use crate::work::{send_some, ConnWork, Ctx, EndWork, Step};
use engine::pattern::Pattern;
use engine::report::ConnResult;
use engine::workloads::http::{page_load_bytes, resources, Responses};
use engine::workloads::rr::latency_histogram;
use engine::workloads::Amount;
use hdrhistogram::Histogram;
use stack::socket::tcp::TcpHandle;
use stack::tcp::state::State;
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::Instant;

/// Largest header block either side accepts.
const MAX_HEADER: usize = 64 * 1024;

/// Bytes received and not yet parsed.
#[derive(Default)]
struct Inbox {
    buf: Vec<u8>,
}

impl Inbox {
    /// Reads what the connection has; whether anything came.
    fn fill(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<bool, String> {
        let mut chunk = [0u8; 16 * 1024];
        let mut any = false;
        loop {
            let n = cx
                .tcp
                .recv(h, &mut chunk)
                .map_err(|e| format!("receiving: {e}"))?;
            if n == 0 {
                return Ok(any);
            }
            self.buf.extend_from_slice(&chunk[..n]);
            any = true;
        }
    }
}

/// A response being read: its status and Content-Length once the header
/// is in.
fn parse_response(buf: &[u8]) -> Result<Option<(u16, usize, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => {
            let len = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .ok_or("HTTP response without Content-Length")?;
            Ok(Some((resp.code.unwrap_or(0), n, len)))
        }
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEADER => {
            Err("HTTP header too large".into())
        }
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(format!("bad HTTP response: {e}")),
    }
}

/// The http client: page loads until the amount or stop.
pub(crate) struct HttpClient {
    to: SocketAddrV4,
    pattern: Arc<Pattern>,
    limit: u64,
    plan: Vec<(String, usize)>,
    conn: Option<TcpHandle>,
    t0: Instant,
    next: usize,
    request: Option<(Vec<u8>, usize)>,
    inbox: Inbox,
    ok: bool,
    hist: Histogram<u64>,
    r: ConnResult,
    done: bool,
}

impl HttpClient {
    /// Page loads from `to`, `amount` of them.
    pub fn new(to: SocketAddrV4, pattern: Arc<Pattern>, amount: Amount) -> HttpClient {
        HttpClient {
            to,
            pattern,
            limit: match amount {
                Amount::Bytes(b) => b.div_ceil(page_load_bytes()),
                Amount::Until => u64::MAX,
            },
            plan: resources(),
            conn: None,
            t0: Instant::now(),
            next: 0,
            request: None,
            inbox: Inbox::default(),
            ok: true,
            hist: latency_histogram(),
            r: ConnResult::start(),
            done: false,
        }
    }

    fn fail(&mut self, cx: &mut Ctx<'_>, e: String) -> Step {
        if let Some(h) = self.conn.take() {
            cx.stats.capture(cx.tcp, h);
            let _ = cx.tcp.abort(h);
        }
        self.r.error = Some(format!("page load {}: {e}", self.r.transactions));
        self.r.ended = Instant::now();
        self.done = true;
        Step::Done
    }

    /// Moves the current load on; Ok(true) when it is complete.
    fn load(&mut self, cx: &mut Ctx<'_>, h: TcpHandle, busy: &mut bool) -> Result<bool, String> {
        loop {
            if self.request.is_none() {
                if self.next == self.plan.len() {
                    return Ok(true);
                }
                let path = &self.plan[self.next].0;
                let req =
                    format!("GET {path} HTTP/1.1\r\nHost: tcplab\r\nUser-Agent: tcplab\r\n\r\n");
                self.request = Some((req.into_bytes(), 0));
            }
            let (req, sent) = self.request.as_mut().expect("set above");
            *busy |= send_some(cx.tcp, h, req, sent)?;
            *busy |= self.inbox.fill(cx, h)?;
            let Some((status, header, len)) = parse_response(&self.inbox.buf)? else {
                return self.waiting(cx, h);
            };
            if self.inbox.buf.len() < header + len {
                return self.waiting(cx, h);
            }
            let (path, want) = &self.plan[self.next];
            if status != 200 {
                return Err(format!("GET {path} returned status {status}"));
            }
            let body = &self.inbox.buf[header..header + len];
            self.ok &= len == *want && self.pattern.matches(0, body);
            self.r.bytes += len as u64;
            self.inbox.buf.drain(..header + len);
            self.request = None;
            self.next += 1;
        }
    }

    fn waiting(&self, cx: &Ctx<'_>, h: TcpHandle) -> Result<bool, String> {
        if cx.tcp.peer_finished(h).unwrap_or(true) {
            return Err("the server closed in the middle of a response".into());
        }
        Ok(false)
    }
}

impl EndWork for HttpClient {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        let mut busy = false;
        loop {
            if self.done {
                return Step::Done;
            }
            let h = match self.conn {
                Some(h) => h,
                None => {
                    if self.r.transactions >= self.limit || cx.stop.is_raised() {
                        self.r.ended = Instant::now();
                        self.done = true;
                        return Step::Done;
                    }
                    self.t0 = Instant::now();
                    match cx.tcp.connect(cx.local, self.to, cx.now) {
                        Ok(h) => {
                            self.conn = Some(h);
                            self.next = 0;
                            self.ok = true;
                            busy = true;
                            h
                        }
                        Err(e) => return self.fail(cx, format!("connecting to {}: {e}", self.to)),
                    }
                }
            };
            match cx.tcp.connection(h).map(|c| (c.state(), c.error())) {
                Ok((_, Some(e))) => {
                    return self.fail(cx, format!("connecting to {}: {e}", self.to))
                }
                Ok((State::SynSent | State::SynReceived, _)) => {
                    return if busy { Step::Busy } else { Step::Idle }
                }
                Ok(_) => {}
                Err(e) => return self.fail(cx, e.to_string()),
            }
            match self.load(cx, h, &mut busy) {
                Ok(true) => {
                    self.hist
                        .saturating_record(self.t0.elapsed().as_nanos() as u64);
                    self.r.integrity_errors += u64::from(!self.ok);
                    self.r.transactions += 1;
                    cx.stats.capture(cx.tcp, h);
                    let _ = cx.tcp.close(h);
                    self.conn = None;
                }
                Ok(false) => return if busy { Step::Busy } else { Step::Idle },
                Err(e) => return self.fail(cx, e),
            }
        }
    }

    fn results(self: Box<Self>) -> Vec<ConnResult> {
        let mut r = self.r;
        r.latency = Some(self.hist);
        vec![r]
    }
}

/// The http server side of one connection: answers GETs until the client
/// closes.
pub(crate) struct HttpServe {
    responses: Arc<Responses>,
    inbox: Inbox,
    out: Option<(Vec<u8>, usize)>,
    r: ConnResult,
}

impl HttpServe {
    /// Answers from `responses`.
    pub fn new(responses: Arc<Responses>) -> HttpServe {
        HttpServe {
            responses,
            inbox: Inbox::default(),
            out: None,
            r: ConnResult::start(),
        }
    }
}

impl ConnWork for HttpServe {
    fn step(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<Step, String> {
        let mut busy = false;
        loop {
            if let Some((resp, sent)) = &mut self.out {
                busy |= send_some(cx.tcp, h, resp, sent)?;
                if *sent < resp.len() {
                    return Ok(if busy { Step::Busy } else { Step::Idle });
                }
                self.r.bytes += resp.len() as u64;
                self.r.transactions += 1;
                self.out = None;
            }
            busy |= self.inbox.fill(cx, h)?;
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut req = httparse::Request::new(&mut headers);
            match req.parse(&self.inbox.buf) {
                Ok(httparse::Status::Complete(n)) => {
                    let path = req.path.unwrap_or("/").to_string();
                    self.inbox.buf.drain(..n);
                    self.out = Some((self.responses.get(&path).to_vec(), 0));
                    continue;
                }
                Ok(httparse::Status::Partial) if self.inbox.buf.len() > MAX_HEADER => {
                    return Err("HTTP header too large".into())
                }
                Ok(httparse::Status::Partial) => {}
                Err(e) => return Err(format!("bad HTTP request: {e}")),
            }
            if cx.tcp.peer_finished(h).unwrap_or(true) {
                if !self.inbox.buf.is_empty() {
                    return Err("the client closed in the middle of a request".into());
                }
                cx.stats.capture(cx.tcp, h);
                let _ = cx.tcp.close(h);
                return Ok(Step::Done);
            }
            return Ok(if busy { Step::Busy } else { Step::Idle });
        }
    }

    fn into_result(self: Box<Self>, error: Option<String>) -> ConnResult {
        let mut r = self.r;
        r.ended = Instant::now();
        r.error = error;
        r
    }
}
