//! Page-aligned byte buffers for the data path.
//!
//! The kernel's copy to and from user memory (`rep movsb` on x86) prefers
//! aligned user addresses; a `Vec<u8>` of 128 KiB comes from glibc's mmap
//! path 16 bytes past a page boundary. Every application buffer of a
//! transfer is page-aligned instead, as nuttcp aligns its own (16 KiB), so
//! alignment is never a difference between tcplab and a peer. (On the
//! development VM the receive buffer's alignment alone made no measurable
//! difference; the sender's source alignment, see `pattern`, did.)

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// Alignment of every buffer: one page.
pub const PAGE: usize = 4096;

/// A zeroed, page-aligned, fixed-size byte buffer.
pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: PageBuf owns its allocation exclusively, like Vec<u8>.
unsafe impl Send for PageBuf {}
// SAFETY: shared access is read-only through &[u8].
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// A zeroed buffer of `len` bytes (at least one) starting on a page.
    pub fn zeroed(len: usize) -> PageBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        PageBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len.max(1), PAGE).expect("buffer size overflows")
    }
}

impl Deref for PageBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialized (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes and uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Clone for PageBuf {
    fn clone(&self) -> PageBuf {
        let mut b = PageBuf::zeroed(self.len);
        b.copy_from_slice(self);
        b
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PageBuf({} bytes)", self.len)
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in zeroed() with the same layout.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_page_aligned_and_writable() {
        for len in [0usize, 1, 1460, 128 * 1024, 1 << 20] {
            let mut b = PageBuf::zeroed(len);
            assert_eq!(b.as_ptr() as usize % PAGE, 0, "{len}");
            assert_eq!(b.len(), len);
            assert!(b.iter().all(|&x| x == 0));
            if len > 0 {
                b[len - 1] = 7;
                assert_eq!(b.clone()[len - 1], 7);
            }
        }
    }
}
