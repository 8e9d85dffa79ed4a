//! The CPU part of `tcplab probes`: each sampled trial's time per layer,
//! block and function for its sender and receiver, checked against the
//! engine's CPU time; and over the run's trials, Huang & Chen's function
//! block table with the per-packet / per-byte fit.

use analysis::cpu::{attribute, fit_packet_byte, CpuAttribution, PacketByteFit, RoleAttribution};
use analysis::layers::Block;
use record::{CpuProfile, PointRecord, ThreadRole, TrialRecord};
use serde::Serialize;

/// One side of a sampled trial with the engine's figures beside it.
#[derive(Debug, Clone, Serialize)]
pub struct SideCosts {
    /// sender or receiver.
    pub role: ThreadRole,
    /// CPU seconds the engine measured for the side's threads (getrusage).
    pub engine_cpu_s: f64,
    /// CPU seconds the samples attribute to them.
    pub attributed_cpu_s: f64,
    /// attributed / engine.
    pub ratio: f64,
    /// Data segments the side sent (sender) or received (receiver).
    pub segments: f64,
    /// Payload bytes.
    pub bytes: f64,
    /// CPU µs per data segment.
    pub us_per_segment: f64,
    /// CPU µs per KB.
    pub us_per_kb: f64,
}

/// A sampled trial: attribution and costs.
#[derive(Debug, Clone, Serialize)]
pub struct TrialCpu {
    /// The trial's `seq`.
    pub seq: u32,
    /// The point's index in the plan (sweep order).
    pub point_index: u32,
    /// The point's varying factors.
    pub point: String,
    /// Where the time went.
    pub attribution: CpuAttribution,
    /// Sender and receiver against the engine.
    pub sides: Vec<SideCosts>,
}

/// Attributes one trial's profile and sets it against the engine.
pub fn trial_cpu(t: &TrialRecord, points: &[PointRecord], p: &CpuProfile) -> TrialCpu {
    let point = point_label(points, t.point_id);
    let point_index = points
        .iter()
        .find(|x| x.id == t.point_id)
        .map_or(0, |x| x.index);
    let attribution = attribute(p);
    let m = &t.outcome.metrics;
    let get = |k: &str| m.get(k).copied().unwrap_or(0.0);
    let bytes = get("bytes");
    let mut sides = Vec::new();
    for (role, cpu_key, seg_key) in [
        (ThreadRole::Sender, "cpu_sender_s", "data_segs_out"),
        (
            ThreadRole::Receiver,
            "cpu_receiver_s",
            "receiver_data_segs_in",
        ),
    ] {
        let Some(r) = attribution.role(role) else {
            continue;
        };
        let engine = get(cpu_key);
        let segments = get(seg_key);
        sides.push(SideCosts {
            role,
            engine_cpu_s: engine,
            attributed_cpu_s: r.cpu_s,
            ratio: if engine > 0.0 { r.cpu_s / engine } else { 0.0 },
            segments,
            bytes,
            us_per_segment: per(r.cpu_s * 1e6, segments),
            us_per_kb: per(r.cpu_s * 1e6, bytes / 1024.0),
        });
    }
    TrialCpu {
        seq: t.seq,
        point_index,
        point,
        attribution,
        sides,
    }
}

fn per(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The varying factors of a trial's point, as `name=value …` with each
/// level as the stored JSON writes it.
fn point_label(points: &[PointRecord], point_id: i64) -> String {
    let varying = record::factor::varying_keys(points.iter().map(|p| &p.params));
    let Some(p) = points.iter().find(|p| p.id == point_id) else {
        return String::new();
    };
    varying
        .iter()
        .map(|k| {
            format!(
                "{k}={}",
                p.params
                    .value(k)
                    .map(|v| v.json().to_string())
                    .unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Per side over the run's trials: the fit of total CPU time, and of each
/// block's, to packets and bytes.
#[derive(Debug, Clone, Serialize)]
pub struct SideFit {
    /// sender or receiver.
    pub role: ThreadRole,
    /// The side's whole CPU time.
    pub total: Result<PacketByteFit, String>,
    /// Each block's time (blocks with time in every trial).
    pub blocks: Vec<(String, Result<PacketByteFit, String>)>,
}

/// Fits every side of the sampled trials.
pub fn run_fits(trials: &[TrialCpu]) -> Vec<SideFit> {
    let mut out = Vec::new();
    for role in [ThreadRole::Sender, ThreadRole::Receiver] {
        let rows: Vec<(&SideCosts, &RoleAttribution)> = trials
            .iter()
            .filter_map(|t| {
                let s = t.sides.iter().find(|s| s.role == role)?;
                let a = t.attribution.role(role)?;
                (s.segments > 0.0).then_some((s, a))
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let fit = |f: &dyn Fn(&RoleAttribution) -> f64| {
            let obs: Vec<(f64, f64, f64)> = rows
                .iter()
                .map(|(s, a)| (s.segments, s.bytes, f(a)))
                .collect();
            fit_packet_byte(&obs).map_err(|e| e.to_string())
        };
        let total = fit(&|a| a.cpu_s);
        let blocks = Block::ALL
            .into_iter()
            .filter(|b| rows.iter().all(|(_, a)| a.block_s(*b) > 0.0))
            .map(|b| (b.name().to_string(), fit(&|a| a.block_s(b))))
            .collect();
        out.push(SideFit {
            role,
            total,
            blocks,
        });
    }
    out
}

/// Text for one sampled trial.
pub fn trial_text(t: &TrialCpu) -> String {
    let a = &t.attribution;
    let mut s = format!(
        "  CPU samples ({}, layer table v{}, block table v{}): {} samples, {:.0}% of busy time hit directly\n",
        a.clock,
        a.layer_table_version,
        a.block_table_version,
        a.samples,
        a.coverage * 100.0
    );
    for side in &t.sides {
        s += &format!(
            "  {}: {:.3} CPU-s attributed, engine measured {:.3} ({:+.1}%); {:.2} µs per segment, {:.3} µs per KB\n",
            side.role.name(),
            side.attributed_cpu_s,
            side.engine_cpu_s,
            (side.ratio - 1.0) * 100.0,
            side.us_per_segment,
            side.us_per_kb
        );
    }
    for r in &a.roles {
        if matches!(
            r.role,
            ThreadRole::Idle | ThreadRole::Other | ThreadRole::Tcplab
        ) && r.cpu_s < 0.01
        {
            continue;
        }
        s += &format!("  {:<9} {:>7.3} s  layers:", r.role.name(), r.cpu_s);
        for l in &r.layers {
            if l.share >= 0.005 {
                s += &format!(" {} {:.1}%", l.name, l.share * 100.0);
            }
        }
        s += "\n";
        if matches!(r.role, ThreadRole::Sender | ThreadRole::Receiver) {
            s += &format!("  {:<9} {:>9}  blocks:", "", "");
            for b in &r.blocks {
                if b.share >= 0.005 {
                    s += &format!(" {} {:.1}%", b.name, b.share * 100.0);
                }
            }
            s += "\n";
            s += &format!("  {:<9} {:>9}  top:", "", "");
            for f in r.functions.iter().take(6) {
                s += &format!(
                    " {} ({}) {:.1}%",
                    f.function,
                    f.layer.name(),
                    f.share * 100.0
                );
            }
            s += "\n";
        }
    }
    s
}

/// The function block table over the run's sampled trials (µs per data
/// segment per block, Huang & Chen Table 1) and the fits.
pub fn run_text(trials: &[TrialCpu], fits: &[SideFit]) -> String {
    let mut s = String::new();
    for role in [ThreadRole::Sender, ThreadRole::Receiver] {
        let blocks: Vec<Block> = Block::ALL
            .into_iter()
            .filter(|b| {
                trials
                    .iter()
                    .filter_map(|t| t.attribution.role(role))
                    .any(|a| a.block_s(*b) > 0.0)
            })
            .collect();
        if blocks.is_empty() {
            continue;
        }
        s += &format!("function blocks, {} (µs per data segment):\n", role.name());
        s += &format!("  {:<6} {:<28}", "trial", "point");
        for b in &blocks {
            s += &format!(" {:>12}", b.name());
        }
        s += &format!(" {:>12}\n", "total");
        for t in trials {
            let (Some(a), Some(side)) = (
                t.attribution.role(role),
                t.sides.iter().find(|x| x.role == role),
            ) else {
                continue;
            };
            s += &format!("  {:<6} {:<28}", t.seq, t.point);
            for b in &blocks {
                s += &format!(" {:>12.3}", per(a.block_s(*b) * 1e6, side.segments));
            }
            s += &format!(" {:>12.3}\n", side.us_per_segment);
        }
    }
    for f in fits {
        match &f.total {
            Ok(fit) => {
                s += &format!(
                    "{} CPU = {:.3} ± {:.3} µs per packet + {:.4} ± {:.4} ns per byte (R² {:.3}, rms error {:.1}%, {} trials)\n",
                    f.role.name(),
                    fit.per_packet_us,
                    fit.per_packet_se_us,
                    fit.per_byte_ns,
                    fit.per_byte_se_ns,
                    fit.r2,
                    fit.rms_rel_error * 100.0,
                    fit.n
                );
                for (b, r) in &f.blocks {
                    if let Ok(bf) = r {
                        s += &format!(
                            "  {:<13} {:>8.3} µs/packet {:>9.4} ns/byte (R² {:.3})\n",
                            b, bf.per_packet_us, bf.per_byte_ns, bf.r2
                        );
                    }
                }
            }
            Err(e) => s += &format!("{}: no per-packet/per-byte fit: {e}\n", f.role.name()),
        }
    }
    s
}
