//! Markatos across hosts: this host beside the other hosts whose
//! markatos02 runs are in the database (`tcplab import`), as the paper set
//! processor generations side by side. Mileage against CPU score (§4.1),
//! and loopback throughput against CPU score with the model fitted over
//! every host's points (§4.2).

use super::report::{mb_per_sender_cpu_s, CITE};
use crate::data::StudyData;
use crate::figures::{place, sender_speed, series};
use analysis::findings::CurvePoint;
use analysis::models::{fit_markatos, mileage, SpeedObservation};
use report::format::throughput_of_bytes;
use report::{measure, Figure, Point, Section, Series, SeriesStyle, Table, Unit};

/// One host's figures for the comparison.
struct HostRow {
    name: String,
    cpu: String,
    score: Option<f64>,
    mem_bw: Option<f64>,
    /// Loopback MB per sender CPU-second at 64 KB, full speed.
    mb_per_cpu: Option<CurvePoint>,
    /// Loopback throughput at 64 KB, bytes/s.
    throughput: Option<f64>,
    /// Loopback throughput (bytes/s) against CPU share, from the
    /// CPU-speed experiment.
    speed_curve: Vec<CurvePoint>,
    imported: bool,
}

fn row(d: &StudyData, imported: bool) -> HostRow {
    let mb = mb_per_sender_cpu_s(d, "mb-per-cpu")
        .into_iter()
        .find(|(pl, speed, _)| pl == "loopback" && *speed == 1.0)
        .map(|(_, _, c)| c);
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
            r.score.map_or("—".into(), |c| format!("{c:.0}")),
            r.mem_bw
                .map_or("—".into(), |b| measure(b, None, Unit::Si("B/s"))),
            r.throughput
                .map_or("—".into(), |b| throughput_of_bytes(b, None)),
            r.mb_per_cpu
                .map_or("—".into(), |c| super::prediction::per_cpu_s(c.mean, c.ci)),
            match (r.mb_per_cpu, r.score) {
                (Some(c), Some(score)) => {
                    mileage(c.mean * 1e6, score).map_or("—".into(), |m| format!("{m:.3}"))
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

/// MB per sender CPU-second against CPU score, one series per host.
fn mileage_figure(s: &mut Section, rows: &[HostRow]) {
    let pts: Vec<(&HostRow, f64, CurvePoint)> = rows
        .iter()
        .filter_map(|r| Some((r, r.score?, r.mb_per_cpu?)))
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
    for (r, score, c) in &pts {
        f.series.push(
            Series::new(r.name.clone(), vec![Point::with_ci(*score, c.mean, c.ci)])
                .with_style(SeriesStyle::Points),
        );
    }
    s.push(f);
    let slow = pts
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("two hosts");
    let fast = pts
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("two hosts");
    let score_ratio = fast.1 / slow.1;
    let mb_ratio = fast.2.mean / slow.2.mean;
    let trend = if mb_ratio < score_ratio * 0.9 {
        "mileage falls with CPU speed, as the paper found"
    } else if mb_ratio > score_ratio * 1.1 {
        "mileage rises with CPU speed, unlike the paper"
    } else {
        "mileage holds: data moved per CPU-second keeps pace with the CPU score"
    };
    s.finding(format!(
        "The fastest host, {} (score {:.0}), moves {:.0} MB per sender CPU-second, {:.2}× the \
         slowest, {} (score {:.0}, {:.0} MB), for a {:.2}× higher CPU score: {trend}.",
        fast.0.name, fast.1, fast.2.mean, mb_ratio, slow.0.name, slow.1, slow.2.mean, score_ratio
    ));
}

/// Loopback throughput against effective CPU score (score × CPU share)
/// for every host, with the model fitted over all of them.
fn scaling_figure(s: &mut Section, rows: &[HostRow]) {
    let mut obs = Vec::new();
    let mut f = Figure::new(
        "Loopback throughput against CPU score × CPU share, every host",
        "effective CPU score",
        "throughput",
    );
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
        obs.extend(r.speed_curve.iter().map(|p| SpeedObservation {
            cpu_score: score * p.x,
            throughput: p.mean,
        }));
        f.series.push(series(&r.name, &c));
    }
    let hosts = f.series.len();
    if hosts < 2 {
        s.warning("Fewer than two calibrated hosts have CPU-speed trials: no scaling plot.");
        return;
    }
    let fit = fit_markatos(&obs, None);
    if let Ok(fit) = &fit {
        let mut xs: Vec<f64> = obs.iter().map(|o| o.cpu_score).collect();
        xs.sort_by(f64::total_cmp);
        f.series.push(
            Series::new(
                "model, fitted over all hosts",
                xs.iter()
                    .map(|&x| Point::new(x, fit.predict(x) * 8.0 / 1e6))
                    .collect(),
            )
            .with_style(SeriesStyle::Path),
        );
    }
    f.log_x = true;
    crate::figures::throughput_y(&mut f, "throughput");
    s.push(f);
    match fit {
        Ok(fit) => s.finding(format!(
            "One model fitted over {} points from {hosts} hosts (memory term {}, C = {:.3e}) \
             predicts their throughput within {:.1}% rms ({:.1}% at worst){}.",
            fit.n,
            if fit.mem_bw.is_finite() {
                measure(fit.mem_bw, None, Unit::Si("B/s"))
            } else {
                "not visible".into()
            },
            fit.c,
            fit.rms_rel_error * 100.0,
            fit.max_rel_error * 100.0,
            if fit.rms_rel_error <= 0.15 {
                ": the hosts differ as their CPU scores say"
            } else {
                ": the hosts differ in more than CPU score (memory, kernel, or NIC path)"
            }
        )),
        Err(e) => s.warning(format!("The model could not be fitted across hosts: {e}.")),
    };
}
