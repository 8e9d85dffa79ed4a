//! A global allocator that counts the bytes live on the allocating thread
//! and their peak, so other threads of the harness do not disturb the
//! figure: the heap a test or benchmark bounds. Include with
//! `#[path = ".../support/counting_alloc.rs"] mod counting_alloc;` and
//! `#[global_allocator] static A: counting_alloc::CountingAllocator =
//! counting_alloc::CountingAllocator;`.

#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts bytes live on each thread, forwarding every call to `System`.
pub struct CountingAllocator;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: during thread teardown the slots may be gone.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded unchanged to `System`; the counting
// touches only const-initialised thread-local `Cell`s (no allocation).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Bytes live on this thread now.
pub fn live_bytes() -> isize {
    LIVE.with(Cell::get)
}

/// Starts a peak measurement; returns the live bytes it is relative to.
pub fn peak_start() -> isize {
    let live = live_bytes();
    PEAK.with(|p| p.set(live));
    live
}

/// The peak live bytes since `peak_start` returned `start`, above it.
pub fn peak_since(start: isize) -> isize {
    PEAK.with(Cell::get) - start
}
