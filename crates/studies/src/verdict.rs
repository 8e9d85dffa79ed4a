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
//!   figure the study sections print; points above the line rate beyond CI
//!   are invalid and left out);
//! - **data copy**, **checksum**, **per-packet processing** (TCP, IP, device,
//!   skb memory, locks, softirq) and **the scheduler**: the side's CPU share
//!   of that layer times how busy the side's CPU was (a layer of an idle
//!   CPU limits nothing).
//!
//! A candidate the run has no evidence for is listed as not measured.

use crate::data::StudyData;
use crate::figures::place;
use crate::validity::{best_link_share, LinkShare};
use analysis::cpu::attribute;
use analysis::findings::size_words;
use analysis::path::analyse;
use record::{TestKind, ThreadRole, TrialParams};
use report::{Section, Table};

/// One candidate bottleneck with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Bottleneck {
    /// The candidate's name.
    pub name: &'static str,
    /// Its score in [0, 1] (see the module documentation); `None` when the
    /// run holds no evidence for it.
    pub score: Option<f64>,
    /// The evidence, in a sentence.
    pub evidence: String,
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

/// A CPU-layer candidate: its name, the layers it sums, its best evidence.
type LayerCandidate = (&'static str, &'static [&'static str], Best);

/// The link candidate's figure, which a study's section prints too: the
/// best point mean of a TCP stream over its emulated link's calibrated line
/// rate, over the run's experiments but the pathological ones; points above
/// the line rate beyond CI are invalid and left out.
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

/// The run's candidates, ranked by score (unmeasured ones last).
pub fn verdict(d: &StudyData) -> Vec<Bottleneck> {
    let mut window: Best = None;
    let mut layers: Vec<LayerCandidate> = vec![
        ("data copy", &["copy"], None),
        ("checksum", &["checksum"], None),
        (
            "per-packet processing",
            &["tcp", "ip", "netdev", "memory", "locks", "softirq"],
            None,
        ),
        ("the scheduler", &["scheduler"], None),
    ];
    // A deliberately pathological experiment (a study's counter-example)
    // says nothing about what limits this host.
    for e in d
        .settings
        .experiments
        .iter()
        .filter(|e| !e.id.ends_with(PATHOLOGICAL))
    {
        for (t, p) in d.trials_of(&e.id) {
            let m = &t.outcome.metrics;
            let get = |k: &str| m.get(k).copied();
            if p.test == TestKind::TcpStream {
                if let (Some(r), Some(b)) = (get("rwnd_limited_s"), get("busy_s")) {
                    if b > 0.0 {
                        let f = (r / b).min(1.0);
                        keep_max(&mut window, f, || {
                            format!(
                                "{:.0}% of the time data was outstanding was limited by the receive window ({}{}, TCP_INFO)",
                                f * 100.0,
                                label(p),
                                p.rcvbuf
                                    .map(|b| format!(", {} receive buffer", size_words(b as f64)))
                                    .unwrap_or_default()
                            )
                        });
                    }
                }
            }
            if let Some(ev) = d.events.get(&t.id) {
                let a = analyse(ev);
                if let Some(th) = a.threads.iter().find(|x| x.role == "sender") {
                    keep_max(&mut window, th.idle_fraction, || {
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
                if wall <= 0.0 {
                    continue;
                }
                let busy = (cpu / wall).min(1.0);
                for (_, names, best) in layers.iter_mut() {
                    let share: f64 = r
                        .layers
                        .iter()
                        .filter(|s| names.contains(&s.name.as_str()))
                        .map(|s| s.share)
                        .sum();
                    keep_max(best, share * busy, || {
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
    let link: Best = link_share_of_run(d).map(|l| (l.share, l.evidence()));
    let mut out = vec![
        Bottleneck {
            name: "window and flow control",
            score: window.as_ref().map(|w| w.0),
            evidence: window.map_or(
                "not measured: no TCP_INFO window accounting or sched probe in this run".into(),
                |w| w.1,
            ),
        },
        Bottleneck {
            name: "the link",
            score: link.as_ref().map(|w| w.0),
            evidence: link.map_or("not measured: no emulated link in this run".into(), |w| w.1),
        },
    ];
    for (name, _, best) in layers {
        out.push(Bottleneck {
            name,
            score: best.as_ref().map(|b| b.0),
            evidence: best.map_or(
                "not measured: no CPU-sampled trial (--probe cpu) in this run".into(),
                |b| b.1,
            ),
        });
    }
    out.sort_by(|a, b| match (a.score, b.score) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    out
}

/// The verdict as the report's closing section.
pub fn section(d: &StudyData) -> Section {
    let v = verdict(d);
    let mut s = Section::new("Verdict: what limits TCP/IP here");
    s.paragraph(
        "Each candidate is scored by the share of the time (window, link) or of a busy CPU \
         (copy, checksum, per-packet work, scheduler) it accounts for, where in this run it \
         is largest; the evidence says where.",
    );
    let mut t = Table::new(["rank", "bottleneck", "score", "evidence"]).key();
    let mut rank = 0;
    for b in &v {
        let r = match b.score {
            Some(_) => {
                rank += 1;
                rank.to_string()
            }
            None => "—".into(),
        };
        t.row([
            r,
            b.name.to_string(),
            b.score.map_or("—".into(), |x| format!("{:.0}%", x * 100.0)),
            b.evidence.clone(),
        ]);
    }
    s.push(t);
    if let Some(top) = v.first().filter(|b| b.score.is_some()) {
        s.finding(format!(
            "The first bottleneck in this run is {}: {}.",
            top.name, top.evidence
        ));
    }
    s
}
