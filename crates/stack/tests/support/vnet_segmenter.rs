//! A reference for what the kernel does with a frame the stack writes to
//! an offload TUN (`virtio_net_hdr_to_skb`, then `tcp_gso_segment` and
//! the checksum completion), written from the virtio spec §5.1.6 and RFC
//! 9293/791 with nothing of the stack's own code: the stack's output is
//! checked against it.

#![allow(dead_code)]

/// The virtio-net header's length.
pub const HDR: usize = 10;

fn sum(data: &[u8], mut acc: u64) -> u64 {
    for pair in data.chunks(2) {
        acc += u64::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    acc
}

fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

fn u16_le(b: &[u8], at: usize) -> usize {
    usize::from(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// The header's fields: (flags, gso_type, hdr_len, gso_size, csum_start,
/// csum_offset).
pub fn header(frame: &[u8]) -> (u8, u8, usize, usize, usize, usize) {
    (
        frame[0],
        frame[1] & 0x7f,
        u16_le(frame, 2),
        u16_le(frame, 4),
        u16_le(frame, 6),
        u16_le(frame, 8),
    )
}

/// Writes the checksum a `NEEDS_CSUM` packet asks for: the complement of
/// the sum from `start` to the end, the field (holding the pseudo-header
/// sum) included.
pub fn finish_partial(packet: &mut [u8], start: usize, offset: usize) {
    let c = !fold(sum(&packet[start..], 0));
    packet[start + offset..start + offset + 2].copy_from_slice(&c.to_be_bytes());
}

/// The TCP checksum of a whole IPv4 packet, computed from scratch.
pub fn tcp_checksum(packet: &mut [u8]) {
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    let tcp_len = packet.len() - ihl;
    let mut pseudo = Vec::with_capacity(12);
    pseudo.extend_from_slice(&packet[12..20]);
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(tcp_len as u16).to_be_bytes());
    packet[ihl + 16..ihl + 18].copy_from_slice(&[0, 0]);
    let c = !fold(sum(&packet[ihl..], sum(&pseudo, 0)));
    packet[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
}

fn ip_checksum(packet: &mut [u8]) {
    let ihl = usize::from(packet[0] & 0x0f) * 4;
    packet[10..12].copy_from_slice(&[0, 0]);
    let c = !fold(sum(&packet[..ihl], 0));
    packet[10..12].copy_from_slice(&c.to_be_bytes());
}

/// The IPv4 packets the kernel puts on its side for one frame (virtio-net
/// header, then an IPv4 packet): a TCPv4 super-packet cut into `gso_size`
/// payloads, each with the headers copied, IP total length and ID (the
/// first's, counting up) and TCP sequence number set, FIN and PSH on the
/// last only, CWR on the first only, both checksums computed; any other
/// packet as it is, its partial checksum finished if it has one.
pub fn cut(frame: &[u8]) -> Vec<Vec<u8>> {
    let (flags, gso_type, hdr_len, gso_size, csum_start, csum_offset) = header(frame);
    let packet = &frame[HDR..];
    match gso_type {
        0 => {
            let mut p = packet.to_vec();
            if flags & 1 != 0 {
                finish_partial(&mut p, csum_start, csum_offset);
            }
            vec![p]
        }
        1 => {
            assert_eq!(flags & 1, 1, "TSO without NEEDS_CSUM");
            let ihl = usize::from(packet[0] & 0x0f) * 4;
            let headers = ihl + usize::from(packet[ihl + 12] >> 4) * 4;
            assert_eq!(hdr_len, headers, "hdr_len is the IP and TCP headers");
            assert_eq!(csum_start, ihl, "csum_start is the TCP header");
            assert_eq!(csum_offset, 16, "csum_offset is TCP's checksum");
            let id0 = u16::from_be_bytes([packet[4], packet[5]]);
            let seq0 = u32::from_be_bytes(packet[ihl + 4..ihl + 8].try_into().unwrap());
            let chunks: Vec<&[u8]> = packet[headers..].chunks(gso_size).collect();
            let last = chunks.len() - 1;
            chunks
                .iter()
                .enumerate()
                .map(|(i, chunk)| {
                    let mut p = packet[..headers].to_vec();
                    p.extend_from_slice(chunk);
                    let len = p.len() as u16;
                    p[2..4].copy_from_slice(&len.to_be_bytes());
                    p[4..6].copy_from_slice(&id0.wrapping_add(i as u16).to_be_bytes());
                    ip_checksum(&mut p);
                    let seq = seq0.wrapping_add((i * gso_size) as u32);
                    p[ihl + 4..ihl + 8].copy_from_slice(&seq.to_be_bytes());
                    if i != last {
                        p[ihl + 13] &= !(0x01 | 0x08);
                    }
                    if i != 0 {
                        p[ihl + 13] &= !0x80;
                    }
                    tcp_checksum(&mut p);
                    p
                })
                .collect()
        }
        other => panic!("gso_type {other} from a TCP/IPv4 stack"),
    }
}
