//! The Guerrero & Frieder report: rates per protocol layer, the traced
//! transfer with its packet classes, silly window syndrome healthy and
//! pathological, smoothed RTT against measured RTT, and the matrix of the
//! host's TCP implementations. Every finding is computed from the run.

use crate::data::StudyData;
use crate::figures::{place, series, write_size};
use analysis::findings::CurvePoint;
use analysis::path::{analyse, PathAnalysis};
use record::probe_event::ProbeId;
use record::TrialParams;
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, TickFormat, Unit};
use sections::path::{packet_table, PacketTable};
use std::collections::BTreeMap;

const CITE: &str = "Guerrero & Frieder 1992";

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        layer_section(d),
        time_sequence_section(d),
        sws_section(d),
        rtt_section(d),
        implementations_section(d),
    ]
}

/// The `--layer` of a point, as its name (`eth`, `ip`, `udp`, `tcp`).
fn layer(p: &TrialParams) -> Option<String> {
    p.layer.map(|l| l.name().to_string())
}

const LAYERS: [(&str, &str); 4] = [
    ("eth", "Ethernet (AF_PACKET)"),
    ("ip", "raw IP"),
    ("udp", "UDP"),
    ("tcp", "TCP"),
];

fn layer_section(d: &StudyData) -> Section {
    let mut s = Section::new("Packet and byte rate at each protocol layer (Figs 1–4)");
    s.paper_finding(
        format!("{CITE}, §2, Figs 1–4"),
        "The Ethernet curve rose with packet size in packets and bytes per second, while the IP \
         and TCP curves stayed flat: a fixed per-packet cost, not the bytes, limited them. \
         Merging the layers into one process lifted IP to the Ethernet curve; TCP stayed flat \
         until its window management was fixed.",
    );
    let mut pps: Vec<(&str, Vec<CurvePoint>)> = Vec::new();
    let mut bps: Vec<(&str, Vec<CurvePoint>)> = Vec::new();
    for (key, name) in LAYERS {
        let keep = |p: &TrialParams| layer(p).as_deref() == Some(key);
        let c = d.curve("layer-rate", "packets_per_s", 1.0, write_size, keep);
        if !c.is_empty() {
            pps.push((name, c));
        }
        let c = d.curve("layer-rate", "throughput_bps", 1e-6, write_size, keep);
        if !c.is_empty() {
            bps.push((name, c));
        }
    }
    if pps.is_empty() {
        s.warning("The layer-rate experiment has no successful trials in this run.");
        return s;
    }
    for (title, y, curves) in [
        (
            "Packets per second received at each layer against frame size (Figs 1, 3)",
            "packets per second",
            &pps,
        ),
        (
            "Bytes per second received at each layer against frame size (Figs 2, 4)",
            "throughput (Mbit/s, whole frames)",
            &bps,
        ),
    ] {
        let mut f = Figure::new(title, "frame size (bytes, Ethernet header included)", y);
        for (name, c) in curves.iter() {
            f.series.push(series(name, c));
        }
        s.push(f);
    }
    for (name, c) in &pps {
        let (Some(a), Some(b)) = (c.first(), c.last()) else {
            continue;
        };
        if b.x <= a.x || a.mean <= 0.0 {
            continue;
        }
        let keep = b.mean / a.mean;
        let size_ratio = b.x / a.x;
        let verdict = if keep >= 0.8 {
            "per-packet cost sets the rate: it barely depends on size, so bytes per second grow in proportion"
        } else if keep * size_ratio >= 2.0 {
            "both per-packet and per-byte costs count"
        } else {
            "per-byte cost (copies, the link) sets the rate"
        };
        s.finding(format!(
            "{name}: {:.0} packets/s at {:.0}-byte frames and {:.0} at {:.0} bytes ({:.0}% kept \
             for {size_ratio:.0}× the size): {verdict}.",
            a.mean,
            a.x,
            b.mean,
            b.x,
            keep * 100.0
        ));
    }
    let at_small = |name: &str| {
        pps.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, c)| c.first().copied())
    };
    if let (Some(e), Some(t)) = (at_small("Ethernet (AF_PACKET)"), at_small("TCP")) {
        if e.mean > 0.0 && e.x == t.x {
            s.finding(format!(
                "At {:.0}-byte frames TCP moves {:.0}% of the packets raw Ethernet does (the \
                 paper's TCP was flat far below its Ethernet curve).",
                e.x,
                t.mean / e.mean * 100.0
            ));
        }
    }
    s
}

/// The probed trial of experiment `id` with the most records, analysed.
fn richest(d: &StudyData, id: &str) -> Option<(u32, PathAnalysis)> {
    d.trials_of(id)
        .into_iter()
        .filter_map(|(t, _)| d.events.get(&t.id).map(|ev| (t.seq, ev)))
        .max_by_key(|(_, ev)| ev.len())
        .map(|(seq, ev)| (seq, analyse(ev)))
}

fn no_probes(s: &mut Section, what: &str) {
    s.warning(format!(
        "No probed trial of the {what} experiment: it needs root and BPF (see tcplab probes)."
    ));
}

fn time_sequence_section(d: &StudyData) -> Section {
    let mut s = Section::new("A traced transfer: data, ACKs and window updates (Fig. 8)");
    s.paper_finding(
        format!("{CITE}, §3, Figs 5–8"),
        "Traced with a LAN analyzer, each packet is data, an ACK, or an ACK that also opens \
         the window; a receiver that sends a separate window update after each ACK doubles the \
         packets the sender must process.",
    );
    let Some((seq, a)) = richest(d, "time-sequence") else {
        no_probes(&mut s, "time-sequence");
        return s;
    };
    if let Some(ts) = a.time_sequence.iter().max_by_key(|x| x.data.len()) {
        let base = ts.data.first().map_or(0.0, |p| p.1);
        let pts = |v: &[(f64, f64)]| -> Vec<Point> {
            v.iter()
                .map(|&(t, y)| Point::new(t * 1e3, (y - base) / 1024.0))
                .collect()
        };
        let f = Figure::new(
            format!("Time–sequence of trial {seq} ({})", ts.flow),
            "time (ms)",
            "stream position (KB)",
        )
        .with_series(Series::new("data sent", pts(&ts.data)).with_style(SeriesStyle::Points))
        .with_series(Series::new("acknowledged", pts(&ts.acked)).with_style(SeriesStyle::Path))
        .with_series(
            Series::new("offered window edge", pts(&ts.window_edge)).with_style(SeriesStyle::Path),
        );
        s.push(f);
    }
    s.push(packet_table(&a, PacketTable::Classes { seq }));
    let data: u64 = a.packets.iter().map(|p| p.data).sum();
    let acks: u64 = a.packets.iter().map(|p| p.acks).sum();
    let updates: u64 = a.packets.iter().map(|p| p.window_updates).sum();
    if data > 0 {
        s.finding(format!(
            "{data} data segments drew {acks} pure ACKs (one per {:.1} data segments) and \
             {updates} separate window updates{}.",
            data as f64 / acks.max(1) as f64,
            if updates * 10 < acks.max(1) {
                ": the window rides on the ACKs, as the paper's tuned TCP did"
            } else {
                ": window updates add packets of their own, the pitfall the paper fixed"
            }
        ));
    }
    s
}

/// Data segments, small ones with more data queued, and the mean data
/// bytes per segment, over every probed trial of an experiment.
fn sws_counts(d: &StudyData, id: &str) -> Option<(u64, u64, f64)> {
    let mut data = 0;
    let mut small = 0;
    let mut bytes = 0;
    let mut any = false;
    for (t, _) in d.trials_of(id) {
        let Some(ev) = d.events.get(&t.id) else {
            continue;
        };
        any = true;
        // The data direction: the flow with the most data bytes.
        if let Some(p) = analyse(ev).packets.iter().max_by_key(|p| p.data_bytes) {
            data += p.data;
            small += p.small_with_more_queued;
            bytes += p.data_bytes;
        }
    }
    any.then(|| (data, small, bytes as f64 / data.max(1) as f64))
}

fn sws_section(d: &StudyData) -> Section {
    let mut s = Section::new("Silly window syndrome: healthy and pathological (§3)");
    s.paper_finding(
        format!("{CITE}, §2–3"),
        "Against a UNIX receiver, their TCP ended up sending only 32–128-byte segments whatever \
         the write size: silly window syndrome, fixed by the sender and receiver avoidance \
         algorithms (RFC 1122 §4.2.3.3–4).",
    );
    let mut t = Table::new([
        "flow",
        "data segments",
        "smaller than the MSS with more queued",
        "share",
        "avg data bytes",
        "throughput",
    ])
    .with_caption("Over every probed trial; the MSS is the largest segment seen")
    .key();
    let mut rows = Vec::new();
    for (id, name) in [
        ("sws-healthy", "healthy: 8 KB writes and reads"),
        (
            "sws-pathological",
            "pathological: 2 KB receive buffer, 7-byte reads",
        ),
    ] {
        let Some((data, small, avg)) = sws_counts(d, id) else {
            continue;
        };
        let thr = d
            .points_of(id)
            .first()
            .and_then(|p| p.metrics.get("throughput_bps"))
            .map(|m| (m.mean, m.ci95));
        let share = small as f64 / data.max(1) as f64;
        t.row([
            name.to_string(),
            data.to_string(),
            small.to_string(),
            format!("{:.1}%", share * 100.0),
            format!("{avg:.0}"),
            thr.map_or("—".into(), |(m, c)| {
                measure(m, Some(c), Unit::Si("bit/s"))
            }),
        ]);
        rows.push((name, share, avg, thr.map(|x| x.0)));
    }
    if rows.is_empty() {
        no_probes(&mut s, "SWS");
        return s;
    }
    s.push(t);
    for (name, share, avg, _) in &rows {
        s.finding(format!(
            "{}: {:.1}% of data segments were smaller than the MSS while more data was queued \
             (mean {avg:.0} bytes per segment){}.",
            capitalize(name.split(':').next().unwrap_or(name)),
            share * 100.0,
            if *share >= 0.2 {
                ": silly window syndrome"
            } else {
                ": no silly window syndrome"
            }
        ));
    }
    if let [(_, _, _, Some(h)), (_, _, _, Some(p))] = rows.as_slice() {
        if *p > 0.0 {
            s.finding(format!(
                "The pathological receiver cuts throughput {:.0}× against the healthy flow.",
                h / p
            ));
        }
    }
    s
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn rtt_section(d: &StudyData) -> Section {
    let mut s = Section::new("Smoothed RTT against measured RTT (§4)");
    s.paper_finding(
        format!("{CITE}, §4"),
        "Their TCP kept a per-packet RTT and a smoothed RTT in integer arithmetic, updated at \
         least every 16 ms and accurate to 30 ms, the cornerstone of its ACK and back-off \
         strategy.",
    );
    let mut srtt: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (t, p) in d.trials_of("rtt") {
        if let Some(ev) = d.events.get(&t.id) {
            srtt.entry(place(p)).or_default().extend(
                ev.iter()
                    .filter(|e| e.probe == ProbeId::TcpProbe as u8 && e.x[1] > 0)
                    .map(|e| e.x[1] as f64),
            );
        }
    }
    let mut t = Table::new([
        "place",
        "kernel srtt, median (tcp_probe)",
        "application RTT, p50 (rr)",
        "ratio",
    ])
    .with_caption("1-byte request/response; srtt over every tcp_probe record of both sockets")
    .key();
    let mut any = false;
    for p in d.points_of("rtt") {
        let pl = place(&p.params);
        let Some(lat) = p.metrics.get("latency_p50_s") else {
            continue;
        };
        let Some(v) = srtt.get_mut(&pl).filter(|v| !v.is_empty()) else {
            continue;
        };
        v.sort_by(f64::total_cmp);
        let med = v[v.len() / 2] * 1e-6;
        any = true;
        t.row([
            pl.clone(),
            measure(med, None, Unit::Si("s")),
            measure(lat.mean, Some(lat.ci95), Unit::Si("s")),
            format!("{:.2}", med / lat.mean),
        ]);
        s.finding(format!(
            "On {pl}, the kernel's smoothed RTT is {} at the median against {} the application \
             measures per transaction ({:.2}×){}.",
            measure(med, None, Unit::Si("s")),
            measure(lat.mean, None, Unit::Si("s")),
            med / lat.mean,
            if (0.5..=1.5).contains(&(med / lat.mean)) {
                ": the estimate tracks the path"
            } else if med > lat.mean {
                ": the estimate runs high (tcp_probe reports it in whole microseconds and includes \
                 the peer's delayed ACKs)"
            } else {
                ": the application's round trip adds host processing the kernel's estimate leaves out"
            }
        ));
    }
    if !any {
        no_probes(&mut s, "RTT");
        return s;
    }
    s.push(t);
    s
}

fn implementations_section(d: &StudyData) -> Section {
    let mut s = Section::new("TCP implementations on this host (Table 1)");
    s.paper_finding(
        format!("{CITE}, Table 1"),
        "A 2.5 MB binary transfer between eight vendors' TCPs ran from 5 to 250 KB/s; the \
         untuned OPEN-Link release managed 5 KB/s against every peer, the tuned one 62–70.",
    );
    let pts = d.points_of("implementations");
    if pts.is_empty() {
        s.warning("The implementations experiment has no successful trials in this run.");
        return s;
    }
    let mut by_cc: BTreeMap<String, BTreeMap<String, (f64, f64, f64)>> = BTreeMap::new();
    let mut places: Vec<String> = Vec::new();
    for p in &pts {
        let cc = p.params.cc.clone().unwrap_or_else(|| "default".into());
        let pl = place(&p.params);
        if !places.contains(&pl) {
            places.push(pl.clone());
        }
        if let Some(m) = p.metrics.get("throughput_bps") {
            let retx = p.metrics.get("retransmits").map_or(0.0, |r| r.mean);
            by_cc
                .entry(cc)
                .or_default()
                .insert(pl, (m.mean, m.ci95, retx));
        }
    }
    let mut header = vec!["sender \\ receiver (Linux default)".to_string()];
    header.extend(
        places
            .iter()
            .map(|p| format!("{p}: throughput, retransmits")),
    );
    let mut t = Table::new(header)
        .with_caption("2.5 MB transfers; each row is a congestion-control module as sender. A user-space stack would be one more row.")
        .key();
    for (cc, m) in &by_cc {
        let mut row = vec![format!("Linux {cc}")];
        for pl in &places {
            row.push(m.get(pl).map_or("—".into(), |(v, c, r)| {
                format!("{}, {r:.0}", measure(*v, Some(*c), Unit::Si("bit/s")))
            }));
        }
        t.row(row);
    }
    s.push(t);
    let mut f = Figure::new(
        "Throughput of each implementation, by place",
        "sender implementation",
        "throughput (Mbit/s)",
    );
    let names: Vec<&String> = by_cc.keys().collect();
    f.x_ticks = TickFormat::Labels(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| (i as f64, n.to_string()))
            .collect(),
    );
    for pl in &places {
        f.series.push(
            Series::new(
                pl.clone(),
                names
                    .iter()
                    .enumerate()
                    .filter_map(|(i, n)| {
                        by_cc[*n]
                            .get(pl)
                            .map(|(v, c, _)| Point::with_ci(i as f64, v / 1e6, c / 1e6))
                    })
                    .collect(),
            )
            .with_style(SeriesStyle::Points),
        );
    }
    s.push(f);
    for pl in &places {
        let v: Vec<(&String, f64)> = by_cc
            .iter()
            .filter_map(|(cc, m)| m.get(pl).map(|x| (cc, x.0)))
            .collect();
        let best = v.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        let worst = v.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(b), Some(w)) = (best, worst) {
            if v.len() > 1 && w.1 > 0.0 {
                s.finding(format!(
                    "On {pl}, {} is fastest ({}) and {} slowest ({}), {:.2}× apart{}.",
                    b.0,
                    measure(b.1, None, Unit::Si("bit/s")),
                    w.0,
                    measure(w.1, None, Unit::Si("bit/s")),
                    b.1 / w.1,
                    if b.1 / w.1 < 1.1 {
                        ": the implementations are alike here, unlike the paper's 50× spread"
                    } else {
                        ""
                    }
                ));
            }
        }
    }
    s
}
