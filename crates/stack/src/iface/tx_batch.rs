//! Frames held back within one round of the stack and written together
//! at its end (or when the batch is full): what a driver's transmit ring
//! with a deferred doorbell does (Linux's `xmit_more`), for a device
//! that takes one frame per system call.
//!
//! Why: a TUN write runs Linux's receive path for the frame in the
//! writing thread (its softirq). Built and written one at a time, frames
//! reach Linux's receiver spaced by the stack's work on the next one; its
//! application thread catches up between them, sleeps, and is woken (an
//! inter-processor interrupt, on this VM through the hypervisor) many
//! times a burst, and Linux acknowledges more often, since its reader is
//! never behind. Written back to back, the frames of a batch arrive while
//! the reader is still copying the first: they wait in the socket's
//! backlog for it, and fewer wake-ups and ACKs follow. Same frames, same
//! system calls; only their spacing changes.

/// The alignment each held frame starts at (a cache line): the kernel's
/// copy of a TUN write runs at about half speed from an unaligned start.
const FRAME_ALIGN: usize = 64;

/// The most bytes held at once: 32 full-sized frames fit, one 64 KB
/// super-packet (virtio-net offloads) goes alone.
const BATCH_BYTES: usize = 64 * 1024;

/// Frames waiting to be written, in order, each at an aligned offset.
#[derive(Debug, Default)]
pub(crate) struct TxBatch {
    /// The frames, each starting at a multiple of [`FRAME_ALIGN`] from
    /// `base`.
    buffer: Vec<u8>,
    /// Where `buffer`'s first aligned byte is.
    base: usize,
    /// Each frame's offset from `base` and length.
    frames: Vec<(usize, usize)>,
    /// The bytes in use from `base` (the next frame's offset).
    used: usize,
    /// The most frames held (1 or less: none are held).
    limit: usize,
    /// Whether frames are held now (between `open` and the drain).
    open: bool,
}

impl TxBatch {
    /// A batch of up to `limit` frames (0 or 1: frames are never held).
    pub(crate) fn new(limit: usize) -> TxBatch {
        TxBatch {
            limit,
            ..TxBatch::default()
        }
    }

    /// Frames given from now on are held (if the limit allows).
    pub(crate) fn open(&mut self) {
        self.open = self.limit > 1;
    }

    /// Frames are written at once again (call after the last drain).
    pub(crate) fn close(&mut self) {
        self.open = false;
    }

    /// Whether a frame of `len` bytes would be held rather than written.
    pub(crate) fn holds(&self, len: usize) -> bool {
        self.open && len <= BATCH_BYTES
    }

    /// Whether a frame of `len` bytes must wait for the held ones to be
    /// written first (no room left for it).
    pub(crate) fn full_for(&self, len: usize) -> bool {
        !self.frames.is_empty()
            && (self.frames.len() >= self.limit || self.used + len > BATCH_BYTES)
    }

    /// Holds a copy of `frame` (the caller checked [`TxBatch::holds`] and
    /// drained a full batch first).
    pub(crate) fn push(&mut self, frame: &[u8]) {
        let (mut buffer, start) = self.take_slot(frame.len());
        buffer[start..start + frame.len()].copy_from_slice(frame);
        self.commit(buffer, frame.len());
    }

    /// The storage, taken out to build the next frame in place, and the
    /// offset to build a `len`-byte frame at (the caller checked
    /// [`TxBatch::holds`] and drained a full batch first). Give it back
    /// with [`TxBatch::commit`].
    pub(crate) fn take_slot(&mut self, len: usize) -> (Vec<u8>, usize) {
        debug_assert!(self.used + len <= BATCH_BYTES, "no room for the frame");
        if self.buffer.is_empty() {
            self.buffer.resize(BATCH_BYTES + 2 * FRAME_ALIGN, 0);
            self.base = self
                .buffer
                .as_ptr()
                .align_offset(FRAME_ALIGN)
                .min(FRAME_ALIGN);
        }
        let start = self.base + self.used;
        (std::mem::take(&mut self.buffer), start)
    }

    /// Gives the storage back with a `len`-byte frame built at the offset
    /// [`TxBatch::take_slot`] gave: it is held from now on.
    pub(crate) fn commit(&mut self, buffer: Vec<u8>, len: usize) {
        self.buffer = buffer;
        self.frames.push((self.used, len));
        self.used = (self.used + len).next_multiple_of(FRAME_ALIGN);
    }

    /// How many frames are held.
    pub(crate) fn len(&self) -> usize {
        self.frames.len()
    }

    /// Hands each held frame, oldest first, to `write` until it fails;
    /// empties the batch either way. Returns the first failure.
    pub(crate) fn drain<E>(
        &mut self,
        mut write: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut result = Ok(());
        for &(at, len) in &self.frames {
            let start = self.base + at;
            if let Err(e) = write(&self.buffer[start..start + len]) {
                result = Err(e);
                break;
            }
        }
        self.frames.clear();
        self.used = 0;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u8, len: usize) -> Vec<u8> {
        (0..len).map(|i| tag ^ i as u8).collect()
    }

    #[test]
    fn held_frames_come_out_whole_in_order_each_on_a_cache_line() {
        let mut b = TxBatch::new(32);
        b.open();
        let sent: Vec<Vec<u8>> = (0..5)
            .map(|i| frame(i, 1500 - usize::from(i) * 7))
            .collect();
        for f in &sent {
            assert!(b.holds(f.len()));
            assert!(!b.full_for(f.len()));
            b.push(f);
        }
        assert_eq!(b.len(), 5);
        let mut out = Vec::new();
        b.drain(|f| {
            assert_eq!(f.as_ptr() as usize % FRAME_ALIGN, 0, "aligned start");
            out.push(f.to_vec());
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(out, sent);
        assert_eq!(b.len(), 0, "drained");
    }

    #[test]
    fn the_batch_is_full_at_its_frame_limit_or_its_bytes() {
        let mut b = TxBatch::new(3);
        b.open();
        for i in 0..3 {
            assert!(!b.full_for(100), "frame {i}");
            b.push(&frame(i, 100));
        }
        assert!(b.full_for(100), "three frames are the limit");
        b.drain(|_| Ok::<(), ()>(())).unwrap();
        assert!(!b.full_for(100));

        let mut b = TxBatch::new(64);
        b.open();
        b.push(&frame(1, 40_000));
        assert!(b.full_for(30_000), "64 KB of bytes is the limit");
        assert!(!b.full_for(20_000));
    }

    #[test]
    fn a_limit_of_one_or_a_closed_batch_holds_nothing() {
        let mut one = TxBatch::new(1);
        one.open();
        assert!(!one.holds(100));
        let mut closed = TxBatch::new(32);
        assert!(!closed.holds(100), "not opened");
        closed.open();
        assert!(closed.holds(100));
        assert!(!closed.holds(BATCH_BYTES + 1), "too big to hold");
        closed.close();
        assert!(!closed.holds(100));
    }

    #[test]
    fn a_failed_write_stops_the_drain_and_empties_the_batch() {
        let mut b = TxBatch::new(8);
        b.open();
        for i in 0..4 {
            b.push(&frame(i, 60));
        }
        let mut written = 0;
        let r = b.drain(|_| {
            written += 1;
            if written == 2 {
                Err("device gone")
            } else {
                Ok(())
            }
        });
        assert_eq!(r, Err("device gone"));
        assert_eq!(written, 2, "nothing after the failure");
        assert_eq!(b.len(), 0);
    }
}
