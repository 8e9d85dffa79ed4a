//! The verdict that closes every study report: the bottlenecks this run
//! found, ranked, each with its evidence. Each candidate gets a score in
//! [0, 1]: the share of the time or of the CPU the mechanism accounts for,
//! as a mean with its 95% CI over the trials of one point, at the point of
//! the run whose mean is largest:
//!
//! - **the receive window**: time TCP_INFO counts as limited by the
//!   receive window (`rwnd_limited`), as a share of the time data was
//!   outstanding (`busy`);
//! - **a blocked sender**: the share of the transfer the sender's thread
//!   was blocked, from the sched probe. Blocked is not window-limited
//!   (issue 30, rule 7): a sender waits as long on a slow link or a slow
//!   receiver as on a closed window, so the two are separate candidates;
//! - **the link**: a TCP point's mean throughput as a share of its emulated
//!   link's line rate ([`crate::validity::best_link_share`], the
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
//!
//! The first candidate is named the run's first bottleneck only when its
//! score is above the runner-up's beyond both 95% CIs
//! ([`closing_finding`]); else the top two are said to be indistinguishable,
//! with the smallest difference the trials could have detected.

mod closing;
pub use closing::closing_finding;

use crate::data::StudyData;
use crate::figures::place;
use crate::sunos_ipc::change::Estimate;
use crate::validity::{best_link_share, LinkShare};
use analysis::cpu::attribute;
use analysis::findings::size_words;
use analysis::path::analyse;
use record::{CpuProfile, TestKind, ThreadRole, TrialParams, TrialRecord};
use report::{measure, number, Section, Table, Unit};

/// The candidate TCP_INFO's receive-window-limited time scores.
pub const RECEIVE_WINDOW: &str = "the receive window";

/// The candidate the sched probe's blocked time scores.
pub const BLOCKED_SENDER: &str = "a blocked sender";

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
    /// the host: the mean over its point's trials; `None` unless it is
    /// ranked.
    pub score: Option<f64>,
    /// The 95% CI half-width of the score (NaN from one trial or when not
    /// ranked).
    pub ci: f64,
    /// The trials behind the score (0 when not ranked).
    pub trials: u32,
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

/// Keeps the candidate point whose mean score is the larger.
fn keep_max(best: &mut Best, score: Estimate, evidence: impl FnOnce() -> String) {
    if score.mean.is_finite() && best.as_ref().is_none_or(|b| score.mean > b.0.mean) {
        *best = Some((score, evidence()));
    }
}

/// A percentage with its CI by the one number rule ("60.0 ± 1.2 %"), or
/// "60.0 % (one trial)".
fn pct(e: &Estimate) -> String {
    e.words(Unit::Percent)
}

/// "1 trial", "3 trials".
fn trial_count(n: u32) -> String {
    if n == 1 {
        "1 trial".into()
    } else {
        format!("{n} trials")
    }
}

/// The estimate of a point's per-trial values, its CI NaN from one trial.
fn estimate(values: &[f64]) -> Option<Estimate> {
    Estimate::from_values(values)
}

/// The id suffix of experiments built to show a pathology, which the
/// verdict leaves out.
pub const PATHOLOGICAL: &str = "-pathological";

/// The best (score over a point's trials, evidence) found for a candidate
/// so far.
type Best = Option<(Estimate, String)>;

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
    fn offer(&mut self, limits: &[String], score: Estimate, evidence: impl FnOnce() -> String) {
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
    let mut blocked = Evidence::default();
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
        // CPU shares come from sampled trials: their evidence names what
        // the sampling cost (issue 30, rule 1).
        let effect = d.probe_effect(&e.id);
        for point in d.points_of(&e.id) {
            let of_point: Vec<&TrialRecord> = trials
                .iter()
                .filter(|(t, _)| t.point_id == point.point_id)
                .map(|(t, _)| *t)
                .collect();
            let p = &point.params;
            if on_tcplab_stack(p) {
                continue;
            }
            window_share(&mut window, p, &of_point);
            let link_name = of_point.iter().find_map(|t| shaped_link(t, p));
            blocked_share(
                &mut blocked,
                d,
                p,
                &of_point,
                &flow_limits(p, link_name.as_deref()),
            );
            cpu_shares(&mut layers, d, p, &of_point, effect.as_ref());
        }
    }
    // The link's figure is the one the study's section prints; it is never
    // the host's: the lab shaped the link.
    if let Some(l) = link_share_of_run(d) {
        let limit = format!("a shaped link ({})", place(&l.params));
        let share = Estimate {
            mean: l.share,
            ci: if l.trials >= 2 { l.share_ci } else { f64::NAN },
            n: l.trials,
        };
        link.offer(&[limit], share, || l.evidence());
    }
    let mut out = vec![
        judge(
            RECEIVE_WINDOW,
            window,
            "no TCP_INFO window accounting in this run",
        ),
        judge(BLOCKED_SENDER, blocked, "no sched probe in this run"),
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

/// Whether either end of a point is tcplab's own stack. The verdict is
/// about this host's TCP/IP (Linux's): a stack end's accounted blocks (its
/// TUN system calls, its poll wait) and its own windows describe the
/// instrument, not the host, so its points are left out of every
/// candidate (the studies report them in their own sections).
fn on_tcplab_stack(p: &TrialParams) -> bool {
    p.stack.is_tcplab() || p.server_stack.is_tcplab()
}

/// The sender's blocked (idle) share of one point from the sched probe,
/// over the point's probed trials.
fn blocked_share(
    blocked: &mut Evidence,
    d: &StudyData,
    p: &TrialParams,
    trials: &[&TrialRecord],
    limits: &[String],
) {
    // Only a trial the sched probe watched says how long its sender was
    // blocked: without its switch events every thread reads 0 blocked.
    let idle: Vec<f64> = trials
        .iter()
        .filter(|t| sched_probed(t))
        .filter_map(|t| d.events.get(&t.id))
        .filter_map(|ev| {
            let a = analyse(ev);
            a.threads
                .iter()
                .find(|x| x.role == "sender")
                .map(|th| th.idle_fraction)
        })
        .collect();
    let Some(e) = estimate(&idle) else {
        return;
    };
    blocked.offer(limits, e, || {
        format!(
            "the sender was blocked {} of its transfer ({}, sched probe, {}; blocked, not \
             window-limited: the wait may be for the link, the receiver or the window)",
            pct(&e),
            label(p),
            trial_count(e.n)
        )
    });
}

/// Whether a trial ran with the sched probe group (`--probe …,sched`).
fn sched_probed(t: &TrialRecord) -> bool {
    t.outcome.details["probe"]["groups"]
        .as_array()
        .is_some_and(|g| g.iter().any(|x| x == "sched"))
}

/// Each CPU layer's score at one point, per side: the layer's share of the
/// side's CPU samples times how busy the side's CPU was, over the point's
/// trials with [`MIN_CPU_SAMPLES`] samples of that side.
fn cpu_shares(
    layers: &mut [LayerCandidate],
    d: &StudyData,
    p: &TrialParams,
    trials: &[&TrialRecord],
    effect: Option<&crate::probe_effect::ProbeEffect>,
) {
    let cost = match effect {
        Some(e) => format!("; {}", e.words()),
        None => "; no unprobed twin measured what the sampling cost".to_string(),
    };
    let imposed = cpu_limits(p);
    for (role, cpu_key, wall_key) in [
        (ThreadRole::Sender, "cpu_sender_s", "sender_wall_s"),
        (ThreadRole::Receiver, "cpu_receiver_s", "delay_s"),
    ] {
        // Per trial: each layer's share and the side's busy fraction.
        let mut per_trial: Vec<(Vec<f64>, f64)> = Vec::new();
        for t in trials {
            let Some(profile) = d.profiles.get(&t.id) else {
                continue;
            };
            if let Some(x) = layer_shares(profile, role, t, cpu_key, wall_key, layers) {
                per_trial.push(x);
            }
        }
        if per_trial.is_empty() {
            continue;
        }
        let side = if role == ThreadRole::Sender {
            "sender's"
        } else {
            "receiver's"
        };
        let busy: Vec<f64> = per_trial.iter().map(|(_, b)| *b).collect();
        for (i, (_, _, ev)) in layers.iter_mut().enumerate() {
            let shares: Vec<f64> = per_trial.iter().map(|(s, _)| s[i]).collect();
            let scores: Vec<f64> = per_trial.iter().map(|(s, b)| s[i] * b).collect();
            let (Some(score), Some(share), Some(busy)) =
                (estimate(&scores), estimate(&shares), estimate(&busy))
            else {
                continue;
            };
            ev.offer(&imposed, score, || {
                format!(
                    "{} of the {side} CPU time, which was busy {} of the transfer ({}, {} \
                     of {MIN_CPU_SAMPLES} or more samples{cost})",
                    pct(&share),
                    pct(&busy),
                    label(p),
                    trial_count(score.n)
                )
            });
        }
    }
}

/// One trial's share of each layer candidate in a side's CPU samples and
/// how busy that side was; `None` without the side's CPU time, or with
/// fewer than [`MIN_CPU_SAMPLES`] samples of it (a share from fewer is not
/// stated).
fn layer_shares(
    profile: &CpuProfile,
    role: ThreadRole,
    t: &TrialRecord,
    cpu_key: &str,
    wall_key: &str,
    layers: &[LayerCandidate],
) -> Option<(Vec<f64>, f64)> {
    let m = &t.outcome.metrics;
    let (cpu, wall) = (*m.get(cpu_key)?, *m.get(wall_key)?);
    if wall <= 0.0 || role_samples(profile, role) < MIN_CPU_SAMPLES {
        return None;
    }
    let attr = attribute(profile);
    let r = attr.role(role)?;
    let shares = layers
        .iter()
        .map(|(_, names, _)| {
            r.layers
                .iter()
                .filter(|s| names.contains(&s.name.as_str()))
                .map(|s| s.share)
                .sum()
        })
        .collect();
    Some((shares, (cpu / wall).min(1.0)))
}

/// The receive-window share of one point of a tcp-stream experiment:
/// window-limited time over the time data was outstanding in each trial,
/// as a mean with its CI over the point's trials, counted only with
/// [`MIN_TICKS`] ticks of limited time summed over them.
fn window_share(window: &mut Evidence, p: &TrialParams, trials: &[&TrialRecord]) {
    if p.test != TestKind::TcpStream {
        return;
    }
    let (mut limited, mut shares) = (0.0, Vec::new());
    let mut link_name = None;
    for t in trials {
        let m = &t.outcome.metrics;
        if let (Some(r), Some(b)) = (m.get("rwnd_limited_s"), m.get("busy_s")) {
            limited += r;
            if *b > 0.0 {
                shares.push((r / b).min(1.0));
            }
        }
        link_name = link_name.or_else(|| shaped_link(t, p));
    }
    let Some(f) = estimate(&shares) else {
        return;
    };
    let limits = flow_limits(p, link_name.as_deref());
    let ticks = (limited / TICK_S).round() as u32;
    if ticks < MIN_TICKS {
        if limits.is_empty() {
            window.few_ticks = Some(window.few_ticks.map_or(ticks, |t| t.max(ticks)));
        }
        return;
    }
    window.offer(&limits, f, || {
        format!(
            "{} of the time data was outstanding was limited by the receive window ({}, \
             TCP_INFO: {ticks} ticks of 4 ms over {})",
            pct(&f),
            label(p),
            trial_count(f.n)
        )
    });
}

/// A candidate's standing and evidence from what the run showed.
fn judge(name: &'static str, ev: Evidence, unmeasured: &str) -> Bottleneck {
    let imposed = ev.imposed.clone();
    let est = ev.host.as_ref().map(|(e, _)| *e);
    let (score, standing, evidence) = match (ev.host, ev.few_ticks, &ev.imposed) {
        (Some((score, text)), _, _) => (Some(score.mean), Standing::Ranked, text),
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
        ci: est.map_or(f64::NAN, |e| e.ci),
        trials: est.map_or(0, |e| e.n),
        standing,
        evidence,
        imposed: imposed.map(|(e, text)| (e.mean, text)),
    }
}

/// The verdict as the report's closing section.
pub fn section(d: &StudyData) -> Section {
    let v = verdict(d);
    let mut s = Section::new("Verdict: what limits TCP/IP here");
    s.paragraph(format!(
        "Each candidate is scored by the share of the time (window, link) or of a busy CPU \
         (copy, checksum, per-packet work, scheduler) it accounts for, as a mean with its 95% \
         CI over the trials of the point where in this run it is largest; the evidence says \
         where. The first is named the bottleneck only above the runner-up beyond both CIs. \
         A TCP_INFO share counts only with {MIN_TICKS} or more 4 ms ticks of limited time at a point, and limits an experiment set on itself \
         (receive buffer, pacing, receiver work, shaped link, load, CPU quota) are listed \
         apart, not ranked as the host's. Trials with tcplab's own stack at either end are \
         left out: they measure the stack, not this host's TCP/IP."
    ));
    let mut t = Table::new(["rank", "bottleneck", "score", "evidence"]).key();
    for (b, r) in v.iter().zip(rank_labels(&v)) {
        t.row([
            r,
            b.name.to_string(),
            b.score.map_or("—".into(), |x| score_text(x, b.ci)),
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
                    number(*share, Unit::Percent),
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

/// A score as a percentage with its CI by the one number rule
/// ("73.1 ± 2.0 %"); a score under [`MIN_SCORE`] that would round up to it
/// is cut to two decimals ("9.99 %"), never printed as the floor beside
/// "under 10%".
pub fn score_text(mean: f64, ci: f64) -> String {
    let ci = ci.is_finite().then_some(ci);
    let text = measure(mean, ci, Unit::Percent);
    let shown: f64 = text
        .split(' ')
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    if mean < MIN_SCORE && shown >= MIN_SCORE * 100.0 {
        format!("{:.2} %", (mean * 1e4).floor() / 100.0)
    } else {
        text
    }
}

/// Each candidate's rank as the verdict table prints it: 1, 2, … for
/// ranked candidates scoring [`MIN_SCORE`] or more ("1=" for both of the
/// top two when their scores are not apart beyond the CIs, as the closing
/// finding says), "under 10%" for ranked ones below it (they limit too
/// little to be ranked as a bottleneck), and "—" for those not ranked.
pub fn rank_labels(v: &[Bottleneck]) -> Vec<String> {
    let mut ranked = v.iter().filter(|b| b.standing == Standing::Ranked);
    let tied = match (ranked.next(), ranked.next()) {
        (Some(a), Some(b)) => !closing::apart(a, b),
        _ => false,
    };
    let mut rank = 0;
    v.iter()
        .map(|b| match b.standing {
            Standing::Ranked if b.score.unwrap_or(0.0) >= MIN_SCORE => {
                rank += 1;
                if tied && rank <= 2 {
                    "1=".into()
                } else {
                    rank.to_string()
                }
            }
            Standing::Ranked => format!("under {:.0}%", MIN_SCORE * 100.0),
            _ => "—".into(),
        })
        .collect()
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
