//! Two connections wired back to back through an in-memory link with a
//! fixed one-way delay, driven as a discrete-event simulation on a
//! `ManualClock`: every segment each end sends is logged, may be dropped
//! by a chosen filter, and is delivered `delay` later; timers fire when the
//! clock reaches them. No sleeps, no threads.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use stack::tcp::isn::{FourTuple, IsnGenerator, IsnPolicy};
use stack::tcp::state::State;
use stack::tcp::tcb::{Connection, Segment, TcpConfig};
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::tcp::{TcpControl, TcpPacket, TcpRepr};
use stack::wire::{ChecksumMethod, Ipv4Address};

/// Which way a segment goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// From the active opener A to B.
    AtoB,
    /// From B to A.
    BtoA,
}

/// One segment as it was sent.
#[derive(Debug, Clone)]
pub struct Sent {
    pub at: Instant,
    pub dir: Dir,
    pub seg: Segment,
    pub dropped: bool,
}

/// A drop filter: true drops the segment.
pub type DropFilter = Box<dyn FnMut(Dir, &Segment) -> bool>;

/// What else happens to a segment the filter let through: one extra delay
/// per copy delivered (none: lost; two: duplicated; uneven: reordered).
pub type Fate = Box<dyn FnMut(Dir, &Segment) -> Vec<Duration>>;

/// One side's application: bytes still to write, bytes read.
#[derive(Debug, Default)]
pub struct App {
    pub to_write: Vec<u8>,
    pub written: usize,
    pub read: Vec<u8>,
    pub auto_read: bool,
    pub close_when_written: bool,
}

pub struct Pair {
    pub a: Connection,
    pub b: Connection,
    pub app_a: App,
    pub app_b: App,
    pub clock: ManualClock,
    pub delay: Duration,
    pub log: Vec<Sent>,
    pub drop: DropFilter,
    pub fate: Fate,
    in_flight: Vec<(Instant, u64, Dir, Segment)>,
    counter: u64,
}

pub fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

pub fn tuple_a() -> FourTuple {
    FourTuple {
        local: addr("10.0.0.1:40000"),
        remote: addr("10.0.0.2:80"),
    }
}

pub fn tuple_b() -> FourTuple {
    FourTuple {
        local: addr("10.0.0.2:80"),
        remote: addr("10.0.0.1:40000"),
    }
}

pub fn isn() -> IsnGenerator {
    IsnGenerator::with_secret(IsnPolicy::Rfc6528, [7; 32])
}

/// A start well away from zero so timestamps and ISNs are not trivial.
pub const START: Instant = Instant(5_000_000_000);

impl Pair {
    /// A (active) and B (listening), unopened: nothing sent yet.
    pub fn new(config_a: TcpConfig, config_b: TcpConfig, delay: Duration) -> Pair {
        let clock = ManualClock::new(START);
        let g = isn();
        let a = Connection::open_active(config_a, tuple_a(), &g, clock.now());
        let b = Connection::listen(config_b, tuple_b(), &g, clock.now());
        Pair::from_parts(a, b, clock, delay)
    }

    /// Two connections built by the caller.
    pub fn from_parts(a: Connection, b: Connection, clock: ManualClock, delay: Duration) -> Pair {
        Pair {
            a,
            b,
            app_a: App {
                auto_read: true,
                ..App::default()
            },
            app_b: App {
                auto_read: true,
                ..App::default()
            },
            clock,
            delay,
            log: Vec::new(),
            drop: Box::new(|_, _| false),
            fate: Box::new(|_, _| vec![Duration::ZERO]),
            in_flight: Vec::new(),
            counter: 0,
        }
    }

    /// Both ends ESTABLISHED (runs the handshake).
    pub fn established(config_a: TcpConfig, config_b: TcpConfig, delay: Duration) -> Pair {
        let mut p = Pair::new(config_a, config_b, delay);
        p.kick();
        p.run_until(|p| p.a.state() == State::Established && p.b.state() == State::Established);
        p
    }

    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Puts segments on the link.
    pub fn transmit(&mut self, dir: Dir, segs: Vec<Segment>) {
        let now = self.now();
        for seg in segs {
            let dropped = (self.drop)(dir, &seg);
            self.log.push(Sent {
                at: now,
                dir,
                seg: seg.clone(),
                dropped,
            });
            if !dropped {
                for extra in (self.fate)(dir, &seg) {
                    self.counter += 1;
                    self.in_flight.push((
                        now.after(self.delay + extra),
                        self.counter,
                        dir,
                        seg.clone(),
                    ));
                }
            }
        }
    }

    /// Lets both ends send what their applications gave them.
    pub fn kick(&mut self) {
        let now = self.now();
        for side in [Dir::AtoB, Dir::BtoA] {
            let (conn, app) = match side {
                Dir::AtoB => (&mut self.a, &mut self.app_a),
                Dir::BtoA => (&mut self.b, &mut self.app_b),
            };
            if app.written < app.to_write.len() {
                app.written += conn.send(&app.to_write[app.written..]);
            }
            if app.close_when_written && app.written == app.to_write.len() {
                app.close_when_written = false;
                conn.close();
            }
            if app.auto_read {
                let mut buf = [0u8; 65536];
                loop {
                    let n = conn.recv(&mut buf);
                    if n == 0 {
                        break;
                    }
                    app.read.extend_from_slice(&buf[..n]);
                }
            }
            let out = conn.poll_output(now);
            self.transmit(side, out);
        }
    }

    /// The next event: a delivery or a timer. False when nothing is left.
    pub fn step(&mut self) -> bool {
        let next_delivery = self.in_flight.iter().map(|e| (e.0, e.1)).min();
        let timer_a = self.a.poll_at();
        let timer_b = self.b.poll_at();
        let next_timer = [timer_a, timer_b].into_iter().flatten().min();
        match (next_delivery, next_timer) {
            (None, None) => return false,
            (Some((t, id)), timer) if timer.is_none_or(|tt| t <= tt) => {
                self.clock.set(t);
                let i = self.in_flight.iter().position(|e| e.1 == id).unwrap();
                let (_, _, dir, seg) = self.in_flight.remove(i);
                let now = self.now();
                let (conn, back) = match dir {
                    Dir::AtoB => (&mut self.b, Dir::BtoA),
                    Dir::BtoA => (&mut self.a, Dir::AtoB),
                };
                // Through the wire format and back, as the IP layer will.
                let bytes = to_wire(&seg, dir);
                let (src, dst) = addresses(dir);
                let packet = TcpPacket::new_checked(&bytes[..]).expect("a whole segment");
                let parsed = TcpRepr::parse(&packet, src, dst, ChecksumMethod::Rfc1071)
                    .expect("the segment parses");
                assert_eq!(parsed, seg.repr(), "the segment survives the wire");
                let out = conn.on_segment(&parsed, now);
                self.transmit(back, out);
            }
            (_, timer) => {
                let t = timer.expect("a timer when no delivery comes first");
                self.clock.set(t);
                let now = self.now();
                if timer_a == Some(t) {
                    let out = self.a.on_timer(now);
                    self.transmit(Dir::AtoB, out);
                }
                if timer_b == Some(t) {
                    let out = self.b.on_timer(now);
                    self.transmit(Dir::BtoA, out);
                }
            }
        }
        self.kick();
        true
    }

    /// Steps until `done` holds (panics after a million events).
    pub fn run_until(&mut self, mut done: impl FnMut(&Pair) -> bool) {
        for _ in 0..1_000_000 {
            if done(self) {
                return;
            }
            if !self.step() {
                break;
            }
        }
        assert!(
            done(self),
            "condition never held; A {:?}, B {:?}",
            self.a.state(),
            self.b.state()
        );
    }

    /// Steps until `t` (events at `t` included), then sets the clock to it.
    pub fn run_to(&mut self, t: Instant) {
        loop {
            let next_delivery = self.in_flight.iter().map(|e| e.0).min();
            let next_timer = [self.a.poll_at(), self.b.poll_at()]
                .into_iter()
                .flatten()
                .min();
            let next = [next_delivery, next_timer].into_iter().flatten().min();
            match next {
                Some(n) if n <= t => {
                    self.step();
                }
                _ => break,
            }
        }
        self.clock.set(t);
    }

    /// Forgets every segment on the link (a total outage).
    pub fn clear_link(&mut self) {
        self.in_flight.clear();
    }

    /// Segments sent one way, in order.
    pub fn sent(&self, dir: Dir) -> Vec<&Sent> {
        self.log.iter().filter(|s| s.dir == dir).collect()
    }

    /// Delivers a crafted segment to A or B now; returns the replies
    /// (which are not put on the link).
    pub fn inject(&mut self, to_b: bool, seg: &TcpRepr<'_>) -> Vec<Segment> {
        let now = self.now();
        if to_b {
            self.b.on_segment(seg, now)
        } else {
            self.a.on_segment(seg, now)
        }
    }
}

/// Bytes 0, 1, …, 250, 0, … with a twist so shifted copies differ.
pub fn pattern(len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| ((i % 251) ^ (i / 251 % 7)) as u8)
        .collect()
}

/// Whether a segment carries a flag.
pub fn is(seg: &Segment, control: TcpControl) -> bool {
    seg.header.control == control
}

/// The IPv4 source and destination of a segment going `dir`.
pub fn addresses(dir: Dir) -> (Ipv4Address, Ipv4Address) {
    let a = Ipv4Address([10, 0, 0, 1]);
    let b = Ipv4Address([10, 0, 0, 2]);
    match dir {
        Dir::AtoB => (a, b),
        Dir::BtoA => (b, a),
    }
}

/// The segment's bytes with its checksum.
pub fn to_wire(seg: &Segment, dir: Dir) -> Vec<u8> {
    let repr = seg.repr();
    let mut bytes = vec![0u8; repr.buffer_len()];
    let (src, dst) = addresses(dir);
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut bytes[..]),
        src,
        dst,
        ChecksumMethod::Rfc1071,
    );
    bytes
}
