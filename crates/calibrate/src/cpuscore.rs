//! The CPU score: a fixed, deterministic integer workload, run for a set
//! time, scored as workload iterations per second (1.0 = one iteration per
//! second; about 25,000 on the development VM). It stands in for
//! SPECint in Markatos' model and in mileage; it is tcplab's own scale, so
//! scores compare between hosts measured by tcplab, not with SPECmarks.
//!
//! One iteration, on a 4096-element array of u32 (16 KB, in L1/L2):
//! 1. fill it from a xorshift32 generator seeded with 2463534242;
//! 2. sort it (the standard library's unstable sort, a pattern-defeating
//!    quicksort: branches and compares);
//! 3. build an open-addressing hash table of 8192 u32 slots from it
//!    (multiplicative hash, linear probing) and look every value up again;
//! 4. multiply two 32×32 u32 matrices made from the array (wrapping).
//!
//! The result's checksum is fixed ([`ITERATION_CHECKSUM`]); a test checks
//! it so the workload cannot change without its version changing.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Version of the workload: scores of different versions do not compare.
pub const WORKLOAD_VERSION: u32 = 1;

/// The checksum of one iteration's results with [`SEED`] (workload v1).
pub const ITERATION_CHECKSUM: u64 = 12_425_268_185_493_417_618;

const N: usize = 4096;

/// One iteration of the workload; returns its checksum.
pub fn iteration(seed: u32) -> u64 {
    let mut x = seed;
    let mut a = [0u32; N];
    for v in a.iter_mut() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *v = x;
    }
    a.sort_unstable();
    let mut table = vec![0u32; 2 * N];
    let mask = table.len() - 1;
    for &v in &a {
        let mut i = (v.wrapping_mul(2_654_435_761) as usize) & mask;
        while table[i] != 0 && table[i] != v {
            i = (i + 1) & mask;
        }
        table[i] = v;
    }
    let mut found = 0u64;
    for &v in &a {
        let mut i = (v.wrapping_mul(2_654_435_761) as usize) & mask;
        while table[i] != v {
            i = (i + 1) & mask;
        }
        found = found.wrapping_add(i as u64);
    }
    const M: usize = 32;
    let mut c = [0u32; M * M];
    for i in 0..M {
        for j in 0..M {
            let mut s = 0u32;
            for k in 0..M {
                s = s.wrapping_add(a[i * M + k].wrapping_mul(a[N / 2 + k * M + j]));
            }
            c[i * M + j] = s;
        }
    }
    let mut sum = found;
    for (i, v) in c.iter().enumerate() {
        sum = sum.wrapping_mul(31).wrapping_add(u64::from(*v) ^ i as u64);
    }
    sum.wrapping_add(u64::from(a[0]) + u64::from(a[N - 1]))
}

/// The seed of every scored iteration.
pub const SEED: u32 = 2_463_534_242;

/// Iterations per second of the workload over at least `min_time`.
pub fn cpu_score(min_time: Duration) -> f64 {
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed() < min_time {
        black_box(iteration(black_box(SEED)));
        n += 1;
    }
    n as f64 / t0.elapsed().as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_is_fixed() {
        let c = iteration(SEED);
        assert_eq!(c, iteration(SEED), "the workload is deterministic");
        assert_ne!(c, iteration(SEED + 1), "the seed matters");
        assert_eq!(
            c, ITERATION_CHECKSUM,
            "the workload changed: bump WORKLOAD_VERSION and the checksum"
        );
    }

    #[test]
    fn a_score_is_positive() {
        // Timed, and a CPU-bound load: one timed test at a time, on a
        // quiet host.
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "the CPU score",
            testkit::QuietLimits::default(),
            &[],
            || cpu_score(Duration::from_millis(200)),
        );
        eprintln!("the CPU score: {}", q.describe());
        let s = q.value;
        assert!(s > 1.0, "{s}");
    }
}
