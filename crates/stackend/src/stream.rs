//! tcp-stream on the stack: the sender writes its share of the pattern in
//! `write_size` pieces, ends its sending and waits for the receiver to
//! close; the receiver reads in `read_size` pieces, checks every byte
//! against the pattern and times first byte to last, as the kernel ends do
//! (with `--recv-work`, one piece per its work time: [`ReadPacing`]).

use crate::read_pacing::ReadPacing;
use crate::work::{ConnWork, Ctx, Step};
use engine::pattern::Pattern;
use engine::report::ConnResult;
use engine::workloads::Amount;
use record::TrialParams;
use stack::socket::tcp::TcpHandle;
use std::sync::Arc;
use std::time::Instant;

/// Reads of more than this are cut (the stack copies out of its buffer).
const MAX_READ: usize = 256 * 1024;

enum Phase {
    Sending,
    Draining,
}

/// The sending end of one stream connection.
pub(crate) struct StreamSend {
    pattern: Arc<Pattern>,
    write_size: usize,
    limit: u64,
    off: u64,
    phase: Phase,
    r: ConnResult,
    sink: Vec<u8>,
}

impl StreamSend {
    /// Sends `amount` of the pattern as trial `p` says.
    pub fn new(p: &TrialParams, pattern: Arc<Pattern>, amount: Amount) -> StreamSend {
        StreamSend {
            pattern,
            write_size: p.write_size as usize,
            limit: match amount {
                Amount::Bytes(b) => b,
                Amount::Until => u64::MAX,
            },
            off: 0,
            phase: Phase::Sending,
            r: ConnResult::start(),
            sink: vec![0; 4096],
        }
    }
}

impl ConnWork for StreamSend {
    fn step(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<Step, String> {
        match self.phase {
            Phase::Sending => {
                let mut busy = false;
                while self.off < self.limit && !cx.stop.is_raised() {
                    let len = self.write_size.min((self.limit - self.off) as usize);
                    let n = cx
                        .tcp
                        .send(h, self.pattern.window(self.off, len))
                        .map_err(|e| format!("sending: {e}"))?;
                    if n == 0 {
                        break;
                    }
                    self.off += n as u64;
                    self.r.calls += 1;
                    busy = true;
                }
                if self.off >= self.limit || cx.stop.is_raised() {
                    self.r.ended = Instant::now();
                    self.r.bytes = self.off;
                    cx.tcp
                        .shutdown(h)
                        .map_err(|e| format!("shutting down: {e}"))?;
                    self.phase = Phase::Draining;
                    return Ok(Step::Busy);
                }
                Ok(if busy { Step::Busy } else { Step::Idle })
            }
            Phase::Draining => {
                // Waits for the receiver's close, so the counters are read
                // after the last ACK (as the kernel end reads TCP_INFO).
                while cx
                    .tcp
                    .recv(h, &mut self.sink)
                    .map_err(|e| format!("draining: {e}"))?
                    > 0
                {}
                let over =
                    cx.tcp.peer_finished(h).unwrap_or(true) || crate::work::is_over(cx.tcp, h);
                if !over {
                    return Ok(Step::Idle);
                }
                cx.stats.capture(cx.tcp, h);
                let _ = cx.tcp.close(h);
                Ok(Step::Done)
            }
        }
    }

    fn into_result(self: Box<Self>, error: Option<String>) -> ConnResult {
        let mut r = self.r;
        if error.is_some() {
            r.ended = Instant::now();
            r.bytes = self.off;
        }
        r.error = error;
        r
    }
}

/// The receiving end of one stream connection.
pub(crate) struct StreamRecv {
    pattern: Arc<Pattern>,
    buf: Vec<u8>,
    off: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    pacing: Option<ReadPacing>,
    r: ConnResult,
}

impl StreamRecv {
    /// Receives and checks the pattern as trial `p` says.
    pub fn new(p: &TrialParams, pattern: Arc<Pattern>) -> StreamRecv {
        StreamRecv {
            pattern,
            buf: vec![0; (p.read_size as usize).clamp(1, MAX_READ)],
            off: 0,
            first: None,
            last: None,
            pacing: ReadPacing::new(crate::dilation::recv_work_ns_per_kb(p)),
            r: ConnResult::start(),
        }
    }
}

impl ConnWork for StreamRecv {
    fn step(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<Step, String> {
        let mut busy = false;
        loop {
            if let Some(pacing) = self.pacing.as_ref().filter(|p| !p.ready(cx.now)) {
                cx.wake_by(pacing.ready_at());
                return Ok(if busy { Step::Busy } else { Step::Idle });
            }
            let n = cx
                .tcp
                .recv(h, &mut self.buf)
                .map_err(|e| format!("receiving: {e}"))?;
            if n == 0 {
                break;
            }
            let now = Instant::now();
            if self.first.is_none() {
                self.first = Some(now);
                self.r.first_read_bytes = n as u64;
            }
            self.last = Some(now);
            self.r.calls += 1;
            if !self.pattern.matches(self.off, &self.buf[..n]) {
                self.r.integrity_errors += 1;
            }
            self.off += n as u64;
            busy = true;
            if let Some(pacing) = &mut self.pacing {
                let more = cx.tcp.connection(h).is_ok_and(|c| c.recv_queued() > 0);
                pacing.consumed(n, cx.now, more);
            }
        }
        if cx
            .tcp
            .peer_finished(h)
            .map_err(|e| format!("receiving: {e}"))?
        {
            if self.pacing.is_some() {
                // The pacing returned above until the last read's work
                // was done: the reader is done with its last byte now, as
                // a kernel receiver is after its last burn.
                self.last = Some(Instant::now());
            }
            cx.stats.capture(cx.tcp, h);
            let _ = cx.tcp.close(h);
            return Ok(Step::Done);
        }
        Ok(if busy { Step::Busy } else { Step::Idle })
    }

    fn into_result(self: Box<Self>, error: Option<String>) -> ConnResult {
        let mut r = self.r;
        r.ended = Instant::now();
        r.bytes = self.off;
        r.first_data = self.first;
        r.last_data = self.last;
        r.error = error;
        r
    }
}
