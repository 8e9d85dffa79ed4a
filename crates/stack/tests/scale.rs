//! 10,000 idle connections between two whole stacks over in-memory
//! devices on one `ManualClock` (issue 18's scale target): an hour of
//! timer events leaves every one ESTABLISHED, the socket set's `poll_at`
//! is always the earliest deadline of any connection, a poll with nothing
//! due does not look at the idle connections, a data exchange on one of
//! them still works, and `TcpSockets::memory_bytes` agrees with what a
//! counting allocator saw (per connection, printed).

use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::socket::TcpHandle;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::tcp::timers::TimerConfig;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::live_bytes;

#[global_allocator]
static ALLOCATOR: counting_alloc::CountingAllocator = counting_alloc::CountingAllocator;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
const IDLE: usize = 10_000;
const TICKERS: usize = 100;

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>, seed: u8) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::new(Medium::Ip, 1500),
        InterfaceConfig::new(Medium::Ip, cidr),
        TcpConfig::default(),
        IsnGenerator::with_secret(IsnPolicy::Rfc6528, [seed; 32]),
        clock,
    )
}

struct Pair {
    clock: Arc<ManualClock>,
    a: Stack<Loopback>,
    b: Stack<Loopback>,
}

impl Pair {
    /// Polls both stacks and moves frames across until the wire is quiet
    /// (a poll reads at most the interface's budget of frames).
    fn settle(&mut self) {
        loop {
            let now = self.clock.now();
            self.a.poll(now).unwrap();
            self.b.poll(now).unwrap();
            let quiet = [&self.a.device, &self.b.device]
                .iter()
                .all(|d| d.outbound.is_empty() && d.inbound.is_empty());
            if quiet {
                return;
            }
            let a_out: Vec<_> = self.a.device.outbound.drain(..).collect();
            let b_out: Vec<_> = self.b.device.outbound.drain(..).collect();
            self.b.device.inbound.extend(a_out);
            self.a.device.inbound.extend(b_out);
        }
    }

    /// The socket sets' heap bytes together.
    fn tcp_memory(&self) -> usize {
        self.a.tcp.memory_bytes() + self.b.tcp.memory_bytes()
    }

    /// Drops the devices' queue capacity, which is not the sockets'.
    fn shrink_devices(&mut self) {
        for dev in [&mut self.a.device, &mut self.b.device] {
            dev.inbound.shrink_to_fit();
            dev.outbound.shrink_to_fit();
        }
    }

    /// The earliest deadline of any connection on either side, by a scan.
    fn scanned_earliest(&self) -> Option<Instant> {
        let a = self.a.tcp.connections().filter_map(|c| c.poll_at()).min();
        let b = self.b.tcp.connections().filter_map(|c| c.poll_at()).min();
        [a, b].into_iter().flatten().min()
    }

    fn reported_earliest(&self) -> Option<Instant> {
        [self.a.tcp.poll_at(), self.b.tcp.poll_at()]
            .into_iter()
            .flatten()
            .min()
    }
}

/// Opens `configs.len()` connections from A to B:80 in batches and
/// accepts them all on B; returns (A's handles, B's handles), in vectors
/// allocated before the first connection (so the allocator's count of
/// the connections does not include them).
fn open(
    p: &mut Pair,
    listener: TcpHandle,
    configs: &[TcpConfig],
    (mut ours, mut theirs): (Vec<TcpHandle>, Vec<TcpHandle>),
) -> (Vec<TcpHandle>, Vec<TcpHandle>) {
    for batch in configs.chunks(500) {
        for config in batch {
            let now = p.clock.now();
            let c =
                p.a.tcp
                    .connect_with(A, SocketAddrV4::new(B, 80), config.clone(), now)
                    .unwrap();
            ours.push(c);
        }
        p.settle();
        while let Some(s) = p.b.tcp.accept(listener).unwrap() {
            theirs.push(s);
        }
    }
    assert_eq!(theirs.len(), configs.len(), "every connection accepted");
    (ours, theirs)
}

fn assert_all_established(p: &Pair, ours: &[TcpHandle], theirs: &[TcpHandle]) {
    for &h in ours {
        assert_eq!(p.a.tcp.connection(h).unwrap().state(), State::Established);
    }
    for &h in theirs {
        assert_eq!(p.b.tcp.connection(h).unwrap().state(), State::Established);
    }
}

/// Within 10 % of what the allocator counted.
fn assert_close(reported: usize, counted: isize, what: &str) {
    let counted = counted as f64;
    let error = (reported as f64 - counted).abs() / counted;
    assert!(
        error <= 0.10,
        "{what}: memory_bytes says {reported}, the allocator counted {counted} ({:.1} % off)",
        error * 100.0
    );
}

#[test]
fn ten_thousand_idle_connections_hold_for_an_hour_and_memory_per_connection_is_counted() {
    // A poll's cost is timed, and the hour of timers beside it keeps a CPU
    // busy: one timed test at a time, on a quiet host.
    let _timing = testkit::timing_lock();
    let clock = Arc::new(ManualClock::new(Instant(1_000_000_000)));
    let mut p = Pair {
        a: stack_at(A, clock.clone(), 1),
        b: stack_at(B, clock.clone(), 2),
        clock,
    };
    let listener = p.b.tcp.listen(80, IDLE + TICKERS).unwrap();
    // 10,000 idle connections, keepalive off (the default).
    let idle = vec![TcpConfig::default(); IDLE];
    let handles = (Vec::with_capacity(IDLE), Vec::with_capacity(IDLE));
    p.shrink_devices();
    let (live_before, memory_before) = (live_bytes(), p.tcp_memory());

    let (ours, theirs) = open(&mut p, listener, &idle, handles);
    assert_all_established(&p, &ours, &theirs);
    assert_eq!(p.reported_earliest(), None, "idle connections arm no timer");
    assert_eq!(p.scanned_earliest(), None);

    p.shrink_devices();
    let counted = live_bytes() - live_before;
    let reported = p.tcp_memory() - memory_before;
    assert_close(reported, counted, "10,000 established connections");
    let per_connection = reported / (2 * IDLE);
    println!(
        "memory per established connection: {per_connection} bytes \
         (reported {reported} B, allocator {counted} B, for {} endpoints; \
         size_of::<Connection>() = {})",
        2 * IDLE,
        std::mem::size_of::<stack::tcp::tcb::Connection>()
    );

    // A poll with nothing due does not look at the idle connections: its
    // cost does not grow with them (a scan of 10,000 sockets costs
    // hundreds of µs even optimised away from the device).
    let visits = p.a.tcp.counters().timer_visits;
    let what = "1000 polls of 10,000 idle connections";
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || {
        let started = std::time::Instant::now();
        for _ in 0..1000 {
            p.a.tcp.on_timers(p.clock.now());
        }
        started.elapsed() / 1000
    });
    eprintln!("{what}: {}", q.describe());
    let per_call = q.value;
    assert_eq!(p.a.tcp.counters().timer_visits, visits, "nothing visited");
    assert!(
        per_call < Duration::from_micros(20),
        "on_timers with 10,000 idle connections took {per_call:?}"
    );

    // Timer events for an hour: 100 more connections with keepalive on,
    // idle times from 60 s to 159 s, answered by B each time.
    let tickers: Vec<TcpConfig> = (0..TICKERS)
        .map(|i| TcpConfig {
            keepalive: true,
            timers: TimerConfig {
                keepalive_idle: Duration::from_secs(60 + i as u64),
                ..TimerConfig::default()
            },
            ..TcpConfig::default()
        })
        .collect();
    let (tick_ours, tick_theirs) = open(&mut p, listener, &tickers, Default::default());
    let start = p.clock.now();
    let end = start.after(Duration::from_secs(3600));
    let visits_before = p.a.tcp.counters().timer_visits;
    let mut events = 0u64;
    loop {
        let next = p.reported_earliest().expect("the tickers keep a timer");
        if events.is_multiple_of(16) {
            assert_eq!(Some(next), p.scanned_earliest(), "poll_at is the earliest");
        }
        if next > end {
            break;
        }
        p.clock.set(next);
        p.settle();
        events += 1;
    }
    let probes: u64 = tick_ours
        .iter()
        .map(|&h| p.a.tcp.connection(h).unwrap().counters().keepalive_probes)
        .sum();
    // Each ticker probes every 60–159 s: about 3,300 probes in the hour.
    assert!(probes > 2000, "{probes} keepalive probes");
    let visits = p.a.tcp.counters().timer_visits - visits_before;
    assert!(
        visits <= 2 * probes,
        "{visits} connections visited for {probes} due timers"
    );
    assert_all_established(&p, &ours, &theirs);
    assert_all_established(&p, &tick_ours, &tick_theirs);
    println!("an hour: {events} timer events, {probes} keepalive probes, {visits} visits");

    // One data exchange on a connection picked by a fixed pseudo-random
    // index still works.
    let pick = (7919 * 31) % IDLE;
    let (c, s) = (ours[pick], theirs[pick]);
    assert_eq!(p.a.tcp.send(c, b"ping from A").unwrap(), 11);
    p.settle();
    let mut buf = [0u8; 64];
    let n = p.b.tcp.recv(s, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"ping from A");
    assert_eq!(p.b.tcp.send(s, b"pong from B").unwrap(), 11);
    p.settle();
    let n = p.a.tcp.recv(c, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"pong from B");

    // With buffers in use the figure still matches the allocator.
    p.shrink_devices();
    let counted = live_bytes() - live_before;
    assert_close(p.tcp_memory() - memory_before, counted, "after data");
}
