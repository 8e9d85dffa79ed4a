//! Super-segments (issue 18's TSO): on a device that cuts TCP/IPv4
//! super-packets into MSS-sized segments, output may hand it one segment
//! of up to 64 KB instead of many, bounded by cwnd, the peer's window and
//! [`super::tcb::TcpConfig::max_super_segment`]. A super-segment is
//! exactly the concatenation of the segments the sender policy (SWS
//! avoidance, Nagle) would have sent one after another, so turning it on
//! changes what the device is given, never what reaches the wire; the
//! counters still count wire segments.

use super::tcb::Connection;
use super::window::{SendDecision, SendState};

impl Connection {
    /// Lets output build super-segments of up to `device_limit` payload
    /// bytes (bounded by the config's `max_super_segment`); 0 turns them
    /// off. The socket layer calls it for connections on a TSO device.
    pub fn allow_super_segments(&mut self, device_limit: usize) {
        self.super_segment_limit = device_limit.min(self.config.max_super_segment);
    }

    /// The largest segment payload output builds now (one MSS when
    /// super-segments are off).
    pub fn super_segment_limit(&self) -> usize {
        self.super_segment_limit.max(self.data_mss())
    }

    /// The payload per wire segment: the MSS less the options every
    /// segment carries (what the device cuts a super-segment by).
    pub fn wire_segment_size(&self) -> usize {
        self.data_mss()
    }

    /// Grows the `first` bytes the sender policy chose to send in `state`
    /// into a super-segment: while the policy would send another segment
    /// right after, and it fits the limit, it joins. A first segment below
    /// one MSS stays alone.
    pub(crate) fn super_segment_len(&self, first: usize, state: &SendState) -> usize {
        // Paced, a super-segment is at most the pacer's burst.
        let limit = self
            .super_segment_limit
            .min(self.pacer.segment_cap(state.mss));
        if limit <= state.mss || first < state.mss {
            return first;
        }
        let mut total = first;
        loop {
            let next = SendState {
                queued: state.queued - total,
                usable_window: state.usable_window - total,
                in_flight: state.in_flight + total,
                ..*state
            };
            match self.config.sender.decide(&next) {
                SendDecision::Send(n) if total + n <= limit => {
                    total += n;
                    if n < state.mss {
                        return total;
                    }
                }
                _ => return total,
            }
        }
    }

    /// The wire segments a payload of `len` bytes stands for (at least
    /// one: a bare ACK, SYN or FIN is a segment).
    pub(crate) fn wire_segments(&self, len: usize) -> u64 {
        len.div_ceil(self.data_mss()).max(1) as u64
    }

    /// Counts a segment of `len` payload bytes out: as wire segments, and
    /// as a super-segment when it is more than one MSS.
    pub(crate) fn count_segments_out(&mut self, len: usize) {
        let segments = self.wire_segments(len);
        if segments > 1 {
            self.counters.super_segments_out += 1;
        }
        self.counters.segments_out += segments;
    }
}

#[cfg(test)]
#[path = "super_segment_tests.rs"]
mod tests;
