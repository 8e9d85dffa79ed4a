//! Sequence state that must follow a stream past 2 GiB (half the
//! sequence space): a variable set once and compared with the moving
//! edges goes stale when the stream has moved 2^31 octets past it, and
//! the modular comparison then reads it as ahead. Each test moves more
//! than 2 GiB from A to B on the injected clock in 64 KB segments (a
//! second or two, every octet checked) and then asks for the behaviour
//! that a fresh connection shows.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::collections::VecDeque;
use std::time::Duration;

use stack::tcp::state::State;
use stack::tcp::tcb::{Connection, RecoveryKind, Segment, TcpConfig};
use stack::time::{Clock, Instant, ManualClock};
use stack::wire::tcp::TcpRepr;
use tcp_pair::{Dir, Pair};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The octet at stream offset `i`: 251 is prime to every power of two, so
/// an octet delivered at the wrong offset shows.
fn octet(i: u64) -> u8 {
    (i % 251) as u8
}

/// A and B back to back on a link of one fixed delay, A writing an
/// endless patterned stream and B reading and checking it, without
/// keeping it: 2 GiB pass in constant memory.
struct Bulk {
    a: Connection,
    b: Connection,
    clock: ManualClock,
    delay: Duration,
    link: VecDeque<(Instant, Dir, Segment)>,
    /// Octets A's application has written, and B's has read.
    written: u64,
    read: u64,
    /// A writes no further than this.
    write_limit: u64,
    /// The next data segment from A is lost.
    lose_next_data: bool,
    /// The header of the last segment A sent (for a crafted one in its
    /// likeness).
    last_from_a: Option<TcpRepr<'static>>,
    /// One period of the pattern and then some, to write and compare from.
    pattern: Vec<u8>,
    scratch: Vec<u8>,
}

impl Bulk {
    /// Both ends ESTABLISHED with 64 KB segments, 1 MiB buffers and
    /// `recovery` for fast retransmit.
    fn new(recovery: RecoveryKind) -> Bulk {
        let config = TcpConfig {
            mss: 65_495,
            send_buffer: MIB as usize,
            recv_buffer: MIB as usize,
            recovery,
            ..TcpConfig::default()
        };
        let delay = Duration::from_micros(500);
        let p = Pair::established(config.clone(), config, delay);
        let pattern: Vec<u8> = (0..(251 * 1024 + 251)).map(octet).collect();
        Bulk {
            a: p.a,
            b: p.b,
            clock: p.clock,
            delay,
            link: VecDeque::new(),
            written: 0,
            read: 0,
            write_limit: 0,
            lose_next_data: false,
            last_from_a: None,
            pattern,
            scratch: vec![0; 251 * 1024],
        }
    }

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn put(&mut self, dir: Dir, segs: Vec<Segment>) {
        let at = self.now().after(self.delay);
        for seg in segs {
            if dir == Dir::AtoB {
                if self.lose_next_data && !seg.payload.is_empty() {
                    self.lose_next_data = false;
                    continue;
                }
                self.last_from_a = Some(seg.header.clone());
            }
            self.link.push_back((at, dir, seg));
        }
    }

    /// The applications' turn: A writes up to the limit, B reads and
    /// checks everything there is; then both send what is due.
    fn apps(&mut self) {
        while self.written < self.write_limit {
            let start = (self.written % 251) as usize;
            let want = (self.write_limit - self.written).min(251 * 1024) as usize;
            let n = self.a.send(&self.pattern[start..start + want]);
            if n == 0 {
                break;
            }
            self.written += n as u64;
        }
        loop {
            let n = self.b.recv(&mut self.scratch);
            if n == 0 {
                break;
            }
            let start = (self.read % 251) as usize;
            assert!(
                self.scratch[..n] == self.pattern[start..start + n],
                "B read wrong octets at stream offset {}",
                self.read
            );
            self.read += n as u64;
        }
        let now = self.now();
        let out = self.a.poll_output(now);
        self.put(Dir::AtoB, out);
        let out = self.b.poll_output(now);
        self.put(Dir::BtoA, out);
    }

    /// The next delivery or timer; false when nothing is left to happen.
    fn step(&mut self) -> bool {
        let delivery = self.link.front().map(|e| e.0);
        let timer = [self.a.poll_at(), self.b.poll_at()]
            .into_iter()
            .flatten()
            .min();
        match (delivery, timer) {
            (None, None) => return false,
            (Some(t), tt) if tt.is_none_or(|tt| t <= tt) => {
                self.clock.set(t);
                let (_, dir, seg) = self.link.pop_front().expect("a delivery");
                let now = self.now();
                let (conn, back) = match dir {
                    Dir::AtoB => (&mut self.b, Dir::BtoA),
                    Dir::BtoA => (&mut self.a, Dir::AtoB),
                };
                let out = conn.on_segment(&seg.repr(), now);
                self.put(back, out);
            }
            (_, Some(t)) => {
                self.clock.set(t);
                let now = self.now();
                let out = self.a.on_timer(now);
                self.put(Dir::AtoB, out);
                let out = self.b.on_timer(now);
                self.put(Dir::BtoA, out);
            }
            (Some(_), None) => unreachable!("the first arm takes a delivery without a timer"),
        }
        self.apps();
        true
    }

    /// A writes up to `total` octets in all; runs until B has read them
    /// and A has every one acknowledged.
    fn stream_to(&mut self, total: u64) {
        self.write_limit = total;
        self.apps();
        while !(self.read == total && self.a_all_acked()) {
            assert!(self.step(), "the link went quiet at {} octets", self.read);
            assert_eq!(self.a.state(), State::Established);
        }
    }

    fn a_all_acked(&self) -> bool {
        let (una, nxt, _) = self.a.sequence_points();
        una == nxt
    }
}

/// Streams `total` octets without a loss, then one more MiB (16
/// segments) whose first segment is lost: the 15 behind it bring
/// duplicate ACKs. Returns the fast retransmits and the timeouts that
/// repaired the loss.
fn repair_of_a_loss_after(total: u64, recovery: RecoveryKind) -> (u64, u64) {
    let mut bulk = Bulk::new(recovery);
    bulk.stream_to(total);
    let before = bulk.a.counters();
    assert_eq!(
        (before.fast_retransmits, before.timeouts),
        (0, 0),
        "no loss yet: {before:?}"
    );
    bulk.lose_next_data = true;
    bulk.stream_to(total + MIB);
    let after = bulk.a.counters();
    assert!(
        after.dup_acks - before.dup_acks >= 4,
        "the segments behind the loss were acknowledged: {after:?}"
    );
    (
        after.fast_retransmits - before.fast_retransmits,
        after.timeouts - before.timeouts,
    )
}

#[test]
fn fast_retransmit_still_works_after_2_gib_without_a_loss() {
    for total in [GIB, 2 * GIB + MIB] {
        assert_eq!(
            repair_of_a_loss_after(total, RecoveryKind::NewReno),
            (1, 0),
            "after {total} octets without a loss, duplicate ACKs must \
             trigger fast retransmit (a stale RFC 6582 `recover` reads as \
             ahead of SND.UNA past 2 GiB and leaves the loss to the \
             retransmission timer)"
        );
    }
}

#[test]
fn sack_recovery_still_starts_after_2_gib_without_a_loss() {
    assert_eq!(
        repair_of_a_loss_after(2 * GIB + MIB, RecoveryKind::Sack),
        (1, 0),
        "RFC 6675's recovery, entered through the same `recover` check"
    );
}

#[test]
fn the_peers_window_still_updates_after_2_gib_received_on_the_fast_path() {
    let mut bulk = Bulk::new(RecoveryKind::default());
    bulk.stream_to(2 * GIB + MIB);
    let hits = bulk.b.counters().header_prediction_hits;
    let data_segments = (2 * GIB + MIB).div_ceil(65_483);
    assert!(
        hits >= data_segments * 9 / 10,
        "B took the stream on the header-prediction fast path: {hits} hits \
         for {data_segments} data segments"
    );
    // A advertises 1000 octets (a reader that stopped, say): a pure ACK at
    // A's SND.NXT, the latest timestamps, the window shrunk.
    let mut header = bulk.last_from_a.clone().expect("A sent segments");
    let (_, a_nxt, a_rcv_nxt) = bulk.a.sequence_points();
    let shift = bulk.a.window_shifts().1;
    header.seq_number = a_nxt;
    header.ack_number = Some(a_rcv_nxt);
    header.window_len = (1000 >> shift) as u16;
    header.push = false;
    let offered = usize::from(header.window_len) << shift;
    assert!(bulk.b.send_window() > offered);
    let now = bulk.now();
    bulk.b
        .on_segment(&Segment::new(header, Vec::new()).repr(), now);
    assert_eq!(
        bulk.b.send_window(),
        offered,
        "after 2 GiB taken by the data fast path the window-update rule \
         must still take the peer's window (SND.WL1 left behind by the fast \
         path reads as ahead of SEG.SEQ)"
    );
}
