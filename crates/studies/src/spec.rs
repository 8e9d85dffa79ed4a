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
    /// Experiments the study leaves out at the place it was given, each
    /// with why (`tcplab study --plan` lists them, and the report says
    /// why their figures are missing).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
}

/// An experiment a plan leaves out, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    /// The id it would have had.
    pub id: String,
    /// What it would have reproduced.
    pub title: String,
    /// Why it is not run.
    pub reason: String,
}

/// The places `--topology` takes that carry no link profile: the lab's
/// bare topologies. Every other place it takes (ether10, lan100, lan1g,
/// man, wan) is a link profile a `--link` can start from.
pub const BARE_PLACES: [&str; 3] = ["loopback", "veth", "router"];

/// Whether `place` is a link profile that `--link PLACE,KEY=VALUE` can
/// start from (`ether10`, not `loopback`).
pub fn has_link_profile(place: &str) -> bool {
    !BARE_PLACES.contains(&place)
}

/// Why an experiment that shapes a link is left out at a place without a
/// link profile; `needs` says what it needs the link for.
pub fn no_link_profile(place: &str, needs: &str) -> String {
    format!(
        "--topology {place} has no link profile, and this experiment {needs}; run the study \
         without --topology, or with a link profile such as ether10, for it"
    )
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
            skipped: self.skipped,
        }
    }
}

/// The congestion control every study's TCP experiment runs with unless it
/// declares its own (issue 30, rule 2): the papers' hosts ran 4.3BSD-era
/// TCP, whose congestion avoidance Linux's `reno` (NewReno) keeps, and
/// tcplab's own stack offers it too.
pub const STUDY_CC: &str = "reno";

/// Why [`STUDY_CC`], as the methods print it.
pub const STUDY_CC_WHY: &str = "the papers' hosts ran 4.3BSD-era TCP (slow start and \
    congestion avoidance on loss, no pacing), which Linux's reno keeps; not this host's \
    default, bbr, which models the path and paces what it sends (with a timer, as this kernel \
    has no fq qdisc), as none of the papers' hosts did";

/// The tests that run over TCP, and so have a congestion control.
const TCP_TESTS: [&str; 4] = ["tcp-stream", "tcp-rr", "tcp-crr", "http"];

/// The congestion control an experiment declares (`--cc`), if any.
pub fn declared_cc(e: &Experiment) -> Option<&str> {
    arg_of(e, "--cc")
}

/// Whether an experiment runs over TCP (and so needs a congestion control).
pub fn runs_tcp(e: &Experiment) -> bool {
    e.args
        .first()
        .is_some_and(|t| TCP_TESTS.contains(&t.as_str()))
}

impl StudyPlan {
    /// The plan with every TCP experiment that declares no congestion
    /// control given [`STUDY_CC`], so that no study runs on whatever the
    /// host's default is (issue 30, rule 2).
    pub fn with_declared_cc(mut self) -> StudyPlan {
        for e in self.experiments.iter_mut() {
            if runs_tcp(e) && declared_cc(e).is_none() {
                e.args.extend(["--cc".to_string(), STUDY_CC.to_string()]);
            }
        }
        self
    }
}

/// The flags that change a place's namespaces (its devices' offloads,
/// its routing table), which the host's own loopback never gets.
const NAMESPACE_FLAGS: [&str; 3] = ["--offload", "--checksum-offload", "--routes"];

/// Why `e` cannot run on the host's own loopback, when its places include
/// it (no `--topology` is loopback): it sends raw frames between two
/// namespaces, or it changes a place's offloads or routes. `None` when it
/// can.
fn loopback_cannot(e: &Experiment) -> Option<String> {
    // A tcplab stack end runs in a place of its own (a namespace and TUN
    // devices, no --topology): its --routes go into the stack's own table.
    let stack_end = ["--stack", "--server-stack"]
        .iter()
        .any(|f| arg_of(e, f).is_some_and(|v| v.split(',').all(|s| s.starts_with("tcplab"))));
    if stack_end {
        return None;
    }
    let places = arg_of(e, "--topology").unwrap_or("loopback");
    if !places.split(',').any(|p| p == "loopback") {
        return None;
    }
    let what = if e.args.first().map(String::as_str) == Some("layer-rate") {
        "sends raw frames between two namespaces".to_string()
    } else {
        let flags: Vec<&str> = NAMESPACE_FLAGS
            .iter()
            .copied()
            .filter(|f| e.args.iter().any(|a| a == f))
            .collect();
        if flags.is_empty() {
            return None;
        }
        format!("changes a place's namespaces ({})", flags.join(", "))
    };
    Some(format!(
        "--topology loopback is the host's own loopback, which the lab never changes, and this \
         experiment {what}; run the study without --topology, or with veth or a link \
         profile, for it"
    ))
}

/// The value after `flag` in an experiment's arguments.
fn arg_of<'a>(e: &'a Experiment, flag: &str) -> Option<&'a str> {
    let i = e.args.iter().position(|a| a == flag)?;
    e.args.get(i + 1).map(String::as_str)
}

impl StudyPlan {
    /// The plan without the experiments the host's own loopback cannot
    /// run (see [`loopback_cannot`]), each listed as left out with why.
    pub fn without_what_loopback_cannot_run(self) -> StudyPlan {
        let mut skipped = self.skipped;
        let mut experiments = Vec::new();
        for e in self.experiments {
            match loopback_cannot(&e) {
                Some(reason) => skipped.push(Skipped {
                    id: e.id,
                    title: e.title,
                    reason,
                }),
                None => experiments.push(e),
            }
        }
        StudyPlan {
            study: self.study,
            experiments,
            skipped,
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

/// How long a trial on tcplab's stack sends: 0.2 s in `--quick` (the
/// stack experiments of all studies then fit in the 15 minutes), 1 s in
/// the full study.
pub(crate) fn stack_duration(o: &PlanOptions) -> &'static str {
    if o.quick {
        "0.2s"
    } else {
        "1s"
    }
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
            skipped: Vec::new(),
        };
        // Only the probed one gets a twin, right after it.
        let with = StudyPlan {
            study: "s".into(),
            experiments: vec![probed.clone()],
            skipped: Vec::new(),
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
            Some("router"),
            Some("ether10"),
            Some("lan100"),
            Some("lan1g"),
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

    #[test]
    fn a_link_starts_from_a_profile_and_a_place_without_one_leaves_its_experiments_out() {
        // The places the lab takes: its bare topologies and link profiles
        // (tcplab's plan test checks every one with the bench parser).
        let profiles = ["ether10", "lan100", "lan1g", "man", "wan"];
        for place in BARE_PLACES.iter().chain(&profiles) {
            for name in crate::names() {
                let o = PlanOptions {
                    quick: true,
                    topology: Some(place.to_string()),
                };
                let plan = crate::plan(name, &o).unwrap();
                for e in &plan.experiments {
                    if let Some(link) = arg(e, "--link") {
                        let first = link.split(',').next().unwrap();
                        assert!(
                            first.contains('=') || profiles.contains(&first),
                            "{name} {} at {place}: --link {link}",
                            e.id
                        );
                    }
                }
                let left_out: Vec<&str> = plan
                    .skipped
                    .iter()
                    .filter(|k| k.reason.contains("has no link profile"))
                    .map(|k| k.id.as_str())
                    .collect();
                let expected: &[&str] = match (name, has_link_profile(place)) {
                    ("sunos-ipc", false) => &[
                        "sockbuf-delay-4k",
                        "sockbuf-delay-8k",
                        "sockbuf-delay-16k",
                        "sockbuf-delay-32k",
                        "sockbuf-delay-64k",
                    ],
                    ("abrams91", false) => &["timeline", "timeline-paced"],
                    _ => &[],
                };
                assert_eq!(left_out, expected, "{name} at {place}");
                for k in &plan.skipped {
                    assert!(
                        k.reason
                            .starts_with(&format!("--topology {place} has no link profile"))
                            || (*place == "loopback"
                                && k.reason
                                    .starts_with("--topology loopback is the host's own")),
                        "{}",
                        k.reason
                    );
                    assert!(plan.experiments.iter().all(|e| e.id != k.id));
                }
            }
        }
    }

    #[test]
    fn what_loopback_cannot_run_is_left_out_with_why() {
        let plan = StudyPlan {
            study: "s".into(),
            experiments: vec![
                Experiment::bench("a", "A", "tcp-stream --offload off --topology loopback"),
                Experiment::bench("b", "B", "tcp-stream --offload off --topology veth"),
                Experiment::bench("c", "C", "udp-stream --routes 1,1000"),
                Experiment::bench("d", "D", "layer-rate --layer eth --topology loopback,veth"),
                Experiment::bench("e", "E", "tcp-stream --topology loopback"),
                Experiment::bench("f", "F", "tcp-stream --stack tcplab --routes 1,1000"),
                Experiment::bench("g", "G", "tcp-stream --stack kernel,tcplab --routes 1"),
            ],
            skipped: Vec::new(),
        }
        .without_what_loopback_cannot_run();
        let kept: Vec<&str> = plan.experiments.iter().map(|e| e.id.as_str()).collect();
        // A tcplab stack end runs in its own place: its --routes stay.
        assert_eq!(kept, ["b", "e", "f"]);
        let reasons: Vec<(&str, &str)> = plan
            .skipped
            .iter()
            .map(|k| (k.id.as_str(), k.reason.as_str()))
            .collect();
        assert_eq!(reasons.len(), 4);
        assert_eq!(
            reasons[3].0, "g",
            "a kernel level among the stacks runs on loopback"
        );
        assert!(reasons[3].1.contains("(--routes)"));
        assert!(reasons[0]
            .1
            .contains("changes a place's namespaces (--offload)"));
        assert!(
            reasons[1].1.contains("(--routes)"),
            "no --topology is loopback"
        );
        assert!(reasons[2]
            .1
            .contains("sends raw frames between two namespaces"));
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
                    if let Some(why) = too_short_by_bytes(&e) {
                        panic!("{at}: {why}");
                    }
                }
            }
        }
    }

    /// The line rates of `lab::link::profiles` (studies does not depend on
    /// lab), bit/s: the fastest a place of that name can move data.
    const PROFILE_RATES: [(&str, f64); 5] = [
        ("ether10", 10e6),
        ("lan100", 100e6),
        ("lan1g", 1e9),
        ("man", 10e6),
        ("wan", 6e6),
    ];

    /// Bytes in a `--bytes` level ("512000", "1280K", "4M"; K = 1000, the
    /// smaller reading, so the check errs on the short side).
    fn bytes_of(level: &str) -> f64 {
        let (n, mult) = match level.strip_suffix(['K', 'k']) {
            Some(n) => (n, 1e3),
            None => match level.strip_suffix(['M', 'm']) {
                Some(n) => (n, 1e6),
                None => (level, 1.0),
            },
        };
        n.parse::<f64>().unwrap_or_else(|_| panic!("bytes {level}")) * mult
    }

    /// Why a byte-bound experiment's trials (`--bytes`, no `--duration`)
    /// may last under 100 ms: a place with no rate profile (loopback, veth:
    /// nothing bounds how fast the bytes go, so such trials must be timed),
    /// or a transfer smaller than its place's line rate × 0.1 s (at most
    /// the line rate, so at least 100 ms). `None` when every trial lasts
    /// 100 ms or more.
    fn too_short_by_bytes(e: &Experiment) -> Option<String> {
        if arg(e, "--duration").is_some() {
            return None;
        }
        let bytes = arg(e, "--bytes")?;
        // A --link built on a profile (`ether10,delay=10ms`) has its rate.
        let places: Vec<&str> = match arg(e, "--link") {
            Some(l) => vec![l.split(',').next().unwrap_or(l)],
            None => arg(e, "--topology")
                .unwrap_or("loopback")
                .split(',')
                .collect(),
        };
        for place in places {
            let Some((_, rate)) = PROFILE_RATES.iter().find(|(n, _)| *n == place) else {
                return Some(format!(
                    "--bytes {bytes} on {place}, a place with no line rate: time the trials \
                     (--duration) so each lasts 100 ms"
                ));
            };
            for level in bytes.split(',') {
                if bytes_of(level) * 8.0 < rate * 0.1 {
                    return Some(format!(
                        "--bytes {level} on {place} lasts under 100 ms at its {rate} bit/s"
                    ));
                }
            }
        }
        None
    }

    #[test]
    fn a_byte_bound_trial_is_caught_where_it_can_last_under_100ms() {
        let e = |cmd: &str| Experiment::bench("x", "x", cmd);
        let caught = |cmd: &str| too_short_by_bytes(&e(cmd));
        // On veth nothing bounds the rate: 4 MB takes a few ms.
        assert!(caught("tcp-stream --bytes 4M --topology veth --repeat 5")
            .unwrap()
            .contains("a place with no line rate"));
        // 160 KB lasts 131 ms at 10 Mbit/s, 13 ms at 100.
        assert_eq!(
            caught("tcp-stream --bytes 163840 --topology ether10 --repeat 5"),
            None
        );
        assert!(caught("tcp-stream --bytes 163840 --topology ether10,lan100 --repeat 5").is_some());
        assert!(caught("tcp-stream --bytes 64K,1M --topology lan100 --repeat 5").is_some());
        assert_eq!(
            caught("tcp-stream --bytes 1280K --topology lan100 --repeat 5"),
            None
        );
        // A link on a profile has the profile's rate; a timed trial is timed.
        assert_eq!(
            caught(
                "tcp-stream --bytes 512000 --topology ether10 --link ether10,delay=10ms --repeat 5"
            ),
            None
        );
        assert_eq!(
            caught("tcp-stream --bytes 4M --duration 1s --topology veth --repeat 5"),
            None
        );
    }
}
