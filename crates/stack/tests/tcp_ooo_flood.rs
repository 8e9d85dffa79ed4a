//! Issue 27, bug 5, through a whole connection: a peer flooding the
//! receive window with one-byte segments out of order, and a peer SACKing
//! one byte in every two of what was sent. Each segment goes through
//! `Connection::on_segment` (the receive path's trimming, the reassembly
//! queue, the drain into the receive buffer and the ACK with its SACK
//! blocks; or the scoreboard, fast retransmit and RFC 6675's transmission
//! loop), and the heap is checked twice: as the connection reports it
//! (`heap_bytes`) and as a counting allocator saw it. The stated bounds
//! are the modules' (`reassembly`, `sack`): a piece or SACKed range per
//! 512 bytes of window or flight, and what the caps drop is counted.

#[path = "support/tcp_pair.rs"]
mod tcp_pair;

use std::time::{Duration, Instant};

use stack::tcp::cc::CongestionControlKind;
use stack::tcp::tcb::{RecoveryKind, TcpConfig};
use stack::wire::TcpRepr;
use tcp_pair::{pattern, Pair};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::live_bytes;

#[global_allocator]
static ALLOCATOR: counting_alloc::CountingAllocator = counting_alloc::CountingAllocator;

const MS: Duration = Duration::from_millis(1);

/// A coarse bound on a whole flood, which takes well under a second: the
/// quadratic queue took minutes.
const LIMIT: Duration = Duration::from_secs(30);

/// Timestamps off: the flood's segments need no TSval to pass PAWS.
fn config() -> TcpConfig {
    TcpConfig {
        timestamps: false,
        recovery: RecoveryKind::Sack,
        ..TcpConfig::default()
    }
}

#[test]
fn a_one_byte_out_of_order_flood_keeps_the_receivers_heap_bounded_and_counts_what_it_drops() {
    let _timing = testkit::timing_lock();
    let window = config().recv_buffer;
    let mut p = Pair::established(config(), config(), 10 * MS);
    p.app_b.auto_read = false;
    p.clear_link();
    let (_, b_nxt, b_rcv) = p.b.sequence_points();
    let data = pattern(window);
    // Every odd offset ascending, then every even one descending: 262,143
    // one-byte segments past the missing first byte.
    let mut offsets: Vec<usize> = (1..window).step_by(2).collect();
    offsets.extend((2..window).step_by(2).rev());
    // The receive path's stated bound: the piece cap's runs (512 for this
    // window) at 256 bytes each and twice the bytes held, with 16 KiB for
    // the rest of the connection (its estimator, controller and buffers,
    // empty while nothing is in order).
    let bound = 256 * (window / 512) + 2 * 1024 + 16 * 1024;
    let heap_before = p.b.heap_bytes();
    let live_before = live_bytes();
    let started = Instant::now();
    let mut seg = TcpRepr::bare(40000, 80, b_rcv);
    seg.ack_number = Some(b_nxt);
    seg.window_len = 65535;
    for (n, &k) in offsets.iter().enumerate() {
        seg.seq_number = b_rcv + k;
        seg.payload = &data[k..k + 1];
        let out = p.inject(true, &seg);
        assert_eq!(out.len(), 1, "one ACK for each segment out of order");
        if n % 1024 == 0 || n + 1 == offsets.len() {
            let (heap, live) = (p.b.heap_bytes(), live_bytes() - live_before);
            assert!(
                heap.saturating_sub(heap_before) <= bound && live <= bound as isize,
                "after {} one-byte segments: heap {heap} B reported ({heap_before} before), \
                 {live} B more live by the allocator, above {bound}",
                n + 1
            );
            assert!(
                started.elapsed() < LIMIT,
                "{} segments took {:?}",
                n + 1,
                started.elapsed()
            );
        }
    }
    // The odd offsets 1 to 1023 were kept, the even ones joining them;
    // every other byte was above the 512 runs and dropped (and counted).
    assert_eq!(p.b.counters().ooo_pruned_bytes, (window - 1025) as u64);
    seg.seq_number = b_rcv;
    seg.payload = &data[..1];
    p.inject(true, &seg);
    let mut got = vec![0; window];
    let n = p.b.recv(&mut got);
    assert_eq!(n, 1025);
    assert_eq!(got[..n], data[..n]);
}

#[test]
fn a_peer_sacking_one_byte_ranges_keeps_the_senders_heap_bounded_and_counts_what_it_drops() {
    let _timing = testkit::timing_lock();
    // No congestion control: the whole send buffer goes at once.
    let a_config = TcpConfig {
        congestion: CongestionControlKind::None,
        ..config()
    };
    let mut p = Pair::established(a_config, config(), 10 * MS);
    p.clear_link();
    // B's window as its scale lets it say (the handshake's is 64,240).
    let (una, _, a_rcv) = p.a.sequence_points();
    let mut ack = TcpRepr::bare(80, 40000, a_rcv);
    ack.ack_number = Some(una);
    ack.window_len = u16::MAX;
    assert!(p.inject(false, &ack).is_empty());
    let data = pattern(config().send_buffer);
    assert_eq!(p.a.send(&data), data.len());
    let now = p.now();
    let sent = p.a.poll_output(now);
    let (una, nxt, _) = p.a.sequence_points();
    let flight = nxt - una;
    // All but a last partial segment, which Nagle holds.
    assert!(
        flight + 1460 > data.len(),
        "{flight} in flight, {} segments",
        sent.len()
    );
    drop(sent);
    let max_ranges = flight / 512;
    // The send path's stated bound: the range cap's ranges at 64 bytes
    // each, 16 KiB for the rest (the send buffer is full already).
    let bound = 64 * max_ranges + 16 * 1024;
    let heap_before = p.a.heap_bytes();
    let live_before = live_bytes();
    let started = Instant::now();
    let acks = flight / 2;
    for k in 0..acks {
        let l = una + (2 * k + 1);
        ack.sack_ranges = [Some((l, l + 1)), None, None];
        // Its retransmissions, dropped (the flood's sender ignores them).
        drop(p.inject(false, &ack));
        if k % 1024 == 0 || k + 1 == acks {
            let (heap, live) = (p.a.heap_bytes(), live_bytes() - live_before);
            assert!(
                heap.saturating_sub(heap_before) <= bound && live <= bound as isize,
                "after {} ACKs: heap {heap} B reported ({heap_before} before), \
                 {live} B more live by the allocator, above {bound}",
                k + 1
            );
            assert!(
                started.elapsed() < LIMIT,
                "{} ACKs took {:?}",
                k + 1,
                started.elapsed()
            );
        }
    }
    // The cap kept the lowest ranges; every later block was above them
    // all and dropped (and counted). The range cap is of the flight at
    // the end: the partial segment went out during recovery.
    let (una, nxt, _) = p.a.sequence_points();
    let c = p.a.counters();
    assert_eq!(c.fast_retransmits, 1, "{c:?}");
    assert_eq!(
        c.sack_ranges_pruned,
        (acks - (nxt - una) / 512) as u64,
        "{c:?}"
    );
}
