//! RFC 1122 §4.2.3.10 (remote address validation), on an in-memory device
//! and the injected clock: a TCP segment to a broadcast or multicast
//! address, or from one, is dropped without a word (no SYN-ACK, no RST);
//! the stack never sends TCP from or to such an address; and a connect to
//! one is refused.

#[path = "support/iface_packets.rs"]
mod packets;

use packets::{tcp, Ip};
use stack::iface::{DropReason, InterfaceConfig};
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{IpProtocol, Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
/// B's network's broadcast address (10.9.0.0/24).
const SUBNET_BROADCAST: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 255);
const ALL_HOSTS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);

const SYN: u8 = 0x02;
const ACK: u8 = 0x10;

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::new(Medium::Ip, 1500),
        InterfaceConfig::new(Medium::Ip, cidr),
        TcpConfig::default(),
        IsnGenerator::with_secret(IsnPolicy::Rfc6528, [7; 32]),
        clock,
    )
}

fn clock() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(Instant(1_000_000_000)))
}

/// A packet's (source, destination, IP protocol, TCP flags if TCP).
fn describe(packet: &[u8]) -> String {
    let src = Ipv4Addr::new(packet[12], packet[13], packet[14], packet[15]);
    let dst = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
    let flags = if packet[9] == 6 {
        format!(" tcp flags {:#04x}", packet[20 + 13])
    } else {
        String::new()
    };
    format!("{src} -> {dst} protocol {}{flags}", packet[9])
}

/// Delivers `packet` to `s`, polls, and returns what it sent.
fn answer_to(s: &mut Stack<Loopback>, clock: &ManualClock, packet: Vec<u8>) -> Vec<String> {
    s.device.inbound.push_back(packet);
    s.poll(clock.now()).unwrap();
    s.device.outbound.drain(..).map(|p| describe(&p)).collect()
}

#[test]
fn a_syn_to_a_broadcast_or_multicast_address_is_dropped_without_an_answer() {
    let clock = clock();
    let mut s = stack_at(B, clock.clone());
    s.tcp.listen(80, 8).unwrap();
    let mut dropped = 0;
    for dst in [SUBNET_BROADCAST, Ipv4Addr::BROADCAST, ALL_HOSTS] {
        let syn = Ip::new(A, dst, 6).packet(&tcp(A, dst, (40000, 80), 1000, 0, SYN));
        let sent = answer_to(&mut s, &clock, syn);
        assert!(
            sent.is_empty(),
            "a SYN to {dst} was answered with {sent:?}: RFC 1122 §4.2.3.10 wants it \
             silently discarded"
        );
        dropped += 1;
        let drops = s.iface.counters().drops(DropReason::TcpNotUnicast)
            + s.iface.counters().drops(DropReason::NotOurAddress);
        assert_eq!(drops, dropped, "the SYN to {dst} counted as a drop");
        // Any other segment to a broadcast: no RST either (a port nobody
        // listens on, which to our own address would be reset).
        let ack = Ip::new(A, dst, 6).packet(&tcp(A, dst, (40000, 81), 1000, 1, ACK));
        let sent = answer_to(&mut s, &clock, ack);
        assert!(
            sent.is_empty(),
            "an ACK to {dst} was answered with {sent:?}"
        );
        dropped += 1;
    }
    assert_eq!(s.tcp.counters().passive_opens, 0, "no connection was made");
    assert_eq!(
        s.iface.counters().drops(DropReason::TcpNotUnicast),
        4,
        "the four segments to the two broadcasts (multicast is not ours: not_our_address)"
    );

    // To our own address the same SYN is answered: the listener is there.
    let syn = Ip::new(A, B, 6).packet(&tcp(A, B, (40000, 80), 1000, 0, SYN));
    let sent = answer_to(&mut s, &clock, syn);
    assert_eq!(sent, [format!("{B} -> {A} protocol 6 tcp flags 0x12")]);
}

#[test]
fn a_segment_from_a_broadcast_or_multicast_source_is_dropped_without_an_answer() {
    let clock = clock();
    let mut s = stack_at(B, clock.clone());
    s.tcp.listen(80, 8).unwrap();
    for src in [
        SUBNET_BROADCAST,
        Ipv4Addr::BROADCAST,
        ALL_HOSTS,
        Ipv4Addr::UNSPECIFIED,
    ] {
        let syn = Ip::new(src, B, 6).packet(&tcp(src, B, (40000, 80), 1000, 0, SYN));
        let sent = answer_to(&mut s, &clock, syn);
        assert!(
            sent.is_empty(),
            "a SYN from {src} was answered with {sent:?}: RFC 1122 §4.2.3.10 wants it ignored"
        );
        let ack = Ip::new(src, B, 6).packet(&tcp(src, B, (40000, 81), 1000, 1, ACK));
        let sent = answer_to(&mut s, &clock, ack);
        assert!(
            sent.is_empty(),
            "an ACK from {src} was answered with {sent:?}"
        );
    }
    assert_eq!(s.tcp.counters().passive_opens, 0);
    assert_eq!(s.iface.counters().drops(DropReason::TcpNotUnicast), 8);
}

#[test]
fn tcp_never_leaves_from_or_to_a_broadcast_or_multicast_address() {
    let clock = clock();
    let mut s = stack_at(B, clock.clone());
    let cases = [
        (Some(SUBNET_BROADCAST), A),
        (Some(Ipv4Addr::BROADCAST), A),
        (Some(ALL_HOSTS), A),
        (None, SUBNET_BROADCAST),
        (None, Ipv4Addr::BROADCAST),
        (None, ALL_HOSTS),
    ];
    for (i, (src, dst)) in cases.into_iter().enumerate() {
        let sent = s.iface.send_ip_from(
            &mut s.device,
            clock.now(),
            src.map(Ipv4Address::from),
            dst.into(),
            IpProtocol::Tcp,
            20,
            |_, out| out.fill(0),
        );
        let on_device: Vec<String> = s.device.outbound.drain(..).map(|p| describe(&p)).collect();
        assert!(
            sent.is_err() && on_device.is_empty(),
            "TCP from {src:?} to {dst}: {sent:?}, on the device {on_device:?}"
        );
        assert_eq!(
            s.iface.counters().drops(DropReason::TcpNotUnicast),
            i as u64 + 1
        );
    }
    // UDP to the broadcast still leaves (RFC 1122 §3.3.6 allows it).
    let sent = s.iface.send_ip(
        &mut s.device,
        clock.now(),
        SUBNET_BROADCAST.into(),
        IpProtocol::Udp,
        8,
        |_, out| out.fill(0),
    );
    assert!(sent.is_ok(), "{sent:?}");
    assert_eq!(s.device.outbound.len(), 1);
}

#[test]
fn a_connect_to_a_broadcast_or_multicast_address_is_refused() {
    let clock = clock();
    let mut s = stack_at(A, clock.clone());
    for remote in [Ipv4Addr::BROADCAST, ALL_HOSTS, Ipv4Addr::UNSPECIFIED] {
        let c = s.tcp.connect(A, SocketAddrV4::new(remote, 80), clock.now());
        assert!(c.is_err(), "connect to {remote} was taken: {c:?}");
    }
    // The directed broadcast of our network, which only the interface
    // knows: the SYN never leaves and the connect fails at once.
    let c = s
        .tcp
        .connect(A, SocketAddrV4::new(SUBNET_BROADCAST, 80), clock.now())
        .expect("the socket layer cannot tell a directed broadcast");
    s.poll(clock.now()).unwrap();
    let sent: Vec<String> = s.device.outbound.drain(..).map(|p| describe(&p)).collect();
    assert!(
        sent.is_empty(),
        "a SYN went to {SUBNET_BROADCAST}: {sent:?}"
    );
    let err = s.tcp.send(c, b"x").unwrap_err();
    assert!(err.to_string().contains("not unicast"), "{err}");
}
