//! Ethernet II frames (the 14-byte header TAP devices carry; the FCS is
//! stripped by the device): a zero-copy view and its `Repr`.

use byteorder::{ByteOrder, NetworkEndian};
use std::fmt;

use super::WireError;

/// A 48-bit Ethernet (MAC) address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct EthernetAddress(pub [u8; 6]);

impl EthernetAddress {
    /// ff:ff:ff:ff:ff:ff, where ARP requests go.
    pub const BROADCAST: EthernetAddress = EthernetAddress([0xff; 6]);

    /// The address in the first six bytes of `data` (panics if shorter).
    pub fn from_bytes(data: &[u8]) -> EthernetAddress {
        let mut bytes = [0u8; 6];
        bytes.copy_from_slice(&data[..6]);
        EthernetAddress(bytes)
    }

    /// The six bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether this is the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// Whether the group bit is set (multicast, or broadcast).
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 0x01 != 0
    }

    /// Whether this can be a station's own address: not multicast.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Display for EthernetAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            b[0], b[1], b[2], b[3], b[4], b[5]
        )
    }
}

/// The EtherType field: what the frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EtherType {
    /// 0x0800.
    Ipv4,
    /// 0x0806.
    Arp,
    /// 0x86dd (recognised so it can be counted, not handled).
    Ipv6,
    /// Anything else.
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> EtherType {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86dd => EtherType::Ipv6,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> u16 {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Unknown(other) => other,
        }
    }
}

/// A zero-copy view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

/// The Ethernet II header's length.
pub const ETHERNET_HEADER_LEN: usize = 14;

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// A view over `buffer` without checking its length (getters may panic
    /// until [`EthernetFrame::check_len`] has passed).
    pub fn new_unchecked(buffer: T) -> EthernetFrame<T> {
        EthernetFrame { buffer }
    }

    /// A view over `buffer`, refused if too short for the header.
    pub fn new_checked(buffer: T) -> Result<EthernetFrame<T>, WireError> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Whether the buffer holds the whole header.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < ETHERNET_HEADER_LEN {
            return Err(WireError::Truncated("ethernet header"));
        }
        Ok(())
    }

    /// The buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination address.
    pub fn dst_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[0..6])
    }

    /// The source address.
    pub fn src_addr(&self) -> EthernetAddress {
        EthernetAddress::from_bytes(&self.buffer.as_ref()[6..12])
    }

    /// The EtherType.
    pub fn ethertype(&self) -> EtherType {
        NetworkEndian::read_u16(&self.buffer.as_ref()[12..14]).into()
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[ETHERNET_HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[0..6].copy_from_slice(&addr.0);
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, addr: EthernetAddress) {
        self.buffer.as_mut()[6..12].copy_from_slice(&addr.0);
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        NetworkEndian::write_u16(&mut self.buffer.as_mut()[12..14], ethertype.into());
    }

    /// The bytes after the header, to write the next layer into.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ETHERNET_HEADER_LEN..]
    }
}

/// An Ethernet II header's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Source address.
    pub src_addr: EthernetAddress,
    /// Destination address.
    pub dst_addr: EthernetAddress,
    /// What the frame carries.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// The header of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> Result<EthernetRepr, WireError> {
        frame.check_len()?;
        Ok(EthernetRepr {
            src_addr: frame.src_addr(),
            dst_addr: frame.dst_addr(),
            ethertype: frame.ethertype(),
        })
    }

    /// The header's length.
    pub fn buffer_len(&self) -> usize {
        ETHERNET_HEADER_LEN
    }

    /// Writes the header (panics if the buffer is shorter than it).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_src_addr(self.src_addr);
        frame.set_dst_addr(self.dst_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ARP request Linux broadcast on a veth in a namespace
    /// (`tcpdump -e -xx -i tlwb arp`, 2026-11-25; the ARP body is checked
    /// in `arp.rs`).
    const LINUX_ARP_REQUEST_FRAME: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x08, 0x06, 0x00,
        0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x0a, 0x4f,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0a, 0x4f, 0x00, 0x02,
    ];

    #[test]
    fn parses_a_linux_frame_and_emits_it_back() {
        let frame = EthernetFrame::new_checked(&LINUX_ARP_REQUEST_FRAME[..]).unwrap();
        let repr = EthernetRepr::parse(&frame).unwrap();
        assert!(repr.dst_addr.is_broadcast());
        assert_eq!(repr.src_addr, EthernetAddress([2, 0, 0, 0, 0, 0x0a]));
        assert!(repr.src_addr.is_unicast());
        assert_eq!(repr.src_addr.to_string(), "02:00:00:00:00:0a");
        assert_eq!(repr.ethertype, EtherType::Arp);
        assert_eq!(frame.payload().len(), 28);
        let mut out = [0u8; 14];
        repr.emit(&mut EthernetFrame::new_unchecked(&mut out[..]));
        assert_eq!(out, LINUX_ARP_REQUEST_FRAME[..14]);
    }

    #[test]
    fn a_short_frame_is_truncated() {
        assert_eq!(
            EthernetFrame::new_checked(&LINUX_ARP_REQUEST_FRAME[..13]).unwrap_err(),
            WireError::Truncated("ethernet header")
        );
    }
}
