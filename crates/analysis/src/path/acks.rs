//! What prompted a receiver's ACKs (the SunOS study's Fig. 7): a read by
//! the application just before, or the arrival of data; and how many would
//! have followed a read by chance, given how often the application read.

use record::probe_event::{tcp_flags, ProbeEvent, ProbeId};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// What prompted the receiver's ACKs (the SunOS study's Fig. 7): an ACK
/// sent within 50 µs after the application read from the socket is a
/// window update caused by draining the receive queue; the others were sent
/// on arrival of data (or by the delayed-ACK timer).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AckCauses {
    /// Receiver port → sender port.
    pub flow: String,
    /// Pure ACKs seen leaving the receiver.
    pub acks: u64,
    /// Of them, sent within 50 µs after a read by the receiving application.
    pub after_read: u64,
    /// The others.
    pub on_arrival: u64,
    /// Reads of the receiving application with data.
    pub reads: u64,
    /// The share of ACKs that would fall within 50 µs after a read by
    /// chance, had the ACKs been sent at times unrelated to the reads: the
    /// share of the time from the flow's first to its last ACK or read
    /// that lies within 50 µs after some read (1 when that time is nil).
    #[serde(with = "crate::stats::finite_or_null")]
    pub chance_after_read: f64,
}

/// The share of `[from, to]` that lies within `window` after one of the
/// sorted times `reads` (0 without reads, else 1 when the interval is
/// empty).
fn covered_share(reads: &[u64], from: u64, to: u64, window: u64) -> f64 {
    if reads.is_empty() {
        return 0.0;
    }
    if to <= from {
        return 1.0;
    }
    let mut covered = 0u64;
    // The end of the union of windows counted so far.
    let mut reach = from;
    for &r in reads {
        let start = r.max(reach);
        let end = r.saturating_add(window).min(to);
        if end > start {
            covered += end - start;
            reach = end;
        }
    }
    covered as f64 / (to - from) as f64
}

pub(super) fn ack_causes(ev: &[&ProbeEvent]) -> Vec<AckCauses> {
    const WINDOW_NS: u64 = 50_000;
    let mut last_read: HashMap<(u16, u16), u64> = HashMap::new();
    // Per flow: the read times, and the first and last ACK or read.
    let mut reads: HashMap<(u16, u16), Vec<u64>> = HashMap::new();
    let mut extent: HashMap<(u16, u16), (u64, u64)> = HashMap::new();
    let mut widen = |k: (u16, u16), t: u64| {
        let e = extent.entry(k).or_insert((t, t));
        e.0 = e.0.min(t);
        e.1 = e.1.max(t);
    };
    let mut out: BTreeMap<(u16, u16), AckCauses> = BTreeMap::new();
    let mut data_flows: Vec<(u16, u16)> = Vec::new();
    for e in ev
        .iter()
        .filter(|e| e.probe_id() == ProbeId::DevQueue && e.len > 0)
    {
        if !data_flows.contains(&(e.dport, e.sport)) {
            data_flows.push((e.dport, e.sport));
        }
    }
    for e in ev {
        match e.probe_id() {
            ProbeId::RecvApp if e.len > 0 => {
                last_read.insert((e.sport, e.dport), e.ts_ns);
                reads.entry((e.sport, e.dport)).or_default().push(e.ts_ns);
                widen((e.sport, e.dport), e.ts_ns);
            }
            ProbeId::DevQueue
                if e.len == 0
                    && e.flags & (tcp_flags::SYN | tcp_flags::FIN | tcp_flags::RST) == 0
                    && data_flows.contains(&(e.sport, e.dport)) =>
            {
                let k = (e.sport, e.dport);
                let c = out.entry(k).or_insert_with(|| AckCauses {
                    flow: format!("{} → {}", k.0, k.1),
                    ..AckCauses::default()
                });
                c.acks += 1;
                widen(k, e.ts_ns);
                let after = last_read
                    .get(&k)
                    .is_some_and(|&t| e.ts_ns >= t && e.ts_ns - t <= WINDOW_NS);
                if after {
                    c.after_read += 1;
                } else {
                    c.on_arrival += 1;
                }
            }
            _ => {}
        }
    }
    for (k, c) in out.iter_mut() {
        let r = reads.get(k).map_or(&[][..], |v| v.as_slice());
        c.reads = r.len() as u64;
        let (from, to) = extent.get(k).copied().unwrap_or((0, 0));
        c.chance_after_read = covered_share(r, from, to, WINDOW_NS);
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chance_share_is_the_union_of_windows_after_reads() {
        // Overlapping windows count once; a window past the end is cut.
        assert_eq!(covered_share(&[0, 20, 100], 0, 200, 50), 120.0 / 200.0);
        assert_eq!(covered_share(&[0, 10, 20], 0, 1000, 50), 70.0 / 1000.0);
        assert_eq!(covered_share(&[190], 0, 200, 50), 10.0 / 200.0);
        // Reads every 50 µs cover everything; no reads cover nothing.
        let dense: Vec<u64> = (0..20).map(|i| i * 50).collect();
        assert_eq!(covered_share(&dense, 0, 1000, 50), 1.0);
        assert_eq!(covered_share(&[], 0, 1000, 50), 0.0);
    }
}
