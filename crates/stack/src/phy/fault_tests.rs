use super::*;
use crate::phy::loopback::Loopback;
use crate::phy::Medium;
use std::collections::HashSet;

const N: u64 = 100_000;

/// A numbered frame: the number three times (so one flipped bit still
/// leaves a majority), then a fixed pattern.
fn frame(seq: u64) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    for _ in 0..3 {
        f.extend_from_slice(&seq.to_be_bytes());
    }
    f.resize(64, 0x5a);
    f
}

/// The frame's number by majority, and whether it is intact.
fn decode(f: &[u8]) -> (u64, bool) {
    let copies: Vec<u64> = (0..3)
        .map(|i| u64::from_be_bytes(f[i * 8..i * 8 + 8].try_into().unwrap()))
        .collect();
    let seq = if copies[0] == copies[1] || copies[0] == copies[2] {
        copies[0]
    } else {
        copies[1]
    };
    (seq, f == frame(seq).as_slice())
}

/// What the frames that came out show.
#[derive(Debug, Default)]
struct Observed {
    lost: u64,
    duplicates: u64,
    corrupted: u64,
    inversions: u64,
}

fn observe(out: &[Vec<u8>]) -> Observed {
    let mut seen = HashSet::new();
    let mut corrupted = HashSet::new();
    let mut max = None;
    let mut o = Observed::default();
    for f in out {
        let (seq, intact) = decode(f);
        if !intact {
            corrupted.insert(seq);
        }
        if !seen.insert(seq) {
            o.duplicates += 1;
        }
        if max.is_some_and(|m| seq < m) {
            o.inversions += 1;
        }
        max = max.max(Some(seq));
    }
    o.lost = N - seen.len() as u64;
    o.corrupted = corrupted.len() as u64;
    o
}

fn within(observed: u64, expected: f64, tolerance: f64) -> bool {
    (observed as f64 - expected).abs() <= tolerance * expected
}

const FAULTS: Faults = Faults {
    loss: 0.05,
    reorder: 0.04,
    duplicate: 0.03,
    corrupt: 0.02,
};

fn run_transmit(seed: u64) -> (Vec<Vec<u8>>, FaultStats) {
    let config = FaultConfig {
        transmit: FAULTS,
        receive: Faults::default(),
        seed,
    };
    let mut dev = FaultInjector::new(Loopback::new(Medium::Ip, 1500), config);
    for seq in 0..N {
        dev.transmit(&frame(seq)).unwrap();
    }
    dev.flush().unwrap();
    let stats = dev.transmit_stats();
    (dev.inner_mut().outbound.drain(..).collect(), stats)
}

#[test]
fn transmit_faults_come_at_their_rates_and_the_output_shows_each() {
    let (out, stats) = run_transmit(7);
    let o = observe(&out);
    let n = N as f64;
    let kept = n * (1.0 - FAULTS.loss);
    // Seeded, so exact; the tolerance (10%) is many standard deviations of
    // a binomial at these counts, so any seed would pass.
    assert!(within(o.lost, n * FAULTS.loss, 0.1), "{o:?}");
    assert!(within(o.duplicates, kept * FAULTS.duplicate, 0.1), "{o:?}");
    assert!(within(o.corrupted, kept * FAULTS.corrupt, 0.1), "{o:?}");
    // A frame is held only when none is held already.
    assert!(
        within(
            o.inversions,
            kept * FAULTS.reorder * (1.0 - FAULTS.reorder),
            0.1
        ),
        "{o:?}"
    );
    // The injector's own counts say exactly what the output shows.
    assert_eq!(stats.frames, N);
    assert_eq!(stats.dropped, o.lost);
    assert_eq!(stats.duplicated, o.duplicates);
    assert_eq!(stats.corrupted, o.corrupted);
    assert_eq!(stats.reordered, o.inversions);
    assert_eq!(out.len() as u64, N - o.lost + o.duplicates);
}

#[test]
fn the_same_seed_gives_the_same_faults_and_another_seed_others() {
    let (a, _) = run_transmit(11);
    let (b, _) = run_transmit(11);
    let (c, _) = run_transmit(12);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn receive_faults_apply_to_what_the_inner_device_delivers() {
    let config = FaultConfig {
        transmit: Faults::default(),
        receive: FAULTS,
        seed: 3,
    };
    let mut lo = Loopback::new(Medium::Ip, 1500);
    lo.inbound = (0..N).map(frame).collect();
    let mut dev = FaultInjector::new(lo, config);
    let mut buf = [0u8; 1500];
    let mut out = Vec::new();
    while let Some(n) = dev.receive(&mut buf).unwrap() {
        out.push(buf[..n].to_vec());
    }
    let o = observe(&out);
    let stats = dev.receive_stats();
    assert_eq!(stats.frames, N);
    assert_eq!(stats.dropped, o.lost);
    assert_eq!(stats.duplicated, o.duplicates);
    assert_eq!(stats.corrupted, o.corrupted);
    assert_eq!(stats.reordered, o.inversions);
    assert!(within(o.lost, N as f64 * FAULTS.loss, 0.1), "{o:?}");
    assert_eq!(dev.transmit_stats(), FaultStats::default());
}

#[test]
fn no_faults_means_every_frame_in_order_untouched() {
    let mut dev = FaultInjector::new(Loopback::new(Medium::Ip, 1500), FaultConfig::default());
    for seq in 0..1000 {
        dev.transmit(&frame(seq)).unwrap();
    }
    let out: Vec<Vec<u8>> = dev.inner_mut().outbound.drain(..).collect();
    assert_eq!(out, (0..1000).map(frame).collect::<Vec<_>>());
}
