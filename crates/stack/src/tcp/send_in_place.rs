//! Data segments whose payload stays in the send buffer until the frame
//! is built: a socket set that writes its segments out before the
//! application can touch the buffer again copies each payload once, from
//! the send ring straight into the transmit frame, instead of first into
//! a payload buffer of its own (a copy of every octet sent).

use super::tcb::{Connection, Segment};
use crate::wire::seq::SeqNumber;

/// Where a deferred payload is now: what is left of it in the send buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InPlacePayload<'a> {
    /// The sequence number of its first octet still unacknowledged (the
    /// segment's own, unless an ACK since covered its head).
    pub seq: SeqNumber,
    /// Its octets, the ring's one or two slices in order.
    pub parts: [&'a [u8]; 2],
}

impl InPlacePayload<'_> {
    /// Octets in both parts.
    pub fn len(&self) -> usize {
        self.parts[0].len() + self.parts[1].len()
    }

    /// Whether nothing is left.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Connection {
    /// From now on (`on`), data segments leave their payload in the send
    /// buffer ([`Segment::payload`] empty) for the caller to copy out with
    /// [`Connection::in_place_payload`] before the next call that may take
    /// acknowledged octets out of it; off (the default), each carries its
    /// own copy.
    pub fn leave_payloads_in_send_buffer(&mut self, on: bool) {
        self.payload_in_place = on;
    }

    /// The payload of `segment` (made by this connection) still in the
    /// send buffer: `None` if it carries its own bytes or has none there,
    /// or if every octet of it has been acknowledged since (nothing is
    /// left worth sending). An ACK that covered its head leaves the rest,
    /// from SND.UNA.
    pub fn in_place_payload(&self, segment: &Segment) -> Option<InPlacePayload<'_>> {
        if segment.in_send_buffer == 0 {
            return None;
        }
        let start = segment.header.seq_number;
        let end = start + segment.in_send_buffer;
        let seq = start.max(self.snd_una);
        if end <= seq {
            return None;
        }
        let offset = seq - self.snd_una;
        let end_offset = end - self.snd_una;
        if end_offset > self.send_buf.len() {
            // Not ours any more (the connection was reset and cleared).
            return None;
        }
        let (front, back) = self.send_buf.as_slices();
        let split = front.len();
        let parts = [
            &front[offset.min(split)..end_offset.min(split)],
            &back[offset.saturating_sub(split)..end_offset.saturating_sub(split)],
        ];
        Some(InPlacePayload { seq, parts })
    }
}

#[cfg(test)]
#[path = "send_in_place_tests.rs"]
mod tests;
