//! Abrams & Chen §3.3, Fig. 5: the sender's timeline, and where its time
//! went. TCP_INFO's chrono counters split a connection's time into data
//! outstanding while the receive window was full (`rwnd_limited`), while
//! the send buffer was full (`sndbuf_limited`), data outstanding otherwise
//! (the link or the congestion window set the pace), and no data
//! outstanding at all (the sending application had nothing to send: the
//! sender was the bottleneck). The counters tick in 4 ms jiffies: each
//! share states its ticks, and a share under [`MIN_TICKS`] ticks is not
//! given. The sched probe gives the sending thread's blocked time.

use super::paper::{FILE_KB, IDLE_PCT, RECEIVE_BUFFER_KB, WRITE_KB};
use crate::data::StudyData;
use crate::verdict::{MIN_TICKS, TICK_S};
use analysis::findings::{largest, size_words, CurvePoint, Largest};
use analysis::path::analyse;
use analysis::{summarize, Summary};
use record::TrialRecord;
use report::{measure, number, Figure, Point, Section, Series, SeriesStyle, Table, Unit};

const CITE: &str = "Abrams & Chen 1991";

/// The causes a sender's time splits into, in the order the report gives
/// them.
pub(crate) const CAUSES: [&str; 4] = [
    "the receive window (rwnd_limited)",
    "the send buffer (sndbuf_limited)",
    "the link or congestion window (data in flight, neither limit)",
    "the sending application (nothing to send)",
];

/// One cause's share of the transfer time over a point's trials.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CauseShare {
    /// Which of [`CAUSES`].
    pub cause: &'static str,
    /// Share of each trial's transfer time, summarized over trials.
    pub share: Summary,
    /// 4 ms ticks behind the share, summed over the trials.
    pub ticks: f64,
}

/// The causes of one trial's time, s: (rwnd-limited, sndbuf-limited,
/// busy otherwise, not busy), from TCP_INFO's counters and the transfer's
/// first-to-last time. `None` without the counters.
fn trial_causes(t: &TrialRecord) -> Option<([f64; 4], f64)> {
    let m = &t.outcome.metrics;
    let delay = *m.get("delay_s")?;
    let busy = *m.get("busy_s")?;
    let rwnd = m.get("rwnd_limited_s").copied().unwrap_or(0.0);
    let sndbuf = m.get("sndbuf_limited_s").copied().unwrap_or(0.0);
    (delay > 0.0).then(|| {
        let busy = busy.min(delay);
        (
            [
                rwnd,
                sndbuf,
                (busy - rwnd - sndbuf).max(0.0),
                (delay - busy).max(0.0),
            ],
            delay,
        )
    })
}

/// Each cause's share of the transfer time over the trials of experiment
/// `id`, with the ticks behind it; empty without TCP_INFO's counters.
pub(crate) fn cause_shares(trials: &[&TrialRecord]) -> Vec<CauseShare> {
    let per_trial: Vec<([f64; 4], f64)> = trials.iter().filter_map(|t| trial_causes(t)).collect();
    if per_trial.is_empty() {
        return Vec::new();
    }
    CAUSES
        .iter()
        .enumerate()
        .filter_map(|(i, cause)| {
            let shares: Vec<f64> = per_trial.iter().map(|(c, d)| c[i] / d).collect();
            let ticks = per_trial.iter().map(|(c, _)| c[i] / TICK_S).sum::<f64>();
            summarize(&shares).map(|share| CauseShare {
                cause,
                share,
                ticks: ticks.round(),
            })
        })
        .collect()
}

/// A cause's share in words: "66 ± 3% (820 ticks)", or "under 25 ticks
/// (3 ticks), too few for a share".
fn share_words(c: &CauseShare) -> String {
    if c.ticks >= f64::from(MIN_TICKS) {
        format!(
            "{} ({:.0} ticks)",
            measure(c.share.mean, Some(c.share.ci95), Unit::Percent),
            c.ticks
        )
    } else {
        format!(
            "{:.0} ticks, fewer than the {MIN_TICKS} a share needs",
            c.ticks
        )
    }
}

/// Which cause (of those with enough ticks) has the largest share: named
/// only beyond the 95% CI of the next, else the causes within CI with the
/// smallest difference that could have been seen; from one trial, no
/// claim. A sentence that starts with a space, to follow the split.
fn largest_cause(causes: &[CauseShare]) -> String {
    let counted: Vec<(&str, CurvePoint)> = causes
        .iter()
        .filter(|c| c.ticks >= f64::from(MIN_TICKS))
        .map(|c| {
            let ci = if c.share.ci95.is_finite() {
                c.share.ci95
            } else {
                0.0
            };
            (
                c.cause,
                CurvePoint {
                    x: 0.0,
                    mean: c.share.mean,
                    ci,
                },
            )
        })
        .collect();
    let one_trial = causes.iter().any(|c| c.share.n < 2);
    match largest(&counted) {
        None => " No cause has enough ticks for a share.".into(),
        Some(l) if one_trial => {
            let top = match l {
                Largest::Clear { first, .. } => first,
                Largest::Within { tied, .. } => tied[0],
            };
            format!(
                " The largest share, {top}, comes from one trial: with no CI it is no claim \
                 against the other causes."
            )
        }
        Some(Largest::Clear { first, second }) => match second {
            Some(next) => {
                format!(" The largest share is {first}, beyond the 95% CIs of the next, {next}.")
            }
            None => format!(" The only share with enough ticks is {first}."),
        },
        Some(Largest::Within { tied, resolution }) => format!(
            " No one cause has the largest share: {} are within the 95% CIs of each other (a \
             difference smaller than {} could not have been seen).",
            tied.join(" and "),
            measure(resolution, None, Unit::Percent)
        ),
    }
}

/// The finding of one timeline experiment: where the transfer's time went,
/// by cause (each with its ticks), the cause with the largest share among
/// those with enough ticks, the sending thread's blocked share (sched
/// probe) and, for a paced sender, whether its pace set the rate
/// (`throughput` and `send_rate`, bit/s, mean and CI).
pub(crate) fn idle_sentence(
    what: &str,
    causes: &[CauseShare],
    blocked: Option<&Summary>,
    throughput: Option<&Summary>,
    send_rate_bps: Option<f64>,
) -> String {
    let split = causes
        .iter()
        .map(|c| format!("{} {}", c.cause, share_words(c)))
        .collect::<Vec<_>>()
        .join(", ");
    let n = causes.first().map_or(0, |c| c.share.n);
    let mut out = format!(
        "{what}: TCP_INFO splits the transfer time ({n} trials, 4 ms ticks summed over them) into {split}."
    );
    out.push_str(&largest_cause(causes));
    if let Some(b) = blocked {
        out.push_str(&format!(
            " The sending thread was blocked (idle) {} of its time (sched probe; the paper's 80386 \
             sender: {IDLE_PCT}%).",
            measure(b.mean, Some(b.ci95), Unit::Percent)
        ));
    }
    if let (Some(rate), Some(thr)) = (send_rate_bps, throughput) {
        let ci = if thr.ci95.is_finite() { thr.ci95 } else { 0.0 };
        let bound = (thr.mean - rate).abs() <= ci + 0.02 * rate;
        out.push_str(&format!(
            " Throughput {} against the sender's pace of {}: {}.",
            measure(thr.mean, Some(thr.ci95), Unit::Si("bit/s")),
            number(rate, Unit::Si("bit/s")),
            if bound {
                "the sender's pace set the rate (within CI and 2%), so the sender was the \
                 bottleneck"
            } else {
                "the pace did not set the rate, something slower did"
            }
        ));
    }
    out
}

/// The sending threads' blocked shares over the probed trials of `id`.
pub(super) fn blocked_share(d: &StudyData, id: &str) -> Option<Summary> {
    let idle: Vec<f64> = d
        .trials_of(id)
        .iter()
        .filter_map(|(t, _)| d.events.get(&t.id))
        .filter_map(|ev| {
            analyse(ev)
                .threads
                .iter()
                .find(|x| x.role == "sender")
                .map(|th| th.idle_fraction)
        })
        .collect();
    summarize(&idle)
}

/// The time–sequence figure of the first probed trial of `id`.
fn time_sequence_figure(d: &StudyData, id: &str) -> Option<Figure> {
    d.trials_of(id).iter().find_map(|(t, _)| {
        let a = analyse(d.events.get(&t.id)?);
        let ts = a.time_sequence.iter().max_by_key(|x| x.data.len())?;
        let base = ts.data.first().map_or(0.0, |p| p.1);
        let rebase = |v: &[(f64, f64)]| -> Vec<Point> {
            v.iter()
                .map(|&(t, y)| Point::new(t * 1e3, (y - base) / 1024.0))
                .collect()
        };
        let mut f = Figure::new(
            format!("Time–sequence of trial {} ({})", t.seq, ts.flow),
            "time (ms)",
            "stream position (KB)",
        )
        .with_series(Series::new("data sent", rebase(&ts.data)).with_style(SeriesStyle::Points))
        .with_series(Series::new("acknowledged", rebase(&ts.acked)))
        .with_series(Series::new("window edge", rebase(&ts.window_edge)));
        f.caption = Some(
            "Data segments at the interface queue, the ACKs as the sender's TCP took them, and \
             the right edge of the offered window (Guerrero & Frieder Fig. 8's view)."
                .into(),
        );
        Some(f)
    })
}

/// The section: the time–sequence figure, a table of causes per
/// experiment, and a finding for each.
pub(super) fn timeline_section(d: &StudyData) -> Section {
    let mut s = Section::new("The sender's timeline and where its time went (§3.3, Fig. 5)");
    s.paper_finding(
        format!("{CITE}, §3.3"),
        format!(
            "Sending {FILE_KB} KB in {WRITE_KB} KB writes with a {RECEIVE_BUFFER_KB} KB receive \
             buffer, the sender was idle {IDLE_PCT}% of the transfer, blocked because no receive \
             buffer space was available; the rest of the time the slow 80386 sender itself was \
             busy (the bottleneck for part of its time)."
        ),
    );
    if let Some(k) = d.left_out("timeline") {
        s.warning(format!(
            "The timeline experiments were not run: {}.",
            k.reason
        ));
    }
    if let Some(f) = time_sequence_figure(d, "timeline") {
        s.push(f);
    }
    let mut t = Table::new(["experiment", "cause", "share of the transfer time", "ticks"])
        .with_caption(
            "TCP_INFO's chrono counters (4 ms ticks, summed over trials); a share needs 25 ticks",
        )
        .key();
    let mut any = false;
    for (id, what) in [
        ("timeline", "Unpaced"),
        ("timeline-paced", "Paced at the send rate"),
    ] {
        let trials = d.trials_of(id);
        let Some(params) = trials.first().map(|(_, p)| (*p).clone()) else {
            continue;
        };
        let records: Vec<&TrialRecord> = trials.iter().map(|(t, _)| *t).collect();
        let causes = cause_shares(&records);
        if causes.is_empty() {
            continue;
        }
        any = true;
        for c in &causes {
            let share = if c.ticks >= f64::from(MIN_TICKS) {
                measure(c.share.mean, Some(c.share.ci95), Unit::Percent)
            } else {
                "n/a (too few ticks)".into()
            };
            t.row([
                id.to_string(),
                c.cause.to_string(),
                share,
                format!("{:.0}", c.ticks),
            ]);
        }
        let label = format!(
            "{what}, 1 KB writes with {} buffers on {}",
            params
                .rcvbuf
                .map_or("default".into(), |b| size_words(b as f64)),
            params.topology.name()
        );
        let thr: Vec<f64> = records
            .iter()
            .filter_map(|t| t.outcome.metrics.get("throughput_bps").copied())
            .collect();
        s.finding(idle_sentence(
            &label,
            &causes,
            blocked_share(d, id).as_ref(),
            summarize(&thr).as_ref(),
            params.send_rate_bps.map(|r| r as f64),
        ));
    }
    if !any {
        s.warning(
            "The timeline experiments have no trial with TCP_INFO's chrono counters in this run.",
        );
        return s;
    }
    s.push(t);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(cause: &'static str, mean: f64, ticks: f64) -> CauseShare {
        CauseShare {
            cause,
            share: Summary {
                n: 5,
                mean,
                sd: 0.01,
                ci95: 0.012,
                median: mean,
                min: mean,
                max: mean,
            },
            ticks,
        }
    }

    /// A window-bound transfer: 66% of 1.0 s × 5 trials is 825 ticks.
    fn window_bound() -> Vec<CauseShare> {
        vec![
            share(CAUSES[0], 0.66, 825.0),
            share(CAUSES[1], 0.0, 0.0),
            share(CAUSES[2], 0.32, 400.0),
            share(CAUSES[3], 0.02, 25.0),
        ]
    }

    #[test]
    fn the_largest_cause_with_enough_ticks_is_named_and_flips_with_the_data() {
        let s = idle_sentence("Unpaced", &window_bound(), None, None, None);
        assert!(s.contains("The largest share is the receive window"), "{s}");
        assert!(s.contains("66.0 ± 1.2 % (825 ticks)"), "{s}");
        assert!(
            s.contains("the send buffer (sndbuf_limited) 0 ticks, fewer than the 25"),
            "{s}"
        );
        // The same transfer with the link taking most of the time.
        let mut v = window_bound();
        v[0] = share(CAUSES[0], 0.12, 150.0);
        v[2] = share(CAUSES[2], 0.86, 1075.0);
        let s = idle_sentence("Paced", &v, None, None, None);
        assert!(s.contains("The largest share is the link"), "{s}");
        assert!(
            s.contains("beyond the 95% CIs of the next, the receive window (rwnd_limited)."),
            "{s}"
        );
    }

    #[test]
    fn causes_within_their_cis_have_no_largest() {
        // 48% and 46%, each ± 1.2%: within the CIs, neither is named.
        let mut v = window_bound();
        v[0] = share(CAUSES[0], 0.48, 600.0);
        v[2] = share(CAUSES[2], 0.46, 575.0);
        let s = idle_sentence("Unpaced", &v, None, None, None);
        assert!(
            s.contains(
                "No one cause has the largest share: the receive window (rwnd_limited) and the \
                 link or congestion window (data in flight, neither limit) are within the 95% CIs"
            ) && s.contains("a difference smaller than 2.40 % could not have been seen"),
            "{s}"
        );
        assert!(!s.contains("The largest share is"), "{s}");
        // From one trial: no claim.
        let mut one = window_bound();
        for c in &mut one {
            c.share.n = 1;
            c.share.ci95 = f64::NAN;
        }
        let s = idle_sentence("Unpaced", &one, None, None, None);
        assert!(
            s.contains(
                "The largest share, the receive window (rwnd_limited), comes from one trial"
            ),
            "{s}"
        );
    }

    #[test]
    fn a_large_share_from_too_few_ticks_is_not_named() {
        // 3 ticks of rwnd-limited time in a short transfer: 90% of it, but
        // no share.
        let v = vec![share(CAUSES[0], 0.9, 3.0), share(CAUSES[3], 0.1, 1.0)];
        let s = idle_sentence("Short", &v, None, None, None);
        assert!(s.contains("No cause has enough ticks for a share"), "{s}");
        assert!(!s.contains("90"), "{s}");
    }

    #[test]
    fn a_paced_sender_sets_the_rate_only_when_throughput_matches_its_pace() {
        let thr = |mean: f64| Summary {
            n: 5,
            mean,
            sd: 1e4,
            ci95: 2e4,
            median: mean,
            min: mean,
            max: mean,
        };
        let at_pace = idle_sentence(
            "Paced",
            &window_bound(),
            None,
            Some(&thr(7.98e6)),
            Some(8e6),
        );
        assert!(
            at_pace.contains("the sender's pace set the rate"),
            "{at_pace}"
        );
        let below = idle_sentence("Paced", &window_bound(), None, Some(&thr(6.0e6)), Some(8e6));
        assert!(below.contains("the pace did not set the rate"), "{below}");
    }

    #[test]
    fn the_blocked_share_is_stated_with_its_ci() {
        let b = Summary {
            n: 5,
            mean: 0.4,
            sd: 0.02,
            ci95: 0.025,
            median: 0.4,
            min: 0.4,
            max: 0.4,
        };
        let s = idle_sentence("Unpaced", &window_bound(), Some(&b), None, None);
        assert!(s.contains("blocked (idle) 40.0 ± 2.5 %"), "{s}");
    }
}
