//! A property over long event sequences between two connections (issue
//! 27), against a reference model of the two byte streams. `tcp_fuzz`
//! plays one end itself for at most 24 events; here both ends are ours,
//! on a `ManualClock`, and a hostile network sits between them for
//! hundreds of events:
//!
//! - the network holds every segment either end sends; an event delivers
//!   the oldest one or any other (reordering, any delay), drops one, or
//!   delivers a copy and keeps it (duplication);
//! - the clock moves by up to half a second, and the timers due fire;
//! - either application writes more of its stream (the send buffer
//!   permitting), reads up to some bytes (or none for a while, so the
//!   advertised window shrinks, closes and reopens: the window changes),
//!   or closes once synchronized;
//! - both ends are built with the default config or with its switches
//!   varied: header prediction, SACK, NewReno or SACK recovery, the
//!   delayed-ACK policy, timestamps, Nagle, receiver SWS avoidance, the
//!   tail loss probe, lost-retransmission detection, window scaling, the
//!   MSS and both buffers; ISNs anywhere, often just below 2³².
//!
//! After every event: each application has read a prefix of what the
//! other wrote, byte for byte (every byte once, in order: the reference
//! model is the stream pattern and the count written); every state change
//! is an arc of RFC 9293's diagram for what happened (a segment or timer,
//! or the application's close); no error; SND.UNA ≤ SND.NXT within the
//! send buffer; received data and heap within bounds. Then the network
//! heals (every segment held is delivered, each new one arrives 5 ms after
//! it left), both applications read everything and close, and the clock
//! runs: both ends must reach CLOSED without error, each having read
//! exactly what the other wrote.
//!
//! Bounded for CI: proptest's 256 cases a property (or `PROPTEST_CASES`)
//! take seconds in the debug build; `scripts/fuzz-stack` runs long
//! campaigns.

#[path = "support/stream_pattern.rs"]
mod stream_pattern;
#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::Duration;

use proptest::prelude::*;
use stack::tcp::isn::IsnGenerator;
use stack::tcp::state::State;
use stack::tcp::tcb::{Connection, RecoveryKind, Segment, TcpConfig};
use stack::tcp::window::{DelayedAckPolicy, ReceiverSws};
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::{ChecksumMethod, SeqNumber, TcpPacket, TcpRepr};
use stream_pattern::Checked;
use tcp_pair::{addresses, to_wire, tuple_a, tuple_b, Dir, START};

/// The one-way delay once the network heals.
const HEALED_DELAY: Duration = Duration::from_millis(5);
/// How long the healed network may take to finish everything (RTOs
/// backed off to 60 s, persist probes, 2·MSL of TIME-WAIT included).
const HEAL_LIMIT: Duration = Duration::from_secs(3600);

/// One end's switches, as drawn.
#[derive(Debug, Clone)]
struct Switches {
    header_prediction: bool,
    sack: bool,
    sack_recovery: bool,
    delayed_ack: u8,
    timestamps: bool,
    nagle: bool,
    receiver_sws: bool,
    mss: u16,
    send_buffer: usize,
    recv_buffer: usize,
    tail_loss_probe: bool,
    lost_retransmit_detection: bool,
    window_scaling: bool,
}

fn switches() -> impl Strategy<Value = Switches> {
    (
        (
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
            0u8..4,
            any::<bool>(),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            prop_oneof![Just(536u16), Just(1000), Just(1460)],
            prop_oneof![Just(4096usize), Just(16 * 1024), Just(64 * 1024)],
            prop_oneof![
                Just(2048usize),
                Just(6000),
                Just(16 * 1024),
                Just(64 * 1024)
            ],
        ),
        (any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(
                (header_prediction, sack, sack_recovery, delayed_ack, timestamps),
                (nagle, receiver_sws, mss, send_buffer, recv_buffer),
                (tail_loss_probe, lost_retransmit_detection, window_scaling),
            )| Switches {
                header_prediction,
                sack,
                sack_recovery,
                delayed_ack,
                timestamps,
                nagle,
                receiver_sws,
                mss,
                send_buffer,
                recv_buffer,
                tail_loss_probe,
                lost_retransmit_detection,
                window_scaling,
            },
        )
}

/// The default config, or (`s` given) the default with `s`'s switches.
/// Either way no retransmission count ends the connection: the network
/// may hold everything for as long as the events say, and the property
/// is about the byte stream, not about giving up.
fn config(s: &Option<Switches>) -> TcpConfig {
    let mut c = TcpConfig {
        max_retransmits: 1_000,
        ..TcpConfig::default()
    };
    let Some(s) = s else {
        return c;
    };
    c.header_prediction = s.header_prediction;
    c.sack = s.sack;
    c.recovery = if s.sack_recovery {
        RecoveryKind::Sack
    } else {
        RecoveryKind::NewReno
    };
    c.delayed_ack = match s.delayed_ack {
        0 => DelayedAckPolicy::Off,
        1 => DelayedAckPolicy::EverySecond(Duration::from_millis(200)),
        2 => DelayedAckPolicy::Timer(Duration::from_millis(40)),
        _ => DelayedAckPolicy::Drain,
    };
    c.timestamps = s.timestamps;
    c.sender.nagle = s.nagle;
    c.receiver_sws = if s.receiver_sws {
        ReceiverSws::Rfc1122
    } else {
        ReceiverSws::Off
    };
    c.mss = s.mss;
    c.send_buffer = s.send_buffer;
    c.recv_buffer = s.recv_buffer;
    c.tail_loss_probe = s.tail_loss_probe;
    c.lost_retransmit_detection = s.lost_retransmit_detection;
    c.window_scaling = s.window_scaling;
    c
}

/// One thing that happens.
#[derive(Debug, Clone)]
enum Event {
    /// The network delivers the oldest segment held (None) or the one at
    /// this index modulo the number held.
    Deliver(Option<u16>),
    /// The network loses a segment (index modulo the number held).
    Drop(u16),
    /// The network delivers a copy and keeps the segment.
    Duplicate(u16),
    /// The clock moves this many milliseconds; due timers fire.
    Advance(u16),
    /// A's (true) or B's application writes up to this many more bytes.
    Write(bool, u32),
    /// A's or B's application reads up to this many bytes.
    Read(bool, u32),
    /// A's or B's application closes (once synchronized).
    Close(bool),
}

fn event() -> impl Strategy<Value = Event> {
    // A close is rare: about one in 800 events, so most sequences move
    // data for hundreds of events first (the heal closes both anyway).
    prop_oneof![
        300 => Just(Event::Deliver(None)),
        100 => any::<u16>().prop_map(|i| Event::Deliver(Some(i))),
        50 => any::<u16>().prop_map(Event::Drop),
        30 => any::<u16>().prop_map(Event::Duplicate),
        150 => prop_oneof![3 => 0u16..50, 1 => 0u16..500].prop_map(Event::Advance),
        100 => (any::<bool>(), 1u32..20_000).prop_map(|(a, n)| Event::Write(a, n)),
        100 => (any::<bool>(), prop_oneof![1u32..100, 1u32..70_000]).prop_map(|(a, n)| Event::Read(a, n)),
        1 => any::<bool>().prop_map(Event::Close),
    ]
}

/// An ISN anywhere or just below 2³².
fn isn() -> impl Strategy<Value = u32> {
    prop_oneof![any::<u32>(), (u32::MAX - 70_000)..=u32::MAX]
}

/// One end: its connection, config, the stream it writes and the stream
/// it reads (the other end's), whether its application closed.
struct End {
    conn: Connection,
    cfg: TcpConfig,
    closed: bool,
}

/// The two ends, the network between them, the clock and the model.
struct World {
    a: End,
    b: End,
    /// Segments held by the network, oldest first, with the direction.
    net: Vec<(Dir, Segment)>,
    clock: ManualClock,
    /// A→B and B→A: written by one application, read by the other.
    a_to_b: Checked,
    b_to_a: Checked,
    scratch: Vec<u8>,
}

/// What moved a connection: which arcs of the diagram it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cause {
    Segment,
    Timer,
    Close,
}

/// RFC 9293's arcs for `cause`, in this setting (no RST is injected and
/// no application aborts or closes before SYN-RECEIVED: reaching CLOSED
/// is the end of LAST-ACK or TIME-WAIT, or a RST from a peer already
/// CLOSED ending CLOSING, LAST-ACK or TIME-WAIT).
fn arcs(cause: Cause, from: State) -> &'static [State] {
    use State::*;
    match (cause, from) {
        (Cause::Segment, Listen) => &[SynReceived],
        (Cause::Segment, SynSent) => &[SynReceived, Established],
        (Cause::Segment, SynReceived) => &[Established, FinWait1],
        (Cause::Segment, Established) => &[CloseWait],
        (Cause::Segment, FinWait1) => &[FinWait2, Closing, TimeWait],
        (Cause::Segment, FinWait2) => &[TimeWait],
        (Cause::Segment, Closing) => &[TimeWait, Closed],
        (Cause::Segment, LastAck) => &[Closed],
        (Cause::Segment, TimeWait) => &[Closed],
        (Cause::Timer, TimeWait) => &[Closed],
        (Cause::Close, Established) => &[FinWait1],
        (Cause::Close, CloseWait) => &[LastAck],
        _ => &[],
    }
}

/// Whether one event of `cause` may take a connection from `from` to
/// `to` (staying put included; a segment may take several arcs: an ACK
/// with a FIN takes FIN-WAIT-1 through FIN-WAIT-2 to TIME-WAIT).
fn is_arc(cause: Cause, from: State, to: State) -> bool {
    let mut reached = vec![from];
    let mut i = 0;
    while i < reached.len() {
        for &next in arcs(cause, reached[i]) {
            if !reached.contains(&next) {
                reached.push(next);
            }
        }
        i += 1;
    }
    reached.contains(&to)
}

impl World {
    fn new(sw_a: &Option<Switches>, sw_b: &Option<Switches>, isn_a: u32, isn_b: u32) -> World {
        let clock = ManualClock::new(START);
        let (cfg_a, cfg_b) = (config(sw_a), config(sw_b));
        let a = Connection::open_active(
            cfg_a.clone(),
            tuple_a(),
            &IsnGenerator::fixed(SeqNumber(isn_a)),
            clock.now(),
        );
        let b = Connection::listen(
            cfg_b.clone(),
            tuple_b(),
            &IsnGenerator::fixed(SeqNumber(isn_b)),
            clock.now(),
        );
        let mut w = World {
            a: End {
                conn: a,
                cfg: cfg_a,
                closed: false,
            },
            b: End {
                conn: b,
                cfg: cfg_b,
                closed: false,
            },
            net: Vec::new(),
            clock,
            a_to_b: Checked::new(u64::MAX),
            b_to_a: Checked::new(u64::MAX),
            scratch: vec![0u8; 70_000],
        };
        let syn = w.a.conn.poll_output(w.clock.now());
        w.send(Dir::AtoB, syn);
        w
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn end(&mut self, on_a: bool) -> &mut End {
        if on_a {
            &mut self.a
        } else {
            &mut self.b
        }
    }

    fn send(&mut self, dir: Dir, segs: Vec<Segment>) {
        self.net.extend(segs.into_iter().map(|s| (dir, s)));
    }

    /// Delivers `seg` (going `dir`) through the wire format, as IP would.
    fn deliver(&mut self, dir: Dir, seg: &Segment) -> Result<(), TestCaseError> {
        let bytes = to_wire(seg, dir);
        let (src, dst) = addresses(dir);
        let packet = TcpPacket::new_checked(&bytes[..]).expect("a whole segment");
        let parsed = TcpRepr::parse(&packet, src, dst, ChecksumMethod::Rfc1071)
            .expect("our own segment parses");
        let to_a = dir == Dir::BtoA;
        let now = self.now();
        let end = self.end(to_a);
        let before = end.conn.state();
        let out = end.conn.on_segment(&parsed, now);
        let after = end.conn.state();
        prop_assert!(
            is_arc(Cause::Segment, before, after),
            "{} {:?} → {:?} on {:?}",
            if to_a { "A" } else { "B" },
            before,
            after,
            parsed
        );
        let back = if to_a { Dir::AtoB } else { Dir::BtoA };
        self.send(back, out);
        Ok(())
    }

    /// Runs both ends' timers due by `t`, in time order; the clock ends at `t`.
    fn run_timers_to(&mut self, t: Instant) -> Result<(), TestCaseError> {
        for _ in 0..10_000 {
            let next = [self.a.conn.poll_at(), self.b.conn.poll_at()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(at) if at <= t => {
                    self.clock.set(at.max(self.now()));
                    self.fire_timers()?;
                }
                _ => {
                    self.clock.set(t.max(self.now()));
                    return Ok(());
                }
            }
        }
        prop_assert!(false, "10,000 timer runs without reaching {:?}", t);
        Ok(())
    }

    /// Fires the timers due now at both ends.
    fn fire_timers(&mut self) -> Result<(), TestCaseError> {
        let now = self.now();
        for on_a in [true, false] {
            let end = self.end(on_a);
            if end.conn.poll_at().is_some_and(|at| at <= now) {
                let before = end.conn.state();
                let out = end.conn.on_timer(now);
                let after = end.conn.state();
                if let Some(next) = end.conn.poll_at() {
                    prop_assert!(next > now, "a timer run at {:?} left {:?} due", now, next);
                }
                prop_assert!(
                    is_arc(Cause::Timer, before, after),
                    "timer: {:?} → {:?}",
                    before,
                    after
                );
                self.send(if on_a { Dir::AtoB } else { Dir::BtoA }, out);
            }
        }
        Ok(())
    }

    /// A's or B's application writes up to `n` more bytes.
    fn write(&mut self, on_a: bool, n: usize) {
        let now = self.now();
        let (end, stream, scratch) = if on_a {
            (&mut self.a, &mut self.a_to_b, &mut self.scratch)
        } else {
            (&mut self.b, &mut self.b_to_a, &mut self.scratch)
        };
        if end.closed {
            return;
        }
        let room = end.conn.send_capacity().min(n);
        stream.write(room, scratch, |d| end.conn.send(d));
        let out = end.conn.poll_output(now);
        self.send(if on_a { Dir::AtoB } else { Dir::BtoA }, out);
    }

    /// A's or B's application reads up to `n` bytes (the other's stream).
    fn read(&mut self, on_a: bool, n: usize) {
        let now = self.now();
        let n = n.min(self.scratch.len());
        let (end, stream, scratch) = if on_a {
            (&mut self.a, &mut self.b_to_a, &mut self.scratch)
        } else {
            (&mut self.b, &mut self.a_to_b, &mut self.scratch)
        };
        let mut left = n;
        stream.read(&mut scratch[..n], |buf| {
            let k = end.conn.recv(&mut buf[..left]);
            left -= k;
            k
        });
        let out = end.conn.poll_output(now);
        self.send(if on_a { Dir::AtoB } else { Dir::BtoA }, out);
    }

    /// A's or B's application closes, if its connection is synchronized
    /// (a close in SYN-SENT or LISTEN deletes the connection: no stream).
    fn close(&mut self, on_a: bool) -> Result<(), TestCaseError> {
        let now = self.now();
        let end = self.end(on_a);
        let before = end.conn.state();
        if end.closed || !before.is_synchronized() || before == State::Closed {
            return Ok(());
        }
        end.closed = true;
        end.conn.close();
        let after = end.conn.state();
        prop_assert!(
            is_arc(Cause::Close, before, after),
            "close: {:?} → {:?}",
            before,
            after
        );
        let out = end.conn.poll_output(now);
        self.send(if on_a { Dir::AtoB } else { Dir::BtoA }, out);
        Ok(())
    }

    /// One event of the hostile phase.
    fn apply(&mut self, e: &Event) -> Result<(), TestCaseError> {
        let held = self.net.len();
        match *e {
            Event::Deliver(pick) if held > 0 => {
                let i = pick.map_or(0, |i| usize::from(i) % held);
                let (dir, seg) = self.net.remove(i);
                self.deliver(dir, &seg)?;
            }
            Event::Drop(i) if held > 0 => {
                self.net.remove(usize::from(i) % held);
            }
            Event::Duplicate(i) if held > 0 => {
                let (dir, seg) = self.net[usize::from(i) % held].clone();
                self.deliver(dir, &seg)?;
            }
            Event::Advance(ms) => {
                let t = self.now().after(Duration::from_millis(u64::from(ms)));
                self.run_timers_to(t)?;
            }
            Event::Write(on_a, n) => self.write(on_a, n as usize),
            Event::Read(on_a, n) => self.read(on_a, n as usize),
            Event::Close(on_a) => self.close(on_a)?,
            _ => {}
        }
        self.check()
    }

    /// What holds after every event.
    fn check(&self) -> Result<(), TestCaseError> {
        for (name, stream) in [("A→B", &self.a_to_b), ("B→A", &self.b_to_a)] {
            prop_assert_eq!(stream.mismatch, None, "{}: the first byte read wrong", name);
            prop_assert!(
                stream.read <= stream.written,
                "{}: read {} of {} written",
                name,
                stream.read,
                stream.written
            );
        }
        for (name, end) in [("A", &self.a), ("B", &self.b)] {
            let c = &end.conn;
            prop_assert_eq!(c.error(), None, "{}: an error in {:?}", name, c.state());
            prop_assert!(c.recv_queued() <= end.cfg.recv_buffer, "{}: RCV.BUFF", name);
            let bound = 4 * (end.cfg.send_buffer + end.cfg.recv_buffer) + 64 * 1024;
            prop_assert!(
                c.heap_bytes() <= bound,
                "{}: heap {} over {}",
                name,
                c.heap_bytes(),
                bound
            );
            if c.state().is_synchronized() && c.state() != State::Closed {
                let (una, nxt, _) = c.sequence_points();
                prop_assert!(
                    una <= nxt,
                    "{}: SND.UNA {:?} ≤ SND.NXT {:?}",
                    name,
                    una,
                    nxt
                );
                prop_assert!(
                    nxt - una <= end.cfg.send_buffer + 2,
                    "{}: {} in flight",
                    name,
                    nxt - una
                );
            }
        }
        Ok(())
    }

    /// The network heals: what it holds arrives in order, each new
    /// segment `HEALED_DELAY` after it left; both applications read all
    /// and close; the clock runs until both ends are CLOSED.
    fn heal(&mut self) -> Result<(), TestCaseError> {
        let mut arriving: std::collections::VecDeque<(Instant, Dir, Segment)> = self
            .net
            .drain(..)
            .map(|(d, s)| (self.clock.now().after(HEALED_DELAY), d, s))
            .collect();
        let limit = self.now().after(HEAL_LIMIT);
        for _ in 0..1_000_000 {
            for on_a in [true, false] {
                self.read(on_a, usize::MAX);
                self.close(on_a)?;
            }
            let now = self.now();
            arriving.extend(
                self.net
                    .drain(..)
                    .map(|(d, s)| (now.after(HEALED_DELAY), d, s)),
            );
            self.check()?;
            if self.a.conn.state() == State::Closed && self.b.conn.state() == State::Closed {
                return Ok(());
            }
            let next_timer = [self.a.conn.poll_at(), self.b.conn.poll_at()]
                .into_iter()
                .flatten()
                .min();
            let next_arrival = arriving.front().map(|e| e.0);
            match (next_arrival, next_timer) {
                (Some(t), timer) if timer.is_none_or(|tt| t <= tt) => {
                    prop_assert!(t <= limit, "still running {:?} after the heal", HEAL_LIMIT);
                    self.clock.set(t.max(self.now()));
                    let (_, dir, seg) = arriving.pop_front().unwrap();
                    self.deliver(dir, &seg)?;
                }
                (_, Some(t)) => {
                    prop_assert!(t <= limit, "still running {:?} after the heal", HEAL_LIMIT);
                    self.clock.set(t.max(self.now()));
                    self.fire_timers()?;
                }
                _ => break,
            }
        }
        prop_assert!(
            false,
            "stalled after the heal: A {:?}, B {:?}, A→B {:?}, B→A {:?}",
            self.a.conn.state(),
            self.b.conn.state(),
            self.a_to_b,
            self.b_to_a
        );
        Ok(())
    }
}

fn run(
    sw_a: Option<Switches>,
    sw_b: Option<Switches>,
    isns: (u32, u32),
    events: &[Event],
) -> Result<(), TestCaseError> {
    let mut w = World::new(&sw_a, &sw_b, isns.0, isns.1);
    for e in events {
        w.apply(e)?;
    }
    w.heal()?;
    for (name, stream) in [("A→B", &w.a_to_b), ("B→A", &w.b_to_a)] {
        prop_assert_eq!(
            stream.read,
            stream.written,
            "{}: every byte written was read",
            name
        );
    }
    Ok(())
}

proptest! {
    /// Both ends with the default config.
    #[test]
    fn long_hostile_sequences_deliver_every_byte_once_in_order_with_the_default_config(
        isns in (isn(), isn()),
        events in proptest::collection::vec(event(), 300..1500),
    ) {
        run(None, None, isns, &events)?;
    }

    /// Each end with its switches varied.
    #[test]
    fn long_hostile_sequences_deliver_every_byte_once_in_order_with_switches_varied(
        sw_a in switches(),
        sw_b in switches(),
        isns in (isn(), isn()),
        events in proptest::collection::vec(event(), 300..1500),
    ) {
        run(Some(sw_a), Some(sw_b), isns, &events)?;
    }
}
