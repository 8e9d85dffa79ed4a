//! A device that injects faults into its inner device's traffic: loss,
//! reordering, duplication and corruption, each a probability per frame
//! and per direction, drawn from a seeded generator so a run repeats
//! exactly.
//!
//! Per frame, in order: lost with `loss`; else one bit flipped with
//! `corrupt` (never inside the first `protect` bytes, e.g. the virtio-net
//! header); then sent twice with `duplicate`; a frame chosen with `reorder`
//! is held back and goes out right after the next frame in the same
//! direction, or when the device runs idle (receive finds nothing, or the
//! stack calls `wait`), so a held frame never waits on traffic that may
//! not come.

use super::vnet::VNET_HDR_LEN;
use super::{Capabilities, Device, PhyError};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::time::Duration;

/// The probabilities for one direction, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Faults {
    /// A frame is dropped.
    pub loss: f64,
    /// A frame is held back behind the next one.
    pub reorder: f64,
    /// A frame is delivered twice.
    pub duplicate: f64,
    /// One bit of a frame is flipped.
    pub corrupt: f64,
}

/// What to inject, both ways.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultConfig {
    /// Faults on frames the stack transmits.
    pub transmit: Faults,
    /// Faults on frames the stack receives.
    pub receive: Faults,
    /// The generator's seed: the same seed, the same faults.
    pub seed: u64,
}

/// What was done to the frames of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FaultStats {
    /// Frames that came in (before any fault).
    pub frames: u64,
    /// Frames dropped.
    pub dropped: u64,
    /// Frames with a bit flipped.
    pub corrupted: u64,
    /// Frames delivered twice.
    pub duplicated: u64,
    /// Frames held back behind a later one.
    pub reordered: u64,
}

/// The faults of one direction: a pure function of the frames and the
/// generator, separate from any device.
#[derive(Debug)]
struct Stage {
    faults: Faults,
    held: Option<Vec<u8>>,
    stats: FaultStats,
}

impl Stage {
    fn new(faults: Faults) -> Stage {
        Stage {
            faults,
            held: None,
            stats: FaultStats::default(),
        }
    }

    /// Puts what `frame` becomes on `out`, in delivery order.
    fn process(
        &mut self,
        rng: &mut ChaCha8Rng,
        frame: &[u8],
        protect: usize,
        out: &mut VecDeque<Vec<u8>>,
    ) {
        self.stats.frames += 1;
        let f = self.faults;
        if f.loss > 0.0 && rng.random::<f64>() < f.loss {
            self.stats.dropped += 1;
            return;
        }
        let mut frame = frame.to_vec();
        if f.corrupt > 0.0 && rng.random::<f64>() < f.corrupt && frame.len() > protect {
            let at = rng.random_range(protect..frame.len());
            frame[at] ^= 1 << rng.random_range(0..8u32);
            self.stats.corrupted += 1;
        }
        let copies = if f.duplicate > 0.0 && rng.random::<f64>() < f.duplicate {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        let hold = self.held.is_none() && f.reorder > 0.0 && rng.random::<f64>() < f.reorder;
        if hold {
            self.stats.reordered += 1;
            if copies == 2 {
                out.push_back(frame.clone());
            }
            self.held = Some(frame);
            return;
        }
        for _ in 1..copies {
            out.push_back(frame.clone());
        }
        out.push_back(frame);
        self.release(out);
    }

    /// Lets a held frame go.
    fn release(&mut self, out: &mut VecDeque<Vec<u8>>) {
        if let Some(h) = self.held.take() {
            out.push_back(h);
        }
    }
}

/// Wraps `D`, injecting the faults of a [`FaultConfig`].
#[derive(Debug)]
pub struct FaultInjector<D: Device> {
    inner: D,
    rng: ChaCha8Rng,
    protect: usize,
    tx: Stage,
    rx: Stage,
    tx_out: VecDeque<Vec<u8>>,
    rx_ready: VecDeque<Vec<u8>>,
    scratch: Vec<u8>,
}

impl<D: Device> FaultInjector<D> {
    /// Wraps `inner`.
    pub fn new(inner: D, config: FaultConfig) -> FaultInjector<D> {
        let caps = inner.capabilities();
        FaultInjector {
            protect: if caps.offloads.vnet_header {
                VNET_HDR_LEN
            } else {
                0
            },
            scratch: vec![0; caps.max_frame],
            inner,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            tx: Stage::new(config.transmit),
            rx: Stage::new(config.receive),
            tx_out: VecDeque::new(),
            rx_ready: VecDeque::new(),
        }
    }

    /// What was done to transmitted frames.
    pub fn transmit_stats(&self) -> FaultStats {
        self.tx.stats
    }

    /// What was done to received frames.
    pub fn receive_stats(&self) -> FaultStats {
        self.rx.stats
    }

    /// The inner device.
    pub fn inner_mut(&mut self) -> &mut D {
        &mut self.inner
    }

    /// Sends a held transmit frame now.
    pub fn flush(&mut self) -> Result<(), PhyError> {
        self.tx.release(&mut self.tx_out);
        self.send_queued()
    }

    fn send_queued(&mut self) -> Result<(), PhyError> {
        while let Some(f) = self.tx_out.pop_front() {
            if let Err(e) = self.inner.transmit(&f) {
                self.tx_out.push_front(f);
                return Err(e);
            }
        }
        Ok(())
    }
}

impl<D: Device> Device for FaultInjector<D> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        while self.rx_ready.is_empty() {
            match self.inner.receive(&mut self.scratch)? {
                Some(n) => self.rx.process(
                    &mut self.rng,
                    &self.scratch[..n],
                    self.protect,
                    &mut self.rx_ready,
                ),
                None => {
                    self.rx.release(&mut self.rx_ready);
                    break;
                }
            }
        }
        Ok(self.rx_ready.pop_front().map(|f| {
            let n = f.len().min(buf.len());
            buf[..n].copy_from_slice(&f[..n]);
            n
        }))
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        self.tx
            .process(&mut self.rng, frame, self.protect, &mut self.tx_out);
        self.send_queued()
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        self.flush()?;
        if !self.rx_ready.is_empty() || self.rx.held.is_some() {
            return Ok(true);
        }
        self.inner.wait(timeout)
    }
}

#[cfg(test)]
#[path = "fault_tests.rs"]
mod tests;
