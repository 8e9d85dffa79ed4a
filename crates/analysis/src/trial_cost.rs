//! What a sampled trial's CPU time cost: per side (sender, receiver), the
//! CPU time the samples attribute set against the engine's measured CPU
//! time, per data segment and per KB; and over a run's sampled trials, the
//! fit of each side's time (and each function block's) to packets and bytes
//! (Huang & Chen §4). Pure functions of stored trials and profiles.

use crate::cpu::{attribute, fit_packet_byte, CpuAttribution, PacketByteFit, RoleAttribution};
use crate::layers::Block;
use record::{CpuProfile, PointRecord, ThreadRole, TrialRecord};
use serde::Serialize;

/// The fewest CPU samples of a side (role) in one trial that a CPU share
/// is stated from: at 1,000 samples a share of 10% has a binomial standard
/// error of about 1 point; from a hundred it could be anything from 4% to
/// 16%. The studies' verdicts and the run report's CPU section both hold
/// to it.
pub const MIN_CPU_SAMPLES: u64 = 1000;

/// The samples of `role`'s threads in a trial's profile (stacks the
/// in-kernel table had room for).
pub fn role_samples(p: &CpuProfile, role: ThreadRole) -> u64 {
    p.stacks
        .iter()
        .filter(|s| !s.unsampled && p.role_of(s.tid) == role)
        .map(|s| s.samples)
        .sum()
}

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
    let point = varying_label(points, t.point_id);
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

/// `a / b`, or 0 when there is nothing to divide by.
pub fn per(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The varying factors of a trial's point, as `name=value …` with each
/// level as the stored JSON writes it.
fn varying_label(points: &[PointRecord], point_id: i64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use record::{ProfiledStack, ProfiledThread, TestKind, TrialOutcome, TrialParams, TrialStatus};
    use std::collections::BTreeMap;

    /// A profile whose sender spent `sender_s` seconds in tcp_sendmsg's copy
    /// and whose receiver spent `receiver_s` in tcp_v4_rcv.
    fn profile(sender_s: f64, receiver_s: f64) -> CpuProfile {
        let stack = |tid, kernel: Vec<u32>, s: f64| ProfiledStack {
            tid,
            unsampled: false,
            kernel,
            user: vec![],
            samples: 1,
            ns: (s * 1e9) as u64,
        };
        let thread = |tid, role| ProfiledThread {
            tid,
            tgid: 1,
            comm: "t".into(),
            role,
        };
        CpuProfile {
            version: 1,
            period_ns: 100_000,
            clock: "cycles".into(),
            cpus: 2,
            duration_s: 1.0,
            symbols: ["rep_movs_alternative", "tcp_sendmsg_locked", "tcp_v4_rcv"]
                .map(String::from)
                .to_vec(),
            threads: vec![
                thread(10, ThreadRole::Sender),
                thread(11, ThreadRole::Receiver),
            ],
            stacks: vec![
                stack(10, vec![0, 1], sender_s),
                stack(11, vec![2], receiver_s),
            ],
            busy_s: sender_s + receiver_s,
            idle_s: 0.0,
            lost_samples: 0,
            broken_stacks: 0,
        }
    }

    fn point(id: i64, index: u32, mss: u32) -> PointRecord {
        let mut params = TrialParams::defaults(TestKind::TcpStream);
        params.mss = Some(mss);
        PointRecord {
            id,
            index,
            params,
            precision: None,
        }
    }

    fn trial(point_id: i64, seq: u32, metrics: &[(&str, f64)]) -> TrialRecord {
        TrialRecord {
            id: seq as i64,
            point_id,
            seq,
            repetition: 0,
            started_at: String::new(),
            status: TrialStatus::Ok,
            error: None,
            outcome: TrialOutcome {
                metrics: metrics
                    .iter()
                    .map(|(k, v)| (k.to_string(), *v))
                    .collect::<BTreeMap<_, _>>(),
                ..TrialOutcome::default()
            },
        }
    }

    #[test]
    fn a_trial_sets_its_samples_against_the_engine() {
        let points = [point(1, 0, 536), point(2, 1, 1448)];
        let t = trial(
            2,
            7,
            &[
                ("cpu_sender_s", 0.5),
                ("cpu_receiver_s", 0.0),
                ("data_segs_out", 1000.0),
                ("receiver_data_segs_in", 500.0),
                ("bytes", 1024.0 * 1000.0),
            ],
        );
        let c = trial_cpu(&t, &points, &profile(0.4, 0.2));
        assert_eq!((c.seq, c.point_index), (7, 1));
        assert_eq!(c.point, "mss=1448");
        let sender = c
            .sides
            .iter()
            .find(|s| s.role == ThreadRole::Sender)
            .unwrap();
        assert!((sender.attributed_cpu_s - 0.4).abs() < 1e-9);
        assert!((sender.ratio - 0.8).abs() < 1e-9);
        assert!((sender.us_per_segment - 400.0).abs() < 1e-6);
        assert!((sender.us_per_kb - 400.0).abs() < 1e-6);
        let receiver = c
            .sides
            .iter()
            .find(|s| s.role == ThreadRole::Receiver)
            .unwrap();
        assert_eq!(receiver.ratio, 0.0, "no engine time: no ratio");
        assert!((receiver.us_per_segment - 400.0).abs() < 1e-6);
    }

    #[test]
    fn the_fit_recovers_per_packet_and_per_byte_costs() {
        // 2 µs per segment and 0.5 ns per byte on the sender.
        let points: Vec<PointRecord> = [256u32, 512, 1024, 1448]
            .iter()
            .enumerate()
            .map(|(i, &mss)| point(i as i64 + 1, i as u32, mss))
            .collect();
        let trials: Vec<TrialCpu> = points
            .iter()
            .map(|p| {
                let bytes = 20e6;
                let segments = bytes / p.params.mss.unwrap() as f64;
                let cpu = 2e-6 * segments + 0.5e-9 * bytes;
                let t = trial(
                    p.id,
                    p.index,
                    &[
                        ("cpu_sender_s", cpu),
                        ("data_segs_out", segments),
                        ("bytes", bytes),
                    ],
                );
                trial_cpu(&t, &points, &profile(cpu, 0.1))
            })
            .collect();
        let fits = run_fits(&trials);
        assert_eq!(fits.len(), 1, "the receiver received no segments: no fit");
        let f = &fits[0];
        assert_eq!(f.role, ThreadRole::Sender);
        let total = f.total.as_ref().unwrap();
        assert!((total.per_packet_us - 2.0).abs() < 0.01, "{total:?}");
        assert!((total.per_byte_ns - 0.5).abs() < 0.01, "{total:?}");
        assert!(!f.blocks.is_empty());
        let too_few = run_fits(&trials[..2]);
        assert!(too_few[0].total.is_err());
    }
}
