//! The stack's TCP configuration for a trial: the trial's socket options
//! mapped onto `TcpConfig`'s switches, and refusals for options the stack
//! does not have (a trial must not pretend it ran with them).

use crate::error::StackEndError;
use record::factor::{DelayedAck, FlowControl, PcbLookup, RttEstimator, TimerClock};
use record::{Api, TestKind, TrialParams};
use stack::socket::demux::PcbLookupKind;
use stack::tcp::bsd_clock::BsdClock;
use stack::tcp::cc::{CongestionControlKind, InitialWindow};
use stack::tcp::pacing::FlowControl as StackFlowControl;
use stack::tcp::rtt::{BsdRenoConfig, RttEstimatorKind};
use stack::tcp::tcb::TcpConfig;
use stack::tcp::timers::TimerClock as StackTimerClock;
use stack::tcp::window::{DelayedAckPolicy, ReceiverSws};
use std::time::Duration;

/// The receive and send buffers when the trial sets none: the kernel's
/// default `tcp_rmem`/`tcp_wmem` ceilings are larger, but autotuning
/// rarely takes a loopback-like path past this.
pub const DEFAULT_BUFFER: usize = 1024 * 1024;

/// Half of Linux's fixed TIME-WAIT (`TCP_TIMEWAIT_LEN`, 60 s).
pub const LINUX_MSL: std::time::Duration = std::time::Duration::from_secs(30);

/// Linux's shortest delayed-ACK timeout (`TCP_DELACK_MIN`).
pub const LINUX_DELACK_MIN: std::time::Duration = std::time::Duration::from_millis(40);

/// `TcpConfig` for the stack's end of trial `p`, or why the stack cannot
/// play it.
pub fn tcp_config(p: &TrialParams) -> Result<TcpConfig, StackEndError> {
    let unsupported = |what: &str| Err(StackEndError::Unsupported(what.to_string()));
    if p.ipv6 {
        return unsupported("it speaks IPv4 only (no --ipv6)");
    }
    if p.test == TestKind::LayerRate {
        return unsupported("layer-rate sends through raw and packet sockets of the kernel");
    }
    if p.test == TestKind::UdpStream && !p.connect {
        return unsupported("--connect off (its UDP sockets name the peer in every send anyway)");
    }
    if p.send_rate_bps.is_some() {
        return unsupported("--send-rate (its end runs one event loop: a sleep there would stall its protocol work)");
    }
    if p.recv_work_ns_per_kb.is_some() && p.test != TestKind::TcpStream {
        return unsupported(
            "--recv-work other than on tcp-stream (its paced reader is tcp-stream's)",
        );
    }
    if p.load.is_some() || p.host_speed.is_some() || p.pin.is_some() {
        return unsupported("--load, --host-speed and --pin (they place kernel ends' threads)");
    }
    if p.api != Api::Write {
        return unsupported("--api other than write (it has no sendmsg, sendfile or zero-copy)");
    }
    if p.cork {
        return unsupported("--cork");
    }
    crate::dilation::check(p)?;
    let mut c = TcpConfig::default();
    if let Some(cc) = &p.cc {
        c.congestion = match cc.as_str() {
            "reno" => CongestionControlKind::Reno,
            "cubic" => CongestionControlKind::Cubic,
            "none" => CongestionControlKind::None,
            "tahoe" => CongestionControlKind::Tahoe,
            "reno90" => CongestionControlKind::Reno90,
            "vegas" => CongestionControlKind::Vegas,
            other => {
                return Err(StackEndError::Unsupported(format!(
                    "--cc {other} (it has reno, cubic, none, tahoe, reno90 and vegas)"
                )))
            }
        };
    }
    if let Some(n) = p.initial_window {
        c.initial_window = InitialWindow::Segments(n);
    }
    if let Some(mss) = p.mss {
        c.mss = u16::try_from(mss).unwrap_or(u16::MAX).min(1460);
    }
    c.send_buffer = p.sndbuf.map_or(DEFAULT_BUFFER, |b| b as usize);
    c.recv_buffer = p.rcvbuf.map_or(DEFAULT_BUFFER, |b| b as usize);
    if p.nagle == Some(true) && p.nodelay {
        return unsupported("--nagle on with --nodelay (TCP_NODELAY turns Nagle off)");
    }
    c.sender.nagle = p.nagle.unwrap_or(!p.nodelay);
    if let Some(sws) = p.sws {
        c.receiver_sws = if sws.receiver() {
            ReceiverSws::Rfc1122
        } else {
            ReceiverSws::Off
        };
        c.sender.sws_avoidance = sws.sender();
    }
    if let Some(on) = p.header_prediction {
        c.header_prediction = on;
    }
    if let Some(FlowControl::Rate(bps)) = p.flow_control {
        c.flow_control = StackFlowControl::rate(bps);
    }
    if p.rtt_estimator == Some(RttEstimator::Bsd) {
        c.rtt = RttEstimatorKind::BsdReno(BsdRenoConfig::default());
    }
    if p.timers == Some(TimerClock::Bsd) {
        c.timers.clock = StackTimerClock::Bsd(BsdClock::default());
    }
    // TIME-WAIT as long as Linux's (60 s), not RFC 9293's 4 minutes, so a
    // crr client holds as many closed connections as a kernel one would.
    c.timers.msl = LINUX_MSL;
    // And, like a Linux client with tcp_tw_reuse, a crr client takes over
    // its own TIME-WAIT tuples after a second instead of running out of
    // ephemeral ports (16,384 of them last about 5 s at 3,000 crr/s).
    c.time_wait_reuse = true;
    // A delayed ACK waits at most Linux's TCP_DELACK_MIN, not BSD's 200 ms:
    // with classic Nagle on the other side, an odd last full segment before
    // a short tail waits for this timer (the Nagle/delayed-ACK stall).
    c.delayed_ack = match p.delack {
        None | Some(DelayedAck::Every2) => DelayedAckPolicy::EverySecond(LINUX_DELACK_MIN),
        Some(DelayedAck::Off) => DelayedAckPolicy::Off,
        Some(DelayedAck::Timer(ns)) => DelayedAckPolicy::Timer(Duration::from_nanos(ns)),
        Some(DelayedAck::Drain) => DelayedAckPolicy::Drain,
    };
    Ok(c)
}

/// Whether the end answers a batch of in-order segments read in one poll
/// with one ACK (the stack's GRO-like default). An explicit `--delack`
/// turns it off, so its policy decides segment by segment: `off` is then
/// an ACK per data segment and `every2` one per two.
pub fn ack_per_batch(p: &TrialParams) -> bool {
    p.delack.is_none()
}

/// How the stack's sockets find an incoming segment's connection
/// (`--pcb-lookup`; the hash unless `list` is given).
pub fn pcb_lookup(p: &TrialParams) -> PcbLookupKind {
    match p.pcb_lookup {
        None | Some(PcbLookup::Hash) => PcbLookupKind::Hash,
        Some(PcbLookup::List) => PcbLookupKind::List,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_options_map_onto_the_config() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.cc = Some("cubic".into());
        p.mss = Some(536);
        p.rcvbuf = Some(65536);
        p.nodelay = true;
        let c = tcp_config(&p).unwrap();
        assert_eq!(c.congestion, CongestionControlKind::Cubic);
        assert_eq!(c.initial_window, InitialWindow::Rfc5681);
        assert_eq!(c.mss, 536);
        assert_eq!(c.recv_buffer, 65536);
        assert_eq!(c.send_buffer, DEFAULT_BUFFER);
        assert!(!c.sender.nagle);
        assert_eq!(c.timers.msl * 2, std::time::Duration::from_secs(60));
        assert!(c.time_wait_reuse);
        assert_eq!(
            c.delayed_ack,
            DelayedAckPolicy::EverySecond(std::time::Duration::from_millis(40))
        );
        p.nodelay = false;
        assert!(tcp_config(&p).unwrap().sender.nagle);
        for (name, kind) in [
            ("reno", CongestionControlKind::Reno),
            ("tahoe", CongestionControlKind::Tahoe),
            ("reno90", CongestionControlKind::Reno90),
            ("vegas", CongestionControlKind::Vegas),
        ] {
            p.cc = Some(name.into());
            assert_eq!(tcp_config(&p).unwrap().congestion, kind);
        }
        p.initial_window = Some(10);
        assert_eq!(
            tcp_config(&p).unwrap().initial_window,
            InitialWindow::Segments(10)
        );
    }

    #[test]
    fn stack_switches_map_onto_the_config() {
        use record::factor::Sws;
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        let default = tcp_config(&p).unwrap();
        assert_eq!(default.receiver_sws, ReceiverSws::Rfc1122);
        assert!(default.sender.sws_avoidance && default.header_prediction);
        assert!(matches!(default.rtt, RttEstimatorKind::Rfc6298(_)));
        for (level, policy) in [
            (DelayedAck::Off, DelayedAckPolicy::Off),
            (
                DelayedAck::Every2,
                DelayedAckPolicy::EverySecond(LINUX_DELACK_MIN),
            ),
            (
                DelayedAck::Timer(200_000_000),
                DelayedAckPolicy::Timer(Duration::from_millis(200)),
            ),
            (DelayedAck::Drain, DelayedAckPolicy::Drain),
        ] {
            p.delack = Some(level);
            assert_eq!(tcp_config(&p).unwrap().delayed_ack, policy);
        }
        for (sws, receiver, sender) in [
            (Sws::On, ReceiverSws::Rfc1122, true),
            (Sws::Off, ReceiverSws::Off, false),
            (Sws::ReceiverOff, ReceiverSws::Off, true),
            (Sws::SenderOff, ReceiverSws::Rfc1122, false),
        ] {
            p.sws = Some(sws);
            let c = tcp_config(&p).unwrap();
            assert_eq!((c.receiver_sws, c.sender.sws_avoidance), (receiver, sender));
        }
        assert!(!ack_per_batch(&p));
        p.delack = None;
        assert!(ack_per_batch(&p));
        p.header_prediction = Some(false);
        assert!(!tcp_config(&p).unwrap().header_prediction);
        assert_eq!(default.flow_control, StackFlowControl::Window);
        p.flow_control = Some(FlowControl::Rate(50_000_000));
        assert_eq!(
            tcp_config(&p).unwrap().flow_control,
            StackFlowControl::rate(50_000_000)
        );
        p.flow_control = Some(FlowControl::Window);
        assert_eq!(
            tcp_config(&p).unwrap().flow_control,
            StackFlowControl::Window
        );
        p.rtt_estimator = Some(RttEstimator::Bsd);
        assert!(matches!(
            tcp_config(&p).unwrap().rtt,
            RttEstimatorKind::BsdReno(_)
        ));
        p.rtt_estimator = Some(RttEstimator::Rfc6298);
        assert!(matches!(
            tcp_config(&p).unwrap().rtt,
            RttEstimatorKind::Rfc6298(_)
        ));
        assert_eq!(default.timers.clock, StackTimerClock::Exact);
        p.timers = Some(TimerClock::Bsd);
        assert_eq!(
            tcp_config(&p).unwrap().timers.clock,
            StackTimerClock::Bsd(BsdClock::default())
        );
        p.timers = Some(TimerClock::Exact);
        assert_eq!(tcp_config(&p).unwrap().timers.clock, StackTimerClock::Exact);
        // --nagle decides; unset, --nodelay does.
        p.nagle = Some(false);
        assert!(!tcp_config(&p).unwrap().sender.nagle);
        p.nagle = None;
        p.nodelay = true;
        assert!(!tcp_config(&p).unwrap().sender.nagle);
        p.nagle = Some(true);
        let e = tcp_config(&p).unwrap_err().to_string();
        assert!(e.contains("--nagle on with --nodelay"), "{e}");
    }

    #[test]
    fn what_the_stack_lacks_is_refused() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.cc = Some("bbr".into());
        assert!(tcp_config(&p).unwrap_err().to_string().contains("bbr"));
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.api = Api::Sendfile;
        assert!(tcp_config(&p).is_err());
        let mut p = TrialParams::defaults(TestKind::UdpStream);
        assert!(tcp_config(&p).is_ok());
        p.connect = false;
        assert!(tcp_config(&p).is_err());
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.send_rate_bps = Some(1_000_000);
        assert!(tcp_config(&p)
            .unwrap_err()
            .to_string()
            .contains("--send-rate"));
        let mut p = TrialParams::defaults(TestKind::TcpRr);
        p.ipv6 = true;
        assert!(tcp_config(&p).is_err());
        // --recv-work paces tcp-stream's reader, and no other.
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        p.recv_work_ns_per_kb = Some(1_000_000);
        assert!(tcp_config(&p).is_ok());
        p.test = TestKind::UdpStream;
        let e = tcp_config(&p).unwrap_err().to_string();
        assert!(e.contains("--recv-work"), "{e}");
    }

    #[test]
    fn pcb_lookup_is_the_hash_unless_list_is_given() {
        let mut p = TrialParams::defaults(TestKind::TcpStream);
        assert_eq!(pcb_lookup(&p), PcbLookupKind::Hash);
        p.pcb_lookup = Some(PcbLookup::List);
        assert_eq!(pcb_lookup(&p), PcbLookupKind::List);
        p.pcb_lookup = Some(PcbLookup::Hash);
        assert_eq!(pcb_lookup(&p), PcbLookupKind::Hash);
    }
}
