//! The byte pattern of the interop rows (`interop_rows::pattern`), made
//! and checked a 2048-byte block at a time, so a transfer of more than
//! 4 GiB is checked byte for byte in far less time than it takes to move:
//! within a block the pattern's second term is constant, and its first
//! (`i % 251`) is a slice of a table. A stream offset and its offset plus
//! 2³² carry different bytes (2³² is not a multiple of 251), so data
//! misplaced by a whole turn of the sequence space shows.

#![allow(dead_code)]

use std::sync::OnceLock;

/// The byte at stream offset `i` (the same as `interop_rows::pattern`).
pub fn pattern(i: u64) -> u8 {
    ((i % 251) as u8) ^ ((i >> 11) as u8).wrapping_mul(31)
}

/// `i % 251` for i in 0..251 + 2048: any 2048-byte run of the pattern's
/// first term is a slice of it.
fn residues() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| (0..251 + 2048).map(|i| (i % 251) as u8).collect())
}

/// Fills `buf` with the pattern from stream offset `start`.
pub fn fill(start: u64, buf: &mut [u8]) {
    let table = residues();
    let mut i = start;
    let mut rest = buf;
    while !rest.is_empty() {
        let block_end = (i | 2047) + 1;
        let n = ((block_end - i) as usize).min(rest.len());
        let high = ((i >> 11) as u8).wrapping_mul(31);
        let from = (i % 251) as usize;
        let (head, tail) = rest.split_at_mut(n);
        for (b, r) in head.iter_mut().zip(&table[from..from + n]) {
            *b = r ^ high;
        }
        i += n as u64;
        rest = tail;
    }
}

/// The stream offset of the first byte of `data` (at offset `start`) off
/// the pattern, if any.
pub fn first_mismatch(start: u64, data: &[u8]) -> Option<u64> {
    thread_local! {
        static EXPECTED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    EXPECTED.with(|expected| {
        let mut expected = expected.borrow_mut();
        expected.resize(data.len(), 0);
        fill(start, &mut expected);
        if expected[..] == *data {
            return None;
        }
        data.iter()
            .zip(expected.iter())
            .position(|(a, b)| a != b)
            .map(|k| start + k as u64)
    })
}

/// One direction of a checked stream: how much was written and read,
/// and where the first wrong byte was.
#[derive(Debug, Default, Clone)]
pub struct Checked {
    /// Bytes the stream carries in all.
    pub total: u64,
    /// Bytes handed to the sender so far.
    pub written: u64,
    /// Bytes read at the receiver so far (each checked).
    pub read: u64,
    /// The first offset read off the pattern.
    pub mismatch: Option<u64>,
}

impl Checked {
    /// A stream of `total` bytes, nothing moved yet.
    pub fn new(total: u64) -> Checked {
        Checked {
            total,
            ..Checked::default()
        }
    }

    /// Hands the sender the next bytes, at most `room` (what it has room
    /// for: no byte is made that it will not take), `scratch` at a time,
    /// through `send` (which returns how many it took).
    pub fn write(&mut self, room: usize, scratch: &mut [u8], mut send: impl FnMut(&[u8]) -> usize) {
        let mut room = room;
        while self.written < self.total && room > 0 {
            let n = scratch
                .len()
                .min(room)
                .min((self.total - self.written) as usize);
            fill(self.written, &mut scratch[..n]);
            let took = send(&scratch[..n]);
            self.written += took as u64;
            room -= took;
            if took < n {
                return;
            }
        }
    }

    /// Reads what `recv` gives (0: nothing more now) into `scratch`,
    /// checking every byte.
    pub fn read(&mut self, scratch: &mut [u8], mut recv: impl FnMut(&mut [u8]) -> usize) {
        loop {
            let n = recv(scratch);
            if n == 0 {
                return;
            }
            if self.mismatch.is_none() {
                self.mismatch = first_mismatch(self.read, &scratch[..n]);
            }
            self.read += n as u64;
        }
    }

    /// Everything written and read, every byte right.
    pub fn done(&self) -> bool {
        self.written == self.total && self.read == self.total && self.mismatch.is_none()
    }
}
