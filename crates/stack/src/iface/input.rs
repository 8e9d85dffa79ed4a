//! The interface's input path: Ethernet → ARP or IPv4; IPv4 checked
//! (checksum by the interface's method, destination, TTL), fragments
//! reassembled, then ICMP echo answered here and UDP and TCP handed to the
//! [`IpHandler`]; TCP only between two unicast addresses (RFC 1122
//! §4.2.3.10: a segment to or from a broadcast is dropped unanswered).

use super::counters::DropReason;
use super::fragment::FragmentError;
use super::icmp_error::{UnreachableCode, DESTINATION_UNREACHABLE};
use super::interface::{IfaceError, Interface};
use super::upper::{Delivery, IpHandler};
use crate::phy::{Device, Medium};
use crate::time::Instant;
use crate::wire::ethernet::ETHERNET_HEADER_LEN;
use crate::wire::{
    ArpOperation, ArpPacket, ArpRepr, ChecksumMethod, EtherType, EthernetFrame, EthernetRepr,
    Icmpv4Packet, Icmpv4Repr, IpProtocol, Ipv4Packet, Ipv4Repr, UdpPacket, UdpRepr, WireError,
};
use std::net::Ipv4Addr;

impl Interface {
    /// Handles one received frame (an IP packet on an IP medium), its
    /// TCP or UDP checksum to be checked by `transport` (the interface's
    /// method, or none when the device vouched for it).
    pub(super) fn process_frame(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        frame: &[u8],
        transport: ChecksumMethod,
        upper: &mut dyn IpHandler,
    ) -> Result<(), IfaceError> {
        if self.medium == Medium::Ip {
            return self.process_ipv4(device, now, frame, transport, upper);
        }
        let _b = crate::account::enter(crate::account::Block::Ethernet);
        let eth = match EthernetFrame::new_checked(frame).and_then(|f| EthernetRepr::parse(&f)) {
            Ok(eth) => eth,
            Err(_) => return self.drop(DropReason::Malformed),
        };
        if eth.dst_addr != self.mac && !eth.dst_addr.is_broadcast() {
            return self.drop(DropReason::NotOurMac);
        }
        let payload = &frame[ETHERNET_HEADER_LEN..];
        match eth.ethertype {
            EtherType::Arp => self.process_arp(device, now, payload),
            EtherType::Ipv4 => self.process_ipv4(device, now, payload, transport, upper),
            _ => self.drop(DropReason::UnknownEthertype),
        }
    }

    /// Counts a drop; never fails (so callers can `return self.drop(..)`).
    fn drop(&mut self, reason: DropReason) -> Result<(), IfaceError> {
        self.counters.count_drop(reason);
        Ok(())
    }

    /// ARP (RFC 826): learn the sender when the request or reply is for
    /// one of our addresses, or when we already know or wait for it;
    /// answer requests for our addresses; release a packet held for the
    /// sender.
    fn process_arp(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        payload: &[u8],
    ) -> Result<(), IfaceError> {
        let _b = crate::account::enter(crate::account::Block::Arp);
        let arp = match ArpPacket::new_checked(payload).and_then(|p| ArpRepr::parse(&p)) {
            Ok(arp) => arp,
            Err(_) => return self.drop(DropReason::Malformed),
        };
        let for_us = self.has_address(arp.target_protocol_addr);
        let sender = Ipv4Addr::from(arp.source_protocol_addr);
        let sender_ok = arp.source_protocol_addr.is_unicast()
            && !arp.source_protocol_addr.is_unspecified()
            && arp.source_hardware_addr.is_unicast();
        let known = self.arp.peek(sender, now).is_some() || self.awaiting_arp.contains_key(&sender);
        if sender_ok && (for_us || known) {
            self.arp.fill(sender, arp.source_hardware_addr.0, now);
            self.release_awaiting(device, sender, arp.source_hardware_addr)?;
        }
        if for_us && arp.operation == ArpOperation::Request {
            let reply = ArpRepr {
                operation: ArpOperation::Reply,
                source_hardware_addr: self.mac,
                source_protocol_addr: arp.target_protocol_addr,
                target_hardware_addr: arp.source_hardware_addr,
                target_protocol_addr: arp.source_protocol_addr,
            };
            self.send_arp(device, arp.source_hardware_addr, &reply)?;
            self.counters.arp_replies_sent += 1;
        }
        Ok(())
    }

    /// IPv4 (RFC 791, RFC 1122 §3.2.1): the header checked, packets not
    /// for us dropped, fragments reassembled.
    fn process_ipv4(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        bytes: &[u8],
        transport: ChecksumMethod,
        upper: &mut dyn IpHandler,
    ) -> Result<(), IfaceError> {
        let _b = crate::account::enter(crate::account::Block::IpInput);
        let packet = match Ipv4Packet::new_checked(bytes) {
            Ok(p) => p,
            Err(_) if bytes.first().is_some_and(|b| b >> 4 != 4) => {
                return self.drop(DropReason::UnknownEthertype)
            }
            Err(_) => return self.drop(DropReason::Malformed),
        };
        if packet.version() != 4 {
            return self.drop(DropReason::UnknownEthertype);
        }
        let ip = match Ipv4Repr::parse(&packet, self.checksum) {
            Ok(ip) => ip,
            Err(WireError::Checksum) => return self.drop(DropReason::BadChecksum),
            Err(_) => return self.drop(DropReason::Malformed),
        };
        if !self.accepts(ip.dst_addr) {
            return self.drop(DropReason::NotOurAddress);
        }
        if ip.hop_limit == 0 {
            return self.drop(DropReason::TtlExpired);
        }
        let payload = packet.payload();
        if !ip.is_fragment() {
            return self.deliver(device, now, &ip, payload, transport, upper);
        }
        match self.reassembler.add(&ip, payload, now) {
            Ok(None) => Ok(()),
            Ok(Some((whole, data))) => {
                self.counters.datagrams_reassembled += 1;
                // No device vouches for a datagram put together here.
                let software = super::offload::receive_checksum(None, self.checksum);
                self.deliver(device, now, &whole, &data, software, upper)
            }
            Err(FragmentError::Limit) => self.drop(DropReason::FragmentLimit),
            Err(FragmentError::Invalid) => self.drop(DropReason::FragmentInvalid),
        }
    }

    /// A whole datagram for us, by protocol.
    fn deliver(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        ip: &Ipv4Repr,
        payload: &[u8],
        transport: ChecksumMethod,
        upper: &mut dyn IpHandler,
    ) -> Result<(), IfaceError> {
        let delivery = match ip.next_header {
            IpProtocol::Icmp => return self.process_icmp(device, now, ip, payload, upper),
            IpProtocol::Udp => {
                let parsed = UdpPacket::new_checked(payload).and_then(|p| {
                    UdpRepr::parse(&p, ip.src_addr, ip.dst_addr, transport)
                        .map(|r| (r.src_port, r.dst_port, r.payload))
                });
                match parsed {
                    Ok((src_port, dst_port, data)) => {
                        let udp = UdpRepr {
                            src_port,
                            dst_port,
                            payload: data,
                        };
                        upper.udp(ip, &udp)
                    }
                    Err(WireError::Checksum) => return self.drop(DropReason::BadChecksum),
                    Err(_) => return self.drop(DropReason::Malformed),
                }
            }
            IpProtocol::Tcp => {
                // RFC 1122 §4.2.3.10: TCP to a broadcast (or multicast,
                // which `accepts` already refused) is silently discarded,
                // and so is TCP from one: no SYN-ACK, no RST.
                if !self.has_address(ip.dst_addr) || !self.is_unicast(ip.src_addr) {
                    return self.drop(DropReason::TcpNotUnicast);
                }
                upper.tcp(ip, payload, transport)
            }
            IpProtocol::Unknown(_) => {
                self.send_unreachable(device, now, ip, payload, UnreachableCode::Protocol)?;
                return self.drop(DropReason::UnknownProtocol);
            }
        };
        match delivery {
            Delivery::Accepted => {
                self.counters.ip_delivered += 1;
                Ok(())
            }
            Delivery::NoListener => {
                if ip.next_header == IpProtocol::Udp {
                    self.send_unreachable(device, now, ip, payload, UnreachableCode::Port)?;
                }
                self.drop(DropReason::NoListener)
            }
        }
    }

    /// ICMP (RFC 792): an echo request to one of our addresses is answered
    /// by turning a copy of it into the reply in place.
    fn process_icmp(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        ip: &Ipv4Repr,
        payload: &[u8],
        upper: &mut dyn IpHandler,
    ) -> Result<(), IfaceError> {
        if payload.first() == Some(&DESTINATION_UNREACHABLE) {
            let verified =
                Icmpv4Packet::new_checked(payload).is_ok_and(|p| p.verify_checksum(self.checksum));
            if !verified {
                return self.drop(DropReason::BadChecksum);
            }
            return match self.receive_unreachable(payload, upper) {
                Delivery::Accepted => {
                    self.counters.ip_delivered += 1;
                    Ok(())
                }
                Delivery::NoListener => self.drop(DropReason::UnhandledIcmp),
            };
        }
        let message = match Icmpv4Packet::new_checked(payload)
            .and_then(|p| Icmpv4Repr::parse(&p, self.checksum))
        {
            Ok(message) => message,
            Err(WireError::Checksum) => return self.drop(DropReason::BadChecksum),
            Err(WireError::Unsupported(_)) => return self.drop(DropReason::UnhandledIcmp),
            Err(_) => return self.drop(DropReason::Malformed),
        };
        let Icmpv4Repr::EchoRequest { .. } = message else {
            return self.drop(DropReason::UnhandledIcmp);
        };
        if !self.has_address(ip.dst_addr) {
            // Echo to a broadcast address: not answered (as Linux's
            // icmp_echo_ignore_broadcasts).
            return self.drop(DropReason::UnhandledIcmp);
        }
        self.counters.ip_delivered += 1;
        let method = self.checksum;
        let sent = self.send_ip_from(
            device,
            now,
            Some(ip.dst_addr),
            ip.src_addr,
            IpProtocol::Icmp,
            payload.len(),
            |_, out| {
                out.copy_from_slice(payload);
                Icmpv4Packet::new_unchecked(out).make_echo_reply_in_place(method);
            },
        );
        match sent {
            Ok(_) => {
                self.counters.echo_replies_sent += 1;
                Ok(())
            }
            Err(IfaceError::Device(e)) => Err(IfaceError::Device(e)),
            // Counted by send_ip_from (no route, too big).
            Err(_) => Ok(()),
        }
    }
}
