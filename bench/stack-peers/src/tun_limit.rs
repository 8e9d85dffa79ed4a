//! The TUN device's own limit, in the same namespace setup as the
//! transfers: how many 1500-byte IPv4/TCP packets one thread can write
//! (each one the kernel takes through IP input to TCP, which drops it for
//! its checksum: the whole receive path with no socket and no reply), and
//! how fast one thread reads 1500-byte packets Linux queued on the TUN
//! (UDP, the queue lengthened to hold them), read back to back.

use crate::setup::{Setup, Stopwatch, TUN_NAME};
use anyhow::{Context, Result};
use stack::phy::tun::{TunConfig, TunKind, TunTap};
use stack::phy::{Device, PhyError};
use std::net::{SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

/// The IP packet size written and read.
pub const PACKET: usize = 1500;

/// The writes' figures.
#[derive(Debug)]
pub struct WriteLimit {
    /// Packets the kernel took.
    pub packets: u64,
    /// Writes refused with EAGAIN.
    pub refused: u64,
    /// Wall and CPU time of the writing thread.
    pub timed: crate::setup::Timed,
}

/// The reads' figures.
#[derive(Debug)]
pub struct ReadCost {
    /// Packets read.
    pub packets: u64,
    /// Wall and CPU time of the reading thread.
    pub timed: crate::setup::Timed,
}

/// RFC 1071's sum over `bytes`, folded and complemented.
fn ip_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A 1500-byte IPv4/TCP packet from us to Linux's discard port whose TCP
/// checksum is wrong (so TCP drops it without answering).
fn packet(setup: &Setup) -> Vec<u8> {
    let mut p = vec![0u8; PACKET];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(PACKET as u16).to_be_bytes());
    p[6] = 0x40; // DF
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&setup.ours.octets());
    p[16..20].copy_from_slice(&setup.linux.octets());
    let sum = ip_checksum(&p[..20]);
    p[10..12].copy_from_slice(&sum.to_be_bytes());
    let tcp = &mut p[20..];
    tcp[0..2].copy_from_slice(&40000u16.to_be_bytes());
    tcp[2..4].copy_from_slice(&9u16.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x10; // ACK
    tcp[14..16].copy_from_slice(&65535u16.to_be_bytes());
    tcp[16..18].copy_from_slice(&0xdeadu16.to_be_bytes());
    p
}

/// Opens the TUN in this thread's namespace and configures Linux's side.
pub fn open(setup: &Setup) -> Result<TunTap> {
    let dev = TunTap::open(&TunConfig::new(TUN_NAME, TunKind::Tun)).context("opening the TUN")?;
    setup.configure_tun()?;
    Ok(dev)
}

/// Writes packets for `seconds` from this thread.
pub fn write_limit(dev: &mut TunTap, setup: &Setup, seconds: f64) -> Result<WriteLimit> {
    let p = packet(setup);
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let watch = Stopwatch::start(setup);
    let (mut packets, mut refused) = (0u64, 0u64);
    'outer: loop {
        for _ in 0..256 {
            match dev.transmit(&p) {
                Ok(()) => packets += 1,
                Err(PhyError::Exhausted) => refused += 1,
                Err(e) => return Err(e.into()),
            }
        }
        if Instant::now() >= until {
            break 'outer;
        }
    }
    Ok(WriteLimit {
        packets,
        refused,
        timed: watch.stop(),
    })
}

/// How many packets Linux queues on the TUN before they are read.
const QUEUED: u64 = 50_000;

/// Queues `QUEUED` 1500-byte UDP packets from Linux on the TUN (its queue
/// lengthened to hold them all), then reads them back to back from this
/// thread: the read rate with a packet always waiting, which a flood
/// from a Linux thread on a 2-CPU host cannot sustain while it runs.
pub fn read_cost(dev: &mut TunTap, setup: &Setup) -> Result<ReadCost> {
    crate::netns::run(
        "ip",
        &[
            "-n",
            &setup.ns,
            "link",
            "set",
            TUN_NAME,
            "txqueuelen",
            "100000",
        ],
    )?;
    let (linux, ours) = (setup.linux, setup.ours);
    crate::netns::spawn_in(&setup.ns, move || {
        let s = UdpSocket::bind(SocketAddrV4::new(linux, 0))?;
        let payload = vec![0u8; PACKET - 28];
        let to = SocketAddrV4::new(ours, 9);
        for _ in 0..QUEUED {
            s.send_to(&payload, to)?;
        }
        Ok(())
    })
    .join()
    .expect("the Linux sender")?;
    let mut buf = vec![0u8; PACKET];
    let watch = Stopwatch::start(setup);
    let mut packets = 0u64;
    while dev.receive(&mut buf)?.is_some() {
        packets += 1;
    }
    Ok(ReadCost {
        packets,
        timed: watch.stop(),
    })
}
