//! IPv4 (RFC 791): addresses, CIDR prefixes, the zero-copy header view
//! and its `Repr`. Options are skipped but counted
//! ([`Ipv4Repr::options_len`]); fragments are described (DF, MF, offset)
//! and left to the interface to reassemble or drop.

use byteorder::{ByteOrder, NetworkEndian};
use std::fmt;

use super::checksum::{self, ChecksumMethod};
use super::WireError;

/// An IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Ipv4Address(pub [u8; 4]);

impl Ipv4Address {
    /// 0.0.0.0.
    pub const UNSPECIFIED: Ipv4Address = Ipv4Address([0; 4]);
    /// 255.255.255.255.
    pub const BROADCAST: Ipv4Address = Ipv4Address([255; 4]);

    /// a.b.c.d.
    pub const fn new(a: u8, b: u8, c: u8, d: u8) -> Ipv4Address {
        Ipv4Address([a, b, c, d])
    }

    /// The address in the first four bytes of `data` (panics if shorter).
    pub fn from_bytes(data: &[u8]) -> Ipv4Address {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(&data[..4]);
        Ipv4Address(bytes)
    }

    /// The four bytes.
    pub fn octets(&self) -> [u8; 4] {
        self.0
    }

    /// The address as a host-order integer, for masks and routing keys.
    pub fn to_bits(self) -> u32 {
        u32::from_be_bytes(self.0)
    }

    /// The address of a host-order integer.
    pub fn from_bits(bits: u32) -> Ipv4Address {
        Ipv4Address(bits.to_be_bytes())
    }

    /// Whether this is 0.0.0.0.
    pub fn is_unspecified(&self) -> bool {
        *self == Self::UNSPECIFIED
    }

    /// Whether this is the limited broadcast 255.255.255.255.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether this is in 224.0.0.0/4.
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0xf0 == 0xe0
    }

    /// Whether this is in 127.0.0.0/8.
    pub fn is_loopback(&self) -> bool {
        self.0[0] == 127
    }

    /// Whether this can be a host's own address.
    pub fn is_unicast(&self) -> bool {
        !(self.is_unspecified() || self.is_broadcast() || self.is_multicast())
    }
}

impl From<std::net::Ipv4Addr> for Ipv4Address {
    fn from(addr: std::net::Ipv4Addr) -> Ipv4Address {
        Ipv4Address(addr.octets())
    }
}

impl From<Ipv4Address> for std::net::Ipv4Addr {
    fn from(addr: Ipv4Address) -> std::net::Ipv4Addr {
        std::net::Ipv4Addr::from(addr.0)
    }
}

impl fmt::Display for Ipv4Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// An address with a prefix length: an interface's address and subnet,
/// or a route's destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    address: Ipv4Address,
    prefix_len: u8,
}

impl Ipv4Cidr {
    /// `address/prefix_len`, refused when the prefix is longer than 32.
    pub fn new(address: Ipv4Address, prefix_len: u8) -> Result<Ipv4Cidr, WireError> {
        if prefix_len > 32 {
            return Err(WireError::Malformed("ipv4 prefix longer than 32"));
        }
        Ok(Ipv4Cidr {
            address,
            prefix_len,
        })
    }

    /// The address as given.
    pub fn address(&self) -> Ipv4Address {
        self.address
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u8 {
        self.prefix_len
    }

    /// The mask of the prefix as an address (255.255.255.0 for /24).
    pub fn netmask(&self) -> Ipv4Address {
        Ipv4Address::from_bits(self.mask_bits())
    }

    fn mask_bits(&self) -> u32 {
        u32::MAX
            .checked_shl(32 - u32::from(self.prefix_len))
            .unwrap_or(0)
    }

    /// The prefix with the host bits cleared.
    pub fn network(&self) -> Ipv4Cidr {
        Ipv4Cidr {
            address: Ipv4Address::from_bits(self.address.to_bits() & self.mask_bits()),
            prefix_len: self.prefix_len,
        }
    }

    /// The subnet's directed broadcast (None for /31 and /32, which have none).
    pub fn broadcast(&self) -> Option<Ipv4Address> {
        if self.prefix_len >= 31 {
            return None;
        }
        Some(Ipv4Address::from_bits(
            self.address.to_bits() | !self.mask_bits(),
        ))
    }

    /// Whether `addr` is inside the prefix.
    pub fn contains_addr(&self, addr: &Ipv4Address) -> bool {
        (addr.to_bits() ^ self.address.to_bits()) & self.mask_bits() == 0
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix_len)
    }
}

/// The protocol field: what the datagram carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    /// 1.
    Icmp,
    /// 6.
    Tcp,
    /// 17.
    Udp,
    /// Anything else.
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> IpProtocol {
        match value {
            1 => IpProtocol::Icmp,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            other => IpProtocol::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> u8 {
        match value {
            IpProtocol::Icmp => 1,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Unknown(other) => other,
        }
    }
}

/// The fixed IPv4 header's length (without options).
pub const IPV4_HEADER_LEN: usize = 20;
/// The longest IPv4 header (IHL 15).
pub const IPV4_MAX_HEADER_LEN: usize = 60;

/// A zero-copy view of an IPv4 datagram.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// A view over `buffer` without checking it (getters may panic until
    /// [`Ipv4Packet::check_len`] has passed).
    pub fn new_unchecked(buffer: T) -> Ipv4Packet<T> {
        Ipv4Packet { buffer }
    }

    /// A view over `buffer`, refused unless [`Ipv4Packet::check_len`] passes.
    pub fn new_checked(buffer: T) -> Result<Ipv4Packet<T>, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Whether the buffer holds the fixed header, the header length IHL
    /// says (at least 20), and the total length (at least the header).
    /// Bytes past the total length (Ethernet padding) are allowed.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < IPV4_HEADER_LEN {
            return Err(WireError::Truncated("ipv4 header"));
        }
        if self.header_len() < IPV4_HEADER_LEN {
            return Err(WireError::Malformed("ipv4 header length below 20"));
        }
        if len < self.header_len() {
            return Err(WireError::Truncated("ipv4 options"));
        }
        if usize::from(self.total_len()) < self.header_len() {
            return Err(WireError::Malformed(
                "ipv4 total length below header length",
            ));
        }
        if len < usize::from(self.total_len()) {
            return Err(WireError::Truncated("ipv4 payload"));
        }
        Ok(())
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn data(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The version field (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.data()[0] >> 4
    }

    /// The header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.data()[0] & 0x0f) * 4
    }

    /// The DSCP and ECN byte (the old TOS).
    pub fn dscp_ecn(&self) -> u8 {
        self.data()[1]
    }

    /// The total length: header plus payload.
    pub fn total_len(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[2..4])
    }

    /// The identification field.
    pub fn ident(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[4..6])
    }

    /// Don't Fragment.
    pub fn dont_frag(&self) -> bool {
        self.data()[6] & 0x40 != 0
    }

    /// More Fragments.
    pub fn more_frags(&self) -> bool {
        self.data()[6] & 0x20 != 0
    }

    /// The reserved flag bit (must be zero).
    pub fn reserved_flag(&self) -> bool {
        self.data()[6] & 0x80 != 0
    }

    /// The fragment offset in bytes (the field × 8).
    pub fn frag_offset(&self) -> u16 {
        (NetworkEndian::read_u16(&self.data()[6..8]) & 0x1fff) << 3
    }

    /// Time to live.
    pub fn hop_limit(&self) -> u8 {
        self.data()[8]
    }

    /// The protocol carried.
    pub fn next_header(&self) -> IpProtocol {
        self.data()[9].into()
    }

    /// The header checksum field.
    pub fn checksum(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[10..12])
    }

    /// The source address.
    pub fn src_addr(&self) -> Ipv4Address {
        Ipv4Address::from_bytes(&self.data()[12..16])
    }

    /// The destination address.
    pub fn dst_addr(&self) -> Ipv4Address {
        Ipv4Address::from_bytes(&self.data()[16..20])
    }

    /// The options' bytes (empty when IHL is 5).
    pub fn options(&self) -> &[u8] {
        &self.data()[IPV4_HEADER_LEN..self.header_len()]
    }

    /// The payload: from the header's end to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.data()[self.header_len()..usize::from(self.total_len())]
    }

    /// Whether the header checksum verifies, summed by `method`
    /// (always summed: no device offloads the IPv4 header here).
    pub fn verify_checksum(&self, method: ChecksumMethod) -> bool {
        method.sum(&self.data()[..self.header_len()]) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Sets version 4 and the header length (a multiple of 4, 20 to 60).
    pub fn set_version_and_header_len(&mut self, header_len: usize) {
        debug_assert!(header_len & 3 == 0 && (20..=60).contains(&header_len));
        self.data_mut()[0] = 0x40 | (header_len / 4) as u8;
    }

    /// Sets the DSCP and ECN byte.
    pub fn set_dscp_ecn(&mut self, value: u8) {
        self.data_mut()[1] = value;
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[2..4], value);
    }

    /// Sets the identification field.
    pub fn set_ident(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[4..6], value);
    }

    /// Sets the flags (reserved bit clear) and the offset in bytes
    /// (a multiple of 8).
    pub fn set_frag(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        debug_assert!(offset & 7 == 0);
        let field = (u16::from(dont_frag) << 14) | (u16::from(more_frags) << 13) | (offset >> 3);
        NetworkEndian::write_u16(&mut self.data_mut()[6..8], field);
    }

    /// Sets the time to live.
    pub fn set_hop_limit(&mut self, value: u8) {
        self.data_mut()[8] = value;
    }

    /// Sets the protocol carried.
    pub fn set_next_header(&mut self, value: IpProtocol) {
        self.data_mut()[9] = value.into();
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[10..12], value);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: Ipv4Address) {
        self.data_mut()[12..16].copy_from_slice(&addr.0);
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: Ipv4Address) {
        self.data_mut()[16..20].copy_from_slice(&addr.0);
    }

    /// Computes and writes the header checksum by `method`.
    pub fn fill_checksum(&mut self, method: ChecksumMethod) {
        self.set_checksum(0);
        let header_len = self.header_len();
        let sum = method.sum(&self.data()[..header_len]);
        self.set_checksum(checksum::finish(sum));
    }

    /// Lowers the TTL by one (forwarding) and fixes the checksum: by
    /// RFC 1624's update under [`ChecksumMethod::Incremental`], by summing
    /// the header again otherwise.
    pub fn decrement_hop_limit(&mut self, method: ChecksumMethod) {
        let old_word = NetworkEndian::read_u16(&self.data()[8..10]);
        let ttl = self.hop_limit().saturating_sub(1);
        self.set_hop_limit(ttl);
        if method == ChecksumMethod::Incremental {
            let new_word = NetworkEndian::read_u16(&self.data()[8..10]);
            let updated = checksum::update_incremental(self.checksum(), old_word, new_word);
            self.set_checksum(updated);
        } else {
            self.fill_checksum(method);
        }
    }

    /// The options' bytes, to write.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.data_mut()[IPV4_HEADER_LEN..end]
    }

    /// The payload, to write (up to the total length).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (start, end) = (self.header_len(), usize::from(self.total_len()));
        &mut self.data_mut()[start..end]
    }
}

/// An IPv4 header's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src_addr: Ipv4Address,
    /// Destination address.
    pub dst_addr: Ipv4Address,
    /// The protocol carried.
    pub next_header: IpProtocol,
    /// The payload's length (total length minus header).
    pub payload_len: usize,
    /// Time to live.
    pub hop_limit: u8,
    /// DSCP and ECN.
    pub dscp_ecn: u8,
    /// Identification.
    pub ident: u16,
    /// Don't Fragment.
    pub dont_frag: bool,
    /// More Fragments.
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// The options' length in bytes (a multiple of 4, at most 40): parsed
    /// options are skipped, not interpreted; emitted ones are zero bytes
    /// (End of Option List).
    pub options_len: usize,
}

impl Ipv4Repr {
    /// The header of a datagram, checked: version 4, lengths, the reserved
    /// flag clear, and the checksum (verified by `method`).
    pub fn parse<T: AsRef<[u8]>>(
        packet: &Ipv4Packet<T>,
        method: ChecksumMethod,
    ) -> Result<Ipv4Repr, WireError> {
        packet.check_len()?;
        if packet.version() != 4 {
            return Err(WireError::Malformed("ip version is not 4"));
        }
        if packet.reserved_flag() {
            return Err(WireError::Malformed("ipv4 reserved flag set"));
        }
        if !packet.verify_checksum(method) {
            return Err(WireError::Checksum);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len: packet.payload().len(),
            hop_limit: packet.hop_limit(),
            dscp_ecn: packet.dscp_ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            options_len: packet.header_len() - IPV4_HEADER_LEN,
        })
    }

    /// Whether this datagram is a fragment (MF set, or an offset).
    pub fn is_fragment(&self) -> bool {
        self.more_frags || self.frag_offset != 0
    }

    /// The header's length.
    pub fn header_len(&self) -> usize {
        IPV4_HEADER_LEN + self.options_len
    }

    /// The whole datagram's length: header plus payload.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Writes the header, options zeroed, and its checksum by `method`
    /// (panics if the buffer is shorter than the header, or if
    /// `options_len` is not a multiple of 4 up to 40).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Ipv4Packet<T>,
        method: ChecksumMethod,
    ) {
        assert!(
            self.options_len & 3 == 0 && self.options_len <= 40,
            "ipv4 options length"
        );
        packet.set_version_and_header_len(self.header_len());
        packet.set_dscp_ecn(self.dscp_ecn);
        packet.set_total_len(u16::try_from(self.buffer_len()).expect("ipv4 datagram over 64 KiB"));
        packet.set_ident(self.ident);
        packet.set_frag(self.dont_frag, self.more_frags, self.frag_offset);
        packet.set_hop_limit(self.hop_limit);
        packet.set_next_header(self.next_header);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        let header_len = self.header_len();
        packet.data_mut()[IPV4_HEADER_LEN..header_len].fill(0);
        packet.fill_checksum(method);
    }
}

#[cfg(test)]
#[path = "ipv4_tests.rs"]
mod tests;
