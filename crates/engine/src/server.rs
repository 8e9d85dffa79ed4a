//! `tcplab server`: serves trials to several clients at a time, each on its
//! own control connection, with data on separate per-trial sockets. Every
//! connection's handshake runs on one event loop ([`crate::handshake`]),
//! within `handshake_s`; a client that completes it gets a thread of its
//! own and one of `max_clients`' slots. Every wait is bounded (`Limits`):
//! each message has `message_s` once it has begun, a greeted client
//! `idle_s` between trials; a trial's data must begin within `message_s` of
//! its setup (the client may attach probes first), pause no longer than
//! `idle_s`, and its `client_done` come within `message_s` of the data's
//! end; every thread a trial starts is joined before the next message is
//! read.

use crate::auth::{fresh_nonce, to_hex, Key};
use crate::cancel::{Canceller, Registration};
use crate::control_conn::ControlConn;
use crate::deadline::is_deadline;
use crate::error::EngineError;
use crate::handshake::{Gatekeeper, Greeted};
use crate::key_policy::{KeyPolicy, KeyRing};
use crate::key_usage::{Owner, Usage};
use crate::limits::{admit, validate, Limits};
use crate::pending::PendingLimits;
use crate::proto::{FrameError, Message};
use crate::report::SideReport;
use crate::server_budget::{self, Budget};
use crate::server_log::{trial_event, LogGate, ServerEvent, ServerLog, TrialEnd};
use crate::server_state::{LoadReservation, Shared};
use crate::trial_wait::{join_within, Cap, Wait};
use crate::watch::{poll_control, ControlEvent};
use crate::workloads::{start_server, DataWaits, PlaceHook, RunningRole};
use record::TrialParams;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The default control port.
pub const DEFAULT_PORT: u16 = 5301;

/// How often a trial's wait looks at the control connection and the clock.
const TICK: Duration = Duration::from_millis(100);

/// A bound, not yet serving, server.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
    name: String,
    hook: Option<PlaceHook>,
    stopping: Arc<AtomicBool>,
    log: Option<ServerLog>,
    keys: Option<Arc<KeyRing>>,
    pending: PendingLimits,
}

/// A server serving on a background thread; stops accepting when dropped.
pub struct ServerHandle {
    addr: SocketAddr,
    listener: TcpListener,
    stopping: Arc<AtomicBool>,
    connections: Canceller,
}

impl ServerHandle {
    /// The control address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then sees the flag and returns.
        // SAFETY: the listener is open; shutdown only changes its state.
        unsafe { libc::shutdown(self.listener.as_raw_fd(), libc::SHUT_RDWR) };
        // Wakes every client's wait: each sees its control connection
        // end, cancels its trial and joins its threads.
        self.connections.cancel();
    }
}

impl Server {
    /// Binds the control listener.
    pub fn bind(addr: SocketAddr, limits: Limits) -> Result<Server, EngineError> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| EngineError::io(&format!("binding control port {addr}"), e))?;
        crate::server_budget::fix_mmap_threshold();
        let usage = Arc::new(Usage::new(&limits, 0, PendingLimits::default().total));
        let server = Server {
            listener,
            shared: Arc::new(Shared {
                limits,
                clients: AtomicUsize::new(0),
                per_address: Mutex::new(HashMap::new()),
                load_workers: AtomicU32::new(0),
                connections: Canceller::new(),
                usage,
                recent_keys: Mutex::new(HashMap::new()),
                pace: Default::default(),
            }),
            name: format!("tcplab {}", env!("CARGO_PKG_VERSION")),
            hook: None,
            stopping: Arc::new(AtomicBool::new(false)),
            log: None,
            keys: None,
            pending: PendingLimits::default(),
        };
        Ok(server.with_pending_limits(PendingLimits::default()))
    }

    /// Places each trial's server-side threads with `hook` (embedded servers only).
    pub fn with_hook(mut self, hook: PlaceHook) -> Server {
        self.hook = Some(hook);
        self
    }

    /// Passes each client's arrival, trials and departure to `log`
    /// (`tcplab server` prints them), every string escaped and the events
    /// of unauthenticated connections rate-limited per address.
    pub fn with_log(mut self, log: ServerLog) -> Server {
        self.log = Some(log);
        self
    }

    /// Bounds the connections still in their handshake. Under a short
    /// open-file limit the total is lowered to fit
    /// ([`crate::fd_limit::split`]), and trials get what is left.
    pub fn with_pending_limits(mut self, pending: PendingLimits) -> Server {
        let fit = crate::fd_limit::split(
            &self.shared.limits,
            pending.total,
            crate::fd_limit::soft_limit(),
        );
        self.pending = PendingLimits {
            total: fit.pending,
            ..pending
        };
        let keys = self.keys.as_ref().map_or(0, |k| k.len());
        if let Some(sh) = Arc::get_mut(&mut self.shared) {
            sh.usage = Arc::new(Usage::with_descriptors(&sh.limits, keys, fit.trials));
        }
        self
    }

    /// Serves only clients that prove they hold `key` (and proves it to
    /// them): see [`crate::auth`]. The key has the server's limits only.
    pub fn with_key(self, key: Key) -> Server {
        self.with_keys(vec![(key, KeyPolicy::unlimited("key"))])
    }

    /// Serves only clients that prove they hold one of `keys`, each
    /// within its own limits (a client names its key by [`Key::id`]). An
    /// all-zero key is never used: a client naming it is refused.
    pub fn with_keys(mut self, keys: KeyRing) -> Server {
        if let Some(sh) = Arc::get_mut(&mut self.shared) {
            // Several keys share the server; one key has it all.
            sh.usage = Arc::new(Usage::new(&sh.limits, keys.len(), self.pending.total));
        }
        self.keys = Some(Arc::new(keys));
        self
    }

    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, EngineError> {
        self.listener
            .local_addr()
            .map_err(|e| EngineError::io("reading control address", e))
    }

    /// Serves until stopped: handshakes on this thread, one thread per
    /// greeted client.
    pub fn serve(self) {
        let gate = Arc::new(LogGate::new(self.log.clone()));
        let gk = Gatekeeper {
            shared: self.shared.clone(),
            keys: self.keys.clone(),
            name: self.name.clone(),
            gate: gate.clone(),
            pending: self.pending,
            early: Default::default(),
        };
        let Server {
            listener,
            name,
            hook,
            stopping,
            keys,
            ..
        } = self;
        let shared = gk.shared.clone();
        crate::handshake::run(listener, &stopping, &gk, |g: Greeted| {
            // Handshakes a key completes are paced before a thread is
            // started for one (`control_pace`).
            // (A keyless server trusts its clients: not paced.)
            let key_name = g
                .key
                .and_then(|k| Some(keys.as_ref()?.get(k)?.1.name.clone()));
            let wait = key_name.as_ref().and_then(|n| {
                shared.pace.greeting(
                    &Owner::Key(n.clone()),
                    Instant::now(),
                    shared.limits.key_handshakes_per_s,
                )
            });
            if let Some(wait) = wait {
                let reason = format!(
                    "key {:?} completes more than {} handshakes a second (after {} at once); try again in {} ms",
                    key_name.as_deref().unwrap_or_default(),
                    shared.limits.key_handshakes_per_s,
                    crate::control_pace::GREETINGS_BURST.max(2.0 * shared.limits.key_handshakes_per_s),
                    wait.as_millis().max(1)
                );
                let mut s = &g.stream;
                let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
                let mut framing = g.framing.clone();
                let _ = std::io::Write::write_all(&mut s, &g.unsent);
                let _ = framing.write(
                    &mut s,
                    &Message::Error {
                        message: reason.clone(),
                    },
                );
                gate.emit_key_holder(
                    g.peer,
                    &ServerEvent::Refused {
                        peer: g.peer,
                        key: key_name,
                        reason,
                    },
                );
                return;
            }
            let (name, hook, keys) = (name.clone(), hook.clone(), keys.clone());
            let thread_gate = gate.clone();
            let peer = g.peer;
            let spare = g.stream.try_clone();
            let spawned = std::thread::Builder::new()
                .name("tcplab-ctrl".into())
                .spawn(move || {
                    let who = Who {
                        name: &name,
                        keys: keys.as_deref(),
                    };
                    serve_client(g, who, &hook, &thread_gate);
                });
            if let (Err(e), Ok(spare)) = (spawned, spare) {
                // The client's slot went with the closure: say why, once.
                let _ = spare.set_write_timeout(Some(Duration::from_secs(1)));
                let _ = crate::proto::write_message(
                    &mut &spare,
                    &Message::Error {
                        message: format!("server busy: cannot start a thread ({e})"),
                    },
                );
                gate.emit_limited(
                    peer,
                    &ServerEvent::Refused {
                        peer,
                        key: None,
                        reason: format!("server busy: cannot start a thread ({e})"),
                    },
                );
            }
        });
    }

    /// Serves on a background thread until the returned handle is dropped.
    pub fn start(self) -> Result<ServerHandle, EngineError> {
        let listener = self
            .listener
            .try_clone()
            .map_err(|e| EngineError::io("duplicating control listener", e))?;
        let stopping = self.stopping.clone();
        let connections = self.shared.connections.clone();
        let addr = self.spawn()?;
        Ok(ServerHandle {
            addr,
            listener,
            stopping,
            connections,
        })
    }

    /// Serves on a background thread for the life of the process.
    pub fn spawn(self) -> Result<SocketAddr, EngineError> {
        let addr = self.local_addr()?;
        std::thread::Builder::new()
            .name("tcplab-server".into())
            .spawn(move || self.serve())
            .map_err(|e| EngineError::io("spawning server thread", e))?;
        Ok(addr)
    }
}

fn reply_error(s: &mut ControlConn, message: String) -> bool {
    s.send(&Message::Error { message }).is_ok()
}

fn secs(d: f64) -> Duration {
    Duration::from_secs_f64(d)
}

/// What the server says it is, and the keys it proves and asks for.
struct Who<'a> {
    name: &'a str,
    keys: Option<&'a KeyRing>,
}

/// One greeted client's control loop: its welcome, then any number of
/// trials; each arrival, trial and departure goes to the log.
fn serve_client(g: Greeted, who: Who, hook: &Option<PlaceHook>, gate: &LogGate) {
    let Greeted {
        stream,
        peer,
        client,
        key,
        framing,
        slot,
        early,
        unsent,
    } = g;
    let shared = &slot.shared;
    let Ok(mut s) = ControlConn::new(stream, framing, early, &unsent) else {
        return;
    };
    let mut trials = 0u32;
    // Dropped before `s` closes, so stopping never shuts a reused descriptor.
    let woken_on_stop: Registration = shared.connections.register(&s.stream);
    let policy = match (key, who.keys) {
        (Some(k), Some(ring)) => Some(&ring[k].1),
        _ => None,
    };
    let c = Client {
        shared,
        name: who.name,
        hook,
        gate,
        peer: Some(peer),
    };
    // A key's place among its own clients (`max_clients` of the key file),
    // held while this client is served.
    let key_slot = match policy.map(|k| (k, shared.usage.client(k))) {
        Some((k, Err(why))) => {
            c.log_refused(Some(k), &why);
            let _ = reply_error(&mut s, why);
            None
        }
        Some((_, Ok(hold))) => Some(Some(hold)),
        None => Some(None),
    };
    if key_slot.is_some() && c.welcome(&mut s, client, policy) {
        c.control_loop(&mut s, policy, &mut trials);
    }
    drop(key_slot);
    drop(woken_on_stop);
    // Arrivals and departures are limited per address like the lines
    // before authentication: a key's holder reconnecting as fast as it
    // can would otherwise fill the log.
    c.log_limited(
        policy.is_some(),
        &ServerEvent::Disconnected { peer, trials },
    );
}

/// What a client's thread works with.
struct Client<'a> {
    shared: &'a Shared,
    name: &'a str,
    hook: &'a Option<PlaceHook>,
    gate: &'a LogGate,
    peer: Option<SocketAddr>,
}

impl<'a> Client<'a> {
    fn control_loop(&self, s: &mut ControlConn, policy: Option<&'a KeyPolicy>, trials: &mut u32) {
        let l = &self.shared.limits;
        // A client that does not read cannot block the server's writes.
        let _ = s.stream.set_write_timeout(Some(secs(l.message_s)));
        loop {
            let read = s.read(Instant::now() + secs(l.idle_s), secs(l.message_s), None);
            let msg = match read {
                Ok(m) => m,
                Err(FrameError::Closed) => return,
                Err(e) if e.recoverable() => {
                    if !reply_error(s, e.to_string()) {
                        return;
                    }
                    continue;
                }
                Err(FrameError::Io(e)) if is_deadline(&e) => {
                    let why = format!(
                        "closing: idle for {} s, or a message took over {} s (--idle-timeout, --message-timeout)",
                        l.idle_s, l.message_s
                    );
                    let _ = reply_error(s, why);
                    return;
                }
                Err(e) => {
                    // Out of sync, or a frame that failed its tag: say
                    // why, then drop only this client.
                    let _ = reply_error(s, e.to_string());
                    return;
                }
            };
            // The server's work on a key's control frames is paced
            // (`control_pace`): a client past the rate waits here.
            if let Some(k) = policy {
                let wait = self.shared.pace.frame(
                    &Owner::Key(k.name.clone()),
                    Instant::now(),
                    l.key_frames_per_s,
                );
                if !wait.is_zero() {
                    std::thread::sleep(wait.min(secs(l.message_s)));
                }
            }
            let ok = match msg {
                Message::Check { params } => match self.refusal(&params, policy) {
                    None => s.send(&Message::Checked).is_ok(),
                    Some(why) => {
                        self.log_refused(policy, &why);
                        reply_error(s, why)
                    }
                },
                Message::Setup { params } => {
                    *trials += 1;
                    let (ok, outcome) = self.serve_trial(s, &params, policy);
                    crate::server_budget::return_memory();
                    if let Some(peer) = self.peer {
                        let end = match &outcome {
                            Ok(r) => TrialEnd::Ran(r),
                            Err(Ended::Refused(e)) => TrialEnd::Refused(e),
                            Err(Ended::Failed(e)) => TrialEnd::Failed(e),
                        };
                        let ran = matches!(end, TrialEnd::Ran(_));
                        let e = trial_event(peer, policy.map(|k| k.name.as_str()), &params, end);
                        // A trial that ran took its time (the generous
                        // buckets, keyless or not); refusals and failures
                        // can come as fast as a client asks.
                        self.log_limited(ran || policy.is_some(), &e);
                    }
                    ok
                }
                other => reply_error(
                    s,
                    format!("unexpected message {:?} outside a trial", other.kind()),
                ),
            };
            if !ok {
                return;
            }
        }
    }

    /// Logs the client's arrival and welcomes it; false if the connection failed.
    fn welcome(&self, s: &mut ControlConn, client: String, key: Option<&KeyPolicy>) -> bool {
        let key = key.map(|k| k.name.clone());
        if let Some(peer) = self.peer {
            self.log_limited(
                key.is_some(),
                &ServerEvent::Connected {
                    peer,
                    client,
                    key: key.clone(),
                },
            );
        }
        let welcome = Message::Welcome {
            server: self.name.to_string(),
            key,
            checks: true,
        };
        s.send(&welcome).is_ok()
    }

    /// Why trial `p` would be refused (the key's limits, then the
    /// server's), or `None` if it would be served.
    fn refusal(&self, p: &TrialParams, key: Option<&KeyPolicy>) -> Option<String> {
        let l = &self.shared.limits;
        key.map_or(Ok(()), |k| k.check(p))
            .and_then(|()| validate(p, l))
            .and_then(|()| admit(p, l))
            .err()
    }

    /// Logs a refusal of the client holding `key`.
    fn log_refused(&self, key: Option<&KeyPolicy>, reason: &str) {
        if let Some(peer) = self.peer {
            self.log_limited(
                key.is_some(),
                &ServerEvent::Refused {
                    peer,
                    key: key.map(|k| k.name.clone()),
                    reason: reason.to_string(),
                },
            );
        }
    }

    /// Logs `e` within the log's limits: per address, and for a client
    /// without a key also server-wide (a key holder's lines cannot be
    /// hidden by a keyless flood from many addresses).
    fn log_limited(&self, key_holder: bool, e: &ServerEvent) {
        if let Some(peer) = self.peer {
            if key_holder {
                self.gate.emit_key_holder(peer, e);
            } else {
                self.gate.emit_limited(peer, e);
            }
        }
    }

    /// The uid owning the client's end of the control connection, where
    /// the client is on this host (loopback): its trials' data connections
    /// must come from the same user ([`DataWaits::owner`]).
    fn client_owner(&self, s: &ControlConn) -> Option<u32> {
        let peer = self.peer.filter(|p| p.ip().is_loopback())?;
        let local = s.stream.local_addr().ok()?;
        crate::peer_owner::peer_owner(local, peer).ok()
    }

    /// Runs the server side of one trial. Returns false if the control
    /// connection is no longer usable, and this side's report (or why there is
    /// none) for the log. Every thread the trial started has ended when it
    /// returns.
    fn serve_trial(
        &self,
        s: &mut ControlConn,
        p: &TrialParams,
        key: Option<&KeyPolicy>,
    ) -> (bool, Result<SideReport, Ended>) {
        let refused =
            |s: &mut ControlConn, e: String| (reply_error(s, e.clone()), Err(Ended::Refused(e)));
        let failed =
            |s: &mut ControlConn, e: String| (reply_error(s, e.clone()), Err(Ended::Failed(e)));
        if let Some(e) = self.refusal(p, key) {
            return refused(s, e);
        }
        // The key's own caps: its trial cap, and its rate on the server's
        // unpaced sending.
        let limits = key.map_or_else(
            || self.shared.limits.clone(),
            |k| k.limits(&self.shared.limits),
        );
        let l = &limits;
        // The key's (or address's) share of the server until the trial ends.
        let (grant, paced, mut watch) =
            match server_budget::grant(&self.shared.usage, key, self.peer, p, l) {
                Ok(g) => g,
                Err(e) => return refused(s, e),
            };
        let p = &paced;
        let _load = match LoadReservation::take(self.shared, p) {
            Ok(r) => r,
            Err(e) => return refused(s, e),
        };
        let ip = match s.stream.local_addr() {
            Ok(a) => a.ip(),
            Err(e) => return failed(s, format!("reading local address: {e}")),
        };
        // Under a rate grant its watch reads the sockets' byte counts ten
        // times a second, and those that close in between leave theirs
        // behind (a getsockopt each: not done where no rate is held).
        let cancel = if watch.holds_rate() {
            Canceller::metered()
        } else {
            Canceller::new()
        };
        // Every trial has a token, keyed or not: only the client it was
        // sent to can open its data connections or count its datagrams.
        let token = match fresh_nonce() {
            Ok(t) => t,
            Err(e) => return failed(s, e.to_string()),
        };
        let waits = DataWaits {
            first: secs(l.message_s),
            stall: secs(l.idle_s),
            from: self.peer.map(|a| a.ip()),
            token: Some(token),
            owner: self.client_owner(s),
        };
        let (role, ports) = match start_server(p, ip, &cancel, self.hook.clone(), waits) {
            Ok(r) => r,
            Err(e) => return failed(s, e.to_string()),
        };
        // The longest this trial may hold the server: a duration-bound
        // trial gets what the client itself allows, never over the cap.
        let cap = p
            .duration_s
            .map_or(l.max_trial_s, |d| (d * 3.0 + 30.0).min(l.max_trial_s));
        let end_by = Cap {
            by: Instant::now() + secs(cap),
            max_trial_s: l.max_trial_s,
        };
        let lost = || {
            Err(Ended::Failed(
                "the client's control connection closed".into(),
            ))
        };
        let token = waits.token.map(|t| to_hex(&t));
        if s.send(&Message::Ready { ports, token }).is_err() {
            cancel.cancel();
            role.join();
            return (false, lost());
        }
        let budget = Budget::new(&mut watch, &cancel);
        let waited = if role.is_active() {
            self.await_own_end(s, &role, end_by, budget)
        } else {
            self.await_client_done(s, &role, end_by, budget)
        };
        let ended = match waited {
            Wait::Done => {
                let budget = Budget::new(&mut watch, &cancel);
                match join_within(&s.stream, role, &cancel, secs(l.message_s), budget) {
                    Ok(report) => {
                        let ok = s
                            .send(&Message::Report {
                                report: report.clone(),
                            })
                            .is_ok();
                        (ok, Ok(report))
                    }
                    Err(why) => failed(s, why),
                }
            }
            Wait::Lost => {
                cancel.cancel();
                role.join();
                (false, lost())
            }
            Wait::Abort(why) => {
                cancel.cancel();
                role.join();
                failed(s, why)
            }
        };
        // What it took beyond its grant is its owner's, for the next trial
        // (the threads have ended: one last look counts all of it).
        let _ = watch.check(&cancel);
        grant.charge(watch.overuse());
        ended
    }

    /// An active server side (it sends): waits for its threads, watching the
    /// control connection for the client leaving and the clock for the cap.
    fn await_own_end(
        &self,
        s: &mut ControlConn,
        role: &RunningRole,
        end_by: Cap,
        mut b: Budget,
    ) -> Wait {
        while !role.is_finished() {
            match poll_control(s.stream.as_fd(), TICK) {
                ControlEvent::Hangup => return Wait::Lost,
                ControlEvent::Readable => {
                    // The client says nothing while the server sends.
                    return match self.read_within(s) {
                        Ok(m) => Wait::Abort(format!(
                            "unexpected message {} while the server sends",
                            m.kind()
                        )),
                        Err(_) => Wait::Lost,
                    };
                }
                ControlEvent::Quiet => {}
            }
            if let Some(why) = past_limits(Instant::now(), end_by, &mut b) {
                return Wait::Abort(why);
            }
        }
        Wait::Done
    }

    /// A passive server side: waits for the client's `client_done`, which
    /// must come within `message_s` of this side's end, and by the cap.
    fn await_client_done(
        &self,
        s: &mut ControlConn,
        role: &RunningRole,
        end_by: Cap,
        mut b: Budget,
    ) -> Wait {
        let l = &self.shared.limits;
        let mut ended_at = None;
        loop {
            match poll_control(s.stream.as_fd(), TICK) {
                ControlEvent::Hangup => return Wait::Lost,
                ControlEvent::Readable => {
                    return match self.read_within(s) {
                        Ok(Message::ClientDone) => {
                            role.finish();
                            Wait::Done
                        }
                        Ok(other) => {
                            Wait::Abort(format!("expected client_done, got {}", other.kind()))
                        }
                        Err(_) => Wait::Lost,
                    }
                }
                ControlEvent::Quiet => {}
            }
            let now = Instant::now();
            if role.is_finished() {
                let at = *ended_at.get_or_insert(now);
                if now.duration_since(at) >= secs(l.message_s) {
                    return Wait::Abort(format!(
                        "no client_done within {} s of the trial's end (--message-timeout)",
                        l.message_s
                    ));
                }
            }
            if let Some(why) = past_limits(now, end_by, &mut b) {
                return Wait::Abort(why);
            }
        }
    }

    /// Reads one message that has begun arriving, within `message_s`.
    fn read_within(&self, s: &mut ControlConn) -> Result<Message, FrameError> {
        let within = secs(self.shared.limits.message_s);
        s.read(Instant::now() + within, within, None)
    }
}

/// Why a trial must end now: past its wall-clock cap, or over its budget
/// (rate or CPU); the two waits check both on every tick.
fn past_limits(now: Instant, end_by: Cap, b: &mut Budget) -> Option<String> {
    if now >= end_by.by {
        return Some(end_by.over());
    }
    b.over()
}

/// A trial's setup a client's key, or the server, turned down (nothing
/// ran), or a trial that failed once set up.
enum Ended {
    Refused(String),
    Failed(String),
}
