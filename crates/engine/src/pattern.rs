//! The payload pattern: every byte of every transfer is predictable from its
//! stream offset, so the receiver checks integrity with one `memcmp` per read.

/// Period of the pattern in bytes. A prime, so it never aligns with write or
/// read sizes and a shifted or dropped chunk is always detected.
pub const PERIOD: usize = 251;

/// A buffer holding the pattern long enough that any window of `max_len`
/// bytes starting at any phase is one contiguous slice.
#[derive(Debug, Clone)]
pub struct Pattern {
    bytes: Vec<u8>,
    max_len: usize,
}

impl Pattern {
    /// Builds a pattern serving windows of up to `max_len` bytes.
    pub fn new(max_len: usize) -> Pattern {
        let len = PERIOD + max_len.max(1);
        let bytes = (0..len).map(|i| byte_at(i as u64)).collect();
        Pattern { bytes, max_len }
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
        let phase = (offset % PERIOD as u64) as usize;
        &self.bytes[phase..phase + len]
    }

    /// True if `data` is exactly what belongs at stream offset `offset`.
    #[inline]
    pub fn matches(&self, offset: u64, data: &[u8]) -> bool {
        data.len() <= self.max_len && self.window(offset, data.len()) == data
    }

    /// The whole backing buffer (for sendfile's memfd).
    pub fn backing(&self) -> &[u8] {
        &self.bytes
    }
}

/// The pattern byte at stream offset `i`.
#[inline]
pub fn byte_at(i: u64) -> u8 {
    // Mix so neighbouring bytes differ in many bits.
    ((i % PERIOD as u64) as u8)
        .wrapping_mul(97)
        .wrapping_add(13)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_continue_across_writes() {
        let p = Pattern::new(1000);
        let mut stream = Vec::new();
        let mut off = 0u64;
        for len in [10usize, 1, 999, 251, 7] {
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
}
