//! proptest strategies for every wire `Repr`, shared by the round-trip
//! and fuzz tests, and helpers that emit them into whole packets.

#![allow(dead_code)]

use proptest::prelude::*;
use stack::wire::arp::ARP_ETHERNET_IPV4_LEN;
use stack::wire::{
    ArpOperation, ArpPacket, ArpRepr, ChecksumMethod, EtherType, EthernetAddress, EthernetFrame,
    EthernetRepr, Icmpv4Packet, Icmpv4Repr, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr,
    SeqNumber, TcpControl, TcpPacket, TcpRepr, UdpPacket, UdpRepr,
};

/// Every checksum method.
pub const METHODS: [ChecksumMethod; 4] = [
    ChecksumMethod::Bytewise,
    ChecksumMethod::Rfc1071,
    ChecksumMethod::Incremental,
    ChecksumMethod::Offload,
];

/// Any checksum method.
pub fn method() -> impl Strategy<Value = ChecksumMethod> {
    proptest::sample::select(METHODS.to_vec())
}

/// Any Ethernet address.
pub fn ethernet_address() -> impl Strategy<Value = EthernetAddress> {
    any::<[u8; 6]>().prop_map(EthernetAddress)
}

/// Any IPv4 address.
pub fn ipv4_address() -> impl Strategy<Value = Ipv4Address> {
    any::<[u8; 4]>().prop_map(Ipv4Address)
}

/// Any Ethernet header.
pub fn ethernet_repr() -> impl Strategy<Value = EthernetRepr> {
    (ethernet_address(), ethernet_address(), any::<u16>()).prop_map(|(src_addr, dst_addr, t)| {
        EthernetRepr {
            src_addr,
            dst_addr,
            ethertype: EtherType::from(t),
        }
    })
}

/// Any ARP request or reply for IPv4 over Ethernet.
pub fn arp_repr() -> impl Strategy<Value = ArpRepr> {
    (
        any::<bool>(),
        ethernet_address(),
        ipv4_address(),
        ethernet_address(),
        ipv4_address(),
    )
        .prop_map(|(request, sha, spa, tha, tpa)| ArpRepr {
            operation: if request {
                ArpOperation::Request
            } else {
                ArpOperation::Reply
            },
            source_hardware_addr: sha,
            source_protocol_addr: spa,
            target_hardware_addr: tha,
            target_protocol_addr: tpa,
        })
}

/// Any IPv4 header with up to 40 bytes of options and 1500 of payload.
pub fn ipv4_repr() -> impl Strategy<Value = Ipv4Repr> {
    (
        (ipv4_address(), ipv4_address(), any::<u8>(), 0usize..1500),
        (any::<u8>(), any::<u8>(), any::<u16>()),
        (any::<bool>(), any::<bool>(), 0u16..8192, 0usize..=10),
    )
        .prop_map(
            |((src, dst, proto, payload_len), (ttl, dscp, ident), (df, mf, frag, opts))| Ipv4Repr {
                src_addr: src,
                dst_addr: dst,
                next_header: IpProtocol::from(proto),
                payload_len,
                hop_limit: ttl,
                dscp_ecn: dscp,
                ident,
                dont_frag: df,
                more_frags: mf,
                frag_offset: frag * 8,
                options_len: opts * 4,
            },
        )
}

/// Any echo request or reply with its data, owned (borrow it with
/// [`icmp_of`]).
pub fn icmp_parts() -> impl Strategy<Value = (bool, u16, u16, Vec<u8>)> {
    (
        any::<bool>(),
        any::<u16>(),
        any::<u16>(),
        proptest::collection::vec(any::<u8>(), 0..300),
    )
}

/// The echo `icmp_parts` describes.
pub fn icmp_of(parts: &(bool, u16, u16, Vec<u8>)) -> Icmpv4Repr<'_> {
    let (request, ident, seq_no, ref data) = *parts;
    if request {
        Icmpv4Repr::EchoRequest {
            ident,
            seq_no,
            data,
        }
    } else {
        Icmpv4Repr::EchoReply {
            ident,
            seq_no,
            data,
        }
    }
}

/// UDP ports (destination not 0) and a payload.
pub fn udp_parts() -> impl Strategy<Value = (u16, u16, Vec<u8>)> {
    (
        any::<u16>(),
        1u16..,
        proptest::collection::vec(any::<u8>(), 0..600),
    )
}

/// The datagram `udp_parts` describes.
pub fn udp_of(parts: &(u16, u16, Vec<u8>)) -> UdpRepr<'_> {
    UdpRepr {
        src_port: parts.0,
        dst_port: parts.1,
        payload: &parts.2,
    }
}

/// A TCP segment's meaning with its payload owned: SYNs carry the SYN
/// options (MSS, window scale, SACK-permitted), other segments up to
/// three SACK blocks; any of them timestamps.
pub fn tcp_repr() -> impl Strategy<Value = (TcpRepr<'static>, Vec<u8>)> {
    let control = proptest::sample::select(vec![
        TcpControl::None,
        TcpControl::Syn,
        TcpControl::Fin,
        TcpControl::Rst,
    ]);
    let block = (any::<u32>(), any::<u32>()).prop_map(|(l, r)| (SeqNumber(l), SeqNumber(r)));
    (
        (
            1u16..,
            1u16..,
            control,
            any::<u32>(),
            proptest::option::of(any::<u32>()),
        ),
        (any::<u16>(), any::<bool>(), any::<bool>(), any::<bool>()),
        (
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u8>()),
            any::<bool>(),
            proptest::collection::vec(block, 0..=3),
            proptest::option::of(any::<(u32, u32)>()),
        ),
        proptest::collection::vec(any::<u8>(), 0..400),
    )
        .prop_map(
            |((sp, dp, control, seq, ack), (win, psh, ece, cwr), opts, payload)| {
                let (mss, ws, sack_perm, blocks, ts) = opts;
                let mut repr = TcpRepr::bare(sp, dp, SeqNumber(seq));
                repr.control = control;
                repr.ack_number = ack.map(SeqNumber);
                repr.window_len = win;
                repr.push = psh;
                repr.ece = ece;
                repr.cwr = cwr;
                repr.timestamp = ts;
                if control == TcpControl::Syn {
                    repr.max_seg_size = mss;
                    repr.window_scale = ws;
                    repr.sack_permitted = sack_perm;
                } else {
                    for (slot, b) in repr.sack_ranges.iter_mut().zip(blocks) {
                        *slot = Some(b);
                    }
                }
                (repr, payload)
            },
        )
}

/// An emitted UDP datagram.
pub fn emit_udp(
    repr: &UdpRepr<'_>,
    src: Ipv4Address,
    dst: Ipv4Address,
    m: ChecksumMethod,
) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut UdpPacket::new_unchecked(&mut buf[..]), src, dst, m);
    buf
}

/// An emitted TCP segment.
pub fn emit_tcp(
    repr: &TcpRepr<'_>,
    src: Ipv4Address,
    dst: Ipv4Address,
    m: ChecksumMethod,
) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), src, dst, m);
    buf
}

/// An emitted ICMP message.
pub fn emit_icmp(repr: &Icmpv4Repr<'_>, m: ChecksumMethod) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]), m);
    buf
}

/// An emitted IPv4 datagram around `payload` (the Repr's length and
/// protocol set from it).
pub fn emit_ipv4(repr: &Ipv4Repr, proto: IpProtocol, payload: &[u8], m: ChecksumMethod) -> Vec<u8> {
    let repr = Ipv4Repr {
        next_header: proto,
        payload_len: payload.len(),
        ..*repr
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut packet, m);
    packet.payload_mut().copy_from_slice(payload);
    buf
}

/// An emitted ARP packet.
pub fn emit_arp(repr: &ArpRepr) -> Vec<u8> {
    let mut buf = vec![0u8; ARP_ETHERNET_IPV4_LEN];
    repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
    buf
}

/// An emitted Ethernet frame around `payload`.
pub fn emit_ethernet(repr: &EthernetRepr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len() + payload.len()];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    repr.emit(&mut frame);
    frame.payload_mut().copy_from_slice(payload);
    buf
}
