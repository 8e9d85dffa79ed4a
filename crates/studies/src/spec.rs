//! What a study runs: experiments, each a `tcplab bench` sweep written as
//! its command-line arguments, so a study's plan is validated by the same
//! parser as a user's command and can be read (and rerun) as one.

use serde::{Deserialize, Serialize};

/// One experiment of a study: a figure's or a table's worth of points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// Short id, unique within the study (`write-size-tcp`).
    pub id: String,
    /// What it reproduces (`Figs 1–3: TCP throughput against write size`).
    pub title: String,
    /// The `tcplab bench` arguments after `bench` (test first).
    pub args: Vec<String>,
}

impl Experiment {
    /// An experiment from its id, title and `bench` arguments.
    pub fn new(id: &str, title: &str, args: &[&str]) -> Experiment {
        Experiment {
            id: id.to_string(),
            title: title.to_string(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The experiment as a command a user could type.
    pub fn command(&self) -> String {
        format!("tcplab bench {}", self.args.join(" "))
    }
}

/// How to plan a study.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanOptions {
    /// A first look: fewer repetitions and a coarser sweep, same figures.
    pub quick: bool,
    /// Replaces the study's remote place (`veth`, `ether10`, …) where the
    /// study lets the user choose.
    pub topology: Option<String>,
}

/// A study's plan: its experiments in the order they run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyPlan {
    /// The study's name (`abrams91`).
    pub study: String,
    /// Its experiments.
    pub experiments: Vec<Experiment>,
}

/// Repetitions per point: `quick` and full.
pub(crate) fn repeat(o: &PlanOptions, quick: u32, full: u32) -> String {
    (if o.quick { quick } else { full }).to_string()
}

/// A factor list: the coarse one in quick mode.
pub(crate) fn levels<'a>(o: &PlanOptions, quick: &'a str, full: &'a str) -> &'a str {
    if o.quick {
        quick
    } else {
        full
    }
}
