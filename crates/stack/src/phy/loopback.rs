//! An in-memory device: what is transmitted can be received, and tests
//! can inject frames and take what the stack sent. No system calls.

use super::{Capabilities, Device, Medium, Offloads, PhyError};
use std::collections::VecDeque;
use std::time::Duration;

/// Two queues: `inbound` (what `receive` returns) and `outbound` (what
/// `transmit` appended). With `echo` on, transmitted frames are received
/// back, as on a loopback interface.
#[derive(Debug)]
pub struct Loopback {
    /// Frames waiting for `receive`, oldest first.
    pub inbound: VecDeque<Vec<u8>>,
    /// Frames `transmit` was given, oldest first (when `echo` is off).
    pub outbound: VecDeque<Vec<u8>>,
    /// Whether transmitted frames go to `inbound` instead of `outbound`.
    pub echo: bool,
    caps: Capabilities,
}

impl Loopback {
    /// An empty device of `medium` with MTU `mtu`, no offloads.
    pub fn new(medium: Medium, mtu: usize) -> Loopback {
        let header = if medium == Medium::Ethernet { 14 } else { 0 };
        Loopback {
            inbound: VecDeque::new(),
            outbound: VecDeque::new(),
            echo: false,
            caps: Capabilities {
                medium,
                mtu,
                max_frame: mtu + header,
                offloads: Offloads::default(),
            },
        }
    }

    /// An empty device of `medium` with MTU `mtu` that behaves as a TUN
    /// opened with the virtio-net header and offloads: every frame carries
    /// the header, and super-packets up to 64 KB pass. What the header asks
    /// (cutting, finishing checksums) is left to whoever moves the frames,
    /// as the kernel does it behind a real TUN.
    pub fn with_offloads(medium: Medium, mtu: usize) -> Loopback {
        let mut device = Loopback::new(medium, mtu);
        let link = device.caps.max_frame - mtu;
        device.caps.max_frame = super::vnet::VNET_HDR_LEN + link + super::tun::MAX_SUPER_PACKET;
        device.caps.offloads = Offloads {
            vnet_header: true,
            checksum: true,
            tso4: true,
            tso6: false,
        };
        device
    }
}

impl Device for Loopback {
    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        Ok(self.inbound.pop_front().map(|f| {
            let n = f.len().min(buf.len());
            buf[..n].copy_from_slice(&f[..n]);
            n
        }))
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        if frame.len() > self.caps.max_frame {
            return Err(PhyError::TooLong {
                len: frame.len(),
                max: self.caps.max_frame,
            });
        }
        let q = if self.echo {
            &mut self.inbound
        } else {
            &mut self.outbound
        };
        q.push_back(frame.to_vec());
        Ok(())
    }

    fn wait(&mut self, _timeout: Option<Duration>) -> Result<bool, PhyError> {
        Ok(!self.inbound.is_empty())
    }
}
