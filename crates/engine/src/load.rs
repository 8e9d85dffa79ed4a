//! CPU-bound background load (Abrams & Chen §2.3): N threads multiplying
//! matrices beside one endpoint for the length of a trial. Their CPU time is
//! not counted as the transfer's, since tcplab measures per thread.

use crate::cpu::CpuTime;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

const N: usize = 64;

/// Running load workers; stopped and joined on drop.
#[derive(Debug)]
pub struct LoadWorkers {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<f64>>,
}

impl LoadWorkers {
    /// Starts `count` matrix-multiply workers.
    pub fn start(count: u32) -> LoadWorkers {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..count)
            .map(|i| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("tcplab-load{i}"))
                    .spawn(move || multiply_until(&stop))
                    .expect("spawning load worker")
            })
            .collect();
        LoadWorkers { stop, threads }
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
fn multiply_until(stop: &AtomicBool) -> f64 {
    let cpu0 = CpuTime::thread_now();
    let a: Vec<f64> = (0..N * N).map(|i| (i % 7) as f64 + 0.5).collect();
    let b: Vec<f64> = (0..N * N).map(|i| (i % 5) as f64 - 1.5).collect();
    let mut c = vec![0.0f64; N * N];
    let mut rounds = 0u64;
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
        rounds += 1;
    }
    std::hint::black_box(rounds);
    CpuTime::thread_now().since(cpu0).total_s()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_run_and_stop() {
        let w = LoadWorkers::start(2);
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(w.stop() > 0.05);
    }
}
