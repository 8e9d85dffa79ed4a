//! Fields rewritten in a TCP segment whose checksum is already right (an
//! ACK template, `socket/tcp_ack_template.rs`): the acknowledgment
//! number, the window and the timestamps, the checksum patched by RFC
//! 1624's eqn. 3 under [`ChecksumMethod::Incremental`] and summed again
//! under the other software methods. The pseudo-header is unchanged by
//! any of them (same addresses, same length), so the patch is exact.

use super::{
    checksum, ChecksumMethod, Ipv4Address, SeqNumber, TcpOption, TcpPacket, TCP_HEADER_LEN,
};
use byteorder::{ByteOrder, NetworkEndian};

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Where the timestamps option's TSval starts in the segment, if its
    /// header has a well-formed one (RFC 7323 §3).
    pub fn timestamps_at(&self) -> Option<usize> {
        let mut options = self.options();
        while !options.is_empty() {
            let at = self.header_len() - options.len();
            let (rest, option) = TcpOption::parse(options).ok()?;
            match option {
                TcpOption::Timestamp { .. } => return Some(at + 2),
                TcpOption::EndOfList => return None,
                _ => options = rest,
            }
        }
        None
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    /// Rewrites the acknowledgment number and window of a segment whose
    /// checksum is right (an ACK template): by RFC 1624's update under
    /// [`ChecksumMethod::Incremental`], by summing the segment again under
    /// the others, and not at all under offload.
    pub fn rewrite_ack_and_window(
        &mut self,
        ack: SeqNumber,
        window: u16,
        (src, dst): (Ipv4Address, Ipv4Address),
        method: ChecksumMethod,
    ) {
        let (old_ack, old_window) = (self.ack_number(), self.window_len());
        self.set_ack_number(ack);
        self.set_window_len(window);
        match method {
            ChecksumMethod::Incremental => {
                let _b = crate::account::enter(crate::account::Block::Checksum);
                let hc = checksum::update_incremental_u32(self.checksum(), old_ack.0, ack.0);
                let hc = checksum::update_incremental(hc, old_window, window);
                self.set_checksum(hc);
            }
            ChecksumMethod::Bytewise | ChecksumMethod::Rfc1071 => {
                self.fill_checksum(src, dst, method)
            }
            ChecksumMethod::Offload => {}
        }
    }

    /// Rewrites the timestamps option's TSval and TSecr (its TSval at
    /// `at`, as [`TcpPacket::timestamps_at`] found it), fixing the
    /// checksum as [`TcpPacket::rewrite_ack_and_window`] does. Panics if
    /// `at` is not within the options.
    pub fn rewrite_timestamps(
        &mut self,
        at: usize,
        (tsval, tsecr): (u32, u32),
        (src, dst): (Ipv4Address, Ipv4Address),
        method: ChecksumMethod,
    ) {
        assert!(
            at >= TCP_HEADER_LEN && at + 8 <= self.header_len(),
            "timestamps outside the options"
        );
        // The 16-bit words the eight octets touch: the option may start
        // at an odd offset (after one NOP), though this stack's own
        // layouts put its values on 32-bit boundaries.
        let words = at & !1..(at + 9) & !1;
        let old = checksum::sum_bytewise(&self.data()[words.clone()]);
        let data = self.data_mut();
        NetworkEndian::write_u32(&mut data[at..at + 4], tsval);
        NetworkEndian::write_u32(&mut data[at + 4..at + 8], tsecr);
        match method {
            ChecksumMethod::Incremental => {
                let _b = crate::account::enter(crate::account::Block::Checksum);
                // RFC 1624 eqn. 3 over several words at once: the sum of
                // their complements is the complement of their sum.
                let new = checksum::sum_bytewise(&self.data()[words]);
                let hc = checksum::update_incremental(self.checksum(), old, new);
                self.set_checksum(hc);
            }
            ChecksumMethod::Bytewise | ChecksumMethod::Rfc1071 => {
                self.fill_checksum(src, dst, method)
            }
            ChecksumMethod::Offload => {}
        }
    }
}
