//! The ACK template of `--checksum incremental` (RFC 1624). A
//! connection's pure ACKs differ from one to the next only in the
//! acknowledgment number, the window and the timestamps, so the last one
//! it sent is kept as emitted, checksum included; the next that matches it
//! in everything else is written from it, those fields rewritten and the
//! checksum patched by RFC 1624's eqn. 3 instead of summed again (the
//! pseudo-header is the same: same addresses, same length).
//!
//! This is where the stack's TCP sends a header it already summed. A bulk
//! sender's data segments each carry new payload, summed as it is copied
//! into the frame; a retransmission, the other candidate, would need the
//! payload's sum kept from its first sending, and a huang-chen quick run
//! (stack sender to Linux over TUN, MSS 256 and 1024, 10 trials of 0.2 s)
//! retransmitted none of its 34,000–77,000 segments per trial: that path
//! is not taken.

use crate::wire::tcp::{TcpControl, TcpPacket, TcpRepr, TCP_MAX_HEADER_LEN};
use crate::wire::{ChecksumMethod, Ipv4Address};

/// The last pure ACK a connection sent, as emitted.
#[derive(Debug, Clone)]
pub(super) struct AckTemplate {
    /// The header the bytes were emitted from.
    repr: TcpRepr<'static>,
    /// The emitted header, checksum included (its first `len` bytes).
    bytes: [u8; TCP_MAX_HEADER_LEN],
    len: usize,
    /// Where the timestamps option's TSval is, if the header has one.
    tsval_at: Option<usize>,
}

impl AckTemplate {
    /// Whether a segment (`header`, with `payload_len` octets) is a pure
    /// ACK, which a template can hold or build.
    pub(super) fn takes(header: &TcpRepr<'_>, payload_len: usize) -> bool {
        payload_len == 0 && header.control == TcpControl::None && header.ack_number.is_some()
    }

    /// The template of the pure ACK `header`, just emitted as `bytes`
    /// (the whole segment: its header alone).
    pub(super) fn new(header: &TcpRepr<'static>, bytes: &[u8]) -> AckTemplate {
        let len = bytes.len().min(TCP_MAX_HEADER_LEN);
        let mut template = AckTemplate {
            repr: header.clone(),
            bytes: [0; TCP_MAX_HEADER_LEN],
            len,
            tsval_at: None,
        };
        template.bytes[..len].copy_from_slice(&bytes[..len]);
        template.tsval_at = TcpPacket::new_unchecked(&template.bytes[..len]).timestamps_at();
        template
    }

    /// Whether `header` differs from the template only in what
    /// [`AckTemplate::write`] rewrites: the ACK number, the window, and
    /// the timestamps' values (both with the option or both without).
    pub(super) fn fits(&self, header: &TcpRepr<'_>) -> bool {
        let t = &self.repr;
        header.payload.is_empty()
            && header.ack_number.is_some()
            && header.timestamp.is_some() == t.timestamp.is_some()
            && TcpRepr {
                ack_number: t.ack_number,
                window_len: t.window_len,
                timestamp: t.timestamp,
                payload: &[],
                ..header.clone()
            } == *t
    }

    /// Writes `header` (which [`AckTemplate::fits`]) into `out` (its
    /// length) from the template, the checksum patched by RFC 1624, and
    /// keeps it as the template. `addrs` are the segment's (source,
    /// destination), unused by the patch itself.
    pub(super) fn write(
        &mut self,
        header: &TcpRepr<'static>,
        out: &mut [u8],
        addrs: (Ipv4Address, Ipv4Address),
    ) {
        debug_assert!(self.fits(header), "the header does not fit the template");
        let len = self.len;
        out[..len].copy_from_slice(&self.bytes[..len]);
        let mut packet = TcpPacket::new_unchecked(&mut out[..len]);
        let ack = header.ack_number.expect("a pure ACK");
        packet.rewrite_ack_and_window(ack, header.window_len, addrs, ChecksumMethod::Incremental);
        if let (Some(at), Some(values)) = (self.tsval_at, header.timestamp) {
            packet.rewrite_timestamps(at, values, addrs, ChecksumMethod::Incremental);
        }
        self.bytes[..len].copy_from_slice(&out[..len]);
        self.repr = header.clone();
    }
}

#[cfg(test)]
#[path = "tcp_ack_template_tests.rs"]
mod tests;
