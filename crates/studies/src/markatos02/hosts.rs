//! Markatos across hosts: this host beside the other hosts whose
//! markatos02 runs are in the database (`tcplab import`), as the paper set
//! processor generations side by side. Mileage against CPU score (§4.1),
//! and loopback throughput against CPU score × CPU share with Markatos'
//! model predicted for each host from its own measurements, nothing fitted
//! to the points judged (§4.2). Every trend is a claim beyond the 95% CIs
//! (`host_claims`).

use super::host_claims::{mileage_sentence, scaling_sentences, HostMileage, HostPrediction};
use super::prediction::{checks, constant, Inputs};
use super::report::CITE;
use crate::data::StudyData;
use crate::figures::{place, sender_speed, series};
use crate::sunos_ipc::change::Estimate;
use analysis::findings::CurvePoint;
use analysis::models::mileage;
use report::format::throughput_of_bytes;
use report::{measure, number, Figure, Point, Section, Series, SeriesStyle, Table, Unit};

/// One host's figures for the comparison.
struct HostRow {
    name: String,
    cpu: String,
    score: Option<f64>,
    mem_bw: Option<f64>,
    /// Loopback MB per sender CPU-second at 64 KB, full speed: mean ±
    /// 95% CI over its trials.
    mb_per_cpu: Option<Estimate>,
    /// Loopback throughput at 64 KB, bytes/s.
    throughput: Option<f64>,
    /// Loopback throughput (bytes/s) against CPU share, from the
    /// CPU-speed experiment.
    speed_curve: Vec<CurvePoint>,
    imported: bool,
}

/// MB (10⁶ B) per sender CPU-second over the trials of the full-speed
/// loopback point of the mb-per-cpu experiment.
fn loopback_mb_per_cpu(d: &StudyData) -> Option<Estimate> {
    let v: Vec<f64> = d
        .trials_of("mb-per-cpu")
        .into_iter()
        .filter(|(_, p)| place(p) == "loopback" && sender_speed(p) == 1.0)
        .filter_map(|(t, _)| {
            let m = &t.outcome.metrics;
            let (b, c) = (*m.get("bytes")?, *m.get("cpu_sender_s")?);
            (c > 0.0).then(|| b / c / 1e6)
        })
        .collect();
    Estimate::from_values(&v)
}

fn row(d: &StudyData, imported: bool) -> HostRow {
    let mb = loopback_mb_per_cpu(d);
    let throughput = d
        .points_of("mb-per-cpu")
        .iter()
        .find(|p| place(&p.params) == "loopback")
        .and_then(|p| p.metrics.get("throughput_bps"))
        .map(|m| m.mean / 8.0);
    HostRow {
        name: d.run.meta.host.hostname.clone(),
        cpu: format!("{} × {}", d.run.meta.host.cores, d.run.meta.host.cpu_model),
        score: d.host.cpu_score,
        mem_bw: d.host.mem_bw,
        mb_per_cpu: mb,
        throughput,
        speed_curve: d.curve(
            "cpu-speed",
            "throughput_bps",
            1.0 / 8.0,
            |p| Some(sender_speed(p)),
            |_| true,
        ),
        imported,
    }
}

/// The section: a table of every host, and with other hosts, the mileage
/// and scaling figures with their findings.
pub fn section(d: &StudyData) -> Section {
    let mut s = Section::new("Across hosts: mileage and scaling (§4.1–4.2)");
    s.paper_finding(
        format!("{CITE}, §4.1–4.2"),
        "Across processor generations, MB per CPU-second grew more slowly than the SPEC \
         rating (mileage fell), and one model with a memory term and a CPU term fitted each \
         family's throughput.",
    );
    let rows: Vec<HostRow> = std::iter::once(row(d, false))
        .chain(d.peers.iter().map(|p| row(p, true)))
        .collect();
    let mut t = Table::new([
        "host",
        "CPU",
        "CPU score",
        "memory copy (DRAM)",
        "loopback throughput, 64 KB",
        "bytes per sender CPU-s",
        "mileage",
    ])
    .with_caption("Each host's newest completed markatos02 run; imported hosts are marked")
    .key();
    for r in &rows {
        t.row([
            if r.imported {
                format!("{} (imported)", r.name)
            } else {
                format!("{} (this run)", r.name)
            },
            r.cpu.clone(),
            r.score.map_or("—".into(), |c| number(c, Unit::Plain)),
            r.mem_bw
                .map_or("—".into(), |b| measure(b, None, Unit::Si("B/s"))),
            r.throughput
                .map_or("—".into(), |b| throughput_of_bytes(b, None)),
            r.mb_per_cpu
                .map_or("—".into(), |c| c.scaled(1e6).words(Unit::Si("B/CPU-s"))),
            match (r.mb_per_cpu, r.score) {
                (Some(c), Some(score)) => {
                    mileage(c.mean * 1e6, score).map_or("—".into(), |m| number(m, Unit::Plain))
                }
                _ => "—".into(),
            },
        ]);
    }
    s.push(t);
    if d.peers.is_empty() {
        s.paragraph(
            "Only this host is in the database. Run tcplab study markatos02 on other hosts and \
             bring their databases or exports here with tcplab import FILE: they join this table \
             and the mileage and scaling plots the next time this report is written (tcplab \
             report RUN).",
        );
        return s;
    }
    mileage_figure(&mut s, &rows);
    scaling_figure(&mut s, &rows);
    s
}

/// MB per sender CPU-second against CPU score, one series per host, and
/// the mileage trend from the slowest host to the fastest.
fn mileage_figure(s: &mut Section, rows: &[HostRow]) {
    let pts: Vec<HostMileage> = rows
        .iter()
        .filter_map(|r| {
            Some(HostMileage {
                name: &r.name,
                score: r.score?,
                mb_per_cpu: r.mb_per_cpu?,
            })
        })
        .collect();
    if pts.len() < 2 {
        s.warning(
            "Fewer than two hosts have both a CPU score and a loopback trial: no mileage plot.",
        );
        return;
    }
    let mut f = Figure::new(
        "MB per sender CPU-second against CPU score, by host (loopback, 64 KB)",
        "CPU score (tcplab calibrate)",
        "MB per sender CPU-second",
    );
    for h in &pts {
        let c = h.mb_per_cpu;
        let ci = if c.ci.is_finite() { c.ci } else { 0.0 };
        f.series.push(
            Series::new(h.name, vec![Point::with_ci(h.score, c.mean, ci)])
                .with_style(SeriesStyle::Points),
        );
    }
    s.push(f);
    let by_score = |a: &&HostMileage, b: &&HostMileage| a.score.total_cmp(&b.score);
    let slow = pts.iter().min_by(by_score).expect("two hosts");
    let fast = pts.iter().max_by(by_score).expect("two hosts");
    s.finding(mileage_sentence(slow, fast));
}

/// Loopback throughput against effective CPU score (score × CPU share)
/// for every host, each beside Markatos' model predicted from that host's
/// own full-speed measurements (C from its MB per sender CPU-second, memory
/// bandwidth and CPU score): nothing is fitted to the points shown.
fn scaling_figure(s: &mut Section, rows: &[HostRow]) {
    let mut f = Figure::new(
        "Loopback throughput against CPU score × CPU share, every host, with the model \
         predicted for each",
        "effective CPU score",
        "throughput",
    );
    let mut predicted = Vec::new();
    for r in rows {
        let Some(score) = r.score else { continue };
        if r.speed_curve.is_empty() {
            continue;
        }
        let c: Vec<CurvePoint> = r
            .speed_curve
            .iter()
            .map(|p| CurvePoint {
                x: score * p.x,
                mean: p.mean * 8.0 / 1e6,
                ci: p.ci * 8.0 / 1e6,
            })
            .collect();
        f.series.push(series(&r.name, &c));
        let (Some(mem_bw), Some(mb)) = (r.mem_bw, r.mb_per_cpu) else {
            continue;
        };
        let inputs = Inputs {
            mem_bw,
            cpu_score: score,
            mb_per_cpu_s: CurvePoint {
                x: 1.0,
                mean: mb.mean,
                ci: if mb.ci.is_finite() { mb.ci } else { 0.0 },
            },
        };
        let Ok(k) = constant(&inputs) else { continue };
        let at = checks(&inputs, &k, &r.speed_curve);
        f.series.push(
            Series::new(
                format!("model predicted for {}", r.name),
                at.iter()
                    .map(|x| Point::new(score * x.share, x.predicted * 8.0 / 1e6))
                    .collect(),
            )
            .with_style(SeriesStyle::Path),
        );
        predicted.push(HostPrediction {
            name: &r.name,
            k,
            trials: mb.n,
            checks: at,
        });
    }
    let hosts = f
        .series
        .iter()
        .filter(|x| !x.name.starts_with("model"))
        .count();
    if hosts < 2 {
        s.warning("Fewer than two calibrated hosts have CPU-speed trials: no scaling plot.");
        return;
    }
    f.log_x = true;
    crate::figures::throughput_y(&mut f, "throughput");
    s.push(f);
    s.paragraph(
        "A point below a host's full speed is that host under a CPU quota, not a slower \
         processor (see above): it shows how the host's own throughput follows its quota. The \
         model is never fitted to these points; each host's curve is predicted from its \
         calibrate figures and full-speed MB per CPU-second.",
    );
    if predicted.is_empty() {
        s.warning(
            "No host has the memory bandwidth, CPU score and full-speed MB per CPU-second the \
             prediction needs (or its sender outran memory): no model is drawn.",
        );
        return;
    }
    for x in scaling_sentences(&predicted) {
        s.finding(x);
    }
}
