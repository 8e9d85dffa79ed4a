//! What a study's methods add to a run's, from what only the study knows:
//! the congestion control each of its TCP experiments declared, and why
//! (issue 30, rule 2), read back from the commands the run stored; the
//! trial order experiment by experiment, and the probe effect measured
//! against each probed experiment's own twin (rule 8), so that the methods
//! and the probe-effect section give one figure.

use crate::data::{ExperimentRecord, StudyData};
use crate::spec::{declared_cc, runs_tcp, Experiment, STUDY_CC, STUDY_CC_WHY, UNPROBED_PREFIX};
use std::collections::BTreeMap;

/// The experiment a stored record ran, parsed back from its command.
fn experiment_of(r: &ExperimentRecord) -> Experiment {
    let args = r
        .command
        .strip_prefix("tcplab bench ")
        .unwrap_or(&r.command);
    Experiment::bench(r.id.clone(), r.title.clone(), args)
}

/// "Congestion control, declared by each TCP experiment: reno in 12
/// experiments (why); cubic,bbr in openlink-cc (it compares them)"; a line
/// naming the experiments that declared none, if any did (a run planned
/// before every experiment declared one). `None` when no experiment ran
/// over TCP.
pub fn cc_paragraph(experiments: &[ExperimentRecord]) -> Option<String> {
    let mut by_cc: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut undeclared = Vec::new();
    for r in experiments {
        let e = experiment_of(r);
        if !runs_tcp(&e) {
            continue;
        }
        match declared_cc(&e) {
            Some(cc) => by_cc.entry(cc.to_string()).or_default().push(r.id.clone()),
            None => undeclared.push(r.id.clone()),
        }
    }
    if by_cc.is_empty() && undeclared.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    if let Some(ids) = by_cc.remove(STUDY_CC) {
        parts.push(format!(
            "{STUDY_CC} in {} ({STUDY_CC_WHY})",
            count_words(ids.len())
        ));
    }
    for (cc, ids) in by_cc {
        let how = if cc.contains(',') {
            "which compares them"
        } else {
            "which sets its own"
        };
        parts.push(format!("{cc} in {} ({how})", ids.join(", ")));
    }
    let mut text = format!(
        "Congestion control, declared by each TCP experiment: {}.",
        parts.join("; ")
    );
    if !undeclared.is_empty() {
        text += &format!(
            " Declared by none, so the host's default: {}.",
            undeclared.join(", ")
        );
    }
    Some(text)
}

/// A trial's sequence number, repetition (round) and point.
type TrialPlace = (u32, u32, i64);

/// How a study run ordered its trials, from the stored sequence numbers of
/// each experiment's trials: whether the experiments ran as blocks one
/// after another, how many rounds each had and whether its points' order
/// changed between rounds, and whether each probed experiment's unprobed
/// twin ran right after it. `None` for a run with no trials.
pub fn trial_order(d: &StudyData) -> Option<String> {
    // Per experiment: its trials' (seq, repetition, point) in seq order.
    let mut blocks: Vec<(&str, Vec<TrialPlace>)> = Vec::new();
    for e in &d.settings.experiments {
        let mut t: Vec<(u32, u32, i64)> = d
            .trials_of(&e.id)
            .iter()
            .map(|(t, _)| (t.seq, t.repetition, t.point_id))
            .collect();
        t.sort();
        if !t.is_empty() {
            blocks.push((e.id.as_str(), t));
        }
    }
    if blocks.is_empty() {
        return None;
    }
    let ranges: Vec<(u32, u32)> = blocks
        .iter()
        .map(|(_, t)| (t[0].0, t[t.len() - 1].0))
        .collect();
    let in_plan_order = ranges.windows(2).all(|w| w[0].1 < w[1].0);
    let mut sorted = ranges.clone();
    sorted.sort();
    let in_blocks = sorted.windows(2).all(|w| w[0].1 < w[1].0);
    let (mut multi, mut changed, mut rounds) = (0, 0, Vec::new());
    for (_, t) in &blocks {
        let mut by_round: BTreeMap<u32, Vec<i64>> = BTreeMap::new();
        for &(_, r, p) in t {
            by_round.entry(r).or_default().push(p);
        }
        rounds.push(by_round.len());
        let orders: Vec<Vec<i64>> = by_round.into_values().collect();
        if orders.first().is_some_and(|o| o.len() > 1) {
            multi += 1;
            if orders.windows(2).any(|w| {
                let a: Vec<i64> = w[0].iter().copied().filter(|p| w[1].contains(p)).collect();
                let b: Vec<i64> = w[1].iter().copied().filter(|p| w[0].contains(p)).collect();
                a != b
            }) {
                changed += 1;
            }
        }
    }
    let (lo, hi) = (
        rounds.iter().min().copied().unwrap_or(0),
        rounds.iter().max().copied().unwrap_or(0),
    );
    let rounds = if lo == hi {
        format!("{lo}")
    } else {
        format!("{lo}–{hi}")
    };
    let mut text = if in_blocks {
        format!(
            "the {} experiments ran one after another{}, each as a block of its own trials, \
             so a drift of the host between blocks falls on whole experiments",
            blocks.len(),
            if in_plan_order {
                " in the plan's order"
            } else {
                ", not in the plan's order"
            }
        )
    } else {
        format!("the {} experiments' trials interleave", blocks.len())
    };
    text += &format!(
        "; within an experiment, {rounds} rounds of one trial per point, the points' order \
         changed between rounds (shuffled with the run's seed {}) in {changed} of the {multi} \
         experiments with more than one point",
        d.run.meta.seed
    );
    // Twins: right after their probed experiment, or not.
    let twins: Vec<bool> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, (id, _))| {
            let twin = format!("{UNPROBED_PREFIX}{id}");
            let j = blocks.iter().position(|(b, _)| *b == twin)?;
            Some(j == i + 1 && ranges[i].1 + 1 == ranges[j].0)
        })
        .collect();
    if !twins.is_empty() {
        let next = twins.iter().filter(|x| **x).count();
        text += &format!(
            "; {next} of {} probed experiments' unprobed twins ran right after them, so a probe \
             effect compares two neighbouring blocks of time, not interleaved trials",
            twins.len()
        );
    }
    Some(text)
}

/// The methods' probes line for a study: how many trials were probed, and
/// the probe effect as the section "Probe effect, experiment by experiment"
/// gives it (each probed experiment against its own unprobed twin, point by
/// point). `None` when no probed experiment has a twin.
pub fn probes_line(d: &StudyData) -> Option<String> {
    let effects = d.probe_effects();
    if effects.is_empty() {
        return None;
    }
    let probed = d
        .run
        .trials
        .iter()
        .filter(|t| !t.outcome.details["probe"].is_null())
        .count();
    let mut ratios: Vec<f64> = effects.iter().flat_map(|e| e.ratios.clone()).collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    };
    Some(format!(
        "{probed} of {} trials probed; against each probed experiment's unprobed twin (the \
         same sweep without probes, its points matched in order) the probed points ran at \
         {median:.2}× the twins' throughput or transaction rate (median over {n} points, \
         {:.2}–{:.2}; per experiment in \"Probe effect, experiment by experiment\"): the \
         observation's cost, which every probed figure carries",
        d.run.trials.len(),
        ratios[0],
        ratios[n - 1]
    ))
}

/// "1 experiment", "12 experiments".
fn count_words(n: usize) -> String {
    if n == 1 {
        "1 experiment".into()
    } else {
        format!("{n} experiments")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, command: &str) -> ExperimentRecord {
        ExperimentRecord {
            id: id.into(),
            title: id.into(),
            command: command.into(),
            first_point: 0,
            points: 1,
        }
    }

    /// The trial order as the sequence numbers show it, both ways: blocks
    /// in plan order with the twin right after and the same order every
    /// round; then the second round reordered and the twin moved first.
    #[test]
    fn the_trial_order_is_read_from_each_experiments_sequence() {
        let d = crate::fixtures::twin_run(&[9e9, 9.3e9], Some(&[10e9, 10e9]));
        let t = trial_order(&d).unwrap();
        assert!(
            t.starts_with("the 2 experiments ran one after another in the plan's order, each as a block of its own trials"),
            "{t}"
        );
        assert!(t.contains("3 rounds of one trial per point"), "{t}");
        assert!(
            t.contains("in 0 of the 2 experiments with more than one point"),
            "{t}"
        );
        assert!(
            t.contains("; 1 of 1 probed experiments' unprobed twins ran right after them"),
            "{t}"
        );
        let mut d = d;
        // Round 1 of "blocks": its second point first.
        let seq = |d: &StudyData, point: i64, rep: u32| {
            d.run
                .trials
                .iter()
                .position(|t| t.point_id == point && t.repetition == rep)
                .unwrap()
        };
        let (a, b) = (seq(&d, 1, 1), seq(&d, 2, 1));
        let sa = d.run.trials[a].seq;
        d.run.trials[a].seq = d.run.trials[b].seq;
        d.run.trials[b].seq = sa;
        // The twin ran first: every probed trial after it.
        for t in d.run.trials.iter_mut().filter(|t| t.point_id <= 2) {
            t.seq += 100;
        }
        let t = trial_order(&d).unwrap();
        assert!(
            t.starts_with("the 2 experiments ran one after another, not in the plan's order"),
            "{t}"
        );
        assert!(t.contains("in 1 of the 2 experiments"), "{t}");
        assert!(
            t.contains("; 0 of 1 probed experiments' unprobed twins ran right after them"),
            "{t}"
        );
    }

    /// The probes line gives the probe-effect section's figure.
    #[test]
    fn the_probes_line_is_the_probe_effect_sections_figure() {
        let d = crate::fixtures::twin_run(&[9e9, 9.3e9], Some(&[10e9, 10e9]));
        let l = probes_line(&d).unwrap();
        assert!(
            l.starts_with("6 of 12 trials probed; against each probed experiment's unprobed twin"),
            "{l}"
        );
        assert!(l.contains("at 0.92× the twins' throughput or transaction rate (median over 2 points, 0.90–0.93"), "{l}");
        assert_eq!(probes_line(&crate::fixtures::twin_run(&[9e9], None)), None);
    }

    #[test]
    fn the_methods_name_each_experiments_congestion_control_and_why() {
        let declared = [
            record("a", "tcplab bench tcp-stream --write-size 1K --cc reno"),
            record("b", "tcplab bench tcp-rr --cc reno"),
            record("cc", "tcplab bench tcp-stream --cc cubic,bbr"),
            record("u", "tcplab bench udp-stream --write-size 1K"),
        ];
        let t = cc_paragraph(&declared).unwrap();
        assert!(
            t.starts_with("Congestion control, declared by each TCP experiment: reno in 2 experiments (the papers' hosts ran 4.3BSD-era TCP"),
            "{t}"
        );
        assert!(
            t.contains("; cubic,bbr in cc (which compares them)."),
            "{t}"
        );
        assert!(!t.contains("Declared by none"), "{t}");
        // A run planned before the rule: the default is named, not hidden.
        let old = [record("a", "tcplab bench tcp-stream --write-size 1K")];
        let t = cc_paragraph(&old).unwrap();
        assert!(
            t.ends_with("Declared by none, so the host's default: a."),
            "{t}"
        );
        // No TCP experiment: nothing to say.
        assert_eq!(
            cc_paragraph(&[record("u", "tcplab bench udp-stream")]),
            None
        );
    }
}
