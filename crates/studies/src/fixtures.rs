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
