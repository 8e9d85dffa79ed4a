//! Issue 29's period congestion control against Linux over TUN, in a
//! namespace of its own (`tcplab-cc-<pid>-<n>`): the stack sends to a
//! Linux receiver through a device that drops one chosen segment of new
//! data, and its loss trace (`Connection::cwnd_trace`) and the device's
//! per-segment record show how each controller answered:
//!
//! - `tahoe`: the fast retransmit sets cwnd to one segment, no new data
//!   leaves until the retransmission is acknowledged, and slow start
//!   begins again from two segments;
//! - `reno90` (4.3BSD-Reno) and `reno` (RFC 6582 NewReno): cwnd to half
//!   the flight, inflated by the duplicate ACKs so new data leaves during
//!   recovery, and cwnd = ssthresh when recovery ends (reno90: one
//!   segment more, opened on the exit ACK as Net/2 did).
//!
//! And `--initial-window`: on a fresh connection, the segments sent
//! before the first ACK of data comes back are IW for 1, 2, 4 and 10.
//! Every byte Linux reads is checked. Skipped, with a message, without
//! root or TUN.

#[path = "support/interop_rows.rs"]
mod interop_rows;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/segment_log.rs"]
mod segment_log;

use interop_rows::*;
use segment_log::{Direction, DropPlan, Seen};
use stack::phy::tun::TunKind;
use stack::tcp::cc::{half_flight, CongestionControlKind, InitialWindow};
use stack::tcp::cwnd_trace::{CwndCause, CwndEvent};
use stack::tcp::state::State;
use stack::tcp::tcb::TcpConfig;
use std::net::SocketAddrV4;
use std::time::Duration;

/// The new-data segment the device drops.
const DROPPED: u64 = 40;

/// What one transfer showed.
struct Run {
    side: StackSide,
    linux: LinuxSide,
    trace: Vec<CwndEvent>,
    /// The payload of a full segment (the MSS less the timestamp option).
    data_mss: usize,
    log: Vec<Seen>,
}

/// The stack sends `bytes` to Linux with `config`, dropping the listed
/// new-data segments; `None` without root or TUN.
fn transfer(subnet: u8, config: TcpConfig, drops: &[u64], bytes: u64) -> Option<Run> {
    let plan = DropPlan {
        out: drops.iter().copied().collect(),
        ..DropPlan::default()
    };
    let mut r = row("cc", TunKind::Tun, subnet, config, plan)?;
    let at = SocketAddrV4::new(r.linux, LINUX_PORT);
    let linux_thread = linux_receives(&r.ns, at, None, Duration::ZERO);
    let stack = r.stack.take().unwrap();
    let (clock, ours) = (r.clock.clone(), r.ours);
    let stack_thread = std::thread::spawn(move || {
        let mut trace = Vec::new();
        let (side, _) = stack_sends(stack, clock, ours, at, bytes, |stack, c, _| {
            if let Ok(conn) = stack.tcp.connection(c) {
                trace = conn.cwnd_trace().to_vec();
            }
        });
        (side, trace)
    });
    let (side, trace) = stack_thread.join().expect("the stack thread");
    assert!(
        side.states.contains(&State::Established),
        "the stack never connected: {:?} {:?} {:?}",
        side.states,
        side.error,
        r.log.lock().unwrap().segments
    );
    let linux = linux_thread.join().expect("Linux's side");
    let data_mss = side.send_mss - if side.sack_ts.1 { 12 } else { 0 };
    let log = r.log.lock().unwrap().segments.clone();
    Some(Run {
        side,
        linux,
        trace,
        data_mss,
        log,
    })
}

fn assert_delivered(run: &Run, bytes: u64) {
    assert_eq!(run.linux.error, None);
    assert_eq!(run.linux.mismatch, None, "the first wrong byte Linux got");
    assert_eq!(run.linux.bytes, bytes);
    assert_eq!(run.side.states.last(), Some(&State::TimeWait));
}

/// New-data segments the stack sent after each segment from Linux,
/// before the next one: the bursts each ACK released, from the first
/// retransmission on. Also the index (in the bursts) of the first ACK
/// that covered the retransmission.
fn bursts_after_retransmission(log: &[Seen]) -> (Vec<usize>, usize) {
    let mut high = None;
    let mut retransmitted = None;
    let mut bursts: Vec<usize> = Vec::new();
    let mut repaired_at = None;
    for s in log {
        match s.direction {
            Direction::Out if s.len > 0 => {
                let end = s.seq + s.len;
                match high {
                    Some(h) if end <= h => {
                        retransmitted.get_or_insert(s.seq);
                    }
                    _ => {
                        high = Some(end);
                        if retransmitted.is_some() {
                            if let Some(last) = bursts.last_mut() {
                                *last += 1;
                            } else {
                                bursts.push(1);
                            }
                        }
                    }
                }
            }
            Direction::In if retransmitted.is_some() => {
                if repaired_at.is_none() && s.ack.is_some_and(|a| a > retransmitted.unwrap()) {
                    repaired_at = Some(bursts.len());
                }
                bursts.push(0);
            }
            _ => {}
        }
    }
    (
        bursts,
        repaired_at.expect("the retransmission was acknowledged"),
    )
}

/// New-data segments sent after the retransmission, before its ACK.
fn sent_in_recovery(bursts: &[usize], repaired_at: usize) -> usize {
    bursts[..repaired_at].iter().sum()
}

fn one_loss(subnet: u8, kind: CongestionControlKind) -> Option<(Run, Vec<usize>, usize)> {
    const BYTES: u64 = 2_000_000;
    let config = TcpConfig {
        congestion: kind,
        ..TcpConfig::default()
    };
    // The property needs a flight worth halving when the segment is lost.
    // A sender held off the CPU (a loaded CI host) goes idle, and BSD's
    // controllers restart after idle at one segment: the loss then meets a
    // flight of 6 (seen once in CI, against 21-22 otherwise). Such a run
    // cannot show the property, so it is run again, up to three times.
    let mut tries = 0;
    let run = loop {
        tries += 1;
        let run = transfer(subnet, config.clone(), &[DROPPED], BYTES)?;
        let small = run
            .trace
            .first()
            .is_some_and(|e| e.flight < 8 * run.data_mss);
        if small && tries < 3 {
            eprintln!("--cc {kind:?}: the loss met a flight under 8 segments; running again");
            continue;
        }
        break run;
    };
    assert_delivered(&run, BYTES);
    let (bursts, repaired_at) = bursts_after_retransmission(&run.log);
    let mss = run.data_mss;
    let segs = |b: usize| b as f64 / mss as f64;
    let shown: Vec<String> = run
        .trace
        .iter()
        .map(|e| {
            format!(
                "{:?} cwnd {:.2} ssthresh {:.2} flight {:.2} segments",
                e.cause,
                segs(e.cwnd),
                segs(e.ssthresh),
                segs(e.flight)
            )
        })
        .collect();
    eprintln!(
        "--cc {kind:?}: mss {mss}; cwnd trace {shown:?}; new segments sent while the hole was open \
         {}; bursts after each ACK from the retransmission on {:?} (ACK #{repaired_at} covered \
         it); counters {:?}",
        sent_in_recovery(&bursts, repaired_at),
        &bursts[..bursts.len().min(repaired_at + 12)],
        run.side.counters
    );
    assert_eq!(run.side.counters.timeouts, 0, "{:?}", run.side.counters);
    assert_eq!(
        run.side.counters.fast_retransmits, 1,
        "{:?}",
        run.side.counters
    );
    let first = run.trace.first().expect("a loss event");
    assert_eq!(first.cause, CwndCause::FastRetransmit);
    assert_eq!(first.ssthresh, half_flight(first.flight, mss));
    assert!(first.flight >= 8 * mss, "a flight worth halving: {first:?}");
    Some((run, bursts, repaired_at))
}

#[test]
fn tahoe_falls_to_one_segment_and_sends_nothing_new_until_the_hole_is_filled() {
    let Some((run, bursts, repaired_at)) = one_loss(40, CongestionControlKind::Tahoe) else {
        return;
    };
    let mss = run.data_mss;
    let first = run.trace[0];
    assert_eq!(first.cwnd, mss, "one segment after the fast retransmit");
    assert!(
        run.trace.iter().all(|e| e.cause != CwndCause::RecoveryExit),
        "no fast recovery: {:?}",
        run.trace
    );
    assert_eq!(sent_in_recovery(&bursts, repaired_at), 0, "{bursts:?}");
    // The ACK of the hole (everything, one loss) finds cwnd one segment:
    // slow start adds one, and two new segments leave.
    assert_eq!(bursts[repaired_at], 2, "{bursts:?}");
}

/// `opens_on_exit`: cwnd holds one segment above ssthresh when recovery
/// ends (reno90 opens cwnd on the exit ACK, as Net/2 did).
fn halving(subnet: u8, kind: CongestionControlKind, opens_on_exit: bool) {
    let Some((run, bursts, repaired_at)) = one_loss(subnet, kind) else {
        return;
    };
    let first = run.trace[0];
    assert_eq!(first.cwnd, first.ssthresh, "cwnd to half the flight");
    let exit_above = if opens_on_exit { run.data_mss } else { 0 };
    let exit = run
        .trace
        .iter()
        .find(|e| e.cause == CwndCause::RecoveryExit)
        .expect("recovery ended");
    assert_eq!(
        exit.cwnd,
        first.ssthresh + exit_above,
        "deflated to ssthresh (+{exit_above})"
    );
    assert!(
        sent_in_recovery(&bursts, repaired_at) > 0,
        "duplicate ACKs inflated cwnd past the flight: {bursts:?}"
    );
}

#[test]
fn reno90_halves_and_inflates_through_fast_recovery() {
    halving(41, CongestionControlKind::Reno90, true);
}

#[test]
fn newreno_halves_and_inflates_through_fast_recovery() {
    halving(42, CongestionControlKind::Reno, false);
}

/// New-data segments sent before the first ACK of data came back.
fn first_flight(log: &[Seen]) -> usize {
    let first = log
        .iter()
        .find(|s| s.direction == Direction::Out && s.len > 0)
        .expect("data sent")
        .seq;
    let mut count = 0;
    for s in log {
        match s.direction {
            Direction::Out if s.len > 0 => count += 1,
            Direction::In if s.ack.is_some_and(|a| a > first) => break,
            _ => {}
        }
    }
    count
}

#[test]
fn the_first_flight_to_linux_is_the_initial_window() {
    let mut seen = Vec::new();
    for (i, n) in [1u32, 2, 4, 10].into_iter().enumerate() {
        // More than the send buffer holds: a shutdown while the SYN is
        // out would delete the connection (RFC 9293 §3.10.4).
        const BYTES: u64 = 1_000_000;
        let config = TcpConfig {
            initial_window: InitialWindow::Segments(n),
            ..TcpConfig::default()
        };
        let Some(run) = transfer(43 + i as u8, config, &[], BYTES) else {
            return;
        };
        assert_delivered(&run, BYTES);
        seen.push((n, first_flight(&run.log)));
    }
    eprintln!("(IW, segments before the first ACK of data): {seen:?}");
    for (n, flight) in seen {
        assert_eq!(flight, n as usize, "IW {n}");
    }
}

/// Two holes in one window: the fast retransmits and the windows they set.
fn two_holes(subnet: u8, kind: CongestionControlKind) -> Option<Run> {
    const BYTES: u64 = 2_000_000;
    let config = TcpConfig {
        congestion: kind,
        ..TcpConfig::default()
    };
    let run = transfer(subnet, config, &[DROPPED, DROPPED + 4], BYTES)?;
    assert_delivered(&run, BYTES);
    let mss = run.data_mss as f64;
    let shown: Vec<String> = run
        .trace
        .iter()
        .map(|e| {
            format!(
                "{:?} cwnd {:.2} flight {:.2}",
                e.cause,
                e.cwnd as f64 / mss,
                e.flight as f64 / mss
            )
        })
        .collect();
    eprintln!(
        "--cc {kind:?}, two holes: {shown:?}; fast retransmits {}, timeouts {}; {:.2} s (Linux {:.2} s)",
        run.side.counters.fast_retransmits,
        run.side.counters.timeouts,
        run.side.seconds,
        run.linux.seconds
    );
    Some(run)
}

#[test]
fn reno90_halves_twice_for_two_holes_where_newreno_halves_once() {
    let Some(reno90) = two_holes(47, CongestionControlKind::Reno90) else {
        return;
    };
    let Some(newreno) = two_holes(48, CongestionControlKind::Reno) else {
        return;
    };
    let retransmits = |r: &Run| {
        r.trace
            .iter()
            .filter(|e| e.cause == CwndCause::FastRetransmit)
            .map(|e| e.cwnd)
            .collect::<Vec<_>>()
    };
    // NewReno repairs the second hole on the partial ACK, inside one
    // recovery; 4.3BSD-Reno leaves recovery on it and needs a second
    // fast retransmit, which halves what is left in flight again.
    assert_eq!(newreno.side.counters.fast_retransmits, 1);
    assert_eq!(retransmits(&newreno).len(), 1);
    let r90 = retransmits(&reno90);
    assert_eq!(r90.len(), 2, "{:?}", reno90.trace);
    assert_eq!(reno90.side.counters.fast_retransmits, 2);
    // Each halving is of the flight at its own fast retransmit (which the
    // first recovery's inflation had grown).
    for e in reno90
        .trace
        .iter()
        .filter(|e| e.cause == CwndCause::FastRetransmit)
    {
        assert_eq!(e.ssthresh, half_flight(e.flight, reno90.data_mss), "{e:?}");
    }
}

#[test]
fn vegas_leaves_slow_start_on_delay_alone() {
    const BYTES: u64 = 2_000_000;
    let config = TcpConfig {
        congestion: CongestionControlKind::Vegas,
        ..TcpConfig::default()
    };
    let Some(mut r) = row("cc", TunKind::Tun, 49, config, DropPlan::default()) else {
        return;
    };
    let at = SocketAddrV4::new(r.linux, LINUX_PORT);
    let linux_thread = linux_receives(&r.ns, at, None, Duration::ZERO);
    let stack = r.stack.take().unwrap();
    let (clock, ours) = (r.clock.clone(), r.ours);
    let stack_thread = std::thread::spawn(move || {
        // (cwnd, ssthresh, smoothed RTT) as polled, changes only.
        let mut seen: Vec<(usize, usize, Option<Duration>)> = Vec::new();
        let (side, _) = stack_sends(stack, clock, ours, at, BYTES, |stack, c, _| {
            if let Ok(conn) = stack.tcp.connection(c) {
                let now = (conn.cwnd(), conn.ssthresh(), conn.srtt());
                if seen.last().map(|s| (s.0, s.1)) != Some((now.0, now.1)) {
                    seen.push(now);
                }
            }
        });
        (side, seen)
    });
    let (side, seen) = stack_thread.join().expect("the stack thread");
    let linux = linux_thread.join().expect("Linux's side");
    let mss = side.send_mss - 12;
    let shown: Vec<String> = seen
        .iter()
        .map(|&(cwnd, ssthresh, srtt)| {
            let ss = if ssthresh == usize::MAX {
                "inf".to_string()
            } else {
                format!("{:.2}", ssthresh as f64 / mss as f64)
            };
            format!(
                "cwnd {:.2} ssthresh {ss} srtt {srtt:?}",
                cwnd as f64 / mss as f64
            )
        })
        .collect();
    eprintln!(
        "--cc vegas, no loss: {shown:?}; {} timeouts, {} fast retransmits",
        side.counters.timeouts, side.counters.fast_retransmits
    );
    assert_eq!(linux.mismatch, None);
    assert_eq!(linux.bytes, BYTES);
    assert_eq!(side.counters.retransmits, 0, "{:?}", side.counters);
    // No loss, yet slow start ended: Diff passed γ on the RTT alone.
    assert!(
        seen.iter().any(|&(_, ssthresh, _)| ssthresh != usize::MAX),
        "{shown:?}"
    );
}
