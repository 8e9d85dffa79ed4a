//! Issue 18's interop matrix, the blind-RST row (RFC 5961 §3), over TUN
//! and TAP in a namespace of its own (`tcplab-rst-<pid>-<n>`): while the
//! stack sends to Linux, an off-path attacker in Linux's namespace sends
//! a RST forged with Linux's address and port, built with the stack's own
//! `wire` emitters (checksums right) and written through a raw socket, so
//! Linux routes it into the device and the stack receives it. A sequence
//! number inside the stack's receive window but not RCV.NXT draws a
//! challenge ACK and changes nothing; exactly RCV.NXT resets the
//! connection (the positive control; a duplicate of old data, forged
//! into Linux, then makes Linux send a segment the stack answers with its
//! RST). Skipped without root or TUN.

#[path = "support/interop_rows.rs"]
mod interop_rows;
#[path = "support/netns.rs"]
mod netns;
#[path = "support/segment_log.rs"]
mod segment_log;

use interop_rows::*;
use nix::sys::socket::{
    sendto, socket, AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, SockaddrIn,
};
use segment_log::{Direction, DropPlan};
use stack::phy::tun::TunKind;
use stack::socket::TcpSocketError;
use stack::tcp::state::State;
use stack::tcp::tcb::{ConnectionError, TcpConfig};
use stack::wire::{
    ChecksumMethod, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, SeqNumber, TcpControl,
    TcpPacket, TcpRepr,
};
use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

/// What the stack sends.
const BYTES: u64 = 4_000_000;
/// The RST is forged once the stack has queued this much.
const INJECT_AFTER: u64 = 1_000_000;
/// How far above RCV.NXT the blind RST guesses.
const BLIND_OFFSET: usize = 1000;

/// An IPv4 datagram holding a bare RST from `from` to `to` at `seq`.
fn forged_rst(from: SocketAddrV4, to: SocketAddrV4, seq: SeqNumber) -> Vec<u8> {
    let mut tcp = TcpRepr::bare(from.port(), to.port(), seq);
    tcp.control = TcpControl::Rst;
    forged_datagram(from, to, &tcp)
}

/// A segment as if from `from`, whole with its IPv4 header.
fn forged_datagram(from: SocketAddrV4, to: SocketAddrV4, tcp: &TcpRepr<'_>) -> Vec<u8> {
    let (src, dst) = (Ipv4Address::from(*from.ip()), Ipv4Address::from(*to.ip()));
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: dst,
        next_header: IpProtocol::Tcp,
        payload_len: tcp.buffer_len(),
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 5961,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        options_len: 0,
    };
    let mut datagram = vec![0u8; ip.buffer_len()];
    ip.emit(
        &mut Ipv4Packet::new_unchecked(&mut datagram[..]),
        ChecksumMethod::Rfc1071,
    );
    let header_len = ip.header_len();
    tcp.emit(
        &mut TcpPacket::new_unchecked(&mut datagram[header_len..]),
        src,
        dst,
        ChecksumMethod::Rfc1071,
    );
    datagram
}

/// What the row saw around the forged RST.
struct Forged {
    /// The stack's end of the connection.
    local: SocketAddrV4,
    /// The stack's SND.UNA when it was sent.
    snd_una: SeqNumber,
    /// RCV.NXT when it was sent.
    rcv_nxt: SeqNumber,
    /// Its sequence number.
    seq: SeqNumber,
    /// The stack's challenge ACKs before it.
    challenge_acks_before: u64,
}

/// The stack sends [`BYTES`] to Linux; after [`INJECT_AFTER`] a RST at
/// RCV.NXT + `offset` is forged from Linux's side. Returns the stack's
/// side, Linux's, what was forged, and the segment log.
fn forge_during_transfer(
    kind: TunKind,
    subnet: u8,
    offset: usize,
) -> Option<(StackSide, LinuxSide, Forged, Vec<segment_log::Seen>)> {
    let mut r = row(
        "rst",
        kind,
        subnet,
        TcpConfig::default(),
        DropPlan::default(),
    )?;
    let raw: OwnedFd =
        r.ns.run(|| {
            socket(
                AddressFamily::Inet,
                SockType::Raw,
                SockFlag::empty(),
                SockProtocol::Raw,
            )
        })
        .join()
        .unwrap()
        .expect("a raw socket in the namespace");
    let at = SocketAddrV4::new(r.linux, LINUX_PORT);
    let linux_thread = linux_receives(&r.ns, at, None, Duration::ZERO);
    let stack = r.stack.take().unwrap();
    let mut forged = None;
    let (side, mut stack) = stack_sends(
        stack,
        r.clock.clone(),
        r.ours,
        at,
        BYTES,
        |stack, c, side| {
            if forged.is_some() || side.bytes < INJECT_AFTER {
                return;
            }
            let conn = stack.tcp.connection(c).expect("the connection");
            let (snd_una, _, rcv_nxt) = conn.sequence_points();
            let SocketAddr::V4(local) = conn.tuple().local else {
                unreachable!("IPv4 only")
            };
            let seq = rcv_nxt + offset;
            let datagram = forged_rst(at, local, seq);
            let to = SockaddrIn::from(SocketAddrV4::new(*local.ip(), 0));
            sendto(raw.as_raw_fd(), &datagram, &to, MsgFlags::empty()).expect("sending the RST");
            forged = Some(Forged {
                local,
                snd_una,
                rcv_nxt,
                seq,
                challenge_acks_before: conn.counters().challenge_acks,
            });
        },
    );
    // After a reset, keep answering Linux (a RST for each of its ACKs)
    // until its receiver has seen the end.
    let forged = forged.expect("the RST was forged");
    if offset == 0 && side.states.last() == Some(&State::Closed) {
        // The reset stack sends no more, and Linux had acknowledged all
        // it got before the RST arrived (a TUN write runs Linux's receive
        // path inside the call, so its ACKs were queued first): Linux has
        // nothing to send that would draw the stack's RST, and would wait
        // out its read timeout. Have it send something: a copy of the
        // last byte it acknowledged, as if from the stack, which Linux
        // answers at once with a duplicate ACK (RFC 9293 §3.10.7.4).
        let mut old = TcpRepr::bare(forged.local.port(), at.port(), forged.snd_una - 1);
        old.ack_number = Some(forged.rcv_nxt);
        old.window_len = 1000;
        old.payload = &[0];
        let datagram = forged_datagram(forged.local, at, &old);
        let to = SockaddrIn::from(SocketAddrV4::new(*at.ip(), 0));
        sendto(raw.as_raw_fd(), &datagram, &to, MsgFlags::empty()).expect("sending the copy");
    }
    let until = r.clock.now().after(Duration::from_secs(10));
    while !linux_thread.is_finished() && r.clock.now() < until {
        let now = r.clock.now();
        stack
            .run_until(now.after(Duration::from_millis(10)))
            .unwrap();
    }
    let linux = linux_thread.join().expect("Linux's side");
    let log = r.log.lock().unwrap().segments.clone();
    Some((side, linux, forged, log))
}

/// A RST inside the window but off RCV.NXT: a challenge ACK, and the
/// transfer goes on to the last byte and an orderly close.
fn blind_rst_rejected(kind: TunKind, subnet: u8) {
    let Some((side, linux, forged, log)) = forge_during_transfer(kind, subnet, BLIND_OFFSET) else {
        return;
    };
    let rst_at = log
        .iter()
        .position(|s| s.direction == Direction::In && s.control == TcpControl::Rst)
        .expect("the stack received the forged RST");
    let reply = log[rst_at..]
        .iter()
        .find(|s| s.direction == Direction::Out)
        .expect("the stack answered");
    eprintln!(
        "{kind:?} blind RST at RCV.NXT+{BLIND_OFFSET}: answered by {reply:?}; states {:?}; \
         {:.2} s; {:?}; Linux got {} bytes",
        side.states, side.seconds, side.counters, linux.bytes
    );
    assert_eq!(log[rst_at].seq, forged.seq);
    assert_eq!(
        side.counters.challenge_acks,
        forged.challenge_acks_before + 1,
        "one challenge ACK"
    );
    assert_eq!(
        reply.ack,
        Some(forged.rcv_nxt),
        "the challenge ACK names RCV.NXT"
    );
    // With data queued, the challenge ACK rides on the next data segment
    // (SEQ=SND.NXT, ACK=RCV.NXT), as RFC 5961 §3.2 allows any ACK to.
    assert_eq!(reply.control, TcpControl::None);
    assert!(
        !log.iter()
            .any(|s| s.direction == Direction::Out && s.control == TcpControl::Rst),
        "the stack never reset"
    );
    assert_eq!(side.error, None);
    assert!(!side.states.contains(&State::Closed), "{:?}", side.states);
    assert_eq!(
        side.states.last(),
        Some(&State::TimeWait),
        "{:?}",
        side.states
    );
    assert_eq!(linux.error, None);
    assert_eq!(linux.mismatch, None, "the first wrong byte Linux got");
    assert_eq!(linux.bytes, BYTES);
}

#[test]
fn a_blind_in_window_rst_draws_a_challenge_ack_over_tun() {
    blind_rst_rejected(TunKind::Tun, 1);
}

#[test]
fn a_blind_in_window_rst_draws_a_challenge_ack_over_tap() {
    blind_rst_rejected(TunKind::Tap, 2);
}

/// The positive control: a RST exactly at RCV.NXT resets the connection;
/// Linux's next ACK draws the stack's RST, and Linux's read fails.
fn exact_rst_resets(kind: TunKind, subnet: u8) {
    let Some((side, linux, forged, log)) = forge_during_transfer(kind, subnet, 0) else {
        return;
    };
    eprintln!(
        "{kind:?} RST at RCV.NXT: states {:?}; error {:?}; {:?}; Linux got {} bytes, error {:?}",
        side.states, side.error, side.counters, linux.bytes, linux.error
    );
    assert_eq!(forged.seq, forged.rcv_nxt);
    assert!(log
        .iter()
        .any(|s| s.direction == Direction::In && s.control == TcpControl::Rst));
    assert_eq!(
        side.error,
        Some(TcpSocketError::from(ConnectionError::Reset)),
        "{:?}",
        side.states
    );
    assert_eq!(side.counters.challenge_acks, forged.challenge_acks_before);
    assert!(!side.states.contains(&State::TimeWait));
    assert_eq!(linux.error, Some(ErrorKind::ConnectionReset));
    assert_eq!(linux.mismatch, None, "what did arrive was right");
    assert!(linux.bytes < BYTES, "the transfer was cut short");
}

#[test]
fn a_rst_at_rcv_nxt_resets_the_connection_over_tun() {
    exact_rst_resets(TunKind::Tun, 3);
}

#[test]
fn a_rst_at_rcv_nxt_resets_the_connection_over_tap() {
    exact_rst_resets(TunKind::Tap, 4);
}
