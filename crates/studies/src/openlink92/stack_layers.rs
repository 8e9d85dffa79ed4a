//! Figs 3–4 measured on tcplab's stack: the device driver on the stack's
//! own thread (`--layers merged`) or on a thread of its own joined to IP
//! and TCP by frame queues (`threaded`, the paper's separate interface
//! process), on a stream and on request/response, and what merging buys.

use super::tuning::{
    cell, clause, controls, direction, impossible_cpu, impossible_warnings, Direction,
};
use crate::data::StudyData;
use analysis::findings::CurvePoint;
use record::factor::Layers;
use report::{Section, Table, Unit};

/// The stream experiment's id.
pub(super) const STREAM: &str = "layers-stack-stream";
/// The request/response experiment's id.
pub(super) const RR: &str = "layers-stack-rr";

/// Per-trial values of `num / den` (or `num` alone without `den`) over the
/// trials of `id` with layers `l`, as a mean and its 95% CI.
fn per_trial(
    d: &StudyData,
    id: &str,
    l: Layers,
    num: &str,
    den: Option<&str>,
) -> Option<CurvePoint> {
    let v: Vec<f64> = d
        .trials_of(id)
        .iter()
        .filter(|(_, p)| p.layers.unwrap_or(Layers::Merged) == l)
        .filter(|(t, p)| {
            !(num == "cpu_sender_s" && impossible_cpu(&t.outcome.metrics, p, "sender").is_some())
        })
        .filter_map(|(t, _)| {
            let n = *t.outcome.metrics.get(num)?;
            let m = match den {
                Some(den) => *t.outcome.metrics.get(den)?,
                None => 1.0,
            };
            (m > 0.0 && n.is_finite()).then_some(n / m)
        })
        .collect();
    CurvePoint::of_values(0.0, &v)
}

/// One measure, threaded and merged.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pair {
    /// Layers on threads of their own, joined by queues.
    pub threaded: Option<CurvePoint>,
    /// Layers on one thread.
    pub merged: Option<CurvePoint>,
}

fn pair(d: &StudyData, id: &str, num: &str, den: Option<&str>) -> Pair {
    Pair {
        threaded: per_trial(d, id, Layers::Threaded, num, den),
        merged: per_trial(d, id, Layers::Merged, num, den),
    }
}

/// The claim on what merging the layers does to one measure.
pub(super) fn merging_finding(
    workload: &str,
    metric: &str,
    p: &Pair,
    lower_is_better: bool,
    unit: Unit,
) -> Option<String> {
    let (t, m) = (p.threaded?, p.merged?);
    Some(format!(
        "On tcplab's stack ({workload}), merging the layers (threaded → merged): {}.",
        clause(metric, &t, &m, lower_is_better, unit)
    ))
}

/// The stack's measurement, appended to the layers-merged section; `false`
/// when the run has none.
pub(super) fn add_stack_measurement(s: &mut Section, d: &StudyData) -> bool {
    let rows = [
        (
            "stream: throughput",
            pair(d, STREAM, "throughput_bps", None),
            false,
            Unit::Si("bit/s"),
        ),
        (
            "stream: stack CPU per segment sent",
            pair(d, STREAM, "cpu_sender_s", Some("stack_client_segments_out")),
            true,
            Unit::Si("s"),
        ),
        (
            "request/response: round trip p50",
            pair(d, RR, "latency_p50_s", None),
            true,
            Unit::Si("s"),
        ),
        (
            "request/response: stack CPU per segment sent",
            pair(d, RR, "cpu_sender_s", Some("stack_client_segments_out")),
            true,
            Unit::Si("s"),
        ),
    ];
    if rows
        .iter()
        .all(|(_, p, _, _)| p.threaded.is_none() && p.merged.is_none())
    {
        return false;
    }
    let controls: Vec<String> = [STREAM, RR]
        .iter()
        .filter_map(|id| d.points_of(id).first().map(|p| controls(&p.params)))
        .collect();
    s.paragraph(format!(
        "What tcplab's own stack measures: each of its ends can run the device driver (the \
         device's system calls) on its own thread, joined to IP and TCP by two frame queues of \
         1,024 (threaded, the paper's separate processes), or call it from the one thread that \
         runs IP and TCP (merged); the driver thread's CPU is counted with the end's. Controls: \
         {}.",
        controls.join("; and ")
    ));
    let mut t = Table::new([
        "measure",
        "threaded (separate)",
        "merged",
        "which is better",
    ])
    .key();
    for (name, p, lower, unit) in &rows {
        let (workload, metric) = name.split_once(": ").unwrap_or(("", name));
        let verdict = merging_finding(workload, metric, p, *lower, *unit);
        t.row([
            name.to_string(),
            cell(p.threaded, *unit),
            cell(p.merged, *unit),
            match (p.threaded, p.merged) {
                (Some(t), Some(m)) => match direction(&t, &m, *lower) {
                    Direction::Better => "merged",
                    Direction::Worse => "threaded",
                    Direction::Same => "neither beyond the 95% CIs",
                    Direction::Unclaimed => "no CIs (single trials)",
                },
                _ => "—",
            }
            .to_string(),
        ]);
        if let Some(v) = verdict {
            s.finding(v);
        }
    }
    s.push(t);
    for id in [STREAM, RR] {
        for w in impossible_warnings(d, id) {
            s.warning(w);
        }
    }
    true
}
