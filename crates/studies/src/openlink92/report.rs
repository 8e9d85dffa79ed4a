//! The Guerrero & Frieder report: rates per protocol layer, the traced
//! transfer with its packet classes, silly window syndrome healthy and
//! pathological, smoothed RTT against measured RTT, and the matrix of the
//! host's TCP implementations. Every finding is computed from the run.

use super::paper::{
    FASTEST, RTT_ACCURACY_MS, RTT_EVERY_MS, SLOWEST, TRANSFER_MB, TUNED_HIGH, TUNED_LOW,
    UNTUNED_SELF,
};
use super::trace::{no_probes, sws_section, time_sequence_section};
use super::CITE;
use crate::data::StudyData;
use crate::figures::{place, series, write_size};
use analysis::findings::{differ, CurvePoint};
use analysis::models::linear_fit;
use analysis::stats::{t_quantile, Summary};
use analysis::summary::PointSummary;
use record::params::StackImpl;
use record::probe_event::ProbeId;
use record::TrialParams;
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, TickFormat, Unit};
use std::collections::BTreeMap;

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        layer_section(d),
        super::merged::layers_merged_section(d),
        time_sequence_section(d),
        sws_section(d),
        rtt_section(d),
        implementations_section(d),
        super::tuning::tuning_section(d),
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
    let mut s = Section::new("Packet and byte rate at each protocol layer (Figs 1–2)");
    s.paper_finding(
        format!("{CITE}, §2, Figs 1–2"),
        "The Ethernet curve rose with packet size in packets and bytes per second, while the IP \
         and TCP curves stayed flat: a fixed per-packet cost, not the bytes, limited them (with \
         each layer its own process; the layers merged, Figs 3–4, are the next section).",
    );
    let mut pps: Vec<(&str, Vec<CurvePoint>)> = Vec::new();
    let mut bps: Vec<(&str, Vec<CurvePoint>)> = Vec::new();
    let mut frame_sizes: Vec<(&str, Vec<CurvePoint>)> = Vec::new();
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
        let c = d.curve("layer-rate", "frame_bytes", 1.0, write_size, keep);
        if !c.is_empty() {
            frame_sizes.push((name, c));
        }
    }
    if pps.is_empty() {
        s.warning("The layer-rate experiment has no successful trials in this run.");
        return s;
    }
    // The rates come in Mbit/s and are drawn in the prefix their figure
    // needs; packet rates are plain numbers.
    for (title, y, curves, mbit) in [
        (
            "Packets per second received at each layer against frame size (Fig. 1)",
            "packets per second",
            &pps,
            false,
        ),
        (
            "Bytes per second received at each layer against frame size (Fig. 2)",
            "throughput, whole frames",
            &bps,
            true,
        ),
    ] {
        let mut f = Figure::new(title, "frame size (bytes, Ethernet header included)", y);
        for (name, c) in curves.iter() {
            f.series.push(series(name, c));
        }
        if mbit {
            crate::figures::throughput_y(&mut f, y);
        }
        s.push(f);
    }
    for (name, c) in &pps {
        let bytes = bps
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.as_slice());
        let frames = frame_sizes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.as_slice());
        match layer_claim(name, c, bytes.unwrap_or(&[]), frames.unwrap_or(&[])) {
            Some(LayerClaim::Finding(f)) => {
                s.finding(f);
            }
            Some(LayerClaim::Impossible(w)) => {
                s.warning(w);
            }
            None => {}
        }
    }
    let at_small = |name: &str| {
        pps.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, c)| c.first().copied())
    };
    if let (Some(e), Some(t)) = (at_small("Ethernet (AF_PACKET)"), at_small("TCP")) {
        if e.mean > 0.0 && e.x == t.x {
            s.finding(tcp_against_ethernet(&e, &t));
        }
    }
    s
}

/// What a layer's packet rate against frame size says.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum LayerClaim {
    /// A finding computed from the curve.
    Finding(String),
    /// A result a cost model cannot produce, flagged with its reason.
    Impossible(String),
}

/// `mean ± ci` packets per second.
fn rate(p: &CurvePoint) -> String {
    let ci = (p.ci.is_finite() && p.ci > 0.0).then_some(p.ci);
    measure(p.mean, ci, Unit::Plain)
}

/// A change of the packet rate from the smallest to the largest frame,
/// relative to the rate at the smallest: `rel` ± `ci` (%), and whether it
/// is beyond the CI.
#[derive(Debug, Clone, Copy)]
struct Change {
    rel: f64,
    ci: f64,
    beyond: bool,
}

/// The change between the end points, each with its own CI (beyond when
/// the intervals do not overlap: [`differ`]).
fn end_to_end(a: &CurvePoint, b: &CurvePoint) -> Change {
    Change {
        rel: (b.mean - a.mean) / a.mean * 100.0,
        ci: (a.ci + b.ci) / a.mean * 100.0,
        beyond: differ(a, b),
    }
}

/// A signed percentage change and its CI half-width, with a decimal when
/// the half-width is under 10% so that a change beyond its CI ("-3.4% ±
/// 2.9%") never reads as one within it ("-3% ± 3%").
pub(super) fn percent_pm(rel: f64, ci: f64) -> String {
    if ci < 10.0 {
        format!("{rel:+.1}% ± {ci:.1}%")
    } else {
        format!("{rel:+.0}% ± {ci:.0}%")
    }
}

/// The change along a straight line through every level's mean, with the
/// t-interval of its slope; `None` with fewer than three levels.
fn along_line(c: &[CurvePoint]) -> Option<Change> {
    let (a, b) = (c.first()?, c.last()?);
    if c.len() < 3 {
        return None;
    }
    let pts: Vec<(f64, f64)> = c.iter().map(|p| (p.x, p.mean)).collect();
    let fit = linear_fit(&pts).ok().filter(|f| f.slope_se.is_finite())?;
    let t = t_quantile(0.95, fit.n as u32 - 2);
    let span = b.x - a.x;
    let base = Some(fit.intercept + fit.slope * a.x)
        .filter(|v| *v > 0.0)
        .unwrap_or(a.mean);
    let change = fit.slope * span;
    let ci = t * fit.slope_se * span;
    Some(Change {
        rel: change / base * 100.0,
        ci: ci / base * 100.0,
        beyond: change.abs() > ci,
    })
}

/// The claim on one layer's packet rate (`pps`) against frame size, with
/// its bytes per second (`bps`, for what a flat rate means) and the mean
/// frame it actually sent (`frames`, the `frame_bytes` metric, for why a
/// rate rises). A change is claimed when the end points differ beyond
/// their CIs or a line through every size has a slope beyond its CI; no
/// change when neither does. `None` with fewer than two sizes.
pub(super) fn layer_claim(
    name: &str,
    pps: &[CurvePoint],
    bps: &[CurvePoint],
    frames: &[CurvePoint],
) -> Option<LayerClaim> {
    let (a, b) = (pps.first()?, pps.last()?);
    if b.x <= a.x || a.mean <= 0.0 {
        return None;
    }
    let ends = end_to_end(a, b);
    let line = along_line(pps);
    let mut evidence = format!(
        "{} packets/s at {:.0}-byte frames, {} at {:.0} bytes: {} end to end",
        rate(a),
        a.x,
        rate(b),
        b.x,
        percent_pm(ends.rel, ends.ci)
    );
    if let Some(l) = line {
        evidence += &format!(
            ", {} along a straight line through the {} sizes",
            percent_pm(l.rel, l.ci),
            pps.len()
        );
    }
    let rises = (ends.beyond && ends.rel > 0.0) || line.is_some_and(|l| l.beyond && l.rel > 0.0);
    let falls = (ends.beyond && ends.rel < 0.0) || line.is_some_and(|l| l.beyond && l.rel < 0.0);
    if rises && falls {
        return Some(LayerClaim::Finding(format!(
            "{name}: no trend is claimed ({evidence}): the end points and the line through every \
             size disagree on the direction."
        )));
    }
    if rises {
        // Costs that grow with the frame can only lower the packet rate.
        let coalesced = frames
            .first()
            .filter(|f| f.x == a.x && f.mean > a.x * 1.05)
            .map(|f| {
                format!(
                    " Here the {:.0}-byte writes left as {:.0}-byte frames on average: TCP \
                     coalesced them, so the axis is not the size sent.",
                    a.x, f.mean
                )
            })
            .unwrap_or_default();
        return Some(LayerClaim::Impossible(format!(
            "{name}: the packet rate rises with frame size beyond the 95% CI ({evidence}). Costs \
             per packet and per byte can only lower the rate as frames grow, so this is not a \
             measure of them: something other than the frame limited the small sizes in this \
             run (such as the sender's cost per write).{coalesced}"
        )));
    }
    if falls {
        let bytes_flat = bps.len() >= 2 && !differ(&bps[0], &bps[bps.len() - 1]);
        return Some(LayerClaim::Finding(format!(
            "{name}: the packet rate falls with frame size beyond the 95% CI ({evidence}): {}.",
            if bytes_flat {
                "bytes per second stay within CI, so a per-byte cost (copies, the link) sets the rate"
            } else {
                "per-byte costs count as well as the per-packet cost"
            }
        )));
    }
    let smallest = line.map_or(ends.ci, |l| l.ci.min(ends.ci));
    if !smallest.is_finite() {
        return Some(LayerClaim::Finding(format!(
            "{name}: {evidence}; without a CI no change with frame size is claimed."
        )));
    }
    let grows = match (bps.first(), bps.last()) {
        (Some(x), Some(y)) if x.mean > 0.0 => format!(
            ", so bytes per second grow {:.1}× for {:.0}× the frame",
            y.mean / x.mean,
            b.x / a.x
        ),
        _ => String::new(),
    };
    Some(LayerClaim::Finding(format!(
        "{name}: the packet rate does not change with frame size beyond its 95% CI ({evidence}; \
         a change smaller than {smallest:.prec$}% could not have been seen). A fixed per-packet \
         cost sets the rate{grows}.",
        prec = if smallest < 10.0 { 1 } else { 0 }
    )))
}

/// TCP's packet rate against raw Ethernet's at the smallest frame.
pub(super) fn tcp_against_ethernet(e: &CurvePoint, t: &CurvePoint) -> String {
    let share = t.mean / e.mean * 100.0;
    let ci = |p: &CurvePoint| p.ci.is_finite() && p.ci > 0.0;
    let verdict = if !(ci(e) && ci(t)) {
        "; without CIs (one trial) no difference is claimed".to_string()
    } else if differ(e, t) {
        format!(
            ", {} raw Ethernet beyond the 95% CIs (the paper's TCP was flat far below its \
             Ethernet curve)",
            if t.mean < e.mean { "below" } else { "above" }
        )
    } else {
        format!(
            ": no difference beyond the 95% CIs (one smaller than {} packets/s could not have \
             been seen)",
            measure(e.ci + t.ci, None, Unit::Plain)
        )
    };
    format!(
        "At {:.0}-byte frames TCP moves {} packets/s against raw Ethernet's {} ({share:.0}%){verdict}.",
        e.x,
        rate(t),
        rate(e)
    )
}

fn rtt_section(d: &StudyData) -> Section {
    let mut s = Section::new("Smoothed RTT against measured RTT (§4)");
    s.paper_finding(
        format!("{CITE}, §4"),
        format!(
            "Their TCP kept a per-packet RTT and a smoothed RTT in integer arithmetic, updated at \
             least every {RTT_EVERY_MS} ms and accurate to {RTT_ACCURACY_MS} ms, the cornerstone \
             of its ACK and back-off strategy."
        ),
    );
    // Per place, each probed trial's median srtt (s).
    let mut srtt: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (t, p) in d.trials_of("rtt") {
        let Some(ev) = d.events.get(&t.id) else {
            continue;
        };
        let v: Vec<f64> = ev
            .iter()
            .filter(|e| e.probe == ProbeId::TcpProbe as u8 && e.x[1] > 0)
            .map(|e| e.x[1] as f64 * 1e-6)
            .collect();
        if let Some(m) = analysis::median(&v) {
            srtt.entry(place(p)).or_default().push(m);
        }
    }
    let mut t = Table::new([
        "place",
        "kernel srtt (tcp_probe), median per trial",
        "application RTT, p50 (rr)",
        "ratio",
    ])
    .with_caption(
        "1-byte request/response; srtt: the median of every tcp_probe record of both sockets in \
         each trial, then mean ± 95% CI over trials",
    )
    .key();
    let mut any = false;
    // The application's RTT is a total: from the unprobed twin where the
    // run has one (issue 30, rule 1); srtt needs the probe.
    let twin = d.points_of(&format!("{}rtt", crate::spec::UNPROBED_PREFIX));
    let (app_points, app_source) = if twin.is_empty() {
        (
            d.points_of("rtt"),
            "the probed trials (no unprobed twin in this run: their RTT carries the probe's cost)"
                .to_string(),
        )
    } else {
        let cost = d
            .probe_effect("rtt")
            .map(|e| format!("; {}", e.words()))
            .unwrap_or_default();
        (twin, format!("the unprobed twin trials{cost}"))
    };
    for p in app_points {
        let pl = place(&p.params);
        let Some(lat) = p.metrics.get("latency_p50_s") else {
            continue;
        };
        let Some(k) = srtt.get(&pl).and_then(|v| Summary::new(v)) else {
            continue;
        };
        any = true;
        let kernel = CurvePoint {
            x: 0.0,
            mean: k.mean,
            ci: k.ci95,
        };
        let app = CurvePoint {
            x: 0.0,
            mean: lat.mean,
            ci: lat.ci95,
        };
        t.row([
            pl.clone(),
            seconds(&kernel),
            seconds(&app),
            format!("{:.2}", kernel.mean / app.mean),
        ]);
        s.finding(rtt_finding(&pl, &kernel, &app));
    }
    if !any {
        no_probes(&mut s, "RTT");
        return s;
    }
    s.push(t);
    s.paragraph(format!(
        "The kernel's srtt comes from the probed trials; the application's RTT from {app_source}."
    ));
    s
}

/// `mean ± ci` seconds (no CI when there is none).
fn seconds(p: &CurvePoint) -> String {
    let ci = p.ci.is_finite().then_some(p.ci);
    measure(p.mean, ci, Unit::Si("s"))
}

/// The kernel's smoothed RTT against the application's on `place`: which
/// is larger, by how much, and whether beyond the 95% CIs.
pub(super) fn rtt_finding(place: &str, kernel: &CurvePoint, app: &CurvePoint) -> String {
    let head = format!(
        "On {place}, the kernel's smoothed RTT is {} against {} the application measures per \
         transaction",
        seconds(kernel),
        seconds(app)
    );
    let has_ci = |p: &CurvePoint| p.ci.is_finite();
    if !(has_ci(kernel) && has_ci(app)) || app.mean <= 0.0 {
        return format!("{head}; without a CI on both (one trial) no difference is claimed.");
    }
    let gap = (kernel.mean - app.mean).abs();
    let by = format!(
        "{} by {} ({:.0}%)",
        if kernel.mean < app.mean {
            "lower"
        } else {
            "higher"
        },
        measure(gap, None, Unit::Si("s")),
        gap / app.mean * 100.0
    );
    if !differ(kernel, app) {
        return format!(
            "{head}: {by}, within the 95% CIs, so no difference is claimed (one smaller than {} \
             could not have been seen).",
            measure(kernel.ci + app.ci, None, Unit::Si("s"))
        );
    }
    if kernel.mean < app.mean {
        format!(
            "{head}: {by}, beyond the 95% CIs. The kernel times a segment to its ACK; the \
             application's round trip adds the system calls and wake-ups at both ends."
        )
    } else {
        format!(
            "{head}: {by}, beyond the 95% CIs. The estimate runs above the round trip it should \
             be part of: it is smoothed over the connection's history and includes ACK delays \
             the transactions do not see."
        )
    }
}

/// What each point's trials moved: "2.5 MB transfers", "0.3 s transfers",
/// or "transfers of 2.5 MB and 0.3 s" when the points differ.
pub(super) fn transfer_amount(pts: &[&PointSummary]) -> String {
    let mut amounts: Vec<String> = Vec::new();
    for p in pts {
        let a = match (p.params.bytes, p.params.duration_s) {
            (Some(b), _) => format!("{:.2} MB", b as f64 / 1e6),
            (None, Some(s)) => format!("{s} s"),
            (None, None) => "unbounded".to_string(),
        };
        if !amounts.contains(&a) {
            amounts.push(a);
        }
    }
    match amounts.as_slice() {
        [one] => format!("{one} transfers"),
        many => format!("transfers of {}", many.join(" and ")),
    }
}

/// The place a Table 1 point ran at: its topology, or, for tcplab's stack
/// (which takes no `--topology`), the plain TUN devices of its namespace.
fn implementation_place(p: &TrialParams) -> String {
    if p.stack == StackImpl::Kernel {
        place(p)
    } else {
        STACK_PLACE.to_string()
    }
}

/// The column of the stack's trials in Table 1.
pub(super) const STACK_PLACE: &str = "TUN (stack's namespace)";

/// A Table 1 row's name: the sending implementation and its congestion
/// control.
fn implementation_row(p: &TrialParams) -> String {
    let cc = p.cc.clone().unwrap_or_else(|| "default".into());
    if p.stack == StackImpl::Kernel {
        format!("Linux TCP, {cc}")
    } else {
        format!("tcplab stack, {cc}")
    }
}

fn implementations_section(d: &StudyData) -> Section {
    let mut s = Section::new(
        "TCP implementations on this host: Linux's congestion-control modules and tcplab's stack (Table 1)",
    );
    s.paper_finding(
        format!("{CITE}, Table 1"),
        format!(
            "A {TRANSFER_MB} MB binary transfer between eight vendors' TCPs ran from {SLOWEST} to \
             {FASTEST} KB/s; the untuned OPEN-Link release managed {SLOWEST} KB/s against every \
             other TCP ({UNTUNED_SELF} against itself), the tuned one {TUNED_LOW}–{TUNED_HIGH} \
             against every peer but the untuned release."
        ),
    );
    let mut pts = d.points_of("implementations");
    pts.extend(d.points_of(super::IMPLEMENTATIONS_STACK));
    if pts.is_empty() {
        s.warning("The implementations experiment has no successful trials in this run.");
        return s;
    }
    let mut by_cc: BTreeMap<String, BTreeMap<String, (f64, f64, f64)>> = BTreeMap::new();
    let mut places: Vec<String> = Vec::new();
    for p in &pts {
        let cc = implementation_row(&p.params);
        let pl = implementation_place(&p.params);
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
    let mut header =
        vec!["sender: implementation, congestion control \\ receiver (Linux default)".to_string()];
    header.extend(
        places
            .iter()
            .map(|p| format!("{p}: throughput, retransmits")),
    );
    let mut t = Table::new(header)
        .with_caption(format!(
            "{}; each row is a sender: Linux's TCP with one of its congestion-control modules, \
             or tcplab's own user-space stack with one of its own, a second real \
             implementation. The paper compared eight vendors' TCPs ({TRANSFER_MB} MB each). The stack \
             runs in a namespace of its own behind a plain TUN device (no offloads), not on \
             Linux's places, so its rows have their own column: {STACK_PLACE}.",
            transfer_amount(&pts)
        ))
        .key();
    for (cc, m) in &by_cc {
        let mut row = vec![cc.clone()];
        for pl in &places {
            row.push(m.get(pl).map_or("—".into(), |(v, c, r)| {
                format!("{}, {r:.0}", measure(*v, Some(*c), Unit::Si("bit/s")))
            }));
        }
        t.row(row);
    }
    s.push(t);
    let mut f = Figure::new(
        "Throughput of each sender, by place",
        "sender: implementation and congestion control",
        "throughput",
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
                            .map(|(v, c, _)| Point::with_ci(i as f64, *v, *c))
                    })
                    .collect(),
            )
            .with_style(SeriesStyle::Points),
        );
    }
    crate::figures::y_in(&mut f, "throughput", Unit::Si("bit/s"), 1.0);
    s.push(f);
    for pl in &places {
        let v: Vec<(&String, CurvePoint)> = by_cc
            .iter()
            .filter_map(|(cc, m)| {
                m.get(pl).map(|x| {
                    (
                        cc,
                        CurvePoint {
                            x: 0.0,
                            mean: x.0,
                            ci: x.1,
                        },
                    )
                })
            })
            .collect();
        if let Some(f) = congestion_control_finding(pl, &v) {
            s.finding(f);
        }
    }
    s
}

/// The fastest against the slowest sender on `place` (`modules`: the
/// implementation and congestion control, and throughput, bit/s), a difference claimed only
/// beyond the 95% CIs; `None` with fewer than two modules.
pub(super) fn congestion_control_finding(
    place: &str,
    modules: &[(&String, CurvePoint)],
) -> Option<String> {
    let best = modules
        .iter()
        .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))?;
    let worst = modules
        .iter()
        .min_by(|a, b| a.1.mean.total_cmp(&b.1.mean))?;
    if modules.len() < 2 || worst.1.mean <= 0.0 {
        return None;
    }
    let bits = |p: &CurvePoint| {
        let ci = p.ci.is_finite().then_some(p.ci);
        measure(p.mean, ci, Unit::Si("bit/s"))
    };
    let has_ci = |p: &CurvePoint| p.ci.is_finite();
    let (b, w) = (&best.1, &worst.1);
    Some(if !(has_ci(b) && has_ci(w)) {
        format!(
            "On {place}, {} moved {} and {} {}; without CIs (one trial) no difference between \
             senders is claimed.",
            best.0,
            bits(b),
            worst.0,
            bits(w)
        )
    } else if differ(b, w) {
        format!(
            "On {place}, {} is the fastest sender ({}) and {} the slowest ({}), {:.2}× \
             apart beyond the 95% CIs.",
            best.0,
            bits(b),
            worst.0,
            bits(w),
            b.mean / w.mean
        )
    } else {
        format!(
            "On {place}, the senders do not differ beyond their 95% CIs \
             ({} {}, {} {}; a difference under {} could not have been seen), unlike the paper's \
             50× spread between implementations.",
            best.0,
            bits(b),
            worst.0,
            bits(w),
            measure(b.ci + w.ci, None, Unit::Si("bit/s"))
        )
    })
}
