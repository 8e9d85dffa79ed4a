//! Sequence-number wrap on the injected clock (issue 27): two connections
//! back to back on a `ManualClock` (`support/tcp_pair.rs`), each end's
//! ISN pinned just below 2³² ([`IsnGenerator::fixed`]), so both ends'
//! first data segments straddle the wrap, and one end then moves more
//! than 4 GiB, so its sequence space turns over once more mid-stream and
//! every comparison of its sequence and acknowledgment numbers meets both
//! sides of the wrap. Every byte is checked against the stream pattern
//! (`support/stream_pattern.rs`), so data misplaced by a whole turn of
//! the sequence space shows. Large segments (MSS 65000) and an 8 MiB
//! window keep it to seconds (about 5 s of CPU a transfer in the debug
//! build, under the timing lock: not beside a timed test).

#[path = "support/stream_pattern.rs"]
mod stream_pattern;
#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use stack::tcp::isn::IsnGenerator;
use stack::tcp::state::State;
use stack::tcp::tcb::{Connection, Counters, RecoveryKind, Segment, TcpConfig};
use stack::time::{Clock, ManualClock};
use stack::wire::SeqNumber;
use stream_pattern::Checked;
use tcp_pair::{tuple_a, tuple_b, Dir, Pair, START};

/// A's ISN: 30,000 below 2³², so A's first data segment straddles the wrap.
const ISN_A: SeqNumber = SeqNumber(u32::MAX - 29_999);
/// B's ISN: 3,000 below 2³².
const ISN_B: SeqNumber = SeqNumber(u32::MAX - 2_999);
const GIB: u64 = 1 << 30;
/// What A sends: 4 GiB and a MiB and a bit, so A's sequence space turns
/// over twice (at the start and 4 GiB on).
const A_TOTAL: u64 = 4 * GIB + (1 << 20) + 7;
/// What B sends back: half at the start, half once B has received 3 GiB
/// (past the 2 GiB where a stale sequence variable flips sign).
const B_TOTAL: u64 = 8 << 20;
/// The one-way delay.
const DELAY: Duration = Duration::from_millis(1);

/// Large segments and buffers, everything else the default.
fn config() -> TcpConfig {
    TcpConfig {
        mss: 65_000,
        send_buffer: 8 << 20,
        recv_buffer: 8 << 20,
        ..TcpConfig::default()
    }
}

/// What the link saw: segments that cross the wrap, per direction.
#[derive(Debug, Default)]
struct LinkStats {
    /// Data segments A→B whose sequence range reaches 2³².
    a_crossings: u64,
    /// Data segments B→A whose sequence range reaches 2³².
    b_crossings: u64,
    /// Payload octets A→B the drop plan removed.
    dropped: u64,
}

/// Whether a segment's sequence range reaches the wrap point.
fn reaches_wrap(seg: &Segment) -> bool {
    let len = seg.payload_len() as u64;
    len > 0 && u64::from(seg.header.seq_number.0) + len >= 1 << 32
}

/// A→B's new data is dropped once where it covers each stream offset in
/// `drops` (its retransmission passes).
struct DropPlan {
    /// The stream offset of SND.MAX as the link saw it, and its sequence.
    high: (u64, SeqNumber),
    /// Offsets still to drop at.
    drops: Vec<u64>,
}

impl DropPlan {
    /// Whether to drop `seg` (A→B), updating what the link has seen.
    fn drop(&mut self, seg: &Segment) -> bool {
        let len = seg.payload_len() as u64;
        if len == 0 {
            return false;
        }
        // Signed distance from the highest point seen (within 2³¹).
        let delta = i64::from(seg.header.seq_number.0.wrapping_sub(self.high.1 .0) as i32);
        let start = (self.high.0 as i64 + delta) as u64;
        let end = start + len;
        if end > self.high.0 {
            self.high = (end, seg.header.seq_number + len as usize);
        }
        if let Some(i) = self.drops.iter().position(|&d| start <= d && d < end) {
            self.drops.remove(i);
            return true;
        }
        false
    }
}

/// The pair, each ISN pinned, nothing sent yet; the link counts crossings
/// and drops as `drops` says.
fn pair(cfg: &TcpConfig, drops: Vec<u64>) -> (Pair, Rc<RefCell<LinkStats>>) {
    let clock = ManualClock::new(START);
    let a = Connection::open_active(
        cfg.clone(),
        tuple_a(),
        &IsnGenerator::fixed(ISN_A),
        clock.now(),
    );
    let b = Connection::listen(
        cfg.clone(),
        tuple_b(),
        &IsnGenerator::fixed(ISN_B),
        clock.now(),
    );
    let mut p = Pair::from_parts(a, b, clock, DELAY);
    p.app_a.auto_read = false;
    p.app_b.auto_read = false;
    let stats = Rc::new(RefCell::new(LinkStats::default()));
    let seen = stats.clone();
    // Stream offset 0 is sequence ISN + 1.
    let mut plan = DropPlan {
        high: (0, ISN_A + 1),
        drops,
    };
    p.drop = Box::new(move |dir, seg| {
        let mut s = seen.borrow_mut();
        match dir {
            Dir::AtoB => {
                s.a_crossings += u64::from(reaches_wrap(seg));
                let dropped = plan.drop(seg);
                if dropped {
                    s.dropped += seg.payload_len() as u64;
                }
                dropped
            }
            Dir::BtoA => {
                s.b_crossings += u64::from(reaches_wrap(seg));
                false
            }
        }
    });
    (p, stats)
}

/// What a transfer ended with.
struct Outcome {
    a_to_b: Checked,
    b_to_a: Checked,
    a: Counters,
    b: Counters,
    /// A's and B's (SND.UNA, SND.NXT, RCV.NXT) at the end.
    a_points: (SeqNumber, SeqNumber, SeqNumber),
    b_points: (SeqNumber, SeqNumber, SeqNumber),
    /// Simulated seconds.
    seconds: f64,
}

/// Runs A→B `A_TOTAL` and B→A `B_TOTAL` (B's second half once it has
/// read 3 GiB), each end reading as data arrives and closing when it has
/// written all; until A is CLOSED and B in TIME-WAIT.
fn transfer(p: &mut Pair) -> Outcome {
    let mut a_to_b = Checked::new(A_TOTAL);
    let mut b_to_a = Checked::new(B_TOTAL);
    let mut scratch = vec![0u8; 1 << 20];
    let (mut a_closed, mut b_closed) = (false, false);
    p.kick();
    for _ in 0..20_000_000u64 {
        let room = p.a.send_capacity();
        a_to_b.write(room, &mut scratch, |d| p.a.send(d));
        let b_may = if a_to_b.read >= 3 * GIB {
            B_TOTAL
        } else {
            B_TOTAL / 2
        };
        let room = p.b.send_capacity().min((b_may - b_to_a.written) as usize);
        b_to_a.write(room, &mut scratch, |d| p.b.send(d));
        if a_to_b.written == A_TOTAL && !a_closed {
            p.a.close();
            a_closed = true;
        }
        if b_to_a.written == B_TOTAL && !b_closed {
            p.b.close();
            b_closed = true;
        }
        a_to_b.read(&mut scratch, |buf| p.b.recv(buf));
        b_to_a.read(&mut scratch, |buf| p.a.recv(buf));
        p.kick();
        // Payloads are checked at the receiver; the log would hold them all.
        p.log.clear();
        if p.a.state() == State::Closed && p.b.state() == State::TimeWait {
            break;
        }
        if !p.step() {
            break;
        }
    }
    Outcome {
        a: p.a.counters(),
        b: p.b.counters(),
        a_points: p.a.sequence_points(),
        b_points: p.b.sequence_points(),
        seconds: p.now().since(START).as_secs_f64(),
        a_to_b,
        b_to_a,
    }
}

/// Every byte both ways, both ends at the end of an orderly close, and
/// the sequence variables where the stream lengths put them mod 2³².
fn assert_complete(p: &Pair, o: &Outcome) {
    for (name, c) in [("A→B", &o.a_to_b), ("B→A", &o.b_to_a)] {
        assert_eq!(c.mismatch, None, "{name}: the first wrong byte");
        assert!(
            c.done(),
            "{name}: {c:?}; A {:?}, B {:?}",
            p.a.state(),
            p.b.state()
        );
    }
    assert_eq!(p.a.state(), State::Closed, "A ends after LAST-ACK");
    assert_eq!(p.a.error(), None);
    assert_eq!(p.b.state(), State::TimeWait, "B closed first");
    // SYN + data + FIN, modulo 2³².
    let a_end = ISN_A + (A_TOTAL % (1 << 32)) as usize + 2;
    let b_end = ISN_B + B_TOTAL as usize + 2;
    assert_eq!(
        o.a_points,
        (a_end, a_end, b_end),
        "A's SND.UNA, SND.NXT, RCV.NXT"
    );
    assert_eq!(
        o.b_points,
        (b_end, b_end, a_end),
        "B's SND.UNA, SND.NXT, RCV.NXT"
    );
}

/// 4 GiB and more A→B and 8 MiB B→A on a clean link: every byte, both
/// ends' data across the wrap (A's twice), and nothing sent again.
#[test]
fn more_than_4_gib_crosses_the_wrap_both_ways_with_every_byte_checked() {
    // Seconds of a CPU: not beside a timed test.
    let _lock = testkit::timing_lock();
    let (mut p, stats) = pair(&config(), Vec::new());
    let t0 = std::time::Instant::now();
    let o = transfer(&mut p);
    let stats = stats.borrow();
    eprintln!(
        "A→B {} B, B→A {} B in {:.2} simulated s, {:.1} s wall; crossings A {} B {}; A {:?}; B {:?}",
        o.a_to_b.read,
        o.b_to_a.read,
        o.seconds,
        t0.elapsed().as_secs_f64(),
        stats.a_crossings,
        stats.b_crossings,
        o.a,
        o.b
    );
    assert_complete(&p, &o);
    assert!(
        stats.a_crossings >= 2,
        "A's data met the wrap twice: {stats:?}"
    );
    assert!(stats.b_crossings >= 1, "B's data met the wrap: {stats:?}");
    for (name, c) in [("A", o.a), ("B", o.b)] {
        assert_eq!(c.timeouts, 0, "{name}: no timeout on a clean link: {c:?}");
        assert_eq!(c.fast_retransmits, 0, "{name}: no loss seen: {c:?}");
    }
}

/// One segment lost 3 GiB in (past 2 GiB without loss, where RFC 6582's
/// `recover` would be stale if it were only set on loss, issue 27 bug 3)
/// and one 4 GiB and 512 KiB in (after A's sequence space turned over
/// again): each is repaired by fast retransmit, without a timeout, under
/// NewReno and under SACK recovery.
fn losses_past_the_wrap_are_repaired_by_fast_retransmit(recovery: RecoveryKind) {
    let _lock = testkit::timing_lock();
    let cfg = TcpConfig {
        recovery,
        ..config()
    };
    let drops = vec![3 * GIB, 4 * GIB + (1 << 19)];
    let (mut p, stats) = pair(&cfg, drops);
    let o = transfer(&mut p);
    let stats = stats.borrow();
    eprintln!(
        "{recovery:?}: {} B dropped, {:.2} simulated s; A {:?}",
        stats.dropped, o.seconds, o.a
    );
    assert_complete(&p, &o);
    assert!(stats.dropped > 0, "the plan dropped data: {stats:?}");
    assert_eq!(
        (o.a.fast_retransmits, o.a.timeouts),
        (2, 0),
        "A's (fast retransmits, timeouts) for two losses: {:?}",
        o.a
    );
}

#[test]
fn losses_past_2_gib_and_the_wrap_are_repaired_by_newreno_fast_retransmit() {
    losses_past_the_wrap_are_repaired_by_fast_retransmit(RecoveryKind::NewReno);
}

#[test]
fn losses_past_2_gib_and_the_wrap_are_repaired_by_sack_fast_retransmit() {
    losses_past_the_wrap_are_repaired_by_fast_retransmit(RecoveryKind::Sack);
}

/// The block-wise pattern is the byte rule, across block edges and 2³².
#[test]
fn the_stream_pattern_is_checked_block_wise_as_byte_wise() {
    for start in [0u64, 2040, 4095, (1 << 32) - 3000] {
        let mut buf = vec![0u8; 9000];
        stream_pattern::fill(start, &mut buf);
        for (k, &b) in buf.iter().enumerate() {
            assert_eq!(b, stream_pattern::pattern(start + k as u64));
        }
        assert_eq!(stream_pattern::first_mismatch(start, &buf), None);
        buf[4321] ^= 1;
        assert_eq!(
            stream_pattern::first_mismatch(start, &buf),
            Some(start + 4321)
        );
    }
    // A whole turn of the sequence space later, other bytes.
    let (mut a, mut b) = (vec![0u8; 1460], vec![0u8; 1460]);
    stream_pattern::fill(12_345, &mut a);
    stream_pattern::fill(12_345 + (1 << 32), &mut b);
    assert_ne!(a, b);
}
