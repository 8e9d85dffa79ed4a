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

/// A point of a synthetic study experiment: its parameters and one
/// outcome per trial.
pub type OutcomePoint = (record::TrialParams, Vec<TrialOutcome>);

/// A completed study run of `study` on `place`, built experiment by
/// experiment (each a list of points with their trials' outcomes), with
/// `events` given to trials by their 1-based id: the one builder the
/// studies' synthetic-run tests share.
pub fn study_run_of(
    study: &str,
    place: &str,
    exps: Vec<(&str, Vec<OutcomePoint>)>,
    events: std::collections::BTreeMap<i64, Vec<record::probe_event::ProbeEvent>>,
) -> crate::data::StudyData {
    use crate::data::{ExperimentRecord, StudyData};
    let mut points = Vec::new();
    let mut trials = Vec::new();
    let mut experiments = Vec::new();
    for (id, pts) in exps {
        experiments.push(ExperimentRecord {
            id: id.into(),
            title: id.into(),
            command: String::new(),
            first_point: points.len() as u32,
            points: pts.len() as u32,
        });
        for (params, outcomes) in pts {
            let pid = points.len() as i64 + 1;
            points.push(PointRecord {
                id: pid,
                index: points.len() as u32,
                params,
                precision: None,
            });
            for (k, o) in outcomes.into_iter().enumerate() {
                trials.push(ok_trial(&trials, pid, k, o));
            }
        }
    }
    let settings = StudySettings {
        study: study.into(),
        quick: true,
        experiments,
        skipped: Vec::new(),
    };
    let run = stored_study_run(settings, place, points, trials);
    let summaries = analysis::summarize_run(&run);
    StudyData::new(run, summaries, events, std::collections::BTreeMap::new()).unwrap()
}

/// A trial outcome with these metrics.
pub fn outcome_of<'a>(metrics: impl IntoIterator<Item = (&'a str, f64)>) -> TrialOutcome {
    let mut o = TrialOutcome::default();
    for (k, v) in metrics {
        o.metrics.insert(k.to_string(), v);
    }
    o
}

/// A run of experiment "blocks" (one tcp-stream point per rate of
/// `probed`, 3 trials each) and, when `twin` is given, its unprobed
/// twin at those rates.
pub fn twin_run(probed: &[f64], twin: Option<&[f64]>) -> crate::data::StudyData {
    use record::{TestKind, TrialParams};
    let sets: Vec<(&str, &[f64])> = std::iter::once(("blocks", probed))
        .chain(twin.map(|t| ("unprobed-blocks", t)))
        .collect();
    let exps = sets
        .into_iter()
        .map(|(id, rates)| {
            let pts = rates
                .iter()
                .enumerate()
                .map(|(i, &bps)| {
                    let mut params = TrialParams::defaults(TestKind::TcpStream);
                    params.mss = Some(256 * (i as u32 + 1));
                    let outcomes = [0.99, 1.0, 1.01]
                        .iter()
                        .map(|f| {
                            let mut o = outcome_of([("throughput_bps", bps * f)]);
                            // The probed experiment's trials carry their probes.
                            if id == "blocks" {
                                o.details = serde_json::json!({"probe": {"groups": ["cpu"]}});
                            }
                            o
                        })
                        .collect();
                    (params, outcomes)
                })
                .collect();
            (id, pts)
        })
        .collect();
    study_run_of(
        "huang-chen",
        "veth",
        exps,
        std::collections::BTreeMap::new(),
    )
}
