//! The interface's output path: `send_ip` routes a packet, picks its
//! source address, writes the IPv4 header (identification counter, DF by
//! default) and the payload the caller emits (TCP only between unicast
//! addresses, RFC 1122 §4.2.3.10), and on Ethernet resolves the
//! next hop through the ARP cache, holding one packet per unresolved next
//! hop until the reply releases it.

use super::arp_cache::Lookup;
use super::counters::DropReason;
use super::interface::{IfaceError, Interface, SendOutcome};
use super::offload;
use super::route::cache::CachedRoute;
use super::route::NextHop;
use crate::phy::tun::MAX_SUPER_PACKET;
use crate::phy::vnet::{VirtioNetHdr, F_NEEDS_CSUM, VNET_HDR_LEN};
use crate::phy::{Device, Medium, PhyError};
use crate::time::Instant;
use crate::wire::ethernet::ETHERNET_HEADER_LEN;
use crate::wire::ipv4::IPV4_HEADER_LEN;
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, EtherType, EthernetAddress, EthernetFrame, EthernetRepr,
    IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr,
};
use std::net::Ipv4Addr;

/// The alignment a transmitted frame starts at (a cache line).
const FRAME_ALIGN: usize = 64;

impl Interface {
    /// Sends an IPv4 packet of `payload_len` bytes to `dst` from the
    /// address on the next hop's network: `emit` writes the payload into
    /// the slice it is given, with the packet's IP header (for
    /// pseudo-header checksums).
    pub fn send_ip(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        dst: Ipv4Address,
        protocol: IpProtocol,
        payload_len: usize,
        emit: impl FnOnce(&Ipv4Repr, &mut [u8]),
    ) -> Result<SendOutcome, IfaceError> {
        self.send_ip_from(device, now, None, dst, protocol, payload_len, emit)
    }

    /// [`Interface::send_ip`] from a given source address (`None`: chosen
    /// by the route), as a reply is sent from the address it was sent to.
    /// `emit` is handed zeroed bytes.
    #[allow(clippy::too_many_arguments)]
    pub fn send_ip_from(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        src: Option<Ipv4Address>,
        dst: Ipv4Address,
        protocol: IpProtocol,
        payload_len: usize,
        emit: impl FnOnce(&Ipv4Repr, &mut [u8]),
    ) -> Result<SendOutcome, IfaceError> {
        let zeroed = |ip: &Ipv4Repr, out: &mut [u8]| {
            out.fill(0);
            emit(ip, out)
        };
        self.send_ip_cut(device, now, src, dst, protocol, payload_len, None, zeroed)
    }

    /// [`Interface::send_ip_from`] for a TCP segment that may be a
    /// super-segment: when it exceeds the MTU and the device cuts TCP/IPv4
    /// super-packets (TSO), it leaves whole, with a virtio-net header
    /// telling the kernel to cut it into `segment_size`-byte payloads
    /// (the connection's MSS less options); otherwise as `send_ip_from`,
    /// except that `emit` must write every byte of its slice: it holds
    /// what the last packet left there, not zeros (a TCP segment's emit
    /// writes them all, and a memset of each frame is saved).
    #[allow(clippy::too_many_arguments)]
    pub fn send_ip_cut(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        src: Option<Ipv4Address>,
        dst: Ipv4Address,
        protocol: IpProtocol,
        payload_len: usize,
        segment_size: Option<usize>,
        emit: impl FnOnce(&Ipv4Repr, &mut [u8]),
    ) -> Result<SendOutcome, IfaceError> {
        let route = None;
        self.send_ip_routed(
            device,
            now,
            src,
            dst,
            protocol,
            payload_len,
            segment_size,
            route,
            emit,
        )
    }

    /// [`Interface::send_ip_cut`] with a connection's cached route
    /// (`--route-cache on`): a route `cache` holds for `dst` at the
    /// table's current generation is taken without a lookup; otherwise
    /// the route looked up is left in it.
    #[allow(clippy::too_many_arguments)]
    pub fn send_ip_routed(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        src: Option<Ipv4Address>,
        dst: Ipv4Address,
        protocol: IpProtocol,
        payload_len: usize,
        segment_size: Option<usize>,
        cache: Option<&mut Option<CachedRoute>>,
        emit: impl FnOnce(&Ipv4Repr, &mut [u8]),
    ) -> Result<SendOutcome, IfaceError> {
        let _b = crate::account::enter(crate::account::Block::IpOutput);
        if protocol == IpProtocol::Tcp {
            // RFC 1122 §4.2.3.10: TCP is between two hosts, never from or
            // to a broadcast or multicast address (a source the route
            // picks is one of ours).
            let not_unicast = src.into_iter().chain([dst]).find(|a| !self.is_unicast(*a));
            if let Some(addr) = not_unicast {
                self.counters.count_drop(DropReason::TcpNotUnicast);
                return Err(IfaceError::NotUnicast(addr));
            }
        }
        let route = self.route_to(dst.into(), cache);
        let Some(route) = route else {
            self.counters.count_drop(DropReason::NoRoute);
            return Err(IfaceError::NoRoute(dst));
        };
        let next_hop = match route.next_hop {
            NextHop::Direct => Ipv4Addr::from(dst),
            NextHop::Gateway(gateway) => gateway,
        };
        let src = match src {
            Some(src) => src,
            None => self.source_for(next_hop.into())?,
        };
        let caps = device.capabilities();
        let mtu = caps.mtu;
        let ip_len = IPV4_HEADER_LEN + payload_len;
        if self.fragments(protocol, ip_len, mtu) && !caps.offloads.vnet_header {
            let route = super::fragment_out::Route {
                src,
                dst,
                next_hop: route.next_hop,
            };
            return self.send_fragmented(device, now, route, protocol, payload_len, mtu, emit);
        }
        let cut = segment_size.filter(|&size| {
            protocol == IpProtocol::Tcp && caps.offloads.tso4 && ip_len > mtu && size > 0
        });
        let limit = if cut.is_some() { MAX_SUPER_PACKET } else { mtu };
        if ip_len > limit {
            self.counters.count_drop(DropReason::TooBig);
            return Err(IfaceError::TooBig { len: ip_len, mtu });
        }
        let repr = Ipv4Repr {
            src_addr: src,
            dst_addr: dst,
            next_header: protocol,
            payload_len,
            hop_limit: self.hop_limit,
            dscp_ecn: 0,
            ident: self.next_ident,
            dont_frag: self.dont_frag,
            more_frags: false,
            frag_offset: 0,
            options_len: 0,
        };
        let link = match self.medium {
            Medium::Ip => 0,
            Medium::Ethernet => ETHERNET_HEADER_LEN,
        };
        let vnet = if caps.offloads.vnet_header {
            VNET_HDR_LEN
        } else {
            0
        };
        let len = vnet + link + ip_len;
        // On a TUN, a frame the round holds back is built where it waits
        // (no copy); otherwise in the interface's own buffer.
        let in_batch = self.medium == Medium::Ip && self.batch_room(device, len)?;
        let (mut frames, start) = if in_batch {
            self.tx_batch.take_slot(len)
        } else {
            let mut frames = std::mem::take(&mut self.tx_buffer);
            // Every byte is written below (the virtio-net, Ethernet and
            // IPv4 headers here, the payload by `emit`): only growth is
            // zeroed.
            frames.resize(len + FRAME_ALIGN, 0);
            // The frame starts on a cache line: the kernel's copy of it (a
            // TUN write) ran at half speed from wherever malloc put the Vec.
            let start = frames.as_ptr().align_offset(FRAME_ALIGN).min(FRAME_ALIGN);
            (frames, start)
        };
        let buffer = &mut frames[start..start + len];
        let ip_start = vnet + link;
        repr.emit(
            &mut Ipv4Packet::new_unchecked(&mut buffer[ip_start..]),
            self.checksum,
        );
        emit(&repr, &mut buffer[ip_start + IPV4_HEADER_LEN..]);
        // The kernel numbers the segments it cuts from `ident` up.
        let mut idents = 1;
        if vnet > 0 {
            let header =
                offload::transmit_header(&mut buffer[ip_start..], link, cut, self.checksum);
            header.emit(&mut buffer[..VNET_HDR_LEN]);
            if header.flags & F_NEEDS_CSUM != 0 {
                self.counters.checksums_offloaded_out += 1;
            }
            if let Some(size) = cut {
                let tcp_header = usize::from(header.hdr_len) - link - IPV4_HEADER_LEN;
                let segments = offload::wire_segments(payload_len - tcp_header, size);
                self.counters.super_packets_out += 1;
                self.counters.super_packet_segments_out += segments as u64;
                idents = segments as u16;
            }
        }
        self.next_ident = self.next_ident.wrapping_add(idents);
        if in_batch {
            self.tx_batch.commit(frames, len);
            return Ok(SendOutcome::Sent);
        }
        let result = match self.medium {
            Medium::Ip => self.transmit(device, buffer).map(|()| SendOutcome::Sent),
            Medium::Ethernet => {
                self.resolve_and_send(device, now, src, dst, next_hop, buffer, vnet)
            }
        };
        self.tx_buffer = frames;
        result
    }

    /// Our address on `next_hop`'s network, else our first address.
    fn source_for(&self, next_hop: Ipv4Address) -> Result<Ipv4Address, IfaceError> {
        self.addresses
            .iter()
            .find(|c| c.contains_addr(&next_hop))
            .or_else(|| self.addresses.first())
            .map(|c| c.address())
            .ok_or(IfaceError::NoAddress)
    }

    /// Fills in the Ethernet header of `frame` (an IPv4 packet after room
    /// for it, after `vnet` bytes of virtio-net header) and sends it, or
    /// holds the packet (with its virtio-net header) while ARP asks for
    /// the next hop.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resolve_and_send(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        src: Ipv4Address,
        dst: Ipv4Address,
        next_hop: Ipv4Addr,
        frame: &mut [u8],
        vnet: usize,
    ) -> Result<SendOutcome, IfaceError> {
        let _b = crate::account::enter(crate::account::Block::Arp);
        let broadcast =
            dst.is_broadcast() || self.addresses.iter().any(|c| c.broadcast() == Some(dst));
        let dst_mac = if broadcast {
            EthernetAddress::BROADCAST
        } else {
            match self.arp.lookup(next_hop, now) {
                Lookup::Found(hw) => EthernetAddress(hw),
                lookup => {
                    let mut packet = frame[..vnet].to_vec();
                    packet.extend_from_slice(&frame[vnet + ETHERNET_HEADER_LEN..]);
                    let since = match self.awaiting_arp.get(&next_hop) {
                        Some((since, _)) => *since,
                        None => now,
                    };
                    if self
                        .awaiting_arp
                        .insert(next_hop, (since, packet))
                        .is_some()
                    {
                        self.counters.count_drop(DropReason::ArpPendingReplaced);
                    }
                    if lookup == Lookup::SendRequest {
                        let request = ArpRepr {
                            operation: ArpOperation::Request,
                            source_hardware_addr: self.mac,
                            source_protocol_addr: src,
                            target_hardware_addr: EthernetAddress([0; 6]),
                            target_protocol_addr: next_hop.into(),
                        };
                        self.send_arp(device, EthernetAddress::BROADCAST, &request)?;
                        self.counters.arp_requests_sent += 1;
                    }
                    return Ok(SendOutcome::AwaitingArp);
                }
            }
        };
        self.write_ethernet_header(&mut frame[vnet..], dst_mac, EtherType::Ipv4);
        self.transmit(device, frame)?;
        Ok(SendOutcome::Sent)
    }

    /// Sends the packet held for `next_hop`, now that it is at `mac`.
    pub(super) fn release_awaiting(
        &mut self,
        device: &mut dyn Device,
        next_hop: Ipv4Addr,
        mac: EthernetAddress,
    ) -> Result<(), IfaceError> {
        let Some((_, packet)) = self.awaiting_arp.remove(&next_hop) else {
            return Ok(());
        };
        // The held packet keeps the virtio-net header it was built with.
        let vnet = vnet_len(device);
        let mut frame = vec![0u8; ETHERNET_HEADER_LEN + packet.len()];
        frame[..vnet].copy_from_slice(&packet[..vnet]);
        frame[vnet + ETHERNET_HEADER_LEN..].copy_from_slice(&packet[vnet..]);
        self.write_ethernet_header(&mut frame[vnet..], mac, EtherType::Ipv4);
        self.transmit(device, &frame)?;
        self.counters.arp_pending_released += 1;
        Ok(())
    }

    /// Sends an ARP packet to `dst_mac`.
    pub(super) fn send_arp(
        &mut self,
        device: &mut dyn Device,
        dst_mac: EthernetAddress,
        arp: &ArpRepr,
    ) -> Result<(), IfaceError> {
        const LEN: usize = ETHERNET_HEADER_LEN + crate::wire::arp::ARP_ETHERNET_IPV4_LEN;
        let mut buffer = [0u8; VNET_HDR_LEN + LEN];
        let vnet = vnet_len(device);
        VirtioNetHdr::PLAIN.emit(&mut buffer);
        let frame = &mut buffer[VNET_HDR_LEN - vnet..];
        self.write_ethernet_header(&mut frame[vnet..], dst_mac, EtherType::Arp);
        arp.emit(&mut ArpPacket::new_unchecked(
            &mut frame[vnet + ETHERNET_HEADER_LEN..],
        ));
        self.transmit(device, frame)
    }

    /// Writes the Ethernet header at the start of `frame`.
    fn write_ethernet_header(&self, frame: &mut [u8], dst: EthernetAddress, ethertype: EtherType) {
        let _b = crate::account::enter(crate::account::Block::Ethernet);
        EthernetRepr {
            src_addr: self.mac,
            dst_addr: dst,
            ethertype,
        }
        .emit(&mut EthernetFrame::new_unchecked(frame));
    }

    /// Gives a frame to the device; a full queue or an oversized frame is
    /// counted as a drop, other failures are returned.
    pub(super) fn transmit(
        &mut self,
        device: &mut dyn Device,
        frame: &[u8],
    ) -> Result<(), IfaceError> {
        if self.batch_room(device, frame.len())? {
            let _b = crate::account::enter(crate::account::Block::DeviceSend);
            self.tx_batch.push(frame);
            return Ok(());
        }
        self.write_frame(device, frame)
    }

    /// Whether a frame of `len` bytes joins the round's held frames. A
    /// full batch is written first to make room; a frame too big to hold
    /// goes out after the held ones, so frames always leave in order.
    fn batch_room(&mut self, device: &mut dyn Device, len: usize) -> Result<bool, IfaceError> {
        if self.tx_batch.holds(len) {
            if self.tx_batch.full_for(len) {
                self.write_held(device)?;
            }
            return Ok(true);
        }
        if self.tx_batch.len() > 0 {
            self.write_held(device)?;
        }
        Ok(false)
    }

    /// Writes one frame to the device and counts it; a frame the device
    /// refuses (full queue, too long) is counted as dropped. Accounted as
    /// device send wherever the write happens (as built, or when a full
    /// batch or the round's end lets the held frames go).
    fn write_frame(&mut self, device: &mut dyn Device, frame: &[u8]) -> Result<(), IfaceError> {
        let _b = crate::account::enter(crate::account::Block::DeviceSend);
        match device.transmit(frame) {
            Ok(()) => {
                crate::account::frame_out(frame.len());
                self.counters.frames_out += 1;
                self.counters.bytes_out += frame.len() as u64;
                Ok(())
            }
            Err(PhyError::Exhausted | PhyError::TooLong { .. }) => {
                self.counters.count_drop(DropReason::DeviceRefused);
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the frames held back, in order. A device failure stops
    /// the writing; the frames after it are lost (TCP retransmits).
    fn write_held(&mut self, device: &mut dyn Device) -> Result<(), IfaceError> {
        let mut batch = std::mem::take(&mut self.tx_batch);
        let result = batch.drain(|frame| self.write_frame(device, frame));
        self.tx_batch = batch;
        result
    }

    /// From now until [`Interface::end_round`], frames are held back
    /// (up to `InterfaceConfig::tx_batch` at a time) instead of written
    /// as each is built.
    pub fn begin_round(&mut self) {
        self.tx_batch.open();
    }

    /// Writes the frames held back and stops holding them.
    pub fn end_round(&mut self, device: &mut dyn Device) -> Result<(), IfaceError> {
        self.tx_batch.close();
        if self.tx_batch.len() == 0 {
            return Ok(());
        }
        self.write_held(device)
    }
}

/// The virtio-net header's length before each frame on `device` (0 when
/// it has none).
fn vnet_len(device: &dyn Device) -> usize {
    if device.capabilities().offloads.vnet_header {
        VNET_HDR_LEN
    } else {
        0
    }
}
