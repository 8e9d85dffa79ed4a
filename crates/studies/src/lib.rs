//! `studies`: the classic studies of TCP/IP performance as tcplab plans,
//! analyses and report sections. A study's plan is a list of experiments,
//! each a `tcplab bench` sweep written as its arguments; the binary runs
//! them into one stored run, and the study's report reads that run back.

pub mod abrams91;
pub mod data;
pub mod figures;
pub mod huang_chen;
pub mod markatos02;
pub mod openlink92;
pub mod spec;
pub mod sunos_ipc;
pub mod verdict;

pub use data::{ExperimentRecord, HostNumbers, StudyData, StudySettings};
pub use spec::{Experiment, PlanOptions, StudyPlan};

/// Why a study cannot be planned or reported.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// No study of that name.
    #[error("unknown study {0:?} (known: {known})", known = NAMES.join(", "))]
    Unknown(String),
    /// The run was not made by `tcplab study`.
    #[error("run {0} is not a study run (made by tcplab study)")]
    NotAStudy(i64),
    /// The run's study settings do not parse.
    #[error("the run's study settings do not parse: {0}")]
    Settings(String),
}

/// Every study, in the order `study all` runs them.
pub const NAMES: &[&str] = &[
    abrams91::NAME,
    markatos02::NAME,
    huang_chen::NAME,
    sunos_ipc::NAME,
    openlink92::NAME,
];

/// The plan of the study called `name`.
pub fn plan(name: &str, o: &PlanOptions) -> Result<StudyPlan, StudyError> {
    match name {
        abrams91::NAME => Ok(abrams91::plan(o)),
        markatos02::NAME => Ok(markatos02::plan(o)),
        sunos_ipc::NAME => Ok(sunos_ipc::plan(o)),
        openlink92::NAME => Ok(openlink92::plan(o)),
        huang_chen::NAME => Ok(huang_chen::plan(o)),
        _ => Err(StudyError::Unknown(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_study_plans_with_unique_experiment_ids() {
        for name in NAMES {
            for quick in [false, true] {
                let p = plan(
                    name,
                    &PlanOptions {
                        quick,
                        topology: None,
                    },
                )
                .unwrap();
                assert_eq!(p.study, *name);
                let mut ids: Vec<&str> = p.experiments.iter().map(|e| e.id.as_str()).collect();
                let n = ids.len();
                ids.sort();
                ids.dedup();
                assert_eq!(ids.len(), n, "{name}: duplicate experiment ids");
                assert!(p.experiments.iter().all(|e| !e.args.is_empty()));
            }
        }
    }

    #[test]
    fn quick_plans_are_coarser_with_the_same_experiments() {
        for name in NAMES {
            let full = plan(name, &PlanOptions::default()).unwrap();
            let quick = plan(
                name,
                &PlanOptions {
                    quick: true,
                    topology: None,
                },
            )
            .unwrap();
            let ids = |p: &StudyPlan| {
                p.experiments
                    .iter()
                    .map(|e| e.id.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                ids(&full),
                ids(&quick),
                "{name}: quick mode must keep every figure"
            );
            assert_ne!(full, quick);
        }
    }

    #[test]
    fn a_topology_replaces_the_remote_places() {
        let p = plan(
            "abrams91",
            &PlanOptions {
                quick: true,
                topology: Some("lan100".into()),
            },
        )
        .unwrap();
        assert!(p
            .experiments
            .iter()
            .all(|e| !e.args.iter().any(|a| a == "ether10" || a == "veth")));
        assert!(matches!(
            plan("nope", &PlanOptions::default()),
            Err(StudyError::Unknown(_))
        ));
    }
}

#[cfg(test)]
mod report_tests;
