//! ICMP destination unreachable both ways, on in-memory devices and the
//! injected clock: UDP to a closed port and an unknown protocol are
//! answered (quoting the datagram, within the rate limit, never for a
//! broadcast), and an error about a TCP segment in flight reaches its
//! connection as a soft error, fragmentation needed lowering its MSS
//! (RFC 1191) while a forged one quoting nothing in flight is ignored.

#[path = "support/iface_packets.rs"]
mod packets;

use packets::{ones_sum, udp, Ip};
use stack::iface::icmp_error::UnreachableCode;
use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
const ROUTER: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 254);

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::new(Medium::Ip, 1500),
        InterfaceConfig::new(Medium::Ip, cidr),
        TcpConfig::default(),
        IsnGenerator::with_secret(IsnPolicy::Rfc6528, [addr.octets()[3]; 32]),
        clock,
    )
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Instant(1_000_000_000)))
}

/// (type, code, the quoted bytes) of an ICMP packet from `from`, checking
/// its IP protocol and ICMP checksum.
fn icmp_of(packet: &[u8], from: Ipv4Addr) -> (u8, u8, Vec<u8>) {
    assert_eq!(packet[9], 1, "ICMP");
    assert_eq!(&packet[12..16], &from.octets());
    let message = &packet[20..];
    assert_eq!(ones_sum(message, 0), 0xffff, "ICMP checksum");
    (message[0], message[1], message[8..].to_vec())
}

#[test]
fn udp_to_a_closed_port_is_answered_with_port_unreachable_quoting_it_within_the_rate_limit() {
    let clock = clock();
    let mut s = stack_at(B, clock.clone());
    let datagram = Ip::new(A, B, 17).packet(&udp(A, B, 5000, 9, &[7u8; 100]));
    s.device.inbound.push_back(datagram.clone());
    s.poll(clock.now()).unwrap();
    let answer = s.device.outbound.pop_front().expect("an ICMP error");
    let (kind, code, quoted) = icmp_of(&answer, B);
    assert_eq!((kind, code), (3, 3), "destination unreachable, port");
    assert_eq!(
        quoted, datagram,
        "the whole datagram quoted (under 576 bytes)"
    );
    assert_eq!(&answer[16..20], &A.octets());

    // To the subnet's broadcast address: no error (RFC 1122 §3.2.2).
    let broadcast = Ipv4Addr::new(10, 9, 0, 255);
    let to_all = Ip::new(A, broadcast, 17).packet(&udp(A, broadcast, 5000, 9, b"x"));
    s.device.inbound.push_back(to_all);
    s.poll(clock.now()).unwrap();
    assert!(s.device.outbound.is_empty(), "no error for a broadcast");

    // A burst: the bucket (50) had one taken; 49 more go out, then none
    // until a token comes back 1 ms later.
    for _ in 0..60 {
        s.device.inbound.push_back(datagram.clone());
    }
    s.poll(clock.now()).unwrap();
    assert_eq!(s.device.outbound.len(), 49);
    let c = *s.iface.counters();
    assert_eq!((c.icmp_errors_sent, c.icmp_errors_rate_limited), (50, 11));
    s.device.outbound.clear();
    clock.advance(Duration::from_millis(1));
    s.device.inbound.push_back(datagram.clone());
    s.device.inbound.push_back(datagram);
    s.poll(clock.now()).unwrap();
    assert_eq!(s.device.outbound.len(), 1, "one token per millisecond");
}

#[test]
fn an_unknown_protocol_is_answered_with_protocol_unreachable() {
    let clock = clock();
    let mut s = stack_at(B, clock.clone());
    let packet = Ip::new(A, B, 253).packet(b"experimental payload");
    s.device.inbound.push_back(packet.clone());
    s.poll(clock.now()).unwrap();
    let answer = s.device.outbound.pop_front().expect("an ICMP error");
    let (kind, code, quoted) = icmp_of(&answer, B);
    assert_eq!((kind, code), (3, 2), "destination unreachable, protocol");
    assert_eq!(quoted, packet);
}

/// A destination unreachable from `from` quoting the first 28 bytes of
/// `packet` (its IP header and 8 bytes of TCP), with `mtu` for code 4.
fn unreachable(from: Ipv4Addr, to: Ipv4Addr, code: u8, mtu: u16, packet: &[u8]) -> Vec<u8> {
    let mut m = vec![3, code, 0, 0, 0, 0];
    m.extend_from_slice(&mtu.to_be_bytes());
    m.extend_from_slice(&packet[..28]);
    let sum = !ones_sum(&m, 0);
    m[2..4].copy_from_slice(&sum.to_be_bytes());
    Ip::new(from, to, 1).packet(&m)
}

#[test]
fn fragmentation_needed_lowers_a_connections_mss_as_a_soft_error_and_forgeries_are_ignored() {
    let clock = clock();
    let (mut a, mut b) = (stack_at(A, clock.clone()), stack_at(B, clock.clone()));
    let listener = b.tcp.listen(80, 4).unwrap();
    let c = a
        .tcp
        .connect(A, SocketAddrV4::new(B, 80), clock.now())
        .unwrap();
    // The handshake.
    for _ in 0..4 {
        a.poll(clock.now()).unwrap();
        b.device.inbound.extend(a.device.outbound.drain(..));
        b.poll(clock.now()).unwrap();
        a.device.inbound.extend(b.device.outbound.drain(..));
    }
    let server = b.tcp.accept(listener).unwrap().expect("accepted");
    assert_eq!(a.tcp.connection(c).unwrap().state(), State::Established);
    assert_eq!(a.tcp.connection(c).unwrap().send_mss(), 1460);

    // A sends; a router on the way carries only 1000-byte packets.
    let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
    a.tcp.send(c, &data).unwrap();
    a.poll(clock.now()).unwrap();
    let first = a.device.outbound.pop_front().expect("a data segment");
    assert_eq!(first.len(), 1500);
    a.device.outbound.clear();

    // A forged error quoting a sequence number nobody sent: ignored.
    let mut forged = first.clone();
    forged[24..28].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    a.device
        .inbound
        .push_back(unreachable(ROUTER, A, 4, 576, &forged));
    a.poll(clock.now()).unwrap();
    assert_eq!(a.tcp.counters().icmp_ignored, 1);
    assert_eq!(a.tcp.connection(c).unwrap().send_mss(), 1460);
    assert_eq!(a.tcp.soft_error(c).unwrap(), None);

    a.device
        .inbound
        .push_back(unreachable(ROUTER, A, 4, 1000, &first));
    a.poll(clock.now()).unwrap();
    assert_eq!(a.iface.counters().icmp_errors_received, 2);
    assert_eq!(a.tcp.counters().pmtu_reductions, 1);
    assert_eq!(a.tcp.connection(c).unwrap().send_mss(), 960);
    assert_eq!(
        a.tcp.soft_error(c).unwrap(),
        Some(UnreachableCode::FragmentationNeeded)
    );
    assert_eq!(a.tcp.connection(c).unwrap().state(), State::Established);

    // From now on every packet fits the path, and the bytes arrive.
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    for _ in 0..200 {
        if got.len() == data.len() {
            break;
        }
        if let Some(at) = a.tcp.poll_at() {
            if a.device.outbound.is_empty() && b.device.outbound.is_empty() {
                clock.set(at.max(clock.now()));
            }
        }
        a.poll(clock.now()).unwrap();
        for p in a.device.outbound.drain(..) {
            assert!(p.len() <= 1000, "a {} byte packet after the error", p.len());
            b.device.inbound.push_back(p);
        }
        b.poll(clock.now()).unwrap();
        a.device.inbound.extend(b.device.outbound.drain(..));
        loop {
            let n = b.tcp.recv(server, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }
    assert!(got == data, "{} of {} bytes", got.len(), data.len());
}

#[test]
fn fragmentation_needed_resends_what_no_longer_fits_at_once_not_on_the_timer() {
    let clock = clock();
    let (mut a, mut b) = (stack_at(A, clock.clone()), stack_at(B, clock.clone()));
    let listener = b.tcp.listen(80, 4).unwrap();
    let c = a
        .tcp
        .connect(A, SocketAddrV4::new(B, 80), clock.now())
        .unwrap();
    for _ in 0..4 {
        a.poll(clock.now()).unwrap();
        b.device.inbound.extend(a.device.outbound.drain(..));
        b.poll(clock.now()).unwrap();
        a.device.inbound.extend(b.device.outbound.drain(..));
    }
    let server = b.tcp.accept(listener).unwrap().expect("accepted");
    let data: Vec<u8> = (0..4000u32).map(|i| (i * 7) as u8).collect();
    a.tcp.send(c, &data).unwrap();
    a.poll(clock.now()).unwrap();
    // The flight of 1500-byte packets dies at a router carrying 1000.
    let flight: Vec<Vec<u8>> = a.device.outbound.drain(..).collect();
    assert!(flight.len() >= 2 && flight.iter().all(|p| p.len() <= 1500));
    assert_eq!(flight[0].len(), 1500);
    let first_seq = u32::from_be_bytes(flight[0][24..28].try_into().unwrap());
    clock.advance(Duration::from_millis(1));
    a.device
        .inbound
        .push_back(unreachable(ROUTER, A, 4, 1000, &flight[0]));
    a.poll(clock.now()).unwrap();
    // The same poll resends from SND.UNA in segments that fit; the
    // retransmission timer (1 s) has not fired.
    let resent: Vec<Vec<u8>> = a.device.outbound.drain(..).collect();
    assert!(
        !resent.is_empty(),
        "nothing resent on the error: the flight waits for the RTO"
    );
    assert!(resent.iter().all(|p| p.len() <= 1000), "all fit the path");
    let seq = u32::from_be_bytes(resent[0][24..28].try_into().unwrap());
    assert_eq!(seq, first_seq, "from SND.UNA");
    assert_eq!(a.tcp.connection(c).unwrap().counters().timeouts, 0);
    // And B gets every byte.
    b.device.inbound.extend(resent);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    for _ in 0..50 {
        b.poll(clock.now()).unwrap();
        a.device.inbound.extend(b.device.outbound.drain(..));
        a.poll(clock.now()).unwrap();
        b.device.inbound.extend(a.device.outbound.drain(..));
        loop {
            let n = b.tcp.recv(server, &mut buf).unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        if got.len() == data.len() {
            break;
        }
        clock.advance(Duration::from_millis(1));
    }
    assert!(got == data, "{} of {} bytes", got.len(), data.len());
    assert_eq!(a.tcp.connection(c).unwrap().counters().timeouts, 0);
}
