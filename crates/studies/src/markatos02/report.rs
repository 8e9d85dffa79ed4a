//! The Markatos report: null system call, loopback bandwidth and MB per
//! sender CPU-second across networks, latency, mileage, and the memory +
//! CPU throughput model fitted across emulated CPU speeds.

use super::paper::{
    HTTP_SCALING, LOOPBACK_HIGH, LOOPBACK_LOW, MESSAGE_KB, NETWORK_HIGH, NETWORK_LOW, NEW_CYCLES,
    NEW_MHZ, OLD_CYCLES, OLD_MHZ, PENTIUM_EARLY, PENTIUM_RECENT, PROCESSORS, SPARC_CONST,
    SPARC_MP_EARLY, SPARC_MP_RECENT, SYSCALL_HIGH, SYSCALL_LOW,
};
use super::{claims, prediction};
use crate::data::StudyData;
use crate::figures::{place, sender_speed, series};
use analysis::findings::CurvePoint;
use analysis::models::mileage;
use analysis::summarize;
use report::format::throughput_of_bytes;
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, TickFormat, Unit};
use std::collections::BTreeMap;

pub(super) const CITE: &str = "Markatos 2002";

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        syscall_section(d),
        bandwidth_section(d),
        latency_section(d),
        model_section(d),
        super::hosts::section(d),
        super::one_host::one_host_section(d),
    ]
}

fn syscall_section(d: &StudyData) -> Section {
    let mut s = Section::new("Kernel entry and exit (§3.3, Fig. 1)");
    s.paper_finding(
        format!("{CITE}, §3.3"),
        format!(
            "An empty system call improved only {SYSCALL_LOW}–{SYSCALL_HIGH}% as fast as processors \
             did: {OLD_CYCLES} cycles on a {OLD_MHZ} MHz SPARC 10, {NEW_CYCLES} cycles on a \
             {NEW_MHZ} MHz Sun Blade 1000."
        ),
    );
    match d.host.null_syscall_s {
        Some(t) => {
            s.finding(format!(
                "A null system call takes {} on this host{}.",
                measure(t, None, Unit::Si("s")),
                d.host
                    .cpu_score
                    .map(|c| format!(" (CPU score {c:.0})"))
                    .unwrap_or_default()
            ));
        }
        None => {
            s.warning("This host has no calibration profile: run tcplab calibrate first.");
        }
    }
    s
}

/// The sender's CPU time of a trial and where it came from: with the sides
/// pinned to CPUs of their own and each end's receive processing steered
/// to its endpoint's CPU, the sender's whole CPU (its threads plus the
/// softirq time of its CPU), unless its ticks cannot be true
/// ([`analysis::validity::cpu_impossible`]); otherwise its threads' CPU time, which on
/// loopback and veth includes whatever receive processing ran in its
/// context and misses any that ran elsewhere.
pub(super) fn sender_cpu_s(t: &record::TrialRecord) -> Option<(f64, SenderCpu)> {
    let m = &t.outcome.metrics;
    let st = &t.outcome.details["lab"]["steering"];
    // A whole-CPU figure whose ticks covered another span than the trial
    // cannot be true: the threads' own clock stands in for it.
    let whole_true = analysis::validity::cpu_impossible(m, "sender").is_none();
    if st["sender_cpu"].is_u64() && st["receiver_cpu"].is_u64() && whole_true {
        if let (Some(w), Some(cpu)) = (m.get("cpu_sender_whole_s"), m.get("core_sender_index")) {
            return Some((*w, SenderCpu::Whole(*cpu as u32)));
        }
    }
    m.get("cpu_sender_s").map(|c| (*c, SenderCpu::Threads))
}

/// What a trial's sender CPU time counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SenderCpu {
    /// The whole of the sender's CPU (this one): threads plus softirq,
    /// receive processing steered to each side's own CPU.
    Whole(u32),
    /// The sender's threads only; softirq was charged wherever it ran.
    Threads,
}

impl SenderCpu {
    /// For a table cell.
    pub fn words(self) -> String {
        match self {
            SenderCpu::Whole(c) => format!("CPU {c}: sender's threads + softirq (receive steered)"),
            SenderCpu::Threads => {
                "sender's threads; softirq charged to whichever CPU ran it (not steered)".into()
            }
        }
    }
}

/// Per point of an experiment: MB per sender CPU-second (Markatos' metric)
/// over its successful trials, with its place and sender speed.
pub(super) fn mb_per_sender_cpu_s(d: &StudyData, id: &str) -> Vec<(String, f64, CurvePoint)> {
    let mut by_point: BTreeMap<i64, (String, f64, Vec<f64>)> = BTreeMap::new();
    for (t, p) in d.trials_of(id) {
        let m = &t.outcome.metrics;
        let (Some(b), Some(&c)) = (m.get("bytes"), m.get("cpu_sender_s")) else {
            continue;
        };
        if c > 0.0 {
            by_point
                .entry(t.point_id)
                .or_insert_with(|| (place(p), sender_speed(p), Vec::new()))
                .2
                .push(b / c / 1e6);
        }
    }
    by_point
        .into_values()
        .filter_map(|(pl, speed, v)| {
            let s = summarize(&v)?;
            Some((
                pl,
                speed,
                CurvePoint {
                    x: speed,
                    mean: s.mean,
                    ci: if s.ci95.is_finite() { s.ci95 } else { 0.0 },
                },
            ))
        })
        .collect()
}

fn bandwidth_section(d: &StudyData) -> Section {
    let mut s = Section::new("Bandwidth and MB per CPU-second (§3.4–3.7, §4.1)");
    s.paper_finding(
        format!("{CITE}, §3.4–3.7"),
        format!(
            "Loopback TCP throughput with {MESSAGE_KB} KB messages grew {LOOPBACK_LOW}–\
             {LOOPBACK_HIGH}× while processors grew {PROCESSORS}×; on LAN, MAN and WAN, MB per \
             sender CPU-second scaled {NETWORK_LOW}–{NETWORK_HIGH}% as fast as processors."
        ),
    );
    s.paper_finding(
        format!("{CITE}, §4.1"),
        format!(
            "Mileage fell with processor speed: early Pentiums moved {PENTIUM_EARLY} MB per \
             SPECmark-second, recent ones {PENTIUM_RECENT}; SPARC multiprocessors went from \
             {SPARC_MP_EARLY} to {SPARC_MP_RECENT}."
        ),
    );
    let per = mb_per_sender_cpu_s(d, "mb-per-cpu");
    if per.is_empty() {
        s.warning("The bandwidth experiment has no successful trials in this run.");
        return s;
    }
    let thr: BTreeMap<String, (f64, f64)> = d
        .points_of("mb-per-cpu")
        .iter()
        .filter_map(|p| {
            let m = p.metrics.get("throughput_bps")?;
            Some((place(&p.params), (m.mean, m.ci95)))
        })
        .collect();
    // The sender's whole CPU (threads + its CPU's softirq), where the sides
    // were pinned and steered: MB per whole-CPU second per place.
    let mut whole: BTreeMap<String, (String, Vec<f64>)> = BTreeMap::new();
    for (t, p) in d.trials_of("mb-per-cpu") {
        let (Some(b), Some((c, basis))) = (t.outcome.metrics.get("bytes"), sender_cpu_s(t)) else {
            continue;
        };
        if let (SenderCpu::Whole(_), true) = (basis, c > 0.0) {
            let e = whole
                .entry(place(p))
                .or_insert_with(|| (basis.words(), Vec::new()));
            e.1.push(b / c / 1e6);
        }
    }
    let mut t = Table::new([
        "network",
        "throughput",
        "bytes per sender CPU-s (threads)",
        "sender's whole CPU",
        "bytes per whole-CPU s",
        "mileage (MB per CPU-s per unit score)",
    ])
    .with_caption(
        "64 KB writes; Markatos' metric charges the sender's CPU time only: its threads, the \
         same basis on every network (the comparison and mileage use it). The sender's whole \
         CPU adds the softirq time of the CPU it was pinned to, with each end's receive \
         processing steered to its own side's CPU; on the emulated networks the middle \
         namespace's forwarding and shaping of the data also run there, so it is an upper \
         bound. Loopback has one device for both directions and cannot be steered per side",
    )
    .key();
    let mut bars = Vec::new();
    for (i, (pl, _, c)) in per.iter().enumerate() {
        let (tm, tc) = thr.get(pl).copied().unwrap_or((f64::NAN, f64::NAN));
        let mil = d
            .host
            .cpu_score
            .and_then(|score| mileage(c.mean * 1e6, score).ok());
        t.row([
            pl.clone(),
            measure(tm, Some(tc), Unit::Si("bit/s")),
            prediction::per_cpu_s(c.mean, c.ci),
            whole.get(pl).map_or(
                "not steered (loopback: one device for both directions)".into(),
                |w| w.0.clone(),
            ),
            whole
                .get(pl)
                .and_then(|w| summarize(&w.1))
                .map_or("—".into(), |m| {
                    measure(
                        m.mean * 1e6,
                        m.ci95.is_finite().then_some(m.ci95 * 1e6),
                        Unit::Si("B/CPU-s"),
                    )
                }),
            mil.map_or("— (no calibration)".into(), |m| format!("{m:.3}")),
        ]);
        bars.push(Point::with_ci(i as f64, c.mean, c.ci));
    }
    s.push(t);
    let mut f = Figure::new(
        "MB moved per sender CPU-second, by network",
        "network",
        "MB per sender CPU-second",
    );
    f.x_ticks = TickFormat::Labels(
        per.iter()
            .enumerate()
            .map(|(i, (pl, _, _))| (i as f64, pl.clone()))
            .collect(),
    );
    f.series
        .push(Series::new("this host", bars).with_style(SeriesStyle::Bars));
    s.push(f);
    let lo = per.iter().find(|(pl, _, _)| pl == "loopback");
    let pairs: Vec<(String, CurvePoint)> = per.iter().map(|(pl, _, c)| (pl.clone(), *c)).collect();
    if let Some(f) = claims::most_and_least(&pairs) {
        s.finding(f);
    }
    if let (Some(score), Some(l)) = (d.host.cpu_score, lo) {
        if let Ok(m) = mileage(l.2.mean * 1e6, score) {
            s.finding(format!(
                "Loopback mileage on this host: {} per unit of CPU score (score {score:.0}; the \
                 score is tcplab's integer workload, not SPECint95, so compare hosts measured by \
                 tcplab, not the paper's numbers).",
                measure(m, Some(l.2.ci / score), Unit::Fixed("MB per CPU-second"))
            ));
        }
    }
    s
}

fn latency_section(d: &StudyData) -> Section {
    let mut s = Section::new("TCP and HTTP latency (§3.8–3.9)");
    s.paper_finding(
        format!("{CITE}, §3.8–3.9"),
        format!(
            "TCP latency between hosts barely improved with processor speed; lat_http's page \
             load scaled about {HTTP_SCALING}% as fast as processors."
        ),
    );
    let mut t = Table::new(["test", "network", "p50", "p99", "transactions/s"])
        .with_caption("Latency per transaction, mean over trials ± 95% CI")
        .key();
    let mut found = Vec::new();
    for (id, name) in [
        ("latency-tcp", "TCP 1-byte rr"),
        ("latency-http", "HTTP page load"),
    ] {
        for p in d.points_of(id) {
            let g = |k: &str| p.metrics.get(k);
            let cell = |k: &str| {
                g(k).map_or("—".into(), |m| {
                    measure(m.mean, Some(m.ci95), Unit::Si("s"))
                })
            };
            if let Some(m) = g("latency_p50_s") {
                found.push((
                    name,
                    place(&p.params),
                    CurvePoint {
                        x: 0.0,
                        mean: m.mean,
                        ci: if m.ci95.is_finite() { m.ci95 } else { 0.0 },
                    },
                ));
            }
            t.row([
                name.to_string(),
                place(&p.params),
                cell("latency_p50_s"),
                cell("latency_p99_s"),
                g("transactions_per_s")
                    .map_or("—".into(), |m| measure(m.mean, Some(m.ci95), Unit::Plain)),
            ]);
        }
    }
    if t.rows.is_empty() {
        s.warning("The latency experiments have no successful trials in this run.");
        return s;
    }
    s.push(t);
    for name in ["TCP 1-byte rr", "HTTP page load"] {
        let lo = found.iter().find(|f| f.0 == name && f.1 == "loopback");
        let net = found.iter().find(|f| f.0 == name && f.1 != "loopback");
        if let (Some(a), Some(b)) = (lo, net) {
            s.finding(claims::latency_sentence(name, &b.1, a.2, b.2));
        }
    }
    s
}

fn model_section(d: &StudyData) -> Section {
    let mut s = Section::new("Throughput against CPU speed: Markatos' model (§4.2)");
    s.paper_finding(
        format!("{CITE}, §4.2"),
        format!(
            "Throughput = 1 / (1/mem_band + Const/SPEC_rating), Const fitted per family \
             ({SPARC_CONST} for SPARC uniprocessors), predicted the measured throughput of each \
             family closely."
        ),
    );
    let thr = d.curve(
        "cpu-speed",
        "throughput_bps",
        1.0 / 8.0,
        |p| Some(sender_speed(p)),
        |_| true,
    );
    if thr.is_empty() {
        s.warning("The CPU-speed experiment has no successful trials in this run.");
        return s;
    }
    let (Some(cpu_score), Some(mem_bw)) = (d.host.cpu_score, d.host.mem_bw) else {
        s.warning(
            "No prediction: the model needs calibrate's memory bandwidth and CPU score (run \
             tcplab calibrate).",
        );
        return s;
    };
    let Some(mb_per_cpu_s) = mb_per_sender_cpu_s(d, "mb-per-cpu")
        .into_iter()
        .find(|(pl, speed, _)| pl == "loopback" && *speed == 1.0)
        .map(|(_, _, c)| c)
    else {
        s.warning(
            "No prediction: the model's C comes from the loopback MB per sender CPU-second, and \
             the bandwidth experiment has no loopback trial here.",
        );
        return s;
    };
    let inputs = prediction::Inputs {
        mem_bw,
        cpu_score,
        mb_per_cpu_s,
    };
    let k = match prediction::constant(&inputs) {
        Ok(k) => k,
        Err(e) => {
            s.warning(format!("No prediction: {e}."));
            return s;
        }
    };
    let checks = prediction::checks(&inputs, &k, &thr);
    let mut f = Figure::new(
        "Loopback throughput against emulated CPU speed, measured and predicted",
        format!("CPU score {cpu_score:.0} × CPU share"),
        "throughput",
    );
    f.series.push(series(
        "measured",
        &thr.iter()
            .map(|p| CurvePoint {
                x: cpu_score * p.x,
                mean: p.mean * 8.0 / 1e6,
                ci: p.ci * 8.0 / 1e6,
            })
            .collect::<Vec<_>>(),
    ));
    f.series.push(
        Series::new(
            "predicted (model, C from MB per CPU-second)",
            checks
                .iter()
                .map(|c| Point::new(cpu_score * c.share, c.predicted * 8.0 / 1e6))
                .collect(),
        )
        .with_style(SeriesStyle::Line),
    );
    crate::figures::throughput_y(&mut f, "throughput");
    s.push(f);
    let mut t = Table::new([
        "CPU share",
        "CPU score",
        "predicted",
        "predicted, range from C's CI",
        "measured",
        "prediction",
    ])
    .with_caption(format!(
        "throughput = 1 / (1/mem_bw + C/score), mem_bw {} from calibrate, C = {:.3e} score·s per \
         byte from the sender's CPU time per byte at full speed; nothing fitted to these points",
        measure(mem_bw, None, Unit::Si("B/s")),
        k.c
    ))
    .key();
    for c in &checks {
        t.row([
            format!("{}", c.share),
            format!("{:.0}", cpu_score * c.share),
            throughput_of_bytes(c.predicted, None),
            format!(
                "{} – {}",
                throughput_of_bytes(c.range.0, None),
                throughput_of_bytes(c.range.1, None)
            ),
            throughput_of_bytes(c.measured.mean, Some(c.measured.ci)),
            if c.within() {
                "within CI".into()
            } else {
                format!(
                    "outside CI, {:+.0}%",
                    (c.predicted / c.measured.mean - 1.0) * 100.0
                )
            },
        ]);
    }
    s.push(t);
    for f in prediction::sentences(&inputs, &k, &checks) {
        s.finding(f);
    }
    s
}
