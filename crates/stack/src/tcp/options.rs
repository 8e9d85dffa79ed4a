//! TCP options, one concern in one place: what a SYN offers, what the
//! handshake negotiates from the peer's SYN, what every later segment
//! carries, and the bookkeeping they need.
//!
//! - MSS (RFC 9293 §3.7.1): offered as [`TcpConfig::mss`](super::tcb::TcpConfig::mss);
//!   the peer's (536 when it sends none) caps ours, with a floor of 64.
//! - Window scale (RFC 7323 §2): offered on an active SYN when switched
//!   on, answered on a SYN-ACK only if the peer offered it; the peer's
//!   shift is clamped to 14; either side without it leaves both shifts 0.
//! - SACK-permitted and SACK blocks (RFC 2018): permitted when both
//!   offer; blocks from the reassembly queue on every ACK then.
//! - Timestamps (RFC 7323 §3–5): used when both offer; TSval is the
//!   clock in milliseconds, TS.Recent follows segments covering
//!   Last.ACK.sent (§4.3), and PAWS (§5.3 R1) drops a segment whose TSval
//!   is older than TS.Recent, unless TS.Recent is more than 24 days old
//!   (§5.5: the peer's clock may have run past half its range since;
//!   Linux's `TCP_PAWS_24DAYS`). A segment other than a RST that comes
//!   without the option once it is in use is dropped silently (§3.2's
//!   SHOULD; Linux takes it, tcplab keeps to the RFC: a peer that stops
//!   sending timestamps mid-connection is broken or not the peer, and
//!   such a segment would pass PAWS unchecked). Every segment then loses
//!   12 bytes of payload to the option (`Connection::data_mss`).
//!
//! The state machine calls these from `input` (the peer's SYN), `output`
//! (headers, the SYN) and `input_sync` (PAWS, TS.Recent); the switches
//! are [`TcpConfig`](super::tcb::TcpConfig)'s `mss`, `window_scaling`,
//! `sack` and `timestamps`.

use std::time::Duration;

use super::state::State;
use super::tcb::{Connection, DEFAULT_MSS, MAX_WINDOW_SHIFT};
use crate::time::Instant;
use crate::wire::tcp::{TcpControl, TcpRepr};

/// The timestamps option's length with its padding (RFC 7323 appendix A).
pub const TIMESTAMP_OPTION_LEN: usize = 12;

/// How long TS.Recent is believed without an update (RFC 7323 §5.5: 24
/// days, under the 24.8 days in which a 1 ms clock runs half its range).
pub const TS_RECENT_LIFETIME: Duration = Duration::from_secs(24 * 86_400);

/// The smallest send MSS taken from a peer's option.
const MIN_PEER_MSS: usize = 64;

impl Connection {
    /// The effective MSS for data: the peer's MSS less the options every
    /// segment carries.
    pub(crate) fn data_mss(&self) -> usize {
        let ts = if self.ts_ok { TIMESTAMP_OPTION_LEN } else { 0 };
        self.snd_mss.saturating_sub(ts).max(1)
    }

    /// Takes the options of the peer's SYN against the ones configured:
    /// the send MSS, window scaling (clamped to 14, or off both ways),
    /// SACK-permitted and timestamps (TS.Recent from its TSval).
    pub(crate) fn negotiate_options(&mut self, seg: &TcpRepr<'_>, now: Instant) {
        let peer_mss = seg.max_seg_size.map_or(DEFAULT_MSS, usize::from);
        self.snd_mss = peer_mss.min(self.config.mss as usize).max(MIN_PEER_MSS);
        self.ws_ok = self.config.window_scaling && seg.window_scale.is_some();
        if self.ws_ok {
            self.snd_shift = seg.window_scale.unwrap_or(0).min(MAX_WINDOW_SHIFT);
        } else {
            self.snd_shift = 0;
            self.rcv_shift = 0;
        }
        self.sack_ok = self.offers_sack() && seg.sack_permitted;
        self.ts_ok = self.config.timestamps && seg.timestamp.is_some();
        self.rtt_timer.time_every_segment(self.ts_ok);
        self.ts_recent = if self.ts_ok {
            seg.timestamp.map(|(val, _)| val)
        } else {
            None
        };
        self.ts_recent_at = now;
    }

    /// Whether SACK is offered: switched on, and not under a controller
    /// of 1988-1990 (`tahoe`, `reno90`), whose hosts had none. Without it
    /// the peer sends a duplicate ACK for each segment out of order, which
    /// those controllers count; with it Linux compresses them (one SACK
    /// per millisecond or so), and counting ACKs as BSD did would miss
    /// the third.
    pub(crate) fn offers_sack(&self) -> bool {
        self.config.sack && !self.config.congestion.predates_sack()
    }

    /// The options of a SYN (SYN-SENT: what is switched on) or SYN-ACK
    /// (SYN-RECEIVED: what the peer offered too), set on `h`.
    pub(crate) fn syn_options(&self, h: &mut TcpRepr<'static>, now: Instant) {
        h.sack_ranges = [None; 3];
        h.max_seg_size = Some(self.config.mss);
        let active = self.state == State::SynSent;
        if (active && self.config.window_scaling) || self.ws_ok {
            h.window_scale = Some(self.rcv_shift);
        }
        h.sack_permitted = if active {
            self.offers_sack()
        } else {
            self.sack_ok
        };
        let offer_ts = if active {
            self.config.timestamps
        } else {
            self.ts_ok
        };
        h.timestamp = offer_ts.then(|| (Connection::ts_val(now), self.ts_recent.unwrap_or(0)));
    }

    /// The options every segment after the handshake carries, set on `h`:
    /// timestamps, and SACK blocks on an ACK.
    pub(crate) fn segment_options(&self, h: &mut TcpRepr<'static>, now: Instant) {
        if self.ts_ok {
            h.timestamp = Some((Connection::ts_val(now), self.ts_recent.unwrap_or(0)));
        }
        if self.sack_ok && h.ack_number.is_some() {
            h.sack_ranges = self.reassembly.sack_blocks();
        }
    }

    /// RFC 7323 §5.3 R1: a timestamp older than TS.Recent is a duplicate
    /// from an earlier wrap (RSTs exempt), unless TS.Recent has not been
    /// updated for [`TS_RECENT_LIFETIME`] (§5.5): then it is no longer
    /// valid, and the segment passes (and may set it anew).
    pub(crate) fn fails_paws(&self, seg: &TcpRepr<'_>, now: Instant) -> bool {
        match (self.ts_ok, seg.timestamp, self.ts_recent) {
            (true, Some((val, _)), Some(recent)) => {
                seg.control != TcpControl::Rst
                    && (val.wrapping_sub(recent) as i32) < 0
                    && now.since(self.ts_recent_at) <= TS_RECENT_LIFETIME
            }
            _ => false,
        }
    }

    /// RFC 7323 §3.2: once timestamps are in use, a segment other than a
    /// RST without the option is dropped silently; counts it if so.
    pub(crate) fn lacks_timestamp(&mut self, seg: &TcpRepr<'_>) -> bool {
        let lacks = self.ts_ok && seg.timestamp.is_none() && seg.control != TcpControl::Rst;
        if lacks {
            self.counters.timestamp_missing_drops += 1;
        }
        lacks
    }

    /// RFC 7323 §4.3: TS.Recent follows segments that cover Last.ACK.sent.
    pub(crate) fn note_timestamp(&mut self, seg: &TcpRepr<'_>, now: Instant) {
        if let (true, Some((val, _))) = (self.ts_ok, seg.timestamp) {
            if seg.seq_number <= self.last_ack_sent {
                self.ts_recent = Some(val);
                self.ts_recent_at = now;
            }
        }
    }

    /// The timestamp clock: milliseconds (RFC 7323 §5.4 allows 1 ms–1 s).
    pub(crate) fn ts_val(now: Instant) -> u32 {
        (now.nanos() / 1_000_000) as u32
    }
}
