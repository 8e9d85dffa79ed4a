//! A run for the terminal: the results table with mean ± 95% CI, the run
//! header above it, and the lines that warn about failed trials, lost probe
//! records and hypervisor steal, and name the measures the validity rules
//! left out. The run report shows the same warnings.

use analysis::validity::{why_left_out, LeftOut};
use analysis::{PointSummary, Summary};
use comfy_table::{presets::UTF8_FULL_CONDENSED, Cell, CellAlignment, Table};
use record::{RunMeta, TestKind, TrialParams};

/// A column of the results table: header, metric, scale and decimals.
struct Col {
    header: &'static str,
    metric: &'static str,
    scale: f64,
    decimals: usize,
}

const fn col(header: &'static str, metric: &'static str, scale: f64, decimals: usize) -> Col {
    Col {
        header,
        metric,
        scale,
        decimals,
    }
}

fn columns(test: TestKind) -> Vec<Col> {
    let cpu = [
        col("snd µs/KB", "service_demand_sender_us_per_kb", 1.0, 3),
        col("rcv µs/KB", "service_demand_receiver_us_per_kb", 1.0, 3),
        col("MB/CPU-s", "bytes_per_cpu_s", 1e-6, 0),
    ];
    if test.is_transactional() {
        return vec![
            col("trans/s", "transactions_per_s", 1.0, 0),
            col("p50 µs", "latency_p50_s", 1e6, 1),
            col("p99 µs", "latency_p99_s", 1e6, 1),
            col("client µs/trans", "cpu_sender_us_per_transaction", 1.0, 2),
            col("server µs/trans", "cpu_receiver_us_per_transaction", 1.0, 2),
        ];
    }
    let mut v = match test {
        TestKind::TcpStream => vec![
            col("Mbit/s", "throughput_bps", 1e-6, 1),
            col("retrans", "retransmits", 1.0, 0),
        ],
        TestKind::UdpStream => vec![
            col("Mbit/s", "throughput_bps", 1e-6, 1),
            col("loss %", "loss_rate", 100.0, 3),
            col("jitter µs", "jitter_s", 1e6, 1),
        ],
        TestKind::LayerRate => {
            return vec![
                col("packets/s", "packets_per_s", 1.0, 0),
                col("Mbit/s frames", "throughput_bps", 1e-6, 1),
                col("Mbit/s payload", "payload_bps", 1e-6, 1),
                col("loss %", "loss_rate", 100.0, 3),
                col("snd µs/packet", "cpu_sender_us_per_packet", 1.0, 3),
            ]
        }
        _ => Vec::new(),
    };
    v.extend(cpu);
    v
}

fn cell(s: Option<&Summary>, c: &Col) -> String {
    match s {
        None => "—".into(),
        Some(s) => {
            let mean = s.mean * c.scale;
            if s.n >= 2 && s.ci95.is_finite() {
                format!(
                    "{mean:.*} ± {:.*}",
                    c.decimals,
                    c.decimals,
                    s.ci95 * c.scale
                )
            } else {
                format!("{mean:.*}", c.decimals)
            }
        }
    }
}

/// A factor's value as text for the table.
fn param_text(p: &TrialParams, name: &str) -> String {
    p.value(name).map_or_else(|| "—".into(), |v| v.table_text())
}

/// The results table: one row per point, the varying factors first; a
/// measure in `left_out` (computed over `points`, see
/// `analysis::validity::left_out`) shows its reason in place of the number
/// ("invalid: above the 1.0 Gbit/s line rate", "n/a: 8 datagrams").
pub fn table(
    test: TestKind,
    points: &[PointSummary],
    varying: &[String],
    left_out: &[LeftOut],
) -> String {
    let cols = columns(test);
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED);
    let mut header: Vec<String> = varying.to_vec();
    header.push("n".into());
    header.extend(cols.iter().map(|c| c.header.to_string()));
    t.set_header(header);
    for (i, p) in points.iter().enumerate() {
        let mut row: Vec<Cell> = varying
            .iter()
            .map(|k| Cell::new(param_text(&p.params, k)))
            .collect();
        let n = if p.trials_failed > 0 {
            format!("{} ({} failed)", p.trials_ok, p.trials_failed)
        } else {
            p.trials_ok.to_string()
        };
        row.push(Cell::new(n));
        for c in &cols {
            let text = if let Some(none) = p.unmeasured() {
                none.into()
            } else if let Some(why) = why_left_out(left_out, i, c.metric) {
                why.cell()
            } else if crate::precision::marks_cell(p, c.metric) {
                format!(
                    "{} {}",
                    cell(p.metrics.get(c.metric), c),
                    crate::precision::MISSED_MARK
                )
            } else {
                cell(p.metrics.get(c.metric), c)
            };
            row.push(Cell::new(text).set_alignment(CellAlignment::Right));
        }
        t.add_row(row);
    }
    t.to_string()
}

/// Factors that vary across a stored run's points, by name.
pub fn varying_factors(points: &[PointSummary]) -> Vec<String> {
    record::factor::varying_keys(points.iter().map(|p| &p.params))
        .into_iter()
        .map(String::from)
        .collect()
}

/// A header of run facts above the table.
pub fn run_header(m: &RunMeta) -> String {
    format!(
        "run {} · {} · {} · {} · seed {} · {}\nhost {} · {} · {} cores · kernel {} · cc {}",
        m.id,
        m.kind,
        m.status.as_str(),
        m.place,
        m.seed,
        m.started_at,
        m.host.hostname,
        m.host.cpu_model,
        m.host.cores,
        m.host.kernel.split_whitespace().next().unwrap_or(""),
        m.host.congestion_control
    )
}

/// Failure reasons per point, for the lines under the table.
pub fn failure_lines(points: &[PointSummary], varying: &[String]) -> Vec<String> {
    points
        .iter()
        .filter(|p| p.trials_failed > 0)
        .map(|p| {
            let label: Vec<String> = varying
                .iter()
                .map(|k| format!("{k}={}", param_text(&p.params, k)))
                .collect();
            format!(
                "point {} {}: {} failed: {}",
                p.index,
                label.join(" "),
                p.trials_failed,
                p.failures.join("; ")
            )
        })
        .collect()
}

/// One line per measure the table leaves out, with the whole reason:
/// "Throughput of point 2 (write_size=256K) is left out: n/a: …".
pub fn left_out_lines(
    points: &[PointSummary],
    varying: &[String],
    left_out: &[LeftOut],
) -> Vec<String> {
    crate::left_out::left_out_lines(points, varying, left_out, |_| true)
}

/// The lines under the table for the points that missed their
/// `--precision` target, each after the mark their cell carries.
pub fn precision_lines(points: &[PointSummary], varying: &[String]) -> Vec<String> {
    crate::precision::missed_lines(points, varying)
        .into_iter()
        .map(|l| {
            format!(
                "{} precision target missed: {l}",
                crate::precision::MISSED_MARK
            )
        })
        .collect()
}

/// A warning when probes lost records in any trial.
pub fn probe_loss_warning(points: &[PointSummary]) -> Option<String> {
    let lost: f64 = points
        .iter()
        .filter_map(|p| p.metrics.get("probe_lost"))
        .map(|s| s.mean * s.n as f64)
        .sum();
    (lost > 0.0).then(|| {
        format!(
            "warning: the probes lost {lost:.0} records (probe_lost; see `tcplab probes`): their queue and packet figures are incomplete"
        )
    })
}

/// A warning when the hypervisor took a noticeable share of CPU time during
/// the trials (on a virtual machine): timing-sensitive results are then low.
pub fn steal_warning(points: &[PointSummary]) -> Option<String> {
    let worst = points
        .iter()
        .filter_map(|p| p.metrics.get("host_steal_fraction"))
        .map(|s| s.mean)
        .fold(0.0, f64::max);
    (worst > 0.05).then(|| {
        format!(
            "warning: the hypervisor took up to {:.0}% of this machine's CPU time during the trials (host_steal_fraction); throughput and latency are disturbed",
            worst * 100.0
        )
    })
}
