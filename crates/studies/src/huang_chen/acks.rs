//! Fig. 5, the cost of ACKs: quick ACKs (the `quickack 1` route metric
//! and TCP_QUICKACK) against delayed ACKs, counted from TCP_INFO, with the
//! ACK work's share of both endpoints' CPU samples.

use super::claims::{ack_sentence, trial_share_words, AckArm, TrialShares, MIN_SHARE_SAMPLES};
use super::offloads::{self, offload_states};
use super::paper::{ACK_SAVING, ACK_SHARE};
use super::samples::count_stacks;
use crate::data::StudyData;
use analysis::findings::CurvePoint;
use record::ThreadRole;
use report::{measure, Section, Table, Unit};

const CITE: &str = "Huang & Chen";

/// ACK work: making and sending an ACK (`__tcp_send_ack`) and processing
/// one (`tcp_ack`), with everything they call.
const ACK_WORK: [&str; 2] = ["__tcp_send_ack", "tcp_ack"];

/// The ACK experiment's trials with quick ACKs on (`true`) or off.
fn ack_arm(d: &StudyData, quickack: bool) -> Option<(AckArm, Option<f64>, Option<f64>)> {
    let trials: Vec<_> = d
        .trials_of("ack")
        .into_iter()
        .filter(|(_, p)| p.quickack == quickack)
        .collect();
    let counts: Vec<(f64, f64)> = trials
        .iter()
        .filter_map(|(t, _)| {
            let m = &t.outcome.metrics;
            Some((*m.get("receiver_segs_out")?, *m.get("data_segs_out")?))
        })
        .filter(|c| c.1 > 0.0)
        .collect();
    let ratios: Vec<f64> = counts.iter().map(|c| c.0 / c.1).collect();
    let st = analysis::summarize(&ratios)?;
    let mean = |k: &str| {
        let v: Vec<f64> = trials
            .iter()
            .filter_map(|(t, _)| t.outcome.metrics.get(k).copied())
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let sampled: Vec<(u64, u64)> = trials
        .iter()
        .filter_map(|(t, _)| d.profiles.get(&t.id))
        .map(|prof| {
            let c = count_stacks(
                prof,
                &[ThreadRole::Sender, ThreadRole::Receiver],
                &ACK_WORK,
                &[],
            );
            (c.hit, c.total)
        })
        .collect();
    Some((
        AckArm {
            acks: counts.iter().map(|c| c.0).sum(),
            data_segments: counts.iter().map(|c| c.1).sum(),
            per_segment: CurvePoint {
                x: if quickack { 1.0 } else { 0.0 },
                mean: st.mean,
                ci: if st.ci95.is_finite() { st.ci95 } else { 0.0 },
            },
            ack_share: TrialShares::from_counts(0.0, &sampled),
        },
        mean("service_demand_receiver_us_per_kb"),
        mean("throughput_bps"),
    ))
}

/// The section.
pub(super) fn ack_section(d: &StudyData) -> Section {
    let mut s = Section::new("The cost of ACKs: quick ACKs against delayed ACKs (Fig. 5)");
    s.paper_finding(
        format!("{CITE}, Fig. 5"),
        format!(
            "Sending and receiving an ACK for every data packet took roughly {ACK_SHARE}% of all \
             the processing; ACKing every second packet, as many products did, would save \
             {ACK_SAVING}%."
        ),
    );
    let mut t = Table::new([
        "ACKs",
        "ACKs per data segment",
        "ACK work (share of both endpoints' CPU)",
        "receiver CPU per KB",
        "throughput",
    ])
    .with_caption(format!(
        "Receiver woken per segment (--rcvlowat 1). Quick ACKs: the quickack 1 metric on the \
         receiver's routes and TCP_QUICKACK re-armed after every read; delayed: the kernel's \
         default. ACKs per data segment: the receiver's segments out over the sender's data \
         segments out (TCP_INFO). ACK work: samples of the sender's and receiver's threads whose \
         kernel stack holds __tcp_send_ack or tcp_ack (on veth each side's softirq runs the \
         other's input); shown only where every trial had {MIN_SHARE_SAMPLES} samples or more."
    ))
    .key();
    let mut arms = Vec::new();
    for (on, name) in [(true, "quick"), (false, "delayed (default)")] {
        let Some((arm, per_kb, thr)) = ack_arm(d, on) else {
            continue;
        };
        t.row([
            name.to_string(),
            measure(arm.per_segment.mean, Some(arm.per_segment.ci), Unit::Plain),
            trial_share_words(arm.ack_share.as_ref()),
            per_kb.map_or("—".into(), |x| format!("{x:.3} µs")),
            thr.map_or("—".into(), |x| measure(x, None, Unit::Si("bit/s"))),
        ]);
        arms.push(arm);
    }
    if arms.is_empty() {
        s.warning("The ACK experiment has no successful trials in this run.");
        return s;
    }
    let quick_routes: Vec<f64> = d
        .trials_of("ack")
        .into_iter()
        .filter(|(_, p)| p.quickack)
        .filter_map(|(t, _)| t.outcome.metrics.get("quickack_routes").copied())
        .collect();
    s.paragraph(format!(
        "{} {}",
        if !quick_routes.is_empty() && quick_routes.iter().all(|n| *n > 0.0) {
            "Every quick-ACK trial set the quickack metric on the receiver's routes."
        } else {
            "Not every quick-ACK trial set the quickack metric on the receiver's routes \
             (TCP_QUICKACK alone lapses between reads)."
        },
        offloads::controlled_sentence(&[
            (
                "quick ACKs".into(),
                offload_states(d, "ack", |p| p.quickack)
            ),
            (
                "delayed ACKs".into(),
                offload_states(d, "ack", |p| !p.quickack)
            ),
        ])
    ));
    s.push(t);
    if let [quick, delayed] = arms.as_slice() {
        s.finding(ack_sentence(quick, delayed));
    }
    s
}
