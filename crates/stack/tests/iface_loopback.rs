//! The interface on an in-memory device and the injected clock: each input
//! and output path, with packets built by hand (`support/iface_packets.rs`)
//! and the stack's answers read back byte by byte.

#[path = "support/iface_packets.rs"]
mod packets;

use packets::{arp, echo_request, ethernet, ones_sum, udp, udp_sum, Ip};
use stack::iface::fragment::FragmentConfig;
use stack::iface::route::{self, NextHop, Route};
use stack::iface::udp::UdpSockets;
use stack::iface::{DropReason, Interface, InterfaceConfig, NoTransport, SendOutcome};
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{ChecksumMethod, EthernetAddress, IpProtocol, Ipv4Address, Ipv4Cidr};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::time::Duration;

const OURS: Ipv4Addr = Ipv4Addr::new(10, 80, 0, 2);
const PEER: Ipv4Addr = Ipv4Addr::new(10, 80, 0, 1);
const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const BROADCAST_MAC: [u8; 6] = [0xff; 6];

fn config(medium: Medium) -> InterfaceConfig {
    let cidr = Ipv4Cidr::new(OURS.into(), 24).unwrap();
    let mut c = InterfaceConfig::new(medium, cidr);
    c.mac = EthernetAddress(OUR_MAC);
    c
}

fn setup(medium: Medium) -> (Interface, Loopback, ManualClock) {
    (
        Interface::new(config(medium)),
        Loopback::new(medium, 1500),
        ManualClock::new(Instant(1_000_000)),
    )
}

fn poll(iface: &mut Interface, dev: &mut Loopback, clock: &ManualClock) -> usize {
    iface.poll(dev, clock.now(), &mut NoTransport).unwrap()
}

/// Checks an IPv4 header's checksum and returns (src, dst, protocol, ttl,
/// DF, payload).
fn read_ip(p: &[u8]) -> (Ipv4Addr, Ipv4Addr, u8, u8, bool, &[u8]) {
    assert_eq!(p[0], 0x45, "version 4, no options");
    assert_eq!(ones_sum(&p[..20], 0), 0xffff, "ip header checksum");
    let total = usize::from(u16::from_be_bytes([p[2], p[3]]));
    assert_eq!(total, p.len(), "total length");
    let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
    let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
    (src, dst, p[9], p[8], p[6] & 0x40 != 0, &p[20..])
}

#[test]
fn an_echo_request_over_tun_is_answered_under_every_software_checksum() {
    for method in [
        ChecksumMethod::Bytewise,
        ChecksumMethod::Rfc1071,
        ChecksumMethod::Incremental,
    ] {
        let mut c = config(Medium::Ip);
        c.checksum = method;
        let mut iface = Interface::new(c);
        let mut dev = Loopback::new(Medium::Ip, 1500);
        let clock = ManualClock::new(Instant::ZERO);
        let data: Vec<u8> = (0..56).collect();
        let request = Ip::new(PEER, OURS, 1).packet(&echo_request(0x77, 3, &data));
        dev.inbound.push_back(request);
        assert_eq!(poll(&mut iface, &mut dev, &clock), 1);
        assert_eq!(dev.outbound.len(), 1, "{method:?}: one reply");
        let reply = dev.outbound.pop_front().unwrap();
        let (src, dst, proto, ttl, df, icmp) = read_ip(&reply);
        assert_eq!((src, dst, proto, ttl, df), (OURS, PEER, 1, 64, true));
        assert_eq!(icmp[0], 0, "echo reply");
        assert_eq!(&icmp[4..8], &[0, 0x77, 0, 3], "id and seq kept");
        assert_eq!(&icmp[8..], &data[..], "data echoed");
        assert_eq!(ones_sum(icmp, 0), 0xffff, "{method:?}: icmp checksum");
        assert_eq!(iface.counters().echo_replies_sent, 1);
        assert_eq!(iface.counters().frames_out, 1);
    }
}

#[test]
fn ip_identification_counts_up_per_packet_sent() {
    let (mut iface, mut dev, clock) = setup(Medium::Ip);
    for seq in 0..3 {
        let req = Ip::new(PEER, OURS, 1).packet(&echo_request(1, seq, b"x"));
        dev.inbound.push_back(req);
    }
    poll(&mut iface, &mut dev, &clock);
    let idents: Vec<u16> = dev
        .outbound
        .iter()
        .map(|p| u16::from_be_bytes([p[4], p[5]]))
        .collect();
    assert_eq!(idents.len(), 3);
    assert_eq!(idents[1], idents[0].wrapping_add(1));
    assert_eq!(idents[2], idents[0].wrapping_add(2));
}

#[test]
fn an_arp_request_for_our_address_is_answered_and_the_sender_learned() {
    let (mut iface, mut dev, clock) = setup(Medium::Ethernet);
    let request = arp(1, PEER_MAC, PEER, [0; 6], OURS);
    dev.inbound
        .push_back(ethernet(BROADCAST_MAC, PEER_MAC, 0x0806, &request));
    poll(&mut iface, &mut dev, &clock);
    let reply = dev.outbound.pop_front().expect("an ARP reply");
    assert_eq!(&reply[0..6], &PEER_MAC, "unicast to the asker");
    assert_eq!(&reply[6..12], &OUR_MAC);
    assert_eq!(&reply[12..14], &[0x08, 0x06]);
    assert_eq!(&reply[14..], &arp(2, OUR_MAC, OURS, PEER_MAC, PEER)[..]);
    assert_eq!(iface.counters().arp_replies_sent, 1);
    // Learned: a packet to the asker goes out at once, no ARP request.
    let outcome = iface
        .send_ip(
            &mut dev,
            clock.now(),
            PEER.into(),
            IpProtocol::Udp,
            0,
            |_, _| {},
        )
        .unwrap();
    assert_eq!(outcome, SendOutcome::Sent);
    let frame = dev.outbound.pop_front().unwrap();
    assert_eq!(&frame[0..6], &PEER_MAC);
    assert_eq!(&frame[12..14], &[0x08, 0x00]);
    assert_eq!(iface.counters().arp_requests_sent, 0);
}

#[test]
fn an_arp_request_for_another_address_is_neither_answered_nor_learned() {
    let (mut iface, mut dev, clock) = setup(Medium::Ethernet);
    let other = Ipv4Addr::new(10, 80, 0, 99);
    let request = arp(1, PEER_MAC, PEER, [0; 6], other);
    dev.inbound
        .push_back(ethernet(BROADCAST_MAC, PEER_MAC, 0x0806, &request));
    poll(&mut iface, &mut dev, &clock);
    assert!(dev.outbound.is_empty());
    assert_eq!(iface.arp_cache().peek(PEER, clock.now()), None);
}

#[test]
fn a_packet_to_an_unresolved_gateway_waits_for_the_arp_reply_one_per_next_hop() {
    let (mut iface, mut dev, clock) = setup(Medium::Ethernet);
    iface.set_default_gateway(PEER.into());
    let far: Ipv4Address = Ipv4Address::new(192, 0, 2, 9);
    let send = |iface: &mut Interface, dev: &mut Loopback, byte: u8| {
        iface
            .send_ip(dev, clock.now(), far, IpProtocol::Udp, 1, |ip, out| {
                assert_eq!(ip.src_addr, Ipv4Address::from(OURS));
                out[0] = byte;
            })
            .unwrap()
    };
    assert_eq!(send(&mut iface, &mut dev, 1), SendOutcome::AwaitingArp);
    let request = dev.outbound.pop_front().expect("an ARP request");
    assert_eq!(&request[0..6], &BROADCAST_MAC);
    assert_eq!(
        &request[14..],
        &arp(1, OUR_MAC, OURS, [0; 6], PEER)[..],
        "asks for the gateway"
    );
    // A second packet replaces the first; the request is rate-limited.
    clock.advance(Duration::from_millis(100));
    assert_eq!(send(&mut iface, &mut dev, 2), SendOutcome::AwaitingArp);
    assert!(dev.outbound.is_empty(), "no second request within a second");
    assert_eq!(iface.counters().drops(DropReason::ArpPendingReplaced), 1);
    let reply = arp(2, PEER_MAC, PEER, OUR_MAC, OURS);
    dev.inbound
        .push_back(ethernet(OUR_MAC, PEER_MAC, 0x0806, &reply));
    poll(&mut iface, &mut dev, &clock);
    let frame = dev.outbound.pop_front().expect("the held packet");
    assert_eq!(&frame[0..6], &PEER_MAC, "to the gateway's MAC");
    let (src, dst, proto, _, _, payload) = read_ip(&frame[14..]);
    assert_eq!((src, dst, proto), (OURS, Ipv4Addr::from(far), 17));
    assert_eq!(payload, &[2], "the newer packet was the one held");
    assert!(dev.outbound.is_empty());
    assert_eq!(iface.counters().arp_pending_released, 1);
}

#[test]
fn a_ping_over_ethernet_from_an_unknown_mac_is_answered_after_arp() {
    let (mut iface, mut dev, clock) = setup(Medium::Ethernet);
    // The peer's echo request arrives without a prior ARP exchange
    // (its ARP entry was learned elsewhere); we must ask for its MAC.
    let req = Ip::new(PEER, OURS, 1).packet(&echo_request(9, 1, b"abc"));
    dev.inbound
        .push_back(ethernet(OUR_MAC, PEER_MAC, 0x0800, &req));
    poll(&mut iface, &mut dev, &clock);
    let asked = dev.outbound.pop_front().expect("an ARP request first");
    assert_eq!(&asked[12..14], &[0x08, 0x06]);
    assert!(dev.outbound.is_empty());
    let reply = arp(2, PEER_MAC, PEER, OUR_MAC, OURS);
    dev.inbound
        .push_back(ethernet(OUR_MAC, PEER_MAC, 0x0806, &reply));
    poll(&mut iface, &mut dev, &clock);
    let echo = dev.outbound.pop_front().expect("the echo reply");
    let (_, dst, proto, _, _, icmp) = read_ip(&echo[14..]);
    assert_eq!((dst, proto, icmp[0]), (PEER, 1, 0));
    assert_eq!(&icmp[8..], b"abc");
}

/// An echo request of `len` data bytes cut into fragments of `piece`
/// bytes (a multiple of 8), as (offset, more, bytes) packets.
fn fragmented_echo(ident: u16, len: usize, piece: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let data: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
    let icmp = echo_request(5, 6, &data);
    let mut frags = Vec::new();
    for start in (0..icmp.len()).step_by(piece) {
        let end = (start + piece).min(icmp.len());
        let mut ip = Ip::new(PEER, OURS, 1);
        ip.ident = ident;
        ip.frag_offset = start as u16;
        ip.more_frags = end < icmp.len();
        frags.push(ip.packet(&icmp[start..end]));
    }
    (data, frags)
}

#[test]
fn a_fragmented_echo_request_arriving_out_of_order_is_reassembled_and_answered() {
    let (mut iface, mut dev, clock) = setup(Medium::Ip);
    let (data, mut frags) = fragmented_echo(0x4242, 1000, 400);
    assert_eq!(frags.len(), 3);
    frags.swap(0, 2);
    frags.push(frags[1].clone()); // a duplicate of the middle one
    for f in &frags[..2] {
        dev.inbound.push_back(f.clone());
    }
    poll(&mut iface, &mut dev, &clock);
    assert!(dev.outbound.is_empty(), "not whole yet");
    assert_eq!(iface.partial_datagrams(), 1);
    dev.inbound.push_back(frags[3].clone());
    dev.inbound.push_back(frags[2].clone());
    poll(&mut iface, &mut dev, &clock);
    let reply = dev
        .outbound
        .pop_front()
        .expect("the reply to the whole datagram");
    let (_, _, _, _, _, icmp) = read_ip(&reply);
    assert_eq!(icmp[0], 0);
    assert_eq!(&icmp[8..], &data[..]);
    assert_eq!(ones_sum(icmp, 0), 0xffff);
    assert_eq!(iface.counters().datagrams_reassembled, 1);
    assert_eq!(iface.partial_datagrams(), 0);
}

#[test]
fn reassembly_holds_at_most_the_configured_datagrams_and_bytes() {
    let mut c = config(Medium::Ip);
    c.fragments = FragmentConfig {
        max_datagrams: 2,
        max_bytes: 1500,
        timeout: Duration::from_secs(30),
    };
    let mut iface = Interface::new(c);
    let mut dev = Loopback::new(Medium::Ip, 1500);
    let clock = ManualClock::new(Instant::ZERO);
    for ident in 1..=3 {
        let (_, frags) = fragmented_echo(ident, 1000, 400);
        dev.inbound.push_back(frags[0].clone());
    }
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.partial_datagrams(), 2);
    assert_eq!(
        iface.counters().drops(DropReason::FragmentLimit),
        1,
        "third datagram refused"
    );
    // 800 bytes held; a fragment that would take the total past 1500 is
    // refused too, though the datagram count allows it.
    let (_, frags) = fragmented_echo(1, 1000, 400);
    dev.inbound.push_back(frags[2].clone()); // ends at 1008: +608 → 1408, fits
    let (_, frags) = fragmented_echo(2, 1000, 400);
    dev.inbound.push_back(frags[1].clone()); // ends at 800: +400 → 1808, refused
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.counters().drops(DropReason::FragmentLimit), 2);
    assert!(dev.outbound.is_empty());
}

#[test]
fn partial_datagrams_time_out_on_the_injected_clock() {
    let (mut iface, mut dev, clock) = setup(Medium::Ip);
    let (_, frags) = fragmented_echo(7, 1000, 400);
    dev.inbound.push_back(frags[0].clone());
    poll(&mut iface, &mut dev, &clock);
    clock.advance(Duration::from_secs(29));
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.partial_datagrams(), 1);
    clock.advance(Duration::from_secs(1));
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.partial_datagrams(), 0);
    assert_eq!(iface.counters().drops(DropReason::FragmentTimeout), 1);
    // The rest arriving late starts a new datagram that never completes.
    dev.inbound.push_back(frags[1].clone());
    dev.inbound.push_back(frags[2].clone());
    poll(&mut iface, &mut dev, &clock);
    assert!(dev.outbound.is_empty());
}

#[test]
fn a_fragment_past_the_datagrams_end_drops_the_datagram() {
    let (mut iface, mut dev, clock) = setup(Medium::Ip);
    let (_, frags) = fragmented_echo(8, 1000, 400);
    dev.inbound.push_back(frags[2].clone()); // the last: the end is 1008
    let mut beyond = Ip::new(PEER, OURS, 1);
    beyond.ident = 8;
    beyond.frag_offset = 1200;
    beyond.more_frags = true;
    dev.inbound.push_back(beyond.packet(&[0; 16]));
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.counters().drops(DropReason::FragmentInvalid), 1);
    assert_eq!(iface.partial_datagrams(), 0);
}

#[test]
fn drops_are_counted_by_reason() {
    let (_, mut dev, clock) = setup(Medium::Ethernet);
    // Drops only: the ICMP errors two of them would draw are
    // tests/icmp_errors.rs's.
    let mut quiet = config(Medium::Ethernet);
    quiet.icmp_errors.enabled = false;
    // And DF respected: a datagram over the MTU is refused, not fragmented.
    quiet.fragment_output = false;
    let mut iface = Interface::new(quiet);
    let ping = echo_request(1, 1, b"hi");
    let good = Ip::new(PEER, OURS, 1).packet(&ping);
    let mut bad_sum = good.clone();
    bad_sum[10] ^= 0xff;
    let mut ttl0 = Ip::new(PEER, OURS, 1);
    ttl0.ttl = 0;
    let other = Ip::new(PEER, Ipv4Addr::new(10, 80, 0, 7), 1).packet(&ping);
    let unknown_proto = Ip::new(PEER, OURS, 99).packet(b"????");
    let no_listener = Ip::new(PEER, OURS, 17).packet(&udp(PEER, OURS, 5000, 9, b"x"));
    let cases: Vec<(Vec<u8>, DropReason)> = vec![
        (
            ethernet([2, 9, 9, 9, 9, 9], PEER_MAC, 0x0800, &good),
            DropReason::NotOurMac,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x86dd, &[0x60; 40]),
            DropReason::UnknownEthertype,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x0800, &good[..15]),
            DropReason::Malformed,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x0800, &bad_sum),
            DropReason::BadChecksum,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x0800, &other),
            DropReason::NotOurAddress,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x0800, &ttl0.packet(&ping)),
            DropReason::TtlExpired,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x0800, &unknown_proto),
            DropReason::UnknownProtocol,
        ),
        (
            ethernet(OUR_MAC, PEER_MAC, 0x0800, &no_listener),
            DropReason::NoListener,
        ),
    ];
    for (frame, reason) in cases {
        let before = iface.counters().total_drops();
        dev.inbound.push_back(frame);
        poll(&mut iface, &mut dev, &clock);
        assert_eq!(iface.counters().drops(reason), 1, "{reason:?}");
        assert_eq!(
            iface.counters().total_drops(),
            before + 1,
            "{reason:?} only"
        );
    }
    assert!(dev.outbound.is_empty(), "nothing answered");
    assert_eq!(iface.counters().frames_in, 8);
    let err = iface
        .send_ip(
            &mut dev,
            clock.now(),
            Ipv4Address::new(192, 0, 2, 1),
            IpProtocol::Udp,
            0,
            |_, _| {},
        )
        .unwrap_err();
    assert!(err.to_string().contains("no route"), "{err}");
    assert_eq!(iface.counters().drops(DropReason::NoRoute), 1);
    let err = iface
        .send_ip(
            &mut dev,
            clock.now(),
            PEER.into(),
            IpProtocol::Udp,
            1481,
            |_, _| {},
        )
        .unwrap_err();
    assert!(err.to_string().contains("MTU"), "{err}");
    assert_eq!(iface.counters().drops(DropReason::TooBig), 1);
}

#[test]
fn routes_pick_the_longest_prefix_and_the_source_on_its_network() {
    let (mut iface, mut dev, clock) = setup(Medium::Ip);
    iface.add_address(Ipv4Cidr::new(Ipv4Address::new(172, 16, 5, 2), 16).unwrap());
    iface.set_default_gateway(PEER.into());
    iface.add_route(Route {
        cidr: route::Ipv4Cidr::new(Ipv4Addr::new(198, 51, 100, 0), 24).unwrap(),
        next_hop: NextHop::Gateway(Ipv4Addr::new(172, 16, 0, 1)),
    });
    for (dst, src) in [
        (Ipv4Addr::new(198, 51, 100, 7), Ipv4Addr::new(172, 16, 5, 2)),
        (Ipv4Addr::new(8, 8, 8, 8), OURS),
        (Ipv4Addr::new(172, 16, 9, 9), Ipv4Addr::new(172, 16, 5, 2)),
    ] {
        iface
            .send_ip(
                &mut dev,
                clock.now(),
                dst.into(),
                IpProtocol::Udp,
                0,
                |_, _| {},
            )
            .unwrap();
        let (s, d, _, _, _, _) = read_ip(dev.outbound.back().unwrap());
        assert_eq!((s, d), (src, dst));
    }
}

#[test]
fn a_udp_datagram_reaches_a_bound_socket_and_its_answer_goes_back() {
    let (mut iface, mut dev, clock) = setup(Medium::Ip);
    let mut sockets = UdpSockets::default();
    let handle = sockets.bind(7).unwrap();
    assert!(sockets.bind(7).is_err(), "a port is bound once");
    dev.inbound
        .push_back(Ip::new(PEER, OURS, 17).packet(&udp(PEER, OURS, 40000, 7, b"hello")));
    iface.poll(&mut dev, clock.now(), &mut sockets).unwrap();
    let (from, data) = sockets.recv_from(handle).unwrap().expect("a datagram");
    assert_eq!(from, SocketAddrV4::new(PEER, 40000));
    assert_eq!(data, b"hello");
    assert_eq!(sockets.recv_from(handle).unwrap(), None);
    sockets.send_to(handle, from, b"echo:hello").unwrap();
    assert_eq!(sockets.flush(&mut iface, &mut dev, clock.now()).unwrap(), 1);
    let packet = dev.outbound.pop_front().unwrap();
    let (src, dst, proto, _, _, datagram) = read_ip(&packet);
    assert_eq!((src, dst, proto), (OURS, PEER, 17));
    assert_eq!(&datagram[0..4], &[0, 7, 0x9c, 0x40], "ports 7 → 40000");
    assert_eq!(&datagram[8..], b"echo:hello");
    assert_eq!(udp_sum(OURS, PEER, datagram), 0xffff, "udp checksum");
    // A corrupted datagram is refused by its checksum, not delivered.
    let mut bad = udp(PEER, OURS, 40000, 7, b"hello");
    bad[9] ^= 1;
    dev.inbound.push_back(Ip::new(PEER, OURS, 17).packet(&bad));
    iface.poll(&mut dev, clock.now(), &mut sockets).unwrap();
    assert_eq!(sockets.recv_from(handle).unwrap(), None);
    assert_eq!(iface.counters().drops(DropReason::BadChecksum), 1);
}

#[test]
fn a_packet_whose_next_hop_never_answers_is_dropped_after_three_request_intervals() {
    let (mut iface, mut dev, clock) = setup(Medium::Ethernet);
    let silent = Ipv4Address::new(10, 80, 0, 50);
    let outcome = iface
        .send_ip(&mut dev, clock.now(), silent, IpProtocol::Udp, 0, |_, _| {})
        .unwrap();
    assert_eq!(outcome, SendOutcome::AwaitingArp);
    clock.advance(Duration::from_millis(2999));
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.counters().drops(DropReason::ArpUnresolved), 0);
    clock.advance(Duration::from_millis(1));
    poll(&mut iface, &mut dev, &clock);
    assert_eq!(iface.counters().drops(DropReason::ArpUnresolved), 1);
    // A reply arriving now releases nothing.
    let reply = arp(2, PEER_MAC, silent.into(), OUR_MAC, OURS);
    dev.outbound.clear();
    dev.inbound
        .push_back(ethernet(OUR_MAC, PEER_MAC, 0x0806, &reply));
    poll(&mut iface, &mut dev, &clock);
    assert!(dev.outbound.is_empty());
    assert_eq!(iface.counters().arp_pending_released, 0);
}
