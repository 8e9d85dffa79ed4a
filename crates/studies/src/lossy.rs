//! Loss travels with throughput (issue 30, rule 2): a throughput measured
//! where TCP retransmitted or UDP lost datagrams is not the same quantity
//! as one where nothing was lost, so every study prints the loss beside
//! such a figure and a comparison of throughputs says when loss may explain
//! the difference. The words come from the point's own trials: TCP_INFO's
//! bytes retransmitted and sent (Linux), segments retransmitted (tcplab's
//! stack, which counts no bytes), or the UDP receiver's datagrams lost.

use crate::data::StudyData;
use analysis::findings::size_words;
use analysis::PointSummary;
use record::TestKind;
use report::{number, Unit};

/// What a point lost, means per trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PointLoss {
    /// TCP on Linux: bytes retransmitted, of the bytes sent (retransmissions
    /// included).
    TcpBytes {
        /// Bytes retransmitted per trial.
        retrans: f64,
        /// Bytes sent per trial, retransmissions included.
        sent: f64,
    },
    /// TCP on an end that counts segments only.
    TcpSegments {
        /// Segments retransmitted per trial.
        retrans: f64,
    },
    /// UDP: the share of datagrams sent that the receiver did not get.
    Datagrams {
        /// Loss rate, mean over trials.
        rate: f64,
        /// Datagrams sent per trial.
        sent: f64,
    },
}

impl PointLoss {
    /// The loss the point's metrics record; `None` when they record none
    /// (a test without loss counters).
    pub fn of(p: &PointSummary) -> Option<PointLoss> {
        let mean = |k: &str| p.metrics.get(k).map(|m| m.mean);
        // Datagram tests (udp-stream, and layer-rate's Ethernet, IP and
        // UDP layers) count what the receiver did not get.
        let tcp = matches!(
            p.params.test,
            TestKind::TcpStream | TestKind::TcpRr | TestKind::TcpCrr | TestKind::Http
        );
        if let (false, Some(rate)) = (tcp, mean("loss_rate")) {
            return Some(PointLoss::Datagrams {
                rate,
                sent: mean("datagrams_sent").unwrap_or(f64::NAN),
            });
        }
        match p.params.test {
            TestKind::UdpStream => None,
            _ => match (mean("bytes_retrans"), mean("bytes_sent")) {
                (Some(retrans), Some(sent)) => Some(PointLoss::TcpBytes { retrans, sent }),
                _ => mean("retransmits").map(|retrans| PointLoss::TcpSegments { retrans }),
            },
        }
    }

    /// Whether anything was lost or resent.
    pub fn any(&self) -> bool {
        match *self {
            PointLoss::TcpBytes { retrans, .. } | PointLoss::TcpSegments { retrans } => {
                retrans > 0.0
            }
            PointLoss::Datagrams { rate, .. } => rate > 0.0,
        }
    }

    /// How much was lost, for finding a place's worst point: the share
    /// where bytes or datagrams give one, else the segments retransmitted
    /// (points of one place are of one kind in practice; a share ranks
    /// above any count).
    fn rank(&self) -> (bool, f64) {
        match (self.share(), *self) {
            (Some(s), _) => (true, s),
            (None, PointLoss::TcpSegments { retrans }) => (false, retrans),
            (None, _) => (false, 0.0),
        }
    }

    /// The share of what was sent that was lost or resent, where bytes or
    /// datagrams say it.
    pub fn share(&self) -> Option<f64> {
        match *self {
            PointLoss::TcpBytes { retrans, sent } if sent > 0.0 => Some(retrans / sent),
            PointLoss::Datagrams { rate, .. } => Some(rate),
            _ => None,
        }
    }

    /// "308,024 of 820,024 bytes retransmitted per trial, 37.6 %",
    /// "12.4 segments retransmitted per trial", "35.7 % of 1,954
    /// datagrams lost per trial".
    pub fn words(&self) -> String {
        match *self {
            PointLoss::TcpBytes { retrans, sent } => format!(
                "{} of {} bytes retransmitted per trial, {}",
                thousands(retrans),
                thousands(sent),
                number(retrans / sent.max(1.0), Unit::Percent)
            ),
            PointLoss::TcpSegments { retrans } => {
                format!("{retrans:.1} segments retransmitted per trial")
            }
            PointLoss::Datagrams { rate, sent } => format!(
                "{} of {} datagrams lost per trial",
                number(rate, Unit::Percent),
                thousands(sent)
            ),
        }
    }
}

/// A count with thousands separators: 820024 → "820,024".
fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "—".into();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        format!("-{out}")
    } else {
        out
    }
}

/// A point's loss in words when anything was lost or resent, for a
/// sentence that puts it beside the point's throughput.
pub fn loss_words(p: &PointSummary) -> Option<String> {
    PointLoss::of(p).filter(PointLoss::any).map(|l| l.words())
}

/// A throughput figure with its point's loss beside it when anything was
/// lost: "9.41 ± 0.02 Mbit/s (308,024 of 820,024 bytes retransmitted per
/// trial, 37.6 %)"; the figure alone otherwise.
pub fn with_loss(figure: String, p: &PointSummary) -> String {
    match loss_words(p) {
        Some(l) => format!("{figure} ({l})"),
        None => figure,
    }
}

/// Where a point ran, for a loss sentence: its place, or tcplab's stack
/// (which runs over TUN in a namespace of its own, whatever the place).
fn where_words(p: &PointSummary) -> String {
    if p.params.stack.is_tcplab() || p.params.server_stack.is_tcplab() {
        "tcplab's stack".to_string()
    } else {
        p.params.topology.name().to_string()
    }
}

/// A point in words for a loss sentence: "tcp-stream 512 B writes on
/// ether10".
fn point_words(p: &PointSummary) -> String {
    format!(
        "{} {} writes on {}",
        p.params.test.name(),
        size_words(p.params.write_size as f64),
        where_words(p)
    )
}

/// Lossy points a caveat names before it counts the rest.
const CAVEAT_NAMED: usize = 3;

/// The sentence a comparison of throughputs carries when any point it
/// compares lost or resent data, whether the comparison found a difference
/// or none: "These throughputs carry loss, which may explain part of a
/// difference between them or hide one: tcp-stream 512 B writes on
/// ether10: 308,024 of …". `None` when none did.
pub fn loss_caveat(points: &[&PointSummary]) -> Option<String> {
    let mut lossy: Vec<(&PointSummary, PointLoss)> = points
        .iter()
        .filter_map(|p| PointLoss::of(p).filter(PointLoss::any).map(|l| (*p, l)))
        .collect();
    if lossy.is_empty() {
        return None;
    }
    // The most lossy first; three named, the rest counted.
    lossy.sort_by(|a, b| {
        b.1.rank()
            .partial_cmp(&a.1.rank())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let named: Vec<String> = lossy
        .iter()
        .take(CAVEAT_NAMED)
        .map(|(p, l)| format!("{}: {}", point_words(p), l.words()))
        .collect();
    let more = lossy.len().saturating_sub(CAVEAT_NAMED);
    let rest = match more {
        0 => String::new(),
        1 => "; and 1 other point".into(),
        n => format!("; and {n} other points"),
    };
    Some(format!(
        "These throughputs carry loss, which may explain part of a difference between them or \
         hide one: {}{rest}.",
        named.join("; ")
    ))
}

/// One warning per place of the run where a point lost or resent data:
/// the worst point there, so a reader knows which places' throughputs carry
/// loss before reading any of them. Empty when nothing was lost.
pub fn lossy_place_warnings(d: &StudyData) -> Vec<String> {
    let mut worst: Vec<(String, &PointSummary, PointLoss)> = Vec::new();
    for p in &d.points {
        let Some(l) = PointLoss::of(p).filter(PointLoss::any) else {
            continue;
        };
        let place = where_words(p);
        match worst.iter_mut().find(|(w, _, _)| *w == place) {
            Some(w) if l.rank().partial_cmp(&w.2.rank()) == Some(std::cmp::Ordering::Greater) => {
                w.1 = p;
                w.2 = l;
            }
            Some(_) => {}
            None => worst.push((place, p, l)),
        }
    }
    worst
        .into_iter()
        .map(|(place, p, l)| {
            let count = d
                .points
                .iter()
                .filter(|q| where_words(q) == place && PointLoss::of(q).is_some_and(|l| l.any()))
                .count();
            format!(
                "Loss on {place}: {count} of this run's points there lost or resent data, the \
                 most {} ({}); a throughput there is what arrived despite it.",
                l.words(),
                point_words(p)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use record::TrialParams;

    /// A point on ether10 with 512 B writes whose three trials each
    /// measured `metrics`.
    fn point(test: TestKind, metrics: &[(&str, f64)]) -> PointSummary {
        let mut params = TrialParams::defaults(test);
        params.topology = "ether10".into();
        params.write_size = 512;
        PointSummary {
            point_id: 1,
            index: 0,
            params,
            trials_ok: 3,
            trials_failed: 0,
            failures: Vec::new(),
            metrics: metrics
                .iter()
                .map(|(k, v)| (k.to_string(), analysis::summarize(&[*v, *v, *v]).unwrap()))
                .collect(),
            precision: None,
        }
    }

    /// The example, and the same point without loss.
    #[test]
    fn a_throughput_carries_its_loss_only_when_there_was_some() {
        let lossy = point(
            TestKind::TcpStream,
            &[("bytes_retrans", 308_024.0), ("bytes_sent", 820_024.0)],
        );
        assert_eq!(
            with_loss("9.41 ± 0.02 Mbit/s".into(), &lossy),
            "9.41 ± 0.02 Mbit/s (308,024 of 820,024 bytes retransmitted per trial, 37.6 %)"
        );
        let clean = point(
            TestKind::TcpStream,
            &[("bytes_retrans", 0.0), ("bytes_sent", 820_024.0)],
        );
        assert_eq!(with_loss("9.41 Mbit/s".into(), &clean), "9.41 Mbit/s");
        // The stack counts segments; UDP counts datagrams.
        let stack = point(TestKind::TcpStream, &[("retransmits", 12.4)]);
        assert!(with_loss("x".into(), &stack).ends_with("(12.4 segments retransmitted per trial)"));
        let udp = point(
            TestKind::UdpStream,
            &[("loss_rate", 0.357), ("datagrams_sent", 1954.0)],
        );
        assert_eq!(
            with_loss("x".into(), &udp),
            "x (35.7 % of 1,954 datagrams lost per trial)"
        );
    }

    /// Layer-rate's datagram layers count their loss like UDP (openlink92's
    /// reviewers: 33 lossy veth points went uncounted), and the most
    /// segments retransmitted rank first.
    #[test]
    fn datagram_layers_carry_their_loss_and_the_worst_is_the_largest() {
        let ip = point(
            TestKind::LayerRate,
            &[("loss_rate", 0.063), ("datagrams_sent", 76_380.0)],
        );
        assert_eq!(
            with_loss("x".into(), &ip),
            "x (6.30 % of 76,380 datagrams lost per trial)"
        );
        let few = point(TestKind::TcpStream, &[("retransmits", 25.4)]);
        let many = point(TestKind::TcpStream, &[("retransmits", 88.6)]);
        let c = loss_caveat(&[&few, &many]).unwrap();
        assert!(
            c.contains("hide one: tcp-stream 512 B writes on ether10: 88.6 segments"),
            "{c}"
        );
    }

    #[test]
    fn a_comparison_says_loss_may_explain_it_only_when_a_side_lost() {
        let lossy = point(TestKind::TcpStream, &[("retransmits", 3.0)]);
        let clean = point(TestKind::TcpStream, &[("retransmits", 0.0)]);
        let c = loss_caveat(&[&clean, &lossy]).unwrap();
        assert_eq!(
            c,
            "These throughputs carry loss, which may explain part of a difference between them or \
             hide one: tcp-stream 512 B writes on ether10: 3.0 \
             segments retransmitted per trial."
        );
        assert_eq!(loss_caveat(&[&clean, &clean]), None);
    }
}
