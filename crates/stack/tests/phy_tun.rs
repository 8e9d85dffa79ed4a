//! The devices against Linux: a TUN, a TUN with virtio-net offloads and a
//! TAP, each created in a network namespace of its own
//! (`tcplab-phy-<pid>-<n>`, deleted on drop, so on panic too), with
//! Linux's side given an address by `ip`. Skipped, with a message, where
//! /dev/net/tun or namespaces are not available.

#[path = "support/netns.rs"]
mod netns;

use netns::Netns;
use stack::phy::fault::{FaultConfig, FaultInjector};
use stack::phy::tracer::Tracer;
use stack::phy::tun::TunKind;
use stack::phy::vnet::{GsoType, VirtioNetHdr, F_NEEDS_CSUM, VNET_HDR_LEN};
use stack::phy::{Device, Medium};
use stack::time::MonotonicClock;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, UdpSocket};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The Internet checksum (RFC 1071) of `data` with `initial` already
/// summed in, not yet complemented: the 16-bit one's-complement sum.
fn ones_sum(data: &[u8], initial: u32) -> u16 {
    let mut s = initial;
    for c in data.chunks(2) {
        s += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// An IPv4 header (20 bytes, no options, DF) with its checksum.
fn ipv4_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, payload_len: usize) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    h[0] = 0x45; // version 4, header length 5 words
    h[2..4].copy_from_slice(&((20 + payload_len) as u16).to_be_bytes());
    h[6] = 0x40; // don't fragment
    h[8] = 64; // TTL
    h[9] = protocol;
    h[12..16].copy_from_slice(&src.octets());
    h[16..20].copy_from_slice(&dst.octets());
    let sum = !ones_sum(&h, 0);
    h[10..12].copy_from_slice(&sum.to_be_bytes());
    h
}

/// An ICMP echo request (RFC 792): type 8, code 0, checksum over the ICMP
/// message, identifier, sequence number, then the payload.
fn icmp_echo_request(src: Ipv4Addr, dst: Ipv4Addr, id: u16, seq: u16, payload: &[u8]) -> Vec<u8> {
    let mut icmp = vec![8, 0, 0, 0];
    icmp.extend_from_slice(&id.to_be_bytes());
    icmp.extend_from_slice(&seq.to_be_bytes());
    icmp.extend_from_slice(payload);
    let sum = !ones_sum(&icmp, 0);
    icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    let mut p = ipv4_header(src, dst, 1, icmp.len());
    p.extend_from_slice(&icmp);
    p
}

/// Receives until `want` accepts a frame or 3 s pass; returns that frame.
fn receive_until(dev: &mut impl Device, mut want: impl FnMut(&[u8]) -> bool) -> Vec<u8> {
    let mut buf = vec![0u8; dev.capabilities().max_frame];
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        match dev.receive(&mut buf).expect("receive") {
            Some(n) if want(&buf[..n]) => return buf[..n].to_vec(),
            Some(_) => {}
            None => {
                dev.wait(Some(Duration::from_millis(100))).expect("wait");
            }
        }
    }
    panic!("no matching frame within 3 s");
}

/// Whether `p` is an IPv4 ICMP echo reply with identifier `id`.
fn is_echo_reply(p: &[u8], id: u16) -> bool {
    p.len() >= 28 && p[0] >> 4 == 4 && p[9] == 1 && p[20] == 0 && p[24..26] == id.to_be_bytes()
}

const LINUX: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 1);
const US: Ipv4Addr = Ipv4Addr::new(10, 9, 0, 2);

#[test]
fn a_tun_device_carries_an_echo_request_to_linux_and_its_reply_back_and_the_tracer_records_both() {
    let Some(ns) = Netns::new("phy") else { return };
    let dev = ns.device(TunKind::Tun, "10.9.0.1/24");
    let caps = dev.capabilities();
    assert_eq!(caps.medium, Medium::Ip);
    assert_eq!(caps.mtu, 1500);
    assert!(!caps.offloads.vnet_header);
    let mut dev = Tracer::new(dev, Vec::new(), Arc::new(MonotonicClock::default())).unwrap();
    let request = icmp_echo_request(US, LINUX, 0x7c1a, 1, b"tcplab phy");
    dev.transmit(&request).unwrap();
    let reply = receive_until(&mut dev, |p| is_echo_reply(p, 0x7c1a));
    // Linux answered our address with our sequence number and payload,
    // and a correct ICMP checksum.
    assert_eq!(reply[12..16], LINUX.octets());
    assert_eq!(reply[16..20], US.octets());
    assert_eq!(reply[26..28], 1u16.to_be_bytes());
    assert_eq!(&reply[28..], b"tcplab phy");
    assert_eq!(ones_sum(&reply[20..], 0), 0xffff);

    // The trace holds what went out first and, among what came in, the
    // reply, in pcapng that pcap-file reads back.
    let frames = dev.frames();
    let bytes = dev.finish().unwrap();
    let mut reader = pcap_file::pcapng::PcapNgReader::new(&bytes[..]).unwrap();
    let mut packets = Vec::new();
    while let Some(block) = reader.next_block() {
        if let pcap_file::pcapng::Block::EnhancedPacket(p) = block.unwrap() {
            packets.push(p.data.into_owned());
        }
    }
    assert_eq!(packets.len() as u64, frames);
    assert_eq!(packets[0], request);
    assert!(packets.contains(&reply));
    let path = std::env::temp_dir().join(format!("tcplab-phy-{}.pcapng", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    // Without tshark the trace was checked with pcap-file only: a skip.
    if testkit::need_tool("tshark") {
        let out = Command::new("tshark")
            .arg("-r")
            .arg(&path)
            .output()
            .expect("running tshark");
        assert!(
            out.status.success(),
            "tshark: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count() as u64, frames, "{text}");
        assert!(
            text.contains("Echo (ping) request") && text.contains("Echo (ping) reply"),
            "{text}"
        );
    }
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_fault_injector_over_a_tun_device_loses_what_it_is_told_to() {
    let Some(ns) = Netns::new("phy") else { return };
    let dev = ns.device(TunKind::Tun, "10.9.0.1/24");
    let mut all_lost = FaultConfig::default();
    all_lost.transmit.loss = 1.0;
    let mut dev = FaultInjector::new(dev, all_lost);
    dev.transmit(&icmp_echo_request(US, LINUX, 1, 1, b""))
        .unwrap();
    let mut buf = [0u8; 1500];
    let mut replies = 0;
    let deadline = Instant::now() + Duration::from_millis(300);
    while Instant::now() < deadline {
        if let Some(n) = dev.receive(&mut buf).unwrap() {
            replies += usize::from(is_echo_reply(&buf[..n], 1));
        }
        dev.wait(Some(Duration::from_millis(50))).unwrap();
    }
    assert_eq!(replies, 0, "a lost request got a reply");
    assert_eq!(dev.transmit_stats().dropped, 1);
}

#[test]
fn a_tap_device_delivers_linuxs_arp_request_and_carries_our_reply_back() {
    let Some(ns) = Netns::new("phy") else { return };
    let mut dev = ns.device(TunKind::Tap, "10.9.2.1/24");
    assert_eq!(dev.capabilities().medium, Medium::Ethernet);
    // A datagram from inside the namespace to a neighbour Linux does not
    // know yet makes it ask for the neighbour's address.
    ns.run(|| {
        let s = UdpSocket::bind("10.9.2.1:0").unwrap();
        s.send_to(b"to the neighbour", "10.9.2.2:9").unwrap();
    })
    .join()
    .unwrap();
    let is_arp_request = |f: &[u8]| {
        f.len() >= 42
            && f[12..14] == [0x08, 0x06]
            && f[20..22] == [0, 1]
            && f[38..42] == [10, 9, 2, 2]
    };
    let request = receive_until(&mut dev, is_arp_request);
    assert_eq!(request[0..6], [0xff; 6], "broadcast");
    // ARP over Ethernet for IPv4: htype 1, ptype 0x0800, hlen 6, plen 4.
    assert_eq!(request[14..20], [0, 1, 8, 0, 6, 4]);
    assert_eq!(
        request[22..28],
        request[6..12],
        "sender MAC is the frame's source"
    );
    assert_eq!(request[28..32], [10, 9, 2, 1], "sender IP is Linux's");
    let linux_mac: [u8; 6] = request[6..12].try_into().unwrap();

    // Answer: 10.9.2.2 is at 02:00:00:00:09:02. Linux then sends the
    // datagram it queued to that address.
    let ours = [2, 0, 0, 0, 9, 2];
    let mut reply = Vec::new();
    reply.extend_from_slice(&linux_mac);
    reply.extend_from_slice(&ours);
    reply.extend_from_slice(&[0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 2]);
    reply.extend_from_slice(&ours);
    reply.extend_from_slice(&[10, 9, 2, 2]);
    reply.extend_from_slice(&linux_mac);
    reply.extend_from_slice(&[10, 9, 2, 1]);
    dev.transmit(&reply).unwrap();
    let datagram = receive_until(&mut dev, |f| {
        f.len() > 42 && f[12..14] == [0x08, 0x00] && f[23] == 17
    });
    assert_eq!(datagram[0..6], ours, "sent to the address we gave");
    assert!(datagram.ends_with(b"to the neighbour"));
}

/// A TCP header (20 bytes, or 24 with an MSS option), checksum zero.
fn tcp_header(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, mss: Option<u16>) -> Vec<u8> {
    let mut t = Vec::with_capacity(24);
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&ack.to_be_bytes());
    let words = if mss.is_some() { 6 } else { 5 };
    t.extend_from_slice(&[words << 4, flags, 0xff, 0xff, 0, 0, 0, 0]); // window 65535
    if let Some(m) = mss {
        t.extend_from_slice(&[2, 4]); // kind MSS, length 4
        t.extend_from_slice(&m.to_be_bytes());
    }
    t
}

/// The TCP pseudo-header's sum (RFC 9293 §3.1) for `len` bytes of segment.
fn pseudo_sum(src: Ipv4Addr, dst: Ipv4Addr, len: usize) -> u32 {
    let mut p = Vec::new();
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(&[0, 6]);
    p.extend_from_slice(&(len as u16).to_be_bytes());
    u32::from(ones_sum(&p, 0))
}

/// A TCP/IPv4 packet with the virtio-net header in front. With `gso`
/// (segment size), a super-packet whose checksum the kernel finishes
/// (`NEEDS_CSUM`, pseudo-header sum in place); else a full checksum.
fn vnet_tcp(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    mut tcp: Vec<u8>,
    payload: &[u8],
    gso: Option<u16>,
) -> Vec<u8> {
    let header_len = tcp.len();
    tcp.extend_from_slice(payload);
    let pseudo = pseudo_sum(src, dst, tcp.len());
    let hdr = match gso {
        Some(size) => {
            let sum = ones_sum(&[], pseudo);
            tcp[16..18].copy_from_slice(&sum.to_be_bytes());
            VirtioNetHdr {
                flags: F_NEEDS_CSUM,
                gso_type: GsoType::TcpV4,
                gso_ecn: false,
                hdr_len: (20 + header_len) as u16,
                gso_size: size,
                csum_start: 20,
                csum_offset: 16,
            }
        }
        None => {
            let sum = !ones_sum(&tcp, pseudo);
            tcp[16..18].copy_from_slice(&sum.to_be_bytes());
            VirtioNetHdr::PLAIN
        }
    };
    let mut frame = vec![0u8; VNET_HDR_LEN];
    hdr.emit(&mut frame);
    frame.extend_from_slice(&ipv4_header(src, dst, 6, tcp.len()));
    frame.extend_from_slice(&tcp);
    frame
}

#[test]
fn the_offload_device_takes_a_tcp_super_packet_and_hands_over_linuxs_gso_packets() {
    let Some(ns) = Netns::new("phy") else { return };
    let mut dev = ns.device(TunKind::TunOffload, "10.9.1.1/24");
    let caps = dev.capabilities();
    assert!(caps.offloads.vnet_header && caps.offloads.tso4 && caps.offloads.checksum);
    assert!(caps.max_frame >= VNET_HDR_LEN + 65535);
    let (linux, us) = (Ipv4Addr::new(10, 9, 1, 1), Ipv4Addr::new(10, 9, 1, 2));
    const UP: usize = 30_000;
    const DOWN: usize = 40_000;
    let pattern = |i: usize| (i % 251) as u8;

    // Linux listens in the namespace, reads what we send, then writes back.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let listener = ns
        .run(|| TcpListener::bind("10.9.1.1:5001").unwrap())
        .join()
        .unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = vec![0u8; UP];
        s.read_exact(&mut got).unwrap();
        s.write_all(&(0..DOWN).map(pattern).collect::<Vec<_>>())
            .unwrap();
        let _ = done_rx.recv_timeout(Duration::from_secs(5));
        got
    });

    // An echo request with a plain header gets a reply with a header.
    let mut ping = vec![0u8; VNET_HDR_LEN];
    VirtioNetHdr::PLAIN.emit(&mut ping);
    ping.extend_from_slice(&icmp_echo_request(us, linux, 9, 1, b"vnet"));
    dev.transmit(&ping).unwrap();
    let reply = receive_until(&mut dev, |f| is_echo_reply(&f[VNET_HDR_LEN..], 9));
    assert_eq!(VirtioNetHdr::parse(&reply).unwrap().gso_type, GsoType::None);

    // The handshake, by hand: SYN (MSS 1460), Linux's SYN-ACK, ACK.
    let iss = 1_000_000u32;
    let is_from_server = |f: &[u8], flags: u8| {
        let p = &f[VNET_HDR_LEN..];
        p.len() >= 40 && p[9] == 6 && p[20..22] == 5001u16.to_be_bytes() && p[33] & flags == flags
    };
    dev.transmit(&vnet_tcp(
        us,
        linux,
        tcp_header(40000, 5001, iss, 0, 0x02, Some(1460)),
        &[],
        None,
    ))
    .unwrap();
    let syn_ack = receive_until(&mut dev, |f| is_from_server(f, 0x12));
    let p = &syn_ack[VNET_HDR_LEN..];
    let irs = u32::from_be_bytes(p[24..28].try_into().unwrap());
    assert_eq!(u32::from_be_bytes(p[28..32].try_into().unwrap()), iss + 1);
    let ack = tcp_header(40000, 5001, iss + 1, irs + 1, 0x10, None);
    dev.transmit(&vnet_tcp(us, linux, ack, &[], None)).unwrap();

    // One write of a 30,000-byte super-packet, cut by the kernel into
    // 1,400-byte segments.
    let data: Vec<u8> = (0..UP).map(pattern).collect();
    let push = tcp_header(40000, 5001, iss + 1, irs + 1, 0x18, None);
    let sp = vnet_tcp(us, linux, push, &data, Some(1400));
    assert!(sp.len() > 30_000);
    dev.transmit(&sp).unwrap();

    // Linux's answer comes as GSO packets larger than the MTU, each with a
    // TCPv4 header saying how to cut it.
    let mut largest = 0;
    let mut received = 0;
    let mut gso_seen = false;
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut buf = vec![0u8; caps.max_frame];
    while Instant::now() < deadline && received < 10 * 1460 {
        let Some(n) = dev.receive(&mut buf).unwrap() else {
            dev.wait(Some(Duration::from_millis(50))).unwrap();
            continue;
        };
        let f = &buf[..n];
        if !is_from_server(f, 0x10) {
            continue;
        }
        let p = &f[VNET_HDR_LEN..];
        let payload = &p[20 + usize::from(p[32] >> 4) * 4..];
        if payload.is_empty() {
            continue;
        }
        let h = VirtioNetHdr::parse(f).unwrap();
        if h.gso_type == GsoType::TcpV4 {
            gso_seen = true;
            assert!(h.gso_size > 0 && usize::from(h.gso_size) <= 1460, "{h:?}");
        }
        largest = largest.max(p.len());
        received += payload.len();
    }
    let _ = done_tx.send(());
    eprintln!("Linux's largest packet: {largest} bytes ({received} payload bytes read)");
    let got = server.join().unwrap();
    assert_eq!(got, data, "Linux read every byte of the super-packet");
    assert!(gso_seen, "no GSO packet from Linux");
    assert!(largest > 1500, "largest packet from Linux: {largest} bytes");
}

/// A wait under a millisecond sleeps for it (`ppoll`'s nanoseconds):
/// with `poll`'s whole milliseconds it returned at once, and a pacer's
/// event loop spun until its next send time.
#[test]
fn a_wait_under_a_millisecond_sleeps_that_long_instead_of_returning_at_once() {
    // Timed sleeps: one timed test at a time, on a quiet host (a busy one
    // wakes a sleeper late).
    let _timing = testkit::timing_lock();
    let Some(ns) = Netns::new("phy") else { return };
    let mut dev = ns.device(TunKind::Tun, "10.9.3.1/24");
    let mut buf = [0u8; 1500];
    let wait = Duration::from_micros(300);
    let what = "50 waits of 300 µs";
    let q = testkit::until_quiet(what, testkit::QuietLimits::default(), &[], || {
        let mut slept = Vec::new();
        for _ in 0..50 {
            while dev.receive(&mut buf).unwrap().is_some() {}
            let t = Instant::now();
            if !dev.wait(Some(wait)).unwrap() {
                slept.push(t.elapsed());
            }
        }
        slept
    });
    eprintln!("{what}: {}", q.describe());
    let mut slept = q.value;
    slept.sort();
    assert!(slept.len() >= 40, "{} of 50 waits timed out", slept.len());
    let median = slept[slept.len() / 2];
    eprintln!("a 300 µs wait slept {median:?} (median)");
    assert!(slept[0] >= wait, "shortest {:?}", slept[0]);
    assert!(median < Duration::from_millis(5), "median {median:?}");
}
