//! Fuzzing the wire parsers, bounded for CI (proptest's 256 cases per
//! property by default; `PROPTEST_CASES=1000000 cargo test -p stack --test
//! wire_fuzz --release` runs a long campaign).
//!
//! What is held: arbitrary bytes, and valid packets with bytes mutated,
//! into every `new_checked` and `parse` never panic and never allocate
//! (the views are zero-copy and the Reprs borrow: a counting allocator
//! checks it); the one loop over untrusted input, TCP's options, makes
//! progress on every step, so it ends; and every truncation of a valid
//! packet is refused as `Truncated` wherever the packet says its own
//! length.

#[path = "support/wire_strategies.rs"]
mod strategies;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use proptest::prelude::*;
use stack::wire::{
    ArpPacket, ArpRepr, ChecksumMethod, EthernetFrame, EthernetRepr, Icmpv4Packet, Icmpv4Repr,
    IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpOption, TcpPacket, TcpRepr, UdpPacket,
    UdpRepr, WireError,
};
use strategies::*;

/// The system allocator, counting allocations made on each thread.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(|n| n.get())
}

const A: Ipv4Address = Ipv4Address::new(10, 78, 0, 1);
const B: Ipv4Address = Ipv4Address::new(10, 78, 0, 2);

/// Every view and parser over `bytes`, under `method`, as the interface
/// would chain them; returns how many layers parsed (so the work is not
/// optimised away).
fn parse_everything(bytes: &[u8], method: ChecksumMethod) -> usize {
    let mut parsed = 0;
    if let Ok(frame) = EthernetFrame::new_checked(bytes) {
        parsed += usize::from(EthernetRepr::parse(&frame).is_ok());
        parsed += parse_everything_in_ip(frame.payload(), method);
    }
    if let Ok(packet) = ArpPacket::new_checked(bytes) {
        parsed += usize::from(ArpRepr::parse(&packet).is_ok());
    }
    parsed += parse_everything_in_ip(bytes, method);
    parsed += parse_transports(bytes, A, B, method);
    parsed
}

fn parse_everything_in_ip(bytes: &[u8], method: ChecksumMethod) -> usize {
    let Ok(packet) = Ipv4Packet::new_checked(bytes) else {
        return 0;
    };
    let _ = (packet.options(), packet.frag_offset(), packet.dont_frag());
    match Ipv4Repr::parse(&packet, method) {
        Ok(ip) => 1 + parse_transports(packet.payload(), ip.src_addr, ip.dst_addr, method),
        Err(_) => 0,
    }
}

fn parse_transports(bytes: &[u8], src: Ipv4Address, dst: Ipv4Address, m: ChecksumMethod) -> usize {
    let mut parsed = 0;
    if let Ok(packet) = Icmpv4Packet::new_checked(bytes) {
        parsed += usize::from(Icmpv4Repr::parse(&packet, m).is_ok_and(|r| r.buffer_len() > 0));
    }
    if let Ok(packet) = UdpPacket::new_checked(bytes) {
        parsed += usize::from(UdpRepr::parse(&packet, src, dst, m).is_ok());
    }
    if let Ok(packet) = TcpPacket::new_checked(bytes) {
        parsed +=
            usize::from(TcpRepr::parse(&packet, src, dst, m).is_ok_and(|r| r.header_len() >= 20));
    }
    parsed
}

/// Parses under every method and asserts nothing was allocated.
fn parse_without_allocating(bytes: &[u8]) -> Result<usize, TestCaseError> {
    let before = allocations();
    let parsed: usize = METHODS.iter().map(|&m| parse_everything(bytes, m)).sum();
    prop_assert_eq!(allocations(), before, "a parser allocated");
    Ok(parsed)
}

/// Overwrites bytes of `packet` at the given places (indices taken
/// modulo its length).
fn mutate(packet: &mut [u8], edits: &[(prop::sample::Index, u8)]) {
    if packet.is_empty() {
        return;
    }
    for (at, byte) in edits {
        let i = at.index(packet.len());
        packet[i] = *byte;
    }
}

fn edits() -> impl Strategy<Value = Vec<(prop::sample::Index, u8)>> {
    proptest::collection::vec(any::<(prop::sample::Index, u8)>(), 1..8)
}

#[test]
fn the_allocation_counter_sees_allocations() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 10]);
    assert!(allocations() > before && v.len() == 10);
}

proptest! {
    /// Arbitrary bytes of any length up to a jumbo frame.
    #[test]
    fn arbitrary_bytes_never_panic_or_allocate(bytes in proptest::collection::vec(any::<u8>(), 0..1600)) {
        parse_without_allocating(&bytes)?;
    }

    /// Valid TCP/IP packets (in an Ethernet frame) with a few bytes
    /// overwritten and the IP checksum made right again, so the mutations
    /// reach TCP's options and flags behind the IP header.
    #[test]
    fn mutated_tcp_packets_never_panic_or_allocate(
        (mut repr, payload) in tcp_repr(), ip in ipv4_repr(), eth in ethernet_repr(), edits in edits(),
    ) {
        repr.payload = &payload;
        let segment = emit_tcp(&repr, ip.src_addr, ip.dst_addr, ChecksumMethod::Rfc1071);
        let mut datagram = emit_ipv4(&ip, IpProtocol::Tcp, &segment, ChecksumMethod::Rfc1071);
        let header_len = ip.header_len();
        mutate(&mut datagram[header_len..], &edits);
        parse_without_allocating(&datagram)?;
        mutate(&mut datagram, &edits);
        let mut packet = Ipv4Packet::new_unchecked(&mut datagram[..]);
        if packet.check_len().is_ok() {
            packet.fill_checksum(ChecksumMethod::Rfc1071);
        }
        parse_without_allocating(&datagram)?;
        parse_without_allocating(&emit_ethernet(&eth, &datagram))?;
    }

    /// The same for UDP, ICMP and ARP.
    #[test]
    fn mutated_udp_icmp_arp_never_panic_or_allocate(
        udp in udp_parts(), icmp in icmp_parts(), arp in arp_repr(), edits in edits(),
    ) {
        for mut bytes in [
            emit_udp(&udp_of(&udp), A, B, ChecksumMethod::Rfc1071),
            emit_icmp(&icmp_of(&icmp), ChecksumMethod::Rfc1071),
            emit_arp(&arp),
        ] {
            mutate(&mut bytes, &edits);
            parse_without_allocating(&bytes)?;
        }
    }

    /// TCP's option loop over arbitrary option bytes: each step consumes
    /// at least one byte or fails, so it ends within as many steps as
    /// there are bytes.
    #[test]
    fn tcp_option_parsing_always_progresses(options in proptest::collection::vec(any::<u8>(), 0..40)) {
        let mut rest = &options[..];
        let mut steps = 0;
        while !rest.is_empty() {
            match TcpOption::parse(rest) {
                Ok((after, option)) => {
                    prop_assert!(after.len() < rest.len());
                    if option == TcpOption::EndOfList { prop_assert!(after.is_empty()); }
                    rest = after;
                }
                Err(e) => {
                    prop_assert!(matches!(e, WireError::Malformed(_)));
                    break;
                }
            }
            steps += 1;
        }
        prop_assert!(steps <= options.len());
    }

    /// Every proper prefix of a valid IPv4 datagram, UDP datagram or ARP
    /// packet, whose lengths the headers state, is refused as truncated;
    /// so is every cut into an Ethernet, TCP or ICMP header (their
    /// payload's end is the layer below's to know).
    #[test]
    fn truncated_packets_are_refused_as_truncated(
        (mut repr, payload) in tcp_repr(), ip in ipv4_repr(), udp in udp_parts(),
        icmp in icmp_parts(), arp in arp_repr(), eth in ethernet_repr(),
        cut in any::<prop::sample::Index>(),
    ) {
        repr.payload = &payload;
        let segment = emit_tcp(&repr, ip.src_addr, ip.dst_addr, ChecksumMethod::Rfc1071);
        let datagram = emit_ipv4(&ip, IpProtocol::Tcp, &segment, ChecksumMethod::Rfc1071);
        let n = cut.index(datagram.len());
        prop_assert!(matches!(Ipv4Packet::new_checked(&datagram[..n]), Err(WireError::Truncated(_))));
        let n = cut.index(repr.header_len());
        prop_assert!(matches!(TcpPacket::new_checked(&segment[..n]), Err(WireError::Truncated(_))));
        let udp = emit_udp(&udp_of(&udp), A, B, ChecksumMethod::Rfc1071);
        let n = cut.index(udp.len());
        prop_assert!(matches!(UdpPacket::new_checked(&udp[..n]), Err(WireError::Truncated(_))));
        let icmp = emit_icmp(&icmp_of(&icmp), ChecksumMethod::Rfc1071);
        let n = cut.index(8);
        prop_assert!(matches!(Icmpv4Packet::new_checked(&icmp[..n]), Err(WireError::Truncated(_))));
        let arp = emit_arp(&arp);
        let n = cut.index(arp.len());
        prop_assert!(matches!(ArpPacket::new_checked(&arp[..n]), Err(WireError::Truncated(_))));
        let frame = emit_ethernet(&eth, &[]);
        let n = cut.index(frame.len());
        prop_assert!(matches!(EthernetFrame::new_checked(&frame[..n]), Err(WireError::Truncated(_))));
    }
}
