//! What silly window syndrome looks like, counted (issue 19's `--sws`):
//! how far each window update moved the right edge of the offered window,
//! and how big the data segments sent and received were. With SWS
//! avoidance off, a slow reader makes many small right-edge moves (RFC
//! 1122 §4.2.3.3) and a sender that uses them many small segments
//! (§4.2.3.4); with it on, neither happens.

/// Small window updates and small data segments of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwsCounters {
    /// Segments that moved the right edge of the offered window
    /// (RCV.NXT + RCV.WND) to the right while the peer could still send
    /// data (before its FIN).
    pub window_updates: u64,
    /// Of those, moves smaller than RFC 1122's step, min(RCV.BUFF/2,
    /// Eff.snd.MSS) (less the window scale's rounding).
    pub small_window_updates: u64,
    /// The smallest right-edge move, bytes.
    pub min_window_update: Option<u64>,
    /// Data segments sent with less than a full segment's payload (a
    /// window probe's octet not counted: it is no SWS).
    pub small_segments_out: u64,
    /// The smallest data segment sent, payload bytes.
    pub min_segment_out: Option<u64>,
    /// Data segments received with less than a full segment's payload.
    pub small_segments_in: u64,
    /// The smallest data segment received, payload bytes.
    pub min_segment_in: Option<u64>,
    /// Data segments sent, as the wire carries them (a super-segment
    /// counts as the segments it is cut into); retransmissions included.
    pub data_segments_out: u64,
    /// Data segments received, as the wire carried them.
    pub data_segments_in: u64,
}

/// Lowers `slot` to `v`, or sets it.
fn lower(slot: &mut Option<u64>, v: u64) {
    *slot = Some(slot.map_or(v, |m| m.min(v)));
}

impl SwsCounters {
    /// The right edge moved `advance` bytes to the right; `step` is RFC
    /// 1122's min(RCV.BUFF/2, MSS) and `unit` the window scale's
    /// granularity (1 << shift), by which an advertised edge is rounded
    /// down.
    pub fn on_window_update(&mut self, advance: usize, step: usize, unit: usize) {
        self.window_updates += 1;
        if advance + unit.saturating_sub(1) < step {
            self.small_window_updates += 1;
        }
        lower(&mut self.min_window_update, advance as u64);
    }

    /// A data segment of `len` payload bytes left; `full` is a full
    /// segment's payload. A super-segment (`len` > `full`) is counted by
    /// the segment its tail becomes on the wire.
    pub fn on_data_out(&mut self, len: usize, full: usize) {
        self.data_segments_out += len.div_ceil(full.max(1)) as u64;
        if let Some(tail) = wire_tail(len, full) {
            self.small_segments_out += 1;
            lower(&mut self.min_segment_out, tail as u64);
        } else if len > 0 {
            lower(&mut self.min_segment_out, full.min(len) as u64);
        }
    }

    /// A data segment of `len` payload bytes arrived (`full` as above).
    pub fn on_data_in(&mut self, len: usize, full: usize) {
        self.data_segments_in += len.div_ceil(full.max(1)) as u64;
        if let Some(tail) = wire_tail(len, full) {
            self.small_segments_in += 1;
            lower(&mut self.min_segment_in, tail as u64);
        } else if len > 0 {
            lower(&mut self.min_segment_in, full.min(len) as u64);
        }
    }
}

/// The short last wire segment of a `len`-byte payload cut into `full`-byte
/// segments, if it has one.
fn wire_tail(len: usize, full: usize) -> Option<usize> {
    let tail = len % full.max(1);
    (tail > 0).then_some(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_segments_are_counted_as_the_wire_carries_them() {
        let mut c = SwsCounters::default();
        c.on_data_out(1448, 1448);
        c.on_data_out(3000, 1448); // a super-segment: 1448 + 1448 + 104
        c.on_data_out(0, 1448); // a pure ACK is no data segment
        c.on_data_in(500, 1448);
        assert_eq!((c.data_segments_out, c.data_segments_in), (4, 1));
    }

    #[test]
    fn a_move_below_the_step_is_small_and_one_at_it_is_not() {
        let mut c = SwsCounters::default();
        c.on_window_update(8192, 1460, 1);
        c.on_window_update(1460, 1460, 1);
        assert_eq!((c.window_updates, c.small_window_updates), (2, 0));
        c.on_window_update(512, 1460, 1);
        assert_eq!((c.window_updates, c.small_window_updates), (3, 1));
        assert_eq!(c.min_window_update, Some(512));
        // Scaled by 32: an edge rounded down by up to 31 bytes still
        // made the step.
        c.on_window_update(1440, 1460, 32);
        assert_eq!(c.small_window_updates, 1);
        c.on_window_update(1420, 1460, 32);
        assert_eq!(c.small_window_updates, 2);
    }

    #[test]
    fn short_segments_are_small_and_full_ones_are_not() {
        let mut c = SwsCounters::default();
        c.on_data_out(1448, 1448);
        c.on_data_out(2 * 1448, 1448);
        assert_eq!(c.small_segments_out, 0);
        assert_eq!(c.min_segment_out, Some(1448));
        c.on_data_out(100, 1448);
        c.on_data_out(1448 + 7, 1448);
        assert_eq!(c.small_segments_out, 2);
        assert_eq!(c.min_segment_out, Some(7));
        c.on_data_in(1448, 1448);
        assert_eq!((c.small_segments_in, c.min_segment_in), (0, Some(1448)));
        c.on_data_in(512, 1448);
        assert_eq!((c.small_segments_in, c.min_segment_in), (1, Some(512)));
        c.on_data_in(0, 1448);
        assert_eq!(c.small_segments_in, 1);
    }
}
