//! Where the ring-buffer reader puts records while a trial runs: fixed
//! chunks whose pages are touched before they are needed, so the reader
//! never page-faults or reallocates (and copies) on the trial's CPUs.

/// Bytes per chunk.
const CHUNK: usize = 8 << 20;

/// Raw records, appended in arrival order.
pub struct RecordBuffer {
    full: Vec<Vec<u8>>,
    current: Vec<u8>,
    spare: Option<Vec<u8>>,
}

/// A chunk with every page already written once.
// vec![0; n] would come from calloc and leave the pages untouched: the
// explicit fill is the point.
#[allow(clippy::slow_vector_initialization)]
fn touched() -> Vec<u8> {
    let mut v = Vec::with_capacity(CHUNK);
    v.resize(CHUNK, 0);
    v.clear();
    v
}

impl RecordBuffer {
    /// Two touched chunks: the current one and the next.
    pub fn new() -> RecordBuffer {
        RecordBuffer {
            full: Vec::new(),
            current: touched(),
            spare: Some(touched()),
        }
    }

    /// Appends one record.
    #[inline]
    pub fn push(&mut self, record: &[u8]) {
        if self.current.len() + record.len() > self.current.capacity() {
            let next = self.spare.take().unwrap_or_else(touched);
            self.full.push(std::mem::replace(&mut self.current, next));
        }
        self.current.extend_from_slice(record);
    }

    /// Prepares the next chunk if it was used (call between drains, off
    /// the per-record path).
    pub fn refill(&mut self) {
        if self.spare.is_none() {
            self.spare = Some(touched());
        }
    }

    /// Records held (of [`crate::EVENT_SIZE`] bytes).
    pub fn len(&self) -> usize {
        (self.full.iter().map(Vec::len).sum::<usize>() + self.current.len()) / crate::EVENT_SIZE
    }

    /// True if no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All records back to back.
    pub fn into_bytes(self) -> Vec<u8> {
        let total = self.full.iter().map(Vec::len).sum::<usize>() + self.current.len();
        let mut out = Vec::with_capacity(total);
        for c in &self.full {
            out.extend_from_slice(c);
        }
        out.extend_from_slice(&self.current);
        out
    }
}

impl Default for RecordBuffer {
    fn default() -> Self {
        RecordBuffer::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_across_chunks() {
        let mut b = RecordBuffer::new();
        let rec = [7u8; 64];
        let n = CHUNK / 64 * 2 + 3;
        for i in 0..n {
            let mut r = rec;
            r[0..8].copy_from_slice(&(i as u64).to_ne_bytes());
            b.push(&r);
            if i % 1000 == 0 {
                b.refill();
            }
        }
        let bytes = b.into_bytes();
        assert_eq!(bytes.len(), n * 64);
        for (i, c) in bytes.chunks_exact(64).enumerate() {
            assert_eq!(u64::from_ne_bytes(c[0..8].try_into().unwrap()), i as u64);
        }
    }
}
