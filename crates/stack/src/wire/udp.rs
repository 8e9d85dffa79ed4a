//! UDP (RFC 768) over IPv4: the zero-copy view and its `Repr`, with the
//! checksum over the pseudo-header by the chosen [`ChecksumMethod`].

use byteorder::{ByteOrder, NetworkEndian};

use super::checksum::{self, ChecksumMethod};
use super::ipv4::{IpProtocol, Ipv4Address};
use super::WireError;

/// The UDP header's length.
pub const UDP_HEADER_LEN: usize = 8;

/// A zero-copy view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// A view over `buffer` without checking it (getters may panic until
    /// [`UdpPacket::check_len`] has passed).
    pub fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// A view over `buffer`, refused unless [`UdpPacket::check_len`] passes.
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Whether the buffer holds the header and the length field's bytes
    /// (the field at least 8).
    pub fn check_len(&self) -> Result<(), WireError> {
        let buffer_len = self.buffer.as_ref().len();
        if buffer_len < UDP_HEADER_LEN {
            return Err(WireError::Truncated("udp header"));
        }
        let field_len = usize::from(self.len());
        if field_len < UDP_HEADER_LEN {
            return Err(WireError::Malformed("udp length below 8"));
        }
        if buffer_len < field_len {
            return Err(WireError::Truncated("udp payload"));
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

    /// The source port.
    pub fn src_port(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[0..2])
    }

    /// The destination port.
    pub fn dst_port(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[2..4])
    }

    /// The length field: header plus payload.
    pub fn len(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[4..6])
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= UDP_HEADER_LEN
    }

    /// The checksum field (0: the sender computed none).
    pub fn checksum(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[6..8])
    }

    /// The payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.data()[UDP_HEADER_LEN..usize::from(self.len())]
    }

    /// Whether the checksum over pseudo-header, header and payload
    /// verifies by `method` (true when the field is 0, "none", or when the
    /// device offloads).
    pub fn verify_checksum(
        &self,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
    ) -> bool {
        if !method.in_software() || self.checksum() == 0 {
            return true;
        }
        let len = self.len();
        let pseudo = checksum::pseudo_header_sum(src.0, dst.0, IpProtocol::Udp.into(), len);
        let sum = method.sum(&self.data()[..usize::from(len)]);
        checksum::combine(pseudo, sum) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Sets the source port.
    pub fn set_src_port(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[0..2], value);
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[2..4], value);
    }

    /// Sets the length field.
    pub fn set_len(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[4..6], value);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[6..8], value);
    }

    /// The payload, to write (up to the length field).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.data_mut()[UDP_HEADER_LEN..end]
    }

    /// Writes the checksum by `method`: the full one's complement (0
    /// sent as 0xFFFF, RFC 768), or under offload the pseudo-header sum
    /// the device completes.
    pub fn fill_checksum(&mut self, src: Ipv4Address, dst: Ipv4Address, method: ChecksumMethod) {
        let len = self.len();
        let pseudo = checksum::pseudo_header_sum(src.0, dst.0, IpProtocol::Udp.into(), len);
        if !method.in_software() {
            self.set_checksum(pseudo);
            return;
        }
        self.set_checksum(0);
        let sum = checksum::combine(pseudo, method.sum(&self.data()[..usize::from(len)]));
        let field = checksum::finish(sum);
        self.set_checksum(if field == 0 { 0xffff } else { field });
    }
}

/// A UDP datagram's meaning, the payload borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// The payload.
    pub payload: &'a [u8],
}

impl<'a> UdpRepr<'a> {
    /// The datagram a checked packet carries between `src` and `dst`, its
    /// checksum verified by `method`; destination port 0 is malformed.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &UdpPacket<&'a T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
    ) -> Result<UdpRepr<'a>, WireError> {
        packet.check_len()?;
        if packet.dst_port() == 0 {
            return Err(WireError::Malformed("udp destination port 0"));
        }
        if !packet.verify_checksum(src, dst, method) {
            return Err(WireError::Checksum);
        }
        let payload = &packet.buffer.as_ref()[UDP_HEADER_LEN..usize::from(packet.len())];
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload,
        })
    }

    /// The datagram's length: header plus payload.
    pub fn buffer_len(&self) -> usize {
        UDP_HEADER_LEN + self.payload.len()
    }

    /// Writes the datagram and its checksum by `method` (panics if the
    /// buffer is shorter than [`UdpRepr::buffer_len`], or the datagram
    /// longer than 65535 bytes).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut UdpPacket<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
    ) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_len(u16::try_from(self.buffer_len()).expect("udp datagram over 64 KiB"));
        packet.payload_mut().copy_from_slice(self.payload);
        packet.fill_checksum(src, dst, method);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv4Address = Ipv4Address::new(10, 79, 0, 1);
    const DST: Ipv4Address = Ipv4Address::new(10, 79, 0, 2);

    /// A one-byte datagram 10.79.0.1:40000 → 10.79.0.2:9, "x", emitted
    /// with `method`.
    fn datagram(method: ChecksumMethod) -> Vec<u8> {
        let repr = UdpRepr {
            src_port: 40000,
            dst_port: 9,
            payload: b"x",
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(
            &mut UdpPacket::new_unchecked(&mut buf[..]),
            SRC,
            DST,
            method,
        );
        buf
    }

    /// A datagram Linux 6.18 sent into a TUN device (`IFF_TUN|IFF_NO_PI`,
    /// 10.78.0.1/24, in a namespace) from 10.78.0.1:40000 to 10.78.0.2:9,
    /// payload "tcplab udp", read from the TUN fd on 2026-11-25. The IP
    /// header was `45 00 00 26 2d dc 40 00 40 11 f8 4c 0a 4e 00 01 0a 4e 00 02`.
    const LINUX_DATAGRAM: [u8; 18] = [
        0x9c, 0x40, 0x00, 0x09, 0x00, 0x12, 0x83, 0xca, 0x74, 0x63, 0x70, 0x6c, 0x61, 0x62, 0x20,
        0x75, 0x64, 0x70,
    ];

    #[test]
    fn parses_a_linux_datagram_and_emits_it_back() {
        let (src, dst) = (
            Ipv4Address::new(10, 78, 0, 1),
            Ipv4Address::new(10, 78, 0, 2),
        );
        let packet = UdpPacket::new_checked(&LINUX_DATAGRAM[..]).unwrap();
        let repr = UdpRepr::parse(&packet, src, dst, ChecksumMethod::Bytewise).unwrap();
        assert_eq!(
            repr,
            UdpRepr {
                src_port: 40000,
                dst_port: 9,
                payload: b"tcplab udp"
            }
        );
        let mut out = [0u8; 18];
        repr.emit(
            &mut UdpPacket::new_unchecked(&mut out[..]),
            src,
            dst,
            ChecksumMethod::Rfc1071,
        );
        assert_eq!(out, LINUX_DATAGRAM);
        let other = Ipv4Address::new(10, 78, 0, 3);
        let err = UdpRepr::parse(&packet, src, other, ChecksumMethod::Rfc1071).unwrap_err();
        assert_eq!(err, WireError::Checksum, "the pseudo-header counts");
    }

    #[test]
    fn every_software_method_writes_the_same_checksum() {
        let reference = datagram(ChecksumMethod::Bytewise);
        // Pseudo-header 0a4f+0001+0a4f+0002+0011+0009 = 0x14bb, header
        // 9c40+0009+0009, payload 7800: sum 0x290e, checksum 0xd6f1 (by hand).
        assert_eq!(&reference[6..8], &[0xd6, 0xf1]);
        assert_eq!(datagram(ChecksumMethod::Rfc1071), reference);
        assert_eq!(datagram(ChecksumMethod::Incremental), reference);
        let packet = UdpPacket::new_checked(&reference[..]).unwrap();
        let repr = UdpRepr::parse(&packet, SRC, DST, ChecksumMethod::Rfc1071).unwrap();
        assert_eq!(repr.payload, b"x");
        assert_eq!(repr.src_port, 40000);
    }

    #[test]
    fn offload_leaves_the_pseudo_header_sum_and_skips_verification() {
        let mut buf = datagram(ChecksumMethod::Offload);
        // 0x0a4f * 2 + 0x0001 + 0x0002 + 0x0011 + 0x0009 = 0x14bb.
        assert_eq!(&buf[6..8], &[0x14, 0xbb]);
        buf[8] ^= 0xff;
        let packet = UdpPacket::new_checked(&buf[..]).unwrap();
        assert!(UdpRepr::parse(&packet, SRC, DST, ChecksumMethod::Offload).is_ok());
        assert_eq!(
            UdpRepr::parse(&packet, SRC, DST, ChecksumMethod::Rfc1071),
            Err(WireError::Checksum)
        );
    }

    #[test]
    fn a_zero_checksum_means_none_and_lengths_are_checked() {
        let mut buf = datagram(ChecksumMethod::Rfc1071);
        buf[6] = 0;
        buf[7] = 0;
        let packet = UdpPacket::new_checked(&buf[..]).unwrap();
        assert!(UdpRepr::parse(&packet, SRC, DST, ChecksumMethod::Bytewise).is_ok());
        assert_eq!(
            UdpPacket::new_checked(&buf[..8]).unwrap_err(),
            WireError::Truncated("udp payload")
        );
        buf[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&buf[..]).unwrap_err(),
            WireError::Malformed("udp length below 8")
        );
    }
}
