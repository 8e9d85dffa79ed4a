//! Runs one end's work on the stack, on a thread of its own: steps the
//! work, polls the stack between steps (sleeping on the device only when
//! the work waits on the network), lingers until the connections have
//! closed, and hands the stack back with what was measured.

use crate::account_profile::AccountedEnd;
use crate::end_device::EndStack;
use crate::http::{HttpClient, HttpServe};
use crate::metrics::StackStats;
use crate::rr::{CrrClient, RrClient, RrServe};
use crate::stream::{StreamRecv, StreamSend};
use crate::udp::{UdpRecv, UdpSend};
use crate::work::{Accepted, ConnWork, Ctx, Dialed, EndWork, Many, Step};
use engine::cancel::{Canceller, StopFlag, StopTimer};
use engine::cpu::CpuTime;
use engine::metrics::sender_is_client;
use engine::report::{ConnResult, SideReport};
use engine::workloads::http::Responses;
use engine::workloads::{amounts, pattern_for};
use record::{TestKind, TrialParams};
use stack::tcp::state::State;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The first local port of a user-space client's UDP flows.
const UDP_CLIENT_PORT: u16 = 40000;
/// How long the end waits for its connections to close after its work.
const LINGER: Duration = Duration::from_secs(2);
/// The longest the driver sleeps on the device while the work waits.
const IDLE_WAIT: Duration = Duration::from_millis(2);

/// Which end of the trial the stack plays.
#[derive(Debug, Clone)]
pub(crate) enum EndRole {
    /// The client: dials the server at this address, on these ports (one
    /// per UDP flow; TCP connections all go to the first).
    Client(Ipv4Addr, Vec<u16>),
    /// The server: accepts on this port.
    Server(u16),
}

/// The work of `role` in trial `p`.
pub(crate) fn work_for(p: &TrialParams, role: EndRole) -> Box<dyn EndWork> {
    let pattern = pattern_for(p);
    let amounts = amounts(p);
    let n = amounts.len();
    let client_sends = sender_is_client(p);
    match role {
        EndRole::Client(ip, ports) => {
            let works: Vec<Box<dyn EndWork>> = amounts
                .into_iter()
                .enumerate()
                .map(|(i, a)| -> Box<dyn EndWork> {
                    let pattern = pattern.clone();
                    let to = SocketAddrV4::new(ip, ports[0]);
                    let flow_to = SocketAddrV4::new(ip, ports[i % ports.len().max(1)]);
                    let local = UDP_CLIENT_PORT + i as u16;
                    match p.test {
                        TestKind::UdpStream if client_sends => {
                            Box::new(UdpSend::new(local, Some(flow_to), p, pattern, a))
                        }
                        TestKind::UdpStream => {
                            Box::new(UdpRecv::new(local, Some(flow_to), p, pattern))
                        }
                        TestKind::TcpCrr => Box::new(CrrClient::new(to, p, pattern, a)),
                        TestKind::Http => Box::new(HttpClient::new(to, pattern, a)),
                        _ => {
                            let conn: Box<dyn ConnWork> = match p.test {
                                TestKind::TcpStream if client_sends => {
                                    Box::new(StreamSend::new(p, pattern, a))
                                }
                                TestKind::TcpStream => Box::new(StreamRecv::new(p, pattern)),
                                _ => Box::new(RrClient::new(p, pattern, a)),
                            };
                            Box::new(Dialed::new(to, conn))
                        }
                    }
                })
                .collect();
            Box::new(Many::new(works))
        }
        EndRole::Server(port) => {
            let p = p.clone();
            match p.test {
                TestKind::UdpStream => {
                    let flows: Vec<Box<dyn EndWork>> = amounts
                        .into_iter()
                        .enumerate()
                        .map(|(i, a)| -> Box<dyn EndWork> {
                            let port = port + i as u16;
                            if client_sends {
                                Box::new(UdpRecv::new(port, None, &p, pattern.clone()))
                            } else {
                                Box::new(UdpSend::new(port, None, &p, pattern.clone(), a))
                            }
                        })
                        .collect();
                    Box::new(Many::new(flows))
                }
                TestKind::TcpCrr => Box::new(Accepted::new(
                    port,
                    Box::new(move || Box::new(RrServe::new(&p, pattern.clone(), true))),
                    None,
                    true,
                )),
                TestKind::Http => {
                    let responses = Arc::new(Responses::new(&pattern));
                    Box::new(Accepted::new(
                        port,
                        Box::new(move || Box::new(HttpServe::new(responses.clone()))),
                        None,
                        true,
                    ))
                }
                TestKind::TcpStream => {
                    let mut next = amounts.into_iter();
                    Box::new(Accepted::new(
                        port,
                        Box::new(move || -> Box<dyn ConnWork> {
                            if client_sends {
                                Box::new(StreamRecv::new(&p, pattern.clone()))
                            } else {
                                let a = next.next().unwrap_or(engine::workloads::Amount::Bytes(0));
                                Box::new(StreamSend::new(&p, pattern.clone(), a))
                            }
                        }),
                        Some(n),
                        false,
                    ))
                }
                _ => Box::new(Accepted::new(
                    port,
                    Box::new(move || Box::new(RrServe::new(&p, pattern.clone(), false))),
                    Some(n),
                    false,
                )),
            }
        }
    }
}

/// What an end's thread hands back: the stack (unless it failed), the
/// per-connection results and the stack's counters.
pub(crate) struct EndOutput {
    pub stack: Option<EndStack>,
    pub conns: Vec<ConnResult>,
    pub stats: StackStats,
}

/// An end running on its thread.
pub(crate) struct StackRun {
    handle: JoinHandle<EndOutput>,
    finish: StopFlag,
    active: bool,
}

impl StackRun {
    /// Starts `work` on `stack` (address `local`) on a new thread. The
    /// active end (the one that sends, or the transaction client) stops on
    /// the trial's duration; a passive one when told to [`finish`].
    pub fn start(
        mut stack: EndStack,
        local: Ipv4Addr,
        mut work: Box<dyn EndWork>,
        p: &TrialParams,
        active: bool,
        cancel: &Canceller,
    ) -> std::io::Result<StackRun> {
        let finish = StopFlag::tied_to(cancel);
        let fin = finish.clone();
        let cancel = cancel.clone();
        let duration = p.duration_s.map(Duration::from_secs_f64).filter(|_| active);
        // A slower CPU (`--cpu-speed`) spins in the accountant's brackets:
        // accounting is on, every round timed.
        let dilation = crate::dilation::speeds_of(p, active);
        let account = p.account.and_then(|a| a.one_in()).or(dilation.map(|_| 1));
        if account.is_some() {
            // The counter's rate is calibrated once per process by a busy
            // wait (60 ms): here, not on the end's thread, whose CPU time
            // is the trial's.
            stack::account::cycles::counts_per_ns();
        }
        let handle = std::thread::Builder::new()
            .name("tcplab-stack".into())
            .spawn(move || {
                let cpu0 = CpuTime::thread_now();
                let driver0 = stack.device.driver_cpu();
                let stop = StopFlag::tied_to(&cancel);
                let _timer = duration.and_then(|d| StopTimer::start(&stop, d).ok());
                let mut stats = StackStats::default();
                // Block-cost accounting (`--account`) on this thread, the
                // one that runs the stack's loop.
                if let Some(n) = account {
                    stack::account::start(stack::account::Options {
                        timeline_capacity: 0,
                        sample_one_in: n,
                        dilation,
                    });
                }
                let failure = run(
                    &mut stack,
                    local,
                    work.as_mut(),
                    &stop,
                    &fin,
                    &cancel,
                    &mut stats,
                );
                stats.account = stack::account::stop().map(|report| AccountedEnd {
                    // SAFETY: gettid has no preconditions.
                    tid: unsafe { libc::gettid() } as u32,
                    tgid: std::process::id(),
                    // The active end sends (or is the transaction client,
                    // "the sender" of rr, crr and http).
                    sender: active,
                    report,
                });
                let mut conns = work.results();
                // The driver thread's CPU (--layers threaded) is the
                // end's too.
                let driver1 = stack.device.driver_cpu();
                let driver = CpuTime {
                    user_s: driver1.user.saturating_sub(driver0.user).as_secs_f64(),
                    sys_s: driver1.system.saturating_sub(driver0.system).as_secs_f64(),
                };
                let cpu = CpuTime::thread_now().since(cpu0).plus(driver);
                if let Some(first) = conns.first_mut() {
                    // One thread served every connection: its CPU once.
                    first.cpu = cpu;
                }
                let stack = match failure {
                    Some(e) => {
                        // The stack's reason comes first: what the work
                        // saw of it ("the connection never ended") is
                        // only its consequence.
                        let reason = format!("the tcplab stack failed: {e}");
                        for c in &mut conns {
                            c.error = Some(match c.error.take() {
                                Some(seen) => format!("{reason} (then: {seen})"),
                                None => reason.clone(),
                            });
                        }
                        if conns.is_empty() {
                            conns.push(ConnResult::failed(reason));
                        }
                        None
                    }
                    None => Some(stack),
                };
                EndOutput {
                    stack,
                    conns,
                    stats,
                }
            })?;
        Ok(StackRun {
            handle,
            finish,
            active,
        })
    }

    /// Whether this end decides when the trial ends.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Whether its thread has ended.
    pub fn is_finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Asks a passive end to wrap up.
    pub fn finish(&self) {
        self.finish.raise();
    }

    /// Waits for the thread: the side's report, the stack back (unless it
    /// failed) and its counters.
    pub fn join(self) -> (SideReport, Option<EndStack>, StackStats) {
        let out = self.handle.join().unwrap_or_else(|_| EndOutput {
            stack: None,
            conns: vec![ConnResult::failed(
                "the tcplab stack's thread panicked".into(),
            )],
            stats: StackStats::default(),
        });
        (SideReport::from_conns(out.conns), out.stack, out.stats)
    }
}

/// Steps `work` until it is done, then lingers until the connections have
/// closed; returns the device's failure, if one ended it.
fn run(
    stack: &mut EndStack,
    local: Ipv4Addr,
    work: &mut dyn EndWork,
    stop: &StopFlag,
    finish: &StopFlag,
    cancel: &Canceller,
    stats: &mut StackStats,
) -> Option<String> {
    let mut udp_bound = Vec::new();
    let failure = drive(
        stack,
        local,
        work,
        stop,
        finish,
        cancel,
        stats,
        &mut udp_bound,
    );
    for h in udp_bound {
        stack.udp.close(h);
    }
    failure
}

#[allow(clippy::too_many_arguments)]
fn drive(
    stack: &mut EndStack,
    local: Ipv4Addr,
    work: &mut dyn EndWork,
    stop: &StopFlag,
    finish: &StopFlag,
    cancel: &Canceller,
    stats: &mut StackStats,
    udp_bound: &mut Vec<stack::iface::udp::UdpHandle>,
) -> Option<String> {
    loop {
        let now = stack.now();
        let (step, wake) = {
            let mut cx = Ctx {
                udp: &mut stack.udp,
                udp_bound,
                tcp: &mut stack.tcp,
                local,
                now,
                stop,
                finish,
                stats,
                wake: None,
            };
            let step = work.step(&mut cx);
            (step, cx.wake)
        };
        if step == Step::Done || cancel.is_cancelled() {
            break;
        }
        let wait = if step == Step::Busy {
            Duration::ZERO
        } else {
            IDLE_WAIT
        };
        let until = now.after(wait);
        if let Err(e) = stack.run_until(wake.map_or(until, |w| w.min(until))) {
            return Some(e.to_string());
        }
    }
    let start = stack.now();
    while stack
        .tcp
        .connections()
        .any(|c| !matches!(c.state(), State::Closed | State::TimeWait | State::Listen))
        && stack.now().since(start) < LINGER
        && !cancel.is_cancelled()
    {
        let now = stack.now();
        if let Err(e) = stack.run_until(now.after(IDLE_WAIT)) {
            return Some(e.to_string());
        }
    }
    // What the work queued last (UDP FINs) leaves before its sockets close.
    let now = stack.now();
    stack.poll(now).err().map(|e| e.to_string())
}
