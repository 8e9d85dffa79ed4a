//! `tcplab server`: serves trials to several clients at a time, each on its
//! own control connection, with data on separate per-trial sockets.

use crate::cancel::Canceller;
use crate::error::EngineError;
use crate::limits::{validate, Limits};
use crate::proto::{read_message, write_message, FrameError, Message};
use crate::report::SideReport;
use crate::server_log::{trial_event, ServerEvent, ServerLog};
use crate::watch::{poll_control, ControlEvent, Watchdog};
use crate::workloads::{start_server, PlaceHook, RunningRole};
use record::TrialParams;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The default control port.
pub const DEFAULT_PORT: u16 = 5301;

/// How long a control connection may sit idle between messages.
const IDLE: Duration = Duration::from_secs(600);

/// A bound, not yet serving, server.
pub struct Server {
    listener: TcpListener,
    limits: Arc<Limits>,
    clients: Arc<AtomicUsize>,
    name: String,
    hook: Option<PlaceHook>,
    stopping: Arc<AtomicBool>,
    log: Option<ServerLog>,
}

/// A server serving on a background thread; stops accepting when dropped.
pub struct ServerHandle {
    addr: SocketAddr,
    listener: TcpListener,
    stopping: Arc<AtomicBool>,
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
    }
}

impl Server {
    /// Binds the control listener.
    pub fn bind(addr: SocketAddr, limits: Limits) -> Result<Server, EngineError> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| EngineError::io(&format!("binding control port {addr}"), e))?;
        Ok(Server {
            listener,
            limits: Arc::new(limits),
            clients: Arc::new(AtomicUsize::new(0)),
            name: format!("tcplab {}", env!("CARGO_PKG_VERSION")),
            hook: None,
            stopping: Arc::new(AtomicBool::new(false)),
            log: None,
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
            let n = self.clients.fetch_add(1, Ordering::SeqCst);
            let guard = ClientSlot(self.clients.clone());
            if n >= self.limits.max_clients {
                let mut s = stream;
                let _ = write_message(
                    &mut s,
                    &Message::Error {
                        message: format!(
                            "server busy: {} clients already connected",
                            self.limits.max_clients
                        ),
                    },
                );
                continue;
            }
            let limits = self.limits.clone();
            let name = self.name.clone();
            let hook = self.hook.clone();
            let log = self.log.clone();
            let _ = std::thread::Builder::new()
                .name("tcplab-ctrl".into())
                .spawn(move || {
                    let _guard = guard;
                    serve_client(stream, &limits, &name, &hook, &log);
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
        let addr = self.spawn()?;
        Ok(ServerHandle {
            addr,
            listener,
            stopping,
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

/// Releases a client slot when the client's thread ends.
struct ClientSlot(Arc<AtomicUsize>);

impl Drop for ClientSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn reply_error(s: &mut TcpStream, message: String) -> bool {
    write_message(s, &Message::Error { message }).is_ok()
}

/// One client's control loop: hello, then any number of trials; each
/// arrival, trial and departure goes to `log`.
fn serve_client(
    s: TcpStream,
    limits: &Limits,
    name: &str,
    hook: &Option<PlaceHook>,
    log: &Option<ServerLog>,
) {
    let peer = s.peer_addr().ok();
    let mut trials = 0u32;
    let mut greeted = false;
    control_loop(s, limits, name, hook, log, &mut greeted, &mut trials);
    if let (Some(log), Some(peer), true) = (log, peer, greeted) {
        log(&ServerEvent::Disconnected { peer, trials });
    }
}

fn control_loop(
    mut s: TcpStream,
    limits: &Limits,
    name: &str,
    hook: &Option<PlaceHook>,
    log: &Option<ServerLog>,
    greeted: &mut bool,
    trials: &mut u32,
) {
    let _ = s.set_read_timeout(Some(IDLE));
    let _ = s.set_nodelay(true);
    let peer = s.peer_addr().ok();
    loop {
        let msg = match read_message(&mut s) {
            Ok(m) => m,
            Err(FrameError::Closed) => return,
            Err(e) if e.recoverable() => {
                if !reply_error(&mut s, e.to_string()) {
                    return;
                }
                continue;
            }
            Err(e) => {
                // Out of sync: say why, then drop only this client.
                let _ = reply_error(&mut s, e.to_string());
                return;
            }
        };
        let ok = match msg {
            Message::Hello { client } => {
                *greeted = true;
                if let (Some(log), Some(peer)) = (log, peer) {
                    log(&ServerEvent::Connected { peer, client });
                }
                write_message(
                    &mut s,
                    &Message::Welcome {
                        server: name.to_string(),
                    },
                )
                .is_ok()
            }
            Message::Setup { .. } if !*greeted => {
                reply_error(&mut s, "expected hello before setup".into())
            }
            Message::Setup { params } => {
                *trials += 1;
                let (ok, outcome) = serve_trial(&mut s, &params, limits, hook);
                if let (Some(log), Some(peer)) = (log, peer) {
                    log(&trial_event(
                        peer,
                        &params,
                        outcome.as_ref().map_err(String::as_str),
                    ));
                }
                ok
            }
            other => reply_error(
                &mut s,
                format!("unexpected message {:?} outside a trial", kind(&other)),
            ),
        };
        if !ok {
            return;
        }
    }
}

/// The message's type name.
fn kind(m: &Message) -> &'static str {
    match m {
        Message::Hello { .. } => "hello",
        Message::Welcome { .. } => "welcome",
        Message::Setup { .. } => "setup",
        Message::Ready { .. } => "ready",
        Message::ClientDone => "client_done",
        Message::Report { .. } => "report",
        Message::Error { .. } => "error",
    }
}

/// Runs the server side of one trial. Returns false if the control
/// connection is no longer usable, and this side's report (or why there is
/// none) for the log.
fn serve_trial(
    s: &mut TcpStream,
    p: &TrialParams,
    limits: &Limits,
    hook: &Option<PlaceHook>,
) -> (bool, Result<SideReport, String>) {
    if let Err(e) = validate(p, limits) {
        return (reply_error(s, e.clone()), Err(e));
    }
    let ip = match s.local_addr() {
        Ok(a) => a.ip(),
        Err(e) => {
            let e = format!("reading local address: {e}");
            return (reply_error(s, e.clone()), Err(e));
        }
    };
    let cancel = Canceller::new();
    let (role, ports) = match start_server(p, ip, &cancel, hook.clone()) {
        Ok(r) => r,
        Err(e) => return (reply_error(s, e.to_string()), Err(e.to_string())),
    };
    let lost = || Err("the client's control connection closed".to_string());
    let _watchdog = Watchdog::arm(
        cancel.clone(),
        Some(Duration::from_secs_f64(limits.max_trial_s)),
        None,
    );
    if write_message(s, &Message::Ready { ports }).is_err() {
        cancel.cancel();
        role.join();
        return (false, lost());
    }
    if role.is_active() {
        if !await_role(s, &role, Duration::from_millis(100)) {
            cancel.cancel();
            role.join();
            return (false, lost());
        }
    } else {
        let _ = s.set_read_timeout(Some(Duration::from_secs_f64(limits.max_trial_s)));
        let msg = read_message(s);
        let _ = s.set_read_timeout(Some(IDLE));
        match msg {
            Ok(Message::ClientDone) => {
                role.finish();
                // A client that never connected leaves this side waiting
                // until the trial's cap: its leaving must end the wait.
                // (Usually the side has ended or ends within a moment.)
                if !await_role(s, &role, Duration::from_millis(5)) {
                    cancel.cancel();
                    role.join();
                    return (false, lost());
                }
            }
            Ok(other) => {
                cancel.cancel();
                role.join();
                let e = format!("expected client_done, got {}", kind(&other));
                return (reply_error(s, e.clone()), Err(e));
            }
            Err(_) => {
                cancel.cancel();
                role.join();
                return (false, lost());
            }
        }
    }
    let report = role.join();
    let ok = write_message(
        s,
        &Message::Report {
            report: report.clone(),
        },
    )
    .is_ok();
    (ok, Ok(report))
}

/// Waits for this side's threads to end, looking at the control
/// connection every `tick`; false if the client hung up first. A message
/// that arrives meanwhile stays unread until the trial ends (polling again
/// at once would spin a CPU).
fn await_role(s: &TcpStream, role: &RunningRole, tick: Duration) -> bool {
    while !role.is_finished() {
        match poll_control(s.as_fd(), tick) {
            ControlEvent::Hangup => return false,
            ControlEvent::Readable => std::thread::sleep(tick),
            ControlEvent::Quiet => {}
        }
    }
    true
}
