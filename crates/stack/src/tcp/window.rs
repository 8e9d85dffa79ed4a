//! Window and ACK policies as pure decisions, each an enum or a set of
//! switches that issue 19 turns (`--sws`, `--nagle`, `--delack`):
//! - [`ReceiverSws`]: what window to advertise (RFC 1122 §4.2.3.3);
//! - [`SenderPolicy`]: whether to send now, and how much (RFC 1122
//!   §4.2.3.4's sender SWS avoidance and RFC 896's Nagle algorithm);
//! - [`DelayedAck`]: when to acknowledge received data (RFC 1122 §4.2.3.2,
//!   RFC 5681 §4.2).

use std::time::Duration;

/// The receiver's side of SWS avoidance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReceiverSws {
    /// RFC 1122 §4.2.3.3: the right edge moves only when the window can
    /// grow by min(buffer/2, MSS).
    #[default]
    Rfc1122,
    /// Advertise all free space at once, however little.
    Off,
}

impl ReceiverSws {
    /// The window to advertise: `buffer` is RCV.BUFF, `unread` the bytes
    /// waiting for the application (RCV.USER), `current` what remains open
    /// of the last advertised window (RCV.WND), `mss` the peer's
    /// effective send MSS.
    pub fn window(self, buffer: usize, unread: usize, current: usize, mss: usize) -> usize {
        let free = buffer.saturating_sub(unread);
        match self {
            ReceiverSws::Off => free,
            ReceiverSws::Rfc1122 => {
                let step = (buffer / 2).min(mss);
                if free.saturating_sub(current) >= step {
                    free
                } else {
                    // Keep RCV.NXT + RCV.WND where it is (never shrink).
                    current
                }
            }
        }
    }
}

/// The sender's switches: SWS avoidance and Nagle, each on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SenderPolicy {
    /// RFC 1122 §4.2.3.4's sender SWS avoidance.
    pub sws_avoidance: bool,
    /// RFC 896: no small segment while data is unacknowledged.
    pub nagle: bool,
}

impl Default for SenderPolicy {
    fn default() -> SenderPolicy {
        SenderPolicy {
            sws_avoidance: true,
            nagle: true,
        }
    }
}

/// What the sender knows when it may send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SendState {
    /// D: bytes queued and not yet sent.
    pub queued: usize,
    /// U: the usable window, SND.UNA + SND.WND − SND.NXT (cwnd included).
    pub usable_window: usize,
    /// Max(SND.WND): the largest window the peer has offered.
    pub max_send_window: usize,
    /// Eff.snd.MSS.
    pub mss: usize,
    /// SND.NXT − SND.UNA: bytes sent and not yet acknowledged.
    pub in_flight: usize,
    /// The queued data ends with a push (every socket write, here).
    pub push: bool,
    /// The SWS override timer (0.1–1 s) has expired.
    pub override_expired: bool,
    /// The application has closed: the queued data is the last there
    /// will be and a FIN follows it. Nagle then lets the small last
    /// segment go (as Linux's `tcp_nagle_test` does for a segment with
    /// FIN): held, it would wait for the ACK of the data before it, which
    /// a receiver delaying its ACKs sends only when its timer (40 ms in
    /// Linux) fires.
    pub fin_queued: bool,
}

/// The sender's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendDecision {
    /// Send a segment of this many bytes.
    Send(usize),
    /// Send nothing now.
    Wait,
}

/// The SWS avoidance fraction Fs (RFC 1122 recommends 1/2).
const FS_DIVISOR: usize = 2;

impl SenderPolicy {
    /// Whether to send now, and how many bytes.
    pub fn decide(&self, s: &SendState) -> SendDecision {
        let n = s.queued.min(s.usable_window);
        if n == 0 {
            return SendDecision::Wait;
        }
        // A full-sized segment always goes.
        if n >= s.mss {
            return SendDecision::Send(s.mss);
        }
        let nagle_allows = !self.nagle || s.in_flight == 0 || s.fin_queued;
        if !self.sws_avoidance {
            return if nagle_allows {
                SendDecision::Send(n)
            } else {
                SendDecision::Wait
            };
        }
        // (b) pushed, all of it fits, and Nagle allows a small segment.
        if s.push && s.queued <= s.usable_window && nagle_allows {
            return SendDecision::Send(n);
        }
        // (c) at least Fs of the largest window the peer offered.
        if s.max_send_window > 0 && n >= s.max_send_window / FS_DIVISOR {
            return SendDecision::Send(n);
        }
        // (d) pushed and the override timer expired.
        if s.push && s.override_expired {
            return SendDecision::Send(n);
        }
        SendDecision::Wait
    }
}

/// When to acknowledge received data: the switch `--delack` turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelayedAckPolicy {
    /// An ACK for every data segment.
    Off,
    /// RFC 1122: every second full-sized segment, or the timer.
    EverySecond(Duration),
    /// The timer alone (BSD's 200 ms fast timeout).
    Timer(Duration),
    /// When the application empties the receive queue.
    Drain,
}

impl Default for DelayedAckPolicy {
    fn default() -> DelayedAckPolicy {
        DelayedAckPolicy::EverySecond(Duration::from_millis(200))
    }
}

/// What to do about an ACK now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckDecision {
    /// Send an ACK now.
    Now,
    /// Arm the delayed-ACK timer for this long, unless it runs already.
    Delay(Duration),
    /// Nothing yet (an ACK is owed and will go with a later event).
    Hold,
}

/// The delayed-ACK state of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DelayedAck {
    policy: DelayedAckPolicy,
    /// Full-sized segments received and not yet acknowledged.
    unacked_full: u32,
    /// Whether any data is unacknowledged.
    owed: bool,
}

impl DelayedAck {
    /// No ACK owed.
    pub fn new(policy: DelayedAckPolicy) -> DelayedAck {
        DelayedAck {
            policy,
            unacked_full: 0,
            owed: false,
        }
    }

    /// Whether an ACK is owed.
    pub fn owed(&self) -> bool {
        self.owed
    }

    /// A data segment arrived. `full_sized`: it carried an MSS of data;
    /// `out_of_order`: it was above RCV.NXT or filled a hole (RFC 5681
    /// §4.2: acknowledge at once, to feed fast retransmit).
    pub fn on_data(&mut self, full_sized: bool, out_of_order: bool) -> AckDecision {
        self.owed = true;
        if full_sized {
            self.unacked_full += 1;
        }
        if out_of_order {
            return AckDecision::Now;
        }
        match self.policy {
            DelayedAckPolicy::Off => AckDecision::Now,
            DelayedAckPolicy::EverySecond(_) if self.unacked_full >= 2 => AckDecision::Now,
            DelayedAckPolicy::EverySecond(t) | DelayedAckPolicy::Timer(t) => AckDecision::Delay(t),
            DelayedAckPolicy::Drain => AckDecision::Hold,
        }
    }

    /// The application read everything queued.
    pub fn on_application_drained(&self) -> AckDecision {
        match self.policy {
            DelayedAckPolicy::Drain if self.owed => AckDecision::Now,
            _ => AckDecision::Hold,
        }
    }

    /// An ACK went out (alone or on data): nothing is owed.
    pub fn on_ack_sent(&mut self) {
        self.unacked_full = 0;
        self.owed = false;
    }
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
