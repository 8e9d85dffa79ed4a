//! The TCP sockets' output: the segments connections queued leave
//! through the interface at [`TcpSockets::flush`], and their payload
//! buffers go back to the pool connections borrow from. Under
//! `--checksum incremental` a pure ACK is written from its connection's
//! ACK template (`tcp_ack_template.rs`).

use super::ack_template::AckTemplate;
use super::{Entry, TcpSockets};
use crate::iface::route::cache::CachedRoute;
use crate::iface::{IfaceError, Interface};
use crate::phy::Device;
use crate::tcp::isn::FourTuple;
use crate::tcp::tcb::{Connection, ConnectionError};
use crate::time::Instant;
use crate::wire::{ChecksumMethod, IpProtocol, Ipv4Address, TcpPacket};
use std::borrow::Cow;
use std::net::{SocketAddr, SocketAddrV4};

/// Spare payload buffers kept: about a flush's worth of segments.
pub(crate) const PAYLOAD_POOL: usize = 128;
/// The largest payload buffer kept (a 1500-byte MTU's segment fits; a
/// super-segment's is freed), so the pool holds 256 KB at most.
pub(crate) const POOLED_PAYLOAD: usize = 2048;

fn v4(addr: SocketAddr) -> SocketAddrV4 {
    match addr {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => unreachable!("the stack is IPv4 only"),
    }
}

impl TcpSockets {
    /// Sends every queued segment through `iface`. A segment refused for a
    /// reason of its own (no route) is dropped (TCP retransmits); one the
    /// interface will not send because its peer is a broadcast ends its
    /// connection; a device failure stops the flush and is returned.
    pub fn flush(
        &mut self,
        iface: &mut Interface,
        device: &mut dyn Device,
        now: Instant,
    ) -> Result<usize, IfaceError> {
        let method = self.checksum;
        let mut sent = 0;
        let outbox = std::mem::take(&mut self.outbox);
        let mut result = Ok(());
        let mut not_unicast = Vec::new();
        for (tuple, segment) in &outbox {
            let local = v4(tuple.local);
            let remote = v4(tuple.remote);
            // --checksum incremental: a pure ACK is written from the
            // connection's last one, its checksum patched by RFC 1624.
            let templated = method == ChecksumMethod::Incremental
                && AckTemplate::takes(&segment.header, segment.payload_len());
            let mut template = if templated {
                self.take_ack_template(tuple)
            } else {
                None
            };
            let mut patched = false;
            // --route-cache on: the connection's route, taken out while
            // the segment leaves on it (or a lookup refills it).
            let mut route = self.route_cache.then(|| self.take_route(tuple));
            if let Some(slot) = &route {
                let valid = slot.and_then(|c| c.valid_for(iface.route_generation(), *remote.ip()));
                match valid {
                    Some(_) => self.counters.route_cache_hits += 1,
                    None => self.counters.route_cache_misses += 1,
                }
            }
            // The header as queued (its payload field empty), emitted with
            // the payload from `parts`: its own bytes, or, for a payload
            // left in the send buffer, the ring's slices. What an ACK since
            // acknowledged is not sent: the header then starts later.
            let mut parts: [&[u8]; 2] = [&segment.payload, &[]];
            let mut repr = Cow::Borrowed(&segment.header);
            if segment.in_send_buffer > 0 {
                let Some(in_place) = self
                    .connection_on(tuple)
                    .and_then(|conn| conn.in_place_payload(segment))
                else {
                    continue;
                };
                if in_place.seq != repr.seq_number {
                    repr.to_mut().seq_number = in_place.seq;
                }
                parts = in_place.parts;
            }
            let payload_len = parts[0].len() + parts[1].len();
            let segment_size = self.wire_segment_size(tuple, payload_len);
            let sent_one = iface.send_ip_routed(
                device,
                now,
                Some(Ipv4Address::from(*local.ip())),
                Ipv4Address::from(*remote.ip()),
                IpProtocol::Tcp,
                repr.header_len() + payload_len,
                segment_size,
                route.as_mut(),
                |ip, out| {
                    let addrs = (ip.src_addr, ip.dst_addr);
                    if let Some(t) = template.as_mut().filter(|t| t.fits(&repr)) {
                        t.write(&repr, out, addrs);
                        patched = true;
                        return;
                    }
                    let mut packet = TcpPacket::new_unchecked(&mut *out);
                    repr.emit_with_payload_parts(&mut packet, addrs.0, addrs.1, method, parts);
                    if templated {
                        template = Some(AckTemplate::new(&repr, out));
                    }
                },
            );
            if templated {
                self.put_ack_template(tuple, template, patched);
            }
            if let Some(slot) = route {
                self.put_route(tuple, slot);
            }
            match sent_one {
                Ok(_) => sent += 1,
                Err(IfaceError::Device(e)) => {
                    result = Err(IfaceError::Device(e));
                    break;
                }
                Err(IfaceError::NotUnicast(_)) => not_unicast.push(*tuple),
                Err(_) => {}
            }
        }
        for tuple in not_unicast {
            self.refuse_not_unicast(&tuple);
        }
        self.counters.segments_out += sent as u64;
        let mut outbox = outbox;
        for (_, segment) in outbox.drain(..) {
            let payload = segment.payload;
            if (1..=POOLED_PAYLOAD).contains(&payload.capacity())
                && self.payload_pool.len() < PAYLOAD_POOL
            {
                self.payload_pool.push(payload);
            }
        }
        if self.outbox.is_empty() {
            self.outbox = outbox;
        }
        result.map(|()| sent)
    }

    /// The interface refused to send TCP to the connection's peer, one of
    /// its networks' broadcasts (RFC 1122 §4.2.3.10): the open is refused,
    /// the connection ends with that error.
    fn refuse_not_unicast(&mut self, tuple: &FourTuple) {
        let Some(index) = self.by_tuple.get(tuple) else {
            return;
        };
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            s.conn.enter_closed(Some(ConnectionError::NotUnicast));
        }
        self.touched(index);
    }

    /// The ACK template of the connection on `tuple`, taken out while a
    /// pure ACK is written from it.
    fn take_ack_template(&mut self, tuple: &FourTuple) -> Option<AckTemplate> {
        let index = self.by_tuple.get(tuple)?;
        match self.entries.get_mut(index)?.as_mut()? {
            Entry::Socket(s) => s.ack_template.take(),
            Entry::Listener(_) => None,
        }
    }

    /// Puts the connection's ACK template back (the one just written, or
    /// built), counting a patched checksum in its counters.
    fn put_ack_template(
        &mut self,
        tuple: &FourTuple,
        template: Option<AckTemplate>,
        patched: bool,
    ) {
        let Some(index) = self.by_tuple.get(tuple) else {
            return;
        };
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            s.ack_template = template;
            if patched {
                s.conn.counters.incremental_checksums += 1;
            }
        }
    }

    /// The cached route of the connection on `tuple`, taken out while a
    /// segment leaves on it.
    fn take_route(&mut self, tuple: &FourTuple) -> Option<CachedRoute> {
        let index = self.by_tuple.get(tuple)?;
        match self.entries.get_mut(index)?.as_mut()? {
            Entry::Socket(s) => s.route.take(),
            Entry::Listener(_) => None,
        }
    }

    /// Puts the connection's cached route back.
    fn put_route(&mut self, tuple: &FourTuple, route: Option<CachedRoute>) {
        let Some(index) = self.by_tuple.get(tuple) else {
            return;
        };
        if let Some(Some(Entry::Socket(s))) = self.entries.get_mut(index) {
            s.route = route;
        }
    }

    /// The connection on `tuple`, if it is still there.
    fn connection_on(&self, tuple: &FourTuple) -> Option<&Connection> {
        let index = self.by_tuple.get(tuple)?;
        match self.entries.get(index)?.as_ref()? {
            Entry::Socket(s) => Some(&s.conn),
            Entry::Listener(_) => None,
        }
    }

    /// For a super-segment of the connection on `tuple` (a payload over
    /// its MSS), the payload per wire segment the device is to cut it
    /// into; `None` for any other segment.
    fn wire_segment_size(&self, tuple: &FourTuple, payload_len: usize) -> Option<usize> {
        if self.super_segment_limit == 0 {
            return None;
        }
        let size = self.connection_on(tuple)?.wire_segment_size();
        (payload_len > size).then_some(size)
    }
}
