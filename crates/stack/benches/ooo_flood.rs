//! What a flood of one-byte segments costs the out-of-order queue and the
//! SACK scoreboard (issue 27, bug 5): time per segment and heap, for
//! 10k, 20k, 40k and 262k segments, so a cost that grows with the
//! segments already held (quadratic in all) shows as a growing time per
//! segment.
//!
//! - receiver: N one-byte segments at the odd offsets 1, 3, 5, … of a
//!   window of 2N + 2 bytes (every one out of order and apart from the
//!   others), each followed by the SACK blocks of the ACK it draws; then
//!   the same N segments in a random order over a window of N + 1 bytes.
//! - sender: N bytes sent twice over (2N + 2 in flight) and N ACKs, each
//!   SACKing one more byte at an odd offset, each followed by one `pipe()`
//!   and one `NextSeg()` (one pass of RFC 6675's transmission loop).
//! - both again with 536-byte segments and holes (RFC 879's default MSS),
//!   which the caps (a piece or range per 512 bytes) never drop: N runs
//!   held, the cost of the maps themselves.
//!
//! Heap: what the structure reports (`heap_bytes`) and the peak the
//! allocator saw live on this thread during the run.
//!
//! `cargo bench -p stack --bench ooo_flood -- [--min N] [--max N]` (the
//! sizes from `--min` to `--max` segments only)

use rand::seq::SliceRandom;
use rand::SeedableRng;
use stack::tcp::reassembly::Reassembly;
use stack::tcp::sack::Scoreboard;
use stack::wire::SeqNumber;
use std::time::Instant;

#[path = "../tests/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{peak_since, peak_start};

#[global_allocator]
static ALLOCATOR: counting_alloc::CountingAllocator = counting_alloc::CountingAllocator;

/// The value of `--name N`, or `default`.
fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == name) {
        Some(i) => match args.get(i + 1).and_then(|v| v.parse().ok()) {
            Some(n) => n,
            _ => {
                eprintln!("ooo_flood: {name} takes a whole number");
                std::process::exit(2);
            }
        },
        None => default,
    }
}

/// One row: segments, seconds, ns per segment, reported and peak heap,
/// and what the structure held at the end.
fn row(what: &str, n: usize, started: Instant, reported: usize, peak: isize, held: usize) {
    let s = started.elapsed().as_secs_f64();
    println!(
        "{what:<18} {n:>7} {s:>9.3} {:>10.0} {reported:>12} {peak:>12} {held:>8}",
        s * 1e9 / n as f64
    );
}

fn receiver_odd(n: usize) {
    let base = SeqNumber(1_000);
    let live = peak_start();
    let mut q = Reassembly::new(base, 2 * n + 2);
    let started = Instant::now();
    let mut blocks = 0usize;
    for k in 0..n {
        q.insert(base + (2 * k + 1), &[k as u8]);
        blocks += q.sack_blocks().iter().flatten().count();
    }
    std::hint::black_box(blocks);
    row(
        "receiver odd",
        n,
        started,
        q.heap_bytes(),
        peak_since(live),
        q.piece_count(),
    );
}

fn receiver_random(n: usize) {
    let base = SeqNumber(1_000);
    let mut offsets: Vec<usize> = (1..=n).collect();
    offsets.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(27));
    let live = peak_start();
    let mut q = Reassembly::new(base, n + 1);
    let started = Instant::now();
    let mut blocks = 0usize;
    for &k in &offsets {
        q.insert(base + k, &[k as u8]);
        blocks += q.sack_blocks().iter().flatten().count();
    }
    std::hint::black_box(blocks);
    row(
        "receiver random",
        n,
        started,
        q.heap_bytes(),
        peak_since(live),
        q.piece_count(),
    );
}

fn sender_odd(n: usize) {
    let una = SeqNumber(7_000);
    let live = peak_start();
    let mut s = Scoreboard::new(una, 1460);
    s.on_send(una + (2 * n + 2));
    let started = Instant::now();
    let mut pipe = 0usize;
    for k in 0..n {
        let l = una + (2 * k + 1);
        s.on_ack(una, &[Some((l, l + 1)), None, None]);
        pipe = pipe.wrapping_add(s.pipe());
        std::hint::black_box(s.next_seg(false, true));
    }
    std::hint::black_box(pipe);
    row(
        "sender odd",
        n,
        started,
        s.heap_bytes(),
        peak_since(live),
        s.sacked().len(),
    );
}

/// N segments of 536 bytes (RFC 879's default MSS) with a hole of 536
/// between each: the piece cap (one per 512 bytes) never drops one, so
/// the queue holds N runs and the cost per segment shows the map's.
fn receiver_536(n: usize) {
    let base = SeqNumber(1_000);
    let payload = [7u8; 536];
    let live = peak_start();
    let mut q = Reassembly::new(base, (2 * n + 2) * 536);
    let started = Instant::now();
    let mut blocks = 0usize;
    for k in 0..n {
        q.insert(base + (2 * k + 1) * 536, &payload);
        blocks += q.sack_blocks().iter().flatten().count();
    }
    std::hint::black_box(blocks);
    row(
        "receiver 536 odd",
        n,
        started,
        q.heap_bytes(),
        peak_since(live),
        q.piece_count(),
    );
}

/// The sender's side of the same: N ranges of 536 bytes SACKed apart,
/// under the cap, each ACK followed by one pass of the transmission loop.
fn sender_536(n: usize) {
    let una = SeqNumber(7_000);
    let live = peak_start();
    let mut s = Scoreboard::new(una, 536);
    s.on_send(una + (2 * n + 2) * 536);
    let started = Instant::now();
    let mut pipe = 0usize;
    for k in 0..n {
        let l = una + (2 * k + 1) * 536;
        s.on_ack(una, &[Some((l, l + 536)), None, None]);
        pipe = pipe.wrapping_add(s.pipe());
        std::hint::black_box(s.next_seg(false, true));
    }
    std::hint::black_box(pipe);
    row(
        "sender 536 odd",
        n,
        started,
        s.heap_bytes(),
        peak_since(live),
        s.sacked().len(),
    );
}

fn main() {
    let (min, max) = (arg("--min", 0), arg("--max", usize::MAX));
    println!(
        "{:<18} {:>7} {:>9} {:>10} {:>12} {:>12} {:>8}",
        "what", "n", "s", "ns/seg", "heap_bytes", "peak_alloc", "pieces"
    );
    for n in [10_000usize, 20_000, 40_000, 262_144] {
        if n < min || n > max {
            continue;
        }
        receiver_odd(n);
        receiver_random(n);
        sender_odd(n);
        receiver_536(n);
        sender_536(n);
    }
}
