//! Cancelling a trial from outside its blocking threads: the canceller knows
//! every data socket of the trial and shuts them all down at once, which
//! wakes any thread blocked in read, write, accept or recv. The data path
//! itself never polls for cancellation.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Debug, Default)]
struct Inner {
    cancelled: AtomicBool,
    sockets: Mutex<Vec<RawFd>>,
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
        let mut socks = self.inner.sockets.lock().expect("canceller lock");
        if let Some(i) = socks.iter().position(|&f| f == self.fd) {
            socks.swap_remove(i);
        }
    }
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
        Registration {
            inner: self.inner.clone(),
            fd,
        }
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

/// A flag a timer thread raises when a duration-bound trial must stop; the
/// sender checks it with one relaxed load per write.
#[derive(Debug, Clone, Default)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    /// A lowered flag.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// Raises the flag.
    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// True once raised.
    #[inline]
    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Raises the flag after `d`, from a detached timer thread.
    pub fn raise_after(&self, d: std::time::Duration) {
        let me = self.clone();
        std::thread::spawn(move || {
            std::thread::sleep(d);
            me.raise();
        });
    }
}
