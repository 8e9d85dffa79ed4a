//! The connection's state machine (RFC 9293 §3.3.2's diagram, §3.10.7's
//! segment-arrival rules, RFC 5961's challenge ACKs) driven by two
//! connections back to back, and by crafted segments, on a `ManualClock`.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use stack::socket::{TcpSocketError, TcpSockets};
use stack::tcp::state::State;
use stack::tcp::tcb::{Connection, ConnectionError, TcpConfig};
use stack::time::{Clock, ManualClock};
use stack::wire::seq::SeqNumber;
use stack::wire::tcp::{TcpControl, TcpRepr};
use stack::wire::ChecksumMethod;
use tcp_pair::{is, isn, tuple_a, tuple_b, Dir, Pair, START};

const MS: Duration = Duration::from_millis(1);

fn cfg() -> TcpConfig {
    TcpConfig::default()
}

#[test]
fn the_three_way_handshake_negotiates_options_and_both_ends_establish() {
    let mut a_cfg = cfg();
    a_cfg.recv_buffer = 1 << 20;
    let mut b_cfg = cfg();
    b_cfg.mss = 1200;
    let mut p = Pair::new(a_cfg, b_cfg, 10 * MS);
    assert_eq!(p.a.state(), State::SynSent);
    assert_eq!(p.b.state(), State::Listen);
    p.kick();
    p.step(); // B gets the SYN.
    assert_eq!(p.b.state(), State::SynReceived);
    p.run_until(|p| p.a.state() == State::Established && p.b.state() == State::Established);
    let a_sent = p.sent(Dir::AtoB);
    let b_sent = p.sent(Dir::BtoA);
    let syn = &a_sent[0].seg.header;
    let syn_ack = &b_sent[0].seg.header;
    let ack = &a_sent[1].seg.header;
    assert_eq!(syn.control, TcpControl::Syn);
    assert_eq!(syn.ack_number, None);
    assert_eq!(syn.max_seg_size, Some(1460));
    assert_eq!(syn.window_scale, Some(5), "1 MiB needs a shift of 5");
    assert!(syn.sack_permitted && syn.timestamp.is_some());
    assert_eq!(syn_ack.control, TcpControl::Syn);
    assert_eq!(syn_ack.ack_number, Some(syn.seq_number + 1));
    assert_eq!(syn_ack.max_seg_size, Some(1200));
    assert_eq!(
        syn_ack.timestamp.unwrap().1,
        syn.timestamp.unwrap().0,
        "TSecr echoes TSval"
    );
    assert_eq!(ack.control, TcpControl::None);
    assert_eq!(ack.seq_number, syn.seq_number + 1);
    assert_eq!(ack.ack_number, Some(syn_ack.seq_number + 1));
    assert_eq!(p.a.send_mss(), 1200, "the smaller MSS wins");
    assert_eq!(p.b.send_mss(), 1200);
    assert_eq!(p.a.window_shifts(), (3, 5));
    assert_eq!(p.b.window_shifts(), (5, 3));
    assert_eq!(p.a.sack_and_timestamps(), (true, true));
    // The handshake's RTT: 20 ms on both ends.
    assert_eq!(p.a.srtt(), Some(20 * MS));
    assert_eq!(p.b.srtt(), Some(20 * MS));
    assert_eq!(p.a.counters().retransmits + p.b.counters().retransmits, 0);
}

#[test]
fn options_not_offered_are_not_used() {
    let mut a_cfg = cfg();
    a_cfg.window_scaling = false;
    a_cfg.sack = false;
    a_cfg.timestamps = false;
    let p = Pair::established(a_cfg, cfg(), MS);
    let syn_ack = &p.sent(Dir::BtoA)[0].seg.header;
    assert_eq!(syn_ack.window_scale, None);
    assert!(!syn_ack.sack_permitted);
    assert_eq!(syn_ack.timestamp, None);
    assert_eq!(p.b.window_shifts(), (0, 0));
    assert_eq!(p.b.sack_and_timestamps(), (false, false));
}

#[test]
fn a_peer_offering_a_shift_above_14_is_clamped() {
    let clock = ManualClock::new(START);
    let mut b = Connection::listen(cfg(), tuple_b(), &isn(), clock.now());
    let mut syn = TcpRepr::bare(40000, 80, SeqNumber(1000));
    syn.control = TcpControl::Syn;
    syn.window_scale = Some(20);
    syn.window_len = 1000;
    let out = b.on_segment(&syn, clock.now());
    assert_eq!(out.len(), 1);
    assert_eq!(b.window_shifts().0, 14);
}

#[test]
fn simultaneous_open_goes_through_syn_received_on_both_ends() {
    let clock = ManualClock::new(START);
    let a = Connection::open_active(cfg(), tuple_a(), &isn(), clock.now());
    let b = Connection::open_active(cfg(), tuple_b(), &isn(), clock.now());
    let mut p = Pair::from_parts(a, b, clock, 10 * MS);
    p.kick();
    // Both SYNs cross; each end answers with a SYN-ACK.
    p.step();
    p.step();
    assert_eq!(p.a.state(), State::SynReceived);
    assert_eq!(p.b.state(), State::SynReceived);
    let a_syns: Vec<_> = p
        .sent(Dir::AtoB)
        .iter()
        .map(|s| s.seg.header.clone())
        .collect();
    assert_eq!(a_syns[1].control, TcpControl::Syn);
    assert_eq!(
        a_syns[1].seq_number, a_syns[0].seq_number,
        "the SYN-ACK repeats the ISS"
    );
    assert!(a_syns[1].ack_number.is_some());
    p.run_until(|p| p.a.state() == State::Established && p.b.state() == State::Established);
    p.app_a.to_write = b"after a simultaneous open".to_vec();
    p.kick();
    p.run_until(|p| p.app_b.read.len() == 25);
    assert_eq!(p.app_b.read, b"after a simultaneous open");
}

#[test]
fn an_orderly_close_walks_fin_wait_and_close_wait_to_time_wait_and_closed() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    p.a.close();
    assert_eq!(p.a.state(), State::FinWait1);
    p.kick();
    p.run_until(|p| p.b.state() == State::CloseWait);
    p.run_until(|p| p.a.state() == State::FinWait2);
    assert_eq!(p.b.state(), State::CloseWait);
    // B may still send in CLOSE-WAIT.
    p.app_b.to_write = b"last words".to_vec();
    p.kick();
    p.run_until(|p| p.app_a.read.len() == 10);
    assert_eq!(p.app_a.read, b"last words");
    p.b.close();
    assert_eq!(p.b.state(), State::LastAck);
    p.kick();
    p.run_until(|p| p.a.state() == State::TimeWait);
    let entered = p.now();
    p.run_until(|p| p.b.state() == State::Closed);
    assert_eq!(p.b.error(), None);
    // TIME-WAIT lasts 2·MSL (240 s by default) and then the TCB is gone.
    p.run_to(entered.after(Duration::from_secs(239)));
    assert_eq!(p.a.state(), State::TimeWait);
    p.run_to(entered.after(Duration::from_secs(240)));
    assert_eq!(p.a.state(), State::Closed);
    assert_eq!(p.a.error(), None);
}

#[test]
fn a_simultaneous_close_goes_through_closing_to_time_wait_on_both_ends() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    p.a.close();
    p.b.close();
    p.kick();
    p.step();
    p.step();
    assert_eq!(p.a.state(), State::Closing);
    assert_eq!(p.b.state(), State::Closing);
    p.run_until(|p| p.a.state() == State::TimeWait && p.b.state() == State::TimeWait);
    p.run_until(|p| p.a.state() == State::Closed && p.b.state() == State::Closed);
}

#[test]
fn a_fin_that_also_acknowledges_our_fin_goes_from_fin_wait_1_to_time_wait() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    p.a.close();
    p.kick();
    // B closes as soon as it sees A's FIN: its ACK and FIN go as one.
    p.step();
    assert_eq!(p.b.state(), State::CloseWait);
    p.b.close();
    // Drop B's pure ACK so the FIN (which acknowledges A's FIN) comes alone.
    let out = p.b.poll_output(p.now());
    let fin = out.into_iter().find(|s| is(s, TcpControl::Fin)).unwrap();
    assert!(fin.header.ack_number.is_some());
    p.clear_link();
    let replies = p.inject(false, &fin.repr());
    assert_eq!(p.a.state(), State::TimeWait);
    assert_eq!(replies.len(), 1, "A acknowledges B's FIN");
}

#[test]
fn close_in_listen_and_syn_sent_goes_straight_to_closed() {
    let clock = ManualClock::new(START);
    let mut a = Connection::open_active(cfg(), tuple_a(), &isn(), clock.now());
    let mut b = Connection::listen(cfg(), tuple_b(), &isn(), clock.now());
    a.close();
    b.close();
    assert_eq!(a.state(), State::Closed);
    assert_eq!(b.state(), State::Closed);
}

/// Found by `tcp_fuzz.rs`: a close in SYN-SENT left the SYN's
/// retransmission timer armed in CLOSED, so the socket layer kept waking
/// for a dead connection and the timer fired there.
#[test]
fn close_in_syn_sent_stops_the_syns_retransmission_timer() {
    let clock = ManualClock::new(START);
    let mut a = Connection::open_active(cfg(), tuple_a(), &isn(), clock.now());
    let syn = a.poll_output(clock.now());
    assert!(is(&syn[0], TcpControl::Syn));
    let rto = a.poll_at().expect("the SYN's retransmission timer");
    a.close();
    assert_eq!(a.state(), State::Closed);
    assert_eq!(a.poll_at(), None, "no timer in CLOSED");
    assert!(a.on_timer(rto).is_empty(), "no SYN again");
    assert_eq!(a.error(), None, "an application close is no error");
    assert_eq!(a.counters().timeouts, 0);
}

#[test]
fn close_in_syn_received_sends_the_fin_once_established() {
    let mut p = Pair::new(cfg(), cfg(), 10 * MS);
    p.kick();
    p.step();
    assert_eq!(p.b.state(), State::SynReceived);
    p.b.close();
    assert_eq!(p.b.state(), State::SynReceived);
    p.run_until(|p| p.b.state() == State::FinWait2);
    assert_eq!(p.a.state(), State::CloseWait);
}

/// RFC 9293's diagram has LISTEN --SEND--> SYN-SENT, an arc §3.10.2
/// leaves optional ("if the foreign socket is specified, then change the
/// connection from passive to active"); like Linux (send on a listening
/// socket is ENOTCONN) the stack does not take it: a listener has no
/// peer to send to, so the send is refused and nothing leaves.
#[test]
fn send_in_listen_is_refused_and_the_listener_stays_passive() {
    let clock = ManualClock::new(START);
    let mut b = Connection::listen(cfg(), tuple_b(), &isn(), clock.now());
    assert_eq!(b.send(b"data"), 0, "nothing is queued");
    assert_eq!(b.state(), State::Listen);
    assert!(b.poll_output(clock.now()).is_empty(), "no SYN");
    assert_eq!(b.poll_at(), None);
    // Through the socket layer the refusal is a typed error.
    let mut sockets = TcpSockets::new(cfg(), isn(), ChecksumMethod::Rfc1071);
    let listener = sockets.listen(80, 4).unwrap();
    assert_eq!(
        sockets.send(listener, b"data"),
        Err(TcpSocketError::WrongKind)
    );
    assert_eq!(sockets.connections().count(), 0, "no connection was made");
}

/// RFC 9293 §3.10.4's CLOSE in SYN-RECEIVED: with nothing queued the
/// diagram goes straight to FIN-WAIT-1 with a FIN. The stack queues the
/// FIN until its SYN is acknowledged (the same section's "queue for
/// processing after entering ESTABLISHED"), so the FIN never precedes
/// the acknowledgment of the SYN it follows in sequence space; the ACK of
/// the SYN then takes the connection to FIN-WAIT-1 and the FIN goes out
/// with the reply. Segment by segment:
#[test]
fn close_in_syn_received_goes_to_fin_wait_1_with_the_fin_once_the_syn_is_acknowledged() {
    let no_ts = TcpConfig {
        timestamps: false,
        ..cfg()
    };
    let mut p = Pair::new(no_ts.clone(), no_ts, 10 * MS);
    p.kick();
    p.step();
    assert_eq!(p.b.state(), State::SynReceived);
    let syn = p.sent(Dir::AtoB)[0].seg.header.clone();
    let syn_ack = p.sent(Dir::BtoA)[0].seg.header.clone();
    p.clear_link();
    p.b.close();
    assert_eq!(p.b.state(), State::SynReceived);
    let now = p.now();
    assert!(
        p.b.poll_output(now).iter().all(|s| !is(s, TcpControl::Fin)),
        "no FIN ahead of the unacknowledged SYN"
    );
    // The handshake's ACK.
    let mut ack = TcpRepr::bare(40000, 80, syn.seq_number + 1);
    ack.ack_number = Some(syn_ack.seq_number + 1);
    ack.window_len = 1000;
    let out = p.inject(true, &ack);
    assert_eq!(p.b.state(), State::FinWait1);
    assert_eq!(out.len(), 1, "the FIN: {out:?}");
    assert!(is(&out[0], TcpControl::Fin));
    assert_eq!(out[0].header.seq_number, syn_ack.seq_number + 1);
    assert_eq!(out[0].header.ack_number, Some(syn.seq_number + 1));
    // Its ACK: FIN-WAIT-2.
    ack.ack_number = Some(syn_ack.seq_number + 2);
    assert!(p.inject(true, &ack).is_empty());
    assert_eq!(p.b.state(), State::FinWait2);
}

#[test]
fn a_segment_for_a_closed_connection_is_answered_with_rst() {
    let clock = ManualClock::new(START);
    let mut c = Connection::listen(cfg(), tuple_b(), &isn(), clock.now());
    c.close();
    let mut seg = TcpRepr::bare(40000, 80, SeqNumber(500));
    seg.ack_number = Some(SeqNumber(9000));
    seg.payload = b"abc";
    let out = c.on_segment(&seg, clock.now());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.control, TcpControl::Rst);
    assert_eq!(out[0].header.seq_number, SeqNumber(9000));
    assert_eq!(out[0].header.ack_number, None);
    // Without ACK: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
    seg.ack_number = None;
    let out = c.on_segment(&seg, clock.now());
    assert_eq!(out[0].header.seq_number, SeqNumber(0));
    assert_eq!(out[0].header.ack_number, Some(SeqNumber(503)));
    // A RST draws nothing.
    seg.control = TcpControl::Rst;
    assert!(c.on_segment(&seg, clock.now()).is_empty());
}

#[test]
fn listen_ignores_rst_and_answers_an_ack_with_rst() {
    let clock = ManualClock::new(START);
    let mut b = Connection::listen(cfg(), tuple_b(), &isn(), clock.now());
    let mut rst = TcpRepr::bare(40000, 80, SeqNumber(7));
    rst.control = TcpControl::Rst;
    assert!(b.on_segment(&rst, clock.now()).is_empty());
    assert_eq!(b.state(), State::Listen);
    let mut ack = TcpRepr::bare(40000, 80, SeqNumber(7));
    ack.ack_number = Some(SeqNumber(1234));
    let out = b.on_segment(&ack, clock.now());
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.control, TcpControl::Rst);
    assert_eq!(out[0].header.seq_number, SeqNumber(1234));
    assert_eq!(b.state(), State::Listen);
}

#[test]
fn syn_sent_resets_a_bad_ack_and_is_refused_by_an_acceptable_rst() {
    let clock = ManualClock::new(START);
    let mut a = Connection::open_active(cfg(), tuple_a(), &isn(), clock.now());
    let syn = a.poll_output(clock.now()).remove(0);
    let iss = syn.header.seq_number;
    // An ACK of something never sent: RST, state kept.
    let mut bad = TcpRepr::bare(80, 40000, SeqNumber(1));
    bad.control = TcpControl::Syn;
    bad.ack_number = Some(iss + 5);
    let out = a.on_segment(&bad, clock.now());
    assert_eq!(out[0].header.control, TcpControl::Rst);
    assert_eq!(out[0].header.seq_number, iss + 5);
    assert_eq!(a.state(), State::SynSent);
    // A RST without ACK is ignored.
    let mut rst = TcpRepr::bare(80, 40000, SeqNumber(1));
    rst.control = TcpControl::Rst;
    assert!(a.on_segment(&rst, clock.now()).is_empty());
    assert_eq!(a.state(), State::SynSent);
    // A RST acknowledging the SYN: connection refused.
    rst.ack_number = Some(iss + 1);
    a.on_segment(&rst, clock.now());
    assert_eq!(a.state(), State::Closed);
    assert_eq!(a.error(), Some(ConnectionError::Refused));
}

/// A's view of B after the handshake: B's next sequence and the ACK B expects.
fn b_next(p: &Pair) -> (SeqNumber, SeqNumber) {
    let (_, b_nxt, b_rcv) = p.b.sequence_points();
    (b_nxt, b_rcv)
}

/// A timestamps option as either end would send it now (TSval: the
/// clock in ms): once timestamps are in use a segment without one is
/// dropped (RFC 7323 §3.2), RSTs excepted.
fn timestamp_now(p: &Pair) -> Option<(u32, u32)> {
    Some(((p.now().nanos() / 1_000_000) as u32, 0))
}

#[test]
fn a_blind_in_window_rst_draws_a_challenge_ack_and_is_not_accepted() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    let (b_nxt, _) = b_next(&p);
    let (_, _, a_rcv_nxt) = p.a.sequence_points();
    assert_eq!(a_rcv_nxt, b_nxt);
    let mut rst = TcpRepr::bare(80, 40000, b_nxt + 1000);
    rst.control = TcpControl::Rst;
    let out = p.inject(false, &rst);
    assert_eq!(p.a.state(), State::Established);
    assert_eq!(out.len(), 1, "a challenge ACK");
    assert_eq!(out[0].header.control, TcpControl::None);
    assert_eq!(out[0].header.ack_number, Some(a_rcv_nxt));
    assert_eq!(p.a.counters().challenge_acks, 1);
    // Out of the window: silently dropped.
    rst.seq_number = b_nxt + 10_000_000;
    assert!(p.inject(false, &rst).is_empty());
    assert_eq!(p.a.state(), State::Established);
    // Exactly at RCV.NXT: the connection is reset.
    rst.seq_number = b_nxt;
    assert!(p.inject(false, &rst).is_empty());
    assert_eq!(p.a.state(), State::Closed);
    assert_eq!(p.a.error(), Some(ConnectionError::Reset));
}

#[test]
fn a_syn_in_a_synchronized_state_draws_a_challenge_ack() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    let (b_nxt, _) = b_next(&p);
    let mut syn = TcpRepr::bare(80, 40000, b_nxt + 10);
    syn.control = TcpControl::Syn;
    syn.timestamp = timestamp_now(&p);
    let out = p.inject(false, &syn);
    assert_eq!(p.a.state(), State::Established);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.control, TcpControl::None);
    assert_eq!(p.a.counters().challenge_acks, 1);
}

#[test]
fn an_ack_below_the_acceptable_range_draws_a_challenge_ack() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    let (b_nxt, b_rcv) = b_next(&p);
    // RFC 5961 §5: SEG.ACK < SND.UNA − MAX.SND.WND.
    let mut seg = TcpRepr::bare(40000, 80, b_rcv);
    seg.ack_number = Some(b_nxt - 3_000_000);
    seg.window_len = 100;
    seg.timestamp = timestamp_now(&p);
    let out = p.inject(true, &seg);
    assert_eq!(out.len(), 1);
    assert_eq!(p.b.counters().challenge_acks, 1);
    // An ACK of something not yet sent: an ACK back, nothing accepted.
    seg.ack_number = Some(b_nxt + 100);
    seg.payload = b"xyz";
    let out = p.inject(true, &seg);
    assert_eq!(out.len(), 1);
    assert_eq!(p.b.recv_queued(), 0);
    assert_eq!(p.b.counters().challenge_acks, 1);
}

#[test]
fn a_rst_in_syn_received_drops_a_passive_opens_embryonic_connection() {
    let mut p = Pair::new(cfg(), cfg(), 10 * MS);
    p.kick();
    p.step();
    assert_eq!(p.b.state(), State::SynReceived);
    let syn = p.sent(Dir::AtoB)[0].seg.header.clone();
    let mut rst = TcpRepr::bare(40000, 80, syn.seq_number + 1);
    rst.control = TcpControl::Rst;
    p.inject(true, &rst);
    // The listener that made it (the socket layer's) stays in LISTEN:
    // socket::tcp's tests show a later SYN taken.
    assert_eq!(p.b.state(), State::Closed);
    assert_eq!(p.b.poll_at(), None, "no timer outlives it");
}

#[test]
fn an_old_timestamp_is_dropped_by_paws() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    let (b_nxt, b_rcv) = b_next(&p);
    let mut seg = TcpRepr::bare(40000, 80, b_rcv);
    seg.ack_number = Some(b_nxt);
    seg.window_len = 1000;
    seg.timestamp = Some((1, 0)); // far older than A's clock in ms
    seg.payload = b"stale";
    let out = p.inject(true, &seg);
    assert_eq!(p.b.counters().paws_drops, 1);
    assert_eq!(p.b.recv_queued(), 0);
    assert_eq!(out.len(), 1, "an ACK answers the duplicate");
}

#[test]
fn abort_sends_a_rst_that_resets_the_peer() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    let rst = p.a.abort().expect("a RST");
    assert_eq!(p.a.state(), State::Closed);
    assert_eq!(p.a.error(), Some(ConnectionError::Aborted));
    p.transmit(Dir::AtoB, vec![rst]);
    p.run_until(|p| p.b.state() == State::Closed);
    assert_eq!(p.b.error(), Some(ConnectionError::Reset));
}

#[test]
fn a_lost_last_ack_brings_the_fin_again_and_time_wait_restarts() {
    let mut p = Pair::established(cfg(), cfg(), 10 * MS);
    p.a.close();
    p.kick();
    p.run_until(|p| p.b.state() == State::CloseWait);
    p.b.close();
    // A's ACK of B's FIN is lost.
    let mut lost = false;
    p.drop = Box::new(move |dir, seg| {
        let last_ack = dir == Dir::AtoB && seg.header.control == TcpControl::None;
        if last_ack && !lost {
            lost = true;
            return true;
        }
        false
    });
    p.kick();
    p.run_until(|p| p.a.state() == State::TimeWait);
    assert_eq!(p.b.state(), State::LastAck);
    // B's RTO resends the FIN; A acknowledges it again and restarts 2·MSL.
    p.run_until(|p| p.b.state() == State::Closed);
    let fins: Vec<_> = p
        .sent(Dir::BtoA)
        .into_iter()
        .filter(|s| s.seg.header.control == TcpControl::Fin)
        .map(|s| s.at)
        .collect();
    assert_eq!(fins.len(), 2);
    assert_eq!(p.b.counters().timeouts, 1);
    let second_fin_arrived = fins[1].after(10 * MS);
    p.run_to(second_fin_arrived.after(Duration::from_secs(239)));
    assert_eq!(p.a.state(), State::TimeWait);
    p.run_to(second_fin_arrived.after(Duration::from_secs(240)));
    assert_eq!(p.a.state(), State::Closed);
}

#[test]
fn a_peer_that_never_answers_times_the_connection_out() {
    let mut c = cfg();
    c.max_retransmits = 3;
    let mut p = Pair::established(c, cfg(), 10 * MS);
    p.drop = Box::new(|dir, _| dir == Dir::AtoB);
    p.app_a.to_write = b"into the void".to_vec();
    p.kick();
    p.run_until(|p| p.a.state() == State::Closed);
    assert_eq!(p.a.error(), Some(ConnectionError::TimedOut));
    let a = p.a.counters();
    assert_eq!(
        a.timeouts, 4,
        "three retransmissions, then the fourth expiry gives up"
    );
    // Before the first timeout, one tail loss probe (RFC 8985) resent it.
    assert_eq!(a.loss_probes, 1);
    assert_eq!(a.retransmits, 3 + 1);
}

#[test]
fn keepalive_probes_an_idle_peer_and_gives_up_when_it_goes_silent() {
    let mut c = cfg();
    c.keepalive = true;
    c.timers.keepalive_idle = Duration::from_secs(10);
    c.timers.keepalive_interval = Duration::from_secs(1);
    c.timers.keepalive_probes = 3;
    let mut p = Pair::established(c, cfg(), 10 * MS);
    let idle_from = p.now();
    // A live peer answers each probe, so the connection stays up.
    p.run_to(idle_from.after(Duration::from_secs(35)));
    assert_eq!(p.a.state(), State::Established);
    assert_eq!(
        p.a.counters().keepalive_probes,
        3,
        "one per idle period of 10 s"
    );
    let probe = p.sent(Dir::AtoB).last().unwrap().seg.header.clone();
    assert_eq!(probe.seq_number, p.a.sequence_points().0 - 1);
    // Then the peer goes silent: three more probes a second apart, then off.
    p.drop = Box::new(|dir, _| dir == Dir::BtoA);
    let silent_from = p.now();
    p.run_until(|p| p.a.state() == State::Closed);
    assert_eq!(p.a.error(), Some(ConnectionError::TimedOut));
    assert_eq!(p.a.counters().keepalive_probes, 6);
    assert!(p.now().since(silent_from) <= Duration::from_secs(14));
}

#[test]
fn a_lost_handshake_ack_is_repaired_by_the_syn_ack_retransmission() {
    for ts in [false, true] {
        a_lost_handshake_ack_is_repaired(ts);
    }
}

fn a_lost_handshake_ack_is_repaired(ts: bool) {
    let c = TcpConfig {
        timestamps: ts,
        ..cfg()
    };
    let mut p = Pair::new(c.clone(), c, 10 * MS);
    let mut dropped = false;
    p.drop = Box::new(move |dir, seg| {
        let handshake_ack = dir == Dir::AtoB && seg.header.control == TcpControl::None;
        if handshake_ack && !dropped {
            dropped = true;
            return true;
        }
        false
    });
    p.kick();
    p.run_until(|p| p.a.state() == State::Established);
    assert_eq!(p.b.state(), State::SynReceived);
    p.run_until(|p| p.b.state() == State::Established);
    // B's SYN-ACK went twice, one RTO (1 s) apart; A acknowledged both.
    let syn_acks: Vec<_> = p.sent(Dir::BtoA).iter().map(|s| s.at).collect();
    assert_eq!(syn_acks.len(), 2);
    assert_eq!(syn_acks[1].since(syn_acks[0]), Duration::from_secs(1));
    assert_eq!(p.b.counters().retransmits, 1);
    if ts {
        // The echo names the copy A last took in order, the first one,
        // whose ACK was lost: a long sample, never a short one (RFC 7323
        // §4.3), 1 s + 20 ms rounded up to the millisecond.
        let srtt = p.b.srtt().expect("a sample from the timestamp echo");
        assert!(srtt >= Duration::from_millis(1020) && srtt <= Duration::from_millis(1021));
    } else {
        assert_eq!(
            p.b.srtt(),
            None,
            "Karn: no sample from a retransmitted SYN-ACK"
        );
    }
}

#[test]
fn the_four_acceptability_cases_of_rfc9293() {
    let mut b_cfg = cfg();
    b_cfg.recv_buffer = 4000;
    b_cfg.timestamps = false;
    let mut a_cfg = cfg();
    a_cfg.timestamps = false;
    let mut p = Pair::established(a_cfg, b_cfg, 10 * MS);
    p.app_b.auto_read = false;
    let (b_nxt, rcv_nxt) = b_next(&p);
    let seg = |seq: SeqNumber, payload: &'static [u8]| {
        let mut s = TcpRepr::bare(40000, 80, seq);
        s.ack_number = Some(b_nxt);
        s.window_len = 65535;
        s.payload = payload;
        s
    };
    // Window open (4000): a zero-length segment in the window is taken
    // silently; one beyond it draws an ACK.
    assert!(p.inject(true, &seg(rcv_nxt + 100, b"")).is_empty());
    assert_eq!(p.inject(true, &seg(rcv_nxt + 4000, b"")).len(), 1);
    // Data overlapping the left edge is trimmed to its new part.
    let out = p.inject(true, &seg(rcv_nxt - 3, b"oldnew"));
    assert_eq!(p.b.recv_queued(), 3);
    assert_eq!(out.len(), 0, "one new small segment: the ACK is delayed");
    let mut buf = [0u8; 8];
    let n = p.b.recv(&mut buf);
    assert_eq!(&buf[..n], b"new");
    // Fill the window. The right edge stays where it was advertised
    // (RCV.NXT + 3997 now), so of 4000 octets 3997 are taken and the
    // truncation is acknowledged at once; the window is then zero.
    let rcv_nxt = rcv_nxt + 3;
    let big: &'static [u8] = Box::leak(vec![7u8; 4000].into_boxed_slice());
    let out = p.inject(true, &seg(rcv_nxt, big));
    assert_eq!(p.b.recv_queued(), 3997);
    assert_eq!(out.len(), 1);
    let rcv_nxt = rcv_nxt + 3997;
    assert_eq!(out[0].header.ack_number, Some(rcv_nxt));
    // Zero window: a zero-length segment is acceptable only at RCV.NXT,
    let out = p.inject(true, &seg(rcv_nxt, b""));
    assert!(out.is_empty());
    let out = p.inject(true, &seg(rcv_nxt + 1, b""));
    assert_eq!(out.len(), 1, "an ACK for the unacceptable segment");
    assert_eq!(out[0].header.ack_number, Some(rcv_nxt));
    assert_eq!(out[0].header.window_len, 0);
    // and data is never taken, only acknowledged.
    let out = p.inject(true, &seg(rcv_nxt, b"more"));
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].header.ack_number, Some(rcv_nxt));
    assert_eq!(p.b.recv_queued(), 3997);
}

#[test]
fn challenge_acks_are_rate_limited_per_second() {
    let mut a_cfg = cfg();
    a_cfg.challenge_ack_limit = Some(2);
    let mut p = Pair::established(a_cfg, cfg(), 10 * MS);
    let (b_nxt, _) = b_next(&p);
    let mut rst = TcpRepr::bare(80, 40000, b_nxt + 1000);
    rst.control = TcpControl::Rst;
    let answered: Vec<usize> = (0..4).map(|_| p.inject(false, &rst).len()).collect();
    assert_eq!(answered, [1, 1, 0, 0]);
    assert_eq!(p.a.counters().challenge_acks, 2);
    assert_eq!(p.a.counters().challenge_acks_suppressed, 2);
    // A second later the budget is back.
    p.run_to(p.now().after(Duration::from_secs(1)));
    assert_eq!(p.inject(false, &rst).len(), 1);
    assert_eq!(p.a.state(), State::Established);
}
