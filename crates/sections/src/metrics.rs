//! The metrics the reports show (tables, figures, comparisons) with their
//! names and units, and small helpers every section uses.

use analysis::validity::{why_left_out, LeftOut};
use analysis::PointSummary;
use record::{TestKind, TrialRecord};
use report::format::{column, small_sample, SMALL_SAMPLE_MARK, SMALL_SAMPLE_NOTE};
use report::Unit;

/// A metric shown in tables and figures.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// The metric's key in the stored trials.
    pub key: &'static str,
    /// Its name in headers and captions.
    pub name: &'static str,
    /// How its values are written.
    pub unit: Unit,
}

/// A metric from its key, name and unit.
pub const fn metric(key: &'static str, name: &'static str, unit: Unit) -> Metric {
    Metric { key, name, unit }
}

/// Throughput, bit/s.
const THROUGHPUT: Metric = metric("throughput_bps", "throughput", Unit::Si("bit/s"));
/// Bytes moved per CPU second.
const BYTES_PER_CPU: Metric = metric(
    "bytes_per_cpu_s",
    "bytes per CPU second",
    Unit::Si("B/CPU-s"),
);
/// Transactions per second.
const TPS: Metric = metric("transactions_per_s", "transactions/s", Unit::Plain);
/// Median latency.
const P50: Metric = metric("latency_p50_s", "p50 latency", Unit::Si("s"));
/// 99th percentile latency.
const P99: Metric = metric("latency_p99_s", "p99 latency", Unit::Si("s"));
/// Datagram loss.
const LOSS: Metric = metric("loss_rate", "loss", Unit::Percent);
/// Datagrams that arrived behind the receiver's sequence window (the
/// metric exists only for trials that had any).
const OUT_OF_WINDOW: Metric = metric("out_of_window", "out of window", Unit::Plain);
/// Packets per second.
const PACKETS: Metric = metric("packets_per_s", "packets per second", Unit::Plain);

/// The table's metrics for a test.
pub fn table_metrics(test: TestKind) -> Vec<Metric> {
    if test.is_transactional() {
        return vec![
            TPS,
            P50,
            P99,
            metric(
                "cpu_sender_us_per_transaction",
                "client CPU/trans",
                Unit::Fixed("µs"),
            ),
            metric(
                "cpu_receiver_us_per_transaction",
                "server CPU/trans",
                Unit::Fixed("µs"),
            ),
        ];
    }
    if test == TestKind::LayerRate {
        return vec![
            PACKETS,
            metric("throughput_bps", "frame throughput", Unit::Si("bit/s")),
            metric("payload_bps", "payload throughput", Unit::Si("bit/s")),
            LOSS,
            OUT_OF_WINDOW,
            metric(
                "cpu_sender_us_per_packet",
                "sender CPU/packet",
                Unit::Fixed("µs"),
            ),
        ];
    }
    let mut v = vec![THROUGHPUT];
    if test == TestKind::UdpStream {
        v.push(LOSS);
        v.push(OUT_OF_WINDOW);
        v.push(metric("jitter_s", "jitter", Unit::Si("s")));
    }
    v.extend([
        BYTES_PER_CPU,
        metric(
            "service_demand_sender_us_per_kb",
            "sender CPU",
            Unit::Fixed("µs/KB"),
        ),
        metric(
            "service_demand_receiver_us_per_kb",
            "receiver CPU",
            Unit::Fixed("µs/KB"),
        ),
    ]);
    if test == TestKind::TcpStream {
        v.push(metric("retransmits", "retransmits", Unit::Plain));
    }
    v
}

/// The figures for a test: (what, metrics drawn together).
pub fn figure_groups(test: TestKind) -> Vec<(&'static str, Vec<Metric>)> {
    let mut v = if test.is_transactional() {
        vec![
            ("Transactions per second", vec![TPS]),
            ("Latency", vec![P50, P99]),
        ]
    } else if test == TestKind::LayerRate {
        vec![
            ("Packets per second", vec![PACKETS]),
            ("Throughput", vec![THROUGHPUT]),
        ]
    } else {
        vec![("Throughput", vec![THROUGHPUT])]
    };
    if test == TestKind::UdpStream {
        v.push(("Loss", vec![LOSS]));
    }
    v.push(("Bytes per CPU second", vec![BYTES_PER_CPU]));
    v
}

/// A metric's column of a results table, the same in the terminal and in
/// reports: its header (`throughput (Gbit/s)`, one prefix for the whole
/// column) and one cell per point by `report::format`'s rule, a left-out
/// measure's reason in place of its number, [`SMALL_SAMPLE_MARK`] beside
/// a mean of few trials with a CI wider than itself and
/// `precision::MISSED_MARK` beside a missed `--precision` target; `None`
/// when no point has the metric.
pub fn metric_column(
    points: &[PointSummary],
    m: &Metric,
    left_out: &[LeftOut],
) -> Option<(String, Vec<String>)> {
    let shown = |i: usize| why_left_out(left_out, i, m.key).is_none();
    let vals: Vec<(f64, Option<f64>)> = points
        .iter()
        .enumerate()
        .map(|(i, p)| match p.metrics.get(m.key) {
            Some(s) if shown(i) => (s.mean, ci_of(s)),
            _ => (f64::NAN, None),
        })
        .collect();
    if vals.iter().all(|v| !v.0.is_finite()) && left_out.iter().all(|l| l.metric != m.key) {
        return None;
    }
    let (u, mut cells) = column(&vals, m.unit);
    for (i, (c, p)) in cells.iter_mut().zip(points).enumerate() {
        if let Some(none) = p.unmeasured() {
            *c = none.into();
            continue;
        } else if let Some(why) = why_left_out(left_out, i, m.key) {
            *c = why.cell();
            continue;
        }
        if p.metrics.get(m.key).is_some_and(marks_small_sample) {
            *c = format!("{c} {SMALL_SAMPLE_MARK}");
        }
        if crate::precision::marks_cell(p, m.key) {
            *c = format!("{c} {}", crate::precision::MISSED_MARK);
        }
    }
    let header = if u.is_empty() {
        m.name.to_string()
    } else {
        format!("{} ({u})", m.name)
    };
    Some((header, cells))
}

/// Whether a summary's mean carries [`SMALL_SAMPLE_MARK`]: fewer than 5
/// trials and a 95% CI wider than the mean (`report::format::small_sample`).
pub fn marks_small_sample(s: &analysis::Summary) -> bool {
    small_sample(s.n, s.mean, ci_of(s))
}

/// The footnote under a results table of `points` when a cell of one of
/// `metrics` carries [`SMALL_SAMPLE_MARK`] ([`SMALL_SAMPLE_NOTE`]).
pub fn small_sample_note(points: &[PointSummary], metrics: &[Metric]) -> Option<&'static str> {
    points
        .iter()
        .filter(|p| p.unmeasured().is_none())
        .any(|p| {
            metrics
                .iter()
                .any(|m| p.metrics.get(m.key).is_some_and(marks_small_sample))
        })
        .then_some(SMALL_SAMPLE_NOTE)
}

/// A point's `n` cell in a results table: its successful trials, the
/// failed ones beside them, or "not run" for a point no trial of which ran
/// (the run was killed or interrupted first), whether or not any metric
/// column is left to say so.
pub fn trials_cell(p: &PointSummary) -> String {
    if p.unmeasured() == Some("not run") {
        "not run".to_string()
    } else if p.trials_failed > 0 {
        format!("{} ({} failed)", p.trials_ok, p.trials_failed)
    } else {
        p.trials_ok.to_string()
    }
}

/// A summary's 95% CI half-width, when it has one (two trials or more).
pub fn ci_of(s: &analysis::Summary) -> Option<f64> {
    (s.n >= 2 && s.ci95.is_finite()).then_some(s.ci95)
}

/// The test of a run's points (tcp-stream for a run without points).
pub fn test_of(points: &[PointSummary]) -> TestKind {
    points
        .first()
        .map(|p| p.params.test)
        .unwrap_or(TestKind::TcpStream)
}

/// `s` with its first letter in upper case.
pub fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The trial of `trials` whose primary metric is closest to `mean`.
pub fn closest<'a>(
    trials: &[&'a TrialRecord],
    key: &str,
    mean: Option<f64>,
) -> Option<&'a TrialRecord> {
    let v = |t: &TrialRecord| t.outcome.metrics.get(key).copied().unwrap_or(f64::NAN);
    match mean {
        Some(m) => trials
            .iter()
            .min_by(|a, b| (v(a) - m).abs().total_cmp(&(v(b) - m).abs()))
            .copied(),
        None => trials.first().copied(),
    }
}

/// A metric by name, with its unit when tcplab knows it.
pub fn known_metric(key: &str) -> Metric {
    for t in TestKind::ALL {
        if let Some(m) = table_metrics(t).into_iter().find(|m| m.key == key) {
            return m;
        }
    }
    let unit = if key.ends_with("_bps") {
        Unit::Si("bit/s")
    } else if key.ends_with("_s") {
        Unit::Si("s")
    } else {
        Unit::Plain
    };
    // The name outlives the command; leaking one short string is fine.
    Metric {
        key: Box::leak(key.to_string().into_boxed_str()),
        name: Box::leak(key.replace('_', " ").into_boxed_str()),
        unit,
    }
}
