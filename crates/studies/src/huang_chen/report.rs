//! The Huang & Chen report: CPU time per function block against MSS,
//! its shares, the per-packet and per-byte fit, stream size with and
//! without NODELAY, the checksum's share with offload on and off, and the
//! routing table's cost; each also redone on tcplab's own stack. Every
//! finding is computed from the run.

use crate::data::{StudyData, TotalsSource};
use crate::figures::series;
use analysis::cpu::{attribute, fit_packet_byte, CpuAttribution};
use analysis::findings::CurvePoint;
use analysis::layers::{Block, CpuLayer};
use record::{ThreadRole, TrialParams};
use report::{measure, Figure, Point, Section, Series, SeriesStyle, StackedBars, Table, Unit};
use std::collections::BTreeMap;

use super::acks::ack_section;
use super::claims::{
    self, checksum_sentences, share_words, too_few, ChecksumArm, SampledShare, MIN_SHARE_SAMPLES,
};
use super::fit_claims;
use super::offloads::{self, offload_states};
use super::paper::{
    table1_column, CHECKSUM_SHARE, CHECKSUM_TCPIP_SHARE, TABLE1, TABLE1_MSS, TABLE1_SENDER_TOTAL,
    TRANSFER_MB,
};
use super::routes::routes_section;
use super::samples::role_samples;
use super::stack_ack_checksum::ack_checksum_section;
use super::stack_costs::{ack_stack_section, fit_stack_section, routes_stack_section};
use super::stack_table1::table1_stack_section;

const CITE: &str = "Huang & Chen";

/// The paper's transfer: every block's time is scaled to 20 MB.
const PAPER_BYTES: f64 = TRANSFER_MB.value * 1e6;

/// The study's sections, in the paper's order.
pub fn report(d: &StudyData) -> Vec<Section> {
    vec![
        blocks_section(d),
        table1_stack_section(d),
        fit_section(d),
        fit_stack_section(d),
        stream_section(d),
        ack_section(d),
        ack_stack_section(d),
        ack_checksum_section(d),
        checksum_section(d),
        routes_section(d),
        routes_stack_section(d),
    ]
}

/// Table 1's column for MSS 1024.
fn paper_1024() -> usize {
    table1_column(1024).unwrap_or(3)
}

/// The blocks of the paper's Table 1, in its order, with its seconds for
/// 20 MB at MSS 1024 on a 386/33 sender.
fn paper_blocks_1024() -> impl Iterator<Item = (Block, f64)> {
    TABLE1.iter().map(|r| (r.1, r.2[paper_1024()]))
}

/// One CPU-sampled trial: its MSS, attribution and counters.
pub(super) struct Sampled {
    pub mss: f64,
    pub attribution: CpuAttribution,
    bytes: f64,
    pub packets: f64,
    /// The trial switched offloads off (`--offload`).
    pub offloads_off: bool,
    /// Its samples of the sender's and the receiver's threads.
    samples: [u64; 2],
}

/// The MSS experiment's arms: offloads off (every segment handled one by
/// one, the paper's condition) first, then offloads as the devices have
/// them; a run without `--offload` has only the second.
const MSS_ARMS: [(bool, &str); 2] = [
    (true, "offloads off"),
    (false, "offloads as the devices have them"),
];

/// One trial's totals for Figs 8–9: its MSS, bytes, data segments and
/// the sender's CPU seconds (the engine's, from the thread's clock).
pub(super) struct Total {
    pub mss: f64,
    pub bytes: f64,
    pub packets: f64,
    pub cpu_s: f64,
    /// The trial switched offloads off (`--offload`).
    pub offloads_off: bool,
}

/// The totals of experiment `id`, from its unprobed twin where the run has
/// one ([`StudyData::totals_of`]).
pub(super) fn totals(d: &StudyData, id: &str) -> (Vec<Total>, TotalsSource) {
    let (trials, source) = d.totals_of(id);
    let v = trials
        .into_iter()
        .filter_map(|(t, p)| {
            let m = &t.outcome.metrics;
            Some(Total {
                mss: p.mss.map(f64::from).or_else(|| m.get("snd_mss").copied())?,
                bytes: *m.get("bytes")?,
                packets: *m.get("data_segs_out")?,
                cpu_s: *m.get("cpu_sender_s")?,
                offloads_off: p.offload.is_some(),
            })
        })
        .filter(|t| t.bytes > 0.0 && t.packets > 0.0)
        .collect();
    (v, source)
}

/// Which trials the totals came from, in words.
pub(super) fn totals_sentence(source: TotalsSource, n: usize) -> String {
    match source {
        TotalsSource::Unprobed => format!(
            "Totals, the curve and the fit come from the MSS experiment's unprobed twin ({n} \
             trials, the sender's CPU from its thread clock): the CPU sampler's own cost is not \
             in them. The per-block shares elsewhere come from the sampled trials."
        ),
        TotalsSource::Probed => format!(
            "Totals, the curve and the fit come from the CPU-sampled trials themselves ({n}; this \
             run has no unprobed twin): they carry the sampler's own cost (11–16% of a CPU at \
             10 kHz on this host)."
        ),
    }
}

/// The CPU-sampled trials of experiment `id`.
pub(super) fn sampled(d: &StudyData, id: &str) -> Vec<Sampled> {
    d.trials_of(id)
        .into_iter()
        .filter_map(|(t, p)| {
            let prof = d.profiles.get(&t.id)?;
            let m = &t.outcome.metrics;
            Some(Sampled {
                mss: p.mss.map(f64::from).or_else(|| m.get("snd_mss").copied())?,
                attribution: attribute(prof),
                bytes: *m.get("bytes")?,
                packets: *m.get("data_segs_out")?,
                offloads_off: p.offload.is_some(),
                samples: [
                    role_samples(prof, ThreadRole::Sender),
                    role_samples(prof, ThreadRole::Receiver),
                ],
            })
        })
        .filter(|s| s.bytes > 0.0)
        .collect()
}

/// Mean seconds per 20 MB in each block for one role, per MSS.
fn blocks_per_mss(v: &[Sampled], role: ThreadRole) -> BTreeMap<u64, Vec<(Block, f64)>> {
    let mut acc: BTreeMap<u64, (usize, Vec<f64>)> = BTreeMap::new();
    for s in v {
        let Some(r) = s.attribution.role(role) else {
            continue;
        };
        let e = acc
            .entry(s.mss as u64)
            .or_insert_with(|| (0, vec![0.0; Block::ALL.len()]));
        e.0 += 1;
        for (i, b) in Block::ALL.iter().enumerate() {
            e.1[i] += r.block_s(*b) * PAPER_BYTES / s.bytes;
        }
    }
    acc.into_iter()
        .map(|(mss, (n, sums))| {
            (
                mss,
                Block::ALL
                    .iter()
                    .zip(sums)
                    .map(|(b, s)| (*b, s / n as f64))
                    .collect(),
            )
        })
        .collect()
}

/// Per trial of `role` at `mss`, each of `blocks`' share of the role's
/// CPU time in that trial.
fn block_shares(v: &[Sampled], role: ThreadRole, mss: u64, blocks: &[Block]) -> Vec<Vec<f64>> {
    v.iter()
        .filter(|s| s.mss as u64 == mss)
        .filter_map(|s| s.attribution.role(role))
        .filter(|r| r.cpu_s > 0.0)
        .map(|r| blocks.iter().map(|b| r.block_s(*b) / r.cpu_s).collect())
        .collect()
}

/// The fewest samples of `role` in one trial, per MSS.
fn fewest_per_mss(v: &[Sampled], role: ThreadRole) -> BTreeMap<u64, u64> {
    let i = usize::from(role != ThreadRole::Sender);
    let mut out: BTreeMap<u64, u64> = BTreeMap::new();
    for s in v {
        let e = out.entry(s.mss as u64).or_insert(u64::MAX);
        *e = (*e).min(s.samples[i]);
    }
    out
}

fn blocks_section(d: &StudyData) -> Section {
    let mut s = Section::new("CPU time per function block against MSS (Table 1, Figs 3–7)");
    s.paper_finding(format!("{CITE}, Table 1 and Fig. 3"), {
        let (i, total) = (paper_1024(), TABLE1_SENDER_TOTAL[paper_1024()]);
        let block = |b: Block| {
            let s = TABLE1.iter().find(|r| r.1 == b).map_or(0.0, |r| r.2[i]);
            (s, s / total * 100.0)
        };
        let (driver, tcp, ip) = (
            block(Block::DriverOut),
            block(Block::TcpOutput),
            block(Block::IpOutput),
        );
        format!(
            "Sending {TRANSFER_MB} MB at MSS {} took {total:.1} s of a 386/33's CPU: \
                 driver_out {:.1} s ({:.0}%, moving data to the card), tcp_output {:.1} s \
                 ({:.0}%), ip_output {:.1} s ({:.0}%); the time per block fell with larger \
                 segments except driver_out, a per-byte cost.",
            TABLE1_MSS[i], driver.0, driver.1, tcp.0, tcp.1, ip.0, ip.1
        )
    });
    let all = sampled(d, "mss-blocks");
    if all.is_empty() {
        s.warning(
            "No CPU-sampled trial of the MSS experiment: it needs --probe cpu (root, perf events).",
        );
        return s;
    }
    // The paper's stack handled every segment: the blocks come from the
    // trials with offloads off where the run has them.
    let arm_off = all.iter().any(|x| x.offloads_off);
    let v: Vec<Sampled> = all
        .into_iter()
        .filter(|x| x.offloads_off == arm_off)
        .collect();
    s.paragraph(offloads::controlled_sentence(&[(
        format!(
            "the blocks below come from the trials with {}",
            if arm_off {
                "offloads off"
            } else {
                "offloads as the devices have them"
            }
        ),
        offload_states(d, "mss-blocks", |p| p.offload.is_some() == arm_off),
    )]));
    for (role, name) in [
        (ThreadRole::Sender, "sender"),
        (ThreadRole::Receiver, "receiver"),
    ] {
        let per = blocks_per_mss(&v, role);
        if per.is_empty() {
            continue;
        }
        let fewest = fewest_per_mss(&v, role);
        let enough = |m: &u64| fewest.get(m).is_some_and(|n| *n >= MIN_SHARE_SAMPLES);
        let short: Vec<String> = per
            .keys()
            .filter(|m| !enough(m))
            .map(|m| format!("MSS {m}: {}", too_few(fewest.get(m).copied().unwrap_or(0))))
            .collect();
        let mut header = vec![format!("{name}: block")];
        header.extend(per.keys().map(|m| format!("MSS {m}")));
        let mut t = Table::new(header)
            .with_caption(format!(
                "CPU seconds per 20 MB in each block on the {name}'s threads (measured transfer scaled to 20 MB). \
                 On veth and loopback the receiving side's driver_input, ip_input and tcp_input run in the \
                 softirq of the thread that sent the packet: data input counts toward the sender, ACK input \
                 toward the receiver."
            ))
            .key();
        for (i, b) in Block::ALL.iter().enumerate() {
            if per.values().all(|v| v[i].1 < 1e-6) {
                continue;
            }
            let mut row = vec![b.name().to_string()];
            row.extend(per.values().map(|v| format!("{:.4}", v[i].1)));
            t.row(row);
        }
        let mut total = vec![format!("total ({name})")];
        total.extend(
            per.values()
                .map(|v| format!("{:.4}", v.iter().map(|x| x.1).sum::<f64>())),
        );
        t.row(total);
        s.push(t);
        let cats: Vec<String> = Block::ALL.iter().map(|b| b.name().to_string()).collect();
        s.push(StackedBars {
            title: format!("Share of the {name}'s CPU time per block, by MSS (Figs 3, 6)"),
            caption: (!short.is_empty()).then(|| {
                format!(
                    "Left out, too few samples in a trial (at least {MIN_SHARE_SAMPLES} each): {}.",
                    short.join("; ")
                )
            }),
            value_label: "share of CPU time (%)".into(),
            categories: cats,
            bars: per
                .iter()
                .filter(|(mss, _)| enough(mss))
                .map(|(mss, v)| {
                    let tot: f64 = v.iter().map(|x| x.1).sum();
                    (
                        format!("MSS {mss}"),
                        v.iter()
                            .map(|x| if tot > 0.0 { x.1 / tot * 100.0 } else { 0.0 })
                            .collect(),
                    )
                })
                .collect(),
        });
        // The MSS nearest 1024, to set against the paper.
        let Some((mss, blocks)) = per.iter().min_by_key(|(m, _)| m.abs_diff(1024)) else {
            continue;
        };
        let tot: f64 = blocks.iter().map(|x| x.1).sum();
        if !enough(mss) {
            s.finding(format!(
                "On the {name} at MSS {mss}, the blocks' shares are {}: at least \
                 {MIN_SHARE_SAMPLES} per trial are needed.",
                too_few(fewest.get(mss).copied().unwrap_or(0))
            ));
        } else if tot > 0.0 {
            let candidates: Vec<Block> = Block::ALL
                .into_iter()
                .filter(|b| *b != Block::Other && *b != Block::Application)
                .collect();
            let names: Vec<&str> = candidates.iter().map(|b| b.name()).collect();
            // Shares and this total come from sampled trials: the finding
            // names what sampling cost (issue 30, rule 1).
            let cost = crate::probe_effect::cost_sentence(d, "mss-blocks");
            s.finding(format!(
                "{} {cost}",
                claims::most_cpu_sentence(
                    name,
                    *mss,
                    &names,
                    &block_shares(&v, role, *mss, &candidates),
                    tot,
                )
            ));
        }
        if role == ThreadRole::Sender {
            let mut cmp = Table::new(["block", "paper, MSS 1024 (s)", "this host (s)", "ratio"])
                .with_caption(format!(
                    "The paper's Table 1 at MSS 1024 against this host's sender at MSS {mss}"
                ));
            for (b, paper) in paper_blocks_1024() {
                let here = blocks.iter().find(|x| x.0 == b).map_or(0.0, |x| x.1);
                cmp.row([
                    b.name().to_string(),
                    format!("{paper:.2}"),
                    format!("{here:.4}"),
                    if here > 0.0 {
                        format!("{:.0}×", paper / here)
                    } else {
                        "—".into()
                    },
                ]);
            }
            s.push(cmp);
        }
    }
    s
}

/// "With offloads off, the sender's …": a sentence said of one arm.
fn of_arm(label: &str, sentence: &str) -> String {
    let mut c = sentence.chars();
    let first = c
        .next()
        .map(|x| x.to_lowercase().to_string())
        .unwrap_or_default();
    format!("With {label}, {first}{}", c.as_str())
}

fn fit_section(d: &StudyData) -> Section {
    let mut s = Section::new("CPU time against MSS and packet count (Figs 8–9)");
    s.paper_finding(
        format!("{CITE}, Figs 8–9"),
        format!(
            "Sender CPU time for {TRANSFER_MB} MB rose sharply at small segments ({:.1} s at {} \
             against {:.1} s at {}) and was linear in the number of packets sent.",
            TABLE1_SENDER_TOTAL[0], TABLE1_MSS[0], TABLE1_SENDER_TOTAL[4], TABLE1_MSS[4]
        ),
    );
    // Totals and the fit come from the unprobed twin (issue 30, rule 1).
    let (all, source) = totals(d, "mss-blocks");
    if all.is_empty() {
        s.warning("No trial of the MSS experiment in this run.");
        return s;
    }
    s.paragraph(totals_sentence(source, all.len()));
    let present: Vec<(bool, &str)> = MSS_ARMS
        .into_iter()
        .filter(|(off, _)| all.iter().any(|x| x.offloads_off == *off))
        .collect();
    s.paragraph(offloads::controlled_sentence(
        &present
            .iter()
            .map(|(off, label)| {
                (
                    label.to_string(),
                    offload_states(d, "mss-blocks", |p| p.offload.is_some() == *off),
                )
            })
            .collect::<Vec<_>>(),
    ));
    let mut f = Figure::new(
        "Sender CPU seconds per 20 MB against MSS (Fig. 8)",
        "MSS (bytes)",
        "sender CPU (s per 20 MB)",
    );
    f.reference = Some(Series::new(
        "paper: 386/33 sender (Table 1, s ÷ 100)",
        TABLE1_MSS
            .iter()
            .zip(TABLE1_SENDER_TOTAL)
            .map(|(&x, y)| Point::new(f64::from(x), y / 100.0))
            .collect(),
    ));
    let mut g = Figure::new(
        "Sender CPU seconds against data segments sent, per 20 MB (Fig. 9)",
        "data segments per 20 MB",
        "sender CPU (s per 20 MB)",
    );
    let mut findings = Vec::new();
    let mut warnings = Vec::new();
    for (off, label) in present {
        let v: Vec<&Total> = all.iter().filter(|x| x.offloads_off == off).collect();
        let obs: Vec<(f64, f64, f64)> = v.iter().map(|x| (x.packets, x.bytes, x.cpu_s)).collect();
        let mut by_mss: BTreeMap<u64, Vec<(f64, f64)>> = BTreeMap::new();
        for x in &v {
            by_mss.entry(x.mss as u64).or_default().push((
                x.cpu_s * PAPER_BYTES / x.bytes,
                x.packets * PAPER_BYTES / x.bytes,
            ));
        }
        let curve: Vec<CurvePoint> = by_mss
            .iter()
            .filter_map(|(m, xs)| {
                let cpu: Vec<f64> = xs.iter().map(|x| x.0).collect();
                let st = analysis::summarize(&cpu)?;
                Some(CurvePoint {
                    x: *m as f64,
                    mean: st.mean,
                    ci: if st.ci95.is_finite() { st.ci95 } else { 0.0 },
                })
            })
            .collect();
        if curve.is_empty() {
            continue;
        }
        f.series
            .push(series(&format!("this host, {label}"), &curve));
        findings.push(of_arm(
            label,
            &fit_claims::shape_finding(
                "Sender CPU per 20 MB",
                "MSS",
                &curve,
                "s per 20 MB",
                &|x| format!("{x:.0} B"),
            ),
        ));
        g.series.push(
            Series::new(
                format!("trials, {label}"),
                by_mss
                    .values()
                    .flatten()
                    .map(|&(cpu, pk)| Point::new(pk, cpu))
                    .collect(),
            )
            .with_style(SeriesStyle::Points),
        );
        match fit_packet_byte(&obs) {
            Ok(fit) if !fit_claims::failed(&fit) => {
                let mut xs: Vec<f64> = by_mss.values().flatten().map(|x| x.1).collect();
                xs.sort_by(f64::total_cmp);
                g.series.push(
                    Series::new(
                        format!("fit, {label}: per packet + per byte"),
                        xs.iter()
                            .map(|&pk| {
                                Point::new(
                                    pk,
                                    fit.per_packet_us * 1e-6 * pk
                                        + fit.per_byte_ns * 1e-9 * PAPER_BYTES,
                                )
                            })
                            .collect(),
                    )
                    .with_style(SeriesStyle::Path),
                );
                findings.push(of_arm(label, &fit_claims::packet_byte_sentence(&fit, None)));
            }
            // A failed fit is not drawn: the sentence says why it failed.
            Ok(fit) => findings.push(of_arm(
                label,
                &fit_claims::packet_byte_sentence(
                    &fit,
                    mss_contrast(&by_mss, &curve, off).as_ref(),
                ),
            )),
            Err(e) => warnings.push(format!("No per-packet and per-byte fit with {label}: {e}.")),
        }
    }
    s.push(f);
    s.push(g);
    for x in findings {
        s.finding(x);
    }
    for w in warnings {
        s.warning(w);
    }
    s
}
fn stream_section(d: &StudyData) -> Section {
    let mut s = Section::new("Stream size, with and without NODELAY (Fig. 10)");
    s.paper_finding(
        format!("{CITE}, Fig. 10"),
        "Transmission time rose sharply for small stream sizes (bytes per send call), \
         especially with PUSH set on every send.",
    );
    let mut f = Figure::new(
        "Sender CPU per KB against write size, MSS 1024",
        "write size (bytes)",
        "sender CPU (µs per KB)",
    );
    f.log_x = true;
    f.x_ticks = report::TickFormat::Bytes;
    let mut curves = Vec::new();
    for (on, name) in [
        (true, "NODELAY (PUSH each write)"),
        (false, "Nagle (default)"),
    ] {
        let c = d.curve(
            "stream-size",
            "service_demand_sender_us_per_kb",
            1.0,
            crate::figures::write_size,
            |p| p.nodelay == on,
        );
        if !c.is_empty() {
            f.series.push(series(name, &c));
            curves.push((name, c));
        }
    }
    if curves.is_empty() {
        s.warning("The stream-size experiment has no successful trials in this run.");
        return s;
    }
    s.paragraph(offloads::controlled_sentence(&[(
        "all trials".into(),
        offload_states(d, "stream-size", |_| true),
    )]));
    s.push(f);
    for (name, c) in &curves {
        s.finding(fit_claims::shape_finding(
            &format!("With {name}, sender CPU per KB"),
            "write size",
            c,
            "µs per KB",
            &|x| format!("{x:.0} B"),
        ));
    }
    if let [(_, on), (_, off)] = curves.as_slice() {
        if let Some(f) = on
            .first()
            .zip(off.first())
            .and_then(|(a, b)| claims::nodelay_sentence(a, b))
        {
            s.finding(f);
        }
    }
    s
}

/// The role's share of CPU time in the part `part` picks out of its
/// attribution, pooled over `trials`, with the fewest samples the role had
/// in one of them.
fn sampled_share(
    d: &StudyData,
    trials: &[(&record::TrialRecord, &TrialParams)],
    role: ThreadRole,
    part: impl Fn(&analysis::cpu::RoleAttribution) -> f64,
) -> Option<SampledShare> {
    let (mut part_s, mut cpu_s, mut fewest) = (0.0, 0.0, u64::MAX);
    for (t, _) in trials {
        let Some(prof) = d.profiles.get(&t.id) else {
            continue;
        };
        let a = attribute(prof);
        let Some(r) = a.role(role) else { continue };
        part_s += part(r);
        cpu_s += r.cpu_s;
        fewest = fewest.min(role_samples(prof, role));
    }
    (cpu_s > 0.0).then(|| SampledShare {
        share: part_s / cpu_s,
        samples: fewest,
    })
}

/// The checksum experiment's trials with checksum offload on or off,
/// with segmentation offloads held off (`--offload`) or as the devices
/// have them.
fn checksum_trials(
    d: &StudyData,
    checksum: bool,
    held_off: bool,
) -> Vec<(&record::TrialRecord, &TrialParams)> {
    d.trials_of("checksum")
        .into_iter()
        .filter(|(_, p)| p.checksum_offload == checksum && p.offload.is_some() == held_off)
        .collect()
}

/// The checksum experiment's arm with checksum offload on or off.
fn checksum_arm(d: &StudyData, checksum: bool, held_off: bool) -> ChecksumArm {
    let trials = checksum_trials(d, checksum, held_off);
    let layer = |r: &analysis::cpu::RoleAttribution| r.layer_s(CpuLayer::Checksum);
    ChecksumArm {
        sender: sampled_share(d, &trials, ThreadRole::Sender, layer),
        receiver: sampled_share(d, &trials, ThreadRole::Receiver, layer),
        throughput: d
            .points_of("checksum")
            .into_iter()
            .find(|p| {
                p.params.checksum_offload == checksum && p.params.offload.is_some() == held_off
            })
            .and_then(|p| p.metrics.get("throughput_bps").map(|m| (m.mean, m.ci95))),
    }
}

fn checksum_section(d: &StudyData) -> Section {
    let mut s = Section::new("The checksum's cost, offload on and off (§3, Fig. 4)");
    s.paper_finding(
        format!("{CITE}, Fig. 4"),
        format!(
            "The TCP checksum, in assembly, took almost {CHECKSUM_SHARE}% of all the time, \
             {CHECKSUM_TCPIP_SHARE} of TCP/IP's processing; the authors urged doing it in hardware."
        ),
    );
    let mut t = Table::new([
        "segmentation offloads",
        "checksum offload",
        "sender CPU in checksum",
        "receiver CPU in checksum",
        "throughput",
    ])
    .with_caption(format!(
        "Share of each side's CPU time in the checksum layer (csum_partial and kin), shown only \
         where every trial had {MIN_SHARE_SAMPLES} samples or more. Turning transmit checksum \
         offload off also turns off TSO, so the comparison that isolates the checksum holds \
         TSO, GSO and GRO off in both arms."
    ))
    .key();
    let mut pairs = Vec::new();
    for (held_off, seg) in [(true, "held off"), (false, "as the devices have them")] {
        if checksum_trials(d, true, held_off).is_empty()
            && checksum_trials(d, false, held_off).is_empty()
        {
            continue;
        }
        let (on, off) = (
            checksum_arm(d, true, held_off),
            checksum_arm(d, false, held_off),
        );
        for (k, a) in [("on", &on), ("off", &off)] {
            t.row([
                seg.to_string(),
                k.to_string(),
                share_words(a.sender.as_ref()),
                share_words(a.receiver.as_ref()),
                a.throughput.map_or("—".into(), |(m, c)| {
                    measure(m, Some(c), Unit::Si("bit/s"))
                }),
            ]);
        }
        let states = |c: bool| {
            offload_states(d, "checksum", move |p| {
                p.checksum_offload == c && p.offload.is_some() == held_off
            })
        };
        let (with, without) = (states(true), states(false));
        let differing =
            (!with.is_empty() && !without.is_empty()).then(|| offloads::differing(&with, &without));
        pairs.push((held_off, seg, on, off, differing));
    }
    if pairs.is_empty()
        || pairs
            .iter()
            .all(|p| p.2.sender.is_none() && p.3.sender.is_none())
    {
        s.warning("No CPU-sampled trial of the checksum experiment: it needs --probe cpu (root).");
        return s;
    }
    s.push(t);
    for (held_off, seg, on, off, differing) in &pairs {
        s.paragraph(offloads::controlled_sentence(&[
            (
                format!("segmentation offloads {seg}, checksum offload on"),
                offload_states(d, "checksum", |p| {
                    p.checksum_offload && p.offload.is_some() == *held_off
                }),
            ),
            (
                format!("segmentation offloads {seg}, checksum offload off"),
                offload_states(d, "checksum", |p| {
                    !p.checksum_offload && p.offload.is_some() == *held_off
                }),
            ),
        ]));
        for f in checksum_sentences(on, off, differing.as_deref()) {
            s.finding(format!("Segmentation offloads {seg}: {f}"));
        }
    }
    if let Some(bw) = d.host.checksum_bw {
        if let Some(m) = d
            .points_of("checksum")
            .into_iter()
            .find(|p| p.params.checksum_offload && p.params.offload.is_none())
            .and_then(|p| p.metrics.get("service_demand_sender_us_per_kb"))
        {
            s.finding(format!(
                "tcplab calibrate checksums at {} here: one byte costs {}, against {} of \
                 sender CPU per byte moved at 64 KB writes with offloads as the devices have \
                 them.",
                measure(bw, None, Unit::Si("B/s")),
                measure(1.0 / bw, None, Unit::Si("s")),
                measure(
                    m.mean * 1e-6 / 1024.0,
                    Some(m.ci95 * 1e-6 / 1024.0),
                    Unit::Si("s")
                ),
            ));
        }
    }
    s
}
/// The smallest and largest MSS of the sweep side by side: segments per
/// 20 MB and the sender's CPU per 20 MB, from the trials at each.
fn mss_contrast(
    by_mss: &BTreeMap<u64, Vec<(f64, f64)>>,
    curve: &[CurvePoint],
    offloads_off: bool,
) -> Option<fit_claims::MssContrast> {
    let segments = |xs: &Vec<(f64, f64)>| xs.iter().map(|x| x.1).sum::<f64>() / xs.len() as f64;
    let (small, small_xs) = by_mss.iter().next()?;
    let (large, large_xs) = by_mss.iter().next_back()?;
    if small == large || small_xs.is_empty() || large_xs.is_empty() {
        return None;
    }
    Some(fit_claims::MssContrast {
        small_mss: *small as f64,
        large_mss: *large as f64,
        segments_ratio: segments(small_xs) / segments(large_xs),
        cpu_small: *curve.iter().find(|p| p.x == *small as f64)?,
        cpu_large: *curve.iter().find(|p| p.x == *large as f64)?,
        offloads_off,
    })
}
