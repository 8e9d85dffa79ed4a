//! Switching NIC offloads (checksum, TSO, GSO, GRO) with the SIOCETHTOOL
//! ioctl, in the calling thread's network namespace — what `ethtool -K`
//! does, without needing the ethtool program.

use crate::error::LabError;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;

/// An offload that can be switched on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offload {
    /// Transmit checksum offload (turning it off also turns TSO off).
    TxChecksum,
    /// Receive checksum offload.
    RxChecksum,
    /// TCP segmentation offload.
    Tso,
    /// Generic segmentation offload.
    Gso,
    /// Generic receive offload.
    Gro,
}

impl Offload {
    /// Every offload, in the order a trial switches them off: segmentation
    /// and aggregation first, checksums last (turning transmit checksum
    /// off takes TSO with it). They are restored in the reverse order, so
    /// the checksums are back before TSO asks for them.
    pub const ALL: [Offload; 5] = [
        Offload::Tso,
        Offload::Gso,
        Offload::Gro,
        Offload::TxChecksum,
        Offload::RxChecksum,
    ];

    /// The name in `--offload` and in a trial's record.
    pub fn name(self) -> &'static str {
        match self {
            Offload::Tso => "tso",
            Offload::Gso => "gso",
            Offload::Gro => "gro",
            Offload::TxChecksum => "tx",
            Offload::RxChecksum => "rx",
        }
    }

    /// The legacy ethtool "set" command for this offload.
    fn set_cmd(self) -> u32 {
        match self {
            Offload::TxChecksum => 0x17, // ETHTOOL_STXCSUM
            Offload::RxChecksum => 0x15, // ETHTOOL_SRXCSUM
            Offload::Tso => 0x1f,        // ETHTOOL_STSO
            Offload::Gso => 0x24,        // ETHTOOL_SGSO
            Offload::Gro => 0x2c,        // ETHTOOL_SGRO
        }
    }

    /// The legacy ethtool "get" command for this offload.
    fn get_cmd(self) -> u32 {
        match self {
            Offload::TxChecksum => 0x16, // ETHTOOL_GTXCSUM
            Offload::RxChecksum => 0x14, // ETHTOOL_GRXCSUM
            Offload::Tso => 0x1e,        // ETHTOOL_GTSO
            Offload::Gso => 0x23,        // ETHTOOL_GGSO
            Offload::Gro => 0x2b,        // ETHTOOL_GGRO
        }
    }
}

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut EthtoolValue,
    _pad: [u8; 16],
}

fn ioctl(ifname: &str, v: &mut EthtoolValue) -> Result<(), LabError> {
    if ifname.len() >= libc::IFNAMSIZ {
        return Err(LabError::Spec(format!(
            "interface name {ifname:?} is too long"
        )));
    }
    // SAFETY: a plain datagram socket for the ioctl.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(LabError::io(
            "opening ioctl socket",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: fd is fresh and ours.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: v,
        _pad: [0; 16],
    };
    req.name[..ifname.len()].copy_from_slice(ifname.as_bytes());
    // SAFETY: req is a valid ifreq whose data points at a live ethtool_value.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &mut req) };
    if rc != 0 {
        return Err(LabError::io(
            format!("ethtool ioctl on {ifname}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Switches `offload` on `ifname` (in the calling thread's namespace).
pub fn set(ifname: &str, offload: Offload, on: bool) -> Result<(), LabError> {
    crate::cmd::note(format!(
        "ethtool -K {ifname} {} {} (by ioctl, in {ifname}'s namespace)",
        offload.name(),
        if on { "on" } else { "off" }
    ));
    let mut v = EthtoolValue {
        cmd: offload.set_cmd(),
        data: u32::from(on),
    };
    ioctl(ifname, &mut v)
}

/// Reads whether `offload` is on for `ifname`.
pub fn get(ifname: &str, offload: Offload) -> Result<bool, LabError> {
    let mut v = EthtoolValue {
        cmd: offload.get_cmd(),
        data: 0,
    };
    ioctl(ifname, &mut v)?;
    Ok(v.data != 0)
}

/// Whether each offload of [`Offload::ALL`] is on for `ifname`.
pub fn get_all(ifname: &str) -> Result<[bool; 5], LabError> {
    let mut on = [false; 5];
    for (i, o) in Offload::ALL.into_iter().enumerate() {
        on[i] = get(ifname, o)?;
    }
    Ok(on)
}

/// Turns off the segmentation offloads (TSO, GSO), so that the stack hands
/// the device one frame per packet: what a rate qdisc needs to charge each
/// frame its Ethernet framing (a 64 KB GSO packet would be charged it once).
pub fn one_frame_per_packet(ifname: &str) -> Result<(), LabError> {
    for o in [Offload::Tso, Offload::Gso] {
        set(ifname, o, false)?;
    }
    Ok(())
}

/// Turns off every offload that lets frames bigger than the MTU or with
/// unfinished checksums leave the host: what a real 1990s NIC did, and what
/// an AF_PACKET bridge needs to forward frames unchanged.
pub fn plain_frames(ifname: &str) -> Result<(), LabError> {
    for o in [
        Offload::TxChecksum,
        Offload::Tso,
        Offload::Gso,
        Offload::Gro,
    ] {
        set(ifname, o, false)?;
    }
    Ok(())
}
