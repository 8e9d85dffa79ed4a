//! Issue 19's switches seen on the wire: tcpdump on the stack end's
//! device during a real trial (Linux's TCP or a second stack at the other
//! end), checked against the stack's own counters for the same flow.
//! `--sws` is in `sws_wire.rs`. `--header-prediction` cannot be seen on the
//! wire (it changes how the stack processes a segment, not what it sends);
//! its counter test is in `switches.rs`. Needs root, TUN and tcpdump.

mod support;

use record::factor::{Checksum, DelayedAck};
use record::{StackImpl, TestKind, TrialParams};
use support::{run_captured, wire_place, On};

const BYTES: u64 = 2 << 20;
/// A full segment's payload here: MSS 1460 less the timestamp option.
const FULL: usize = 1448;

/// A 2 MB tcp-stream from `client` to `server`.
fn stream(client: StackImpl, server: StackImpl) -> TrialParams {
    let mut p = TrialParams::defaults(TestKind::TcpStream);
    p.stack = client;
    p.server_stack = server;
    p.bytes = Some(BYTES);
    p.duration_s = None;
    p
}

/// `off` sends an ACK per data segment, `every2` one per two: counted on
/// the wire (pure ACKs from the stack per data segment from Linux) and by
/// the stack (segments out per segment in).
#[test]
fn delack_off_puts_an_ack_per_data_segment_on_the_wire_and_every2_one_per_two() {
    let Some(mut place) = wire_place() else {
        return;
    };
    for level in [DelayedAck::Off, DelayedAck::Every2] {
        let mut p = stream(StackImpl::Kernel, StackImpl::Tcplab);
        p.delack = Some(level);
        let (m, c) = run_captured(&mut place, &p, On::Server);
        assert_eq!(m["bytes"], BYTES as f64, "{m:?}");
        let data = c.flow.data().count();
        let acks = c.flow.pure_acks();
        let wire = acks as f64 / data as f64;
        let (seg_in, seg_out) = (
            m["stack_server_segments_in"],
            m["stack_server_segments_out"],
        );
        let counted = seg_out / seg_in;
        eprintln!(
            "--delack {level}: wire {acks} pure ACKs for {data} data segments ({wire:.3}); \
             stack {seg_out} segments out for {seg_in} in ({counted:.3})"
        );
        // The stack counted what the wire carried, but for the handshake
        // and close around the data (the counters are read at the FIN).
        let linux_segments = c
            .flow
            .segs
            .iter()
            .filter(|s| s.src == c.flow.sender)
            .count();
        assert!(
            (linux_segments as f64 - seg_in).abs() <= 2.0,
            "{linux_segments} against {seg_in}"
        );
        let stack_segments = c.flow.segs.len() - linux_segments;
        assert!(
            (stack_segments as f64 - seg_out).abs() <= 2.0,
            "{stack_segments} against {seg_out}"
        );
        match level {
            DelayedAck::Off => assert!(wire > 0.97, "{wire:.3} ACKs per segment"),
            _ => assert!((0.45..0.6).contains(&wire), "{wire:.3} ACKs per segment"),
        }
    }
}

/// A 2000-byte request from the stack is a full segment and a 552-byte
/// tail. With Nagle on, every tail leaves only once Linux has acknowledged
/// everything before it (its delayed ACK, so ~25 transactions a second);
/// with it off, the tail follows the full segment at once.
#[test]
fn nagle_on_sends_a_short_tail_only_once_all_before_it_is_acknowledged_and_off_at_once() {
    let Some(mut place) = wire_place() else {
        return;
    };
    let mut rates = Vec::new();
    for nagle in [true, false] {
        let mut p = TrialParams::defaults(TestKind::TcpRr);
        p.stack = StackImpl::Tcplab;
        p.write_size = 2000;
        p.duration_s = Some(0.5);
        p.nagle = Some(nagle);
        let (m, c) = run_captured(&mut place, &p, On::Client);
        let client = c.flow.client().expect("the capture holds the SYN");
        // Walk the capture in order: the highest ACK from Linux so far,
        // and for each of the stack's short segments whether it came
        // only after that ACK had reached its first byte.
        let mut acked: Option<u32> = None;
        let (mut waited, mut tails) = (0, 0);
        for s in &c.flow.segs {
            if s.src != client {
                acked = s.ack.or(acked);
            } else if s.payload > 0 && s.payload < FULL {
                tails += 1;
                waited += usize::from(acked == Some(s.seq));
            }
        }
        let holds = m["stack_client_nagle_holds"];
        let rate = m["transactions_per_s"];
        eprintln!(
            "--nagle {nagle}: wire: {waited} of {tails} short tails waited for the ACK of all before them; \
             stack: {holds} output passes held by Nagle, {} short segments; {rate:.0} transactions/s",
            m["stack_client_small_segments_out"]
        );
        assert!(tails > 5, "{tails} requests");
        assert_eq!(tails as f64, m["stack_client_small_segments_out"]);
        if nagle {
            assert_eq!(waited, tails);
            assert!(holds >= tails as f64, "{holds} holds for {tails} tails");
        } else {
            assert!(waited * 10 < tails, "{waited} of {tails} waited");
            assert_eq!(holds, 0.0);
        }
        rates.push(rate);
    }
    assert!(rates[1] > 5.0 * rates[0], "{rates:?}");
}

/// Every software checksum method puts correct checksums on the wire, in
/// both directions of the stream (the stack sending data, and the stack
/// sending ACKs), as this test's own RFC 1071 sum and tshark find;
/// `offload` leaves the pseudo-header sum for the device to finish, as a
/// virtio-net header's NEEDS_CSUM requires.
#[test]
fn every_checksum_method_puts_correct_checksums_on_the_wire() {
    let Some(mut place) = wire_place() else {
        return;
    };
    for (method, device) in [
        (Checksum::Bytewise, StackImpl::Tcplab),
        (Checksum::Rfc1071, StackImpl::Tcplab),
        (Checksum::Incremental, StackImpl::TcplabTap),
        (Checksum::Offload, StackImpl::TcplabOffload),
    ] {
        for reverse in [false, true] {
            let mut p = stream(device, StackImpl::Kernel);
            p.bytes = Some(1 << 20);
            p.checksum = Some(method);
            p.reverse = reverse;
            let (m, c) = run_captured(&mut place, &p, On::Client);
            assert_eq!(m["bytes"], (1 << 20) as f64, "{m:?}");
            let client = c.flow.client().expect("the capture holds the SYN");
            let ours: Vec<_> = c.flow.sent_by(client).collect();
            let correct = ours.iter().filter(|s| s.checksum_ok).count();
            let partial = ours.iter().filter(|s| s.checksum_partial).count();
            let tshark = c.tshark_checksums();
            eprintln!(
                "--checksum {method} ({}) reverse={reverse}: {} segments from the stack, \
                 {correct} with a correct checksum, {partial} with the pseudo-header sum; \
                 tshark over the flow, both directions: {tshark:?}",
                device.name(),
                ours.len()
            );
            assert!(ours.len() > 5, "{} segments", ours.len());
            if method == Checksum::Offload {
                assert_eq!(partial, ours.len());
                assert_eq!(correct, 0);
            } else {
                assert_eq!(correct, ours.len());
                if let Some(t) = tshark {
                    // Another connection on the device (none is the
                    // stack's) is not what this test checks: say so.
                    for line in &t.bad_elsewhere {
                        eprintln!("not the flow under test, tshark finds a bad checksum: {line}");
                    }
                    assert_eq!(t.bad, 0, "{t:?}");
                    assert_eq!(t.good, c.flow.segs.len(), "{t:?}");
                }
            }
        }
    }
}
