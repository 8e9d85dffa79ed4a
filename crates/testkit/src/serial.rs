//! One lock for every test that times a real transfer, shared by all test
//! binaries and threads: a file lock (`flock(2)`) on
//! `$TMPDIR/tcplab-test-timing.lock`. Two such tests never measure each
//! other, whether cargo runs them in one binary's threads or a runner
//! runs binaries at once.
//!
//! Hold it for the whole measurement, setup included (building a
//! namespace is work the other measurement would see).

use std::fs::{File, OpenOptions};
use std::path::PathBuf;

/// The lock file's path.
pub fn lock_path() -> PathBuf {
    std::env::temp_dir().join("tcplab-test-timing.lock")
}

/// The held lock; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct TimingLock {
    _file: File,
}

/// Waits for, and takes, the timing lock.
pub fn timing_lock() -> TimingLock {
    let path = lock_path();
    // Read-only suffices for flock: a file another user created (root's,
    // 0644) still locks.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .or_else(|_| File::open(&path))
        .unwrap_or_else(|e| panic!("opening the timing lock {}: {e}", path.display()));
    file.lock()
        .unwrap_or_else(|e| panic!("taking the timing lock {}: {e}", path.display()));
    TimingLock { _file: file }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A second taker waits while the first holds it, in this process and
    /// in another.
    #[test]
    fn a_second_taker_waits_for_the_first() {
        let held = timing_lock();
        let got = Arc::new(AtomicBool::new(false));
        let g = got.clone();
        let t = std::thread::spawn(move || {
            let _l = timing_lock();
            g.store(true, Ordering::SeqCst);
        });
        // Another process: flock(1) on the same file, without waiting.
        let other = std::process::Command::new("flock")
            .args(["-n", lock_path().to_str().unwrap(), "true"])
            .status()
            .unwrap();
        assert!(!other.success(), "another process took the held lock");
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !got.load(Ordering::SeqCst),
            "another thread took the held lock"
        );
        drop(held);
        t.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
    }
}
