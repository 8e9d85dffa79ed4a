use proptest::prelude::*;

use super::*;

const MSS: usize = 1000;

fn seg(n: usize) -> (SeqNumber, SeqNumber) {
    (SeqNumber(n as u32 * 1000), SeqNumber((n as u32 + 1) * 1000))
}

fn blocks(list: &[(SeqNumber, SeqNumber)]) -> SackBlocks {
    let mut b: SackBlocks = [None; 3];
    for (slot, r) in b.iter_mut().zip(list) {
        *slot = Some(*r);
    }
    b
}

/// Ten segments of 1000 bytes sent from 0.
fn ten_sent() -> Scoreboard {
    let mut s = Scoreboard::new(SeqNumber(0), MSS);
    s.on_send(SeqNumber(10_000));
    s
}

#[test]
fn is_lost_needs_dup_thresh_ranges_or_more_than_two_segments_above() {
    let mut s = ten_sent();
    let u = s.on_ack(SeqNumber(0), &blocks(&[seg(2)]));
    assert_eq!(
        u,
        AckUpdate {
            newly_acked: 0,
            newly_sacked: 1000,
            pruned: 0
        }
    );
    assert!(!s.is_lost(SeqNumber(0)), "one SACKed segment above");
    s.on_ack(SeqNumber(0), &blocks(&[seg(4), seg(2)]));
    assert!(
        !s.is_lost(SeqNumber(0)),
        "two discontiguous, 2000 bytes: not more than 2·SMSS"
    );
    s.on_ack(SeqNumber(0), &blocks(&[seg(6), seg(4), seg(2)]));
    assert!(s.is_lost(SeqNumber(0)));
    assert!(s.is_lost(SeqNumber(1999)));
    assert!(
        !s.is_lost(SeqNumber(3000)),
        "only two ranges above the second hole"
    );

    // The byte rule alone: one contiguous range of three segments.
    let mut c = ten_sent();
    c.on_ack(SeqNumber(0), &blocks(&[(SeqNumber(2000), SeqNumber(5000))]));
    assert!(c.is_lost(SeqNumber(1000)));
    let mut d = ten_sent();
    d.on_ack(SeqNumber(0), &blocks(&[(SeqNumber(2000), SeqNumber(4000))]));
    assert!(!d.is_lost(SeqNumber(1000)), "exactly 2·SMSS is not more");
}

#[test]
fn pipe_counts_unsacked_octets_not_lost_and_retransmitted_ones_again() {
    let mut s = ten_sent();
    assert_eq!(s.pipe(), 10_000);
    s.on_ack(SeqNumber(0), &blocks(&[seg(6), seg(4), seg(2)]));
    // Lost: [0, 2000). In flight: 3, 5, 7, 8, 9.
    assert_eq!(s.pipe(), 5000);
    s.on_retransmit(SeqNumber(0), 1000);
    assert_eq!(s.pipe(), 6000);
    // A cumulative ACK for the retransmission.
    let u = s.on_ack(SeqNumber(1000), &blocks(&[seg(6), seg(4), seg(2)]));
    assert_eq!(
        u,
        AckUpdate {
            newly_acked: 1000,
            newly_sacked: 0,
            pruned: 0
        }
    );
    assert_eq!(s.pipe(), 5000);
}

#[test]
fn next_seg_follows_rules_one_to_four_in_order() {
    let mut s = ten_sent();
    s.on_ack(SeqNumber(0), &blocks(&[seg(6), seg(4), seg(2)]));
    let next = |s: &Scoreboard, new| s.next_seg(new, true);
    // Rule 1: the lost segments first, whatever new data waits.
    assert_eq!(
        next(&s, true),
        Some(NextSeg::RetransmitLost(SeqRange {
            start: SeqNumber(0),
            len: 1000
        }))
    );
    s.on_retransmit(SeqNumber(0), 1000);
    assert_eq!(
        next(&s, true),
        Some(NextSeg::RetransmitLost(SeqRange {
            start: SeqNumber(1000),
            len: 1000
        }))
    );
    s.on_retransmit(SeqNumber(1000), 1000);
    // Rule 2: no lost segment left, new data goes.
    assert_eq!(next(&s, true), Some(NextSeg::NewData));
    // Rule 3: nothing new to send, the holes below the highest SACK.
    assert_eq!(
        next(&s, false),
        Some(NextSeg::RetransmitUnsacked(SeqRange {
            start: SeqNumber(3000),
            len: 1000
        }))
    );
    s.on_retransmit(SeqNumber(3000), 1000);
    s.on_retransmit(SeqNumber(5000), 1000);
    // Rule 4: the rescue, the last segment of the highest hole, once per
    // recovery (RescueRxt = RecoveryPoint), and only in recovery.
    let rescue = NextSeg::Rescue(SeqRange {
        start: SeqNumber(9000),
        len: 1000,
    });
    assert_eq!(next(&s, false), Some(rescue));
    assert_eq!(s.next_seg(false, false), None);
    let recovery_point = SeqNumber(10_000);
    s.on_rescue(recovery_point);
    assert_eq!(next(&s, false), None);
    // 0 and 1 lost and resent (1 each), 3 and 5 resent and not lost (2
    // each), 7, 8, 9 (1 each): the rescue did not move HighRxt.
    assert_eq!(s.pipe(), 9000);
    s.on_ack(SeqNumber(3000), &blocks(&[seg(6), seg(4)]));
    assert_eq!(
        next(&s, false),
        None,
        "no second rescue before the recovery point"
    );
    // A new recovery, after the old recovery point was passed.
    s.on_send(SeqNumber(12_000));
    s.on_ack(SeqNumber(10_500), &[None; 3]);
    assert_eq!(
        next(&s, false),
        Some(NextSeg::Rescue(SeqRange {
            start: SeqNumber(11_000),
            len: 1000
        }))
    );
}

#[test]
fn a_cumulative_ack_over_sacked_data_counts_only_the_bytes_not_sacked_before() {
    let mut s = ten_sent();
    let u = s.on_ack(SeqNumber(0), &blocks(&[seg(1), seg(3)]));
    assert_eq!(u.newly_sacked, 2000);
    let u = s.on_ack(SeqNumber(3500), &[None; 3]);
    // 3500 bytes covered, 1000 + 500 of them SACKed before.
    assert_eq!(
        u,
        AckUpdate {
            newly_acked: 2000,
            newly_sacked: 0,
            pruned: 0
        }
    );
    assert_eq!(s.sacked(), [(SeqNumber(3500), SeqNumber(4000))]);
    // An old ACK changes nothing; an ACK beyond HighData is ignored.
    assert_eq!(s.on_ack(SeqNumber(1000), &[None; 3]), AckUpdate::default());
    assert_eq!(
        s.on_ack(SeqNumber(20_000), &[None; 3]),
        AckUpdate::default()
    );
    assert_eq!(s.high_ack(), SeqNumber(3500));
}

#[test]
fn blocks_below_the_ack_or_beyond_high_data_are_ignored_or_clipped() {
    let mut s = ten_sent();
    let u = s.on_ack(
        SeqNumber(3000),
        &blocks(&[
            (SeqNumber(1000), SeqNumber(2000)),
            (SeqNumber(9500), SeqNumber(12_000)),
        ]),
    );
    assert_eq!(
        u,
        AckUpdate {
            newly_acked: 3000,
            newly_sacked: 500,
            pruned: 0
        }
    );
    assert_eq!(s.sacked(), [(SeqNumber(9500), SeqNumber(10_000))]);
    // Overlapping and adjacent blocks merge.
    s.on_ack(
        SeqNumber(3000),
        &blocks(&[
            (SeqNumber(8000), SeqNumber(9000)),
            (SeqNumber(8500), SeqNumber(9500)),
        ]),
    );
    assert_eq!(s.sacked(), [(SeqNumber(8000), SeqNumber(10_000))]);
    assert_eq!(s.holes(), vec![(SeqNumber(3000), SeqNumber(8000))]);
}

#[test]
fn the_scoreboard_works_across_the_sequence_wrap() {
    let base = SeqNumber(u32::MAX - 2499);
    let mut s = Scoreboard::new(base, MSS);
    s.on_send(base + 10_000);
    let sack = |n: usize| (base + n * 1000, base + (n + 1) * 1000);
    s.on_ack(base, &blocks(&[sack(2), sack(4), sack(6)]));
    assert_eq!(s.pipe(), 5000);
    assert_eq!(
        s.next_seg(false, true),
        Some(NextSeg::RetransmitLost(SeqRange {
            start: base,
            len: 1000
        }))
    );
}

proptest! {
    /// `pipe` equals RFC 6675's per-octet definition computed with `IsLost`.
    #[test]
    fn pipe_agrees_with_the_per_octet_definition(
        sacks in prop::collection::vec((0u32..60, 1u32..12), 0..8),
        ack in 0u32..30,
        rxt in 0u32..60,
        mss in 1usize..8,
    ) {
        let mut s = Scoreboard::new(SeqNumber(0), mss);
        s.on_send(SeqNumber(64));
        for chunk in sacks.chunks(3) {
            let list: Vec<_> = chunk.iter().map(|&(l, n)| (SeqNumber(l), SeqNumber(l + n))).collect();
            s.on_ack(SeqNumber(0), &blocks(&list));
        }
        s.on_retransmit(SeqNumber(0), rxt as usize);
        s.on_ack(SeqNumber(ack), &[None; 3]);
        let mut expect = 0;
        for o in ack..64 {
            let seq = SeqNumber(o);
            if s.is_sacked(seq) {
                continue;
            }
            prop_assert_eq!(s.is_lost(seq), seq < s.lost_boundary(), "at {}", o);
            if !s.is_lost(seq) {
                expect += 1;
            }
            if o < rxt.max(ack) {
                expect += 1;
            }
        }
        prop_assert_eq!(s.pipe(), expect);
    }
}

/// Issue 27, bug 5: a peer SACKing one byte in every two of the default
/// send buffer (256 KiB in flight, 131,072 ACKs), each ACK followed by one
/// pass of RFC 6675's transmission loop (`pipe`, `NextSeg`). Against the
/// stated bounds: a SACKed range per 512 bytes in flight, heap within
/// 64 bytes per range allowed and 1 KiB, and a coarse 20 s for the whole
/// flood (which takes well under a second). The scoreboard's answers stay
/// RFC 6675's: the first byte is lost and goes first.
#[test]
fn a_peer_sacking_one_byte_ranges_takes_bounded_ranges_heap_and_time() {
    let _timing = testkit::timing_lock();
    let flight = crate::tcp::tcb::TcpConfig::default().send_buffer;
    let max_ranges = flight / 512;
    let heap_bound = 64 * max_ranges + 1024;
    let limit = std::time::Duration::from_secs(20);
    let una = SeqNumber(u32::MAX - 100_000);
    let mut s = Scoreboard::new(una, 1460);
    s.on_send(una + flight);
    assert_eq!(s.max_ranges(), max_ranges);
    let started = std::time::Instant::now();
    let mut pruned = 0;
    for k in 0..flight / 2 {
        let l = una + (2 * k + 1);
        let u = s.on_ack(una, &blocks(&[(l, l + 1)]));
        pruned += u.pruned;
        std::hint::black_box(s.pipe());
        std::hint::black_box(s.next_seg(false, true));
        assert!(
            s.range_count() <= max_ranges,
            "{} SACKed ranges after {} ACKs, above the cap of {max_ranges} \
             (a range per 512 bytes of {flight} in flight)",
            s.range_count(),
            k + 1
        );
        if k % 1024 == 0 {
            assert!(
                s.heap_bytes() <= heap_bound,
                "{} heap bytes after {} ACKs, above {heap_bound}",
                s.heap_bytes(),
                k + 1
            );
            assert!(
                started.elapsed() < limit,
                "{} ACKs took {:?}, beyond {limit:?} for all {}",
                k + 1,
                started.elapsed(),
                flight / 2
            );
        }
    }
    // The lowest ranges were kept ([1, 2), [3, 4), … [1023, 1024)), every
    // later block was above them all and ignored.
    assert_eq!(pruned, flight / 2 - max_ranges);
    assert_eq!(s.sacked().last(), Some(&(una + 1023, una + 1024)));
    assert_eq!(
        s.next_seg(false, true),
        Some(NextSeg::RetransmitLost(SeqRange { start: una, len: 1 }))
    );
    // pipe: the unSACKed octets from the third-highest range up are not
    // lost, 1019 to the end less the three SACKed there.
    assert_eq!(s.pipe(), flight - 1019 - 3);
}

/// RFC 6675's definitions octet by octet, with the range cap as stated:
/// the reference the scoreboard is checked against.
#[derive(Debug, Clone, Default)]
struct Model {
    mss: u32,
    high_ack: u32,
    high_data: u32,
    high_rxt: u32,
    rescue_rxt: Option<u32>,
    sacked: std::collections::BTreeSet<u32>,
}

impl Model {
    fn runs(&self) -> Vec<(u32, u32)> {
        let mut runs: Vec<(u32, u32)> = vec![];
        for &k in &self.sacked {
            match runs.last_mut() {
                Some((_, end)) if *end == k => *end = k + 1,
                _ => runs.push((k, k + 1)),
            }
        }
        runs
    }

    fn on_ack(&mut self, ack: u32, blocks: &[(u32, u32)]) -> AckUpdate {
        let mut u = AckUpdate::default();
        if ack > self.high_ack && ack <= self.high_data {
            for o in self.high_ack..ack {
                if !self.sacked.remove(&o) {
                    u.newly_acked += 1;
                }
            }
            self.high_ack = ack;
            self.high_rxt = self.high_rxt.max(ack);
        }
        for &(l, r) in blocks {
            let (l, r) = (l.max(self.high_ack), r.min(self.high_data));
            if l >= r {
                continue;
            }
            let runs = self.runs();
            let touches = runs.iter().any(|&(a, b)| a <= r && l <= b);
            // The stated cap: a range per 512 octets in flight, at least 64.
            let cap = ((self.high_data - self.high_ack) as usize / 512).max(64);
            if !touches && runs.len() >= cap {
                u.pruned += 1;
                let &(a, b) = runs.last().unwrap();
                if a < l {
                    continue;
                }
                for o in a..b {
                    self.sacked.remove(&o);
                }
            }
            for o in l..r {
                if self.sacked.insert(o) {
                    u.newly_sacked += 1;
                }
            }
        }
        u
    }

    fn is_lost(&self, seq: u32) -> bool {
        self.is_lost_in(&self.runs(), seq)
    }

    /// `is_lost` with the runs found already.
    fn is_lost_in(&self, runs: &[(u32, u32)], seq: u32) -> bool {
        let ranges = runs.iter().filter(|&&(l, _)| l > seq).count();
        let bytes = self.sacked.range(seq + 1..).count();
        ranges >= DEFAULT_DUP_THRESH || bytes > (DEFAULT_DUP_THRESH - 1) * self.mss as usize
    }

    fn pipe(&self) -> usize {
        let runs = self.runs();
        (self.high_ack..self.high_data)
            .filter(|o| !self.sacked.contains(o))
            .map(|o| usize::from(!self.is_lost_in(&runs, o)) + usize::from(o < self.high_rxt))
            .sum()
    }

    /// The unSACKed run from `o` up to `end`, at most one MSS.
    fn len_from(&self, o: u32, end: u32) -> usize {
        (o..end)
            .take_while(|k| !self.sacked.contains(k))
            .take(self.mss as usize)
            .count()
    }

    fn next_seg(&self, new_data_ready: bool, in_recovery: bool) -> Option<(u8, u32, usize)> {
        let highest = self.sacked.last().map(|&h| h + 1);
        let first = highest
            .and_then(|h| (self.high_rxt.max(self.high_ack)..h).find(|o| !self.sacked.contains(o)));
        if let (Some(o), Some(h)) = (first, highest) {
            if self.is_lost(o) {
                return Some((1, o, self.len_from(o, h)));
            }
        }
        if new_data_ready {
            return Some((2, 0, 0));
        }
        if let (Some(o), Some(h)) = (first, highest) {
            return Some((3, o, self.len_from(o, h)));
        }
        let due = self.rescue_rxt.is_none_or(|r| self.high_ack > r);
        let top = (self.high_ack..self.high_data)
            .rev()
            .find(|o| !self.sacked.contains(o));
        match top {
            Some(top) if in_recovery && due => {
                let mut start = top;
                while start > self.high_ack
                    && !self.sacked.contains(&(start - 1))
                    && top + 1 - start < self.mss
                {
                    start -= 1;
                }
                Some((4, start, (top + 1 - start) as usize))
            }
            _ => None,
        }
    }
}

/// What a scoreboard's `NextSeg` says, as the model says it.
fn as_model(next: Option<NextSeg>, base: SeqNumber) -> Option<(u8, u32, usize)> {
    next.map(|n| match n {
        NextSeg::RetransmitLost(r) => (1, (r.start - base) as u32, r.len),
        NextSeg::NewData => (2, 0, 0),
        NextSeg::RetransmitUnsacked(r) => (3, (r.start - base) as u32, r.len),
        NextSeg::Rescue(r) => (4, (r.start - base) as u32, r.len),
    })
}

/// One event for the scoreboard and the model.
#[derive(Debug, Clone)]
enum Event {
    Send(u32),
    Ack(u32, Vec<(u32, u32)>),
    /// Send what `NextSeg` says (new data ready or not).
    Transmit(bool),
    LostRetransmission,
    RecoveryExit,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (1u32..40).prop_map(Event::Send),
        (0u32..8, prop::collection::vec((0u32..200, 1u32..4), 0..4))
            .prop_map(|(ack, b)| Event::Ack(ack, b)),
        (1u32..300, prop::collection::vec((0u32..300, 1u32..3), 1..4))
            .prop_map(|(_, b)| Event::Ack(0, b)),
        any::<bool>().prop_map(Event::Transmit),
        Just(Event::LostRetransmission),
        Just(Event::RecoveryExit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Over hundreds of events (sends, ACKs moving HighACK with SACK and
    /// D-SACK blocks, NextSeg's retransmissions, lost retransmissions),
    /// across the sequence wrap and past the range cap: every answer is
    /// the per-octet model's.
    #[test]
    fn the_scoreboard_agrees_with_a_per_octet_model(
        base in prop_oneof![Just(u32::MAX - 100), any::<u32>()],
        mss in 1u32..8,
        flood in prop::collection::vec(0u32..200, 0..150),
        events in prop::collection::vec(event(), 1..300),
    ) {
        let base = SeqNumber(base);
        let mut s = Scoreboard::new(base, mss as usize);
        let mut m = Model { mss, ..Model::default() };
        // Perhaps first a flood of one-byte SACKs, past the range cap.
        let flood = (!flood.is_empty()).then_some(Event::Send(400)).into_iter().chain(
            flood.iter().map(|&v| Event::Ack(0, vec![(2 * v + 1, 1)])),
        );
        for ev in flood.chain(events) {
            match ev {
                Event::Send(n) => {
                    m.high_data = (m.high_data + n).min(m.high_ack + 400);
                    s.on_send(base + m.high_data as usize);
                }
                Event::Ack(step, b) => {
                    // ACKs relative to HighACK; blocks anywhere around.
                    let ack = m.high_ack + step;
                    let abs: Vec<(u32, u32)> = b.iter().map(|&(l, n)| (l, l + n)).collect();
                    let seqs: Vec<_> = abs
                        .iter()
                        .map(|&(l, r)| (base + l as usize, base + r as usize))
                        .collect();
                    let got = s.on_ack(base + ack as usize, &blocks(&seqs[..seqs.len().min(3)]));
                    let want = m.on_ack(ack, &abs[..abs.len().min(3)]);
                    prop_assert_eq!(got, want);
                }
                Event::Transmit(new_ready) => {
                    match s.next_seg(new_ready, true) {
                        Some(NextSeg::RetransmitLost(r)) | Some(NextSeg::RetransmitUnsacked(r)) => {
                            s.on_retransmit(r.start, r.len);
                            m.high_rxt = m.high_rxt.max((r.start - base) as u32 + r.len as u32);
                        }
                        Some(NextSeg::Rescue(_)) => {
                            s.on_rescue(base + m.high_data as usize);
                            m.rescue_rxt = Some(m.high_data);
                        }
                        _ => {}
                    }
                }
                Event::LostRetransmission => {
                    s.on_lost_retransmission();
                    m.high_rxt = m.high_ack;
                }
                Event::RecoveryExit => {
                    s.on_recovery_exit();
                    m.rescue_rxt = None;
                }
            }
            let runs: Vec<_> = m
                .runs()
                .iter()
                .map(|&(l, r)| (base + l as usize, base + r as usize))
                .collect();
            prop_assert_eq!(s.sacked(), runs);
            prop_assert_eq!(s.pipe(), m.pipe());
            let model_runs = m.runs();
            for o in m.high_ack.saturating_sub(2)..m.high_data + 2 {
                prop_assert_eq!(s.is_sacked(base + o as usize), m.sacked.contains(&o), "is_sacked {}", o);
                if o >= m.high_ack {
                    prop_assert_eq!(s.is_lost(base + o as usize), m.is_lost_in(&model_runs, o), "is_lost {}", o);
                }
            }
            for (new_ready, in_recovery) in [(false, true), (true, true), (false, false)] {
                prop_assert_eq!(
                    as_model(s.next_seg(new_ready, in_recovery), base),
                    m.next_seg(new_ready, in_recovery),
                    "next_seg({}, {})", new_ready, in_recovery
                );
            }
        }
    }
}
