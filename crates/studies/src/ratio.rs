//! A ratio that names what it divides (issue 30, rule 5): per segment
//! sent or received, per data segment or per packet, ACKs included or
//! not. A study computes every "X per Y" it prints through one of these,
//! so the words and the arithmetic cannot part.

use std::collections::BTreeMap;

/// A ratio of two of a trial's metrics, with the words for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedRatio {
    /// The numerator's metric.
    pub numerator: &'static str,
    /// The numerator in words ("segments the receiver sent").
    pub numerator_words: &'static str,
    /// The denominator's metric.
    pub denominator: &'static str,
    /// The denominator in words ("data segments it received").
    pub denominator_words: &'static str,
}

impl NamedRatio {
    /// The ratio in one trial's metrics; `None` when either is missing or
    /// the denominator is not positive.
    pub fn of(&self, metrics: &BTreeMap<String, f64>) -> Option<f64> {
        let n = metrics.get(self.numerator)?;
        let d = metrics.get(self.denominator)?;
        (*d > 0.0).then(|| n / d)
    }

    /// What the ratio divides, in words: "segments the receiver sent per
    /// data segment it received".
    pub fn words(&self) -> String {
        format!("{} per {}", self.numerator_words, self.denominator_words)
    }
}

/// ACKs per data segment received: every segment the receiver sent (with
/// a one-way stream, its ACKs and window updates) over the data segments
/// it received (retransmissions that arrived included, none that were
/// lost). Per data segment *sent* would count the sender's
/// retransmissions too.
pub const ACKS_PER_DATA_SEGMENT_RECEIVED: NamedRatio = NamedRatio {
    numerator: "receiver_segs_out",
    numerator_words: "segments the receiver sent",
    denominator: "receiver_data_segs_in",
    denominator_words: "data segment it received",
};

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(v: &[(&str, f64)]) -> BTreeMap<String, f64> {
        v.iter().map(|(k, x)| (k.to_string(), *x)).collect()
    }

    #[test]
    fn acks_are_counted_per_data_segment_received_not_sent() {
        // Issue 30's example: 881.2 data segments sent, 199 of them
        // retransmissions; 682.2 received; 495 ACKs. Per segment sent it
        // would read 0.562, per segment received it is 0.725.
        let m = metrics(&[
            ("receiver_segs_out", 495.0),
            ("receiver_data_segs_in", 682.2),
            ("data_segs_out", 881.2),
        ]);
        let r = ACKS_PER_DATA_SEGMENT_RECEIVED.of(&m).unwrap();
        assert!((r - 0.7256).abs() < 1e-3, "{r}");
        // With no loss, sent and received agree, and so does the ratio.
        let clean = metrics(&[
            ("receiver_segs_out", 341.0),
            ("receiver_data_segs_in", 682.0),
        ]);
        assert_eq!(ACKS_PER_DATA_SEGMENT_RECEIVED.of(&clean), Some(0.5));
        // A missing or empty denominator gives no ratio.
        assert_eq!(
            ACKS_PER_DATA_SEGMENT_RECEIVED.of(&metrics(&[("receiver_segs_out", 1.0)])),
            None
        );
        let zero = metrics(&[("receiver_segs_out", 1.0), ("receiver_data_segs_in", 0.0)]);
        assert_eq!(ACKS_PER_DATA_SEGMENT_RECEIVED.of(&zero), None);
        assert_eq!(
            ACKS_PER_DATA_SEGMENT_RECEIVED.words(),
            "segments the receiver sent per data segment it received"
        );
    }
}
