//! Guerrero & Frieder's tuning story as a table, on tcplab's stack: an
//! untuned configuration, then the paper's changes applied one at a time
//! and kept (SWS avoidance, the ACK strategy, the SRTT estimator, header
//! prediction, the checksum), each step its own timed stream, and for each
//! change a claim on throughput and CPU per segment at both ends.

use super::paper::{SLOWEST, TUNED_HIGH, TUNED_LOW};
use super::CITE;
use crate::data::StudyData;
use crate::spec::{repeat, Experiment, PlanOptions};
use analysis::findings::{differ, size_words, CurvePoint};
use record::factor::Layers;
use record::{StackImpl, TestKind, TrialParams};
use report::{measure, Section, Table, Unit};
use std::collections::BTreeMap;

/// The untuned configuration. From the paper: OPEN-Link "followed the TCP
/// specifications verbatim" (§3) and its traces show the untuned release
/// sending small segments that SWS avoidance would have held back (§5,
/// Figs 8–9: `--sws off`), acknowledging data packet by packet where "one
/// acknowledgement packet" would do (§3: `--delack off`), with an SRTT in
/// coarse integer arithmetic (§4, Fig. 7; BSD's integer EWMA in 500 ms
/// ticks is the nearest estimator the stack has: `--rtt-estimator bsd`),
/// without header prediction (§6: `--header-prediction off`) and with the
/// straightforward checksum a 16-bit word at a time (§6: `--checksum
/// bytewise`). Each level is one the stack's bench factors take.
pub(super) const UNTUNED: [(&str, &str); 5] = [
    ("--sws", "off"),
    ("--delack", "off"),
    ("--rtt-estimator", "bsd"),
    ("--header-prediction", "off"),
    ("--checksum", "bytewise"),
];

/// The changes, in the paper's order: the flag, its tuned level, and what
/// the table calls the change.
pub(super) const CHANGES: [(&str, &str, &str); 5] = [
    ("--sws", "on", "SWS avoidance on"),
    ("--delack", "every2", "ACK every second segment (every2)"),
    ("--rtt-estimator", "rfc6298", "SRTT estimator rfc6298"),
    ("--header-prediction", "on", "header prediction on"),
    ("--checksum", "rfc1071", "checksum rfc1071 (64-bit words)"),
];

/// The id of tuning step `i` (0 is the untuned configuration).
pub(super) fn step_id(i: usize) -> String {
    format!("tuning-{i}")
}

/// The flags of step `i`: the untuned levels with the first `i` changes
/// applied.
pub(super) fn step_flags(i: usize) -> String {
    UNTUNED
        .iter()
        .map(|(flag, level)| {
            let tuned = CHANGES[..i]
                .iter()
                .find(|(f, _, _)| f == flag)
                .map_or(*level, |(_, l, _)| l);
            format!("{flag} {tuned}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One experiment per step. Both ends are tcplab's stack over plain TUN
/// devices (no segmentation offloads: every segment a packet, every
/// checksum computed), so the receiver's mechanisms (its ACK strategy, its
/// side of SWS avoidance, header prediction on data) act too; Linux only
/// routes between the two devices.
pub(super) fn experiments(o: &PlanOptions) -> Vec<Experiment> {
    let r = repeat(o);
    let dur = crate::spec::stack_duration(o);
    (0..=CHANGES.len())
        .map(|i| {
            let what = if i == 0 {
                "untuned".to_string()
            } else {
                format!("+ {}", CHANGES[i - 1].2)
            };
            Experiment::bench(
                step_id(i),
                format!("Tuning step {i} on tcplab's stack (both ends, plain TUN): {what}"),
                format!(
                    "tcp-stream --stack tcplab --server-stack tcplab {} --duration {dur} --repeat {r}",
                    step_flags(i)
                ),
            )
        })
        .collect()
}

/// Why a trial's CPU seconds for `side` (`sender` or `receiver`) cannot
/// be: more than that end's threads could spend over its wall time (one
/// thread, two for a stack end with `--layers threaded`), with 5% for the
/// clocks' granularity. `None` when possible, or without both figures.
pub(super) fn impossible_cpu(
    metrics: &BTreeMap<String, f64>,
    p: &TrialParams,
    side: &str,
) -> Option<String> {
    let cpu = *metrics.get(&format!("cpu_{side}_s"))?;
    let wall = *metrics.get(&format!("{side}_wall_s"))?;
    let stack = if side == "sender" {
        p.stack
    } else {
        p.server_stack
    };
    let threads = if stack != StackImpl::Kernel && p.layers == Some(Layers::Threaded) {
        2.0
    } else {
        1.0
    };
    (cpu > wall * threads * 1.05).then(|| {
        format!(
            "the {side} spent {cpu:.3} CPU-seconds in {wall:.3} s of wall time with {threads:.0} \
             thread(s)"
        )
    })
}

/// The impossible CPU figures among an experiment's trials, one warning
/// each; those trials are left out of every CPU figure.
pub(super) fn impossible_warnings(d: &StudyData, id: &str) -> Vec<String> {
    d.trials_of(id)
        .iter()
        .flat_map(|(t, p)| {
            ["sender", "receiver"].into_iter().filter_map(move |side| {
                impossible_cpu(&t.outcome.metrics, p, side).map(|why| {
                    format!(
                        "Trial {} of {id}: {why}, more than it could; its CPU figures are left \
                         out as impossible.",
                        t.id
                    )
                })
            })
        })
        .collect()
}

/// A per-trial ratio of two metrics over an experiment's trials, as a mean
/// and its 95% CI; trials where either is missing or the denominator is
/// not positive are left out, and so are impossible CPU figures
/// ([`impossible_cpu`]).
pub(super) fn ratio_of(d: &StudyData, id: &str, num: &str, den: &str) -> Option<CurvePoint> {
    let v: Vec<f64> = d
        .trials_of(id)
        .iter()
        .filter(|(t, p)| {
            !["sender", "receiver"].iter().any(|side| {
                num == format!("cpu_{side}_s")
                    && impossible_cpu(&t.outcome.metrics, p, side).is_some()
            })
        })
        .filter_map(|(t, _)| {
            let n = *t.outcome.metrics.get(num)?;
            let m = *t.outcome.metrics.get(den)?;
            (m > 0.0 && n.is_finite()).then_some(n / m)
        })
        .collect();
    CurvePoint::of_values(0.0, &v)
}

/// A metric over an experiment's trials, as a mean and its 95% CI.
pub(super) fn metric_of(d: &StudyData, id: &str, metric: &str) -> Option<CurvePoint> {
    let v: Vec<f64> = d
        .trials_of(id)
        .iter()
        .filter_map(|(t, _)| t.outcome.metrics.get(metric).copied())
        .filter(|v| v.is_finite())
        .collect();
    CurvePoint::of_values(0.0, &v)
}

/// What one step measured.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Step {
    /// Throughput, bit/s.
    pub throughput: Option<CurvePoint>,
    /// The sending end's CPU seconds per segment it sent.
    pub sender_cpu: Option<CurvePoint>,
    /// The receiving end's CPU seconds per segment it received.
    pub receiver_cpu: Option<CurvePoint>,
    /// Payload bytes per segment sent.
    pub segment_bytes: Option<CurvePoint>,
    /// Segments the receiver sent per segment it received (its ACKs).
    pub acks_per_segment: Option<CurvePoint>,
}

fn step(d: &StudyData, id: &str) -> Step {
    Step {
        throughput: metric_of(d, id, "throughput_bps"),
        sender_cpu: ratio_of(d, id, "cpu_sender_s", "stack_client_segments_out"),
        receiver_cpu: ratio_of(d, id, "cpu_receiver_s", "stack_server_segments_in"),
        segment_bytes: ratio_of(d, id, "bytes", "stack_client_segments_out"),
        acks_per_segment: ratio_of(
            d,
            id,
            "stack_server_segments_out",
            "stack_server_segments_in",
        ),
    }
}

/// What a stack point's ends and device were, and what each trial moved:
/// the controls a reader needs beside the stack's numbers.
pub(super) fn controls(p: &TrialParams) -> String {
    let device = |s: StackImpl| match s {
        StackImpl::Tcplab => {
            "a plain TUN device (no segmentation or checksum offloads: every segment is a \
             packet and every checksum is computed)"
        }
        StackImpl::TcplabOffload => {
            "a TUN device with TSO and checksum offloads (64 KB super-packets, checksums left \
             to the kernel)"
        }
        StackImpl::TcplabTap => "a TAP device (its own Ethernet and ARP)",
        StackImpl::Kernel => "Linux's sockets",
    };
    let ends = match (p.stack, p.server_stack) {
        (StackImpl::Kernel, StackImpl::Kernel) => "both ends are Linux's TCP".to_string(),
        (c, StackImpl::Kernel) => format!(
            "the client{} is tcplab's stack behind {}, the server Linux in the stack's \
             namespace",
            if p.test == TestKind::TcpStream {
                " (sender)"
            } else {
                ""
            },
            device(c)
        ),
        (StackImpl::Kernel, s) => format!(
            "the client is Linux in the stack's namespace, the server tcplab's stack behind {}",
            device(s)
        ),
        (c, s) if c == s => format!(
            "both ends are tcplab's stack, each behind {}, with Linux routing between the two \
             devices in the stack's namespace",
            device(c)
        ),
        (c, s) => format!(
            "the client is tcplab's stack behind {}, the server tcplab's stack behind {}",
            device(c),
            device(s)
        ),
    };
    let amount = match (p.bytes, p.duration_s) {
        (Some(b), _) => format!("{} per trial", size_words(b as f64)),
        (None, Some(t)) => format!("{t} s per trial"),
        (None, None) => "unbounded trials".to_string(),
    };
    format!(
        "{ends}; {} of {} writes, {amount}",
        p.test.name(),
        size_words(p.write_size as f64)
    )
}

/// `mean ± ci` in `unit` (no CI for one trial), or a dash.
pub(super) fn cell(p: Option<CurvePoint>, unit: Unit) -> String {
    p.map_or("—".into(), |p| {
        measure(p.mean, (p.ci > 0.0).then_some(p.ci), unit)
    })
}

/// Which way a change went, by the 95% CIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Direction {
    /// Better beyond the CIs.
    Better,
    /// Worse beyond the CIs.
    Worse,
    /// Within the CIs.
    Same,
    /// Without a CI on both sides (single trials): nothing claimed.
    Unclaimed,
}

/// Which way `before` → `after` went (`lower_is_better` says which way
/// is better): a difference only where the 95% CIs do not overlap.
pub(super) fn direction(
    before: &CurvePoint,
    after: &CurvePoint,
    lower_is_better: bool,
) -> Direction {
    if !(before.ci > 0.0 && after.ci > 0.0) || before.mean <= 0.0 {
        Direction::Unclaimed
    } else if !differ(before, after) {
        Direction::Same
    } else if (after.mean < before.mean) == lower_is_better {
        Direction::Better
    } else {
        Direction::Worse
    }
}

/// One clause of a change's claim: `metric` from `before` to `after`,
/// better or worse beyond the 95% CIs (`lower_is_better` says which way
/// is better), or no change with the smallest change the trials could
/// have shown; without CIs (single trials) nothing is claimed.
pub(super) fn clause(
    metric: &str,
    before: &CurvePoint,
    after: &CurvePoint,
    lower_is_better: bool,
    unit: Unit,
) -> String {
    let v = |p: &CurvePoint| measure(p.mean, (p.ci > 0.0).then_some(p.ci), unit);
    let head = format!("{metric} {} → {}", v(before), v(after));
    let rel = (after.mean - before.mean) / before.mean * 100.0;
    match direction(before, after, lower_is_better) {
        Direction::Unclaimed => format!("{head}, without CIs (single trials): no change claimed"),
        Direction::Better => format!("{head} ({rel:+.0}%), better beyond the 95% CIs"),
        Direction::Worse => format!("{head} ({rel:+.0}%), worse beyond the 95% CIs"),
        Direction::Same => {
            let smallest = (before.ci + after.ci) / before.mean * 100.0;
            format!(
                "{head}: no change beyond the 95% CIs (a change under {smallest:.0}% could not \
                 have been seen)"
            )
        }
    }
}

/// The claim on one change: throughput and each end's CPU per segment,
/// from the step before it to the step with it.
pub(super) fn change_finding(change: &str, before: &Step, after: &Step) -> Option<String> {
    let mut clauses = Vec::new();
    let pairs = [
        (
            "throughput",
            before.throughput,
            after.throughput,
            false,
            Unit::Si("bit/s"),
        ),
        (
            "sender CPU per segment",
            before.sender_cpu,
            after.sender_cpu,
            true,
            Unit::Si("s"),
        ),
        (
            "receiver CPU per segment",
            before.receiver_cpu,
            after.receiver_cpu,
            true,
            Unit::Si("s"),
        ),
    ];
    for (metric, b, a, lower, unit) in pairs {
        if let (Some(b), Some(a)) = (b, a) {
            clauses.push(clause(metric, &b, &a, lower, unit));
        }
    }
    if clauses.is_empty() {
        return None;
    }
    Some(format!("{change}: {}.", clauses.join("; ")))
}

/// Whether SWS avoidance had anything to avoid on this transfer: with the
/// mean segment at or above 90% of the MSS both without and with it, no
/// small segments were sent, so the change cannot show here; otherwise
/// the segment sizes are stated beside the change's claim. `pathological`:
/// whether this run has the SWS section's pathological reader to point to.
pub(super) fn sws_note(
    before: &CurvePoint,
    after: &CurvePoint,
    mss: f64,
    pathological: bool,
) -> String {
    let full = |p: &CurvePoint| p.mean >= 0.9 * mss;
    let sizes = format!(
        "segments carried {:.0} and {:.0} bytes on average without and with it (MSS {mss:.0})",
        before.mean, after.mean
    );
    if full(before) && full(after) {
        format!(
            "SWS avoidance cannot show on this bulk transfer: {sizes}, so there were no small \
             segments or windows to avoid; the paper's SWS came from a peer that opened its \
             window a few bytes at a time{}.",
            if pathological {
                " (the SWS section runs such a reader against Linux)"
            } else {
                ""
            }
        )
    } else {
        format!(
            "SWS avoidance had small segments to act on: {sizes}; the paper's silly segments \
             carried 32–128 bytes."
        )
    }
}

/// The tuning table and its claims.
pub(super) fn tuning_section(d: &StudyData) -> Section {
    let mut s = Section::new("The tuning story on tcplab's stack: each change in turn");
    s.paper_finding(
        format!("{CITE}, §§3–6, Table 1"),
        format!(
            "The untuned OPEN-Link managed {SLOWEST} KB/s against every other TCP; SWS \
             avoidance, an ACK strategy built on a smoothed RTT, header prediction and a faster \
             checksum brought it to {TUNED_LOW}–{TUNED_HIGH} KB/s, while in some cases also \
             reducing CPU demands."
        ),
    );
    let steps: Vec<Step> = (0..=CHANGES.len()).map(|i| step(d, &step_id(i))).collect();
    if steps.iter().all(|s| s.throughput.is_none()) {
        s.warning("The tuning experiments have no successful trials in this run.");
        return s;
    }
    if let Some(p) = d.points_of(&step_id(0)).first() {
        s.paragraph(format!(
            "Controls: {}. Untuned: {}. Each step keeps the changes above it. CPU per segment is \
             each trial's CPU seconds of that end (its stack thread, with the kernel work its \
             device writes do) over the segments it sent (sender) or received (receiver), then \
             mean ± 95% CI over trials.",
            controls(&p.params),
            step_flags(0)
        ));
    }
    let mut t = Table::new([
        "step",
        "throughput",
        "sender CPU per segment",
        "receiver CPU per segment",
        "bytes per segment",
        "receiver's segments out per segment in",
    ])
    .key();
    for (i, st) in steps.iter().enumerate() {
        let name = if i == 0 {
            "untuned".to_string()
        } else {
            format!("+ {}", CHANGES[i - 1].2)
        };
        t.row([
            name,
            cell(st.throughput, Unit::Si("bit/s")),
            cell(st.sender_cpu, Unit::Si("s")),
            cell(st.receiver_cpu, Unit::Si("s")),
            cell(st.segment_bytes, Unit::Plain),
            cell(st.acks_per_segment, Unit::Plain),
        ]);
    }
    s.push(t);
    for i in 0..steps.len() {
        for w in impossible_warnings(d, &step_id(i)) {
            s.warning(w);
        }
    }
    for (i, (_, _, change)) in CHANGES.iter().enumerate() {
        let (before, after) = (&steps[i], &steps[i + 1]);
        if let Some(f) = change_finding(change, before, after) {
            s.finding(f);
        }
        if i == 0 {
            let mss = metric_of(d, &step_id(1), "stack_client_snd_mss").map(|p| p.mean);
            if let (Some(b), Some(a), Some(mss)) = (before.segment_bytes, after.segment_bytes, mss)
            {
                let pathological = !d.points_of("sws-pathological").is_empty();
                s.finding(sws_note(&b, &a, mss, pathological));
            }
        }
    }
    s
}
