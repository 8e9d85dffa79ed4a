//! The verdict's closing finding: which candidate is this run's first
//! bottleneck, claimed only when its score is above the runner-up's beyond
//! both 95% CIs, or why none is named.

use super::{pct, Bottleneck, Standing, MIN_SCORE};
use crate::sunos_ipc::change::{compare, Change, Estimate};
use report::{number, Unit};

/// A ranked candidate's score as an estimate (its mean, CI and trials).
fn score_of(b: &Bottleneck) -> Estimate {
    Estimate {
        mean: b.score.unwrap_or(0.0),
        ci: b.ci,
        n: b.trials,
    }
}

/// Whether the first ranked candidate's score is above the second's
/// beyond both 95% CIs.
pub(super) fn apart(top: &Bottleneck, next: &Bottleneck) -> bool {
    matches!(
        compare(&score_of(next), &score_of(top)),
        Change::Raised { .. }
    )
}

/// The claim on the first two ranked candidates: the first is the
/// bottleneck only beyond the CIs of both scores; else the two are not
/// told apart, with the smallest difference the trials could have
/// detected, and a side of one trial claims nothing.
fn top_two(top: &Bottleneck, next: Option<&Bottleneck>) -> String {
    let Some(next) = next else {
        return format!(
            "The first bottleneck in this run is {}, the only candidate ranked: {}.",
            top.name, top.evidence
        );
    };
    let (a, b) = (score_of(top), score_of(next));
    let both = format!(
        "{} scores {} against {}'s {}",
        top.name,
        pct(&a),
        next.name,
        pct(&b)
    );
    match compare(&b, &a) {
        Change::Raised { .. } => format!(
            "The first bottleneck in this run is {}: {}. Its score is above the runner-up's \
             beyond both 95% CIs ({both}).",
            top.name, top.evidence
        ),
        Change::Unchanged { detectable } => format!(
            "The top two candidates are not distinguishable in this run, so neither is named \
             the first bottleneck: {both}, within their 95% CIs; a difference smaller than {} \
             could not have been seen. {}: {}; {}: {}.",
            number(detectable, Unit::Percent),
            top.name,
            top.evidence,
            next.name,
            next.evidence
        ),
        Change::Lowered { .. } | Change::TooFewTrials => format!(
            "The top two candidates are not told apart in this run, so neither is named the \
             first bottleneck: {both}, and a score from one trial has no CI to judge a \
             difference by. {}: {}; {}: {}.",
            top.name, top.evidence, next.name, next.evidence
        ),
    }
}

/// The verdict's finding: the first ranked bottleneck when its score is
/// above the runner-up's beyond the CIs, the top two as indistinguishable
/// when it is not, or why none is named.
pub fn closing_finding(v: &[Bottleneck]) -> String {
    let mut ranked = v.iter().filter(|b| b.standing == Standing::Ranked);
    if let Some(top) = ranked.next() {
        let score = top.score.unwrap_or(0.0);
        return if score >= MIN_SCORE {
            top_two(top, ranked.next())
        } else if score <= 0.0 {
            // Nothing measured above zero: no candidate is "the largest".
            let zeros: Vec<&str> = std::iter::once(top.name)
                .chain(ranked.map(|b| b.name))
                .collect();
            format!(
                "No candidate accounts for {:.0}% or more in this run, so none is named its \
                 bottleneck; every candidate ranked measured 0 ({}). {}: {}.",
                MIN_SCORE * 100.0,
                zeros.join(", "),
                top.name,
                top.evidence
            )
        } else {
            format!(
                "No candidate accounts for {:.0}% or more in this run, so none is named its \
                 bottleneck; the largest is {} at {}: {}.",
                MIN_SCORE * 100.0,
                top.name,
                pct(&score_of(top)),
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
