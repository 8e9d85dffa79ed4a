//! The device driver on a thread of its own, joined to the protocol thread
//! by two frame queues (issue 19's layers switch; Guerrero & Frieder 1992,
//! Figs 3–4, where the network interface module, IP and TCP ran as
//! separate processes talking through IPC until they were merged).
//!
//! [`DriverThread`] wraps a device that has a file descriptor (a TUN or
//! TAP). Its thread does the device's system calls: it reads frames into
//! the inbound queue while there is room, and writes the frames the
//! stack queued outbound. The stack's side is itself a [`Device`]: its
//! `receive` takes from the inbound queue, `transmit` puts on the outbound
//! one, and `wait` blocks on the inbound queue. Each frame is copied once
//! more than on the device itself (the IPC's copy) and crosses a thread
//! boundary twice per round trip: the costs the paper merged away.
//!
//! The driver thread sleeps in `poll(2)` on the device's fd and an
//! eventfd; the stack writes the eventfd only when the driver said it was
//! about to sleep, so a busy transfer costs no wake-up system call per
//! frame. [`QueueStats`] counts what crossed, the deepest each queue got,
//! and the frames dropped because the inbound queue was full.

use super::{Capabilities, Device, PhyError};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use std::os::fd::AsFd;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Frames each queue holds (a NIC ring's worth; Linux's TUN holds 500
/// more behind the inbound one).
pub const QUEUE_FRAMES: usize = 1024;

/// What crossed the queues between the driver thread and the stack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Frames the driver read and queued for the stack.
    pub inbound_frames: u64,
    /// Frames the stack queued and the driver wrote.
    pub outbound_frames: u64,
    /// The inbound queue's greatest length.
    pub inbound_max_depth: u64,
    /// The outbound queue's greatest length.
    pub outbound_max_depth: u64,
    /// Times the driver thread woke from `poll(2)`.
    pub driver_wakeups: u64,
    /// Times the stack's `transmit` found the outbound queue full and
    /// waited for the driver to make room.
    pub outbound_full: u64,
}

/// A thread's CPU time, user and system apart.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadCpu {
    /// In user space.
    pub user: Duration,
    /// In the kernel (the device's system calls, mostly).
    pub system: Duration,
}

impl ThreadCpu {
    /// The calling thread's CPU time so far (`getrusage(RUSAGE_THREAD)`).
    pub fn of_this_thread() -> ThreadCpu {
        // SAFETY: getrusage writes a plain struct; RUSAGE_THREAD is valid
        // on Linux.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
            return ThreadCpu::default();
        }
        let d = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        ThreadCpu {
            user: d(ru.ru_utime),
            system: d(ru.ru_stime),
        }
    }
}

/// State both threads see.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    /// The driver is about to sleep (or sleeps): the stack must write the
    /// eventfd after queueing a frame.
    driver_sleeping: AtomicBool,
    /// The driver stopped reading because the inbound queue was full: the
    /// stack must write the eventfd after taking a frame.
    driver_wants_room: AtomicBool,
    inbound_depth: AtomicUsize,
    outbound_depth: AtomicUsize,
    inbound_frames: AtomicU64,
    outbound_frames: AtomicU64,
    inbound_max_depth: AtomicU64,
    outbound_max_depth: AtomicU64,
    driver_wakeups: AtomicU64,
    outbound_full: AtomicU64,
    driver_user_ns: AtomicU64,
    driver_sys_ns: AtomicU64,
}

impl Shared {
    /// The queue counters, each read by `read` (a load, or a swap that
    /// starts the count again).
    fn stats_by(&self, read: impl Fn(&AtomicU64) -> u64) -> QueueStats {
        QueueStats {
            inbound_frames: read(&self.inbound_frames),
            outbound_frames: read(&self.outbound_frames),
            inbound_max_depth: read(&self.inbound_max_depth),
            outbound_max_depth: read(&self.outbound_max_depth),
            driver_wakeups: read(&self.driver_wakeups),
            outbound_full: read(&self.outbound_full),
        }
    }
}

/// Raises `depth` by one and records it in `max`. A frame is counted just
/// before it is queued, so a refused one (queue full) briefly counts one
/// over: the record stops at the queue's length, all it can hold.
fn push_depth(depth: &AtomicUsize, max: &AtomicU64) {
    let now = depth.fetch_add(1, Ordering::AcqRel) + 1;
    max.fetch_max(now.min(QUEUE_FRAMES) as u64, Ordering::Relaxed);
}

/// The stack's side of a device whose driver runs on its own thread.
pub struct DriverThread {
    caps: Capabilities,
    shared: Arc<Shared>,
    wake: Arc<EventFd>,
    inbound: Receiver<Vec<u8>>,
    outbound: Option<SyncSender<Vec<u8>>>,
    /// Buffers the driver has written, back for reuse.
    written: Receiver<Vec<u8>>,
    /// Buffers the stack has read, back to the driver for reuse.
    recycle: mpsc::Sender<Vec<u8>>,
    /// A frame `wait` took off the queue, for the next `receive`.
    waiting: Option<Vec<u8>>,
    driver: Option<JoinHandle<Result<(), PhyError>>>,
}

impl std::fmt::Debug for DriverThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverThread")
            .field("caps", &self.caps)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl DriverThread {
    /// Moves `device` onto a new thread (`tcplab-driver`) that does its
    /// system calls, and returns the stack's side.
    pub fn spawn<D>(device: D) -> Result<DriverThread, PhyError>
    where
        D: Device + AsFd + Send + 'static,
    {
        let caps = device.capabilities();
        let wake = EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
            .map(Arc::new)
            .map_err(|e| PhyError::Setup {
                what: "eventfd for the driver thread".into(),
                source: e.into(),
            })?;
        let shared = Arc::new(Shared::default());
        let (in_tx, in_rx) = mpsc::sync_channel(QUEUE_FRAMES);
        let (out_tx, out_rx) = mpsc::sync_channel(QUEUE_FRAMES);
        let (written_tx, written_rx) = mpsc::channel();
        let (recycle_tx, recycle_rx) = mpsc::channel();
        let driver = Driver {
            device,
            shared: shared.clone(),
            wake: wake.clone(),
            inbound: in_tx,
            outbound: out_rx,
            written: written_tx,
            recycle: recycle_rx,
            max_frame: caps.max_frame,
        };
        let handle = std::thread::Builder::new()
            .name("tcplab-driver".into())
            .spawn(move || driver.run())
            .map_err(|e| PhyError::Setup {
                what: "spawning the driver thread".into(),
                source: e,
            })?;
        Ok(DriverThread {
            caps,
            shared,
            wake,
            inbound: in_rx,
            outbound: Some(out_tx),
            written: written_rx,
            recycle: recycle_tx,
            waiting: None,
            driver: Some(handle),
        })
    }

    /// What has crossed the queues so far.
    pub fn stats(&self) -> QueueStats {
        self.shared.stats_by(|a| a.load(Ordering::Relaxed))
    }

    /// What has crossed the queues since the last call (or the start),
    /// and counting starts again: a trial's own figures when the device
    /// outlives trials.
    pub fn take_stats(&self) -> QueueStats {
        self.shared.stats_by(|a| a.swap(0, Ordering::Relaxed))
    }

    /// The CPU time the driver thread has used, as of its last report
    /// (it reports before each sleep and every 256 rounds of work): its
    /// work is the end's too, and the stack thread's clock does not see it.
    pub fn driver_cpu(&self) -> ThreadCpu {
        ThreadCpu {
            user: Duration::from_nanos(self.shared.driver_user_ns.load(Ordering::Acquire)),
            system: Duration::from_nanos(self.shared.driver_sys_ns.load(Ordering::Acquire)),
        }
    }

    fn kick(&self) {
        // Best effort: a full eventfd counter already wakes the driver.
        let _ = self.wake.write(1);
    }

    /// The driver thread's error once it has ended (it ends only on an
    /// error or when this side is dropped).
    fn driver_error(&mut self) -> PhyError {
        match self.driver.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => e,
            _ => PhyError::Io {
                op: "read",
                source: std::io::Error::other("the driver thread ended"),
            },
        }
    }

    /// Takes the next inbound frame, if one is queued.
    fn next_frame(&mut self) -> Result<Option<Vec<u8>>, PhyError> {
        if let Some(f) = self.waiting.take() {
            return Ok(Some(f));
        }
        match self.inbound.try_recv() {
            Ok(f) => Ok(Some(f)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(self.driver_error()),
        }
    }
}

impl Device for DriverThread {
    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        let Some(frame) = self.next_frame()? else {
            return Ok(None);
        };
        let n = frame.len().min(buf.len());
        buf[..n].copy_from_slice(&frame[..n]);
        self.shared.inbound_depth.fetch_sub(1, Ordering::AcqRel);
        let _ = self.recycle.send(frame);
        fence(Ordering::SeqCst);
        if self.shared.driver_wants_room.swap(false, Ordering::SeqCst) {
            self.kick();
        }
        Ok(Some(n))
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        if frame.len() > self.caps.max_frame {
            return Err(PhyError::TooLong {
                len: frame.len(),
                max: self.caps.max_frame,
            });
        }
        let mut buf = self.written.try_recv().unwrap_or_default();
        buf.clear();
        buf.extend_from_slice(frame);
        let Some(outbound) = &self.outbound else {
            return Err(self.driver_error());
        };
        // Counted before it is queued: the driver may take it (and count
        // it off) before the send returns.
        push_depth(&self.shared.outbound_depth, &self.shared.outbound_max_depth);
        let sent = match outbound.try_send(buf) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(buf)) => {
                // Back-pressure, as the merged device's write(2) gives by
                // blocking in the kernel: wait for the driver to make
                // room (it is awake: the queue is not empty).
                self.shared.outbound_full.fetch_add(1, Ordering::Relaxed);
                if self.shared.driver_sleeping.swap(false, Ordering::SeqCst) {
                    self.kick();
                }
                outbound.send(buf).map_err(|_| ())
            }
            Err(TrySendError::Disconnected(_)) => Err(()),
        };
        if sent.is_err() {
            self.shared.outbound_depth.fetch_sub(1, Ordering::AcqRel);
            return Err(self.driver_error());
        }
        fence(Ordering::SeqCst);
        if self.shared.driver_sleeping.swap(false, Ordering::SeqCst) {
            self.kick();
        }
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        if self.waiting.is_some() {
            return Ok(true);
        }
        let got = match timeout {
            None => self
                .inbound
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected),
            Some(t) => self.inbound.recv_timeout(t),
        };
        match got {
            Ok(f) => {
                self.waiting = Some(f);
                Ok(true)
            }
            Err(RecvTimeoutError::Timeout) => Ok(false),
            Err(RecvTimeoutError::Disconnected) => Err(self.driver_error()),
        }
    }
}

impl Drop for DriverThread {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.outbound = None;
        self.kick();
        if let Some(h) = self.driver.take() {
            // The device (and its fd) is dropped on the driver thread:
            // joining here means a TUN device is gone when this returns.
            let _ = h.join();
        }
    }
}

/// The driver thread's half.
struct Driver<D> {
    device: D,
    shared: Arc<Shared>,
    wake: Arc<EventFd>,
    inbound: SyncSender<Vec<u8>>,
    outbound: Receiver<Vec<u8>>,
    written: mpsc::Sender<Vec<u8>>,
    recycle: Receiver<Vec<u8>>,
    max_frame: usize,
}

impl<D: Device + AsFd> Driver<D> {
    fn run(mut self) -> Result<(), PhyError> {
        let mut rounds = 0u32;
        while !self.shared.stop.load(Ordering::SeqCst) {
            let wrote = self.write_queued()?;
            let (read, full) = self.read_available()?;
            rounds = rounds.wrapping_add(1);
            if wrote || read {
                if rounds.is_multiple_of(256) {
                    self.report_cpu();
                }
                continue;
            }
            self.report_cpu();
            self.sleep(full)?;
        }
        Ok(())
    }

    /// Publishes this thread's CPU time for [`DriverThread::driver_cpu`].
    fn report_cpu(&self) {
        let cpu = ThreadCpu::of_this_thread();
        let ns = |d: Duration| d.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.shared
            .driver_user_ns
            .store(ns(cpu.user), Ordering::Release);
        self.shared
            .driver_sys_ns
            .store(ns(cpu.system), Ordering::Release);
    }

    /// Writes every queued outbound frame; whether there was one.
    fn write_queued(&mut self) -> Result<bool, PhyError> {
        let mut any = false;
        loop {
            let frame = match self.outbound.try_recv() {
                Ok(f) => f,
                Err(TryRecvError::Empty) => return Ok(any),
                // The stack's side is gone: stop.
                Err(TryRecvError::Disconnected) => {
                    self.shared.stop.store(true, Ordering::SeqCst);
                    return Ok(any);
                }
            };
            any = true;
            self.shared.outbound_depth.fetch_sub(1, Ordering::AcqRel);
            match self.device.transmit(&frame) {
                // A full device queue drops the frame, as a NIC's full
                // ring would; TCP recovers it.
                Ok(()) | Err(PhyError::Exhausted) => {}
                Err(e) => return Err(e),
            }
            self.shared.outbound_frames.fetch_add(1, Ordering::Relaxed);
            let _ = self.written.send(frame);
        }
    }

    /// Reads frames while the inbound queue has room. Returns whether one
    /// was read and whether the queue is full.
    fn read_available(&mut self) -> Result<(bool, bool), PhyError> {
        let mut any = false;
        loop {
            if self.shared.inbound_depth.load(Ordering::Acquire) >= QUEUE_FRAMES {
                return Ok((any, true));
            }
            let mut buf = self.recycle.try_recv().unwrap_or_default();
            buf.resize(self.max_frame, 0);
            let Some(n) = self.device.receive(&mut buf)? else {
                return Ok((any, false));
            };
            buf.truncate(n);
            any = true;
            push_depth(&self.shared.inbound_depth, &self.shared.inbound_max_depth);
            if self.inbound.send(buf).is_err() {
                self.shared.stop.store(true, Ordering::SeqCst);
                return Ok((any, false));
            }
            self.shared.inbound_frames.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sleeps until the device has a frame (unless the inbound queue is
    /// full), the stack queued one, or made room.
    fn sleep(&mut self, full: bool) -> Result<(), PhyError> {
        self.shared.driver_sleeping.store(true, Ordering::SeqCst);
        self.shared.driver_wants_room.store(full, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // Re-check after announcing the sleep: a frame queued (or room
        // made) before the announcement was seen would otherwise wait.
        let room_now = full && self.shared.inbound_depth.load(Ordering::SeqCst) < QUEUE_FRAMES;
        if self.shared.outbound_depth.load(Ordering::SeqCst) > 0
            || room_now
            || self.shared.stop.load(Ordering::SeqCst)
        {
            self.shared.driver_sleeping.store(false, Ordering::SeqCst);
            self.shared.driver_wants_room.store(false, Ordering::SeqCst);
            return Ok(());
        }
        let wake_fd = self.wake.as_fd();
        let device_fd = self.device.as_fd();
        let mut fds = vec![PollFd::new(wake_fd, PollFlags::POLLIN)];
        if !full {
            fds.push(PollFd::new(device_fd, PollFlags::POLLIN));
        }
        loop {
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => {
                    return Err(PhyError::Io {
                        op: "poll",
                        source: e.into(),
                    })
                }
            }
        }
        self.shared.driver_wakeups.fetch_add(1, Ordering::Relaxed);
        self.shared.driver_sleeping.store(false, Ordering::SeqCst);
        self.shared.driver_wants_room.store(false, Ordering::SeqCst);
        // Reset the eventfd's counter (EAGAIN when it was the device).
        let _ = self.wake.read();
        Ok(())
    }
}
