//! The seam between IP and the layers above: the interface hands each UDP
//! datagram and TCP segment for us to an [`IpHandler`], with the parsed IP
//! header, so the TCP state machine and the UDP sockets plug in without
//! `iface` knowing them.

use super::icmp_error::IcmpError;
use crate::wire::{ChecksumMethod, Ipv4Repr, UdpRepr};

/// What a layer above answers when handed a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Someone took it.
    Accepted,
    /// Nobody listens there (the interface counts it as
    /// [`super::counters::DropReason::NoListener`]).
    NoListener,
}

/// The transport layers as the interface sees them. Handlers queue what
/// they want to send and send it through `Interface::send_ip` after
/// `poll` returns.
pub trait IpHandler {
    /// A UDP datagram for one of our addresses, its checksum verified.
    fn udp(&mut self, ip: &Ipv4Repr, udp: &UdpRepr<'_>) -> Delivery;

    /// A TCP segment for one of our addresses: the IP header and the TCP
    /// header and payload, unparsed (TCP checks its own checksum, by
    /// `checksum`: the interface's method, or
    /// [`ChecksumMethod::Offload`] when the device vouched for this
    /// segment's). With an offload device the segment may be a
    /// super-packet: several MSS-sized segments in one.
    fn tcp(&mut self, ip: &Ipv4Repr, segment: &[u8], checksum: ChecksumMethod) -> Delivery;

    /// A destination unreachable about a datagram we sent (RFC 1122
    /// §4.2.3.9 for TCP); by default nobody takes it.
    fn icmp_error(&mut self, _error: &IcmpError) -> Delivery {
        Delivery::NoListener
    }
}

/// A handler with no transport above: every datagram and segment is
/// counted as having no listener. For an interface that only answers ARP
/// and `ping`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoTransport;

impl IpHandler for NoTransport {
    fn udp(&mut self, _ip: &Ipv4Repr, _udp: &UdpRepr<'_>) -> Delivery {
        Delivery::NoListener
    }

    fn tcp(&mut self, _ip: &Ipv4Repr, _segment: &[u8], _checksum: ChecksumMethod) -> Delivery {
        Delivery::NoListener
    }
}
