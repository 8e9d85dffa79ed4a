//! One lock for every test that times a real transfer or loads the CPUs,
//! shared by all test binaries and threads: a file lock (`flock(2)`) on
//! `$TMPDIR/tcplab-test-timing.lock`. Two such tests never measure each
//! other, whether cargo runs them in one binary's threads or a runner
//! runs binaries at once.
//!
//! Hold it for the whole measurement, setup included (building a
//! namespace is work the other measurement would see). It is reentrant
//! on a thread: a test holding it may call a helper that takes it too
//! (a test-support namespace, a stack place). [`hold_for_this_test`]
//! holds it until the test's thread ends, for helpers that make what a
//! test then loads the CPUs with.

use std::cell::RefCell;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The lock file's path.
pub fn lock_path() -> PathBuf {
    std::env::temp_dir().join("tcplab-test-timing.lock")
}

/// What this thread holds: the locked file while any guard (or the
/// test-long hold) is alive.
#[derive(Default)]
struct Held {
    file: Option<File>,
    guards: usize,
    for_test: bool,
}

thread_local! {
    /// Dropped when the thread ends, which closes the file and so releases
    /// a test-long hold.
    static HELD: RefCell<Held> = RefCell::new(Held::default());
}

/// After this long waiting, the waiter says who holds the lock.
const WAIT_REPORT: Duration = Duration::from_secs(60);
/// After this long waiting, the test fails naming the holder: a holder
/// that hung (or another session's endless run) must not hang CI.
const WAIT_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Opens and locks the file, waiting for another holder; then writes
/// this holder (pid and test) into it for a waiter to name.
fn lock_file() -> File {
    let path = lock_path();
    // Read-only suffices for flock: a file another user created (root's,
    // 0644) still locks, though this holder cannot write its name.
    let (file, writable) = match OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
    {
        Ok(f) => (f, true),
        Err(_) => (
            File::open(&path)
                .unwrap_or_else(|e| panic!("opening the timing lock {}: {e}", path.display())),
            false,
        ),
    };
    let t0 = Instant::now();
    let mut reported = false;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => {
                panic!("taking the timing lock {}: {e}", path.display())
            }
        }
        let waited = t0.elapsed();
        if waited >= WAIT_LIMIT {
            panic!(
                "waited {waited:?} for the timing lock {}, held by {}",
                path.display(),
                holder(&path)
            );
        }
        if waited >= WAIT_REPORT && !reported {
            reported = true;
            let line = format!(
                "{}: waiting {waited:?} for the timing lock, held by {}\n",
                crate::skip::current_test(),
                holder(&path)
            );
            // Past the harness's capture: a long wait is worth seeing.
            let _ = std::io::stderr().write_all(line.as_bytes());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if writable {
        let me = format!(
            "pid {} ({})\n",
            std::process::id(),
            crate::skip::current_test()
        );
        let _ = file
            .set_len(0)
            .and_then(|()| file.write_all_at(me.as_bytes(), 0));
    }
    file
}

/// Who the lock file says holds it.
fn holder(path: &std::path::Path) -> String {
    match std::fs::read_to_string(path) {
        Ok(s) if !s.trim().is_empty() => s.trim().to_string(),
        _ => "an unnamed holder".into(),
    }
}

/// Takes one hold on this thread, locking the file on the first.
fn acquire(h: &mut Held) {
    if h.file.is_none() {
        h.file = Some(lock_file());
    }
}

/// Releases the file when nothing on this thread holds it any more.
fn release_if_unheld(h: &mut Held) {
    if h.guards == 0 && !h.for_test {
        h.file = None;
    }
}

/// A hold on the lock; released when the last hold on this thread goes.
#[derive(Debug)]
pub struct TimingLock {
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Waits for, and takes, the timing lock (reentrant on this thread).
pub fn timing_lock() -> TimingLock {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        acquire(&mut h);
        h.guards += 1;
    });
    TimingLock {
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for TimingLock {
    fn drop(&mut self) {
        // During the thread's own teardown the holder is already gone,
        // and its file closed with it.
        let _ = HELD.try_with(|h| {
            let mut h = h.borrow_mut();
            h.guards -= 1;
            release_if_unheld(&mut h);
        });
    }
}

/// Takes the timing lock until the calling thread (a test's) ends.
pub fn hold_for_this_test() {
    HELD.with(|h| {
        let mut h = h.borrow_mut();
        acquire(&mut h);
        h.for_test = true;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Whether another process could take the lock now (flock(1), no wait).
    fn free_to_others() -> bool {
        std::process::Command::new("flock")
            .args(["-n", lock_path().to_str().unwrap(), "true"])
            .status()
            .unwrap()
            .success()
    }

    /// A second taker waits while the first holds it, in this process and
    /// in another; a nested take on the holding thread does not wait, and
    /// the lock goes only with the last hold.
    #[test]
    fn a_second_taker_waits_and_the_holder_may_take_it_again() {
        let held = timing_lock();
        // The file names its holder for a waiter to report.
        assert!(
            holder(&lock_path()).starts_with(&format!("pid {} (", std::process::id())),
            "{}",
            holder(&lock_path())
        );
        let nested = timing_lock();
        let got = Arc::new(AtomicBool::new(false));
        let g = got.clone();
        let t = std::thread::spawn(move || {
            let _l = timing_lock();
            g.store(true, Ordering::SeqCst);
        });
        assert!(!free_to_others(), "another process took the held lock");
        drop(nested);
        assert!(!free_to_others(), "released with an outer hold left");
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !got.load(Ordering::SeqCst),
            "another thread took the held lock"
        );
        drop(held);
        t.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
    }

    /// A test-long hold lasts past every guard and ends with the thread.
    #[test]
    fn a_hold_for_the_test_ends_with_its_thread() {
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            hold_for_this_test();
            drop(timing_lock());
            tx.send(free_to_others()).unwrap();
        });
        assert!(!rx.recv().unwrap(), "the test-long hold was released early");
        t.join().unwrap();
        // Once the thread has ended, this thread can take it.
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _l = timing_lock();
            tx.send(()).unwrap();
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the lock outlived the thread that held it for its test");
        waiter.join().unwrap();
    }
}
