//! ICMP for IPv4 (RFC 792): the zero-copy view of any message, and the
//! `Repr` of echo request and reply, what `ping` needs. Other message
//! types are parsed as [`WireError::Unsupported`].

use byteorder::{ByteOrder, NetworkEndian};

use super::checksum::{self, ChecksumMethod};
use super::WireError;

/// The ICMP header's length (type, code, checksum, and the four bytes
/// that hold an echo's identifier and sequence number).
pub const ICMP_HEADER_LEN: usize = 8;

/// Echo reply's type.
const ECHO_REPLY: u8 = 0;
/// Echo request's type.
const ECHO_REQUEST: u8 = 8;

/// A zero-copy view of an ICMPv4 message.
#[derive(Debug, Clone)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// A view over `buffer` without checking it (getters may panic until
    /// [`Icmpv4Packet::check_len`] has passed).
    pub fn new_unchecked(buffer: T) -> Icmpv4Packet<T> {
        Icmpv4Packet { buffer }
    }

    /// A view over `buffer`, refused unless [`Icmpv4Packet::check_len`] passes.
    pub fn new_checked(buffer: T) -> Result<Icmpv4Packet<T>, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Whether the buffer holds the 8-byte header.
    pub fn check_len(&self) -> Result<(), WireError> {
        if self.buffer.as_ref().len() < ICMP_HEADER_LEN {
            return Err(WireError::Truncated("icmp header"));
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

    /// The message type.
    pub fn msg_type(&self) -> u8 {
        self.data()[0]
    }

    /// The message code.
    pub fn msg_code(&self) -> u8 {
        self.data()[1]
    }

    /// The checksum field.
    pub fn checksum(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[2..4])
    }

    /// An echo's identifier.
    pub fn echo_ident(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[4..6])
    }

    /// An echo's sequence number.
    pub fn echo_seq_no(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[6..8])
    }

    /// The bytes after the header (an echo's data).
    pub fn data_bytes(&self) -> &[u8] {
        &self.data()[ICMP_HEADER_LEN..]
    }

    /// Whether the checksum over the whole message verifies, by `method`
    /// (ICMP is never offloaded, so it is always summed).
    pub fn verify_checksum(&self, method: ChecksumMethod) -> bool {
        method.sum(self.data()) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    fn data_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Sets the message type.
    pub fn set_msg_type(&mut self, value: u8) {
        self.data_mut()[0] = value;
    }

    /// Sets the message code.
    pub fn set_msg_code(&mut self, value: u8) {
        self.data_mut()[1] = value;
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[2..4], value);
    }

    /// Sets an echo's identifier.
    pub fn set_echo_ident(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[4..6], value);
    }

    /// Sets an echo's sequence number.
    pub fn set_echo_seq_no(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[6..8], value);
    }

    /// The bytes after the header, to write.
    pub fn data_bytes_mut(&mut self) -> &mut [u8] {
        &mut self.data_mut()[ICMP_HEADER_LEN..]
    }

    /// Computes and writes the checksum over the whole buffer by `method`.
    pub fn fill_checksum(&mut self, method: ChecksumMethod) {
        self.set_checksum(0);
        let sum = method.sum(self.data());
        self.set_checksum(checksum::finish(sum));
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Turns a checked echo request into its reply in place (type 8 → 0,
    /// the rest kept, as a stack answering `ping` without copying does),
    /// fixing the checksum by RFC 1624's update under
    /// [`ChecksumMethod::Incremental`] and by summing again otherwise.
    pub fn make_echo_reply_in_place(&mut self, method: ChecksumMethod) {
        let old_word = NetworkEndian::read_u16(&self.data()[0..2]);
        self.set_msg_type(ECHO_REPLY);
        if method == ChecksumMethod::Incremental {
            let new_word = NetworkEndian::read_u16(&self.data()[0..2]);
            let updated = checksum::update_incremental(self.checksum(), old_word, new_word);
            self.set_checksum(updated);
        } else {
            self.fill_checksum(method);
        }
    }
}

/// An ICMP echo's meaning, the data borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Icmpv4Repr<'a> {
    /// Type 8: `ping` asking.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// The data to echo back.
        data: &'a [u8],
    },
    /// Type 0: the answer.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
        /// The echoed data.
        data: &'a [u8],
    },
}

impl<'a> Icmpv4Repr<'a> {
    /// The echo a checked message carries, its checksum verified by
    /// `method`; other types (or a nonzero code) are `Unsupported`.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &Icmpv4Packet<&'a T>,
        method: ChecksumMethod,
    ) -> Result<Icmpv4Repr<'a>, WireError> {
        packet.check_len()?;
        if !packet.verify_checksum(method) {
            return Err(WireError::Checksum);
        }
        let (ident, seq_no) = (packet.echo_ident(), packet.echo_seq_no());
        let data = &packet.buffer.as_ref()[ICMP_HEADER_LEN..];
        match (packet.msg_type(), packet.msg_code()) {
            (ECHO_REQUEST, 0) => Ok(Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            }),
            (ECHO_REPLY, 0) => Ok(Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data,
            }),
            _ => Err(WireError::Unsupported("icmp type other than echo")),
        }
    }

    /// The answer to an echo request: a reply with the same identifier,
    /// sequence number and data (None for a reply).
    pub fn reply(&self) -> Option<Icmpv4Repr<'a>> {
        match *self {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => Some(Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data,
            }),
            Icmpv4Repr::EchoReply { .. } => None,
        }
    }

    /// The message's length.
    pub fn buffer_len(&self) -> usize {
        match self {
            Icmpv4Repr::EchoRequest { data, .. } | Icmpv4Repr::EchoReply { data, .. } => {
                ICMP_HEADER_LEN + data.len()
            }
        }
    }

    /// Writes the message and its checksum by `method` (panics if the
    /// buffer's length differs from [`Icmpv4Repr::buffer_len`]).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut Icmpv4Packet<T>,
        method: ChecksumMethod,
    ) {
        assert_eq!(packet.data().len(), self.buffer_len(), "icmp buffer length");
        let (msg_type, ident, seq_no, data) = match *self {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => (ECHO_REQUEST, ident, seq_no, data),
            Icmpv4Repr::EchoReply {
                ident,
                seq_no,
                data,
            } => (ECHO_REPLY, ident, seq_no, data),
        };
        packet.set_msg_type(msg_type);
        packet.set_msg_code(0);
        packet.set_echo_ident(ident);
        packet.set_echo_seq_no(seq_no);
        packet.data_bytes_mut().copy_from_slice(data);
        packet.fill_checksum(method);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ICMP part of the echo request Linux sent into a TUN device
    /// (see `ipv4_tests.rs`: 10.78.0.1 → 10.78.0.2, ident 0x3720, seq 1,
    /// data "tcplab!!").
    const LINUX_ECHO_REQUEST: [u8; 16] = [
        0x08, 0x00, 0x59, 0x8b, 0x37, 0x20, 0x00, 0x01, 0x74, 0x63, 0x70, 0x6c, 0x61, 0x62, 0x21,
        0x21,
    ];

    #[test]
    fn parses_a_linux_echo_request_and_answers_it() {
        let packet = Icmpv4Packet::new_checked(&LINUX_ECHO_REQUEST[..]).unwrap();
        let repr = Icmpv4Repr::parse(&packet, ChecksumMethod::Bytewise).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::EchoRequest {
                ident: 0x3720,
                seq_no: 1,
                data: b"tcplab!!"
            }
        );
        let mut again = [0u8; 16];
        repr.emit(
            &mut Icmpv4Packet::new_unchecked(&mut again[..]),
            ChecksumMethod::Rfc1071,
        );
        assert_eq!(again, LINUX_ECHO_REQUEST);
        let reply = repr.reply().unwrap();
        let mut out = [0u8; 16];
        reply.emit(
            &mut Icmpv4Packet::new_unchecked(&mut out[..]),
            ChecksumMethod::Rfc1071,
        );
        assert_eq!(out[0], 0);
        // Type 8 → 0 changes the checksum by 0x0800 (RFC 1624's update).
        assert_eq!(NetworkEndian::read_u16(&out[2..4]), 0x598b + 0x0800);
        let parsed = Icmpv4Repr::parse(
            &Icmpv4Packet::new_checked(&out[..]).unwrap(),
            ChecksumMethod::Rfc1071,
        );
        assert_eq!(parsed.unwrap(), reply);
    }

    #[test]
    fn in_place_reply_incremental_matches_recomputation() {
        let mut patched = LINUX_ECHO_REQUEST;
        let mut summed = LINUX_ECHO_REQUEST;
        Icmpv4Packet::new_unchecked(&mut patched[..])
            .make_echo_reply_in_place(ChecksumMethod::Incremental);
        Icmpv4Packet::new_unchecked(&mut summed[..])
            .make_echo_reply_in_place(ChecksumMethod::Bytewise);
        assert_eq!(patched, summed);
        let packet = Icmpv4Packet::new_checked(&patched[..]).unwrap();
        let repr = Icmpv4Repr::parse(&packet, ChecksumMethod::Rfc1071).unwrap();
        assert_eq!(
            repr,
            Icmpv4Repr::EchoReply {
                ident: 0x3720,
                seq_no: 1,
                data: b"tcplab!!"
            }
        );
    }

    #[test]
    fn other_types_are_unsupported_and_bad_sums_refused() {
        // Destination unreachable, port unreachable, checksum filled.
        let mut unreachable = [3u8, 3, 0, 0, 0, 0, 0, 0];
        Icmpv4Packet::new_unchecked(&mut unreachable[..]).fill_checksum(ChecksumMethod::Rfc1071);
        let packet = Icmpv4Packet::new_checked(&unreachable[..]).unwrap();
        let err = Icmpv4Repr::parse(&packet, ChecksumMethod::Rfc1071).unwrap_err();
        assert_eq!(err, WireError::Unsupported("icmp type other than echo"));
        let mut corrupt = LINUX_ECHO_REQUEST;
        corrupt[9] ^= 0x20;
        let packet = Icmpv4Packet::new_checked(&corrupt[..]).unwrap();
        let err = Icmpv4Repr::parse(&packet, ChecksumMethod::Rfc1071).unwrap_err();
        assert_eq!(err, WireError::Checksum);
        let err = Icmpv4Packet::new_checked(&LINUX_ECHO_REQUEST[..7]).unwrap_err();
        assert_eq!(err, WireError::Truncated("icmp header"));
    }
}
