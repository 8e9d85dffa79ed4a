//! The congestion window at each loss event: what the controller set on
//! a fast retransmit, at the end of recovery and on a retransmission
//! timeout, with ssthresh and the flight then. Kept for the first
//! [`CWND_TRACE_LEN`] events of a connection (a test or a trial reads how
//! Tahoe, Reno and NewReno answered a loss without a packet capture);
//! the ACK-by-ACK growth between events is not recorded.

use super::tcb::Connection;
use crate::time::Instant;

/// How many events a connection keeps (the first ones).
pub const CWND_TRACE_LEN: usize = 64;

/// What set the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CwndCause {
    /// Three duplicate ACKs (or RFC 6675's loss) retransmitted SND.UNA.
    FastRetransmit,
    /// Recovery ended (the recovery point, or for 4.3BSD-Reno any new
    /// data, was acknowledged).
    RecoveryExit,
    /// The retransmission timer expired.
    Timeout,
}

/// One loss event's windows, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CwndEvent {
    /// When.
    pub at: Instant,
    /// What set it.
    pub cause: CwndCause,
    /// cwnd after the controller answered (without NewReno's inflation).
    pub cwnd: usize,
    /// ssthresh after it.
    pub ssthresh: usize,
    /// SND.MAX − SND.UNA at the time.
    pub flight: usize,
}

impl Connection {
    /// Records the controller's windows after `cause`.
    pub(crate) fn note_cwnd(&mut self, cause: CwndCause, at: Instant) {
        if self.cwnd_trace.len() < CWND_TRACE_LEN {
            self.cwnd_trace.push(CwndEvent {
                at,
                cause,
                cwnd: self.cc.cwnd(),
                ssthresh: self.cc.ssthresh(),
                flight: self.snd_max - self.snd_una,
            });
        }
    }

    /// The windows at this connection's first loss events.
    pub fn cwnd_trace(&self) -> &[CwndEvent] {
        &self.cwnd_trace
    }

    /// The slow-start threshold, bytes.
    pub fn ssthresh(&self) -> usize {
        self.cc.ssthresh()
    }
}
