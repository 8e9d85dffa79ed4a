//! Packets on the wire: for each protocol a zero-copy view
//! (`Packet<T: AsRef<[u8]>>`, checked with `new_checked`/`check_len` before
//! any field is read) and a `Repr` (the parsed, owned meaning) with `parse`
//! and `emit`, in smoltcp's style. Checksums live in a
//! module of their own, with the variants issue 19 switches between.
//!
//! Modules: [`checksum`] (the variants and the pseudo-header sum),
//! [`ethernet`], [`arp`], [`ipv4`] (addresses, CIDR, the header), [`icmp`]
//! (echo), [`udp`], [`tcp`] (the view, its options, and the
//! [`tcp::TcpRepr`] every TCP module shares), and [`seq`] (sequence-number
//! arithmetic). A `Repr::parse` that computes a checksum takes the
//! [`ChecksumMethod`] to verify with, and its `emit` the one to fill with.

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmp;
pub mod ipv4;
pub mod seq;
pub mod tcp;
pub mod udp;

pub use arp::{ArpOperation, ArpPacket, ArpRepr};
pub use checksum::ChecksumMethod;
pub use ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr};
pub use icmp::{Icmpv4Packet, Icmpv4Repr};
pub use ipv4::{IpProtocol, Ipv4Address, Ipv4Cidr, Ipv4Packet, Ipv4Repr};
pub use seq::SeqNumber;
pub use tcp::{TcpControl, TcpRepr};
pub use tcp::{TcpOption, TcpPacket};
pub use udp::{UdpPacket, UdpRepr};

/// Why bytes are not a valid packet of the protocol asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes than the header (or a length field) says there are.
    #[error("truncated: {0}")]
    Truncated(&'static str),
    /// A field holds a value the protocol does not allow.
    #[error("malformed: {0}")]
    Malformed(&'static str),
    /// The checksum does not verify.
    #[error("bad checksum")]
    Checksum,
    /// A valid packet of a kind this stack does not handle.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
}
