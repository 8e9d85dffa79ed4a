//! What tcplab's stack costs in user space per data segment, with no
//! system call in the way: two stacks on one manual clock, wired back to
//! back through in-memory devices, move `--bytes` (default 200 MB) in
//! each of `--rounds` rounds (default 7). The sending side's work (the
//! application's copy into the send buffer and its polls: segments out,
//! ACKs in) and the receiving side's (its polls and the application's
//! reads) are timed apart; the medians are printed in ns per data
//! segment, with the spread.
//!
//! Why: over a TUN, each segment's `write(2)` costs about 3 µs of kernel
//! time, 90% of a stream's CPU, and a change of 20 ns in the stack's own
//! code is lost in that noise. Here it is not. The in-memory device
//! copies each frame into a `Vec` of its own, a constant part of both
//! sides' figures.
//!
//! `cargo bench -p stack --bench segment_cost -- --bytes 200000000 --rounds 7`

use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, Instant as StackInstant, ManualClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Instant;

const SENDER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const RECEIVER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
/// Send and receive buffers, as `stack-peers` uses them.
const BUFFER: usize = 1 << 20;
const MSS: u16 = 1460;

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>, seed: u8) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).expect("a /24");
    let iface = InterfaceConfig::new(Medium::Ip, cidr);
    let tcp = TcpConfig {
        mss: MSS,
        send_buffer: BUFFER,
        recv_buffer: BUFFER,
        ..TcpConfig::default()
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [seed; 32]);
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::new(Medium::Ip, usize::from(MSS) + 40),
        iface,
        tcp,
        isn,
        clock,
    )
}

/// One transfer's time on each side, and the data segments it took.
struct Round {
    sender_ns: f64,
    receiver_ns: f64,
    segments: f64,
}

fn transfer(bytes: usize) -> Round {
    let clock = Arc::new(ManualClock::new(StackInstant(1_000_000_000)));
    let mut tx = stack_at(SENDER, clock.clone(), 1);
    let mut rx = stack_at(RECEIVER, clock.clone(), 2);
    let listener = rx.tcp.listen(5001, 4).expect("listen");
    let c = tx
        .tcp
        .connect(SENDER, SocketAddrV4::new(RECEIVER, 5001), clock.now())
        .expect("connect");
    let mut s = None;
    for _ in 0..10 {
        let now = clock.now();
        tx.poll(now).expect("poll");
        rx.device.inbound.extend(tx.device.outbound.drain(..));
        rx.poll(now).expect("poll");
        tx.device.inbound.extend(rx.device.outbound.drain(..));
        s = s.or_else(|| rx.tcp.accept(listener).expect("accept"));
    }
    let s = s.expect("the handshake completes");
    let chunk = vec![0xa5u8; 64 * 1024];
    let mut buf = vec![0u8; 256 * 1024];
    let (mut sent, mut got) = (0usize, 0usize);
    let (mut sender_ns, mut receiver_ns) = (0u128, 0u128);
    let segments_before = tx.tcp.connection(c).expect("conn").counters().segments_out;
    while got < bytes {
        let now = clock.now();
        let t = Instant::now();
        while sent < bytes {
            let n = chunk.len().min(bytes - sent);
            let took = tx.tcp.send(c, &chunk[..n]).expect("send");
            if took == 0 {
                break;
            }
            sent += took;
        }
        tx.poll(now).expect("poll");
        sender_ns += t.elapsed().as_nanos();
        let moved = tx.device.outbound.len();
        rx.device.inbound.extend(tx.device.outbound.drain(..));
        let t = Instant::now();
        rx.poll(now).expect("poll");
        loop {
            let n = rx.tcp.recv(s, &mut buf).expect("recv");
            if n == 0 {
                break;
            }
            got += n;
        }
        // The reads opened the window: the update leaves now.
        rx.poll(now).expect("poll");
        receiver_ns += t.elapsed().as_nanos();
        let acks = rx.device.outbound.len();
        tx.device.inbound.extend(rx.device.outbound.drain(..));
        if moved == 0 && acks == 0 {
            // Only a timer (the delayed ACK) can move things on.
            let next = [tx.tcp.poll_at(), rx.tcp.poll_at()]
                .into_iter()
                .flatten()
                .min()
                .expect("a timer is armed");
            clock.set(next.max(clock.now()));
        }
    }
    let segments = tx.tcp.connection(c).expect("conn").counters().segments_out - segments_before;
    Round {
        sender_ns: sender_ns as f64,
        receiver_ns: receiver_ns as f64,
        segments: segments as f64,
    }
}

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name} wants a number, not {v:?}"))
        })
        .unwrap_or(default)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let bytes = arg("--bytes", 200_000_000);
    let rounds = arg("--rounds", 7).max(1);
    let mut sender = Vec::new();
    let mut receiver = Vec::new();
    for round in 1..=rounds {
        let r = transfer(bytes);
        let (s, rv) = (r.sender_ns / r.segments, r.receiver_ns / r.segments);
        eprintln!(
            "round {round}: {:.0} data segments, sender {s:.1} ns/segment, receiver {rv:.1} ns/segment",
            r.segments
        );
        sender.push(s);
        receiver.push(rv);
    }
    let spread = |v: &[f64]| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        format!("{lo:.1}–{hi:.1}")
    };
    println!(
        "segment_cost: {bytes} bytes × {rounds} rounds; median ns per data segment: sender {:.1} (range {}), receiver {:.1} (range {})",
        median(&sender),
        spread(&sender),
        median(&receiver),
        spread(&receiver)
    );
}
