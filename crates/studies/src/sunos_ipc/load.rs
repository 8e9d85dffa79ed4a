//! Experiment 4 (Figs 8–9): throughput and the receive socket queue with
//! CPU-bound workers on the receiver, each loaded level compared with the
//! unloaded one by its 95% CI.

use super::change::{compare, Change, Estimate};
use super::probed::{all_probed, no_probes, queue_figure, richest};
use super::CITE;
use crate::data::StudyData;
use crate::figures::{load_workers, series, throughput_y};
use analysis::path::PathAnalysis;
use report::{number, Figure, Section, TickFormat, Unit};

/// Throughput per number of receiver workers (0 = unloaded), bit/s,
/// sorted by workers.
fn throughput_levels(d: &StudyData) -> Vec<(u32, Estimate)> {
    let mut v: Vec<(u32, Estimate)> = d
        .points_of("load")
        .into_iter()
        .filter_map(|p| {
            let s = p.metrics.get("throughput_bps")?;
            Some((load_workers(&p.params), Estimate::of(s, 1.0)))
        })
        .collect();
    v.sort_by_key(|(w, _)| *w);
    v
}

/// What `other` is against `base` (named `baseline`, e.g. "the
/// unloaded"), with its evidence: "is lower: 50% of the unloaded (1.91 ±
/// 0.53 Gbit/s)", or "is unchanged within the 95% CIs (…; a change smaller
/// than … could not have been seen)". Numbers are in `unit`, written by
/// `report::format`.
pub(crate) fn change_clause(
    base: &Estimate,
    other: &Estimate,
    baseline: &str,
    unit: Unit,
) -> String {
    let measured = other.words(unit);
    match compare(base, other) {
        Change::Raised { ratio } => format!("is higher: {ratio:.2}× {baseline} ({measured})"),
        Change::Lowered { ratio } => {
            format!("is lower: {:.0}% of {baseline} ({measured})", ratio * 100.0)
        }
        Change::Unchanged { detectable: 0.0 } => {
            format!("is the same in every trial ({measured})")
        }
        Change::Unchanged { detectable } => {
            format!(
            "is unchanged within the 95% CIs ({measured}; a change smaller than {}{} could not \
             have been seen)",
            number(detectable, unit),
            if base.mean.abs() > 0.0 {
                format!(" ({:.0}% of {baseline})", detectable / base.mean.abs() * 100.0)
            } else {
                String::new()
            }
        )
        }
        Change::TooFewTrials => format!(
            "is {measured}, but with fewer than two trials on a side no change can be claimed"
        ),
    }
}

/// The load finding: every loaded level against the unloaded one, and how
/// that stands against the paper's sharp drop. `None` without an unloaded
/// level and a loaded one.
pub(crate) fn throughput_finding(levels: &[(u32, Estimate)]) -> Option<String> {
    let (_, base) = levels.iter().find(|(w, _)| *w == 0)?;
    let loaded: Vec<&(u32, Estimate)> = levels.iter().filter(|(w, _)| *w > 0).collect();
    if loaded.is_empty() {
        return None;
    }
    let bits = Unit::Si("bit/s");
    let workers = |w: u32| {
        if w == 1 {
            "1 worker".to_string()
        } else {
            format!("{w} workers")
        }
    };
    let clauses: Vec<String> = loaded
        .iter()
        .enumerate()
        .map(|(i, (w, e))| {
            let clause = change_clause(base, e, "the unloaded", bits);
            if i == 0 {
                format!("throughput with {} on the receiver {clause}", workers(*w))
            } else {
                format!("with {} it {clause}", workers(*w))
            }
        })
        .collect();
    let changes: Vec<(u32, Change)> = loaded.iter().map(|(w, e)| (*w, compare(base, e))).collect();
    let with = |raised: bool| {
        let v: Vec<String> = changes
            .iter()
            .filter(|(_, c)| match c {
                Change::Raised { .. } => raised,
                Change::Lowered { .. } => !raised,
                _ => false,
            })
            .map(|(w, _)| workers(*w))
            .collect();
        v.join(" and ")
    };
    let (higher, lower) = (with(true), with(false));
    let paper = match (higher.is_empty(), lower.is_empty()) {
        (true, false) => {
            format!("As in the paper, CPU-bound load on the receiver lowers throughput (with {lower})")
        }
        (false, false) => format!(
            "Throughput is lower with {lower}, as in the paper, but higher with {higher}, which the \
             paper did not see"
        ),
        (false, true) => format!(
            "Unlike the paper's sharp drop, throughput is higher with {higher} and lower with no \
             level of load"
        ),
        (true, true) => {
            "Unlike the paper, no level of load changes throughput beyond the 95% CIs".to_string()
        }
    };
    Some(format!(
        "Against the unloaded {}, {}. {paper}.",
        base.words(bits),
        clauses.join("; ")
    ))
}

/// The mean receive socket queue (bytes, at data_ready) of each probed
/// trial of `load-queues` that `keep` accepts.
fn receive_queue_means(d: &StudyData, keep: impl Fn(u32) -> bool) -> Vec<f64> {
    all_probed(d, "load-queues", |p| keep(load_workers(p)))
        .iter()
        .filter_map(|a| {
            a.queues
                .iter()
                .find(|q| {
                    q.queue
                        .starts_with("receive socket queue (bytes, at data_ready)")
                })
                .map(|q| q.mean)
        })
        .collect()
}

/// The share of its time the receiving thread was preempted, per probed
/// trial of `load-queues` that `keep` accepts.
fn preempted_shares(d: &StudyData, keep: impl Fn(u32) -> bool) -> Vec<f64> {
    all_probed(d, "load-queues", |p| keep(load_workers(p)))
        .iter()
        .filter_map(|a: &PathAnalysis| {
            a.threads
                .iter()
                .find(|t| t.role == "receiver" && t.span_s > 0.0)
                .map(|t| t.preempted_s / t.span_s)
        })
        .collect()
}

/// The queue finding of Fig. 9: the loaded receive socket queue against
/// the unloaded one, over every probed trial, and the receiver's
/// preempted share likewise.
pub(crate) fn queue_finding(
    unloaded: &[f64],
    loaded: &[f64],
    preempted: (&[f64], &[f64]),
) -> Option<String> {
    let (u, l) = (
        Estimate::from_values(unloaded)?,
        Estimate::from_values(loaded)?,
    );
    // Queues in KB (1024 bytes), as the rest of the document writes them.
    let kib = Unit::Fixed("KB");
    let (u, l) = (u.scaled(1.0 / 1024.0), l.scaled(1.0 / 1024.0));
    let preempt = match (
        Estimate::from_values(preempted.0),
        Estimate::from_values(preempted.1),
    ) {
        (Some(pu), Some(pl)) => format!(
            "; the receiving thread's preempted share of its time, {} unloaded, {}",
            pu.words(Unit::Percent),
            change_clause(&pu, &pl, "the unloaded", Unit::Percent),
        ),
        _ => String::new(),
    };
    Some(format!(
        "Against the unloaded receive socket queue of {} on average ({} probed trials), with \
         receiver load ({} trials) it {}{preempt}.",
        u.words(kib),
        u.n,
        l.n,
        change_clause(&u, &l, "the unloaded", kib),
    ))
}

/// Experiment 4's section.
pub(super) fn load_section(d: &StudyData) -> Section {
    let mut s = Section::new("Background load on the receiver (Experiment 4, Figs 8–9)");
    s.paper_finding(
        format!("{CITE}, §4.4"),
        "Throughput dropped sharply as CPU-bound processes were added on the receiver; data \
         waited at the receive socket queue because the receiving process competed for the CPU.",
    );
    let thr = d.curve(
        "load",
        "throughput_bps",
        1e-6,
        |p| Some(load_workers(p) as f64),
        |_| true,
    );
    if thr.is_empty() {
        s.warning("The load experiment has no successful trials in this run.");
        return s;
    }
    let mut f = Figure::new(
        "Throughput against CPU-bound workers on the receiver",
        "workers on the receiver",
        "throughput",
    )
    .with_series(series("TCP", &thr));
    f.x_ticks = TickFormat::Number;
    throughput_y(&mut f, "throughput");
    s.push(f);
    match throughput_finding(&throughput_levels(d)) {
        Some(t) => {
            s.finding(t);
        }
        None => {
            s.warning("The load experiment lacks an unloaded or a loaded level to compare.");
        }
    };
    let loaded_seq = richest(d, "load-queues", |p| load_workers(p) > 0);
    let Some((seq, l)) = loaded_seq else {
        no_probes(&mut s, "load queue");
        return s;
    };
    if let Some(f) = queue_figure(
        format!("Socket queues with 4 workers on the receiver, trial {seq}"),
        &l,
        "bytes",
    ) {
        s.push(f);
    }
    let unloaded = receive_queue_means(d, |w| w == 0);
    let loaded = receive_queue_means(d, |w| w > 0);
    let pu = preempted_shares(d, |w| w == 0);
    let pl = preempted_shares(d, |w| w > 0);
    if let Some(t) = queue_finding(&unloaded, &loaded, (&pu, &pl)) {
        s.finding(t);
    }
    s
}
