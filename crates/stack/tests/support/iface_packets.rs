//! Packets built by hand (not by the stack's emitters), so the interface
//! tests check the stack against an independent reading of the RFCs.

#![allow(dead_code)]

use std::net::Ipv4Addr;

/// The 16-bit one's-complement sum of `data` (RFC 1071), not complemented.
pub fn ones_sum(data: &[u8], initial: u32) -> u16 {
    let mut s = initial;
    for c in data.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Fields of an IPv4 header to build.
#[derive(Clone, Copy)]
pub struct Ip {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub ttl: u8,
    pub ident: u16,
    pub more_frags: bool,
    pub frag_offset: u16,
}

impl Ip {
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8) -> Ip {
        Ip {
            src,
            dst,
            protocol,
            ttl: 64,
            ident: 0x1234,
            more_frags: false,
            frag_offset: 0,
        }
    }

    /// The packet: a 20-byte header with its checksum, then `payload`.
    pub fn packet(&self, payload: &[u8]) -> Vec<u8> {
        let mut h = vec![0u8; 20];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&self.ident.to_be_bytes());
        let flags_offset = (u16::from(self.more_frags) << 13) | (self.frag_offset / 8);
        h[6..8].copy_from_slice(&flags_offset.to_be_bytes());
        h[8] = self.ttl;
        h[9] = self.protocol;
        h[12..16].copy_from_slice(&self.src.octets());
        h[16..20].copy_from_slice(&self.dst.octets());
        let sum = !ones_sum(&h, 0);
        h[10..12].copy_from_slice(&sum.to_be_bytes());
        h.extend_from_slice(payload);
        h
    }
}

/// An ICMP echo request message (RFC 792).
pub fn echo_request(id: u16, seq: u16, data: &[u8]) -> Vec<u8> {
    let mut m = vec![8, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(data);
    let sum = !ones_sum(&m, 0);
    m[2..4].copy_from_slice(&sum.to_be_bytes());
    m
}

/// A UDP datagram (RFC 768) with its checksum over the pseudo-header.
pub fn udp(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
    let len = (8 + data.len()) as u16;
    let mut d = Vec::new();
    d.extend_from_slice(&sport.to_be_bytes());
    d.extend_from_slice(&dport.to_be_bytes());
    d.extend_from_slice(&len.to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(data);
    let sum = !udp_sum(src, dst, &d);
    let sum = if sum == 0 { 0xffff } else { sum };
    d[6..8].copy_from_slice(&sum.to_be_bytes());
    d
}

/// The one's-complement sum of a UDP datagram and its pseudo-header
/// (0xffff when the datagram's checksum verifies).
pub fn udp_sum(src: Ipv4Addr, dst: Ipv4Addr, datagram: &[u8]) -> u16 {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&(datagram.len() as u16).to_be_bytes());
    ones_sum(datagram, u32::from(ones_sum(&pseudo, 0)))
}

/// An Ethernet II frame.
pub fn ethernet(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An ARP packet for IPv4 over Ethernet (RFC 826): op 1 request, 2 reply.
pub fn arp(op: u16, sha: [u8; 6], spa: Ipv4Addr, tha: [u8; 6], tpa: Ipv4Addr) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend_from_slice(&op.to_be_bytes());
    a.extend_from_slice(&sha);
    a.extend_from_slice(&spa.octets());
    a.extend_from_slice(&tha);
    a.extend_from_slice(&tpa.octets());
    a
}

/// A TCP segment (RFC 9293 §3.1) with no options and no payload: `flags`
/// as on the wire (0x02 SYN, 0x10 ACK, 0x04 RST), its checksum over the
/// IPv4 pseudo-header.
pub fn tcp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    ports: (u16, u16),
    seq: u32,
    ack: u32,
    flags: u8,
) -> Vec<u8> {
    let mut s = vec![0u8; 20];
    s[0..2].copy_from_slice(&ports.0.to_be_bytes());
    s[2..4].copy_from_slice(&ports.1.to_be_bytes());
    s[4..8].copy_from_slice(&seq.to_be_bytes());
    s[8..12].copy_from_slice(&ack.to_be_bytes());
    s[12] = 5 << 4;
    s[13] = flags;
    s[14..16].copy_from_slice(&65535u16.to_be_bytes());
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(s.len() as u16).to_be_bytes());
    let sum = !ones_sum(&s, u32::from(ones_sum(&pseudo, 0)));
    s[16..18].copy_from_slice(&sum.to_be_bytes());
    s
}

/// The one's-complement sum of a TCP segment and its pseudo-header
/// (0xffff when the segment's checksum verifies).
pub fn tcp_sum(src: Ipv4Addr, dst: Ipv4Addr, segment: &[u8]) -> u16 {
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src.octets());
    pseudo.extend_from_slice(&dst.octets());
    pseudo.extend_from_slice(&[0, 6]);
    pseudo.extend_from_slice(&(segment.len() as u16).to_be_bytes());
    ones_sum(segment, u32::from(ones_sum(&pseudo, 0)))
}
