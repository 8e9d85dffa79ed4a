//! The offload path without a kernel: in-memory devices that carry the
//! virtio-net header (`Loopback::with_offloads`), and a reference of what
//! the kernel does with the frames (`support/vnet_segmenter.rs`, written
//! apart from the stack's code). Deterministic, on a `ManualClock`.

#[path = "support/vnet_segmenter.rs"]
mod vnet_segmenter;

use stack::iface::{DropReason, Interface, InterfaceConfig};
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::tcb::TcpConfig;
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{
    ChecksumMethod, IpProtocol, Ipv4Address, Ipv4Cidr, Ipv4Packet, Ipv4Repr, SeqNumber, TcpPacket,
    TcpRepr,
};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;
use vnet_segmenter::HDR;

const A: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);
/// Payload per wire segment: MSS 1460 less 12 bytes of timestamps.
const SEGMENT: usize = 1448;

fn cidr(addr: Ipv4Addr) -> Ipv4Cidr {
    Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap()
}

fn data(len: usize, salt: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 7 + salt) % 251) as u8).collect()
}

/// Parses an IPv4 packet and its TCP segment, checksums verified in
/// software (RFC 1071).
fn parse_tcp(packet: &[u8]) -> (Ipv4Repr, TcpRepr<'_>) {
    let ip = Ipv4Packet::new_checked(packet).expect("an IPv4 packet");
    let ip_repr = Ipv4Repr::parse(&ip, ChecksumMethod::Rfc1071).expect("IP checksum");
    let tcp = TcpPacket::new_checked(&packet[20..]).expect("a TCP segment");
    let repr = TcpRepr::parse(
        &tcp,
        ip_repr.src_addr,
        ip_repr.dst_addr,
        ChecksumMethod::Rfc1071,
    )
    .expect("TCP checksum");
    (ip_repr, repr)
}

#[test]
fn a_super_segment_leaves_with_tso_and_cuts_into_the_expected_wire_segments() {
    for method in [ChecksumMethod::Offload, ChecksumMethod::Rfc1071] {
        let mut device = Loopback::with_offloads(Medium::Ip, 1500);
        let mut iface = Interface::new(InterfaceConfig {
            checksum: method,
            ..InterfaceConfig::new(Medium::Ip, cidr(A))
        });
        let payload = data(10 * SEGMENT + 100, 0);
        let mut header = TcpRepr::bare(40000, 5001, SeqNumber(4_000_000_000));
        header.ack_number = Some(SeqNumber(77));
        header.window_len = 1000;
        header.push = true;
        header.timestamp = Some((11, 22));
        let repr = TcpRepr {
            payload: &payload,
            ..header
        };
        iface
            .send_ip_cut(
                &mut device,
                Instant::ZERO,
                None,
                Ipv4Address::from(B),
                IpProtocol::Tcp,
                repr.buffer_len(),
                Some(SEGMENT),
                |ip, out| {
                    repr.emit(
                        &mut TcpPacket::new_unchecked(out),
                        ip.src_addr,
                        ip.dst_addr,
                        method,
                    )
                },
            )
            .expect("sent");
        let frame = device.outbound.pop_front().expect("one frame");
        assert!(device.outbound.is_empty());
        assert_eq!(frame.len(), HDR + 20 + 32 + payload.len());
        // flags NEEDS_CSUM, TCPv4, headers 52, segments 1448, csum at 20+16.
        assert_eq!(vnet_segmenter::header(&frame), (1, 1, 52, SEGMENT, 20, 16));

        let wire = vnet_segmenter::cut(&frame);
        assert_eq!(wire.len(), 11, "ten full segments and the rest");
        let mut joined = Vec::new();
        let mut ident = None;
        for (i, packet) in wire.iter().enumerate() {
            assert!(packet.len() <= 1500, "a wire segment fits the MTU");
            let (ip, seg) = parse_tcp(packet);
            let expected_ident = ident.map_or(ip.ident, |id: u16| id.wrapping_add(1));
            assert_eq!(ip.ident, expected_ident, "IDs count up");
            ident = Some(ip.ident);
            assert_eq!(seg.seq_number, SeqNumber(4_000_000_000) + i * SEGMENT);
            assert_eq!(seg.ack_number, Some(SeqNumber(77)));
            assert_eq!(seg.timestamp, Some((11, 22)));
            assert_eq!(seg.push, i == 10, "PSH on the last only");
            joined.extend_from_slice(seg.payload);
        }
        assert_eq!(joined, payload);
        let c = iface.counters();
        assert_eq!((c.super_packets_out, c.super_packet_segments_out), (1, 11));
        assert_eq!(c.checksums_offloaded_out, 1);
    }
}

#[test]
fn a_segment_within_the_mtu_is_not_cut_and_without_tso_a_big_one_is_refused() {
    let mut device = Loopback::with_offloads(Medium::Ip, 1500);
    let mut iface = Interface::new(InterfaceConfig {
        checksum: ChecksumMethod::Offload,
        ..InterfaceConfig::new(Medium::Ip, cidr(A))
    });
    let payload = data(SEGMENT, 1);
    let repr = TcpRepr {
        payload: &payload,
        ..TcpRepr::bare(40000, 5001, SeqNumber(1))
    };
    let send = |iface: &mut Interface, device: &mut Loopback, repr: &TcpRepr<'_>| {
        iface.send_ip_cut(
            device,
            Instant::ZERO,
            None,
            Ipv4Address::from(B),
            IpProtocol::Tcp,
            repr.buffer_len(),
            Some(SEGMENT),
            |ip, out| {
                repr.emit(
                    &mut TcpPacket::new_unchecked(out),
                    ip.src_addr,
                    ip.dst_addr,
                    ChecksumMethod::Offload,
                )
            },
        )
    };
    send(&mut iface, &mut device, &repr).unwrap();
    let frame = device.outbound.pop_front().unwrap();
    // A partial checksum, no segmentation; finished, it verifies.
    assert_eq!(vnet_segmenter::header(&frame), (1, 0, 0, 0, 20, 16));
    let wire = vnet_segmenter::cut(&frame);
    assert_eq!(parse_tcp(&wire[0]).1.payload, &payload[..]);
    assert_eq!(iface.counters().super_packets_out, 0);

    // A plain device cannot cut: a packet over its MTU is refused.
    let mut plain = Loopback::new(Medium::Ip, 1500);
    let big = data(3 * SEGMENT, 2);
    let repr = TcpRepr {
        payload: &big,
        ..TcpRepr::bare(40000, 5001, SeqNumber(1))
    };
    assert!(send(&mut iface, &mut plain, &repr).is_err());
    assert!(plain.outbound.is_empty());
    assert_eq!(iface.counters().drops(DropReason::TooBig), 1);
}

/// Two stacks on offload devices, and between them what the kernel would
/// do: A's frames are cut by the reference segmenter and reach B as plain
/// packets with full checksums (B verifies them); B's reach A whole, as
/// Linux's GRO or TSO would hand them over: super-packets with partial
/// checksums (`NEEDS_CSUM`).
struct Wire {
    clock: Arc<ManualClock>,
    a: Stack<Loopback>,
    b: Stack<Loopback>,
}

fn stack_at(addr: Ipv4Addr, clock: Arc<ManualClock>, seed: u8) -> Stack<Loopback> {
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [seed; 32]);
    let clock: Arc<dyn Clock> = clock;
    Stack::new(
        Loopback::with_offloads(Medium::Ip, 1500),
        InterfaceConfig::new(Medium::Ip, cidr(addr)),
        TcpConfig::default(),
        isn,
        clock,
    )
}

impl Wire {
    fn new() -> Wire {
        let clock = Arc::new(ManualClock::new(Instant(1_000_000_000)));
        Wire {
            a: stack_at(A, clock.clone(), 1),
            b: stack_at(B, clock.clone(), 2),
            clock,
        }
    }

    /// Polls both stacks and moves frames until the wire is quiet.
    fn settle(&mut self) {
        loop {
            let now = self.clock.now();
            self.a.poll(now).unwrap();
            self.b.poll(now).unwrap();
            let a_out: Vec<_> = self.a.device.outbound.drain(..).collect();
            let b_out: Vec<_> = self.b.device.outbound.drain(..).collect();
            if a_out.is_empty() && b_out.is_empty() {
                return;
            }
            for frame in a_out {
                for packet in vnet_segmenter::cut(&frame) {
                    let mut plain = vec![0u8; HDR];
                    plain.extend_from_slice(&packet);
                    self.b.device.inbound.push_back(plain);
                }
            }
            self.a.device.inbound.extend(b_out);
        }
    }
}

#[test]
fn two_stacks_move_a_megabyte_each_way_in_super_packets_the_kernel_would_cut_or_keep() {
    let mut w = Wire::new();
    let listener = w.b.tcp.listen(5001, 1).unwrap();
    let now = w.clock.now();
    let ca = w.a.tcp.connect(A, SocketAddrV4::new(B, 5001), now).unwrap();
    w.settle();
    let cb = w.b.tcp.accept(listener).unwrap().expect("accepted");
    let up = data(1 << 20, 3);
    let down = data(1 << 20, 4);
    let (mut sent_up, mut sent_down) = (0, 0);
    let (mut got_up, mut got_down) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 1 << 16];
    for _ in 0..10_000 {
        sent_up += w.a.tcp.send(ca, &up[sent_up..]).unwrap();
        sent_down += w.b.tcp.send(cb, &down[sent_down..]).unwrap();
        w.settle();
        loop {
            let n = w.b.tcp.recv(cb, &mut buf).unwrap();
            got_up.extend_from_slice(&buf[..n]);
            let m = w.a.tcp.recv(ca, &mut buf).unwrap();
            got_down.extend_from_slice(&buf[..m]);
            if n == 0 && m == 0 {
                break;
            }
        }
        if got_up.len() == up.len() && got_down.len() == down.len() {
            break;
        }
        // Delayed ACKs and the like: on to the next timer.
        if let Some(at) = [w.a.tcp.poll_at(), w.b.tcp.poll_at()]
            .into_iter()
            .flatten()
            .min()
        {
            w.clock
                .set(at.max(w.clock.now()).after(Duration::from_micros(1)));
        }
    }
    assert!(got_up == up, "A → B arrived whole and in order");
    assert!(got_down == down, "B → A arrived whole and in order");

    let (ta, tb) = (
        w.a.tcp.connection(ca).unwrap().counters(),
        w.b.tcp.connection(cb).unwrap().counters(),
    );
    let (ia, ib) = (w.a.iface.counters(), w.b.iface.counters());
    // Both sent super-segments; counters count wire segments.
    assert!(ta.super_segments_out > 0 && tb.super_segments_out > 0);
    assert!(ta.segments_out >= (1 << 20) / SEGMENT as u64);
    assert_eq!(ia.super_packets_out, ta.super_segments_out);
    // A's were cut: B got only MTU-sized packets, verified in software.
    assert_eq!(ib.super_packets_in, 0);
    assert_eq!(ib.checksums_trusted_in, 0);
    assert!(ib.frames_in >= ia.super_packet_segments_out);
    // B's came whole: A took super-packets with partial checksums.
    assert_eq!(ia.super_packets_in, ib.super_packets_out);
    assert!(ia.super_packets_in > 0);
    assert_eq!(ia.checksums_trusted_in, ia.frames_in);
    assert_eq!(ia.total_drops() + ib.total_drops(), 0);
    assert_eq!(ta.retransmits + tb.retransmits, 0);
}

#[test]
fn a_segment_the_device_did_not_vouch_for_is_verified_and_a_bad_one_dropped() {
    let mut w = Wire::new();
    let listener = w.b.tcp.listen(5001, 1).unwrap();
    let now = w.clock.now();
    let ca = w.a.tcp.connect(A, SocketAddrV4::new(B, 5001), now).unwrap();
    w.settle();
    w.b.tcp.accept(listener).unwrap().expect("accepted");
    // A sends 100 bytes; the frame A wrote carries a partial checksum.
    w.a.tcp.send(ca, &data(100, 5)).unwrap();
    let now = w.clock.now();
    w.a.poll(now).unwrap();
    let frame = w.a.device.outbound.pop_front().expect("a data segment");
    assert_eq!(vnet_segmenter::header(&frame).0, 1, "NEEDS_CSUM");
    // Handed to B with NEEDS_CSUM: taken without verification. The same
    // bytes with a plain header: verified, and the partial sum fails.
    let before = w.b.tcp.counters().malformed;
    let mut plain = frame.clone();
    plain[..HDR].fill(0);
    w.b.device.inbound.push_back(plain);
    w.b.poll(now).unwrap();
    assert_eq!(w.b.tcp.counters().malformed, before + 1);
    assert_eq!(w.b.iface.counters().checksums_trusted_in, 0);
    w.b.device.inbound.push_back(frame);
    w.b.poll(now).unwrap();
    assert_eq!(w.b.tcp.counters().malformed, before + 1);
    assert_eq!(w.b.iface.counters().checksums_trusted_in, 1);
}
