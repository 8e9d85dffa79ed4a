//! Fuzzing TCP input and the interface below it, structure-aware with
//! proptest (no nightly here for cargo-fuzz), bounded for CI: proptest's
//! default cases (256, or `PROPTEST_CASES`) a property take a few seconds
//! in a debug build; `scripts/fuzz-stack` runs long campaigns.
//!
//! What goes in:
//! - into one [`Connection`], brought by two back-to-back connections on
//!   a `ManualClock` to each of RFC 9293's states (LISTEN, SYN-SENT,
//!   SYN-RECEIVED, ESTABLISHED with data both ways in flight, FIN-WAIT-1,
//!   FIN-WAIT-2, CLOSE-WAIT, CLOSING, LAST-ACK, TIME-WAIT, CLOSED):
//!   segments with checksums that verify, so they reach the state
//!   machine, whose flag byte is any byte, whose sequence and
//!   acknowledgment numbers lie near the connection's own or anywhere,
//!   with any window, MSS, window scale, SACK blocks, timestamps, option
//!   bytes and payload; between them the clock moves, timers fire and the
//!   application sends, reads, closes or aborts;
//! - into a whole [`Stack`] (interface, TCP sockets with a listener and an
//!   established connection) over the in-memory loopback device, on IP
//!   and on Ethernet: the peer's own frames mutated, crafted segments from
//!   anywhere to the listener and to the connection, IPv4 fragments with
//!   any identification, offset and length, ARP requests and replies, and
//!   arbitrary bytes.
//!
//! What is held after every input: no panic; bounded work (the segments
//! one input makes are bounded, each timer run moves its deadline
//! forward, a poll returns); bounded memory (received data, the
//! reassembly queue and the buffers stay within the configured buffers,
//! partial datagrams and the ARP cache within their bounds, the socket
//! set within its backlog); and a coherent connection (every state change
//! an arc of RFC 9293's diagram, an error only in CLOSED, SND.UNA ≤
//! SND.NXT within the send buffer, no timer left in CLOSED).

#[path = "support/tcp_pair.rs"]
mod tcp_pair;
#[path = "support/wire_strategies.rs"]
mod wire_strategies;

use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use stack::iface::InterfaceConfig;
use stack::phy::loopback::Loopback;
use stack::phy::Medium;
use stack::socket::TcpHandle;
use stack::stack::Stack;
use stack::tcp::isn::{IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::{Connection, RecoveryKind, Segment, TcpConfig};
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::checksum::{combine, finish, pseudo_header_sum, sum_rfc1071};
use stack::wire::{
    ArpRepr, ChecksumMethod, EtherType, EthernetAddress, EthernetRepr, IpProtocol, Ipv4Address,
    Ipv4Cidr, Ipv4Repr, SeqNumber, TcpPacket, TcpRepr,
};
use tcp_pair::{addresses, pattern, Dir, Pair};
use wire_strategies::{arp_repr, emit_arp, emit_ethernet, emit_ipv4, emit_tcp};

const MS: Duration = Duration::from_millis(1);

// ---------------------------------------------------------------------
// Segments into one connection.
// ---------------------------------------------------------------------

/// The switches a fuzzed connection is built with: small buffers, so the
/// bounds are tight, and each mechanism on and off.
fn config(kind: u8) -> TcpConfig {
    let mut c = TcpConfig {
        send_buffer: 8 * 1024,
        recv_buffer: 8 * 1024,
        ..TcpConfig::default()
    };
    match kind % 3 {
        0 => {}
        1 => {
            // A scaled window (shift 1), SACK recovery.
            c.recv_buffer = 100 * 1024;
            c.recovery = RecoveryKind::Sack;
        }
        _ => {
            c.window_scaling = false;
            c.sack = false;
            c.timestamps = false;
            c.header_prediction = false;
            c.mss = 536;
        }
    }
    c
}

/// The states a case starts in.
const STATES: [State; 11] = [
    State::Listen,
    State::SynSent,
    State::SynReceived,
    State::Established,
    State::FinWait1,
    State::FinWait2,
    State::CloseWait,
    State::Closing,
    State::LastAck,
    State::TimeWait,
    State::Closed,
];

/// Two connections brought until one of them (A when the bool is true)
/// is in `state`, the link then cleared: the fuzzer plays the other end.
fn reach(state: State, cfg: &TcpConfig) -> (Pair, bool) {
    let d = 10 * MS;
    let established = || {
        let mut p = Pair::established(cfg.clone(), cfg.clone(), d);
        p.app_a.auto_read = false;
        p.app_b.auto_read = false;
        p
    };
    let (mut p, on_a) = match state {
        State::Listen => (Pair::new(cfg.clone(), cfg.clone(), d), false),
        State::SynSent => {
            let mut p = Pair::new(cfg.clone(), cfg.clone(), d);
            p.kick();
            (p, true)
        }
        State::SynReceived => {
            let mut p = Pair::new(cfg.clone(), cfg.clone(), d);
            p.kick();
            p.step();
            (p, false)
        }
        State::Established => {
            let mut p = established();
            p.app_a.to_write = pattern(6000);
            p.app_b.to_write = pattern(3000);
            p.kick();
            (p, true)
        }
        State::FinWait1 => {
            let mut p = established();
            p.app_a.to_write = pattern(2000);
            p.app_a.close_when_written = true;
            p.kick();
            (p, true)
        }
        State::FinWait2 => {
            let mut p = established();
            p.a.close();
            p.kick();
            p.run_until(|p| p.a.state() == State::FinWait2);
            (p, true)
        }
        State::CloseWait | State::LastAck => {
            let mut p = established();
            p.a.close();
            p.kick();
            p.run_until(|p| p.b.state() == State::CloseWait);
            p.app_b.to_write = pattern(1500);
            p.app_b.close_when_written = state == State::LastAck;
            p.kick();
            (p, false)
        }
        State::Closing => {
            let mut p = established();
            p.a.close();
            p.b.close();
            p.kick();
            p.run_until(|p| p.b.state() == State::Closing);
            (p, false)
        }
        State::TimeWait => {
            let mut p = established();
            p.a.close();
            p.kick();
            p.run_until(|p| p.a.state() == State::FinWait2);
            p.b.close();
            p.kick();
            p.run_until(|p| p.a.state() == State::TimeWait);
            (p, true)
        }
        _ => {
            let mut p = established();
            let _ = p.a.abort();
            (p, true)
        }
    };
    p.clear_link();
    let got = if on_a { p.a.state() } else { p.b.state() };
    assert_eq!(got, state, "the case starts in {state:?}");
    (p, on_a)
}

/// One fuzzed event for a connection.
#[derive(Debug, Clone)]
struct Event {
    /// Milliseconds the clock moves first (due timers then fire).
    advance_ms: u32,
    /// What the application does first: 0..=3 a call (send, read, close,
    /// abort), anything else (nine times in ten) nothing.
    app: u8,
    /// (anchor: RCV.NXT, or anywhere; offset or the number).
    seq: (bool, i32, u32),
    /// (anchor: SND.UNA, SND.NXT, or anywhere; offset or the number).
    ack: (u8, i32, u32),
    /// The flag byte (CWR ECE URG ACK PSH RST SYN FIN).
    flags: u8,
    window: u16,
    mss: Option<u16>,
    window_scale: Option<u8>,
    sack_permitted: bool,
    /// SACK blocks: (left offset from SND.UNA, length; reversed if < 0).
    sack: Vec<(i32, i32)>,
    /// (near the clock or anywhere, TSval offset or value, TSecr).
    timestamp: Option<(bool, i32, u32)>,
    payload_len: usize,
    /// Bytes written over the options area (after the header is built).
    option_noise: Vec<(usize, u8)>,
}

/// The flag combinations a peer sends (ACK, ACK PSH, FIN ACK, SYN ACK,
/// SYN, RST, RST ACK), and any byte.
fn flags() -> impl Strategy<Value = u8> {
    prop_oneof![
        Just(0x10u8),
        Just(0x18),
        Just(0x11),
        Just(0x12),
        Just(0x02),
        Just(0x04),
        Just(0x14),
        any::<u8>(),
    ]
}

fn event() -> impl Strategy<Value = Event> {
    // Offsets mostly at or just around the anchor, where segments are
    // acceptable, sometimes far outside the window.
    let near = || prop_oneof![3 => Just(0i32), 4 => -3_000i32..9_000, 1 => -70_000i32..70_000];
    (
        (
            prop_oneof![4 => 0u32..50, 2 => 0u32..2_000, 1 => 0u32..300_000],
            0u8..40,
            (
                prop_oneof![5 => Just(true), 1 => Just(false)],
                near(),
                any::<u32>(),
            ),
            (
                prop_oneof![2 => Just(0u8), 2 => Just(1), 1 => Just(2)],
                near(),
                any::<u32>(),
            ),
            flags(),
        ),
        (
            any::<u16>(),
            proptest::option::of(any::<u16>()),
            proptest::option::of(0u8..20),
            any::<bool>(),
            proptest::collection::vec((-20_000i32..20_000, -3_000i32..10_000), 0..=3),
            proptest::option::of((any::<bool>(), -3_000i32..3_000, any::<u32>())),
        ),
        prop_oneof![3 => Just(0usize), 3 => 1usize..1500, 1 => 1500usize..20_000],
        proptest::collection::vec((0usize..40, any::<u8>()), 0..3),
    )
        .prop_map(
            |(
                (advance_ms, app, seq, ack, flags),
                (window, mss, window_scale, sack_permitted, sack, timestamp),
                payload_len,
                option_noise,
            )| Event {
                advance_ms,
                app,
                seq,
                ack,
                flags,
                window,
                mss,
                window_scale,
                sack_permitted,
                sack,
                timestamp,
                payload_len,
                option_noise,
            },
        )
}

/// The segment `e` describes, for a connection whose numbers are `c`'s,
/// as bytes with a checksum that verifies (the parser may still refuse
/// them: option noise can make them malformed).
fn segment_bytes(e: &Event, c: &Connection, now: Instant, on_a: bool) -> Vec<u8> {
    let (snd_una, snd_nxt, rcv_nxt) = c.sequence_points();
    let tuple = c.tuple();
    let seq = match e.seq {
        (true, off, _) => SeqNumber(rcv_nxt.0.wrapping_add(off as u32)),
        (false, _, any) => SeqNumber(any),
    };
    let ack = match e.ack {
        (0, off, _) => SeqNumber(snd_una.0.wrapping_add(off as u32)),
        (1, off, _) => SeqNumber(snd_nxt.0.wrapping_add(off as u32)),
        (_, _, any) => SeqNumber(any),
    };
    let mut repr = TcpRepr::bare(tuple.remote.port(), tuple.local.port(), seq);
    repr.ack_number = Some(ack);
    repr.window_len = e.window;
    repr.max_seg_size = e.mss;
    repr.window_scale = e.window_scale;
    repr.sack_permitted = e.sack_permitted;
    for (slot, &(left, len)) in repr.sack_ranges.iter_mut().zip(&e.sack) {
        let l = SeqNumber(snd_una.0.wrapping_add(left as u32));
        let r = SeqNumber(l.0.wrapping_add(len as u32));
        *slot = Some((l, r));
    }
    let now_ms = (now.nanos() / 1_000_000) as u32;
    repr.timestamp = e.timestamp.map(|(near, off, val)| {
        if near {
            (now_ms.wrapping_add(off as u32), now_ms.wrapping_sub(20))
        } else {
            (val, val.rotate_left(7))
        }
    });
    let payload = pattern(e.payload_len);
    repr.payload = &payload;
    let (src, dst) = addresses(if on_a { Dir::BtoA } else { Dir::AtoB });
    let mut bytes = emit_tcp(&repr, src, dst, ChecksumMethod::Rfc1071);
    bytes[13] = e.flags;
    let header_len = usize::from(bytes[12] >> 4) * 4;
    for &(at, value) in &e.option_noise {
        if 20 + at < header_len {
            bytes[20 + at] = value;
        }
    }
    fix_tcp_checksum(&mut bytes, src, dst);
    bytes
}

/// Recomputes a TCP segment's checksum after its bytes were changed.
fn fix_tcp_checksum(bytes: &mut [u8], src: Ipv4Address, dst: Ipv4Address) {
    bytes[16..18].fill(0);
    let pseudo = pseudo_header_sum(src.0, dst.0, IpProtocol::Tcp.into(), bytes.len() as u16);
    let sum = finish(combine(pseudo, sum_rfc1071(bytes)));
    bytes[16..18].copy_from_slice(&sum.to_be_bytes());
}

/// The arcs of RFC 9293's diagram a segment or a timer takes (CLOSED is
/// reachable from every state by RST, timeout or the end of TIME-WAIT; a
/// passive SYN-RECEIVED closes on RST, as BSD and Linux drop an embryonic
/// connection, the socket layer's listener staying in LISTEN; SYN-RECEIVED
/// goes to FIN-WAIT-1 when the application closed in it).
fn arcs(from: State) -> &'static [State] {
    use State::*;
    match from {
        Listen => &[SynReceived],
        SynSent => &[SynReceived, Established],
        SynReceived => &[Established, FinWait1],
        Established => &[CloseWait],
        FinWait1 => &[FinWait2, Closing, TimeWait],
        FinWait2 => &[TimeWait],
        Closing => &[TimeWait],
        _ => &[],
    }
}

/// Whether one segment or timer may take a connection from `from` to
/// `to`: along the diagram's arcs (one segment can take several: an ACK
/// with a FIN takes SYN-RECEIVED to ESTABLISHED and on to CLOSE-WAIT).
fn is_arc(from: State, to: State) -> bool {
    let mut reached = vec![from, State::Closed];
    let mut i = 0;
    while i < reached.len() {
        for &next in arcs(reached[i]) {
            if !reached.contains(&next) {
                reached.push(next);
            }
        }
        i += 1;
    }
    reached.contains(&to)
}

/// The most bytes a connection may hold on the heap: its two buffers, the
/// reassembly queue (at most the receive buffer of data, plus its
/// bookkeeping), the scoreboard, with the slack of a growing ring
/// (capacity up to twice the contents) and room for the estimator and
/// controller.
fn heap_bound(cfg: &TcpConfig) -> usize {
    4 * (cfg.send_buffer + cfg.recv_buffer) + 64 * 1024
}

/// What holds of `c` at any time.
fn check_coherent(c: &Connection, cfg: &TcpConfig) -> Result<(), TestCaseError> {
    let state = c.state();
    if c.error().is_some() {
        prop_assert_eq!(state, State::Closed, "an error only in CLOSED");
    }
    if state == State::Closed {
        prop_assert_eq!(c.poll_at(), None, "no timer in CLOSED");
    }
    prop_assert!(
        c.recv_queued() <= cfg.recv_buffer,
        "received data within RCV.BUFF"
    );
    prop_assert!(
        c.heap_bytes() <= heap_bound(cfg),
        "heap {} within {}",
        c.heap_bytes(),
        heap_bound(cfg)
    );
    if state.is_synchronized() && state != State::Closed {
        let (una, nxt, _) = c.sequence_points();
        prop_assert!(una <= nxt, "SND.UNA {:?} ≤ SND.NXT {:?}", una, nxt);
        prop_assert!(
            nxt - una <= cfg.send_buffer + 2,
            "in flight {} within the send buffer",
            nxt - una
        );
        prop_assert!(c.send_mss() >= 64 && c.send_mss() <= usize::from(cfg.mss));
    }
    prop_assert!(c.send_window() <= (u16::MAX as usize) << 14);
    Ok(())
}

/// What holds of the segments one input made.
fn check_output(out: &[Segment], c: &Connection, cfg: &TcpConfig) -> Result<(), TestCaseError> {
    let bytes: usize = out.iter().map(|s| s.payload.len()).sum();
    let bare = out.iter().filter(|s| s.payload.is_empty()).count();
    prop_assert!(bare <= 3, "{} segments without data for one input", bare);
    prop_assert!(
        bytes <= cfg.send_buffer + c.send_mss(),
        "{} bytes sent for one input",
        bytes
    );
    for s in out {
        prop_assert!(s.payload.len() <= c.send_mss().max(1));
    }
    Ok(())
}

/// Runs `c`'s timers due by `now`, each run moving the next deadline on.
fn run_timers(c: &mut Connection, cfg: &TcpConfig, now: Instant) -> Result<(), TestCaseError> {
    for _ in 0..100 {
        let Some(at) = c.poll_at() else {
            return Ok(());
        };
        if at > now {
            return Ok(());
        }
        let before = c.state();
        let out = c.on_timer(at);
        check_output(&out, c, cfg)?;
        prop_assert!(
            is_arc(before, c.state()),
            "timer: {:?} → {:?}",
            before,
            c.state()
        );
        if let Some(next) = c.poll_at() {
            prop_assert!(next > at, "a timer run at {:?} left {:?} due", at, next);
        }
        check_coherent(c, cfg)?;
    }
    prop_assert!(false, "100 timer runs without catching up with the clock");
    Ok(())
}

/// The application's call `app` on `c`.
fn app_call(c: &mut Connection, app: u8, now: Instant) -> Vec<Segment> {
    match app {
        0 => {
            c.send(&pattern(3000));
        }
        1 => {
            let mut buf = [0u8; 4096];
            while c.recv(&mut buf) > 0 {}
        }
        2 => c.close(),
        3 => return c.abort().into_iter().collect(),
        _ => {}
    }
    c.poll_output(now)
}

fn fuzz_connection(start: usize, kind: u8, events: &[Event]) -> Result<(), TestCaseError> {
    let cfg = config(kind);
    let (p, on_a) = reach(STATES[start], &cfg);
    let clock = p.clock;
    let mut c = if on_a { p.a } else { p.b };
    let mut refused = 0;
    for e in events {
        let now = clock
            .now()
            .after(Duration::from_millis(u64::from(e.advance_ms)));
        clock.set(now);
        run_timers(&mut c, &cfg, now)?;
        let before = c.state();
        let out = app_call(&mut c, e.app, now);
        check_output(&out, &c, &cfg)?;
        check_coherent(&c, &cfg)?;
        let after_app = c.state();
        let bytes = segment_bytes(e, &c, now, on_a);
        let (src, dst) = addresses(if on_a { Dir::BtoA } else { Dir::AtoB });
        let packet = TcpPacket::new_checked(&bytes[..]).expect("a whole segment");
        let Ok(seg) = TcpRepr::parse(&packet, src, dst, ChecksumMethod::Rfc1071) else {
            refused += 1;
            continue;
        };
        let out = c.on_segment(&seg, now);
        check_output(&out, &c, &cfg)?;
        prop_assert!(
            is_arc(after_app, c.state()),
            "{:?} → {:?} on {:?} (before the application: {:?})",
            after_app,
            c.state(),
            seg,
            before
        );
        check_coherent(&c, &cfg)?;
    }
    prop_assert!(refused <= events.len());
    Ok(())
}

proptest! {
    #[test]
    fn segments_into_a_connection_in_every_state_keep_it_bounded_and_coherent(
        start in 0usize..STATES.len(),
        kind in any::<u8>(),
        events in proptest::collection::vec(event(), 1..24),
    ) {
        fuzz_connection(start, kind, &events)?;
    }
}

/// Every state is reached by the setup the fuzzer starts from.
#[test]
fn every_starting_state_is_reached() {
    for kind in 0..3 {
        for &state in &STATES {
            reach(state, &config(kind));
        }
    }
}

// ---------------------------------------------------------------------
// Frames into a whole stack.
// ---------------------------------------------------------------------

const A: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(10, 79, 0, 2);
const BACKLOG: usize = 2;

struct Stacks {
    clock: Arc<ManualClock>,
    a: Stack<Loopback>,
    b: Stack<Loopback>,
    /// A's end of the connection B opened.
    conn: TcpHandle,
    /// B's port on it.
    b_port: u16,
    /// Every frame B sent while the connection was set up.
    b_frames: Vec<Vec<u8>>,
}

fn stack_at(addr: Ipv4Addr, medium: Medium, clock: Arc<ManualClock>, seed: u8) -> Stack<Loopback> {
    let cidr = Ipv4Cidr::new(Ipv4Address::from(addr), 24).unwrap();
    let mut iface = InterfaceConfig::new(medium, cidr);
    iface.mac = EthernetAddress([2, 0, 0, 0, 0, seed]);
    let tcp = TcpConfig {
        send_buffer: 8 * 1024,
        recv_buffer: 8 * 1024,
        ..TcpConfig::default()
    };
    let isn = IsnGenerator::with_secret(IsnPolicy::Rfc6528, [seed; 32]);
    let clock: Arc<dyn Clock> = clock;
    Stack::new(Loopback::new(medium, 1500), iface, tcp, isn, clock)
}

impl Stacks {
    /// A listening on port 80 with one connection from B established,
    /// each end with data sent and not yet acknowledged.
    fn new(medium: Medium) -> Stacks {
        let clock = Arc::new(ManualClock::new(Instant(1_000_000_000)));
        let mut a = stack_at(A, medium, clock.clone(), 1);
        let mut b = stack_at(B, medium, clock.clone(), 2);
        let listener = a.tcp.listen(80, BACKLOG).unwrap();
        let c = b
            .tcp
            .connect(B, SocketAddrV4::new(A, 80), clock.now())
            .unwrap();
        let b_port = b.tcp.connection(c).unwrap().tuple().local.port();
        let mut b_frames = Vec::new();
        settle(&clock, &mut a, &mut b, &mut b_frames);
        let conn = a.tcp.accept(listener).unwrap().expect("accepted");
        b.tcp.send(c, &pattern(3000)).unwrap();
        settle(&clock, &mut a, &mut b, &mut b_frames);
        a.tcp.send(conn, &pattern(5000)).unwrap();
        a.poll(clock.now()).unwrap();
        a.device.outbound.clear();
        Stacks {
            clock,
            a,
            b,
            conn,
            b_port,
            b_frames,
        }
    }
}

/// Moves frames both ways until the wire is quiet, keeping B's.
fn settle(
    clock: &ManualClock,
    a: &mut Stack<Loopback>,
    b: &mut Stack<Loopback>,
    kept: &mut Vec<Vec<u8>>,
) {
    for _ in 0..1000 {
        let now = clock.now();
        a.poll(now).unwrap();
        b.poll(now).unwrap();
        let a_out: Vec<_> = a.device.outbound.drain(..).collect();
        let b_out: Vec<_> = b.device.outbound.drain(..).collect();
        if a_out.is_empty() && b_out.is_empty() {
            return;
        }
        kept.extend(b_out.iter().cloned());
        b.device.inbound.extend(a_out);
        a.device.inbound.extend(b_out);
    }
    panic!("the wire never went quiet");
}

/// One fuzzed frame (or the clock moving) for a stack.
#[derive(Debug, Clone)]
enum Input {
    /// One of B's frames with bytes changed, the checksums then fixed or
    /// not.
    Mutated {
        frame: usize,
        changes: Vec<(usize, u8)>,
        fix: bool,
    },
    /// A segment to A: to the connection (from B's port) or to the
    /// listener or anywhere (from anyone).
    Segment {
        to_conn: bool,
        src: [u8; 4],
        ports: (u16, u16),
        flags: u8,
        seq: (bool, i32),
        ack: (bool, i32),
        window: u16,
        payload_len: usize,
    },
    /// An IPv4 fragment to A.
    Fragment {
        src_last: u8,
        ident: u16,
        offset: u16,
        more: bool,
        len: usize,
        proto: u8,
    },
    /// An ARP packet.
    Arp(ArpRepr),
    /// Anything.
    Bytes(Vec<u8>),
    /// The clock moves this many milliseconds.
    Advance(u32),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        3 => (
            any::<usize>(),
            proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            any::<bool>(),
        )
            .prop_map(|(frame, changes, fix)| Input::Mutated {
                frame,
                changes,
                fix
            }),
        4 => (
            (any::<bool>(), any::<[u8; 4]>(), (1u16.., 1u16..), flags()),
            ((any::<bool>(), -70_000i32..70_000), (any::<bool>(), -70_000i32..70_000)),
            (any::<u16>(), prop_oneof![Just(0usize), 1usize..1400]),
        )
            .prop_map(|((to_conn, src, ports, flags), (seq, ack), (window, payload_len))| {
                Input::Segment {
                    to_conn,
                    src,
                    ports,
                    flags,
                    seq,
                    ack,
                    window,
                    payload_len,
                }
            }),
        3 => (any::<u8>(), 0u16..6, 0u16..8192, any::<bool>(), 0usize..1480, prop_oneof![
            Just(6u8), Just(17), Just(1), any::<u8>()
        ])
            .prop_map(|(src_last, ident, offset, more, len, proto)| Input::Fragment {
                src_last,
                ident,
                offset,
                more,
                len,
                proto
            }),
        2 => arp_repr().prop_map(Input::Arp),
        1 => proptest::collection::vec(any::<u8>(), 0..1600).prop_map(Input::Bytes),
        2 => prop_oneof![0u32..100, 0u32..100_000].prop_map(Input::Advance),
    ]
}

/// An IPv4 packet from `src` to A around `payload`, in an Ethernet frame
/// to A's MAC on Ethernet.
fn to_a(s: &Stacks, ip: &Ipv4Repr, proto: IpProtocol, payload: &[u8]) -> Vec<u8> {
    let packet = emit_ipv4(ip, proto, payload, ChecksumMethod::Rfc1071);
    link(s, EtherType::Ipv4, &packet)
}

fn link(s: &Stacks, ethertype: EtherType, packet: &[u8]) -> Vec<u8> {
    match s.a.iface.medium() {
        Medium::Ethernet => {
            let eth = EthernetRepr {
                src_addr: s.b.iface.mac(),
                dst_addr: s.a.iface.mac(),
                ethertype,
            };
            emit_ethernet(&eth, packet)
        }
        _ => packet.to_vec(),
    }
}

fn ip_to_a(src: Ipv4Address) -> Ipv4Repr {
    Ipv4Repr {
        src_addr: src,
        dst_addr: Ipv4Address::from(A),
        next_header: IpProtocol::Tcp,
        payload_len: 0,
        hop_limit: 64,
        dscp_ecn: 0,
        ident: 1,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
        options_len: 0,
    }
}

/// The frame `input` describes, if it is one.
fn frame_for(s: &Stacks, input: &Input) -> Option<Vec<u8>> {
    let link_len = if s.a.iface.medium() == Medium::Ethernet {
        14
    } else {
        0
    };
    Some(match input {
        Input::Mutated {
            frame,
            changes,
            fix,
        } => {
            let mut f = s.b_frames[frame % s.b_frames.len()].clone();
            for &(at, value) in changes {
                let at = at % f.len();
                f[at] = value;
            }
            if *fix && f.len() >= link_len + 40 && f[link_len + 9] == 6 {
                let ihl = usize::from(f[link_len] & 0x0f) * 4;
                let total = usize::from(u16::from_be_bytes([f[link_len + 2], f[link_len + 3]]));
                if ihl >= 20 && total >= ihl + 20 && link_len + total <= f.len() {
                    let src = Ipv4Address::from_bytes(&f[link_len + 12..link_len + 16]);
                    let dst = Ipv4Address::from_bytes(&f[link_len + 16..link_len + 20]);
                    f[link_len + 10..link_len + 12].fill(0);
                    let sum = finish(sum_rfc1071(&f[link_len..link_len + ihl]));
                    f[link_len + 10..link_len + 12].copy_from_slice(&sum.to_be_bytes());
                    fix_tcp_checksum(&mut f[link_len + ihl..link_len + total], src, dst);
                }
            }
            f
        }
        Input::Segment {
            to_conn,
            src,
            ports,
            flags,
            seq,
            ack,
            window,
            payload_len,
        } => {
            let (src, sport, dport, seq, ack) = if *to_conn {
                let c = s.a.tcp.connection(s.conn).ok()?;
                let (una, _, nxt) = c.sequence_points();
                let at = |(near, off): (bool, i32), base: SeqNumber| {
                    if near {
                        SeqNumber(base.0.wrapping_add(off as u32))
                    } else {
                        SeqNumber(off as u32)
                    }
                };
                (
                    Ipv4Address::from(B),
                    s.b_port,
                    80,
                    at(*seq, nxt),
                    at(*ack, una),
                )
            } else {
                let dport = if ports.1 % 2 == 0 { 80 } else { ports.1 };
                (
                    Ipv4Address(*src),
                    ports.0,
                    dport,
                    SeqNumber(seq.1 as u32),
                    SeqNumber(ack.1 as u32),
                )
            };
            let payload = pattern(*payload_len);
            let mut repr = TcpRepr::bare(sport, dport, seq);
            repr.ack_number = Some(ack);
            repr.window_len = *window;
            repr.payload = &payload;
            let dst = Ipv4Address::from(A);
            let mut bytes = emit_tcp(&repr, src, dst, ChecksumMethod::Rfc1071);
            bytes[13] = *flags;
            fix_tcp_checksum(&mut bytes, src, dst);
            to_a(s, &ip_to_a(src), IpProtocol::Tcp, &bytes)
        }
        Input::Fragment {
            src_last,
            ident,
            offset,
            more,
            len,
            proto,
        } => {
            let ip = Ipv4Repr {
                ident: *ident,
                more_frags: *more,
                frag_offset: offset * 8,
                ..ip_to_a(Ipv4Address([10, 79, 0, *src_last]))
            };
            to_a(s, &ip, IpProtocol::from(*proto), &pattern(*len))
        }
        Input::Arp(repr) => {
            let mut repr = *repr;
            if repr.target_protocol_addr.0[3] % 2 == 0 {
                repr.target_protocol_addr = Ipv4Address::from(A);
            }
            link(s, EtherType::Arp, &emit_arp(&repr))
        }
        Input::Bytes(b) => b.clone(),
        Input::Advance(_) => return None,
    })
}

fn fuzz_stack(medium: Medium, inputs: &[Input]) -> Result<(), TestCaseError> {
    let mut s = Stacks::new(medium);
    let fragments = stack::iface::fragment::FragmentConfig::default();
    let budget = 64;
    for input in inputs {
        if let Input::Advance(ms) = input {
            s.clock.advance(Duration::from_millis(u64::from(*ms)));
        }
        if let Some(frame) = frame_for(&s, input) {
            s.a.device.inbound.push_back(frame);
        }
        let now = s.clock.now();
        let read = s.a.poll(now);
        prop_assert!(read.is_ok(), "poll: {:?}", read);
        prop_assert!(
            s.a.device.inbound.is_empty(),
            "one frame is read in one poll"
        );
        let sent = s.a.device.outbound.len();
        prop_assert!(sent <= budget, "{} frames sent for one frame in", sent);
        s.a.device.outbound.clear();
        if let Some(at) = s.a.tcp.poll_at() {
            prop_assert!(
                at > now,
                "a timer due at {:?} was left after a poll at {:?}",
                at,
                now
            );
        }
        prop_assert!(s.a.iface.partial_datagrams() <= fragments.max_datagrams);
        prop_assert!(s.a.iface.fragment_bytes_held() <= fragments.max_bytes);
        let arp_len = s.a.iface.arp_cache().len();
        prop_assert!(arp_len <= 1024, "{} ARP entries", arp_len);
        let conns = s.a.tcp.connections().count();
        prop_assert!(
            conns <= BACKLOG + 1,
            "{} connections for a backlog of {}",
            conns,
            BACKLOG
        );
        let memory = s.a.tcp.memory_bytes();
        let bound = (BACKLOG + 1) * (std::mem::size_of::<Connection>() + 128 * 1024) + 64 * 1024;
        prop_assert!(memory <= bound, "TCP memory {} above {}", memory, bound);
        if let Ok(c) = s.a.tcp.connection(s.conn) {
            prop_assert!(c.recv_queued() <= 8 * 1024);
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn frames_into_a_whole_stack_over_ip_stay_bounded(
        inputs in proptest::collection::vec(input(), 1..32),
    ) {
        fuzz_stack(Medium::Ip, &inputs)?;
    }

    #[test]
    fn frames_into_a_whole_stack_over_ethernet_stay_bounded(
        inputs in proptest::collection::vec(input(), 1..32),
    ) {
        fuzz_stack(Medium::Ethernet, &inputs)?;
    }
}
