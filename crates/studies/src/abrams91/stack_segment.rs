//! Abrams & Chen Table 6 on tcplab's stack: the accounted sender's busy
//! time per data segment it sent, in all and block by block, at each write
//! size, beside the paper's per-segment costs and Linux's sender in this
//! run's kernel segment-cost experiment.

use super::paper::{
    SENDER_US, T6_ACK_TOTAL, T6_IP_ACK, T6_IP_SEND, T6_SEND_TOTAL, T6_TCP_ACK, T6_TCP_SEND,
};
use super::stack_account::{accounted, impossible, Accounted};
use super::stack_runs::SEGMENT_COST;
use crate::data::StudyData;
use crate::paper_quote::PaperQuote;
use crate::sunos_ipc::change::{compare, Change, Estimate};
use analysis::findings::size_words;
use record::TrialRecord;
use report::{measure, Section, Table, Unit};
use std::collections::BTreeMap;

const CITE: &str = "Abrams & Chen 1991";

/// The paper's sender per 1 KB data segment, µs: 647 to send it (TCP 523,
/// IP 124) and half of the 409 an ACK cost (one ACK per two segments).
pub(super) const PAPER_SENDER_US: f64 = SENDER_US.value;

/// The paper's Table 6 sender rows beside the stack's blocks: the block,
/// the paper's µs, and what they timed.
const PAPER_ROWS: [(&str, PaperQuote, &str); 5] = [
    ("tcp_output", T6_TCP_SEND, " (TCP, send data)"),
    ("ip_output", T6_IP_SEND, " (IP, send data)"),
    (
        "tcp_input_fast",
        T6_TCP_ACK,
        " per ACK (TCP, processing ACK; fast path)",
    ),
    (
        "tcp_input_slow",
        T6_TCP_ACK,
        " per ACK (TCP, processing ACK; slow path)",
    ),
    ("ip_input", T6_IP_ACK, " per ACK (IP, processing ACK)"),
];

/// µs, with its CI.
fn us(e: &Estimate) -> String {
    e.scaled(1e-6).words(Unit::Si("s"))
}

/// One write size's trials: busy µs per data segment sent, busy ns per
/// packet (in or out), and each block's µs per data segment.
#[derive(Debug, Clone, Default)]
pub(super) struct SizeCost {
    /// Busy µs per data segment, one value per trial.
    pub per_segment: Vec<f64>,
    /// Busy ns per packet in or out, one value per trial.
    pub per_packet: Vec<f64>,
    /// Each block's µs per data segment, per trial.
    pub blocks: BTreeMap<String, Vec<f64>>,
}

fn size_costs(rows: &[(&TrialRecord, &record::TrialParams, Accounted)]) -> BTreeMap<u64, SizeCost> {
    let mut by: BTreeMap<u64, SizeCost> = BTreeMap::new();
    for (t, p, a) in rows.iter().filter(|r| r.2.adds_up()) {
        let m = &t.outcome.metrics;
        let Some(segs) = m.get("data_segs_out").copied().filter(|s| *s > 0.0) else {
            continue;
        };
        let c = by.entry(p.write_size).or_default();
        c.per_segment.push(a.busy_s * 1e6 / segs);
        if let Some(ns) = m.get("stack_client_account_busy_ns_per_packet") {
            c.per_packet.push(*ns);
        }
        for (b, s) in &a.blocks {
            c.blocks.entry(b.clone()).or_default().push(s * 1e6 / segs);
        }
    }
    by
}

/// Linux's sender in this run's kernel Table 6 experiment: its whole CPU
/// (threads and its CPU's softirq time) µs per data segment, per write
/// size, from the pinned and steered trials (the unprobed twins when
/// present).
fn linux_sender(d: &StudyData) -> BTreeMap<u64, Vec<f64>> {
    let mut trials = d.trials_of("unprobed-segment-cost");
    if trials.is_empty() {
        trials = d.trials_of("segment-cost");
    }
    let mut by: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for (t, p) in trials {
        let m = &t.outcome.metrics;
        if !super::speeds::steered(t) || analysis::validity::cpu_impossible(m, "sender").is_some() {
            continue;
        }
        if let (Some(cpu), Some(segs)) = (
            m.get("cpu_sender_whole_s"),
            m.get("data_segs_out").filter(|s| **s > 0.0),
        ) {
            by.entry(p.write_size).or_default().push(cpu * 1e6 / segs);
        }
    }
    by
}

/// Table 6's claim at one write size: the stack sender's busy µs per data
/// segment, its largest block, the ratio to the paper's 851.5 µs, and
/// against Linux's sender in this run (more or less costly only beyond the
/// CIs, else the smallest difference the trials could have shown).
pub(super) fn segment_finding(
    write_size: u64,
    stack: &Estimate,
    per_packet: Option<&Estimate>,
    top_block: Option<(&str, &Estimate)>,
    linux: Option<&Estimate>,
) -> String {
    let mut out = format!(
        "At {} writes tcplab's stack sender is busy {} per data segment sent (over {} trials, \
         exact accounting{}){}: {:.0}× less than the paper's {SENDER_US} µs per 1 KB segment on the \
         D310 ({T6_SEND_TOTAL} µs to send it and half of a {T6_ACK_TOTAL} µs ACK).",
        size_words(write_size as f64),
        us(stack),
        stack.n,
        per_packet.map_or(String::new(), |p| format!(
            "; {} per packet in or out",
            p.scaled(1e-9).words(Unit::Si("s"))
        )),
        top_block.map_or(String::new(), |(b, e)| format!(
            ", of which its largest block, {b}, {}",
            us(e)
        )),
        PAPER_SENDER_US / stack.mean,
    );
    out += &match linux {
        None => " Linux's sender was not measured at this write size in this run (the kernel \
                 segment-cost experiment, pinned and steered)."
            .to_string(),
        Some(l) => {
            let head = format!(
                " Linux's sender in this run's kernel experiment (its whole CPU with its softirq \
                 time, offloads off): {} per segment",
                us(l)
            );
            match compare(l, stack) {
                Change::Raised { ratio } => {
                    format!("{head}; the stack costs {ratio:.2}× Linux's, beyond the 95% CIs.")
                }
                Change::Lowered { ratio } => format!(
                    "{head}; the stack costs {:.2}× less than Linux, beyond the 95% CIs.",
                    1.0 / ratio
                ),
                Change::Unchanged { detectable } => format!(
                    "{head}; the two are within the 95% CIs (a difference under {} could not \
                     have been seen).",
                    measure(detectable * 1e-6, None, Unit::Si("s"))
                ),
                Change::TooFewTrials => {
                    format!("{head}; with fewer than two trials a side, neither is called cheaper.")
                }
            }
        }
    };
    out
}

/// The claim across write sizes: does the stack's cost per segment change
/// from the smallest write size to the largest, beyond the CIs?
pub(super) fn across_sizes_finding(small: (u64, &Estimate), large: (u64, &Estimate)) -> String {
    let head = format!(
        "The stack sender's busy time per data segment at {} writes against {} writes: {} → {}",
        size_words(small.0 as f64),
        size_words(large.0 as f64),
        us(small.1),
        us(large.1)
    );
    match compare(small.1, large.1) {
        Change::Raised { ratio } => format!(
            "{head}, {ratio:.2}× higher beyond the 95% CIs: larger writes cost more per segment."
        ),
        Change::Lowered { ratio } => format!(
            "{head}, {:.2}× lower beyond the 95% CIs: larger writes spread the per-write costs \
             over more segments.",
            1.0 / ratio
        ),
        Change::Unchanged { detectable } => format!(
            "{head}: no change beyond the 95% CIs (a change under {} could not have been seen); \
             a segment costs the same whatever the write size.",
            measure(detectable * 1e-6, None, Unit::Si("s"))
        ),
        Change::TooFewTrials => {
            format!("{head}: with fewer than two trials a size, no change is claimed.")
        }
    }
}

/// The section.
pub(super) fn stack_segment_section(d: &StudyData) -> Section {
    let mut s = Section::new("On tcplab's stack: time per segment (Table 6)");
    s.paper_finding(
        format!("{CITE}, Table 6"),
        format!(
            "On the D310 the sender's TCP took {T6_TCP_SEND} µs and its IP {T6_IP_SEND} µs to send \
             a 1 KB data segment, and {T6_TCP_ACK} µs and {T6_IP_ACK} µs to process an ACK: \
             {SENDER_US} µs per segment with an ACK for every two."
        ),
    );
    let rows = accounted(d, SEGMENT_COST);
    if rows.is_empty() {
        s.warning(format!(
            "{SEGMENT_COST} has no trial with the stack's accounting in this run: no stack \
             per-segment cost."
        ));
        return s;
    }
    for w in impossible(SEGMENT_COST, &rows) {
        s.warning(w);
    }
    let costs = size_costs(&rows);
    let linux = linux_sender(d);
    let sizes: Vec<u64> = costs.keys().copied().collect();
    let mut header = vec!["block (µs per data segment sent)".to_string()];
    header.extend(
        sizes
            .iter()
            .map(|w| format!("stack, {} writes", size_words(*w as f64))),
    );
    header.push("paper, D310, 1 KB segment (µs)".into());
    let mut t = Table::new(header).key().with_caption(format!(
        "{SEGMENT_COST}: each block's exclusive time over the data segments the stack sent, mean \
         ± 95% CI; the paper's column is Table 6's sender; Linux's row is its sender's whole CPU \
         per segment in this run's kernel segment-cost experiment"
    ));
    let mut names: Vec<&String> = costs.values().flat_map(|c| c.blocks.keys()).collect();
    names.sort();
    names.dedup();
    let est = |v: Option<&Vec<f64>>| v.and_then(|v| Estimate::from_values(v));
    let cell = |e: Option<Estimate>| e.map_or("—".to_string(), |e| us(&e));
    // Largest blocks first, by their mean at the first size.
    let first = sizes.first().and_then(|w| costs.get(w));
    names.sort_by(|a, b| {
        let m = |n: &String| est(first.and_then(|c| c.blocks.get(n))).map_or(0.0, |e| e.mean);
        m(b).total_cmp(&m(a))
    });
    for n in &names {
        let mut row = vec![n.to_string()];
        row.extend(sizes.iter().map(|w| cell(est(costs[w].blocks.get(*n)))));
        row.push(
            PAPER_ROWS
                .iter()
                .find(|(b, _, _)| b == n)
                .map_or("—".into(), |(_, p, what)| format!("{p}{what}")),
        );
        t.row(row);
    }
    let mut total = vec!["busy in all".to_string()];
    total.extend(sizes.iter().map(|w| cell(est(Some(&costs[w].per_segment)))));
    total.push("851.5 (647 + ½ × 409)".into());
    t.row(total);
    let mut lx = vec!["Linux's sender (whole CPU)".to_string()];
    lx.extend(sizes.iter().map(|w| cell(est(linux.get(w)))));
    lx.push("—".into());
    t.row(lx);
    s.push(t);
    let mut per_size = Vec::new();
    for (w, c) in &costs {
        let Some(stack) = Estimate::from_values(&c.per_segment) else {
            continue;
        };
        let top = c
            .blocks
            .iter()
            .filter(|(b, _)| {
                *b != super::stack_account::BRACKETS && *b != super::stack_account::UNATTRIBUTED
            })
            .filter_map(|(b, v)| Some((b.as_str(), Estimate::from_values(v)?)))
            .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean));
        s.finding(segment_finding(
            *w,
            &stack,
            Estimate::from_values(&c.per_packet).as_ref(),
            top.as_ref().map(|(b, e)| (*b, e)),
            est(linux.get(w)).as_ref(),
        ));
        per_size.push((*w, stack));
    }
    if let (Some(a), Some(b)) = (per_size.first(), per_size.last()) {
        if a.0 != b.0 {
            s.finding(across_sizes_finding((a.0, &a.1), (b.0, &b.1)));
        }
    }
    s
}
