//! Table 1 on tcplab's stack: exact µs per data packet in each of the
//! paper's blocks on the stack's sender (and its own finer blocks on the
//! sender and on a receiver fed by Linux), beside the paper's column and
//! Linux's sampled breakdown from the MSS experiment.

use super::paper::{table1_column, us_per_packet, TABLE1, TABLE1_SENDER_TOTAL};
use super::report::{sampled, Sampled};
use super::stack::{stack_trials, StackTrial, ACK, CHECKSUM};
use super::stack_claims::{largest_block_sentence, total_sentence};
use crate::data::StudyData;
use analysis::findings::CurvePoint;
use analysis::layers::Block;
use record::factor::{Checksum, DelayedAck};
use record::ThreadRole;
use report::{Section, Table};
use std::collections::{BTreeMap, BTreeSet};

/// Mean and 95% CI of values (None when empty).
pub(super) fn point(v: &[f64]) -> Option<CurvePoint> {
    CurvePoint::of_values(0.0, v)
}

/// A µs cell: mean ± CI, or a dash.
pub(super) fn us_cell(p: Option<CurvePoint>) -> String {
    match p {
        Some(p) if p.ci > 0.0 => format!("{:.3} ± {:.3}", p.mean, p.ci),
        Some(p) => format!("{:.3}", p.mean),
        None => "—".into(),
    }
}

/// The stack sender's trials with the default checksum (rfc1071), by MSS.
fn sender_by_mss(d: &StudyData) -> BTreeMap<u32, Vec<StackTrial>> {
    let mut out: BTreeMap<u32, Vec<StackTrial>> = BTreeMap::new();
    for t in stack_trials(d, CHECKSUM, true) {
        if t.params.checksum.unwrap_or(Checksum::Rfc1071) != Checksum::Rfc1071 {
            continue;
        }
        if let Some(m) = t.params.mss {
            out.entry(m).or_default().push(t);
        }
    }
    out
}

/// The stack receiver's trials with ACKs every second segment.
fn receiver_every2(d: &StudyData) -> Vec<StackTrial> {
    stack_trials(d, ACK, false)
        .into_iter()
        .filter(|t| t.params.delack.unwrap_or(DelayedAck::Every2) == DelayedAck::Every2)
        .collect()
}

/// Linux's sampled sender at the MSS nearest `mss` (offloads off where the
/// run has them): the MSS and per trial µs per data packet in each block
/// and in all.
fn linux_near(d: &StudyData, mss: u32) -> Option<(u32, Vec<Sampled>)> {
    let all = sampled(d, "mss-blocks");
    let off = all.iter().any(|s| s.offloads_off);
    let v: Vec<Sampled> = all.into_iter().filter(|s| s.offloads_off == off).collect();
    let near = v
        .iter()
        .map(|s| s.mss as u32)
        .min_by_key(|m| m.abs_diff(mss))?;
    Some((
        near,
        v.into_iter().filter(|s| s.mss as u32 == near).collect(),
    ))
}

/// Linux's µs per data packet for `block` (None: the total) over trials.
fn linux_us(v: &[Sampled], block: Option<Block>) -> Option<CurvePoint> {
    let vals: Vec<f64> = v
        .iter()
        .filter(|s| s.packets > 0.0)
        .filter_map(|s| {
            let r = s.attribution.role(ThreadRole::Sender)?;
            Some(block.map_or(r.cpu_s, |b| r.block_s(b)) * 1e6 / s.packets)
        })
        .collect();
    point(&vals)
}

/// The stack's µs per data packet for Huang & Chen block `b` (None: its
/// busy time in all).
fn stack_us(v: &[StackTrial], b: Option<Block>) -> Option<CurvePoint> {
    let vals: Vec<f64> = v
        .iter()
        .map(|t| {
            let s = match b {
                Some(b) => Block::ALL
                    .iter()
                    .position(|x| *x == b)
                    .map_or(0.0, |i| t.hc[i]),
                None => t.busy_s,
            };
            s * 1e6 / t.segments
        })
        .collect();
    point(&vals)
}

/// The stack's own blocks in µs per data packet.
fn own_us(v: &[StackTrial], name: &str) -> Option<CurvePoint> {
    point(
        &v.iter()
            .map(|t| t.block_us_per_segment(name))
            .collect::<Vec<_>>(),
    )
}

/// Table 1 on the stack.
pub(super) fn table1_stack_section(d: &StudyData) -> Section {
    let mut s = Section::new("Table 1 on tcplab's stack: exact µs per packet in each block");
    let paper_1024 = table1_column(1024).unwrap_or(3);
    s.paper_finding(
        "Huang & Chen, Table 1",
        format!(
            "At MSS 1024 (20,000 packets) a 386/33 sender spent {:.1} µs per packet in all: \
             tcp_output {:.1} µs, driver_out {:.1} µs, ip_output {:.1} µs, and {:.1} µs in \
             the three blocks that take in the ACKs.",
            us_per_packet(TABLE1_SENDER_TOTAL[paper_1024], paper_1024),
            us_per_packet(TABLE1[1].2[paper_1024], paper_1024),
            us_per_packet(TABLE1[3].2[paper_1024], paper_1024),
            us_per_packet(TABLE1[2].2[paper_1024], paper_1024),
            TABLE1[4..]
                .iter()
                .map(|r| us_per_packet(r.2[paper_1024], paper_1024))
                .sum::<f64>(),
        ),
    );
    let by_mss = sender_by_mss(d);
    if by_mss.is_empty() {
        s.warning(format!(
            "No accounted trial of {CHECKSUM}: the stack's blocks need --stack tcplab \
             --account on."
        ));
        return s;
    }
    s.paragraph(
        "tcplab's stack sends to Linux over a plain TUN (every segment a packet, rfc1071 \
         checksums) with every block bracketed by the cycle counter (--account on): times are \
         exact, not sampled, divided by the data segments the stack sent. The paper's column is \
         its seconds for 20 MB divided by its packet count; Linux's is the MSS experiment's \
         sampled sender (its softirq input of the ACKs included), divided by its data segments. \
         The stack's driver_out is mostly the TUN write system call, inside which Linux takes \
         the packet in (its IP and TCP input run there): it holds the peer's receive work too.",
    );
    s.paragraph(crate::stack_accounting::METHOD);
    let linux = linux_near(d, 1024);
    let mut header = vec!["block".to_string()];
    for m in by_mss.keys() {
        if table1_column(*m).is_some() {
            header.push(format!("paper, MSS {m} (µs)"));
        }
        header.push(format!("stack, MSS {m} (µs)"));
    }
    if let Some((m, _)) = &linux {
        header.push(format!("Linux sampled, MSS {m} (µs)"));
    }
    let mut t = Table::new(header)
        .with_caption(
            "µs per data packet on the sender: the paper's Table 1, tcplab's stack (mean ± 95% \
             CI), Linux (sampled). Blocks the paper did not time are '—' in its columns.",
        )
        .key();
    for b in Block::ALL {
        let paper = TABLE1.iter().find(|r| r.1 == b);
        let stack: Vec<Option<CurvePoint>> =
            by_mss.values().map(|v| stack_us(v, Some(b))).collect();
        let lx = linux.as_ref().and_then(|(_, v)| linux_us(v, Some(b)));
        let zero = |p: &Option<CurvePoint>| p.is_none_or(|p| p.mean.abs() < 1e-9);
        if paper.is_none() && stack.iter().all(zero) && zero(&lx) {
            continue;
        }
        let mut row = vec![paper.map_or(b.name().to_string(), |r| r.0.to_string())];
        for ((m, _), st) in by_mss.iter().zip(&stack) {
            if let Some(i) = table1_column(*m) {
                row.push(paper.map_or("—".into(), |r| format!("{:.2}", us_per_packet(r.2[i], i))));
            }
            row.push(us_cell(*st));
        }
        if linux.is_some() {
            row.push(us_cell(lx));
        }
        t.row(row);
    }
    let mut total = vec!["total (sender)".to_string()];
    for (m, v) in &by_mss {
        if let Some(i) = table1_column(*m) {
            total.push(format!("{:.2}", us_per_packet(TABLE1_SENDER_TOTAL[i], i)));
        }
        total.push(us_cell(stack_us(v, None)));
    }
    if let Some((_, v)) = &linux {
        total.push(us_cell(linux_us(v, None)));
    }
    t.row(total);
    s.push(t);
    // The MSS nearest 1024: the paper's headline column.
    if let Some((m, v)) = by_mss.iter().min_by_key(|(m, _)| m.abs_diff(1024)) {
        if let (Some(i), Some(st)) = (table1_column(*m), stack_us(v, None)) {
            let lx = linux
                .as_ref()
                .and_then(|(lm, lv)| linux_us(lv, None).map(|p| (*lm, p)));
            s.finding(total_sentence(
                *m,
                us_per_packet(TABLE1_SENDER_TOTAL[i], i),
                &st,
                lx.as_ref().map(|(a, b)| (*a, b)),
            ));
        }
        own_blocks(&mut s, d, *m, v);
    }
    s
}

/// The stack's own blocks, sender at `mss` and receiver, with the claim on
/// each end's costliest block.
fn own_blocks(s: &mut Section, d: &StudyData, mss: u32, sender: &[StackTrial]) {
    let receiver = receiver_every2(d);
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for t in sender.iter().chain(&receiver) {
        names.extend(t.blocks.keys().map(String::as_str));
    }
    let mut t = Table::new([
        "stack block".to_string(),
        format!("sender, MSS {mss} (µs)"),
        "receiver, Linux → stack, every2 (µs)".to_string(),
    ])
    .with_caption(
        "The stack's own blocks, exact µs per data packet (sent by the sender, received by the \
         receiver); accounting_brackets is what the brackets cost, unattributed the busy time \
         no bracket covered.",
    )
    .key();
    let mut rows: [Vec<(String, CurvePoint)>; 2] = [Vec::new(), Vec::new()];
    for n in &names {
        let a = own_us(sender, n);
        let b = own_us(&receiver, n);
        t.row([n.to_string(), us_cell(a), us_cell(b)]);
        if !matches!(*n, "accounting_brackets" | "unattributed") {
            for (k, p) in [a, b].into_iter().enumerate() {
                if let Some(p) = p {
                    rows[k].push((n.to_string(), p));
                }
            }
        }
    }
    s.push(t);
    for (k, side) in [
        format!("sender, MSS {mss}"),
        "receiver, Linux → stack, every2".to_string(),
    ]
    .iter()
    .enumerate()
    {
        if let Some(f) = largest_block_sentence(side, &rows[k]) {
            s.finding(f);
        }
    }
    if receiver.is_empty() {
        s.warning(format!(
            "No accounted receiver trial of {ACK}: the receiver's column needs --server-stack \
             tcplab --account on."
        ));
    }
}
