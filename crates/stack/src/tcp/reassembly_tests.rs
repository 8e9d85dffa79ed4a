use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

/// The byte at stream offset `k`: any fixed pattern, so overlapping copies
/// of the same range agree.
fn byte_at(k: usize) -> u8 {
    (k * 31 % 251) as u8
}

fn stream(from: usize, len: usize) -> Vec<u8> {
    (from..from + len).map(byte_at).collect()
}

#[test]
fn in_order_data_with_nothing_held_is_accepted_without_a_piece_and_nothing_else_is() {
    let base = SeqNumber(1000);
    let mut q = Reassembly::new(base, 4096);
    assert!(q.accept_in_order(base, 1460));
    assert_eq!(q.rcv_nxt(), base + 1460);
    assert_eq!((q.piece_count(), q.held_bytes()), (0, 0));
    // Not at rcv_nxt, or beyond the bound: refused, nothing changed.
    assert!(!q.accept_in_order(base, 100));
    assert!(!q.accept_in_order(base + 1460, 4097));
    assert_eq!(q.rcv_nxt(), base + 1460);
    // With a piece held past a hole, even in-order data takes the queue.
    q.insert(base + 2000, &stream(2000, 10));
    assert!(!q.accept_in_order(base + 1460, 540));
    assert_eq!(q.rcv_nxt(), base + 1460);
}

#[test]
fn in_order_data_is_released_and_a_hole_holds_the_rest() {
    let base = SeqNumber(1000);
    let mut q = Reassembly::new(base, 10_000);
    let mut out = vec![];
    assert_eq!(q.insert(base, &stream(0, 100)).stored, 100);
    assert_eq!(q.drain_ready(&mut out), 100);
    q.insert(base + 200, &stream(200, 100));
    assert!(q.has_gap());
    assert_eq!(q.drain_ready(&mut out), 0);
    assert_eq!(
        q.sack_blocks(),
        [Some((base + 200, base + 300)), None, None]
    );
    q.insert(base + 100, &stream(100, 100));
    assert_eq!(q.drain_ready(&mut out), 200);
    assert_eq!(out, stream(0, 300));
    assert_eq!(q.rcv_nxt(), base + 300);
    assert!(q.is_empty());
    assert_eq!(q.sack_blocks(), [None; 3]);
}

#[test]
fn overlaps_and_duplicates_are_trimmed_and_the_first_copy_wins() {
    let base = SeqNumber(0);
    let mut q = Reassembly::new(base, 10_000);
    q.insert(base + 10, b"bbbbbbbbbb"); // [10, 20)
    let o = q.insert(base + 5, b"XXXXXXXXXXXXXXXXXXXX"); // [5, 25)
    assert_eq!(
        o,
        InsertOutcome {
            stored: 10,
            duplicate: 10,
            beyond_bound: 0
        }
    );
    q.insert(base, b"aaaaa");
    let mut out = vec![];
    q.drain_ready(&mut out);
    assert_eq!(out, b"aaaaaXXXXXbbbbbbbbbbXXXXX");
    let old = q.insert(base + 3, b"zzzzzzzz");
    assert_eq!(
        old,
        InsertOutcome {
            stored: 0,
            duplicate: 8,
            beyond_bound: 0
        }
    );
}

#[test]
fn the_byte_bound_drops_what_lies_beyond_it() {
    let mut q = Reassembly::new(SeqNumber(u32::MAX - 4), 50);
    let o = q.insert(SeqNumber(u32::MAX - 4) + 40, &[7; 30]);
    assert_eq!(
        o,
        InsertOutcome {
            stored: 10,
            duplicate: 0,
            beyond_bound: 20
        }
    );
    assert_eq!(q.held_bytes(), 10);
    let far = q.insert(SeqNumber(100), &[1; 5]);
    assert_eq!(far.beyond_bound, 5);
}

#[test]
fn sack_blocks_list_the_latest_segment_first_then_the_most_recent() {
    // RFC 2018 §4's rule on three holes.
    let base = SeqNumber(5000);
    let mut q = Reassembly::new(base, 100_000);
    q.insert(base + 500, &[0; 100]); // run A
    q.insert(base + 1000, &[0; 100]); // run B
    q.insert(base + 1500, &[0; 100]); // run C
    q.insert(base + 2000, &[0; 100]); // run D
    let blocks = q.sack_blocks();
    assert_eq!(
        blocks,
        [
            Some((base + 2000, base + 2100)),
            Some((base + 1500, base + 1600)),
            Some((base + 1000, base + 1100))
        ]
    );
    // A segment extending A makes A's block first again.
    q.insert(base + 600, &[0; 100]);
    assert_eq!(q.sack_blocks()[0], Some((base + 500, base + 700)));
    assert_eq!(q.sack_blocks()[1], Some((base + 2000, base + 2100)));
    // A segment filling the hole between B and C joins them.
    q.insert(base + 1100, &[0; 400]);
    assert_eq!(q.sack_blocks()[0], Some((base + 1000, base + 1600)));
    assert_eq!(q.sack_runs(10).len(), 3);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Against a byte map: the released stream is the sent stream, what is
    /// held is exactly the bytes received within the bound and not yet
    /// released, the SACK runs are the map's runs with the latest first.
    #[test]
    fn the_queue_agrees_with_a_byte_map(
        base in prop_oneof![Just(u32::MAX - 150), any::<u32>()],
        capacity in 1usize..400,
        segments in prop::collection::vec((0usize..500, 0usize..80, any::<bool>()), 1..60),
    ) {
        let base = SeqNumber(base);
        let mut q = Reassembly::new(base, capacity);
        let mut held: BTreeSet<usize> = BTreeSet::new();
        let mut delivered = 0usize;
        let mut out = Vec::new();
        for (offset, len, drain) in segments {
            let o = q.insert(base + offset, &stream(offset, len));
            let mut fresh = 0;
            for k in offset..offset + len {
                if k >= delivered && k < delivered + capacity && held.insert(k) {
                    fresh += 1;
                }
            }
            prop_assert_eq!(o.stored, fresh);
            prop_assert_eq!(o.stored + o.duplicate + o.beyond_bound, len);
            if drain {
                q.drain_ready(&mut out);
                while held.remove(&delivered) {
                    delivered += 1;
                }
                prop_assert_eq!(&out[..], &stream(0, delivered)[..]);
                prop_assert_eq!(q.rcv_nxt(), base + delivered);
            }
            prop_assert_eq!(q.held_bytes(), held.len());
            prop_assert!(q.held_bytes() <= capacity);
            // The map's runs, apart from one starting at the next byte due.
            let mut runs = vec![];
            for &k in &held {
                match runs.last_mut() {
                    Some((_, end)) if *end == k => *end = k + 1,
                    _ => runs.push((k, k + 1)),
                }
            }
            let rcv_nxt_offset = q.rcv_nxt() - base;
            runs.retain(|r| r.0 != rcv_nxt_offset);
            let mut reported: Vec<(usize, usize)> = q
                .sack_runs(usize::MAX)
                .into_iter()
                .map(|(l, r)| (l - base, r - base))
                .collect();
            // The latest segment's run comes first, when it is reported.
            if let Some(&first) = reported.first() {
                let landed = (offset.max(rcv_nxt_offset)..offset + len).any(|k| held.contains(&k));
                if landed && runs.iter().any(|r| r.0 < offset + len && offset < r.1) {
                    prop_assert!(first.0 < offset + len && offset < first.1,
                        "first block {:?} misses the segment at {}+{}", first, offset, len);
                }
            }
            reported.sort();
            prop_assert_eq!(reported, runs);
        }
    }
}
