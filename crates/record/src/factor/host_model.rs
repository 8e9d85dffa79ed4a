//! A paper's machine on tcplab stack ends (`--host-model`, issue 29): the
//! mechanisms the model sets on a point. Its CPU speeds come from a
//! calibration on this host before the trials (`analysis::host_model`),
//! since they depend on this host as much as on the paper's.
//!
//! What the 386-33 sets, and where each comes from:
//! - 4096-byte socket buffers (Huang & Chen §2: "On each machine, 4096
//!   bytes of buffer is preallocated for the socket"): `--sndbuf 4096`,
//!   so at most 4 KB is in flight, and `--rcvbuf 4096` on a tcplab
//!   receiver;
//! - an ACK for every segment ("an ACK is sent by the receiver
//!   immediately after a packet is received"): `--delack off` on a
//!   tcplab receiver; on a Linux one `--quickack on` (for tcp-stream,
//!   the only test that takes it) and a 64 KB receive buffer: with a
//!   4 KB one Linux also sent a window update after most reads, 1.49 ACKs
//!   per segment at MSS 1024 against 1.00 with 64 KB;
//! - a linearly searched routing table, looked up for every packet
//!   (Table 2; §4 proposes caching the route as an improvement):
//!   `--route-table linear`, and the route cache left off;
//! - a checksum summed 16 bits at a time (§3: assembly, with a byte swap
//!   per word on the PC): `--checksum bytewise`;
//! - the paper does not name the TCP it derived from "a commercialized
//!   product"; the period's reference implementation, 4.3BSD-Reno, fills
//!   in its timers, estimator, initial window and connection lookup:
//!   `--timers bsd`, `--rtt-estimator bsd`, `--initial-window 1`,
//!   `--pcb-lookup list`. Congestion control is left as it is: with 4 KB
//!   in flight on a lossless link the send buffer, not the controller,
//!   bounds what is sent once slow start has opened four segments, and
//!   the 4.3BSD controllers need tcplab's stack at both ends.

use super::stack_switches::TimerClock;
use super::stack_switches::{Checksum, DelayedAck, HostModel, PcbLookup, RouteTable, RttEstimator};
use super::{TestKind, TrialParams};

/// The send buffer of the 386-33 (bytes).
pub const I386_BUFFER: u64 = 4096;

/// The receive buffer the 386-33 model gives a receiver: enough that a
/// Linux receiver's window updates add no ACKs (bytes).
pub const I386_RECEIVE_BUFFER: u64 = 64 << 10;

impl HostModel {
    /// The segment size whose per-block costs set the model's speeds:
    /// Table 1's column that Huang & Chen analyse (Figs 1–4), MSS 1024.
    pub fn reference_mss(self) -> u32 {
        match self {
            HostModel::I386At33 => 1024,
        }
    }

    /// The machine, in words, with the paper it comes from.
    pub fn describe(self) -> &'static str {
        match self {
            HostModel::I386At33 => "Huang & Chen's IBM PC-386 at 33 MHz (Table 1)",
        }
    }

    /// Sets the model's mechanisms on `p`, each only where its flag was
    /// not given (`given(flag)` says whether it was): a flag given
    /// explicitly wins over the model.
    pub fn fill(self, p: &mut TrialParams, given: impl Fn(&str) -> bool) {
        match self {
            HostModel::I386At33 => {
                let free = |flag: &str| !given(flag);
                if free("sndbuf") {
                    p.sndbuf = Some(I386_BUFFER);
                }
                // The receiving end: a Linux receiver gets the larger
                // buffer, so its window updates add no ACKs.
                let client_sends =
                    !(p.reverse && matches!(p.test, TestKind::TcpStream | TestKind::UdpStream));
                let receiver = if client_sends {
                    p.server_stack
                } else {
                    p.stack
                };
                if free("rcvbuf") {
                    p.rcvbuf = Some(if receiver.is_tcplab() {
                        I386_BUFFER
                    } else {
                        I386_RECEIVE_BUFFER
                    });
                }
                if free("delack") {
                    p.delack = Some(DelayedAck::Off);
                }
                if free("quickack") && p.test == TestKind::TcpStream {
                    p.quickack = true;
                }
                if free("route-table") {
                    p.route_table = Some(RouteTable::Linear);
                }
                if free("checksum") {
                    p.checksum = Some(Checksum::Bytewise);
                }
                if free("timers") {
                    p.timers = Some(TimerClock::Bsd);
                }
                if free("rtt-estimator") {
                    p.rtt_estimator = Some(RttEstimator::Bsd);
                }
                if free("initial-window") {
                    p.initial_window = Some(1);
                }
                if free("pcb-lookup") {
                    p.pcb_lookup = Some(PcbLookup::List);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::factor::TestKind;

    #[test]
    fn the_386_sets_its_mechanisms_where_no_flag_was_given() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        HostModel::I386At33.fill(&mut p, |_| false);
        assert_eq!((p.sndbuf, p.rcvbuf), (Some(4096), Some(65536)));
        assert_eq!(p.delack, Some(DelayedAck::Off));
        // A tcplab receiver keeps the paper's 4 KB; so does a tcplab
        // client receiving a reversed stream.
        let mut pair = TrialParams::defaults(TestKind::TcpStream);
        pair.server_stack = crate::factor::StackImpl::Tcplab;
        HostModel::I386At33.fill(&mut pair, |_| false);
        assert_eq!(pair.rcvbuf, Some(4096));
        let mut back = TrialParams::defaults(TestKind::TcpStream);
        back.stack = crate::factor::StackImpl::Tcplab;
        back.reverse = true;
        HostModel::I386At33.fill(&mut back, |_| false);
        assert_eq!(back.rcvbuf, Some(4096));
        assert!(p.quickack);
        assert_eq!(p.route_table, Some(RouteTable::Linear));
        assert_eq!(p.checksum, Some(Checksum::Bytewise));
        assert_eq!(p.timers, Some(TimerClock::Bsd));
        assert_eq!(p.rtt_estimator, Some(RttEstimator::Bsd));
        assert_eq!(p.initial_window, Some(1));
        assert_eq!(p.pcb_lookup, Some(PcbLookup::List));
        // Table 2's lookup per packet: no route cache.
        assert_eq!(p.route_cache, None);
        // What the paper does not constrain is left alone.
        assert_eq!(p.cc, None);
        assert_eq!(p.mss, None);
        // --quickack is tcp-stream's only.
        let mut rr = TrialParams::defaults(TestKind::TcpRr);
        HostModel::I386At33.fill(&mut rr, |_| false);
        assert!(!rr.quickack);
        assert_eq!(rr.delack, Some(DelayedAck::Off));
    }

    #[test]
    fn a_flag_given_explicitly_wins_over_the_model() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.sndbuf = Some(65536);
        p.timers = Some(TimerClock::Exact);
        HostModel::I386At33.fill(&mut p, |flag| flag == "sndbuf" || flag == "timers");
        assert_eq!(p.sndbuf, Some(65536));
        assert_eq!(p.timers, Some(TimerClock::Exact));
        assert_eq!(p.rcvbuf, Some(65536));
    }

    #[test]
    fn the_model_reads_back_as_its_flag_takes_it() {
        assert_eq!(HostModel::parse("386-33"), Ok(HostModel::I386At33));
        assert_eq!(HostModel::I386At33.to_string(), "386-33");
        let json = serde_json::to_string(&HostModel::I386At33).unwrap();
        assert_eq!(json, "\"386-33\"");
        let e = HostModel::parse("486").unwrap_err();
        assert!(e.why.contains("expected 386-33"), "{}", e.why);
    }
}
