//! Context switch latency by pipe ping-pong, as lmbench's lat_ctx: two
//! threads pinned to one CPU pass a byte back and forth through two pipes,
//! so every pass is a switch; the pipe's own cost is measured alone in one
//! thread and reported beside it.

use crate::CalibrateError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Instant;

fn pipe() -> Result<(OwnedFd, OwnedFd), CalibrateError> {
    let mut fds = [0i32; 2];
    // SAFETY: fds is a valid two-int array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(CalibrateError::Os("pipe2", std::io::Error::last_os_error()));
    }
    // SAFETY: pipe2 returned two fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn put(fd: &OwnedFd) -> Result<(), CalibrateError> {
    let b = [1u8];
    // SAFETY: writes one byte from a valid buffer.
    if unsafe { libc::write(fd.as_raw_fd(), b.as_ptr().cast(), 1) } != 1 {
        return Err(CalibrateError::Os("write", std::io::Error::last_os_error()));
    }
    Ok(())
}

fn take(fd: &OwnedFd) -> Result<(), CalibrateError> {
    let mut b = [0u8];
    // SAFETY: reads one byte into a valid buffer.
    if unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), 1) } != 1 {
        return Err(CalibrateError::Os("read", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Pins the calling thread to `cpu`.
fn pin(cpu: usize) -> Result<(), CalibrateError> {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(CalibrateError::Os(
                "sched_setaffinity",
                std::io::Error::last_os_error(),
            ));
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on.
fn current_cpu() -> usize {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    c.max(0) as usize
}

/// Seconds per context switch: `round_trips` ping-pongs between two
/// threads pinned to one CPU, two switches each.
pub fn context_switch(round_trips: u32) -> Result<f64, CalibrateError> {
    let cpu = current_cpu();
    let (a_r, a_w) = pipe()?;
    let (b_r, b_w) = pipe()?;
    let echo = std::thread::spawn(move || -> Result<(), CalibrateError> {
        pin(cpu)?;
        for _ in 0..round_trips {
            take(&a_r)?;
            put(&b_w)?;
        }
        Ok(())
    });
    // This thread moves to the same CPU for the measurement and back after.
    // SAFETY: a zeroed cpu_set_t is valid and sched_getaffinity fills it.
    let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: valid set pointer and size.
    unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) };
    let run = || -> Result<f64, CalibrateError> {
        pin(cpu)?;
        // One warm-up pass lets the echo thread reach its first read.
        put(&a_w)?;
        take(&b_r)?;
        let t0 = Instant::now();
        for _ in 1..round_trips {
            put(&a_w)?;
            take(&b_r)?;
        }
        Ok(t0.elapsed().as_secs_f64() / (2.0 * f64::from(round_trips.saturating_sub(1).max(1))))
    };
    let r = run();
    // SAFETY: restores the affinity read above.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &old) };
    let joined = echo
        .join()
        .map_err(|_| CalibrateError::Thread("the echo thread panicked".into()))?;
    let t = r?;
    joined?;
    Ok(t)
}

/// Seconds per pipe write + read in one thread (no switch): the part of a
/// ping-pong pass that is not the switch.
pub fn pipe_overhead(passes: u32) -> Result<f64, CalibrateError> {
    let (r, w) = pipe()?;
    let t0 = Instant::now();
    for _ in 0..passes {
        put(&w)?;
        take(&r)?;
    }
    Ok(t0.elapsed().as_secs_f64() / f64::from(passes.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_costs_more_than_the_pipe_alone() {
        // Timed against each other: one timed test at a time, both in one
        // quiet run.
        let _timing = testkit::timing_lock();
        let q = testkit::until_quiet(
            "a context switch and a pipe",
            testkit::QuietLimits::default(),
            &[],
            || (context_switch(2000).unwrap(), pipe_overhead(2000).unwrap()),
        );
        eprintln!("a context switch and a pipe: {}", q.describe());
        let (sw, p) = q.value;
        assert!(sw > 1e-7 && sw < 1e-3, "switch {sw} s");
        assert!(p > 1e-8 && p < 1e-3, "pipe {p} s");
        // The pinned ping-pong does both pipe ends and a switch per pass.
        assert!(sw > 0.5 * p, "switch {sw} s, pipe {p} s");
    }
}
