//! The interface's side of a device's virtio-net header (issue 18's TUN
//! with offloads). The device itself is the switch: a device opened with
//! `IFF_VNET_HDR` puts the header before every packet in both directions,
//! so the interface must frame by it whenever the device says it has one
//! ([`crate::phy::Offloads::vnet_header`]), and with no such device nothing
//! here runs.
//!
//! - In: the header is read and stripped; `NEEDS_CSUM` or `DATA_VALID`
//!   means the kernel vouches for the transport checksum, so TCP and UDP
//!   skip verifying it (counted); a header naming a segmentation type marks
//!   a super-packet (the concatenation of MSS-sized segments), which goes
//!   up whole (counted).
//! - Out: the header is written into headroom before the packet: a TCP or
//!   UDP packet whose checksum field holds only the pseudo-header sum
//!   ([`ChecksumMethod::Offload`]) gets `NEEDS_CSUM` with where the sum
//!   sits; a TCP super-segment also gets `gso_type` TCPv4 and its segment
//!   size, so the kernel cuts it (TSO).

use crate::phy::vnet::{VirtioNetHdr, TCP_CSUM_OFFSET, UDP_CSUM_OFFSET};
use crate::wire::checksum;
use crate::wire::{ChecksumMethod, IpProtocol};

/// How to check the transport checksum of a packet that came with
/// `header` (`None`: the device has no header) on an interface whose
/// method is `configured`: not at all when the header vouches for it,
/// otherwise in software (RFC 1071 if the interface's own method is
/// `Offload`, since a device that did not vouch checked nothing).
pub fn receive_checksum(
    header: Option<&VirtioNetHdr>,
    configured: ChecksumMethod,
) -> ChecksumMethod {
    match header {
        None => configured,
        Some(h) if h.checksum_trusted() => ChecksumMethod::Offload,
        Some(_) if configured.in_software() => configured,
        Some(_) => ChecksumMethod::Rfc1071,
    }
}

/// The header to send before `packet` (an IPv4 packet whose transport
/// checksum was written by `method`), `link_len` bytes of link header
/// coming between them; `segment_size`: the payload per wire segment when
/// `packet` is a TCP super-segment for the device to cut. A super-segment
/// always leaves with a partial checksum, so its checksum field is set to
/// the pseudo-header sum here whatever `method` wrote.
pub fn transmit_header(
    packet: &mut [u8],
    link_len: usize,
    segment_size: Option<usize>,
    method: ChecksumMethod,
) -> VirtioNetHdr {
    let ip_header_len = usize::from(packet[0] & 0x0f) * 4;
    let csum_start = (link_len + ip_header_len) as u16;
    let protocol = IpProtocol::from(packet[9]);
    if let (Some(size), IpProtocol::Tcp) = (segment_size, protocol) {
        let tcp_header_len = usize::from(packet[ip_header_len + 12] >> 4) * 4;
        if method.in_software() {
            // A full checksum was written: the kernel wants the partial one.
            let src: [u8; 4] = packet[12..16].try_into().expect("an IPv4 header");
            let dst: [u8; 4] = packet[16..20].try_into().expect("an IPv4 header");
            let tcp_len = (packet.len() - ip_header_len) as u16;
            let pseudo = checksum::pseudo_header_sum(src, dst, protocol.into(), tcp_len);
            let field = ip_header_len + usize::from(TCP_CSUM_OFFSET);
            packet[field..field + 2].copy_from_slice(&pseudo.to_be_bytes());
        }
        return VirtioNetHdr::tcp4_super(
            csum_start,
            csum_start + tcp_header_len as u16,
            size as u16,
        );
    }
    if method.in_software() {
        return VirtioNetHdr::PLAIN;
    }
    match protocol {
        IpProtocol::Tcp => VirtioNetHdr::partial_checksum(csum_start, TCP_CSUM_OFFSET),
        IpProtocol::Udp => VirtioNetHdr::partial_checksum(csum_start, UDP_CSUM_OFFSET),
        _ => VirtioNetHdr::PLAIN,
    }
}

/// The wire segments a TCP payload of `payload_len` bytes stands for when
/// cut into `segment_size`-byte pieces (at least one).
pub fn wire_segments(payload_len: usize, segment_size: usize) -> usize {
    payload_len.div_ceil(segment_size.max(1)).max(1)
}

#[cfg(test)]
#[path = "offload_tests.rs"]
mod tests;
