//! TCP segments. [`TcpRepr`] is what every TCP module of the stack shares:
//! the parsed header with its options, and the payload borrowed from the
//! packet. (The zero-copy `Packet` view with parse and emit comes with the
//! `wire` work of issue 18.)

use super::seq::SeqNumber;

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
