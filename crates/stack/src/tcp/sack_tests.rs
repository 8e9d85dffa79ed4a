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
            newly_sacked: 1000
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
            newly_sacked: 0
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
            newly_sacked: 0
        }
    );
    assert_eq!(s.sacked(), &[(SeqNumber(3500), SeqNumber(4000))]);
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
            newly_sacked: 500
        }
    );
    assert_eq!(s.sacked(), &[(SeqNumber(9500), SeqNumber(10_000))]);
    // Overlapping and adjacent blocks merge.
    s.on_ack(
        SeqNumber(3000),
        &blocks(&[
            (SeqNumber(8000), SeqNumber(9000)),
            (SeqNumber(8500), SeqNumber(9500)),
        ]),
    );
    assert_eq!(s.sacked(), &[(SeqNumber(8000), SeqNumber(10_000))]);
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
