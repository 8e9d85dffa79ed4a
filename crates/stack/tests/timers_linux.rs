//! `--timers bsd` against Linux's TCP, timed on the wire (issue 29): a
//! TUN device in a namespace of its own (`tcplab-timers-<pid>-<n>`,
//! deleted on drop), Linux at 10.83.N.1, the stack at 10.83.N.2, and
//! tcpdump on Linux's side of the device. Skipped, with a message,
//! without root, TUN or tcpdump.
//!
//! - The stack sends to Linux, then stops hearing it (the test's device
//!   layer drops every frame Linux sends from then on): the stack's
//!   retransmissions of its last segment are timed by tcpdump. On BSD's
//!   clocks every one leaves at a 500 ms tick (gaps whole multiples of
//!   500 ms) and the RTO is at least 1 s; on the exact clock, with the
//!   same Linux-like 200 ms floor, they leave 200, 400, 800, 1600 ms
//!   apart.
//! - Linux sends the stack 100-octet segments placed at known phases of
//!   the stack's 200 ms fast clock: on BSD's clocks each ACK leaves at a
//!   fast tick (ACK times 200 ms multiples apart) 0-200 ms after its
//!   segment, by phase; on the exact clock 200 ms after each.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::phy::tun::{TunKind, TunTap};
use stack::phy::{Capabilities, Device, Medium, PhyError};
use stack::stack::Stack;
use stack::tcp::bsd_clock::BsdClock;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::rtt::{Rfc6298Config, RttEstimatorKind};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::tcp::timers::{TimerClock, TimerConfig};
use stack::tcp::window::DelayedAckPolicy;
use stack::time::{Clock, Instant, MonotonicClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use testkit::tcpdump::{Capture, Packet};

const MS: Duration = Duration::from_millis(1);
/// How far a wire time may sit from the tick grid: the stack's loop
/// wakes within a millisecond of a deadline on a quiet host.
const SLACK_MS: f64 = 5.0;

/// A device that drops every frame it receives once told to: the peer
/// has stopped answering, as far as the stack can tell.
struct Deafened<D> {
    inner: D,
    deaf: Arc<AtomicBool>,
}

impl<D: Device> Device for Deafened<D> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        loop {
            match self.inner.receive(buf)? {
                Some(_) if self.deaf.load(Ordering::Relaxed) => continue,
                got => return Ok(got),
            }
        }
    }
    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        self.inner.transmit(frame)
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        self.inner.wait(timeout)
    }
}

/// The stack's connections: RFC 6298 with Linux's 200 ms floor, no tail
/// loss probe (BSD has none; here it would stand before the first
/// timeout), a 200 ms delayed-ACK timer; on BSD's clocks or exact.
fn config(bsd: bool) -> TcpConfig {
    TcpConfig {
        rtt: RttEstimatorKind::Rfc6298(Rfc6298Config {
            min_rto: 200 * MS,
            ..Rfc6298Config::default()
        }),
        tail_loss_probe: false,
        delayed_ack: DelayedAckPolicy::Timer(200 * MS),
        timers: TimerConfig {
            clock: if bsd {
                TimerClock::Bsd(BsdClock::default())
            } else {
                TimerClock::Exact
            },
            ..TimerConfig::default()
        },
        ..TcpConfig::default()
    }
}

struct Place {
    ns: Netns,
    capture: Capture,
    stack: Stack<Deafened<TunTap>>,
    deaf: Arc<AtomicBool>,
    clock: Arc<dyn Clock>,
    linux: Ipv4Addr,
    ours: Ipv4Addr,
}

fn place(subnet: u8, bsd: bool, what: &str) -> Option<Place> {
    let ns = Netns::new("timers")?;
    if !testkit::need_tool("tcpdump") {
        return None;
    }
    let linux = Ipv4Addr::new(10, 83, subnet, 1);
    let ours = Ipv4Addr::new(10, 83, subnet, 2);
    let device = ns.device(TunKind::Tun, &format!("{linux}/24"));
    let file =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("timers-{what}-{bsd}.pcap"));
    let capture = Capture::start(&ns.name, device.name(), &file);
    let deaf = Arc::new(AtomicBool::new(false));
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock::default());
    let cidr = Ipv4Cidr::new(Ipv4Address::from(ours), 24).unwrap();
    let iface = stack::iface::InterfaceConfig::new(Medium::Ip, cidr);
    let isn = IsnGenerator::from_os_rng(IsnPolicy::Rfc6528).expect("an ISN secret");
    let dev = Deafened {
        inner: device,
        deaf: deaf.clone(),
    };
    let stack = Stack::new(dev, iface, config(bsd), isn, clock.clone());
    Some(Place {
        ns,
        capture,
        stack,
        deaf,
        clock,
        linux,
        ours,
    })
}

fn run_for(stack: &mut Stack<Deafened<TunTap>>, clock: &dyn Clock, d: Duration) {
    let until = clock.now().after(d);
    while clock.now() < until {
        let now = clock.now();
        stack
            .run_until(now.after(10 * MS).min(until))
            .expect("the stack loop");
    }
}

/// The stack sends 10 kB to Linux, then stops hearing it and sends 1000
/// octets more: the wire gaps, ms, from that segment's first send to
/// each of its first `n` retransmissions.
fn retransmission_gaps(subnet: u8, bsd: bool, n: u64) -> Option<Vec<f64>> {
    let Place {
        ns,
        capture,
        mut stack,
        deaf,
        clock,
        linux,
        ours,
    } = place(subnet, bsd, "rexmt")?;
    let at = SocketAddrV4::new(linux, 5010);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let reader = ns.run(move || {
        let listener = TcpListener::bind(at).expect("bind");
        ready_tx.send(()).unwrap();
        let (mut s, _) = listener.accept().expect("accept");
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut buf = [0u8; 65536];
        let mut got = 0;
        while let Ok(k) = s.read(&mut buf) {
            if k == 0 {
                break;
            }
            got += k;
        }
        got
    });
    ready_rx.recv().unwrap();
    let c = stack.tcp.connect(ours, at, clock.now()).expect("connect");
    let limit = clock.now().after(Duration::from_secs(60));
    let established =
        |stack: &Stack<_>| stack.tcp.connection(c).unwrap().state() == State::Established;
    while !established(&stack) && clock.now() < limit {
        run_for(&mut stack, &*clock, 10 * MS);
    }
    assert_eq!(stack.tcp.send(c, &[5u8; 10_000]), Ok(10_000));
    let acked = |stack: &Stack<_>| {
        let (una, nxt, _) = stack.tcp.connection(c).unwrap().sequence_points();
        una == nxt
    };
    while !acked(&stack) && clock.now() < limit {
        run_for(&mut stack, &*clock, 10 * MS);
    }
    run_for(&mut stack, &*clock, 100 * MS);
    deaf.store(true, Ordering::Relaxed);
    assert_eq!(stack.tcp.send(c, &[6u8; 1000]), Ok(1000));
    while stack.tcp.connection(c).unwrap().counters().timeouts < n && clock.now() < limit {
        run_for(&mut stack, &*clock, 10 * MS);
    }
    let counters = stack.tcp.connection(c).unwrap().counters();
    let _ = stack.tcp.abort(c);
    run_for(&mut stack, &*clock, 50 * MS);
    let (packets, report) = capture.stop();
    let got = reader.join().expect("Linux's reader");
    eprintln!(
        "bsd {bsd}: Linux read {got} octets; {counters:?}; tcpdump: {}",
        report.trim()
    );
    assert!(got >= 10_000);
    assert_eq!(counters.timeouts, n, "the stack's timeouts");
    let data: Vec<&Packet> = packets
        .iter()
        .filter(|p| p.src == ours && p.payload > 0)
        .collect();
    let last = data
        .iter()
        .map(|p| p.seq)
        .max_by_key(|s| s.wrapping_sub(data[0].seq))
        .unwrap();
    let times: Vec<u128> = data
        .iter()
        .filter(|p| p.seq == last)
        .map(|p| p.at_ns)
        .collect();
    assert_eq!(
        times.len() as u64,
        n + 1,
        "the segment and its retransmissions on the wire"
    );
    Some(
        times
            .windows(2)
            .map(|w| (w[1] - w[0]) as f64 / 1e6)
            .collect(),
    )
}

/// How far `ms` is from the nearest multiple of `period`.
fn off_grid(ms: f64, period: f64) -> f64 {
    let r = ms.rem_euclid(period);
    r.min(period - r)
}

#[test]
fn retransmissions_to_linux_leave_on_500_ms_ticks_with_bsd_timers_and_not_without() {
    let Some(bsd) = retransmission_gaps(1, true, 4) else {
        return;
    };
    eprintln!("--timers bsd: retransmission gaps on the wire {bsd:.1?} ms");
    // The first timeout: 2 ticks, so 500-1000 ms after the send by its
    // phase; then tcp_backoff[] from the 200 ms floor's one tick: 2, 2,
    // 4, 8 ticks, each whole on the wire.
    assert!(
        bsd[0] > 500.0 - SLACK_MS && bsd[0] < 1000.0 + SLACK_MS,
        "{bsd:?}"
    );
    for (gap, want) in bsd[1..].iter().zip([1000.0, 2000.0, 4000.0]) {
        assert!((gap - want).abs() < SLACK_MS, "{bsd:?}");
        assert!(off_grid(*gap, 500.0) < SLACK_MS);
    }
    let Some(exact) = retransmission_gaps(2, false, 4) else {
        return;
    };
    eprintln!("--timers exact: retransmission gaps on the wire {exact:.1?} ms");
    for (gap, want) in exact.iter().zip([200.0, 400.0, 800.0, 1600.0]) {
        assert!((gap - want).abs() < SLACK_MS, "{exact:?}");
        assert!(
            off_grid(*gap, 500.0) > 50.0,
            "exact gaps are off the 500 ms grid"
        );
    }
}

/// Where in the stack's 200 ms fast clock Linux's segments are sent.
const PHASES_MS: [u64; 5] = [10, 50, 90, 130, 170];

/// Linux sends the stack 100-octet segments at [`PHASES_MS`] of its
/// fast clock (three rounds): (ACK delay, ACK time) on the wire, ms.
fn ack_delays(subnet: u8, bsd: bool) -> Option<Vec<(f64, f64)>> {
    let Place {
        ns,
        capture,
        mut stack,
        clock,
        linux,
        ours,
        ..
    } = place(subnet, bsd, "delack")?;
    let listener = stack.tcp.listen(5011, 4).expect("listen");
    let to = SocketAddrV4::new(ours, 5011);
    let linux_clock = clock.clone();
    let sender = ns.run(move || {
        let mut s =
            TcpStream::connect_timeout(&to.into(), Duration::from_secs(5)).expect("connect");
        s.set_nodelay(true).unwrap();
        // The first segment's read opens the window: a window update, at once.
        s.write_all(&[1; 100]).unwrap();
        std::thread::sleep(400 * MS);
        for round in 0..3 {
            for phase in PHASES_MS {
                // At least 300 ms after the last, at `phase` past a fast tick.
                let now = linux_clock.now().after(300 * MS).nanos();
                let fast = 200_000_000u64;
                let mut at = now / fast * fast + phase * 1_000_000;
                if at < now {
                    at += fast;
                }
                std::thread::sleep(Instant(at).since(linux_clock.now()));
                s.write_all(&[round as u8; 100]).unwrap();
            }
        }
        std::thread::sleep(300 * MS);
        s.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    });
    let limit = clock.now().after(Duration::from_secs(30));
    let mut conn = None;
    let mut buf = [0u8; 4096];
    while clock.now() < limit {
        run_for(&mut stack, &*clock, 5 * MS);
        if conn.is_none() {
            conn = stack.tcp.accept(listener).unwrap();
        }
        let Some(c) = conn else { continue };
        while stack.tcp.recv(c, &mut buf).unwrap_or(0) > 0 {}
        if stack.tcp.peer_finished(c).unwrap() {
            stack.tcp.close(c).unwrap();
            run_for(&mut stack, &*clock, 200 * MS);
            break;
        }
    }
    sender.join().expect("Linux's sender");
    let (packets, _) = capture.stop();
    let data: Vec<&Packet> = packets
        .iter()
        .filter(|p| p.src == linux && p.payload == 100)
        .collect();
    assert_eq!(data.len(), 16, "Linux's segments on the wire");
    let mut out = Vec::new();
    for d in &data[1..] {
        let end = d.seq.wrapping_add(100);
        let ack = packets
            .iter()
            .find(|p| p.src == ours && p.at_ns >= d.at_ns && p.ack == end)
            .expect("the stack's ACK of a segment");
        out.push(((ack.at_ns - d.at_ns) as f64 / 1e6, ack.at_ns as f64 / 1e6));
    }
    Some(out)
}

#[test]
fn delayed_acks_to_linux_leave_on_200_ms_ticks_with_bsd_timers_and_200_ms_after_without() {
    let Some(bsd) = ack_delays(3, true) else {
        return;
    };
    let delays: Vec<f64> = bsd.iter().map(|d| d.0).collect();
    eprintln!("--timers bsd: ACK delays on the wire {delays:.1?} ms");
    let first_ack = bsd[0].1;
    let worst = bsd
        .iter()
        .map(|&(_, at)| off_grid(at - first_ack, 200.0))
        .fold(0.0, f64::max);
    eprintln!("--timers bsd: ACK times at most {worst:.2} ms off a 200 ms grid");
    for &(delay, at) in &bsd {
        assert!((0.0..200.0 + SLACK_MS).contains(&delay), "{delays:?}");
        assert!(
            off_grid(at - first_ack, 200.0) < SLACK_MS,
            "an ACK off the 200 ms grid: {bsd:?}"
        );
    }
    // Sent 10-170 ms past a fast tick: each waits out the rest of it.
    for (delay, phase) in delays.iter().zip(PHASES_MS.iter().cycle()) {
        assert!((delay - (200.0 - *phase as f64)).abs() < 15.0, "{delays:?}");
    }
    let Some(exact) = ack_delays(4, false) else {
        return;
    };
    let delays: Vec<f64> = exact.iter().map(|d| d.0).collect();
    eprintln!("--timers exact: ACK delays on the wire {delays:.1?} ms");
    for delay in &delays {
        assert!((delay - 200.0).abs() < SLACK_MS, "{delays:?}");
    }
}
