use super::*;

/// An ICMP echo request Linux 6.18 sent into a TUN device
/// (`IFF_TUN|IFF_NO_PI`, 10.78.0.1/24) in a namespace, from a ping
/// socket to 10.78.0.2, read from the TUN fd on 2026-11-25. The kernel
/// chose the echo identifier 0x3720.
pub(super) const LINUX_ECHO_REQUEST: [u8; 36] = [
    0x45, 0x00, 0x00, 0x24, 0xd9, 0x51, 0x40, 0x00, 0x40, 0x01, 0x4c, 0xe9, 0x0a, 0x4e, 0x00, 0x01,
    0x0a, 0x4e, 0x00, 0x02, 0x08, 0x00, 0x59, 0x8b, 0x37, 0x20, 0x00, 0x01, 0x74, 0x63, 0x70, 0x6c,
    0x61, 0x62, 0x21, 0x21,
];

#[test]
fn parses_a_linux_datagram() {
    let packet = Ipv4Packet::new_checked(&LINUX_ECHO_REQUEST[..]).unwrap();
    for method in [
        ChecksumMethod::Bytewise,
        ChecksumMethod::Rfc1071,
        ChecksumMethod::Offload,
    ] {
        let repr = Ipv4Repr::parse(&packet, method).unwrap();
        assert_eq!(repr.src_addr, Ipv4Address::new(10, 78, 0, 1));
        assert_eq!(repr.dst_addr, Ipv4Address::new(10, 78, 0, 2));
        assert_eq!(repr.next_header, IpProtocol::Icmp);
        assert_eq!(repr.payload_len, 16);
        assert_eq!(repr.hop_limit, 64);
        assert_eq!(repr.ident, 0xd951);
        assert!(repr.dont_frag && !repr.more_frags && repr.frag_offset == 0);
        assert!(!repr.is_fragment());
        assert_eq!(repr.options_len, 0);
    }
    // Emitting the same Repr writes Linux's bytes, checksum included.
    let repr = Ipv4Repr::parse(&packet, ChecksumMethod::Rfc1071).unwrap();
    let mut out = [0u8; 20];
    repr.emit(
        &mut Ipv4Packet::new_unchecked(&mut out[..]),
        ChecksumMethod::Bytewise,
    );
    assert_eq!(out, LINUX_ECHO_REQUEST[..20]);
}

#[test]
fn a_flipped_bit_fails_the_checksum() {
    let mut bytes = LINUX_ECHO_REQUEST;
    bytes[15] ^= 0x01;
    let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
    assert_eq!(
        Ipv4Repr::parse(&packet, ChecksumMethod::Rfc1071),
        Err(WireError::Checksum)
    );
    assert_eq!(
        Ipv4Repr::parse(&packet, ChecksumMethod::Bytewise),
        Err(WireError::Checksum)
    );
}

#[test]
fn lengths_are_checked_in_order() {
    let short = Ipv4Packet::new_checked(&LINUX_ECHO_REQUEST[..19]);
    assert_eq!(short.unwrap_err(), WireError::Truncated("ipv4 header"));
    let cut = Ipv4Packet::new_checked(&LINUX_ECHO_REQUEST[..30]);
    assert_eq!(cut.unwrap_err(), WireError::Truncated("ipv4 payload"));
    let mut bad_ihl = LINUX_ECHO_REQUEST;
    bad_ihl[0] = 0x44;
    let err = Ipv4Packet::new_checked(&bad_ihl[..]).unwrap_err();
    assert_eq!(err, WireError::Malformed("ipv4 header length below 20"));
    let mut long_ihl = LINUX_ECHO_REQUEST;
    long_ihl[0] = 0x4f;
    let err = Ipv4Packet::new_checked(&long_ihl[..]).unwrap_err();
    assert_eq!(err, WireError::Truncated("ipv4 options"));
    // Ethernet padding after the total length is not payload.
    let mut padded = LINUX_ECHO_REQUEST.to_vec();
    padded.extend_from_slice(&[0; 10]);
    let packet = Ipv4Packet::new_checked(&padded[..]).unwrap();
    assert_eq!(packet.payload().len(), 16);
}

#[test]
fn options_are_skipped_but_counted_and_fragments_described() {
    let repr = Ipv4Repr {
        src_addr: Ipv4Address::new(192, 0, 2, 1),
        dst_addr: Ipv4Address::new(192, 0, 2, 2),
        next_header: IpProtocol::Udp,
        payload_len: 8,
        hop_limit: 3,
        dscp_ecn: 0x02,
        ident: 0x1234,
        dont_frag: false,
        more_frags: true,
        frag_offset: 1480,
        options_len: 8,
    };
    let mut buf = vec![0xaa; repr.buffer_len()];
    let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut packet, ChecksumMethod::Rfc1071);
    assert_eq!(packet.header_len(), 28);
    assert_eq!(packet.options(), &[0; 8]);
    assert_eq!(&buf[6..8], &[0x20, 0xb9], "MF and 1480 / 8 = 185");
    let packet = Ipv4Packet::new_checked(&buf[..]).unwrap();
    assert_eq!(packet.payload(), &[0xaa; 8]);
    let parsed = Ipv4Repr::parse(&packet, ChecksumMethod::Bytewise).unwrap();
    assert_eq!(parsed, repr);
    assert!(parsed.is_fragment());
}

#[test]
fn the_reserved_flag_and_other_versions_are_refused() {
    let mut bytes = LINUX_ECHO_REQUEST;
    bytes[6] |= 0x80;
    let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
    let err = Ipv4Repr::parse(&packet, ChecksumMethod::Offload).unwrap_err();
    assert_eq!(err, WireError::Malformed("ipv4 reserved flag set"));
    let mut v6 = LINUX_ECHO_REQUEST;
    v6[0] = 0x65;
    let packet = Ipv4Packet::new_checked(&v6[..]).unwrap();
    let err = Ipv4Repr::parse(&packet, ChecksumMethod::Offload).unwrap_err();
    assert_eq!(err, WireError::Malformed("ip version is not 4"));
}

#[test]
fn ttl_decrement_incremental_matches_recomputation() {
    let mut a = LINUX_ECHO_REQUEST;
    let mut b = LINUX_ECHO_REQUEST;
    Ipv4Packet::new_unchecked(&mut a[..]).decrement_hop_limit(ChecksumMethod::Incremental);
    Ipv4Packet::new_unchecked(&mut b[..]).decrement_hop_limit(ChecksumMethod::Bytewise);
    assert_eq!(a, b);
    assert_eq!(a[8], 63);
    assert_ne!(a[10..12], LINUX_ECHO_REQUEST[10..12]);
    assert!(Ipv4Packet::new_checked(&a[..])
        .unwrap()
        .verify_checksum(ChecksumMethod::Rfc1071));
}

#[test]
fn cidr_masks_networks_and_membership() {
    let cidr = Ipv4Cidr::new(Ipv4Address::new(10, 78, 0, 1), 24).unwrap();
    assert_eq!(cidr.netmask(), Ipv4Address::new(255, 255, 255, 0));
    assert_eq!(cidr.network().address(), Ipv4Address::new(10, 78, 0, 0));
    assert_eq!(cidr.broadcast(), Some(Ipv4Address::new(10, 78, 0, 255)));
    assert!(cidr.contains_addr(&Ipv4Address::new(10, 78, 0, 200)));
    assert!(!cidr.contains_addr(&Ipv4Address::new(10, 78, 1, 1)));
    assert_eq!(cidr.to_string(), "10.78.0.1/24");
    let all = Ipv4Cidr::new(Ipv4Address::new(1, 2, 3, 4), 0).unwrap();
    assert_eq!(all.netmask(), Ipv4Address::UNSPECIFIED);
    assert!(all.contains_addr(&Ipv4Address::BROADCAST));
    let host = Ipv4Cidr::new(Ipv4Address::new(1, 2, 3, 4), 32).unwrap();
    assert!(host.contains_addr(&Ipv4Address::new(1, 2, 3, 4)));
    assert!(!host.contains_addr(&Ipv4Address::new(1, 2, 3, 5)));
    assert_eq!(host.broadcast(), None);
    assert!(Ipv4Cidr::new(Ipv4Address::UNSPECIFIED, 33).is_err());
}

#[test]
fn address_classes() {
    assert!(Ipv4Address::new(224, 0, 0, 1).is_multicast());
    assert!(Ipv4Address::new(127, 0, 0, 1).is_loopback());
    assert!(!Ipv4Address::BROADCAST.is_unicast());
    assert!(Ipv4Address::new(10, 0, 0, 1).is_unicast());
    let std_addr: std::net::Ipv4Addr = Ipv4Address::new(10, 0, 0, 1).into();
    assert_eq!(Ipv4Address::from(std_addr).to_string(), "10.0.0.1");
}
