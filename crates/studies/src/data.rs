//! A stored study run read back for its report: the run, its points'
//! summaries, which points each experiment owns, and the probe records and
//! CPU profiles of its probed trials.

use crate::StudyError;
use analysis::findings::CurvePoint;
use analysis::PointSummary;
use record::probe_event::ProbeEvent;
use record::{CpuProfile, StoredRun, TrialParams, TrialRecord, TrialStatus};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The key of a study's settings in the run's `settings` JSON.
pub const SETTINGS_KEY: &str = "study";

/// One experiment as run: which of the run's points it owns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentRecord {
    /// The experiment's id in its study.
    pub id: String,
    /// What it reproduces.
    pub title: String,
    /// The `tcplab bench` command it is.
    pub command: String,
    /// Index of its first point in the run.
    pub first_point: u32,
    /// Number of points.
    pub points: u32,
}

/// A study run's settings, stored with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudySettings {
    /// The study's name.
    pub study: String,
    /// Whether it ran with `--quick`.
    pub quick: bool,
    /// The experiments in the order they ran.
    pub experiments: Vec<ExperimentRecord>,
    /// The experiments the plan left out at the run's place, with why
    /// (absent from runs stored before plans could leave any out).
    #[serde(default)]
    pub skipped: Vec<crate::spec::Skipped>,
}

/// The host profile's figures a study uses (from `tcplab calibrate`); each
/// `None` when the host was not calibrated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostNumbers {
    /// The profile's id in the store.
    pub profile_id: Option<i64>,
    /// Null system call latency, s.
    pub null_syscall_s: Option<f64>,
    /// Memory copy bandwidth out of cache (DRAM), bytes/s.
    pub mem_bw: Option<f64>,
    /// Memory copy bandwidth of a buffer that stays in the L1/L2 cache,
    /// bytes/s.
    pub copy_cache_bw: Option<f64>,
    /// The CPU score of the fixed integer workload.
    pub cpu_score: Option<f64>,
    /// Context switch latency, s.
    pub ctx_switch_s: Option<f64>,
    /// The fast Internet checksum's bandwidth, bytes/s.
    pub checksum_bw: Option<f64>,
}

/// Everything a study's report reads.
#[derive(Debug, Clone)]
pub struct StudyData {
    /// The stored run.
    pub run: StoredRun,
    /// One summary per point, by index.
    pub points: Vec<PointSummary>,
    /// The study's settings.
    pub settings: StudySettings,
    /// Probe records per trial id (probed trials only).
    pub events: BTreeMap<i64, Vec<ProbeEvent>>,
    /// CPU profiles per trial id (`--probe cpu` trials only).
    pub profiles: BTreeMap<i64, CpuProfile>,
    /// The host profile's figures.
    pub host: HostNumbers,
    /// The same study's newest completed run from each other host in the
    /// database (imported with `tcplab import`), without probe data; the
    /// reports set them beside this host where the paper compared hosts.
    pub peers: Vec<StudyData>,
}

impl StudyData {
    /// Reads the study settings out of a stored run.
    pub fn new(
        run: StoredRun,
        points: Vec<PointSummary>,
        events: BTreeMap<i64, Vec<ProbeEvent>>,
        profiles: BTreeMap<i64, CpuProfile>,
    ) -> Result<StudyData, StudyError> {
        let settings = run
            .meta
            .settings
            .get(SETTINGS_KEY)
            .cloned()
            .ok_or(StudyError::NotAStudy(run.meta.id))
            .and_then(|v| {
                serde_json::from_value::<StudySettings>(v)
                    .map_err(|e| StudyError::Settings(e.to_string()))
            })?;
        Ok(StudyData {
            run,
            points,
            settings,
            events,
            profiles,
            host: HostNumbers::default(),
            peers: Vec::new(),
        })
    }

    /// The experiment with this id, if the run has it.
    pub fn experiment(&self, id: &str) -> Option<&ExperimentRecord> {
        self.settings.experiments.iter().find(|e| e.id == id)
    }

    /// The point summaries of an experiment (none if it is not in the run).
    pub fn points_of(&self, id: &str) -> Vec<&PointSummary> {
        let Some(e) = self.experiment(id) else {
            return Vec::new();
        };
        let range = e.first_point..e.first_point + e.points;
        self.points
            .iter()
            .filter(|p| range.contains(&p.index))
            .collect()
    }

    /// The first experiment the plan left out whose id starts with
    /// `prefix`, with why.
    pub fn left_out(&self, prefix: &str) -> Option<&crate::spec::Skipped> {
        self.settings
            .skipped
            .iter()
            .find(|k| k.id.starts_with(prefix))
    }

    /// Where a total or a fit over experiment `id` comes from (issue 30,
    /// rule 1): the trials of its unprobed twin when the run has them (a
    /// probe perturbs what it measures, so a probed trial gives shares,
    /// not totals), else `id`'s own, marked [`TotalsSource::Probed`] so
    /// the finding can say so.
    pub fn totals_of(&self, id: &str) -> (Vec<(&TrialRecord, &TrialParams)>, TotalsSource) {
        let twin = format!("{}{id}", crate::spec::UNPROBED_PREFIX);
        let unprobed = self.trials_of(&twin);
        if unprobed.is_empty() {
            (self.trials_of(id), TotalsSource::Probed)
        } else {
            (unprobed, TotalsSource::Unprobed)
        }
    }

    /// The successful trials of an experiment, with their point's params.
    pub fn trials_of(&self, id: &str) -> Vec<(&TrialRecord, &TrialParams)> {
        let points = self.points_of(id);
        self.run
            .trials
            .iter()
            .filter(|t| t.status == TrialStatus::Ok)
            .filter_map(|t| {
                points
                    .iter()
                    .find(|p| p.point_id == t.point_id)
                    .map(|p| (t, &p.params))
            })
            .collect()
    }

    /// A curve of `metric` (scaled by `scale`) against `x` over the points
    /// of experiment `id` that `keep` accepts; points without the metric
    /// or without an x are left out.
    pub fn curve(
        &self,
        id: &str,
        metric: &str,
        scale: f64,
        x: impl Fn(&TrialParams) -> Option<f64>,
        keep: impl Fn(&TrialParams) -> bool,
    ) -> Vec<CurvePoint> {
        let mut c: Vec<CurvePoint> = self
            .points_of(id)
            .into_iter()
            .filter(|p| keep(&p.params))
            .filter_map(|p| {
                let s = p.metrics.get(metric)?;
                let x = x(&p.params)?;
                Some(CurvePoint {
                    x,
                    mean: s.mean * scale,
                    ci: if s.ci95.is_finite() {
                        s.ci95 * scale
                    } else {
                        0.0
                    },
                })
            })
            .collect();
        c.sort_by(|a, b| a.x.total_cmp(&b.x));
        c
    }

    /// Trials of the run that failed, per experiment id.
    pub fn failures(&self) -> BTreeMap<String, u32> {
        let mut out = BTreeMap::new();
        for e in &self.settings.experiments {
            let n: u32 = self.points_of(&e.id).iter().map(|p| p.trials_failed).sum();
            if n > 0 {
                out.insert(e.id.clone(), n);
            }
        }
        out
    }
}

/// Whose trials a total or a fit came from ([`StudyData::totals_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotalsSource {
    /// The experiment's unprobed twin.
    Unprobed,
    /// The probed experiment itself (the run has no twin): its totals
    /// carry the probe's cost.
    Probed,
}
