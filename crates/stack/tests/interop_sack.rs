//! Issue 18's interop matrix, the SACK rows, the stack against Linux over
//! TUN and TAP in a namespace of their own (`tcplab-sack-<pid>-<n>`): the
//! stack's device drops the 20th, 60th, 61st and 100th segment of new
//! data one way, and the other end must repair exactly those holes with
//! SACK's help — the stack as SACK sender (RFC 6675 recovery, Linux
//! reporting the holes) and as SACK receiver (its ACKs name the ranges
//! above the holes, Linux resends only them). Every byte is checked.
//! Skipped, with a message, without root or TUN.

#[path = "support/interop_rows.rs"]
mod interop_rows;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/segment_log.rs"]
mod segment_log;

use interop_rows::*;
use segment_log::{Direction, DropPlan, Seen};
use stack::phy::tun::TunKind;
use stack::tcp::state::State;
use stack::tcp::tcb::{RecoveryKind, TcpConfig};
use stack::wire::SeqNumber;
use std::net::SocketAddrV4;
use std::sync::mpsc;
use std::time::Duration;

/// What each SACK row moves.
const BYTES: u64 = 4_000_000;
/// The new-data segments dropped (1-based, one direction).
const HOLES: [u64; 4] = [20, 60, 61, 100];

fn plan() -> std::collections::BTreeSet<u64> {
    HOLES.into_iter().collect()
}

/// The (seq, end) of each dropped segment one way.
fn dropped(log: &[Seen], direction: Direction) -> Vec<(SeqNumber, SeqNumber)> {
    log.iter()
        .filter(|s| s.direction == direction && s.dropped)
        .map(|s| (s.seq, s.seq + s.len))
        .collect()
}

/// Whether an ACK the other way stops at `hole` and SACKs data at or
/// beyond `above` (the hole's end).
fn sacked_above(log: &[Seen], acks: Direction, hole: SeqNumber, above: SeqNumber) -> bool {
    log.iter()
        .filter(|s| s.direction == acks)
        .any(|s| s.ack == Some(hole) && s.sack.iter().flatten().any(|&(left, _)| left >= above))
}

/// One data segment sent again.
#[derive(Debug, Clone, Copy)]
struct Resent {
    seq: SeqNumber,
    len: usize,
    /// It ended at the highest sequence sent so far: a tail-loss probe
    /// (RFC 8985 §7) resends the last segment when its ACK is late.
    tail: bool,
}

/// Each data segment sent one way below the highest sequence already
/// sent: the retransmissions.
fn resent(log: &[Seen], direction: Direction) -> Vec<Resent> {
    let mut high: Option<SeqNumber> = None;
    let mut out = Vec::new();
    for s in log.iter().filter(|s| s.direction == direction && s.len > 0) {
        let end = s.seq + s.len;
        match high {
            Some(h) if end <= h => out.push(Resent {
                seq: s.seq,
                len: s.len,
                tail: end == h,
            }),
            _ => high = Some(end),
        }
    }
    out
}

/// (a) The stack sends 4 MB with RFC 6675 recovery; four of its segments
/// are lost on the way: Linux's ACKs SACK above each hole, the stack
/// resends only the holes, without a timeout.
fn stack_as_sack_sender(kind: TunKind, subnet: u8) {
    let config = TcpConfig {
        recovery: RecoveryKind::Sack,
        ..TcpConfig::default()
    };
    let drops = DropPlan {
        out: plan(),
        ..DropPlan::default()
    };
    let Some(mut r) = row("sack", kind, subnet, config, drops) else {
        return;
    };
    let at = SocketAddrV4::new(r.linux, LINUX_PORT);
    let linux_thread = linux_receives(&r.ns, at, None, Duration::ZERO);
    let stack = r.stack.take().unwrap();
    let (clock, ours) = (r.clock.clone(), r.ours);
    let stack_thread =
        std::thread::spawn(move || stack_sends(stack, clock, ours, at, BYTES, |_, _, _| {}));
    let linux = linux_thread.join().expect("Linux's side");
    let (side, _) = stack_thread.join().expect("the stack thread");
    let log = r.log.lock().unwrap();
    let holes = dropped(&log.segments, Direction::Out);
    let again = resent(&log.segments, Direction::Out);
    let sack_acks = log.one_way(Direction::In).filter(|s| s.has_sack()).count();
    eprintln!(
        "{kind:?} stack SACK sender: dropped {} bytes in {holes:?}; resent {} bytes {again:?}; \
         {sack_acks} SACK-bearing ACKs from Linux; {:.2} s; {:?}; Linux: {}",
        log.dropped_bytes.0,
        side.counters.retransmitted_bytes,
        side.seconds,
        side.counters,
        linux.ss.trim()
    );
    assert_eq!(linux.error, None);
    assert_eq!(linux.mismatch, None, "the first wrong byte Linux got");
    assert_eq!(linux.bytes, BYTES);
    assert_eq!(
        side.states.last(),
        Some(&State::TimeWait),
        "{:?}",
        side.states
    );
    assert!(side.sack_ts.0, "SACK negotiated");
    assert_eq!(holes.len(), HOLES.len());
    for &(hole, end) in &holes {
        assert!(
            sacked_above(&log.segments, Direction::In, hole, end),
            "Linux SACKed above the hole at {hole:?}"
        );
    }
    assert!(side.counters.fast_retransmits >= 1, "{:?}", side.counters);
    assert_eq!(side.counters.timeouts, 0, "SACK repaired every hole");
    assert_eq!(
        side.counters.retransmitted_bytes, log.dropped_bytes.0,
        "only the holes were resent"
    );
    let mut resent_seqs: Vec<SeqNumber> = again.iter().map(|r| r.seq).collect();
    resent_seqs.sort_by_key(|s| s.0);
    let mut hole_seqs: Vec<SeqNumber> = holes.iter().map(|&(seq, _)| seq).collect();
    hole_seqs.sort_by_key(|s| s.0);
    assert_eq!(resent_seqs, hole_seqs, "the resent segments are the holes");
    let out_of_order = ss_number(&linux.ss, "rcv_ooopack").unwrap_or(0);
    assert!(
        out_of_order > 0,
        "Linux queued data above the holes: {}",
        linux.ss
    );
}

#[test]
fn the_stack_repairs_four_holes_with_sack_recovery_to_linux_over_tun() {
    stack_as_sack_sender(TunKind::Tun, 1);
}

#[test]
fn the_stack_repairs_four_holes_with_sack_recovery_to_linux_over_tap() {
    stack_as_sack_sender(TunKind::Tap, 2);
}

/// (b) Linux sends 4 MB; four of its segments are lost before the stack:
/// the stack's ACKs SACK the data above each hole, and Linux's `ss`
/// counts retransmitted bytes matching the holes.
fn stack_as_sack_receiver(kind: TunKind, subnet: u8) {
    let drops = DropPlan {
        inbound: plan(),
        ..DropPlan::default()
    };
    let Some(mut r) = row("sack", kind, subnet, TcpConfig::default(), drops) else {
        return;
    };
    let stack = r.stack.take().unwrap();
    let clock = r.clock.clone();
    let (ready_tx, ready_rx) = mpsc::channel();
    let stack_thread = std::thread::spawn(move || stack_receives(stack, clock, None, ready_tx));
    ready_rx.recv().expect("the stack listens");
    let to = SocketAddrV4::new(r.ours, STACK_PORT);
    let ns = r.ns.name.clone();
    let linux = r.ns.run(move || linux_sends(ns, to, BYTES)).join().unwrap();
    let (side, _) = stack_thread.join().expect("the stack thread");
    let log = r.log.lock().unwrap();
    let holes = dropped(&log.segments, Direction::In);
    let again = resent(&log.segments, Direction::In);
    let bytes_retrans = ss_number(&linux.ss, "bytes_retrans").unwrap_or(0);
    let retrans_total = ss_field(&linux.ss, "retrans")
        .and_then(|v| v.split('/').nth(1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    eprintln!(
        "{kind:?} stack SACK receiver: dropped {} bytes in {holes:?}; Linux resent {again:?}, \
         ss bytes_retrans {bytes_retrans}, retrans total {retrans_total}; {:.2} s; {:?}; Linux: {}",
        log.dropped_bytes.1,
        side.seconds,
        side.counters,
        linux.ss.trim()
    );
    assert_eq!(side.error, None);
    assert_eq!(side.mismatch, None, "the first wrong byte the stack got");
    assert_eq!(side.bytes, BYTES);
    assert_eq!(linux.error, None);
    assert_eq!(holes.len(), HOLES.len());
    for &(hole, end) in &holes {
        assert!(
            sacked_above(&log.segments, Direction::Out, hole, end),
            "the stack SACKed above the hole at {hole:?}"
        );
    }
    let hole_seqs: Vec<SeqNumber> = holes.iter().map(|&(seq, _)| seq).collect();
    for &hole in &hole_seqs {
        let times = again.iter().filter(|r| r.seq == hole).count();
        assert_eq!(times, 1, "Linux resent the hole at {hole:?} once");
    }
    // Anything else Linux resent is a tail-loss probe of its newest
    // segment (the stack's delayed ACK outlasting Linux's probe timeout),
    // never data above a hole that the stack had SACKed.
    let others: Vec<&Resent> = again
        .iter()
        .filter(|r| !hole_seqs.contains(&r.seq))
        .collect();
    assert!(others.iter().all(|r| r.tail), "{others:?}");
    let resent_bytes: u64 = again.iter().map(|r| r.len as u64).sum();
    assert_eq!(
        bytes_retrans, resent_bytes,
        "ss agrees with the segment log"
    );
    assert_eq!(
        retrans_total,
        again.len() as u64,
        "ss agrees with the segment log"
    );
    assert_eq!(
        resent_bytes - others.iter().map(|r| r.len as u64).sum::<u64>(),
        log.dropped_bytes.1,
        "the holes' bytes"
    );
}

#[test]
fn linux_repairs_four_holes_the_stack_sacks_over_tun() {
    stack_as_sack_receiver(TunKind::Tun, 3);
}

#[test]
fn linux_repairs_four_holes_the_stack_sacks_over_tap() {
    stack_as_sack_receiver(TunKind::Tap, 4);
}
