//! Cancelling a trial from outside its blocking threads: the canceller knows
//! every data socket of the trial and shuts them all down at once, which
//! wakes any thread blocked in read, write, accept or recv. The data path
//! itself never polls for cancellation.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    sockets: Mutex<Vec<RawFd>>,
    /// Every thread that registered a socket (the trial's threads), by
    /// kernel thread id, so the server can read their CPU time.
    threads: Mutex<Vec<libc::pid_t>>,
    /// Byte counters of the trial's datagram flows.
    flows: Mutex<Vec<Arc<AtomicU64>>>,
    /// Whether a TCP socket's last byte counts are kept when it is
    /// unregistered ([`Canceller::metered`]).
    metered: AtomicBool,
    /// (descriptor, bytes received + acked + still queued to send) of each
    /// TCP socket unregistered since the last look ([`Canceller::each_socket_and_closed`]);
    /// guarded by `sockets`' lock too, so a socket is in one list or the
    /// other at every look.
    closed: Mutex<Vec<(RawFd, u64)>>,
    /// Each trial thread's CPU time (ns) when it last unregistered a
    /// socket: what it used before it ended, once /proc no longer has it.
    cpu_at_unregister: Mutex<Vec<(libc::pid_t, u64)>>,
}

/// A shared handle that cancels one trial's sockets.
///
/// Sockets are held by descriptor number only, so registering never keeps a
/// socket open; the [`Registration`] must be dropped before the socket is
/// closed, which declaring it after the socket guarantees.
#[derive(Debug, Clone, Default)]
pub struct Canceller {
    inner: Arc<Inner>,
}

/// Keeps a socket registered with a [`Canceller`] until dropped.
#[must_use = "the socket is unregistered when this is dropped"]
#[derive(Debug)]
pub struct Registration {
    inner: Arc<Inner>,
    fd: RawFd,
}

impl Drop for Registration {
    fn drop(&mut self) {
        // The thread's CPU so far: a watch that looks after the thread
        // ended still counts what it used since the last look.
        record_own_cpu(&self.inner);
        // The socket is still open (the registration is declared after it):
        // its last counts, for a watch that looks only now and then. It
        // leaves the open list and joins the closed one under one lock.
        let mut socks = self.inner.sockets.lock().expect("canceller lock");
        if self.inner.metered.load(Ordering::Relaxed) {
            // SAFETY: the socket outlives its registration.
            let b = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fd) };
            if let Ok(i) = crate::tcpinfo::TcpInfo::read(b) {
                // What is still queued to send goes after the close too.
                let v = i.bytes_received.unwrap_or(0)
                    + i.bytes_acked.unwrap_or(0)
                    + unsent_bytes(self.fd);
                let mut closed = self.inner.closed.lock().expect("canceller lock");
                closed.push((self.fd, v));
            }
        }
        if let Some(i) = socks.iter().position(|&f| f == self.fd) {
            socks.swap_remove(i);
        }
    }
}

/// Bytes written to TCP socket `fd` and not yet acknowledged (SIOCOUTQ).
fn unsent_bytes(fd: RawFd) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: fd is open (its registration is still alive) and n is a
    // valid int for the ioctl to write.
    let r = unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) };
    if r == 0 {
        n.max(0) as u64
    } else {
        0
    }
}

/// A thread counted with a trial's ([`Canceller::count_thread`]).
#[must_use = "the thread's CPU is kept when this drops"]
#[derive(Debug)]
pub struct CountedThread {
    inner: Arc<Inner>,
}

impl Drop for CountedThread {
    fn drop(&mut self) {
        record_own_cpu(&self.inner);
    }
}

/// Counts the calling thread among the trial's (once).
fn add_own_thread(inner: &Inner) {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    let mut threads = inner.threads.lock().expect("canceller lock");
    if !threads.contains(&tid) {
        threads.push(tid);
    }
}

/// Keeps the calling thread's CPU so far, for a watch that looks after it
/// ended.
fn record_own_cpu(inner: &Inner) {
    if let Some(ns) = own_cpu_ns() {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        let mut cpu = inner.cpu_at_unregister.lock().expect("canceller lock");
        match cpu.iter_mut().find(|(t, _)| *t == tid) {
            Some(e) => e.1 = e.1.max(ns),
            None => cpu.push((tid, ns)),
        }
    }
}

/// The calling thread's CPU time, in ns.
fn own_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to write.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

impl Canceller {
    /// A fresh, uncancelled handle.
    pub fn new() -> Canceller {
        Canceller::default()
    }

    /// Registers a socket so `cancel` can shut it down. If the trial is
    /// already cancelled, the socket is shut down at once.
    pub fn register(&self, sock: &impl AsRawFd) -> Registration {
        let fd = sock.as_raw_fd();
        let mut socks = self.inner.sockets.lock().expect("canceller lock");
        if self.is_cancelled() {
            shutdown(fd);
        }
        socks.push(fd);
        drop(socks);
        add_own_thread(&self.inner);
        Registration {
            inner: self.inner.clone(),
            fd,
        }
    }

    /// A handle whose TCP sockets leave their last byte counts behind when
    /// unregistered, for [`Self::each_socket_and_closed`]: a connection that opens
    /// and closes between two looks of a watch (an http page load, a crr
    /// transaction) still counts.
    pub fn metered() -> Canceller {
        let c = Canceller::default();
        c.inner.metered.store(true, Ordering::Relaxed);
        c
    }

    /// In one look, `f` with the (descriptor, bytes received + acked) of
    /// each TCP socket unregistered since the last look, in the order they
    /// went, and the sockets still registered (open while `f` runs). No
    /// socket is in both or in neither.
    pub fn each_socket_and_closed(&self, f: impl FnOnce(Vec<(RawFd, u64)>, &[RawFd])) {
        let socks = self.inner.sockets.lock().expect("canceller lock");
        let gone = std::mem::take(&mut *self.inner.closed.lock().expect("canceller lock"));
        f(gone, &socks);
    }

    /// The kernel ids of the threads that registered a socket.
    pub fn threads(&self) -> Vec<libc::pid_t> {
        self.inner.threads.lock().expect("canceller lock").clone()
    }

    /// Counts the calling thread as one of the trial's (its CPU is read
    /// with theirs) until the guard drops, when its CPU so far is kept: for
    /// threads without sockets, as `--load`'s workers.
    pub fn count_thread(&self) -> CountedThread {
        add_own_thread(&self.inner);
        CountedThread {
            inner: self.inner.clone(),
        }
    }

    /// Thread `tid`'s CPU time (ns) when it last unregistered a socket.
    pub fn cpu_at_unregister(&self, tid: libc::pid_t) -> Option<u64> {
        let cpu = self.inner.cpu_at_unregister.lock().expect("canceller lock");
        cpu.iter().find(|(t, _)| *t == tid).map(|&(_, ns)| ns)
    }

    /// A new byte counter for one flow of the trial, summed by [`Self::flow_bytes`].
    pub fn flow_counter(&self) -> Arc<AtomicU64> {
        let c = Arc::new(AtomicU64::new(0));
        self.inner
            .flows
            .lock()
            .expect("canceller lock")
            .push(c.clone());
        c
    }

    /// The bytes every flow counter holds.
    pub fn flow_bytes(&self) -> u64 {
        let flows = self.inner.flows.lock().expect("canceller lock");
        flows.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Shuts down every registered socket; later registrations are shut down too.
    pub fn cancel(&self) {
        let socks = self.inner.sockets.lock().expect("canceller lock");
        self.inner.cancelled.store(true, Ordering::SeqCst);
        for &fd in socks.iter() {
            shutdown(fd);
        }
    }

    /// True once `cancel` was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Relaxed)
    }
}

fn shutdown(fd: RawFd) {
    // SAFETY: fd is registered, so its owner has not closed it yet.
    unsafe { libc::shutdown(fd, libc::SHUT_RDWR) };
}

/// A flag a timer raises when a duration-bound trial must stop; the sender
/// checks it with a relaxed load per write. A flag tied to a trial's
/// [`Canceller`] also reads raised once the trial is cancelled, so pacing
/// sleeps and receive-work burns end with the trial.
#[derive(Debug, Clone, Default)]
pub struct StopFlag {
    raised: Arc<AtomicBool>,
    trial: Option<Canceller>,
}

impl StopFlag {
    /// A lowered flag.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// A lowered flag that also reads raised once `cancel` is cancelled.
    pub fn tied_to(cancel: &Canceller) -> StopFlag {
        StopFlag {
            raised: Arc::default(),
            trial: Some(cancel.clone()),
        }
    }

    /// Raises the flag.
    pub fn raise(&self) {
        self.raised.store(true, Ordering::Relaxed);
    }

    /// True once raised, or once the trial it is tied to was cancelled.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Relaxed) || self.is_cancelled()
    }

    /// True once the trial this flag is tied to was cancelled.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.trial.as_ref().is_some_and(Canceller::is_cancelled)
    }

    /// Sleeps for `d` in slices of at most [`SLICE`], returning early (false)
    /// once the flag is raised or its trial cancelled; true if it slept it all.
    pub fn sleep(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.is_raised() {
                return false;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(SLICE));
        }
    }
}

/// The longest a cancellable sleep goes without looking at its flag.
pub const SLICE: Duration = Duration::from_millis(50);

/// Raises a [`StopFlag`] after a delay, from one timer thread per trial that
/// is woken and joined when the timer is dropped: a trial that ends early
/// (or is abandoned) leaves no sleeping thread behind.
#[derive(Debug)]
#[must_use = "dropping the timer stops it"]
pub struct StopTimer {
    wake: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl StopTimer {
    /// Starts a timer that raises `flag` after `d`; fails only if no thread
    /// can be started (a pid or thread limit).
    pub fn start(flag: &StopFlag, d: Duration) -> std::io::Result<StopTimer> {
        let wake = Arc::new((Mutex::new(false), Condvar::new()));
        let (w, flag) = (wake.clone(), flag.clone());
        let thread = std::thread::Builder::new()
            .name("tcplab-timer".into())
            .spawn(move || {
                let (lock, cv) = &*w;
                let ended = lock.lock().unwrap_or_else(|e| e.into_inner());
                let (ended, _) = cv
                    .wait_timeout_while(ended, d, |ended| !*ended)
                    .unwrap_or_else(|e| e.into_inner());
                if !*ended {
                    flag.raise();
                }
            })?;
        Ok(StopTimer {
            wake,
            thread: Some(thread),
        })
    }
}

impl Drop for StopTimer {
    fn drop(&mut self) {
        let (lock, cv) = &*self.wake;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_timer_is_joined_at_once_and_never_fires() {
        // Burns CPU or bounds wall time: one such test at a time.
        let _timing = testkit::timing_lock();
        let flag = StopFlag::new();
        let t0 = Instant::now();
        drop(StopTimer::start(&flag, Duration::from_secs(3600)).unwrap());
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        assert!(!flag.is_raised());
        let timer = StopTimer::start(&flag, Duration::from_millis(20)).unwrap();
        assert!(
            !flag.sleep(Duration::from_secs(10)),
            "the timer did not fire"
        );
        drop(timer);
    }

    #[test]
    fn cancelling_the_trial_ends_a_sleep() {
        // Burns CPU or bounds wall time: one such test at a time.
        let _timing = testkit::timing_lock();
        let cancel = Canceller::new();
        let flag = StopFlag::tied_to(&cancel);
        let c = cancel.clone();
        let t0 = Instant::now();
        let h = std::thread::spawn(move || flag.sleep(Duration::from_secs(3600)));
        std::thread::sleep(Duration::from_millis(30));
        c.cancel();
        assert!(!h.join().unwrap());
        assert!(t0.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_closing_socket_counts_what_it_still_has_to_send() {
        // A peer that never reads: what the server wrote stays queued,
        // unacknowledged, when its socket closes.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let peer = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_nonblocking(true).unwrap();
        let c = Canceller::metered();
        let reg = c.register(&s);
        let chunk = vec![0u8; 1 << 16];
        let mut written = 0u64;
        while let Ok(n) = std::io::Write::write(&mut s, &chunk) {
            written += n as u64;
        }
        let queued = unsent_bytes(s.as_raw_fd());
        assert!(queued > 0 && queued <= written, "{queued} of {written}");
        drop(reg);
        let mut closed = Vec::new();
        c.each_socket_and_closed(|gone, open| {
            assert!(open.is_empty());
            closed = gone;
        });
        assert_eq!(closed.len(), 1);
        // Acked (what the peer's buffer took) and queued: all it wrote.
        assert!(
            closed[0].1 >= written - (64 << 10),
            "{} of {written}",
            closed[0].1
        );
        drop(peer);
    }
}
