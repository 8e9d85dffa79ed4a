//! `studies`: the classic studies of TCP/IP performance as tcplab plans,
//! analyses and report sections. A study's plan is a list of experiments,
//! each a `tcplab bench` sweep written as its arguments; the binary runs
//! them into one stored run, and the study's report reads that run back.

pub mod abrams91;
pub mod data;
pub mod document;
pub mod figures;
pub mod huang_chen;
pub mod lossy;
pub mod markatos02;
pub mod methods;
pub mod openlink92;
pub mod paper_quote;
pub mod probe_effect;
pub mod ratio;
pub mod spec;
pub mod stack_accounting;
pub mod sunos_ipc;
pub mod validity;
pub mod verdict;

pub use data::{ExperimentRecord, HostNumbers, StudyData, StudySettings};
pub use document::StudyDocument;
use report::Section;
pub use spec::{Experiment, PlanOptions, StudyPlan};

/// Why a study cannot be planned or reported.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// No study of that name.
    #[error("unknown study {0:?} (known: {known})", known = names().join(", "))]
    Unknown(String),
    /// The run was not made by `tcplab study`.
    #[error("run {0} is not a study run (made by tcplab study)")]
    NotAStudy(i64),
    /// The run's study settings do not parse.
    #[error("the run's study settings do not parse: {0}")]
    Settings(String),
    /// A stored study run names a study this build has no report for.
    #[error("no report for study {0}")]
    NoReport(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] record::StoreError),
    /// The run's JSON data file could not be written.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// A study: its name, how to plan it and how to report a run of it.
#[derive(Debug)]
pub struct Study {
    /// The name `tcplab study` takes (`abrams91`).
    pub name: &'static str,
    /// Its experiments for the given options.
    pub plan: fn(&PlanOptions) -> StudyPlan,
    /// Its report sections (between the host section and the verdict).
    pub report: fn(&StudyData) -> Vec<Section>,
}

/// Every study, in the order `study all` runs them. Adding a study is one
/// entry here.
pub static STUDIES: &[Study] = &[
    Study {
        name: abrams91::NAME,
        plan: abrams91::plan,
        report: abrams91::report,
    },
    Study {
        name: markatos02::NAME,
        plan: markatos02::plan,
        report: markatos02::report,
    },
    Study {
        name: huang_chen::NAME,
        plan: huang_chen::plan,
        report: huang_chen::report,
    },
    Study {
        name: sunos_ipc::NAME,
        plan: sunos_ipc::plan,
        report: sunos_ipc::report,
    },
    Study {
        name: openlink92::NAME,
        plan: openlink92::plan,
        report: openlink92::report,
    },
];

/// Every study's name, in the order `study all` runs them.
pub fn names() -> Vec<&'static str> {
    STUDIES.iter().map(|s| s.name).collect()
}

/// The study called `name`.
pub fn study(name: &str) -> Result<&'static Study, StudyError> {
    STUDIES
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| StudyError::Unknown(name.to_string()))
}

/// The plan of the study called `name`.
pub fn plan(name: &str, o: &PlanOptions) -> Result<StudyPlan, StudyError> {
    study(name).map(|s| {
        (s.plan)(o)
            .without_what_loopback_cannot_run()
            .with_declared_cc()
            .with_unprobed_twins()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_study_plans_with_unique_experiment_ids() {
        for name in names() {
            for quick in [false, true] {
                let p = plan(
                    name,
                    &PlanOptions {
                        quick,
                        topology: None,
                    },
                )
                .unwrap();
                assert_eq!(p.study, name);
                let mut ids: Vec<&str> = p.experiments.iter().map(|e| e.id.as_str()).collect();
                let n = ids.len();
                ids.sort();
                ids.dedup();
                assert_eq!(ids.len(), n, "{name}: duplicate experiment ids");
                assert!(p.experiments.iter().all(|e| !e.args.is_empty()));
            }
        }
    }

    /// Issue 30, rule 2: congestion control is a declared factor of every
    /// study experiment that runs over TCP, in every plan.
    #[test]
    fn every_tcp_experiment_declares_its_congestion_control() {
        let mut tcp = 0;
        for name in names() {
            for quick in [false, true] {
                for topology in [None, Some("veth".to_string()), Some("ether10".to_string())] {
                    let p = plan(name, &PlanOptions { quick, topology }).unwrap();
                    for e in &p.experiments {
                        if spec::runs_tcp(e) {
                            tcp += 1;
                            let n = e.args.iter().filter(|a| *a == "--cc").count();
                            assert_eq!(n, 1, "{name}: {}", e.command());
                        } else {
                            assert!(spec::declared_cc(e).is_none(), "{}", e.command());
                        }
                    }
                }
            }
        }
        assert!(tcp > 100, "{tcp} TCP experiments");
        // An experiment that compares controllers keeps its own.
        let own = spec::StudyPlan {
            study: "s".into(),
            experiments: vec![
                spec::Experiment::bench("a", "A", "tcp-stream --cc cubic,bbr"),
                spec::Experiment::bench("b", "B", "tcp-rr --write-size 1"),
                spec::Experiment::bench("c", "C", "udp-stream --write-size 1K"),
            ],
            skipped: Vec::new(),
        }
        .with_declared_cc();
        assert_eq!(own.experiments[0].args, ["tcp-stream", "--cc", "cubic,bbr"]);
        assert_eq!(
            own.experiments[1].args,
            ["tcp-rr", "--write-size", "1", "--cc", spec::STUDY_CC]
        );
        assert_eq!(
            own.experiments[2].args,
            ["udp-stream", "--write-size", "1K"]
        );
    }

    #[test]
    fn quick_plans_are_coarser_with_the_same_experiments() {
        for name in names() {
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
        let unknown = plan("nope", &PlanOptions::default()).unwrap_err();
        assert!(matches!(unknown, StudyError::Unknown(_)));
        assert_eq!(
            unknown.to_string(),
            "unknown study \"nope\" (known: abrams91, markatos02, huang-chen, sunos-ipc, openlink92)"
        );
    }
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod report_tests;
#[cfg(test)]
mod synthetic_findings_tests;

#[cfg(test)]
mod document_tests;
