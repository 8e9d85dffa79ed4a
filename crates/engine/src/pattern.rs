//! The payload pattern: every byte of every transfer is predictable from its
//! stream offset, so the receiver checks integrity with one `memcmp` per read.

use crate::buffer::PageBuf;

/// Bytes per cache line: the pattern's phases step in whole lines.
const LINE: usize = 64;

/// Period of the pattern in bytes: 251 cache lines. A write size that is a
/// multiple of 64 bytes (128 KiB, 64 KiB, 8 KiB …) then always starts its
/// window on a cache-line boundary of a page-aligned buffer, as a peer's
/// fixed buffer does; with a 251-byte period the source address wandered
/// through every alignment and 128 KiB loopback writes ran about 6% slower
/// (median of alternating runs on the development VM). 251 is prime, so the period never divides a power
/// of two and a chunk shifted by anything but a multiple of 16,064 bytes
/// is detected (the total byte count catches the rest).
pub const PERIOD: usize = LINE * 251;

/// A buffer holding the pattern long enough that any window of `max_len`
/// bytes starting at any phase is one contiguous slice.
#[derive(Debug, Clone)]
pub struct Pattern {
    storage: PageBuf,
    max_len: usize,
}

impl Pattern {
    /// Builds a pattern serving windows of up to `max_len` bytes, its first
    /// byte page-aligned.
    pub fn new(max_len: usize) -> Pattern {
        let len = PERIOD + max_len.max(1);
        let mut storage = PageBuf::zeroed(len);
        for (i, b) in storage.iter_mut().enumerate() {
            *b = byte_at(i as u64);
        }
        Pattern { storage, max_len }
    }

    /// The longest window this pattern serves.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The bytes at stream offsets `offset .. offset + len`.
    ///
    /// Panics if `len` exceeds `max_len`.
    #[inline]
    pub fn window(&self, offset: u64, len: usize) -> &[u8] {
        assert!(len <= self.max_len, "window of {len} > {}", self.max_len);
        self.slice(offset, len)
    }

    /// The bytes at `offset .. offset + len`, `len` already checked.
    #[inline]
    fn slice(&self, offset: u64, len: usize) -> &[u8] {
        let phase = (offset % PERIOD as u64) as usize;
        &self.storage[phase..phase + len]
    }

    /// True if `data` is exactly what belongs at stream offset `offset`.
    #[inline]
    pub fn matches(&self, offset: u64, data: &[u8]) -> bool {
        data.len() <= self.max_len && self.slice(offset, data.len()) == data
    }

    /// The whole pattern (for sendfile's memfd): byte `i` is stream offset `i`.
    pub fn backing(&self) -> &[u8] {
        &self.storage
    }
}

/// The pattern byte at stream offset `i`.
#[inline]
pub fn byte_at(i: u64) -> u8 {
    // MurmurHash3's finalizer of the phase: bytes look random, so no shift
    // within the period reproduces more than a byte or two by chance.
    let mut x = (i % PERIOD as u64) as u32;
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    x ^= x >> 16;
    x as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_continue_across_writes() {
        let p = Pattern::new(40_000);
        let mut stream = Vec::new();
        let mut off = 0u64;
        for len in [10usize, 1, 999, 251, 7, 40_000, 16_064] {
            stream.extend_from_slice(p.window(off, len));
            off += len as u64;
        }
        for (i, b) in stream.iter().enumerate() {
            assert_eq!(*b, byte_at(i as u64));
        }
    }

    #[test]
    fn shifted_data_is_detected() {
        let p = Pattern::new(512);
        let w = p.window(100, 300).to_vec();
        assert!(p.matches(100, &w));
        assert!(!p.matches(101, &w));
        let mut bad = w.clone();
        bad[17] ^= 1;
        assert!(!p.matches(100, &bad));
    }

    #[test]
    fn every_shift_within_the_period_is_detected_within_a_few_bytes() {
        let p = Pattern::new(64);
        let w = p.window(0, 16).to_vec();
        for shift in 1..PERIOD as u64 {
            assert!(!p.matches(shift, &w), "shift {shift} undetected");
        }
        assert!(p.matches(PERIOD as u64, &w));
    }

    #[test]
    fn line_multiple_writes_start_on_aligned_addresses() {
        let p = Pattern::new(128 * 1024);
        assert_eq!(p.backing().as_ptr() as usize % crate::buffer::PAGE, 0);
        let mut off = 0u64;
        for _ in 0..1000 {
            assert_eq!(p.window(off, 128 * 1024).as_ptr() as usize % LINE, 0);
            off += 128 * 1024;
        }
    }
}
