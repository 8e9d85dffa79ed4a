//! Output fragmentation (RFC 791 §3.2, RFC 1122 §3.3.3): a datagram
//! larger than the link's MTU leaves in fragments of at most the MTU, each
//! a multiple of 8 payload bytes but the last, sharing one
//! identification, DF clear, for the peer to reassemble. As Linux does for
//! UDP under `IP_PMTUDISC_WANT`, a datagram that fits keeps DF (path MTU
//! discovery) and one that does not is fragmented locally. TCP never
//! relies on it (its segments fit the MSS; one that does not is refused
//! as too big), nor does anything when the interface's
//! `fragment_output` switch is off: DF is then respected and the datagram
//! refused.
//!
//! Not on a device with virtio-net headers (an offload TUN): there a
//! datagram over the MTU is refused as before (its transport checksum may
//! be left for the device to finish, which fragments cannot have).
//!
//! On Ethernet each fragment goes through ARP like any packet; while the
//! next hop is unresolved only the last one waits (one packet is held per
//! next hop), so the datagram is lost and its sender retries, as with any
//! unresolved send.

use super::interface::{IfaceError, Interface, SendOutcome};
use super::route::NextHop;
use crate::phy::{Device, Medium};
use crate::time::Instant;
use crate::wire::ethernet::ETHERNET_HEADER_LEN;
use crate::wire::ipv4::IPV4_HEADER_LEN;
use crate::wire::{IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr};
use std::net::Ipv4Addr;

/// The largest IPv4 datagram (its total-length field).
const MAX_DATAGRAM: usize = 65535;

/// Where a datagram goes, as `send_ip_from` resolved it.
pub(super) struct Route {
    pub(super) src: Ipv4Address,
    pub(super) dst: Ipv4Address,
    pub(super) next_hop: NextHop,
}

impl Interface {
    /// Whether a datagram of `ip_len` bytes over an MTU of `mtu` is sent
    /// in fragments rather than refused.
    pub(super) fn fragments(&self, protocol: IpProtocol, ip_len: usize, mtu: usize) -> bool {
        self.fragment_output
            && protocol != IpProtocol::Tcp
            && ip_len > mtu
            && ip_len <= MAX_DATAGRAM
            && mtu >= IPV4_HEADER_LEN + 8
    }

    /// Sends a `payload_len`-byte datagram in fragments of at most `mtu`
    /// bytes; `emit` writes the whole payload first (with the whole
    /// datagram's header, for pseudo-header checksums).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn send_fragmented(
        &mut self,
        device: &mut dyn Device,
        now: Instant,
        route: Route,
        protocol: IpProtocol,
        payload_len: usize,
        mtu: usize,
        emit: impl FnOnce(&Ipv4Repr, &mut [u8]),
    ) -> Result<SendOutcome, IfaceError> {
        let whole = Ipv4Repr {
            src_addr: route.src,
            dst_addr: route.dst,
            next_header: protocol,
            payload_len,
            hop_limit: self.hop_limit,
            dscp_ecn: 0,
            ident: self.next_ident,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            options_len: 0,
        };
        self.next_ident = self.next_ident.wrapping_add(1);
        let mut payload = vec![0u8; payload_len];
        emit(&whole, &mut payload);
        let link = match self.medium {
            Medium::Ip => 0,
            Medium::Ethernet => ETHERNET_HEADER_LEN,
        };
        let per_fragment = (mtu - IPV4_HEADER_LEN) & !7;
        let next_hop = match route.next_hop {
            NextHop::Direct => Ipv4Addr::from(route.dst),
            NextHop::Gateway(gateway) => gateway,
        };
        let mut outcome = SendOutcome::Sent;
        let mut buffer = std::mem::take(&mut self.tx_buffer);
        for (i, chunk) in payload.chunks(per_fragment).enumerate() {
            let offset = i * per_fragment;
            let repr = Ipv4Repr {
                payload_len: chunk.len(),
                more_frags: offset + chunk.len() < payload_len,
                frag_offset: offset as u16,
                ..whole
            };
            buffer.clear();
            buffer.resize(link + IPV4_HEADER_LEN + chunk.len(), 0);
            repr.emit(
                &mut Ipv4Packet::new_unchecked(&mut buffer[link..]),
                self.checksum,
            );
            buffer[link + IPV4_HEADER_LEN..].copy_from_slice(chunk);
            let sent = match self.medium {
                Medium::Ip => self.transmit(device, &buffer).map(|()| SendOutcome::Sent),
                Medium::Ethernet => self.resolve_and_send(
                    device,
                    now,
                    route.src,
                    route.dst,
                    next_hop,
                    &mut buffer,
                    0,
                ),
            };
            match sent {
                Ok(o) => {
                    self.counters.fragments_out += 1;
                    if o == SendOutcome::AwaitingArp {
                        outcome = o;
                    }
                }
                Err(e) => {
                    self.tx_buffer = buffer;
                    return Err(e);
                }
            }
        }
        self.tx_buffer = buffer;
        self.counters.datagrams_fragmented += 1;
        Ok(outcome)
    }
}
