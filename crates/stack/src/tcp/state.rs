//! The eleven states of RFC 9293 §3.3.2's state diagram.

/// A connection's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// No connection.
    Closed,
    /// Waiting for a SYN.
    Listen,
    /// SYN sent, waiting for the peer's SYN.
    SynSent,
    /// SYN received and SYN sent, waiting for the ACK of ours.
    SynReceived,
    /// Open: data flows both ways.
    Established,
    /// We closed first and our FIN is not yet acknowledged.
    FinWait1,
    /// Our FIN is acknowledged; waiting for the peer's.
    FinWait2,
    /// The peer closed; we may still send.
    CloseWait,
    /// Both closed at once; waiting for the ACK of our FIN.
    Closing,
    /// The peer closed first, then we did; waiting for the ACK of our FIN.
    LastAck,
    /// Both FINs acknowledged; waiting 2·MSL for stray segments.
    TimeWait,
}

impl State {
    /// Whether both ISNs are known (RFC 9293's "synchronized" states,
    /// SYN-RECEIVED included as §3.10.7.4 treats it).
    pub fn is_synchronized(self) -> bool {
        !matches!(self, State::Closed | State::Listen | State::SynSent)
    }

    /// Whether the peer may still send data we accept.
    pub fn receives_data(self) -> bool {
        matches!(
            self,
            State::SynReceived | State::Established | State::FinWait1 | State::FinWait2
        )
    }

    /// Whether the application may still queue data to send. Not in
    /// LISTEN: RFC 9293's optional LISTEN --SEND--> SYN-SENT arc is not
    /// taken (a listener has no peer; Linux refuses it too).
    pub fn sends_data(self) -> bool {
        matches!(
            self,
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
        )
    }
}
