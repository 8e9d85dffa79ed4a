//! What the ACK and checksum experiments may claim. A CPU share is stated
//! only from enough samples; quick ACKs are credited with a cost only where
//! they produced more ACKs than delayed ACKs; and a throughput change with
//! checksum offload off is never put down to checksumming, since turning
//! the offload off also turns off segmentation offload.

use analysis::findings::{differ, size_words, CurvePoint};
use report::{measure, Unit};

/// The fewest CPU samples a share is stated from.
pub(super) const MIN_SHARE_SAMPLES: u64 = 1000;

/// A share of one role's CPU time with the samples it rests on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct SampledShare {
    /// The fraction (0–1), pooled over the trials.
    pub share: f64,
    /// The role's CPU samples over those trials.
    pub samples: u64,
}

impl SampledShare {
    /// The share, if it rests on enough samples.
    pub fn stated(&self) -> Option<f64> {
        (self.samples >= MIN_SHARE_SAMPLES).then_some(self.share)
    }
}

/// A share as a report prints it: "4.2%", or "too few samples (n) for a
/// share", or "not sampled".
pub(super) fn share_words(s: Option<&SampledShare>) -> String {
    match s {
        None => "not sampled".into(),
        Some(x) => match x.stated() {
            Some(v) => format!("{:.1}%", v * 100.0),
            None => format!("too few samples ({}) for a share", x.samples),
        },
    }
}

/// One arm of the ACK experiment (quick or delayed ACKs), over its trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct AckArm {
    /// ACKs the receiver sent, summed over the trials.
    pub acks: f64,
    /// Data segments the sender sent, summed over the trials.
    pub data_segments: f64,
    /// Bytes moved, summed over the trials.
    pub bytes: f64,
    /// ACKs per data segment: mean over trials ± 95% CI half-width.
    pub per_segment: CurvePoint,
    /// The sender's CPU share in tcp_input (ACK processing).
    pub ack_share: Option<SampledShare>,
}

fn ack_counts(a: &AckArm) -> String {
    format!(
        "{:.3} ± {:.3} ACKs per data segment ({:.0} ACKs for {:.0} segments)",
        a.per_segment.mean, a.per_segment.ci, a.acks, a.data_segments
    )
}

/// The finding on quick against delayed ACKs.
pub(super) fn ack_sentence(quick: &AckArm, delayed: &AckArm) -> String {
    let (q, d) = (&quick.per_segment, &delayed.per_segment);
    let took_effect = q.mean > d.mean && differ(q, d);
    if !took_effect {
        return format!(
            "TCP_QUICKACK did not take effect: the receiver sent {} with it and {} with delayed \
             ACKs, no more ACKs beyond the 95% CIs, so these trials cannot tell what an ACK per \
             segment costs.",
            ack_counts(quick),
            ack_counts(delayed)
        );
    }
    let batches = if quick.acks > 0.0 && q.mean < 0.5 {
        format!(
            "; even so one ACK per {} received, so the receiver acknowledged batches of \
             segments, not each one",
            size_words(quick.bytes / quick.acks)
        )
    } else {
        String::new()
    };
    format!(
        "Quick ACKs made the receiver send {:.2}× the ACKs of delayed ACKs ({} against {}){}; \
         processing ACKs took {} and {} of the sender's CPU (the paper: about 10% of all time).",
        q.mean / d.mean,
        ack_counts(quick),
        ack_counts(delayed),
        batches,
        share_words(quick.ack_share.as_ref()),
        share_words(delayed.ack_share.as_ref()),
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

/// The findings on checksum offload: the checksum's CPU share, and what the
/// throughput change does (and does not) say about it.
pub(super) fn checksum_sentences(on: &ChecksumArm, off: &ChecksumArm) -> Vec<String> {
    let mut out = Vec::new();
    if on.sender.is_some() || off.sender.is_some() {
        out.push(format!(
            "With checksum offload off, the sender spends {} of its CPU checksumming ({} with \
             it on{}); the paper's 386 spent about 25%.",
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
    let cause = "turning transmit checksum offload off also turns off segmentation offload \
                 (TSO), so the change cannot be put down to checksumming";
    out.push(match off.sender.as_ref().and_then(SampledShare::stated) {
        Some(s) if s < 1.0 => format!(
            "{change}, but {cause}: the checksum's {:.1}% of the sender's CPU could account for \
             at most {:.2}× even on a CPU-bound sender.",
            s * 100.0,
            1.0 / (1.0 - s)
        ),
        Some(_) => format!("{change}, but {cause}."),
        None => format!(
            "{change}, but {cause}; the checksum's share of the sender's CPU was not measured \
             with enough samples ({}) to bound its part.",
            share_words(off.sender.as_ref())
        ),
    });
    out
}
