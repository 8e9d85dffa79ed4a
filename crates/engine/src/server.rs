//! `tcplab server`: serves trials to several clients at a time, each on its
//! own control connection, with data on separate per-trial sockets. Every
//! wait is bounded (`Limits`): a connection has `handshake_s` to say hello,
//! each message `message_s` once it has begun, a greeted client `idle_s`
//! between trials; a trial's data must begin within `message_s` of its
//! setup (the client may attach probes first), pause no longer than
//! `idle_s`, and its `client_done` come within `message_s` of the data's end;
//! every thread a trial starts is joined before the next message is read.

use crate::auth::{fresh_nonce, nonce_from_hex, to_hex, Key, Nonce, CLIENT_LABEL, SERVER_LABEL};
use crate::cancel::{Canceller, Registration};
use crate::deadline::{is_deadline, DeadlineReader};
use crate::error::EngineError;
use crate::key_policy::{KeyPolicy, KeyRing};
use crate::key_usage::Usage;
use crate::limits::{admit, validate, Limits};
use crate::proto::{read_message, write_message, FrameError, Message};
use crate::report::SideReport;
use crate::server_budget::{self, Budget};
use crate::server_log::{trial_event, ServerEvent, ServerLog, TrialEnd};
use crate::server_state::{ClientSlot, LoadReservation, Shared};
use crate::trial_wait::{join_within, Cap, Wait};
use crate::watch::{poll_control, ControlEvent};
use crate::workloads::{start_server, DataWaits, PlaceHook, RunningRole};
use record::TrialParams;
use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
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
        let usage = Arc::new(Usage::new(&limits, 0));
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                limits,
                clients: AtomicUsize::new(0),
                per_address: Mutex::new(HashMap::new()),
                load_workers: AtomicU32::new(0),
                connections: Canceller::new(),
                usage,
            }),
            name: format!("tcplab {}", env!("CARGO_PKG_VERSION")),
            hook: None,
            stopping: Arc::new(AtomicBool::new(false)),
            log: None,
            keys: None,
        })
    }

    /// Places each trial's server-side threads with `hook` (embedded servers only).
    pub fn with_hook(mut self, hook: PlaceHook) -> Server {
        self.hook = Some(hook);
        self
    }

    /// Passes each client's arrival, trials and departure to `log`
    /// (`tcplab server` prints them).
    pub fn with_log(mut self, log: ServerLog) -> Server {
        self.log = Some(log);
        self
    }

    /// Serves only clients that prove they hold `key` (and proves it to
    /// them): see [`crate::auth`]. The key has the server's limits only.
    pub fn with_key(self, key: Key) -> Server {
        self.with_keys(vec![(key, KeyPolicy::unlimited("key"))])
    }

    /// Serves only clients that prove they hold one of `keys`, each
    /// within its own limits (a client names its key by [`Key::id`]).
    pub fn with_keys(mut self, keys: KeyRing) -> Server {
        if let Some(sh) = Arc::get_mut(&mut self.shared) {
            // Several keys share the server; one key has it all.
            sh.usage = Arc::new(Usage::new(&sh.limits, keys.len()));
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

    /// Serves forever, one thread per client.
    pub fn serve(self) {
        for conn in self.listener.incoming() {
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = conn else {
                // E.g. out of descriptors: back off instead of spinning.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            let accepted = Instant::now();
            let slot = match ClientSlot::take(&self.shared, &stream) {
                Ok(slot) => slot,
                Err(reason) => {
                    self.refuse(stream, reason);
                    continue;
                }
            };
            // Kept to say why, should no thread start for this client.
            let spare = stream.try_clone();
            let name = self.name.clone();
            let hook = self.hook.clone();
            let log = self.log.clone();
            let keys = self.keys.clone();
            let spawned = std::thread::Builder::new()
                .name("tcplab-ctrl".into())
                .spawn(move || {
                    let slot = slot;
                    let who = Who {
                        name: &name,
                        keys: keys.as_deref(),
                    };
                    serve_client(stream, accepted, &slot.shared, who, &hook, &log);
                });
            match (spawned, spare) {
                (Ok(_), _) => {}
                (Err(e), Ok(spare)) => {
                    self.refuse(spare, format!("server busy: cannot start a thread ({e})"))
                }
                (Err(_), Err(_)) => {}
            }
        }
    }

    /// Tells a connection why it is not served (one line), logs it, and
    /// closes it.
    fn refuse(&self, mut stream: TcpStream, reason: String) {
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let _ = write_message(
            &mut stream,
            &Message::Error {
                message: reason.clone(),
            },
        );
        if let (Some(log), Ok(peer)) = (&self.log, stream.peer_addr()) {
            log(&ServerEvent::Refused {
                peer,
                key: None,
                reason,
            });
        }
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

fn reply_error(s: &mut TcpStream, message: String) -> bool {
    write_message(s, &Message::Error { message }).is_ok()
}

fn secs(d: f64) -> Duration {
    Duration::from_secs_f64(d)
}

/// What the server says it is, and the keys it proves and asks for.
struct Who<'a> {
    name: &'a str,
    keys: Option<&'a KeyRing>,
}

/// One client's control loop: hello (or the key's handshake), then any
/// number of trials; each arrival, refusal, trial and departure goes to `log`.
fn serve_client(
    mut s: TcpStream,
    accepted: Instant,
    shared: &Shared,
    who: Who,
    hook: &Option<PlaceHook>,
    log: &Option<ServerLog>,
) {
    let peer = s.peer_addr().ok();
    let mut trials = 0u32;
    let mut greeted = false;
    // Dropped before `s` closes, so stopping never shuts a reused descriptor.
    let woken_on_stop: Registration = shared.connections.register(&s);
    let client = Client {
        shared,
        name: who.name,
        keys: who.keys,
        hook,
        log,
        peer,
    };
    client.control_loop(&mut s, accepted, &mut greeted, &mut trials);
    drop(woken_on_stop);
    if let (Some(log), Some(peer), true) = (log, peer, greeted) {
        log(&ServerEvent::Disconnected { peer, trials });
    }
}

/// What a client's thread works with.
struct Client<'a> {
    shared: &'a Shared,
    name: &'a str,
    keys: Option<&'a KeyRing>,
    hook: &'a Option<PlaceHook>,
    log: &'a Option<ServerLog>,
    peer: Option<SocketAddr>,
}

impl<'a> Client<'a> {
    fn control_loop(
        &self,
        s: &mut TcpStream,
        accepted: Instant,
        greeted: &mut bool,
        trials: &mut u32,
    ) {
        let l = &self.shared.limits;
        let _ = s.set_nodelay(true);
        // A client that does not read cannot block the server's writes.
        let _ = s.set_write_timeout(Some(secs(l.message_s)));
        let handshake_by = accepted + secs(l.handshake_s);
        // A key handshake under way: the client's self-description and
        // nonce, the server's nonce, the key the client named.
        let mut challenged: Option<Challenge<'a>> = None;
        // The key the client proved, once greeted with one, and its slot
        // among the key's clients.
        let mut policy: Option<&'a KeyPolicy> = None;
        let mut _key_slot = None;
        loop {
            let read = if *greeted {
                let mut r =
                    DeadlineReader::new(s, Instant::now() + secs(l.idle_s), secs(l.message_s));
                read_message(&mut r)
            } else {
                let mut r = DeadlineReader::new(s, handshake_by, secs(l.handshake_s))
                    .no_later_than(handshake_by);
                read_message(&mut r)
            };
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
                    let why = if !*greeted {
                        format!(
                            "closing: no hello within {} s (--handshake-timeout)",
                            l.handshake_s
                        )
                    } else {
                        format!(
                            "closing: idle for {} s, or a message took over {} s (--idle-timeout, --message-timeout)",
                            l.idle_s, l.message_s
                        )
                    };
                    let _ = reply_error(s, why);
                    return;
                }
                Err(e) => {
                    // Out of sync: say why, then drop only this client.
                    let _ = reply_error(s, e.to_string());
                    return;
                }
            };
            let ok = match msg {
                Message::Hello { .. } if self.keys.is_some() => {
                    self.refuse(
                        s,
                        None,
                        "authentication required: this server has a key (bench --key FILE)",
                    );
                    false
                }
                Message::AuthHello {
                    client,
                    nonce,
                    key_id,
                } if !*greeted => match self.challenge(s, &nonce, key_id.as_deref()) {
                    Some((key, client_nonce, server_nonce)) => {
                        challenged = Some(Challenge {
                            client,
                            client_nonce,
                            server_nonce,
                            key,
                        });
                        true
                    }
                    None => false,
                },
                Message::AuthProof { proof } if !*greeted => {
                    let Some(c) = challenged.take() else {
                        self.refuse(s, None, "auth_proof before auth_hello");
                        return;
                    };
                    let (key, named) = c.key;
                    let proof = crate::auth::from_hex(&proof).unwrap_or_default();
                    if !key.verify(CLIENT_LABEL, &c.client_nonce, &c.server_nonce, &proof) {
                        self.refuse(s, None, "authentication failed: the client's key differs");
                        return;
                    }
                    match self.shared.usage.client(named) {
                        Ok(hold) => _key_slot = Some(hold),
                        Err(why) => {
                            self.refuse(s, Some(named), &why);
                            return;
                        }
                    }
                    *greeted = true;
                    policy = Some(named);
                    self.welcome(s, c.client, policy)
                }
                Message::Error { .. } if challenged.is_some() => {
                    // The client found our proof wrong and said so.
                    self.log_refused(None, "authentication failed: the client's key differs");
                    return;
                }
                Message::Hello { client } => {
                    *greeted = true;
                    self.welcome(s, client, None)
                }
                Message::Setup { .. } | Message::Check { .. } if !*greeted => {
                    reply_error(s, "expected hello before setup".into())
                }
                Message::Check { params } => match self.refusal(&params, policy) {
                    None => write_message(s, &Message::Checked).is_ok(),
                    Some(why) => {
                        self.log_refused(policy, &why);
                        reply_error(s, why)
                    }
                },
                Message::Setup { params } => {
                    *trials += 1;
                    let (ok, outcome) = self.serve_trial(s, &params, policy);
                    crate::server_budget::return_memory();
                    if let (Some(log), Some(peer)) = (self.log, self.peer) {
                        let end = match &outcome {
                            Ok(r) => TrialEnd::Ran(r),
                            Err(Ended::Refused(e)) => TrialEnd::Refused(e),
                            Err(Ended::Failed(e)) => TrialEnd::Failed(e),
                        };
                        log(&trial_event(
                            peer,
                            policy.map(|k| k.name.as_str()),
                            &params,
                            end,
                        ));
                    }
                    ok
                }
                other => reply_error(
                    s,
                    format!("unexpected message {:?} outside a trial", kind(&other)),
                ),
            };
            if !ok {
                return;
            }
        }
    }

    /// Logs the client's arrival and welcomes it; false if the connection failed.
    fn welcome(&self, s: &mut TcpStream, client: String, key: Option<&KeyPolicy>) -> bool {
        let key = key.map(|k| k.name.clone());
        if let (Some(log), Some(peer)) = (self.log, self.peer) {
            log(&ServerEvent::Connected {
                peer,
                client,
                key: key.clone(),
            });
        }
        let welcome = Message::Welcome {
            server: self.name.to_string(),
            key,
            checks: true,
        };
        write_message(s, &welcome).is_ok()
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

    /// The key the client named by `key_id` (or the only key, for a client
    /// that names none), or why there is none.
    fn key_named(&self, key_id: Option<&str>) -> Result<(&'a Key, &'a KeyPolicy), String> {
        let keys = self.keys.ok_or_else(|| {
            "authentication not set up: this server runs without --key (connect without --key)"
                .to_string()
        })?;
        let found = match key_id {
            Some(id) => keys.iter().find(|(k, _)| k.id() == id),
            None if keys.len() == 1 => keys.first(),
            None => {
                return Err(
                    "authentication failed: this server has several keys and the client named none (a tcplab without key ids)"
                        .into(),
                )
            }
        };
        found.map(|(k, p)| (k, p)).ok_or_else(|| {
            format!(
                "authentication failed: the client's key differs (this server has no key with id {})",
                key_id.unwrap_or_default()
            )
        })
    }

    /// Answers a client's `auth_hello` with this server's nonce and proof
    /// under the key it named; that key and the nonces to check its
    /// `auth_proof` against, or `None` (refused).
    #[allow(clippy::type_complexity)]
    fn challenge(
        &self,
        s: &mut TcpStream,
        nonce: &str,
        key_id: Option<&str>,
    ) -> Option<((&'a Key, &'a KeyPolicy), Nonce, Nonce)> {
        let (key, policy) = match self.key_named(key_id) {
            Ok(k) => k,
            Err(why) => {
                self.refuse(s, None, &why);
                return None;
            }
        };
        let Some(client_nonce) = nonce_from_hex(nonce) else {
            self.refuse(s, None, "auth_hello's nonce is not 32 bytes of hex");
            return None;
        };
        let server_nonce = match fresh_nonce() {
            Ok(n) => n,
            Err(e) => {
                self.refuse(s, None, &e.to_string());
                return None;
            }
        };
        let challenge = Message::AuthChallenge {
            server: self.name.to_string(),
            nonce: to_hex(&server_nonce),
            proof: to_hex(&key.proof(SERVER_LABEL, &client_nonce, &server_nonce)),
        };
        write_message(s, &challenge).ok()?;
        Some(((key, policy), client_nonce, server_nonce))
    }

    /// Tells the client why it is not served, and logs it.
    fn refuse(&self, s: &mut TcpStream, key: Option<&KeyPolicy>, reason: &str) {
        self.log_refused(key, reason);
        let _ = reply_error(s, reason.to_string());
    }

    /// Logs a refusal of the client holding `key`.
    fn log_refused(&self, key: Option<&KeyPolicy>, reason: &str) {
        if let (Some(log), Some(peer)) = (self.log, self.peer) {
            log(&ServerEvent::Refused {
                peer,
                key: key.map(|k| k.name.clone()),
                reason: reason.to_string(),
            });
        }
    }

    /// Runs the server side of one trial. Returns false if the control
    /// connection is no longer usable, and this side's report (or why there is
    /// none) for the log. Every thread the trial started has ended when it
    /// returns.
    fn serve_trial(
        &self,
        s: &mut TcpStream,
        p: &TrialParams,
        key: Option<&KeyPolicy>,
    ) -> (bool, Result<SideReport, Ended>) {
        let refused =
            |s: &mut TcpStream, e: String| (reply_error(s, e.clone()), Err(Ended::Refused(e)));
        let failed =
            |s: &mut TcpStream, e: String| (reply_error(s, e.clone()), Err(Ended::Failed(e)));
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
        let (_grant, paced, mut watch) =
            match server_budget::grant(&self.shared.usage, key, self.peer, p, l) {
                Ok(g) => g,
                Err(e) => return refused(s, e),
            };
        let p = &paced;
        let _load = match LoadReservation::take(self.shared, p) {
            Ok(r) => r,
            Err(e) => return refused(s, e),
        };
        let ip = match s.local_addr() {
            Ok(a) => a.ip(),
            Err(e) => return failed(s, format!("reading local address: {e}")),
        };
        let cancel = Canceller::new();
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
        if write_message(s, &Message::Ready { ports, token }).is_err() {
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
        match waited {
            Wait::Done => {
                let report = join_within(s, role, &cancel, secs(l.message_s));
                let ok = write_message(
                    s,
                    &Message::Report {
                        report: report.clone(),
                    },
                )
                .is_ok();
                (ok, Ok(report))
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
        }
    }

    /// An active server side (it sends): waits for its threads, watching the
    /// control connection for the client leaving and the clock for the cap.
    fn await_own_end(
        &self,
        s: &mut TcpStream,
        role: &RunningRole,
        end_by: Cap,
        mut b: Budget,
    ) -> Wait {
        while !role.is_finished() {
            match poll_control(s.as_fd(), TICK) {
                ControlEvent::Hangup => return Wait::Lost,
                ControlEvent::Readable => {
                    // The client says nothing while the server sends.
                    return match self.read_within(s) {
                        Ok(m) => Wait::Abort(format!(
                            "unexpected message {} while the server sends",
                            kind(&m)
                        )),
                        Err(_) => Wait::Lost,
                    };
                }
                ControlEvent::Quiet => {}
            }
            if Instant::now() >= end_by.by {
                return Wait::Abort(end_by.over());
            }
            if let Some(why) = b.over() {
                return Wait::Abort(why);
            }
        }
        Wait::Done
    }

    /// A passive server side: waits for the client's `client_done`, which
    /// must come within `message_s` of this side's end, and by the cap.
    fn await_client_done(
        &self,
        s: &mut TcpStream,
        role: &RunningRole,
        end_by: Cap,
        mut b: Budget,
    ) -> Wait {
        let l = &self.shared.limits;
        let mut ended_at = None;
        loop {
            match poll_control(s.as_fd(), TICK) {
                ControlEvent::Hangup => return Wait::Lost,
                ControlEvent::Readable => {
                    return match self.read_within(s) {
                        Ok(Message::ClientDone) => {
                            role.finish();
                            Wait::Done
                        }
                        Ok(other) => {
                            Wait::Abort(format!("expected client_done, got {}", kind(&other)))
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
            if now >= end_by.by {
                return Wait::Abort(end_by.over());
            }
            if let Some(why) = b.over() {
                return Wait::Abort(why);
            }
        }
    }

    /// Reads one message that has begun arriving, within `message_s`.
    fn read_within(&self, s: &TcpStream) -> Result<Message, FrameError> {
        let within = secs(self.shared.limits.message_s);
        read_message(&mut DeadlineReader::new(s, Instant::now() + within, within))
    }
}

/// A trial's setup a client's key, or the server, turned down (nothing
/// ran), or a trial that failed once set up.
enum Ended {
    Refused(String),
    Failed(String),
}

/// A key handshake under way: the client's self-description, both
/// nonces, and the key the client named.
struct Challenge<'a> {
    client: String,
    client_nonce: Nonce,
    server_nonce: Nonce,
    key: (&'a Key, &'a KeyPolicy),
}

/// The message's type name.
fn kind(m: &Message) -> &'static str {
    match m {
        Message::Hello { .. } => "hello",
        Message::AuthHello { .. } => "auth_hello",
        Message::AuthChallenge { .. } => "auth_challenge",
        Message::AuthProof { .. } => "auth_proof",
        Message::Welcome { .. } => "welcome",
        Message::Check { .. } => "check",
        Message::Checked => "checked",
        Message::Setup { .. } => "setup",
        Message::Ready { .. } => "ready",
        Message::ClientDone => "client_done",
        Message::Report { .. } => "report",
        Message::Error { .. } => "error",
    }
}
