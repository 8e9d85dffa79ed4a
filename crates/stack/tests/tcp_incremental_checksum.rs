//! `--checksum incremental` on the TCP path, two stacks on in-memory
//! devices and the injected clock: a receiver's pure ACKs are written
//! from its ACK template with their checksums patched by RFC 1624, every
//! one of them (after the first) is counted, and every segment either way
//! carries the checksum a full sum gives (checked by the test's own sum);
//! under RFC 1071 nothing is patched.

#[path = "support/iface_packets.rs"]
mod packets;

use packets::tcp_sum;
use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{ChecksumMethod, Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

fn stack_at(
    addr: Ipv4Addr,
    method: ChecksumMethod,
    tcp: TcpConfig,
    clock: Arc<ManualClock>,
) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let mut iface = InterfaceConfig::new(Medium::Ip, cidr);
    iface.checksum = method;
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::new(Medium::Ip, 1500),
        iface,
        tcp,
        IsnGenerator::with_secret(IsnPolicy::Rfc6528, [addr.octets()[3]; 32]),
        clock,
    )
}

/// What one end put on the wire.
#[derive(Debug, Default)]
struct Seen {
    segments: u64,
    /// Segments with no payload and only the ACK flag.
    pure_acks: u64,
}

/// Checks every TCP packet's checksum by the test's own sum and counts
/// what it saw.
fn check(packets: &[Vec<u8>], seen: &mut Seen, method: ChecksumMethod) {
    for p in packets {
        assert_eq!(p[9], 6, "only TCP");
        let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
        let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
        let segment = &p[20..];
        assert_eq!(
            tcp_sum(src, dst, segment),
            0xffff,
            "{method:?}: a segment {src} -> {dst} whose checksum does not verify"
        );
        seen.segments += 1;
        let header_len = usize::from(segment[12] >> 4) * 4;
        if segment[13] == 0x10 && segment.len() == header_len {
            seen.pure_acks += 1;
        }
    }
}

/// Moves `data` from A to B, both on `method`; returns what B sent and
/// how many of its segments its connection counted as patched.
fn transfer(method: ChecksumMethod, tcp: TcpConfig, data: &[u8]) -> (Seen, u64) {
    let clock = Arc::new(ManualClock::new(Instant(1_000_000_000)));
    let mut a = stack_at(A, method, tcp.clone(), clock.clone());
    let mut b = stack_at(B, method, tcp, clock.clone());
    // An ACK per two segments as they come, not one per batch read: more
    // ACKs to patch.
    b.tcp.set_ack_per_batch(false);
    let listener = b.tcp.listen(80, 4).unwrap();
    let c = a
        .tcp
        .connect(A, SocketAddrV4::new(B, 80), clock.now())
        .unwrap();
    let (mut from_a, mut from_b) = (Seen::default(), Seen::default());
    let mut server = None;
    let (mut sent, mut got) = (0, Vec::new());
    let mut buf = vec![0u8; 65536];
    for _ in 0..100_000 {
        if got.len() == data.len() {
            break;
        }
        if sent < data.len() && a.tcp.connection(c).unwrap().state() == State::Established {
            sent += a.tcp.send(c, &data[sent..]).unwrap();
        }
        a.poll(clock.now()).unwrap();
        let out: Vec<Vec<u8>> = a.device.outbound.drain(..).collect();
        check(&out, &mut from_a, method);
        b.device.inbound.extend(out);
        b.poll(clock.now()).unwrap();
        let out: Vec<Vec<u8>> = b.device.outbound.drain(..).collect();
        check(&out, &mut from_b, method);
        a.device.inbound.extend(out);
        if server.is_none() {
            server = b.tcp.accept(listener).unwrap();
        }
        if let Some(s) = server {
            loop {
                let n = b.tcp.recv(s, &mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
        }
        let idle = a.device.inbound.is_empty() && b.device.inbound.is_empty();
        if idle {
            let next = [a.tcp.poll_at(), b.tcp.poll_at()]
                .into_iter()
                .flatten()
                .min();
            if let Some(at) = next {
                clock.set(at.max(clock.now()));
            }
        }
    }
    assert!(got == data, "{} of {} bytes arrived", got.len(), data.len());
    let server = server.expect("accepted");
    let patched = b
        .tcp
        .connection(server)
        .unwrap()
        .counters()
        .incremental_checksums;
    assert_eq!(
        a.tcp
            .connection(c)
            .unwrap()
            .counters()
            .incremental_checksums,
        0,
        "the sender sent only data (and the handshake's one ACK): nothing to patch"
    );
    (from_b, patched)
}

#[test]
fn incremental_patches_every_pure_ack_after_the_first_and_each_verifies() {
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    for timestamps in [true, false] {
        let tcp = TcpConfig {
            timestamps,
            ..TcpConfig::default()
        };
        let (seen, patched) = transfer(ChecksumMethod::Incremental, tcp.clone(), &data);
        assert!(seen.pure_acks > 20, "{seen:?}");
        assert_eq!(
            patched,
            seen.pure_acks - 1,
            "timestamps {timestamps}: the receiver sent {} pure ACKs, RFC 1624 patched \
             {patched} of them (each after the first fits the template: only its ACK, window \
             and timestamps change)",
            seen.pure_acks
        );
        let (seen, patched) = transfer(ChecksumMethod::Rfc1071, tcp, &data);
        assert!(seen.pure_acks > 20, "{seen:?}");
        assert_eq!(patched, 0, "RFC 1071 sums every segment whole");
    }
}
