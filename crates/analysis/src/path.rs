//! The microscopic view of one probed trial: from the probe records, the
//! delay of each hop along the path (the SunOS IPC study's queues), queue
//! lengths, the sender's idle time (Abrams & Chen §3.3), and each packet's
//! class (data, ACK, window update) with silly-window segments flagged
//! (Guerrero & Frieder).
//!
//! Packets are followed across the device-layer probes by their skb
//! address; bytes are followed from the application's write to the packet
//! that carried them, and from their arrival to the read that took them, by
//! TCP sequence numbers (unwrapped per flow).

use record::probe_event::{tcp_flags, ProbeEvent, ProbeId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

mod acks;
mod occupancy;
mod packets;
use acks::ack_causes;
pub use acks::AckCauses;
pub use packets::{
    packet_classes, silly_limit, without_forwarded_copies, PacketClasses, SILLY_DIVISOR,
};

/// Width of the processing-delay histogram bins (the SunOS study's 50 µs).
pub const BIN_US: f64 = 50.0;
/// Bins before the overflow bin (0–1 ms).
pub const BINS: usize = 20;

/// Delays of one hop of the path.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HopStats {
    /// What the hop is, e.g. `net_dev_queue → net_dev_start_xmit`.
    pub hop: String,
    /// Observations.
    pub n: usize,
    /// Median, µs.
    #[serde(with = "crate::stats::finite_or_null")]
    pub p50_us: f64,
    /// 90th percentile, µs.
    #[serde(with = "crate::stats::finite_or_null")]
    pub p90_us: f64,
    /// 99th percentile, µs.
    #[serde(with = "crate::stats::finite_or_null")]
    pub p99_us: f64,
    /// Largest, µs.
    #[serde(with = "crate::stats::finite_or_null")]
    pub max_us: f64,
    /// Mean, µs.
    #[serde(with = "crate::stats::finite_or_null")]
    pub mean_us: f64,
    /// Counts per 50 µs bin from 0 to 1 ms, then one overflow bin.
    pub histogram: Vec<u64>,
}

impl HopStats {
    /// Summarizes delays in nanoseconds (None if there are none).
    pub fn of(hop: &str, mut ns: Vec<u64>) -> Option<HopStats> {
        if ns.is_empty() {
            return None;
        }
        ns.sort_unstable();
        let q = |p: f64| ns[((ns.len() - 1) as f64 * p).round() as usize] as f64 / 1e3;
        let mut histogram = vec![0u64; BINS + 1];
        for &d in &ns {
            let b = ((d as f64 / 1e3) / BIN_US) as usize;
            histogram[b.min(BINS)] += 1;
        }
        Some(HopStats {
            hop: hop.to_string(),
            n: ns.len(),
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: *ns.last().expect("non-empty") as f64 / 1e3,
            mean_us: ns.iter().map(|&d| d as f64).sum::<f64>() / ns.len() as f64 / 1e3,
            histogram,
        })
    }
}

/// A queue's length as the probes sampled it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QueueStats {
    /// Which queue, and in what unit.
    pub queue: String,
    /// Samples.
    pub n: usize,
    /// Mean length.
    #[serde(with = "crate::stats::finite_or_null")]
    pub mean: f64,
    /// Largest length.
    #[serde(with = "crate::stats::finite_or_null")]
    pub max: f64,
    /// Up to 400 (seconds since the first record, length) points for plots.
    pub series: Vec<(f64, f64)>,
}

impl QueueStats {
    fn of(queue: &str, t0: u64, samples: &[(u64, f64)]) -> Option<QueueStats> {
        if samples.is_empty() {
            return None;
        }
        Some(QueueStats {
            queue: queue.to_string(),
            n: samples.len(),
            mean: samples.iter().map(|s| s.1).sum::<f64>() / samples.len() as f64,
            max: samples.iter().map(|s| s.1).fold(0.0, f64::max),
            series: thin(
                samples
                    .iter()
                    .map(|&(t, v)| (t.saturating_sub(t0) as f64 / 1e9, v))
                    .collect(),
                400,
            ),
        })
    }
}

/// Where one thread's time went during the transfer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadTime {
    /// Role: `sender` or `receiver`.
    pub role: String,
    /// Thread id.
    pub tid: u32,
    /// From its first to its last data call, s.
    #[serde(with = "crate::stats::finite_or_null")]
    pub span_s: f64,
    /// Switched out while runnable (preempted), s.
    #[serde(with = "crate::stats::finite_or_null")]
    pub preempted_s: f64,
    /// Switched out while sleeping (blocked: for send-buffer space or for
    /// data), s.
    #[serde(with = "crate::stats::finite_or_null")]
    pub blocked_s: f64,
    /// Blocked share of the span: Abrams & Chen's idle time.
    #[serde(with = "crate::stats::finite_or_null")]
    pub idle_fraction: f64,
}

/// Sequence numbers against time for one direction of data (Abrams & Chen
/// Fig. 5, Guerrero & Frieder Fig. 8), relative to the first byte, at most
/// 2000 points per series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct TimeSequence {
    /// Sender port → receiver port.
    pub flow: String,
    /// (s since the first record, end of each data segment sent) at `net_dev_queue`.
    pub data: Vec<(f64, f64)>,
    /// (s, acknowledged byte) as the sender's TCP processed each ACK (`tcp_probe`).
    pub acked: Vec<(f64, f64)>,
    /// (s, right edge of the offered window: ack + send window) at the same moments.
    pub window_edge: Vec<(f64, f64)>,
}

/// Everything derived from one trial's records.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PathAnalysis {
    /// Records analysed.
    pub records: usize,
    /// First to last record, s.
    #[serde(with = "crate::stats::finite_or_null")]
    pub span_s: f64,
    /// Records per probe.
    pub per_probe: BTreeMap<String, u64>,
    /// Per-hop delays along the path.
    pub hops: Vec<HopStats>,
    /// Queue lengths.
    pub queues: Vec<QueueStats>,
    /// Packet classes per flow direction (at `net_dev_queue`, each packet
    /// once: at the first device that queued it).
    pub packets: Vec<PacketClasses>,
    /// Sender and receiver time.
    pub threads: Vec<ThreadTime>,
    /// Sequence/acknowledgment/window against time, per data direction.
    pub time_sequence: Vec<TimeSequence>,
    /// What prompted the receiver's ACKs, per direction.
    pub ack_causes: Vec<AckCauses>,
}

/// Unwraps 32-bit sequence numbers into a 64-bit stream position, assuming
/// consecutive observations are less than 2 GB apart.
#[derive(Debug, Default)]
struct Unwrap {
    last: Option<(u32, i64)>,
}

impl Unwrap {
    fn at(&mut self, seq: u32) -> i64 {
        let pos = match self.last {
            None => seq as i64,
            Some((s, p)) => p + seq.wrapping_sub(s) as i32 as i64,
        };
        self.last = Some((seq, pos));
        pos
    }
}

/// The device-layer hops measured, as (from, to, name).
const HOPS: [(ProbeId, ProbeId, &str); 4] = [
    (
        ProbeId::DevQueue,
        ProbeId::DevStartXmit,
        "interface queue: net_dev_queue → net_dev_start_xmit",
    ),
    (
        ProbeId::QdiscEnqueue,
        ProbeId::QdiscDequeue,
        "qdisc: qdisc_enqueue → qdisc_dequeue",
    ),
    (
        ProbeId::DevStartXmit,
        ProbeId::DevXmit,
        "driver: net_dev_start_xmit → net_dev_xmit",
    ),
    (
        ProbeId::DevStartXmit,
        ProbeId::NetifReceive,
        "to IP input: net_dev_start_xmit → netif_receive_skb",
    ),
];

/// The sender's MSS of a trial, from its `snd_mss` metric (TCP_INFO), the
/// size [`analyse_with_mss`] splits data skbs at; `None` when unknown.
pub fn sender_mss(metrics: &BTreeMap<String, f64>) -> Option<u32> {
    metrics
        .get("snd_mss")
        .filter(|m| m.is_finite() && **m >= 1.0)
        .map(|m| m.round() as u32)
}

/// Analyses one trial's records (any order), the MSS unknown: each data
/// skb counts as one segment. See [`analyse_with_mss`].
pub fn analyse(events: &[ProbeEvent]) -> PathAnalysis {
    analyse_with_mss(events, None)
}

/// Analyses one trial's records (any order), splitting each data skb (a
/// GSO aggregate) into wire segments at `mss` (the sender's `snd_mss` from
/// TCP_INFO, the size GSO cuts at). Packets forwarded by a router are
/// counted once, at the first device that queued them.
pub fn analyse_with_mss(events: &[ProbeEvent], mss: Option<u32>) -> PathAnalysis {
    let mut ev: Vec<&ProbeEvent> = events.iter().collect();
    ev.sort_by_key(|e| e.ts_ns);
    let mut a = PathAnalysis {
        records: ev.len(),
        ..PathAnalysis::default()
    };
    let (Some(first), Some(last)) = (ev.first(), ev.last()) else {
        return a;
    };
    let t0 = first.ts_ns;
    a.span_s = (last.ts_ns - t0) as f64 / 1e9;
    for e in &ev {
        *a.per_probe
            .entry(e.probe_id().tracepoint().to_string())
            .or_default() += 1;
    }
    // Every hop of every packet for the hop delays; each packet once for
    // the counts, the time-sequence and the socket queues.
    let (hops, spans) = device_hops(&ev);
    a.hops = hops;
    let once = without_forwarded_copies(&ev);
    a.hops.extend(socket_queue_delays(&once));
    a.queues = queue_lengths(&ev, t0);
    a.queues.extend(packet_queue_lengths(&spans, t0));
    a.packets = packet_classes(&once, mss);
    a.threads = thread_times(&ev);
    a.time_sequence = time_sequence(&once, t0);
    a.ack_causes = ack_causes(&once);
    a
}

/// Keeps at most `n` points, evenly spaced, always with the last one (a
/// plot must reach the end of the transfer).
fn thin(v: Vec<(f64, f64)>, n: usize) -> Vec<(f64, f64)> {
    let step = v.len().div_ceil(n.max(2) - 1).max(1);
    let last = v.last().copied();
    let mut out: Vec<(f64, f64)> = v.into_iter().step_by(step).collect();
    if let Some(l) = last {
        if out.last() != Some(&l) {
            out.push(l);
        }
    }
    out
}

fn time_sequence(ev: &[&ProbeEvent], t0: u64) -> Vec<TimeSequence> {
    // Data directions: flows with data at the device.
    let mut flows: Vec<(u16, u16)> = ev
        .iter()
        .filter(|e| e.probe_id() == ProbeId::DevQueue && e.len > 0)
        .map(|e| (e.sport, e.dport))
        .collect();
    flows.sort_unstable();
    flows.dedup();
    let secs = |t: u64| t.saturating_sub(t0) as f64 / 1e9;
    flows
        .into_iter()
        .map(|k| {
            let mut u = Unwrap::default();
            let mut base: Option<i64> = None;
            let mut rel = |seq: u32| {
                let p = u.at(seq);
                let b = *base.get_or_insert(p);
                (p - b) as f64
            };
            let (mut data, mut acked, mut edge) = (Vec::new(), Vec::new(), Vec::new());
            for e in ev {
                match e.probe_id() {
                    ProbeId::DevQueue if e.len > 0 && (e.sport, e.dport) == k => {
                        data.push((secs(e.ts_ns), rel(e.seq) + e.len as f64));
                    }
                    // ACKs arriving at the sender's socket (local = sender port).
                    ProbeId::TcpProbe
                        if e.len == 0
                            && (e.sport, e.dport) == k
                            && e.flags & tcp_flags::ACK != 0 =>
                    {
                        let a = rel(e.ack);
                        acked.push((secs(e.ts_ns), a));
                        edge.push((secs(e.ts_ns), a + e.x[2] as f64));
                    }
                    _ => {}
                }
            }
            TimeSequence {
                flow: format!("{} → {}", k.0, k.1),
                data: thin(data, 2000),
                acked: thin(acked, 2000),
                window_edge: thin(edge, 2000),
            }
        })
        .collect()
}

/// Follows each packet (skb) from `net_dev_queue` through the driver to IP
/// input: each hop's delays, and each packet's (entry, exit) times per hop.
fn device_hops(ev: &[&ProbeEvent]) -> (Vec<HopStats>, Vec<Vec<(u64, u64)>>) {
    let mut by_skb: HashMap<u64, Vec<&ProbeEvent>> = HashMap::new();
    for e in ev.iter().filter(|e| e.probe_id().is_packet()) {
        by_skb.entry(e.id).or_default().push(e);
    }
    let mut delays: Vec<Vec<u64>> = vec![Vec::new(); HOPS.len()];
    let mut spans: Vec<Vec<(u64, u64)>> = vec![Vec::new(); HOPS.len()];
    for journey_events in by_skb.values() {
        // One skb may carry several packets over time: a new journey starts
        // at each net_dev_queue.
        let mut journey: HashMap<ProbeId, u64> = HashMap::new();
        let mut flush = |j: &HashMap<ProbeId, u64>| {
            for (i, (from, to, _)) in HOPS.iter().enumerate() {
                if let (Some(a), Some(b)) = (j.get(from), j.get(to)) {
                    if b >= a {
                        delays[i].push(b - a);
                        spans[i].push((*a, *b));
                    }
                }
            }
        };
        for e in journey_events {
            let id = e.probe_id();
            if id == ProbeId::DevQueue && !journey.is_empty() {
                flush(&journey);
                journey.clear();
            }
            journey.entry(id).or_insert(e.ts_ns);
        }
        flush(&journey);
    }
    let stats = HOPS
        .iter()
        .zip(delays)
        .filter_map(|((_, _, name), d)| HopStats::of(name, d))
        .collect();
    (stats, spans)
}

/// The queues no probe reports a length for, in packets (skbs: segments
/// when segmentation and receive offloads are off), from each packet's
/// time in them: the device's transmit queue and the IP input backlog.
fn packet_queue_lengths(spans: &[Vec<(u64, u64)>], t0: u64) -> Vec<QueueStats> {
    let of = |to: ProbeId, from: ProbeId| {
        HOPS.iter()
            .position(|(f, t, _)| *f == from && *t == to)
            .map(|i| occupancy::lengths_at_entry(&spans[i]))
            .unwrap_or_default()
    };
    [
        QueueStats::of(
            "interface queue (packets from net_dev_queue to the driver, at entry)",
            t0,
            &of(ProbeId::DevStartXmit, ProbeId::DevQueue),
        ),
        QueueStats::of(
            "IP input queue (packets from the driver to netif_receive_skb, at entry)",
            t0,
            &of(ProbeId::NetifReceive, ProbeId::DevStartXmit),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Send socket queue: from the write that supplied a packet's last byte to
/// the packet reaching the device. Receive socket queue: from a segment's
/// arrival at TCP to the read that took its last byte.
fn socket_queue_delays(ev: &[&ProbeEvent]) -> Vec<HopStats> {
    let mut send: Vec<u64> = Vec::new();
    let mut recv: Vec<u64> = Vec::new();
    // Per flow (local port, remote port): writes as (write_seq position, ts).
    let mut unwrap: HashMap<(u16, u16), Unwrap> = HashMap::new();
    let mut writes: HashMap<(u16, u16), Vec<(i64, u64)>> = HashMap::new();
    let mut reads: HashMap<(u16, u16), Vec<(i64, u64)>> = HashMap::new();
    let mut sent: Vec<((u16, u16), i64, u64)> = Vec::new();
    let mut arrived: Vec<((u16, u16), i64, u64)> = Vec::new();
    for e in ev {
        match e.probe_id() {
            ProbeId::SendApp if e.len > 0 => {
                let k = (e.sport, e.dport);
                let pos = unwrap.entry(k).or_default().at(e.seq);
                writes.entry(k).or_default().push((pos, e.ts_ns));
            }
            ProbeId::DevQueue if e.len > 0 => {
                let k = (e.sport, e.dport);
                let pos = unwrap.entry(k).or_default().at(e.seq);
                sent.push((k, pos + e.len as i64, e.ts_ns));
            }
            ProbeId::TcpProbe if e.len > 0 => {
                // tcp_probe's ports are the socket's (local, remote); the
                // receiver's reads use the same key.
                let k = (e.sport, e.dport);
                let pos = unwrap.entry((k.1, k.0)).or_default().at(e.seq);
                arrived.push((k, pos + e.len as i64, e.ts_ns));
            }
            ProbeId::RecvApp if e.len > 0 => {
                let k = (e.sport, e.dport);
                let pos = unwrap.entry((k.1, k.0)).or_default().at(e.seq);
                reads.entry(k).or_default().push((pos, e.ts_ns));
            }
            _ => {}
        }
    }
    // The write that supplied a packet's last byte precedes the packet; the
    // read that took a segment's last byte follows its arrival.
    for (k, end, t) in sent {
        if let Some(tw) = first_reaching(writes.get(&k), end) {
            send.extend(t.checked_sub(tw));
        }
    }
    for (k, end, t) in arrived {
        if let Some(tr) = first_reaching(reads.get(&k), end) {
            recv.extend(tr.checked_sub(t));
        }
    }
    [
        HopStats::of("send socket queue: sock_send_length → net_dev_queue", send),
        HopStats::of("receive socket queue: tcp_probe → sock_recv_length", recv),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The time of the first mark (stream position, ts) whose position reaches
/// `end`; marks are in position order.
fn first_reaching(marks: Option<&Vec<(i64, u64)>>, end: i64) -> Option<u64> {
    let m = marks?;
    m.get(m.partition_point(|&(p, _)| p < end)).map(|&(_, t)| t)
}

fn queue_lengths(ev: &[&ProbeEvent], t0: u64) -> Vec<QueueStats> {
    let pick = |id: ProbeId, f: &dyn Fn(&ProbeEvent) -> f64| -> Vec<(u64, f64)> {
        ev.iter()
            .filter(|e| e.probe_id() == id)
            .map(|e| (e.ts_ns, f(e)))
            .collect()
    };
    [
        QueueStats::of(
            "send socket queue (bytes, after each write)",
            t0,
            &pick(ProbeId::SendApp, &|e| e.x[1] as f64),
        ),
        QueueStats::of(
            "interface queue (packets, at enqueue)",
            t0,
            &pick(ProbeId::QdiscEnqueue, &|e| e.x[0] as f64),
        ),
        QueueStats::of(
            "receive socket queue (bytes, at data_ready)",
            t0,
            &pick(ProbeId::SkDataReady, &|e| e.x[0] as f64),
        ),
        QueueStats::of(
            "receive socket queue (bytes, after each read)",
            t0,
            &pick(ProbeId::RecvApp, &|e| e.x[1] as f64),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn thread_times(ev: &[&ProbeEvent]) -> Vec<ThreadTime> {
    let mut out = Vec::new();
    for (role, probe) in [("sender", ProbeId::SendApp), ("receiver", ProbeId::RecvApp)] {
        let calls: Vec<&&ProbeEvent> = ev.iter().filter(|e| e.probe_id() == probe).collect();
        let mut counts: HashMap<u32, usize> = HashMap::new();
        for c in &calls {
            *counts.entry(c.tid).or_default() += 1;
        }
        // The thread with the most calls; on a tie the lowest tid, so the
        // choice does not depend on the map's iteration order.
        let Some((&tid, _)) = counts
            .iter()
            .max_by_key(|(tid, n)| (**n, std::cmp::Reverse(**tid)))
        else {
            continue;
        };
        let mine: Vec<&&&ProbeEvent> = calls.iter().filter(|c| c.tid == tid).collect();
        let (start, end) = (mine[0].ts_ns, mine[mine.len() - 1].ts_ns);
        if end <= start {
            continue;
        }
        let (mut preempted, mut blocked) = (0u64, 0u64);
        let mut off: Option<(u64, bool)> = None;
        for e in ev.iter().filter(|e| e.probe_id() == ProbeId::SchedSwitch) {
            if e.x[0] == tid {
                off = Some((e.ts_ns, e.x[2] != 0));
            } else if e.x[1] == tid {
                if let Some((t, sleeping)) = off.take() {
                    // Only the part inside the transfer counts.
                    let a = t.max(start);
                    let b = e.ts_ns.min(end);
                    if b > a {
                        if sleeping {
                            blocked += b - a;
                        } else {
                            preempted += b - a;
                        }
                    }
                }
            }
        }
        let span = (end - start) as f64 / 1e9;
        out.push(ThreadTime {
            role: role.into(),
            tid,
            span_s: span,
            preempted_s: preempted as f64 / 1e9,
            blocked_s: blocked as f64 / 1e9,
            idle_fraction: blocked as f64 / 1e9 / span,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(probe: ProbeId, ts: u64, id: u64) -> ProbeEvent {
        ProbeEvent {
            ts_ns: ts,
            id,
            len: 0,
            seq: 0,
            ack: 0,
            ifindex: 1,
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

    #[test]
    fn hops_follow_each_skb_and_restart_on_reuse() {
        let mut v = Vec::new();
        for (base, skb) in [(0u64, 1u64), (100_000, 1), (0, 2)] {
            v.push(ev(ProbeId::DevQueue, base + 100, skb));
            v.push(ev(ProbeId::DevStartXmit, base + 1_100, skb));
            v.push(ev(ProbeId::DevXmit, base + 1_400, skb));
            v.push(ev(ProbeId::NetifReceive, base + 61_100, skb));
        }
        let a = analyse(&v);
        let q = &a.hops[0];
        assert_eq!((q.n, q.p50_us, q.max_us), (3, 1.0, 1.0));
        let drv = a.hops.iter().find(|h| h.hop.starts_with("driver")).unwrap();
        assert!((drv.mean_us - 0.3).abs() < 1e-9);
        let ip = a.hops.iter().find(|h| h.hop.starts_with("to IP")).unwrap();
        assert_eq!(ip.p50_us, 60.0);
        assert_eq!(ip.histogram[1], 3, "60 µs falls in the 50–100 µs bin");
    }

    #[test]
    fn the_ip_input_queue_is_counted_in_packets_from_each_packets_stay() {
        // Skbs 1 and 2 wait for IP input together; 3 comes after both left.
        let mut v = Vec::new();
        for (skb, sent, received) in [
            (1u64, 1_000u64, 50_000u64),
            (2, 2_000, 51_000),
            (3, 60_000, 61_000),
        ] {
            v.push(ev(ProbeId::DevQueue, sent - 100, skb));
            v.push(ev(ProbeId::DevStartXmit, sent, skb));
            v.push(ev(ProbeId::NetifReceive, received, skb));
        }
        let a = analyse(&v);
        let ip = a
            .queues
            .iter()
            .find(|q| q.queue.starts_with("IP input queue"))
            .unwrap();
        assert_eq!((ip.n, ip.max), (3, 2.0));
        assert!((ip.mean - 4.0 / 3.0).abs() < 1e-12);
        // Spread out, no packet finds another waiting.
        let mut apart = Vec::new();
        for (skb, sent) in [(1u64, 1_000u64), (2, 100_000), (3, 200_000)] {
            apart.push(ev(ProbeId::DevQueue, sent - 100, skb));
            apart.push(ev(ProbeId::DevStartXmit, sent, skb));
            apart.push(ev(ProbeId::NetifReceive, sent + 5_000, skb));
        }
        let b = analyse(&apart);
        let ip = b
            .queues
            .iter()
            .find(|q| q.queue.starts_with("IP input queue"))
            .unwrap();
        assert_eq!(ip.max, 1.0);
    }

    #[test]
    fn sequence_numbers_unwrap_across_zero() {
        let mut u = Unwrap::default();
        assert_eq!(u.at(u32::MAX - 9), (u32::MAX - 9) as i64);
        assert_eq!(u.at(5), u32::MAX as i64 + 6);
        assert_eq!(u.at(1), u32::MAX as i64 + 2, "a step back stays near");
    }

    #[test]
    fn send_queue_delay_matches_writes_to_packets() {
        let mut w = ev(ProbeId::SendApp, 1_000, 0);
        w.seq = 3_000; // write_seq after a write of 3000 bytes from 0
        w.len = 3_000;
        let mut p1 = ev(ProbeId::DevQueue, 5_000, 9);
        p1.seq = 0;
        p1.len = 1_000;
        let mut p2 = ev(ProbeId::DevQueue, 9_000, 9);
        p2.seq = 1_000;
        p2.len = 2_000;
        let a = analyse(&[w, p1, p2]);
        let s = a
            .hops
            .iter()
            .find(|h| h.hop.starts_with("send socket"))
            .unwrap();
        assert_eq!(s.n, 2);
        assert_eq!(s.max_us, 8.0);
        // p1 is smaller than the largest segment while bytes 1000..3000
        // were queued: a small segment with more queued.
        assert_eq!(a.packets[0].small_with_more_queued, 1);
        assert_eq!(a.packets[0].data, 2);
    }

    #[test]
    fn window_updates_are_told_from_acks() {
        let mk = |ts, ack, win| {
            let mut e = ev(ProbeId::DevQueue, ts, ts);
            e.ack = ack;
            e.win = win;
            e
        };
        let a = analyse(&[
            mk(1, 100, 10),
            mk(2, 200, 10),
            mk(3, 200, 50),
            mk(4, 200, 50),
        ]);
        assert_eq!(a.packets[0].acks, 3);
        assert_eq!(a.packets[0].window_updates, 1);
    }

    #[test]
    fn thinning_keeps_the_last_point_and_the_bound() {
        let v: Vec<(f64, f64)> = (0..10_001).map(|i| (i as f64, i as f64)).collect();
        let t = thin(v, 2000);
        assert!(t.len() <= 2000, "{}", t.len());
        assert_eq!(t.first(), Some(&(0.0, 0.0)));
        assert_eq!(t.last(), Some(&(10_000.0, 10_000.0)));
        assert_eq!(thin(vec![(1.0, 1.0)], 2000), vec![(1.0, 1.0)]);
    }

    #[test]
    fn acks_are_attributed_to_reads_or_arrivals() {
        let mut data = ev(ProbeId::DevQueue, 0, 1);
        data.len = 1000; // 1000 → 2000 carries data
        let mut read = ev(ProbeId::RecvApp, 1_000, 0);
        read.sport = 2000;
        read.dport = 1000;
        read.len = 1000;
        let ack = |ts| {
            let mut a = ev(ProbeId::DevQueue, ts, ts);
            a.sport = 2000;
            a.dport = 1000;
            a
        };
        let a = analyse(&[data, read, ack(20_000), ack(500_000)]);
        let c = &a.ack_causes[0];
        assert_eq!((c.acks, c.after_read, c.on_arrival), (2, 1, 1));
        // One read's 50 µs of the 499 µs from the read to the last ACK.
        assert_eq!(c.reads, 1);
        assert!((c.chance_after_read - 50.0 / 499.0).abs() < 1e-12, "{c:?}");
        let ts = &a.time_sequence[0];
        assert_eq!(ts.data, vec![(0.0, 1000.0)]);
    }

    #[test]
    fn idle_time_counts_blocked_not_preempted() {
        let mut v = vec![
            ev(ProbeId::SendApp, 0, 0),
            ev(ProbeId::SendApp, 1_000_000, 0),
        ];
        v[0].len = 1;
        v[1].len = 1;
        let mut out = ev(ProbeId::SchedSwitch, 100_000, 0);
        out.x = [7, 0, 1, 0]; // sleeping
        let mut inn = ev(ProbeId::SchedSwitch, 400_000, 0);
        inn.x = [0, 7, 0, 0];
        let mut pre = ev(ProbeId::SchedSwitch, 500_000, 0);
        pre.x = [7, 0, 0, 1]; // preempted while runnable
        let mut back = ev(ProbeId::SchedSwitch, 600_000, 0);
        back.x = [0, 7, 0, 0];
        v.extend([out, inn, pre, back]);
        let a = analyse(&v);
        let t = &a.threads[0];
        assert_eq!(t.role, "sender");
        assert!((t.blocked_s - 0.0003).abs() < 1e-12);
        assert!((t.preempted_s - 0.0001).abs() < 1e-12);
        assert!((t.idle_fraction - 0.3).abs() < 1e-9);
    }
}
