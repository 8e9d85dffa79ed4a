//! The Markatos report: null system call, loopback bandwidth and MB per
//! sender CPU-second across networks, latency, mileage, and the memory +
//! CPU throughput model fitted across emulated CPU speeds.

use crate::data::StudyData;
use crate::figures::{place, sender_speed, series};
use analysis::findings::CurvePoint;
use analysis::models::{fit_markatos, mileage, SpeedObservation};
use analysis::summarize;
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
    ]
}

fn syscall_section(d: &StudyData) -> Section {
    let mut s = Section::new("Kernel entry and exit (§3.3, Fig. 1)");
    s.paper_finding(
        format!("{CITE}, §3.3"),
        "An empty system call improved only 12–28% as fast as processors did: 150 cycles on a \
         40 MHz SPARC 10, 780 cycles on a 600 MHz Sun Blade 1000.",
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

/// Per point of an experiment: MB per sender CPU-second (Markatos' metric)
/// over its successful trials, with its place and sender speed.
pub(super) fn mb_per_sender_cpu_s(d: &StudyData, id: &str) -> Vec<(String, f64, CurvePoint)> {
    let mut by_point: BTreeMap<i64, (String, f64, Vec<f64>)> = BTreeMap::new();
    for (t, p) in d.trials_of(id) {
        let m = &t.outcome.metrics;
        let (Some(b), Some(c)) = (m.get("bytes"), m.get("cpu_sender_s")) else {
            continue;
        };
        if *c > 0.0 {
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
        "Loopback TCP throughput with 64 KB messages grew 5–12× while processors grew 35×; on \
         LAN, MAN and WAN, MB per sender CPU-second scaled 60–80% as fast as processors.",
    );
    s.paper_finding(
        format!("{CITE}, §4.1"),
        "Mileage fell with processor speed: early Pentiums moved 5 MB per SPECmark-second, \
         recent ones 2.5; SPARC multiprocessors went from 13 to 7.",
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
    let mut t = Table::new([
        "network",
        "throughput",
        "MB per sender CPU-s",
        "mileage (MB per CPU-s per unit score)",
    ])
    .with_caption("64 KB writes; Markatos' metric charges the sender's CPU time only")
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
            measure(c.mean, Some(c.ci), Unit::Fixed("MB/CPU-s")),
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
    let most = per.iter().max_by(|a, b| a.2.mean.total_cmp(&b.2.mean));
    let least = per.iter().min_by(|a, b| a.2.mean.total_cmp(&b.2.mean));
    if let (Some(m), Some(l)) = (most, least) {
        s.finding(format!(
            "The sender moves most data per CPU-second on {} ({:.0} MB) and least on {} ({:.0} MB, \
             {:.1}× less){}.",
            m.0,
            m.2.mean,
            l.0,
            l.2.mean,
            m.2.mean / l.2.mean,
            lo.filter(|x| x.0 != m.0)
                .map(|x| format!("; loopback: {:.0} MB", x.2.mean))
                .unwrap_or_default()
        ));
    }
    if let (Some(score), Some(l)) = (d.host.cpu_score, lo) {
        if let Ok(m) = mileage(l.2.mean * 1e6, score) {
            s.finding(format!(
                "Loopback mileage on this host: {m:.3} MB per CPU-second per unit of CPU score \
                 (score {score:.0}; the score is tcplab's integer workload, not SPECint95, so \
                 compare hosts measured by tcplab, not the paper's numbers)."
            ));
        }
    }
    s
}

fn latency_section(d: &StudyData) -> Section {
    let mut s = Section::new("TCP and HTTP latency (§3.8–3.9)");
    s.paper_finding(
        format!("{CITE}, §3.8–3.9"),
        "TCP latency between hosts barely improved with processor speed; lat_http's page load \
         scaled about 30% as fast as processors.",
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
                found.push((name, place(&p.params), m.mean));
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
            let ratio = b.2 / a.2;
            s.finding(format!(
                "{name}: median {} on loopback, {} on {} ({ratio:.1}×): {}",
                measure(a.2, None, Unit::Si("s")),
                measure(b.2, None, Unit::Si("s")),
                b.1,
                if ratio >= 2.0 {
                    "the network, not the CPU, sets it there."
                } else {
                    "the network adds little; the hosts' processing sets it."
                }
            ));
        }
    }
    s
}

fn model_section(d: &StudyData) -> Section {
    let mut s = Section::new("Throughput against CPU speed: Markatos' model (§4.2)");
    s.paper_finding(
        format!("{CITE}, §4.2"),
        "Throughput = 1 / (1/mem_band + Const/SPEC_rating), Const fitted per family (0.105 for \
         SPARC uniprocessors), predicted the measured throughput of each family closely.",
    );
    let thr = d.curve(
        "cpu-speed",
        "throughput_bps",
        1.0 / 8.0,
        |p| Some(sender_speed(p)),
        |_| true,
    );
    if thr.len() < 2 {
        s.warning("The CPU-speed experiment has too few points in this run.");
        return s;
    }
    let (score, unit_note) = match d.host.cpu_score {
        Some(c) => (c, format!("CPU score {c:.0} × CPU share")),
        None => (
            1.0,
            "CPU share (no calibration: relative score)".to_string(),
        ),
    };
    let obs: Vec<SpeedObservation> = thr
        .iter()
        .map(|p| SpeedObservation {
            cpu_score: score * p.x,
            throughput: p.mean,
        })
        .collect();
    let mut f = Figure::new(
        "Loopback throughput against emulated CPU speed, measured and modelled",
        unit_note.clone(),
        "throughput (MB/s)",
    );
    f.series.push(series(
        "measured",
        &thr.iter()
            .map(|p| CurvePoint {
                x: score * p.x,
                mean: p.mean / 1e6,
                ci: p.ci / 1e6,
            })
            .collect::<Vec<_>>(),
    ));
    let mut fits = Vec::new();
    if let Some(bw) = d.host.mem_bw {
        if let Ok(fit) = fit_markatos(&obs, Some(bw)) {
            fits.push(("memory bandwidth from calibrate", fit));
        }
    }
    if let Ok(fit) = fit_markatos(&obs, None) {
        fits.push(("both terms fitted", fit));
    }
    let mut t = Table::new(["fit", "mem_bw", "C", "rms error", "max error"])
        .with_caption("Least squares on 1/throughput against 1/score; errors on throughput")
        .key();
    for (name, fit) in &fits {
        f.series.push(
            Series::new(
                format!("model ({name})"),
                obs.iter()
                    .map(|o| Point::new(o.cpu_score, fit.predict(o.cpu_score) / 1e6))
                    .collect(),
            )
            .with_style(SeriesStyle::Line),
        );
        t.row([
            name.to_string(),
            if fit.mem_bw.is_finite() {
                measure(fit.mem_bw, None, Unit::Si("B/s"))
            } else {
                "∞ (not visible)".into()
            },
            format!("{:.3e} ± {:.1e}", fit.c, fit.c_se),
            format!("{:.1}%", fit.rms_rel_error * 100.0),
            format!("{:.1}%", fit.max_rel_error * 100.0),
        ]);
    }
    s.push(f);
    if fits.is_empty() {
        s.warning("The model could not be fitted to these points.");
        return s;
    }
    s.push(t);
    let (name, best) = fits
        .iter()
        .min_by(|a, b| a.1.rms_rel_error.total_cmp(&b.1.rms_rel_error))
        .map(|(n, f)| (*n, f.clone()))
        .expect("fits is not empty");
    s.finding(format!(
        "The model ({name}) predicts the measured throughput within {:.1}% rms ({:.1}% at worst) \
         over {} CPU speeds.",
        best.rms_rel_error * 100.0,
        best.max_rel_error * 100.0,
        best.n
    ));
    let lo = thr.first().map(|p| p.mean).unwrap_or(f64::NAN);
    let hi = thr.last().map(|p| p.mean).unwrap_or(f64::NAN);
    let sp = thr.last().map(|p| p.x).unwrap_or(1.0) / thr.first().map(|p| p.x).unwrap_or(1.0);
    let gain = hi / lo;
    s.finding(if gain >= 0.8 * sp {
        format!(
            "A {sp:.0}× larger CPU share gave {gain:.1}× the throughput, nearly in proportion: a \
             CPU quota slows memory copies as much as computation, so it cannot expose the \
             memory term; compare real hosts (tcplab compare) for that."
        )
    } else {
        format!(
            "A {sp:.0}× larger CPU share gave only {gain:.1}× the throughput: part of the cost \
             does not shrink with CPU time, as the model's memory term expects."
        )
    });
    s
}
