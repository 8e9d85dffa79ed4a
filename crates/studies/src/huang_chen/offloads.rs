//! The offloads each trial recorded at both ends (`lab.offloads` in its
//! details): what an experiment held fixed, and what its arms differed in.
//! Segmentation and receive offloads (TSO, GSO, GRO) hide per-packet costs,
//! so each section says what its trials ran with.

use crate::data::StudyData;
use record::TrialParams;
use std::collections::BTreeMap;

/// One trial's offloads: "sender tso" → on.
pub(super) type OffloadState = BTreeMap<String, bool>;

/// The order and names features are printed in.
const FEATURES: [(&str, &str); 5] = [
    ("tso", "tso"),
    ("gso", "gso"),
    ("gro", "gro"),
    ("tx_checksum", "tx checksum"),
    ("rx_checksum", "rx checksum"),
];

/// The state a trial recorded for its two ends; `None` where it recorded
/// none (loopback, or a run stored before trials recorded it).
pub(super) fn recorded(details: &serde_json::Value) -> Option<OffloadState> {
    let o = details.get("lab")?.get("offloads")?;
    let mut m = BTreeMap::new();
    for side in ["sender", "receiver"] {
        let st = o.get(side)?.get("state")?;
        for (key, name) in FEATURES {
            m.insert(format!("{side} {name}"), st.get(key)?.as_bool()?);
        }
    }
    Some(m)
}

/// The features every trial of `states` has alike, with that state.
fn common(states: &[OffloadState]) -> OffloadState {
    let Some(first) = states.first() else {
        return OffloadState::new();
    };
    first
        .iter()
        .filter(|(k, v)| states.iter().all(|s| s.get(*k) == Some(v)))
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// Features whose state is not the same in every trial of both arms: those
/// that differ between the arms or vary within one.
pub(super) fn differing(a: &[OffloadState], b: &[OffloadState]) -> Vec<String> {
    let all: Vec<OffloadState> = a.iter().chain(b).cloned().collect();
    let same = common(&all);
    let mut out: Vec<String> = all
        .iter()
        .flat_map(|s| s.keys())
        .filter(|k| !same.contains_key(*k))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// "sender: tso off, gso off, …; receiver: …" for the features all of
/// `states` share, and which ones varied.
fn words(states: &[OffloadState]) -> String {
    if states.is_empty() {
        return "not recorded".into();
    }
    let same = common(states);
    let side = |side: &str| {
        FEATURES
            .iter()
            .map(|(_, name)| {
                let key = format!("{side} {name}");
                match same.get(&key) {
                    Some(true) => format!("{name} on"),
                    Some(false) => format!("{name} off"),
                    None => format!("{name} varied"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("sender {}; receiver {}", side("sender"), side("receiver"))
}

/// What each arm's trials ran with, as recorded: "Offloads as the trials
/// recorded them — label: sender tso off, …".
pub(super) fn controlled_sentence(arms: &[(String, Vec<OffloadState>)]) -> String {
    let parts: Vec<String> = arms
        .iter()
        .map(|(label, states)| format!("{label}: {}", words(states)))
        .collect();
    format!(
        "Offloads as the trials recorded them at both ends — {}.",
        parts.join(" — ")
    )
}

/// The recorded offload states of an experiment's trials that `keep`
/// accepts.
pub(super) fn offload_states(
    d: &StudyData,
    id: &str,
    keep: impl Fn(&TrialParams) -> bool,
) -> Vec<OffloadState> {
    d.trials_of(id)
        .into_iter()
        .filter(|(_, p)| keep(p))
        .filter_map(|(t, _)| recorded(&t.outcome.details))
        .collect()
}
