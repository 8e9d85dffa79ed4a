//! Which socket queue held the most data and which hop was slowest at the
//! median, over every probed trial of Experiment 2: each named only beyond
//! the 95% CIs of the runner-up, else the ones within CI with the smallest
//! difference the trials could have shown; one trial claims nothing.

use analysis::findings::{largest, CurvePoint, Largest};
use analysis::path::PathAnalysis;
use analysis::stats::Summary;
use report::{measure, Unit};

/// Per trial, a value per name.
pub(super) type PerTrial = Vec<Vec<(String, f64)>>;

/// Each name's mean ± CI over the trials that measured it, in first-seen
/// order, with the fewest trials behind any of them.
fn over_trials(per_trial: &PerTrial) -> (Vec<(String, CurvePoint)>, usize) {
    let mut names: Vec<String> = Vec::new();
    for t in per_trial {
        for (n, _) in t {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let mut fewest = usize::MAX;
    let points = names
        .into_iter()
        .filter_map(|name| {
            let v: Vec<f64> = per_trial
                .iter()
                .filter_map(|t| t.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))
                .collect();
            let s = Summary::new(&v)?;
            fewest = fewest.min(v.len());
            let ci = if s.ci95.is_finite() { s.ci95 } else { 0.0 };
            Some((
                name,
                CurvePoint {
                    x: 0.0,
                    mean: s.mean,
                    ci,
                },
            ))
        })
        .collect();
    (points, if fewest == usize::MAX { 0 } else { fewest })
}

/// The claim of which of `per_trial`'s names has the largest value: `what`
/// names the kind ("socket queue", "hop"), `lead` starts a clear claim
/// ("Data waits most in the", "The slowest hop at the median is the"),
/// `fmt` writes a value with its CI (`None` for one trial).
fn leader_sentence(
    per_trial: &PerTrial,
    what: &str,
    lead: &str,
    fmt: &dyn Fn(f64, Option<f64>) -> String,
) -> Option<String> {
    let (points, n) = over_trials(per_trial);
    let named: Vec<(&str, CurvePoint)> = points.iter().map(|(s, p)| (s.as_str(), *p)).collect();
    let words = |name: &str| {
        named
            .iter()
            .find(|(s, _)| *s == name)
            .map_or("—".into(), |(_, p)| fmt(p.mean, (n > 1).then_some(p.ci)))
    };
    let l = largest(&named)?;
    if n < 2 {
        let top = match &l {
            Largest::Clear { first, .. } => *first,
            Largest::Within { tied, .. } => tied[0],
        };
        return Some(format!(
            "In the one probed trial the largest is the {top} ({}); with no CI that is no claim \
             against the other {what}s.",
            words(top)
        ));
    }
    Some(match l {
        Largest::Clear {
            first,
            second: Some(second),
        } => format!(
            "{lead} {first}: {} over {n} trials, beyond the 95% CIs of the next, the {second} ({}).",
            words(first),
            words(second)
        ),
        Largest::Clear { first, second: None } => {
            format!("{lead} {first}: {} over {n} trials.", words(first))
        }
        Largest::Within { tied, resolution } => format!(
            "No one {what} stands out: {} are within the 95% CIs of each other over {n} trials (a \
             difference smaller than {} could not have been seen).",
            tied.iter()
                .map(|t| format!("the {t} ({})", words(t)))
                .collect::<Vec<_>>()
                .join(", "),
            fmt(resolution, None)
        ),
    })
}

/// Which socket queue held the most data on average (bytes per trial).
pub(super) fn queue_wait_sentence(per_trial: &PerTrial) -> Option<String> {
    leader_sentence(
        per_trial,
        "socket queue",
        "Data waits most in the",
        &|b, ci| measure(b / 1024.0, ci.map(|c| c / 1024.0), Unit::Fixed("KB")),
    )
}

/// Which hop was slowest at the median (each trial's p50, µs).
pub(super) fn slowest_hop_sentence(per_trial: &PerTrial) -> Option<String> {
    leader_sentence(
        per_trial,
        "hop",
        "The slowest hop at the median is the",
        &|us, ci| measure(us, ci, Unit::Fixed("µs")),
    )
}

/// Per probed trial, each byte-counted queue's mean length (bytes).
pub(super) fn queue_means(trials: &[PathAnalysis]) -> PerTrial {
    trials
        .iter()
        .map(|a| {
            a.queues
                .iter()
                .filter(|q| q.queue.contains("bytes"))
                .map(|q| {
                    (
                        q.queue.split(" (").next().unwrap_or(&q.queue).to_string(),
                        q.mean,
                    )
                })
                .collect()
        })
        .collect()
}

/// Per probed trial, each measured hop's median delay (µs).
pub(super) fn hop_medians(trials: &[PathAnalysis]) -> PerTrial {
    hop_medians_where(trials, &|_| true)
}

/// Which hop took the largest share of one packet's time (per trial, each
/// hop's median over the hops' summed medians).
pub(super) fn largest_share_sentence(per_trial: &PerTrial) -> Option<String> {
    leader_sentence(
        per_trial,
        "hop",
        "The largest share of a packet's time at the median is the",
        &|share, ci| measure(share, ci, Unit::Percent),
    )
}

/// Per probed trial, each hop `keep` accepts as its median's share of the
/// kept hops' summed medians.
pub(super) fn hop_shares(trials: &[PathAnalysis], keep: impl Fn(&str) -> bool) -> PerTrial {
    hop_medians_where(trials, &keep)
        .into_iter()
        .map(|t| {
            let total: f64 = t.iter().map(|(_, v)| v).sum();
            t.into_iter()
                .filter(|_| total > 0.0)
                .map(|(h, v)| (h, v / total))
                .collect()
        })
        .collect()
}

/// [`hop_medians`] of the hops (full names) `keep` accepts.
fn hop_medians_where(trials: &[PathAnalysis], keep: &dyn Fn(&str) -> bool) -> PerTrial {
    trials
        .iter()
        .map(|a| {
            a.hops
                .iter()
                .filter(|h| h.n > 0 && keep(&h.hop))
                .map(|h| {
                    (
                        h.hop.split(':').next().unwrap_or(&h.hop).to_string(),
                        h.p50_us,
                    )
                })
                .collect()
        })
        .collect()
}
