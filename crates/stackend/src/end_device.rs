//! The device under a stack end: the TUN or TAP itself, or the same
//! device behind a driver thread (`--layers threaded`).

use record::factor::Layers;
use stack::phy::threaded::{DriverThread, QueueStats, ThreadCpu};
use stack::phy::tun::TunTap;
use stack::phy::{Capabilities, Device, PhyError};
use stack::stack::Stack;
use std::time::Duration;

/// A stack end's device, as `--layers` put it.
#[derive(Debug)]
pub(crate) enum EndDevice {
    /// The stack's thread does the device's system calls.
    Merged(TunTap),
    /// A driver thread does them; frames cross by queues.
    Threaded(DriverThread),
}

/// A stack end's stack.
pub(crate) type EndStack = Stack<EndDevice>;

impl EndDevice {
    /// `device` as `layers` says.
    pub fn new(device: TunTap, layers: Layers) -> Result<EndDevice, PhyError> {
        Ok(match layers {
            Layers::Merged => EndDevice::Merged(device),
            Layers::Threaded => EndDevice::Threaded(DriverThread::spawn(device)?),
        })
    }

    /// The driver thread's queue figures since the last call (None when
    /// the layers are merged: there are no queues).
    pub fn take_queue_stats(&self) -> Option<QueueStats> {
        match self {
            EndDevice::Merged(_) => None,
            EndDevice::Threaded(d) => Some(d.take_stats()),
        }
    }
}

impl EndDevice {
    /// CPU time the driver thread has used (zero when merged: the stack's
    /// thread does the device's work and its own clock counts it).
    pub fn driver_cpu(&self) -> ThreadCpu {
        match self {
            EndDevice::Merged(_) => ThreadCpu::default(),
            EndDevice::Threaded(d) => d.driver_cpu(),
        }
    }
}

impl Device for EndDevice {
    fn capabilities(&self) -> Capabilities {
        match self {
            EndDevice::Merged(d) => d.capabilities(),
            EndDevice::Threaded(d) => d.capabilities(),
        }
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        match self {
            EndDevice::Merged(d) => d.receive(buf),
            EndDevice::Threaded(d) => d.receive(buf),
        }
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        match self {
            EndDevice::Merged(d) => d.transmit(frame),
            EndDevice::Threaded(d) => d.transmit(frame),
        }
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        match self {
            EndDevice::Merged(d) => d.wait(timeout),
            EndDevice::Threaded(d) => d.wait(timeout),
        }
    }
}
