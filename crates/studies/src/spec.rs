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
    /// An experiment from its id, title and `tcplab bench` arguments after
    /// `bench`, written as the command a user would type and rerun:
    /// `"tcp-stream --write-size 1460 --topology veth --repeat 5"`.
    ///
    /// The string is split at every ASCII whitespace character, so values
    /// never contain spaces (none does: lists are comma-separated, and the
    /// bench parser rejects what a topology name with a space splits into).
    /// Arguments are separated by one space: two separators in a row, or
    /// one at either end, as an empty interpolated value leaves, make an
    /// empty argument rather than vanish, so the bench parser rejects it
    /// as it would the empty value itself (and the plan tests fail).
    pub fn bench(
        id: impl Into<String>,
        title: impl Into<String>,
        args: impl AsRef<str>,
    ) -> Experiment {
        Experiment {
            id: id.into(),
            title: title.into(),
            args: args
                .as_ref()
                .split(|c: char| c.is_ascii_whitespace())
                .map(String::from)
                .collect(),
        }
    }

    /// The experiment as a command a user could type.
    pub fn command(&self) -> String {
        format!("tcplab bench {}", self.args.join(" "))
    }

    /// Whether the experiment attaches probes (`--probe`).
    pub fn is_probed(&self) -> bool {
        self.args.iter().any(|a| a == "--probe")
    }

    /// The same sweep without probes (`--probe`, `--sample-hz` and
    /// `--probe-depth` and their values left out), for a probed experiment:
    /// its trials, beside the probed ones with the same parameters, measure
    /// what the observation cost (the reports' probe effect). The id is
    /// prefixed, so suffixes such as `-pathological` still mark it.
    pub fn unprobed_twin(&self) -> Option<Experiment> {
        if !self.is_probed() {
            return None;
        }
        let mut args = Vec::with_capacity(self.args.len());
        let mut skip_value = false;
        for a in &self.args {
            if skip_value {
                skip_value = false;
            } else if PROBE_FLAGS.contains(&a.as_str()) {
                skip_value = true;
            } else {
                args.push(a.clone());
            }
        }
        Some(Experiment {
            id: format!("{UNPROBED_PREFIX}{}", self.id),
            title: format!("{}: its unprobed twin (the probe effect)", self.title),
            args,
        })
    }
}

/// The flags (each with one value) that make an experiment probed.
const PROBE_FLAGS: [&str; 3] = ["--probe", "--sample-hz", "--probe-depth"];

/// The id prefix of an unprobed twin experiment.
pub const UNPROBED_PREFIX: &str = "unprobed-";

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

impl StudyPlan {
    /// The plan with each probed experiment followed by its unprobed twin
    /// ([`Experiment::unprobed_twin`]).
    pub fn with_unprobed_twins(self) -> StudyPlan {
        let experiments = self
            .experiments
            .into_iter()
            .flat_map(|e| {
                let twin = e.unprobed_twin();
                std::iter::once(e).chain(twin)
            })
            .collect();
        StudyPlan {
            study: self.study,
            experiments,
        }
    }
}

/// Trials per point of every experiment in `--quick` studies: five, the
/// fewest whose 95% t interval (t = 2.78) is narrow enough to tell apart
/// the effects the studies report.
pub const QUICK_TRIALS: u32 = 5;

/// Trials per point of every experiment in the full studies.
pub const FULL_TRIALS: u32 = 10;

/// Repetitions per point: [`QUICK_TRIALS`] or [`FULL_TRIALS`].
pub(crate) fn repeat(o: &PlanOptions) -> String {
    (if o.quick { QUICK_TRIALS } else { FULL_TRIALS }).to_string()
}

/// A factor list: the coarse one in quick mode.
pub(crate) fn levels<'a>(o: &PlanOptions, quick: &'a str, full: &'a str) -> &'a str {
    if o.quick {
        quick
    } else {
        full
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probed_experiment_gets_an_unprobed_twin_and_others_none() {
        let probed = Experiment::bench(
            "sws-pathological",
            "SWS",
            "tcp-stream --write-size 8192 --probe queues,tcp --sample-hz 1000 --probe-depth full --repeat 3",
        );
        let twin = probed.unprobed_twin().unwrap();
        assert_eq!(twin.id, "unprobed-sws-pathological");
        assert!(twin.id.ends_with("-pathological"));
        assert_eq!(
            twin.args,
            ["tcp-stream", "--write-size", "8192", "--repeat", "3"]
        );
        assert!(!twin.is_probed() && twin.unprobed_twin().is_none());
        let plan = StudyPlan {
            study: "s".into(),
            experiments: vec![probed.clone(), twin.clone()],
        };
        // Only the probed one gets a twin, right after it.
        let with = StudyPlan {
            study: "s".into(),
            experiments: vec![probed.clone()],
        }
        .with_unprobed_twins();
        assert_eq!(with, plan);
        let plain = Experiment::bench("w", "W", "tcp-stream --write-size 1K");
        assert!(plain.unprobed_twin().is_none());
    }

    #[test]
    fn bench_splits_the_command_at_whitespace() {
        let e = Experiment::bench(
            "id",
            format!("title {}", 1),
            format!(
                "tcp-rr --write-size {} --nodelay --topology loopback,veth",
                "1,64"
            ),
        );
        assert_eq!(e.id, "id");
        assert_eq!(e.title, "title 1");
        assert_eq!(
            e.args,
            [
                "tcp-rr",
                "--write-size",
                "1,64",
                "--nodelay",
                "--topology",
                "loopback,veth"
            ]
        );
        assert_eq!(
            e.command(),
            "tcplab bench tcp-rr --write-size 1,64 --nodelay --topology loopback,veth"
        );
        assert_eq!(
            Experiment::bench("", "", "http\t--repeat\n3").args,
            ["http", "--repeat", "3"]
        );
        // An empty value stays an empty argument, in the middle or last.
        let empty = "";
        assert_eq!(
            Experiment::bench("", "", format!("http --topology {empty} --repeat 3")).args,
            ["http", "--topology", "", "--repeat", "3"]
        );
        assert_eq!(
            Experiment::bench("", "", format!("http --repeat {empty}")).args,
            ["http", "--repeat", ""]
        );
    }

    #[test]
    fn every_plan_is_a_command_of_whole_arguments() {
        let places = [
            None,
            Some("loopback"),
            Some("veth"),
            Some("ether10"),
            Some("lan100"),
            Some("man"),
            Some("wan"),
        ];
        for name in crate::names() {
            for quick in [false, true] {
                for topology in places {
                    let o = PlanOptions {
                        quick,
                        topology: topology.map(String::from),
                    };
                    for e in crate::plan(name, &o).unwrap().experiments {
                        let at = format!("{name} {} (quick {quick}, topology {topology:?})", e.id);
                        assert!(!e.args[0].starts_with('-'), "{at}: no test first");
                        for a in &e.args {
                            assert!(!a.is_empty(), "{at}: an empty argument");
                            assert!(
                                !a.contains(char::is_whitespace),
                                "{at}: whitespace in {a:?}"
                            );
                        }
                        let command = e.command();
                        let again = command.strip_prefix("tcplab bench ").unwrap();
                        assert_eq!(Experiment::bench("", "", again).args, e.args, "{at}");
                    }
                }
            }
        }
    }

    /// The value after `flag` in an experiment's arguments.
    fn arg<'a>(e: &'a Experiment, flag: &str) -> Option<&'a str> {
        let i = e.args.iter().position(|a| a == flag)?;
        e.args.get(i + 1).map(String::as_str)
    }

    #[test]
    fn every_point_has_enough_trials_and_every_timed_trial_lasts_100ms() {
        for name in crate::names() {
            for quick in [false, true] {
                let o = PlanOptions {
                    quick,
                    topology: None,
                };
                let least = if quick { QUICK_TRIALS } else { FULL_TRIALS };
                for e in crate::plan(name, &o).unwrap().experiments {
                    let at = format!("{name} {} (quick {quick})", e.id);
                    let trials: u32 = arg(&e, "--repeat")
                        .unwrap_or_else(|| panic!("{at}: no --repeat"))
                        .parse()
                        .unwrap();
                    assert!(trials >= least, "{at}: {trials} trials < {least}");
                    for d in arg(&e, "--duration").into_iter().flat_map(|l| l.split(',')) {
                        let secs = match d.strip_suffix("ms") {
                            Some(ms) => ms.parse::<f64>().map(|v| v / 1e3),
                            None => d.trim_end_matches('s').parse::<f64>(),
                        }
                        .unwrap_or_else(|_| panic!("{at}: duration {d}"));
                        assert!(secs >= 0.1, "{at}: {d} is under 100 ms");
                    }
                }
            }
        }
    }
}
