//! Abrams & Chen Table 2: UDP loss. The paper's loss came from host speed
//! (a PS/2 sender into a slower D310 receiver lost 20.7% at 1 KB and 57% at
//! 1460 B). The `udp-loss` experiment paces the sender below the link's
//! rate and slows the receiver, so that its loss is the receiver's; an
//! unpaced sender's loss on the 10 Mbit/s link (the write-size experiment)
//! is the link queue's overflow and is shown apart. Every loss rate states
//! the datagrams it rests on, and is n/a below
//! [`MIN_DATAGRAMS_FOR_LOSS`] sent per trial.

use super::paper::{LOSS_1024, LOSS_1460, LOSS_ELSEWHERE};
use crate::data::StudyData;
use crate::figures::write_size;
use crate::validity::{too_few_for_loss, valid_curve, MIN_DATAGRAMS_FOR_LOSS};
use analysis::findings::size_words;
use analysis::PointSummary;
use report::{measure, number, Section, Table, Unit};

const CITE: &str = "Abrams & Chen 1991";

/// One point's loss: its write size, the receiver's work per KB (ns), the
/// loss rate (mean and CI over trials) and the datagrams sent per trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LossPoint {
    /// Write size, bytes.
    pub write_size: f64,
    /// The receiver's extra work per KB, ns (0: full speed).
    pub recv_work_ns: f64,
    /// Loss rate, mean over trials.
    pub loss: f64,
    /// Its 95% CI half-width (0 for one trial).
    pub ci: f64,
    /// Datagrams sent, mean per trial.
    pub sent: f64,
}

impl LossPoint {
    fn of(p: &PointSummary) -> Option<LossPoint> {
        let loss = p.metrics.get("loss_rate")?;
        Some(LossPoint {
            write_size: p.params.write_size as f64,
            recv_work_ns: p.params.recv_work_ns_per_kb.unwrap_or(0) as f64,
            loss: loss.mean,
            ci: if loss.ci95.is_finite() {
                loss.ci95
            } else {
                0.0
            },
            sent: p.metrics.get("datagrams_sent").map_or(f64::NAN, |s| s.mean),
        })
    }

    /// Whether the loss rate may be given (enough datagrams sent).
    fn stated(&self) -> bool {
        !too_few_for_loss(self.sent)
    }

    /// "35.7 ± 12.0% of 1954 datagrams per trial", or n/a with the count.
    pub fn words(&self) -> String {
        if self.stated() {
            format!(
                "{} of {:.0} datagrams per trial",
                measure(self.loss, Some(self.ci), Unit::Percent),
                self.sent
            )
        } else {
            format!(
                "n/a ({:.0} datagrams sent per trial, fewer than the {MIN_DATAGRAMS_FOR_LOSS:.0} a \
                 loss rate needs)",
                self.sent
            )
        }
    }
}

/// The receiver's work per KB in words.
fn work_words(ns: f64) -> String {
    if ns <= 0.0 {
        "a full-speed receiver".into()
    } else {
        format!(
            "a receiver working {} per KB",
            measure(ns * 1e-9, None, Unit::Si("s"))
        )
    }
}

/// Table 2's finding for one write size: whether the slowest receiver lost
/// more than the full-speed one beyond both CIs. `fast` and `slow` are the
/// points without and with the most receiver work.
pub(crate) fn receiver_loss_sentence(fast: &LossPoint, slow: &LossPoint) -> String {
    let size = size_words(fast.write_size);
    if !fast.stated() || !slow.stated() {
        return format!(
            "At {size} writes the loss rates rest on too few datagrams to compare: {} with {}, \
             {} with {}.",
            fast.words(),
            work_words(fast.recv_work_ns),
            slow.words(),
            work_words(slow.recv_work_ns)
        );
    }
    if slow.loss - slow.ci > fast.loss + fast.ci {
        format!(
            "With the sender paced below the link's rate, loss came from the receiver's speed: at \
             {size} writes {} lost {} against {} with {} (the paper's slow D310 receiver: {}% \
             at 1 KB, {}% at 1460 B).",
            work_words(slow.recv_work_ns),
            slow.words(),
            fast.words(),
            work_words(fast.recv_work_ns),
            LOSS_1024.value,
            LOSS_1460.value
        )
    } else {
        format!(
            "At {size} writes {} did not lose more than {} beyond CI: {} against {}; the trials \
             could have detected a rise of {:.1} points.",
            work_words(slow.recv_work_ns),
            work_words(fast.recv_work_ns),
            slow.words(),
            fast.words(),
            (slow.ci + fast.ci) * 100.0
        )
    }
}

/// The Table 2 section from the `udp-loss` experiment.
pub(super) fn loss_section(d: &StudyData) -> Section {
    let mut s = Section::new("UDP loss against the receiver's speed (Table 2)");
    s.paper_finding(
        format!("{CITE}, Table 2"),
        format!(
            "Loss rates never exceeded {LOSS_ELSEWHERE}% except from the fast PS/2 sender into the \
             slow D310 receiver: {}% at 1024-byte and {}% at 1460-byte writes.",
            LOSS_1024.value, LOSS_1460.value
        ),
    );
    let pts: Vec<LossPoint> = d
        .points_of("udp-loss")
        .into_iter()
        .filter_map(LossPoint::of)
        .collect();
    if pts.is_empty() {
        s.warning("The UDP loss experiment has no successful trials in this run.");
        return s;
    }
    let rate = d
        .points_of("udp-loss")
        .first()
        .and_then(|p| p.params.send_rate_bps)
        .map_or("unpaced".into(), |r| number(r as f64, Unit::Si("bit/s")));
    let mut t = Table::new(["write size", "receiver work per KB", "UDP loss"])
        .with_caption(format!(
            "Sender paced at {rate} (below the link's rate at these write sizes), mean ± 95% CI"
        ))
        .key();
    let mut sizes: Vec<f64> = pts.iter().map(|p| p.write_size).collect();
    sizes.sort_by(f64::total_cmp);
    sizes.dedup();
    for &ws in &sizes {
        let mut row: Vec<&LossPoint> = pts.iter().filter(|p| p.write_size == ws).collect();
        row.sort_by(|a, b| a.recv_work_ns.total_cmp(&b.recv_work_ns));
        for p in &row {
            t.row([
                size_words(ws),
                if p.recv_work_ns > 0.0 {
                    measure(p.recv_work_ns * 1e-9, None, Unit::Si("s"))
                } else {
                    "none".into()
                },
                p.words(),
            ]);
        }
        if let (Some(fast), Some(slow)) = (row.first(), row.last()) {
            if fast.recv_work_ns < slow.recv_work_ns {
                s.finding(receiver_loss_sentence(fast, slow));
            }
        }
    }
    s.push(t);
    s
}

/// The finding on an unpaced sender's loss on a place: the largest stated
/// loss with its datagrams, or why none is stated.
pub(crate) fn unpaced_loss_sentence(place: &str, pts: &[LossPoint]) -> String {
    let worst = pts
        .iter()
        .filter(|p| p.stated())
        .max_by(|a, b| a.loss.total_cmp(&b.loss));
    let skipped: Vec<String> = pts
        .iter()
        .filter(|p| !p.stated())
        .map(|p| format!("{} writes ({:.0} sent)", size_words(p.write_size), p.sent))
        .collect();
    let tail = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "; n/a at {}, fewer than {MIN_DATAGRAMS_FOR_LOSS:.0} datagrams per trial",
            skipped.join(", ")
        )
    };
    match worst {
        Some(w) => format!(
            "Unpaced on {place}, UDP lost up to {} (at {} writes){tail}; an unpaced sender \
             overruns the path, so this is not Table 2's receiver-speed loss, which is measured \
             paced, below.",
            w.words(),
            size_words(w.write_size)
        ),
        None => format!("Unpaced on {place}, no UDP loss rate rests on enough datagrams{tail}."),
    }
}

/// The unpaced sender's loss table and finding for the write-size
/// experiment `udp_id` on `place`; `None` without loss rates.
pub(super) fn unpaced_loss(d: &StudyData, udp_id: &str, place: &str) -> Option<(Table, String)> {
    let pts: Vec<LossPoint> = d
        .points_of(udp_id)
        .into_iter()
        .filter_map(LossPoint::of)
        .collect();
    if pts.is_empty() {
        return None;
    }
    let (udp, invalid) = valid_curve(d, udp_id, "throughput_bps", 1e-6, write_size, |_| true);
    let mut t = Table::new(["write size", "UDP loss (unpaced sender)", "UDP received"])
        .with_caption(format!(
            "UDP loss on {place} with an unpaced sender (Table 2's receiver-speed loss is measured paced)"
        ));
    for p in &pts {
        let received = match udp.iter().find(|c| c.x == p.write_size) {
            Some(c) => measure(c.mean * 1e6, Some(c.ci * 1e6), Unit::Si("bit/s")),
            None => invalid
                .iter()
                .find(|(q, _)| q.write_size as f64 == p.write_size)
                .map_or("—".into(), |(_, why)| why.reason()),
        };
        t.row([size_words(p.write_size), p.words(), received]);
    }
    Some((t, unpaced_loss_sentence(place, &pts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(work_ms: f64, loss: f64, ci: f64, sent: f64) -> LossPoint {
        LossPoint {
            write_size: 1460.0,
            recv_work_ns: work_ms * 1e6,
            loss,
            ci,
            sent,
        }
    }

    #[test]
    fn a_slower_receiver_losing_more_beyond_ci_is_the_receivers_loss() {
        let s = receiver_loss_sentence(&pt(0.0, 0.0, 0.0, 686.0), &pt(2.0, 0.54, 0.05, 600.0));
        assert!(s.contains("loss came from the receiver's speed"), "{s}");
        assert!(s.contains("54.0 ± 5.0 % of 600 datagrams per trial"), "{s}");
    }

    #[test]
    fn loss_within_the_cis_is_no_rise_with_the_smallest_detectable_one() {
        let s = receiver_loss_sentence(&pt(0.0, 0.01, 0.02, 686.0), &pt(2.0, 0.2, 0.3, 686.0));
        assert!(s.contains("did not lose more"), "{s}");
        assert!(s.contains("a rise of 32.0 points"), "{s}");
    }

    #[test]
    fn loss_from_too_few_datagrams_is_na_with_its_count() {
        let s = receiver_loss_sentence(&pt(0.0, 0.0, 0.0, 8.0), &pt(2.0, 0.5, 0.0, 8.0));
        assert!(s.contains("too few datagrams"), "{s}");
        assert!(s.contains("n/a (8 datagrams sent per trial"), "{s}");
        let u = unpaced_loss_sentence(
            "ether10",
            &[
                LossPoint {
                    write_size: 512.0,
                    ..pt(0.0, 0.3, 0.01, 5000.0)
                },
                LossPoint {
                    write_size: 65507.0,
                    ..pt(0.0, 0.99, 0.0, 8.0)
                },
            ],
        );
        assert!(u.contains("up to 30.0 ± 1.0 % of 5000 datagrams"), "{u}");
        assert!(
            u.contains("; n/a at 65507 B writes (8 sent), fewer than 100 datagrams"),
            "{u}"
        );
        assert!(!u.contains("99"), "{u}");
    }

    /// The other side of the threshold: at MIN_DATAGRAMS_FOR_LOSS (100)
    /// datagrams per trial both sentences give the loss figure, not n/a;
    /// one datagram fewer (99) and the same loss is n/a with its count.
    #[test]
    fn loss_from_enough_datagrams_is_a_figure_and_one_fewer_is_na() {
        assert_eq!(MIN_DATAGRAMS_FOR_LOSS, 100.0);
        let s = receiver_loss_sentence(&pt(0.0, 0.0, 0.0, 100.0), &pt(2.0, 0.54, 0.05, 100.0));
        assert!(
            s.contains("a receiver working 2.00 ms per KB lost 54.0 ± 5.0 % of 100 datagrams per trial against 0 ± 0 % of 100 datagrams per trial"),
            "{s}"
        );
        assert!(
            !s.contains("too few datagrams") && !s.contains("n/a"),
            "{s}"
        );
        let s = receiver_loss_sentence(&pt(0.0, 0.0, 0.0, 100.0), &pt(2.0, 0.54, 0.05, 99.0));
        assert!(s.contains("rest on too few datagrams to compare"), "{s}");
        assert!(
            s.contains("n/a (99 datagrams sent per trial, fewer than the 100 a loss rate needs) with a receiver working 2.00 ms per KB"),
            "{s}"
        );
        // Unpaced: the 65507 B writes' 99% loss is the worst once stated…
        let at = |size: f64, loss: f64, sent: f64| LossPoint {
            write_size: size,
            ..pt(0.0, loss, 0.01, sent)
        };
        let u = unpaced_loss_sentence(
            "ether10",
            &[at(512.0, 0.3, 5000.0), at(65507.0, 0.99, 100.0)],
        );
        assert!(
            u.starts_with("Unpaced on ether10, UDP lost up to 99.0 ± 1.0 % of 100 datagrams per trial (at 65507 B writes); an unpaced"),
            "{u}"
        );
        assert!(!u.contains("n/a"), "{u}");
        // …and n/a, with the 512 B writes' loss the worst, one datagram fewer.
        let u = unpaced_loss_sentence(
            "ether10",
            &[at(512.0, 0.3, 5000.0), at(65507.0, 0.99, 99.0)],
        );
        assert!(
            u.starts_with("Unpaced on ether10, UDP lost up to 30.0 ± 1.0 % of 5000 datagrams per trial (at 512 B writes); n/a at 65507 B writes (99 sent), fewer than 100 datagrams per trial;"),
            "{u}"
        );
    }
}
