//! Watching a control connection and a trial's deadline while endpoint
//! threads run, without reading from the control stream.

use crate::cancel::Canceller;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// What `poll_control` saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlEvent {
    /// A message is waiting.
    Readable,
    /// The peer closed or reset the connection.
    Hangup,
    /// Nothing within the timeout.
    Quiet,
}

/// Polls the control socket for up to `timeout`.
pub fn poll_control(fd: BorrowedFd<'_>, timeout: Duration) -> ControlEvent {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut pfd, 1, timeout.as_millis() as i32) };
    if rc <= 0 {
        return ControlEvent::Quiet;
    }
    if pfd.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0 {
        ControlEvent::Hangup
    } else {
        ControlEvent::Readable
    }
}

/// Cancels a trial when its deadline passes or an interrupt flag rises;
/// disarmed and joined when dropped.
pub struct Watchdog {
    done: Option<mpsc::Sender<()>>,
    fired: std::sync::Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Arms a watchdog over `cancel`. `deadline` of None waits only for the interrupt.
    pub fn arm(
        cancel: Canceller,
        deadline: Option<Duration>,
        interrupt: Option<std::sync::Arc<AtomicBool>>,
    ) -> Watchdog {
        let (tx, rx) = mpsc::channel::<()>();
        let fired = std::sync::Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        let started = std::time::Instant::now();
        let thread = std::thread::spawn(move || loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            let interrupted = interrupt
                .as_ref()
                .is_some_and(|i| i.load(Ordering::Relaxed));
            let late = deadline.is_some_and(|d| started.elapsed() >= d);
            if interrupted || late {
                f.store(late && !interrupted, Ordering::SeqCst);
                cancel.cancel();
                return;
            }
        });
        Watchdog {
            done: Some(tx),
            fired,
            thread: Some(thread),
        }
    }

    /// True if the deadline (not an interrupt) cancelled the trial.
    pub fn timed_out(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
        // It wakes on the message at once: joined, not left behind.
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
