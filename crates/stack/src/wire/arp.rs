//! ARP (RFC 826) for IPv4 over Ethernet: a zero-copy view of any ARP
//! packet, and the `Repr` of the one kind the stack handles.

use byteorder::{ByteOrder, NetworkEndian};

use super::ethernet::EthernetAddress;
use super::ipv4::Ipv4Address;
use super::WireError;

/// ARP's operation field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArpOperation {
    /// 1: who has this protocol address?
    Request,
    /// 2: I have it, at this hardware address.
    Reply,
    /// Anything else (RARP, InARP…).
    Unknown(u16),
}

impl From<u16> for ArpOperation {
    fn from(value: u16) -> ArpOperation {
        match value {
            1 => ArpOperation::Request,
            2 => ArpOperation::Reply,
            other => ArpOperation::Unknown(other),
        }
    }
}

impl From<ArpOperation> for u16 {
    fn from(value: ArpOperation) -> u16 {
        match value {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
            ArpOperation::Unknown(other) => other,
        }
    }
}

/// The fixed part of an ARP packet, before the addresses.
const ARP_FIXED_LEN: usize = 8;
/// Hardware type Ethernet.
const HTYPE_ETHERNET: u16 = 1;
/// Protocol type IPv4 (its EtherType).
const PTYPE_IPV4: u16 = 0x0800;

/// A zero-copy view of an ARP packet.
#[derive(Debug, Clone)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// A view over `buffer` without checking it (getters may panic until
    /// [`ArpPacket::check_len`] has passed).
    pub fn new_unchecked(buffer: T) -> ArpPacket<T> {
        ArpPacket { buffer }
    }

    /// A view over `buffer`, refused unless [`ArpPacket::check_len`] passes.
    pub fn new_checked(buffer: T) -> Result<ArpPacket<T>, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Whether the buffer holds the fixed part and the four addresses
    /// whose lengths it declares.
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < ARP_FIXED_LEN {
            return Err(WireError::Truncated("arp header"));
        }
        if len < ARP_FIXED_LEN + 2 * (self.hardware_len() + self.protocol_len()) {
            return Err(WireError::Truncated("arp addresses"));
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

    /// The hardware type (1 for Ethernet).
    pub fn hardware_type(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[0..2])
    }

    /// The protocol type (0x0800 for IPv4).
    pub fn protocol_type(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[2..4])
    }

    /// The hardware address length.
    pub fn hardware_len(&self) -> usize {
        usize::from(self.data()[4])
    }

    /// The protocol address length.
    pub fn protocol_len(&self) -> usize {
        usize::from(self.data()[5])
    }

    /// The operation.
    pub fn operation(&self) -> ArpOperation {
        NetworkEndian::read_u16(&self.data()[6..8]).into()
    }

    fn field(&self, index: usize) -> &[u8] {
        let (h, p) = (self.hardware_len(), self.protocol_len());
        let start = ARP_FIXED_LEN + [0, h, h + p, 2 * h + p][index];
        let len = if index & 1 == 0 { h } else { p };
        &self.data()[start..start + len]
    }

    /// The sender's hardware address.
    pub fn source_hardware_addr(&self) -> &[u8] {
        self.field(0)
    }

    /// The sender's protocol address.
    pub fn source_protocol_addr(&self) -> &[u8] {
        self.field(1)
    }

    /// The target's hardware address.
    pub fn target_hardware_addr(&self) -> &[u8] {
        self.field(2)
    }

    /// The target's protocol address.
    pub fn target_protocol_addr(&self) -> &[u8] {
        self.field(3)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Writes the fixed part: types, address lengths, operation.
    pub fn set_fixed(&mut self, htype: u16, ptype: u16, hlen: u8, plen: u8, op: ArpOperation) {
        let data = self.buffer.as_mut();
        NetworkEndian::write_u16(&mut data[0..2], htype);
        NetworkEndian::write_u16(&mut data[2..4], ptype);
        data[4] = hlen;
        data[5] = plen;
        NetworkEndian::write_u16(&mut data[6..8], op.into());
    }

    /// Writes the four addresses after the fixed part (their lengths must
    /// match the fixed part's).
    pub fn set_addrs(&mut self, sha: &[u8], spa: &[u8], tha: &[u8], tpa: &[u8]) {
        let mut at = ARP_FIXED_LEN;
        let data = self.buffer.as_mut();
        for field in [sha, spa, tha, tpa] {
            data[at..at + field.len()].copy_from_slice(field);
            at += field.len();
        }
    }
}

/// An ARP packet's meaning, for the one kind the stack speaks: IPv4 over
/// Ethernet, request or reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: ArpOperation,
    /// The sender's MAC.
    pub source_hardware_addr: EthernetAddress,
    /// The sender's IPv4 address.
    pub source_protocol_addr: Ipv4Address,
    /// The target's MAC (zero in a request).
    pub target_hardware_addr: EthernetAddress,
    /// The target's IPv4 address.
    pub target_protocol_addr: Ipv4Address,
}

/// The length of an ARP packet for IPv4 over Ethernet.
pub const ARP_ETHERNET_IPV4_LEN: usize = ARP_FIXED_LEN + 2 * (6 + 4);

impl ArpRepr {
    /// The meaning of a checked packet; other hardware or protocol types,
    /// address lengths or operations are `Unsupported`.
    pub fn parse<T: AsRef<[u8]>>(packet: &ArpPacket<T>) -> Result<ArpRepr, WireError> {
        packet.check_len()?;
        if packet.hardware_type() != HTYPE_ETHERNET
            || packet.protocol_type() != PTYPE_IPV4
            || packet.hardware_len() != 6
            || packet.protocol_len() != 4
        {
            return Err(WireError::Unsupported("arp other than ipv4 over ethernet"));
        }
        let operation = packet.operation();
        if let ArpOperation::Unknown(_) = operation {
            return Err(WireError::Unsupported("arp operation"));
        }
        Ok(ArpRepr {
            operation,
            source_hardware_addr: EthernetAddress::from_bytes(packet.source_hardware_addr()),
            source_protocol_addr: Ipv4Address::from_bytes(packet.source_protocol_addr()),
            target_hardware_addr: EthernetAddress::from_bytes(packet.target_hardware_addr()),
            target_protocol_addr: Ipv4Address::from_bytes(packet.target_protocol_addr()),
        })
    }

    /// The packet's length.
    pub fn buffer_len(&self) -> usize {
        ARP_ETHERNET_IPV4_LEN
    }

    /// Writes the packet (panics if the buffer is shorter than 28 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut ArpPacket<T>) {
        packet.set_fixed(HTYPE_ETHERNET, PTYPE_IPV4, 6, 4, self.operation);
        packet.set_addrs(
            &self.source_hardware_addr.0,
            &self.source_protocol_addr.0,
            &self.target_hardware_addr.0,
            &self.target_protocol_addr.0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ARP body of a request Linux broadcast on a veth in a namespace
    /// (`tcpdump -e -xx -i tlwb arp`, 2026-11-25: who-has 10.79.0.2 tell
    /// 10.79.0.1, from 02:00:00:00:00:0a).
    const LINUX_ARP_REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x0a,
        0x4f, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x4f, 0x00, 0x02,
    ];

    #[test]
    fn parses_a_linux_request_and_emits_it_back() {
        let packet = ArpPacket::new_checked(&LINUX_ARP_REQUEST[..]).unwrap();
        let repr = ArpRepr::parse(&packet).unwrap();
        assert_eq!(repr.operation, ArpOperation::Request);
        assert_eq!(
            repr.source_hardware_addr,
            EthernetAddress([2, 0, 0, 0, 0, 0x0a])
        );
        assert_eq!(repr.source_protocol_addr, Ipv4Address::new(10, 79, 0, 1));
        assert_eq!(repr.target_hardware_addr, EthernetAddress([0; 6]));
        assert_eq!(repr.target_protocol_addr, Ipv4Address::new(10, 79, 0, 2));
        let mut out = [0u8; ARP_ETHERNET_IPV4_LEN];
        repr.emit(&mut ArpPacket::new_unchecked(&mut out[..]));
        assert_eq!(out, LINUX_ARP_REQUEST);
    }

    #[test]
    fn other_kinds_are_unsupported_and_short_ones_truncated() {
        let mut ipv6 = LINUX_ARP_REQUEST;
        ipv6[2] = 0x86;
        ipv6[3] = 0xdd;
        let packet = ArpPacket::new_checked(&ipv6[..]).unwrap();
        assert!(matches!(
            ArpRepr::parse(&packet),
            Err(WireError::Unsupported(_))
        ));
        let mut rarp = LINUX_ARP_REQUEST;
        rarp[7] = 3;
        let packet = ArpPacket::new_checked(&rarp[..]).unwrap();
        assert_eq!(
            ArpRepr::parse(&packet),
            Err(WireError::Unsupported("arp operation"))
        );
        let err = ArpPacket::new_checked(&LINUX_ARP_REQUEST[..27]).unwrap_err();
        assert_eq!(err, WireError::Truncated("arp addresses"));
        let err = ArpPacket::new_checked(&LINUX_ARP_REQUEST[..7]).unwrap_err();
        assert_eq!(err, WireError::Truncated("arp header"));
    }
}
