//! What the ACK and checksum experiments may claim. A CPU share is stated
//! only from enough samples in every trial behind it; quick ACKs are
//! credited with a cost only where they produced more ACKs than delayed
//! ACKs; and a throughput change with checksum offload off is put down to
//! checksumming only where the arms' recorded offload states differ in the
//! checksum alone (turning transmit checksum offload off also turns off
//! segmentation offload, TSO).

use super::paper::{table1_column, ACK_SHARE, CHECKSUM_SHARE, TABLE1_SENDER_TOTAL, TRANSFER_MB};
use analysis::findings::{differ, largest, CurvePoint, Largest};
use report::{measure, Unit};

/// The fewest CPU samples a trial must have for a share to be stated from
/// it (the floor the verdicts and the run report use too).
pub(super) const MIN_SHARE_SAMPLES: u64 = analysis::trial_cost::MIN_CPU_SAMPLES;

/// A share of one role's CPU time with the samples it rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SampledShare {
    /// The fraction (0–1), pooled over the trials.
    pub share: f64,
    /// The role's samples in the trial that had the fewest.
    pub samples: u64,
}

impl SampledShare {
    /// The share, if every trial behind it had enough samples.
    pub fn stated(&self) -> Option<f64> {
        (self.samples >= MIN_SHARE_SAMPLES).then_some(self.share)
    }
}

/// "n/a (N samples)": a share that too few samples stand behind.
pub(super) fn too_few(samples: u64) -> String {
    format!("n/a ({samples} samples)")
}

/// A share as a report prints it: "4.2%", "n/a (N samples)" or "not
/// sampled".
pub(super) fn share_words(s: Option<&SampledShare>) -> String {
    match s {
        None => "not sampled".into(),
        Some(x) => match x.stated() {
            Some(v) => format!("{:.1}%", v * 100.0),
            None => too_few(x.samples),
        },
    }
}

/// A share measured trial by trial: its mean ± 95% CI over the trials
/// (fractions 0–1) and the fewest samples any trial had.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct TrialShares {
    /// Mean and CI half-width of the trials' shares.
    pub point: CurvePoint,
    /// The fewest samples behind one trial's share.
    pub fewest: u64,
}

impl TrialShares {
    /// From each trial's (hit, total) sample counts; `None` without trials.
    pub fn from_counts(x: f64, counts: &[(u64, u64)]) -> Option<TrialShares> {
        let shares: Vec<f64> = counts
            .iter()
            .map(|&(hit, total)| {
                if total == 0 {
                    0.0
                } else {
                    hit as f64 / total as f64
                }
            })
            .collect();
        let st = analysis::summarize(&shares)?;
        Some(TrialShares {
            point: CurvePoint {
                x,
                mean: st.mean,
                ci: if st.ci95.is_finite() { st.ci95 } else { 0.0 },
            },
            fewest: counts.iter().map(|c| c.1).min().unwrap_or(0),
        })
    }

    /// Whether every trial had enough samples for its share.
    pub fn stated(&self) -> bool {
        self.fewest >= MIN_SHARE_SAMPLES
    }

    /// "3.9 ± 0.4 %", or "n/a (N samples)".
    pub fn words(&self) -> String {
        if self.stated() {
            measure(self.point.mean, Some(self.point.ci), Unit::Percent)
        } else {
            too_few(self.fewest)
        }
    }
}

/// Words for an optional trial-by-trial share.
pub(super) fn trial_share_words(s: Option<&TrialShares>) -> String {
    s.map_or("not sampled".into(), TrialShares::words)
}

/// One arm of the ACK experiment (quick or delayed ACKs), over its trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct AckArm {
    /// ACKs the receiver sent, summed over the trials.
    pub acks: f64,
    /// Data segments the sender sent, summed over the trials.
    pub data_segments: f64,
    /// ACKs per data segment: mean over trials ± 95% CI half-width.
    pub per_segment: CurvePoint,
    /// Both endpoints' CPU share in ACK work (making, sending and
    /// processing ACKs), trial by trial.
    pub ack_share: Option<TrialShares>,
}

fn ack_counts(a: &AckArm) -> String {
    format!(
        "{} ({:.0} ACKs for {:.0} segments)",
        measure(
            a.per_segment.mean,
            Some(a.per_segment.ci),
            Unit::Fixed("ACKs per data segment")
        ),
        a.acks,
        a.data_segments
    )
}

/// The finding on quick against delayed ACKs.
pub(super) fn ack_sentence(quick: &AckArm, delayed: &AckArm) -> String {
    let (q, d) = (&quick.per_segment, &delayed.per_segment);
    let took_effect = q.mean > d.mean && differ(q, d);
    if !took_effect {
        return format!(
            "Quick ACKs did not take effect: the receiver sent {} with them and {} with delayed \
             ACKs, no more ACKs beyond the 95% CIs, so these trials cannot tell what an ACK per \
             segment costs.",
            ack_counts(quick),
            ack_counts(delayed)
        );
    }
    let per_segment = if q.mean >= 0.9 {
        "about one ACK per data segment".to_string()
    } else {
        format!(
            "fewer than one ACK per data segment (one per {:.1} segments; Linux 6.7 and later \
             defer the regular ACK while they process the segments that queued behind a reader \
             holding the socket, one ACK per batch even in quick-ACK mode, and a busy receiver \
             holds its socket much of the time)",
            1.0 / q.mean.max(1e-9)
        )
    };
    let cost = match (&quick.ack_share, &delayed.ack_share) {
        (Some(a), Some(b)) if a.stated() && b.stated() => {
            let (a, b) = (&a.point, &b.point);
            if differ(a, b) {
                format!(
                    "; ACK work took {} of the two endpoints' CPU with quick ACKs and {} with \
                     delayed ACKs, {:+.2} percentage points beyond the 95% CIs",
                    quick
                        .ack_share
                        .as_ref()
                        .map_or(String::new(), |s| s.words()),
                    delayed
                        .ack_share
                        .as_ref()
                        .map_or(String::new(), |s| s.words()),
                    (a.mean - b.mean) * 100.0
                )
            } else {
                format!(
                    "; ACK work took {} of the two endpoints' CPU with quick ACKs and {} with \
                     delayed ACKs, no difference beyond the 95% CIs (a change smaller than {:.2} \
                     percentage points could not have been seen)",
                    quick
                        .ack_share
                        .as_ref()
                        .map_or(String::new(), |s| s.words()),
                    delayed
                        .ack_share
                        .as_ref()
                        .map_or(String::new(), |s| s.words()),
                    (analysis::findings::resolution_of(a.mean, a.ci, b.mean, b.ci)) * 100.0
                )
            }
        }
        (a, b) => format!(
            "; ACK work's share of the two endpoints' CPU: {} and {}, too few samples to compare",
            trial_share_words(a.as_ref()),
            trial_share_words(b.as_ref())
        ),
    };
    format!(
        "Quick ACKs made the receiver send {:.2}× the ACKs of delayed ACKs, {per_segment} ({} \
         against {}){cost} (the paper: about {ACK_SHARE}% of all processing).",
        q.mean / d.mean.max(1e-9),
        ack_counts(quick),
        ack_counts(delayed),
    )
}

/// One arm of the checksum experiment (offload on or off).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(super) struct ChecksumArm {
    /// The sender's CPU share in the checksum layer.
    pub sender: Option<SampledShare>,
    /// The receiver's.
    pub receiver: Option<SampledShare>,
    /// Throughput, bit/s: mean and 95% CI half-width.
    pub throughput: Option<(f64, f64)>,
}

/// Whether a recorded offload (as "sender tso") is a segmentation or
/// receive-aggregation offload.
fn is_segmentation(feature: &str) -> bool {
    ["tso", "gso", "gro"]
        .iter()
        .any(|f| feature.split_whitespace().last() == Some(*f))
}

/// The findings on checksum offload: the checksum's CPU share, and what the
/// throughput change does (and does not) say about it. `differing` names
/// the offloads (as "sender tso") whose recorded state differs between the
/// arms' trials; `None` where the trials recorded no offload state.
pub(super) fn checksum_sentences(
    on: &ChecksumArm,
    off: &ChecksumArm,
    differing: Option<&[String]>,
) -> Vec<String> {
    let mut out = Vec::new();
    if on.sender.is_some() || off.sender.is_some() {
        out.push(format!(
            "With checksum offload off, the sender spends {} of its CPU checksumming ({} with \
             it on{}); the paper's 386 spent about {CHECKSUM_SHARE}%.",
            share_words(off.sender.as_ref()),
            share_words(on.sender.as_ref()),
            if on.receiver.is_some() || off.receiver.is_some() {
                format!(
                    "; the receiver: {} and {}",
                    share_words(off.receiver.as_ref()),
                    share_words(on.receiver.as_ref())
                )
            } else {
                String::new()
            },
        ));
    }
    let (Some((t_on, c_on)), Some((t_off, c_off))) = (on.throughput, off.throughput) else {
        return out;
    };
    let bps = |m: f64, c: f64| measure(m, Some(c), Unit::Si("bit/s"));
    let a = CurvePoint {
        x: 1.0,
        mean: t_on,
        ci: c_on,
    };
    let b = CurvePoint {
        x: 0.0,
        mean: t_off,
        ci: c_off,
    };
    if !differ(&a, &b) {
        out.push(format!(
            "Throughput does not differ beyond the 95% CIs with checksum offload on ({}) and \
             off ({}): a change smaller than {} could not have been seen.",
            bps(t_on, c_on),
            bps(t_off, c_off),
            measure(c_on + c_off, None, Unit::Si("bit/s")),
        ));
        return out;
    }
    let change = format!(
        "Throughput went from {} with checksum offload on to {} with it off, {:.2}× apart",
        bps(t_on, c_on),
        bps(t_off, c_off),
        t_on.max(t_off) / t_on.min(t_off)
    );
    let Some(differing) = differing else {
        out.push(format!(
            "{change}, but the trials recorded no offload state, so whether segmentation offload \
             changed with the checksum is unknown: the change cannot be put down to checksumming."
        ));
        return out;
    };
    let list = if differing.is_empty() {
        "nothing".to_string()
    } else {
        differing.join(", ")
    };
    let bound = |s: f64| {
        format!(
            "the checksum's {:.1}% of the sender's CPU could account for at most {:.2}× even on \
             a CPU-bound sender",
            s * 100.0,
            1.0 / (1.0 - s)
        )
    };
    let stated = off
        .sender
        .as_ref()
        .and_then(SampledShare::stated)
        .filter(|s| *s < 1.0);
    if differing.iter().any(|f| is_segmentation(f)) {
        let cause = format!(
            "the arms' recorded offloads differ in {list}: turning transmit checksum offload off \
             also turns off segmentation offload, so the change cannot be put down to \
             checksumming"
        );
        out.push(match stated {
            Some(s) => format!("{change}, but {cause}: {}.", bound(s)),
            None => format!(
                "{change}, but {cause}; the checksum's share of the sender's CPU was not measured \
                 with enough samples ({}) to bound its part.",
                share_words(off.sender.as_ref())
            ),
        });
    } else {
        let ratio = t_on.max(t_off) / t_on.min(t_off);
        out.push(format!(
            "{change}; the arms' recorded offloads differ only in {list} (segmentation and \
             receive offloads held alike), so the change comes with checksumming in software{}.",
            match stated {
                Some(s) if ratio <= 1.0 / (1.0 - s) => format!(": {}", bound(s)),
                Some(s) => format!(
                    ", yet {}, less than the {ratio:.2}× seen: the rest is not the sender's \
                     checksum CPU",
                    bound(s)
                ),
                None => String::new(),
            }
        ));
    }
    out
}

/// Fig. 10's NODELAY claim at one write size, from the sender's CPU per KB
/// with NODELAY (`on`) and with Nagle's algorithm (`off`): NODELAY costs a
/// ratio of Nagle's only beyond the 95% CIs ([`differ`]), else the two
/// cost the same within them, with the smallest difference the trials
/// could have shown. `None` when the points are not at one write size or
/// Nagle's cost is not positive.
pub(super) fn nodelay_sentence(on: &CurvePoint, off: &CurvePoint) -> Option<String> {
    if on.x != off.x || off.mean <= 0.0 {
        return None;
    }
    let us = |p: &CurvePoint| measure(p.mean, Some(p.ci), Unit::Fixed("µs"));
    Some(if differ(on, off) {
        format!(
            "At {:.0}-byte writes, NODELAY costs the sender {}× the CPU per KB of Nagle's \
             algorithm, beyond the 95% CIs ({} against {}).",
            on.x,
            measure(on.mean / off.mean, None, Unit::Plain),
            us(on),
            us(off)
        )
    } else {
        let detectable = analysis::findings::resolution_of(on.mean, on.ci, off.mean, off.ci);
        format!(
            "At {:.0}-byte writes, NODELAY and Nagle's algorithm cost the sender the same CPU per \
             KB within the 95% CIs ({} and {}); a difference smaller than {} per KB could not \
             have been seen.",
            on.x,
            us(on),
            us(off),
            measure(detectable, None, Unit::Fixed("µs"))
        )
    })
}

/// Table 1's "which block takes the most CPU" at one MSS on one side
/// (`side`, "sender"): `blocks` names the candidate blocks and `shares`
/// holds, per trial, each block's share of the side's CPU time (in
/// `blocks` order); `seconds` is the side's mean CPU seconds per 20 MB.
/// A block takes the most only beyond the 95% CI of the runner-up; else
/// the blocks within CI are named with the smallest difference the trials
/// could have shown; one trial names its largest block with no claim.
pub(super) fn most_cpu_sentence(
    side: &str,
    mss: u64,
    blocks: &[&str],
    shares: &[Vec<f64>],
    seconds: f64,
) -> String {
    let n = shares.len();
    let points: Vec<(&str, CurvePoint)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| {
            let v: Vec<f64> = shares
                .iter()
                .map(|t| t.get(i).copied().unwrap_or(0.0))
                .collect();
            Some((*b, CurvePoint::of_values(0.0, &v)?))
        })
        .collect();
    let share = |name: &str| {
        points
            .iter()
            .find(|(b, _)| *b == name)
            .map_or("—".into(), |(_, p)| {
                measure(p.mean, (n > 1).then_some(p.ci), Unit::Percent)
            })
    };
    let paper = TABLE1_SENDER_TOTAL[table1_column(1024).unwrap_or(3)];
    let total = format!(
        "{} per {TRANSFER_MB} MB in all, {}× less than the paper's 386/33 sender's {paper:.1} s",
        measure(seconds, None, Unit::Si("s")),
        measure(paper / seconds, None, Unit::Plain)
    );
    let at = format!("On the {side} at MSS {mss}");
    if n == 1 {
        let top = points
            .iter()
            .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
            .map_or("—", |(b, _)| *b);
        return format!(
            "{at}, {top} has the largest share of CPU time ({}) in the one sampled trial; with no \
             CI that is no claim against the other blocks ({total}).",
            share(top)
        );
    }
    match largest(&points) {
        Some(Largest::Clear {
            first,
            second: Some(second),
        }) => format!(
            "{at}, {first} takes the most CPU: {} over {n} trials, beyond the 95% CIs of the \
             next, {second} ({}) ({total}).",
            share(first),
            share(second)
        ),
        Some(Largest::Clear {
            first,
            second: None,
        }) => {
            format!(
                "{at}, {first} takes the CPU: {} over {n} trials ({total}).",
                share(first)
            )
        }
        Some(Largest::Within { tied, resolution }) => format!(
            "{at}, no one block takes the most CPU: {} are within the 95% CIs of each other over \
             {n} trials (a difference smaller than {} could not have been seen; {total}).",
            tied.iter()
                .map(|b| format!("{b} ({})", share(b)))
                .collect::<Vec<_>>()
                .join(", "),
            measure(resolution, None, Unit::Percent)
        ),
        None => format!("{at}, no block was sampled ({total})."),
    }
}
