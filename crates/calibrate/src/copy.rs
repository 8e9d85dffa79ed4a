//! Memory copy bandwidth: how fast this CPU moves bytes with memcpy, the
//! operation at the heart of every socket write and read.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Bytes per second of `copy_from_slice` between two `size`-byte buffers,
/// repeated for at least `min_time` (counting bytes written once).
///
/// Both buffers start on a page boundary, as the engine's do. Where they
/// start matters: on AMD CPUs with fast short `rep movsb` (this development
/// VM's EPYC), glibc's memcpy ran a 32 KiB copy at 3 GB/s when the
/// destination sat 16 bytes past a page multiple from the source (two
/// `Vec`s allocated back to back) against ~50 GB/s page-aligned.
pub fn copy_bandwidth(size: usize, min_time: Duration) -> f64 {
    copy_bandwidth_skewed(size, 0, min_time)
}

/// The destination's distance past a page multiple from the source in
/// [`copy_bandwidth_skewed`] runs for `tcplab calibrate`'s aliased copy: in
/// the band (1–31 bytes) where this development VM's CPU slowed down.
pub const ALIAS_SKEW: usize = 16;

/// Like [`copy_bandwidth`], with the destination starting `skew` bytes
/// (less than a page) past a page boundary while the source starts on one.
/// A CPU whose copies depend on the two addresses modulo 4 KiB shows it
/// here; the kernel's copies between user buffers and socket buffers meet
/// every such distance.
pub fn copy_bandwidth_skewed(size: usize, skew: usize, min_time: Duration) -> f64 {
    let mut buf = vec![0u8; pair_len(size)];
    let (src, dst) = skewed_pair(&mut buf, size, skew);
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let src = &*src;
    // Warm up: fault the pages in and fill the caches.
    dst.copy_from_slice(src);
    let t0 = Instant::now();
    let mut bytes = 0u64;
    while t0.elapsed() < min_time {
        for _ in 0..4 {
            black_box(&mut *dst).copy_from_slice(black_box(src));
            bytes += size as u64;
        }
    }
    bytes as f64 / t0.elapsed().as_secs_f64()
}

/// Bytes [`skewed_pair`] needs for two `size`-byte buffers.
fn pair_len(size: usize) -> usize {
    2 * size.div_ceil(PAGE) * PAGE + 2 * PAGE
}

/// Source and destination of `size` bytes in `buf` (at least
/// [`pair_len`] long): the source on a page boundary, the destination
/// `skew` bytes past one, after it.
fn skewed_pair(buf: &mut [u8], size: usize, skew: usize) -> (&mut [u8], &mut [u8]) {
    assert!(skew < PAGE, "skew {skew} is not within a page");
    let span = size.div_ceil(PAGE) * PAGE;
    let pad = (PAGE - buf.as_ptr() as usize % PAGE) % PAGE;
    let (src, dst) = buf[pad..pad + 2 * span + PAGE].split_at_mut(span);
    (&mut src[..size], &mut dst[skew..skew + size])
}

/// Page size the copy buffers are aligned to.
const PAGE: usize = 4096;

/// The last-level cache size from sysfs (largest cache of CPU 0), bytes.
pub fn last_level_cache() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(s.trim()))
        .max()
}

/// "32K", "1024K", "32M" → bytes.
fn parse_cache_size(s: &str) -> Option<usize> {
    let (num, mult) = match s.chars().last()? {
        'K' => (&s[..s.len() - 1], 1024),
        'M' => (&s[..s.len() - 1], 1024 * 1024),
        _ => (s, 1),
    };
    num.parse::<usize>().ok().map(|n| n * mult)
}

/// A buffer size well beyond the last-level cache: 8× it, at least 64 MiB
/// and at most 512 MiB.
pub fn dram_size() -> usize {
    let llc = last_level_cache().unwrap_or(32 << 20);
    (llc * 8).clamp(64 << 20, 512 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_parse() {
        assert_eq!(parse_cache_size("32K"), Some(32768));
        assert_eq!(parse_cache_size("16M"), Some(16 << 20));
        assert_eq!(parse_cache_size("x"), None);
    }

    #[test]
    fn copy_buffers_sit_where_the_skew_says() {
        for (size, skew) in [(1, 0), (8192, 0), (32 << 10, ALIAS_SKEW), (5000, 4095)] {
            let mut buf = vec![0u8; pair_len(size)];
            let (src, dst) = skewed_pair(&mut buf, size, skew);
            let (s, d) = (src.as_ptr() as usize, dst.as_ptr() as usize);
            assert_eq!((src.len(), dst.len()), (size, size));
            assert_eq!(s % PAGE, 0, "source on a page");
            assert_eq!((d - s) % PAGE, skew, "size {size} skew {skew}");
            assert!(d >= s + size, "no overlap");
        }
        // A 5 ms copy is timed (a preemption in it slows it tenfold): one
        // timed test at a time, on a quiet host.
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "an aliased copy in cache",
            testkit::QuietLimits::default(),
            &[],
            || copy_bandwidth_skewed(32 << 10, ALIAS_SKEW, Duration::from_millis(5)),
        );
        eprintln!("an aliased copy in cache: {}", q.describe());
        let r = q.value;
        assert!(r > 1e7, "{r}");
    }

    #[test]
    fn in_cache_copies_are_not_slower_than_dram_copies() {
        // Timed against each other: one timed test at a time, both copies
        // in one quiet run (another process's load would slow either).
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "copies in cache and in DRAM",
            testkit::QuietLimits::default(),
            &[],
            || {
                (
                    copy_bandwidth(32 << 10, Duration::from_millis(100)),
                    copy_bandwidth(dram_size(), Duration::from_millis(300)),
                )
            },
        );
        eprintln!("copies in cache and in DRAM: {}", q.describe());
        let (small, large) = q.value;
        assert!(small > 1e8 && large > 1e8, "{small} {large}");
        // Noise on a shared VM can be large, but cache beats DRAM.
        assert!(
            small >= 0.8 * large,
            "in cache {small:.3e} B/s, DRAM {large:.3e} B/s"
        );
    }
}
