//! CPU-bound background load (Abrams & Chen §2.3): N threads multiplying
//! matrices beside one endpoint for the length of a trial. Their CPU time is
//! not counted as the transfer's, since tcplab measures per thread.

use crate::cancel::Canceller;
use crate::cpu::CpuTime;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const N: usize = 64;

/// Running load workers; stopped and joined on drop.
#[derive(Debug)]
pub struct LoadWorkers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<f64>>,
    /// Matrix products finished, per worker.
    rounds: Arc<Vec<AtomicU64>>,
}

impl LoadWorkers {
    /// Starts `count` matrix-multiply workers, each counted with `trial`'s
    /// threads if given (a server holds a trial's load to its CPU budget);
    /// if one cannot start (a pid or thread limit), those started are
    /// stopped and joined and the error is returned.
    pub fn start(count: u32, trial: Option<&Canceller>) -> std::io::Result<LoadWorkers> {
        let stop = Arc::new(AtomicBool::new(false));
        let rounds: Arc<Vec<AtomicU64>> = Arc::new((0..count).map(|_| AtomicU64::new(0)).collect());
        let mut workers = LoadWorkers {
            stop,
            threads: Vec::with_capacity(count as usize),
            rounds,
        };
        for i in 0..count as usize {
            let stop = workers.stop.clone();
            let rounds = workers.rounds.clone();
            let trial = trial.cloned();
            let t = std::thread::Builder::new()
                .name(format!("tcplab-load{i}"))
                .spawn(move || {
                    let _counted = trial.as_ref().map(Canceller::count_thread);
                    multiply_until(&stop, &rounds[i])
                })?;
            workers.threads.push(t);
        }
        Ok(workers)
    }

    /// Matrix products each worker has finished so far.
    pub fn rounds(&self) -> Vec<u64> {
        self.rounds
            .iter()
            .map(|r| r.load(Ordering::Relaxed))
            .collect()
    }

    /// Stops the workers and returns the CPU seconds they got.
    pub fn stop(mut self) -> f64 {
        self.halt()
    }

    fn halt(&mut self) -> f64 {
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).filter_map(|t| t.join().ok()).sum()
    }
}

impl Drop for LoadWorkers {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Multiplies matrices until stopped; returns the thread's CPU seconds.
fn multiply_until(stop: &AtomicBool, done: &AtomicU64) -> f64 {
    let cpu0 = CpuTime::thread_now();
    let a: Vec<f64> = (0..N * N).map(|i| (i % 7) as f64 + 0.5).collect();
    let b: Vec<f64> = (0..N * N).map(|i| (i % 5) as f64 - 1.5).collect();
    let mut c = vec![0.0f64; N * N];
    while !stop.load(Ordering::Relaxed) {
        for i in 0..N {
            for k in 0..N {
                let aik = a[i * N + k];
                for j in 0..N {
                    c[i * N + j] += aik * b[k * N + j];
                }
            }
        }
        std::hint::black_box(&mut c);
        done.fetch_add(1, Ordering::Relaxed);
    }
    CpuTime::thread_now().since(cpu0).total_s()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every worker computes, and stopping joins them with the CPU time
    /// they got. A loaded machine may give them little CPU in any fixed
    /// time, so the test waits for each worker's own progress (up to a
    /// minute) instead of asserting CPU seconds after a fixed sleep.
    #[test]
    fn workers_run_and_stop() {
        // Burns CPU or bounds wall time: one such test at a time.
        let _timing = testkit::timing_lock();
        let w = LoadWorkers::start(2, None).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while w.rounds().iter().any(|&r| r < 3) {
            assert!(
                std::time::Instant::now() < deadline,
                "workers made {:?} rounds in a minute",
                w.rounds()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let rounds = w.rounds.clone();
        let cpu_s = w.stop();
        assert!(cpu_s > 0.0, "the workers' CPU time was not counted");
        // Joined: no worker finishes another product after stop.
        let after: Vec<u64> = rounds.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let later: Vec<u64> = rounds.iter().map(|r| r.load(Ordering::Relaxed)).collect();
        assert_eq!(after, later);
    }
}
