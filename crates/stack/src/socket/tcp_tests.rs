use super::*;
use crate::tcp::isn::IsnPolicy;
use crate::wire::seq::SeqNumber;
use crate::wire::{IpProtocol, Ipv4Address, TcpControl};

const LINUX: [u8; 4] = [10, 0, 0, 1];
const US: [u8; 4] = [10, 0, 0, 2];

fn sockets() -> TcpSockets {
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [7; 32]);
    TcpSockets::new(TcpConfig::default(), isn, ChecksumMethod::Rfc1071)
}

fn ip(payload_len: usize) -> Ipv4Repr {
    Ipv4Repr {
        src_addr: Ipv4Address(LINUX),
        dst_addr: Ipv4Address(US),
        next_header: IpProtocol::Tcp,
        payload_len,
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 1,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        options_len: 0,
    }
}

/// Hands `seg` (from Linux's 10.0.0.1:40000 to us) to the sockets.
fn deliver(sockets: &mut TcpSockets, seg: &TcpRepr<'_>, now: Instant) -> Delivery {
    let mut bytes = vec![0u8; seg.buffer_len()];
    seg.emit(
        &mut TcpPacket::new_unchecked(&mut bytes[..]),
        Ipv4Address(LINUX),
        Ipv4Address(US),
        ChecksumMethod::Rfc1071,
    );
    sockets.process(&ip(bytes.len()), &bytes, now)
}

fn syn(dst_port: u16, seq: u32) -> TcpRepr<'static> {
    let mut s = TcpRepr::bare(40000, dst_port, SeqNumber(seq));
    s.control = TcpControl::Syn;
    s.window_len = 64240;
    s.max_seg_size = Some(1460);
    s
}

fn taken(sockets: &mut TcpSockets) -> Vec<Segment> {
    sockets.outbox.drain(..).map(|(_, s)| s).collect()
}

#[test]
fn a_syn_to_a_closed_port_is_answered_with_rst_ack_of_seq_plus_one() {
    let mut s = sockets();
    assert_eq!(
        deliver(&mut s, &syn(5001, 1000), Instant::ZERO),
        Delivery::NoListener
    );
    let out = taken(&mut s);
    assert_eq!(out.len(), 1);
    let rst = &out[0].header;
    assert_eq!(rst.control, TcpControl::Rst);
    assert_eq!(rst.seq_number, SeqNumber(0));
    assert_eq!(rst.ack_number, Some(SeqNumber(1001)));
    assert_eq!((rst.src_port, rst.dst_port), (5001, 40000));
    assert_eq!(s.counters().no_socket, 1);
}

#[test]
fn a_listener_makes_a_connection_per_syn_and_accept_waits_for_the_handshake() {
    let mut s = sockets();
    let l = s.listen(5001, 4).unwrap();
    assert_eq!(
        deliver(&mut s, &syn(5001, 1000), Instant::ZERO),
        Delivery::Accepted
    );
    let out = taken(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    let syn_ack = out[0].header.clone();
    assert_eq!(syn_ack.control, TcpControl::Syn);
    assert_eq!(syn_ack.ack_number, Some(SeqNumber(1001)));
    assert_eq!(s.accept(l).unwrap(), None, "still in SYN-RECEIVED");

    let mut ack = TcpRepr::bare(40000, 5001, SeqNumber(1001));
    ack.ack_number = Some(syn_ack.seq_number + 1);
    ack.window_len = 64240;
    ack.payload = b"hello";
    deliver(&mut s, &ack, Instant(1_000_000));
    let c = s.accept(l).unwrap().expect("established");
    assert_eq!(s.connection(c).unwrap().state(), State::Established);
    let mut buf = [0u8; 16];
    assert_eq!(s.recv(c, &mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"hello");
    assert_eq!(s.accept(l).unwrap(), None);
    assert_eq!(s.counters().passive_opens, 1);
}

#[test]
fn syns_beyond_the_backlog_are_dropped_without_answer() {
    let mut s = sockets();
    s.listen(5001, 1).unwrap();
    deliver(&mut s, &syn(5001, 1000), Instant::ZERO);
    let mut second = syn(5001, 5000);
    second.src_port = 40001;
    deliver(&mut s, &second, Instant::ZERO);
    assert_eq!(taken(&mut s).len(), 1, "one SYN-ACK only");
    assert_eq!(s.counters().backlog_drops, 1);
}

#[test]
fn a_segment_with_a_bad_checksum_is_counted_and_ignored() {
    let mut s = sockets();
    s.listen(5001, 4).unwrap();
    let seg = syn(5001, 1000);
    let mut bytes = vec![0u8; seg.buffer_len()];
    seg.emit(
        &mut TcpPacket::new_unchecked(&mut bytes[..]),
        Ipv4Address(LINUX),
        Ipv4Address(US),
        ChecksumMethod::Rfc1071,
    );
    bytes[4] ^= 0x40;
    s.process(&ip(bytes.len()), &bytes, Instant::ZERO);
    assert!(taken(&mut s).is_empty());
    assert_eq!(s.counters().malformed, 1);
    assert_eq!(s.counters().passive_opens, 0);
}

#[test]
fn connect_picks_distinct_ephemeral_ports_and_emits_a_syn() {
    let mut s = sockets();
    let remote = SocketAddrV4::new(Ipv4Addr::from(LINUX), 5201);
    let a = s
        .connect(Ipv4Addr::from(US), remote, Instant::ZERO)
        .unwrap();
    let b = s
        .connect(Ipv4Addr::from(US), remote, Instant::ZERO)
        .unwrap();
    let (ta, tb) = (
        s.connection(a).unwrap().tuple(),
        s.connection(b).unwrap().tuple(),
    );
    assert_eq!(ta.local.port(), EPHEMERAL_FIRST);
    assert_ne!(ta.local.port(), tb.local.port());
    s.on_timers(Instant::ZERO);
    let out = taken(&mut s);
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|seg| seg.header.control == TcpControl::Syn));
    assert!(s.poll_at().is_some(), "the SYN's retransmission timer");
}

#[test]
fn a_rst_in_syn_received_frees_the_backlog_slot_of_its_embryonic_connection() {
    let mut s = sockets();
    let l = s.listen(5001, 2).unwrap();
    // Two SYNs, each reset by its sender before the handshake completes.
    for port in [40001, 40002] {
        let mut first = syn(5001, 1000);
        first.src_port = port;
        deliver(&mut s, &first, Instant::ZERO);
        let out = taken(&mut s);
        assert_eq!(out.len(), 1, "a SYN-ACK: {out:?}");
        let mut rst = TcpRepr::bare(port, 5001, SeqNumber(1001));
        rst.control = TcpControl::Rst;
        deliver(&mut s, &rst, Instant(1_000));
        assert!(taken(&mut s).is_empty(), "a RST is not answered");
    }
    assert_eq!(s.accept(l).unwrap(), None, "nothing to accept");
    // An honest SYN finds the backlog free again and completes.
    let mut honest = syn(5001, 7000);
    honest.src_port = 40003;
    deliver(&mut s, &honest, Instant(2_000));
    let out = taken(&mut s);
    assert_eq!(out.len(), 1, "the honest SYN is answered: {out:?}");
    assert_eq!(out[0].header.control, TcpControl::Syn);
    assert_eq!(
        s.counters().backlog_drops,
        0,
        "the reset embryonic connections must not hold backlog slots"
    );
    let mut ack = TcpRepr::bare(40003, 5001, SeqNumber(7001));
    ack.ack_number = Some(out[0].header.seq_number + 1);
    ack.window_len = 64240;
    deliver(&mut s, &ack, Instant(3_000));
    let c = s.accept(l).unwrap().expect("the honest connection");
    assert_eq!(s.connection(c).unwrap().tuple().remote.port(), 40003);
    assert_eq!(s.connections().count(), 1, "the reset ones are gone");
}

/// Completes a handshake from Linux's port 40000 (its ISN 1000) on a
/// listener at 5001; returns the accepted connection and our ISN.
fn accepted(s: &mut TcpSockets, l: TcpHandle, now: Instant) -> (TcpHandle, SeqNumber) {
    deliver(s, &syn(5001, 1000), now);
    let iss = taken(s)[0].header.seq_number;
    let mut ack = TcpRepr::bare(40000, 5001, SeqNumber(1001));
    ack.ack_number = Some(iss + 1);
    ack.window_len = 64240;
    deliver(s, &ack, now);
    (s.accept(l).unwrap().expect("established"), iss)
}

#[test]
fn a_closed_socket_whose_peer_never_sends_its_fin_is_dropped_after_fin_wait_2s_timeout() {
    let mut s = sockets();
    let l = s.listen(5001, 4).unwrap();
    let (c, iss) = accepted(&mut s, l, Instant::ZERO);
    s.close(c).unwrap();
    s.on_timers(Instant(1_000));
    let out = taken(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.control, TcpControl::Fin);
    // The peer acknowledges the FIN and then falls silent (CLOSE-WAIT
    // forever, as an application that never closes leaves it).
    let mut ack = TcpRepr::bare(40000, 5001, SeqNumber(1001));
    ack.ack_number = Some(iss + 2);
    ack.window_len = 64240;
    let fin_acked_at = Instant(2_000_000);
    deliver(&mut s, &ack, fin_acked_at);
    let conn = s.connections().next().expect("in FIN-WAIT-2");
    assert_eq!(conn.state(), State::FinWait2);
    let timeout = TcpConfig::default().timers.fin_wait_2;
    assert_eq!(
        timeout,
        std::time::Duration::from_secs(60),
        "Linux's tcp_fin_timeout"
    );
    let end = fin_acked_at.after(timeout);
    s.on_timers(Instant(end.nanos() - 1));
    assert_eq!(s.connections().count(), 1, "not before the timeout");
    assert_eq!(s.poll_at(), Some(end), "the set reports the timeout");
    s.on_timers(end);
    assert_eq!(
        s.connections().count(),
        0,
        "a released socket in FIN-WAIT-2 ends"
    );
    let out = taken(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(
        out[0].header.control,
        TcpControl::Rst,
        "the peer learns, as from Linux"
    );
    assert_eq!(out[0].header.seq_number, iss + 2);
}

/// A segment from Linux's port 40000 to 5001 with timestamps (TSval,
/// TSecr).
fn from_peer(seq: u32, ack: Option<SeqNumber>, ts: (u32, u32)) -> TcpRepr<'static> {
    let mut seg = TcpRepr::bare(40000, 5001, SeqNumber(seq));
    seg.ack_number = ack;
    seg.window_len = 64240;
    seg.timestamp = Some(ts);
    seg
}

/// A connection accepted on 5001 with timestamps, closed by us first and
/// then by the peer (its ISN 1000, its TSvals 100 to 102): ours is in
/// TIME-WAIT, RCV.NXT 1002, TS.Recent 102. Returns the time it got there.
fn in_time_wait(s: &mut TcpSockets) -> Instant {
    let l = s.listen(5001, 4).unwrap();
    let mut first = from_peer(1000, None, (100, 0));
    first.control = TcpControl::Syn;
    first.max_seg_size = Some(1460);
    deliver(s, &first, Instant::ZERO);
    let syn_ack = taken(s).remove(0).header;
    let iss = syn_ack.seq_number;
    let echo = syn_ack.timestamp.expect("timestamps on").0;
    deliver(
        s,
        &from_peer(1001, Some(iss + 1), (101, echo)),
        Instant(1_000),
    );
    let c = s.accept(l).unwrap().expect("established");
    s.close(c).unwrap();
    s.on_timers(Instant(2_000));
    assert_eq!(taken(s)[0].header.control, TcpControl::Fin);
    let mut fin = from_peer(1001, Some(iss + 2), (102, echo));
    fin.control = TcpControl::Fin;
    let at = Instant(3_000_000);
    deliver(s, &fin, at);
    taken(s);
    let conn = s.connections().next().expect("ours");
    assert_eq!(conn.state(), State::TimeWait);
    at
}

#[test]
fn a_syn_with_a_newer_timestamp_ends_time_wait_and_opens_a_new_incarnation() {
    let mut s = sockets();
    let at = in_time_wait(&mut s);
    // An ISN below the old one, but a newer timestamp (RFC 6191).
    let mut again = from_peer(500, None, (200, 0));
    again.control = TcpControl::Syn;
    again.max_seg_size = Some(1460);
    deliver(&mut s, &again, at.after(std::time::Duration::from_secs(1)));
    let out = taken(&mut s);
    assert_eq!(out.len(), 1, "{out:?}");
    let reply = &out[0].header;
    assert_eq!(
        (reply.control, reply.ack_number),
        (TcpControl::Syn, Some(SeqNumber(501))),
        "the new incarnation's SYN-ACK, not an ACK from TIME-WAIT: {reply:?}"
    );
    assert_eq!(s.counters().time_wait_recycled, 1);
    let states: Vec<State> = s.connections().map(|c| c.state()).collect();
    assert_eq!(states, [State::SynReceived], "the old one is gone");
    // RFC 9293 §3.6.1 (MAY-2): the new ISN lies above every sequence
    // number the old incarnation used (its SND.MAX: ISS + FIN + 1), by a
    // window's worth as Linux's.
    assert_eq!(
        reply.seq_number,
        old_snd_max() + 65537usize,
        "the new incarnation's ISN"
    );
}

/// The SND.MAX of `in_time_wait`'s connection (a SYN and a FIN, no
/// data): its ISS + 2, the ISS read back from the same handshake in a
/// fresh socket set (the generator's ISN for that tuple at that time).
fn old_snd_max() -> SeqNumber {
    let mut s = sockets();
    s.listen(5001, 4).unwrap();
    let mut first = from_peer(1000, None, (100, 0));
    first.control = TcpControl::Syn;
    first.max_seg_size = Some(1460);
    deliver(&mut s, &first, Instant::ZERO);
    taken(&mut s).remove(0).header.seq_number + 2usize
}

#[test]
fn a_syn_with_an_older_timestamp_leaves_time_wait_in_place() {
    let mut s = sockets();
    let at = in_time_wait(&mut s);
    // A newer ISN does not make up for an older timestamp (RFC 6191).
    let mut old = from_peer(9000, None, (90, 0));
    old.control = TcpControl::Syn;
    deliver(&mut s, &old, at.after(std::time::Duration::from_secs(1)));
    let out = taken(&mut s);
    assert!(
        out.iter().all(|seg| seg.header.control != TcpControl::Syn),
        "no SYN-ACK: {out:?}"
    );
    assert_eq!(s.counters().time_wait_recycled, 0);
    let states: Vec<State> = s.connections().map(|c| c.state()).collect();
    assert_eq!(states, [State::TimeWait]);
}
