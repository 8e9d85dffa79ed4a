//! The probe path section: one probed trial's time-sequence plot, hop-delay
//! histogram and table, packet classes and idle time; and the hop-delay
//! histogram and the packet-class table on their own, which the studies'
//! reports share.

use analysis::path::{PathAnalysis, BINS, BIN_US};
use record::TrialRecord;

/// The MSS a trial's sender used (TCP_INFO `snd_mss`, the size GSO cuts
/// aggregates at), to count wire segments with
/// [`analysis::path::analyse_with_mss`]; `None` when the trial has no such
/// metric.
pub fn trial_mss(t: &TrialRecord) -> Option<u32> {
    analysis::path::sender_mss(&t.outcome.metrics)
}

/// How a packet table says where its packets were counted and at what MSS.
fn counted_where(an: &PathAnalysis) -> String {
    let mss = an.packets.iter().find_map(|p| p.mss);
    format!(
        "each packet counted once, at the first device that queued it (net_dev_queue at the sender's egress; a router's copy is not counted again); {}",
        match mss {
            Some(m) => format!("data skbs (GSO aggregates) split into wire segments at the MSS, {m} B"),
            None => "the MSS is unknown, so each data skb (a GSO aggregate may hold several wire segments) counts as one".into(),
        }
    )
}
use report::{Figure, Histogram, Point, Section, Series, SeriesStyle, Table, Unit};

/// The probe section of a run report: one trial's path (`t`, labelled
/// `label`, analysed as `an`) out of `probed` probed trials: its
/// time-sequence plot, per-hop delays, packet classes and idle time.
pub fn path_section(
    run_id: i64,
    t: &TrialRecord,
    label: &str,
    an: &PathAnalysis,
    probed: usize,
) -> Section {
    let mut s = Section::new("Probes: the path of one trial");
    s.paragraph(format!(
        "{probed} trial(s) of this run were probed. Shown here: trial {} ({}), the trial closest to its point's mean — {} records over {:.3} s. `tcplab probes {run_id}` lists every probed trial; `--json` gives the full analysis.",
        t.seq,
        if label.is_empty() { "the only point".to_string() } else { label.to_string() },
        an.records,
        an.span_s,
    ));
    // Findings go under the figure they read: idle time under the
    // time-sequence plot, the slowest hop under the delay histogram.
    let idle_findings: Vec<String> = an
        .threads
        .iter()
        .filter(|th| th.span_s > 0.0)
        .map(|th| {
            format!(
                "The {} thread was blocked (idle) {:.1}% of its {:.1} ms in trial {}.",
                th.role,
                th.idle_fraction * 100.0,
                th.span_s * 1e3,
                t.seq
            )
        })
        .collect();
    let hop_finding = an
        .hops
        .iter()
        .filter(|h| h.n > 0)
        .max_by(|a, b| a.p50_us.total_cmp(&b.p50_us))
        .map(|h| {
            format!(
                "The slowest hop at the median is the {}: p50 {:.1} µs, p99 {:.1} µs over {} packets.",
                h.hop.split(':').next().unwrap_or(&h.hop),
                h.p50_us,
                h.p99_us,
                h.n
            )
        });
    let lost = t.outcome.metrics.get("probe_lost").copied().unwrap_or(0.0);
    if lost > 0.0 {
        s.warning(format!(
            "the probes lost {lost:.0} records in this trial ({}): its figures are incomplete",
            crate::probes_text::loss_causes(&t.outcome.details["probe"])
        ));
    }
    // Time–sequence: the direction with the most data.
    if let Some(ts) = an.time_sequence.iter().max_by_key(|ts| ts.data.len()) {
        if !ts.data.is_empty() {
            let ymax = ts
                .data
                .iter()
                .chain(&ts.acked)
                .chain(&ts.window_edge)
                .map(|p| p.1)
                .fold(0.0, f64::max);
            let (yf, yu) = Unit::Si("B").scale_for(ymax);
            let pts = |v: &[(f64, f64)]| -> Vec<Point> {
                v.iter()
                    .map(|&(x, y)| Point::new(x * 1e3, y * yf))
                    .collect()
            };
            let mut fig = Figure::new(
                format!("Time–sequence of flow {}", ts.flow),
                "time since the first record (ms)",
                format!("stream position ({yu})"),
            );
            fig.series.push(
                Series::new("data sent (end of segment, net_dev_queue)", pts(&ts.data))
                    .with_style(SeriesStyle::Points),
            );
            if !ts.acked.is_empty() {
                fig.series.push(
                    Series::new("acknowledged (tcp_probe)", pts(&ts.acked))
                        .with_style(SeriesStyle::Path),
                );
            }
            if !ts.window_edge.is_empty() {
                fig.series.push(
                    Series::new("offered window edge (ack + window)", pts(&ts.window_edge))
                        .with_style(SeriesStyle::Path),
                );
            }
            fig.caption = Some(
                "Abrams & Chen Fig. 5 / Guerrero & Frieder Fig. 8: sequence numbers against time. \
                 The gap between data and window edge is the window the sender still had."
                    .into(),
            );
            s.push(fig);
        }
    }
    for f in idle_findings {
        s.finding(f);
    }
    // Per-hop delays.
    let hops: Vec<_> = an.hops.iter().filter(|h| h.n > 0).collect();
    if let Some(h) = hop_histogram(an, "Per-hop delay histogram", "the SunOS IPC study's") {
        s.push(h);
        if let Some(f) = hop_finding {
            s.finding(f);
        }
        let mut t = Table::new(["hop", "n", "p50 µs", "p90 µs", "p99 µs", "max µs"])
            .with_caption("Delay of each hop along the path");
        for hp in &hops {
            t.row([
                hp.hop.clone(),
                hp.n.to_string(),
                format!("{:.1}", hp.p50_us),
                format!("{:.1}", hp.p90_us),
                format!("{:.1}", hp.p99_us),
                format!("{:.1}", hp.max_us),
            ]);
        }
        s.push(t);
    }
    if !an.packets.is_empty() {
        s.push(packet_table(an, PacketTable::PerDirection));
    }
    if !an.threads.is_empty() {
        let mut t = Table::new(["thread", "span s", "blocked (idle) %", "preempted %"])
            .with_caption("Idle time from sched_switch (Abrams & Chen §3.3)");
        for th in &an.threads {
            t.row([
                format!("{} {}", th.role, th.tid),
                format!("{:.3}", th.span_s),
                format!("{:.1}", th.idle_fraction * 100.0),
                format!(
                    "{:.1}",
                    if th.span_s > 0.0 {
                        th.preempted_s / th.span_s * 100.0
                    } else {
                        0.0
                    }
                ),
            ]);
        }
        s.push(t);
    }
    s
}

/// The histogram of each hop's delays (its packets' shares per
/// [`BIN_US`] µs bin), titled `title`, its caption crediting the bins to
/// `bins_from` (`the paper's`); `None` when no hop has packets.
pub fn hop_histogram(an: &PathAnalysis, title: &str, bins_from: &str) -> Option<Histogram> {
    let mut h = Histogram {
        title: title.into(),
        caption: Some(format!(
            "Share of each hop's packets per {BIN_US:.0} µs bin ({bins_from} bins); the last bin holds everything beyond {:.0} µs.",
            BIN_US * BINS as f64
        )),
        x_label: "delay (µs)".into(),
        y_label: "share of the hop's packets (%)".into(),
        edges: (0..=BINS).map(|i| i as f64 * BIN_US).collect(),
        overflow: true,
        series: Vec::new(),
    };
    for hp in an.hops.iter().filter(|h| h.n > 0) {
        let n: u64 = hp.histogram.iter().sum();
        if n == 0 {
            continue;
        }
        h.series.push((
            hp.hop.clone(),
            hp.histogram
                .iter()
                .map(|&c| c as f64 / n as f64 * 100.0)
                .collect(),
        ));
    }
    (!h.series.is_empty()).then_some(h)
}

/// Which packet-class table to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketTable {
    /// The run report's: every class per direction, with the data skbs,
    /// the largest skb, and the short and silly segments sent with more
    /// data queued.
    PerDirection,
    /// A study's: the classes of trial `seq` (Guerrero & Frieder's packet
    /// kinds), as the key table of its section.
    Classes {
        /// The trial's sequence number, for the caption.
        seq: u32,
    },
}

/// The packets of each direction by class (data, ACKs, window updates,
/// control), each counted once at the first device that queued it, data
/// in wire segments when the analysis knew the MSS.
pub fn packet_table(an: &PathAnalysis, kind: PacketTable) -> Table {
    let avg = |data: u64, bytes: u64| {
        if data > 0 {
            format!("{:.0}", bytes as f64 / data as f64)
        } else {
            "—".into()
        }
    };
    match kind {
        PacketTable::PerDirection => {
            let mut t = Table::new([
                "flow",
                "data segments (wire)",
                "data skbs",
                "avg bytes per segment",
                "largest skb",
                "ACKs",
                "window updates",
                "control",
                "short with more queued",
                "silly (< MSS/4)",
            ])
            .with_caption(format!("Packets per direction: {}", counted_where(an)));
            for p in &an.packets {
                t.row([
                    p.flow.clone(),
                    p.data.to_string(),
                    p.data_skbs.to_string(),
                    avg(p.data, p.data_bytes),
                    p.largest_segment.to_string(),
                    p.acks.to_string(),
                    p.window_updates.to_string(),
                    p.control.to_string(),
                    p.small_with_more_queued.to_string(),
                    if p.mss.is_some() {
                        p.silly.to_string()
                    } else {
                        "—".into()
                    },
                ]);
            }
            t
        }
        PacketTable::Classes { seq } => {
            let mut t = Table::new([
                "direction",
                "data segments (wire)",
                "avg data bytes per segment",
                "pure ACKs",
                "window updates",
                "control",
            ])
            .with_caption(format!(
                "Packets of trial {seq} by class: {}",
                counted_where(an)
            ))
            .key();
            for p in &an.packets {
                t.row([
                    p.flow.clone(),
                    p.data.to_string(),
                    avg(p.data, p.data_bytes),
                    p.acks.to_string(),
                    p.window_updates.to_string(),
                    p.control.to_string(),
                ]);
            }
            t
        }
    }
}
