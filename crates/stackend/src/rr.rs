//! tcp-rr and tcp-crr on the stack: `write_size`-byte requests answered
//! by as many bytes, on one connection (rr) or a new connection per
//! transaction (crr), every response checked against the pattern and every
//! transaction's latency in an HDR histogram, as the kernel ends do.

use crate::work::{send_some, ConnWork, Ctx, EndWork, Step};
use engine::pattern::Pattern;
use engine::report::ConnResult;
use engine::workloads::rr::latency_histogram;
use engine::workloads::Amount;
use hdrhistogram::Histogram;
use record::TrialParams;
use stack::socket::tcp::TcpHandle;
use stack::tcp::state::State;
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::Instant;

/// Transactions an amount allows.
fn limit(amount: Amount, bytes: u64) -> u64 {
    match amount {
        Amount::Bytes(b) => b.div_ceil(bytes.max(1)),
        Amount::Until => u64::MAX,
    }
}

/// One request out and its response in, on an open connection.
struct Exchange {
    sent: usize,
    got: usize,
    buf: Vec<u8>,
}

impl Exchange {
    fn new(size: usize) -> Exchange {
        Exchange {
            sent: 0,
            got: 0,
            buf: vec![0; size],
        }
    }

    /// Moves the exchange on; Some(matched) once the response is whole.
    fn step(
        &mut self,
        cx: &mut Ctx<'_>,
        h: TcpHandle,
        request: &[u8],
        busy: &mut bool,
    ) -> Result<Option<bool>, String> {
        *busy |= send_some(cx.tcp, h, request, &mut self.sent)?;
        while self.got < self.buf.len() {
            let n = cx
                .tcp
                .recv(h, &mut self.buf[self.got..])
                .map_err(|e| format!("reading the response: {e}"))?;
            if n == 0 {
                break;
            }
            self.got += n;
            *busy = true;
        }
        if self.got < self.buf.len() {
            if cx.tcp.peer_finished(h).unwrap_or(true) {
                return Err("the server closed before its response".into());
            }
            return Ok(None);
        }
        let matched = self.buf == request;
        self.sent = 0;
        self.got = 0;
        Ok(Some(matched))
    }
}

/// The rr client: transactions on one connection until the amount or stop.
pub(crate) struct RrClient {
    pattern: Arc<Pattern>,
    size: usize,
    limit: u64,
    off: u64,
    t0: Option<Instant>,
    x: Exchange,
    hist: Histogram<u64>,
    r: ConnResult,
    closing: bool,
}

impl RrClient {
    /// As trial `p` says, `amount` of it.
    pub fn new(p: &TrialParams, pattern: Arc<Pattern>, amount: Amount) -> RrClient {
        let size = p.write_size as usize;
        RrClient {
            pattern,
            size,
            limit: limit(amount, p.write_size),
            off: 0,
            t0: None,
            x: Exchange::new(size),
            hist: latency_histogram(),
            r: ConnResult::start(),
            closing: false,
        }
    }
}

impl ConnWork for RrClient {
    fn step(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<Step, String> {
        let mut busy = false;
        loop {
            if self.closing {
                cx.stats.capture(cx.tcp, h);
                let _ = cx.tcp.close(h);
                return Ok(Step::Done);
            }
            if self.t0.is_none() {
                if self.r.transactions >= self.limit || cx.stop.is_raised() {
                    self.r.ended = Instant::now();
                    self.closing = true;
                    continue;
                }
                self.t0 = Some(Instant::now());
            }
            let request = self.pattern.window(self.off, self.size);
            match self.x.step(cx, h, request, &mut busy)? {
                Some(matched) => {
                    let t0 = self.t0.take().expect("started");
                    self.hist.saturating_record(t0.elapsed().as_nanos() as u64);
                    self.r.integrity_errors += u64::from(!matched);
                    self.r.transactions += 1;
                    self.off += self.size as u64;
                }
                None => return Ok(if busy { Step::Busy } else { Step::Idle }),
            }
        }
    }

    fn into_result(self: Box<Self>, error: Option<String>) -> ConnResult {
        let mut r = self.r;
        if error.is_some() {
            r.ended = Instant::now();
        }
        r.bytes = 2 * self.off;
        r.latency = Some(self.hist);
        r.error = error;
        r
    }
}

/// The server side of rr (many requests) or crr (one request, then the
/// client's close) on one connection: reads a request, answers it with
/// the same bytes.
pub(crate) struct RrServe {
    pattern: Arc<Pattern>,
    buf: Vec<u8>,
    got: usize,
    sent: Option<usize>,
    off: u64,
    one_request: bool,
    r: ConnResult,
}

impl RrServe {
    /// For trial `p`: `one_request` for crr.
    pub fn new(p: &TrialParams, pattern: Arc<Pattern>, one_request: bool) -> RrServe {
        RrServe {
            pattern,
            buf: vec![0; p.write_size as usize],
            got: 0,
            sent: None,
            off: 0,
            one_request,
            r: ConnResult::start(),
        }
    }
}

impl ConnWork for RrServe {
    fn step(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<Step, String> {
        let mut busy = false;
        loop {
            if let Some(sent) = &mut self.sent {
                busy |= send_some(cx.tcp, h, &self.buf, sent)?;
                if *sent < self.buf.len() {
                    return Ok(if busy { Step::Busy } else { Step::Idle });
                }
                self.sent = None;
                self.got = 0;
                self.r.transactions += 1;
                self.r.bytes += 2 * self.buf.len() as u64;
                self.off += self.buf.len() as u64;
            }
            let want = if self.one_request && self.r.transactions > 0 {
                0
            } else {
                self.buf.len()
            };
            while self.got < want {
                let n = cx
                    .tcp
                    .recv(h, &mut self.buf[self.got..])
                    .map_err(|e| format!("reading request: {e}"))?;
                if n == 0 {
                    break;
                }
                self.got += n;
                busy = true;
            }
            if want > 0 && self.got == want {
                let at = if self.one_request { 0 } else { self.off };
                self.r.integrity_errors += u64::from(!self.pattern.matches(at, &self.buf));
                self.sent = Some(0);
                continue;
            }
            if self.one_request && want == 0 {
                // Drain until the client's close, so it holds TIME-WAIT.
                let mut sink = [0u8; 64];
                while cx.tcp.recv(h, &mut sink).unwrap_or(0) > 0 {}
            }
            if cx.tcp.peer_finished(h).unwrap_or(true) {
                if self.got > 0 {
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

/// The crr client: connect, request, response, close, over and over.
pub(crate) struct CrrClient {
    to: SocketAddrV4,
    pattern: Arc<Pattern>,
    size: usize,
    limit: u64,
    conn: Option<(TcpHandle, Instant)>,
    x: Exchange,
    hist: Histogram<u64>,
    r: ConnResult,
    done: bool,
}

impl CrrClient {
    /// Transactions to `to` as trial `p` says, `amount` of them.
    pub fn new(
        to: SocketAddrV4,
        p: &TrialParams,
        pattern: Arc<Pattern>,
        amount: Amount,
    ) -> CrrClient {
        let size = p.write_size as usize;
        CrrClient {
            to,
            pattern,
            size,
            limit: limit(amount, p.write_size),
            conn: None,
            x: Exchange::new(size),
            hist: latency_histogram(),
            r: ConnResult::start(),
            done: false,
        }
    }

    fn fail(&mut self, cx: &mut Ctx<'_>, e: String) -> Step {
        if let Some((h, _)) = self.conn.take() {
            cx.stats.capture(cx.tcp, h);
            let _ = cx.tcp.abort(h);
        }
        self.r.error = Some(format!("transaction {}: {e}", self.r.transactions));
        self.r.ended = Instant::now();
        self.done = true;
        Step::Done
    }
}

impl EndWork for CrrClient {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        let mut busy = false;
        loop {
            if self.done {
                return Step::Done;
            }
            let (h, t0) = match self.conn {
                Some(c) => c,
                None => {
                    if self.r.transactions >= self.limit || cx.stop.is_raised() {
                        self.r.ended = Instant::now();
                        self.done = true;
                        return Step::Done;
                    }
                    let t0 = Instant::now();
                    match cx.tcp.connect(cx.local, self.to, cx.now) {
                        Ok(h) => {
                            self.conn = Some((h, t0));
                            busy = true;
                            (h, t0)
                        }
                        Err(e) => return self.fail(cx, format!("connecting to {}: {e}", self.to)),
                    }
                }
            };
            let state = match cx.tcp.connection(h) {
                Ok(c) => {
                    if let Some(e) = c.error() {
                        return self.fail(cx, format!("connecting to {}: {e}", self.to));
                    }
                    c.state()
                }
                Err(e) => return self.fail(cx, e.to_string()),
            };
            if matches!(state, State::SynSent | State::SynReceived) {
                return if busy { Step::Busy } else { Step::Idle };
            }
            let request = self.pattern.window(0, self.size);
            match self.x.step(cx, h, request, &mut busy) {
                Ok(Some(matched)) => {
                    self.hist.saturating_record(t0.elapsed().as_nanos() as u64);
                    self.r.integrity_errors += u64::from(!matched);
                    self.r.transactions += 1;
                    self.r.bytes += 2 * self.size as u64;
                    cx.stats.capture(cx.tcp, h);
                    // The client closes first and holds TIME-WAIT, as the
                    // kernel's crr client does.
                    let _ = cx.tcp.close(h);
                    self.conn = None;
                }
                Ok(None) => return if busy { Step::Busy } else { Step::Idle },
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
