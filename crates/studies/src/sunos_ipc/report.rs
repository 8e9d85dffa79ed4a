//! The SunOS IPC study's report: socket buffers (Experiment 1), local
//! throughput against memory bandwidth, the four queues and each hop's
//! delay (Experiment 2, Table 1), ACK generation (Experiment 3) and
//! background load (Experiment 4). Every finding is computed from the run.

use super::ack_ratio::ack_ratio_sentence;
use super::acks::ack_section;
use super::change::Estimate;
use super::leaders::{
    hop_medians, hop_shares, largest_share_sentence, queue_means, queue_wait_sentence,
    slowest_hop_sentence,
};
use super::load::load_section;
use super::packet_queues::packet_queues_finding;
use super::paper::{
    CHECKSUM_PER_COPY, COPY_RATE, DEFAULT_BUFFERS, ETHERNET_BEST, LARGEST_BUFFERS, LOCAL_BOUND,
    LOCAL_IPC, LOCAL_SHARE, QUADRUPLED_BUFFERS, T1_INTERFACE_QUEUE, T1_IP_QUEUE,
    T1_RECEIVE_PROTOCOL, T1_RECEIVE_SOCKET, T1_SEND_PROTOCOL, T1_SEND_SOCKET,
};
use super::probed::{all_probed, no_probes, queue_figure, richest};
use super::steps::largest_step_sentence;
use super::CITE;
use crate::data::StudyData;
use crate::figures::{place, series};
use crate::paper_quote::PaperQuote;
use crate::ratio::ACKS_PER_DATA_SEGMENT_RECEIVED;
use analysis::findings::{shape_finding, size_words, CurvePoint};
use report::format::{column, number, throughput_of_bytes};
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, TickFormat, Unit};
use sections::path::hop_histogram;
use std::collections::BTreeMap;

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        sockbuf_section(d),
        memory_section(d),
        queues_section(d),
        stop_and_wait_section(d),
        ack_section(d),
        load_section(d),
    ]
}

/// One point of Experiment 1.
pub(super) struct BufPoint {
    pub(super) place: String,
    pub(super) size: f64,
    pub(super) throughput: CurvePoint,
    /// The calibrated base RTT of a place with a `--link`, s.
    pub(super) rtt_s: Option<f64>,
    /// Receiver segments (ACKs) per data segment received
    /// ([`ACKS_PER_DATA_SEGMENT_RECEIVED`]): mean ± 95% CI over trials.
    pub(super) acks_per_segment: Option<Estimate>,
}

fn sockbuf_points(d: &StudyData) -> Vec<BufPoint> {
    let mut out = Vec::new();
    for e in d
        .settings
        .experiments
        .iter()
        .filter(|e| e.id.starts_with("sockbuf-"))
    {
        for p in d.points_of(&e.id) {
            let (Some(size), Some(m)) = (p.params.sndbuf, p.metrics.get("throughput_bps")) else {
                continue;
            };
            let ratios: Vec<f64> = d
                .trials_of(&e.id)
                .into_iter()
                .filter(|(t, _)| t.point_id == p.point_id)
                .filter_map(|(t, _)| ACKS_PER_DATA_SEGMENT_RECEIVED.of(&t.outcome.metrics))
                .collect();
            out.push(BufPoint {
                place: match &p.params.link {
                    Some(l) => format!("{} ({l})", place(&p.params)),
                    None => place(&p.params),
                },
                rtt_s: d
                    .trials_of(&e.id)
                    .into_iter()
                    .find(|(t, _)| t.point_id == p.point_id)
                    .and_then(|(t, _)| t.outcome.details["lab"]["calibration"]["rtt_s"].as_f64())
                    .filter(|_| p.params.link.is_some()),
                size: size as f64,
                throughput: CurvePoint {
                    x: size as f64,
                    mean: m.mean / 1e6,
                    ci: if m.ci95.is_finite() {
                        m.ci95 / 1e6
                    } else {
                        0.0
                    },
                },
                acks_per_segment: Estimate::from_values(&ratios),
            });
        }
    }
    out.sort_by(|a, b| a.size.total_cmp(&b.size));
    out
}

fn sockbuf_section(d: &StudyData) -> Section {
    let mut s = Section::new("Throughput against socket buffer size (Experiment 1)");
    s.paper_finding(
        format!("{CITE}, {}", ETHERNET_BEST.source),
        format!(
            "Throughput rose with the socket buffers, to {ETHERNET_BEST} Mbit/s at the largest \
             ({LARGEST_BUFFERS} KB) on Ethernet; the largest gain came from quadrupling the \
             {DEFAULT_BUFFERS} KB default to {QUADRUPLED_BUFFERS} KB. Local IPC reached about \
             {LOCAL_IPC} Mbit/s. With {DEFAULT_BUFFERS} KB buffers the receiver sent roughly \
             twice as many ACKs."
        ),
    );
    if let Some(k) = d.left_out("sockbuf-delay-") {
        s.warning(format!(
            "The buffer sizes on a 10 Mbit/s link with a 20 ms RTT were not run: {}.",
            k.reason
        ));
    }
    let pts = sockbuf_points(d);
    if pts.is_empty() {
        s.warning("The socket buffer experiments have no successful trials in this run.");
        return s;
    }
    let mut by_place: BTreeMap<String, Vec<&BufPoint>> = BTreeMap::new();
    for p in &pts {
        by_place.entry(p.place.clone()).or_default().push(p);
    }
    let mut f = Figure::new(
        "TCP throughput against socket buffer size (send = receive buffer)",
        "socket buffer size (bytes)",
        "throughput",
    );
    f.log_x = true;
    f.x_ticks = TickFormat::Bytes;
    for (pl, v) in &by_place {
        let c: Vec<CurvePoint> = v.iter().map(|p| p.throughput).collect();
        f.series.push(series(pl, &c));
    }
    crate::figures::auto_log_y(&mut f);
    crate::figures::throughput_y(&mut f, "throughput");
    s.push(f);
    // Throughput in bit/s with one prefix for the column, as in bench.
    let rows: Vec<(&String, &&BufPoint)> = by_place
        .iter()
        .flat_map(|(pl, v)| v.iter().map(move |p| (pl, p)))
        .collect();
    let (unit, cells) = column(
        &rows
            .iter()
            .map(|(_, p)| {
                // A single trial (CI 0 here) has no interval to show.
                let ci = p.throughput.ci * 1e6;
                (p.throughput.mean * 1e6, (ci > 0.0).then_some(ci))
            })
            .collect::<Vec<_>>(),
        Unit::Si("bit/s"),
    );
    let mut t = Table::new([
        "place".to_string(),
        "buffers".into(),
        format!("throughput ({unit})"),
        "buffer/RTT (window-limited)".into(),
        "ACKs per data segment received".into(),
    ])
        .with_caption(format!("Send and receive buffers set to the same size (setsockopt; Linux doubles the value for its bookkeeping). ACKs per data segment received: {} (TCP_INFO's segs_out over data_segs_in on the receiver; retransmissions the sender sent and the receiver never got are not counted)", ACKS_PER_DATA_SEGMENT_RECEIVED.words()))
        .key();
    for ((pl, p), cell) in rows.iter().zip(cells) {
        t.row([
            pl.to_string(),
            size_words(p.size),
            cell,
            p.rtt_s.map_or("—".into(), |r| {
                number(window_limited_mbit(p.size, r) * 1e6, Unit::Si("bit/s"))
            }),
            p.acks_per_segment.map_or("—".into(), |a| {
                measure(a.mean, a.ci.is_finite().then_some(a.ci), Unit::Plain)
            }),
        ]);
    }
    for (pl, v) in &by_place {
        let c: Vec<CurvePoint> = v.iter().map(|p| p.throughput).collect();
        s.finding(shape_finding(
            &format!("On {pl}, throughput"),
            "socket buffer size",
            &c,
            &size_words,
            &|r| number(r * 1e6, Unit::Si("bit/s")),
        ));
        if let Some(f) = largest_step_sentence(pl, v) {
            s.finding(f);
        }
        let first = v
            .first()
            .and_then(|p| p.acks_per_segment.map(|a| (p.size, a)));
        let last = v
            .last()
            .and_then(|p| p.acks_per_segment.map(|a| (p.size, a)));
        if let (Some(small), Some(large)) = (first, last) {
            if small.0 != large.0 {
                s.finding(ack_ratio_sentence(pl, small, large));
            }
        }
    }
    s.push(t);
    for v in by_place.values() {
        let at = |size: f64| v.iter().find(|p| p.size == size);
        if let (Some(a), Some(b)) = (at(4096.0), at(16384.0)) {
            if let Some(rtt) = a.rtt_s.filter(|r| *r > 0.0) {
                s.finding(window_step_sentence(&a.place, rtt, a, b));
            }
        }
    }
    s
}

/// The expected window-limited rate of a buffer of `size` bytes over a
/// round trip of `rtt_s`, Mbit/s: one buffer per RTT.
pub(crate) fn window_limited_mbit(size: f64, rtt_s: f64) -> f64 {
    size * 8.0 / rtt_s / 1e6
}

/// The 4 → 16 KB step on a place with delay: each measured rate beside the
/// window-limited one (buffer/RTT), and whether 16 KB beat 4 KB beyond
/// both CIs.
pub(super) fn window_step_sentence(place: &str, rtt_s: f64, a: &BufPoint, b: &BufPoint) -> String {
    let (x, y) = (a.throughput, b.throughput);
    // The curves are in Mbit/s; written in bit/s by the one rule.
    let bits = |v: f64| number(v * 1e6, Unit::Si("bit/s"));
    let mbit = |c: &CurvePoint| measure(c.mean * 1e6, Some(c.ci * 1e6), Unit::Si("bit/s"));
    let head = format!(
        "On {place} (base RTT {}, so 4 KB allows {} and 16 KB {} at one buffer per RTT)",
        number(rtt_s, Unit::Si("s")),
        bits(window_limited_mbit(a.size, rtt_s)),
        bits(window_limited_mbit(b.size, rtt_s))
    );
    if y.mean - y.ci > x.mean + x.ci {
        format!(
            "{head}, throughput rose from {} with 4 KB buffers to {} with 16 KB ({:.2}×), as the \
             bandwidth-delay product predicts and where the paper found its largest step.",
            mbit(&x),
            mbit(&y),
            y.mean / x.mean
        )
    } else {
        format!(
            "{head}, 16 KB buffers ({}) did not beat 4 KB ({}) beyond CI; the trials could have \
             detected a rise of {}.",
            mbit(&y),
            mbit(&x),
            bits(x.ci + y.ci)
        )
    }
}

/// What a packet count of experiment `id`'s queues is: segments when its
/// trials ran with every offload off, GSO/GRO aggregates otherwise.
pub(super) fn segment_units(d: &StudyData, id: &str) -> &'static str {
    let all_off = d
        .points_of(id)
        .iter()
        .all(|p| p.params.offload == Some(record::factor::OffloadsOff::ALL));
    if all_off && !d.points_of(id).is_empty() {
        "packet counts are segments: the trials ran with tso, gso, gro and the checksum offloads \
         off, so one skb is one segment"
    } else {
        "packet counts are skbs, which with offloads on may be GSO or GRO aggregates of many \
         segments"
    }
}

fn memory_section(d: &StudyData) -> Section {
    let mut s = Section::new("Local throughput against memory bandwidth (§5)");
    s.paper_finding(
        format!("{CITE}, {}", LOCAL_SHARE.source),
        format!(
            "Local IPC reached about {LOCAL_IPC} Mbit/s, \"about {LOCAL_SHARE}% of the memory \
             bandwidth\" in the paper's words: its bound of {LOCAL_BOUND} Mbit/s, a third of the \
             {COPY_RATE} Mbit/s memory-to-memory copy rate (two copies and two checksums, a \
             checksum taken as {CHECKSUM_PER_COPY} a copy). Of the copy rate itself \
             {LOCAL_IPC} Mbit/s is {:.0}%.",
            sunos_copy_share()
        ),
    );
    let best = sockbuf_points(d)
        .into_iter()
        .filter(|p| p.place == "loopback")
        .max_by(|a, b| a.throughput.mean.total_cmp(&b.throughput.mean));
    let Some(best) = best else {
        s.warning("No loopback socket buffer trials in this run.");
        return s;
    };
    let bytes_per_s = best.throughput.mean * 1e6 / 8.0;
    let ci_bytes = best.throughput.ci * 1e6 / 8.0;
    match memory_finding(
        bytes_per_s,
        ci_bytes,
        best.size,
        d.host.copy_cache_bw,
        d.host.mem_bw,
    ) {
        Ok(f) => {
            s.finding(f);
        }
        Err(w) => {
            s.warning(w);
        }
    }
    s
}

/// The local-throughput finding: local TCP at `bytes_per_s` (± `ci`, with
/// `size` buffers) against this host's copy rates, in-cache and DRAM, each
/// named for what it is. Neither rate measures the copies the kernel made,
/// so the share is given against both; a share of the in-cache rate above
/// the two-copy bound of 50% is impossible for a transfer that copies twice,
/// and is flagged rather than stated.
pub(crate) fn memory_finding(
    bytes_per_s: f64,
    ci: f64,
    size: f64,
    cache_bw: Option<f64>,
    dram_bw: Option<f64>,
) -> Result<String, String> {
    let bps = |x: f64| measure(x, None, Unit::Si("B/s"));
    // Throughput in bit/s as everywhere; the copy rates stay in B/s.
    let rate = throughput_of_bytes(bytes_per_s, (ci > 0.0).then_some(ci));
    let head = format!(
        "Local TCP's highest mean is {rate} ({} buffers)",
        size_words(size)
    );
    match (cache_bw, dram_bw) {
        (Some(cache), _) if bytes_per_s / cache > 0.5 => Err(format!(
            "Local TCP moved {} ({} buffers), {:.0}% of this host's in-cache copy rate ({}): \
             more than the 50% two copies allow, so the calibration's copy rate or the \
             throughput is wrong; no share is stated.",
            throughput_of_bytes(bytes_per_s, None),
            size_words(size),
            bytes_per_s / cache * 100.0,
            bps(cache)
        )),
        (Some(cache), Some(dram)) => Ok(format!(
            "{head}: {:.1}% of this host's in-cache copy rate ({}, a buffer that stays in L1/L2, \
             as the transfer's reused application buffers do) and {:.0}% of its DRAM copy rate \
             ({}, buffers far larger than the cache). The kernel's own copy rate is not \
             measured: the share lies between these two figures if it ran between the two \
             rates, and two copies alone would bound it at 50% of that rate (SunOS reached {:.0}% \
             of its {COPY_RATE} Mbit/s copy rate, {LOCAL_SHARE}% of its {LOCAL_BOUND} Mbit/s \
             bound of two copies and two checksums).",
            bytes_per_s / cache * 100.0,
            bps(cache),
            bytes_per_s / dram * 100.0,
            bps(dram),
            sunos_copy_share()
        )),
        (Some(cache), None) => Ok(format!(
            "{head}: {:.1}% of this host's in-cache copy rate ({}); two copies alone would \
             bound it at 50% (SunOS reached {:.0}% of its {COPY_RATE} Mbit/s copy rate, \
             {LOCAL_SHARE}% of its {LOCAL_BOUND} Mbit/s bound of two copies and two checksums).",
            bytes_per_s / cache * 100.0,
            bps(cache),
            sunos_copy_share()
        )),
        (None, Some(dram)) => Ok(format!(
            "{head}: {:.0}% of this host's DRAM copy rate ({}), which measures copies of buffers \
             far larger than the cache, not this transfer's; the calibration has no in-cache \
             copy rate to compare like with like.",
            bytes_per_s / dram * 100.0,
            bps(dram)
        )),
        (None, None) => {
            Err("This host has no calibration profile: run tcplab calibrate first.".into())
        }
    }
}

fn queues_section(d: &StudyData) -> Section {
    let mut s = Section::new("The four queues of a 100 ms transfer (Experiment 2, Figs 3–6)");
    s.paper_finding(
        format!("{CITE}, §4.2–4.3"),
        "Sending as fast as possible, packets queued at the sender's interface queue (the \
         driver could not keep up with the protocol) and at the receive socket; the IP input \
         queue stayed short.",
    );
    let Some((seq, a)) = richest(d, "queues", |_| true) else {
        no_probes(&mut s, "queue");
        return s;
    };
    if let Some(f) = queue_figure(format!("Socket queues over time, trial {seq}"), &a, "bytes") {
        s.push(f);
    }
    if let Some(f) = queue_figure(
        format!("Interface queue over time, trial {seq}"),
        &a,
        "packets",
    ) {
        s.push(f);
    }
    if let Some(h) = hop_histogram(&a, "Processing delay per hop", "the paper's") {
        s.push(h);
    }
    let mut t = Table::new(["queue", "samples", "mean", "max"])
        .with_caption(format!(
            "Queue lengths in trial {seq}; {}",
            segment_units(d, "queues")
        ))
        .key();
    for q in &a.queues {
        t.row([
            q.queue.clone(),
            q.n.to_string(),
            format!("{:.1}", q.mean),
            format!("{:.0}", q.max),
        ]);
    }
    s.push(t);
    // Which queue and which hop lead: over every probed trial, not the
    // richest alone.
    let probed = all_probed(d, "queues", |_| true);
    if let Some(f) = queue_wait_sentence(&queue_means(&probed)) {
        s.finding(f);
    }
    let queues: Vec<&[analysis::path::QueueStats]> =
        probed.iter().map(|p| p.queues.as_slice()).collect();
    if let Some(f) = packet_queues_finding(&queues) {
        s.finding(f);
    }
    if let Some(f) = slowest_hop_sentence(&hop_medians(&probed)) {
        s.finding(f);
    }
    s
}

/// SunOS's local IPC as a share of its memory-to-memory copy rate, %
/// (the paper gives the two rates, not the share).
fn sunos_copy_share() -> f64 {
    LOCAL_IPC.value / COPY_RATE.value * 100.0
}

/// The paper's Table 1, stop-and-wait column (µs): component, delay.
const PAPER_TABLE1: [(&str, PaperQuote); 6] = [
    ("send socket (with copy)", T1_SEND_SOCKET),
    ("protocol, sending side", T1_SEND_PROTOCOL),
    ("interface queue", T1_INTERFACE_QUEUE),
    ("IP queue", T1_IP_QUEUE),
    ("protocol, receiving side", T1_RECEIVE_PROTOCOL),
    ("receive socket queue (with copy)", T1_RECEIVE_SOCKET),
];

/// Which of the paper's components each measured hop spans.
fn paper_components(hop: &str) -> &'static str {
    if hop.starts_with("send socket") {
        "send socket + protocol, sending side"
    } else if hop.starts_with("interface queue") {
        "interface queue"
    } else if hop.starts_with("to IP input") {
        "wire + IP queue"
    } else if hop.starts_with("receive socket") {
        "protocol, receiving side + receive socket queue"
    } else {
        "—"
    }
}

/// A hop's place along the path from the sending application to the
/// receiving one.
fn path_rank(hop: &str) -> usize {
    [
        "send socket",
        "interface queue",
        "qdisc",
        "driver",
        "to IP input",
        "receive socket",
    ]
    .iter()
    .position(|p| hop.starts_with(p))
    .unwrap_or(usize::MAX)
}

fn stop_and_wait_section(d: &StudyData) -> Section {
    let mut s = Section::new("One packet at a time: delay per layer (Experiment 2, Table 1)");
    let paper_total: f64 = PAPER_TABLE1.iter().map(|c| c.1.value).sum();
    s.paper_finding(
        format!("{CITE}, {}", T1_SEND_SOCKET.source),
        format!(
            "Stop-and-wait, 1 KB: send socket with copy {T1_SEND_SOCKET} µs, sending protocol \
             {T1_SEND_PROTOCOL}, interface queue {T1_INTERFACE_QUEUE}, IP queue {T1_IP_QUEUE}, \
             receiving protocol {T1_RECEIVE_PROTOCOL}, receive socket with copy \
             {T1_RECEIVE_SOCKET} — {paper_total:.0} µs in all on a SPARCstation 1."
        ),
    );
    let runs = all_probed(d, "stop-and-wait", |_| true);
    if runs.is_empty() {
        no_probes(&mut s, "stop-and-wait");
        return s;
    }
    // Median delay of each hop, averaged over the probed trials.
    let mut per_hop: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for a in &runs {
        for h in a.hops.iter().filter(|h| h.n > 0) {
            per_hop.entry(h.hop.clone()).or_default().push(h.p50_us);
        }
    }
    let mut t = Table::new(["hop", "p50 µs (mean over trials)", "the paper's components"])
        .with_caption(format!(
            "{} probed trials of 1 KB request/response with NODELAY and 1 KB buffers",
            runs.len()
        ))
        .key();
    // In path order: the sender's socket to the receiver's.
    let mut hops: Vec<(&String, &Vec<f64>)> = per_hop.iter().collect();
    hops.sort_by_key(|(h, _)| path_rank(h));
    let mut rows: Vec<(String, f64)> = Vec::new();
    for (hop, v) in hops {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        t.row([
            hop.clone(),
            format!("{m:.1}"),
            paper_components(hop).to_string(),
        ]);
        rows.push((hop.clone(), m));
    }
    s.push(t);
    let mut f = Figure::new(
        "Median delay per hop, one 1 KB packet at a time",
        "hop",
        "delay (µs)",
    );
    f.x_ticks = TickFormat::Labels(
        rows.iter()
            .enumerate()
            .map(|(i, (h, _))| (i as f64, h.split(':').next().unwrap_or(h).to_string()))
            .collect(),
    );
    f.series.push(
        Series::new(
            "this host",
            rows.iter()
                .enumerate()
                .map(|(i, (_, m))| Point::new(i as f64, *m))
                .collect(),
        )
        .with_style(SeriesStyle::Bars),
    );
    s.push(f);
    // The end-to-end hops (excluding the qdisc and driver sub-hops, which
    // lie inside the interface hop and the hop to IP input).
    let path: Vec<&(String, f64)> = rows
        .iter()
        .filter(|(h, _)| paper_components(h) != "—")
        .collect();
    let total: f64 = path.iter().map(|r| r.1).sum();
    if total > 0.0 {
        s.finding(format!(
            "One 1 KB packet crosses the measured hops in {} at the median, {:.0}× less than \
             SunOS on a SPARCstation 1 ({paper_total:.0} µs).",
            number(total * 1e-6, Unit::Si("s")),
            paper_total / total,
        ));
        let shares = hop_shares(&runs, |h| paper_components(h) != "—");
        if let Some(f) = largest_share_sentence(&shares) {
            s.finding(f);
        }
    }
    let lat = d.curve(
        "stop-and-wait",
        "latency_p50_s",
        1e6,
        |_| Some(0.0),
        |_| true,
    );
    if let Some(l) = lat.first() {
        s.finding(format!(
            "The application saw a 1 KB request and its 1 KB response take {} at the median \
             (round trip, with probes attached).",
            measure(l.mean * 1e-6, Some(l.ci * 1e-6), Unit::Si("s"))
        ));
    }
    s
}
