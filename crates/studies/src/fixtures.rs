//! Builders the studies' tests share: a successful trial, a stored study
//! run around points and trials, and the finding sentences of a report.

use crate::data::{StudySettings, SETTINGS_KEY};
use record::{
    HostFacts, PointRecord, RunMeta, RunStatus, StoredRun, TrialOutcome, TrialRecord, TrialStatus,
};
use report::{Block, Section};

/// A successful trial of point `point_id` with this outcome, next in the
/// order of `trials` (its id and seq follow theirs).
pub fn ok_trial(
    trials: &[TrialRecord],
    point_id: i64,
    repetition: usize,
    outcome: TrialOutcome,
) -> TrialRecord {
    TrialRecord {
        id: trials.len() as i64 + 1,
        point_id,
        seq: trials.len() as u32,
        repetition: repetition as u32,
        started_at: String::new(),
        status: TrialStatus::Ok,
        error: None,
        outcome,
    }
}

/// A completed run (id 1) of the study `settings` names, on `place`, as
/// `tcplab study` stores it.
pub fn stored_study_run(
    settings: StudySettings,
    place: &str,
    points: Vec<PointRecord>,
    trials: Vec<TrialRecord>,
) -> StoredRun {
    StoredRun {
        meta: study_meta(settings, place),
        points,
        trials,
    }
}

/// The facts of a completed study run (id 1) of the study `settings`
/// names, on `place`.
pub fn study_meta(settings: StudySettings, place: &str) -> RunMeta {
    RunMeta {
        id: 1,
        kind: format!("study:{}", settings.study),
        command: String::new(),
        seed: 1,
        place: place.into(),
        started_at: String::new(),
        finished_at: None,
        status: RunStatus::Completed,
        host: HostFacts::default(),
        settings: serde_json::json!({ SETTINGS_KEY: settings }),
        tool_version: String::new(),
    }
}

/// The finding sentences of a report's sections, in order.
pub fn finding_texts(sections: Vec<Section>) -> Vec<String> {
    sections
        .into_iter()
        .flat_map(|s| s.blocks)
        .filter_map(|b| match b {
            Block::Finding { text } => Some(text),
            _ => None,
        })
        .collect()
}

/// A run of experiment "blocks" (one tcp-stream point per rate of
/// `probed`, 3 trials each) and, when `twin` is given, its unprobed
/// twin at those rates.
pub fn twin_run(probed: &[f64], twin: Option<&[f64]>) -> crate::data::StudyData {
    use crate::data::{ExperimentRecord, StudyData};
    use record::{TestKind, TrialParams};
    use std::collections::BTreeMap;
    let mut experiments = Vec::new();
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let sets: Vec<(&str, &[f64])> = std::iter::once(("blocks", probed))
        .chain(twin.map(|t| ("unprobed-blocks", t)))
        .collect();
    for (id, rates) in sets {
        experiments.push(ExperimentRecord {
            id: id.into(),
            title: id.into(),
            command: String::new(),
            first_point: points.len() as u32,
            points: rates.len() as u32,
        });
        for (i, &bps) in rates.iter().enumerate() {
            let mut params = TrialParams::defaults(TestKind::TcpStream);
            params.mss = Some(256 * (i as u32 + 1));
            let pid = points.len() as i64 + 1;
            points.push(PointRecord {
                id: pid,
                index: points.len() as u32,
                params,
                precision: None,
            });
            for (k, f) in [0.99, 1.0, 1.01].iter().enumerate() {
                let o = TrialOutcome {
                    metrics: BTreeMap::from([("throughput_bps".to_string(), bps * f)]),
                    // The probed experiment's trials carry their probes.
                    details: if id == "blocks" {
                        serde_json::json!({"probe": {"groups": ["cpu"]}})
                    } else {
                        serde_json::Value::Null
                    },
                    ..TrialOutcome::default()
                };
                trials.push(ok_trial(&trials, pid, k, o));
            }
        }
    }
    let settings = StudySettings {
        study: "huang-chen".into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, "veth", points, trials);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, BTreeMap::new(), BTreeMap::new()).unwrap()
}
