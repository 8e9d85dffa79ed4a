//! `--sws` on real trials, from the stack's own counters and from a
//! tcpdump of the same flow: a pathological reader (an 8 KB receive
//! buffer, 512-byte reads paced by `--recv-work` to 512 KB/s) against
//! each side's SWS avoidance. Linux sends to the stack to exercise the
//! stack's receiver (`receiver-off` against `on`); the stack sends to a
//! second stack to exercise its sender (`sender-off`, `off` against `on`).
//! Needs root, TUN and tcpdump.

mod support;

use record::factor::Sws;
use record::{StackImpl, TestKind, TrialParams};
use support::capture::Flow;
use support::{run_captured, wire_place, On};

const BYTES: u64 = 256 << 10;
const RCVBUF: u64 = 8 << 10;
const READ: u64 = 512;
/// 2 ms per KB: a 512-byte read each millisecond, 512 KB/s.
const WORK_NS_PER_KB: u64 = 2_000_000;
/// A full segment's payload here: MSS 1460 less the timestamp option.
const FULL: usize = 1448;
/// RFC 1122's receiver step, min(RCV.BUFF/2, MSS), with the stack's 8 KB.
const STEP: u64 = 1460;

/// A stream from `client` to `server` into a slow reader with a small buffer.
fn slow_reader(client: StackImpl, server: StackImpl, sws: Sws) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = client;
    p.server_stack = server;
    p.bytes = Some(BYTES);
    p.duration_s = None;
    p.rcvbuf = Some(RCVBUF);
    p.read_size = READ;
    p.recv_work_ns_per_kb = Some(WORK_NS_PER_KB);
    p.sws = Some(sws);
    p
}

/// Data segments on the wire shorter than a full one.
fn small_data(flow: &Flow) -> usize {
    flow.data().filter(|s| s.payload < FULL).count()
}

#[test]
fn receiver_sws_off_advertises_tiny_windows_and_on_moves_the_edge_by_a_full_step() {
    let Some(mut place) = wire_place() else {
        return;
    };
    for sws in [Sws::ReceiverOff, Sws::On] {
        // Linux sends; the stack's server reads slowly.
        let p = slow_reader(StackImpl::Kernel, StackImpl::Tcplab, sws);
        let (m, c) = run_captured(&mut place, &p, On::Server);
        assert_eq!(m["bytes"], BYTES as f64, "{m:?}");
        let (updates, small, least) = (
            m["stack_server_window_updates"],
            m["stack_server_small_window_updates"],
            m["stack_server_min_window_update_bytes"],
        );
        let moves = c.flow.right_edge_moves();
        let small_moves = moves.iter().filter(|d| **d < STEP).count();
        let tiny_windows = c
            .flow
            .receiver_windows()
            .into_iter()
            .filter(|w| *w > 0 && *w < FULL as u64 && *w < RCVBUF / 2)
            .count();
        eprintln!(
            "--sws {}: stack: {updates} window updates, {small} below {STEP} bytes, smallest {least}; \
             wire: {} right-edge moves, {small_moves} below {STEP}, {tiny_windows} nonzero windows below the MSS, \
             {} of {} data segments from Linux below {FULL} bytes; {:.2} Mbit/s",
            sws.name(),
            moves.len(),
            small_data(&c.flow),
            c.flow.data().count(),
            m["throughput_bps"] / 1e6
        );
        eprintln!(
            "Linux retransmitted {} segments (TCP_INFO)",
            m["retransmits"]
        );
        // Not asserted: Linux's sender sends the short tail of whatever
        // window it is offered (1448 + 88 bytes into a 1536-byte edge
        // move), with the stack's receiver avoidance on or off.
        // The wire shows what the stack counted, move for move.
        assert_eq!(moves.len() as f64, updates);
        assert_eq!(small_moves as f64, small);
        assert_eq!(
            small_data(&c.flow) as f64,
            m["stack_server_small_segments_in"]
        );
        if sws.receiver() {
            assert_eq!(small, 0.0);
            assert!(least >= STEP as f64, "smallest move {least}");
            assert!(moves.iter().all(|d| *d >= STEP), "{moves:?}");
        } else {
            // Each read's 512 bytes (or a few of them) offered at once.
            assert!(small > updates / 2.0, "{small} of {updates}");
            assert!(least <= READ as f64, "smallest move {least}");
            assert!(tiny_windows > 10, "{tiny_windows} tiny windows");
        }
    }
}

#[test]
fn sender_sws_off_fills_every_sliver_of_window_and_on_sends_full_segments() {
    let Some(mut place) = wire_place() else {
        return;
    };
    for sws in [Sws::SenderOff, Sws::Off, Sws::On] {
        // The stack sends to a second stack that reads slowly; Nagle off,
        // so SWS avoidance alone decides on short segments.
        let mut p = slow_reader(StackImpl::Tcplab, StackImpl::Tcplab, sws);
        p.nagle = Some(false);
        let (m, c) = run_captured(&mut place, &p, On::Client);
        assert_eq!(m["bytes"], BYTES as f64, "{m:?}");
        let sent = c.flow.data().count();
        let small_wire = small_data(&c.flow);
        let smallest_wire = c.flow.data().map(|s| s.payload).min().unwrap_or(0);
        let small = m["stack_client_small_segments_out"];
        let moves = c.flow.right_edge_moves();
        let small_moves = moves.iter().filter(|d| **d < STEP).count();
        eprintln!(
            "--sws {}: stack sender: {small} segments below {FULL} bytes, smallest {}; \
             wire: {small_wire} of {sent} data segments below {FULL}, smallest {smallest_wire}, \
             {small_moves} of {} right-edge moves below {STEP}; {:.2} Mbit/s",
            sws.name(),
            m["stack_client_min_segment_out_bytes"],
            moves.len(),
            m["throughput_bps"] / 1e6
        );
        assert_eq!(small_wire as f64, small);
        assert_eq!(
            smallest_wire as f64,
            m["stack_client_min_segment_out_bytes"]
        );
        assert_eq!(small_moves as f64, m["stack_server_small_window_updates"]);
        if sws.sender() {
            // The stream's 56-byte tail (256 KB is 181 full segments and
            // 56 bytes), and at most one SWS-override send.
            assert!(small <= 2.0, "{small} small segments");
        } else {
            assert!(small_wire * 4 > sent, "{small_wire} of {sent}");
        }
        if sws.receiver() {
            assert_eq!(small_moves, 0, "{moves:?}");
        } else {
            // Both off: the classic syndrome, a read's 512 bytes offered
            // and sent at a time.
            assert!(
                small_moves * 2 > moves.len(),
                "{small_moves} of {}",
                moves.len()
            );
            let reads = c.flow.data().filter(|s| s.payload == READ as usize).count();
            assert!(
                reads * 2 > sent,
                "{reads} of {sent} segments of {READ} bytes"
            );
        }
    }
}
