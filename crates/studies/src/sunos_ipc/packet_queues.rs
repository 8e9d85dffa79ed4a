//! Which packet queue was the longer over the probed trials of
//! Experiment 2, the interface queue or the IP input queue: each queue's
//! mean length per trial, as a mean ± 95% CI over the trials; one is the
//! longer only beyond both CIs, else neither, with the smallest difference
//! the trials could have detected, and one trial claims nothing.

use super::change::{compare, Change, Estimate};
use analysis::path::QueueStats;
use report::{number, Unit};

/// The paper's observation.
const PAPER: &str = "the interface queue grew and the IP input queue stayed short";

/// One queue over the trials: its per-trial mean lengths as an estimate
/// and its longest length in any of them.
fn over_trials(trials: &[&[QueueStats]], prefix: &str) -> Option<(Estimate, f64)> {
    let found: Vec<&QueueStats> = trials
        .iter()
        .filter_map(|qs| qs.iter().find(|q| q.queue.starts_with(prefix)))
        .collect();
    let means: Vec<f64> = found.iter().map(|q| q.mean).collect();
    let max = found.iter().map(|q| q.max).fold(f64::NAN, f64::max);
    Some((Estimate::from_values(&means)?, max))
}

/// The claim on the two packet queues over `trials` (each probed trial's
/// queue statistics), set against the paper; `None` unless both queues
/// were measured.
pub(super) fn packet_queues_finding(trials: &[&[QueueStats]]) -> Option<String> {
    let (dev, dev_max) = over_trials(trials, "interface queue (packets from")?;
    let (ip, ip_max) = over_trials(trials, "IP input queue")?;
    let n = dev.n.min(ip.n);
    let head = format!(
        "Counted in packets, each found on entry, over {n} probed trials: the interface queue \
         held {} on average (at most {}), the IP input queue {} (at most {})",
        dev.words(Unit::Fixed("packets")),
        number(dev_max, Unit::Plain),
        ip.words(Unit::Fixed("packets")),
        number(ip_max, Unit::Plain)
    );
    Some(match compare(&ip, &dev) {
        Change::Raised { .. } => format!(
            "{head}; the interface queue was the longer beyond the 95% CIs, as in the paper, \
             where the IP input queue stayed short."
        ),
        Change::Lowered { .. } => format!(
            "{head}; the IP input queue was the longer beyond the 95% CIs, unlike the paper, \
             where {PAPER}."
        ),
        Change::Unchanged { detectable } => format!(
            "{head}; neither was the longer within the 95% CIs (a difference smaller than {} \
             packets could not have been seen), while in the paper {PAPER}.",
            number(detectable, Unit::Plain)
        ),
        Change::TooFewTrials => format!(
            "{head}; with one probed trial there is no CI, so neither is claimed the longer (in \
             the paper {PAPER})."
        ),
    })
}
