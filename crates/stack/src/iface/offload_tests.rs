use super::*;
use crate::phy::vnet::{GsoType, F_DATA_VALID, F_NEEDS_CSUM};
use crate::wire::checksum::{finish, pseudo_header_sum, sum_rfc1071};

/// An IPv4 packet (20-byte header) carrying a TCP header of `tcp_header`
/// bytes and `payload` bytes, addresses 10.0.0.1 → 10.0.0.2.
fn tcp_packet(tcp_header: usize, payload: usize, checksum_field: u16) -> Vec<u8> {
    let mut p = vec![0u8; 20 + tcp_header + payload];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&((20 + tcp_header + payload) as u16).to_be_bytes());
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 0, 0, 1]);
    p[16..20].copy_from_slice(&[10, 0, 0, 2]);
    p[20 + 12] = ((tcp_header / 4) as u8) << 4;
    p[36..38].copy_from_slice(&checksum_field.to_be_bytes());
    for (i, b) in p[20 + tcp_header..].iter_mut().enumerate() {
        *b = i as u8;
    }
    p
}

#[test]
fn a_header_that_vouches_skips_verification_and_one_that_does_not_keeps_it() {
    let needs = VirtioNetHdr::partial_checksum(20, 16);
    let valid = VirtioNetHdr {
        flags: F_DATA_VALID,
        ..VirtioNetHdr::PLAIN
    };
    let plain = VirtioNetHdr::PLAIN;
    let rfc = ChecksumMethod::Rfc1071;
    assert_eq!(receive_checksum(Some(&needs), rfc), ChecksumMethod::Offload);
    assert_eq!(receive_checksum(Some(&valid), rfc), ChecksumMethod::Offload);
    assert_eq!(receive_checksum(Some(&plain), rfc), rfc);
    assert_eq!(
        receive_checksum(Some(&plain), ChecksumMethod::Bytewise),
        ChecksumMethod::Bytewise
    );
    // An offload interface still checks what the device did not vouch for.
    assert_eq!(
        receive_checksum(Some(&plain), ChecksumMethod::Offload),
        ChecksumMethod::Rfc1071
    );
    // No device header: the interface's method, unchanged.
    assert_eq!(
        receive_checksum(None, ChecksumMethod::Offload),
        ChecksumMethod::Offload
    );
}

#[test]
fn a_tcp_super_segment_gets_tso_and_the_pseudo_header_sum_whatever_was_summed() {
    let payload = 10 * 1448;
    // A full checksum (software method) is replaced by the partial one.
    let mut p = tcp_packet(32, payload, 0xbeef);
    let h = transmit_header(&mut p, 0, Some(1448), ChecksumMethod::Rfc1071);
    assert_eq!(h.flags, F_NEEDS_CSUM);
    assert_eq!(h.gso_type, GsoType::TcpV4);
    assert_eq!((h.csum_start, h.csum_offset), (20, 16));
    assert_eq!((h.hdr_len, h.gso_size), (52, 1448));
    let pseudo = pseudo_header_sum([10, 0, 0, 1], [10, 0, 0, 2], 6, (32 + payload) as u16);
    assert_eq!(u16::from_be_bytes([p[36], p[37]]), pseudo);
    // On Ethernet the offsets count the link header too.
    let mut p = tcp_packet(20, payload, pseudo);
    let h = transmit_header(&mut p, 14, Some(1460), ChecksumMethod::Offload);
    assert_eq!((h.csum_start, h.hdr_len, h.gso_size), (34, 54, 1460));
}

#[test]
fn small_packets_get_a_partial_checksum_only_when_the_method_left_one() {
    let mut p = tcp_packet(20, 100, 0x1234);
    let h = transmit_header(&mut p, 0, None, ChecksumMethod::Offload);
    assert_eq!(h, VirtioNetHdr::partial_checksum(20, 16));
    assert_eq!(u16::from_be_bytes([p[36], p[37]]), 0x1234);
    let h = transmit_header(&mut p, 0, None, ChecksumMethod::Rfc1071);
    assert_eq!(h, VirtioNetHdr::PLAIN);
    let mut udp = tcp_packet(20, 8, 0);
    udp[9] = 17;
    let h = transmit_header(&mut udp, 0, None, ChecksumMethod::Offload);
    assert_eq!(h, VirtioNetHdr::partial_checksum(20, 6));
    let mut icmp = tcp_packet(20, 8, 0);
    icmp[9] = 1;
    let h = transmit_header(&mut icmp, 0, None, ChecksumMethod::Offload);
    assert_eq!(h, VirtioNetHdr::PLAIN);
    // The partial sum completes to the real checksum (what the kernel does).
    let mut p = tcp_packet(20, 100, 0);
    let pseudo = pseudo_header_sum([10, 0, 0, 1], [10, 0, 0, 2], 6, 120);
    p[36..38].copy_from_slice(&pseudo.to_be_bytes());
    let done = finish(sum_rfc1071(&p[20..]));
    p[36..38].copy_from_slice(&done.to_be_bytes());
    assert_eq!(
        crate::wire::checksum::combine(pseudo, sum_rfc1071(&p[20..])),
        0xffff
    );
}

#[test]
fn wire_segments_round_up_and_are_at_least_one() {
    assert_eq!(wire_segments(0, 1448), 1);
    assert_eq!(wire_segments(1448, 1448), 1);
    assert_eq!(wire_segments(1449, 1448), 2);
    assert_eq!(wire_segments(45 * 1448, 1448), 45);
}
