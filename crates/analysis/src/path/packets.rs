//! Packets by class (data, ACK, window update, control) per flow
//! direction, counted once each and on the wire: a packet forwarded by a
//! router passes `net_dev_queue` again at the router's egress and is
//! counted only at the first device that queued it (the sender's egress),
//! and a GSO aggregate handed to the device as one skb of N payload bytes
//! is ⌈N / MSS⌉ segments on the wire. Silly-window segments and windows
//! advertised below one MSS are counted as Guerrero & Frieder and RFC 1122
//! §4.2.3.3–4 define them.

use record::probe_event::{tcp_flags, ProbeEvent, ProbeId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// A data segment is silly when it carries less than MSS / 4 bytes while
/// the sender had more data queued. Guerrero & Frieder's SWS segments
/// carried 32–128 bytes with an Ethernet MSS of 1460: a tenth of the MSS or
/// less. RFC 1122's sender-side avoidance sends a short segment only when
/// it fills at least half the largest window the receiver offered, so
/// segments of MSS/2 and above are the avoidance at work, not the syndrome;
/// a quarter of the MSS (362 bytes at 1448) sits between the two, above the
/// paper's 128 bytes and below what the avoidance allows.
pub const SILLY_DIVISOR: u32 = 4;

/// The largest payload a silly segment can carry with this MSS (bytes):
/// anything below MSS / [`SILLY_DIVISOR`].
pub fn silly_limit(mss: u32) -> u32 {
    mss / SILLY_DIVISOR
}

/// Packets of one direction of one flow, by class.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PacketClasses {
    /// Sender port → receiver port.
    pub flow: String,
    /// Data segments on the wire: each skb handed to the device split at
    /// the MSS (⌈bytes / MSS⌉), or one per skb when the MSS is unknown.
    pub data: u64,
    /// Data skbs handed to the device (a GSO aggregate counts once).
    pub data_skbs: u64,
    /// Data bytes.
    pub data_bytes: u64,
    /// The MSS the skbs were split at (the sender's `snd_mss`), if known.
    pub mss: Option<u32>,
    /// Pure ACKs that moved the acknowledgment point or repeated it with the same window.
    pub acks: u64,
    /// Pure ACKs that only changed the advertised window.
    pub window_updates: u64,
    /// SYN, FIN or RST segments without data.
    pub control: u64,
    /// Largest data payload of one skb (with GSO up to 64 KB).
    pub largest_segment: u32,
    /// Wire segments shorter than the MSS (the largest skb when the MSS is
    /// unknown) while the sender had more data queued.
    pub small_with_more_queued: u64,
    /// Of them, the silly-window segments: shorter than
    /// [`silly_limit`]`(mss)` (0 when the MSS is unknown).
    pub silly: u64,
    /// The receiver's advertised window sampled as each data segment
    /// arrived (`tcp_probe` at the receiver: its `rcv_wnd`).
    pub window_samples: u64,
    /// Of those samples, windows smaller than one MSS (0 when the MSS is unknown).
    pub windows_below_mss: u64,
    /// The largest of those windows, bytes.
    pub largest_window: u32,
}

/// The header fields that identify one packet on its way through hops.
fn identity(e: &ProbeEvent) -> (u16, u16, u32, u32, u32, u8) {
    (e.sport, e.dport, e.seq, e.ack, e.len, e.flags)
}

/// How long after a retransmitted segment is queued its
/// `tcp_retransmit_skb` record may come: the tracepoint fires once the
/// segment has been handed down, microseconds later.
const RETRANSMIT_RECORD_LAG_NS: u64 = 1_000_000;

/// The records (in time order) without the `net_dev_queue` records of
/// packets forwarded by a router, so that each packet passes
/// `net_dev_queue` once, at the first device that queued it (the sender's
/// egress). A forwarded copy is either
/// - a packet without data (an ACK, a window update) whose skb is queued
///   again with the same headers as at its previous `net_dev_queue` (an
///   skb reused for a new packet carries other headers and counts again),
///   or
/// - a data skb carrying only bytes its flow already sent that no
///   `tcp_retransmit_skb` record claims: the router queues the sender's
///   skb again, or its GRO merged the sender's segments into a new skb
///   under a new id. A retransmission is queued first and then recorded by
///   `tcp_retransmit_skb` (within [`RETRANSMIT_RECORD_LAG_NS`]; a router on
///   the same CPU may forward it in between); each such record claims the
///   earliest unclaimed old-bytes skb of its flow with its sequence number
///   and length (the sender's own; else the earliest that holds its
///   sequence number), and counts it once.
pub fn without_forwarded_copies<'a>(ev: &[&'a ProbeEvent]) -> Vec<&'a ProbeEvent> {
    let mut last: HashMap<u64, (u16, u16, u32, u32, u32, u8)> = HashMap::new();
    // Per flow direction: the end of the data it sent so far, and the
    // old-bytes skbs not yet claimed by a retransmission record (index).
    let mut sent_end: HashMap<(u16, u16), u32> = HashMap::new();
    let mut unclaimed: HashMap<(u16, u16), Vec<usize>> = HashMap::new();
    let mut keep = vec![true; ev.len()];
    for (i, e) in ev.iter().enumerate() {
        let flow = (e.sport, e.dport);
        match e.probe_id() {
            // A failed retransmission (x[0], the error) queued nothing.
            ProbeId::Retransmit if e.x[0] == 0 => {
                let Some(waiting) = unclaimed.get_mut(&flow) else {
                    continue;
                };
                let recent =
                    |j: usize| e.ts_ns.saturating_sub(ev[j].ts_ns) <= RETRANSMIT_RECORD_LAG_NS;
                // The retransmitted skb itself has the record's sequence
                // number and length; a router's merged copy does not.
                let exact = |&j: &usize| recent(j) && ev[j].seq == e.seq && ev[j].len == e.len;
                let holds = |&j: &usize| recent(j) && e.seq.wrapping_sub(ev[j].seq) < ev[j].len;
                if let Some(k) = waiting
                    .iter()
                    .position(exact)
                    .or_else(|| waiting.iter().position(holds))
                {
                    keep[waiting.remove(k)] = true;
                }
            }
            ProbeId::DevQueue if e.len == 0 => {
                keep[i] = last.insert(e.id, identity(e)) != Some(identity(e));
            }
            ProbeId::DevQueue => {
                let end = e.seq.wrapping_add(e.len);
                match sent_end.get(&flow) {
                    Some(&high) if (end.wrapping_sub(high) as i32) <= 0 => {
                        // Old bytes only: a router's copy unless a
                        // retransmission record claims it.
                        keep[i] = false;
                        let waiting = unclaimed.entry(flow).or_default();
                        waiting.retain(|&j| {
                            e.ts_ns.saturating_sub(ev[j].ts_ns) <= RETRANSMIT_RECORD_LAG_NS
                        });
                        waiting.push(i);
                    }
                    _ => {
                        sent_end.insert(flow, end);
                    }
                }
            }
            _ => {}
        }
    }
    ev.iter()
        .zip(keep)
        .filter_map(|(e, k)| k.then_some(*e))
        .collect()
}

/// Packet classes per flow direction from records already stripped of
/// forwarded copies (see [`without_forwarded_copies`]), with GSO
/// aggregates split at `mss` when it is known.
pub fn packet_classes(ev: &[&ProbeEvent], mss: Option<u32>) -> Vec<PacketClasses> {
    let mss = mss.filter(|&m| m > 0);
    let mut flows: BTreeMap<(u16, u16), PacketClasses> = BTreeMap::new();
    let mut last_ack: HashMap<(u16, u16), (u32, u16)> = HashMap::new();
    // Send-queue end per flow, from the sender's writes: bytes queued
    // beyond a packet mean the sender had more data.
    let mut queued_end: HashMap<(u16, u16), u32> = HashMap::new();
    let mut largest: HashMap<(u16, u16), u32> = HashMap::new();
    for e in ev
        .iter()
        .filter(|e| e.probe_id() == ProbeId::DevQueue && e.len > 0)
    {
        let l = largest.entry((e.sport, e.dport)).or_default();
        *l = (*l).max(e.len);
    }
    for e in ev {
        match e.probe_id() {
            ProbeId::SendApp | ProbeId::TcpSendmsg => {
                queued_end.insert((e.sport, e.dport), e.seq);
            }
            ProbeId::DevQueue => {
                let k = (e.sport, e.dport);
                let c = flows.entry(k).or_insert_with(|| PacketClasses {
                    flow: format!("{} → {}", k.0, k.1),
                    mss,
                    ..PacketClasses::default()
                });
                if e.len > 0 {
                    let full = mss.unwrap_or_else(|| largest.get(&k).copied().unwrap_or(0));
                    let segments = match mss {
                        Some(m) => e.len.div_ceil(m).max(1),
                        None => 1,
                    };
                    c.data += segments as u64;
                    c.data_skbs += 1;
                    c.data_bytes += e.len as u64;
                    c.largest_segment = largest.get(&k).copied().unwrap_or(0);
                    // The last wire segment of the skb is the only one that
                    // can be short.
                    let tail = e.len - (segments - 1) * mss.unwrap_or(e.len);
                    let end = e.seq.wrapping_add(e.len);
                    let more = queued_end
                        .get(&k)
                        .is_some_and(|&q| (q.wrapping_sub(end) as i32) > 0);
                    if tail < full && more {
                        c.small_with_more_queued += 1;
                        if mss.is_some_and(|m| tail < silly_limit(m)) {
                            c.silly += 1;
                        }
                    }
                } else if e.flags & (tcp_flags::SYN | tcp_flags::FIN | tcp_flags::RST) != 0 {
                    c.control += 1;
                } else {
                    match last_ack.insert(k, (e.ack, e.win)) {
                        Some((ack, win)) if ack == e.ack && win != e.win => c.window_updates += 1,
                        _ => c.acks += 1,
                    }
                }
            }
            _ => {}
        }
    }
    // The receiver's offered window: tcp_probe at the receiving socket,
    // whose ports (local, remote) are the data flow's (dport, sport).
    for e in ev
        .iter()
        .filter(|e| e.probe_id() == ProbeId::TcpProbe && e.len > 0)
    {
        let Some(c) = flows.get_mut(&(e.dport, e.sport)) else {
            continue;
        };
        if c.data_skbs == 0 {
            continue;
        }
        let window = e.x[3];
        c.window_samples += 1;
        c.largest_window = c.largest_window.max(window);
        if mss.is_some_and(|m| window < m) {
            c.windows_below_mss += 1;
        }
    }
    flows.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::analyse_with_mss;

    /// A record of the flow 1000 → 2000 (data) or back (ACKs).
    fn rec(probe: ProbeId, ts: u64, skb: u64, len: u32, seq: u32) -> ProbeEvent {
        ProbeEvent {
            ts_ns: ts,
            id: skb,
            len,
            seq,
            ack: 0,
            ifindex: 2,
            x: [0; 4],
            sport: 1000,
            dport: 2000,
            win: 0,
            probe: probe as u8,
            flags: tcp_flags::ACK,
            cpu: 0,
            tid: 7,
        }
    }

    fn ack(ts: u64, skb: u64, ack_no: u32) -> ProbeEvent {
        let mut a = rec(ProbeId::DevQueue, ts, skb, 0, 0);
        (a.sport, a.dport, a.ack) = (2000, 1000, ack_no);
        a
    }

    /// The write that queued everything up to `end`.
    fn write(ts: u64, end: u32) -> ProbeEvent {
        rec(ProbeId::SendApp, ts, 0, end, end)
    }

    /// The receiver's tcp_probe on a data arrival, offering `window` bytes.
    fn arrival(ts: u64, window: u32) -> ProbeEvent {
        let mut e = rec(ProbeId::TcpProbe, ts, 0, 100, 0);
        (e.sport, e.dport) = (2000, 1000);
        e.x[3] = window;
        e
    }

    #[test]
    fn a_packet_forwarded_by_a_router_counts_once_and_a_reused_skb_again() {
        let mut v = Vec::new();
        // Two data packets and two ACKs, each queued at the sender's egress
        // and again, same skb and headers, at the router's egress.
        for (i, skb) in [(0u32, 10u64), (1, 11)] {
            let t = i as u64 * 1_000;
            let d = rec(ProbeId::DevQueue, t, skb, 1448, i * 1448);
            let mut fwd = d;
            (fwd.ts_ns, fwd.ifindex) = (t + 100, 3);
            let a = ack(t + 200, skb + 100, (i + 1) * 1448);
            let mut afwd = a;
            afwd.ts_ns = t + 300;
            v.extend([d, fwd, a, afwd]);
        }
        let a = analyse_with_mss(&v, Some(1448));
        let data = a.packets.iter().find(|p| p.flow == "1000 → 2000").unwrap();
        let back = a.packets.iter().find(|p| p.flow == "2000 → 1000").unwrap();
        assert_eq!((data.data, data.data_bytes), (2, 2 * 1448));
        assert_eq!(back.acks, 2);
        assert_eq!(a.time_sequence[0].data.len(), 2);
        // skb 10 reused for a new packet (other headers): counted again.
        v.push(rec(ProbeId::DevQueue, 5_000, 10, 1448, 2 * 1448));
        let a = analyse_with_mss(&v, Some(1448));
        let data = a.packets.iter().find(|p| p.flow == "1000 → 2000").unwrap();
        assert_eq!(data.data, 3);
    }

    #[test]
    fn a_routers_gro_aggregate_of_sent_bytes_counts_nowhere_and_a_retransmission_once() {
        // The sender queues three 1448-byte segments; the router's GRO
        // merges them into one skb (a new id) and queues it at its egress.
        let mut v: Vec<ProbeEvent> = (0..3u32)
            .map(|i| rec(ProbeId::DevQueue, i as u64, 10 + i as u64, 1448, i * 1448))
            .collect();
        v.push(rec(ProbeId::DevQueue, 50, 99, 3 * 1448, 0));
        let a = analyse_with_mss(&v, Some(1448));
        let data = a.packets.iter().find(|p| p.flow == "1000 → 2000").unwrap();
        assert_eq!((data.data, data.data_bytes), (3, 3 * 1448));
        // A retransmission of the second segment, announced by
        // tcp_retransmit_skb, is a packet of its own; the router's copy of
        // it is not.
        // tcp_retransmit_skb fires after the segment was queued; the
        // router's copy comes later still.
        v.push(rec(ProbeId::DevQueue, 100, 11, 1448, 1448));
        v.push(rec(ProbeId::Retransmit, 101, 11, 1448, 1448));
        v.push(rec(ProbeId::DevQueue, 150, 98, 1448, 1448));
        let a = analyse_with_mss(&v, Some(1448));
        let data = a.packets.iter().find(|p| p.flow == "1000 → 2000").unwrap();
        assert_eq!((data.data, data.data_bytes), (4, 4 * 1448));
        // A router's copy of old bytes with no retransmission record, or
        // one long after, counts nowhere.
        v.push(rec(ProbeId::DevQueue, 10_000_000, 97, 2 * 1448, 0));
        v.push(rec(ProbeId::Retransmit, 30_000_000, 12, 1448, 2 * 1448));
        let a = analyse_with_mss(&v, Some(1448));
        let data = a.packets.iter().find(|p| p.flow == "1000 → 2000").unwrap();
        assert_eq!((data.data, data.data_bytes), (4, 4 * 1448));
    }

    #[test]
    fn gso_aggregates_count_as_their_wire_segments() {
        // 2896 + 12 bytes in one skb: three segments at MSS 1448, never
        // more than the MSS per segment.
        let v = [rec(ProbeId::DevQueue, 0, 1, 2908, 0)];
        let a = analyse_with_mss(&v, Some(1448));
        let p = &a.packets[0];
        assert_eq!((p.data, p.data_skbs, p.mss), (3, 1, Some(1448)));
        assert!(p.data_bytes as f64 / p.data as f64 <= 1448.0);
        // Full-sized skbs stay one segment each; unknown MSS: one per skb.
        let v = [rec(ProbeId::DevQueue, 0, 1, 1448, 0)];
        assert_eq!(analyse_with_mss(&v, Some(1448)).packets[0].data, 1);
        let v = [rec(ProbeId::DevQueue, 0, 1, 2908, 0)];
        assert_eq!(analyse_with_mss(&v, None).packets[0].data, 1);
    }

    #[test]
    fn tiny_segments_with_more_queued_are_silly_and_full_ones_are_not() {
        // Healthy: full segments (one GSO aggregate of two), more queued.
        let healthy = [
            write(0, 100_000),
            rec(ProbeId::DevQueue, 1, 1, 1448, 0),
            rec(ProbeId::DevQueue, 2, 2, 2896, 1448),
            arrival(3, 64_000),
        ];
        let p = &analyse_with_mss(&healthy, Some(1448)).packets[0];
        assert_eq!((p.data, p.silly, p.small_with_more_queued), (3, 0, 0));
        assert_eq!((p.window_samples, p.windows_below_mss), (1, 0));
        // Pathological: 64-byte segments into 64-byte windows while 100 KB
        // wait; one 724-byte segment is short but not silly (half the MSS
        // is what sender-side avoidance sends).
        let mut sick = vec![write(0, 100_000)];
        for i in 0..9u32 {
            sick.push(rec(
                ProbeId::DevQueue,
                10 + i as u64,
                1 + i as u64,
                64,
                i * 64,
            ));
            sick.push(arrival(10 + i as u64, 64));
        }
        sick.push(rec(ProbeId::DevQueue, 30, 20, 724, 9 * 64));
        let p = &analyse_with_mss(&sick, Some(1448)).packets[0];
        assert_eq!((p.data, p.small_with_more_queued, p.silly), (10, 10, 9));
        assert_eq!((p.window_samples, p.windows_below_mss), (9, 9));
        assert_eq!(p.largest_window, 64);
        assert_eq!(silly_limit(1448), 362);
    }

    #[test]
    fn the_last_short_segment_of_a_transfer_is_not_silly() {
        // Nothing queued beyond the 100-byte tail: Nagle's last segment.
        let v = [
            write(0, 1548),
            rec(ProbeId::DevQueue, 1, 1, 1448, 0),
            rec(ProbeId::DevQueue, 2, 2, 100, 1448),
        ];
        let p = &analyse_with_mss(&v, Some(1448)).packets[0];
        assert_eq!((p.data, p.silly, p.small_with_more_queued), (2, 0, 0));
    }
}
