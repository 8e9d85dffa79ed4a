//! tcplab's link emulator, for kernels without netem: an Ethernet bridge
//! between two interfaces of the middle namespace, built on AF_PACKET
//! sockets. Each direction has its own thread that receives frames, drops
//! them with the link's loss probability or when the queue is full,
//! serializes them at the link rate, holds them for the delay (± jitter),
//! and transmits them when due. Timing uses absolute deadlines on the
//! monotonic clock, so oversleeping never changes the mean rate or delay.

use crate::error::LabError;
use crate::link::LinkSpec;
use crate::ring::RxRing;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const MAX_FRAME: usize = 65_536 + 64;
const ETH_P_ALL: u16 = 0x0003;
/// How long before a departure the emulator stops sleeping and spins.
const SPIN: Duration = Duration::from_micros(100);
/// Frames received or sent per round of the loop.
const BATCH: usize = 64;
/// Slots in each receive ring.
const RING_FRAMES: usize = 4096;

/// Counters of one direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionStats {
    /// Frames received from the input interface.
    pub frames_in: u64,
    /// Frames transmitted on the output interface.
    pub frames_out: u64,
    /// Bytes transmitted.
    pub bytes_out: u64,
    /// Frames dropped by the loss probability.
    pub lost: u64,
    /// Frames dropped because the queue was full.
    pub queue_drops: u64,
    /// Frames that skipped the delay line (reordering).
    pub reordered: u64,
    /// Times the kernel reported frames lost because the receive ring was full.
    pub ring_losses: u64,
}

/// Live counters of one direction, readable while the emulator runs.
#[derive(Debug, Default)]
struct Counters {
    frames_in: AtomicU64,
    frames_out: AtomicU64,
    bytes_out: AtomicU64,
    lost: AtomicU64,
    queue_drops: AtomicU64,
    reordered: AtomicU64,
    ring_losses: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> DirectionStats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DirectionStats {
            frames_in: g(&self.frames_in),
            frames_out: g(&self.frames_out),
            bytes_out: g(&self.bytes_out),
            lost: g(&self.lost),
            queue_drops: g(&self.queue_drops),
            reordered: g(&self.reordered),
            ring_losses: g(&self.ring_losses),
        }
    }
}

impl DirectionStats {
    /// Counts since `earlier`.
    pub fn since(&self, earlier: &DirectionStats) -> DirectionStats {
        DirectionStats {
            frames_in: self.frames_in - earlier.frames_in,
            frames_out: self.frames_out - earlier.frames_out,
            bytes_out: self.bytes_out - earlier.bytes_out,
            lost: self.lost - earlier.lost,
            queue_drops: self.queue_drops - earlier.queue_drops,
            reordered: self.reordered - earlier.reordered,
            ring_losses: self.ring_losses - earlier.ring_losses,
        }
    }
}

/// A running emulator; stops when dropped.
pub struct Emulator {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<(), LabError>>>,
    counters: Vec<Arc<Counters>>,
}

fn packet_socket(
    ifname: &str,
    rx: bool,
    max_frame: usize,
) -> Result<(OwnedFd, Option<RxRing>), LabError> {
    let proto = if rx { ETH_P_ALL.to_be() } else { 0 };
    // SAFETY: plain socket call.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            i32::from(proto),
        )
    };
    if fd < 0 {
        return Err(LabError::io(
            "opening AF_PACKET socket",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fresh descriptor we own.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let cname =
        std::ffi::CString::new(ifname).map_err(|_| LabError::Spec("bad interface name".into()))?;
    // SAFETY: valid C string.
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
    if ifindex == 0 {
        return Err(LabError::io(
            format!("finding interface {ifname}"),
            std::io::Error::last_os_error(),
        ));
    }
    let set = |level: libc::c_int, name: libc::c_int, v: libc::c_int| {
        // SAFETY: passes a valid int.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                level,
                name,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        }
    };
    if rx {
        if set(libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1) != 0 {
            return Err(LabError::Unsupported(
                "this kernel lacks PACKET_IGNORE_OUTGOING (Linux 4.20+), which the link emulator needs".into(),
            ));
        }
    } else {
        set(libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1);
        set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 8 << 20);
    }
    let ring = if rx {
        Some(RxRing::new(&sock, max_frame, RING_FRAMES)?)
    } else {
        None
    };
    // SAFETY: sockaddr_ll is plain data.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: sll is a valid sockaddr_ll of the given size.
    let rc = unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(LabError::io(
            format!("binding AF_PACKET socket to {ifname}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok((sock, ring))
}

impl Emulator {
    /// Starts bridging `x` ⇄ `y` (interfaces of the calling thread's
    /// namespace) with `spec` applied in both directions.
    pub fn start(x: &str, y: &str, spec: &LinkSpec, seed: u64) -> Result<Emulator, LabError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let mut counters = Vec::new();
        for (i, (from, to)) in [(x, y), (y, x)].into_iter().enumerate() {
            let max_frame = spec.mtu as usize + 64;
            let (rx, ring) = packet_socket(from, true, max_frame)?;
            let ring = ring.expect("rx sockets have a ring");
            let (tx, _) = packet_socket(to, false, max_frame)?;
            let spec = spec.clone();
            let stop = stop.clone();
            let c = Arc::new(Counters::default());
            counters.push(c.clone());
            let name = format!("tcplab-emu-{i}");
            let h = std::thread::Builder::new()
                .name(name)
                .spawn(move || {
                    Direction::new(rx, ring, tx, &spec, seed.wrapping_add(i as u64), c).run(&stop)
                })
                .map_err(|e| LabError::io("spawning emulator thread", e))?;
            threads.push(h);
        }
        Ok(Emulator {
            stop,
            threads,
            counters,
        })
    }

    /// Counters so far, per direction (x→y, y→x).
    pub fn stats(&self) -> Vec<DirectionStats> {
        self.counters.iter().map(|c| c.snapshot()).collect()
    }

    /// Stops both directions and returns their counters (x→y, y→x).
    pub fn stop(mut self) -> Result<Vec<DirectionStats>, LabError> {
        self.halt()
    }

    fn halt(&mut self) -> Result<Vec<DirectionStats>, LabError> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            t.join()
                .map_err(|_| LabError::Unsupported("emulator thread panicked".into()))??;
        }
        Ok(self.stats())
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        let _ = self.halt();
    }
}

/// A frame waiting for its departure.
struct Held {
    due: Instant,
    len: usize,
    buf: Box<[u8]>,
}

/// One direction of the bridge.
struct Direction {
    rx: OwnedFd,
    ring: RxRing,
    tx: OwnedFd,
    rng: ChaCha8Rng,
    ns_per_byte: Option<f64>,
    /// Framing bytes per frame on the line (`LinkSpec::framing_bytes`).
    framing_bytes: u32,
    delay: Duration,
    jitter_ns: u64,
    loss: f64,
    reorder: f64,
    queue_frames: usize,
    link_free_at: Instant,
    last_due: Instant,
    /// Departure times of frames still being serialized (the queue).
    serializing: VecDeque<Instant>,
    held: VecDeque<Held>,
    pool: Vec<Box<[u8]>>,
    stats: Arc<Counters>,
}

impl Direction {
    fn new(
        rx: OwnedFd,
        ring: RxRing,
        tx: OwnedFd,
        spec: &LinkSpec,
        seed: u64,
        stats: Arc<Counters>,
    ) -> Direction {
        let now = Instant::now();
        Direction {
            rx,
            ring,
            tx,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ns_per_byte: spec.rate_bps.map(|r| 8e9 / r as f64),
            framing_bytes: spec.framing_bytes,
            delay: Duration::from_secs_f64(spec.delay_s),
            jitter_ns: (spec.jitter_s * 1e9) as u64,
            loss: spec.loss,
            reorder: spec.reorder,
            queue_frames: spec.queue_frames as usize,
            link_free_at: now,
            last_due: now,
            serializing: VecDeque::new(),
            held: VecDeque::new(),
            pool: Vec::new(),
            stats,
        }
    }

    fn run(mut self, stop: &AtomicBool) -> Result<(), LabError> {
        // Wake within microseconds of a deadline, not the default 50 µs slack.
        // SAFETY: prctl with a plain integer argument.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
        while !stop.load(Ordering::Relaxed) {
            // Take every frame the kernel has put in the ring.
            let mut taken = 0;
            while taken < BATCH {
                let Some(f) = self.ring.peek() else { break };
                let len = f.data.len();
                let stamp = f.stamp;
                let truncated = f.wire_len > len;
                self.stats
                    .ring_losses
                    .fetch_add(u64::from(f.losing), Ordering::Relaxed);
                let mut buf = self
                    .pool
                    .pop()
                    .unwrap_or_else(|| vec![0u8; MAX_FRAME].into_boxed_slice());
                buf[..len].copy_from_slice(f.data);
                self.ring.release();
                taken += 1;
                if truncated {
                    self.stats.frames_in.fetch_add(1, Ordering::Relaxed);
                    self.stats.queue_drops.fetch_add(1, Ordering::Relaxed);
                    self.pool.push(buf);
                    continue;
                }
                self.admit(buf, len, arrival(Some(stamp)));
            }
            self.transmit_due()?;
            self.wait();
        }
        Ok(())
    }

    /// Applies loss, queue limit, rate and delay to an arriving frame.
    fn admit(&mut self, buf: Box<[u8]>, len: usize, now: Instant) {
        self.stats.frames_in.fetch_add(1, Ordering::Relaxed);
        if self.loss > 0.0 && self.rng.random::<f64>() < self.loss {
            self.stats.lost.fetch_add(1, Ordering::Relaxed);
            self.pool.push(buf);
            return;
        }
        while self.serializing.front().is_some_and(|&d| d <= now) {
            self.serializing.pop_front();
        }
        let depart = match self.ns_per_byte {
            Some(ns) => {
                if self.serializing.len() >= self.queue_frames {
                    self.stats.queue_drops.fetch_add(1, Ordering::Relaxed);
                    self.pool.push(buf);
                    return;
                }
                let start = self.link_free_at.max(now);
                let wire = crate::link::wire_bytes(self.framing_bytes, len as u64);
                self.link_free_at = start + Duration::from_nanos((wire as f64 * ns) as u64);
                self.serializing.push_back(self.link_free_at);
                self.link_free_at
            }
            None => now,
        };
        // A reordered frame skips the delay line and overtakes those in it.
        let skip = self.reorder > 0.0 && self.rng.random::<f64>() < self.reorder;
        let due = if skip {
            self.stats.reordered.fetch_add(1, Ordering::Relaxed);
            depart
        } else {
            let jitter = if self.jitter_ns > 0 {
                Duration::from_nanos(self.rng.random_range(0..=2 * self.jitter_ns))
            } else {
                Duration::ZERO
            };
            // delay ± jitter, kept in order like a real line.
            let d = (depart + self.delay + jitter)
                .checked_sub(Duration::from_nanos(self.jitter_ns))
                .unwrap_or(depart)
                .max(self.last_due);
            self.last_due = d;
            d
        };
        let held = Held { due, len, buf };
        let pos = self
            .held
            .iter()
            .rposition(|h| h.due <= due)
            .map_or(0, |p| p + 1);
        self.held.insert(pos, held);
    }

    /// Sends every frame whose time has come, up to `BATCH` per system call.
    fn transmit_due(&mut self) -> Result<(), LabError> {
        loop {
            let now = Instant::now();
            let n = self
                .held
                .iter()
                .take(BATCH)
                .take_while(|h| h.due <= now)
                .count();
            if n == 0 {
                return Ok(());
            }
            let mut iovs: Vec<libc::iovec> = self
                .held
                .iter()
                .take(n)
                .map(|h| libc::iovec {
                    iov_base: h.buf.as_ptr() as *mut libc::c_void,
                    iov_len: h.len,
                })
                .collect();
            // SAFETY: mmsghdr is plain data; each points at one iovec above.
            let mut msgs: Vec<libc::mmsghdr> = iovs
                .iter_mut()
                .map(|iov| {
                    let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                    m.msg_hdr.msg_iov = iov;
                    m.msg_hdr.msg_iovlen = 1;
                    m
                })
                .collect();
            // SAFETY: msgs holds n valid headers whose buffers outlive the call.
            let sent = unsafe {
                libc::sendmmsg(self.tx.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, 0)
            };
            let done = if sent < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // A full device queue or a vanished peer: the frame is lost, as on a wire.
                    Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::ENXIO)
                    | Some(libc::ENETDOWN) => {
                        self.stats.queue_drops.fetch_add(1, Ordering::Relaxed);
                        1
                    }
                    _ => return Err(LabError::io("emulator transmit", e)),
                }
            } else {
                for h in self.held.iter().take(sent as usize) {
                    self.stats.frames_out.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .bytes_out
                        .fetch_add(h.len as u64, Ordering::Relaxed);
                }
                (sent as usize).max(1)
            };
            for _ in 0..done {
                let h = self.held.pop_front().expect("sent frames are held");
                self.pool.push(h.buf);
            }
        }
    }

    /// Sleeps until a frame arrives or the next departure is due (at most
    /// 50 ms); the last stretch before a departure is spun, since waking
    /// from a timer takes tens of microseconds on a busy or virtual host.
    fn wait(&self) {
        let limit = Duration::from_millis(50);
        let due = self.held.front().map(|h| h.due);
        let timeout = match due {
            Some(d) => d.saturating_duration_since(Instant::now()).min(limit),
            None => limit,
        };
        if timeout.is_zero() {
            return;
        }
        if timeout > SPIN {
            let sleep = timeout - SPIN;
            let ts = libc::timespec {
                tv_sec: sleep.as_secs() as libc::time_t,
                tv_nsec: sleep.subsec_nanos() as libc::c_long,
            };
            let mut pfd = libc::pollfd {
                fd: self.rx.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd and a valid timespec.
            let ready = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
            if ready != 0 {
                return; // a frame arrived (or an error to surface on recv)
            }
        }
        if let Some(d) = due {
            while Instant::now() < d {
                std::hint::spin_loop();
            }
        }
    }
}

/// Converts a CLOCK_REALTIME receive stamp into a monotonic instant.
fn arrival(stamp: Option<libc::timespec>) -> Instant {
    let now = Instant::now();
    let Some(ts) = stamp else { return now };
    let mut real = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid clock id and out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut real) };
    let ns = |t: libc::timespec| t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128;
    let age = ns(real) - ns(ts);
    if (0..1_000_000_000).contains(&age) {
        now - Duration::from_nanos(age as u64)
    } else {
        now
    }
}
