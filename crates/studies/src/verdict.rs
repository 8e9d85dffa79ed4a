//! The verdict that closes every study report: the bottlenecks this run
//! found, ranked, each with its evidence. Each candidate gets a score in
//! [0, 1]: the share of the time or of the CPU the mechanism accounts for,
//! at the point of the run where it is largest:
//!
//! - **window and flow control**: time TCP_INFO counts as limited by the
//!   receive window, as a share of the time data was outstanding, and the
//!   sender's blocked (idle) share from the sched probe;
//! - **the link**: a TCP point's mean throughput as a share of its emulated
//!   link's calibrated line rate ([`crate::validity::best_link_share`], the
//!   figure the study sections print; points whose mean is above the line rate
//!   are invalid and left out);
//! - **data copy**, **checksum**, **per-packet processing** (TCP, IP, device,
//!   skb memory, locks, softirq) and **the scheduler**: the side's CPU share
//!   of that layer times how busy the side's CPU was (a layer of an idle
//!   CPU limits nothing).
//!
//! A candidate is ranked only on evidence that says something about the
//! host:
//!
//! - TCP_INFO's `busy` and `rwnd_limited` times tick in 4 ms jiffies, so a
//!   point's window share counts only when the limited time summed over its
//!   trials reaches [`MIN_TICKS`] ticks; a candidate with less is listed as
//!   having too few ticks to rank.
//! - A limit the experiment set itself (a receive buffer fixed with
//!   `--rcvbuf`, `--send-rate` pacing, a `--recv-work` receiver, a shaped
//!   link, `--load` workers, a `--host-speed` quota) is not the host's: its
//!   evidence is listed apart, as imposed by the experiment, and a candidate
//!   with no other evidence is not ranked.
//!
//! A candidate the run has no evidence for is listed as not measured.

use crate::data::StudyData;
use crate::figures::place;
use crate::validity::{best_link_share, LinkShare};
use analysis::cpu::attribute;
use analysis::findings::size_words;
use analysis::path::analyse;
use record::{TestKind, ThreadRole, TrialParams, TrialRecord};
use report::{number, Section, Table, Unit};

/// One jiffy of TCP_INFO's chrono counters (`busy`, `rwnd_limited`), s.
pub const TICK_S: f64 = 0.004;

/// The fewest 4 ms ticks of limited time, summed over a point's trials,
/// that a window share needs to count (100 ms).
pub const MIN_TICKS: u32 = 25;

/// Where a candidate stands in the ranking.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// Ranked by its score.
    Ranked,
    /// Its only host evidence is TCP_INFO time of fewer than
    /// [`MIN_TICKS`] ticks (the most any point had).
    TooFewTicks {
        /// The most 4 ms ticks of limited time any point counted.
        ticks: u32,
    },
    /// Only experiments that imposed this limit on themselves show it.
    Imposed,
    /// The run holds no evidence for it.
    NotMeasured,
}

/// One candidate bottleneck with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Bottleneck {
    /// The candidate's name.
    pub name: &'static str,
    /// Its score in [0, 1] (see the module documentation) on evidence about
    /// the host; `None` unless it is ranked.
    pub score: Option<f64>,
    /// Whether it is ranked, and why not.
    pub standing: Standing,
    /// The evidence, in a sentence.
    pub evidence: String,
    /// The largest limit of this kind an experiment imposed on itself:
    /// its share and the evidence, naming what the experiment set.
    pub imposed: Option<(f64, String)>,
}

/// A short label of a point's conditions.
fn label(p: &TrialParams) -> String {
    format!(
        "{} {} writes on {}",
        p.test.name(),
        size_words(p.write_size as f64),
        place(p)
    )
}

/// Keeps the larger of two (score, evidence) candidates.
fn keep_max(best: &mut Best, score: f64, evidence: impl FnOnce() -> String) {
    if score.is_finite() && best.as_ref().is_none_or(|b| score > b.0) {
        *best = Some((score, evidence()));
    }
}

/// The id suffix of experiments built to show a pathology, which the
/// verdict leaves out.
pub const PATHOLOGICAL: &str = "-pathological";

/// The best (score, evidence) found for a candidate so far.
type Best = Option<(f64, String)>;

/// What a run shows for one candidate: its best evidence about the host,
/// its best evidence from experiments that imposed the limit, and the most
/// ticks of a TCP_INFO share too short to count.
#[derive(Debug, Default)]
struct Evidence {
    host: Best,
    imposed: Best,
    few_ticks: Option<u32>,
}

/// The link candidate's figure, which a study's section prints too: the
/// best point mean of a TCP stream over its emulated link's calibrated line
/// rate, over the run's experiments but the pathological ones; points above
/// the line rate (whatever the CI) are invalid and left out.
pub fn link_share_of_run(d: &StudyData) -> Option<LinkShare> {
    best_link_share(
        d,
        d.settings
            .experiments
            .iter()
            .filter(|e| !e.id.ends_with(PATHOLOGICAL))
            .map(|e| e.id.as_str()),
    )
}

impl Evidence {
    /// Offers a score, to the host's evidence or, when `limits` names what
    /// the experiment imposed, to the imposed evidence.
    fn offer(&mut self, limits: &[String], score: f64, evidence: impl FnOnce() -> String) {
        if limits.is_empty() {
            keep_max(&mut self.host, score, evidence);
        } else {
            keep_max(&mut self.imposed, score, || {
                format!(
                    "{} — set by the experiment: {}",
                    evidence(),
                    limits.join(", ")
                )
            });
        }
    }
}

/// A CPU-layer candidate: its name, the layers it sums, its evidence.
type LayerCandidate = (&'static str, &'static [&'static str], Evidence);

/// The limits a point's experiment set on itself that bear on the window
/// and flow control, each as the reader would name it.
fn flow_limits(p: &TrialParams, shaped_link: Option<&str>) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(b) = p.rcvbuf {
        v.push(format!(
            "a {} receive buffer (--rcvbuf)",
            size_words(b as f64)
        ));
    }
    if let Some(r) = p.send_rate_bps {
        v.push(format!(
            "the sender paced to {} (--send-rate)",
            number(r as f64, Unit::Si("bit/s"))
        ));
    }
    if let Some(ns) = p.recv_work_ns_per_kb.filter(|&ns| ns > 0) {
        v.push(format!(
            "a receiver burning {} per KB (--recv-work)",
            number(ns as f64 * 1e-9, Unit::Si("s"))
        ));
    }
    if let Some(link) = shaped_link {
        v.push(format!("a shaped link ({link})"));
    }
    v.extend(cpu_limits(p));
    v
}

/// The limits a point's experiment set on its CPUs.
fn cpu_limits(p: &TrialParams) -> Vec<String> {
    let mut v = Vec::new();
    if let Some(l) = p.load.as_ref().filter(|l| l.workers > 0) {
        v.push(format!("CPU-bound workers {l} (--load)"));
    }
    if let Some(h) = &p.host_speed {
        v.push(format!("a CPU quota {h} (--host-speed)"));
    }
    v
}

/// The shaped link a trial ran over, by its place's name; `None` off an
/// emulated link.
fn shaped_link(t: &TrialRecord, p: &TrialParams) -> Option<String> {
    let lab = &t.outcome.details["lab"];
    (!lab["place"]["link"].is_null() || p.link.is_some()).then(|| place(p))
}

/// The fewest CPU samples of a role in one trial that a CPU share is
/// taken from (the run report holds to the same floor).
pub use analysis::trial_cost::{role_samples, MIN_CPU_SAMPLES};

/// The run's candidates, ranked by score; those that cannot be ranked
/// (too few ticks, imposed, not measured) follow in that order.
pub fn verdict(d: &StudyData) -> Vec<Bottleneck> {
    let mut window = Evidence::default();
    let mut link = Evidence::default();
    let mut layers: Vec<LayerCandidate> = vec![
        ("data copy", &["copy"], Evidence::default()),
        ("checksum", &["checksum"], Evidence::default()),
        (
            "per-packet processing",
            &["tcp", "ip", "netdev", "memory", "locks", "softirq"],
            Evidence::default(),
        ),
        ("the scheduler", &["scheduler"], Evidence::default()),
    ];
    // A deliberately pathological experiment (a study's counter-example)
    // says nothing about what limits this host.
    for e in d
        .settings
        .experiments
        .iter()
        .filter(|e| !e.id.ends_with(PATHOLOGICAL))
    {
        let trials = d.trials_of(&e.id);
        for point in d.points_of(&e.id) {
            let of_point: Vec<&TrialRecord> = trials
                .iter()
                .filter(|(t, _)| t.point_id == point.point_id)
                .map(|(t, _)| *t)
                .collect();
            window_share(&mut window, &point.params, &of_point);
        }
        for (t, p) in trials {
            let m = &t.outcome.metrics;
            let get = |k: &str| m.get(k).copied();
            let link_name = shaped_link(t, p);
            let limits = flow_limits(p, link_name.as_deref());
            if let Some(ev) = d.events.get(&t.id) {
                let a = analyse(ev);
                if let Some(th) = a.threads.iter().find(|x| x.role == "sender") {
                    window.offer(&limits, th.idle_fraction, || {
                        format!(
                            "the sender was blocked {:.0}% of its transfer ({}, sched probe)",
                            th.idle_fraction * 100.0,
                            label(p)
                        )
                    });
                }
            }
            let Some(profile) = d.profiles.get(&t.id) else {
                continue;
            };
            let cpu_imposed = cpu_limits(p);
            let attr = attribute(profile);
            for (role, cpu_key, wall_key) in [
                (ThreadRole::Sender, "cpu_sender_s", "sender_wall_s"),
                (ThreadRole::Receiver, "cpu_receiver_s", "delay_s"),
            ] {
                let (Some(r), Some(cpu), Some(wall)) =
                    (attr.role(role), get(cpu_key), get(wall_key))
                else {
                    continue;
                };
                if wall <= 0.0 || role_samples(profile, role) < MIN_CPU_SAMPLES {
                    // A share from fewer samples is not stated.
                    continue;
                }
                let busy = (cpu / wall).min(1.0);
                for (_, names, ev) in layers.iter_mut() {
                    let share: f64 = r
                        .layers
                        .iter()
                        .filter(|s| names.contains(&s.name.as_str()))
                        .map(|s| s.share)
                        .sum();
                    ev.offer(&cpu_imposed, share * busy, || {
                        format!(
                            "{:.0}% of the {} CPU time, which was busy {:.0}% of the transfer ({})",
                            share * 100.0,
                            if role == ThreadRole::Sender {
                                "sender's"
                            } else {
                                "receiver's"
                            },
                            busy * 100.0,
                            label(p)
                        )
                    });
                }
            }
        }
    }
    // The link's figure is the one the study's section prints; it is never
    // the host's: the lab shaped the link.
    if let Some(l) = link_share_of_run(d) {
        let limit = format!("a shaped link ({})", place(&l.params));
        link.offer(&[limit], l.share, || l.evidence());
    }
    let mut out = vec![
        judge(
            "window and flow control",
            window,
            "no TCP_INFO window accounting or sched probe in this run",
        ),
        judge("the link", link, "no emulated link in this run"),
    ];
    for (name, _, ev) in layers {
        out.push(judge(
            name,
            ev,
            "no CPU-sampled trial (--probe cpu) with 1000 samples of a side in this run",
        ));
    }
    let order = |b: &Bottleneck| match b.standing {
        Standing::Ranked => 0,
        Standing::TooFewTicks { .. } => 1,
        Standing::Imposed => 2,
        Standing::NotMeasured => 3,
    };
    out.sort_by(|a, b| {
        order(a)
            .cmp(&order(b))
            .then_with(|| match (a.score, b.score) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                _ => std::cmp::Ordering::Equal,
            })
    });
    out
}

/// The receive-window share of one point of a tcp-stream experiment:
/// window-limited time over the time data was outstanding, both summed
/// over the point's trials, counted only with [`MIN_TICKS`] ticks of
/// limited time.
fn window_share(window: &mut Evidence, p: &TrialParams, trials: &[&TrialRecord]) {
    if p.test != TestKind::TcpStream {
        return;
    }
    let (mut limited, mut busy, mut n) = (0.0, 0.0, 0);
    let mut link_name = None;
    for t in trials {
        let m = &t.outcome.metrics;
        if let (Some(r), Some(b)) = (m.get("rwnd_limited_s"), m.get("busy_s")) {
            limited += r;
            busy += b;
            n += 1;
        }
        link_name = link_name.or_else(|| shaped_link(t, p));
    }
    if n == 0 || busy <= 0.0 {
        return;
    }
    let limits = flow_limits(p, link_name.as_deref());
    let ticks = (limited / TICK_S).round() as u32;
    if ticks < MIN_TICKS {
        if limits.is_empty() {
            window.few_ticks = Some(window.few_ticks.map_or(ticks, |t| t.max(ticks)));
        }
        return;
    }
    let f = (limited / busy).min(1.0);
    window.offer(&limits, f, || {
        format!(
            "{:.0}% of the time data was outstanding was limited by the receive window ({}, \
             TCP_INFO: {ticks} ticks of 4 ms over {n} trials)",
            f * 100.0,
            label(p)
        )
    });
}

/// A candidate's standing and evidence from what the run showed.
fn judge(name: &'static str, ev: Evidence, unmeasured: &str) -> Bottleneck {
    let imposed = ev.imposed.clone();
    let (score, standing, evidence) = match (ev.host, ev.few_ticks, &ev.imposed) {
        (Some((score, text)), _, _) => (Some(score), Standing::Ranked, text),
        (None, Some(ticks), _) => (
            None,
            Standing::TooFewTicks { ticks },
            format!(
                "too few 4 ms ticks ({ticks}) to rank: TCP_INFO counted at most {} ms of \
                 window-limited time at a point, under the {} ms ({MIN_TICKS} ticks) a share needs",
                ticks * 4,
                MIN_TICKS * 4
            ),
        ),
        (None, None, Some((_, text))) => (
            None,
            Standing::Imposed,
            format!("imposed by the experiment, not the host's bottleneck: {text}"),
        ),
        (None, None, None) => (
            None,
            Standing::NotMeasured,
            format!("not measured: {unmeasured}"),
        ),
    };
    Bottleneck {
        name,
        score,
        standing,
        evidence,
        imposed,
    }
}

/// The verdict as the report's closing section.
pub fn section(d: &StudyData) -> Section {
    let v = verdict(d);
    let mut s = Section::new("Verdict: what limits TCP/IP here");
    s.paragraph(format!(
        "Each candidate is scored by the share of the time (window, link) or of a busy CPU \
         (copy, checksum, per-packet work, scheduler) it accounts for, where in this run it \
         is largest; the evidence says where. A TCP_INFO share counts only with {MIN_TICKS} or \
         more 4 ms ticks of limited time at a point, and limits an experiment set on itself \
         (receive buffer, pacing, receiver work, shaped link, load, CPU quota) are listed \
         apart, not ranked as the host's."
    ));
    let mut t = Table::new(["rank", "bottleneck", "score", "evidence"]).key();
    for (b, r) in v.iter().zip(rank_labels(&v)) {
        t.row([
            r,
            b.name.to_string(),
            b.score.map_or("—".into(), score_text),
            b.evidence.clone(),
        ]);
    }
    s.push(t);
    let imposed: Vec<&Bottleneck> = v.iter().filter(|b| b.imposed.is_some()).collect();
    if !imposed.is_empty() {
        let mut t = Table::new(["limit", "share", "imposed by the experiment"])
            .with_caption("Limits this run's experiments set on themselves: not the host's")
            .key();
        for b in &imposed {
            if let Some((share, text)) = &b.imposed {
                t.row([
                    b.name.to_string(),
                    format!("{:.0}%", share * 100.0),
                    text.clone(),
                ]);
            }
        }
        s.push(t);
    }
    s.finding(closing_finding(&v));
    s
}

/// The least score the first ranked candidate needs to be named this
/// run's first bottleneck: a mechanism that accounts for less than a tenth
/// of the time or of a busy CPU limits little.
pub const MIN_SCORE: f64 = 0.1;

/// A score as a percentage, whole unless rounding would lift a score under
/// [`MIN_SCORE`] to it ("9.6%", not a "10%" beside "under 10%").
pub fn score_text(x: f64) -> String {
    let pct = x * 100.0;
    if x < MIN_SCORE && pct.round() >= MIN_SCORE * 100.0 {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}

/// Each candidate's rank as the verdict table prints it: 1, 2, … for
/// ranked candidates scoring [`MIN_SCORE`] or more, "under 10%" for ranked
/// ones below it (they limit too little to be ranked as a bottleneck), and
/// "—" for those not ranked.
pub fn rank_labels(v: &[Bottleneck]) -> Vec<String> {
    let mut rank = 0;
    v.iter()
        .map(|b| match b.standing {
            Standing::Ranked if b.score.unwrap_or(0.0) >= MIN_SCORE => {
                rank += 1;
                rank.to_string()
            }
            Standing::Ranked => format!("under {:.0}%", MIN_SCORE * 100.0),
            _ => "—".into(),
        })
        .collect()
}

/// The verdict's finding: the first ranked bottleneck, or why none is
/// named.
pub fn closing_finding(v: &[Bottleneck]) -> String {
    if let Some(top) = v.iter().find(|b| b.standing == Standing::Ranked) {
        let score = top.score.unwrap_or(0.0);
        return if score >= MIN_SCORE {
            format!(
                "The first bottleneck in this run is {}: {}.",
                top.name, top.evidence
            )
        } else {
            format!(
                "No candidate accounts for {:.0}% or more in this run, so none is named its \
                 bottleneck; the largest is {} at {:.0}%: {}.",
                MIN_SCORE * 100.0,
                top.name,
                score * 100.0,
                top.evidence
            )
        };
    }
    let names = |keep: &dyn Fn(&Standing) -> bool| {
        v.iter()
            .filter(|b| keep(&b.standing))
            .map(|b| b.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut why = Vec::new();
    let few: Vec<String> = v
        .iter()
        .filter_map(|b| match b.standing {
            Standing::TooFewTicks { ticks } => {
                Some(format!("{} (too few 4 ms ticks: {ticks})", b.name))
            }
            _ => None,
        })
        .collect();
    if !few.is_empty() {
        why.push(format!(
            "TCP_INFO counted too little limited time for {}",
            few.join(", ")
        ));
    }
    let imposed = names(&|s| *s == Standing::Imposed);
    if !imposed.is_empty() {
        why.push(format!("only experiments that imposed them show {imposed}"));
    }
    let unmeasured = names(&|s| *s == Standing::NotMeasured);
    if !unmeasured.is_empty() {
        why.push(format!("{unmeasured}: not measured"));
    }
    format!(
        "No candidate ranks as this host's bottleneck in this run: {}.",
        why.join("; ")
    )
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
