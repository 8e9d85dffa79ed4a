//! Emitting a `Repr` and parsing it back gives the same `Repr`, for
//! every protocol and every checksum method; the software methods write
//! identical bytes.

#[path = "support/wire_strategies.rs"]
mod strategies;

use proptest::prelude::*;
use stack::wire::{
    ArpPacket, ArpRepr, ChecksumMethod, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr,
    IpProtocol, Ipv4Packet, Ipv4Repr, TcpPacket, TcpRepr, UdpPacket, UdpRepr,
};
use strategies::*;

proptest! {
    #[test]
    fn ethernet_round_trips(repr in ethernet_repr(), payload in proptest::collection::vec(any::<u8>(), 0..64)) {
        let buf = emit_ethernet(&repr, &payload);
        let frame = EthernetFrame::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&frame).unwrap(), repr);
        prop_assert_eq!(frame.payload(), &payload[..]);
    }

    #[test]
    fn arp_round_trips(repr in arp_repr()) {
        let buf = emit_arp(&repr);
        let packet = ArpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(ArpRepr::parse(&packet).unwrap(), repr);
    }

    #[test]
    fn ipv4_round_trips(repr in ipv4_repr(), m in method()) {
        let payload = vec![0x5a; repr.payload_len];
        let buf = emit_ipv4(&repr, repr.next_header, &payload, m);
        prop_assert_eq!(&buf, &emit_ipv4(&repr, repr.next_header, &payload, ChecksumMethod::Bytewise));
        let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Ipv4Repr::parse(&packet, m).unwrap(), repr);
        prop_assert_eq!(packet.payload(), &payload[..]);
    }

    #[test]
    fn icmp_round_trips(parts in icmp_parts(), m in method()) {
        let repr = icmp_of(&parts);
        let buf = emit_icmp(&repr, m);
        prop_assert_eq!(&buf, &emit_icmp(&repr, ChecksumMethod::Bytewise));
        let packet = Icmpv4Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Icmpv4Repr::parse(&packet, m).unwrap(), repr);
    }

    #[test]
    fn udp_round_trips(parts in udp_parts(), src in ipv4_address(), dst in ipv4_address(), m in method()) {
        let repr = udp_of(&parts);
        let buf = emit_udp(&repr, src, dst, m);
        if m.in_software() {
            prop_assert_eq!(&buf, &emit_udp(&repr, src, dst, ChecksumMethod::Bytewise));
        }
        let packet = UdpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(UdpRepr::parse(&packet, src, dst, m).unwrap(), repr);
    }

    #[test]
    fn tcp_round_trips((mut repr, payload) in tcp_repr(), src in ipv4_address(), dst in ipv4_address(), m in method()) {
        repr.payload = &payload;
        let buf = emit_tcp(&repr, src, dst, m);
        prop_assert!(buf.len() <= 60 + payload.len());
        if m.in_software() {
            prop_assert_eq!(&buf, &emit_tcp(&repr, src, dst, ChecksumMethod::Bytewise));
        }
        let packet = TcpPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(TcpRepr::parse(&packet, src, dst, m).unwrap(), repr);
    }

    /// A whole TCP/IP packet: the IP layer's payload is the TCP segment,
    /// and both layers' checksums verify under every software method.
    #[test]
    fn tcp_in_ipv4_round_trips((mut repr, payload) in tcp_repr(), ip in ipv4_repr()) {
        repr.payload = &payload;
        let segment = emit_tcp(&repr, ip.src_addr, ip.dst_addr, ChecksumMethod::Rfc1071);
        let ip = Ipv4Repr { options_len: 0, ..ip };
        let buf = emit_ipv4(&ip, IpProtocol::Tcp, &segment, ChecksumMethod::Rfc1071);
        let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
        let parsed_ip = Ipv4Repr::parse(&packet, ChecksumMethod::Bytewise).unwrap();
        let tcp = TcpPacket::new_checked(packet.payload()).unwrap();
        let parsed = TcpRepr::parse(&tcp, parsed_ip.src_addr, parsed_ip.dst_addr, ChecksumMethod::Bytewise).unwrap();
        prop_assert_eq!(parsed, repr);
    }
}
