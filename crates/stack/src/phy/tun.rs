//! Linux TUN and TAP devices, opened on `/dev/net/tun` with nix's ioctl
//! wrappers: `TUNSETIFF` (`IFF_TUN|IFF_NO_PI` or `IFF_TAP|IFF_NO_PI`, plus
//! `IFF_VNET_HDR` for offloads) and `TUNSETOFFLOAD` (`TUN_F_CSUM`,
//! `TUN_F_TSO4`, `TUN_F_TSO6`).
//!
//! Why nix rather than tun-rs: tcplab needs one `read(2)`/`write(2)` per
//! frame into its own buffers with nothing in between (issue 19 times the
//! system call apart from the stack), and the virtio-net header as raw
//! bytes the stack writes itself; nix is already in the workspace and
//! wraps exactly the three ioctls, poll and read/write, while tun-rs adds
//! its own offload splitting, async runtimes and address configuration that
//! the bench does with `ip` in the namespace anyway.
//!
//! The device is created in the network namespace of the calling thread;
//! addresses, MTU and link state are set from outside (`ip -n NS ...`).
//! The file is non-blocking; [`Device::wait`] polls it (`ppoll`, to the
//! nanosecond).

use super::vnet::VNET_HDR_LEN;
use super::{Capabilities, Device, Medium, Offloads, PhyError};
use nix::errno::Errno;
use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::time::TimeSpec;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

nix::ioctl_write_ptr_bad!(
    /// `TUNSETIFF`: attach the file to an interface with these flags.
    tun_set_iff, libc::TUNSETIFF, libc::ifreq);
nix::ioctl_write_int_bad!(
    /// `TUNSETOFFLOAD`: the offloads the reader accepts.
    tun_set_offload, libc::TUNSETOFFLOAD);

/// The MTU a TUN or TAP device has unless told otherwise.
pub const DEFAULT_MTU: usize = 1500;
/// The largest super-packet with offloads: an IPv4 total length.
pub const MAX_SUPER_PACKET: usize = 65535;
/// An Ethernet II header (no VLAN tag).
const ETHERNET_HEADER: usize = 14;

/// Which kind of device to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TunKind {
    /// TUN: bare IP packets (`IFF_TUN|IFF_NO_PI`).
    Tun,
    /// TUN with the virtio-net header and TSO4/TSO6/CSUM offloads.
    TunOffload,
    /// TAP: Ethernet frames (`IFF_TAP|IFF_NO_PI`).
    Tap,
}

/// How to open a device.
#[derive(Debug, Clone)]
pub struct TunConfig {
    /// The interface name (at most 15 bytes); the kernel picks one when
    /// empty (`tun%d`/`tap%d`).
    pub name: String,
    /// TUN, TUN with offloads, or TAP.
    pub kind: TunKind,
    /// The MTU the interface is (or will be) given; the device reports it
    /// and sizes frames by it. Set the interface's own with `ip link`.
    pub mtu: usize,
}

impl TunConfig {
    /// A device of `kind` named `name`, MTU 1500.
    pub fn new(name: &str, kind: TunKind) -> TunConfig {
        TunConfig {
            name: name.to_string(),
            kind,
            mtu: DEFAULT_MTU,
        }
    }
}

/// An open TUN or TAP device.
#[derive(Debug)]
pub struct TunTap {
    file: File,
    name: String,
    caps: Capabilities,
}

impl TunTap {
    /// Opens `/dev/net/tun` and attaches it to a new (or existing,
    /// persistent) interface as `config` says.
    pub fn open(config: &TunConfig) -> Result<TunTap, PhyError> {
        let setup = |what: &str| {
            let what = what.to_string();
            move |source| PhyError::Setup { what, source }
        };
        if config.name.len() >= libc::IFNAMSIZ {
            return Err(PhyError::Setup {
                what: format!("interface name {:?}", config.name),
                source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(setup("opening /dev/net/tun"))?;
        let mut flags = libc::IFF_NO_PI;
        flags |= match config.kind {
            TunKind::Tun => libc::IFF_TUN,
            TunKind::TunOffload => libc::IFF_TUN | libc::IFF_VNET_HDR,
            TunKind::Tap => libc::IFF_TAP,
        };
        // SAFETY: ifreq is plain old data; all zeroes is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, src) in req.ifr_name.iter_mut().zip(config.name.bytes()) {
            *dst = src as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = flags as libc::c_short;
        // SAFETY: the fd is an open /dev/net/tun; req outlives the call and
        // is the ifreq TUNSETIFF reads (and writes the chosen name into).
        unsafe { tun_set_iff(file.as_raw_fd(), &req) }.map_err(|e| PhyError::Setup {
            what: "TUNSETIFF".into(),
            source: e.into(),
        })?;
        let name: String = req
            .ifr_name
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8 as char)
            .collect();
        let offloads = if config.kind == TunKind::TunOffload {
            let features = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6;
            // SAFETY: the fd is a TUN device opened with IFF_VNET_HDR;
            // TUNSETOFFLOAD takes the feature bits by value.
            unsafe { tun_set_offload(file.as_raw_fd(), features as libc::c_int) }.map_err(|e| {
                PhyError::Setup {
                    what: "TUNSETOFFLOAD".into(),
                    source: e.into(),
                }
            })?;
            Offloads {
                vnet_header: true,
                checksum: true,
                tso4: true,
                tso6: true,
            }
        } else {
            Offloads::default()
        };
        let (medium, max_frame) = match config.kind {
            TunKind::Tun => (Medium::Ip, config.mtu),
            TunKind::TunOffload => (Medium::Ip, VNET_HDR_LEN + MAX_SUPER_PACKET),
            TunKind::Tap => (Medium::Ethernet, ETHERNET_HEADER + config.mtu),
        };
        Ok(TunTap {
            file,
            name,
            caps: Capabilities {
                medium,
                mtu: config.mtu,
                max_frame,
                offloads,
            },
        })
    }

    /// The interface's name as the kernel has it.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The device's file descriptor, for callers that wait on it beside
/// others (the driver thread of [`super::threaded`]).
impl AsFd for TunTap {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl Device for TunTap {
    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        let _b = crate::account::enter(crate::account::Block::DeviceReceiveSyscall);
        loop {
            match nix::unistd::read(&self.file, buf) {
                Ok(n) => return Ok(Some(n)),
                Err(Errno::EAGAIN) => return Ok(None),
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    return Err(PhyError::Io {
                        op: "read",
                        source: e.into(),
                    })
                }
            }
        }
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        if frame.len() > self.caps.max_frame {
            return Err(PhyError::TooLong {
                len: frame.len(),
                max: self.caps.max_frame,
            });
        }
        let _b = crate::account::enter(crate::account::Block::DeviceSendSyscall);
        loop {
            match nix::unistd::write(&self.file, frame) {
                Ok(_) => return Ok(()),
                Err(Errno::EAGAIN) => return Err(PhyError::Exhausted),
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    return Err(PhyError::Io {
                        op: "write",
                        source: e.into(),
                    })
                }
            }
        }
    }

    /// Waits with `ppoll(2)`, whose timeout is in nanoseconds: `poll(2)`'s
    /// whole milliseconds would turn every wait under 1 ms (a pacer's
    /// next segment at 200 Mbit/s is 58 µs away) into no wait at all, and
    /// the loop would spin until the deadline.
    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        let timeout = timeout.map(TimeSpec::from_duration);
        let mut fds = [PollFd::new(self.file.as_fd(), PollFlags::POLLIN)];
        loop {
            match ppoll(&mut fds, timeout, None) {
                Ok(n) => return Ok(n > 0),
                Err(Errno::EINTR) => continue,
                Err(e) => {
                    return Err(PhyError::Io {
                        op: "poll",
                        source: e.into(),
                    })
                }
            }
        }
    }
}
