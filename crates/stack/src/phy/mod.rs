//! Devices: where frames enter and leave the stack (issue 18, item 5).
//!
//! A [`Device`] receives one frame (or IP packet, on an IP medium) into the
//! caller's buffer and transmits one from the caller's buffer; it never
//! allocates per frame. Implementations:
//! - [`tun::TunTap`]: Linux TUN (`IFF_TUN|IFF_NO_PI`), TUN with the
//!   virtio-net header and `TUNSETOFFLOAD` (super-packets up to 64 KB,
//!   checksum offload), and TAP (`IFF_TAP`, Ethernet frames);
//! - [`loopback::Loopback`]: an in-memory queue, for tests without a device;
//! - [`tracer::Tracer`]: wraps a device and writes every frame to pcapng;
//! - [`fault::FaultInjector`]: wraps a device and drops, reorders,
//!   duplicates or corrupts frames with seeded probabilities;
//! - [`threaded::DriverThread`]: moves a device's system calls to a
//!   thread of its own, joined to the stack by frame queues.
//!
//! The wrappers are devices themselves, so they stack:
//! `Tracer<FaultInjector<TunTap>>` traces what the stack sent before the
//! faults were applied to it, and what it received after them.

pub mod fault;
pub mod loopback;
pub mod threaded;
pub mod tracer;
pub mod tun;
pub mod vnet;

use std::time::Duration;

/// What a device carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Medium {
    /// Bare IP packets (TUN): no link layer, no ARP.
    Ip,
    /// Ethernet II frames (TAP): the stack does Ethernet and ARP itself.
    Ethernet,
}

/// The offloads a device was opened with: what the stack may leave undone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offloads {
    /// Each frame starts with a virtio-net header ([`vnet::VirtioNetHdr`])
    /// in both directions.
    pub vnet_header: bool,
    /// The stack may send packets with a partial checksum
    /// (`NEEDS_CSUM`); received packets may arrive with one.
    pub checksum: bool,
    /// The stack may send TCP/IPv4 super-packets that the kernel segments.
    pub tso4: bool,
    /// The stack may send TCP/IPv6 super-packets that the kernel segments.
    pub tso6: bool,
}

/// What a device can do, so the layers above can size buffers and decide
/// which work to leave to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// IP or Ethernet.
    pub medium: Medium,
    /// The largest IP packet the link carries (without Ethernet header or
    /// virtio-net header); 1500 by default.
    pub mtu: usize,
    /// The largest frame `receive` can return or `transmit` accepts,
    /// including any link and virtio-net header: the buffer size to give
    /// `receive`. Larger than the MTU when super-packets are on.
    pub max_frame: usize,
    /// The offloads in force.
    pub offloads: Offloads,
}

/// Why a device operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PhyError {
    /// Opening or configuring the device failed.
    #[error("{what}: {source}")]
    Setup {
        /// Which step failed.
        what: String,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A read or write on the device failed.
    #[error("device {op}: {source}")]
    Io {
        /// `read`, `write` or `poll`.
        op: &'static str,
        /// The system's reason.
        source: std::io::Error,
    },
    /// A frame larger than the device carries was given to `transmit`.
    #[error("frame of {len} bytes exceeds the device's {max} bytes")]
    TooLong {
        /// The frame's length.
        len: usize,
        /// The device's `max_frame`.
        max: usize,
    },
    /// The device's transmit queue is full; try again after `wait`.
    #[error("device transmit queue full")]
    Exhausted,
    /// Writing the trace failed.
    #[error("writing the pcapng trace: {0}")]
    Trace(#[from] pcap_file::PcapError),
}

/// A network device as the stack drives it: one frame at a time, into and
/// from the caller's buffers, never blocking.
pub trait Device {
    /// The device's medium, MTU and offloads.
    fn capabilities(&self) -> Capabilities;

    /// Receives one frame into `buf` and returns its length, or `None` when
    /// none is waiting. A frame longer than `buf` is truncated by the
    /// system (give a buffer of `capabilities().max_frame`).
    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError>;

    /// Transmits one frame.
    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError>;

    /// Waits until a frame can be received or `timeout` passes (`None`:
    /// without limit). Returns whether one can be received.
    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError>;
}

impl<D: Device + ?Sized> Device for &mut D {
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        (**self).receive(buf)
    }
    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        (**self).transmit(frame)
    }
    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        (**self).wait(timeout)
    }
}
