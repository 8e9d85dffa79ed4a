//! The whole stack on one device: the interface, UDP and TCP sockets and
//! the clock, driven by a loop on the caller's thread (issue 18 wants the
//! stack on the bench's own threads, so its CPU is accounted as the
//! kernel's is).
//!
//! [`Stack::poll`] does one round: frames in (ARP, ping, UDP, TCP), the
//! TCP timers that are due, and everything queued out. [`Stack::run_until`]
//! polls, then sleeps on the device no longer than the earliest TCP timer
//! or the deadline, and polls again: the caller's own work (reading and
//! writing sockets) goes between two calls.

use crate::account::{self, Block};
use crate::iface::udp::UdpSockets;
use crate::iface::{Delivery, IfaceError, Interface, InterfaceConfig, IpHandler};
use crate::phy::Device;
use crate::socket::tcp::TcpSockets;
use crate::tcp::isn::IsnGenerator;
use crate::tcp::tcb::{TcpConfig, MAX_SUPER_SEGMENT};
use crate::time::{Clock, Instant};
use crate::wire::{ChecksumMethod, Ipv4Repr, UdpRepr};
use std::sync::Arc;
use std::time::Duration;

/// UDP to the UDP sockets, TCP to the TCP sockets, for one `poll`.
struct Transports<'a> {
    udp: &'a mut UdpSockets,
    tcp: &'a mut TcpSockets,
    now: Instant,
}

impl IpHandler for Transports<'_> {
    fn udp(&mut self, ip: &Ipv4Repr, udp: &UdpRepr<'_>) -> Delivery {
        self.udp.udp(ip, udp)
    }

    fn tcp(&mut self, ip: &Ipv4Repr, segment: &[u8], checksum: ChecksumMethod) -> Delivery {
        // Relabelled to the fast path when header prediction takes it.
        let _b = account::enter(Block::TcpInputSlow);
        self.tcp
            .process_with_checksum(ip, segment, self.now, checksum)
    }

    fn icmp_error(&mut self, error: &crate::iface::icmp_error::IcmpError) -> Delivery {
        match error.protocol {
            crate::wire::IpProtocol::Tcp => self.tcp.icmp_error(error),
            _ => Delivery::NoListener,
        }
    }
}

/// One device, its interface, the sockets above it and the clock.
pub struct Stack<D: Device> {
    /// The device (a TUN, a TAP, or wrappers around one).
    pub device: D,
    /// The interface over it.
    pub iface: Interface,
    /// The UDP sockets.
    pub udp: UdpSockets,
    /// The TCP sockets.
    pub tcp: TcpSockets,
    clock: Arc<dyn Clock>,
}

impl<D: Device> std::fmt::Debug for Stack<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("iface", &self.iface)
            .field("tcp", &self.tcp.counters())
            .finish_non_exhaustive()
    }
}

impl<D: Device> Stack<D> {
    /// A stack on `device` with an interface as `iface` says, TCP
    /// connections built from `tcp` with ISNs from `isn`, reading time
    /// from `clock`.
    ///
    /// The device is the offload switch: on one opened with the
    /// virtio-net header and offloads (`TunKind::TunOffload`), TCP and UDP
    /// checksums are left to the kernel (the method becomes `Offload`,
    /// whatever `iface` asked) and TCP sends super-segments of up to
    /// `tcp.max_super_segment` bytes for it to cut; received super-packets
    /// go up whole. On any other device nothing of this happens.
    pub fn new(
        device: D,
        iface: InterfaceConfig,
        tcp: TcpConfig,
        isn: IsnGenerator,
        clock: Arc<dyn Clock>,
    ) -> Stack<D> {
        let offloads = device.capabilities().offloads;
        let mut iface = iface;
        if offloads.checksum {
            // The kernel finishes TCP and UDP checksums (virtio-net's
            // NEEDS_CSUM); the IPv4 header and ICMP are still summed here.
            iface.checksum = ChecksumMethod::Offload;
        }
        let mut sockets = TcpSockets::new(tcp, isn, iface.checksum);
        if offloads.tso4 {
            sockets.set_super_segment_limit(MAX_SUPER_SEGMENT);
        }
        Stack {
            device,
            iface: Interface::new(iface),
            udp: UdpSockets::default(),
            tcp: sockets,
            clock,
        }
    }

    /// The stack's clock now.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// One round at `now`: reads up to the interface's budget of frames,
    /// runs due timers, sends what is queued. Returns how many frames were
    /// read. The frames the round sends are written back to back as its
    /// batch fills and at its end (`InterfaceConfig::tx_batch`), so none
    /// is left held when it returns, even when it fails.
    pub fn poll(&mut self, now: Instant) -> Result<usize, IfaceError> {
        // A round of the accountant's sampling: this poll and the
        // application's work until the next.
        account::round();
        self.iface.begin_round();
        let result = self.round(now);
        let written = self.iface.end_round(&mut self.device);
        let read = result?;
        written?;
        Ok(read)
    }

    fn round(&mut self, now: Instant) -> Result<usize, IfaceError> {
        let mut transports = Transports {
            udp: &mut self.udp,
            tcp: &mut self.tcp,
            now,
        };
        let read = self.iface.poll(&mut self.device, now, &mut transports)?;
        {
            let _b = account::enter(Block::Timers);
            self.tcp.on_timers(now);
        }
        {
            let _b = account::enter(Block::TcpOutput);
            self.tcp.flush(&mut self.iface, &mut self.device, now)?;
        }
        self.udp.flush(&mut self.iface, &mut self.device, now)?;
        Ok(read)
    }

    /// Polls, then (unless frames are still waiting) sleeps on the device
    /// until a frame arrives, the earliest TCP timer, or `deadline`,
    /// whichever is first, and polls again. Returns after that one
    /// wake-up, so the caller can serve its sockets.
    pub fn run_until(&mut self, deadline: Instant) -> Result<(), IfaceError> {
        let now = self.clock.now();
        let read = self.poll(now)?;
        if read > 0 {
            return Ok(());
        }
        let wake = match self.tcp.poll_at() {
            Some(at) => at.min(deadline),
            None => deadline,
        };
        let timeout = wake.since(now);
        if timeout > Duration::ZERO {
            let _b = account::enter_wait();
            self.device.wait(Some(timeout))?;
        }
        let now = self.clock.now();
        self.poll(now)?;
        Ok(())
    }
}
