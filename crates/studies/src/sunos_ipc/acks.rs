//! Experiment 3 (Fig. 7): the receive socket queue and what prompted the
//! receiver's ACKs, with the share of ACKs that would have followed a read
//! by chance beside the share that did.

use super::paper::{DELACK_TIMER, EXPERIMENT3_MB};
use super::probed::{all_probed, no_probes, richest};
use super::CITE;
use crate::data::StudyData;
use report::{Figure, Point, Section, Series, SeriesStyle, Table};

/// ACKs that followed a read, of all pure ACKs, over the probed trials,
/// with the share expected by chance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct AckTally {
    /// Pure ACKs the receiver sent.
    pub acks: u64,
    /// Of them, sent within 50 µs after a read.
    pub after_read: u64,
    /// The share of ACKs that would follow a read by chance (mean over
    /// flows, weighted by their ACKs).
    pub chance: f64,
    /// Reads of the receiving application.
    pub reads: u64,
}

/// The Wilson score 95% interval of a share `k` of `n` (n > 0).
pub(crate) fn wilson95(k: u64, n: u64) -> (f64, f64) {
    let z = 1.959_964;
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The ACK finding: the share after a read, its 95% CI, and where it stands
/// against chance. `None` without ACKs.
pub(crate) fn ack_finding(t: &AckTally) -> Option<String> {
    if t.acks == 0 {
        return None;
    }
    let share = t.after_read as f64 / t.acks as f64;
    let (lo, hi) = wilson95(t.after_read, t.acks);
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    let head = format!(
        "Of {} ACKs the receiver sent, {} ({} to {}, 95% CI) followed a read within 50 µs; by \
         chance {} would have (the share of the flows' time within 50 µs after one of their {} \
         reads)",
        t.acks,
        pct(share),
        pct(lo),
        pct(hi),
        pct(t.chance),
        t.reads,
    );
    let verdict = if lo > t.chance {
        "More ACKs follow reads than chance explains: as in the paper, the application's reads \
         drive the ACKs"
            .to_string()
    } else if hi < t.chance {
        "Fewer ACKs follow reads than chance would put there: unlike the paper, the reads do not \
         drive the ACKs here"
            .to_string()
    } else {
        format!(
            "Chance lies within the CI: with {} ACKs a difference smaller than about {:.0} \
             points could not have been seen, so these trials cannot say whether reads drive \
             the ACKs",
            t.acks,
            (hi - lo) / 2.0 * 100.0
        )
    };
    Some(format!("{head}. {verdict}."))
}

/// Experiment 3's section.
pub(super) fn ack_section(d: &StudyData) -> Section {
    let mut s = Section::new("The receive socket queue and ACK generation (Experiment 3, Fig. 7)");
    s.paper_finding(
        format!("{CITE}, {}", DELACK_TIMER.source),
        format!(
            "In a {EXPERIMENT3_MB} MB local transfer the receive socket queue grew by a window \
             and drained to zero, and an ACK followed each drain; the delayed-ACK timer \
             ({DELACK_TIMER} ms) sent the others. Most ACKs came after the application emptied \
             the receive buffer."
        ),
    );
    let Some((seq, a)) = richest(d, "ack-local", |_| true) else {
        no_probes(&mut s, "local ACK");
        return s;
    };
    let recv: Vec<_> = a
        .queues
        .iter()
        .filter(|q| q.queue.starts_with("receive socket") && !q.series.is_empty())
        .collect();
    if !recv.is_empty() {
        let mut f = Figure::new(
            format!("Receive socket queue, trial {seq}"),
            "time since the first record (ms)",
            "queue length (KB)",
        );
        for q in recv {
            f.series.push(
                Series::new(
                    q.queue.clone(),
                    q.series
                        .iter()
                        .map(|&(t, v)| Point::new(t * 1e3, v / 1024.0))
                        .collect(),
                )
                .with_style(SeriesStyle::Path),
            );
        }
        s.push(f);
    }
    let runs = all_probed(d, "ack-local", |_| true);
    let mut t = Table::new([
        "trial",
        "flow",
        "pure ACKs",
        "after a read",
        "on arrival",
        "reads",
        "after a read by chance",
    ])
    .with_caption(
        "An ACK within 50 µs after the application's read may be a window update the drain \
         caused; 'by chance' is the share of the flow's time within 50 µs after some read",
    )
    .key();
    let mut tally = AckTally {
        acks: 0,
        after_read: 0,
        chance: 0.0,
        reads: 0,
    };
    let mut weighted_chance = 0.0;
    for (i, a) in runs.iter().enumerate() {
        for c in &a.ack_causes {
            t.row([
                (i + 1).to_string(),
                c.flow.clone(),
                c.acks.to_string(),
                c.after_read.to_string(),
                c.on_arrival.to_string(),
                c.reads.to_string(),
                format!("{:.0}%", c.chance_after_read * 100.0),
            ]);
            tally.acks += c.acks;
            tally.after_read += c.after_read;
            tally.reads += c.reads;
            weighted_chance += c.chance_after_read * c.acks as f64;
        }
    }
    s.push(t);
    if tally.acks > 0 {
        tally.chance = weighted_chance / tally.acks as f64;
    }
    match ack_finding(&tally) {
        Some(f) => {
            s.finding(f);
        }
        None => {
            s.warning("The probes saw no pure ACKs from the receiver in this trial.");
        }
    };
    s
}
