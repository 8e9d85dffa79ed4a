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
            beyond_bound: 0,
            ..InsertOutcome::default()
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
            beyond_bound: 0,
            ..InsertOutcome::default()
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
            beyond_bound: 20,
            ..InsertOutcome::default()
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

/// The flood's stated bounds for a window of `window` bytes: one piece
/// per 512 bytes of window, and heap within twice the bytes held plus
/// 256 bytes per piece allowed and 1 KiB.
fn flood_bounds(window: usize, held: usize) -> (usize, usize) {
    let pieces = window / 512;
    (pieces, 2 * held + 256 * pieces + 1024)
}

/// Feeds one-byte segments at `offsets` past `base` (the stream byte at
/// each), each followed by the SACK blocks of the ACK it draws, checking
/// the bounds after every one and the time as it goes; returns the
/// outcomes summed.
fn flood(
    q: &mut Reassembly,
    base: SeqNumber,
    offsets: &[usize],
    window: usize,
    what: &str,
) -> InsertOutcome {
    let limit = std::time::Duration::from_secs(20);
    let started = std::time::Instant::now();
    let mut sum = InsertOutcome::default();
    for (n, &k) in offsets.iter().enumerate() {
        let o = q.insert(base + k, &stream(k, 1));
        sum.stored += o.stored;
        sum.duplicate += o.duplicate;
        sum.pruned += o.pruned;
        sum.evicted += o.evicted;
        let blocks = q.sack_blocks();
        if o.stored > 0 {
            let first = blocks[0].expect("a block when data is held");
            assert!(
                (base + k).in_range(first.0, first.1),
                "{what}: {first:?} first, not {k}'s run"
            );
        }
        let (max_pieces, _) = flood_bounds(window, q.held_bytes());
        assert!(
            q.piece_count() <= max_pieces,
            "{what}: {} pieces held after {} one-byte segments, above the cap of {max_pieces} \
             (a piece per 512 bytes of a {window}-byte window)",
            q.piece_count(),
            n + 1
        );
        if n % 1024 == 0 || n + 1 == offsets.len() {
            let (_, heap) = flood_bounds(window, q.held_bytes());
            assert!(
                q.heap_bytes() <= heap,
                "{what}: {} heap bytes after {} segments ({} held), above {heap}",
                q.heap_bytes(),
                n + 1,
                q.held_bytes()
            );
            assert!(
                started.elapsed() < limit,
                "{what}: {} segments took {:?}, beyond {limit:?} for all {}",
                n + 1,
                started.elapsed(),
                offsets.len()
            );
        }
    }
    sum
}

/// Issue 27, bug 5: the default window (256 KiB) admits 262,143 one-byte
/// segments past a missing first byte. Against the stated bounds (a piece
/// per 512 bytes of window, heap within 2·held + 256 B per piece + 1 KiB,
/// and a coarse 20 s for the whole flood, which takes well under a second),
/// in two orders: every odd offset ascending then every even one
/// descending (the most pieces apart there can be, then every one
/// joined), and a random permutation. The byte that was missing then
/// releases a correct prefix of the stream: the cap kept the lowest runs.
#[test]
fn a_flood_of_one_byte_segments_takes_bounded_pieces_heap_and_time() {
    let _timing = testkit::timing_lock();
    let window = crate::tcp::tcb::TcpConfig::default().recv_buffer;
    let base = SeqNumber(u32::MAX - 100_000);

    let mut q = Reassembly::new(base, window);
    assert_eq!(q.max_pieces(), flood_bounds(window, 0).0);
    let mut offsets: Vec<usize> = (1..window).step_by(2).collect();
    offsets.extend((2..window).step_by(2).rev());
    assert_eq!(offsets.len(), window - 1);
    let sum = flood(&mut q, base, &offsets, window, "odd then even");
    // The odd offsets 1 to 1023 are kept (512 runs), every later one is
    // above them all and dropped; of the even ones, those joining the kept
    // runs (1024 down to 2) are kept, the rest dropped.
    assert_eq!(
        (sum.stored, sum.pruned, sum.evicted),
        (1024, window - 1025, 0)
    );
    q.insert(base, &stream(0, 1));
    let mut out = Vec::new();
    assert_eq!(q.drain_ready(&mut out), 1025);
    assert_eq!(out, stream(0, 1025));
    assert!(q.is_empty(), "every piece joined and released");

    let mut q = Reassembly::new(base, window);
    let mut offsets: Vec<usize> = (1..window).collect();
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    offsets.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(27));
    let sum = flood(&mut q, base, &offsets, window, "random");
    assert!(sum.pruned + sum.evicted > 0, "the cap dropped some");
    assert_eq!(sum.stored - sum.evicted, q.held_bytes());
    let held = q.held_bytes();
    q.insert(base, &stream(0, 1));
    let mut out = Vec::new();
    let released = q.drain_ready(&mut out);
    assert_eq!(out, stream(0, released));
    assert_eq!(q.held_bytes() + released, held + 1);
}

/// What a byte map says a queue with the piece cap does with a segment:
/// the runs of `held`, and whether the segment's clipped range `[a, b)`
/// overlaps or touches one.
fn model_runs(held: &BTreeSet<usize>) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = vec![];
    for &k in held {
        match runs.last_mut() {
            Some((_, end)) if *end == k => *end = k + 1,
            _ => runs.push((k, k + 1)),
        }
    }
    runs
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// With the piece cap reached (many short segments in a window with
    /// room for more runs than [`MIN_PIECES`]), against a byte map that
    /// applies the stated policy: a segment that would make a run too many
    /// is dropped when it lies above every run, else the highest run goes.
    #[test]
    fn the_piece_cap_drops_the_highest_run_as_stated(
        base in any::<u32>(),
        segments in prop::collection::vec((0usize..3000, 1usize..4, prop::bool::weighted(0.05)), 1..400),
    ) {
        let base = SeqNumber(base);
        // The stated cap for 2 KiB: a run per 512 bytes, at least 64.
        let capacity = 2048;
        let cap = 64;
        let mut q = Reassembly::new(base, capacity);
        let mut held: BTreeSet<usize> = BTreeSet::new();
        let mut delivered = 0usize;
        let mut out = Vec::new();
        for (offset, len, drain) in segments {
            let a = offset.max(delivered);
            let b = (offset + len).min(delivered + capacity);
            let o = q.insert(base + offset, &stream(offset, len));
            if a < b {
                let runs = model_runs(&held);
                let touches = runs.iter().any(|&(l, r)| l <= b && a <= r);
                let fresh = (a..b).filter(|k| !held.contains(k)).count();
                let (mut pruned, mut evicted) = (0, 0);
                if !touches && runs.len() >= cap {
                    let &(l, r) = runs.last().unwrap();
                    if l > a {
                        for k in l..r {
                            held.remove(&k);
                        }
                        evicted = r - l;
                    } else {
                        pruned = b - a;
                    }
                }
                if pruned == 0 {
                    held.extend(a..b);
                }
                prop_assert_eq!((o.stored, o.pruned, o.evicted), (if pruned == 0 { fresh } else { 0 }, pruned, evicted));
            }
            prop_assert!(q.piece_count() <= cap);
            if drain {
                q.drain_ready(&mut out);
                while held.remove(&delivered) {
                    delivered += 1;
                }
                prop_assert_eq!(&out[..], &stream(0, delivered)[..]);
            }
            prop_assert_eq!(q.held_bytes(), held.len());
            let mut runs = model_runs(&held);
            let rcv_nxt_offset = q.rcv_nxt() - base;
            runs.retain(|r| r.0 != rcv_nxt_offset);
            let mut reported: Vec<(usize, usize)> = q
                .sack_runs(usize::MAX)
                .into_iter()
                .map(|(l, r)| (l - base, r - base))
                .collect();
            reported.sort();
            prop_assert_eq!(reported, runs);
        }
    }
}
