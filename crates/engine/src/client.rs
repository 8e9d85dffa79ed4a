//! The client side of the control protocol: one control connection to a
//! server, over which `bench` runs its trials one after another.

use crate::auth::{fresh_nonce, from_hex, nonce_from_hex, to_hex, Key, CLIENT_LABEL, SERVER_LABEL};
use crate::cancel::Canceller;
use crate::early_proof::{unix_now, EarlyProof};
use crate::error::{os_phrase, EngineError};
use crate::hoststat::HostCpu;
use crate::interval::{IntervalSpec, Meter};
use crate::metrics::combine;
use crate::proto::{
    encode_body, header, parse_body, read_frame, write_frame, FrameError, Message, MAX_FRAME,
    VERSION,
};
use crate::report::SideReport;
use crate::session::{Framing, SessionKeys, Side, Transcript, TAG_BYTES};
use crate::watch::{poll_control, ControlEvent, Watchdog};
use crate::workloads::{start_client, PlaceHook};
use record::{TestKind, TrialOutcome, TrialParams};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a server may take to answer a setup.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Watches the data phase of each trial (tcplab's probes). It starts once
/// the server's data ports are known, before any data socket opens, and
/// finishes after both sides are done.
pub trait TrialObserver: Send {
    /// Starts watching a trial whose data flows use `ports` on the server.
    fn start(&mut self, p: &TrialParams, ports: &[u16]) -> Result<(), String>;
    /// Stops watching and adds what was seen to the outcome; an error fails
    /// the trial.
    fn finish(&mut self, outcome: &mut TrialOutcome) -> Result<(), String>;
    /// Stops watching a trial that failed, discarding what was seen.
    fn abort(&mut self);
}

/// A greeted control connection.
pub struct Client {
    ctrl: TcpStream,
    /// Tagged frames after a keyed handshake ([`crate::session`]).
    framing: Framing,
    server: String,
    key_name: Option<String>,
    checks: bool,
    broken: bool,
    hook: Option<PlaceHook>,
    observer: Option<Box<dyn TrialObserver>>,
    interval: Option<IntervalSpec>,
}

/// Whether a socket error means a timeout expired (a receive timeout
/// reports `WouldBlock`).
fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    )
}

/// A timeout as people write it: "3 s", "0.5 s".
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// One frame of the handshake, as a message and its payload.
fn read_plain(ctrl: &mut TcpStream, max: u32) -> Result<(Message, Vec<u8>), FrameError> {
    let (version, body) = read_frame(ctrl, max)?;
    if version != VERSION {
        return Err(FrameError::BadVersion(version));
    }
    Ok((parse_body(&body)?, body))
}

/// The server's answer during the handshake, and its payload: a refusal
/// (`error`) becomes [`EngineError::Rejected`], a frame that is not
/// tcplab's says so. With `sealed`, the answer to `auth_proof`: a tagged
/// welcome (or a plain refusal).
fn answer(
    ctrl: &mut TcpStream,
    addr: SocketAddr,
    timeout: Duration,
    sealed: Option<&mut Framing>,
) -> Result<(Message, Vec<u8>), EngineError> {
    let not_tcplab = |detail: String| EngineError::NotTcplab { addr, detail };
    let read = match sealed {
        None => read_plain(ctrl, MAX_FRAME),
        Some(f) => read_frame(ctrl, MAX_FRAME + TAG_BYTES as u32).and_then(|(version, body)| {
            if version != VERSION {
                return Err(FrameError::BadVersion(version));
            }
            let mut frame = header(version, body.len()).to_vec();
            frame.extend_from_slice(&body);
            let mut tagged = f.clone();
            match tagged.read(&mut frame.as_slice()) {
                Ok(m) => {
                    *f = tagged;
                    Ok((m, body))
                }
                // A refusal comes untagged (the server may not have
                // derived the keys); anything else untagged is not taken.
                Err(FrameError::BadTag) => match parse_body(&body) {
                    Ok(m @ Message::Error { .. }) => Ok((m, body)),
                    _ => Err(FrameError::BadTag),
                },
                Err(e) => Err(e),
            }
        }),
    };
    match read {
        Ok((Message::Error { message }, _)) => Err(EngineError::Rejected(message)),
        Ok(m) => Ok(m),
        Err(FrameError::BadVersion(theirs)) => Err(EngineError::VersionMismatch { addr, theirs }),
        Err(FrameError::Closed) => Err(not_tcplab(
            "it closed the connection without a welcome".into(),
        )),
        Err(FrameError::Io(e)) if is_timeout(&e) => Err(not_tcplab(format!(
            "no welcome within {}",
            seconds(timeout)
        ))),
        Err(FrameError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(not_tcplab(
            "it closed the connection without a welcome".into(),
        )),
        Err(FrameError::BadMagic(bytes)) => Err(not_tcplab(format!(
            "it answered {:?}, not a tcplab frame",
            String::from_utf8_lossy(&bytes)
        ))),
        Err(e) => Err(not_tcplab(format!("answering hello: {e}"))),
    }
}

fn frame_err(e: FrameError) -> EngineError {
    match e {
        FrameError::Closed => EngineError::Protocol("server closed the control connection".into()),
        other => EngineError::Protocol(other.to_string()),
    }
}

impl Client {
    /// Connects to `addr` and exchanges hello/welcome, each step within
    /// `timeout`. A failure says which: the address cannot be reached
    /// ([`EngineError::Unreachable`]), something else answers there
    /// ([`EngineError::NotTcplab`]), the server speaks another protocol
    /// version ([`EngineError::VersionMismatch`]), or it refused us
    /// ([`EngineError::Rejected`]).
    pub fn connect(addr: SocketAddr, timeout: Duration) -> Result<Client, EngineError> {
        Client::connect_with_key(addr, timeout, None)
    }

    /// [`Client::connect`], and with a `key` the handshake of
    /// [`crate::auth`] instead of hello: the server must prove it holds the
    /// key ([`EngineError::Authentication`] if not) before the client
    /// proves it.
    pub fn connect_with_key(
        addr: SocketAddr,
        timeout: Duration,
        key: Option<&Key>,
    ) -> Result<Client, EngineError> {
        let mut ctrl =
            TcpStream::connect_timeout(&addr, timeout).map_err(|e| EngineError::Unreachable {
                addr,
                reason: if is_timeout(&e) {
                    format!("no answer within {}", seconds(timeout))
                } else {
                    os_phrase(&e)
                },
            })?;
        let _ = ctrl.set_nodelay(true);
        ctrl.set_read_timeout(Some(timeout))
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        ctrl.set_write_timeout(Some(timeout))
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        let me = format!("tcplab {}", env!("CARGO_PKG_VERSION"));
        let not_tcplab = |detail: String| EngineError::NotTcplab { addr, detail };
        let sent = |r: std::io::Result<()>| {
            r.map_err(|e| not_tcplab(format!("sending hello: {}", os_phrase(&e))))
        };
        let mut framing = Framing::plain();
        let send_plain = |ctrl: &mut TcpStream, m: &Message| -> Result<Vec<u8>, EngineError> {
            let body = encode_body(m).map_err(|e| not_tcplab(format!("sending hello: {e}")))?;
            sent(write_frame(ctrl, VERSION, &body))?;
            Ok(body)
        };
        let welcome = match key {
            None => {
                send_plain(&mut ctrl, &Message::Hello { client: me })?;
                match answer(&mut ctrl, addr, timeout, None)?.0 {
                    m @ Message::Welcome { .. } => m,
                    other => return Err(not_tcplab(format!("it answered hello with {other:?}"))),
                }
            }
            Some(key) => {
                let ours = fresh_nonce().map_err(|e| EngineError::Authentication(e.to_string()))?;
                let hello = Message::AuthHello {
                    client: me,
                    nonce: to_hex(&ours),
                    key_id: Some(key.id()),
                    early: Some(EarlyProof::new(key, &ours, unix_now())),
                };
                let mut transcript = Transcript::default();
                transcript.add(&send_plain(&mut ctrl, &hello)?);
                let (theirs, proof) = match answer(&mut ctrl, addr, timeout, None)? {
                    (Message::AuthChallenge { nonce, proof, .. }, body) => {
                        transcript.add(&body);
                        (nonce, proof)
                    }
                    (other, _) => {
                        return Err(not_tcplab(format!("it answered auth_hello with {other:?}")))
                    }
                };
                let theirs = nonce_from_hex(&theirs).unwrap_or_default();
                let proof = from_hex(&proof).unwrap_or_default();
                if !key.verify(SERVER_LABEL, &ours, &theirs, &proof) {
                    let why = "authentication failed: the server's key differs";
                    let _ = send_plain(
                        &mut ctrl,
                        &Message::Error {
                            message: why.into(),
                        },
                    );
                    return Err(EngineError::Authentication(
                        "the server's key differs".into(),
                    ));
                }
                let proof = Message::AuthProof {
                    proof: to_hex(&key.proof(CLIENT_LABEL, &ours, &theirs)),
                };
                transcript.add(&send_plain(&mut ctrl, &proof)?);
                let keys = SessionKeys::derive(key, &ours, &theirs, &transcript.hash());
                framing = Framing::sealed(&keys, Side::Client);
                match answer(&mut ctrl, addr, timeout, Some(&mut framing))?.0 {
                    m @ Message::Welcome { .. } => m,
                    other => {
                        return Err(not_tcplab(format!("it answered auth_proof with {other:?}")))
                    }
                }
            }
        };
        let Message::Welcome {
            server,
            key: key_name,
            checks,
        } = welcome
        else {
            unreachable!("only a welcome is kept")
        };
        ctrl.set_read_timeout(None)
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        ctrl.set_write_timeout(None)
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        Ok(Client {
            ctrl,
            framing,
            server,
            key_name,
            checks,
            broken: false,
            hook: None,
            observer: None,
            interval: None,
        })
    }

    /// Watches every trial's data phase with `observer` (or stops watching).
    pub fn set_observer(&mut self, observer: Option<Box<dyn TrialObserver>>) {
        self.observer = observer;
    }

    /// Samples each stream trial's connections every `spec.every`
    /// (`--interval`, or `None` not to), passing each interval to the
    /// spec's sink as it ends and storing the series in the trial's
    /// details under `intervals`.
    pub fn set_interval(&mut self, spec: Option<IntervalSpec>) {
        self.interval = spec;
    }

    /// Places each trial's client-side threads with `hook`.
    pub fn set_hook(&mut self, hook: PlaceHook) {
        self.hook = Some(hook);
    }

    /// The server's self-description from its welcome.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The name the server gave the client's key (`server --keys`).
    pub fn key_name(&self) -> Option<&str> {
        self.key_name.as_deref()
    }

    /// Asks the server whether it would serve trial `p`, without running
    /// it: [`EngineError::TrialRefused`] with the server's reason if not.
    /// A server that does not answer checks (an older tcplab) passes.
    pub fn check(&mut self, p: &TrialParams) -> Result<(), EngineError> {
        if !self.checks {
            return Ok(());
        }
        self.send(&Message::Check { params: p.clone() })?;
        self.ctrl
            .set_read_timeout(Some(SETUP_TIMEOUT))
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        let answer = self.receive();
        self.ctrl
            .set_read_timeout(None)
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        match answer {
            Ok(Message::Checked) => Ok(()),
            Ok(Message::Error { message }) => Err(EngineError::TrialRefused(message)),
            Ok(other) => {
                self.broken = true;
                Err(EngineError::Protocol(format!(
                    "expected checked, got {other:?}"
                )))
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// False once the control connection failed; reconnect before the next trial.
    pub fn usable(&self) -> bool {
        !self.broken
    }

    /// Runs one trial. `interrupt` (Ctrl-C) cancels it promptly.
    pub fn run_trial(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, EngineError> {
        let r = self.trial(p, interrupt);
        // A trial that failed once started gives the next one a fresh
        // control connection: the server may have closed this one, and
        // reusing it would fail the next trial too (one failure counted
        // twice, seen in full study runs). A reconnect costs a handshake.
        // A setup the server refused leaves the connection as it was.
        if matches!(&r, Err(e) if !matches!(e, EngineError::TrialRefused(_))) {
            self.broken = true;
        }
        if interrupt.load(Ordering::Relaxed) {
            self.broken = true;
            return Err(EngineError::Interrupted);
        }
        r
    }

    fn trial(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, EngineError> {
        let cpu0 = HostCpu::now();
        let mut o = self.trial_inner(p, interrupt)?;
        // On a virtual machine, the share of CPU time the hypervisor gave to
        // other guests during the trial: a disturbed trial says so.
        let steal = HostCpu::now().steal_fraction_since(cpu0);
        o.metrics.insert("host_steal_fraction".into(), steal);
        Ok(o)
    }

    fn trial_inner(
        &mut self,
        p: &TrialParams,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, EngineError> {
        let ip = self
            .ctrl
            .peer_addr()
            .map_err(|e| EngineError::io("reading server address", e))?
            .ip();
        self.send(&Message::Setup { params: p.clone() })?;
        // The server answers a setup at once; a silent one is broken.
        self.ctrl
            .set_read_timeout(Some(SETUP_TIMEOUT))
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        let ready = self.receive();
        self.ctrl
            .set_read_timeout(None)
            .map_err(|e| EngineError::io("setting control timeout", e))?;
        let (ports, token) = match ready? {
            Message::Ready { ports, token } => (ports, token),
            Message::Error { message } => return Err(EngineError::TrialRefused(message)),
            other => {
                return Err(EngineError::Protocol(format!(
                    "expected ready, got {other:?}"
                )))
            }
        };
        let token = match token {
            None => None,
            Some(t) => Some(nonce_from_hex(&t).ok_or_else(|| {
                EngineError::Protocol("the server's trial token is not 32 bytes of hex".into())
            })?),
        };
        // A failed start still runs the data phase (the server waits for
        // it) but fails the trial afterwards.
        let watching = match &mut self.observer {
            Some(o) => o.start(p, &ports).map(|()| true),
            None => Ok(false),
        };
        let r = self.data_phase(p, ip, &ports, token, interrupt);
        match (watching, r) {
            (Ok(true), Ok(mut o)) => {
                let obs = self.observer.as_mut().expect("observer started");
                obs.finish(&mut o).map_err(EngineError::Observer)?;
                Ok(o)
            }
            (Ok(true), Err(e)) => {
                if let Some(obs) = self.observer.as_mut() {
                    obs.abort();
                }
                Err(e)
            }
            (Ok(false), r) => r,
            (Err(msg), r) => {
                r?;
                Err(EngineError::Observer(msg))
            }
        }
    }

    /// Runs the data connections of a set-up trial and combines both sides.
    fn data_phase(
        &mut self,
        p: &TrialParams,
        ip: std::net::IpAddr,
        ports: &[u16],
        token: Option<crate::auth::Nonce>,
        interrupt: &Arc<AtomicBool>,
    ) -> Result<TrialOutcome, EngineError> {
        let cancel = Canceller::new();
        let deadline = p
            .duration_s
            .map(|d| Duration::from_secs_f64(d * 3.0 + 30.0));
        let dog = Watchdog::arm(cancel.clone(), deadline, Some(interrupt.clone()));
        let meter = match &self.interval {
            Some(spec) if matches!(p.test, TestKind::TcpStream | TestKind::UdpStream) => Some(
                Meter::start(spec)
                    .map_err(|e| EngineError::io("starting the interval sampler", e))?,
            ),
            _ => None,
        };
        let handle = meter.as_ref().map(Meter::handle);
        let role = start_client(p, ip, ports, &cancel, self.hook.clone(), handle, token)?;
        let (client, server) = if role.is_active() {
            let client = role.join();
            self.send(&Message::ClientDone)?;
            (client, self.await_report(interrupt)?)
        } else {
            let server = self.await_report(interrupt);
            if server.is_err() {
                cancel.cancel();
            }
            role.finish();
            let client = role.join();
            (client, server?)
        };
        let intervals = meter.map(Meter::stop);
        if dog.timed_out() {
            return Err(EngineError::Timeout(format!(
                "trial exceeded {:.0} s",
                deadline.unwrap_or_default().as_secs_f64()
            )));
        }
        let carrier = crate::workloads::layer::effective(p);
        let mut o = combine(&carrier, &client, &server)?;
        if p.test == TestKind::LayerRate {
            let snd = if crate::metrics::sender_is_client(&carrier) {
                &client
            } else {
                &server
            };
            crate::workloads::layer::add_metrics(&carrier, &mut o.metrics, snd)?;
        }
        if let Some(series) = intervals {
            o.details["intervals"] = serde_json::to_value(series).unwrap_or_default();
        }
        Ok(o)
    }

    /// Waits for the server's report, giving up on Ctrl-C.
    fn await_report(&mut self, interrupt: &AtomicBool) -> Result<SideReport, EngineError> {
        loop {
            if interrupt.load(Ordering::Relaxed) {
                return Err(EngineError::Interrupted);
            }
            if poll_control(self.ctrl.as_fd(), Duration::from_millis(100)) != ControlEvent::Quiet {
                break;
            }
        }
        match self.receive()? {
            Message::Report { report } => Ok(report),
            Message::Error { message } => Err(EngineError::Rejected(message)),
            other => Err(EngineError::Protocol(format!(
                "expected report, got {other:?}"
            ))),
        }
    }

    fn send(&mut self, m: &Message) -> Result<(), EngineError> {
        self.framing
            .write(&mut self.ctrl, m)
            .map_err(|e| EngineError::io("writing to control connection", e))
    }

    fn receive(&mut self) -> Result<Message, EngineError> {
        self.framing.read(&mut self.ctrl).map_err(frame_err)
    }
}
