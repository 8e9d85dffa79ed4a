//! TCP segments. [`TcpRepr`] is what every TCP module of the stack shares:
//! the parsed header with its options, and the payload borrowed from the
//! packet. [`TcpPacket`] is the zero-copy view, [`TcpOption`] one option,
//! and [`TcpRepr::parse`]/[`TcpRepr::emit`] go between them.

use byteorder::{ByteOrder, NetworkEndian};

use super::checksum::{self, ChecksumMethod};
use super::ipv4::{IpProtocol, Ipv4Address};
use super::seq::SeqNumber;
use super::WireError;

/// The control flag a segment carries beyond ACK and PSH, at most one of
/// them (RFC 9293 never combines SYN, FIN and RST in a valid segment this
/// stack sends; a received one with several is dropped as malformed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TcpControl {
    /// No SYN, FIN or RST.
    #[default]
    None,
    /// SYN.
    Syn,
    /// FIN.
    Fin,
    /// RST.
    Rst,
}

impl TcpControl {
    /// Sequence space the flag takes (SYN and FIN take one each).
    pub fn len(self) -> usize {
        match self {
            TcpControl::Syn | TcpControl::Fin => 1,
            TcpControl::None | TcpControl::Rst => 0,
        }
    }

    /// Whether the flag takes no sequence space.
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
}

/// Up to three SACK blocks (RFC 2018), each `[left, right)`.
pub type SackBlocks = [Option<(SeqNumber, SeqNumber)>; 3];

/// A TCP segment's meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpRepr<'a> {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// SYN, FIN, RST or none.
    pub control: TcpControl,
    /// The sequence number of the first byte (or of the SYN/FIN).
    pub seq_number: SeqNumber,
    /// The acknowledgment number, when ACK is set.
    pub ack_number: Option<SeqNumber>,
    /// The window field as sent (unscaled).
    pub window_len: u16,
    /// PSH.
    pub push: bool,
    /// ECE (carried, not acted on).
    pub ece: bool,
    /// CWR (carried, not acted on).
    pub cwr: bool,
    /// The MSS option (SYN only).
    pub max_seg_size: Option<u16>,
    /// The window-scale option's shift (SYN only, RFC 7323).
    pub window_scale: Option<u8>,
    /// SACK-permitted (SYN only).
    pub sack_permitted: bool,
    /// SACK blocks.
    pub sack_ranges: SackBlocks,
    /// The timestamps option (TSval, TSecr), RFC 7323.
    pub timestamp: Option<(u32, u32)>,
    /// The payload.
    pub payload: &'a [u8],
}

impl<'a> TcpRepr<'a> {
    /// The sequence space the segment takes: payload plus SYN or FIN.
    pub fn segment_len(&self) -> usize {
        self.payload.len() + self.control.len()
    }

    /// A bare segment between two ports: no flags, no options, no payload.
    pub fn bare(src_port: u16, dst_port: u16, seq_number: SeqNumber) -> TcpRepr<'static> {
        TcpRepr {
            src_port,
            dst_port,
            control: TcpControl::None,
            seq_number,
            ack_number: None,
            window_len: 0,
            push: false,
            ece: false,
            cwr: false,
            max_seg_size: None,
            window_scale: None,
            sack_permitted: false,
            sack_ranges: [None; 3],
            timestamp: None,
            payload: &[],
        }
    }
}

/// The fixed TCP header's length (data offset 5).
pub const TCP_HEADER_LEN: usize = 20;
/// The longest TCP header (data offset 15): 40 bytes of options.
pub const TCP_MAX_HEADER_LEN: usize = 60;

const FLAG_FIN: u8 = 0x01;
const FLAG_SYN: u8 = 0x02;
const FLAG_RST: u8 = 0x04;
const FLAG_PSH: u8 = 0x08;
const FLAG_ACK: u8 = 0x10;
const FLAG_URG: u8 = 0x20;
const FLAG_ECE: u8 = 0x40;
const FLAG_CWR: u8 = 0x80;

/// A zero-copy view of a TCP segment (header, options, payload: the
/// whole buffer is the segment, as the IP layer hands it over).
#[derive(Debug, Clone)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// A view over `buffer` without checking it (getters may panic until
    /// [`TcpPacket::check_len`] has passed).
    pub fn new_unchecked(buffer: T) -> TcpPacket<T> {
        TcpPacket { buffer }
    }

    /// A view over `buffer`, refused unless [`TcpPacket::check_len`] passes.
    pub fn new_checked(buffer: T) -> Result<TcpPacket<T>, WireError> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Whether the buffer holds the fixed header and the options the data
    /// offset declares (the offset at least 5).
    pub fn check_len(&self) -> Result<(), WireError> {
        let len = self.buffer.as_ref().len();
        if len < TCP_HEADER_LEN {
            return Err(WireError::Truncated("tcp header"));
        }
        if self.header_len() < TCP_HEADER_LEN {
            return Err(WireError::Malformed("tcp data offset below 5"));
        }
        if len < self.header_len() {
            return Err(WireError::Truncated("tcp options"));
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

    /// The sequence number.
    pub fn seq_number(&self) -> SeqNumber {
        SeqNumber(NetworkEndian::read_u32(&self.data()[4..8]))
    }

    /// The acknowledgment number field (meaningful when ACK is set).
    pub fn ack_number(&self) -> SeqNumber {
        SeqNumber(NetworkEndian::read_u32(&self.data()[8..12]))
    }

    /// The header length in bytes (data offset × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.data()[12] >> 4) * 4
    }

    fn flag(&self, mask: u8) -> bool {
        self.data()[13] & mask != 0
    }

    /// FIN.
    pub fn fin(&self) -> bool {
        self.flag(FLAG_FIN)
    }

    /// SYN.
    pub fn syn(&self) -> bool {
        self.flag(FLAG_SYN)
    }

    /// RST.
    pub fn rst(&self) -> bool {
        self.flag(FLAG_RST)
    }

    /// PSH.
    pub fn psh(&self) -> bool {
        self.flag(FLAG_PSH)
    }

    /// ACK.
    pub fn ack(&self) -> bool {
        self.flag(FLAG_ACK)
    }

    /// URG.
    pub fn urg(&self) -> bool {
        self.flag(FLAG_URG)
    }

    /// ECE.
    pub fn ece(&self) -> bool {
        self.flag(FLAG_ECE)
    }

    /// CWR.
    pub fn cwr(&self) -> bool {
        self.flag(FLAG_CWR)
    }

    /// The window field (unscaled).
    pub fn window_len(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[14..16])
    }

    /// The checksum field.
    pub fn checksum(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[16..18])
    }

    /// The urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        NetworkEndian::read_u16(&self.data()[18..20])
    }

    /// The options' bytes.
    pub fn options(&self) -> &[u8] {
        &self.data()[TCP_HEADER_LEN..self.header_len()]
    }

    /// The payload: everything after the header.
    pub fn payload(&self) -> &[u8] {
        &self.data()[self.header_len()..]
    }

    /// Whether the checksum over pseudo-header and segment verifies by
    /// `method` (true when the device offloads).
    pub fn verify_checksum(
        &self,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
    ) -> bool {
        if !method.in_software() {
            return true;
        }
        let Ok(len) = u16::try_from(self.data().len()) else {
            return false;
        };
        let pseudo = checksum::pseudo_header_sum(src.0, dst.0, IpProtocol::Tcp.into(), len);
        checksum::combine(pseudo, method.sum(self.data())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, value: SeqNumber) {
        NetworkEndian::write_u32(&mut self.data_mut()[4..8], value.0);
    }

    /// Sets the acknowledgment number field.
    pub fn set_ack_number(&mut self, value: SeqNumber) {
        NetworkEndian::write_u32(&mut self.data_mut()[8..12], value.0);
    }

    /// Sets the header length (a multiple of 4, 20 to 60), clearing the
    /// reserved bits.
    pub fn set_header_len(&mut self, header_len: usize) {
        debug_assert!(header_len & 3 == 0 && (20..=60).contains(&header_len));
        self.data_mut()[12] = ((header_len / 4) as u8) << 4;
    }

    /// Sets all eight flags at once from their bits (FIN is bit 0).
    pub fn set_flags(&mut self, flags: u8) {
        self.data_mut()[13] = flags;
    }

    /// Sets the window field.
    pub fn set_window_len(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[14..16], value);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[16..18], value);
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, value: u16) {
        NetworkEndian::write_u16(&mut self.data_mut()[18..20], value);
    }

    /// The options' bytes, to write.
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        &mut self.data_mut()[TCP_HEADER_LEN..end]
    }

    /// The payload, to write.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let start = self.header_len();
        &mut self.data_mut()[start..]
    }

    /// Writes the checksum by `method`: the full one's complement, or
    /// under offload the pseudo-header sum the device completes
    /// (panics on a segment over 65535 bytes).
    pub fn fill_checksum(&mut self, src: Ipv4Address, dst: Ipv4Address, method: ChecksumMethod) {
        let len = u16::try_from(self.data().len()).expect("tcp segment over 64 KiB");
        let pseudo = checksum::pseudo_header_sum(src.0, dst.0, IpProtocol::Tcp.into(), len);
        if !method.in_software() {
            self.set_checksum(pseudo);
            return;
        }
        self.set_checksum(0);
        let sum = checksum::combine(pseudo, method.sum(self.data()));
        self.set_checksum(checksum::finish(sum));
    }
}

/// One TCP option (RFC 9293 §3.2, RFC 7323, RFC 2018).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpOption<'a> {
    /// Kind 0: the end of the list; what follows is padding.
    EndOfList,
    /// Kind 1: padding between options.
    NoOperation,
    /// Kind 2: the largest segment the sender will receive.
    MaxSegmentSize(u16),
    /// Kind 3: the window-scale shift (RFC 7323).
    WindowScale(u8),
    /// Kind 4: SACK may be used (RFC 2018).
    SackPermitted,
    /// Kind 5: one to four SACK blocks; the first three are kept (the
    /// first is the most recent, RFC 2018 §4).
    SackRange(SackBlocks),
    /// Kind 8: timestamps (RFC 7323).
    Timestamp {
        /// TSval.
        tsval: u32,
        /// TSecr.
        tsecr: u32,
    },
    /// Another kind, skipped by its length.
    Unknown {
        /// The kind.
        kind: u8,
        /// The bytes after kind and length.
        data: &'a [u8],
    },
}

impl<'a> TcpOption<'a> {
    /// The first option in `buffer` and the bytes after it. A length byte
    /// missing, below 2, past the options' end, or wrong for the kind is
    /// malformed. Each call consumes at least one byte.
    pub fn parse(buffer: &'a [u8]) -> Result<(&'a [u8], TcpOption<'a>), WireError> {
        let (&kind, rest) = buffer
            .split_first()
            .ok_or(WireError::Truncated("tcp option"))?;
        match kind {
            0 => return Ok((&[], TcpOption::EndOfList)),
            1 => return Ok((rest, TcpOption::NoOperation)),
            _ => {}
        }
        let &len = rest
            .first()
            .ok_or(WireError::Malformed("tcp option without a length"))?;
        let len = usize::from(len);
        if len < 2 {
            return Err(WireError::Malformed("tcp option length below 2"));
        }
        if len > buffer.len() {
            return Err(WireError::Malformed("tcp option past the header's end"));
        }
        let body = &buffer[2..len];
        let option = match (kind, len) {
            (2, 4) => TcpOption::MaxSegmentSize(NetworkEndian::read_u16(body)),
            (3, 3) => TcpOption::WindowScale(body[0]),
            (4, 2) => TcpOption::SackPermitted,
            (5, 10 | 18 | 26 | 34) => {
                let mut blocks: SackBlocks = [None; 3];
                for (slot, block) in blocks.iter_mut().zip(body.chunks_exact(8)) {
                    let left = SeqNumber(NetworkEndian::read_u32(&block[0..4]));
                    let right = SeqNumber(NetworkEndian::read_u32(&block[4..8]));
                    *slot = Some((left, right));
                }
                TcpOption::SackRange(blocks)
            }
            (8, 10) => TcpOption::Timestamp {
                tsval: NetworkEndian::read_u32(&body[0..4]),
                tsecr: NetworkEndian::read_u32(&body[4..8]),
            },
            (2..=5 | 8, _) => {
                return Err(WireError::Malformed("tcp option length wrong for its kind"))
            }
            _ => TcpOption::Unknown { kind, data: body },
        };
        Ok((&buffer[len..], option))
    }

    /// The option's length in bytes.
    pub fn buffer_len(&self) -> usize {
        match self {
            TcpOption::EndOfList | TcpOption::NoOperation => 1,
            TcpOption::MaxSegmentSize(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::SackRange(blocks) => 2 + 8 * blocks.iter().flatten().count(),
            TcpOption::Timestamp { .. } => 10,
            TcpOption::Unknown { data, .. } => 2 + data.len(),
        }
    }

    /// Writes the option at the start of `buffer` and returns the rest
    /// (panics if `buffer` is shorter than the option).
    pub fn emit<'b>(&self, buffer: &'b mut [u8]) -> &'b mut [u8] {
        let len = self.buffer_len();
        let (head, rest) = buffer.split_at_mut(len);
        match *self {
            TcpOption::EndOfList => head[0] = 0,
            TcpOption::NoOperation => head[0] = 1,
            TcpOption::MaxSegmentSize(mss) => {
                head[..2].copy_from_slice(&[2, 4]);
                NetworkEndian::write_u16(&mut head[2..4], mss);
            }
            TcpOption::WindowScale(shift) => head.copy_from_slice(&[3, 3, shift]),
            TcpOption::SackPermitted => head.copy_from_slice(&[4, 2]),
            TcpOption::SackRange(blocks) => {
                head[..2].copy_from_slice(&[5, len as u8]);
                for (i, (left, right)) in blocks.iter().flatten().enumerate() {
                    NetworkEndian::write_u32(&mut head[2 + 8 * i..6 + 8 * i], left.0);
                    NetworkEndian::write_u32(&mut head[6 + 8 * i..10 + 8 * i], right.0);
                }
            }
            TcpOption::Timestamp { tsval, tsecr } => {
                head[..2].copy_from_slice(&[8, 10]);
                NetworkEndian::write_u32(&mut head[2..6], tsval);
                NetworkEndian::write_u32(&mut head[6..10], tsecr);
            }
            TcpOption::Unknown { kind, data } => {
                head[..2].copy_from_slice(&[kind, len as u8]);
                head[2..].copy_from_slice(data);
            }
        }
        rest
    }
}

/// How many bytes of options and SACK blocks a Repr emits, in Linux's
/// layout: MSS; SACK-permitted folded with timestamps (`04 02 08 0a …`),
/// or NOP-padded; NOP + window scale; NOP NOP + SACK blocks, as many as fit
/// in the 40 bytes left.
fn option_layout(repr: &TcpRepr<'_>) -> (usize, usize) {
    let mut len = 0;
    if repr.max_seg_size.is_some() {
        len += 4;
    }
    if repr.timestamp.is_some() {
        len += 12;
    } else if repr.sack_permitted {
        len += 4;
    }
    if repr.window_scale.is_some() {
        len += 4;
    }
    let wanted = repr.sack_ranges.iter().flatten().count();
    let room = (TCP_MAX_HEADER_LEN - TCP_HEADER_LEN - len).saturating_sub(4) / 8;
    let blocks = wanted.min(room);
    if blocks > 0 {
        len += 4 + 8 * blocks;
    }
    (len, blocks)
}

impl<'a> TcpRepr<'a> {
    /// The segment a checked packet carries between `src` and `dst`, its
    /// checksum verified by `method`. Refused: port 0, SYN, FIN and RST
    /// combined, malformed options. URG and the urgent pointer are
    /// ignored (RFC 9293 §3.8.5 leaves urgent data to the application;
    /// this stack does not deliver it apart).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &TcpPacket<&'a T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
    ) -> Result<TcpRepr<'a>, WireError> {
        packet.check_len()?;
        if packet.src_port() == 0 || packet.dst_port() == 0 {
            return Err(WireError::Malformed("tcp port 0"));
        }
        if !packet.verify_checksum(src, dst, method) {
            return Err(WireError::Checksum);
        }
        let control = match (packet.syn(), packet.fin(), packet.rst()) {
            (false, false, false) => TcpControl::None,
            (true, false, false) => TcpControl::Syn,
            (false, true, false) => TcpControl::Fin,
            (false, false, true) => TcpControl::Rst,
            _ => return Err(WireError::Malformed("tcp flags combine syn, fin and rst")),
        };
        let bytes: &'a [u8] = packet.buffer.as_ref();
        let header_len = packet.header_len();
        let mut repr = TcpRepr::bare(packet.src_port(), packet.dst_port(), packet.seq_number());
        repr.control = control;
        repr.ack_number = packet.ack().then(|| packet.ack_number());
        repr.window_len = packet.window_len();
        repr.push = packet.psh();
        repr.ece = packet.ece();
        repr.cwr = packet.cwr();
        repr.payload = &bytes[header_len..];
        let mut options = &bytes[TCP_HEADER_LEN..header_len];
        if let [1, 1, 8, 10, ts @ ..] = options {
            // NOP NOP TS, the layout of all but the SYN of a connection
            // with timestamps (RFC 7323 Appendix A, Linux's): read at once.
            if ts.len() == 8 {
                let tsval = NetworkEndian::read_u32(&ts[0..4]);
                repr.timestamp = Some((tsval, NetworkEndian::read_u32(&ts[4..8])));
                options = &[];
            }
        }
        while !options.is_empty() {
            let (rest, option) = TcpOption::parse(options)?;
            match option {
                TcpOption::EndOfList => break,
                TcpOption::NoOperation | TcpOption::Unknown { .. } => {}
                TcpOption::MaxSegmentSize(mss) => repr.max_seg_size = Some(mss),
                TcpOption::WindowScale(shift) => repr.window_scale = Some(shift),
                TcpOption::SackPermitted => repr.sack_permitted = true,
                TcpOption::SackRange(blocks) => repr.sack_ranges = blocks,
                TcpOption::Timestamp { tsval, tsecr } => repr.timestamp = Some((tsval, tsecr)),
            }
            options = rest;
        }
        Ok(repr)
    }

    /// The header's length with the options this Repr emits.
    pub fn header_len(&self) -> usize {
        TCP_HEADER_LEN + option_layout(self).0
    }

    /// The segment's length: header, options and payload.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload.len()
    }

    /// Writes the segment and its checksum by `method` into a buffer of
    /// exactly [`TcpRepr::buffer_len`] bytes (panics otherwise). SACK
    /// blocks that do not fit beside the other options are left out.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut TcpPacket<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
    ) {
        let _b = crate::account::enter(crate::account::Block::TcpOutput);
        assert_eq!(packet.data().len(), self.buffer_len(), "tcp buffer length");
        self.emit_parts(packet, src, dst, method, [self.payload, &[]]);
    }

    /// [`TcpRepr::emit`] with the payload taken from `parts` in order
    /// (a send ring's two slices) instead of `self.payload`, which must
    /// be empty: the buffer holds exactly the header and the parts.
    pub fn emit_with_payload_parts<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut TcpPacket<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
        parts: [&[u8]; 2],
    ) {
        let _b = crate::account::enter(crate::account::Block::TcpOutput);
        assert!(self.payload.is_empty(), "the payload comes from parts");
        let payload_len = parts[0].len() + parts[1].len();
        assert_eq!(
            packet.data().len(),
            self.header_len() + payload_len,
            "tcp buffer length"
        );
        self.emit_parts(packet, src, dst, method, parts);
    }

    /// Writes the header, copies the payload from `parts` and fills the
    /// checksum as [`TcpPacket::fill_checksum`] would, the payload summed
    /// as it is copied (the bytes are read once).
    fn emit_parts<T: AsRef<[u8]> + AsMut<[u8]>>(
        &self,
        packet: &mut TcpPacket<T>,
        src: Ipv4Address,
        dst: Ipv4Address,
        method: ChecksumMethod,
        parts: [&[u8]; 2],
    ) {
        self.emit_header(packet);
        if !method.in_software() {
            let (first, second) = packet.payload_mut().split_at_mut(parts[0].len());
            first.copy_from_slice(parts[0]);
            second.copy_from_slice(parts[1]);
            packet.fill_checksum(src, dst, method);
            return;
        }
        let len = u16::try_from(packet.data().len()).expect("tcp segment over 64 KiB");
        packet.set_checksum(0);
        let header_len = packet.header_len();
        // The header is a whole number of 32-bit words: the payload starts
        // at an even offset; its second part at the first part's length.
        let mut sum = checksum::pseudo_header_sum(src.0, dst.0, IpProtocol::Tcp.into(), len);
        sum = checksum::combine(sum, method.sum(&packet.data()[..header_len]));
        let (first, second) = packet.payload_mut().split_at_mut(parts[0].len());
        sum = checksum::combine(sum, method.copy_and_sum(first, parts[0]));
        if !parts[1].is_empty() {
            let second_sum = method.copy_and_sum(second, parts[1]);
            sum = checksum::combine(
                sum,
                if parts[0].len() % 2 == 1 {
                    checksum::at_odd_offset(second_sum)
                } else {
                    second_sum
                },
            );
        }
        packet.set_checksum(checksum::finish(sum));
    }

    /// Writes everything but the payload and the checksum.
    fn emit_header<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut TcpPacket<T>) {
        let (options_len, sack_blocks) = option_layout(self);
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number.unwrap_or_default());
        packet.set_header_len(TCP_HEADER_LEN + options_len);
        let control = match self.control {
            TcpControl::None => 0,
            TcpControl::Syn => FLAG_SYN,
            TcpControl::Fin => FLAG_FIN,
            TcpControl::Rst => FLAG_RST,
        };
        let bit = |on: bool, mask: u8| if on { mask } else { 0 };
        let flags = control
            | bit(self.ack_number.is_some(), FLAG_ACK)
            | bit(self.push, FLAG_PSH)
            | bit(self.ece, FLAG_ECE)
            | bit(self.cwr, FLAG_CWR);
        packet.set_flags(flags);
        packet.set_window_len(self.window_len);
        packet.set_urgent_at(0);
        let mut out = packet.options_mut();
        if let Some(mss) = self.max_seg_size {
            out = TcpOption::MaxSegmentSize(mss).emit(out);
        }
        match (self.sack_permitted, self.timestamp) {
            (true, Some(_)) => out = TcpOption::SackPermitted.emit(out),
            (false, Some(_)) => out = TcpOption::NoOperation.emit(TcpOption::NoOperation.emit(out)),
            (true, None) => {
                out = TcpOption::NoOperation.emit(TcpOption::NoOperation.emit(out));
                out = TcpOption::SackPermitted.emit(out);
            }
            (false, None) => {}
        }
        if let Some((tsval, tsecr)) = self.timestamp {
            out = TcpOption::Timestamp { tsval, tsecr }.emit(out);
        }
        if let Some(shift) = self.window_scale {
            out = TcpOption::WindowScale(shift).emit(TcpOption::NoOperation.emit(out));
        }
        if sack_blocks > 0 {
            let mut blocks: SackBlocks = [None; 3];
            for (slot, block) in blocks
                .iter_mut()
                .zip(self.sack_ranges.iter().flatten())
                .take(sack_blocks)
            {
                *slot = Some(*block);
            }
            out = TcpOption::NoOperation.emit(TcpOption::NoOperation.emit(out));
            out = TcpOption::SackRange(blocks).emit(out);
        }
        debug_assert!(out.is_empty(), "tcp option layout and emission disagree");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syn_and_fin_take_one_sequence_number_each() {
        let mut r = TcpRepr::bare(1, 2, SeqNumber(7));
        assert_eq!(r.segment_len(), 0);
        r.control = TcpControl::Syn;
        assert_eq!(r.segment_len(), 1);
        r.control = TcpControl::Fin;
        r.payload = b"abc";
        assert_eq!(r.segment_len(), 4);
        r.control = TcpControl::Rst;
        assert_eq!(r.segment_len(), 3);
    }
}

#[path = "tcp_rewrite.rs"]
mod rewrite;

#[cfg(test)]
#[path = "tcp_tests.rs"]
mod packet_tests;
