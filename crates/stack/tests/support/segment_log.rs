//! A device wrapper for the interop tests: it decodes every TCP segment
//! the stack sends or receives into a [`Seen`] record (shared with the
//! test through an `Arc<Mutex<_>>`), and drops chosen data segments — the
//! n-th segment of new data in one direction — so a test can open holes
//! at known places and count the bytes it removed.

#![allow(dead_code)]

use stack::phy::{Capabilities, Device, Medium, PhyError};
use stack::wire::tcp::SackBlocks;
use stack::wire::{
    ChecksumMethod, EtherType, EthernetFrame, IpProtocol, Ipv4Packet, Ipv4Repr, SeqNumber,
    TcpControl, TcpPacket, TcpRepr,
};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which way a segment went, seen from the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the stack to Linux.
    Out,
    /// From Linux to the stack.
    In,
}

/// One TCP segment's header as it crossed the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// Which way.
    pub direction: Direction,
    /// SYN, FIN, RST or none.
    pub control: TcpControl,
    /// The sequence number.
    pub seq: SeqNumber,
    /// The ACK number, if ACK was set.
    pub ack: Option<SeqNumber>,
    /// The window field as sent (unscaled).
    pub window: u16,
    /// The payload's length.
    pub len: usize,
    /// The MSS option.
    pub mss: Option<u16>,
    /// The window-scale option.
    pub window_scale: Option<u8>,
    /// SACK-permitted.
    pub sack_permitted: bool,
    /// SACK blocks.
    pub sack: SackBlocks,
    /// Dropped by the wrapper (never delivered).
    pub dropped: bool,
}

impl Seen {
    /// Whether it carried SACK blocks.
    pub fn has_sack(&self) -> bool {
        self.sack.iter().any(Option::is_some)
    }
}

/// Which new-data segments to drop, by 1-based index per direction.
#[derive(Debug, Clone, Default)]
pub struct DropPlan {
    /// Indices among the stack's new data segments toward Linux.
    pub out: BTreeSet<u64>,
    /// Indices among Linux's new data segments toward the stack.
    pub inbound: BTreeSet<u64>,
}

/// What the wrapper recorded; the test keeps a clone of the `Arc`.
#[derive(Debug, Default)]
pub struct SegmentLog {
    /// Every TCP segment, in order.
    pub segments: Vec<Seen>,
    /// Payload octets the drop plan removed, per direction (out, in).
    pub dropped_bytes: (u64, u64),
    new_data: (u64, u64),
    high_end: (Option<SeqNumber>, Option<SeqNumber>),
}

impl SegmentLog {
    /// The segments one way.
    pub fn one_way(&self, direction: Direction) -> impl Iterator<Item = &Seen> {
        self.segments
            .iter()
            .filter(move |s| s.direction == direction)
    }

    /// The SYN (or SYN-ACK) sent one way.
    pub fn syn(&self, direction: Direction) -> Option<&Seen> {
        self.one_way(direction)
            .find(|s| s.control == TcpControl::Syn)
    }
}

/// Wraps `D`, logging into a shared [`SegmentLog`] and applying a [`DropPlan`].
pub struct Watched<D: Device> {
    inner: D,
    log: Arc<Mutex<SegmentLog>>,
    plan: DropPlan,
}

impl<D: Device> Watched<D> {
    /// Wraps `inner`; returns the wrapper and the log it fills.
    pub fn new(inner: D, plan: DropPlan) -> (Watched<D>, Arc<Mutex<SegmentLog>>) {
        let log = Arc::new(Mutex::new(SegmentLog::default()));
        (
            Watched {
                inner,
                log: log.clone(),
                plan,
            },
            log,
        )
    }

    /// Logs the frame; returns whether to drop it.
    fn look(&self, frame: &[u8], direction: Direction) -> bool {
        let medium = self.inner.capabilities().medium;
        let Some(mut seen) = decode(frame, medium, direction) else {
            return false;
        };
        let mut guard = self.log.lock().unwrap();
        let log = &mut *guard;
        if seen.len > 0 {
            let end = seen.seq + seen.len;
            let (high, count, plan) = match direction {
                Direction::Out => (&mut log.high_end.0, &mut log.new_data.0, &self.plan.out),
                Direction::In => (&mut log.high_end.1, &mut log.new_data.1, &self.plan.inbound),
            };
            if high.is_none_or(|h| end > h) {
                *high = Some(end);
                *count += 1;
                seen.dropped = plan.contains(count);
            }
            if seen.dropped {
                match direction {
                    Direction::Out => log.dropped_bytes.0 += seen.len as u64,
                    Direction::In => log.dropped_bytes.1 += seen.len as u64,
                }
            }
        }
        let dropped = seen.dropped;
        log.segments.push(seen);
        dropped
    }
}

/// The TCP segment in `frame`, if it holds one.
fn decode(frame: &[u8], medium: Medium, direction: Direction) -> Option<Seen> {
    let ip_bytes = match medium {
        Medium::Ip => frame,
        Medium::Ethernet => {
            let eth = EthernetFrame::new_checked(frame).ok()?;
            if eth.ethertype() != EtherType::Ipv4 {
                return None;
            }
            &frame[14..]
        }
    };
    let ip = Ipv4Packet::new_checked(ip_bytes).ok()?;
    let ip_repr = Ipv4Repr::parse(&ip, ChecksumMethod::Rfc1071).ok()?;
    if ip_repr.next_header != IpProtocol::Tcp || ip_repr.is_fragment() {
        return None;
    }
    let payload = ip.payload();
    let tcp = TcpPacket::new_checked(payload).ok()?;
    let repr = TcpRepr::parse(
        &tcp,
        ip_repr.src_addr,
        ip_repr.dst_addr,
        ChecksumMethod::Rfc1071,
    )
    .ok()?;
    Some(Seen {
        direction,
        control: repr.control,
        seq: repr.seq_number,
        ack: repr.ack_number,
        window: repr.window_len,
        len: repr.payload.len(),
        mss: repr.max_seg_size,
        window_scale: repr.window_scale,
        sack_permitted: repr.sack_permitted,
        sack: repr.sack_ranges,
        dropped: false,
    })
}

impl<D: Device> Device for Watched<D> {
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn receive(&mut self, buf: &mut [u8]) -> Result<Option<usize>, PhyError> {
        loop {
            let Some(n) = self.inner.receive(buf)? else {
                return Ok(None);
            };
            if !self.look(&buf[..n], Direction::In) {
                return Ok(Some(n));
            }
        }
    }

    fn transmit(&mut self, frame: &[u8]) -> Result<(), PhyError> {
        if self.look(frame, Direction::Out) {
            return Ok(());
        }
        self.inner.transmit(frame)
    }

    fn wait(&mut self, timeout: Option<Duration>) -> Result<bool, PhyError> {
        self.inner.wait(timeout)
    }
}
