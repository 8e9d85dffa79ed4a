//! Where a probed trial's path analysis comes from: its probe records,
//! analysed when read, or the analysis stored in their place when the run
//! kept only a summary (`--probe-keep summary`). Views that need the
//! records themselves (a pcapng capture, `export --records`) say so.

use analysis::path::{analyse_with_mss, PathAnalysis};
use record::probe_event::ProbeEvent;
use record::{Store, StoreError, StoredEventsError, TrialRecord};

/// What `--probe-keep summary` leaves in the trial's probe details.
pub const SUMMARY_KEEP: &str = "summary";

/// The sentence for a view that needs the records of a summary-kept run.
pub const RAW_NOT_KEPT: &str = "raw records were not kept (--probe-keep summary)";

/// A probed trial's path: its records, or the analysis kept in their place.
#[derive(Debug, Clone)]
pub enum PathSource {
    /// The probe records, decoded.
    Records(Vec<ProbeEvent>),
    /// The path analysis stored in place of the records.
    Summary(Box<PathAnalysis>),
}

impl PathSource {
    /// The trial's path analysis (split into wire segments at its sender's
    /// MSS, as the summary was when it was stored).
    pub fn analysis(&self, t: &TrialRecord) -> PathAnalysis {
        match self {
            PathSource::Records(ev) => analyse_with_mss(ev, crate::path::trial_mss(t)),
            PathSource::Summary(a) => (**a).clone(),
        }
    }

    /// The records, when they were kept.
    pub fn records(&self) -> Option<&[ProbeEvent]> {
        match self {
            PathSource::Records(ev) => Some(ev),
            PathSource::Summary(_) => None,
        }
    }
}

/// The path of trial `t`: its records when stored, else its stored
/// analysis, else `None` (not probed). Records in another layout are an
/// error, as is a summary this build cannot read.
pub fn load_path_source(
    store: &Store,
    t: &TrialRecord,
) -> Result<Option<PathSource>, StoredEventsError> {
    if let Some(events) = store.load_probe_events(t.id)? {
        return Ok(Some(PathSource::Records(events)));
    }
    let Some(json) = store.load_path_summary(t.id)? else {
        return Ok(None);
    };
    let a: PathAnalysis = serde_json::from_str(&json).map_err(StoreError::from)?;
    Ok(Some(PathSource::Summary(Box::new(a))))
}

/// Whether trial `t` was probed keeping only the summary.
pub fn kept_summary_only(t: &TrialRecord) -> bool {
    t.outcome.details["probe"]["keep"].as_str() == Some(SUMMARY_KEEP)
}
