//! What [`TrialParams`] computes beyond its fields: the SO_RCVLOWAT an
//! `auto` level resolves to.

use super::defaults::{AUTO_RCVLOWAT_MAX, AUTO_RCVLOWAT_MIN};
use super::table::TrialParams;

impl TrialParams {
    /// The SO_RCVLOWAT a stream receiver sets after its first read: the
    /// explicit level, or for `auto` two writes' worth clamped to
    /// [`AUTO_RCVLOWAT_MIN`](super::defaults::AUTO_RCVLOWAT_MIN)..=[`AUTO_RCVLOWAT_MAX`](super::defaults::AUTO_RCVLOWAT_MAX), then capped at the
    /// read size and at a quarter of an explicit `--rcvbuf` (at least 1).
    ///
    /// Two writes' worth, because at small writes a large low-water mark
    /// starves the sender of the ACKs its Nagle waits on (1460-byte writes
    /// ran ~10% slower at 256 KiB than at 32 KiB), while at large writes the
    /// per-wake-up cost dominates.
    pub fn effective_rcvlowat(&self) -> u64 {
        match self.rcvlowat {
            Some(n) => n,
            None => {
                let mut v = self
                    .write_size
                    .saturating_mul(2)
                    .clamp(AUTO_RCVLOWAT_MIN, AUTO_RCVLOWAT_MAX)
                    .min(self.read_size);
                if let Some(rb) = self.rcvbuf {
                    v = v.min(rb / 4);
                }
                v.max(1)
            }
        }
    }
}
