//! udp-stream on the stack, speaking the engine's datagram format
//! (sequence number, send time, pattern payload; FIN and hello datagrams):
//! the sender sends its share then three FINs; the receiver counts loss,
//! duplicates, reordering and RFC 1889 jitter with the engine's own
//! tracker, and checks every payload against the pattern. Its pairings
//! with a kernel end have no control connection and so no trial token:
//! datagrams carry the empty tag (`NO_TAG`) and none is checked.

use crate::work::{Ctx, EndWork, Step};
use engine::pattern::Pattern;
use engine::report::{ConnResult, UdpCounters};
use engine::workloads::udp::{
    header, now_us32, SeqTracker, FIN, FINS, HEADER, HELLO, MAX_SEQ, NO_TAG,
};
use engine::workloads::Amount;
use record::TrialParams;
use stack::iface::udp::{UdpError, UdpHandle};
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A passive receiver ends this long after its last datagram once told to
/// finish (as the kernel receiver does).
const QUIET: Duration = Duration::from_millis(250);
/// After a first FIN, the rest may have been lost: end this long after it.
const AFTER_FIN: Duration = Duration::from_millis(50);
/// A receiving client repeats its hello this often until data comes.
const HELLO_EVERY: Duration = Duration::from_millis(100);
/// A server's first datagram (or a client's hello) must come within this.
const FIRST_WITHIN: Duration = Duration::from_secs(10);

fn bound(cx: &mut Ctx<'_>, handle: &mut Option<UdpHandle>, port: u16) -> Result<UdpHandle, String> {
    if let Some(h) = *handle {
        return Ok(h);
    }
    let h = cx
        .udp
        .bind(port)
        .map_err(|e| format!("binding UDP port {port}: {e}"))?;
    *handle = Some(h);
    cx.udp_bound.push(h);
    Ok(h)
}

/// The sending end of one flow.
pub(crate) struct UdpSend {
    port: u16,
    to: Option<SocketAddrV4>,
    pattern: Arc<Pattern>,
    size: usize,
    count: u64,
    seq: u32,
    fins: u64,
    handle: Option<UdpHandle>,
    buf: Vec<u8>,
    since: Instant,
    r: ConnResult,
    done: bool,
}

impl UdpSend {
    /// Sends from local `port` to `to` (None: to whoever says hello first,
    /// as a sending server does).
    pub fn new(
        port: u16,
        to: Option<SocketAddrV4>,
        p: &TrialParams,
        pattern: Arc<Pattern>,
        amount: Amount,
    ) -> UdpSend {
        let size = (p.write_size as usize).max(HEADER);
        UdpSend {
            port,
            to,
            pattern,
            size,
            count: match amount {
                Amount::Bytes(b) => b.div_ceil(size as u64).min(u64::from(MAX_SEQ)),
                Amount::Until => u64::from(MAX_SEQ),
            },
            seq: 0,
            fins: 0,
            handle: None,
            buf: Vec::with_capacity(size),
            since: Instant::now(),
            r: ConnResult::start(),
            done: false,
        }
    }

    fn fail(&mut self, e: String) -> Step {
        self.r.error = Some(e);
        self.r.ended = Instant::now();
        self.done = true;
        Step::Done
    }
}

impl EndWork for UdpSend {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        if self.done {
            return Step::Done;
        }
        let h = match bound(cx, &mut self.handle, self.port) {
            Ok(h) => h,
            Err(e) => return self.fail(e),
        };
        let to = match self.to {
            Some(to) => to,
            None => {
                while let Ok(Some((from, d))) = cx.udp.recv_from(h) {
                    if d.len() >= HEADER && d[..4] == HELLO.to_le_bytes() {
                        self.to = Some(from);
                        self.r = ConnResult::start();
                        break;
                    }
                }
                match self.to {
                    Some(to) => to,
                    None if self.since.elapsed() > FIRST_WITHIN || cx.stop.is_cancelled() => {
                        return self.fail("no hello arrived from the receiving client".into())
                    }
                    None => return Step::Idle,
                }
            }
        };
        let mut busy = false;
        while u64::from(self.seq) < self.count && !cx.stop.is_raised() {
            self.buf.clear();
            self.buf
                .extend_from_slice(&header(self.seq, now_us32(), &NO_TAG));
            self.buf
                .extend_from_slice(self.pattern.window(u64::from(self.seq), self.size - HEADER));
            match cx.udp.send_to(h, to, &self.buf) {
                Ok(()) => {
                    self.seq += 1;
                    self.r.bytes += self.size as u64;
                    busy = true;
                }
                Err(UdpError::SendQueueFull) => return Step::Busy,
                Err(e) => return self.fail(format!("sending datagram {}: {e}", self.seq)),
            }
        }
        if self.fins == 0 {
            self.r.ended = Instant::now();
        }
        while self.fins < FINS {
            match cx.udp.send_to(h, to, &header(FIN, self.seq, &NO_TAG)) {
                Ok(()) => self.fins += 1,
                Err(UdpError::SendQueueFull) => return Step::Busy,
                Err(e) => return self.fail(format!("sending FIN: {e}")),
            }
        }
        let _ = busy;
        self.done = true;
        Step::Done
    }

    fn results(self: Box<Self>) -> Vec<ConnResult> {
        let mut r = self.r;
        r.udp = Some(UdpCounters {
            sent: u64::from(self.seq),
            ..UdpCounters::default()
        });
        vec![r]
    }
}

/// The receiving end of one flow.
pub(crate) struct UdpRecv {
    port: u16,
    hello_to: Option<SocketAddrV4>,
    pattern: Arc<Pattern>,
    size: usize,
    handle: Option<UdpHandle>,
    tracker: SeqTracker,
    fins: u64,
    first_fin: Option<Instant>,
    last_rx: Instant,
    last_hello: Option<Instant>,
    started: Instant,
    dropped: u64,
    r: ConnResult,
    done: bool,
}

impl UdpRecv {
    /// Receives on local `port`; a receiving client names the sending
    /// server in `hello_to` and says hello until data comes.
    pub fn new(
        port: u16,
        hello_to: Option<SocketAddrV4>,
        p: &TrialParams,
        pattern: Arc<Pattern>,
    ) -> UdpRecv {
        UdpRecv {
            port,
            hello_to,
            pattern,
            size: (p.write_size as usize).max(HEADER),
            handle: None,
            tracker: SeqTracker::default(),
            fins: 0,
            first_fin: None,
            last_rx: Instant::now(),
            last_hello: None,
            started: Instant::now(),
            dropped: 0,
            r: ConnResult::start(),
            done: false,
        }
    }

    fn end(&mut self, error: Option<String>) -> Step {
        self.r.error = error;
        self.r.ended = Instant::now();
        self.done = true;
        Step::Done
    }
}

impl EndWork for UdpRecv {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        if self.done {
            return Step::Done;
        }
        let h = match bound(cx, &mut self.handle, self.port) {
            Ok(h) => h,
            Err(e) => return self.end(Some(e)),
        };
        let mut busy = false;
        while let Ok(Some((_, d))) = cx.udp.recv_from(h) {
            busy = true;
            if d.len() < HEADER {
                self.r.integrity_errors += 1;
                continue;
            }
            let seq = u32::from_le_bytes(d[..4].try_into().expect("4 bytes"));
            let send_us = u32::from_le_bytes(d[4..8].try_into().expect("4 bytes"));
            if seq == FIN {
                self.fins += 1;
                self.first_fin.get_or_insert_with(Instant::now);
                continue;
            }
            if seq == HELLO {
                continue;
            }
            let now = Instant::now();
            self.last_rx = now;
            self.r.first_data.get_or_insert(now);
            self.r.last_data = Some(now);
            if d.len() != self.size || !self.pattern.matches(u64::from(seq), &d[HEADER..]) {
                self.r.integrity_errors += 1;
            }
            self.tracker.record(seq, send_us, now_us32());
            self.r.bytes += d.len() as u64;
        }
        self.dropped = cx.udp.dropped_full(h).unwrap_or(self.dropped);
        if cx.finish.is_cancelled() {
            return self.end(Some("cancelled".into()));
        }
        if self.fins >= FINS || self.first_fin.is_some_and(|t| t.elapsed() >= AFTER_FIN) {
            return self.end(None);
        }
        let received = self.tracker.counters().received > 0;
        if cx.finish.is_raised() && self.last_rx.elapsed() >= QUIET {
            return self.end(None);
        }
        if !received && self.fins == 0 {
            if self.started.elapsed() >= FIRST_WITHIN {
                return self.end(Some(format!(
                    "no datagram arrived within {} s",
                    FIRST_WITHIN.as_secs()
                )));
            }
            if let Some(to) = self.hello_to {
                if self.last_hello.is_none_or(|t| t.elapsed() >= HELLO_EVERY) {
                    let _ = cx.udp.send_to(h, to, &header(HELLO, 0, &NO_TAG));
                    self.last_hello = Some(Instant::now());
                    busy = true;
                }
            }
        }
        if busy {
            Step::Busy
        } else {
            Step::Idle
        }
    }

    fn results(self: Box<Self>) -> Vec<ConnResult> {
        let mut r = self.r;
        let mut c = self.tracker.counters();
        c.socket_drops = self.dropped;
        r.udp = Some(c);
        vec![r]
    }
}
