//! A TPACKET_V2 receive ring on an AF_PACKET socket: the kernel writes each
//! frame with its receive timestamp into shared memory, and the emulator
//! reads frames without a system call per frame (it polls only when the
//! ring is empty). Per-frame status (unlike TPACKET_V3's blocks) adds no
//! batching delay.

use crate::error::LabError;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

const PACKET_VERSION: libc::c_int = 10;
const PACKET_RX_RING: libc::c_int = 5;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_LOSING: u32 = 1 << 2;

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

/// linux/if_packet.h `struct tpacket2_hdr`.
#[repr(C)]
struct Tpacket2Hdr {
    status: AtomicU32,
    len: u32,
    snaplen: u32,
    mac: u16,
    net: u16,
    sec: u32,
    nsec: u32,
    vlan_tci: u16,
    vlan_tpid: u16,
    padding: [u8; 4],
}

/// A mapped receive ring.
pub struct RxRing {
    base: *mut u8,
    map_len: usize,
    frame_size: usize,
    frames: usize,
    next: usize,
}

// SAFETY: the ring is owned by one thread at a time; the kernel side is
// synchronised through each frame's atomic status word.
unsafe impl Send for RxRing {}

/// One received frame, borrowed from the ring until `release`.
pub struct RxFrame<'a> {
    /// The Ethernet frame.
    pub data: &'a [u8],
    /// Length on the wire (more than `data.len()` if truncated).
    pub wire_len: usize,
    /// Kernel receive time, CLOCK_REALTIME.
    pub stamp: libc::timespec,
    /// The kernel dropped frames since the last one (ring full).
    pub losing: bool,
}

impl RxRing {
    /// Sets up a ring of `frames` slots able to hold frames of `max_frame`
    /// bytes on `fd` (before it is bound).
    pub fn new(fd: &OwnedFd, max_frame: usize, frames: usize) -> Result<RxRing, LabError> {
        let hdr = 32 + 32; // tpacket2_hdr aligned, plus sockaddr_ll room
        let frame_size = (max_frame + hdr).next_power_of_two().max(2048);
        let page = 4096usize;
        let block_size = frame_size.max(page) * 4;
        let per_block = block_size / frame_size;
        let blocks = frames.div_ceil(per_block).max(1);
        let frames = blocks * per_block;
        let set = |name: libc::c_int, val: *const libc::c_void, len: usize| {
            // SAFETY: val points at len readable bytes.
            unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_PACKET,
                    name,
                    val,
                    len as libc::socklen_t,
                )
            }
        };
        let v = TPACKET_V2;
        if set(PACKET_VERSION, (&v as *const libc::c_int).cast(), 4) != 0 {
            return Err(LabError::io(
                "selecting TPACKET_V2",
                std::io::Error::last_os_error(),
            ));
        }
        let req = TpacketReq {
            block_size: block_size as u32,
            block_nr: blocks as u32,
            frame_size: frame_size as u32,
            frame_nr: frames as u32,
        };
        if set(
            PACKET_RX_RING,
            (&req as *const TpacketReq).cast(),
            std::mem::size_of::<TpacketReq>(),
        ) != 0
        {
            return Err(LabError::io(
                "creating the AF_PACKET receive ring",
                std::io::Error::last_os_error(),
            ));
        }
        let map_len = block_size * blocks;
        // SAFETY: maps the ring the kernel just allocated for this socket.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(LabError::io(
                "mapping the receive ring",
                std::io::Error::last_os_error(),
            ));
        }
        Ok(RxRing {
            base: base.cast(),
            map_len,
            frame_size,
            frames,
            next: 0,
        })
    }

    fn header(&self, i: usize) -> &Tpacket2Hdr {
        // SAFETY: i < frames, each slot starts with a tpacket2_hdr; frames
        // never straddle blocks because block_size is a multiple of frame_size.
        unsafe { &*(self.base.add(i * self.frame_size) as *const Tpacket2Hdr) }
    }

    /// The next frame the kernel has filled, if any. Call `release` when done with it.
    pub fn peek(&self) -> Option<RxFrame<'_>> {
        let h = self.header(self.next);
        let status = h.status.load(Ordering::Acquire);
        if status & TP_STATUS_USER == 0 {
            return None;
        }
        let start = self.next * self.frame_size + usize::from(h.mac);
        let len = (h.snaplen as usize).min(self.frame_size.saturating_sub(usize::from(h.mac)));
        // SAFETY: the kernel wrote snaplen bytes at offset mac within this slot.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(start), len) };
        Some(RxFrame {
            data,
            wire_len: h.len as usize,
            stamp: libc::timespec {
                tv_sec: h.sec as libc::time_t,
                tv_nsec: h.nsec as libc::c_long,
            },
            losing: status & TP_STATUS_LOSING != 0,
        })
    }

    /// Hands the current slot back to the kernel and moves on.
    pub fn release(&mut self) {
        self.header(self.next)
            .status
            .store(TP_STATUS_KERNEL, Ordering::Release);
        self.next = (self.next + 1) % self.frames;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what new() mapped.
        unsafe { libc::munmap(self.base.cast(), self.map_len) };
    }
}
