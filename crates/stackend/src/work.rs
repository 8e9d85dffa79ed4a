//! What one end does on the stack, as a state machine stepped by the
//! driver between two polls of the stack: the workloads (stream, rr, crr,
//! http) implement [`EndWork`] over the stack's sockets.

use crate::metrics::StackStats;
use engine::cancel::StopFlag;
use engine::report::ConnResult;
use stack::iface::udp::{UdpHandle, UdpSockets};
use stack::socket::tcp::{TcpHandle, TcpSockets};
use stack::tcp::state::State;
use std::net::{Ipv4Addr, SocketAddrV4};

/// What a step sees: the stack's TCP sockets, its address and the flags
/// of the trial.
pub(crate) struct Ctx<'a> {
    /// The stack's TCP sockets.
    pub tcp: &'a mut TcpSockets,
    /// The stack's UDP sockets.
    pub udp: &'a mut UdpSockets,
    /// UDP sockets the work bound: the driver closes them once what they
    /// queued has left.
    pub udp_bound: &'a mut Vec<UdpHandle>,
    /// The stack's own address.
    pub local: Ipv4Addr,
    /// The stack's clock now.
    pub now: stack::time::Instant,
    /// Raised when an active side's amount of time is up.
    pub stop: &'a StopFlag,
    /// Raised when a passive side should wrap up (the other end finished).
    pub finish: &'a StopFlag,
    /// The end's connections' counters, captured as each ends.
    pub stats: &'a mut StackStats,
    /// When the work wants to be stepped again though nothing arrives
    /// (a paced reader's next read); the driver sleeps no longer.
    pub wake: Option<stack::time::Instant>,
}

impl Ctx<'_> {
    /// Asks to be stepped again by `at` at the latest.
    pub fn wake_by(&mut self, at: stack::time::Instant) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }
}

/// What a step did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Waiting on the network: the driver may sleep on the device.
    Idle,
    /// Moved data or changed state: poll again at once.
    Busy,
    /// Finished: the results are ready.
    Done,
}

/// One end's work on the stack.
pub(crate) trait EndWork: Send {
    /// Does what it can now.
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step;
    /// The per-connection results (the driver fills in the CPU time).
    fn results(self: Box<Self>) -> Vec<ConnResult>;
}

/// A listener opened on first use.
#[derive(Debug, Default)]
pub(crate) struct Listener {
    handle: Option<TcpHandle>,
}

impl Listener {
    /// The next established connection on `port`, if one is waiting.
    pub fn accept(&mut self, tcp: &mut TcpSockets, port: u16) -> Result<Option<TcpHandle>, String> {
        let l = match self.handle {
            Some(l) => l,
            None => {
                let l = tcp
                    .listen(port, 1024)
                    .map_err(|e| format!("listening on port {port}: {e}"))?;
                self.handle = Some(l);
                l
            }
        };
        tcp.accept(l).map_err(|e| format!("accepting: {e}"))
    }

    /// Stops listening.
    pub fn close(&mut self, tcp: &mut TcpSockets) {
        if let Some(l) = self.handle.take() {
            let _ = tcp.close(l);
        }
    }
}

/// Dials `to` (once); `Ok(None)` while the handshake is under way.
pub(crate) fn dial(
    cx: &mut Ctx<'_>,
    to: SocketAddrV4,
    pending: &mut Option<TcpHandle>,
) -> Result<Option<TcpHandle>, String> {
    let h = match *pending {
        Some(h) => h,
        None => {
            let h = cx
                .tcp
                .connect(cx.local, to, cx.now)
                .map_err(|e| format!("connecting to {to}: {e}"))?;
            *pending = Some(h);
            h
        }
    };
    let conn = cx
        .tcp
        .connection(h)
        .map_err(|e| format!("connecting to {to}: {e}"))?;
    if let Some(e) = conn.error() {
        return Err(format!("connecting to {to}: {e}"));
    }
    if matches!(conn.state(), State::SynSent | State::SynReceived) {
        return Ok(None);
    }
    *pending = None;
    Ok(Some(h))
}

/// Sends as much of `data[*sent..]` as the send buffer takes; returns
/// whether anything was taken.
pub(crate) fn send_some(
    tcp: &mut TcpSockets,
    h: TcpHandle,
    data: &[u8],
    sent: &mut usize,
) -> Result<bool, String> {
    if *sent >= data.len() {
        return Ok(false);
    }
    let n = tcp
        .send(h, &data[*sent..])
        .map_err(|e| format!("sending: {e}"))?;
    *sent += n;
    Ok(n > 0)
}

/// Whether the connection has ended on both sides as far as this end
/// needs (closed, or waiting out TIME-WAIT).
pub(crate) fn is_over(tcp: &TcpSockets, h: TcpHandle) -> bool {
    tcp.connection(h).map_or(true, |c| {
        matches!(c.state(), State::Closed | State::TimeWait)
    })
}

/// One connection's work once it is open.
pub(crate) trait ConnWork: Send {
    /// Does what it can on `h`; `Done` once it closed the connection.
    fn step(&mut self, cx: &mut Ctx<'_>, h: TcpHandle) -> Result<Step, String>;
    /// What it measured (`error`: why it ended early, if it did).
    fn into_result(self: Box<Self>, error: Option<String>) -> ConnResult;
}

/// A connection this end dials, then works on.
pub(crate) struct Dialed {
    to: SocketAddrV4,
    pending: Option<TcpHandle>,
    open: Option<TcpHandle>,
    work: Option<Box<dyn ConnWork>>,
    error: Option<String>,
    result: Option<ConnResult>,
}

impl Dialed {
    /// Dials `to`, then runs `work` on the connection.
    pub fn new(to: SocketAddrV4, work: Box<dyn ConnWork>) -> Dialed {
        Dialed {
            to,
            pending: None,
            open: None,
            work: Some(work),
            error: None,
            result: None,
        }
    }

    fn end(&mut self, cx: &mut Ctx<'_>, error: Option<String>) -> Step {
        if let Some(h) = self.open.take().or(self.pending.take()) {
            if error.is_some() {
                cx.stats.capture(cx.tcp, h);
                let _ = cx.tcp.abort(h);
            }
        }
        self.error = error;
        if let Some(w) = self.work.take() {
            self.result = Some(w.into_result(self.error.clone()));
        }
        Step::Done
    }
}

impl EndWork for Dialed {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        if self.result.is_some() {
            return Step::Done;
        }
        let h = match self.open {
            Some(h) => h,
            None => {
                if cx.stop.is_cancelled() {
                    return self.end(cx, Some("cancelled before connecting".into()));
                }
                match dial(cx, self.to, &mut self.pending) {
                    Ok(Some(h)) => {
                        self.open = Some(h);
                        h
                    }
                    Ok(None) => return Step::Idle,
                    Err(e) => return self.end(cx, Some(e)),
                }
            }
        };
        let work = self.work.as_mut().expect("work until done");
        match work.step(cx, h) {
            Ok(Step::Done) => {
                self.open = None;
                self.end(cx, None)
            }
            Ok(s) => s,
            Err(e) => self.end(cx, Some(e)),
        }
    }

    fn results(self: Box<Self>) -> Vec<ConnResult> {
        vec![self
            .result
            .unwrap_or_else(|| ConnResult::failed("the connection never ended".into()))]
    }
}

/// Makes the work for each accepted connection.
pub(crate) type MakeWork = Box<dyn FnMut() -> Box<dyn ConnWork> + Send>;

/// Connections this end accepts on a port: `max` of them (streams, rr),
/// or as many as arrive until the other end finishes (crr, http), each
/// worked on by fresh work from `make`.
pub(crate) struct Accepted {
    port: u16,
    listener: Listener,
    make: MakeWork,
    max: Option<usize>,
    accepted: usize,
    live: Vec<(TcpHandle, Box<dyn ConnWork>)>,
    finished: Vec<ConnResult>,
    merge: bool,
}

impl Accepted {
    /// Accepts on `port`: `max` connections, or (None) until told to finish;
    /// `merge` sums every connection into one result, as a kernel server
    /// thread serving them one after another reports.
    pub fn new(port: u16, make: MakeWork, max: Option<usize>, merge: bool) -> Accepted {
        Accepted {
            port,
            listener: Listener::default(),
            make,
            max,
            accepted: 0,
            live: Vec::new(),
            finished: Vec::new(),
            merge,
        }
    }
}

impl EndWork for Accepted {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        let mut busy = false;
        while self.max.is_none_or(|m| self.accepted < m) && !cx.finish.is_raised() {
            match self.listener.accept(cx.tcp, self.port) {
                Ok(Some(h)) => {
                    self.live.push((h, (self.make)()));
                    self.accepted += 1;
                    busy = true;
                }
                Ok(None) => break,
                Err(e) => {
                    self.finished.push(ConnResult::failed(e));
                    self.max = Some(self.accepted);
                    break;
                }
            }
        }
        let mut i = 0;
        while i < self.live.len() {
            let (h, work) = &mut self.live[i];
            let h = *h;
            let outcome = work.step(cx, h);
            match outcome {
                Ok(Step::Busy) => {
                    busy = true;
                    i += 1;
                }
                Ok(Step::Idle) => i += 1,
                Ok(Step::Done) | Err(_) => {
                    let (_, work) = self.live.swap_remove(i);
                    let error = outcome.err();
                    if error.is_some() {
                        cx.stats.capture(cx.tcp, h);
                        let _ = cx.tcp.abort(h);
                    }
                    self.finished.push(work.into_result(error));
                    busy = true;
                }
            }
        }
        let all_accepted = self.max.is_some_and(|m| self.accepted >= m);
        if self.live.is_empty() && (all_accepted || cx.finish.is_raised()) {
            self.listener.close(cx.tcp);
            return Step::Done;
        }
        if busy {
            Step::Busy
        } else {
            Step::Idle
        }
    }

    fn results(self: Box<Self>) -> Vec<ConnResult> {
        let mut out = self.finished;
        if let Some(m) = self.max {
            for i in self.accepted..m {
                out.push(ConnResult::failed(format!(
                    "accepting data connection {i}: none arrived"
                )));
            }
        }
        if !self.merge || out.len() <= 1 {
            return out;
        }
        let mut all = out.into_iter();
        let mut acc = all.next().expect("more than one");
        for r in all {
            acc.bytes += r.bytes;
            acc.transactions += r.transactions;
            acc.integrity_errors += r.integrity_errors;
            acc.calls += r.calls;
            acc.started = acc.started.min(r.started);
            acc.ended = acc.ended.max(r.ended);
            acc.error = acc.error.or(r.error);
        }
        vec![acc]
    }
}

/// Several ends' work on one stack (parallel connections).
pub(crate) struct Many(pub Vec<Box<dyn EndWork>>, pub Vec<bool>);

impl Many {
    /// All of `works`, stepped in turn.
    pub fn new(works: Vec<Box<dyn EndWork>>) -> Many {
        let n = works.len();
        Many(works, vec![false; n])
    }
}

impl EndWork for Many {
    fn step(&mut self, cx: &mut Ctx<'_>) -> Step {
        let mut busy = false;
        for (w, done) in self.0.iter_mut().zip(self.1.iter_mut()) {
            if *done {
                continue;
            }
            match w.step(cx) {
                Step::Done => {
                    *done = true;
                    busy = true;
                }
                Step::Busy => busy = true,
                Step::Idle => {}
            }
        }
        if self.1.iter().all(|d| *d) {
            Step::Done
        } else if busy {
            Step::Busy
        } else {
            Step::Idle
        }
    }

    fn results(self: Box<Self>) -> Vec<ConnResult> {
        self.0.into_iter().flat_map(|w| w.results()).collect()
    }
}
