//! tcplab's link emulator, for kernels without netem: an Ethernet bridge
//! between two interfaces of the middle namespace, built on AF_PACKET
//! sockets. Each direction has its own thread that receives frames, drops
//! them with the link's loss probability or when the queue is full,
//! serializes them at the link rate, holds them for the delay (± jitter),
//! and transmits them when due. Timing uses absolute deadlines on the
//! monotonic clock, so oversleeping never changes the mean rate or delay.

use crate::error::LabError;
use crate::link::LinkSpec;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const MAX_FRAME: usize = 65_536 + 64;
const ETH_P_ALL: u16 = 0x0003;

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
}

/// A running emulator; stops when dropped.
pub struct Emulator {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<Result<DirectionStats, LabError>>>,
}

fn packet_socket(ifname: &str, rx: bool) -> Result<OwnedFd, LabError> {
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
        set(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 8 << 20);
    } else {
        set(libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1);
        set(libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, 8 << 20);
    }
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
    Ok(sock)
}

impl Emulator {
    /// Starts bridging `x` ⇄ `y` (interfaces of the calling thread's
    /// namespace) with `spec` applied in both directions.
    pub fn start(x: &str, y: &str, spec: &LinkSpec, seed: u64) -> Result<Emulator, LabError> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for (i, (from, to)) in [(x, y), (y, x)].into_iter().enumerate() {
            let rx = packet_socket(from, true)?;
            let tx = packet_socket(to, false)?;
            let spec = spec.clone();
            let stop = stop.clone();
            let name = format!("tcplab-emu-{i}");
            let h = std::thread::Builder::new()
                .name(name)
                .spawn(move || {
                    Direction::new(rx, tx, &spec, seed.wrapping_add(i as u64)).run(&stop)
                })
                .map_err(|e| LabError::io("spawning emulator thread", e))?;
            threads.push(h);
        }
        Ok(Emulator { stop, threads })
    }

    /// Stops both directions and returns their counters (x→y, y→x).
    pub fn stop(mut self) -> Result<Vec<DirectionStats>, LabError> {
        self.halt()
    }

    fn halt(&mut self) -> Result<Vec<DirectionStats>, LabError> {
        self.stop.store(true, Ordering::Relaxed);
        let mut out = Vec::new();
        for t in self.threads.drain(..) {
            out.push(
                t.join()
                    .map_err(|_| LabError::Unsupported("emulator thread panicked".into()))??,
            );
        }
        Ok(out)
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
    tx: OwnedFd,
    rng: ChaCha8Rng,
    ns_per_byte: Option<f64>,
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
    stats: DirectionStats,
}

impl Direction {
    fn new(rx: OwnedFd, tx: OwnedFd, spec: &LinkSpec, seed: u64) -> Direction {
        let now = Instant::now();
        Direction {
            rx,
            tx,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ns_per_byte: spec.rate_bps.map(|r| 8e9 / r as f64),
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
            stats: DirectionStats::default(),
        }
    }

    fn run(mut self, stop: &AtomicBool) -> Result<DirectionStats, LabError> {
        // Wake within microseconds of a deadline, not the default 50 µs slack.
        // SAFETY: prctl with a plain integer argument.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
        let mut spare: Box<[u8]> = vec![0u8; MAX_FRAME].into_boxed_slice();
        while !stop.load(Ordering::Relaxed) {
            // Receive whatever is waiting.
            loop {
                // SAFETY: spare is writable for MAX_FRAME bytes.
                let n = unsafe {
                    libc::recv(
                        self.rx.as_raw_fd(),
                        spare.as_mut_ptr().cast(),
                        MAX_FRAME,
                        libc::MSG_DONTWAIT,
                    )
                };
                if n < 0 {
                    let e = std::io::Error::last_os_error();
                    match e.raw_os_error() {
                        Some(libc::EAGAIN) => break,
                        Some(libc::EINTR) => continue,
                        _ => return Err(LabError::io("emulator receive", e)),
                    }
                }
                let next = self
                    .pool
                    .pop()
                    .unwrap_or_else(|| vec![0u8; MAX_FRAME].into_boxed_slice());
                let frame = std::mem::replace(&mut spare, next);
                self.admit(frame, n as usize);
            }
            self.transmit_due()?;
            self.wait();
        }
        Ok(self.stats)
    }

    /// Applies loss, queue limit, rate and delay to an arriving frame.
    fn admit(&mut self, buf: Box<[u8]>, len: usize) {
        self.stats.frames_in += 1;
        let now = Instant::now();
        if self.loss > 0.0 && self.rng.random::<f64>() < self.loss {
            self.stats.lost += 1;
            self.pool.push(buf);
            return;
        }
        while self.serializing.front().is_some_and(|&d| d <= now) {
            self.serializing.pop_front();
        }
        let depart = match self.ns_per_byte {
            Some(ns) => {
                if self.serializing.len() >= self.queue_frames {
                    self.stats.queue_drops += 1;
                    self.pool.push(buf);
                    return;
                }
                let start = self.link_free_at.max(now);
                self.link_free_at = start + Duration::from_nanos((len as f64 * ns) as u64);
                self.serializing.push_back(self.link_free_at);
                self.link_free_at
            }
            None => now,
        };
        // A reordered frame skips the delay line and overtakes those in it.
        let skip = self.reorder > 0.0 && self.rng.random::<f64>() < self.reorder;
        let due = if skip {
            self.stats.reordered += 1;
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

    /// Sends every frame whose time has come.
    fn transmit_due(&mut self) -> Result<(), LabError> {
        let now = Instant::now();
        while self.held.front().is_some_and(|h| h.due <= now) {
            let h = self.held.pop_front().expect("front exists");
            loop {
                // SAFETY: h.buf holds h.len valid bytes.
                let rc =
                    unsafe { libc::send(self.tx.as_raw_fd(), h.buf.as_ptr().cast(), h.len, 0) };
                if rc >= 0 {
                    self.stats.frames_out += 1;
                    self.stats.bytes_out += h.len as u64;
                    break;
                }
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    // A full device queue or a vanished peer: the frame is lost, as on a wire.
                    Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::ENXIO)
                    | Some(libc::ENETDOWN) => {
                        self.stats.queue_drops += 1;
                        break;
                    }
                    _ => return Err(LabError::io("emulator transmit", e)),
                }
            }
            self.pool.push(h.buf);
        }
        Ok(())
    }

    /// Sleeps until a frame arrives or the next departure is due (at most 50 ms).
    fn wait(&self) {
        let limit = Duration::from_millis(50);
        let timeout = match self.held.front() {
            Some(h) => h.due.saturating_duration_since(Instant::now()).min(limit),
            None => limit,
        };
        if timeout.is_zero() {
            return;
        }
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        let mut pfd = libc::pollfd {
            fd: self.rx.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd and a valid timespec.
        unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    }
}
