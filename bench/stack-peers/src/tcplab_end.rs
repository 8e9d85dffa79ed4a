//! tcplab's end: its `Stack` on a TUN (plain, or with virtio-net-header
//! offloads: `--offload`) in the
//! namespace, driven by `run_until` on this thread.

use crate::setup::{Cc, Setup, Stopwatch, Timed, LIMIT, MSS, PORT, TUN_NAME};
use anyhow::{bail, Context, Result};
use serde_json::json;
use stack::account::{self, Block, Report};
use stack::iface::InterfaceConfig;
use stack::phy::tun::{TunConfig, TunKind, TunTap};
use stack::phy::Medium;
use stack::socket::tcp::TcpHandle;
use stack::stack::Stack;
use stack::tcp::cc::CongestionControlKind;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::SocketAddrV4;
use std::sync::Arc;
use std::time::Duration;

/// How long one `run_until` may sleep before the loop looks again.
const TICK: Duration = Duration::from_millis(5);

/// The stack on a new TUN in the calling thread's namespace, Linux's side
/// configured.
fn open(setup: &Setup) -> Result<Stack<TunTap>> {
    let kind = if setup.offload {
        TunKind::TunOffload
    } else {
        TunKind::Tun
    };
    let device = TunTap::open(&TunConfig::new(TUN_NAME, kind)).context("opening the TUN")?;
    setup.configure_tun()?;
    let cidr = Ipv4Cidr::new(Ipv4Address::from(setup.ours), 24).context("our address")?;
    let iface = InterfaceConfig {
        tx_batch: setup.tx_batch,
        poll_budget: setup.poll_budget,
        ..InterfaceConfig::new(Medium::Ip, cidr)
    };
    let tcp = TcpConfig {
        mss: MSS,
        send_buffer: setup.buffer,
        recv_buffer: setup.buffer,
        congestion: match setup.cc {
            Cc::Reno => CongestionControlKind::Reno,
            Cc::Cubic => CongestionControlKind::Cubic,
            Cc::None => CongestionControlKind::None,
        },
        ..TcpConfig::default()
    };
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).context("an ISN secret")?;
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let mut stack = Stack::new(device, iface, tcp, isn, clock);
    stack.tcp.set_ack_per_batch(setup.ack_per_batch);
    Ok(stack)
}

/// Calibrates the counter (once per process, 60 ms) when `--account`
/// asked for accounting: before the timed interval.
fn account_prepare(setup: &Setup) {
    if setup.account.is_some() {
        account::cycles::counts_per_ns();
    }
}

/// Starts the accountant on this thread when `--account` asked for it,
/// just inside the timed interval (the stopwatch reads the TUN's counters
/// with `ip`, a child process waited for: blocked time that is neither
/// CPU nor idle in poll, so it stays outside the accounting). Measuring
/// the bracket's cost here takes about 1 ms of the interval.
fn account_start(setup: &Setup) {
    if let Some(n) = setup.account {
        account::start(account::Options {
            timeline_capacity: 0,
            sample_one_in: n,
        });
    }
}

/// Stops the accountant (before the stopwatch, which waits for `ip`) and
/// summarises what it counted.
fn account_stop() -> Option<serde_json::Value> {
    account::stop().map(|report| summary(&report))
}

/// The accountant's report as JSON: per block, count, ns and ns per
/// packet; the busy, idle, thread-CPU and check figures.
fn summary(r: &Report) -> serde_json::Value {
    let blocks: serde_json::Map<String, serde_json::Value> = Block::ALL
        .iter()
        .filter(|&&b| r.row(b).count > 0.0)
        .map(|&b| {
            let row = r.row(b);
            let v = json!({
                "count": row.count,
                "ns": row.ns,
                "ns_per_packet": r.ns_per_packet(b),
            });
            (b.name().to_string(), v)
        })
        .collect();
    let cpu = r.cpu_check(0.05);
    json!({
        "sample_one_in": r.sample_one_in,
        "packets": r.packets(),
        "payload_bytes": r.payload_bytes(),
        "busy_ns": r.busy_ns(),
        "idle_ns": r.idle_ns(),
        "attributed_ns": r.attributed_ns(),
        "bracket_cost_ns": r.bracket_cost_ns(),
        "unattributed_ns": r.unattributed_ns(),
        "thread_cpu_ns": r.thread_cpu_ns,
        "run_delay_ns": r.run_delay_ns,
        "steal_ns": r.steal_ns,
        "irq_ns": r.irq_ns,
        "cpu_check_error": cpu.error,
        "inner_cost_cycles": r.inner_cost,
        "outer_cost_cycles": r.outer_cost,
        "counts_per_ns": r.counts_per_ns,
        "blocks": blocks,
    })
}

fn step(stack: &mut Stack<TunTap>) -> Result<()> {
    let deadline = stack.now().after(TICK);
    stack.run_until(deadline).context("the stack loop")
}

fn state(stack: &Stack<TunTap>, c: TcpHandle) -> Result<State> {
    let conn = stack.tcp.connection(c)?;
    if let Some(e) = conn.error() {
        bail!("the connection failed: {e:?}");
    }
    Ok(conn.state())
}

/// Connects to Linux, sends `bytes`, closes, and runs until Linux has
/// acknowledged the FIN. Timed from ESTABLISHED.
pub fn send(setup: &Setup, bytes: u64) -> Result<Timed> {
    let mut stack = open(setup)?;
    let to = SocketAddrV4::new(setup.linux, PORT);
    let c = stack.tcp.connect(setup.ours, to, stack.now())?;
    let chunk = vec![0xa5u8; 64 * 1024];
    let limit = std::time::Instant::now() + LIMIT;
    while state(&stack, c)? != State::Established {
        step(&mut stack)?;
        if std::time::Instant::now() > limit {
            bail!("no handshake");
        }
    }
    account_prepare(setup);
    let watch = Stopwatch::start(setup);
    account_start(setup);
    let mut sent = 0u64;
    let mut shut = false;
    loop {
        while sent < bytes {
            let n = chunk.len().min((bytes - sent) as usize);
            let took = stack.tcp.send(c, &chunk[..n])?;
            if took == 0 {
                break;
            }
            sent += took as u64;
        }
        if sent == bytes && !shut {
            stack.tcp.shutdown(c)?;
            shut = true;
        }
        step(&mut stack)?;
        if matches!(
            state(&stack, c)?,
            State::FinWait2 | State::TimeWait | State::Closed
        ) {
            let account = account_stop();
            let mut timed = watch.stop();
            timed.account = account;
            return Ok(timed);
        }
        if std::time::Instant::now() > limit {
            bail!("the transfer took longer than {LIMIT:?}");
        }
    }
}

/// Listens, accepts one connection, reads until Linux's FIN. Timed from
/// the accept to the last byte. Returns the bytes read too.
pub fn receive(setup: &Setup, ready: std::sync::mpsc::Sender<()>) -> Result<(u64, Timed)> {
    let mut stack = open(setup)?;
    let listener = stack.tcp.listen(PORT, 4)?;
    ready.send(()).ok();
    let limit = std::time::Instant::now() + LIMIT;
    let c = loop {
        step(&mut stack)?;
        if let Some(c) = stack.tcp.accept(listener)? {
            break c;
        }
        if std::time::Instant::now() > limit {
            bail!("no connection");
        }
    };
    account_prepare(setup);
    let watch = Stopwatch::start(setup);
    account_start(setup);
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    loop {
        loop {
            let n = stack.tcp.recv(c, &mut buf)?;
            if n == 0 {
                break;
            }
            got += n as u64;
        }
        if stack.tcp.peer_finished(c)? {
            let account = account_stop();
            let mut timed = watch.stop();
            timed.account = account;
            stack.tcp.close(c)?;
            for _ in 0..100 {
                step(&mut stack)?;
                if stack.tcp.connections().next().is_none() {
                    break;
                }
            }
            return Ok((got, timed));
        }
        step(&mut stack)?;
        if std::time::Instant::now() > limit {
            bail!("the transfer took longer than {LIMIT:?}");
        }
    }
}

/// Listens, accepts one connection and echoes every byte until Linux's
/// FIN. Returns the CPU time of the whole echo.
pub fn echo(setup: &Setup, ready: std::sync::mpsc::Sender<()>) -> Result<Timed> {
    let mut stack = open(setup)?;
    let listener = stack.tcp.listen(PORT, 4)?;
    ready.send(()).ok();
    let limit = std::time::Instant::now() + LIMIT;
    let c = loop {
        step(&mut stack)?;
        if let Some(c) = stack.tcp.accept(listener)? {
            break c;
        }
        if std::time::Instant::now() > limit {
            bail!("no connection");
        }
    };
    let watch = Stopwatch::start(setup);
    let mut buf = [0u8; 64];
    loop {
        step(&mut stack)?;
        let n = stack.tcp.recv(c, &mut buf)?;
        if n > 0 && stack.tcp.send(c, &buf[..n])? != n {
            bail!("the send buffer is full in an echo");
        }
        if n == 0 && stack.tcp.peer_finished(c)? {
            stack.tcp.close(c)?;
            let timed = watch.stop();
            for _ in 0..100 {
                step(&mut stack)?;
            }
            return Ok(timed);
        }
        if std::time::Instant::now() > limit {
            bail!("the echo took longer than {LIMIT:?}");
        }
    }
}
