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
    let span = size.div_ceil(PAGE) * PAGE;
    let mut buf = vec![0u8; 2 * span + PAGE];
    let pad = (PAGE - buf.as_ptr() as usize % PAGE) % PAGE;
    let (src, dst) = buf[pad..pad + 2 * span].split_at_mut(span);
    let (src, dst) = (&mut src[..size], &mut dst[..size]);
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
    fn in_cache_copies_are_not_slower_than_dram_copies() {
        let small = copy_bandwidth(32 << 10, Duration::from_millis(100));
        let large = copy_bandwidth(dram_size(), Duration::from_millis(300));
        assert!(small > 1e8 && large > 1e8, "{small} {large}");
        // Noise on a shared VM can be large, but cache beats DRAM.
        assert!(
            small >= 0.8 * large,
            "in cache {small:.3e} B/s, DRAM {large:.3e} B/s"
        );
    }
}
