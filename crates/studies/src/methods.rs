//! What a study's methods add to a run's: the congestion control each of
//! its TCP experiments declared, and why (issue 30, rule 2), read back from
//! the commands the run stored, so the sentence changes when the plan does.

use crate::data::ExperimentRecord;
use crate::spec::{declared_cc, runs_tcp, Experiment, STUDY_CC, STUDY_CC_WHY};
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
