//! The findings of Markatos across hosts, each a claim on the hosts'
//! measurements with their 95% CIs: whether mileage (MB per sender
//! CPU-second per unit of CPU score) falls or rises with CPU speed, and
//! whether one model constant C serves every host, each host's C computed
//! from its own measured values (nothing fitted to the points judged).

use super::prediction::{Constant, SpeedCheck};
use crate::sunos_ipc::change::{compare, Change, Estimate};
use report::{number, Unit};

/// One host's mileage evidence: its name, CPU score and loopback MB
/// (10⁶ B) per sender CPU-second at full speed over its trials.
pub(super) struct HostMileage<'a> {
    /// The host's name.
    pub name: &'a str,
    /// Calibrate's CPU score.
    pub score: f64,
    /// MB per sender CPU-second: mean ± 95% CI over trials.
    pub mb_per_cpu: Estimate,
}

/// The mileage trend from the slowest host to the fastest: mileage falls
/// or rises only beyond both 95% CIs, else it holds within them, with the
/// smallest change the trials could have seen; a host of one trial gives
/// no trend.
pub(super) fn mileage_sentence(slow: &HostMileage, fast: &HostMileage) -> String {
    let (ms, mf) = (
        slow.mb_per_cpu.scaled(1.0 / slow.score),
        fast.mb_per_cpu.scaled(1.0 / fast.score),
    );
    let per_cpu = |e: &Estimate| e.scaled(1e6).words(Unit::Si("B/CPU-s"));
    let mileage = |e: &Estimate| e.words(Unit::Fixed("MB per score-second"));
    let trend = match compare(&ms, &mf) {
        Change::Lowered { .. } => {
            "mileage falls with CPU speed beyond the 95% CIs, as the paper found".to_string()
        }
        Change::Raised { .. } => {
            "mileage rises with CPU speed beyond the 95% CIs, unlike the paper".to_string()
        }
        Change::Unchanged { detectable } => format!(
            "mileage holds within the 95% CIs, data moved per CPU-second keeping pace with the \
             CPU score (a change smaller than {} MB per score-second could not have been seen)",
            number(detectable, Unit::Plain)
        ),
        Change::TooFewTrials => {
            "with one trial on a host there is no CI, so no trend in mileage is claimed".into()
        }
    };
    format!(
        "The fastest host, {} (score {}), moves {} (bytes per sender CPU-second), {}× the \
         slowest, {} \
         (score {}, {}), for a {}× higher CPU score; their mileages are {} and {}: {trend}.",
        fast.name,
        number(fast.score, Unit::Plain),
        per_cpu(&fast.mb_per_cpu),
        number(fast.mb_per_cpu.mean / slow.mb_per_cpu.mean, Unit::Plain),
        slow.name,
        number(slow.score, Unit::Plain),
        per_cpu(&slow.mb_per_cpu),
        number(fast.score / slow.score, Unit::Plain),
        mileage(&mf),
        mileage(&ms)
    )
}

/// One host's prediction: its name, its C with the range its MB per
/// CPU-second CI allows, the trials behind that, and the checks at its
/// CPU shares.
pub(super) struct HostPrediction<'a> {
    /// The host's name.
    pub name: &'a str,
    /// C and its range.
    pub k: Constant,
    /// Trials behind the MB per CPU-second C comes from.
    pub trials: u32,
    /// The prediction against the measurement at each CPU share.
    pub checks: Vec<SpeedCheck>,
}

/// C in its units, CPU score × seconds per byte ("2.00 µs × score per
/// byte").
fn c_words(c: f64) -> String {
    format!("{} × score per byte", number(c, Unit::Si("s")))
}

/// The scaling findings: what the model is (predicted per host, nothing
/// fitted), how each host's prediction stands against its measurements,
/// and whether one C lies within every host's range (the paper's one model
/// for a family) or the hosts' Cs differ beyond their CIs.
pub(super) fn scaling_sentences(hosts: &[HostPrediction]) -> Vec<String> {
    let each: Vec<String> = hosts
        .iter()
        .map(|h| {
            let hits = h.checks.iter().filter(|x| x.within()).count();
            format!(
                "{}: C = {}, {hits} of {} CPU shares predicted within the measurement's 95% CI",
                h.name,
                c_words(h.k.c),
                h.checks.len()
            )
        })
        .collect();
    let mut out = vec![format!(
        "Markatos' model predicted for each host from its own measurements, not fitted to the \
         points shown: C from the host's full-speed MB per sender CPU-second, memory bandwidth \
         and CPU score, then throughput = 1 / (1/mem_bw + C/(score × CPU share)). {}.",
        each.join("; ")
    )];
    if let Some(one) = hosts.iter().find(|h| h.trials < 2) {
        out.push(format!(
            "{} has one trial behind its C, so there is no CI to say whether one C serves every \
             host.",
            one.name
        ));
        return out;
    }
    let lo = hosts.iter().map(|h| h.k.c_low).fold(f64::MIN, f64::max);
    let hi = hosts.iter().map(|h| h.k.c_high).fold(f64::MAX, f64::min);
    out.push(if lo <= hi {
        format!(
            "One C, between {} and {}, lies within every host's range (from its MB per \
             CPU-second's 95% CI): the hosts differ as their CPU scores and memory bandwidths \
             say, as one model served each of the paper's processor families.",
            c_words(lo),
            c_words(hi)
        )
    } else {
        format!(
            "The hosts' Cs differ beyond the ranges their MB per CPU-second CIs allow (no C lies \
             within all of them: the largest low end is {}, the smallest high end {}): the \
             hosts differ in more than CPU score and memory bandwidth (kernel, compiler or \
             memory path), unlike one model for a family in the paper.",
            c_words(lo),
            c_words(hi)
        )
    });
    out
}
