//! The workloads a trial can run (tcp-stream, udp-stream, tcp-rr, tcp-crr,
//! http, layer-rate: record's `TestKind`) and the two roles each plays:
//! what the client side and the server side of a trial do, started in
//! threads and joined into a report.

pub(crate) mod admission;
pub mod http;
pub mod layer;
pub mod rr;
pub mod sender;
pub mod seq_window;
pub mod stream;
pub mod udp;

use crate::auth::Nonce;
use crate::cancel::{Canceller, StopFlag, StopTimer};
use crate::error::EngineError;
use crate::interval::MeterHandle;
use crate::load::LoadWorkers;
use crate::metrics::sender_is_client;
use crate::pattern::Pattern;
use crate::report::{ConnResult, SideReport};
use crate::sockopt;
use record::{LoadSide, TestKind, TrialParams};
use socket2::Socket;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How much one connection moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// This many bytes (or the transactions they make up).
    Bytes(u64),
    /// Until the stop flag is raised (duration-bound trials).
    Until,
}

/// The trial's amount split over its `parallel` connections.
pub fn amounts(p: &TrialParams) -> Vec<Amount> {
    let n = u64::from(p.parallel.max(1));
    match p.bytes {
        Some(b) => (0..n)
            .map(|i| Amount::Bytes(b / n + u64::from(i < b % n)))
            .collect(),
        None => vec![Amount::Until; n as usize],
    }
}

fn duration(p: &TrialParams) -> Option<Duration> {
    p.duration_s.map(Duration::from_secs_f64)
}

/// The pattern every endpoint of a trial uses.
pub fn pattern_for(p: &TrialParams) -> Arc<Pattern> {
    let max = p.write_size.max(p.read_size).max(http::PAGE_BYTES as u64) as usize;
    Arc::new(Pattern::new(max))
}

/// Places a side's first thread before it opens any socket (the lab's CPU
/// quota and pinning); the threads it spawns inherit the placement.
pub type PlaceHook = Arc<dyn Fn(&TrialParams, LoadSide) -> Result<(), String> + Send + Sync>;

/// The side (sender or receiver) the client or the server plays.
pub fn side_of(p: &TrialParams, client: bool) -> LoadSide {
    if sender_is_client(p) == client {
        LoadSide::Sender
    } else {
        LoadSide::Receiver
    }
}

/// Runs the hook for this side; an error becomes the side's only result.
fn place_thread(
    hook: &Option<PlaceHook>,
    p: &TrialParams,
    client: bool,
) -> Result<(), Vec<ConnResult>> {
    match hook {
        Some(h) => h(p, side_of(p, client))
            .map_err(|e| vec![ConnResult::failed(format!("placing the endpoint: {e}"))]),
        None => Ok(()),
    }
}

/// True if the side that hosts the load workers is the client.
fn load_on_client(p: &TrialParams) -> Option<(bool, u32)> {
    p.load.map(|l| {
        let on_sender = l.side == LoadSide::Sender;
        (on_sender == sender_is_client(p), l.workers)
    })
}

/// One side's running threads.
pub struct RunningRole {
    handle: JoinHandle<Vec<ConnResult>>,
    finish: StopFlag,
    listener: Option<Arc<Socket>>,
    active: bool,
    load: Option<LoadWorkers>,
    kernel_udp: Option<udp::KernelUdpSnapshot>,
    ipv6: bool,
}

impl RunningRole {
    /// True if this side decides when the trial ends (it sends, or it is the
    /// transaction client); a passive side waits for the other to finish.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// True once every thread of this side has ended.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Asks a passive side to wrap up: UDP receivers drain and stop,
    /// acceptors stop accepting.
    pub fn finish(&self) {
        self.finish.raise();
        if let Some(l) = &self.listener {
            // Wakes threads blocked in accept(2) (they get EINVAL).
            let _ = l.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Waits for the threads and aggregates what they measured.
    pub fn join(self) -> SideReport {
        let conns = self
            .handle
            .join()
            .unwrap_or_else(|_| vec![ConnResult::failed("endpoint thread panicked".into())]);
        let load_cpu_s = self.load.map(LoadWorkers::stop);
        let mut r = SideReport::from_conns(conns);
        r.load_cpu_s = load_cpu_s;
        if let Some(k0) = self.kernel_udp {
            r.kernel_udp = Some(udp::KernelUdpSnapshot::take(self.ipv6).since(k0));
        }
        r
    }
}

fn spawn(
    name: &str,
    f: impl FnOnce() -> Vec<ConnResult> + Send + 'static,
) -> Result<JoinHandle<Vec<ConnResult>>, EngineError> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .map_err(|e| EngineError::io("spawning endpoint thread", e))
}

/// Runs `work` once per item on its own thread and collects the results.
/// If a thread cannot be started (a pid or thread limit), the trial is
/// cancelled, so the threads already started end, and that item fails with
/// the reason; nothing panics.
fn fan_out<T: Send, F>(items: Vec<T>, cancel: &Canceller, work: F) -> Vec<ConnResult>
where
    F: Fn(usize, T) -> ConnResult + Sync,
{
    if items.len() == 1 {
        let item = items.into_iter().next().expect("one item");
        return vec![work(0, item)];
    }
    std::thread::scope(|s| {
        let hs: Vec<_> = items
            .into_iter()
            .enumerate()
            .map(|(i, it)| {
                let w = &work;
                std::thread::Builder::new()
                    .name("tcplab-conn".into())
                    .spawn_scoped(s, move || w(i, it))
                    .inspect_err(|_| cancel.cancel())
            })
            .collect();
        hs.into_iter()
            .map(|h| match h {
                Ok(h) => h
                    .join()
                    .unwrap_or_else(|_| ConnResult::failed("connection thread panicked".into())),
                Err(e) => ConnResult::failed(format!("cannot start a connection thread: {e}")),
            })
            .collect()
    })
}

/// Starts the trial's duration timer when `d` is given; a timer that cannot
/// start becomes the side's only result.
fn timer_for(stop: &StopFlag, d: Option<Duration>) -> Result<Option<StopTimer>, Vec<ConnResult>> {
    match d {
        None => Ok(None),
        Some(d) => StopTimer::start(stop, d).map(Some).map_err(|e| {
            vec![ConnResult::failed(format!(
                "cannot start the trial's timer thread: {e}"
            ))]
        }),
    }
}

/// How long a server side waits on its client's data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataWaits {
    /// For the first data: the connections (each crr or http request), the
    /// first datagram, or a receiving client's hello.
    pub first: Duration,
    /// For more data on a stream or datagram flow once it has begun (a read
    /// or write that waits longer ends the connection with an error).
    pub stall: Duration,
    /// The only address data is taken from and sent to: the control
    /// connection's peer (`None`: any). Data connections and UDP hellos
    /// from elsewhere are closed or ignored.
    pub from: Option<IpAddr>,
    /// The trial's token (every server makes one per trial): the first
    /// bytes of every TCP data connection and the payload of every UDP
    /// hello, and its tag ([`udp::tag_of`]) is in every datagram. A
    /// connection whose first bytes differ, or that sends none within
    /// [`TOKEN_WAIT`], is closed; such a datagram is counted as rejected
    /// and ignored. `None` only where there is no control connection to
    /// carry it (tcplab's own stack's pairings).
    pub token: Option<Nonce>,
    /// On loopback, the uid owning the client's end of the control
    /// connection ([`crate::peer_owner`]): a data connection that arrives
    /// without its whole token, and whose other end another user owns, is
    /// closed at once (another local user's flood never takes a place;
    /// one with the whole token knows the trial's secret and is not looked
    /// up). `None`: not checked (a peer on another host, or no control
    /// connection).
    pub owner: Option<u32>,
}

use admission::{Flows, Gate};
pub use admission::{HELD_MOST, MAX_PENDING, TOKEN_WAIT};

/// Whether a received token is the trial's (compared in constant time).
pub(crate) fn tokens_match(want: &Nonce, got: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    got.len() == want.len() && bool::from(want.ct_eq(got))
}

/// Sends the trial's token (if any) as a TCP data connection's first bytes.
fn send_token(s: &Socket, token: Option<&Nonce>) -> std::io::Result<()> {
    match token {
        Some(t) => (&mut &*s).write_all(t),
        None => Ok(()),
    }
}

/// The server side: binds its data sockets and starts its threads.
/// Returns the running role and the ports to announce in `Ready`. The
/// client's data must begin and go on within `waits`, or the side ends
/// with an error.
pub fn start_server(
    p: &TrialParams,
    ip: IpAddr,
    cancel: &Canceller,
    hook: Option<PlaceHook>,
    waits: DataWaits,
) -> Result<(RunningRole, Vec<u16>), EngineError> {
    let data_within = waits.first;
    let p = layer::effective(p);
    let pattern = pattern_for(&p);
    let finish = StopFlag::tied_to(cancel);
    let client_sends = sender_is_client(&p);
    let active = !client_sends;
    let load = match load_on_client(&p).filter(|(on_client, _)| !on_client) {
        Some((_, n)) => Some(
            LoadWorkers::start(n, Some(cancel))
                .map_err(|e| EngineError::io("starting load workers", e))?,
        ),
        None => None,
    };
    let n = p.parallel.max(1) as usize;
    let any = SocketAddr::new(ip, 0);
    let mut kernel_udp = None;
    let (handle, ports, listener) = match p.test {
        TestKind::UdpStream => {
            let raw = layer::is_raw(&p);
            let mut socks = Vec::new();
            for _ in 0..n {
                let s = if raw {
                    layer::raw_receiver(&p, ip)?
                } else {
                    let s = sockopt::udp_socket(&any, &p)?;
                    s.bind(&any.into())
                        .map_err(|e| EngineError::io("binding UDP socket", e))?;
                    s
                };
                socks.push(s);
            }
            let ports = if raw {
                vec![0; n]
            } else {
                socks
                    .iter()
                    .map(sockopt::local_port)
                    .collect::<Result<Vec<_>, _>>()?
            };
            if client_sends {
                kernel_udp = Some(udp::KernelUdpSnapshot::take(p.ipv6));
            }
            let fin = finish.clone();
            let cancel = cancel.clone();
            let h = spawn("tcplab-srv-udp", move || {
                if let Err(failed) = place_thread(&hook, &p, false) {
                    return failed;
                }
                let amounts = amounts(&p);
                let stop = StopFlag::tied_to(&cancel);
                let _timer = match timer_for(&stop, duration(&p).filter(|_| !client_sends)) {
                    Ok(t) => t,
                    Err(failed) => return failed,
                };
                let items = socks.into_iter().zip(amounts).collect();
                fan_out(items, &cancel, |_, (s, a)| {
                    let _reg = cancel.register(&s);
                    // Summed by the server's rate check (server_budget).
                    let unmetered = cancel.flow_counter();
                    if client_sends {
                        let ip_header = p.layer == Some(record::ProtocolLayer::Ip);
                        let opening = udp::Opening::Expect(waits);
                        udp::receive_datagrams(
                            &s, &p, &pattern, &fin, opening, ip_header, &unmetered,
                        )
                    } else {
                        match udp::await_hello(&s, data_within, &waits) {
                            Ok(()) => {
                                let tag = udp::tag_for(waits.token.as_ref());
                                udp::send(&s, &p, &pattern, a, &tag, &stop, &unmetered)
                            }
                            Err(e) => ConnResult::failed(format!("waiting for client hello: {e}")),
                        }
                    }
                })
            })?;
            (h, ports, None)
        }
        _ => {
            // The backlog also bounds the SYN queue, where a deferring
            // listener's silent connections wait: past it the kernel
            // answers with syncookies, which round the server's MSS down
            // to its table (536, 1300, 1440 or 1460). 4096, Linux's
            // default somaxconn, makes a flood need four times as many.
            let l = Arc::new(sockopt::tcp_listener(any, &p, 4096)?);
            // Accepting polls the listener with the connections waiting for
            // their token, each call within `data_within`: a client that
            // sets up a trial and never connects does not hold it.
            l.set_nonblocking(true)
                .map_err(|e| EngineError::io("setting the data listener non-blocking", e))?;
            // Every keyed connection sends its token first: one that sends
            // nothing waits in the kernel, not in the trial's places.
            if waits.token.is_some() {
                sockopt::defer_accept(&l, TOKEN_WAIT.as_secs() as u32).map_err(|e| {
                    EngineError::io("setting TCP_DEFER_ACCEPT on the data listener", e)
                })?;
            }
            let ports = vec![sockopt::local_port(&l)?];
            let keep = matches!(p.test, TestKind::TcpCrr | TestKind::Http).then(|| l.clone());
            let cancel = cancel.clone();
            let h = spawn("tcplab-srv", move || match place_thread(&hook, &p, false) {
                Ok(()) => serve_tcp(&p, &l, &pattern, &cancel, &waits),
                Err(failed) => failed,
            })?;
            (h, ports, keep)
        }
    };
    Ok((
        RunningRole {
            handle,
            finish,
            listener,
            active,
            load,
            kernel_udp,
            ipv6: ip.is_ipv6(),
        },
        ports,
    ))
}

/// Accepts `parallel` connections (or serves until shut down for crr/http).
/// A stream or rr connection's reads and writes wait at most `waits.stall`
/// (an accepted socket would otherwise inherit the listener's accept
/// timeout); connections from other addresses than `waits.from` are closed.
fn serve_tcp(
    p: &TrialParams,
    l: &Socket,
    pattern: &Pattern,
    cancel: &Canceller,
    waits: &DataWaits,
) -> Vec<ConnResult> {
    let stall = waits.stall;
    let n = p.parallel.max(1) as usize;
    let _reg = cancel.register(l);
    let repeat = matches!(p.test, TestKind::TcpCrr | TestKind::Http);
    let gate = Gate::new(l, waits, cancel, Flows { count: n, repeat });
    match p.test {
        TestKind::TcpCrr => {
            return fan_out(vec![(); n], cancel, |_, _| {
                rr::crr_server(&gate, p, pattern, cancel)
            })
        }
        TestKind::Http => {
            let responses = http::Responses::new(pattern);
            return fan_out(vec![(); n], cancel, |_, _| {
                http::server(&gate, p, &responses, cancel)
            });
        }
        _ => {}
    }
    let mut socks = Vec::with_capacity(n);
    for i in 0..n {
        match gate.admit() {
            Ok((s, _)) => {
                let _ = sockopt::apply_accepted(&s, p);
                let _ = s.set_read_timeout(Some(stall));
                let _ = s.set_write_timeout(Some(stall));
                socks.push(s);
            }
            Err(e) => {
                return vec![ConnResult::failed(format!(
                    "accepting data connection {i}: {e}"
                ))]
            }
        }
    }
    let stop = StopFlag::tied_to(cancel);
    let _timer = match timer_for(&stop, duration(p)) {
        Ok(t) => t,
        Err(failed) => return failed,
    };
    let items: Vec<_> = socks.into_iter().zip(amounts(p)).collect();
    fan_out(items, cancel, |_, (s, a)| {
        let _reg = cancel.register(&s);
        let unmetered = AtomicU64::new(0);
        match p.test {
            TestKind::TcpStream if p.reverse => stream::send(&s, p, pattern, a, &stop, &unmetered),
            TestKind::TcpStream => stream::receive(&s, p, pattern, cancel, &unmetered),
            _ => rr::rr_server(&s, p, pattern),
        }
    })
}

/// The client side: connects to the server's data ports and starts its
/// threads; with a `meter` (`--interval`), each stream connection registers
/// with it.
pub fn start_client(
    p: &TrialParams,
    ip: IpAddr,
    ports: &[u16],
    cancel: &Canceller,
    hook: Option<PlaceHook>,
    meter: Option<MeterHandle>,
    token: Option<Nonce>,
) -> Result<RunningRole, EngineError> {
    let p = layer::effective(p);
    let pattern = pattern_for(&p);
    let finish = StopFlag::tied_to(cancel);
    let client_sends = sender_is_client(&p);
    let n = p.parallel.max(1) as usize;
    let expected = if p.test == TestKind::UdpStream { n } else { 1 };
    if ports.len() != expected {
        return Err(EngineError::Protocol(format!(
            "server announced {} data ports, expected {expected}",
            ports.len()
        )));
    }
    let addrs: Vec<SocketAddr> = (0..n)
        .map(|i| SocketAddr::new(ip, ports[i % ports.len()]))
        .collect();
    let load = match load_on_client(&p).filter(|(on_client, _)| *on_client) {
        Some((_, n)) => Some(
            LoadWorkers::start(n, None).map_err(|e| EngineError::io("starting load workers", e))?,
        ),
        None => None,
    };
    let kernel_udp = (p.test == TestKind::UdpStream && !client_sends)
        .then(|| udp::KernelUdpSnapshot::take(p.ipv6));
    let fin = finish.clone();
    let c = cancel.clone();
    let handle = spawn("tcplab-client", move || {
        if let Err(failed) = place_thread(&hook, &p, true) {
            return failed;
        }
        let stop = StopFlag::tied_to(&c);
        let _timer = match timer_for(&stop, duration(&p).filter(|_| client_sends)) {
            Ok(t) => t,
            Err(failed) => return failed,
        };
        let items: Vec<_> = addrs.into_iter().zip(amounts(&p)).collect();
        fan_out(items, &c, |i, (addr, a)| {
            let conn = ClientConn {
                stream: i as u32 + 1,
                stop: &stop,
                finish: &fin,
                cancel: &c,
                meter: meter.as_ref(),
                token: token.as_ref(),
            };
            client_conn(&p, addr, a, &pattern, &conn)
        })
    })?;
    Ok(RunningRole {
        handle,
        finish,
        listener: None,
        active: client_sends,
        load,
        kernel_udp,
        ipv6: ip.is_ipv6(),
    })
}

/// What one client connection shares with its side: its number (from 1),
/// the side's flags, and the `--interval` meter.
struct ClientConn<'a> {
    stream: u32,
    stop: &'a StopFlag,
    finish: &'a StopFlag,
    cancel: &'a Canceller,
    meter: Option<&'a MeterHandle>,
    /// The trial's token, sent first on every data connection and in hellos.
    token: Option<&'a Nonce>,
}

impl ClientConn<'_> {
    /// Runs `work` with this connection's byte counter: the meter's if
    /// metered, a throwaway one otherwise; marks its end in the meter.
    fn metered(
        &self,
        sock: &Socket,
        tcp_sender: bool,
        work: impl FnOnce(&AtomicU64) -> ConnResult,
    ) -> ConnResult {
        match self.meter {
            Some(m) => {
                let reg = m.register(self.stream, sock, tcp_sender);
                let r = work(reg.counter());
                reg.ended_at(r.ended);
                r
            }
            None => work(&AtomicU64::new(0)),
        }
    }
}

/// One client connection or flow, from connect to its result.
fn client_conn(
    p: &TrialParams,
    addr: SocketAddr,
    a: Amount,
    pattern: &Pattern,
    conn: &ClientConn,
) -> ConnResult {
    let (stop, finish, cancel) = (conn.stop, conn.finish, conn.cancel);
    match p.test {
        TestKind::TcpCrr => return rr::crr_client(addr, p, pattern, a, conn.token, stop, cancel),
        TestKind::Http => return http::client(addr, p, pattern, a, conn.token, stop, cancel),
        TestKind::UdpStream if layer::is_raw(p) => {
            let (s, dest) = match layer::raw_sender(p, addr.ip()) {
                Ok(x) => x,
                Err(e) => return ConnResult::failed(e.to_string()),
            };
            let _reg = cancel.register(&s);
            let unmetered = AtomicU64::new(0);
            let tag = udp::tag_for(conn.token);
            return udp::send_to(&s, dest.as_ref(), p, pattern, a, &tag, stop, &unmetered);
        }
        TestKind::UdpStream if !p.connect && !p.reverse => {
            // An unconnected sender: the address in every sendto(), so the
            // kernel looks the route up per datagram.
            let s = match sockopt::udp_socket(&addr, p) {
                Ok(s) => s,
                Err(e) => return ConnResult::failed(e.to_string()),
            };
            let _reg = cancel.register(&s);
            let tag = udp::tag_for(conn.token);
            return conn.metered(&s, false, |progress| {
                udp::send_to(&s, Some(&addr.into()), p, pattern, a, &tag, stop, progress)
            });
        }
        TestKind::UdpStream => {
            let s = match udp_connected(p, addr) {
                Ok(s) => s,
                Err(e) => return ConnResult::failed(e.to_string()),
            };
            let _reg = cancel.register(&s);
            return conn.metered(&s, false, |progress| {
                if p.reverse {
                    udp::receive(
                        &s,
                        p,
                        pattern,
                        finish,
                        udp::Opening::Hello(conn.token.copied()),
                        progress,
                    )
                } else {
                    udp::send(&s, p, pattern, a, &udp::tag_for(conn.token), stop, progress)
                }
            });
        }
        _ => {}
    }
    let s = match tcp_connected(p, addr, conn.token) {
        Ok(s) => s,
        Err(e) => return ConnResult::failed(e.to_string()),
    };
    let _reg = cancel.register(&s);
    match p.test {
        TestKind::TcpStream if p.reverse => conn.metered(&s, false, |progress| {
            stream::receive(&s, p, pattern, cancel, progress)
        }),
        TestKind::TcpStream => conn.metered(&s, true, |progress| {
            stream::send(&s, p, pattern, a, stop, progress)
        }),
        _ => rr::rr_client(&s, p, pattern, a, stop),
    }
}

fn tcp_connected(
    p: &TrialParams,
    addr: SocketAddr,
    token: Option<&Nonce>,
) -> Result<Socket, EngineError> {
    let s = sockopt::tcp_socket(&addr, p)?;
    s.connect(&addr.into())
        .map_err(|e| EngineError::io(&format!("connecting data connection to {addr}"), e))?;
    send_token(&s, token)
        .map_err(|e| EngineError::io(&format!("sending the trial's token to {addr}"), e))?;
    Ok(s)
}

fn udp_connected(p: &TrialParams, addr: SocketAddr) -> Result<Socket, EngineError> {
    let s = sockopt::udp_socket(&addr, p)?;
    s.connect(&addr.into())
        .map_err(|e| EngineError::io(&format!("connecting UDP socket to {addr}"), e))?;
    Ok(s)
}
